// SPDX-License-Identifier: GPL-2.0
//
// repl_leader.h - the leader's side of log shipping (replication.md, "Log
// shipping"): one LogShipper per epoch frames the records the leader
// appends to its own journal into batches (repl_format.h), writes them into
// every follower's log ring, and keeps the commit index: the highest log
// index durable on a majority of the group. Transport-neutral: the bytes
// leave through a ShipLink (RDMA WRITE, WRITE with immediate and SEND in
// the daemon; memcpy in the tests). Single-threaded, on the loop's thread.
//
//	auto s = LogShipper::create(opts, link, [&](uint64_t commit) {
//		// answer the changes of every record up to commit
//	});
//	journal.append(...) for the records of a batch, then
//	s.value()->ship(first_index, records);
//	// the journal's callback of the last one:
//	s.value()->local_durable(index);
//	// a follower's DURABLE:
//	if (!s.value()->on_durable(member, msg).ok()) close member's link;
//	s.value()->tick(now_ms);	// heartbeats
//
// A follower, as the shipper sees it:
//
//	unready		no connection (before connect(), after disconnect()):
//			nothing is written to it; what it reported durable
//			still counts, it is on its disk
//	streaming	every batch framed so far that it lacks was written
//			into its ring
//	backlogged	the next batch it lacks does not fit in its ring: the
//			ring holds bytes it has not reported consumed. The
//			batches wait in the window (below) and go as DURABLE
//			frees room
//	needs_checkpoint	what it lacks is not in the window, or its log
//			did not end where this epoch's shipping can go on
//			from (connect()): only a checkpoint can bring it
//			back. wants_checkpoint() tells the owner, which
//			takes one of its committed state when it can
//			(repl_checkpoint.h) and offer_checkpoint()s it;
//			reason says why it was needed
//	checkpointing	the checkpoint offered is written into its ring in
//			chunks (repl_format.h), as room allows; no batch
//			goes to it meanwhile. Once every chunk is written
//			and the follower reports them all consumed, with its
//			durable index at the checkpoint's (it made the
//			checkpoint durable and loaded it first,
//			repl_follower.h), it streams from the record after
//			it, its log counted as this epoch's; if the window
//			lost that record meanwhile, it needs another
//	dropped		it broke the protocol (a DURABLE of another epoch,
//			of an index never shipped to it, a consumed position
//			going backward or past what was written) or its link
//			failed: the owner closes its link; a new connection
//			starts again with connect()
//
// Flow control: per connection the shipper counts the ring bytes it wrote
// (wrap skips included) and the bytes the follower reported consumed; it
// never writes when written - consumed would pass the ring's size, so it
// never overwrites what the follower has not copied out.
//
// The window: the batches framed last, up to window_bytes (the newest is
// always kept), from which a backlog and a reconnect within the epoch are
// fed. A follower whose next batch has left it needs a checkpoint.
//
// Checkpoints: the shipper keeps none of its own. One offered goes to
// every follower that needs one then, shared by them, and is let go when
// the last of them installed it or lost its connection; a follower that
// needs one later (a reconnect, a second need) waits for the next offer.
// So the memory is at most one checkpoint per follower, one in the common
// case, each read in chunks of max_batch_bytes into the ring.
//
// Commit (Raft's rule, in the leader's own epoch): the commit index is
// the highest index that the leader's journal and enough followers have
// durable to make a majority of the group (the leader counts only for what
// its journal made durable), provided it is above the log this epoch began
// with: only records of the leader's own epoch are committed by counting,
// and with them every record before. It never goes back; on_commit runs
// each time it advances, with the new value.
//
// Membership (replication.md, "Membership"): the group is the leader and
// the followers of its voter set; while the set changes, of two (the set
// before and after), and a record commits only on a majority of each. A
// follower add_follower() adds is a learner, shipped to like any other and
// counted in no set until set_voters() names it.
#ifndef MDNODE_REPL_LEADER_H
#define MDNODE_REPL_LEADER_H

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/util/result.h"
#include "mdnode/repl_follower.h"
#include "mdnode/repl_format.h"

