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
// This first step's bounds, each refused rather than run unsafely
// (replication.md, "Not built yet"):
//   - A replica starts from an empty group log only: the journal does not
//     record the (epoch, index) of a record yet (the EPOCH record), so a
//     restarted replica could not say where its log ends. The data
//     directory keeps a mark once its first log record is journaled; a
//     start that finds it refuses.
//   - A leader whose log holds records it has not applied (they wait for
//     a record of its own epoch, the EPOCH record), or that hears a log
//     ahead of its own (adoption), does not serve: it resigns, and the
//     process stops.
//   - A replica that stops leading does not become a follower again in
//     this process (its journal may hold records no majority has): the
//     process stops.
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
#include "mdnode/journal.h"
#include "mdnode/repl_answer.h"
#include "mdnode/repl_rdma.h"
#include "mdnode/store.h"

namespace mdnode {

class EventLoop;
class Node;

struct ReplicaSettings {
	uint64_t group = 0;
	uint32_t self = 0;
	std::vector<ReplicaArg> replicas;	// self among them
	std::vector<std::string> etcd;
	// What the member record and the leader key name: the hosts'
	// address of this replica, ADDR:PORT.
	std::string client_address;
	std::string data_dir;			// the mark of a log begun
	int ttl_s = 1;
	int drift_margin_ms = 200;
	uint64_t ring_bytes = 16 << 20;
	uint32_t max_batch_bytes = 1 << 20;
};

class GroupReplica final : public ReplicatedLog, private repl::Sink {
public:
	// -EEXIST: the data directory holds a group log already (a restart,
	// not built); -EINVAL for settings GroupMember refuses; errors of
	// the follower's listener.
	static mdr::Result<std::unique_ptr<GroupReplica>> start(const ReplicaSettings &s,
								Node &node, Store &store,
								Journal &journal);
	~GroupReplica() override;
	GroupReplica(const GroupReplica &) = delete;
	GroupReplica &operator=(const GroupReplica &) = delete;

	// Its fds in the loop: the member's eventfd, the follower's and the
	// leader link's channels.
	void add_to(EventLoop &loop);
	// From the loop's tick: the leader's validity, heartbeats, connects,
	// the gate.
	void tick(int64_t now_ms);
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
	void local_durable(uint64_t index) override;

private:
	GroupReplica(const ReplicaSettings &s, Node &node, Store &store, Journal &journal);

	// Sink: the follower's journal and store.
	mdr::Status append(uint16_t type, std::span<const std::byte> payload, Done done) override;
	mdr::Status apply(uint64_t index, uint16_t type, std::span<const std::byte> payload) override;

	void on_group(const GroupState &s);
	void lead(uint64_t epoch);
	void stop(const std::string &why);
	bool mark_log_begun();
	// Answers the changes up to the shipper's commit index, outside its
	// calls.
	void answer_committed();

	const ReplicaSettings settings_;
	Node &node_;
	Store &store_;
	Journal &journal_;
	std::unique_ptr<GroupMember> member_;
	std::unique_ptr<repl::RdmaFollower> follower_;
	// The leader's, from its win to its stop.
	std::unique_ptr<repl::RdmaShipLink> link_;
	std::unique_ptr<repl::LogShipper> shipper_;
	std::optional<repl::LeaderGate> gate_;
	repl::AnswerQueue answers_;
	uint64_t epoch_ = 0;
	uint64_t next_index_ = 0;	// the leader's next record's
	uint64_t commit_index_ = 0;	// the shipper's, last told
	bool log_begun_ = false;
	bool stopped_ = false;
	std::string failure_;
};

} // namespace mdnode

#endif // MDNODE_GROUP_REPLICA_H
