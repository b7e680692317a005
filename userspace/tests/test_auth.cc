// SPDX-License-Identifier: GPL-2.0
//
// test_auth.cc - lib/auth: the transcript of a host connection byte for
// byte, the two proofs against OpenSSL's HMAC and against known answers
// (the kernel's KUnit test uses the same vector), the wrap of a host key
// in MDR_OP_HOST_ADD both ways with its known answer and its refusals,
// the admin proof, nonces and key files.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <stdlib.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "lib/auth/auth.h"

#include "tests/common/cmocka_cxx.h"

namespace {

const std::string kKey = "0123456789abcdef0123456789abcdef";	// ASCII, 32 bytes

std::span<const uint8_t> bytes(const std::string &s)
{
	return {reinterpret_cast<const uint8_t *>(s.data()), s.size()};
}

std::vector<uint8_t> unhex(const char *hex)
{
	std::vector<uint8_t> out;

	for (size_t i = 0; hex[i] && hex[i + 1]; i += 2) {
		unsigned v;
		assert_int_equal(sscanf(hex + i, "%2x", &v), 1);
		out.push_back(uint8_t(v));
	}
	return out;
}

std::string hex(const void *p, size_t n)
{
	std::string s;
	char b[3];

	for (size_t i = 0; i < n; i++) {
		std::snprintf(b, sizeof(b), "%02x", static_cast<const uint8_t *>(p)[i]);
		s += b;
	}
	return s;
}

// The vector: node nonce 00..0f, host nonce 10..1f, host 0x93, node
// 0x1122334455667788, boot 0x99aabbccddeeff00, tenant 1, version 3, host
// QP 0x11, node QP 0x22: the kernel's KUnit vector (ktests/proto_test.c),
// so that both ends are held to the same bytes.
mdr::HostTranscript vector_transcript()
{
	mdr::HostTranscript t{.host_id = 0x93, .node_id = 0x1122334455667788,
			      .boot_id = 0x99aabbccddeeff00, .tenant = 1, .version = 3,
			      .host_qpn = 0x11, .node_qpn = 0x22};

	for (uint8_t i = 0; i < 16; i++) {
		t.node_nonce[i] = i;
		t.host_nonce[i] = uint8_t(0x10 + i);
	}
	return t;
}

// Label, nonces, then little-endian host_id, node_id, boot_id, tenant,
// version, role (1), host QP, node QP: written out by hand, not by the
// code under test.
const char kHostTranscript[] =
	"6d64726f7574652d686f73742d763300" "000102030405060708090a0b0c0d0e0f"
	"101112131415161718191a1b1c1d1e1f" "9300000000000000" "8877665544332211"
	"00ffeeddccbbaa99" "01000000" "0300" "0100" "11000000" "22000000";
const char kNodeTranscript[] =
	"6d64726f7574652d6e6f64652d763300" "000102030405060708090a0b0c0d0e0f"
	"101112131415161718191a1b1c1d1e1f" "9300000000000000" "8877665544332211"
	"00ffeeddccbbaa99" "01000000" "0300" "0100" "11000000" "22000000";
const char kHostMac[] = "e8c4b66346dacc879fc559c19d590e7ceadf6fe4f594d26f0db2bc8a8bfc7f14";
const char kNodeMac[] = "769be090c4a7a4b3a8fe25b1b7d3b09e2370d5c87f85bffc8fb99ef56c678c02";

void test_transcript_and_proofs_known_answer(void **)
{
	const mdr::HostTranscript t = vector_transcript();
	const struct {
		mdr::AuthLabel label;
		const char *transcript, *mac;
	} cases[] = {{mdr::AuthLabel::host, kHostTranscript, kHostMac},
		     {mdr::AuthLabel::node, kNodeTranscript, kNodeMac}};

	for (const auto &c : cases) {
		const mdr_wire_auth_transcript w = mdr::auth_transcript(c.label, t);
		const std::vector<uint8_t> want = unhex(c.transcript);

		assert_int_equal(want.size(), sizeof(w));
		assert_int_equal(sizeof(w), 88);
		assert_memory_equal(&w, want.data(), sizeof(w));

		// OpenSSL's HMAC over the bytes written by hand.
		unsigned char mac[EVP_MAX_MD_SIZE];
		unsigned int len = 0;
		assert_non_null(HMAC(EVP_sha256(), kKey.data(), int(kKey.size()), want.data(),
				     want.size(), mac, &len));
		assert_int_equal(len, 32);
		const mdr::Mac ours = mdr::host_mac(bytes(kKey), c.label, t);
		assert_memory_equal(ours.data(), mac, 32);
		assert_string_equal(hex(ours.data(), ours.size()).c_str(), c.mac);
		std::printf("# transcript %s\n# mac        %s\n",
			    hex(&w, sizeof(w)).c_str(), hex(ours.data(), ours.size()).c_str());
	}
}

// Any field of the transcript changed changes the proof; the two labels
// never give the same proof.
void test_every_field_is_covered(void **)
{
	const mdr::HostTranscript t = vector_transcript();
	const mdr::Mac base = mdr::host_mac(bytes(kKey), mdr::AuthLabel::host, t);
	std::vector<mdr::HostTranscript> changed(9, t);

	changed[0].node_nonce[15] ^= 1;
	changed[1].host_nonce[0] ^= 1;
	changed[2].host_id ^= 1;
	changed[3].node_id ^= 1;
	changed[4].boot_id ^= 1;
	changed[5].tenant ^= 1;
	changed[6].version = 2;
	changed[7].host_qpn ^= 1;
	changed[8].node_qpn ^= 1;
	for (size_t i = 0; i < changed.size(); i++)
		assert_false(mdr::mac_equal(base, mdr::host_mac(bytes(kKey), mdr::AuthLabel::host,
								 changed[i])));
	assert_false(mdr::mac_equal(base, mdr::host_mac(bytes(kKey), mdr::AuthLabel::node, t)));
	assert_false(mdr::mac_equal(base, mdr::host_mac(bytes(kKey + "x"),
							 mdr::AuthLabel::host, t)));
	assert_true(mdr::mac_equal(base, mdr::host_mac(bytes(kKey), mdr::AuthLabel::host, t)));
}

const std::string kAdminKey = "0123456789abcdef-admin-key";
// HOST_ADD of kKey for host 0x93, tenant 7, REPLACE, connection nonce
// a0..af, request nonce c0..cf: computed independently (Python's hmac).
const char kWrapped[] =
	"43ee363a10587fcec9a0d92652b5238986cb93495570dbe3fe38020a09041b81"
	"bb9f5dca08ab6f9b6697f4b5bec537d7bdbe0fbd51bba9342263ea155fdf4478";
const char kHostAddMac[] = "934599e1f9080eaf4b3468c93be1c81466f72025510d06e571eb5511d974d801";

mdr::Nonce nonce_from(uint8_t first)
{
	mdr::Nonce n;
	for (uint8_t i = 0; i < 16; i++)
		n[i] = uint8_t(first + i);
	return n;
}

mdr::Nonce admin_nonce()
{
	return nonce_from(0xa0);
}

mdr::wire::HostAddReq vector_host_add()
{
	mdr::wire::HostAddReq r{.host_id = 0x93, .tenant = 7, .flags = MDR_HOST_ADD_F_REPLACE,
				.nonce = nonce_from(0xc0)};

	assert_true(mdr::seal_host_add(bytes(kAdminKey), admin_nonce(), r, bytes(kKey)).ok());
	return r;
}

void test_host_add_known_answer_and_open(void **)
{
	const mdr::wire::HostAddReq r = vector_host_add();

	assert_int_equal(r.key_len, kKey.size());
	assert_string_equal(hex(r.wrapped.data(), r.wrapped.size()).c_str(), kWrapped);
	assert_string_equal(hex(r.mac.data(), r.mac.size()).c_str(), kHostAddMac);
	auto k = mdr::open_host_add(bytes(kAdminKey), admin_nonce(), r);
	assert_true(k.ok());
	assert_true(std::string(k.value().begin(), k.value().end()) == kKey);

	// Every length in range goes both ways, each request with its own
	// nonce, so two requests never share a keystream.
	for (size_t n = MDR_HOST_KEY_MIN; n <= MDR_HOST_KEY_MAX; n++) {
		std::vector<uint8_t> key(n);
		for (size_t i = 0; i < n; i++)
			key[i] = uint8_t(i * 13 + 1);
		auto a = mdr::host_add_request(bytes(kAdminKey), admin_nonce(), 7, 1, 0, key);
		auto b = mdr::host_add_request(bytes(kAdminKey), admin_nonce(), 7, 1, 0, key);
		assert_true(a.ok() && b.ok());
		assert_true(a.value().nonce != b.value().nonce);
		assert_true(a.value().wrapped != b.value().wrapped);
		auto back = mdr::open_host_add(bytes(kAdminKey), admin_nonce(), a.value());
		assert_true(back.ok());
		assert_true(back.value() == key);
	}
}

// Another admin key or connection nonce, or any field of the request
// changed after it was sealed: its MAC is wrong (-EPERM). (The padding
// check behind it only catches a sealer that put bytes past key_len.)
void test_host_add_refuses_tampering(void **)
{
	const mdr::wire::HostAddReq r = vector_host_add();
	mdr::Nonce other = admin_nonce();
	other[0] ^= 1;
	std::vector<mdr::wire::HostAddReq> changed(7, r);

	assert_int_equal(mdr::open_host_add(bytes(kAdminKey + "!"), admin_nonce(), r).error(),
			 -EPERM);
	assert_int_equal(mdr::open_host_add(bytes(kAdminKey), other, r).error(), -EPERM);
	changed[0].host_id ^= 1;
	changed[1].tenant ^= 1;
	changed[2].flags ^= 1;
	changed[3].key_len--;
	changed[4].nonce[15] ^= 1;
	changed[5].wrapped[63] ^= 0x80;
	changed[6].mac[0] ^= 1;
	for (const auto &c : changed)
		assert_int_equal(mdr::open_host_add(bytes(kAdminKey), admin_nonce(), c).error(),
				 -EPERM);

	assert_int_equal(mdr::host_add_request(bytes(kAdminKey), admin_nonce(), 1, 1, 0,
					       bytes("short")).error(), -EINVAL);
	assert_int_equal(mdr::host_add_request(bytes(kAdminKey), admin_nonce(), 1, 1, 0,
					       bytes(std::string(65, 'k'))).error(), -EINVAL);
}

// The admin proof is HMAC over the nonce and the host id, as before.
void test_admin_mac(void **)
{
	unsigned char msg[24], mac[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	const mdr::Nonce n = admin_nonce();

	std::memcpy(msg, n.data(), 16);
	for (int i = 0; i < 8; i++)
		msg[16 + i] = uint8_t(0x0102030405060708ull >> (8 * i));
	assert_non_null(HMAC(EVP_sha256(), kAdminKey.data(), int(kAdminKey.size()), msg,
			     sizeof(msg), mac, &len));
	const mdr::Mac ours = mdr::admin_mac(bytes(kAdminKey), n, 0x0102030405060708);
	assert_memory_equal(ours.data(), mac, 32);
}

void test_random_nonces_differ(void **)
{
	auto a = mdr::random_nonce(), b = mdr::random_nonce();

	assert_true(a.ok() && b.ok());
	assert_false(a.value() == b.value());
	assert_false(a.value() == mdr::Nonce{});
}

void test_key_files(void **)
{
	char path[] = "/tmp/mdr-auth-key.XXXXXX";
	const int fd = mkstemp(path);
	assert_true(fd >= 0);
	auto put = [&](const std::string &text) {
		assert_int_equal(ftruncate(fd, 0), 0);
		assert_int_equal(pwrite(fd, text.data(), text.size(), 0), ssize_t(text.size()));
	};

	put(kKey + "\n\n");
	auto k = mdr::read_key_file(path, MDR_HOST_KEY_MIN, MDR_HOST_KEY_MAX);
	assert_true(k.ok());
	assert_true(std::string(k.value().begin(), k.value().end()) == kKey);
	put(std::string(15, 'a') + "\n");
	k = mdr::read_key_file(path, MDR_HOST_KEY_MIN, MDR_HOST_KEY_MAX);
	assert_int_equal(k.error(), -EINVAL);
	assert_non_null(std::strstr(k.message().c_str(), "holds 15 bytes"));
	put(std::string(65, 'a'));
	assert_int_equal(mdr::read_key_file(path, 16, 64).error(), -EINVAL);
	put(std::string(64, 'a'));
	assert_true(mdr::read_key_file(path, 16, 64).ok());
	close(fd);
	unlink(path);
	assert_int_equal(mdr::read_key_file(path, 16, 64).error(), -ENOENT);
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transcript_and_proofs_known_answer),
		cmocka_unit_test(test_every_field_is_covered),
		cmocka_unit_test(test_host_add_known_answer_and_open),
		cmocka_unit_test(test_host_add_refuses_tampering),
		cmocka_unit_test(test_admin_mac),
		cmocka_unit_test(test_random_nonces_differ),
		cmocka_unit_test(test_key_files),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
