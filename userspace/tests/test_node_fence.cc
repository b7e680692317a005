// SPDX-License-Identifier: GPL-2.0
//
// test_node_fence.cc - a host that owes an invalidation ack is fenced by
// its host id, across its connections: once it has owed one for lease_ms +
// margin while holding its lease, its RENEW is answered STALE and its OPEN
// AGAIN, its lease runs out and the ALLOC that waited for it completes; the
// fence goes when no fan-out waits for it. A host that acks in time, or
// that stopped renewing, is never fenced.
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

// Hosts a and b of tenant 1 hold leases on a volume from t0; a allocates
// an extent, and its ALLOC waits for b's ack of the push.
struct Waiting {
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(1, 0xb);
	const int64_t t0 = r.now;

	Waiting(uint64_t req_id, uint64_t index)
	{
		r.open(a, vol);
		r.open(b, vol);
		r.send(a, req_id, wire::AllocReq{.volume_id = vol, .index = index});
		r.flush();
		assert_true(std::holds_alternative<wire::Invalidate>(r.one(b).body));
	}

	// Halfway through its lease b's connection goes; it connects again
	// and opens again at once, gets the push again there (*push), and
	// renews at t0 + kLeaseMs, as a does. b's new connection.
	ConnId reconnect(uint64_t req_id, wire::Msg *push)
	{
		r.now = t0 + kLeaseMs / 2;
		r.node->on_disconnected(b);
		const ConnId b2 = r.host(1, 0xb);
		r.send(b2, req_id, wire::OpenReq{.volume_id = vol});
		std::vector<wire::Msg> out = r.take(b2);
		assert_int_equal(out.size(), 2);
		assert_true(std::holds_alternative<wire::OpenRep>(out[0].body));
		assert_true(std::holds_alternative<wire::Invalidate>(out[1].body));
		*push = out[1];
		r.now = t0 + kLeaseMs;
		assert_int_equal(r.call(a, req_id + 1, wire::RenewReq{}), MDR_ST_OK);
		assert_int_equal(r.call(b2, req_id + 2, wire::RenewReq{}), MDR_ST_OK);
		return b2;
	}
};

// b renews and never acks, and goes to a new connection halfway through
// its lease, where it opens again and gets the push again: the push on
// the new connection is never a lease period old, so no connection is
// cut, but b owes since the first push and is fenced then.
void test_a_host_that_reconnects_within_its_lease_is_fenced(void **)
{
	Waiting w(200, 3);
	Rig &r = w.r;
	wire::Msg pm;
	const ConnId b2 = w.reconnect(201, &pm);
	const int64_t t0 = w.t0;

	r.now = t0 + kHeldMs - 1;
	r.node->tick();
	assert_int_equal(r.node->stats().fences, 0);
	assert_int_equal(r.call(b2, 204, wire::RenewReq{}), MDR_ST_OK);
	r.now = t0 + kHeldMs;
	r.node->tick();
	assert_int_equal(r.node->stats().fences, 1);
	assert_true(r.net.disconnects.empty());
	assert_int_equal(r.node->stats().push_timeouts, 0);

	// Fenced: no renewal on this connection, no lease on another.
	assert_int_equal(r.call(b2, 205, wire::RenewReq{}), MDR_ST_STALE);
	const ConnId b3 = r.host(1, 0xb);
	assert_int_equal(r.call(b3, 206, wire::OpenReq{.volume_id = w.vol}), MDR_ST_AGAIN);
	// The others are not: a renews, and waits.
	assert_int_equal(r.call(w.a, 207, wire::RenewReq{}), MDR_ST_OK);
	assert_true(r.quiet(w.a));

	// b's lease, last renewed at t0 + kHeldMs - 1, runs out: the ALLOC
	// goes on, and nothing waits for b any more.
	r.now = t0 + kHeldMs - 1 + kHeldMs - 1;
	r.node->tick();
	assert_true(r.quiet(w.a));
	r.now = t0 + kHeldMs - 1 + kHeldMs;
	r.node->tick();
	expect_alloc(r, r.one(w.a), 200, w.vol, 3);
	assert_int_equal(r.node->stats().lease_expiries, 1);
	// Fence lifted: b opens again.
	r.open(b3, w.vol);
	assert_int_equal(r.node->stats().fences, 1);
}

// A fenced host that acks at last settles the fan-out at once, and the
// fence goes at the next tick: it renews again.
void test_a_fenced_host_that_acks_is_no_longer_fenced(void **)
{
	Waiting w(210, 4);
	Rig &r = w.r;
	wire::Msg pm;
	const ConnId b2 = w.reconnect(211, &pm);

	r.now = w.t0 + kHeldMs;
	r.node->tick();
	assert_int_equal(r.node->stats().fences, 1);
	assert_int_equal(r.call(b2, 214, wire::RenewReq{}), MDR_ST_STALE);

	r.send(b2, pm.hdr.req_id, r.ack_of(b2, std::get<wire::Invalidate>(pm.body)));
	expect_alloc(r, r.one(w.a), 210, w.vol, 4);
	r.node->tick();
	assert_int_equal(r.call(b2, 215, wire::RenewReq{}), MDR_ST_OK);
	assert_int_equal(r.node->stats().fences, 1);
}

// A host that stops renewing (cut off from the node) owes no longer than
// its lease: it is not fenced, the ALLOC goes on when its lease lapses,
// and it opens again at once on a new connection.
void test_a_host_that_stops_renewing_is_not_fenced(void **)
{
	Waiting w(220, 5);
	Rig &r = w.r;

	r.now = w.t0 + kLeaseMs;
	assert_int_equal(r.call(w.a, 221, wire::RenewReq{}), MDR_ST_OK);
	r.now = w.t0 + kHeldMs;
	r.node->tick();
	expect_alloc(r, r.one(w.a), 220, w.vol, 5);
	assert_int_equal(r.node->stats().fences, 0);
	r.node->on_disconnected(w.b);
	const ConnId b2 = r.host(1, 0xb);
	r.open(b2, w.vol);
	r.now = w.t0 + 2 * kHeldMs;
	r.node->tick();
	assert_int_equal(r.node->stats().fences, 0);
}

} // namespace

int main()
{
	mdnode::set_log_level(mdnode::LogLevel::error);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_host_that_reconnects_within_its_lease_is_fenced),
		cmocka_unit_test(test_a_fenced_host_that_acks_is_no_longer_fenced),
		cmocka_unit_test(test_a_host_that_stops_renewing_is_not_fenced),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
