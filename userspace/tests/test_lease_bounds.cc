// SPDX-License-Identifier: GPL-2.0
//
// test_lease_bounds.cc - the bounds of the leases a process before this one
// may have granted: the file's form and its faults, what a start carries
// over and a clean stop settles, and a node that waits out a longer lease
// of before its start than its own.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "lib/wire/wire.h"
#include "mdnode/config.h"
#include "mdnode/lease_bounds.h"
#include "mdnode/log.h"
#include "mdnode/node.h"
#include "mdnode/startup.h"

#include "tests/test_node.h"

#include "tests/common/cmocka_cxx.h"

namespace wire = mdr::wire;
using mdnode::LeaseBounds;

namespace {

using namespace mdr::test;

void put(const std::string &path, const std::string &text)
{
	std::ofstream(path) << text;
}

void test_the_file_form_round_trips_and_refuses_anything_else(void **)
{
	const LeaseBounds b{.held_ms = 5500, .io_hold_ms = 20000};

	assert_string_equal(mdnode::format_lease_bounds(b).c_str(),
			    "held_ms=5500 io_hold_ms=20000\n");
	auto back = mdnode::parse_lease_bounds(mdnode::format_lease_bounds(b));
	assert_true(back.ok() && back.value() == b);
	assert_true(mdnode::parse_lease_bounds("held_ms=1 io_hold_ms=2").ok());
	for (const char *bad : {"", "\n", "held_ms=5500\n", "io_hold_ms=1 held_ms=2\n",
				"held_ms= io_hold_ms=2\n", "held_ms=-1 io_hold_ms=2\n",
				"held_ms=1 io_hold_ms=2 x\n", "held_ms=1  io_hold_ms=2\n",
				"held_ms=99999999999 io_hold_ms=2\n",
				"held_ms=1 io_hold_ms=600001\n", "held_ms=1 io_hold_ms=2\n\n",
				"held_msx=1 io_hold_ms=2\n"}) {
		auto r = mdnode::parse_lease_bounds(bad);
		if (r.ok())
			fail_msg("'%s' was taken", bad);
		assert_int_equal(r.error(), -EINVAL);
	}
}

void test_a_missing_file_is_none_and_a_bad_one_an_error(void **)
{
	TempDir d("mdr-bounds");

	auto none = mdnode::read_lease_bounds(d.path);
	assert_true(none.ok() && none.value() == LeaseBounds{});
	assert_true(mdnode::write_lease_bounds(d.path, {7, 9}).ok());
	auto b = mdnode::read_lease_bounds(d.path);
	assert_true(b.ok() && b.value() == (LeaseBounds{7, 9}));
	struct stat st;
	assert_int_equal(stat((d.path + "/lease-bounds.tmp").c_str(), &st), -1);

	put(d.path + "/lease-bounds", "held_ms=7\n");
	auto bad = mdnode::read_lease_bounds(d.path);
	assert_false(bad.ok());
	assert_int_equal(bad.error(), -EINVAL);
	assert_non_null(strstr(bad.message().c_str(), "/lease-bounds"));
	put(d.path + "/lease-bounds", std::string(100, '1'));
	assert_false(mdnode::read_lease_bounds(d.path).ok());
	assert_false(mdnode::write_lease_bounds(d.path + "/no/such", {1, 1}).ok());
}

mdnode::Config config_in(const std::string &dir, uint32_t lease_ms, uint32_t io_hold_ms)
{
	mdnode::Config c;

	c.data_dir = dir;
	c.lease_ms = lease_ms;
	c.io_hold_ms = io_hold_ms;
	return c;
}

mdnode::NodeOptions options_of(const mdnode::Config &c)
{
	mdnode::NodeOptions no;

	no.lease_ms = c.lease_ms;
	no.io_hold_ms = c.io_hold_ms;
	return no;
}

// A start waits out the widest of what the file says and its own, and
// keeps that widest on disk until a clean stop past its own grace.
void test_a_start_carries_the_widest_and_a_late_clean_stop_its_own(void **)
{
	TempDir d("mdr-bounds");
	const mdnode::Config first = config_in(d.path, 30000, 20000);
	mdnode::NodeOptions no = options_of(first);

	assert_true(mdnode::carry_lease_bounds(first, no));
	assert_true(no.prior == LeaseBounds{});
	assert_true(mdnode::read_lease_bounds(d.path).value() == (LeaseBounds{30500, 20000}));

	// Restarted with shorter leases and a longer io hold.
	const mdnode::Config second = config_in(d.path, 5000, 25000);
	no = options_of(second);
	assert_true(mdnode::carry_lease_bounds(second, no));
	assert_true(no.prior == (LeaseBounds{30500, 20000}));
	assert_true(mdnode::read_lease_bounds(d.path).value() == (LeaseBounds{30500, 25000}));
	// A stop within its grace keeps the widest; one after it, its own.
	mdnode::settle_lease_bounds(second, no, false);
	assert_true(mdnode::read_lease_bounds(d.path).value() == (LeaseBounds{30500, 25000}));
	mdnode::settle_lease_bounds(second, no, true);
	assert_true(mdnode::read_lease_bounds(d.path).value() == (LeaseBounds{5500, 25000}));

	// A file it cannot trust stops the start.
	put(d.path + "/lease-bounds", "held_ms=oops\n");
	no = options_of(second);
	assert_false(mdnode::carry_lease_bounds(second, no));
}

// Leases of before the start held longer than this process's own are
// waited out: no ALLOC, no delete, for as long as they ask.
void test_a_node_waits_out_the_longer_leases_of_before_its_start(void **)
{
	Rig r;
	ConnId adm = r.admin();
	r.create(adm, "old", 4 * MiB, 1);
	const int64_t t0 = r.now;
	mdnode::NodeOptions o = Rig::options();
	o.prior = {.held_ms = 3 * kHeldMs, .io_hold_ms = 2 * kIoHoldMs};

	r.node = std::make_unique<mdnode::Node>(o, *r.store, *r.journal, [&r] { return r.now; });
	r.node->attach(r.net);
	adm = r.admin();
	const ConnId h = r.host(1, 0xa);
	const uint64_t vol = r.open(h, 1).volume_id;
	uint64_t renewals = 1000;
	// The host keeps its lease on the way.
	auto move_to = [&](int64_t at) {
		while (r.now < at) {
			r.now = std::min<int64_t>(at, r.now + kHeldMs / 2);
			assert_int_equal(r.call(h, renewals++, wire::RenewReq{}), MDR_ST_OK);
		}
	};
	auto alloc_at = [&](int64_t at, uint64_t req) {
		move_to(at);
		return r.call(h, req, wire::AllocReq{.volume_id = vol, .index = req});
	};
	assert_int_equal(alloc_at(t0 + kHeldMs, 1), MDR_ST_AGAIN);
	assert_int_equal(alloc_at(t0 + 2 * kHeldMs, 2), MDR_ST_AGAIN);
	assert_int_equal(alloc_at(t0 + 3 * kHeldMs - 1, 3), MDR_ST_AGAIN);
	move_to(t0 + 3 * kHeldMs);
	r.send(h, 4, wire::AllocReq{.volume_id = vol, .index = 4});
	r.flush();
	expect_alloc(r, r.one(h), 4, vol, 4);
	assert_true(r.node->in_restart_grace());
	r.now = t0 + 3 * kHeldMs + 2 * kIoHoldMs;
	assert_false(r.node->in_restart_grace());
}

} // namespace

int main()
{
	mdnode::set_log_level(mdnode::LogLevel::error);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_file_form_round_trips_and_refuses_anything_else),
		cmocka_unit_test(test_a_missing_file_is_none_and_a_bad_one_an_error),
		cmocka_unit_test(test_a_start_carries_the_widest_and_a_late_clean_stop_its_own),
		cmocka_unit_test(test_a_node_waits_out_the_longer_leases_of_before_its_start),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
