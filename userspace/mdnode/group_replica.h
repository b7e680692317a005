// SPDX-License-Identifier: GPL-2.0
//
// group_replica.h - the daemon as a replica of a group (replication.md):
// GroupMember's role in etcd, log shipping over RDMA and the change path
// (core.h, ReplicatedLog) wired together, on the loop's thread.
//
//	follower	RdmaFollower listens on its replica address: the
//			leader's batches go to its journal, committed records
//			to its store (Store::replay()); the node refuses host
//			requests and changes (AGAIN) and answers reads
//	leader		won epoch E in etcd: it fences E-1's leader out of its
//			own follower end, connects to the other replicas
//			(RdmaShipLink) and ships every change's record
//			(LogShipper); LeaderGate says when it may answer, and
//			AnswerQueue answers each change at the commit index
//	stopped		it led and no longer does (its etcd lease ran out on
//			the loop's clock, etcd took the key, a follower called
//			it stale): every change waiting is answered AGAIN,
//			hosts are cut, and failed() asks the process to stop
//
// What it says of itself (group_status.cc): its place in the group for
// mdctl (group_status()) and for the metrics endpoint (metrics()).
//
// A dead leader (group_dead_leader.cc, replication.md "A dead leader"): a
// follower whose leader's side ended the log connection probes that
// leader's log port (ReplicaProbe); once nothing listens there, the
// process is gone and its etcd lease is revoked (Deposer), so that the
// group elects the next leader without waiting the lease out.
//
// The log in its journal (repl_journal.h): a leader journals a LOG_MARK
// and the record of each change, a follower a mark and the records of each
// batch, so that a restart (start() with the RecoveredLog) knows where its
// log ends and which records wait for a commit.
//
// A new leader (replication.md, "A new leader"):
//   - hears a majority's logs (LeaderGate); one ahead of its own makes it
//     step down before it ships anything, and campaign again only after
//     two TTLs: the replica ahead wins the next epoch (Raft's rule that
//     the most up-to-date log leads, kept through etcd's election);
//   - otherwise it journals and ships its EPOCH record first; when its log
//     held records not applied, it serves only once that record is
//     committed, and applies them (follower_'s held records) to its store
//     in the same step, before any change is prepared against it;
//   - from then on it waits out the leases the leaders before it may have
//     granted, and rolls back the moves they left half done, as a single
//     node does after a start (Node::begin_leading()); once that wait is
//     over it settles the bounds it announced to its own (settle_bounds()).
//
// A follower the log cannot bring back (LogShipper's needs_checkpoint):
// the leader takes a checkpoint of its committed state when it may take
// one of its own (checkpoint_position(): every record of its log
// committed, answered and in its journal, no change in flight in the
// store, no extent moving) and offers it to the shipper, which ships it in
// chunks. The follower installs it (Sink::install(), repl_checkpoint.h):
// durable as its journal's checkpoint, then its store and its recent
// records; a restart starts from it.
//
// The replica set (replication.md, "Membership"; group_config.h): etcd's,
// as GroupMember last read it (a follower's) or as the epoch began with it
// and the leader changed it since. A change (group_membership.cc), one at
// a time, at the leader:
//   learning	an added replica is shipped the log (or a checkpoint) and
//		counts for nothing, until it streams with every record
//		committed a tick before durable;
//   joint	commits need a majority of the set before the change and
//		of the set after, until every record committed before the
//		joint began is durable on a majority of the set after;
//   swapping	GroupMember swaps the set in etcd, guarded by this epoch;
//		once etcd holds it, the set after alone counts (a removed
//		replica's connection is closed).
// Why no committed record is lost by a change: a record committed before
// the joint is on a majority of the set before and, before the swap, of
// the set after; one committed in the joint is on both by the rule; one
// after the swap on the set after. A new leader reads the set after its
// win (group.h): the set before if the swap did not happen, which every
// committed record is on a majority of, the set after if it did, likewise;
// its gate hears a majority of that set, which shares a member with each
// majority a record was committed on.
//
// Bounds, refused rather than run unsafely (replication.md, "Not built
// yet"): a replica that stops leading after it shipped does not become a
// follower again in this process (its journal may hold records no
// majority has; the next start cuts them as its new leader's batches
// come); a replica checkpoints only when its log holds nothing
// unapplied (checkpoint_position()); a move its store holds unfinished
// at a start waits for the leader (no roll back of its own).
#ifndef MDNODE_GROUP_REPLICA_H
#define MDNODE_GROUP_REPLICA_H

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lib/util/result.h"
#include "mdnode/config.h"
#include "mdnode/core.h"
#include "mdnode/group.h"
#include "mdnode/group_depose.h"
#include "mdnode/journal.h"
#include "mdnode/repl_answer.h"
#include "mdnode/repl_journal.h"
#include "mdnode/repl_probe.h"
#include "mdnode/repl_rdma.h"
#include "mdnode/store.h"

