// SPDX-License-Identifier: GPL-2.0
//
// auth.h - the secrets of the protocol, in one place: the proofs of a host
// connection (HMAC-SHA256 over struct mdr_wire_auth_transcript, both
// directions), the sealing of a host's key in MDR_OP_HOST_ADD (wrap and
// MAC, and their check), the admin proof of MDR_OP_AUTH, random nonces, key files,
// and wiping copies of keys. mdnode, mdctl and the test programs all use
// these; nothing else computes a MAC of the protocol.
//
//	HostTranscript t{.node_nonce = rep.nonce, .host_nonce = mine,
//			 .host_id = req.host_id, .node_id = rep.node_id,
//			 .boot_id = rep.boot_id, .tenant = req.tenant,
//			 .version = rep.version, .host_qpn = my_qp,
//			 .node_qpn = established.qp_num};
//	auto proof = host_mac(key, AuthLabel::host, t);
#ifndef MDR_AUTH_H
#define MDR_AUTH_H

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <linux/mdroute_wire.h>

#include "lib/util/result.h"
#include "lib/wire/wire.h"

namespace mdr {

using Mac = std::array<uint8_t, 32>;
using Nonce = std::array<uint8_t, 16>;

// Whose proof: MDR_AUTH_LABEL_HOST or MDR_AUTH_LABEL_NODE.
enum class AuthLabel { host, node };

// What both proofs of one host connection cover (the fields of struct
// mdr_wire_auth_transcript but the label; role is MDR_ROLE_HOST).
struct HostTranscript {
	Nonce node_nonce{};	// the accept's
	Nonce host_nonce{};	// MDR_OP_HOST_AUTH's
	uint64_t host_id = 0;	// the connect request's
	uint64_t node_id = 0;	// the accept's
	uint64_t boot_id = 0;	// the accept's
	uint32_t tenant = 0;	// the connect request's
	uint16_t version = 0;	// negotiated (the accept's)
	uint32_t host_qpn = 0;	// the host's QP on this connection
	uint32_t node_qpn = 0;	// mdnode's QP on it
};

// The 88 bytes the MAC is computed over.
mdr_wire_auth_transcript auth_transcript(AuthLabel label, const HostTranscript &t);
// HMAC-SHA256 keyed with the host's secret over auth_transcript().
Mac host_mac(std::span<const uint8_t> key, AuthLabel label, const HostTranscript &t);

// The admin's proof of MDR_OP_AUTH: HMAC-SHA256 keyed with the admin key
// over the accept's nonce and the connect request's host id (le64).
Mac admin_mac(std::span<const uint8_t> admin_key, const Nonce &nonce, uint64_t host_id);

// Constant time (CRYPTO_memcmp).
bool mac_equal(const Mac &a, const Mac &b);

// MDR_OP_HOST_ADD of @host_key for the admin connection whose accept
// carried @conn_nonce, keyed with @admin_key: a fresh request nonce, the
// key wrapped (zero-padded to 64 bytes, XORed with the keystream of
// struct mdr_wire_host_add_req) and the request's MAC. -EINVAL for a key
// outside MDR_HOST_KEY_MIN ..= MDR_HOST_KEY_MAX bytes; -EIO: no random
// bytes.
Result<wire::HostAddReq> host_add_request(std::span<const uint8_t> admin_key,
					  const Nonce &conn_nonce, uint64_t host_id,
					  uint32_t tenant, uint16_t flags,
					  std::span<const uint8_t> host_key);
// The same with the request nonce @req.nonce chosen by the caller: fills
// key_len, wrapped and mac of @req from its other fields.
Status seal_host_add(std::span<const uint8_t> admin_key, const Nonce &conn_nonce,
		     wire::HostAddReq &req, std::span<const uint8_t> host_key);
// mdnode's side: the host's key out of @req once its MAC is right.
// -EPERM: the MAC is not the admin key's over this connection's nonce;
// -EINVAL: the padding does not unwrap to zero.
Result<std::vector<uint8_t>> open_host_add(std::span<const uint8_t> admin_key,
					   const Nonce &conn_nonce,
					   const wire::HostAddReq &req);

// Random bytes from the CSPRNG (RAND_bytes); -EIO if it has none.
Status random_bytes(std::span<uint8_t> out);
// A nonce that is not all zero.
Result<Nonce> random_nonce();

// The bytes of a key file, trailing newlines ("\n", "\r") stripped: the
// secret, min ..= max bytes, or an error naming the file.
Result<std::vector<uint8_t>> read_key_file(const std::string &path, size_t min, size_t max);

// OPENSSL_cleanse: a copy of a key that is not needed any more.
void wipe(std::span<uint8_t> bytes);
inline void wipe(std::vector<uint8_t> &v)
{
	wipe(std::span<uint8_t>(v));
	v.clear();
}

} // namespace mdr

#endif // MDR_AUTH_H
