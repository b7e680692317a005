// SPDX-License-Identifier: GPL-2.0
//
// test_etcd_cluster.cc - lib/etcd against a real three-member etcd whose
// members die under it: the client moves to another endpoint within a
// call's deadline, a leader keeps renewing and a rival wins after it
// resigns, and a watch resumes on another member without a gap.
#include <cerrno>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lib/etcd/election.h"
#include "tests/common/etcd_rig.h"

#include "tests/common/cmocka_cxx.h"

using namespace mdr::etcd;
using mdr::test::EtcdRig;
using mdr::test::WatchLog;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

// Each test starts its own cluster: the one before killed a member.
std::unique_ptr<EtcdRig> cluster()
{
	auto rig = EtcdRig::start(3);
	assert_non_null(rig.get());
	return rig;
}

} // namespace

// The member the client talks to dies: the next call lands on another
// member, which the client then stays with, and sees every write.
static void test_kill_moves_to_another_endpoint(void **)
{
	auto rig = cluster();
	auto c = rig->client();
	assert_non_null(c.get());
	assert_true(c->put("/cl/k", "before").ok());
	int first = rig->member_of(c->endpoint());
	assert_true(first >= 0);

	rig->kill(first);
	auto t0 = Clock::now();
	auto r = c->put("/cl/k", "after");
	if (!r.ok())
		print_error("%s\n", r.message().c_str());
	assert_true(r.ok());
	assert_true(Clock::now() - t0 < milliseconds(3000));
	int now = rig->member_of(c->endpoint());
	assert_true(now >= 0);
	assert_int_not_equal(now, first);

	auto g = c->get("/cl/k");
	assert_true(g.ok());
	assert_string_equal(g.value().kvs[0].value.c_str(), "after");
	assert_int_equal(g.value().kvs[0].version, 2);
	assert_int_equal(rig->member_of(c->endpoint()), now);
}

// A leader whose member dies renews through another one; a rival waiting on
// a second client still wins once the leader resigns, at a higher epoch;
// and a second member lost (no quorum) makes calls fail in time, not hang.
static void test_campaigns_survive_a_member(void **)
{
	auto rig = cluster();
	auto ca = rig->client(), cb = rig->client();
	assert_non_null(ca.get());
	assert_non_null(cb.get());
	const std::string key = "/mdroute/groups/gc/leader";
	Election a(*ca, key), b(*cb, key);
	auto ea = a.campaign("a", 2, Clock::now() + milliseconds(3000));
	assert_true(ea.ok());
	auto rb = std::async(std::launch::async, [&] {
		return b.campaign("b", 2, Clock::now() + milliseconds(8000));
	});

	int first = rig->member_of(ca->endpoint());
	rig->kill(first);
	auto v = a.renew();
	assert_true(v.ok());
	assert_true(v.value() > Clock::now());
	assert_int_not_equal(rig->member_of(ca->endpoint()), first);
	assert_true(a.held());
	assert_true(rb.wait_for(milliseconds(200)) == std::future_status::timeout);

	assert_true(a.resign().ok());
	assert_true(rb.wait_for(milliseconds(4000)) == std::future_status::ready);
	auto eb = rb.get();
	assert_true(eb.ok());
	assert_true(eb.value() > ea.value());
	auto l = a.leader();
	assert_true(l.ok());
	assert_string_equal(l.value()->value.c_str(), "b");

	// Two of three gone: no quorum. The call fails by its deadline.
	for (int i = 0; i < rig->size(); i++)
		if (i != first && rig->member_of(cb->endpoint()) != i) {
			rig->kill(i);
			break;
		}
	Options o;
	o.endpoints = rig->endpoints();
	o.request_timeout_ms = 1000;
	auto quick = connect(o);
	assert_true(quick.ok());
	auto t0 = Clock::now();
	auto r = quick.value()->put("/cl/noquorum", "x");
	assert_false(r.ok());
	assert_true(Clock::now() - t0 < milliseconds(2500));
	assert_false(r.message().empty());
}

// A watch whose member dies goes on from another member, from the revision
// after the last event it delivered: the writes made meanwhile all arrive,
// once and in order.
static void test_watch_moves_to_another_member(void **)
{
	auto rig = cluster();
	auto c = rig->client();
	assert_non_null(c.get());
	auto base = c->put("/wm/k", "0");
	assert_true(base.ok());

	WatchLog log;
	auto w = c->watch({"/wm/", true, base.value() + 1}, log.callback());
	assert_true(c->put("/wm/k", "1").ok());
	assert_true(log.wait_for(1));

	// The watch started at the client's endpoint.
	rig->kill(rig->member_of(c->endpoint()));
	for (int i = 2; i <= 5; i++)
		assert_true(c->put("/wm/k", std::to_string(i)).ok());
	assert_true(log.wait_for(5));
	std::this_thread::sleep_for(milliseconds(100));

	auto evs = log.copy();
	assert_int_equal(evs.size(), 5);
	for (size_t i = 0; i < evs.size(); i++) {
		assert_true(evs[i].type == WatchEvent::Type::put);
		assert_string_equal(evs[i].kv.value.c_str(), std::to_string(i + 1).c_str());
		if (i)
			assert_int_equal(evs[i].kv.mod_revision, evs[i - 1].kv.mod_revision + 1);
	}
	assert_true(log.interrupted() >= 1);
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kill_moves_to_another_endpoint),
		cmocka_unit_test(test_campaigns_survive_a_member),
		cmocka_unit_test(test_watch_moves_to_another_member),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
