// SPDX-License-Identifier: GPL-2.0
//
// auth.cc - see auth.h.
#include "lib/auth/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <endian.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace mdr {

namespace {

// A label, NUL-padded to its 16 bytes at out.
template <size_t N>
void put_label(uint8_t *out, const char (&label)[N])
{
	static_assert(N <= 16, "a label is NUL-padded to 16 bytes");
	std::memset(out, 0, 16);
	std::memcpy(out, label, N);
}

// HMAC-SHA256 of msg keyed with key; aborts on a library failure, which
// only an allocation failure inside OpenSSL can cause.
Mac hmac(std::span<const uint8_t> key, const void *msg, size_t len)
{
	Mac mac{};
	unsigned int mac_len = 0;

	if (!HMAC(EVP_sha256(), key.data(), int(key.size()),
		  static_cast<const unsigned char *>(msg), len, mac.data(), &mac_len) ||
	    mac_len != mac.size())
		abort();
	return mac;
}

using Wrapped = std::array<uint8_t, MDR_HOST_KEY_MAX>;

// The wrap of MDR_OP_HOST_ADD, its own inverse: @in XORed with the
// keystream of the request (struct mdr_wire_host_add_req, @wrapped).
Wrapped xor_host_key(std::span<const uint8_t> admin_key, const Nonce &conn_nonce,
		     const wire::HostAddReq &req, const Wrapped &in)
{
	uint8_t msg[16 + 16 + 16 + 8 + 1];
	const uint64_t host_le = htole64(req.host_id);
	Wrapped out = in;

	static_assert(sizeof(Wrapped) == 2 * sizeof(Mac));
	put_label(msg, MDR_AUTH_LABEL_WRAP);
	std::memcpy(msg + 16, conn_nonce.data(), 16);
	std::memcpy(msg + 32, req.nonce.data(), 16);
	std::memcpy(msg + 48, &host_le, 8);
	for (uint8_t i = 0; i < 2; i++) {
		msg[56] = i;
		Mac stream = hmac(admin_key, msg, sizeof(msg));
		for (size_t b = 0; b < stream.size(); b++)
			out[32 * i + b] ^= stream[b];
		wipe(stream);
	}
	return out;
}

// The MAC of MDR_OP_HOST_ADD: over its label, the accept's nonce and the
// request's bytes from host_id to the end of wrapped, as they are sent.
Mac host_add_mac(std::span<const uint8_t> admin_key, const Nonce &conn_nonce,
		 const wire::HostAddReq &req)
{
	uint8_t msg[16 + 16 + 96];
	const uint64_t host_le = htole64(req.host_id);
	const uint32_t tenant_le = htole32(req.tenant);
	const uint16_t flags_le = htole16(req.flags);
	const uint16_t len_le = htole16(req.key_len);

	static_assert(sizeof(mdr_wire_host_add_req) - sizeof(mdr_wire_hdr) - 32 == 96);
	put_label(msg, MDR_AUTH_LABEL_HOST_ADD);
	std::memcpy(msg + 16, conn_nonce.data(), 16);
	std::memcpy(msg + 32, &host_le, 8);
	std::memcpy(msg + 40, &tenant_le, 4);
	std::memcpy(msg + 44, &flags_le, 2);
	std::memcpy(msg + 46, &len_le, 2);
	std::memcpy(msg + 48, req.nonce.data(), 16);
	std::memcpy(msg + 64, req.wrapped.data(), 64);
	return hmac(admin_key, msg, sizeof(msg));
}

} // namespace

mdr_wire_auth_transcript auth_transcript(AuthLabel label, const HostTranscript &t)
{
	mdr_wire_auth_transcript w;

	std::memset(&w, 0, sizeof(w));
	if (label == AuthLabel::host)
		put_label(w.label, MDR_AUTH_LABEL_HOST);
	else
		put_label(w.label, MDR_AUTH_LABEL_NODE);
	std::memcpy(w.node_nonce, t.node_nonce.data(), 16);
	std::memcpy(w.host_nonce, t.host_nonce.data(), 16);
	w.host_id = htole64(t.host_id);
	w.node_id = htole64(t.node_id);
	w.boot_id = htole64(t.boot_id);
	w.tenant = htole32(t.tenant);
	w.version = htole16(t.version);
	w.role = htole16(MDR_ROLE_HOST);
	w.host_qpn = htole32(t.host_qpn);
	w.node_qpn = htole32(t.node_qpn);
	return w;
}

Mac host_mac(std::span<const uint8_t> key, AuthLabel label, const HostTranscript &t)
{
	const mdr_wire_auth_transcript w = auth_transcript(label, t);

	return hmac(key, &w, sizeof(w));
}