namespace mdnode::repl {

// The leader's connections to its followers, by member id. Each call is
// queued on that member's connection in call order (an RC queue pair keeps
// it); an error means the connection is lost, and the shipper drops the
// follower.
class ShipLink {
public:
	virtual ~ShipLink() = default;
	// Puts bytes into the member's ring at offset (an RDMA WRITE).
	virtual mdr::Status write(const std::string &member, uint32_t offset,
				  std::span<const std::byte> bytes) = 0;
	// Tells the member an entry begins at offset, once the writes before
	// it landed (a WRITE with immediate data, the offset).
	virtual mdr::Status notify(const std::string &member, uint32_t offset) = 0;
	// An entry into the member's ring at offset, and then the notify of
	// it: write() and notify(), or one WRITE with immediate data that
	// carries the bytes where the member takes that (repl_conn.h,
	// kFeatureEntryNotify).
	virtual mdr::Status write_notify(const std::string &member, uint32_t offset,
					 std::span<const std::byte> bytes)
	{
		if (mdr::Status st = write(member, offset, bytes); !st.ok())
			return st;
		return notify(member, offset);
	}
	// A control message (a SEND).
	virtual mdr::Status send(const std::string &member, std::span<const std::byte> msg) = 0;
};

struct ShipperOptions {
	uint64_t epoch = 0;			// >= 1
	std::vector<std::string> followers;	// the other members, distinct
	// The leader's log when the epoch began (after adoption), and what
	// of it is known committed (at most start.index).
	LogPosition start;
	uint64_t commit_index = 0;
	// The last records of that log, as far back as the leader kept them,
	// ending at start.index (or none): shipped, each in a batch of its
	// own epoch, to a follower whose log ends among them, behind the
	// start (a replica whose journal lost its last records at a crash).
	std::vector<HeldRecord> prior{};
	uint64_t ring_bytes = 16 << 20;		// each follower's ring
	uint32_t max_batch_bytes = 1 << 20;	// check_ring()
	uint64_t window_bytes = 64 << 20;	// batches kept for backlogs
	int64_t heartbeat_ms = 333;		// ttl / 3
};

enum class FollowerState {
	unready, streaming, backlogged, needs_checkpoint, checkpointing, dropped
};

// A checkpoint of the leader's committed state (repl_checkpoint.h's
// bytes), whose log ends at last.
struct ShippedCheckpoint {
	LogPosition last;
	std::vector<uint8_t> bytes;
};

const char *state_name(FollowerState s);

struct FollowerInfo {
	FollowerState state = FollowerState::unready;
	uint64_t durable_index = 0;	// reported, counted for commit
	uint64_t shipped_index = 0;	// the last record written into its ring
	uint64_t next_index = 0;	// of the next batch it is sent (stream_after())
	uint64_t written = 0;		// ring bytes, this connection
	uint64_t consumed = 0;		// reported freed, this connection
	// Its log is this epoch's (or the one the epoch began with), so its
	// durable index counts for commit; false for a log connect() found
	// elsewhere.
	bool counted = false;
	std::string reason;		// needs_checkpoint, dropped
	// checkpointing: what it is shipped, and how much of it was written.
	std::shared_ptr<const ShippedCheckpoint> checkpoint;
	uint64_t checkpoint_sent = 0;
};

struct ShipperStats {
	uint64_t batches = 0;		// framed
	uint64_t records = 0;		// framed into them
	uint64_t writes = 0;		// batches written into rings
	uint64_t wraps = 0;		// wrap markers written
	uint64_t backlog_waits = 0;	// a batch found no room
	uint64_t stale_durables = 0;	// DURABLE below what was known (reordered)
	uint64_t heartbeats = 0;	// sent
	uint64_t drops = 0;		// followers dropped
	uint64_t evicted = 0;		// batches gone from the window
	uint64_t chunks = 0;		// checkpoint chunks written into rings
	uint64_t checkpoints = 0;	// installed by a follower
};

class LogShipper {
public:
	using OnCommit = std::function<void(uint64_t commit_index)>;

	// -EINVAL naming what is wrong with opts (check_ring(), epoch 0, no
	// or repeated followers, a commit index past start, a window
	// smaller than a batch, a heartbeat interval below 1).
	static mdr::Result<std::unique_ptr<LogShipper>> create(const ShipperOptions &opts,
							       ShipLink &link, OnCommit on_commit);

	// The member's connection is up with a fresh ring, and its log ends
	// at last with durable_index durable (its LOG_STATE). It streams on
	// from last when last is where this epoch began, or a record of this
	// epoch whose next one the window still holds (from the batch that
	// holds it, when last is inside a batch); otherwise it needs a
	// checkpoint. A log that ends past the start in an older epoch (a
	// tail no majority had) is streamed from the start, for the follower
	// to cut (repl_follower.h, step 4), and counts as durable only up to
	// the start until it reports more. A log that ends behind the start
	// at a record of prior, of the same epoch, is streamed from there.
	// -ENOENT for a member not a follower, -EINVAL for a durable index
	// past last.
	mdr::Status connect(const std::string &member, const LogPosition &last,
			    uint64_t durable_index);
	// Its connection is gone: nothing more is written to it.
	void disconnect(const std::string &member);

