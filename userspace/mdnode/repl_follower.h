// SPDX-License-Identifier: GPL-2.0
//
// repl_follower.h - the follower's side of log shipping (replication.md,
// "Log shipping" and "Fencing a deposed leader"): one LogReceiver per
// leader connection reads the batches the leader wrote into its log ring
// (repl_format.h), appends their records to the local journal, tells the
// leader what is durable and what ring bytes it may write again, and
// applies records to the store once they are committed. Transport-neutral:
// the ring is memory the caller registered; the notifies (a WRITE with
// immediate's offset) and control messages come from the caller; DURABLE
// leaves through a ReplyLink. Single-threaded, on the loop's thread.
//
//	auto r = LogReceiver::create(opts, sink, link);	// journal flushed
//	on a WRITE with immediate:	r.value()->on_notify(imm_offset);
//	on a SEND from the leader:	r.value()->on_control(bytes);
//	on a newer epoch (watch, or a new leader's connection), first:
//					r.value()->fence(new_epoch);
//	an error from either, or failed(): close the connection.
//
// A notify at an offset, in order:
//   1. Where the next entry must begin: the ring position after the last
//      one, or 0 when a wrap marker stands there. Anything else is a
//      protocol error.
//   2. The batch is copied out of the ring before it is checked: the
//      leader's HCA may write the ring at any time, and a check holds only
//      for bytes that cannot change under it. Its length, read from the
//      ring, only bounds the copy (by max_batch_bytes and the ring's end);
//      parse_batch() checks the copy whole.
//   3. Epoch: above the connection's, a protocol error; below it, the
//      records of an earlier epoch that this leader holds, sent to a
//      follower behind the log it began its epoch with (the ring is this
//      connection's alone: no deposed leader writes it). After fence() to
//      a higher epoch every notify is dropped and counted.
//   4. Index: a batch whose records it holds all, when its log ends in
//      this epoch, is skipped (a resend); one of this epoch whose first
//      records it holds, when its log ends in this epoch, is taken from
//      the record after its log's end (a resend of the batch a crash cut
//      in its journal; those it still holds in memory must be the
//      batch's); one that leaves a gap is a protocol error; one that
//      follows must carry, as prev_epoch, the epoch of its last record
//      (Raft's log matching), else a protocol error. One that overlaps the end of a log that ends in an older
//      epoch (a tail the new leader may not have) cuts the tail: it must
//      begin past what was applied (committed records are never cut:
//      every leader's log holds them), and carry as prev_epoch the epoch
//      of the record before it (of the last applied one, a committed
//      record the leader holds at the same index, it is taken as it
//      says); the held records from its first index on go, and its
//      records follow. Anything else overlapping is a protocol error.
//   5. Its records go to the journal (Sink::append) and are held in memory
//      until committed. Its ring bytes are consumed at once: the journal
//      copied them.
//   6. Once the journal has them durable, DURABLE {epoch, durable index,
//      consumed} goes to the leader. A batch skipped or dropped frees its
//      bytes at once with a DURABLE of the same durable index.
// Records are applied in index order up to min(commit index, durable
// index, matched index). A cut lowers the durable index to the record
// before the batch: what follows is durable once the batch is. The commit index is the highest a batch header or
// HEARTBEAT carried. The matched index is how far its log is known to be
// the leader's (Raft's rule: a commit index says nothing of records the
// leader never vouched for): its applied records at first, or its whole log
// when that ends in the connection's epoch (only this leader writes records
// of its epoch), then the end of every batch it appends after the
// log-matching check of step 4. So a follower whose log ends in records of
// an older epoch that the new leader may not have applies none of them on
// a HEARTBEAT, and a batch that overlaps such a tail is a protocol error,
// not a resend to skip. Durable records above the commit index wait in
// memory (at most max_held_bytes, each record counted with its bookkeeping,
// kHeldRecordCost: a leader that ships far past what it commits, even
// records of no bytes, is refused).
//
// A checkpoint (repl_checkpoint.h) comes in chunks (repl_format.h) when
// the leader's log can no longer bring this follower back (repl_leader.h,
// "checkpointing"). Each is copied out of the ring and checked as a batch
// is; it must be of the connection's epoch (a leader ships only its own
// state), the first at offset 0, the checkpoint's position at or past what
// was applied (a committed record is never undone) and its size within
// max_checkpoint_bytes; the others follow it with the same position and
// size, and no batch comes between. Its ring bytes are consumed at once
// (DURABLE) but the last chunk's, which are reported only once the
// checkpoint is installed (Sink::install(): checked whole, durable as the
// journal's checkpoint, loaded into the store). Then its log is the
// checkpoint's position, all of it durable, committed and applied, the
// held records gone, and the DURABLE that says so, with every chunk
// consumed, is what the leader waits for before it streams the batches
// after it. A fence, a lost connection (disconnected()) or a failure drop
// a checkpoint half received: the next connection's leader ships one
// whole.
//
// A protocol error, a journal failure or an apply that fails make the
// receiver failed: it does nothing more, and failure() says why. A journal
// or apply failure means the replica must stop (journal.h, fail-stop); a
// protocol error only ends the connection.
#ifndef MDNODE_REPL_FOLLOWER_H
#define MDNODE_REPL_FOLLOWER_H

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "lib/util/result.h"
#include "mdnode/repl_format.h"

