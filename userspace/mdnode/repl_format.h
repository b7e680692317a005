// SPDX-License-Identifier: GPL-2.0
//
// repl_format.h - the bytes replicas of a group exchange (replication.md,
// "Log shipping"): the batches a leader writes into a follower's log ring,
// the wrap marker, and the control messages; and Raft's order of logs,
// which a new leader adopts by. Pure logic: bytes in, bytes out; the
// shipper (repl_leader.h) and the receiver (repl_follower.h) use it.
//
// Log indexes count records, from 1: the record at index i is the i-th
// record of the group's log. Every record carries the epoch of the leader
// that first shipped it: that of the batch it came in (a later leader
// resends its prior records in batches of their own epochs).
//
// The ring is a follower's memory region of ring_bytes, a multiple of 8 of
// at most 4 GiB (an offset fits the 32 bits of a WRITE's immediate data),
// which the leader writes at offsets that are multiples of 8. Each entry
// takes its length rounded up to 8; the padding is never read. An entry
// never wraps: when the next batch does not fit before the ring's end, the
// leader writes a wrap marker where it would have gone and the batch at 0,
// and the bytes from the marker to the end count as used. All fields are
// little-endian.
//
// A batch, 56 bytes of header and then its records:
//
//	offset size
//	     0    4  magic 0x4c52444d ("MDRL" in a dump)
//	     4    2  format version, 1
//	     6    2  reserved, 0
//	     8    8  epoch of its records, >= 1: the shipping leader's, or
//		     an earlier one for records it holds from before its own
//	    16    8  first_index: log index of its first record, >= 1
//	    24    8  prev_epoch: epoch of the record at first_index - 1 (0
//		     when first_index is 1), at most epoch: the log matching
//		     check of Raft
//	    32    4  count of records, >= 1
//	    36    4  payload_len: bytes of records after the header
//	    40    8  commit_index the leader knew when it framed the batch,
//		     below first_index (nothing shipped in it can be committed
//		     yet)
//	    48    4  CRC-32C of the header (with this field 0) and the payload
//	    52    4  reserved, 0
//	    56       records, packed as the journal packs them: type (2),
//		     length (4), payload (length, at most 64 KiB)
//
// A header and its records are at most max_batch_bytes (chosen by the
// group, at least kMinBatchBytes: room for one record of the largest
// payload) and fit between their offset and the ring's end.
//
// The wrap marker, 8 bytes: magic 0x5752444d ("MDRW"), 4 bytes of 0. The
// reader goes on at offset 0.
//
// A checkpoint chunk: a piece of a replica's checkpoint (repl_journal.h's
// bytes: its 40-byte header, the recent records, the store's snapshot),
// which a leader ships a follower that its log can no longer bring back
// (repl_leader.h, "checkpointing"). 56 bytes of header, the length and the
// CRC where a batch has them, and then the piece:
//
//	     0    4  magic 0x4b52444d ("MDRK" in a dump)
//	     4    2  format version, 1
//	     6    2  reserved, 0
//	     8    8  epoch >= 1: the shipping leader's
//	    16    8  last_epoch	 the checkpoint's log position, >= 1 each,
//	    24    8  last_index	 last_epoch at most epoch
//	    32    4  total: bytes of the whole checkpoint, at least its
//		     header's 40
//	    36    4  chunk_len: bytes of it after this header, >= 1
//	    40    8  offset of those bytes in the checkpoint; offset +
//		     chunk_len at most total
//	    48    4  CRC-32C of the header (with this field 0) and the bytes
//	    52    4  reserved, 0
//
// Every chunk of one checkpoint carries the same epoch, position and
// total, and they come in order from offset 0 with no gap, each within
// max_batch_bytes, flow-controlled by DURABLE's consumed as batches are.
//
// Control messages travel as SENDs on the same connection; each has one
// exact length:
//
//	     0    2  type: 1 DURABLE, 2 HEARTBEAT, 3 LOG_STATE_REQ, 4 LOG_STATE
//	     2    2  format version, 1
//	     4    4  length of the message, header included
//	     8    8  epoch >= 1: the connection's (LOG_STATE_REQ: the
//		     candidate's; LOG_STATE: the one of the request it answers)
//	DURABLE (follower -> leader), 32 bytes
//	    16    8  durable_index: every record up to it is durable there
//	    24    8  consumed: ring bytes it is done with since the connection
//		     began (wrap skips counted), which the leader may write again
//	HEARTBEAT (leader -> follower), 24 bytes
//	    16    8  commit_index
//	LOG_STATE_REQ (candidate -> member), 16 bytes: the header alone
//	LOG_STATE (member -> candidate), 48 bytes
//	    16    8  last_epoch: epoch of its last record (0: empty log)
//	    24    8  last_index (0: empty log)
//	    32    8  durable_index, at most last_index
//	    40    8  fenced_epoch: it accepts nothing below it, at least epoch
//
// Why not lib/wire/'s opcode table: its messages are structs of
// <linux/mdroute_wire.h>, the ABI the kernel module shares, and its rows
// are a request and a reply on a host's or an admin's connection to
// mdnode. These messages never reach a host, are one-way (DURABLE and
// HEARTBEAT answer nothing), and travel between two mdnodes: a role the
// table would need to grow, and a uapi header the kernel would carry for
// nothing. Four fixed-size messages are a small codec of their own.
#ifndef MDNODE_REPL_FORMAT_H
#define MDNODE_REPL_FORMAT_H

