// SPDX-License-Identifier: GPL-2.0
//
// group.cc - a replica's member record, campaign and renewals on a thread of
// their own, handed to the event loop through an eventfd (see group.h).
#include "mdnode/group.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <charconv>

#include "mdnode/thread.h"

namespace mdnode {

namespace {

using mdr::Error;
using mdr::Status;
using std::chrono::milliseconds;

// A key's part (group or replica id) or a record's address: printable
// ASCII without spaces, so "ID\nADDRESS" splits at its newline; ids also
// without '/', the separator of etcd's keys.
Status check_name(const char *what, const std::string &s, size_t max, bool is_id)
{
	const std::string q = std::string(what) + " '" + s + "'";

	if (s.empty())
		return Error(-EINVAL, std::string(what) + " is empty");
	if (s.size() > max)
		return Error(-EINVAL, std::string(what) + " is longer than " +
			     std::to_string(max) + " characters");
	for (unsigned char c : s) {
		if (c < 0x21 || c > 0x7e)
			return Error(-EINVAL, std::string(what) +
				     " has a space or a character that is not printable ASCII");
		if (is_id && c == '/')
			return Error(-EINVAL, q + " has a '/', which etcd's keys use as separator");
	}
	return {};
}

// A replica id of a group with a config: decimal, non-zero; 0 otherwise.
uint32_t replica_number(const std::string &s)
{
	uint32_t v = 0;
	auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);

	return ec == std::errc() && end == s.data() + s.size() ? v : 0;
}

} // namespace

// Role, leader and reason: what makes a state a change (valid_until alone
// is a renewal).
bool same_change(const GroupState &a, const GroupState &b)
{
	return a.role == b.role && a.leader_id == b.leader_id &&
	       a.leader_address == b.leader_address && a.epoch == b.epoch &&
	       a.reason == b.reason && a.config == b.config;
}

mdr::Result<std::unique_ptr<GroupMember>> GroupMember::start(GroupOptions o, OnChange on_change)
{
	Status s = check_name("group id", o.group, kMaxGroupId, true);
	if (s.ok())
		s = check_name("replica id", o.replica, kMaxReplicaId, true);
	if (s.ok())
		s = check_name("replica address", o.address, kMaxAddress, false);
	if (!s.ok())
		return Error(s.error(), s.message());
	if (!o.bootstrap.empty()) {
		if (!replica_number(o.replica) || std::to_string(replica_number(o.replica)) !=
							   o.replica)
			return Error(-EINVAL, "replica id '" + o.replica +
				     "': a group with a config wants a decimal id from 1");
		s = check_replica_set(o.bootstrap, "group", "the bootstrap set has ", "");
		if (!s.ok())
			return Error(s.error(), s.message());
	}
	// The Election bounds every validity by the TTL it asked for, and
	// takes none past kMaxTtl; int64 below, so no product overflows.
	if (o.ttl_s < 1 || o.ttl_s > kMaxTtl)
		return Error(-EINVAL, "a group's lease TTL must be 1 to " +
			     std::to_string(kMaxTtl) + " s");
	const int64_t ttl_ms = int64_t(o.ttl_s) * 1000;
	if (o.drift_margin_ms < 0 || o.drift_margin_ms >= ttl_ms)
		return Error(-EINVAL, "the drift margin (" + std::to_string(o.drift_margin_ms) +
			     " ms) must be at least 0 and under the TTL (" +
			     std::to_string(o.ttl_s) + " s)");
	// A renewal bounded by more than the TTL could end after the validity
	// it was sent to extend: the leader would step down on every slow
	// answer it waited for, when one more try would have held the key.
	if (int64_t(o.etcd.request_timeout_ms) >= ttl_ms)
		return Error(-EINVAL, "etcd's request timeout (" +
			     std::to_string(o.etcd.request_timeout_ms) +
			     " ms) must be under the group's lease TTL (" +
			     std::to_string(o.ttl_s) + " s)");
	auto client = mdr::etcd::connect(o.etcd);
	if (!client.ok())
		return Error(client.error(), "etcd: " + client.message());
	const int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0)
		return Error(-errno, std::string("eventfd: ") + strerror(errno));

	std::unique_ptr<GroupMember> m(new GroupMember(std::move(o), std::move(on_change),
						       std::move(client.value()), efd));
	m->thread_ = thread_without_signals([p = m.get()] { p->run(); });
	return m;
}

GroupMember::GroupMember(GroupOptions options, OnChange on_change,
			 std::unique_ptr<mdr::etcd::Client> client, int efd)
	: opts_(std::move(options)), on_change_(std::move(on_change)),
	  leader_key_("/mdroute/groups/" + opts_.group + "/leader"),
	  record_key_("/mdroute/groups/" + opts_.group + "/members/" + opts_.replica),
	  members_prefix_("/mdroute/groups/" + opts_.group + "/members/"),
	  config_key_("/mdroute/groups/" + opts_.group + "/config"),
	  self_id_(opts_.bootstrap.empty() ? 0 : replica_number(opts_.replica)),
	  client_(std::move(client)), efd_(efd)
{
	state_.reason = "starting";
}

