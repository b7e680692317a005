// SPDX-License-Identifier: GPL-2.0
//
// group.h - one replica's role in its group: a member record in etcd, a
// campaign for the group's leader key, the renewals of a leader, all on a
// thread of its own; the event loop hears of changes through an eventfd and
// asks serving(now) on its own timer.
//
// Keys (replication.md, "Leadership and epochs"):
//
//	/mdroute/groups/G/members/ID	the replica's address, under a lease of
//					its own (a dead replica's record goes);
//					read back by each replica of a group
//					with a set (GroupState::hosts)
//	/mdroute/groups/G/leader	the Election's key: "ID\nADDRESS"
//	/mdroute/groups/G/config	the replica set (group_config.h), when
//					the options give one to start it with
//
// A follower watches the leader key and campaigns only when the key is
// gone (group_follow.cc says how, and what it spares etcd).
//
// The replica set (config): read once a TTL by a follower, and again right
// after a campaign is won, before the win is posted; a replica not in the set,
// or one the set places elsewhere than its own bootstrap entry (where its
// log listener is), does not campaign, and one that won and finds itself
// so deletes the key at once and does not lead. The read after the win is
// etcd's linearizable read, later than the key's creation: any change of
// the set by an earlier leader (guarded by that leader's epoch, below)
// either happened before it, and is seen, or can no longer happen, so the
// set a leader starts with stays the group's until it changes it itself
// with change_config(): a compare-and-swap of the key at the revision read
// that also requires the leader key to be the one created at its epoch.
//
// Why the loop's timer alone stops a leader in time (election.h has the
// argument for valid_until itself): the thread hands the loop valid_until
// only as the answer of a renewal, taken from a clock read before it was
// sent; the loop keeps the last one it was handed and serving(now) compares
// it, minus drift_margin, with the loop's own steady clock. A thread that
// is frozen, slow or cut off from etcd hands over nothing newer, so the
// comparison turns false at the same instant it would have turned false
// had the thread stopped renewing on purpose: the loop needs no message to
// stop, only its timer. A renewal answering -ENOENT (the lease is gone),
// or the watch seeing the key deleted, makes the member a follower at once;
// an error of the transport keeps the last valid_until, which then runs out
// on the loop's clock.
//
//	auto m = GroupMember::start(opts, [&](const GroupState &s) { ... });
//	GroupMember &g = *m.value();
//	loop.add_fd("group", g.fd(), [&] { g.process(); });
//	loop.add_timer("tick", 50, [&] { if (!g.serving(Clock::now())) stop(); });
#ifndef MDNODE_GROUP_H
#define MDNODE_GROUP_H

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "lib/etcd/client.h"
#include "lib/etcd/election.h"
#include "lib/util/result.h"
#include "mdnode/group_config.h"

namespace mdnode {

struct GroupOptions {
	std::string group;		// G: printable, no '/', <= kMaxGroupId
	std::string replica;		// ID: likewise
	std::string address;		// where the replica listens, as peers dial it
	mdr::etcd::Options etcd;
	int ttl_s = 1;			// of the leader's and the record's leases
	// < ttl_s: see election.h. It must cover, beside the clocks' drift
	// over one TTL, the period of the loop's timer that asks serving():
	// the loop stops serving at its first tick past the instant, up to
	// one period late.
	int drift_margin_ms = 200;
	// The set etcd is given when it holds none: non-empty makes the
	// member keep the config (above), and replica then a replica id
	// (decimal, non-zero).
	std::vector<ReplicaArg> bootstrap;
	// Whether this replica may put bootstrap when etcd holds no set: only
	// one whose log is empty (a new group). A replica with a log that
	// finds no set does not campaign: a lost key must not be made again
	// from a stale replica's settings (its majority could miss the one
	// that committed the last records).
	bool may_bootstrap = true;
};

struct GroupState {
	using Clock = std::chrono::steady_clock;
	enum class Role { follower, leader };

