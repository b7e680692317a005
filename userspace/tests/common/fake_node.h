// SPDX-License-Identifier: GPL-2.0
//
// fake_node.h - an mdnode for mdctl's storage-node commands: volumes,
// devices and registered hosts in maps, the admin key it accepts, the
// accept of its connections, and the requests it got.
#ifndef MDR_TESTS_FAKE_NODE_H
#define MDR_TESTS_FAKE_NODE_H

#include <algorithm>
#include <cerrno>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lib/auth/auth.h"
#include "lib/wire/wire.h"
#include "mdctl/host.h"

namespace mdr::test {

class FakeNode {
public:
	struct Vol {
		wire::Volume vol;
		std::vector<wire::DevExtents> devs;
		std::map<uint64_t, uint32_t> placement;	// extent index -> device (for MOVE)
	};

	std::string key = "0123456789abcdef";		// the admin key it accepts
	int connect_error = 0;				// e.g. -ECONNREFUSED
	std::map<uint16_t, int> errors;			// opcode -> -errno of its reply
	std::map<std::string, int> create_errors;	// name -> -errno of VOL_CREATE
	std::map<std::string, Vol> volumes;		// by name
	std::vector<wire::Device> devices;		// ascending ids
	size_t page = 2;				// elements per list page
	uint64_t next_id = 1;

	wire::NodeStatsRep stats;			// the move and auth counters it reports
	wire::GroupStatusRep group_status;		// GROUP_STATUS's answer
	// Once GROUP_STATUS answered, the next of these becomes its answer
	// (the last one stays): a group that changes as it is asked.
	std::deque<wire::GroupStatusRep> group_status_next;
	std::vector<wire::Body> replica_changes;	// every REPLICA_ADD and _REMOVE
	std::optional<uint64_t> move_busy_at;		// a MOVE of this extent: EBUSY

	// The accept of every connection: a fixed nonce, this build's wire version.
	wire::ConnRep accept{.version = MDR_WIRE_VERSION,
			     .nonce = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}};
	std::map<uint64_t, wire::Host> hosts;		// the registry, by host id
	// The secret of each host, as HOST_ADD carried it, opened the way
	// mdnode does (with the admin key and the accept's nonce).
	std::map<uint64_t, std::vector<uint8_t>> host_keys;
	std::vector<wire::HostAddReq> host_adds;	// every HOST_ADD, as received

	// What it saw: every connection's options, every request's opcode,
	// the timeout of each call (0: the session's), every MOVE.
	std::vector<mdctl::NodeOptions> connections;
	std::vector<uint16_t> requests;
	std::vector<int> timeouts;
	std::vector<wire::MoveReq> moves;
	std::vector<size_t> pipelined;			// requests of each call_many()

	// Addresses at which a replica that does not lead answers: changes
	// get MDR_ST_NOT_LEADER naming the leader given (reads are answered
	// there, from the same maps); every NOT_LEADER, by address.
	std::map<std::string, wire::Leader> followers;
	std::vector<std::string> not_leader;

	mdr::Result<std::unique_ptr<mdctl::NodeSession>>
	connect(const mdctl::NodeOptions &opts, std::span<const uint8_t> k)
	{
		connections.push_back(opts);
		if (connect_error)
			return mdr::Error(connect_error, "connecting to " + opts.addr);
		if (std::string(k.begin(), k.end()) != key)
			return mdr::Error(-EPERM, "authentication: MDR_ST_PERM");
		return std::unique_ptr<mdctl::NodeSession>(std::make_unique<Session>(*this, opts.addr));
	}

	std::span<const uint8_t> key_bytes() const
	{
		return {reinterpret_cast<const uint8_t *>(key.data()), key.size()};
	}

	void add_volume(const std::string &name, uint64_t size, uint32_t tenant = 0,
			std::vector<wire::DevExtents> devs = {})
	{
		Vol v;
		v.vol.volume_id = next_id++;
		v.vol.size = size;
		v.vol.tenant = tenant;
		v.vol.name = name;
		for (const auto &d : devs)
			v.vol.allocated += d.extents;
		v.devs = std::move(devs);
		volumes[name] = v;
	}

private:
	class Session final : public mdctl::NodeSession {
	public:
		Session(FakeNode &node, std::string addr) : node_(node), addr_(std::move(addr)) {}

