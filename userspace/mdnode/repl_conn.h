// SPDX-License-Identifier: GPL-2.0
//
// repl_conn.h - what a replication connection carries besides the ring and
// the control messages (replication.md, "Log shipping"): the rdma_cm
// private data with which a leader asks a follower for a ring and the
// follower answers with it, and the checks of what arrives on the
// connection. Pure logic, no verbs: the transport (repl_rdma.h) calls it,
// and tests/test_repl_conn.cc refuses each field.
//
// Everything here comes from a peer and is checked before use: a
// follower admits a request only for its group, an epoch not below the
// one it is fenced to and a ring within its bounds; a leader takes an
// accept only for the epoch and ring it asked, with a log state that
// holds together; a receive is a notify (a WRITE with immediate naming an
// aligned offset inside the ring, with no bytes or with the entry's, all
// inside the ring) or a control message of a plausible length, nothing
// else.
//
// All fields little-endian; every message begins with
//
//	offset size
//	     0    4  magic 0x5052444d ("MDRP" in a dump)
//	     4    2  format version, 1
//	     6    2  kind: 1 request, 2 accept, 3 reject, 4 probe
//
// Request (leader -> follower, connect private data), 48 bytes:
//	     8    8  group id
//	    16    8  epoch >= 1: the leader's
//	    24    4  leader's replica id, >= 1
//	    28    4  max_batch_bytes (repl_format.h's check_ring())
//	    32    8  ring_bytes asked for
//	    40    8  reserved, 0
// Accept (follower -> leader), 80 bytes (72 from a release before
// features, whose padding reads as none):
//	     8    8  epoch: the request's
//	    16    8  ring address
//	    24    4  ring rkey, fresh for this connection
//	    28    4  follower's replica id, >= 1
//	    32    8  ring_bytes: as asked
//	    40    8  last_epoch    } its log as LOG_STATE says it
//	    48    8  last_index    } (check_log_state()), fenced_epoch
//	    56    8  durable_index } the request's epoch: it fenced every
//	    64    8  fenced_epoch  } epoch below before it accepted
//	    72    8  features: bit 0 (kFeatureEntryNotify) it takes an
//		     entry's bytes with its notify, in one WRITE with
//		     immediate; a leader uses no bit it does not know
// Reject (follower -> leader), 24 bytes:
//	     8    2  reason (RejectReason)
//	    10    6  reserved, 0
//	    16    8  fenced_epoch: the epoch it is fenced to
// Probe (any replica -> a replica, connect private data), 16 bytes:
//	     8    8  group id of the asker
// A probe asks only whether a process listens there: its answer is a
// reject of reason kRejProbe (or none at all: the leader probe,
// repl_probe.h, reads rdma_cm's own reject of a port nobody listens on).
//
// rdma_cm hands private data over padded with zeros (to 56 bytes for a
// request, 196 for an accept, 148 for a reject), so a parser takes any
// length from its message's up, and reads no further.
//
// Why not lib/wire/'s connection private data: that is the ABI hosts and
// mdctl speak to mdnode, in <linux/mdroute_wire.h>; replicas speak only
// to each other (repl_format.h says the same of the control messages).
#ifndef MDNODE_REPL_CONN_H
#define MDNODE_REPL_CONN_H

#include <cstddef>
#include <cstdint>
#include <span>
#include <variant>
#include <vector>

#include "lib/util/result.h"
#include "mdnode/repl_format.h"