namespace mdnode::repl {

// Where a follower's records go: its journal and its store.
class Sink {
public:
	using Done = std::function<void(const mdr::Status &)>;

	virtual ~Sink() = default;
	// A batch's records follow (repl_journal.h, LOG_MARK): journaled
	// before them, in the same run.
	virtual mdr::Status begin_batch(const BatchHeader &h) = 0;
	// Appends a record to the journal (Journal::append()): done, which
	// may be empty, runs once it is durable or with the journal's
	// failure, in append order, never from append() itself.
	virtual mdr::Status append(uint16_t type, std::span<const std::byte> payload,
				   Done done) = 0;
	// Applies a committed record (Store::replay()). An error is a record
	// the state cannot take: the replica must stop.
	virtual mdr::Status apply(uint64_t index, uint16_t type,
				  std::span<const std::byte> payload) = 0;
	// Replaces the log and the store with a checkpoint of the leader's
	// whose log ends at last (repl_checkpoint.h, install_checkpoint()):
	// durable and loaded when it returns. The journal may run callbacks
	// of earlier appends meanwhile (it flushes first). An error: it was
	// refused, and the journal, the store and the log stand as they were.
	virtual mdr::Status install(const LogPosition &last,
				    std::span<const uint8_t> checkpoint) = 0;
};

// The follower's end of the leader connection.
class ReplyLink {
public:
	virtual ~ReplyLink() = default;
	// A control message to the leader (a SEND); an error: the connection
	// is lost.
	virtual mdr::Status send(std::span<const std::byte> msg) = 0;
};

// A record durable in the journal and not yet applied.
struct HeldRecord {
	uint64_t index;
	uint64_t epoch;		// the leader's that shipped it
	uint16_t type;
	std::vector<std::byte> payload;
};
// What holding one record costs beyond its payload, for max_held_bytes:
// the record, its vector's allocation and the deque's share, rounded up.
inline constexpr size_t kHeldRecordCost = sizeof(HeldRecord) + 32;

struct ReceiverOptions {
	uint64_t epoch = 0;		// the connection's: the leader's
	// Its log: every record up to last is durable (flush the journal
	// before a connection), and up to applied it is in the store; held
	// has the records after applied, in order (take_held() of the
	// receiver before, or none).
	LogPosition last;
	uint64_t applied = 0;
	std::vector<HeldRecord> held;
	std::span<std::byte> ring;	// registered memory; its size is the ring's
	uint32_t max_batch_bytes = 1 << 20;
	size_t max_held_bytes = 64 << 20;
	// The largest checkpoint it takes: the memory a leader may make it
	// hold for one (its store holds as much again once loaded).
	uint32_t max_checkpoint_bytes = 1u << 30;
};

struct ReceiverStats {
	uint64_t batches = 0;		// appended
	uint64_t records = 0;		// appended
	uint64_t skipped = 0;		// batches held already
	uint64_t trimmed = 0;		// records held already of a batch taken
	uint64_t dropped = 0;		// after a fence; HEARTBEATs of a lower epoch
	uint64_t wraps = 0;
	uint64_t durables = 0;		// DURABLE sent
	uint64_t applied = 0;		// records
	uint64_t cut = 0;		// records of an older epoch's tail cut
	uint64_t chunks = 0;		// checkpoint chunks taken
	uint64_t checkpoints = 0;	// installed
};

// Counts of two receivers added up: a follower's over its connections.
ReceiverStats &operator+=(ReceiverStats &a, const ReceiverStats &b);

class LogReceiver {
public:
	// -EINVAL naming what is wrong with opts: check_ring(), epoch 0, a
	// log position of a later epoch or half empty, applied past last,
	// held not the records after applied, held past max_held_bytes.
	static mdr::Result<std::unique_ptr<LogReceiver>> create(ReceiverOptions opts,
								Sink &sink, ReplyLink &link);
	~LogReceiver();
	LogReceiver(const LogReceiver &) = delete;
	LogReceiver &operator=(const LogReceiver &) = delete;

