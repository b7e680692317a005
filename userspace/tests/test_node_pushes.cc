// SPDX-License-Identifier: GPL-2.0
//
// test_node_pushes.cc - how mdnode sends the pushes of a fan-out, through
// the Net seam with a fake transport: within the holder's push credits,
// sent again after a failed send, a holder that renews but never acks cut
// off, and one reconnected that gets its pushes again when it opens again.
#include <cerrno>
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
// Pushes

// A holder gets at most its push_credits pushes unacked (the kernel ends
// the connection on one more); the others wait, in order, and each ack lets
// exactly the next one go. Every ALLOC completes once its push is acked.
void test_pushes_stay_within_the_push_credits(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(1, 0xb, 2);
	auto gen = [&](uint64_t index) {
		return wire::decode_entry(r.store->volume(vol)->table.entries()[index]).generation;
	};

	r.open(a, vol);
	r.open(b, vol);
	for (uint64_t i = 0; i < 5; i++)
		r.send(a, 100 + i, wire::AllocReq{.volume_id = vol, .index = i});
	r.flush();
	assert_true(r.quiet(a));
	std::vector<wire::Msg> out = r.take(b);
	assert_int_equal(out.size(), 2);
	expect_push(out[0], vol, 0, gen(0));
	expect_push(out[1], vol, 1, gen(1));
	assert_int_equal(r.node->stats().invalidations, 2);
	r.node->tick();
	assert_true(r.quiet(b));

	std::vector<wire::Msg> unacked = std::move(out);
	for (uint64_t i = 0; i < 5; i++) {
		const wire::Msg pm = unacked.front();
		unacked.erase(unacked.begin());
		r.send(b, pm.hdr.req_id, r.ack_of(b, std::get<wire::Invalidate>(pm.body)));
		if (i + 2 < 5) {
			const wire::Msg next = r.one(b);
			expect_push(next, vol, i + 2, gen(i + 2));
			unacked.push_back(next);
		} else {
			assert_true(r.quiet(b));
		}
		expect_alloc(r, r.one(a), 100 + i, vol, i);
		assert_true(unacked.size() <= 2);
	}
	assert_int_equal(r.node->stats().invalidations, 5);
	assert_int_equal(r.node->stats().push_timeouts, 0);
	assert_true(r.net.disconnects.empty());
}

// A push whose send fails (the transport's send buffers all in use) is not
// given up: the holder keeps renewing its lease, so the fan-out would wait
// for ever. It goes once sending works, from tick() or when the host sends
// anything, and the ALLOC completes on its ack, not before.
void test_a_push_that_cannot_be_sent_is_sent_again(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(1, 0xb);
	const int64_t t0 = r.now;
	auto gen = [&](uint64_t index) {
		return wire::decode_entry(r.store->volume(vol)->table.entries()[index]).generation;
	};

	r.open(a, vol);
	r.open(b, vol);
	r.net.send_error[b] = -ENOBUFS;
	r.send(a, 110, wire::AllocReq{.volume_id = vol, .index = 1});
	r.flush();
	r.node->tick();
	assert_true(r.quiet(a));
	assert_true(r.quiet(b));
	assert_int_equal(r.node->stats().invalidations, 0);

	// Retried from tick() once sending works.
	r.net.send_error[b] = 0;
	r.now = t0 + kLeaseMs / 4;
	r.node->tick();
	const wire::Msg pm = r.one(b);
	expect_push(pm, vol, 1, gen(1));
	// Renewing is no ack: the ALLOC still waits.
	r.now = t0 + kLeaseMs / 2;
	assert_int_equal(r.call(b, 111, wire::RenewReq{}), MDR_ST_OK);
	assert_int_equal(r.call(a, 112, wire::RenewReq{}), MDR_ST_OK);
	r.node->tick();
	assert_true(r.quiet(a));
	r.send(b, pm.hdr.req_id, r.ack_of(b, std::get<wire::Invalidate>(pm.body)));
	expect_alloc(r, r.one(a), 110, vol, 1);

	// Or with the reply to the next message the host sends.
	r.net.send_error[b] = -ENOBUFS;
	r.send(a, 113, wire::AllocReq{.volume_id = vol, .index = 2});
	r.flush();
	assert_true(r.quiet(b));
	r.net.send_error[b] = 0;
	r.send(b, 114, wire::RenewReq{});
	std::vector<wire::Msg> out = r.take(b);
	assert_int_equal(out.size(), 2);
	assert_true(std::holds_alternative<wire::RenewRep>(out[0].body));
	expect_push(out[1], vol, 2, gen(2));
	assert_true(r.quiet(a));
	r.send(b, out[1].hdr.req_id, r.ack_of(b, std::get<wire::Invalidate>(out[1].body)));
	expect_alloc(r, r.one(a), 113, vol, 2);
	assert_int_equal(r.node->stats().invalidations, 2);
	assert_int_equal(r.node->stats().push_timeouts, 0);
	assert_true(r.net.disconnects.empty());
}

