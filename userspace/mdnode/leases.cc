// SPDX-License-Identifier: GPL-2.0
//
// leases.cc - see leases.h.
#include "mdnode/leases.h"

namespace mdnode {

const Lease *Leases::find(LeaseKey key) const
{
	auto it = leases_.find(key);

	return it == leases_.end() ? nullptr : &it->second;
}

void Leases::index(LeaseKey key, ConnId from, ConnId to)
{
	if (from == to)
		return;
	if (from) {
		auto it = by_conn_.find(from);
		if (it != by_conn_.end() && it->second.erase(key) && it->second.empty())
			by_conn_.erase(it);
	}
	if (to)
		by_conn_[to].insert(key);
}

void Leases::schedule(LeaseKey key, const Lease &l)
{
	heap_.push({l.lapsed ? l.expires_ms + io_hold_ms_ : l.expires_ms, key, l.seq});
}

void Leases::grant(LeaseKey key, ConnId conn, int64_t expires_ms)
{
	auto [it, fresh] = leases_.try_emplace(key, Lease{.expires_ms = expires_ms});
	const ConnId old = fresh ? 0 : it->second.conn;

	if (!fresh && it->second.lapsed)
		lapsed_--;
	it->second = Lease{.expires_ms = expires_ms, .conn = conn, .seq = next_seq_++};
	index(key, old, conn);
	schedule(key, it->second);
}

void Leases::renew(LeaseKey key, ConnId conn, int64_t expires_ms)
{
	Lease &l = leases_.at(key);

	index(key, l.conn, conn);
	l.expires_ms = expires_ms;
	l.conn = conn;
	l.seq = next_seq_++;
	schedule(key, l);
}

bool Leases::erase(LeaseKey key)
{
	auto it = leases_.find(key);

	if (it == leases_.end())
		return false;
	index(key, it->second.conn, 0);
	lapsed_ -= it->second.lapsed;
	leases_.erase(it);	// its deadlines go stale
	return true;
}

std::vector<uint64_t> Leases::erase_volume(uint64_t volume_id)
{
	std::vector<uint64_t> hosts;

	for (const auto &[key, l] : on_volume(volume_id))
		hosts.push_back(key.host_id);
	for (uint64_t host : hosts)
		erase({volume_id, host});
	return hosts;
}

void Leases::detach(ConnId conn)
{
	auto node = by_conn_.extract(conn);

	if (node.empty())
		return;
	for (const LeaseKey &key : node.mapped())
		leases_.at(key).conn = 0;
}

Leases::Range Leases::on_volume(uint64_t volume_id) const
{
	return {leases_.lower_bound({volume_id, 0}),
		leases_.upper_bound({volume_id, UINT64_MAX})};
}

std::vector<LeaseKey> Leases::of_conn(ConnId conn) const
{
	auto it = by_conn_.find(conn);

	if (it == by_conn_.end())
		return {};
	return {it->second.begin(), it->second.end()};
}

Leases::Expired Leases::expire(int64_t now)
{
	Expired out;

	while (!heap_.empty() && heap_.top().at <= now) {
		const Deadline d = heap_.top();

		heap_.pop();
		auto it = leases_.find(d.key);
		if (it == leases_.end() || it->second.seq != d.seq)
			continue;	// erased, or renewed since
		Lease &l = it->second;

		if (!l.lapsed && l.expires_ms <= now) {
			l.lapsed = true;
			lapsed_++;
			out.lapsed.emplace_back(d.key, l.conn);
		}
		if (l.lapsed && l.expires_ms + io_hold_ms_ <= now) {
			out.gone.push_back(d.key);
			index(d.key, l.conn, 0);
			lapsed_--;
			leases_.erase(it);
			continue;
		}
		schedule(d.key, l);
	}
	return out;
}

uint32_t Leases::held_by(uint64_t host_id) const
{
	uint32_t n = 0;

	for (const auto &[key, l] : leases_)
		n += key.host_id == host_id;
	return n;
}

} // namespace mdnode