Mac admin_mac(std::span<const uint8_t> admin_key, const Nonce &nonce, uint64_t host_id)
{
	uint8_t msg[16 + 8];
	const uint64_t host_le = htole64(host_id);

	std::memcpy(msg, nonce.data(), 16);
	std::memcpy(msg + 16, &host_le, 8);
	return hmac(admin_key, msg, sizeof(msg));
}

bool mac_equal(const Mac &a, const Mac &b)
{
	return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

Status seal_host_add(std::span<const uint8_t> admin_key, const Nonce &conn_nonce,
		     wire::HostAddReq &req, std::span<const uint8_t> host_key)
{
	if (host_key.size() < MDR_HOST_KEY_MIN || host_key.size() > MDR_HOST_KEY_MAX)
		return Error(-EINVAL, "a host key has " + std::to_string(MDR_HOST_KEY_MIN) +
				      " to " + std::to_string(MDR_HOST_KEY_MAX) + " bytes, not " +
				      std::to_string(host_key.size()));
	Wrapped plain{};

	std::copy(host_key.begin(), host_key.end(), plain.begin());
	req.key_len = uint16_t(host_key.size());
	req.wrapped = xor_host_key(admin_key, conn_nonce, req, plain);
	wipe(plain);
	req.mac = host_add_mac(admin_key, conn_nonce, req);
	return {};
}

Result<wire::HostAddReq> host_add_request(std::span<const uint8_t> admin_key,
					  const Nonce &conn_nonce, uint64_t host_id,
					  uint32_t tenant, uint16_t flags,
					  std::span<const uint8_t> host_key)
{
	auto nonce = random_nonce();
	if (!nonce.ok())
		return Error(nonce.error(), nonce.message());
	wire::HostAddReq req{.host_id = host_id, .tenant = tenant, .flags = flags,
			     .nonce = nonce.value()};
	if (Status st = seal_host_add(admin_key, conn_nonce, req, host_key); !st.ok())
		return Error(st.error(), st.message());
	return req;
}

Result<std::vector<uint8_t>> open_host_add(std::span<const uint8_t> admin_key,
					   const Nonce &conn_nonce,
					   const wire::HostAddReq &req)
{
	if (!mac_equal(host_add_mac(admin_key, conn_nonce, req), req.mac))
		return Error(-EPERM, "the request's MAC is not the admin key's over this "
				     "connection");
	if (req.key_len < MDR_HOST_KEY_MIN || req.key_len > MDR_HOST_KEY_MAX)
		return Error(-EINVAL, "key_len " + std::to_string(req.key_len) + " out of range");
	Wrapped plain = xor_host_key(admin_key, conn_nonce, req, req.wrapped);
	const bool padded = std::all_of(plain.begin() + req.key_len, plain.end(),
					[](uint8_t c) { return c == 0; });
	std::vector<uint8_t> key;

	if (padded)
		key.assign(plain.begin(), plain.begin() + req.key_len);
	wipe(plain);
	if (!padded)
		return Error(-EINVAL, "the wrapped key's padding does not unwrap to zero");
	return key;
}

Status random_bytes(std::span<uint8_t> out)
{
	if (RAND_bytes(out.data(), int(out.size())) != 1)
		return Error(-EIO, "no random bytes (RAND_bytes)");
	return {};
}

Result<Nonce> random_nonce()
{
	Nonce n{};

	do {
		if (Status st = random_bytes(n); !st.ok())
			return Error(st.error(), st.message());
	} while (std::all_of(n.begin(), n.end(), [](uint8_t c) { return c == 0; }));
	return n;
}

Result<std::vector<uint8_t>> read_key_file(const std::string &path, size_t min, size_t max)
{
	std::ifstream f(path, std::ios::binary);

	if (!f)
		return Error(errno ? -errno : -EIO, "cannot read key file " + path);
	std::vector<uint8_t> key((std::istreambuf_iterator<char>(f)),
				 std::istreambuf_iterator<char>());
	if (f.bad()) {
		wipe(key);
		return Error(-EIO, "cannot read key file " + path);
	}
	while (!key.empty() && (key.back() == '\n' || key.back() == '\r'))
		key.pop_back();
	if (key.size() < min || key.size() > max) {
		const size_t n = key.size();
		wipe(key);
		return Error(-EINVAL, "key file " + path + " holds " + std::to_string(n) +
				      " bytes; a key has " + std::to_string(min) + " to " +
				      std::to_string(max));
	}
	return key;
}

void wipe(std::span<uint8_t> bytes)
{
	if (!bytes.empty())
		OPENSSL_cleanse(bytes.data(), bytes.size());
}

} // namespace mdr