// A holder that renews but never acks would hold the ALLOC for ever: once
// the push has waited as long as a lease is held without renewal, its
// connection is cut (and counted), and what it sends then is ignored, a
// RENEW included, so its lease runs out and the ALLOC completes.
void test_a_holder_that_never_acks_is_cut_off(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(1, 0xb);
	const int64_t t0 = r.now;

	r.open(a, vol);
	r.open(b, vol);
	r.send(a, 120, wire::AllocReq{.volume_id = vol, .index = 5});
	r.flush();
	const wire::Msg pm = r.one(b);
	assert_true(std::holds_alternative<wire::Invalidate>(pm.body));

	r.now = t0 + kLeaseMs;
	assert_int_equal(r.call(a, 121, wire::RenewReq{}), MDR_ST_OK);
	assert_int_equal(r.call(b, 122, wire::RenewReq{}), MDR_ST_OK);
	r.now = t0 + kHeldMs - 1;
	r.node->tick();
	assert_true(r.net.disconnects.empty());
	r.now = t0 + kHeldMs;
	r.node->tick();
	assert_true(r.net.disconnects == std::vector<ConnId>{b});
	assert_int_equal(r.node->stats().push_timeouts, 1);
	assert_true(r.quiet(a));

	// Cut: not renewed, not acked, not cut again while it goes.
	r.send(b, 123, wire::RenewReq{});
	r.send(b, pm.hdr.req_id, r.ack_of(b, std::get<wire::Invalidate>(pm.body)));
	assert_true(r.quiet(b));
	r.node->tick();
	assert_int_equal(r.net.disconnects.size(), 1);
	assert_int_equal(r.node->stats().push_timeouts, 1);
	r.node->on_disconnected(b);
	assert_int_equal(r.node->sessions(), 2);
	// And fenced: a new connection gets no lease.
	assert_int_equal(r.node->stats().fences, 1);
	const ConnId b2 = r.host(1, 0xb);
	assert_int_equal(r.call(b2, 126, wire::OpenReq{.volume_id = vol}), MDR_ST_AGAIN);

	// b's lease, last renewed at t0 + kLeaseMs, runs out.
	r.now = t0 + 2 * kLeaseMs;
	assert_int_equal(r.call(a, 124, wire::RenewReq{}), MDR_ST_OK);
	r.now = t0 + kLeaseMs + kHeldMs - 1;
	r.node->tick();
	assert_true(r.quiet(a));
	r.now = t0 + kLeaseMs + kHeldMs;
	r.node->tick();
	expect_alloc(r, r.one(a), 120, vol, 5);
	assert_int_equal(r.node->stats().lease_expiries, 1);
	assert_int_equal(r.node->stats().push_timeouts, 1);

	// The admin sees it.
	r.send(adm, 125, wire::NodeStatsReq{});
	const wire::Msg sm = r.one(adm);
	auto *st = std::get_if<wire::NodeStatsRep>(&sm.body);
	assert_non_null(st);
	assert_int_equal(st->push_timeouts, 1);
	assert_int_equal(st->invalidations, 1);
}

// A holder whose connection went with a push unacked and more held back
// behind it opens the volume again on a new connection within its lease:
// it gets every push again there, within its credits, and the ALLOCs
// complete on its acks. What the old connection had is gone with it. (One
// cut off for owing the ack a lease period is fenced instead: it opens
// again only once nothing waits for it, test_node_fence.cc.)
void test_a_reconnected_holder_gets_its_pushes_again_on_reopen(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(1, 0xb, 1);
	const int64_t t0 = r.now;
	auto gen = [&](uint64_t index) {
		return wire::decode_entry(r.store->volume(vol)->table.entries()[index]).generation;
	};

	r.open(a, vol);
	r.open(b, vol);
	r.send(a, 130, wire::AllocReq{.volume_id = vol, .index = 6});
	r.send(a, 131, wire::AllocReq{.volume_id = vol, .index = 7});
	r.flush();
	const wire::Msg old = r.one(b);	// the other is held back
	expect_push(old, vol, 6, gen(6));

	r.now = t0 + kLeaseMs / 2;
	assert_int_equal(r.call(a, 132, wire::RenewReq{}), MDR_ST_OK);
	assert_int_equal(r.call(b, 133, wire::RenewReq{}), MDR_ST_OK);
	r.node->tick();
	r.node->on_disconnected(b);	// its connection failed

	const ConnId b2 = r.host(1, 0xb, 1);
	r.send(b2, 134, wire::OpenReq{.volume_id = vol});
	std::vector<wire::Msg> out = r.take(b2);
	assert_int_equal(out.size(), 2);
	assert_true(std::holds_alternative<wire::OpenRep>(out[0].body));
	expect_push(out[1], vol, 6, gen(6));
	// The old connection's push id means nothing here.
	r.send(b2, old.hdr.req_id, r.ack_of(b2, std::get<wire::Invalidate>(old.body)));
	assert_true(r.quiet(b2));
	assert_true(r.quiet(a));

	r.send(b2, out[1].hdr.req_id, r.ack_of(b2, std::get<wire::Invalidate>(out[1].body)));
	const wire::Msg next = r.one(b2);
	expect_push(next, vol, 7, gen(7));
	expect_alloc(r, r.one(a), 130, vol, 6);
	r.send(b2, next.hdr.req_id, r.ack_of(b2, std::get<wire::Invalidate>(next.body)));
	expect_alloc(r, r.one(a), 131, vol, 7);
	assert_true(r.quiet(b2));
	assert_int_equal(r.node->stats().invalidations, 3);
	assert_int_equal(r.node->stats().push_timeouts, 0);
	assert_int_equal(r.node->stats().fences, 0);
	assert_int_equal(r.node->stats().lease_expiries, 0);
	r.node->tick();
	assert_true(r.net.disconnects.empty());
}

} // namespace

int main()
{
	mdnode::set_log_level(mdnode::LogLevel::error);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pushes_stay_within_the_push_credits),
		cmocka_unit_test(test_a_push_that_cannot_be_sent_is_sent_again),
		cmocka_unit_test(test_a_holder_that_never_acks_is_cut_off),
		cmocka_unit_test(test_a_reconnected_holder_gets_its_pushes_again_on_reopen),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