	// An entry begins at offset of the ring (see above). An error is a
	// protocol error or a journal that refused the records: the receiver
	// has failed.
	mdr::Status on_notify(uint32_t offset);
	// A control message from the leader: only HEARTBEAT is expected.
	mdr::Status on_control(std::span<const std::byte> msg);
	mdr::Status on_heartbeat(const Heartbeat &hb);
	// From now on nothing of an epoch below epoch is accepted; with epoch
	// above the connection's, the receiver takes nothing more: no batch,
	// no commit index, no DURABLE sent (fencing's "first"; the caller
	// also revokes the ring's registration). Never lowers what it holds.
	void fence(uint64_t epoch);
	// Its connection is gone: a checkpoint half received is dropped.
	void disconnected();

	// The durable records not applied yet, for the next connection's
	// receiver; none are held here any more.
	std::vector<HeldRecord> take_held();

	uint64_t epoch() const { return epoch_; }
	uint64_t fenced_epoch() const { return fenced_; }
	bool fenced() const { return fenced_ > epoch_; }
	LogPosition last() const { return last_; }
	uint64_t durable_index() const { return durable_; }
	uint64_t commit_index() const { return commit_; }
	uint64_t matched_index() const { return matched_; }
	uint64_t applied_index() const { return applied_; }
	// Ring bytes done with since the connection began.
	uint64_t consumed() const { return consumed_; }
	size_t held_bytes() const { return held_bytes_; }
	// Bytes of a checkpoint received so far; 0 when none is coming.
	size_t checkpoint_bytes() const { return ckpt_.size(); }
	bool failed() const { return failure_.has_value(); }
	const mdr::Error *failure() const { return failure_ ? &*failure_ : nullptr; }
	const ReceiverStats &stats() const { return stats_; }

private:
	LogReceiver(ReceiverOptions opts, Sink &sink, ReplyLink &link);

	mdr::Status set_failure(int err, const std::string &what);
	mdr::Status take_batch(uint32_t offset);
	mdr::Status cut_tail(const BatchHeader &h);
	// A batch of this epoch over the end of its log of this epoch: the
	// records it holds go from b (step 4).
	mdr::Status trim_resent(Batch &b);
	mdr::Status take_chunk(std::span<const std::byte> rest, size_t length);
	mdr::Status install(uint64_t ring_bytes);
	void durable(uint64_t index);
	void send_durable();
	void apply_committed();

	Sink &sink_;
	ReplyLink &link_;
	const std::span<std::byte> ring_;
	const uint32_t max_batch_bytes_;
	const size_t max_held_bytes_;
	const uint64_t epoch_;
	uint64_t fenced_;
	LogPosition last_;		// appended
	uint64_t durable_;
	uint64_t commit_;
	uint64_t matched_;	// its log is the leader's up to here (above)
	uint64_t applied_;
	uint64_t consumed_ = 0;
	std::deque<HeldRecord> held_;
	size_t held_bytes_ = 0;
	std::vector<std::byte> scratch_;	// a batch copied out of the ring
	// A checkpoint being received: the first chunk's header, the bytes
	// so far (at most max_checkpoint_bytes_).
	const uint32_t max_checkpoint_bytes_;
	ChunkHeader ckpt_h_;
	std::vector<uint8_t> ckpt_;
	bool installing_ = false;	// in Sink::install()
	std::optional<mdr::Error> failure_;
	// The journal's callbacks outlive a receiver that is gone: they hold
	// this weakly.
	std::shared_ptr<LogReceiver *> self_;
	ReceiverStats stats_;
};

} // namespace mdnode::repl

#endif // MDNODE_REPL_FOLLOWER_H
