// SPDX-License-Identifier: GPL-2.0
//
// fake_node.h - an mdnode for mdctl's storage-node commands: volumes and
// devices in maps, the admin key it accepts, and the requests it got.
#ifndef MDR_TESTS_FAKE_NODE_H
#define MDR_TESTS_FAKE_NODE_H

#include <cerrno>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/wire.h"
#include "mdctl/host.h"

namespace mdr::test {

class FakeNode {
public:
	struct Vol {
		wire::Volume vol;
		std::vector<wire::DevExtents> devs;
	};

	std::string key = "0123456789abcdef";		// the admin key it accepts
	int connect_error = 0;				// e.g. -ECONNREFUSED
	std::map<uint16_t, int> errors;			// opcode -> -errno of its reply
	std::map<std::string, Vol> volumes;		// by name
	std::vector<wire::Device> devices;		// ascending ids
	size_t page = 2;				// elements per list page
	uint64_t next_id = 1;

	// What it saw: every connection's options, every request's opcode.
	std::vector<mdctl::NodeOptions> connections;
	std::vector<uint16_t> requests;

	mdr::Result<std::unique_ptr<mdctl::NodeSession>>
	connect(const mdctl::NodeOptions &opts, std::span<const uint8_t> k)
	{
		connections.push_back(opts);
		if (connect_error)
			return mdr::Error(connect_error, "connecting to " + opts.addr);
		if (std::string(k.begin(), k.end()) != key)
			return mdr::Error(-EPERM, "authentication: MDR_ST_PERM");
		return std::unique_ptr<mdctl::NodeSession>(std::make_unique<Session>(*this));
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
		explicit Session(FakeNode &node) : node_(node) {}

		mdr::Result<wire::Msg> call(const wire::Body &request) override
		{
			return std::visit([&](const auto &req) { return node_.answer(req); },
					  request);
		}

	private:
		FakeNode &node_;
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
		wire::DevListRep rep;
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