GroupMember::~GroupMember()
{
	{
		std::lock_guard lock(lock_);
		stopping_ = true;
		if (election_)
			election_->stop();
	}
	cv_.notify_all();
	if (thread_.joinable())
		thread_.join();
	close(efd_);
}

// ---- the loop's side

void GroupMember::process()
{
	uint64_t n;
	std::deque<GroupState> q;

	if (read(efd_, &n, sizeof(n)) < 0 && errno != EAGAIN)
		return;
	std::optional<ConfigChange> done;
	{
		std::lock_guard lock(lock_);
		q.swap(pending_);
		if (config_change_ && config_change_->result)
			done = std::exchange(config_change_, std::nullopt);
	}
	for (GroupState &s : q) {
		// After resign() the loop's state stays what resign() made it.
		if (resigned_)
			break;
		// Renewals of an epoch it stepped down from, posted before the
		// thread heard of it.
		if (s.role == GroupState::Role::leader && s.epoch == stepped_down_)
			continue;
		const bool changed = !same_change(state_, s);
		state_ = std::move(s);
		if (changed && on_change_)
			on_change_(state_);
	}
	// After the states posted before it: a leader's own change is the
	// last word on its set.
	if (done) {
		// Not over a newer set a follower's read brought meanwhile.
		if (done->result->ok() &&
		    (!state_.config || state_.config->revision < done->result->value().revision))
			state_.config = done->result->value();
		done->done(std::move(*done->result));
	}
}

Status GroupMember::change_config(std::vector<ReplicaArg> next, ConfigDone done)
{
	if (state_.role != GroupState::Role::leader || !state_.config)
		return Error(-EAGAIN, "group '" + opts_.group + "': not leading");
	if (Status st = check_replica_set(next, "group", "the new set has ", ""); !st.ok())
		return st;
	{
		std::lock_guard lock(lock_);
		if (config_change_)
			return Error(-EBUSY, "group '" + opts_.group +
				     "': a change of its replica set is under way");
		config_change_ = ConfigChange{std::move(next), state_.config->revision,
					      state_.epoch, std::move(done), std::nullopt};
	}
	cv_.notify_all();
	return {};
}

bool GroupMember::serving(Clock::time_point now) const
{
	return !resigned_ && state_.role == GroupState::Role::leader &&
	       now < state_.valid_until - milliseconds(opts_.drift_margin_ms);
}

mdr::Status GroupMember::resign()
{
	// Stop serving first: the lease is revoked after, by the thread.
	resigned_ = true;
	state_.role = GroupState::Role::follower;
	state_.reason = "resigned";
	state_.since = Clock::now();

	std::unique_lock lock(lock_);
	resign_asked_ = true;
	if (election_)
		election_->stop();
	cv_.notify_all();
	const auto limit = Clock::now() + milliseconds(2 * opts_.etcd.request_timeout_ms + 500);
	if (!cv_.wait_until(lock, limit, [this] { return resign_done_; }))
		return Error(-ETIMEDOUT, "group '" + opts_.group +
			     "': etcd did not take the resignation in time; the leases lapse");
	return resign_status_;
}

void GroupMember::step_down(milliseconds hold)
{
	if (state_.role != GroupState::Role::leader)
		return;
	// Stop serving first: the key goes after, by the thread.
	stepped_down_ = state_.epoch;
	state_.role = GroupState::Role::follower;
	state_.reason = "stepped down";
	state_.since = Clock::now();

	std::lock_guard lock(lock_);
	step_down_hold_ = hold;
	step_down_asked_ = true;
	cv_.notify_all();
}

#ifdef MDR_TEST_HOOKS
void GroupMember::pause_renewals()
{
	std::lock_guard lock(lock_);
	paused_ = true;
}

void GroupMember::resume_renewals()
{
	{
		std::lock_guard lock(lock_);
		paused_ = false;
	}
	cv_.notify_all();
}
#endif

// ---- the thread's side

void GroupMember::post(GroupState s)
{
	const uint64_t one = 1;

	s.hosts = hosts_;
	posted_ = s;
	{
		std::lock_guard lock(lock_);
		pending_.push_back(std::move(s));
	}
	// The counter only saturates, and process() takes the whole queue.
	(void)!write(efd_, &one, sizeof(one));
}

bool GroupMember::asked_to_stop()
{
	std::unique_lock lock(lock_);
	// A paused (frozen) thread waits here and does nothing else.
	cv_.wait(lock, [this] { return !paused_ || stopping_ || resign_asked_; });
	return stopping_ || resign_asked_;
}

