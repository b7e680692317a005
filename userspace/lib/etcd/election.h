// SPDX-License-Identifier: GPL-2.0
//
// election.h - leadership of one key in etcd (a group's
// /mdroute/groups/G/leader), with the epoch that fences it.
//
// A candidate campaigns by granting itself a lease of ttl seconds and, in
// one transaction, putting key = its value under that lease only if the key
// does not exist. The one whose put created the key leads; its epoch is the
// key's create_revision. A candidate that finds the key held watches it and
// tries again once it is deleted. The leader drives its own keepalive with
// renew(), which answers the time its lease is known to be valid until; it
// must stop leading (serving, copying, accepting) at
//
//	valid_until - drift_margin
//
// on its steady clock, whether or not it heard from etcd.
//
// Why two candidates never both believe they lead over overlapping intervals
// (given that only campaigns write the key, that is, nothing deletes it but
// the expiry or revoke of its lease, that a lease is revoked only by its
// holder after it stopped or by another once the holder's process is gone
// (mdnode's group_depose.h), and that a candidate's clock measures an
// interval of ttl seconds with an error under drift_margin):
//
// 1. A holds the key under lease LA. Its valid_until is t0 + TTL, where t0 is
//    read on A's clock *before* the request (grant or keepalive) was sent and
//    TTL is what etcd answered. etcd sets LA's expiry to TTL after it
//    *handled* that request, which is after t0 in real time; a later
//    keepalive only moves the expiry later. So the key exists at least until
//    real time t0 + TTL (etcd's own lease guarantee: a new etcd leader
//    extends leases, it never shortens them).
// 2. A stops at valid_until - drift_margin on its own clock. With its clock
//    off by less than drift_margin over TTL, that is before real t0 + TTL:
//    before LA can expire. A late answer only shortens what A believes,
//    since t0 was taken before sending; a lost answer leaves the old
//    valid_until in force.
// 3. B's create succeeds only in a transaction that found the key absent,
//    so after LA expired (or A revoked it in resign(), after A stopped, or
//    a replica revoked it after A's process ended: A believes nothing). B
//    believes it leads only from the moment that answer arrives.
// 4. Hence A's interval ends before LA's expiry, and B's begins after it:
//    they are disjoint. Each create of the key has a higher store revision
//    than every earlier one, so B's epoch is strictly greater than A's, and
//    what a slow A might still send (a process paused past its stop time,
//    which no timer can rule out) carries the older epoch, which replicas
//    that saw B's refuse: that is what the epoch stamped on messages is for.
//
// A lease that etcd reports gone (renew() answering -ENOENT) means the key
// is gone or about to be: stop at once. An error of the transport leaves the
// last valid_until in force, and renew() may be called again.
//
// One thread drives an Election (campaign, renew, resign, leader); stop()
// may be called from any thread to end a campaign under way.
#ifndef MDR_ETCD_ELECTION_H
#define MDR_ETCD_ELECTION_H

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "lib/etcd/client.h"
#include "lib/util/result.h"

namespace mdr::etcd {

class Election {
public:
	using Clock = std::chrono::steady_clock;

	// The longest TTL campaign() takes, in seconds: an hour is far beyond
	// any use, and keeps t0 + TTL in range.
	static constexpr int64_t kMaxTtl = 3600;

	struct Leader {
		std::string value;
		int64_t epoch = 0;	// the key's create_revision
		int64_t lease = 0;
	};

	Election(Client &client, std::string key) : client_(client), key_(std::move(key)) {}
	// Does not resign: a candidate that goes away lets its lease lapse.
	~Election() = default;

	Election(const Election &) = delete;
	Election &operator=(const Election &) = delete;

	// Blocks until this candidate holds the key (created under its own
	// lease of ttl_s seconds) and answers its epoch; valid_until() is then
	// set. -ETIMEDOUT at deadline, -ECANCELED after stop(), -EALREADY when
	// it already leads. Errors of etcd on the way are retried until the
	// deadline (the last one is in the message).
	Result<int64_t> campaign(std::string_view value, int64_t ttl_s, Clock::time_point deadline);

	// One try of a campaign, for a candidate that watches the key itself
	// and tries when it sees it gone: the epoch when this try created the
	// key (valid_until() is then set); none when another holds it (the
	// lease this try granted is revoked again), with *seen, if given, the
	// transaction's answer (the holder, and the revision to watch from).
	// Errors of etcd are answered, not retried; -ECANCELED after stop(),
	// -EALREADY when it already leads, -EINVAL for a ttl_s out of range.
	Result<std::optional<int64_t>> try_once(std::string_view value, int64_t ttl_s,
						Created *seen = nullptr);

	// One keepalive of the leader's lease: the time it is known valid until,
	// from a clock read before the keepalive was sent. -ENOENT: the lease
	// is gone, leadership is lost (held() turns false). Other errors: etcd
	// did not answer; the previous valid_until still holds.
	Result<Clock::time_point> renew();

	// Revokes the lease, which deletes the key: the next candidate may win
	// at once. Call it after this leader stopped serving.
	Status resign();

	// Who holds the key now, read from etcd (linearizable); none if nobody.
	Result<std::optional<Leader>> leader();

	// Ends a campaign() under way in another thread (-ECANCELED). Sticky.
	void stop();

	bool held() const { return held_; }
	int64_t epoch() const { return epoch_; }
	int64_t lease() const { return lease_; }
	Clock::time_point valid_until() const { return valid_until_; }

private:
	// -EALREADY when it leads, -EINVAL for a TTL out of range.
	Status may_campaign(int64_t ttl_s) const;
	// Waits for the key to be deleted after revision, or for the deadline
	// or stop(); false when the wait ended without a delete.
	bool wait_deleted(int64_t revision, Clock::time_point deadline);

	Client &client_;
	const std::string key_;
	bool held_ = false;
	int64_t epoch_ = 0;
	int64_t ttl_s_ = 0;	// asked for: bounds every valid_until
	int64_t lease_ = 0;
	Clock::time_point valid_until_{};

	std::mutex lock_;
	std::condition_variable changed_;
	bool stopped_ = false;		// under lock_
};

} // namespace mdr::etcd

#endif // MDR_ETCD_ELECTION_H
