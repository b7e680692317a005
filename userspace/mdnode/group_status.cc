// SPDX-License-Identifier: GPL-2.0
//
// group_status.cc - what a replica says of itself (group_replica.h): its
// place in the group for mdctl (group_status(), MDR_OP_GROUP_STATUS) and
// for the metrics endpoint (metrics(), metrics.h), from one reading of its
// role, epoch and log (position()).
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mdnode/group_replica.h"
#include "mdnode/metrics.h"

namespace mdnode {

namespace {

mdr_replica_state peer_state(repl::FollowerState s)
{
	switch (s) {
	case repl::FollowerState::unready:
		return MDR_PEER_CONNECTING;
	case repl::FollowerState::streaming:
		return MDR_PEER_STREAMING;
	case repl::FollowerState::backlogged:
		return MDR_PEER_BACKLOGGED;
	// Until it installed the checkpoint shipped to it, it still needs
	// one: the wire has no state of its own for the shipment.
	case repl::FollowerState::needs_checkpoint:
	case repl::FollowerState::checkpointing:
		return MDR_PEER_NEEDS_CHECKPOINT;
	case repl::FollowerState::dropped:
		return MDR_PEER_DROPPED;
	}
	return MDR_PEER_UNKNOWN;
}

} // namespace

// Its role, the epoch it knows and its log, read once for each report. A
// replica stopped keeps its follower end's log until its process ends.
GroupReplica::Position GroupReplica::position() const
{
	Position p;

	p.leads = shipper_ && !stopped_;
	p.epoch = p.leads ? epoch_ : known_epoch_;
	p.leader = p.leads ? settings_.self : known_leader_id_;
	if (!p.epoch || !p.leader)
		p.epoch = p.leader = 0;
	p.role = stopped_ ? MDR_REPLICA_STOPPED
	       : !p.leads ? MDR_REPLICA_FOLLOWER
	       : accepting() ? MDR_REPLICA_LEADER : MDR_REPLICA_TAKING_OVER;
	p.last_index = !p.leads ? follower_->last().index : next_index_ ? next_index_ - 1 : 0;
	p.commit_index = std::min(p.leads ? commit_index_ : follower_->applied_index(),
				  p.last_index);
	return p;
}

// The set, and as leader a replica being added, in the set's order.
template <class F>
void GroupReplica::for_each_listed(bool leads, F &&f) const
{
	for (const ReplicaArg &a : members_)
		f(a);
	if (leads && change_ && change_->add)
		f(change_->replica);
}

// Nothing here allocates (the snapshot's promise, metrics.h): a member's
// name is its id in digits, within std::string's own bytes.
void GroupReplica::metrics(ReplicaMetrics &m) const
{
	const Position p = position();

	m.role = p.role;
	m.epoch = p.epoch;
	m.last_index = p.last_index;
	m.commit_index = p.commit_index;
	m.received = follower_->receiver_stats();
	m.log_refusals = follower_->stats().refusals;
	m.leading = p.leads;
	m.n_followers = 0;
	if (!m.leading)
		return;
	m.shipped = shipper_->stats();
	m.window_bytes = shipper_->window_bytes();
	for_each_listed(true, [&](const ReplicaArg &a) {
		const repl::FollowerInfo *f =
			a.id == settings_.self ? nullptr : shipper_->follower(member_name(a.id));

		if (!f || m.n_followers == m.followers.size())
			return;
		// Its durable index is known once it connected in this epoch
		// with a log the shipper counts (LogShipper::connect()).
		m.followers[m.n_followers++] = {a.id, f->state, f->counted, f->durable_index};
	});
}

// As leader, each follower's state and the index it reported durable; as
// follower, its own log alone.
mdr::wire::GroupStatusRep GroupReplica::group_status() const
{
	mdr::wire::GroupStatusRep r;
	const Position pos = position();
	const bool leads = pos.leads;

	r.group = settings_.group;
	r.self = settings_.self;
	r.epoch = pos.epoch;
	r.leader = pos.leader;
	r.role = pos.role;
	r.last_index = pos.last_index;
	r.commit_index = pos.commit_index;
	const std::map<uint32_t, std::string> &hosts = member_->state().hosts;
	for_each_listed(leads, [&](const ReplicaArg &a) {
		mdr::wire::Replica p{.id = a.id, .port = a.port};
		const repl::FollowerInfo *f = nullptr;

		if (auto w = mdr::wire::wire_address(a.address)) {
			p.family = w->family;
			p.addr = w->addr;
		}
		if (leads && change_ && change_->replica.id == a.id)
			p.membership = change_->phase == Change::Phase::learning ? MDR_MEMBER_LEARNER
				     : change_->add ? MDR_MEMBER_JOINING
						    : MDR_MEMBER_LEAVING;
		// Where it serves hosts (version 7): its own address, the
		// leader's as its key names it, the others' as their member
		// records last said (GroupState::hosts); else not known.
		std::optional<mdr::wire::WireEndpoint> at;
		if (a.id == settings_.self)
			at = mdr::wire::endpoint_at(settings_.client_address);
		else if (a.id == r.leader && known_leader_.known())
			at = mdr::wire::WireEndpoint{{known_leader_.family, known_leader_.addr},
						     known_leader_.port};
		else if (auto h = hosts.find(a.id); h != hosts.end())
			at = mdr::wire::endpoint_at(h->second);
		if (at) {
			p.host_family = at->address.family;
			p.host_addr = at->address.addr;
			p.host_port = at->port;
		}
		if (a.id == settings_.self) {
			p.state = MDR_PEER_SELF;
			p.durable = leads ? local_durable_ : r.last_index;
		} else if (leads && (f = shipper_->follower(member_name(a.id)))) {
			p.state = peer_state(f->state);
			p.durable = f->durable_index;
		}
		r.replicas.push_back(p);
	});
	std::sort(r.replicas.begin(), r.replicas.end(),
		  [](const auto &x, const auto &y) { return x.id < y.id; });
	return r;
}

} // namespace mdnode
