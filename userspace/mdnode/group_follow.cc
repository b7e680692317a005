// SPDX-License-Identifier: GPL-2.0
//
// group_follow.cc - a follower's rounds on the group's thread (group.h):
// the leader key watched, a campaign once the key is gone, the replica set
// read at the member record's pace.
//
// A follower learns who leads from one watch of the leader key, kept from
// a read of the key until the watch stops (a compaction; a broken stream
// resumes by itself, gateway_watch.cc). It tries to win only when the key
// is absent, by the read or by the watch's last event, and then at once
// and once: the transaction creates the key only if it is still absent,
// and a try lost to a faster replica takes the winner from its answer.
// Between, a round asks etcd only the member record's keepalive and, once
// a TTL, the reads of the member records, of the set and of the key
// itself (a watch whose stream stalls without breaking is caught by that
// read: it is made again when the read is ahead of it). A campaign of a
// third of a TTL per round (a lease granted, the transaction, a watch set
// up and cancelled, the lease revoked) kept etcd at half a CPU under TCG
// for a group at rest (2026-12-06), and every group's followers would ask
// it of a production etcd.
//
// Safety is the campaign's (election.h) and the set's read after a win
// (group.h): the watch says only who leads and when to try. A watch that
// is late, or broken while etcd is away, delays a campaign; it cannot
// make one win. The set read once a TTL only spares a barred replica its
// tries: a win is checked against the set read after it.
#include "mdnode/group.h"

#include <algorithm>
#include <cerrno>
#include <utility>

#include "lib/wire/wire.h"