bool GroupMember::idle_until(Clock::time_point t)
{
	std::unique_lock lock(lock_);
	cv_.wait_until(lock, t, [this] {
		return stopping_ || resign_asked_ || key_lost_ || paused_ || step_down_asked_ ||
		       leader_event_;
	});
	return !stopping_ && !resign_asked_;
}

void GroupMember::run()
{
	// Each keeps its record itself: a leader after its renewal, a
	// follower after its try at a key it saw go.
	while (!asked_to_stop()) {
		if (leading_)
			lead();
		else
			follow();
	}
	watch_.reset();
	stop_watching_leader();
	bool resign;
	{
		std::lock_guard lock(lock_);
		resign = resign_asked_;
	}
	if (resign)
		finish_resign();
	std::lock_guard lock(lock_);
	election_ = nullptr;
}

// The record of this replica's address under a lease of its own, kept
// alive at the leader's pace; registered again when its lease went. Up to
// four calls of etcd (keepalive, grant, put, revoke), each bounded by the
// request timeout: a leader calls it only after its renewal (lead()), so
// that the record, which only tells peers where this replica is, never
// delays the renewal that keeps the leader serving.
void GroupMember::keep_record()
{
	const Clock::time_point now = Clock::now();

	if (now < record_due_)
		return;
	record_due_ = now + milliseconds(opts_.ttl_s * 1000 / 3);
	std::string failed;
	if (record_lease_) {
		auto ka = client_->keepalive(record_lease_);
		if (ka.ok() && ka.value() > 0)
			return record_kept();
		if (!ka.ok()) {
			failed = ka.message();
		} else {
			record_lease_ = 0;	// lapsed: register again below
		}
	}
	if (!record_lease_) {
		auto lease = client_->grant(opts_.ttl_s);
		if (!lease.ok()) {
			failed = lease.message();
		} else {
			auto put = client_->put(record_key_, opts_.address, lease.value().id);
			if (put.ok()) {
				record_lease_ = lease.value().id;
				return record_kept();
			}
			failed = put.message();
			(void)client_->revoke(lease.value().id);
		}
	}
	record_failed_ = true;
	GroupState s = posted_;
	s.reason = "member record " + record_key_ + ": " + failed;
	s.since = Clock::now();
	post(std::move(s));
}

// After a failure of the record, the reason says that it is back.
void GroupMember::record_kept()
{
	if (!std::exchange(record_failed_, false))
		return;
	GroupState s = posted_;
	s.reason = "member record " + record_key_ + " is kept again";
	s.since = Clock::now();
	post(std::move(s));
}

// The member records (group.h's keys): where each replica serves hosts,
// read with a range of their prefix once a TTL, on the record's round (a
// leader's between its renewals, never in their place). A record whose
// key is not a replica id or whose value could not be one (check_name())
// is passed over; a replica of the set whose record lapsed keeps the
// address read before (it comes back where its settings say), one out of
// the set is forgotten with its record. At most kMaxHosts, the set's
// first. An error of etcd keeps what was read.
void GroupMember::read_hosts()
{
	const Clock::time_point now = Clock::now();

	if (!self_id_ || now < hosts_due_)
		return;
	hosts_due_ = now + milliseconds(opts_.ttl_s * 1000);
	auto r = client_->range(members_prefix_);
	if (!r.ok())
		return;
	const auto member = [this](uint32_t id) {
		return posted_.config && posted_.config->find(id);
	};
	std::map<uint32_t, std::string> read, next;
	size_t others = 0;
	for (const mdr::etcd::KeyValue &kv : r.value().kvs) {
		const std::string id = kv.key.substr(members_prefix_.size());
		const uint32_t n = replica_number(id);

		if (!n || std::to_string(n) != id ||
		    !check_name("address", kv.value, kMaxAddress, false).ok() ||
		    (!member(n) && others++ >= kMaxHosts))
			continue;
		read[n] = kv.value;
	}
	for (const auto &[id, address] : hosts_)
		if (member(id) && !read.count(id))
			read[id] = address;
	for (const bool in_set : {true, false})
		for (const auto &[id, address] : read)
			if (member(id) == in_set && next.size() < kMaxHosts)
				next[id] = address;
	if (next == hosts_)
		return;
	hosts_ = std::move(next);
	post(posted_);
}