namespace mdnode::repl {

inline constexpr uint32_t kConnMagic = 0x5052444d;	// "MDRP"
inline constexpr size_t kConnReqBytes = 48;
inline constexpr size_t kConnAccBytes = 72;	// the least an accept holds
inline constexpr size_t kConnAccFeaturesBytes = 80;
// A follower takes an entry's bytes with its notify (one WRITE with
// immediate data instead of a WRITE and a notify: a packet and its ACK
// fewer per batch).
inline constexpr uint64_t kFeatureEntryNotify = 1;
inline constexpr size_t kConnRejBytes = 24;
inline constexpr size_t kConnProbeBytes = 16;
// rdma_cm's room for private data in a REQ, a REP and a REJ.
static_assert(kConnReqBytes <= 56 && kConnAccFeaturesBytes <= 196 && kConnRejBytes <= 148);

// Fields as the table above has them; what is not named in an
// initializer is 0.
struct ConnReq {
	uint64_t group, epoch;
	uint32_t leader_id, max_batch_bytes;
	uint64_t ring_bytes;
	bool operator==(const ConnReq &) const = default;
};

// The follower's log travels as LOG_STATE's fields (log.epoch is the
// request's epoch).
struct ConnAcc {
	uint64_t ring_addr;
	uint32_t ring_rkey, follower_id;
	uint64_t ring_bytes;
	LogState log;
	uint64_t features = 0;
	bool operator==(const ConnAcc &) const = default;
};

enum RejectReason : uint16_t {
	kRejStale = 1,		// an epoch below the one it is fenced to
	kRejBusy = 2,		// its log is not settled yet: ask again
	kRejInvalid = 3,	// the request did not parse
	kRejRing = 4,		// the ring asked for is past its bounds
	kRejGroup = 5,		// another group's leader
	kRejFailed = 6,		// it cannot take a log (a journal failed)
	kRejNoMem = 7,		// it could not set the connection up
	kRejProbe = 8,		// a probe, answered: this replica's process runs
};
const char *reject_name(uint16_t reason);

struct ConnRej {
	uint16_t reason;
	uint64_t fenced_epoch;
	bool operator==(const ConnRej &) const = default;
};

std::vector<std::byte> encode_conn_req(const ConnReq &r);
std::vector<std::byte> encode_conn_acc(const ConnAcc &a);
std::vector<std::byte> encode_conn_rej(const ConnRej &r);
std::vector<std::byte> encode_conn_probe(uint64_t group);
// Whether a connect's private data is a probe (header and length; the
// group is not checked: any asker is answered the same).
bool is_conn_probe(std::span<const std::byte> bytes);
// Errors naming the message and field: -EMSGSIZE for fewer bytes than the
// message's, -EPROTONOSUPPORT for another version, -EINVAL for a magic,
// kind or field out of range.
mdr::Result<ConnReq> parse_conn_req(std::span<const std::byte> bytes);
mdr::Result<ConnAcc> parse_conn_acc(std::span<const std::byte> bytes);
mdr::Result<ConnRej> parse_conn_rej(std::span<const std::byte> bytes);

// The leader's check of an accept against its request: -EPROTO naming
// what differs (another epoch, another ring size, a null ring address or
// one whose ring would pass the end of the address space, fenced to
// another epoch than the request's, a log of a later epoch).
mdr::Status check_accept(const ConnReq &asked, const ConnAcc &got);

// The follower's admission of a request: 0 and whether it fences a lower
// epoch first, or the RejectReason to answer with.
struct FollowerBounds {
	uint64_t group = 0;
	uint64_t max_ring_bytes = 64 << 20;	// memory a leader may pin here
};
struct Admission {
	uint16_t reject = 0;
	bool raises_fence = false;	// its epoch is above fenced_epoch
};
// settled: every record the follower appended is durable (a new
// connection's receiver starts from a durable log).
Admission admit(const ConnReq &r, const FollowerBounds &b, uint64_t fenced_epoch,
		bool settled);

// What a receive completion brought, from its fields: with_imm is a WRITE
// with immediate (IBV_WC_RECV_RDMA_WITH_IMM), has_imm whether it carried
// immediate data (imm in host order), byte_len its bytes. A follower's
// ring is ring_bytes (0 on the leader's side, which lends no memory);
// max_control the largest control message the receive buffer holds.
struct Notify {
	uint32_t offset;
	bool operator==(const Notify &) const = default;
};
struct ControlBytes {
	uint32_t length;
	bool operator==(const ControlBytes &) const = default;
};
using Received = std::variant<Notify, ControlBytes>;
// -EPROTO naming what is wrong: a notify without immediate, at an offset
// not a multiple of 8 or outside the ring (or on a side that has none),
// or with bytes that pass the ring's end; a SEND with immediate, or of a
// length no control message has.
mdr::Result<Received> classify_receive(bool with_imm, bool has_imm, uint32_t imm,
				       uint32_t byte_len, uint64_t ring_bytes,
				       uint32_t max_control);

} // namespace mdnode::repl

#endif // MDNODE_REPL_CONN_H