#include <cstddef>
#include <cstdint>
#include <span>
#include <variant>
#include <vector>

#include "lib/util/result.h"

namespace mdnode::repl {

inline constexpr uint32_t kBatchMagic = 0x4c52444d;	// "MDRL"
inline constexpr uint32_t kWrapMagic = 0x5752444d;	// "MDRW"
inline constexpr uint32_t kChunkMagic = 0x4b52444d;	// "MDRK"
inline constexpr uint16_t kFormatVersion = 1;
inline constexpr size_t kHeaderBytes = 56;
inline constexpr size_t kWrapBytes = 8;
inline constexpr size_t kAlign = 8;			// of entries in the ring
inline constexpr size_t kRecordHeader = 6;		// type (2), length (4)
inline constexpr size_t kMaxRecordPayload = 64 << 10;	// the journal's
inline constexpr uint32_t kMinBatchBytes =
	(kHeaderBytes + kRecordHeader + kMaxRecordPayload + kAlign - 1) & ~(kAlign - 1);
inline constexpr uint64_t kMaxRingBytes = uint64_t{1} << 32;
// A replica's checkpoint begins with a header of this many bytes
// (repl_journal.h); a chunk's total is at least that.
inline constexpr size_t kCheckpointHeaderBytes = 40;

inline constexpr uint64_t align_up(uint64_t n)
{
	return (n + kAlign - 1) & ~uint64_t{kAlign - 1};
}

// Where a log ends: the epoch and index of its last record; {0, 0} for
// an empty log.
struct LogPosition {
	uint64_t epoch = 0;
	uint64_t index = 0;

	bool operator==(const LogPosition &) const = default;
};

// Raft's order of logs: the higher last epoch is the more up to date, and
// for equal epochs the higher last index. < 0, 0 or > 0 as a is behind,
// equal to or ahead of b. A new leader adopts the greatest of a majority.
int compare_logs(const LogPosition &a, const LogPosition &b);

// A record of a batch; payload points into the batch's bytes.
struct RecordRef {
	uint16_t type;
	std::span<const std::byte> payload;	// at most kMaxRecordPayload
};

struct BatchHeader {
	uint64_t epoch = 0;
	uint64_t first_index = 0;
	uint64_t prev_epoch = 0;
	uint32_t count = 0;
	uint32_t payload_len = 0;
	uint64_t commit_index = 0;

