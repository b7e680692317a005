// SPDX-License-Identifier: GPL-2.0
//
// test_migrate_move.cc - a move of an extent between devices (MDR_OP_MOVE),
// driven through the Net seam with a fake transport: the data arrives intact
// at the new place; the sequence a host sees (FROZEN at g1 and
// INVALIDATE(MOVE), then MAPPED at g1 + 1 and INVALIDATE(ALLOC)); back and
// forth; a silent or lapsed lease holder delays the copy until its lease
// and its IO have run out, and so does the grace after a start; a holder
// that reconnects gets the push again; the counters.
#include <cstdint>
#include <variant>
#include <vector>

#include "lib/wire/wire.h"
#include "mdnode/log.h"
#include "mdnode/node.h"

#include "tests/test_migrate.h"

#include "tests/common/cmocka_cxx.h"

namespace wire = mdr::wire;
using mdnode::ConnId;

namespace {

using namespace mdr::test;

// ---------------------------------------------------------------------------
// Moves

// The whole sequence: what the host sees at each step, where the data ends
// up, what the admin is told, and when.
void test_move_freezes_copies_and_publishes(void **)
{
	Rig r;
	Setup s(r);
	const uint64_t used1 = r.used(1), used2 = r.used(2);

	r.send(s.adm, 20, wire::MoveReq{.volume_id = s.vol, .first = 1, .count = 1,
					.to_dev = 2});
	r.flush();
	// Frozen at the old place, one generation on; the holder is told to
	// drain; the new place is taken.
	wire::Entry e = r.entry(s.vol, 1);
	assert_int_equal(e.state, MDR_EXT_FROZEN);
	assert_int_equal(e.generation, 3);
	assert_int_equal(e.dev_id, 1);
	assert_int_equal(e.pstart, s.at[1].pstart);
	wire::Msg push = r.one(s.host);
	expect_push(push, s.vol, 1, 3, MDR_INVAL_MOVE);
	assert_int_equal(r.used(2), used2 + kExtent);
	assert_int_equal(r.node->moves_active(), 1);

	// Nothing is copied before the ack.
	r.now += 100;
	r.node->tick();
	r.copies();
	assert_true(r.quiet(s.adm));
	assert_int_equal(r.entry(s.vol, 1).state, MDR_EXT_FROZEN);

	// Acked: copied, journaled, published at the new place.
	r.now += 20;
	r.ack(s.host, push);
	r.copies();
	e = r.entry(s.vol, 1);
	assert_int_equal(e.state, MDR_EXT_MAPPED);
	assert_int_equal(e.generation, 4);
	assert_int_equal(e.dev_id, 2);
	assert_true(r.extent_holds(e, 101));
	assert_int_equal(r.used(1), used1 - kExtent);
	// Hosts waiting on the frozen entry look again; no drain needed.
	push = r.one(s.host);
	expect_push(push, s.vol, 1, 4, MDR_INVAL_ALLOC);
	assert_true(r.quiet(s.adm));
	r.ack(s.host, push);

	wire::Msg m = r.one(s.adm);
	assert_int_equal(m.hdr.req_id, 20);
	auto *rep = std::get_if<wire::MoveRep>(&m.body);
	if (!rep)
		fail_msg("move: status %u", status_of(m));
	assert_int_equal(rep->volume_id, s.vol);
	assert_int_equal(rep->bytes, kExtent);
	assert_int_equal(rep->extents.size(), 1);
	const wire::MovedExtent &x = rep->extents[0];
	assert_int_equal(x.index, 1);
	assert_int_equal(x.old_dev, 1);
	assert_int_equal(x.old_pstart, s.at[1].pstart);
	assert_int_equal(x.new_dev, 2);
	assert_int_equal(x.new_pstart, e.pstart);
	assert_int_equal(x.generation, 4);
	assert_int_equal(x.stall_us, 120000);
	assert_int_equal(rep->stall_max_us, 120000);
	assert_int_equal(r.node->moves_active(), 0);
	// The other extent did not move.
	assert_true(r.entry(s.vol, 0) == s.at[0]);
	assert_true(r.extent_holds(s.at[0], 100));

	// Counters.
	r.send(s.adm, 21, wire::NodeStatsReq{});
	m = r.one(s.adm);
	auto *st = std::get_if<wire::NodeStatsRep>(&m.body);
	assert_non_null(st);
	assert_int_equal(st->moves_active, 0);
	assert_int_equal(st->moves_done, 1);
	assert_int_equal(st->moves_failed, 0);
	assert_int_equal(st->move_bytes, kExtent);
	assert_int_equal(st->stall_max_us, 120000);
	assert_int_equal(st->stall_total_us, 120000);
	// A host on version 1: no pre-copy, the whole extent under the freeze.
	assert_int_equal(st->precopy_bytes, 0);
	assert_int_equal(st->freeze_bytes, kExtent);
}

// Back and forth, by id and by name: the generation grows by two a move
// and the data follows.
void test_move_back_and_forth(void **)
{
	Rig r;
	Setup s(r);

	for (int round = 0; round < 4; round++) {
		const uint32_t to = round % 2 ? 1 : 2;
		const uint64_t g = r.entry(s.vol, 1).generation;
		wire::MoveReq req{.volume_id = s.vol, .first = 1, .count = 1, .to_dev = to};

		if (round % 2) {
			req.volume_id = 0;
			req.flags = MDR_MOVE_F_BY_NAME;
			req.name = "db1";
		}
		r.send(s.adm, 40 + round, req);
		r.flush();
		wire::Msg push = r.one(s.host);
		expect_push(push, s.vol, 1, g + 1, MDR_INVAL_MOVE);
		r.ack(s.host, push);
		r.copies();
		push = r.one(s.host);
		expect_push(push, s.vol, 1, g + 2, MDR_INVAL_ALLOC);
		r.ack(s.host, push);
		wire::Msg m = r.one(s.adm);
		assert_int_equal(status_of(m), MDR_ST_OK);
		const wire::Entry e = r.entry(s.vol, 1);
		assert_int_equal(e.dev_id, to);
		assert_int_equal(e.generation, g + 2);
		assert_true(r.extent_holds(e, 101));
		// Keep the lease: the test's clock does not move, but say so.
		r.send(s.host, 9, wire::RenewReq{.volume_id = s.vol});
		assert_int_equal(status_of(r.one(s.host)), MDR_ST_OK);
	}
	assert_int_equal(r.node->stats().moves_done, 4);
}

// The admin moves extent 0 to device 2: it freezes, and the Setup's holder
// is told and acks.
void move_acked(Rig &r, Setup &s)
{
	r.send(s.adm, 20, wire::MoveReq{.volume_id = s.vol, .first = 0, .count = 1,
					.to_dev = 2});
	r.flush();
	const wire::Msg push = r.one(s.host);
	expect_push(push, s.vol, 0, 3, MDR_INVAL_MOVE);
	r.ack(s.host, push);
}

// Extent 0 is on device 2 with its data, the Setup's holder is told, and
// the admin gets the reply (returned).
wire::Msg expect_published(Rig &r, Setup &s)
{
	const wire::Entry e = r.entry(s.vol, 0);
	assert_int_equal(e.state, MDR_EXT_MAPPED);
	assert_int_equal(e.dev_id, 2);
	assert_true(r.extent_holds(e, 100));
	const wire::Msg push = r.one(s.host);
	expect_push(push, s.vol, 0, 4, MDR_INVAL_ALLOC);
	r.ack(s.host, push);
	wire::Msg m = r.one(s.adm);
	assert_int_equal(status_of(m), MDR_ST_OK);
	return m;
}

// A lapsed holder's lease has run out: extent 0 stays frozen until
// io_hold_ms later, then is published.
wire::Msg publish_after_the_hold(Rig &r, Setup &s)
{
	r.now += kIoHoldMs - 1;
	r.node->tick();
	r.copies();
	assert_int_equal(r.entry(s.vol, 0).state, MDR_EXT_FROZEN);
	assert_true(r.quiet(s.adm));
	r.now += 1;
	r.node->tick();
	r.copies();
	return expect_published(r, s);
}

// A holder that never acks (its connection is gone) is waited out: the
// copy starts only once its lease has run out, and io_hold_ms more.
void test_silent_holder_delays_the_copy_until_its_lease_expires(void **)
{
	Rig r;
	Setup s(r);
	const ConnId other = r.host(0x2222);

	r.open(other, s.vol);
	r.send(s.adm, 20, wire::MoveReq{.volume_id = s.vol, .first = 0, .count = 1,
					.to_dev = 2});
	r.flush();
	wire::Msg push = r.one(s.host);
	expect_push(push, s.vol, 0, 3, MDR_INVAL_MOVE);
	(void)r.one(other);	// pushed, never acked
	r.ack(s.host, push);
	r.node->on_disconnected(other);

	r.now += kHeldMs - 1;
	r.node->tick();
	r.copies();
	assert_int_equal(r.entry(s.vol, 0).state, MDR_EXT_FROZEN);
	assert_true(r.quiet(s.adm));

	// The one that acked renews; the silent one's lease runs out, and
	// what it may have sent before is waited out io_hold_ms longer.
	r.send(s.host, 9, wire::RenewReq{.volume_id = s.vol});
	assert_int_equal(status_of(r.one(s.host)), MDR_ST_OK);
	r.now += 1;
	r.node->tick();
	r.copies();
	assert_int_equal(r.entry(s.vol, 0).state, MDR_EXT_FROZEN);
	assert_true(r.quiet(s.adm));
	const wire::Msg m = publish_after_the_hold(r, s);
	assert_int_equal(std::get<wire::MoveRep>(m.body).extents[0].stall_us,
			 kWaitedOutMs * 1000);
}

// A holder whose lease ran out before the move began may still have IO at
// its devices: the move freezes, and copies only io_hold_ms after the lapse.
void test_move_after_a_lapse_waits_out_the_holders_io(void **)
{
	Rig r;
	Setup s(r);
	const ConnId other = r.host(0x2222);

	r.open(other, s.vol);
	r.node->on_disconnected(other);
	r.now += kHeldMs - 1;
	r.send(s.host, 9, wire::RenewReq{.volume_id = s.vol});
	assert_int_equal(status_of(r.one(s.host)), MDR_ST_OK);
	r.now += 1;
	r.node->tick();	// the other's lease lapses
	assert_int_equal(r.node->stats().lease_expiries, 1);

	move_acked(r, s);
	r.copies();
	assert_int_equal(r.entry(s.vol, 0).state, MDR_EXT_FROZEN);
	publish_after_the_hold(r, s);
}

// A holder whose lease lapsed while it stayed connected still gets the MOVE
// push (its devices may still hold its IO). A slow ack from it is waited
// out by io_hold_ms: it is not cut off as an overdue push, which would cost
// every volume on its connection its pushes.
void test_lapsed_holder_is_not_cut_off_for_a_slow_ack(void **)
{
	constexpr uint32_t hold = 3 * kHeldMs;	// longer than a push may be overdue
	Rig r(false, hold);
	Setup s(r);
	const ConnId other = r.host(0x2222);
	uint64_t req = 9;

	r.open(other, s.vol);
	r.now += kHeldMs - 1;
	assert_int_equal(r.call(s.host, req++, wire::RenewReq{.volume_id = s.vol}), MDR_ST_OK);
	r.now += 1;
	r.node->tick();	// the other's lease lapses; it stays connected
	move_acked(r, s);
	expect_push(r.one(other), s.vol, 0, 3, MDR_INVAL_MOVE);	// never acked
	for (int64_t waited = 0; waited < hold; waited += kLeaseMs / 2) {
		r.copies();
		assert_int_equal(r.entry(s.vol, 0).state, MDR_EXT_FROZEN);
		r.now += kLeaseMs / 2;
		assert_int_equal(r.call(s.host, req++, wire::RenewReq{.volume_id = s.vol}),
				 MDR_ST_OK);
		r.node->tick();
	}
	r.copies();
	assert_int_equal(r.node->stats().push_timeouts, 0);
	assert_true(r.net.disconnects.empty());
	expect_published(r, s);
}

// A holder that reconnects (its push lost with the old connection) and
// opens the volume again renews its lease: it gets the push again on the
// new connection, and the move waits for that ack, not for ever.
void test_reconnected_holder_gets_the_push_again(void **)
{
	Rig r;
	Setup s(r);

	r.send(s.adm, 20, wire::MoveReq{.volume_id = s.vol, .first = 0, .count = 1,
					.to_dev = 2});
	r.flush();
	(void)r.one(s.host);	// lost with the connection
	r.node->on_disconnected(s.host);
	const ConnId again = r.host(0x1111);
	r.now += kHeldMs - 100;
	r.send(again, 3, wire::OpenReq{.volume_id = s.vol});
	std::vector<wire::Msg> got = r.take(again);
	assert_int_equal(got.size(), 2);
	assert_true(std::holds_alternative<wire::OpenRep>(got[0].body));
	wire::Msg push = got[1];
	expect_push(push, s.vol, 0, 3, MDR_INVAL_MOVE);
	r.now += 200;	// past the first lease: the reopen renewed it
	r.node->tick();
	r.copies();
	assert_int_equal(r.entry(s.vol, 0).state, MDR_EXT_FROZEN);
	r.ack(again, push);
	r.copies();
	push = r.one(again);
	expect_push(push, s.vol, 0, 4, MDR_INVAL_ALLOC);
	r.ack(again, push);
	assert_int_equal(status_of(r.one(s.adm)), MDR_ST_OK);
	assert_true(r.extent_holds(r.entry(s.vol, 0), 100));
}

// After a start, leases granted before it are unknown but may still be
// used, and their IO still land: no move starts before lease + margin +
// io hold, even with no holder at all (it is deferred, not frozen: IO
// would only wait longer).
void test_no_copy_within_the_grace_after_a_start(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "db1", 2 * kExtent);
	const ConnId h = r.host(0x1111);

