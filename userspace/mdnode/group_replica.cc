// SPDX-License-Identifier: GPL-2.0
//
// group_replica.cc - see group_replica.h.
#include "mdnode/group_replica.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "mdnode/log.h"
#include "mdnode/loop.h"
#include "mdnode/node.h"

namespace mdnode {

namespace {

MDNODE_LOG_SUBSYSTEM("group");

// Marks a data directory whose journal holds records of the group's log.
constexpr const char kLogMark[] = "/group-log";

// Ops of the leader's and the follower's channels per round of the loop.
constexpr unsigned kReplBudget = 64;

std::string member_name(uint32_t id)
{
	return std::to_string(id);
}

bool exists(const std::string &path)
{
	return access(path.c_str(), F_OK) == 0;
}

} // namespace

mdr::Result<std::unique_ptr<GroupReplica>> GroupReplica::start(const ReplicaSettings &s,
							      Node &node, Store &store,
							      Journal &journal)
{
	if (exists(s.data_dir + kLogMark))
		return mdr::Error(-EEXIST, s.data_dir + kLogMark + ": its journal holds records "
					   "of the group's log, and a replica's restart is not built "
					   "yet (replication.md, \"Not built yet\"): start it on an "
					   "empty data directory");

	std::unique_ptr<GroupReplica> r(new GroupReplica(s, node, store, journal));
	const ReplicaArg *self = nullptr;

	for (const ReplicaArg &a : s.replicas)
		if (a.id == s.self)
			self = &a;
	if (!self)
		return mdr::Error(-EINVAL, "replica " + std::to_string(s.self) + " not in the set");

	repl::FollowerOptions fo;
	fo.self = {self->id, self->address, self->port};
	fo.bounds = {.group = s.group, .max_ring_bytes = s.ring_bytes};
	// An empty log (above): nothing durable, applied or fenced yet.
	auto f = repl::RdmaFollower::listen(std::move(fo), *r);
	if (!f.ok())
		return mdr::Error(f.error(), "the log listener on " + self->address + ":" +
					     std::to_string(self->port) + ": " + f.message());
	r->follower_ = std::move(f).value();

	GroupOptions go;
	go.group = std::to_string(s.group);
	go.replica = member_name(s.self);
	go.address = s.client_address;
	go.etcd.endpoints = s.etcd;
	// Under the TTL (group.h): a renewal's answer comes back while what
	// it extends still holds, with a fifth of it to spare.
	go.etcd.request_timeout_ms = s.ttl_s * 800;
	go.ttl_s = s.ttl_s;
	go.drift_margin_ms = s.drift_margin_ms;
	GroupReplica *raw = r.get();
	auto m = GroupMember::start(std::move(go),
				    [raw](const GroupState &st) { raw->on_group(st); });
	if (!m.ok())
		return mdr::Error(m.error(), "group " + std::to_string(s.group) + ": " +
					     m.message());
	r->member_ = std::move(m).value();
	return r;
}

GroupReplica::GroupReplica(const ReplicaSettings &s, Node &node, Store &store, Journal &journal)
	: settings_(s), node_(node), store_(store), journal_(journal)
{
}

GroupReplica::~GroupReplica() = default;

void GroupReplica::add_to(EventLoop &loop)
{
	loop.add_fd("group", member_->fd(), [this] { member_->process(); });
	loop.add({"repl-follower", [this] { return follower_->fds(); }, kReplBudget,
		  [this](int fd, unsigned budget) { return follower_->process(fd, budget); }});
	loop.add({"repl-leader",
		  [this] { return link_ ? link_->fds() : std::vector<int>{}; }, kReplBudget,
		  [this](int fd, unsigned budget) {
			  if (!link_)
				  return false;
			  const bool more = link_->process(fd, budget);
			  answer_committed();
			  return more;
		  }});
}

bool GroupReplica::accepting() const
{
	return shipper_ && !stopped_ && gate_ && gate_->serving() &&
	       member_->serving(GroupMember::Clock::now());
}

// The group's log on the follower: what its receiver appends goes to the
// journal, what is committed to the store, as a restart replays it.
mdr::Status GroupReplica::append(uint16_t type, std::span<const std::byte> payload, Done done)
{
	if (!mark_log_begun())
		return mdr::Error(-EIO, "cannot mark the data directory's log begun");
	return journal_.append(type, payload, std::move(done));
}

mdr::Status GroupReplica::apply(uint64_t, uint16_t type, std::span<const std::byte> payload)
{
	return store_.replay(type, {reinterpret_cast<const uint8_t *>(payload.data()),
				    payload.size()});
}

void GroupReplica::on_group(const GroupState &s)
{
	log_info("group %llu: %s, leader %s at %s, epoch %lld (%s)",
		 (unsigned long long)settings_.group,
		 s.role == GroupState::Role::leader ? "leading" : "following",
		 s.leader_id.empty() ? "none" : s.leader_id.c_str(),
		 s.leader_address.empty() ? "-" : s.leader_address.c_str(), (long long)s.epoch,
		 s.reason.c_str());
	if (s.role == GroupState::Role::leader && s.epoch > 0) {
		if (!shipper_ && !stopped_)
			lead(uint64_t(s.epoch));
		return;
	}
	if (shipper_)
		return stop("it no longer holds the leader key: " + s.reason);
	// A follower: nothing of an epoch below the leader's is taken from
	// now on, whichever connection comes first.
	if (s.epoch > 0)
		follower_->fence(uint64_t(s.epoch));
}

void GroupReplica::lead(uint64_t epoch)
{
	// Its own end first: the leader before this one writes no more into
	// its ring, and what it wrote there is checked against epoch.
	follower_->fence(epoch);

	const repl::LogPosition own = follower_->last();
	const uint64_t applied = follower_->applied_index();
	std::vector<std::string> names;
	repl::LinkOptions lo;

	lo.group = settings_.group;
	lo.epoch = epoch;
	lo.leader_id = settings_.self;
	lo.ring_bytes = settings_.ring_bytes;
	lo.max_batch_bytes = settings_.max_batch_bytes;
	for (const ReplicaArg &a : settings_.replicas) {
		if (a.id == settings_.self)
			continue;
		names.push_back(member_name(a.id));
		lo.followers[member_name(a.id)] = {a.id, a.address, a.port};
	}
	repl::ShipperOptions so;
	so.epoch = epoch;
	so.followers = names;
	so.start = own;
	so.commit_index = applied;
	so.ring_bytes = settings_.ring_bytes;
	so.max_batch_bytes = settings_.max_batch_bytes;
	so.heartbeat_ms = std::max(1, settings_.ttl_s * 1000 / 3);

	auto gate = repl::LeaderGate::create(epoch, own, applied, names);
	if (!gate.ok())
		return stop("its gate: " + gate.message());
	if (!mark_log_begun())
		return stop("cannot mark the data directory's log begun");
	auto link = repl::RdmaShipLink::create(lo);
	if (!link.ok())
		return stop("its links to the followers: " + link.message());
	// Noted here, answered by answer_committed() once the shipper's call
	// returned: an answer may start another change, which ships.
	auto shipper = repl::LogShipper::create(so, *link.value(), [this](uint64_t commit) {
		commit_index_ = commit;
	});
	if (!shipper.ok())
		return stop("its shipper: " + shipper.message());

	epoch_ = epoch;
	next_index_ = own.index + 1;
	commit_index_ = applied;
	gate_.emplace(std::move(gate).value());
	link_ = std::move(link).value();
	shipper_ = std::move(shipper).value();
	link_->attach(*shipper_);
	link_->tick();
	log_info("group %llu: leading in epoch %llu from its log at (%llu, %llu), applied "
		 "%llu; serving once %zu of %zu replicas' logs are heard",
		 (unsigned long long)settings_.group, (unsigned long long)epoch,
		 (unsigned long long)own.epoch, (unsigned long long)own.index,
		 (unsigned long long)applied, gate_->majority(), names.size() + 1);
}

void GroupReplica::tick(int64_t now_ms)
{
	if (stopped_)
		return;
	if (follower_->failed())
		return stop("its journal or store refused a record of the leader's");
	// As the hosts' transport does: hold nothing on a removed device.
	if (follower_->device_lost())
		return stop("the RDMA device of its log listener was removed");
	if (!shipper_)
		return;
	if (!member_->serving(GroupMember::Clock::now()))
		return stop("its etcd lease ran out (valid until, less the drift margin, passed)");
	if (uint64_t by = link_->deposed_by())
		return stop("a follower is fenced to epoch " + std::to_string(by));

	const bool was_serving = gate_->serving();
	for (const ReplicaArg &a : settings_.replicas) {
		if (a.id == settings_.self)
			continue;
		if (const repl::LogState *ls = link_->log_state(member_name(a.id)))
			(void)gate_->on_log_state(member_name(a.id), ls->last);
	}
	switch (gate_->phase()) {
	case repl::LeaderGate::Phase::behind:
		return stop("replica " + gate_->ahead_member() + "'s log at (" +
			    std::to_string(gate_->ahead_log().epoch) + ", " +
			    std::to_string(gate_->ahead_log().index) +
			    ") is ahead of its own, and adopting it is not built");
	case repl::LeaderGate::Phase::committing:
		return stop("its log holds records it has not applied, which wait for the "
			    "EPOCH record (not built)");
	case repl::LeaderGate::Phase::serving:
		if (!was_serving)
			log_info("group %llu: serving in epoch %llu, %zu replicas' logs heard",
				 (unsigned long long)settings_.group, (unsigned long long)epoch_,
				 gate_->heard());
		break;
	case repl::LeaderGate::Phase::gathering:
		break;
	}
	shipper_->tick(now_ms);
	link_->tick();
	answer_committed();
}

mdr::Result<uint64_t> GroupReplica::ship(uint16_t type, std::span<const std::byte> payload,
					 std::function<void(int err)> committed)
{
	// NodeCore asked accepting() before it journaled the record; the
	// clock may have passed the validity since, but the record is in the
	// journal and must be in the log: only a leader that stopped (or
	// never led) ships nothing.
	if (!shipper_ || stopped_)
		return mdr::Error(-EAGAIN, "not leading");

	const uint64_t index = next_index_;
	const repl::RecordRef r{type, payload};

	if (mdr::Status st = shipper_->ship(index, std::span(&r, 1)); !st.ok())
		return mdr::Error(st.error(), st.message());
	if (mdr::Status st = answers_.hold(index, std::move(committed)); !st.ok())
		return mdr::Error(st.error(), st.message());
	next_index_++;
	return index;
}

void GroupReplica::local_durable(uint64_t index)
{
	// After a stop the shipper is gone: nothing counts any more.
	if (!shipper_)
		return;
	if (mdr::Status st = shipper_->local_durable(index); !st.ok())
		return stop("its journal's durable index " + std::to_string(index) + ": " +
			    st.message());
	answer_committed();
}

void GroupReplica::answer_committed()
{
	if (!gate_)
		return;
	gate_->on_commit(commit_index_);
	answers_.release(commit_index_);
}

// Stops leading (or following) for good in this process: what waits is
// answered AGAIN, hosts are cut, the followers' connections closed; the
// loop stops the process at its next round (failed()).
void GroupReplica::stop(const std::string &why)
{
	if (stopped_)
		return;
	stopped_ = true;
	failure_ = why;
	log_error("group %llu: stopping: %s", (unsigned long long)settings_.group, why.c_str());
	answers_.abandon(-EAGAIN);
	node_.stop_serving_hosts();
	// The shipper writes through the link: it goes first.
	shipper_.reset();
	link_.reset();
	gate_.reset();
	// Bounded by etcd's request timeout; what it leaves lapses with its
	// lease.
	(void)member_->resign();
}

bool GroupReplica::mark_log_begun()
{
	if (log_begun_)
		return true;

	const std::string path = settings_.data_dir + kLogMark;
	int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		log_error("%s: %s", path.c_str(), strerror(errno));
		return false;
	}
	const bool ok = fsync(fd) == 0;
	close(fd);
	int dir = open(settings_.data_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	const bool dir_ok = dir >= 0 && fsync(dir) == 0;
	if (dir >= 0)
		close(dir);
	if (!ok || !dir_ok) {
		log_error("%s: cannot make it durable: %s", path.c_str(), strerror(errno));
		return false;
	}
	log_begun_ = true;
	return true;
}

} // namespace mdnode
