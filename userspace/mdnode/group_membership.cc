// SPDX-License-Identifier: GPL-2.0
//
// group_membership.cc - a leader's change of its group's replica set, one
// replica at a time (group_replica.h has the phases and the argument).
#include <algorithm>
#include <cerrno>
#include <utility>

#include "mdnode/group_replica.h"
#include "mdnode/log.h"

namespace mdnode {

namespace {

MDNODE_LOG_SUBSYSTEM("group");

const char *phase_name(int p)
{
	static const char *const names[] = {"learning", "joint", "swapping"};

	return p >= 0 && p < 3 ? names[p] : "?";
}

std::string set_text(const std::vector<ReplicaArg> &set)
{
	std::string s;

	for (const ReplicaArg &r : set)
		s += (s.empty() ? "" : ",") + std::to_string(r.id);
	return "{" + s + "}";
}

} // namespace

std::vector<std::string> GroupReplica::voters_of(const std::vector<ReplicaArg> &set) const
{
	std::vector<std::string> v;

	for (const ReplicaArg &r : set)
		if (r.id != settings_.self)
			v.push_back(member_name(r.id));
	return v;
}

mdr::Status GroupReplica::change_membership(const MembershipChange &c)
{
	using mdr::Error;
	const std::string who = "replica " + std::to_string(c.id);

	if (!accepting())
		return Error(-EAGAIN, "not the leader");
	if (c.id == 0)
		return Error(-EINVAL, "replica id 0");
	if (change_) {
		// A remove of the replica being added takes it back.
		if (!c.add && change_->add && change_->replica.id == c.id &&
		    change_->phase == Change::Phase::learning) {
			cancel_learner();
			return {};
		}
		return Error(-EBUSY, "replica " + std::to_string(change_->replica.id) + " is " +
			     (change_->add ? "being added" : "being removed") + " (" +
			     phase_name(int(change_->phase)) + "): one change at a time");
	}

	const auto it = std::find_if(members_.begin(), members_.end(),
				     [&](const ReplicaArg &r) { return r.id == c.id; });
	Change ch;

	ch.add = c.add;
	if (c.add) {
		if (it != members_.end())
			return Error(-EEXIST, who + " is in the set " + set_text(members_));
		if (members_.size() >= kMaxReplicas)
			return Error(-ENOSPC, "the set " + set_text(members_) + " has " +
				     std::to_string(kMaxReplicas) + " replicas, the most a group "
				     "has");
		if (!mdr::wire::wire_address(c.address) || !c.port)
			return Error(-EINVAL, who + ": address '" + c.address + "' port " +
				     std::to_string(c.port) + " is not one a replica listens on");
		for (const ReplicaArg &r : members_)
			if (r.address == c.address && r.port == c.port)
				return Error(-EINVAL, who + ": replica " + std::to_string(r.id) +
					     " listens at " + c.address + ":" +
					     std::to_string(c.port));
		ch.replica = {c.id, c.address, c.port};
	} else {
		if (it == members_.end())
			return Error(-ENOENT, who + " is not in the set " + set_text(members_));
		if (c.id == settings_.self)
			return Error(-EINVAL, who + " leads: stop it, and remove it at the next "
				     "leader");
		if (members_.size() <= kMinReplicas)
			return Error(-EINVAL, "the set " + set_text(members_) + " would have " +
				     std::to_string(members_.size() - 1) + " replicas: add one "
				     "first (at least " + std::to_string(kMinReplicas) + ")");
		ch.replica = *it;
	}
	ch.next = with_change(members_, c.add, ch.replica);
	change_ = std::move(ch);
	if (!c.add) {
		begin_joint();
		if (!change_)	// it stopped
			return Error(-EAGAIN, "not the leader");
	} else {
		const std::string name = member_name(c.id);
		mdr::Status st = shipper_->add_follower(name);

		if (st.ok())
			st = link_->add_member(name, {c.id, c.address, c.port});
		if (!st.ok()) {
			(void)shipper_->remove_follower(name);
			change_.reset();
			return st;
		}
	}
	log_info("group %llu: %s %s at %s:%u: the set %s becomes %s",
		 (unsigned long long)settings_.group, c.add ? "adding" : "removing", who.c_str(),
		 change_->replica.address.c_str(), change_->replica.port,
		 set_text(members_).c_str(), set_text(change_->next).c_str());
	return {};
}

void GroupReplica::begin_joint()
{
	if (mdr::Status st = shipper_->set_voters({voters_of(members_), voters_of(change_->next)});
	    !st.ok())
		return stop("its voters for the change of its replica set: " + st.message());
	change_->phase = Change::Phase::joint;
	change_->joint_commit = commit_index_;
	log_info("group %llu: commits need a majority of %s and of %s from index %llu",
		 (unsigned long long)settings_.group, set_text(members_).c_str(),
		 set_text(change_->next).c_str(), (unsigned long long)commit_index_ + 1);
}

void GroupReplica::cancel_learner()
{
	const std::string name = member_name(change_->replica.id);

	(void)shipper_->remove_follower(name);
	link_->remove_member(name);
	log_info("group %llu: replica %u taken back before it joined",
		 (unsigned long long)settings_.group, change_->replica.id);
	change_.reset();
}

void GroupReplica::membership_tick()
{
	if (!change_ || !shipper_ || stopped_)
		return;
	switch (change_->phase) {
	case Change::Phase::learning: {
		// It streams and has durable what was committed a tick ago:
		// counted from now on, it slows no commit. (Not "what is
		// committed now": under a steady stream of changes that
		// moves on as fast as it follows.)
		const repl::FollowerInfo *f = shipper_->follower(member_name(change_->replica.id));
		const uint64_t mark = std::exchange(change_->learn_mark, commit_index_);

		if (f && f->state == repl::FollowerState::streaming && f->counted &&
		    f->durable_index >= mark && mark)
			begin_joint();
		return;
	}
	case Change::Phase::joint:
		if (shipper_->majority_durable(voters_of(change_->next)) < change_->joint_commit)
			return;
		if (mdr::Status st = member_->change_config(
			    change_->next, [this](mdr::Result<GroupConfig> r) {
				    config_swapped(std::move(r));
			    });
		    !st.ok()) {
			log_warn_rl("group %llu: the swap of its replica set waits: %s",
				    (unsigned long long)settings_.group, st.message().c_str());
			return;
		}
		change_->phase = Change::Phase::swapping;
		return;
	case Change::Phase::swapping:
		return;
	}
}

// From GroupMember::process(), on the loop's thread.
void GroupReplica::config_swapped(mdr::Result<GroupConfig> r)
{
	if (!change_ || !shipper_ || stopped_)
		return;
	if (!r.ok()) {
		// Its epoch is over, or another wrote the set: the next leader
		// reads what etcd holds.
		if (r.error() == -ESTALE)
			return stop("the swap of its replica set was refused: " + r.message());
		// Not known whether etcd took it: the joint holds, and the
		// swap is asked again (GroupMember reads a lost answer's
		// success back).
		log_warn_rl("group %llu: the swap of its replica set failed, asked again: %s",
			    (unsigned long long)settings_.group, r.message().c_str());
		change_->phase = Change::Phase::joint;
		return;
	}
	const Change ch = *change_;

	change_.reset();
	members_ = r.value().replicas;
	if (mdr::Status st = shipper_->set_voters({voters_of(members_)}); !st.ok())
		return stop("its voters after the change of its replica set: " + st.message());
	if (!ch.add) {
		const std::string name = member_name(ch.replica.id);

		(void)shipper_->remove_follower(name);
		link_->remove_member(name);
	}
	log_info("group %llu: replica %u %s; the set is %s at etcd revision %lld",
		 (unsigned long long)settings_.group, ch.replica.id,
		 ch.add ? "joined" : "left", set_text(members_).c_str(),
		 (long long)r.value().revision);
}

} // namespace mdnode
