// SPDX-License-Identifier: GPL-2.0
//
// repl_journal.h - the group's log inside a replica's own journal
// (replication.md, "A replica's journal"): what a replica journals beside
// the records of the log, so that a restart knows where its log ends,
// which of its records are committed and which wait; and the EPOCH record
// a new leader commits first. Pure: records in, a log position out.
//
// A replica's journal holds two kinds of records:
//
//	local	records of this replica alone, never shipped: its start's
//		check of its disks (startup_devices.cc). Replayed into the
//		store as a single node replays them.
//	log	records of the group's log, each preceded, in one run with
//		the records of its batch, by a LOG_MARK:
//
//	LOG_MARK (kLogMark), 32 bytes
//	     0    8  epoch of the records that follow, >= 1
//	     8    8  first_index: the log index of the first one, >= 1
//	    16    4  count of records that follow, >= 1
//	    20    4  reserved, 0
//	    24    8  commit_index known when they were journaled, below
//		     first_index
//
// The leader journals a mark and its record for each change, the follower
// a mark and a batch's records for each batch (repl_follower.h); nothing
// else is journaled between them, the loop being one thread. A mark whose
// first_index is at or below the log's end cuts the records from there
// on: a follower whose log held an uncommitted tail of an older epoch
// took the leader's batch over it (repl_follower.h, step 4), and the
// journal, append-only, says so by the mark.
//
// EPOCH (kEpochRecord), a record of the log, 16 bytes. A new leader's
// first record (replication.md, "A new leader", step 4): once it is
// committed, every record before it is. It changes nothing in the store.
//
//	     0    8  epoch of the leader that shipped it, >= 1
//	     8    4  held_ms	 the lease bounds (lease_bounds.h) of every
//	    12    4  io_hold_ms	 lease a host may hold while this epoch leads
//
// The bounds are the leader's own widened by those of the last EPOCH record
// before it: a leader elected while leases of its predecessor's may still
// be out announces theirs too. The next leader waits out the bounds of the
// last EPOCH record of its log at its takeover (NodeCore::begin_windows()).
// A leader past that wait, whose own bounds are narrower than it
// announced, ships another EPOCH record of its epoch with its own: every
// lease out there is its own by then (GroupReplica::settle_bounds()).
//
// Recovery (LogRecovery) reads the journal in order and rebuilds: the
// log's end (last), the highest commit index a mark carried (every record
// up to it is committed: a leader put it in a batch header, or journaled
// it, only once a majority had it), the records up to it applied to the
// store in log order, and the records after it held, each with its epoch,
// for the follower's receiver (ReceiverOptions::held) or for a leader's
// EPOCH record to commit. The journal loses, on a crash, only a suffix of
// what it was given: a mark followed by fewer than count records can only
// be its last, and its log ends with the records that arrived; a mark
// that comes before its predecessor's records all did tells of such a
// crash, after which the next process went on. Local records are told
// apart by their type (is_local()), not by their place: a process
// after such a crash journals its disks before any mark.
//
// A replica's checkpoint is taken only when every record its log holds is
// applied to the store (GroupReplica::checkpoint_position()): the log then
// is its position, and its last records (RecentLog), kept for a follower
// behind a leader's start. The journal's checkpoint is this header, 40
// bytes, the recent records, then the store's snapshot (snapshot.cc):
//
//	     0    4  magic "MDRG"
//	     4    2  version (1)
//	     6    2  flags: bit 0, the bounds below are an EPOCH record's
//	     8    8  epoch of the log's last record (0: an empty log)
//	    16    8  index of the log's last record, every one applied
//	    24    4  held_ms	 of the last EPOCH record the log held
//	    28    4  io_hold_ms	 (with flag bit 0; else 0)
//	    32    8  bytes of the recent records that follow
//
//	each recent record, in log order, the last one at the index above:
//	     0    8  index
//	     8    8  epoch
//	    16    2  type
//	    18    2  reserved, 0
//	    20    4  payload bytes, then the payload
//
// A start loads it (LogRecovery::checkpoint()) before the journal's
// records after it, whose first mark follows that position. A single
// node's checkpoint (a bare snapshot) is refused by a replica, and this
// one by a single node. The same bytes are what a leader ships a follower
// its log cannot bring back, and what that follower's journal then holds
// as its checkpoint (repl_checkpoint.h).
#ifndef MDNODE_REPL_JOURNAL_H
#define MDNODE_REPL_JOURNAL_H

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "lib/util/result.h"
#include "mdnode/lease_bounds.h"
#include "mdnode/repl_follower.h"
#include "mdnode/repl_format.h"

namespace mdnode::repl {

inline constexpr size_t kLogMarkBytes = 32;
inline constexpr size_t kEpochRecordBytes = 16;
// Payload bytes of the log's last records a replica keeps in memory.
inline constexpr size_t kRecentBytes = 16 << 20;

// The log's last records, bounded by kRecentBytes (the newest always
// kept), cut where a later batch goes over them.
class RecentLog {
public:
	void cut(uint64_t from_index);
	void push(HeldRecord r);
	std::deque<HeldRecord> take() { bytes_ = 0; return std::move(records_); }
	void assign(std::deque<HeldRecord> records);
	const std::deque<HeldRecord> &records() const { return records_; }

private:
	std::deque<HeldRecord> records_;
	size_t bytes_ = 0;
};

struct LogMark {
	uint64_t epoch = 0;
	uint64_t first_index = 0;
	uint32_t count = 0;
	uint64_t commit_index = 0;

