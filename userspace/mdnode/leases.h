// SPDX-License-Identifier: GPL-2.0
//
// leases.h - the leases mdnode holds for hosts, per (volume, host). Pure
// logic: times are the caller's (milliseconds of one steady clock), and
// callers own locking.
//
// A lease is valid until expires_ms. Then it lapses: its host sends no new
// IO, but what it sent before may still reach the devices for io_hold_ms,
// and the lease stays here until that too is over (then it is gone).
// Leases belong to (host, volume), not to a connection: a host that
// disconnects keeps its lease until it expires; the lease only stops
// pointing at the connection (conn 0).
//
// expire() finds what lapsed or went without a scan of every lease: an
// expiry heap holds a deadline per lease, and a renewal pushes a new one
// (the old one is stale: its sequence number is no longer the lease's, and
// it is dropped when it comes up). Closing a connection finds its leases
// through a per-connection index.
#ifndef MDNODE_LEASES_H
#define MDNODE_LEASES_H

#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <utility>
#include <vector>

#include "mdnode/net.h"

namespace mdnode {

struct LeaseKey {
	uint64_t volume_id, host_id;
	auto operator<=>(const LeaseKey &) const = default;
};

struct Lease {
	int64_t expires_ms;
	ConnId conn = 0;	// 0 while the host is not connected
	bool lapsed = false;	// expires_ms passed (expire() said so)
	uint64_t seq = 0;	// the lease's own: which deadlines are current
};

class Leases {
public:
	using Map = std::map<LeaseKey, Lease>;
	// The leases of one volume, by host id.
	struct Range {
		Map::const_iterator b, e;
		Map::const_iterator begin() const { return b; }
		Map::const_iterator end() const { return e; }
	};
	// What expire() found, each in the order of its deadline (ties: by
	// volume, then host).
	struct Expired {
		std::vector<std::pair<LeaseKey, ConnId>> lapsed;	// and its conn
		std::vector<LeaseKey> gone;				// erased
	};

	explicit Leases(int64_t io_hold_ms) : io_hold_ms_(io_hold_ms) {}

	const Lease *find(LeaseKey key) const;
	// A new lease, valid until expires_ms, over conn; it replaces the one
	// the host had on the volume, valid or lapsed.
	void grant(LeaseKey key, ConnId conn, int64_t expires_ms);
	// A lease that exists, valid until expires_ms now, over conn.
	void renew(LeaseKey key, ConnId conn, int64_t expires_ms);
	bool erase(LeaseKey key);
	// Erases every lease on the volume; their hosts, ascending.
	std::vector<uint64_t> erase_volume(uint64_t volume_id);
	// The connection is gone: its leases no longer point at it.
	void detach(ConnId conn);

	Range on_volume(uint64_t volume_id) const;
	// The leases held over conn, by the index.
	std::vector<LeaseKey> of_conn(ConnId conn) const;
	// Leases (valid or lapsed) the host holds, over any connection.
	uint32_t held_by(uint64_t host_id) const;
	size_t size() const { return leases_.size(); }
	// Of them, lapsed: kept only while their IO may still land.
	size_t lapsed() const { return lapsed_; }

	// Marks lapsed what expired by now, erases what has also been lapsed
	// for io_hold_ms. Costs O(log n) per deadline that came up.
	Expired expire(int64_t now);

private:
	struct Deadline {
		int64_t at;
		LeaseKey key;
		uint64_t seq;
		auto operator<=>(const Deadline &) const = default;
	};

	// The lease's next deadline: its expiry, or the end of its io hold.
	void schedule(LeaseKey key, const Lease &l);
	void index(LeaseKey key, ConnId from, ConnId to);

	int64_t io_hold_ms_;
	Map leases_;
	std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>> heap_;
	std::map<ConnId, std::set<LeaseKey>> by_conn_;
	uint64_t next_seq_ = 1;
	size_t lapsed_ = 0;	// leases_ with lapsed set
};

} // namespace mdnode

#endif // MDNODE_LEASES_H
