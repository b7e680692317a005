// SPDX-License-Identifier: GPL-2.0
//
// test_node_leases.cc - mdnode's leases, through the Net seam with a fake
// transport: RENEW extends, a lapsed lease is STALE, a lease outlives its
// connection, CLOSE drops it (also once lapsed), and delete and resize are
// refused while leases are held, also those granted before a start.
#include <cstdint>
#include <memory>
#include <variant>
#include <vector>

#include "lib/wire/wire.h"
#include "mdnode/log.h"
#include "mdnode/node.h"

#include "tests/test_node.h"

#include "tests/common/cmocka_cxx.h"

namespace wire = mdr::wire;
using mdnode::ConnId;
using mdnode::Node;

namespace {

using namespace mdr::test;

// ---------------------------------------------------------------------------
// Leases

// RENEW extends a valid lease; once it lapsed on the node's clock it is
// STALE (one volume, or all of them), also before tick() reaps it; once
// reaped the volume is no longer open on the connection.
void test_renew_extends_and_a_lapsed_lease_is_stale(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const uint64_t vol2 = r.create(adm, "w", 4 * MiB, 1);
	const ConnId h = r.host(1, 0x1);
	const int64_t t0 = r.now;

	r.open(h, vol);
	r.open(h, vol2);
	r.now = t0 + kHeldMs - 1;
	r.send(h, 20, wire::RenewReq{.volume_id = vol});
	const wire::Msg m = r.one(h);
	auto *rep = std::get_if<wire::RenewRep>(&m.body);
	assert_non_null(rep);
	assert_int_equal(rep->lease_ms, kLeaseMs);

	// vol2 was not renewed: it lapses at t0 + kHeldMs, vol lives on.
	r.now = t0 + kHeldMs;
	assert_int_equal(r.call(h, 21, wire::RenewReq{.volume_id = vol2}), MDR_ST_STALE);
	assert_int_equal(r.call(h, 22, wire::AllocReq{.volume_id = vol2}), MDR_ST_STALE);
	assert_int_equal(r.call(h, 23, wire::RenewReq{}), MDR_ST_STALE);	// all or none
	assert_int_equal(r.call(h, 24, wire::AllocReq{.volume_id = vol, .index = 1}),
			 MDR_ST_OK);

	r.node->tick();
	assert_int_equal(r.node->stats().lease_expiries, 1);
	assert_int_equal(r.call(h, 25, wire::RenewReq{}), MDR_ST_OK);	// vol only now
	assert_int_equal(r.call(h, 26, wire::RenewReq{.volume_id = vol2}), MDR_ST_STALE);

	// vol was renewed at t0 + kHeldMs - 1 and at t0 + kHeldMs.
	r.now = t0 + 2 * kHeldMs - 1;
	assert_int_equal(r.call(h, 27, wire::RenewReq{.volume_id = vol}), MDR_ST_OK);
	r.now = t0 + 3 * kHeldMs;
	r.node->tick();
	assert_int_equal(r.node->stats().lease_expiries, 2);
	assert_int_equal(r.call(h, 28, wire::RenewReq{.volume_id = vol}), MDR_ST_STALE);

	// Opening again starts a fresh lease.
	r.open(h, vol2);
	assert_int_equal(r.call(h, 29, wire::RenewReq{}), MDR_ST_OK);
	assert_int_equal(r.info(adm, "w").vol.open_count, 1);
	assert_int_equal(r.info(adm, "v").vol.open_count, 0);
}

// Opens belong to the connection, leases to the host: after a reconnect
// RENEW is STALE until the host opens again, but the old lease still keeps
// the volume from being deleted until it runs out and its IO is waited out.
void test_a_lease_outlives_its_connection(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId h = r.host(1, 0x1);
	const int64_t t0 = r.now;

	r.open(h, vol);
	r.node->on_disconnected(h);
	assert_int_equal(r.node->sessions(), 1);	// the admin's
	const ConnId h2 = r.host(1, 0x1);
	assert_int_equal(r.call(h2, 1, wire::RenewReq{.volume_id = vol}), MDR_ST_STALE);
	assert_int_equal(r.call(h2, 2, wire::AllocReq{.volume_id = vol}), MDR_ST_STALE);
	assert_int_equal(r.info(adm, "v").vol.open_count, 1);
	assert_int_equal(r.call(adm, 3, wire::VolDeleteReq{.name = "v"}), MDR_ST_BUSY);

	r.now = t0 + kHeldMs;
	r.node->tick();
	assert_int_equal(r.info(adm, "v").vol.open_count, 0);
	assert_int_equal(r.call(adm, 4, wire::VolDeleteReq{.name = "v"}), MDR_ST_BUSY);
	r.now = t0 + kWaitedOutMs;
	r.node->tick();
	assert_int_equal(r.call(adm, 5, wire::VolDeleteReq{.name = "v"}), MDR_ST_OK);
}

// CLOSE drops the lease at once: the volume is no longer open (RENEW and
// ALLOC are STALE, a second CLOSE is NOENT) and may be deleted.
void test_close_drops_the_lease(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId h = r.host(1, 0x1);
	const ConnId h2 = r.host(1, 0x2);

	assert_int_equal(r.call(h, 1, wire::CloseReq{.volume_id = vol}), MDR_ST_NOENT);
	r.open(h, vol);
	// Only the connection that opened it closes it.
	assert_int_equal(r.call(h2, 2, wire::CloseReq{.volume_id = vol}), MDR_ST_NOENT);
	assert_int_equal(r.call(adm, 3, wire::VolDeleteReq{.name = "v"}), MDR_ST_BUSY);

	r.send(h, 4, wire::CloseReq{.volume_id = vol});
	assert_true(std::holds_alternative<wire::CloseRep>(r.one(h).body));
	assert_int_equal(r.info(adm, "v").vol.open_count, 0);
	assert_int_equal(r.call(h, 5, wire::RenewReq{.volume_id = vol}), MDR_ST_STALE);
	assert_int_equal(r.call(h, 6, wire::AllocReq{.volume_id = vol}), MDR_ST_STALE);
	assert_int_equal(r.call(h, 7, wire::CloseReq{.volume_id = vol}), MDR_ST_NOENT);
	assert_int_equal(r.call(adm, 8, wire::VolDeleteReq{.name = "v"}), MDR_ST_OK);
	assert_true(r.net.forgotten == std::vector<uint64_t>{vol});
	assert_int_equal(r.node->stats().lease_expiries, 0);
}

// A lease that lapsed here may still be closed on its connection: the host
// drains its IO before CLOSE, so the volume need not wait io_hold_ms.
void test_close_ends_a_lapsed_lease(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId h = r.host(1, 0x1);
	const ConnId other = r.host(1, 0x1);

	r.open(h, vol);
	r.now += kHeldMs;
	r.node->tick();
	assert_int_equal(r.call(adm, 2, wire::VolDeleteReq{.name = "v"}), MDR_ST_BUSY);
	// Not on another connection of the same host.
	assert_int_equal(r.call(other, 3, wire::CloseReq{.volume_id = vol}), MDR_ST_NOENT);
	r.send(h, 4, wire::CloseReq{.volume_id = vol});
	assert_true(std::holds_alternative<wire::CloseRep>(r.one(h).body));
	assert_int_equal(r.call(h, 5, wire::CloseReq{.volume_id = vol}), MDR_ST_NOENT);
	r.send(adm, 6, wire::VolDeleteReq{.name = "v"});
	r.flush();
	assert_true(std::holds_alternative<wire::VolDeleteRep>(r.one(adm).body));
}

// DELETE and RESIZE are BUSY while any host holds a lease, and leave the
// volume as it was; once the lease has lapsed and the host's IO is waited
// out they go ahead and the table's registrations are dropped.
void test_delete_and_resize_are_busy_while_leases_are_held(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId h = r.host(1, 0x1);
	const int64_t t0 = r.now;

	r.open(h, vol);
	assert_int_equal(r.call(h, 1, wire::AllocReq{.volume_id = vol, .index = 2}), MDR_ST_OK);
	assert_int_equal(r.call(adm, 2, wire::VolDeleteReq{.name = "v"}), MDR_ST_BUSY);
	assert_int_equal(r.call(adm, 3, wire::VolResizeReq{.size = 8 * MiB, .name = "v"}),
			 MDR_ST_BUSY);
	assert_int_equal(r.call(adm, 4, wire::VolDeleteReq{.name = "nope"}), MDR_ST_NOENT);
	assert_int_equal(r.store->volume(vol)->size, 4 * MiB);
	assert_int_equal(r.store->volume(vol)->allocated, 1);
	assert_true(r.net.forgotten.empty());

	// Expired, its IO maybe still at the devices: still busy.
	r.now = t0 + kHeldMs;
	assert_int_equal(r.call(adm, 9, wire::VolDeleteReq{.name = "v"}), MDR_ST_BUSY);
	// Waited out, not reaped yet: no longer held.
	r.now = t0 + kWaitedOutMs;
	r.send(adm, 5, wire::VolResizeReq{.size = 8 * MiB, .name = "v"});
	assert_true(r.quiet(adm));	// durable first
	// Meanwhile no lease: it would outlive the table it covers.
	assert_int_equal(r.call(h, 10, wire::OpenReq{.volume_id = vol}), MDR_ST_BUSY);
	r.flush();
	const wire::Msg m = r.one(adm);
	auto *rep = std::get_if<wire::VolResizeRep>(&m.body);
	assert_non_null(rep);
	assert_int_equal(rep->vol.size, 8 * MiB);
	assert_int_equal(rep->vol.allocated, 1);
	assert_true(r.net.forgotten == std::vector<uint64_t>{vol});

	r.send(adm, 6, wire::VolDeleteReq{.name = "v"});
	r.flush();
	assert_true(std::holds_alternative<wire::VolDeleteRep>(r.one(adm).body));
	assert_true(r.net.forgotten == (std::vector<uint64_t>{vol, vol}));
	assert_null(r.store->volume(vol));
	r.node->tick();
	assert_int_equal(r.call(h, 7, wire::RenewReq{}), MDR_ST_OK);	// nothing open
}

// After a start, a host may still hold a lease the previous process
// granted, and write: a volume from before the start is neither deleted
// nor resized until lease + margin + io hold have passed. One created since
// cannot have such a holder.
void test_delete_waits_out_the_leases_of_before_a_start(void **)
{
	Rig r;
	ConnId adm = r.admin();
	r.create(adm, "old", 4 * MiB, 1);
	const int64_t t0 = r.now;

	// The same store, a new process.
	r.node = std::make_unique<Node>(Rig::options(), *r.store, *r.journal,
					[&r] { return r.now; });
	r.node->attach(r.net);
	adm = r.admin();
	r.create(adm, "new", 4 * MiB, 1);
	assert_int_equal(r.call(adm, 2, wire::VolDeleteReq{.name = "old"}), MDR_ST_BUSY);
	assert_int_equal(r.call(adm, 3, wire::VolResizeReq{.size = 8 * MiB, .name = "old"}),
			 MDR_ST_BUSY);
	r.send(adm, 4, wire::VolDeleteReq{.name = "new"});
	r.flush();
	assert_true(std::holds_alternative<wire::VolDeleteRep>(r.one(adm).body));
	r.now = t0 + kWaitedOutMs - 1;
	assert_int_equal(r.call(adm, 5, wire::VolDeleteReq{.name = "old"}), MDR_ST_BUSY);
	r.now = t0 + kWaitedOutMs;
	r.send(adm, 6, wire::VolDeleteReq{.name = "old"});
	r.flush();
	assert_true(std::holds_alternative<wire::VolDeleteRep>(r.one(adm).body));
}

// After a start, a host the process before granted a lease may cache an
// extent as unallocated, and this process cannot push to a holder it does
// not know: no extent of a volume from before the start is allocated until
// that lease has run out (lease + margin), nor is one already mapped
// answered (the process before may have died between its commit and the
// push that told those hosts), while a volume created since allocates at
// once.
void test_alloc_waits_out_the_leases_of_before_a_start(void **)
{
	Rig r;
	ConnId adm = r.admin();
	const uint64_t old_vol = r.create(adm, "old", 4 * MiB, 1);
	ConnId h = r.host(1, 0xa);
	r.open(h, old_vol);
	const wire::Entry mapped = expect_alloc(
		r, [&] {
			r.send(h, 1, wire::AllocReq{.volume_id = old_vol, .index = 0});
			r.flush();
			return r.one(h);
		}(), 1, old_vol, 0);
	const int64_t t0 = r.now;

	// The same store, a new process: the lease above is unknown to it.
	r.node = std::make_unique<Node>(Rig::options(), *r.store, *r.journal,
					[&r] { return r.now; });
	r.node->attach(r.net);
	adm = r.admin();
	const uint64_t new_vol = r.create(adm, "new", 4 * MiB, 1);
	h = r.host(1, 0xa);
	r.open(h, old_vol);
	r.open(h, new_vol);
	const auto free_before = r.store->devices();

	assert_int_equal(r.call(h, 2, wire::AllocReq{.volume_id = old_vol, .index = 1}),
			 MDR_ST_AGAIN);
	// Nothing reserved, nothing journaled.
	assert_true(r.store->devices() == free_before);
	assert_int_equal(r.store->counts().in_flight, 0);
	assert_int_equal(r.call(h, 3, wire::AllocReq{.volume_id = old_vol, .index = 0}),
			 MDR_ST_AGAIN);
	r.send(h, 4, wire::AllocReq{.volume_id = new_vol, .index = 1});
	r.flush();
	expect_alloc(r, r.one(h), 4, new_vol, 1);

	r.now = t0 + kHeldMs - 1;
	assert_int_equal(r.call(h, 5, wire::AllocReq{.volume_id = old_vol, .index = 1}),
			 MDR_ST_AGAIN);
	assert_int_equal(r.call(h, 7, wire::RenewReq{}), MDR_ST_OK);
	r.now = t0 + kHeldMs;
	r.send(h, 6, wire::AllocReq{.volume_id = old_vol, .index = 1});
	r.flush();
	expect_alloc(r, r.one(h), 6, old_vol, 1);
	r.send(h, 8, wire::AllocReq{.volume_id = old_vol, .index = 0});
	r.flush();
	assert_true(expect_alloc(r, r.one(h), 8, old_vol, 0) == mapped);
}

} // namespace

int main()
{
	mdnode::set_log_level(mdnode::LogLevel::error);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_renew_extends_and_a_lapsed_lease_is_stale),
		cmocka_unit_test(test_a_lease_outlives_its_connection),
		cmocka_unit_test(test_close_drops_the_lease),
		cmocka_unit_test(test_delete_and_resize_are_busy_while_leases_are_held),
		cmocka_unit_test(test_delete_waits_out_the_leases_of_before_a_start),
		cmocka_unit_test(test_alloc_waits_out_the_leases_of_before_a_start),
		cmocka_unit_test(test_close_ends_a_lapsed_lease),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