	r.open(h, vol);
	const wire::Entry at = r.alloc(h, vol, 0);
	r.write_extent(at, 7);
	r.send(h, 6, wire::CloseReq{.volume_id = vol});
	assert_int_equal(status_of(r.one(h)), MDR_ST_OK);

	r.send(adm, 20, wire::MoveReq{.volume_id = vol, .first = 0, .count = 1, .to_dev = 2});
	r.flush();
	r.now += kWaitedOutMs - 1;
	r.node->tick();
	r.copies();
	// Not even frozen yet: IO would only wait longer.
	assert_int_equal(r.entry(vol, 0).state, MDR_EXT_MAPPED);
	assert_int_equal(r.entry(vol, 0).generation, 2);
	assert_true(r.quiet(adm));
	r.now += 1;
	r.node->tick();
	r.flush();	// MOVE_BEGIN, then the copy
	r.copies();
	assert_int_equal(status_of(r.one(adm)), MDR_ST_OK);
	assert_true(r.extent_holds(r.entry(vol, 0), 7));
	assert_int_equal(r.entry(vol, 0).generation, 4);
}

} // namespace

int main()
{
	mdnode::set_log_level(mdnode::LogLevel::error);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_move_freezes_copies_and_publishes),
		cmocka_unit_test(test_move_back_and_forth),
		cmocka_unit_test(test_silent_holder_delays_the_copy_until_its_lease_expires),
		cmocka_unit_test(test_move_after_a_lapse_waits_out_the_holders_io),
		cmocka_unit_test(test_lapsed_holder_is_not_cut_off_for_a_slow_ack),
		cmocka_unit_test(test_reconnected_holder_gets_the_push_again),
		cmocka_unit_test(test_no_copy_within_the_grace_after_a_start),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
