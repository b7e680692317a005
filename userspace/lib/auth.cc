// SPDX-License-Identifier: GPL-2.0
//
// auth.cc - see auth.h.
#include "lib/auth.h"

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

WrappedKey xor_host_key(std::span<const uint8_t> admin_key, const Nonce &nonce,
			uint64_t host_id, const WrappedKey &in)
{
	uint8_t msg[16 + 16 + 8 + 1];
	const uint64_t host_le = htole64(host_id);
	WrappedKey out = in;

	static_assert(sizeof(WrappedKey) == 2 * sizeof(Mac));
	put_label(msg, MDR_AUTH_LABEL_WRAP);
	std::memcpy(msg + 16, nonce.data(), 16);
	std::memcpy(msg + 32, &host_le, 8);
	for (uint8_t i = 0; i < 2; i++) {
		msg[40] = i;
		Mac stream = hmac(admin_key, msg, sizeof(msg));
		for (size_t b = 0; b < stream.size(); b++)
			out[32 * i + b] ^= stream[b];
		wipe(stream);
	}
	return out;
}

Result<WrappedKey> wrap_host_key(std::span<const uint8_t> admin_key, const Nonce &nonce,
				 uint64_t host_id, std::span<const uint8_t> key)
{
	if (key.size() < MDR_HOST_KEY_MIN || key.size() > MDR_HOST_KEY_MAX)
		return Error(-EINVAL, "a host key has " + std::to_string(MDR_HOST_KEY_MIN) +
				      " to " + std::to_string(MDR_HOST_KEY_MAX) + " bytes, not " +
				      std::to_string(key.size()));
	WrappedKey plain{};

	std::copy(key.begin(), key.end(), plain.begin());
	WrappedKey wrapped = xor_host_key(admin_key, nonce, host_id, plain);
	wipe(plain);
	return wrapped;
}

Result<std::vector<uint8_t>> unwrap_host_key(std::span<const uint8_t> admin_key,
					     const Nonce &nonce, uint64_t host_id,
					     const WrappedKey &wrapped, uint16_t key_len)
{
	if (key_len < MDR_HOST_KEY_MIN || key_len > MDR_HOST_KEY_MAX)
		return Error(-EINVAL, "key_len " + std::to_string(key_len) + " out of range");
	WrappedKey plain = xor_host_key(admin_key, nonce, host_id, wrapped);
	const bool padded = std::all_of(plain.begin() + key_len, plain.end(),
					[](uint8_t c) { return c == 0; });
	std::vector<uint8_t> key;

	if (padded)
		key.assign(plain.begin(), plain.begin() + key_len);
	wipe(plain);
	if (!padded)
		return Error(-EINVAL, "the wrapped key's padding does not unwrap to zero "
				      "(another admin key, or another connection's nonce)");
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
