// SPDX-License-Identifier: GPL-2.0
//
// test_migrate_failures.cc - moves that do not go as asked, driven through
// the Net seam with a fake transport: a crash at every step rolls the move
// back or completes it, with generations that never go back; bad requests
// move nothing; a failed copy rolls back; malformed acks are refused.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <variant>
#include <vector>

#include <endian.h>

#include "lib/wire/wire.h"
#include "mdnode/log.h"
#include "mdnode/node.h"
#include "mdnode/store.h"

#include "tests/test_migrate.h"

#include "tests/common/cmocka_cxx.h"

namespace wire = mdr::wire;
using mdnode::ConnId;

namespace {

using namespace mdr::test;

// ---------------------------------------------------------------------------
// Crashes, refusals, failures

// A crash at each step: before the ack, while the copy runs (its end
// never reaches the loop), after the copy but before its end is durable
// (these roll back), and after MOVE_DONE is durable (complete). The
// generation a host has seen is never undercut, the space of the losing
// place is free, and a later move works.
void test_crash_at_each_step(void **)
{
	for (int step = 0; step < 4; step++) {
		Rig r;
		Setup s(r);
		const uint64_t used1 = r.used(1), used2 = r.used(2);

		wire::Msg push = s.freeze(r);
		uint64_t seen = 3;	// FROZEN g1
		if (step >= 1)
			r.ack(s.host, push);	// the copy is queued
		if (step >= 2)
			r.node->wait_copies();	// the end is appended, not written
		if (step == 3) {
			r.flush();
			seen = 4;	// MAPPED at the new place
		}
		r.crash_and_restart();

		const wire::Entry e = r.entry(s.vol, 1);
		assert_int_equal(e.state, MDR_EXT_MAPPED);
		assert_true(e.generation >= seen);
		assert_int_equal(e.generation, 4);
		assert_int_equal(r.store->counts().moving, 0);
		if (step < 3) {
			assert_int_equal(e.dev_id, 1);
			assert_int_equal(e.pstart, s.at[1].pstart);
			assert_int_equal(r.used(1), used1);
			assert_int_equal(r.used(2), used2);
		} else {
			assert_int_equal(e.dev_id, 2);
			assert_int_equal(r.used(1), used1 - kExtent);
			assert_int_equal(r.used(2), used2 + kExtent);
		}
		assert_true(r.extent_holds(e, 101));
		assert_true(r.entry(s.vol, 0) == s.at[0]);

		// Recovered once more: nothing changes (the roll-back was
		// journaled).
		r.crash_and_restart();
		assert_true(r.entry(s.vol, 1) == e);

		// A later move goes on from there.
		r.past_grace();
		const ConnId adm = r.admin();
		const uint32_t to = e.dev_id == 1 ? 2 : 1;
		r.send(adm, 30, wire::MoveReq{.volume_id = s.vol, .first = 1, .count = 1,
					      .to_dev = to});
		r.flush();
		r.copies();
		wire::Msg m = r.one(adm);
		assert_int_equal(status_of(m), MDR_ST_OK);
		const wire::Entry moved = r.entry(s.vol, 1);
		assert_int_equal(moved.generation, 6);
		assert_int_equal(moved.dev_id, to);
		assert_true(r.extent_holds(moved, 101));
	}
}

// A replica that starts to lead finds a move the leader before it left
// frozen (a replica's start rolls nothing back). The extent stays frozen
// and its new place taken until the leases and IO of the leaders before
// are waited out, by the bounds it inherited, wider than its own: their
// copier may still write the new place. Then the move is rolled back
// through the change path, once: mapped at its old place one generation
// on, the new place free, the data where it was.
void test_new_leader_rolls_back_after_grace(void **)
{
	Rig r;
	Setup s(r);
	const uint64_t used1 = r.used(1), used2 = r.used(2);

	expect_push(s.freeze(r), s.vol, 1, 3, MDR_INVAL_MOVE);
	r.crash_and_restart(false);
	assert_int_equal(r.store->counts().moving, 1);

	const mdnode::LeaseBounds inherited{uint32_t(kHeldMs) + 3000, r.io_hold_ms + 1000};
	r.node->begin_leading(inherited);
	// Past its own bounds, not past the inherited ones.
	r.now += kHeldMs + r.io_hold_ms;
	r.node->tick();
	r.flush();
	assert_int_equal(r.entry(s.vol, 1).state, MDR_EXT_FROZEN);
	assert_int_equal(r.used(2), used2 + kExtent);

	r.now += 4000;
	r.node->tick();
	r.flush();
	const wire::Entry e = r.entry(s.vol, 1);
	expect_rolled_back(e, s.at[1]);
	assert_int_equal(r.store->counts().moving, 0);
	assert_int_equal(r.used(1), used1);
	assert_int_equal(r.used(2), used2);
	assert_true(r.extent_holds(e, 101));

	const uint64_t records = r.journal->stats().records;
	r.now += 1000;
	r.node->tick();
	r.flush();
	assert_int_equal(r.journal->stats().records, records);
	assert_true(r.entry(s.vol, 1) == e);
}

// Bad requests move nothing. Decided: every extent of the range must be
// mapped (an unallocated one has nothing to move: INVAL), on another device
// than to_dev (INVAL), not moving (BUSY); the range within the volume
// (INVAL), the volume and the device known (NOENT), room on to_dev for the
// whole range (NOSPC); admins only (PERM).
void test_move_refusals(void **)
{
	Rig r;
	Setup s(r);
	auto move = [&](uint64_t vol, uint64_t first, uint32_t count, uint32_t to) {
		return r.call(s.adm, 50, wire::MoveReq{.volume_id = vol, .first = first,
						      .count = count, .to_dev = to});
	};

	assert_int_equal(move(s.vol + 1, 0, 1, 2), MDR_ST_NOENT);
	assert_int_equal(r.call(s.adm, 51, wire::MoveReq{.count = 1, .to_dev = 2,
							 .flags = MDR_MOVE_F_BY_NAME,
							 .name = "nope"}),
			 MDR_ST_NOENT);
	assert_int_equal(move(s.vol, 0, 1, 3), MDR_ST_NOENT);
	assert_int_equal(move(s.vol, 0, 1, 1), MDR_ST_INVAL);	// same device
	assert_int_equal(move(s.vol, 2, 1, 2), MDR_ST_INVAL);	// unallocated
	assert_int_equal(move(s.vol, 1, 2, 2), MDR_ST_INVAL);	// 2 unallocated
	assert_int_equal(move(s.vol, 4, 1, 2), MDR_ST_INVAL);	// beyond
	assert_int_equal(move(s.vol, 3, 2, 2), MDR_ST_INVAL);	// partly beyond

	// Device 2 has room for 3 extents: a volume of 4 on device 1 does not
	// fit.
	const uint64_t big = r.create(s.adm, "big", 4 * kExtent);
	const ConnId h = r.host(0x3333);
	r.open(h, big);
	for (uint64_t i = 0; i < 4; i++)
		(void)r.alloc(h, big, i);
	assert_int_equal(move(big, 0, 4, 2), MDR_ST_NOSPC);

	// Moving: a second move of the extent is busy, an ALLOC of it is told
	// to come back, the volume is not deleted.
	r.send(s.adm, 60, wire::MoveReq{.volume_id = s.vol, .first = 0, .count = 1,
					.to_dev = 2});
	r.flush();
	wire::Msg push = r.one(s.host);
	assert_int_equal(move(s.vol, 0, 1, 2), MDR_ST_BUSY);
	assert_int_equal(r.call(s.host, 61, wire::AllocReq{.volume_id = s.vol, .index = 0}),
			 MDR_ST_AGAIN);
	r.ack(s.host, push);
	r.copies();
	r.ack(s.host, r.one(s.host));
	assert_int_equal(status_of(r.one(s.adm)), MDR_ST_OK);

	// Roles and authentication.
	assert_int_equal(r.call(s.host, 70, wire::MoveReq{.volume_id = s.vol, .first = 1,
							  .count = 1, .to_dev = 2}),
			 MDR_ST_PERM);
	const ConnId unauth = r.admin(false);
	assert_int_equal(r.call(unauth, 71, wire::MoveReq{.volume_id = s.vol, .first = 1,
							  .count = 1, .to_dev = 2}),
			 MDR_ST_PERM);
	assert_int_equal(r.call(unauth, 72, wire::DrainReq{.dev_id = 1}), MDR_ST_PERM);
	assert_int_equal(r.call(s.adm, 73, wire::DrainReq{.dev_id = 9}), MDR_ST_NOENT);
	assert_int_equal(r.call(s.adm, 74, wire::DrainReq{.dev_id = 1, .to_dev = 9}),
			 MDR_ST_NOENT);
	assert_int_equal(r.node->stats().moves_done, 1);
}

// A copy that fails (the new device cannot be opened) rolls the move back:
// mapped at the old place one generation on, the new place free, IO told.
void test_failed_copy_rolls_back(void **)
{
	Rig r(true);
	Setup s(r);
	const uint64_t used2 = r.used(2);

	r.send(s.adm, 20, wire::MoveReq{.volume_id = s.vol, .first = 0, .count = 1,
					.to_dev = 2});
	r.flush();
	r.ack(s.host, r.one(s.host));
	r.copies();
	const wire::Entry e = r.entry(s.vol, 0);
	expect_rolled_back(e, s.at[0]);
	assert_int_equal(r.used(2), used2);
	wire::Msg push = r.one(s.host);
	expect_push(push, s.vol, 0, 4, MDR_INVAL_ALLOC);
	r.ack(s.host, push);
	assert_int_equal(status_of(r.one(s.adm)), MDR_ST_IO);
	assert_int_equal(r.node->stats().moves_failed, 1);
	assert_int_equal(r.node->stats().moves_done, 0);
	assert_true(r.extent_holds(e, 100));
}

// ---------------------------------------------------------------------------
// Malformed acks

// Acks refused as malformed (the connection is cut, the push stays
// unacked): the wrong size for the session's version, unknown flags, a
// reserved field set, dirty granules without MDR_INVAL_ACK_F_TRACKED or
// beyond the extent's granules (16 of a 64 KiB extent).
void test_malformed_acks_are_refused(void **)
{
	enum Case { long_on_v1, short_on_v2, flags, reserved, untracked_dirty, beyond };

	for (Case c : {long_on_v1, short_on_v2, flags, reserved, untracked_dirty, beyond}) {
		Rig r;
		r.past_grace();
		const ConnId adm = r.admin();
		r.send(adm, 2, wire::VolCreateReq{.size = 4 * kExtent,
						  .extent_shift = c == beyond ? 16u : kShift,
						  .tenant = 7, .name = "db1"});
		r.flush();
		const uint64_t vol = std::get<wire::VolCreateRep>(r.one(adm).body).vol.volume_id;
		const ConnId h = r.host(0x1111, c == long_on_v1 ? 1 : 2);
		r.open(h, vol);
		(void)r.alloc(h, vol, 1);
		r.send(adm, 20, wire::MoveReq{.volume_id = vol, .first = 1, .count = 1,
					      .to_dev = 2});
		r.flush();
		wire::Msg push = r.one(h);
		if (c == beyond) {
			// Tracked: MOVE comes after the pre-copy.
			r.ack(h, push);
			r.copies();
			push = r.one(h);
		}

		wire::InvalidateAck a = r.ack_of(h, std::get<wire::Invalidate>(push.body));
		a.extended = c != short_on_v2 && (c == long_on_v1 || a.extended);
		if (c == beyond) {
			a.flags = MDR_INVAL_ACK_F_TRACKED;
			a.dirty = uint64_t{1} << 16;
		}
		Bytes buf(wire::encoded_size(a));
		auto n = wire::encode(buf, push.hdr.req_id, a);
		assert_true(n.ok());
		auto put32 = [&](size_t off, uint32_t v) {
			v = htole32(v);
			std::memcpy(&buf[off], &v, 4);
		};
		if (c == flags)
			put32(offsetof(mdr_wire_inval_ack, flags), 2);
		if (c == reserved)
			put32(offsetof(mdr_wire_inval_ack, reserved), 1);
		if (c == untracked_dirty) {
			const uint64_t d = htole64(1);
			std::memcpy(&buf[offsetof(mdr_wire_inval_ack, dirty)], &d, 8);
		}
		const uint64_t bad = r.node->stats().bad_messages;
		r.node->on_message(h, buf);
		assert_int_equal(r.node->stats().bad_messages, bad + 1);
		assert_int_equal(r.net.disconnects.size(), 1);
		assert_int_equal(r.net.disconnects[0], h);
		// Not taken as an ack: the move still waits.
		r.copies();
		if (c == long_on_v1 || c == beyond)
			assert_int_equal(r.entry(vol, 1).state, MDR_EXT_FROZEN);
		else
			assert_int_equal(r.entry(vol, 1).state, MDR_EXT_MAPPED);
		assert_int_equal(r.node->moves_active(), 1);
		assert_true(r.quiet(adm));
	}
}

} // namespace

int main()
{
	mdnode::set_log_level(mdnode::LogLevel::error);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crash_at_each_step),
		cmocka_unit_test(test_new_leader_rolls_back_after_grace),
		cmocka_unit_test(test_move_refusals),
		cmocka_unit_test(test_failed_copy_rolls_back),
		cmocka_unit_test(test_malformed_acks_are_refused),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
