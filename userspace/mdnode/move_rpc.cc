// SPDX-License-Identifier: GPL-2.0
//
// move_rpc.cc - see moves.h: the admin requests MOVE and DRAIN, each a
// series of moves of one extent (moves.cc) and one reply with the totals.
#include "mdnode/moves.h"

#include <algorithm>
#include <cerrno>
#include <memory>

namespace mdnode {

namespace {

namespace wire = mdr::wire;

} // namespace

void Mover::MoveTotals::add(const wire::MovedExtent &x, uint64_t extent_bytes)
{
	moved++;
	bytes += extent_bytes;
	stall_max_us = std::max<uint64_t>(stall_max_us, x.stall_us);
	stall_total_us += x.stall_us;
}

// All-or-nothing checks first, so that a request that cannot be served
// moves nothing: see Documentation/migration.md.
void Mover::do_move(Session &s, uint64_t req_id, const wire::MoveReq &r)
{
	const ConnId conn = s.peer.id;
	const Volume *v = (r.flags & MDR_MOVE_F_BY_NAME) ? core_.store.volume(r.name)
							 : core_.store.volume(r.volume_id);

	if (!v)
		return core_.reply_error(conn, req_id, MDR_OP_MOVE, -ENOENT);

	const uint64_t nr = v->table.entries().size();

	if (r.first >= nr || r.count > nr - r.first ||
	    sizeof(mdr_wire_move_rep) + r.count * sizeof(mdr_wire_move_extent) >
		    s.peer.max_msg)
		return core_.reply_error(conn, req_id, MDR_OP_MOVE, -EINVAL);
	if (!core_.store.device(r.to_dev))
		return core_.reply_error(conn, req_id, MDR_OP_MOVE, -ENOENT);
	for (uint64_t i = r.first; i < r.first + r.count; i++) {
		const wire::Entry e = wire::decode_entry(v->table.entries()[i]);

		if (moves_.contains({v->id, i}) || core_.store.move(v->id, i))
			return core_.reply_error(conn, req_id, MDR_OP_MOVE, -EBUSY);
		if (e.state != MDR_EXT_MAPPED || e.dev_id == r.to_dev)
			return core_.reply_error(conn, req_id, MDR_OP_MOVE, -EINVAL);
	}
	if (core_.store.free_extents(r.to_dev, v->extent_shift) < r.count)
		return core_.reply_error(conn, req_id, MDR_OP_MOVE, -ENOSPC);

	auto rep = std::make_shared<wire::MoveRep>();

	rep->volume_id = v->id;
	move_next(conn, req_id, v->id, r.first, r.first + r.count, r.to_dev, rep);
}

void Mover::move_next(ConnId conn, uint64_t req_id, uint64_t volume_id, uint64_t index,
		     uint64_t last, uint32_t to_dev, std::shared_ptr<wire::MoveRep> rep)
{
	if (index == last)
		return core_.reply(conn, req_id, *rep);

	const uint64_t bytes = uint64_t{1} << core_.store.volume(volume_id)->extent_shift;

	move_extent(volume_id, index, to_dev,
		    [=, this](int err, const wire::MovedExtent &x) {
		if (err)
			return core_.reply_error(conn, req_id, MDR_OP_MOVE, err);
		rep->extents.push_back(x);
		rep->bytes += bytes;
		rep->stall_max_us = std::max<uint64_t>(rep->stall_max_us, x.stall_us);
		rep->stall_total_us += x.stall_us;
		move_next(conn, req_id, volume_id, index + 1, last, to_dev, rep);
	});
}

void Mover::do_drain(Session &s, uint64_t req_id, const wire::DrainReq &r)
{
	const ConnId conn = s.peer.id;

	if (!core_.store.device(r.dev_id) || (r.to_dev && !core_.store.device(r.to_dev)))
		return core_.reply_error(conn, req_id, MDR_OP_DRAIN, -ENOENT);
	if (!r.to_dev && !core_.store.roomiest_device(r.dev_id))
		return core_.reply_error(conn, req_id, MDR_OP_DRAIN, -ENOSPC);
	drain_next(conn, req_id, r.dev_id, r.to_dev, std::make_shared<Drain>());
}

// The scan goes on after the extent it moved last, and a pass that moved
// anything is followed by another from the start: extents allocated on the
// device behind the scan while the drain runs are found too, and the
// event loop reads each entry of the node about twice per drain, not once
// per extent moved (on a node of millions of entries, that was a scan of
// all of them in the loop before every move). Extents another request
// moves are left alone.
void Mover::drain_next(ConnId conn, uint64_t req_id, uint32_t dev_id, uint32_t to_dev,
		      std::shared_ptr<Drain> d)
{
	auto scan = [&](uint64_t volume_id, uint64_t index) {
		auto next = core_.store.next_on_device(dev_id, volume_id, index);

		while (next && (moves_.contains(*next) ||
				core_.store.move(next->first, next->second)))
			next = core_.store.next_on_device(dev_id, next->first, next->second + 1);
		return next;
	};
	auto next = scan(d->volume_id, d->index);

	if (!next && d->pass_moved) {
		d->pass_moved = false;
		next = scan(0, 0);
	}

	auto finish = [this, conn, req_id, dev_id, d](int err) {
		core_.reply(conn, req_id, wire::DrainRep{
			.dev_id = dev_id,
			.status = wire::errno_to_status(err),
			.moved = d->totals.moved,
			.remaining = core_.store.extents_on_device(dev_id),
			.bytes = d->totals.bytes,
			.stall_max_us = d->totals.stall_max_us,
			.stall_total_us = d->totals.stall_total_us,
		});
	};
	if (!next)
		return finish(0);
	d->volume_id = next->first;
	d->index = next->second + 1;

	const uint32_t target = to_dev ? to_dev : core_.store.roomiest_device(dev_id);
	const uint64_t bytes = uint64_t{1} << core_.store.volume(next->first)->extent_shift;

	move_extent(next->first, next->second, target,
		    [=, this](int err, const wire::MovedExtent &x) {
		if (err)
			return finish(err);
		d->totals.add(x, bytes);
		d->pass_moved = true;
		drain_next(conn, req_id, dev_id, to_dev, d);
	});
}

} // namespace mdnode
