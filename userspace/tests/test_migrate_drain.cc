// SPDX-License-Identifier: GPL-2.0
//
// test_migrate_drain.cc - MDR_OP_DRAIN, driven through the Net seam with a
// fake transport: every extent of every volume moves off the device, also
// one allocated behind the drain's scan while it runs.
#include <cstdint>
#include <variant>

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
// Drains

// DRAIN moves every extent of every volume off the device.
void test_drain_empties_a_device(void **)
{
	Rig r;
	Setup s(r);
	const uint64_t other = r.create(s.adm, "db2", 2 * kExtent);
	r.open(s.host, other);
	const wire::Entry o = r.alloc(s.host, other, 1);
	r.write_extent(o, 300);

	r.send(s.adm, 80, wire::DrainReq{.dev_id = 1});
	for (int i = 0; i < 3; i++) {
		r.flush();
		wire::Msg push = r.one(s.host);
		assert_int_equal(std::get<wire::Invalidate>(push.body).reason, MDR_INVAL_MOVE);
		r.ack(s.host, push);
		r.copies();
		push = r.one(s.host);
		assert_int_equal(std::get<wire::Invalidate>(push.body).reason, MDR_INVAL_ALLOC);
		r.ack(s.host, push);
	}
	wire::Msg m = r.one(s.adm);
	auto *rep = std::get_if<wire::DrainRep>(&m.body);
	if (!rep)
		fail_msg("drain: status %u", status_of(m));
	assert_int_equal(rep->dev_id, 1);
	assert_int_equal(rep->status, MDR_ST_OK);
	assert_int_equal(rep->moved, 3);
	assert_int_equal(rep->remaining, 0);
	assert_int_equal(rep->bytes, 3 * kExtent);
	assert_int_equal(r.used(1), 0);
	assert_true(r.extent_holds(r.entry(s.vol, 0), 100));
	assert_true(r.extent_holds(r.entry(s.vol, 1), 101));
	assert_true(r.extent_holds(r.entry(other, 1), 300));

	// Nothing left: answered at once.
	assert_int_equal(r.call(s.adm, 81, wire::DrainReq{.dev_id = 1}), MDR_ST_OK);
}

// An extent allocated on the device behind the drain's scan, while the
// drain runs, is moved too: a pass that moved anything is followed by
// another from the start.
void test_drain_finds_extents_allocated_behind_it(void **)
{
	Rig r;
	r.past_grace();
	const ConnId adm = r.admin();
	const uint64_t db1 = r.create(adm, "db1", 2 * kExtent);
	const uint64_t db2 = r.create(adm, "db2", 2 * kExtent);
	const ConnId host = r.host(0x1111);
	r.open(host, db1);
	r.open(host, db2);
	const wire::Entry ahead = r.alloc(host, db2, 1);
	assert_int_equal(ahead.dev_id, 1);
	r.write_extent(ahead, 300);
	auto freeze = [&](uint64_t volume_id, uint64_t index) {
		r.flush();
		wire::Msg push = r.one(host);
		const auto &inv = std::get<wire::Invalidate>(push.body);
		assert_int_equal(inv.reason, MDR_INVAL_MOVE);
		assert_int_equal(inv.volume_id, volume_id);
		assert_int_equal(inv.first, index);
		r.ack(host, push);
	};
	auto publish = [&] {
		r.copies();
		wire::Msg push = r.one(host);
		assert_int_equal(std::get<wire::Invalidate>(push.body).reason, MDR_INVAL_ALLOC);
		r.ack(host, push);
	};

	r.send(adm, 80, wire::DrainReq{.dev_id = 1});
	freeze(db2, 1);
	// the scan is past db1: its extent 0 lands behind it
	const wire::Entry behind = r.alloc(host, db1, 0);
	assert_int_equal(behind.dev_id, 1);
	r.write_extent(behind, 100);
	publish();
	freeze(db1, 0);			// found by the second pass
	publish();
	wire::Msg m = r.one(adm);
	auto *rep = std::get_if<wire::DrainRep>(&m.body);
	if (!rep)
		fail_msg("drain: status %u", status_of(m));
	assert_int_equal(rep->status, MDR_ST_OK);
	assert_int_equal(rep->moved, 2);
	assert_int_equal(rep->remaining, 0);
	assert_int_equal(r.used(1), 0);
	assert_true(r.extent_holds(r.entry(db1, 0), 100));
	assert_true(r.extent_holds(r.entry(db2, 1), 300));
}

} // namespace

int main()
{
	mdnode::set_log_level(mdnode::LogLevel::error);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drain_empties_a_device),
		cmocka_unit_test(test_drain_finds_extents_allocated_behind_it),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