// A leader's change of the set (change_config()): the swap at the revision
// it read, guarded by its epoch's key. A refusal reads the key: the value
// wanted is there when an earlier try of the same change went through
// (its answer lost); the revision read means the guard refused (the key
// is gone or another's); anything else, another writer (an operator).
void GroupMember::take_config_change()
{
	std::vector<ReplicaArg> next;
	int64_t revision, epoch;
	{
		std::lock_guard lock(lock_);
		if (!config_change_ || config_change_->result)
			return;
		next = config_change_->next;
		revision = config_change_->revision;
		epoch = config_change_->epoch;
	}
	mdr::Result<GroupConfig> res = Error(-EAGAIN, "not leading");
	if (leading_ && epoch == posted_.epoch) {
		const std::string text = encode_group_config(next);
		auto sw = client_->compare_and_swap(config_key_, revision, text, 0,
						    mdr::etcd::Guard{leader_key_, epoch});
		if (!sw.ok())
			res = Error(sw.error(), "etcd: " + sw.message());
		else if (sw.value().swapped)
			res = GroupConfig{parse_group_config(text).value(), sw.value().revision};
		else if (sw.value().current && sw.value().current->value == text)
			res = GroupConfig{parse_group_config(text).value(),
					  sw.value().current->mod_revision};
		else if (sw.value().current && sw.value().current->mod_revision == revision)
			res = Error(-ESTALE, "the leader key of epoch " + std::to_string(epoch) +
				    " is gone or another's");
		else
			res = Error(-ESTALE, config_key_ + " changed under the leader (revision " +
				    std::to_string(sw.value().current ?
						   sw.value().current->mod_revision : 0) +
				    ", it read " + std::to_string(revision) + ")");
	}
	if (res.ok())
		posted_.config = res.value();
	{
		std::lock_guard lock(lock_);
		config_change_->result = std::move(res);
	}
	const uint64_t one = 1;
	(void)!write(efd_, &one, sizeof(one));
}

void GroupMember::lose(std::string reason)
{
	leading_ = false;
	watch_.reset();		// joins its thread: not under lock_
	{
		std::lock_guard lock(lock_);
		election_ = nullptr;
		key_lost_ = false;
		// A step down asked for the epoch just lost is done: left
		// standing, it would end the next epoch this replica wins.
		step_down_asked_ = false;
	}
	election_owned_.reset();	// a new term campaigns anew
	// The set as this leader last changed it: a follower's next read is
	// up to a TTL away.
	if (posted_.config)
		follow_config_ = posted_.config;

	GroupState s;
	s.reason = std::move(reason);
	s.config = posted_.config;
	s.since = Clock::now();
	post(std::move(s));
}

void GroupMember::lead()
{
	if (!idle_until(std::min(renew_due_, record_due_)))
		return;
	bool lost;
	{
		std::lock_guard lock(lock_);
		if (paused_)
			return;
		lost = std::exchange(key_lost_, false);
	}
	const int64_t epoch = posted_.epoch;
	if (lost)
		return lose("the leader key of epoch " + std::to_string(epoch) +
			    " was deleted or replaced");
	if (take_step_down())
		return;
	if (Clock::now() < renew_due_) {
		keep_record();		// due, and the renewal is not
		return read_hosts();
	}

	renew_due_ = Clock::now() + milliseconds(opts_.ttl_s * 1000 / 3);
	auto r = election_owned_->renew();
	if (!r.ok() && r.error() == -ENOENT)
		return lose(r.message());

	GroupState s = posted_;
	if (r.ok()) {
		s.valid_until = r.value();
		if (s.reason.rfind("renewal failed", 0) == 0)
			s.reason = "renewed after a failure";
	} else {
		// valid_until stays: it runs out on the loop's clock.
		s.reason = "renewal failed, the last validity holds: " + r.message();
		s.since = Clock::now();
	}
	const bool renewed = r.ok();
	post(std::move(s));
	// A swap of the set only right after a renewal, as the record's
	// keepalive: a slow etcd delays the next renewal by one call at most,
	// with a whole TTL of validity ahead, never the renewal itself.
	if (renewed)
		take_config_change();
}

// The loop asked to step down: the key goes now (its lease revoked), and
// no campaign until the hold passed. False when it was not asked.
bool GroupMember::take_step_down()
{
	milliseconds hold;
	{
		std::lock_guard lock(lock_);
		if (!std::exchange(step_down_asked_, false))
			return false;
		hold = step_down_hold_;
	}
	const int64_t epoch = posted_.epoch;
	Status r = election_owned_->resign();
	campaign_after_ = Clock::now() + hold;
	lose("stepped down from epoch " + std::to_string(epoch) +
	     (r.ok() ? "" : " (the key lapses with its lease: " + r.message() + ")"));
	return true;
}

void GroupMember::finish_resign()
{
	Status s;

	if (leading_ && election_owned_)
		s = election_owned_->resign();
	leading_ = false;
	if (record_lease_) {
		Status r = client_->revoke(record_lease_);
		record_lease_ = 0;
		if (s.ok() && !r.ok() && r.error() != -ENOENT)
			s = r;
	}
	{
		std::lock_guard lock(lock_);
		resign_done_ = true;
		resign_status_ = std::move(s);
	}
	cv_.notify_all();
}

} // namespace mdnode