	Role role = Role::follower;
	// Who leads, as last known (this replica when leading); empty and 0
	// when nobody leads or etcd could not be read.
	std::string leader_id;
	std::string leader_address;
	int64_t epoch = 0;
	// The etcd lease the leader key of epoch is held under, as read or
	// watched; 0 when not known.
	int64_t leader_lease = 0;
	Clock::time_point valid_until{};	// leader: from the last renewal
	Clock::time_point since{};		// when the thread saw the change
	std::string reason;			// of the last change
	// The replica set as last read; a leader's, from after its win and
	// its own changes. None without a bootstrap set, or before a read.
	std::optional<GroupConfig> config;
	// Each replica's address as its member record gives it, by id, read
	// once a TTL (read_hosts()); a replica whose record lapsed keeps the
	// one read before. Groups with a set only; not a change by itself
	// (on_change is not called for it: read state()).
	std::map<uint32_t, std::string> hosts;
};

// Role, leader, epoch, reason and set: what makes a state a change (a
// renewal moves valid_until alone).
bool same_change(const GroupState &a, const GroupState &b);

class GroupMember {
public:
	using Clock = std::chrono::steady_clock;
	using OnChange = std::function<void(const GroupState &)>;

	static constexpr size_t kMaxGroupId = 64;
	static constexpr size_t kMaxReplicaId = 64;
	static constexpr size_t kMaxAddress = 256;
	static constexpr int64_t kMaxTtl = mdr::etcd::Election::kMaxTtl;	// s
	// Member records kept in GroupState::hosts: a set and one being added.
	static constexpr size_t kMaxHosts = kMaxReplicas + 1;

	// -EINVAL, naming the field, for an id or address that cannot be a key
	// or a record, or for timings that cannot work; else the thread runs.
	static mdr::Result<std::unique_ptr<GroupMember>> start(GroupOptions options,
							       OnChange on_change);
	// Stops the thread promptly (a campaign is ended, a call in flight is
	// bounded by the request timeout) without resigning: leases lapse.
	~GroupMember();

	GroupMember(const GroupMember &) = delete;
	GroupMember &operator=(const GroupMember &) = delete;

	// The loop's side. fd() is readable when changes wait; process()
	// takes them and calls on_change for each that is one (a renewal that
	// only moves valid_until calls nothing).
	int fd() const { return efd_; }
	void process();
	bool serving(Clock::time_point now) const;
	const GroupState &state() const { return state_; }

	// A clean stop: serving() is false from now; the thread revokes the
	// leader's lease (if it leads) and the record's, and campaigns no
	// more. Waits for that, bounded by the request timeout.
	mdr::Status resign();

	// Gives up leading and stays a follower: serving() is false from
	// now; the thread deletes the leader key (revokes its lease) and
	// campaigns again only after hold, so that another replica wins the
	// next epoch. Nothing when not leading. Returns at once.
	void step_down(std::chrono::milliseconds hold);

	// A leader's change of the replica set from the revision of state()'s
	// config to next (group_config.h): done(new config) on the loop's
	// thread, from process(); done(-ESTALE) when the key or the epoch
	// moved on (this replica no longer leads, or the set is not the one
	// it read), -EAGAIN when not leading, errors of etcd otherwise (the
	// outcome is then unknown: the set is either). One at a time: -EBUSY
	// at once while one is pending. The thread swaps right after its
	// next renewal that succeeds (a third of the TTL at most).
	using ConfigDone = std::function<void(mdr::Result<GroupConfig>)>;
	mdr::Status change_config(std::vector<ReplicaArg> next, ConfigDone done);

#ifdef MDR_TEST_HOOKS
	// The thread stops doing anything (no renewal, no campaign, no
	// record keepalive) until resume_renewals(): a frozen process.
	void pause_renewals();
	void resume_renewals();
#endif

private:
	GroupMember(GroupOptions options, OnChange on_change,
		    std::unique_ptr<mdr::etcd::Client> client, int efd);

