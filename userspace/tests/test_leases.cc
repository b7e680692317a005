// SPDX-License-Identifier: GPL-2.0
//
// test_leases.cc - the node's lease table: leases lapse and go in the
// order of their deadlines, whatever order they were granted in; a
// renewal moves a deadline (the old one is stale); closing a connection
// finds its leases through the per-connection index; erasing leaves no
// deadline behind.
#include <cstdint>
#include <random>
#include <vector>

#include "mdnode/leases.h"

#include "tests/common/cmocka_cxx.h"

using mdnode::Lease;
using mdnode::LeaseKey;
using mdnode::Leases;

namespace {

constexpr int64_t kHoldMs = 300;

bool same(const LeaseKey &a, const LeaseKey &b)
{
	return a.volume_id == b.volume_id && a.host_id == b.host_id;
}

// Granted in key order, they lapse in deadline order; ties go by key.
void test_expiry_order(void **)
{
	Leases l(kHoldMs);

	l.grant({1, 10}, 1, 5000);
	l.grant({1, 11}, 1, 3000);
	l.grant({2, 10}, 2, 4000);
	l.grant({3, 12}, 3, 3000);

	assert_true(l.expire(2999).lapsed.empty());

	Leases::Expired ex = l.expire(3100);
	assert_int_equal(ex.lapsed.size(), 2);
	assert_true(same(ex.lapsed[0].first, {1, 11}));		// 3000
	assert_true(same(ex.lapsed[1].first, {3, 12}));		// 3000
	assert_int_equal(ex.lapsed[1].second, 3);		// its connection
	assert_true(ex.gone.empty());
	assert_true(l.find({1, 11})->lapsed);
	assert_false(l.find({1, 10})->lapsed);

	// Gone io_hold_ms after the lapse, in deadline order too, while the
	// next lapses.
	ex = l.expire(4000);
	assert_int_equal(ex.lapsed.size(), 1);
	assert_true(same(ex.lapsed[0].first, {2, 10}));		// 4000
	assert_int_equal(ex.gone.size(), 2);
	assert_true(same(ex.gone[0], {1, 11}));			// 3300
	assert_true(same(ex.gone[1], {3, 12}));			// 3300
	assert_null(l.find({1, 11}));
	assert_int_equal(l.size(), 2);

	// A lease that lapses and goes in one call is in both lists.
	ex = l.expire(5000 + kHoldMs);
	assert_int_equal(ex.lapsed.size(), 1);
	assert_true(same(ex.lapsed[0].first, {1, 10}));
	assert_int_equal(ex.gone.size(), 2);
	assert_true(same(ex.gone[0], {2, 10}));
	assert_true(same(ex.gone[1], {1, 10}));
	assert_int_equal(l.size(), 0);
}

// A renewal moves the deadline; the one before it is stale.
void test_renew_moves_the_deadline(void **)
{
	Leases l(kHoldMs);

	l.grant({1, 10}, 1, 1000);
	l.renew({1, 10}, 1, 2000);
	assert_true(l.expire(1500).lapsed.empty());
	assert_false(l.find({1, 10})->lapsed);
	assert_int_equal(l.expire(2000).lapsed.size(), 1);

	// Granted again after a lapse: valid, with a deadline of its own.
	l.grant({1, 10}, 4, 3000);
	assert_false(l.find({1, 10})->lapsed);
	Leases::Expired ex = l.expire(2000 + kHoldMs);
	assert_true(ex.gone.empty() && ex.lapsed.empty());
	assert_int_equal(l.expire(3000).lapsed.size(), 1);
}

// Closing a connection finds its leases by the index: only those stop
// pointing at it, and a lease renewed over another connection moves there.
void test_conn_index(void **)
{
	Leases l(kHoldMs);

	l.grant({1, 10}, 7, 1000);
	l.grant({2, 10}, 7, 1000);
	l.grant({3, 10}, 8, 1000);
	l.grant({1, 11}, 9, 1000);
	l.renew({2, 10}, 8, 1500);

	std::vector<LeaseKey> of7 = l.of_conn(7);
	assert_int_equal(of7.size(), 1);
	assert_true(same(of7[0], {1, 10}));
	assert_int_equal(l.of_conn(8).size(), 2);

	l.detach(8);
	assert_true(l.of_conn(8).empty());
	assert_int_equal(l.find({2, 10})->conn, 0);
	assert_int_equal(l.find({3, 10})->conn, 0);
	assert_int_equal(l.find({1, 10})->conn, 7);
	assert_int_equal(l.find({1, 11})->conn, 9);

	// Leases that go leave the index too.
	assert_true(l.erase({1, 10}));
	assert_true(l.of_conn(7).empty());
	l.expire(1000 + kHoldMs);
	assert_true(l.of_conn(9).empty());
	assert_int_equal(l.size(), 1);		// {2, 10}, renewed
}

// Erased leases and whole volumes leave only stale deadlines.
void test_erase(void **)
{
	Leases l(kHoldMs);

	l.grant({5, 1}, 1, 100);
	l.grant({5, 2}, 2, 100);
	l.grant({6, 1}, 1, 100);
	std::vector<uint64_t> hosts = l.erase_volume(5);
	assert_int_equal(hosts.size(), 2);
	assert_int_equal(hosts[0], 1);
	assert_int_equal(hosts[1], 2);
	assert_false(l.erase({5, 1}));
	int n = 0;
	for (const auto &[key, lease] : l.on_volume(6)) {
		assert_int_equal(key.host_id, 1);
		n++;
	}
	assert_int_equal(n, 1);
	Leases::Expired ex = l.expire(1000);
	assert_int_equal(ex.lapsed.size(), 1);
	assert_true(same(ex.lapsed[0].first, {6, 1}));
	assert_true(l.of_conn(2).empty());
}

// Many leases renewed at random: every lapse comes at its last deadline,
// in deadline order, and nothing lapses twice.
void test_random_renewals(void **)
{
	Leases l(kHoldMs);
	std::mt19937_64 rng(20);
	std::vector<int64_t> deadline(200);

	for (uint64_t h = 0; h < deadline.size(); h++) {
		deadline[h] = 1000 + int64_t(rng() % 1000);
		l.grant({1, h}, 1 + h % 4, deadline[h]);
	}
	for (int i = 0; i < 1000; i++) {
		const uint64_t h = rng() % deadline.size();
		deadline[h] += int64_t(rng() % 500);
		l.renew({1, h}, 1 + h % 4, deadline[h]);
	}
	int64_t last = 0;
	size_t lapsed = 0;
	for (int64_t now = 0; now < 20000; now += 37) {
		for (const auto &[key, conn] : l.expire(now).lapsed) {
			const int64_t at = deadline[key.host_id];

			assert_true(at <= now && at > now - 37);
			assert_true(at >= last);
			last = at;
			lapsed++;
		}
	}
	assert_int_equal(lapsed, deadline.size());
	assert_int_equal(l.size(), 0);
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_expiry_order),
		cmocka_unit_test(test_renew_moves_the_deadline),
		cmocka_unit_test(test_conn_index),
		cmocka_unit_test(test_erase),
		cmocka_unit_test(test_random_renewals),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