		mdr::Result<wire::Msg> call(const wire::Body &request, int timeout_ms) override
		{
			node_.timeouts.push_back(timeout_ms);
			if (auto f = node_.followers.find(addr_);
			    f != node_.followers.end() && leader_only(request)) {
				node_.not_leader.push_back(addr_);
				redirect_ = f->second;
				return mdr::Error(-EAGAIN, "MDR_ST_NOT_LEADER: " +
								   wire::leader_text(f->second));
			}
			return std::visit([&](const auto &req) { return node_.answer(req); },
					  request);
		}

		std::optional<wire::Leader> take_redirect() override
		{
			return std::exchange(redirect_, std::nullopt);
		}

		// Answered in order, as mdnode answers what arrives together.
		std::vector<mdr::Result<wire::Msg>>
		call_many(std::span<const wire::Body> requests, int timeout_ms) override
		{
			node_.pipelined.push_back(requests.size());
			std::vector<mdr::Result<wire::Msg>> out;
			for (const wire::Body &r : requests)
				out.push_back(call(r, timeout_ms));
			return out;
		}

		const wire::ConnRep &accepted() const override { return node_.accept; }

		std::span<const uint8_t> admin_key() const override { return node_.key_bytes(); }

	private:
		static bool leader_only(const wire::Body &b)
		{
			return std::holds_alternative<wire::VolCreateReq>(b) ||
			       std::holds_alternative<wire::VolDeleteReq>(b) ||
			       std::holds_alternative<wire::VolResizeReq>(b) ||
			       std::holds_alternative<wire::MoveReq>(b) ||
			       std::holds_alternative<wire::DrainReq>(b) ||
			       std::holds_alternative<wire::HostAddReq>(b) ||
			       std::holds_alternative<wire::HostRemoveReq>(b) ||
			       std::holds_alternative<wire::ReplicaAddReq>(b) ||
			       std::holds_alternative<wire::ReplicaRemoveReq>(b);
		}

		FakeNode &node_;
		const std::string addr_;
		std::optional<wire::Leader> redirect_;
	};

	template <typename Rep>
	static wire::Msg reply(Rep rep)
	{
		wire::Msg m;
		m.hdr.opcode = Rep::opcode;
		m.body = std::move(rep);
		return m;
	}

	template <typename Rep>
	static Rep volume_reply(const Vol &v)
	{
		Rep rep;
		rep.vol = v.vol;
		rep.devs = v.devs;
		return rep;
	}

	template <typename Req>
	mdr::Result<wire::Msg> answer(const Req &req)
	{
		requests.push_back(Req::opcode);
		if (auto e = errors.find(Req::opcode); e != errors.end())
			return mdr::Error(e->second, "MDR_ST_" + std::to_string(-e->second));
		return handle(req);
	}

	// Not a request (its opcode is a field, not the type's).
	mdr::Result<wire::Msg> answer(const wire::ErrorRep &)
	{
		return mdr::Error(-EPERM, "MDR_ST_PERM");
	}

	mdr::Result<wire::Msg> handle(const wire::VolCreateReq &req)
	{
		if (volumes.contains(req.name))
			return mdr::Error(-EEXIST, "MDR_ST_EXIST");
		if (auto e = create_errors.find(req.name); e != create_errors.end())
			return mdr::Error(e->second, "MDR_ST_" + std::to_string(-e->second));
		Vol v;
		v.vol.volume_id = next_id++;
		v.vol.size = req.size;
		v.vol.extent_shift = req.extent_shift ? req.extent_shift
						      : MDR_WIRE_EXTENT_SHIFT_DEFAULT;
		v.vol.tenant = req.tenant;
		v.vol.name = req.name;
		volumes[req.name] = v;
		return reply(volume_reply<wire::VolCreateRep>(v));
	}

	mdr::Result<wire::Msg> handle(const wire::VolDeleteReq &req)
	{
		auto v = volumes.find(req.name);
		if (v == volumes.end())
			return mdr::Error(-ENOENT, "MDR_ST_NOENT");
		if (v->second.vol.open_count)
			return mdr::Error(-EBUSY, "MDR_ST_BUSY");
		volumes.erase(v);
		return reply(wire::VolDeleteRep{});
	}

	mdr::Result<wire::Msg> handle(const wire::VolInfoReq &req)
	{
		auto v = volumes.find(req.name);
		if (v == volumes.end())
			return mdr::Error(-ENOENT, "MDR_ST_NOENT");
		return reply(volume_reply<wire::VolInfoRep>(v->second));
	}

	mdr::Result<wire::Msg> handle(const wire::VolResizeReq &req)
	{
		auto v = volumes.find(req.name);
		if (v == volumes.end())
			return mdr::Error(-ENOENT, "MDR_ST_NOENT");
		v->second.vol.size = req.size;
		return reply(volume_reply<wire::VolResizeRep>(v->second));
	}