	bool operator==(const BatchHeader &) const = default;
};

// The ring and batch sizes of a connection: -EINVAL naming what is wrong
// unless max_batch_bytes is at least kMinBatchBytes and a multiple of 8,
// and ring_bytes a multiple of 8, at most kMaxRingBytes, with room for a
// batch of max_batch_bytes and a wrap marker.
mdr::Status check_ring(uint64_t ring_bytes, uint32_t max_batch_bytes);

// Bytes a record takes in a batch.
inline size_t record_bytes(size_t payload) { return kRecordHeader + payload; }

// A batch of the records, header fields from h (count and payload_len are
// set from records), CRC computed: kHeaderBytes + payload_len bytes,
// unpadded. The caller keeps it within max_batch_bytes and each payload
// within kMaxRecordPayload (asserted).
std::vector<std::byte> encode_batch(const BatchHeader &h, std::span<const RecordRef> records);

// The 8 bytes of a wrap marker.
std::vector<std::byte> encode_wrap();

// What an entry at a ring offset is, read from its first bytes only:
// bytes runs from the offset to the ring's end. A batch's length is its
// header's and its payload's, checked against max_batch_bytes and the
// ring's end, so that the reader copies no more than that before it
// checks the rest (parse_batch()).
struct Entry {
	bool wrap;
	size_t length;		// kWrapBytes, or header + payload_len (chunk_len)
	bool chunk = false;	// a checkpoint chunk, not a batch
};
mdr::Result<Entry> peek_entry(std::span<const std::byte> bytes, uint32_t max_batch_bytes);

// A batch checked whole: every header field in range, the records packed
// exactly into payload_len, each of at most kMaxRecordPayload, and the
// CRC. bytes holds at least the batch (more is ignored); records point
// into it. Errors (each naming the field): -EBADMSG for a bad magic or
// CRC, -EPROTONOSUPPORT for another version, -EMSGSIZE for a batch longer
// than max_batch_bytes or than bytes, -EINVAL for any other field.
struct Batch {
	BatchHeader h;
	std::vector<RecordRef> records;
	size_t length;		// header and payload
};
mdr::Result<Batch> parse_batch(std::span<const std::byte> bytes, uint32_t max_batch_bytes);

// ---- Checkpoint chunks -----------------------------------------------------

struct ChunkHeader {
	uint64_t epoch = 0;
	LogPosition last;		// the checkpoint's
	uint32_t total = 0;		// bytes of the checkpoint
	uint64_t offset = 0;		// of this chunk's bytes in it

	bool operator==(const ChunkHeader &) const = default;
};

// Bytes of a checkpoint one chunk of max_batch_bytes carries.
inline constexpr size_t chunk_room(uint32_t max_batch_bytes)
{
	return max_batch_bytes - kHeaderBytes;
}

// A chunk of h and bytes (at least 1, within total from h.offset), CRC
// computed: kHeaderBytes + bytes.size(), unpadded. The caller keeps it
// within max_batch_bytes (asserted: bytes.size() <= UINT32_MAX).
std::vector<std::byte> encode_chunk(const ChunkHeader &h, std::span<const std::byte> bytes);

// A chunk checked whole: every header field in range (the table above)
// and the CRC. bytes holds at least the chunk; the piece points into it.
// Errors as parse_batch()'s, naming the field.
struct Chunk {
	ChunkHeader h;
	std::span<const std::byte> bytes;
	size_t length;		// header and bytes
};
mdr::Result<Chunk> parse_chunk(std::span<const std::byte> bytes, uint32_t max_batch_bytes);

// ---- Control messages ------------------------------------------------------

enum ControlType : uint16_t {
	kDurable = 1,
	kHeartbeat = 2,
	kLogStateReq = 3,
	kLogState = 4,
};

struct Durable {
	uint64_t epoch;
	uint64_t durable_index;
	uint64_t consumed;
	bool operator==(const Durable &) const = default;
};

struct Heartbeat {
	uint64_t epoch;
	uint64_t commit_index;
	bool operator==(const Heartbeat &) const = default;
};

struct LogStateReq {
	uint64_t epoch;
	bool operator==(const LogStateReq &) const = default;
};

struct LogState {
	uint64_t epoch;			// of the request answered
	LogPosition last;
	uint64_t durable_index;
	uint64_t fenced_epoch;
	bool operator==(const LogState &) const = default;
};

using Control = std::variant<Durable, Heartbeat, LogStateReq, LogState>;

std::vector<std::byte> encode_control(const Control &m);
// Errors naming the message and field: -EMSGSIZE for a length other than
// the type's (in the header or of bytes), -EPROTONOSUPPORT for another
// version, -EINVAL for an unknown type or a field out of range.
mdr::Result<Control> parse_control(std::span<const std::byte> bytes);

// A member's log state as LOG_STATE (and a replication connection's
// accept, repl_conn.h) carry it: -EINVAL naming the field when
// fenced_epoch is below epoch, last_epoch above fenced_epoch, one of
// last_epoch and last_index 0 without the other, or durable_index past
// last_index.
mdr::Status check_log_state(const LogState &s);

} // namespace mdnode::repl

#endif // MDNODE_REPL_FORMAT_H
