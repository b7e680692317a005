// SPDX-License-Identifier: GPL-2.0
//
// pushes.h - invalidation fan-out: a change that lease holders may cache
// is pushed (INVALIDATE) to every other host with a lease on the volume,
// and the change waits until each has acked or lost its lease.
//
// Each push to a host goes over the connection its lease points at,
// within the push credits the host granted: the kernel ends a connection
// on a push beyond them, so no more than push_credits are ever unacked,
// and what cannot go yet is held back in order. A push is never given up
// while its host keeps the lease (the fan-out would wait for ever); one
// left unacked for a lease period cuts the connection instead
// (expire_pushes()), and the host gets it again when it opens the volume
// on a new one (lease_granted()).
//
// That alone lets a host that never acks but reconnects and opens again
// within its lease hold a fan-out for ever. So what a host owes is kept by
// its host id, across connections: the time it held a valid lease on a
// volume whose fan-out waits for it. Once that reaches lease_ms + margin
// the host is fenced: its RENEW is answered STALE and its OPEN AGAIN, so
// its leases run out within lease_ms + margin (the fan-outs of ALLOC go on
// then, those that wait for IO io_hold_ms later), until no fan-out waits
// for it any more.
#ifndef MDNODE_PUSHES_H
#define MDNODE_PUSHES_H

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "lib/wire/wire.h"
#include "mdnode/core.h"

namespace mdnode {

// How one host stopped being waited for by a fan-out.
struct Settled {
	bool acked = false;	// by its ack; else its lease went, or it was
				// dropped (test)
	uint32_t flags = 0;	// the ack's (version 2)
	uint64_t dirty = 0;
};

class Pushes : public LeaseEvents {
public:
	using SettledFn = std::function<void(uint64_t host_id, const Settled &)>;

	explicit Pushes(NodeCore &core) : core_(core) {}

	// Pushes an invalidation of [first, first + count) of a volume to every
	// lease holder but except_host, then calls done once all have acked
	// or lost their lease. settled, when given, hears how each host was
	// settled, before done.
	void fan_out(uint64_t volume_id, uint64_t first, uint64_t count,
		     uint64_t generation, uint32_t reason,
		     std::optional<uint64_t> except_host, std::function<void()> done,
		     SettledFn settled = {});
	// The host acked push req_id on s: false when no such push is out
	// there (late, or made up).
	bool acked(Session &s, uint64_t req_id, const Settled &how);
	// Sends queued pushes, oldest first, while the session has push
	// credits left and sending works; drops those no fan-out waits for.
	void send_pushes(Session &s);
	// Sends what was held back and cuts the connections with a push
	// waiting for lease_ms + margin, the longest a lease is held without
	// renewal. From tick().
	void expire_pushes();
	// The session is going: its pushes will never be acked nor sent.
	void forget(Session &s);
	// The host owed an ack lease_ms + margin (see above): it gets no
	// lease until no fan-out waits for it.
	bool fenced(uint64_t host_id) const;

	// A host that opens again gets the pushes it lost with its old
	// connection; a lapsed lease stops the fan-outs that do not wait for
	// IO, a lease gone stops every fan-out waiting for its host.
	void lease_granted(uint64_t volume_id, Session &s) override;
	void lease_lapsed(uint64_t volume_id, uint64_t host_id) override;
	void lease_gone(uint64_t volume_id, uint64_t host_id) override;

private:
	// One push to one host on one connection, queued or sent.
	struct Push {
		uint64_t fan_out_id, host_id;
		int64_t since_ms;	// queued at
		int64_t sent_us = 0;	// mono_us() at its send: the ack's latency
	};
	// A change waiting for lease holders to acknowledge an invalidation.
	struct FanOut {
		uint64_t volume_id;
		std::set<uint64_t> hosts;	// not yet acked nor expired
		std::function<void()> done;
		mdr::wire::Invalidate inv;	// what each host is told
		SettledFn settled;
	};

	void settle(uint64_t fan_out_id, uint64_t host_id, const Settled &how);
	// Queues the fan-out's push to host_id on the session, unless one is
	// already queued or sent there, and sends what the credits allow.
	void push(uint64_t fan_out_id, uint64_t host_id, Session &s);
	bool push_wanted(const Push &p) const;
	// Settles host_id in the volume's fan-outs that pass the filter.
	void settle_host(uint64_t volume_id, uint64_t host_id,
			 const std::function<bool(const FanOut &)> &which);
	// What a host owes, by host id: ms owed in stretches that ended, and
	// the start of the current one (-1: none: no valid lease on a volume
	// whose fan-out waits for it).
	struct Owing {
		int64_t owed_ms = 0;
		int64_t since_ms = -1;
		bool fenced = false;
	};
	// A fan-out waits for host_id, which holds a valid lease: it owes
	// from now on, if it did not already.
	void owes(uint64_t host_id);
	// Adds up what each host owes, fences those that owe a lease period
	// and lifts the fence of those no fan-out waits for. From tick().
	void account_owing();

	NodeCore &core_;
	std::map<uint64_t, FanOut> fan_outs_;	// by id
	// Push req_id -> the push, from when it is queued until it is acked
	// or its session is gone.
	std::map<uint64_t, Push> pushes_;
	std::map<uint64_t, Owing> owing_;	// by host id
	uint64_t next_push_ = 1;
	uint64_t next_fan_out_ = 1;
};

} // namespace mdnode

#endif // MDNODE_PUSHES_H
