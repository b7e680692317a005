// SPDX-License-Identifier: GPL-2.0
//
// host_rpc.cc - see host_rpc.h.
#include "mdnode/host_rpc.h"

#include <cerrno>
#include <span>
#include <string>
#include <variant>

#include "mdnode/log.h"
#include "mdnode/records.h"

namespace mdnode {

namespace {

MDNODE_LOG_SUBSYSTEM("node");

namespace wire = mdr::wire;

} // namespace

void HostRpc::do_open(Session &s, uint64_t req_id, const wire::OpenReq &r)
{
	if (s.peer.role != MDR_ROLE_HOST)
		return core_.reply_error(s.peer.id, req_id, MDR_OP_OPEN, -EPERM);
	const Volume *v = (r.flags & MDR_OPEN_F_BY_NAME) ? core_.store.volume(r.name)
							 : core_.store.volume(r.volume_id);
	// Another tenant's volume does not exist, as far as this host can tell.
	if (!v || v->tenant != s.peer.tenant)
		return core_.reply_error(s.peer.id, req_id, MDR_OP_OPEN, -ENOENT);
	// A delete or resize checked the leases and waits for its journal
	// write: a lease granted now would outlive the table it covers.
	if (core_.store.changing(v->id))
		return core_.reply_error(s.peer.id, req_id, MDR_OP_OPEN, -EBUSY);
	// A fenced host gets no new lease, on a new connection neither: the
	// fan-outs waiting for its ack go on once its leases have run out.
	if (pushes_.fenced(s.peer.host_id)) {
		log_info_rl("host %016llx (%s): OPEN of volume %llu refused: fenced",
			    (unsigned long long)s.peer.host_id, s.peer.address.c_str(),
			    (unsigned long long)v->id);
		return core_.reply_error(s.peer.id, req_id, MDR_OP_OPEN, -EAGAIN);
	}
	// The host is journaled as a holder before it gets a lease, so that
	// the process after this one knows it may hold one (store.h,
	// "Holders"). Asked again once that is durable, as Node::handle()
	// would: what was checked above may have changed meanwhile, the
	// connection may be gone or going, this replica no longer leading.
	if (!core_.store.holder(v->id, s.peer.host_id)) {
		const ConnId conn = s.peer.id;

		core_.change(core_.store.prepare_holder_add(v->id, s.peer.host_id),
			     [this, conn, req_id, r](int err, const Applied *) {
			Session *again = core_.session(conn);

			if (!again || again->closing)
				return;
			if (err)
				return core_.reply_error(conn, req_id, MDR_OP_OPEN, err);
			if (!core_.accepting())
				return core_.refuse_not_leading(*again, req_id, MDR_OP_OPEN);
			do_open(*again, req_id, r);
		});
		return;
	}

	auto window = core_.net->expose_table(
		s.peer.id, v->id, std::as_bytes(std::span(v->table.entries())));
	if (!window.ok()) {
		log_error_rl("volume %llu: cannot register its table: %s",
			     (unsigned long long)v->id, window.message().c_str());
		return core_.reply_error(s.peer.id, req_id, MDR_OP_OPEN, -ENOMEM);
	}
	core_.leases.grant({v->id, s.peer.host_id}, s.peer.id,
			   core_.now() + core_.opts.lease_ms + core_.opts.drift_margin_ms);
	s.opened.insert(v->id);
	core_.opened_here(v->id, s);
	core_.reply(s.peer.id, req_id, wire::OpenRep{
		.volume_id = v->id,
		.size = v->size,
		.table_addr = window.value().addr,
		.table_len = v->table.bytes(),
		// The wire's name for the window's key: RDMA was its first user.
		.table_rkey = window.value().key,
		.extent_shift = v->extent_shift,
		.lease_ms = core_.opts.lease_ms,
		.generation = v->generation,
		.name = v->name,
	});
	// Who waits for this host hears of its lease: a move pre-copying the
	// volume, and fan-outs whose push it lost with an old connection.
	core_.lease_granted(v->id, s);
}

void HostRpc::do_close(Session &s, uint64_t req_id, const wire::CloseReq &r)
{
	if (s.peer.role != MDR_ROLE_HOST)
		return core_.reply_error(s.peer.id, req_id, MDR_OP_CLOSE, -ENOENT);
	// A lease that lapsed here (tick() took the volume off the session)
	// is closed too on the connection that held it: a host drains its IO
	// to the volume before it sends CLOSE, so nothing is left to wait out.
	const Lease *l = core_.leases.find({r.volume_id, s.peer.host_id});
	const bool lapsed = l && l->lapsed && l->conn == s.peer.id;
	if (!s.opened.erase(r.volume_id) && !lapsed)
		return core_.reply_error(s.peer.id, req_id, MDR_OP_CLOSE, -ENOENT);
	core_.leases.erase({r.volume_id, s.peer.host_id});
	core_.reply(s.peer.id, req_id, wire::CloseRep{});
	core_.drop_holder(r.volume_id, s.peer.host_id, false);
	// Without a lease it is no longer waited for, ack or not.
	core_.lease_gone(r.volume_id, s.peer.host_id);
}

void HostRpc::do_renew(Session &s, uint64_t req_id, const wire::RenewReq &r)
{
	const int64_t now = core_.now();
	std::vector<uint64_t> vols;

	if (s.peer.role != MDR_ROLE_HOST)
		return core_.reply_error(s.peer.id, req_id, MDR_OP_RENEW, -EPERM);
	if (r.volume_id)
		vols.push_back(r.volume_id);
	else
		vols.assign(s.opened.begin(), s.opened.end());
	// A lease that lapsed may already have let a migration go ahead: the
	// host must open again and re-read, not just extend.
	for (uint64_t v : vols)
		if (!s.opened.count(v) || !core_.lease_valid(v, s.peer.host_id))
			return core_.reply_error(s.peer.id, req_id, MDR_OP_RENEW, -ESTALE);
	// Fenced for owing an ack: its leases are not renewed, so they run out
	// and the fan-outs go on; it opens again (refused while fenced) once
	// no fan-out waits for it.
	if (pushes_.fenced(s.peer.host_id)) {
		log_info_rl("host %016llx (%s): RENEW refused: fenced",
			    (unsigned long long)s.peer.host_id, s.peer.address.c_str());
		return core_.reply_error(s.peer.id, req_id, MDR_OP_RENEW, -ESTALE);
	}
	core_.stats.lease_renewals += vols.size();
	for (uint64_t v : vols)
		core_.leases.renew({v, s.peer.host_id}, s.peer.id,
				   now + core_.opts.lease_ms + core_.opts.drift_margin_ms);
	core_.reply(s.peer.id, req_id, wire::RenewRep{.lease_ms = core_.opts.lease_ms});
}

void HostRpc::do_alloc(Session &s, uint64_t req_id, const wire::AllocReq &r)
{
	const ConnId conn = s.peer.id;
	const uint64_t host = s.peer.host_id;

	if (s.peer.role != MDR_ROLE_HOST)
		return core_.reply_error(conn, req_id, MDR_OP_ALLOC, -EPERM);
	if (!s.opened.count(r.volume_id) || !core_.lease_valid(r.volume_id, host))
		return core_.reply_error(conn, req_id, MDR_OP_ALLOC, -ESTALE);

	auto key = std::make_pair(r.volume_id, r.index);
	auto waiting = alloc_waiters_.find(key);
	if (waiting != alloc_waiters_.end()) {
		// The same extent is being allocated: answer with its result.
		waiting->second.emplace_back(conn, req_id);
		return;
	}
	auto prep = core_.store.prepare_alloc(r.volume_id, r.index);
	if (!prep.ok())
		return core_.reply_error(conn, req_id, MDR_OP_ALLOC, prep.error());

	// Hosts of the process before may cache this extent as unallocated
	// and read zeros where the writer's data would be: no push reaches
	// them until they open again (NodeCore::in_restart_lease()), unless
	// each of them holds a lease here already: then each hears of the
	// extent before the writer does, mapped now or before (below), and
	// drops the rest of what it cached once its reopen is through
	// (NodeCore::holders_reached()). The host
	// routes its write again within a second. An extent already mapped
	// waits too: the process before may have committed it and died before
	// its fan-out told those hosts (alloc_journal()), and the writer asking
	// again here must not write before their leases ran out.
	const bool of_before = core_.from_before_start(r.volume_id) && core_.in_restart_lease();

	if (of_before && !core_.holders_reached(r.volume_id)) {
		if (auto *c = std::get_if<Change>(&prep.value()))
			(void)core_.store.abort(*c);
		log_info_rl("volume %llu extent %llu: not allocated until the leases "
			    "of before the start have run out (%lld ms)",
			    (unsigned long long)r.volume_id, (unsigned long long)r.index,
			    (long long)core_.restart_lease_left());
		return core_.reply_error(conn, req_id, MDR_OP_ALLOC, -EAGAIN);
	}
	if (auto *entry = std::get_if<mdr_wire_entry>(&prep.value())) {
		// Already mapped: idempotent. Within the leases of before, the
		// process before may have mapped it and died before its fan-out;
		// a holder whose reopen here is not through yet (its OPEN's
		// answer lost, or still on its way) still caches it unallocated
		// under its old lease: every holder hears of it first. A
		// holder's lease granted here lapses no earlier than the leases
		// of before (holders_reached()), so the fan-out settled by a
		// lapse settles none of them early.
		if (!of_before)
			return core_.reply(conn, req_id,
					   wire::AllocRep{.volume_id = r.volume_id, .index = r.index,
							  .entry = wire::decode_entry(*entry)});
		alloc_waiters_[key].emplace_back(conn, req_id);
		const mdr_wire_entry mapped = *entry;
		pushes_.fan_out(key.first, key.second, 1, wire::decode_entry(mapped).generation,
				MDR_INVAL_ALLOC, host,
				[this, key, mapped] { alloc_answer(key, 0, mapped); });
		return;
	}
	alloc_waiters_[key].emplace_back(conn, req_id);
	Change c = std::move(std::get<Change>(prep.value()));
	if (!core_.opts.zero_extents)
		return alloc_journal(key, host, std::move(c));

	// The place is reserved by the prepared change (no other ALLOC, no
	// DELETE of the volume while it is in flight) and written by no one:
	// zeros go there before the journal makes it the extent's. A crash
	// in between leaves it free, zeroed or not.
	auto rec = decode_record(c.type, c.payload);
	const Volume *v = core_.store.volume(r.volume_id);
	if (!rec.ok() || !v) {
		log_error("volume %llu extent %llu: the prepared ALLOC does not decode",
			  (unsigned long long)r.volume_id, (unsigned long long)r.index);
		(void)core_.store.abort(c);
		return alloc_answer(key, -EIO, {});
	}
	const CopyJob job{.dst_dev = rec.value().dev_id,
			  .dst_off = rec.value().pstart << kSectorShift,
			  .len = uint64_t{1} << v->extent_shift,
			  .zero = true};
	core_.copier.start(job, [this, key, host, c](int err, const CopyTimes &) {
		if (!err) {
			core_.stats.extents_zeroed++;
			return alloc_journal(key, host, c);
		}
		// The copier logged why; the extent stays free, and the host
		// fails this IO rather than read another's data.
		core_.stats.zero_failures++;
		(void)core_.store.abort(c);
		alloc_answer(key, -EIO, {});
	});
}

void HostRpc::alloc_journal(AllocKey key, uint64_t host, Change c)
{
	core_.change(std::move(c), [this, key, host](int err, const Applied *applied) {
		if (err)
			return alloc_answer(key, err, {});
		// Other holders may cache this extent as unallocated and would
		// read zeros where data now is: they hear of it before the
		// writer gets its answer.
		const mdr_wire_entry entry = applied->entry;
		pushes_.fan_out(key.first, key.second, 1, wire::decode_entry(entry).generation,
			MDR_INVAL_ALLOC, host, [this, key, entry] { alloc_answer(key, 0, entry); });
	});
}

void HostRpc::alloc_answer(AllocKey key, int err, const mdr_wire_entry &entry)
{
	auto node = alloc_waiters_.extract(key);

	for (auto [c, id] : node.mapped()) {
		if (err)
			core_.reply_error(c, id, MDR_OP_ALLOC, err);
		else
			core_.reply(c, id, wire::AllocRep{.volume_id = key.first,
						    .index = key.second,
						    .entry = wire::decode_entry(entry)});
	}
}

void HostRpc::do_ack(Session &s, uint64_t req_id, const wire::InvalidateAck &r)
{
	// The ack's form is the session's version's, and a dirty mask names
	// granules of the extent only: otherwise the ack is refused as a
	// malformed message is (parse() checked the rest).
	std::string bad;
	const Volume *v = core_.store.volume(r.volume_id);

	if (r.extended != (s.peer.version >= 2))
		bad = std::string(r.extended ? "80" : "64") + "-byte ack on version " +
		      std::to_string(s.peer.version);
	else if (v && wire::track_granules(v->extent_shift) < 64 &&
		 r.dirty >> wire::track_granules(v->extent_shift))
		bad = "dirty granules beyond the extent's " +
		      std::to_string(wire::track_granules(v->extent_shift));
	if (!bad.empty()) {
		core_.stats.bad_messages++;
		log_warn_rl("conn %llu (%s): bad message: inval_ack: %s",
			    (unsigned long long)s.peer.id, s.peer.address.c_str(),
			    bad.c_str());
		core_.net->disconnect(s.peer.id);
		return;
	}

	if (!pushes_.acked(s, req_id, Settled{.acked = true, .flags = r.flags,
					      .dirty = r.dirty}))
		// Late ack of a push we gave up on, or a host making things up.
		log_warn_rl("conn %llu: ack of unknown push %llu",
			    (unsigned long long)s.peer.id, (unsigned long long)req_id);
}

} // namespace mdnode