	// Pages of @page elements in id order, from the cursor on.
	mdr::Result<wire::Msg> handle(const wire::VolListReq &req)
	{
		std::map<uint64_t, wire::Volume> by_id;
		for (const auto &[name, v] : volumes)
			by_id[v.vol.volume_id] = v.vol;
		wire::VolListRep rep;
		for (auto it = by_id.lower_bound(req.cursor); it != by_id.end(); ++it) {
			if (rep.vols.size() == page) {
				rep.next = it->first;
				break;
			}
			rep.vols.push_back(it->second);
		}
		return reply(rep);
	}

	mdr::Result<wire::Msg> handle(const wire::DevListReq &req)
	{
		wire::DevListRep rep{.extended = accept.version >= wire::kDeviceStateVersion};
		for (const wire::Device &d : devices) {
			if (d.dev_id < req.cursor)
				continue;
			if (rep.devs.size() == page) {
				rep.next = d.dev_id;
				break;
			}
			rep.devs.push_back(d);
		}
		return reply(rep);
	}

	mdr::Result<wire::Msg> handle(const wire::GroupStatusReq &)
	{
		wire::GroupStatusRep rep = group_status;

		if (!group_status_next.empty()) {
			group_status = std::move(group_status_next.front());
			group_status_next.pop_front();
		}
		return reply(rep);
	}

	// Taken as they come; what follows is group_status_next's to show.
	template <uint16_t Op>
	mdr::Result<wire::Msg> handle(const wire::ReplicaChangeReq<Op> &req)
	{
		replica_changes.push_back(req);
		return reply(wire::HeaderAlone<Op, true>{});
	}

	mdr::Result<wire::Msg> handle(const wire::NodeStatsReq &)
	{
		wire::NodeStatsRep rep;
		rep.boot_id = 0xb007;
		rep.uptime_ms = 1;
		rep.connections = 2;
		rep.volumes = volumes.size();
		rep.requests = 3;
		rep.errors = 4;
		rep.bad_messages = 5;
		rep.journal_records = 6;
		rep.journal_bytes = UINT64_MAX;		// exact in JSON
		rep.journal_syncs = 8;
		rep.invalidations = 9;
		rep.lease_expiries = 10;
		rep.moves_active = stats.moves_active;
		rep.moves_done = stats.moves_done;
		rep.moves_failed = stats.moves_failed;
		rep.move_bytes = stats.move_bytes;
		rep.stall_max_us = stats.stall_max_us;
		rep.stall_total_us = stats.stall_total_us;
		rep.push_timeouts = 11;
		rep.precopy_bytes = 12;
		rep.freeze_bytes = 13;
		rep.auth_failures = stats.auth_failures;
		rep.hosts = stats.hosts;
		rep.conn_refused = stats.conn_refused;
		rep.fences = stats.fences;
		return reply(rep);
	}

	bool has_device(uint32_t id) const
	{
		for (const wire::Device &d : devices)
			if (d.dev_id == id)
				return true;
		return false;
	}

	// Moves one extent the way mdnode reports it: sectors from the index,
	// generation 4, a stall of 1000 + index us; counts it in stats.
	wire::MovedExtent move_one(Vol &v, uint64_t index, uint32_t to)
	{
		const uint64_t sectors = (uint64_t{1} << v.vol.extent_shift) >> 9;
		wire::MovedExtent x{.index = index, .old_pstart = index * sectors,
				    .new_pstart = (index + 1000) * sectors,
				    .old_dev = v.placement[index], .new_dev = to,
				    .generation = 4, .stall_us = uint32_t(1000 + index)};
		v.placement[index] = to;
		stats.moves_done++;
		stats.move_bytes += uint64_t{1} << v.vol.extent_shift;
		stats.stall_max_us = std::max<uint64_t>(stats.stall_max_us, x.stall_us);
		stats.stall_total_us += x.stall_us;
		return x;
	}

