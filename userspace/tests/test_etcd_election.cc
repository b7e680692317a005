// SPDX-License-Identifier: GPL-2.0
//
// test_etcd_election.cc - lib/etcd's Election against a real etcd: of two
// candidates exactly one wins; the other wins after the first resigns or
// lets its lease lapse, never before the first's known-valid-until; renewals
// keep the key; epochs strictly increase; a campaign ends at its deadline or
// at stop().
#include <cerrno>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "lib/etcd/election.h"
#include "tests/common/etcd_rig.h"

#include "tests/common/cmocka_cxx.h"

using namespace mdr::etcd;
using mdr::test::EtcdRig;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

std::unique_ptr<EtcdRig> g_rig;
std::unique_ptr<Client> g_a, g_b;	// each candidate on its own client

// A campaign on a thread of its own: its epoch (or error) and when it ended.
struct Campaign {
	std::future<mdr::Result<int64_t>> result;

	Campaign(Election &e, std::string value, int64_t ttl, int timeout_ms, Clock::time_point *end)
	{
		result = std::async(std::launch::async, [&e, value, ttl, timeout_ms, end] {
			auto r = e.campaign(value, ttl, Clock::now() + milliseconds(timeout_ms));
			*end = Clock::now();
			return r;
		});
	}

	bool done_within(int ms)
	{
		return result.wait_for(milliseconds(ms)) == std::future_status::ready;
	}
};

} // namespace

static int setup(void **)
{
	g_rig = EtcdRig::start(1);
	if (g_rig) {
		g_a = g_rig->client();
		g_b = g_rig->client();
	}
	return g_a && g_b ? 0 : -1;
}

static int teardown(void **)
{
	g_a.reset();
	g_b.reset();
	g_rig.reset();
	return 0;
}

// Both at once: one wins, the other waits, and takes over on resign.
static void test_one_wins_then_the_other_on_resign(void **)
{
	const std::string key = "/mdroute/groups/g1/leader";
	Election a(*g_a, key), b(*g_b, key);
	Clock::time_point a_end, b_end;
	Campaign ca(a, "a", 5, 5000, &a_end);
	Campaign cb(b, "b", 5, 5000, &b_end);

	// The first to finish won; the other is still waiting.
	while (!ca.done_within(10) && !cb.done_within(10))
		;
	bool a_won = ca.done_within(0);
	Election &winner = a_won ? a : b;
	Election &loser = a_won ? b : a;
	Campaign &lost = a_won ? cb : ca;
	auto won = (a_won ? ca : cb).result.get();
	assert_true(won.ok());
	assert_false(lost.done_within(300));
	assert_true(winner.held());
	assert_false(loser.held());

	auto l = winner.leader();
	assert_true(l.ok());
	assert_true(l.value().has_value());
	assert_string_equal(l.value()->value.c_str(), a_won ? "a" : "b");
	assert_int_equal(l.value()->epoch, won.value());
	assert_true(l.value()->lease == winner.lease());

	assert_true(winner.resign().ok());
	assert_false(winner.held());
	assert_true(lost.done_within(2000));
	auto next = lost.result.get();
	assert_true(next.ok());
	assert_true(next.value() > won.value());
	auto l2 = loser.leader();
	assert_string_equal(l2.value()->value.c_str(), a_won ? "b" : "a");
	assert_int_equal(l2.value()->epoch, next.value());
	assert_true(loser.resign().ok());
	assert_false(loser.leader().value().has_value());
}

// A leader that stops renewing: the other wins once etcd expired the lease,
// which is never before the first's known-valid-until; the first's next
// renew says it lost.
static void test_lapse_hands_over_after_valid_until(void **)
{
	const std::string key = "/mdroute/groups/g2/leader";
	Election a(*g_a, key), b(*g_b, key);
	auto ea = a.campaign("a", 1, Clock::now() + milliseconds(3000));
	assert_true(ea.ok());
	Clock::time_point a_valid = a.valid_until();
	assert_true(a_valid > Clock::now());

	Clock::time_point b_end;
	Campaign cb(b, "b", 1, 5000, &b_end);
	assert_true(cb.done_within(4000));
	auto eb = cb.result.get();
	assert_true(eb.ok());
	assert_true(eb.value() > ea.value());
	assert_true(b_end >= a_valid);	// the safety argument of election.h

	auto r = a.renew();
	assert_false(r.ok());
	assert_int_equal(r.error(), -ENOENT);
	assert_false(a.held());
	assert_true(b.resign().ok());
}

// Renewing every third of the TTL keeps the key: a rival's campaign times
// out, and valid_until moves forward, always in the future.
static void test_renew_keeps_the_key(void **)
{
	const std::string key = "/mdroute/groups/g3/leader";
	Election a(*g_a, key), b(*g_b, key);
	assert_true(a.campaign("a", 1, Clock::now() + milliseconds(3000)).ok());
	Clock::time_point b_end;
	Campaign cb(b, "b", 1, 2000, &b_end);
	Clock::time_point last = a.valid_until();
	auto until = Clock::now() + milliseconds(2300);
	while (Clock::now() < until) {
		std::this_thread::sleep_for(milliseconds(300));
		auto v = a.renew();
		assert_true(v.ok());
		assert_true(v.value() > last);
		assert_true(v.value() > Clock::now());
		last = v.value();
	}
	assert_true(cb.done_within(1000));
	auto eb = cb.result.get();
	assert_false(eb.ok());
	assert_int_equal(eb.error(), -ETIMEDOUT);
	assert_false(b.held());
	assert_string_equal(a.leader().value()->value.c_str(), "a");
	assert_true(a.resign().ok());
}

// Three terms in a row: each epoch above the last.
static void test_epochs_increase(void **)
{
	const std::string key = "/mdroute/groups/g4/leader";
	int64_t last = 0;
	for (int i = 0; i < 3; i++) {
		Election e(i % 2 ? *g_b : *g_a, key);
		auto epoch = e.campaign("c" + std::to_string(i), 2, Clock::now() + milliseconds(2000));
		assert_true(epoch.ok());
		assert_true(epoch.value() > last);
		last = epoch.value();
		// A second campaign of the same leader is refused.
		assert_int_equal(e.campaign("x", 2, Clock::now()).error(), -EALREADY);
		assert_true(e.resign().ok());
	}
}

static void test_stop_ends_a_campaign(void **)
{
	const std::string key = "/mdroute/groups/g5/leader";
	Election a(*g_a, key), b(*g_b, key);
	assert_true(a.campaign("a", 5, Clock::now() + milliseconds(2000)).ok());
	Clock::time_point b_end;
	Campaign cb(b, "b", 5, 10000, &b_end);
	std::this_thread::sleep_for(milliseconds(200));
	auto t0 = Clock::now();
	b.stop();
	assert_true(cb.done_within(1000));
	assert_true(b_end - t0 < milliseconds(500));
	auto eb = cb.result.get();
	assert_int_equal(eb.error(), -ECANCELED);
	assert_true(a.resign().ok());
	assert_int_equal(a.renew().error(), -ENOENT);	// not leading any more
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_wins_then_the_other_on_resign),
		cmocka_unit_test(test_lapse_hands_over_after_valid_until),
		cmocka_unit_test(test_renew_keeps_the_key),
		cmocka_unit_test(test_epochs_increase),
		cmocka_unit_test(test_stop_ends_a_campaign),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