namespace mdnode {

class EventLoop;
class Node;
struct ReplicaMetrics;

// A member's name on the log link and in the shipper: its id in digits.
inline std::string member_name(uint32_t id)
{
	return std::to_string(id);
}

struct ReplicaSettings {
	uint64_t group = 0;
	uint32_t self = 0;
	std::vector<ReplicaArg> replicas;	// self among them
	std::vector<std::string> etcd;
	// What the member record and the leader key name: the hosts'
	// address of this replica, ADDR:PORT.
	std::string client_address;
	int ttl_s = 1;
	int drift_margin_ms = 200;
	// What this replica grants leases by (own_bounds()): its EPOCH
	// record announces them (repl_journal.h).
	LeaseBounds lease_bounds{};
	uint64_t ring_bytes = 16 << 20;
	uint32_t max_batch_bytes = 1 << 20;
};

class GroupReplica final : public ReplicatedLog, private repl::Sink {
public:
	// From the log its journal held (startup.h, recover()); the store
	// holds what of it was applied. -EINVAL for settings GroupMember
	// refuses; errors of the follower's listener.
	static mdr::Result<std::unique_ptr<GroupReplica>> start(const ReplicaSettings &s,
								Node &node, Store &store,
								Journal &journal,
								repl::RecoveredLog log);
	~GroupReplica() override;
	GroupReplica(const GroupReplica &) = delete;
	GroupReplica &operator=(const GroupReplica &) = delete;

	// Its fds in the loop: the member's eventfd, the follower's and the
	// leader link's channels; and, after each round, ship_appended().
	void add_to(EventLoop &loop);
	// The records a leader appended since the last call go to the
	// followers as one batch: one WRITE and one DURABLE per follower
	// for all the changes a round prepared, not one per change.
	void ship_appended();
	// From the loop's tick: the leader's validity, heartbeats, connects,
	// the gate.
	void tick(int64_t now_ms);
	// A clean stop (SIGTERM): as a failure's stop (stop()), the leader
	// key deleted at once so that another replica leads without waiting
	// out the TTL, the member record likewise; not a failure.
	void shut_down();
	// The process must stop; why.
	bool failed() const { return !failure_.empty(); }
	const std::string &failure() const { return failure_; }

	bool leading() const { return shipper_ != nullptr; }
	bool stopped() const { return stopped_; }
	uint64_t epoch() const { return epoch_; }

	// ReplicatedLog.
	bool accepting() const override;
	mdr::Result<uint64_t> ship(uint16_t type, std::span<const std::byte> payload,
				   std::function<void(int err)> committed) override;
	// When checkpoint_position() has one and the store may be
	// snapshotted (repl_checkpoint.h, take_checkpoint()).
	std::optional<std::vector<uint8_t>> checkpoint() const override;
	std::optional<mdr::wire::Leader> redirect() const override;
	mdr::wire::GroupStatusRep group_status() const override;
	// Its part of the metrics' snapshot (metrics.h). Loop thread only.
	void metrics(ReplicaMetrics &m) const;
	mdr::Status change_membership(const MembershipChange &c) override;

private:
	GroupReplica(const ReplicaSettings &s, Node &node, Store &store, Journal &journal);

	// Sink: the follower's journal and store.
	mdr::Status begin_batch(const repl::BatchHeader &h) override;
	mdr::Status append(uint16_t type, std::span<const std::byte> payload, Done done) override;
	mdr::Status apply(uint64_t index, uint16_t type, std::span<const std::byte> payload) override;
	mdr::Status install(const repl::LogPosition &last,
			    std::span<const uint8_t> checkpoint) override;

	// Where its log may be checkpointed now: a leader that serves, every
	// record of its log committed, answered and in its own journal; a
	// follower whose receiver applied all it holds.
	std::optional<repl::LogCheckpoint> checkpoint_position() const;
	// A follower needs a checkpoint: one is offered when it can be
	// taken. From tick().
	void offer_checkpoint();

	// A change of the set (group_membership.cc).
	struct Change {
		enum class Phase { learning, joint, swapping };
		bool add = false;
		ReplicaArg replica{};		// the one added or removed
		std::vector<ReplicaArg> next;	// the set after
		Phase phase = Phase::learning;
		uint64_t joint_commit = 0;	// the commit index the joint began at
		uint64_t learn_mark = 0;	// the commit index at the last tick
	};
	// The followers of a set by name: every member but this replica.
	std::vector<std::string> voters_of(const std::vector<ReplicaArg> &set) const;
	void begin_joint();
	// From tick(): a learner caught up, a joint's records on the set
	// after, the swap asked for.
	void membership_tick();
	void config_swapped(mdr::Result<GroupConfig> r);
	// An added replica taken back before it joined (a remove of it).
	void cancel_learner();