namespace mdnode {

namespace {

using mdr::Error;
using std::chrono::milliseconds;

// Between two tries when etcd failed one: short, etcd recovers in an
// election.
constexpr milliseconds kRetryPause(100);

// The same numeric address, however it is written ("fd00::4" and
// "FD00:0::4"); text that is no address compares as text.
bool same_host(const std::string &a, const std::string &b)
{
	const auto x = mdr::wire::wire_address(a);
	const auto y = mdr::wire::wire_address(b);

	if (x && y)
		return x->family == y->family && x->addr == y->addr;
	return a == b;
}

// Who leads, from the leader key's value ("ID\nADDRESS") and its epoch.
void take_leader(GroupState &s, const mdr::etcd::KeyValue &kv)
{
	const size_t nl = kv.value.find('\n');

	s.leader_id = kv.value.substr(0, nl);
	s.leader_address = nl == std::string::npos ? "" : kv.value.substr(nl + 1);
	s.epoch = kv.create_revision;
	s.leader_lease = kv.lease;
	s.reason = "following";
}

} // namespace

void GroupMember::follow()
{
	// A change the loop asked for as this replica stopped leading.
	take_config_change();
	if (!election_owned_) {
		auto e = std::make_unique<mdr::etcd::Election>(*client_, leader_key_);
		std::lock_guard lock(lock_);
		if (stopping_ || resign_asked_)
			return;
		election_ = e.get();
		election_owned_ = std::move(e);
	}
	{
		// A step down the loop asked for an epoch this replica no
		// longer leads (it had not heard of the loss yet): nothing to
		// step down from, and left standing it would wake every wait.
		std::lock_guard lock(lock_);
		step_down_asked_ = false;
	}

	take_leader_events();
	const bool known = leader_watch_ || watch_leader();
	// A key just gone is tried for first: the record, the members, the
	// set and the watch's check wait for the try (the set read a TTL
	// ago at most says whether this replica may try; a win reads it
	// again).
	const bool try_now = known && !leader_kv_ && !barred_ &&
			     Clock::now() >= campaign_after_ && (!self_id_ || follow_config_);
	if (!try_now)
		keep_up();
	post_following();
	if (!known) {
		(void)idle_until(std::min(round_end(), Clock::now() + kRetryPause));
		return;
	}
	if (!try_now) {
		Clock::time_point until = round_end();
		if (!leader_kv_ && !barred_)
			until = std::min(until, campaign_after_);
		(void)idle_until(until);
		return;
	}

	mdr::etcd::Created seen;
	auto c = election_owned_->try_once(opts_.replica + "\n" + opts_.address, opts_.ttl_s,
					   &seen);
	if (c.ok() && c.value())
		return won(*c.value());
	if (!c.ok() && c.error() == -ECANCELED)
		return;
	if (c.ok()) {
		// Another won the race: who, its answer says (the watch says
		// it again, and anything after it).
		try_error_.clear();
		leader_kv_ = seen.kv;
	} else {
		try_error_ = "campaign: " + c.message();
	}
	// What the try put off, so that tries failing in a row never let
	// the record lapse nor the set go unread.
	keep_up();
	post_following();
	(void)idle_until(c.ok() ? round_end() : Clock::now() + kRetryPause);
}

// A follower's own upkeep, each when due: its member record, the member
// records of the others, the replica set (again soon after a read that
// failed: a replica that cannot read it does not campaign), and a read of
// the leader key against what the watch says (a stream that stalls
// without breaking is noticed within a TTL).
void GroupMember::keep_up()
{
	keep_record();
	read_hosts();
	const Clock::time_point now = Clock::now();
	if (self_id_ && (!follow_config_ || now >= config_due_)) {
		auto c = read_config(opts_.may_bootstrap);
		if (c.ok()) {
			config_due_ = now + milliseconds(opts_.ttl_s * 1000);
			follow_config_ = c.value();
			barred_ = not_member(c.value());
		} else {
			config_due_ = now + kRetryPause;
			barred_ = "cannot read the replica set: " + c.message();
		}
	}
	if (leader_watch_ && now >= leader_check_due_) {
		leader_check_due_ = now + milliseconds(opts_.ttl_s * 1000);
		auto r = client_->get(leader_key_);
		const auto epoch = [](const std::optional<mdr::etcd::KeyValue> &kv) {
			return kv ? kv->create_revision : 0;
		};
		std::optional<mdr::etcd::KeyValue> now_kv;
		if (r.ok() && !r.value().kvs.empty())
			now_kv = r.value().kvs.front();
		// The watch is behind the read (or the read behind the watch,
		// which is no news): read and watch again from here.
		if (r.ok() && epoch(now_kv) != epoch(leader_kv_) &&
		    r.value().revision >= leader_watch_->next_revision()) {
			stop_watching_leader();
			(void)watch_leader();
		}
	}
}

// When the next upkeep is due: the round's end.
GroupMember::Clock::time_point GroupMember::round_end() const
{
	Clock::time_point t = std::min(record_due_, Clock::now() +
					milliseconds(opts_.ttl_s * 1000 / 3));
	if (self_id_)
		t = std::min({t, hosts_due_, config_due_});
	if (leader_watch_)
		t = std::min(t, leader_check_due_);
	return t;
}

void GroupMember::post_following()
{
	GroupState s = following_state();
	if (!same_change(s, posted_))
		post(std::move(s));
}

// Reads the leader key and watches it from the read on; false (and
// follow_error_ says why) when etcd did not answer.
bool GroupMember::watch_leader()
{
	auto r = client_->get(leader_key_);
	if (!r.ok()) {
		follow_error_ = "cannot read the leader: " + r.message();
		return false;
	}
	follow_error_.clear();
	leader_check_due_ = Clock::now() + milliseconds(opts_.ttl_s * 1000);
	leader_kv_.reset();
	if (!r.value().kvs.empty())
		leader_kv_ = r.value().kvs.front();
	mdr::etcd::WatchSpec spec{leader_key_, false, r.value().revision + 1};
	leader_watch_ = client_->watch(spec, [this](const mdr::etcd::WatchEvent &ev) {
		using Type = mdr::etcd::WatchEvent::Type;
		{
			std::lock_guard lock(lock_);
			if (ev.type == Type::put)
				leader_seen_ = ev.kv;
			else if (ev.type == Type::del)
				leader_seen_.reset();
			else if (ev.type == Type::compacted)
				leader_stale_ = true;
			else
				return;	// a stream resumed: nothing lost
			leader_event_ = true;
		}
		cv_.notify_all();
	});
	return true;
}

// The watch's events since the last round: the key as its last event
// left it; a compaction stopped the watch, whose state is then unknown
// until the next read.
void GroupMember::take_leader_events()
{
	bool event, stale;
	std::optional<mdr::etcd::KeyValue> seen;
	{
		std::lock_guard lock(lock_);
		event = std::exchange(leader_event_, false);
		stale = std::exchange(leader_stale_, false);
		seen = std::move(leader_seen_);
		leader_seen_.reset();
	}
	if (!leader_watch_)
		return;
	if (stale)
		return stop_watching_leader();
	if (event) {
		leader_kv_ = std::move(seen);
		try_error_.clear();
	}
}

void GroupMember::stop_watching_leader()
{
	leader_watch_.reset();	// joins its thread: not under lock_
	leader_kv_.reset();
	std::lock_guard lock(lock_);
	leader_event_ = false;
	leader_stale_ = false;
	leader_seen_.reset();
}

GroupState GroupMember::following_state() const
{
	GroupState s;

	if (!leader_watch_)
		s.reason = follow_error_;
	else if (!leader_kv_)
		s.reason = try_error_.empty() ? "no leader" : try_error_;
	else
		take_leader(s, *leader_kv_);
	s.config = self_id_ && follow_config_ ? follow_config_ : posted_.config;
	if (barred_)
		s.reason = *barred_;
	s.since = Clock::now();
	return s;
}

// This replica's try created the key at epoch: it leads, once the set read
// now says it may.
void GroupMember::won(int64_t epoch)
{
	const auto third = milliseconds(opts_.ttl_s * 1000 / 3);

	stop_watching_leader();
	try_error_.clear();
	// The set as it is now that the key is ours (group.h): what this
	// epoch starts with. Out of it, or unread, this replica does not
	// lead: the key goes at once.
	std::optional<GroupConfig> config;
	if (self_id_) {
		auto now = read_config(false);
		std::optional<std::string> why =
			!now.ok() ? "cannot read the replica set after winning epoch " +
					    std::to_string(epoch) + ": " + now.message()
				  : not_member(now.value());
		if (why) {
			// Remembered, so that it does not win and resign again
			// before the set is due.
			barred_ = why;
			config_due_ = Clock::now() + (now.ok() ? milliseconds(opts_.ttl_s * 1000)
							       : kRetryPause);
			if (now.ok())
				follow_config_ = now.value();
			mdr::Status r = election_owned_->resign();
			election_owned_.reset();
			{
				std::lock_guard lock(lock_);
				election_ = nullptr;
			}
			campaign_after_ = Clock::now() + third;
			GroupState l;
			l.reason = *why + (r.ok() ? "" : " (the key lapses with its lease: " +
							     r.message() + ")");
			l.config = now.ok() ? std::optional(now.value()) : posted_.config;
			l.since = Clock::now();
			post(std::move(l));
			return;
		}
		config = now.value();
		follow_config_ = config;
	}
	leading_ = true;
	renew_due_ = Clock::now() + third;
	{
		std::lock_guard lock(lock_);
		key_lost_ = false;
	}
	// A key deleted or made again by someone else: this epoch is over.
	mdr::etcd::WatchSpec spec{leader_key_, false, epoch + 1};
	watch_ = client_->watch(spec, [this, epoch](const mdr::etcd::WatchEvent &ev) {
		using Type = mdr::etcd::WatchEvent::Type;
		if (ev.type == Type::del ||
		    (ev.type == Type::put && ev.kv.create_revision != epoch)) {
			{
				std::lock_guard lock(lock_);
				key_lost_ = true;
			}
			cv_.notify_all();
		}
	});

	GroupState w;
	w.role = GroupState::Role::leader;
	w.leader_id = opts_.replica;
	w.leader_address = opts_.address;
	w.epoch = epoch;
	w.valid_until = election_owned_->valid_until();
	w.since = Clock::now();
	w.reason = "won the campaign for epoch " + std::to_string(epoch);
	w.config = std::move(config);
	post(std::move(w));
}

mdr::Result<GroupConfig> GroupMember::read_config(bool put_ok)
{
	auto r = client_->get(config_key_);
	if (!r.ok())
		return Error(r.error(), r.message());
	if (r.value().kvs.empty() && !put_ok)
		return Error(-ENOENT, config_key_ + " is missing, and this replica's log is not "
			     "empty: it does not put its own settings there (put the group's set "
			     "back with etcdctl)");
	if (r.value().kvs.empty()) {
		// A new group: the first replica's settings start it.
		auto put = client_->compare_and_swap(config_key_, 0,
						      encode_group_config(opts_.bootstrap));
		if (!put.ok())
			return Error(put.error(), put.message());
		if (put.value().swapped)
			return GroupConfig{parse_group_config(encode_group_config(opts_.bootstrap))
						   .value(),
					   put.value().revision};
		if (!put.value().current)
			return Error(-EAGAIN, config_key_ + " came and went");
		r.value().kvs.push_back(*put.value().current);
	}
	const mdr::etcd::KeyValue &kv = r.value().kvs.front();
	auto set = parse_group_config(kv.value);
	if (!set.ok())
		return Error(set.error(), config_key_ + " at revision " +
			     std::to_string(kv.mod_revision) + ": " + set.message());
	return GroupConfig{std::move(set).value(), kv.mod_revision};
}

std::optional<std::string> GroupMember::not_member(const GroupConfig &c) const
{
	if (!self_id_)
		return std::nullopt;
	const ReplicaArg *in = c.find(self_id_);
	if (!in)
		return "replica " + opts_.replica + " is not in the group's replica set (revision " +
		       std::to_string(c.revision) + "): a learner or a replica removed, it does "
		       "not campaign";
	// Its log listener is where its own settings put it. Where the set
	// says otherwise, a leader could not reach it, nor could its
	// followers tell whether it runs (group_dead_leader.cc probes the
	// set's address): it does not lead.
	for (const ReplicaArg &own : opts_.bootstrap)
		if (own.id == self_id_ && (!same_host(own.address, in->address) ||
					   own.port != in->port))
			return "replica " + opts_.replica + " listens for its log at " +
			       own.address + ":" + std::to_string(own.port) +
			       ", where the group's replica set (revision " +
			       std::to_string(c.revision) + ") has it at " + in->address + ":" +
			       std::to_string(in->port) + ": it does not campaign";
	return std::nullopt;
}

} // namespace mdnode
