// SPDX-License-Identifier: GPL-2.0
//
// test_node_alloc.cc - mdnode's ALLOC, through the Net seam with a fake
// transport: durable before the reply and idempotent; its invalidation
// fan-out settled by the other holders' acks, by their leases running out
// (also of holders that cannot be reached), by a CLOSE or by a delete;
// ALLOCs of an extent in flight join it.
#include <cstdint>
#include <variant>
#include <vector>

#include "lib/wire/wire.h"
#include "mdnode/log.h"
#include "mdnode/node.h"

#include "tests/test_node.h"

#include "tests/common/cmocka_cxx.h"

namespace wire = mdr::wire;
using mdnode::ConnId;

namespace {

using namespace mdr::test;

// ---------------------------------------------------------------------------
// ALLOC and the invalidation fan-out

// With no other lease holder, ALLOC is answered once the journal has the
// change, with the entry the table now holds; a retry is answered at once
// from the table, journaling nothing.
void test_alloc_is_durable_before_the_reply_and_idempotent(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId h = r.host(1, 0x1);

	r.open(h, vol);
	const uint64_t records = r.journal->stats().records;
	r.send(h, 30, wire::AllocReq{.volume_id = vol, .index = 5});
	assert_true(r.quiet(h));
	assert_int_equal(wire::decode_entry(r.store->volume(vol)->table.entries()[5]).state,
			 MDR_EXT_UNALLOCATED);
	r.flush();
	const wire::Entry e = expect_alloc(r, r.one(h), 30, vol, 5);
	assert_int_equal(r.journal->stats().records, records + 1);

	r.send(h, 31, wire::AllocReq{.volume_id = vol, .index = 5});
	const wire::Entry again = expect_alloc(r, r.one(h), 31, vol, 5);
	assert_true(again == e);
	assert_int_equal(r.journal->stats().records, records + 1);
	assert_int_equal(r.store->volume(vol)->allocated, 1);
	assert_int_equal(r.node->stats().invalidations, 0);

	// Beyond the volume.
	assert_int_equal(r.call(h, 32, wire::AllocReq{.volume_id = vol, .index = 64}),
			 MDR_ST_INVAL);
}

// Another lease holder hears of the allocation before the writer gets its
// reply; the reply waits for that holder's ack, and only its own ack of its
// own push counts.
void test_alloc_fan_out_settles_on_ack(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const uint64_t other_vol = r.create(adm, "w", 4 * MiB, 1);
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(1, 0xb);
	const ConnId c = r.host(1, 0xc);	// holds a lease on another volume only

	r.open(a, vol);
	r.open(b, vol);
	r.open(c, other_vol);
	r.send(a, 40, wire::AllocReq{.volume_id = vol, .index = 3});
	r.flush();
	assert_true(r.quiet(a));
	assert_true(r.quiet(c));
	const uint64_t gen = wire::decode_entry(r.store->volume(vol)->table.entries()[3]).generation;
	const wire::Msg pm = r.one(b);
	const wire::Invalidate push = expect_push(pm, vol, 3, gen);
	assert_int_equal(r.node->stats().invalidations, 1);

	// An ack of a push never sent, and a third host acking b's push.
	r.send(b, pm.hdr.req_id + 1000, r.ack_of(b, push));
	r.send(c, pm.hdr.req_id, r.ack_of(c, push));
	r.node->tick();
	assert_true(r.quiet(a));
	assert_true(r.quiet(b));
	assert_true(r.quiet(c));

	r.send(b, pm.hdr.req_id, r.ack_of(b, push));
	assert_true(r.quiet(b));	// an ack has no reply
	const wire::Entry e = expect_alloc(r, r.one(a), 40, vol, 3);
	assert_int_equal(e.generation, gen);

	// A second ack of the same push changes nothing.
	r.send(b, pm.hdr.req_id, r.ack_of(b, push));
	assert_true(r.quiet(a));
	assert_true(r.net.disconnects.empty());
}

// A holder that does not ack is waited out: the reply goes once its lease
// has run out (and tick() reaped it), not before; its late ack is ignored.
void test_alloc_fan_out_settles_on_lease_expiry(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(1, 0xb);
	const int64_t t0 = r.now;

	r.open(a, vol);
	r.open(b, vol);
	r.send(a, 50, wire::AllocReq{.volume_id = vol, .index = 0});
	r.flush();
	const wire::Msg pm = r.one(b);
	const wire::Invalidate push = expect_push(
		pm, vol, 0, wire::decode_entry(r.store->volume(vol)->table.entries()[0]).generation);

	// The writer keeps its own lease; b's runs out at t0 + kHeldMs.
	r.now = t0 + kLeaseMs;
	assert_int_equal(r.call(a, 51, wire::RenewReq{.volume_id = vol}), MDR_ST_OK);
	r.now = t0 + kHeldMs - 1;
	r.node->tick();
	assert_true(r.quiet(a));
	r.now = t0 + kHeldMs;
	r.node->tick();
	expect_alloc(r, r.one(a), 50, vol, 0);
	assert_int_equal(r.node->stats().lease_expiries, 1);

	r.send(b, pm.hdr.req_id, r.ack_of(b, push));
	assert_true(r.quiet(a));
	assert_true(r.quiet(b));
	assert_int_equal(r.call(b, 52, wire::RenewReq{.volume_id = vol}), MDR_ST_STALE);
	assert_int_equal(r.info(adm, "v").vol.open_count, 1);
}

// A holder that is not connected gets no push and is waited out; so is one
// that goes away between the push and its ack, and one whose connection is
// going (its push cannot be sent, and stays held back until then).
void test_fan_out_waits_out_unreachable_holders(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(1, 0xb);
	const ConnId c = r.host(1, 0xc);
	const ConnId d = r.host(1, 0xd);
	const int64_t t0 = r.now;

	r.open(a, vol);
	r.open(b, vol);
	r.open(c, vol);
	r.open(d, vol);
	r.node->on_disconnected(b);
	r.net.down.insert(d);
	r.send(a, 60, wire::AllocReq{.volume_id = vol, .index = 7});
	r.flush();
	assert_true(r.quiet(b));
	assert_true(r.quiet(d));
	expect_push(r.one(c), vol, 7,
		    wire::decode_entry(r.store->volume(vol)->table.entries()[7]).generation);
	r.node->on_disconnected(c);
	assert_int_equal(r.node->stats().invalidations, 1);

	r.now = t0 + kLeaseMs;
	assert_int_equal(r.call(a, 61, wire::RenewReq{}), MDR_ST_OK);
	r.now = t0 + kHeldMs - 1;
	r.node->tick();
	assert_true(r.quiet(a));
	r.now = t0 + kHeldMs;
	r.node->tick();
	expect_alloc(r, r.one(a), 60, vol, 7);
	assert_int_equal(r.node->stats().lease_expiries, 3);
}

// ALLOCs of an extent whose allocation is in flight join it: one record,
// one push, and every requester gets the same entry once the push is acked.
void test_alloc_requests_join_an_allocation_in_flight(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(1, 0xb);

	r.open(a, vol);
	r.open(b, vol);
	const uint64_t records = r.journal->stats().records;
	r.send(a, 70, wire::AllocReq{.volume_id = vol, .index = 9});
	r.send(a, 71, wire::AllocReq{.volume_id = vol, .index = 9});	// a retry
	r.send(b, 80, wire::AllocReq{.volume_id = vol, .index = 9});	// a race
	assert_true(r.quiet(a));
	assert_true(r.quiet(b));
	r.flush();
	assert_int_equal(r.journal->stats().records, records + 1);
	assert_int_equal(r.store->volume(vol)->allocated, 1);

	// b is a holder other than the first writer: it is told, and its own
	// ALLOC waits for its ack like the others.
	const wire::Msg pm = r.one(b);
	const wire::Invalidate push = expect_push(
		pm, vol, 9, wire::decode_entry(r.store->volume(vol)->table.entries()[9]).generation);
	assert_true(r.quiet(a));
	r.send(b, pm.hdr.req_id, r.ack_of(b, push));

	auto replies = r.take(a);
	assert_int_equal(replies.size(), 2);
	const wire::Entry e = expect_alloc(r, replies[0], 70, vol, 9);
	assert_true(expect_alloc(r, replies[1], 71, vol, 9) == e);
	assert_true(expect_alloc(r, r.one(b), 80, vol, 9) == e);
	assert_int_equal(r.node->stats().invalidations, 1);

	// Another extent is a separate allocation.
	r.send(b, 81, wire::AllocReq{.volume_id = vol, .index = 10});
	r.flush();
	const wire::Msg pm2 = r.one(a);
	r.send(a, pm2.hdr.req_id, r.ack_of(a, std::get<wire::Invalidate>(pm2.body)));
	assert_false(expect_alloc(r, r.one(b), 81, vol, 10) == e);
}

// Regression: a holder that CLOSEs the volume instead of acking the push
// has dropped its lease, so the fan-out no longer waits for it. It used to
// wait for ever (the lease it waited on was gone, so it never expired),
// and every later ALLOC of that extent joined the hung one.
void test_close_before_ack_settles_the_fan_out(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(1, 0xb);

	r.open(a, vol);
	r.open(b, vol);
	r.send(a, 90, wire::AllocReq{.volume_id = vol, .index = 4});
	r.flush();
	const wire::Msg pm = r.one(b);
	assert_true(std::holds_alternative<wire::Invalidate>(pm.body));
	assert_true(r.quiet(a));

	r.send(b, 91, wire::CloseReq{.volume_id = vol});
	auto out = r.take(b);
	assert_int_equal(out.size(), 1);
	assert_true(std::holds_alternative<wire::CloseRep>(out[0].body));
	const wire::Entry e = expect_alloc(r, r.one(a), 90, vol, 4);

	// Its late ack is harmless, and the extent is answered at once again.
	r.send(b, pm.hdr.req_id, r.ack_of(b, std::get<wire::Invalidate>(pm.body)));
	r.send(a, 92, wire::AllocReq{.volume_id = vol, .index = 4});
	assert_true(expect_alloc(r, r.one(a), 92, vol, 4) == e);
}

// Same for leases dropped by a delete: holders whose leases lapsed and
// whose IO is waited out, but were not reaped yet, do not hold the volume,
// and the fan-out waiting for them ends with the delete instead of waiting
// for a reap that never comes.
void test_delete_settles_a_fan_out_on_lapsed_leases(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(1, 0xb);

	r.open(a, vol);
	r.open(b, vol);
	r.send(a, 95, wire::AllocReq{.volume_id = vol, .index = 6});
	r.flush();
	assert_true(std::holds_alternative<wire::Invalidate>(r.one(b).body));
	r.now += kHeldMs;	// both lapse; no tick()
	assert_int_equal(r.call(adm, 97, wire::VolDeleteReq{.name = "v"}), MDR_ST_BUSY);
	r.now += kIoHoldMs;
	assert_int_equal(r.call(adm, 96, wire::VolDeleteReq{.name = "v"}), MDR_ST_OK);
	const wire::Msg m = r.one(a);
	assert_int_equal(m.hdr.req_id, 95);
	assert_true(std::holds_alternative<wire::AllocRep>(m.body));
	r.node->tick();
	assert_true(r.quiet(a));
	assert_int_equal(r.node->stats().lease_expiries, 0);
}

} // namespace

int main()
{
	mdnode::set_log_level(mdnode::LogLevel::error);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_is_durable_before_the_reply_and_idempotent),
		cmocka_unit_test(test_alloc_fan_out_settles_on_ack),
		cmocka_unit_test(test_alloc_fan_out_settles_on_lease_expiry),
		cmocka_unit_test(test_fan_out_waits_out_unreachable_holders),
		cmocka_unit_test(test_alloc_requests_join_an_allocation_in_flight),
		cmocka_unit_test(test_close_before_ack_settles_the_fan_out),
		cmocka_unit_test(test_delete_settles_a_fan_out_on_lapsed_leases),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