	// Checked as a whole like mdnode: the volume by id or name, the range
	// within it, every extent mapped and not on the target; then moved.
	mdr::Result<wire::Msg> handle(const wire::MoveReq &req)
	{
		moves.push_back(req);
		Vol *v = nullptr;
		for (auto &[name, vol] : volumes)
			if (req.flags & MDR_MOVE_F_BY_NAME ? name == req.name
							   : vol.vol.volume_id == req.volume_id)
				v = &vol;
		if (!v || !has_device(req.to_dev))
			return mdr::Error(-ENOENT, "MDR_ST_NOENT");
		const uint64_t extents = ((v->vol.size - 1) >> v->vol.extent_shift) + 1;
		if (req.count < 1 || req.count > MDR_WIRE_MOVE_MAX || req.first >= extents ||
		    req.count > extents - req.first)
			return mdr::Error(-EINVAL, "MDR_ST_INVAL");
		for (uint64_t i = req.first; i < req.first + req.count; i++) {
			auto p = v->placement.find(i);
			if (p == v->placement.end() || p->second == req.to_dev)
				return mdr::Error(-EINVAL, "MDR_ST_INVAL");
			if (move_busy_at == i)
				return mdr::Error(-EBUSY, "MDR_ST_BUSY");
		}
		wire::MoveRep rep;
		rep.volume_id = v->vol.volume_id;
		for (uint64_t i = req.first; i < req.first + req.count; i++) {
			rep.extents.push_back(move_one(*v, i, req.to_dev));
			rep.bytes += uint64_t{1} << v->vol.extent_shift;
			rep.stall_max_us = std::max<uint64_t>(rep.stall_max_us,
							      rep.extents.back().stall_us);
			rep.stall_total_us += rep.extents.back().stall_us;
		}
		return reply(rep);
	}

	// Every extent on dev_id to to_dev, or to the first other device.
	mdr::Result<wire::Msg> handle(const wire::DrainReq &req)
	{
		if (!has_device(req.dev_id) || (req.to_dev && !has_device(req.to_dev)))
			return mdr::Error(-ENOENT, "MDR_ST_NOENT");
		uint32_t to = req.to_dev;
		for (const wire::Device &d : devices)
			if (!to && d.dev_id != req.dev_id)
				to = d.dev_id;
		if (!to)
			return mdr::Error(-ENOSPC, "MDR_ST_NOSPC");
		wire::DrainRep rep;
		rep.dev_id = req.dev_id;
		for (auto &[name, v] : volumes)
			for (auto &[index, dev] : v.placement) {
				if (dev != req.dev_id)
					continue;
				if (move_busy_at == index) {
					rep.remaining++;
					continue;
				}
				wire::MovedExtent x = move_one(v, index, to);
				rep.moved++;
				rep.bytes += uint64_t{1} << v.vol.extent_shift;
				rep.stall_max_us = std::max<uint64_t>(rep.stall_max_us, x.stall_us);
				rep.stall_total_us += x.stall_us;
			}
		return reply(rep);
	}

	// As mdnode: the key opened with the admin key and this connection's
	// nonce, then the registry's rules.
	mdr::Result<wire::Msg> handle(const wire::HostAddReq &req)
	{
		host_adds.push_back(req);
		auto secret = mdr::open_host_add(key_bytes(), accept.nonce, req);
		if (!secret.ok())
			return mdr::Error(secret.error(), secret.message());
		const bool replace = req.flags & MDR_HOST_ADD_F_REPLACE;
		auto known = hosts.find(req.host_id);
		if (!req.host_id || !req.tenant)
			return mdr::Error(-EINVAL, "MDR_ST_INVAL");
		if (!replace && known != hosts.end())
			return mdr::Error(-EEXIST, "MDR_ST_EXIST");
		if (replace && known == hosts.end())
			return mdr::Error(-ENOENT, "MDR_ST_NOENT");
		if (replace && known->second.tenant != req.tenant)
			return mdr::Error(-EINVAL, "MDR_ST_INVAL");
		if (!replace)
			hosts[req.host_id] = {.host_id = req.host_id, .tenant = req.tenant};
		host_keys[req.host_id] = std::move(secret).value();
		return reply(wire::HostAddRep{});
	}

	mdr::Result<wire::Msg> handle(const wire::HostRemoveReq &req)
	{
		if (!hosts.erase(req.host_id))
			return mdr::Error(-ENOENT, "MDR_ST_NOENT");
		host_keys.erase(req.host_id);
		return reply(wire::HostRemoveRep{});
	}

	mdr::Result<wire::Msg> handle(const wire::HostListReq &req)
	{
		wire::HostListRep rep;
		for (auto it = hosts.lower_bound(req.cursor); it != hosts.end(); ++it) {
			if (rep.hosts.size() == page) {
				rep.next = it->first;
				break;
			}
			rep.hosts.push_back(it->second);
		}
		return reply(rep);
	}

	// Anything else an admin does not send.
	template <typename Other>
	mdr::Result<wire::Msg> handle(const Other &)
	{
		return mdr::Error(-EPERM, "MDR_ST_PERM");
	}
};

} // namespace mdr::test

#endif // MDR_TESTS_FAKE_NODE_H