	// A dead leader (group_dead_leader.cc): the leader's side ended the
	// log connection of epoch; a probe of its process, under way; the
	// outcome of a deposition.
	void on_hangup(uint64_t epoch, int64_t now_ms);
	void probe_tick(int64_t now_ms);
	void deposed();

	// Where it stands, as group_status() and metrics() say it.
	struct Position {
		bool leads = false;		// a shipper, not stopped
		uint16_t role = MDR_REPLICA_NONE;
		uint64_t epoch = 0;
		uint32_t leader = 0;
		uint64_t last_index = 0;
		uint64_t commit_index = 0;
	};
	Position position() const;
	// f(ReplicaArg) for each member of the set and, when leads, a
	// replica being added.
	template <class F>
	void for_each_listed(bool leads, F &&f) const;
	void on_group(const GroupState &s);
	mdr::wire::Leader known_leader(const GroupState &s) const;
	void lead(uint64_t epoch);
	void stop(const std::string &why);
	// stop() and shut_down(): answers, hosts, copies, links, the key.
	void end();
	// A majority's log is ahead: back to following, no campaign for a
	// while.
	void step_down(const std::string &why);
	void local_durable(uint64_t index);
	// Its log's next record, journaled (with its mark) now and shipped at
	// the end of the loop's round (ship_appended()).
	mdr::Result<uint64_t> append_and_ship(uint16_t type, std::span<const std::byte> payload,
					      std::function<void(int err)> committed);
	// The records its log held before its epoch, applied once its EPOCH
	// record is committed.
	mdr::Status apply_held();
	// Answers the changes up to the shipper's commit index, outside its
	// calls.
	void answer_committed();
	// Past its windows, an EPOCH record with its own lease bounds when it
	// announced wider ones. From tick().
	void settle_bounds();

	const ReplicaSettings settings_;
	Node &node_;
	Store &store_;
	Journal &journal_;
	std::unique_ptr<GroupMember> member_;
	std::unique_ptr<repl::RdmaFollower> follower_;
	std::unique_ptr<repl::ReplicaProbe> probe_;
	std::unique_ptr<Deposer> deposer_;
	struct Probing {
		uint64_t epoch;
		ReplicaArg leader;
		int64_t until;		// ms: nothing more after it
		int64_t last;		// ms: the last probe's or deposition's start
		bool gone = false;	// proved: deposing from now on
		bool asked = false;	// a deposition in flight
	};
	std::optional<Probing> probing_;
	// A hangup of an epoch etcd had not named here yet: epoch, ms.
	std::optional<std::pair<uint64_t, int64_t>> early_hangup_;
	// The leader's, from its win to its stop.
	std::unique_ptr<repl::RdmaShipLink> link_;
	// Memory for the link's mirrors, mapped at start (RdmaShipLink::
	// create()): a ring's size for each other replica of the settings.
	std::vector<mdr::verbs::Mapping> mirrors_;
	std::unique_ptr<repl::LogShipper> shipper_;
	std::optional<repl::LeaderGate> gate_;
	repl::AnswerQueue answers_;
	uint64_t epoch_ = 0;
	uint64_t next_index_ = 0;	// the leader's next record's
	uint64_t commit_index_ = 0;	// the shipper's, last told
	uint64_t local_durable_ = 0;	// the leader's journal has up to it
	bool epoch_shipped_ = false;	// its EPOCH record
	// Its log's last records (repl_journal.h), its own as leader and
	// its receiver's as follower: for a follower behind the start of an
	// epoch it leads, and in its checkpoints. Where the batch its
	// receiver appends puts the next record.
	repl::RecentLog recent_;
	// The leader's records journaled and not shipped yet, in index
	// order: ship_appended() empties it at the end of each round, and
	// before the shipper hears of their durability (local_durable()).
	std::vector<repl::HeldRecord> unshipped_;
	uint64_t batch_next_ = 0;
	uint64_t batch_epoch_ = 0;
	bool serving_begun_ = false;	// held records applied, said
	// The bounds of the last EPOCH record its log took (repl_journal.h),
	// and those its own EPOCH record announced.
	std::optional<LeaseBounds> log_bounds_;
	LeaseBounds announced_{};
	bool settled_ = false;
	bool stopped_ = false;
	// Who leads, as etcd last told (redirect()).
	mdr::wire::Leader known_leader_{};
	uint64_t known_epoch_ = 0;
	uint32_t known_leader_id_ = 0;
	int64_t known_lease_ = 0;		// the leader key's, for a deposition
	std::string failure_;
	// The replica set (above), and the change under way at the leader.
	std::vector<ReplicaArg> members_;
	std::optional<Change> change_;
};

} // namespace mdnode

#endif // MDNODE_GROUP_REPLICA_H