	// The thread's side.
	void run();
	// group_follow.cc: a follower's round, the leader key's watch.
	void follow();
	void keep_up();
	Clock::time_point round_end() const;
	void post_following();
	bool watch_leader();
	void take_leader_events();
	void stop_watching_leader();
	GroupState following_state() const;
	void won(int64_t epoch);
	void lead();
	void keep_record();
	void record_kept();
	void read_hosts();
	void lose(std::string reason);
	void post(GroupState s);
	bool idle_until(Clock::time_point t);	// false: stop or resign asked
	bool asked_to_stop();
	void finish_resign();
	bool take_step_down();
	// The set in etcd, put there from bootstrap when absent and put_ok
	// (else -ENOENT); checked.
	mdr::Result<GroupConfig> read_config(bool put_ok);
	// Whether the set lets this replica campaign (true without a set);
	// else why not.
	std::optional<std::string> not_member(const GroupConfig &c) const;
	void take_config_change();

	const GroupOptions opts_;
	const OnChange on_change_;
	const std::string leader_key_;
	const std::string record_key_;
	const std::string members_prefix_;
	const std::string config_key_;
	const uint32_t self_id_;	// with a bootstrap set; else 0
	const std::unique_ptr<mdr::etcd::Client> client_;
	const int efd_;

	// Only the thread touches these.
	std::unique_ptr<mdr::etcd::Election> election_owned_;
	std::unique_ptr<mdr::etcd::Watch> watch_;	// a leader's, of its key
	// A follower's watch of the leader key, from a read of it on, and the
	// key as the read and the watch's events tell it (none: absent);
	// follow_error_ says why there is none (etcd not read).
	std::unique_ptr<mdr::etcd::Watch> leader_watch_;
	std::optional<mdr::etcd::KeyValue> leader_kv_;
	std::string follow_error_;
	std::string try_error_;		// the last try's, until the key moves
	Clock::time_point leader_check_due_{};	// a read against the watch
	// The set as a follower last read it, once a TTL; barred_ why it
	// may not campaign (none: it may).
	std::optional<GroupConfig> follow_config_;
	std::optional<std::string> barred_;
	Clock::time_point config_due_{};
	bool leading_ = false;
	int64_t record_lease_ = 0;
	bool record_failed_ = false;
	Clock::time_point record_due_{};
	Clock::time_point hosts_due_{};
	std::map<uint32_t, std::string> hosts_;	// stamped on every state posted
	Clock::time_point renew_due_{};
	Clock::time_point campaign_after_{};	// a step down's hold
	GroupState posted_;

	// Shared with the thread, under lock_.
	std::mutex lock_;
	std::condition_variable cv_;
	mdr::etcd::Election *election_ = nullptr;	// to stop() it
	bool stopping_ = false;
	bool resign_asked_ = false;
	bool resign_done_ = false;
	mdr::Status resign_status_;
	bool key_lost_ = false;		// the watch saw the leader key go
	// What the follower's watch saw since the thread last looked: the
	// last event's key (none: deleted), or a compaction that stopped it.
	bool leader_event_ = false;
	std::optional<mdr::etcd::KeyValue> leader_seen_;
	bool leader_stale_ = false;
	bool step_down_asked_ = false;
	std::chrono::milliseconds step_down_hold_{0};
	bool paused_ = false;
	std::deque<GroupState> pending_;
	struct ConfigChange {
		std::vector<ReplicaArg> next;
		int64_t revision = 0;	// of the set it changes
		int64_t epoch = 0;
		ConfigDone done;
		std::optional<mdr::Result<GroupConfig>> result;	// the thread's
	};
	std::optional<ConfigChange> config_change_;

	// The loop's.
	GroupState state_;
	bool resigned_ = false;
	int64_t stepped_down_ = 0;	// the epoch it stepped down from

	std::thread thread_;
};

} // namespace mdnode

#endif // MDNODE_GROUP_H