	bool operator==(const LogMark &) const = default;
};

std::vector<std::byte> encode_mark(const LogMark &m);
// -EINVAL naming the field: another length, epoch or first_index 0, count
// 0, a reserved field not 0, a commit index not below first_index.
mdr::Result<LogMark> decode_mark(std::span<const std::byte> payload);

struct EpochRecord {
	uint64_t epoch = 0;
	LeaseBounds bounds;

	bool operator==(const EpochRecord &) const = default;
};

std::vector<std::byte> encode_epoch_record(const EpochRecord &r);
// -EINVAL for another length, epoch 0, or bounds check_lease_bounds()
// refuses.
mdr::Result<EpochRecord> decode_epoch_record(std::span<const std::byte> payload);

// Whether a record of the log changes the store: every type but EPOCH.
bool changes_store(uint16_t type);
// Whether a record is of this replica alone (its disks): never shipped.
bool is_local(uint16_t type);

struct LogCheckpoint {
	LogPosition last;	// every record up to it applied
	std::optional<LeaseBounds> epoch_bounds;
	// The log's last records, ending at last (none: an empty log, or
	// none kept).
	std::deque<HeldRecord> recent;
};

// The header and the recent records: what goes before the snapshot.
std::vector<uint8_t> encode_checkpoint_header(const LogCheckpoint &c);
// The header, the recent records and the store's snapshot after them.
// -EINVAL naming what is wrong: too short, another magic (a single node's
// checkpoint), version, unknown flags, an index without an epoch, bounds
// check_lease_bounds() refuses; recent records that overrun their
// section, are not in order, do not end at the log's last record, are of
// an epoch past it or of a local type, or have a reserved field set.
struct ReplicaCheckpoint {
	LogCheckpoint log;
	std::span<const uint8_t> snapshot;
};
mdr::Result<ReplicaCheckpoint> decode_checkpoint(std::span<const uint8_t> bytes);
// Whether a journal's checkpoint is a replica's (its magic), to tell a
// data directory of the other kind from a damaged one.
bool is_replica_checkpoint(std::span<const uint8_t> bytes);

struct RecoveredLog {
	LogPosition last;		// the log's end
	uint64_t applied = 0;		// records up to it were applied
	uint64_t applied_epoch = 0;	// the epoch of the record at applied
	std::vector<HeldRecord> held;	// the records after applied, in order
	// The log's last records, applied or not, up to kRecentBytes of
	// payload: what a leader ships a follower behind its start
	// (ShipperOptions::prior).
	std::deque<HeldRecord> recent;
	// The bounds of the last EPOCH record the journal holds, a record a
	// later mark cut too (GroupReplica::lead() says why that is safe);
	// none when it holds none.
	std::optional<LeaseBounds> epoch_bounds;
	uint64_t log_records = 0;	// of the log, cut ones counted
	uint64_t local_records = 0;
	uint64_t cut = 0;		// records a later mark cut
};

class LogRecovery {
public:
	// apply: a record of the log, committed, in index order. local: a
	// record outside the log. An error of either stops the recovery.
	using Apply = std::function<mdr::Status(uint64_t index, uint16_t type,
						std::span<const std::byte> payload)>;
	using Local = std::function<mdr::Status(uint16_t type,
						std::span<const std::byte> payload)>;

	LogRecovery(Apply apply, Local local);

	// The journal's checkpoint (it comes before any record): the store's
	// snapshot to load, and the log starts at its position, all of it
	// applied. decode_checkpoint()'s errors and load's.
	using LoadSnapshot = std::function<mdr::Status(std::span<const uint8_t> snapshot)>;
	mdr::Status checkpoint(std::span<const uint8_t> bytes, const LoadSnapshot &load);

	// The journal's next record. Errors (-EINVAL, naming the record's
	// place): a mark that does not decode, that leaves a gap after the
	// log's end, that cuts a record known committed, or whose epoch is
	// below the record before its first; an EPOCH record whose
	// epoch is not its mark's. And the callbacks' errors.
	mdr::Status record(uint16_t type, std::span<const std::byte> payload);
	// The log as the journal left it.
	RecoveredLog finish();

private:
	uint64_t epoch_at(uint64_t index) const;
	mdr::Status apply_committed();

	Apply apply_;
	Local local_;
	RecoveredLog log_;
	uint64_t commit_ = 0;
	RecentLog recent_;
	uint64_t mark_epoch_ = 0;
	uint32_t pending_ = 0;		// records the last mark still announces
	uint64_t seen_ = 0;		// journal records read, for errors
};

} // namespace mdnode::repl

#endif // MDNODE_REPL_JOURNAL_H
