// SPDX-License-Identifier: GPL-2.0
//
// admin_rpc.cc - see admin_rpc.h.
#include "mdnode/admin_rpc.h"

#include <cerrno>
#include <utility>
#include <vector>

#include "lib/auth/auth.h"
#include "mdnode/log.h"

namespace mdnode {

namespace {

MDNODE_LOG_SUBSYSTEM("node");

namespace wire = mdr::wire;

} // namespace

void AdminRpc::do_auth(Session &s, uint64_t req_id, const wire::AuthReq &r)
{
	if (s.peer.role != MDR_ROLE_ADMIN)
		return core_.reply_error(s.peer.id, req_id, MDR_OP_AUTH, -EPERM);
	if (!mdr::mac_equal(mdr::admin_mac(core_.opts.admin_key, s.peer.nonce, s.peer.host_id),
			    r.mac)) {
		core_.stats.auth_failures++;
		log_warn_rl("admin %s: authentication failed", s.peer.address.c_str());
		core_.reply_error(s.peer.id, req_id, MDR_OP_AUTH, -EPERM);
		core_.net->disconnect(s.peer.id);
		return;
	}
	s.authenticated = true;
	core_.reply(s.peer.id, req_id, wire::AuthRep{});
}

wire::Volume AdminRpc::describe(const Volume &v) const
{
	return wire::Volume{
		.volume_id = v.id,
		.size = v.size,
		.allocated = v.allocated,
		.extent_shift = v.extent_shift,
		.tenant = v.tenant,
		.open_count = core_.open_count(v.id),
		.name = v.name,
	};
}

wire::VolumeReply AdminRpc::volume_reply(const Volume &v) const
{
	return wire::VolumeReply{.vol = describe(v), .devs = core_.store.extents_by_device(v)};
}

void AdminRpc::do_create(Session &s, uint64_t req_id, const wire::VolCreateReq &r)
{
	const ConnId conn = s.peer.id;
	auto prep = core_.store.prepare_create(r.name, r.size, r.extent_shift, r.tenant);

	if (!prep.ok())
		return core_.reply_error(conn, req_id, MDR_OP_VOL_CREATE, prep.error());
	core_.change(std::move(prep.value()), [this, conn, req_id](int err, const Applied *applied) {
		const Volume *v = err ? nullptr : core_.store.volume(applied->volume_id);
		if (!v)
			return core_.reply_error(conn, req_id, MDR_OP_VOL_CREATE, err ? err : -EIO);
		log_info("volume %llu '%s' created", (unsigned long long)v->id, v->name.c_str());
		wire::VolCreateRep rep;
		static_cast<wire::VolumeReply &>(rep) = volume_reply(*v);
		core_.reply(conn, req_id, rep);
	});
}

void AdminRpc::drop_leases(uint64_t volume_id)
{
	const std::vector<uint64_t> hosts = core_.leases.erase_volume(volume_id);

	for (auto &[id, s] : core_.sessions)
		s.opened.erase(volume_id);
	for (uint64_t host : hosts)
		core_.lease_gone(volume_id, host);
}

// Delete and resize replace or free the volume's table and its extents:
// refused while any host holds a lease, since hosts may have IO in flight
// to the extents and READ the table. done(id) runs once the change is
// durable and applied, and the table is no longer registered.
void AdminRpc::change_unopened(ConnId conn, uint64_t req_id, uint16_t opcode,
			   const std::string &name,
			   const std::function<mdr::Result<Change>(uint64_t id)> &prepare,
			   std::function<void(uint64_t id)> done)
{
	const Volume *v = core_.store.volume(name);

	if (!v)
		return core_.reply_error(conn, req_id, opcode, -ENOENT);
	// Until online delete and resize push the change to hosts, they close
	// the volume first (or their leases lapse, and their IO is waited out).
	// Leases from before a start are unknown: waited out as a whole.
	if (core_.from_before_start(v->id) && core_.in_restart_grace())
		return core_.reply_error(conn, req_id, opcode, -EBUSY);
	const int64_t now = core_.now();
	for (const auto &[key, lease] : core_.leases.on_volume(v->id))
		if (core_.io_possible(lease, now))
			return core_.reply_error(conn, req_id, opcode, -EBUSY);
	const uint64_t id = v->id;
	auto prep = prepare(id);
	if (!prep.ok())
		return core_.reply_error(conn, req_id, opcode, prep.error());
	core_.change(std::move(prep.value()),
	       [this, conn, req_id, opcode, id, done = std::move(done)](int err, const Applied *) {
		if (err)
			return core_.reply_error(conn, req_id, opcode, err);
		// Nobody READs the old table once it is deregistered; it is
		// unmapped when the Applied that holds it goes.
		core_.net->forget_table(id);
		done(id);
	});
}

void AdminRpc::do_delete(Session &s, uint64_t req_id, const wire::VolDeleteReq &r)
{
	const ConnId conn = s.peer.id;

	change_unopened(conn, req_id, MDR_OP_VOL_DELETE, r.name,
			[this](uint64_t id) { return core_.store.prepare_delete(id); },
			[this, conn, req_id](uint64_t id) {
		drop_leases(id);
		log_info("volume %llu deleted", (unsigned long long)id);
		core_.reply(conn, req_id, wire::VolDeleteRep{});
	});
}

void AdminRpc::do_resize(Session &s, uint64_t req_id, const wire::VolResizeReq &r)
{
	const ConnId conn = s.peer.id;

	change_unopened(conn, req_id, MDR_OP_VOL_RESIZE, r.name,
			[this, &r](uint64_t id) { return core_.store.prepare_resize(id, r.size); },
			[this, conn, req_id](uint64_t id) {
		wire::VolResizeRep rep;
		static_cast<wire::VolumeReply &>(rep) = volume_reply(*core_.store.volume(id));
		core_.reply(conn, req_id, rep);
	});
}

void AdminRpc::do_info(Session &s, uint64_t req_id, const wire::VolInfoReq &r)
{
	const Volume *v = core_.store.volume(r.name);

	if (!v) {
		// A replica that does not lead may be behind: a volume created
		// moments ago is not in its store until its commit index gets
		// there. A client that follows a leader (version 5) is sent to
		// the leader it knows, whose answer, found or not, is the
		// group's. Without one (an election, or this replica about to
		// lead), and to an older client, this store answers: a name
		// nobody made is not held up for an election.
		std::optional<wire::Leader> to;
		if (core_.repl && !core_.accepting() && s.peer.version >= wire::kGroupVersion)
			to = core_.repl->redirect();
		if (to && to->known())
			return core_.reply_error(s.peer.id, req_id,
						 wire::ErrorRep{.opcode = MDR_OP_VOL_INFO,
								.status = MDR_ST_NOT_LEADER,
								.leader = *to});
		return core_.reply_error(s.peer.id, req_id, MDR_OP_VOL_INFO, -ENOENT);
	}
	wire::VolInfoRep rep;
	static_cast<wire::VolumeReply &>(rep) = volume_reply(*v);
	core_.reply(s.peer.id, req_id, rep);
}

void AdminRpc::do_vol_list(Session &s, uint64_t req_id, const wire::VolListReq &r)
{
	// As many as the client receives: header, cursor and count, then 104
	// bytes a volume.
	const size_t room = (s.peer.max_msg - sizeof(mdr_wire_vol_list_rep)) /
			    sizeof(mdr_wire_volume);
	wire::VolListRep rep;

	VolumePage page = core_.store.list_volumes(r.cursor, room);
	for (const Volume *v : page.volumes)
		rep.vols.push_back(describe(*v));
	rep.next = page.next;
	core_.reply(s.peer.id, req_id, rep);
}

void AdminRpc::do_dev_list(Session &s, uint64_t req_id, const wire::DevListReq &r)
{
	// Older peers get the devices configured, in the form they know.
	wire::DevListRep rep{.extended = s.peer.version >= wire::kDeviceStateVersion};
	const size_t room = (s.peer.max_msg - sizeof(mdr_wire_dev_list_rep)) /
			    (rep.extended ? sizeof(mdr_wire_device_ext) : sizeof(mdr_wire_device));

	for (const wire::Device &d : rep.extended ? core_.store.listed_devices()
						  : core_.store.devices()) {
		if (d.dev_id < r.cursor)
			continue;
		if (rep.devs.size() == room) {
			rep.next = d.dev_id;
			break;
		}
		rep.devs.push_back(d);
	}
	core_.reply(s.peer.id, req_id, rep);
}

void AdminRpc::do_group_status(Session &s, uint64_t req_id)
{
	wire::GroupStatusRep rep = core_.repl ? core_.repl->group_status()
					      : wire::GroupStatusRep{};

	// Before version 6 the byte was reserved: that peer refuses it set.
	if (s.peer.version < wire::kMembershipVersion)
		for (wire::Replica &r : rep.replicas)
			r.membership = MDR_MEMBER_VOTER;
	// Where each replica serves hosts: version 7's longer elements.
	rep.extended = s.peer.version >= wire::kEpochVersion;
	if (!rep.extended)
		for (wire::Replica &r : rep.replicas) {
			r.host_port = 0;
			r.host_family = MDR_FAMILY_NONE;
			r.host_addr = {};
		}
	core_.reply(s.peer.id, req_id, rep);
}

void AdminRpc::do_replica_add(Session &s, uint64_t req_id, const wire::ReplicaAddReq &r)
{
	change_membership(s, req_id, MDR_OP_REPLICA_ADD,
			  {.add = true, .id = r.id, .address = wire::host_text(r.family, r.addr),
			   .port = r.port});
}

void AdminRpc::do_replica_remove(Session &s, uint64_t req_id, const wire::ReplicaRemoveReq &r)
{
	change_membership(s, req_id, MDR_OP_REPLICA_REMOVE, {.id = r.id, .address = {}});
}

void AdminRpc::change_membership(Session &s, uint64_t req_id, uint16_t opcode,
				 const MembershipChange &c)
{
	const char *what = c.add ? "add" : "removal";

	if (!core_.repl)
		return core_.reply_error(s.peer.id, req_id, opcode, -EINVAL);
	const mdr::Status st = core_.repl->change_membership(c);
	// It stopped leading since the dispatch asked: as the dispatch answers.
	if (!st.ok() && st.error() == -EAGAIN)
		return core_.refuse_not_leading(s, req_id, opcode);
	if (!st.ok()) {
		log_warn_rl("replica %u: %s refused: %s", c.id, what, st.message().c_str());
		return core_.reply_error(s.peer.id, req_id, opcode, st.error());
	}
	// Begun: the group logs it, with the sets before and after.
	core_.reply(s.peer.id, req_id, c.add ? wire::Body{wire::ReplicaAddRep{}}
					     : wire::Body{wire::ReplicaRemoveRep{}});
}

void AdminRpc::do_stats(Session &s, uint64_t req_id)
{
	const auto &js = core_.journal.stats();

	core_.reply(s.peer.id, req_id, wire::NodeStatsRep{
		.boot_id = core_.opts.boot_id,
		.uptime_ms = uint64_t(core_.now() - core_.start_ms()),
		.connections = core_.sessions.size(),
		.volumes = core_.store.counts().volumes,
		.requests = core_.stats.requests,
		.errors = core_.stats.errors,
		.bad_messages = core_.stats.bad_messages,
		.journal_records = js.records,
		.journal_bytes = js.bytes,
		.journal_syncs = js.syncs,
		.invalidations = core_.stats.invalidations,
		.lease_expiries = core_.stats.lease_expiries,
		.moves_active = mover_.active(),
		.moves_done = core_.stats.moves_done,
		.moves_failed = core_.stats.moves_failed,
		.move_bytes = core_.stats.move_bytes,
		.stall_max_us = core_.stats.stall_max_us,
		.stall_total_us = core_.stats.stall_total_us,
		.push_timeouts = core_.stats.push_timeouts,
		.precopy_bytes = core_.stats.precopy_bytes,
		.freeze_bytes = core_.stats.freeze_bytes,
		.auth_failures = core_.stats.auth_failures,
		.hosts = core_.store.counts().hosts,
		.conn_refused = core_.stats.conn_refused,
		.fences = core_.stats.fences,
	});
}

} // namespace mdnode