	// Records the leader just appended to its own journal, at indexes
	// first_index, first_index + 1, ...: framed into batches of at most
	// max_batch_bytes, kept in the window and written into every ring
	// with room. -EINVAL (nothing shipped) unless first_index follows the
	// last index shipped and each payload is at most kMaxRecordPayload.
	mdr::Status ship(uint64_t first_index, std::span<const RecordRef> records);
	// The leader's journal has every record up to index durable.
	// -ERANGE for an index never shipped.
	mdr::Status local_durable(uint64_t index);
	// A learner (above): -EEXIST for a follower already.
	mdr::Status add_follower(const std::string &member);
	// Nothing is written to it from now and it counts for nothing (its
	// link is the owner's to close). -ENOENT for none, -EBUSY for a voter
	// of a set (set_voters() without it first).
	mdr::Status remove_follower(const std::string &member);
	// The sets a commit needs a majority of: one, or two while the set
	// changes; each names the followers voting in it, the leader voting
	// in each. -EINVAL for no set or more than two, a name not a
	// follower or twice in a set. The commit index may advance.
	mdr::Status set_voters(std::vector<std::vector<std::string>> sets);
	// The highest index durable on a majority of the leader and voters
	// (followers not known count 0).
	uint64_t majority_durable(const std::vector<std::string> &voters) const;
	bool voter(const std::string &member) const;

	// A follower's DURABLE. An error drops it (the owner closes its
	// link): -ENOENT (not a follower), -ENOTCONN (not connected),
	// -ESTALE (another epoch), -ERANGE (an index never shipped to it, or
	// consumed past what was written), -EINVAL (consumed going back).
	mdr::Status on_durable(const std::string &member, const Durable &msg);
	// Whether a follower needs a checkpoint (needs_checkpoint): the
	// owner offers one as soon as it can take one.
	bool wants_checkpoint() const;
	// A checkpoint of the leader's state at c->last, offered to every
	// follower that needs one now (nothing when none does). -EINVAL
	// naming what is wrong: a position not of this epoch's own records
	// (another epoch, at or before its start), not committed, or whose
	// next record the window no longer holds (take a newer one), or
	// bytes fewer than a checkpoint's header or more than a chunk's total
	// can say (4 GiB).
	mdr::Status offer_checkpoint(std::shared_ptr<const ShippedCheckpoint> c);
	// Sends HEARTBEAT to connected followers when heartbeat_ms have
	// passed since the last ones; not to one whose log connect() found
	// elsewhere, which would apply its own records by it.
	void tick(int64_t now_ms);

	uint64_t epoch() const { return opts_.epoch; }
	uint64_t commit_index() const { return commit_; }
	uint64_t last_index() const { return last_index_; }
	uint64_t local_durable_index() const { return local_durable_; }
	// nullptr for a member not a follower.
	const FollowerInfo *follower(const std::string &member) const;
	const ShipperStats &stats() const { return stats_; }
	// Bytes of the batches in the window.
	uint64_t window_bytes() const { return window_used_; }

private:
	struct Frame {
		uint64_t first_index;
		uint64_t last_index;
		std::vector<std::byte> bytes;
	};

	LogShipper(const ShipperOptions &opts, ShipLink &link, OnCommit on_commit);

	const Frame *frame_at(uint64_t first_index) const;
	// The window's batch whose records include index, or nullptr.
	const Frame *frame_holding(uint64_t index) const;
	uint64_t prior_epoch(uint64_t index) const;
	void pump(const std::string &member, FollowerInfo &f);
	// An entry into the member's ring where the next one goes (after a
	// wrap marker when it does not fit before the end), if the room the
	// follower freed allows: full when it does not, failed when the
	// link failed (the follower is dropped).
	enum class Put { done, full, failed };
	Put put(const std::string &member, FollowerInfo &f, std::span<const std::byte> entry);
	void pump_checkpoint(const std::string &member, FollowerInfo &f);
	mdr::Status checkpoint_durable(const std::string &member, FollowerInfo &f,
				       uint64_t durable_index);
	// The window holds what a follower at index streams next.
	bool can_follow(uint64_t index) const;
	// It holds the log up to index: the batches from the one that holds
	// the next record go to it.
	void stream_after(FollowerInfo &f, uint64_t index);
	void evict();
	void advance_commit();
	void need_checkpoint(FollowerInfo &f, std::string reason);
	mdr::Status drop(const std::string &member, FollowerInfo &f, mdr::Error e);

	const ShipperOptions opts_;
	ShipLink &link_;
	OnCommit on_commit_;
	std::map<std::string, FollowerInfo> followers_;
	std::vector<std::vector<std::string>> voters_;
	std::deque<Frame> window_;		// contiguous, by index
	uint64_t window_used_ = 0;
	uint64_t last_index_;
	uint64_t local_durable_;
	uint64_t commit_;
	int64_t last_heartbeat_ms_ = 0;
	bool heartbeat_sent_ = false;
	ShipperStats stats_;
};

} // namespace mdnode::repl

#endif // MDNODE_REPL_LEADER_H
