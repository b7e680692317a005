// SPDX-License-Identifier: GPL-2.0
//
// pushes.cc - see pushes.h.
#include "mdnode/pushes.h"

#include <algorithm>
#include <cerrno>
#include <utility>
#include <vector>

#include "mdnode/log.h"

namespace mdnode {

namespace {

MDNODE_LOG_SUBSYSTEM("node");

namespace wire = mdr::wire;

// A fan-out of this reason ends with the old places unused by the host:
// data moves or places are freed. ALLOC only tells of a new place; TRACK
// only starts the noting, which a lapse makes moot (every granule is then
// copied under the freeze).
bool waits_for_io(uint32_t reason)
{
	return reason != MDR_INVAL_ALLOC && reason != MDR_INVAL_TRACK;
}

} // namespace

void Pushes::fan_out(uint64_t volume_id, uint64_t first, uint64_t count,
		   uint64_t generation, uint32_t reason,
		   std::optional<uint64_t> except_host, std::function<void()> done,
		   SettledFn settled)
{
	const uint64_t id = next_fan_out_++;
	FanOut &f = fan_outs_[id];
	const int64_t now = core_.now();
	std::vector<uint64_t> dropped;

	f.volume_id = volume_id;
	f.done = std::move(done);
	f.settled = std::move(settled);
	f.inv.volume_id = volume_id;
	f.inv.first = first;
	f.inv.count = count;
	f.inv.generation = generation;
	f.inv.reason = reason;
	for (const auto &[key, lease] : core_.leases.on_volume(volume_id)) {
		const uint64_t host = key.host_id;

		// A lapsed holder too, while its old IO may still land.
		if (host == except_host ||
		    (lease.expires_ms <= now &&
		     !(waits_for_io(reason) && core_.io_possible(lease, now))))
			continue;
#ifdef MDR_TEST_HOOKS
		if (core_.opts.test_drop_invalidations) {
			core_.stats.invalidations_dropped++;
			log_warn("test: invalidation of volume %llu extents %llu+%llu "
				 "(generation %llu, reason %u) for host %016llx dropped",
				 (unsigned long long)volume_id, (unsigned long long)first,
				 (unsigned long long)count, (unsigned long long)generation,
				 reason, (unsigned long long)host);
			dropped.push_back(host);
			continue;
		}
#endif
		f.hosts.insert(host);
		if (lease.expires_ms > now)
			owes(host);
		auto sit = core_.sessions.find(lease.conn);
		if (sit == core_.sessions.end())
			continue;	// not connected: its lease expires
		// Sent within the host's push credits, or held back until an ack
		// or tick() lets it go; a host that never acks loses its
		// connection after a lease period (expire_pushes()).
		push(id, host, sit->second);
	}
	// As if acked, but without what an ack says.
	if (f.settled)
		for (uint64_t host : dropped)
			f.settled(host, Settled{});
	if (f.hosts.empty()) {
		auto d = std::move(f.done);
		fan_outs_.erase(id);
		d();
	}
}

void Pushes::push(uint64_t fan_out_id, uint64_t host_id, Session &s)
{
	auto same = [&](uint64_t id) {
		const Push &p = pushes_.at(id);
		return p.fan_out_id == fan_out_id && p.host_id == host_id;
	};

	if (std::ranges::any_of(s.pushes, same) || std::ranges::any_of(s.queued, same))
		return;
	const uint64_t id = next_push_++;
	pushes_[id] = Push{.fan_out_id = fan_out_id, .host_id = host_id, .since_ms = core_.now()};
	s.queued.push_back(id);
	send_pushes(s);
}

bool Pushes::push_wanted(const Push &p) const
{
	auto it = fan_outs_.find(p.fan_out_id);

	return it != fan_outs_.end() && it->second.hosts.count(p.host_id);
}

// The kernel ends the connection on a push beyond its push credits
// (mdr_push_recv), so no more than push_credits are ever unacked; and a push
// is never given up while the host keeps its lease: the fan-out would wait
// for ever. What cannot go now stays queued, in order.
void Pushes::send_pushes(Session &s)
{
	while (!s.closing && !s.queued.empty() && s.pushes.size() < s.peer.push_credits) {
		const uint64_t id = s.queued.front();
		auto it = pushes_.find(id);

		if (!push_wanted(it->second)) {
			// Its fan-out ended, or stopped waiting for this host.
			pushes_.erase(it);
			s.queued.pop_front();
			continue;
		}

		const wire::Invalidate &inv = fan_outs_.at(it->second.fan_out_id).inv;
		std::vector<std::byte> buf(wire::encoded_size(inv));
		auto n = wire::encode(buf, id, inv);

		if (!n.ok()) {
			// A bug: it stays queued, and expire_pushes() cuts the
			// connection rather than let the fan-out hang.
			log_error_rl("conn %llu: cannot encode a push: %s",
				     (unsigned long long)s.peer.id, n.message().c_str());
			return;
		}
		auto st = core_.net->send(s.peer.id, std::span(buf.data(), n.value()));
		if (!st.ok()) {
			// -ENOBUFS: every send buffer is in use, for a moment.
			// The next ack or tick() tries again. -ENOTCONN: the
			// connection is going, and its pushes with it.
			if (st.error() != -ENOTCONN)
				log_warn_rl("conn %llu: push held back: %s",
					    (unsigned long long)s.peer.id,
					    st.message().c_str());
			return;
		}
		s.queued.pop_front();
		s.pushes.insert(id);
		it->second.sent_us = mono_us();
		core_.stats.invalidations++;
	}
}

// A host that keeps renewing its lease but does not ack a push (or whose
// push could not be sent) would hold the fan-out, and the ALLOC or MOVE
// behind it, for ever. A push is overdue once it has waited as long as
// mdnode holds a lease without a renewal (lease_ms + margin): a host that
// stopped renewing has lost its lease by then (tick() reaps leases first),
// so only one that renews and does not do its part is cut off. The lease
// then no longer points at a connection, and the fan-out waits for it to
// run out or for the host to open the volume again on a new connection,
// where the push is sent again (HostRpc::do_open(), then lease_granted()).
void Pushes::expire_pushes()
{
	const int64_t now = core_.now();
	const int64_t overdue = int64_t(core_.opts.lease_ms) + int64_t(core_.opts.drift_margin_ms);
	std::vector<ConnId> cut;

	for (auto &[conn, s] : core_.sessions) {
		if (s.closing)
			continue;
		// Held back for a fan-out that no longer waits for this host:
		// never to be sent.
		std::erase_if(s.queued, [&](uint64_t id) {
			auto it = pushes_.find(id);
			if (push_wanted(it->second))
				return false;
			pushes_.erase(it);
			return true;
		});
		send_pushes(s);

		// Only pushes a fan-out still waits for: a sent one it stopped
		// waiting for holds a credit, and what waits behind it is
		// overdue in its turn. And only to a host that holds its lease:
		// one whose lease lapsed may be slow to ack because its devices
		// still hold its IO, which io_hold_ms waits out; cutting it off
		// would cost every volume on the connection its pushes.
		auto overdue_for = [&](const Push &p) {
			return push_wanted(p) &&
			       core_.lease_valid(fan_outs_.at(p.fan_out_id).volume_id, p.host_id);
		};
		int64_t oldest = now;
		for (uint64_t id : s.pushes)
			if (const Push &p = pushes_.at(id); overdue_for(p))
				oldest = std::min(oldest, p.since_ms);
		for (uint64_t id : s.queued)
			if (const Push &p = pushes_.at(id); overdue_for(p))
				oldest = std::min(oldest, p.since_ms);
		if (now - oldest < overdue)
			continue;
		core_.stats.push_timeouts++;
		log_warn_rl("conn %llu (%s, host %016llx): a push not acked after %lld ms "
			    "while the host holds its lease (%zu sent, %zu held back, "
			    "%u credits): disconnecting",
			    (unsigned long long)conn, s.peer.address.c_str(),
			    (unsigned long long)s.peer.host_id, (long long)(now - oldest),
			    s.pushes.size(), s.queued.size(), s.peer.push_credits);
		// Nothing it sends counts any more (a RENEW in particular), as
		// with the transport once it closes the connection.
		s.closing = true;
		cut.push_back(conn);
	}
	for (ConnId conn : cut) {
		core_.leases.detach(conn);
		core_.net->disconnect(conn);
	}
	account_owing();
}

void Pushes::owes(uint64_t host_id)
{
	Owing &o = owing_[host_id];

	if (o.since_ms < 0)
		o.since_ms = core_.now();
}

bool Pushes::fenced(uint64_t host_id) const
{
	auto it = owing_.find(host_id);

	return it != owing_.end() && it->second.fenced;
}

// Why by host id and not by connection: a host that reconnects gets a new
// session (and its pushes start over there), but owes what it owed. Why
// only while it holds a valid lease: a host cut off from the node, whose
// lease lapses, was not asked in time, and one that opens again after the
// lapse dropped its cache; it owes from then on. A stretch ends at the
// tick that finds it over, but counts no further than the lease's expiry,
// so a host that stopped renewing owes less than a lease period: only one
// that renews (or opens again) and does not ack gets to one.
void Pushes::account_owing()
{
	const int64_t now = core_.now();
	const int64_t overdue = int64_t(core_.opts.lease_ms) + int64_t(core_.opts.drift_margin_ms);
	// Host -> the latest expiry of its leases on volumes waiting for it.
	std::map<uint64_t, int64_t> waiting;

	for (const auto &[id, f] : fan_outs_)
		for (uint64_t host : f.hosts) {
			const Lease *l = core_.leases.find({f.volume_id, host});
			auto [it, fresh] = waiting.try_emplace(host, INT64_MIN);
			if (l)
				it->second = std::max(it->second, l->expires_ms);
		}
	for (auto it = owing_.begin(); it != owing_.end();) {
		const uint64_t host = it->first;
		Owing &o = it->second;
		auto w = waiting.find(host);

		if (w == waiting.end()) {
			// Acked, or its leases went: it owes nothing.
			if (o.fenced)
				log_info_rl("host %016llx: no fan-out waits for it any more: "
					    "fence lifted", (unsigned long long)host);
			it = owing_.erase(it);
			continue;
		}
		const bool valid = w->second > now;
		if (o.since_ms >= 0 && !valid) {
			o.owed_ms += std::max<int64_t>(0, std::min(now, w->second) - o.since_ms);
			o.since_ms = -1;
		} else if (o.since_ms < 0 && valid) {
			o.since_ms = now;
		}
		const int64_t owed = o.owed_ms + (o.since_ms >= 0 ? now - o.since_ms : 0);
		// Only one that holds its lease now: a host that opens again
		// after a lapse, an ack still owed, is to ack at once.
		if (!o.fenced && valid && owed >= overdue) {
			o.fenced = true;
			core_.stats.fences++;
			log_warn_rl("host %016llx: owes an invalidation ack for %lld ms while "
				    "holding its lease, across its connections: fenced (no "
				    "RENEW nor OPEN until no fan-out waits for it)",
				    (unsigned long long)host, (long long)owed);
		}
		++it;
	}
}

void Pushes::settle(uint64_t fan_out_id, uint64_t host_id, const Settled &how)
{
	auto it = fan_outs_.find(fan_out_id);

	if (it == fan_outs_.end() || !it->second.hosts.erase(host_id))
		return;
	if (it->second.settled)
		it->second.settled(host_id, how);
	if (it->second.hosts.empty()) {
		auto done = std::move(it->second.done);
		fan_outs_.erase(it);
		done();
	}
}

bool Pushes::acked(Session &s, uint64_t req_id, const Settled &how)
{
	auto it = pushes_.find(req_id);

	if (it == pushes_.end() || !s.pushes.erase(req_id))
		return false;
	const Push p = it->second;
	pushes_.erase(it);
	core_.stats.push_acks++;
	core_.stats.push_ack_us.observe(uint64_t(mono_us() - p.sent_us));
	// The host gave its credit back (it counts the push as done before it
	// sends the ack): the next push held back for it goes now.
	send_pushes(s);
	settle(p.fan_out_id, p.host_id, how);
	return true;
}

void Pushes::forget(Session &s)
{
	// Pushes in flight to it will never be acked, and those held back will
	// never be sent: the fan-outs wait for the lease to expire instead
	// (tick()), or for the host to open the volume again (lease_granted()).
	for (uint64_t push : s.pushes)
		pushes_.erase(push);
	for (uint64_t push : s.queued)
		pushes_.erase(push);
}

// A host that reconnects and opens again renews its lease, so a fan-out
// still waiting for it would wait for ever; and the push it had was lost
// with the old connection, while the host may still hold the old entry in
// its cache. It gets the push again, on the new connection, once the
// volume is open there (within its push credits, behind what is queued
// already; not twice on one connection).
void Pushes::lease_granted(uint64_t volume_id, Session &s)
{
	const uint64_t host = s.peer.host_id;
	std::vector<uint64_t> untracked;

	for (auto &[fid, f] : fan_outs_) {
		if (f.volume_id != volume_id || !f.hosts.count(host))
			continue;
		// TRACK only goes to version 2: on version 1 the host is not
		// tracked, and moves copy what it may have written.
		if (f.inv.reason == MDR_INVAL_TRACK && s.peer.version < 2)
			untracked.push_back(fid);
		else {
			push(fid, host, s);
			owes(host);
		}
	}
	for (uint64_t fid : untracked)
		settle(fid, host, Settled{});
}

void Pushes::settle_host(uint64_t volume_id, uint64_t host_id,
			 const std::function<bool(const FanOut &)> &which)
{
	std::vector<uint64_t> ids;

	for (auto &[id, f] : fan_outs_)
		if (f.volume_id == volume_id && f.hosts.count(host_id) && which(f))
			ids.push_back(id);
	for (uint64_t id : ids)
		settle(id, host_id, Settled{});
}

// host_id's lease on the volume ran out: its host sends no new IO, so the
// fan-outs that do not wait for IO stop waiting for it.
void Pushes::lease_lapsed(uint64_t volume_id, uint64_t host_id)
{
	settle_host(volume_id, host_id,
		    [](const FanOut &f) { return !waits_for_io(f.inv.reason); });
}

// No IO of that host is left: no fan-out waits for it.
void Pushes::lease_gone(uint64_t volume_id, uint64_t host_id)
{
	settle_host(volume_id, host_id, [](const FanOut &) { return true; });
}

} // namespace mdnode
