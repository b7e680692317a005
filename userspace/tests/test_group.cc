// SPDX-License-Identifier: GPL-2.0
//
// test_group.cc - mdnode's GroupMember against a real etcd, driven by an
// EventLoop as the daemon will: of two members one leads and the other sees
// it; a frozen leader stops serving on the loop's timer before the other
// wins; a resignation hands over well under the TTL; bad ids are refused;
// an unreachable etcd makes a follower with a reason, in bounded time; etcd
// lost under a leader keeps its validity until the loop's timer ends it.
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mdnode/group.h"
#include "mdnode/loop.h"
#include "tests/common/etcd_rig.h"

#include "tests/common/cmocka_cxx.h"

using mdnode::EventLoop;
using mdnode::GroupMember;
using mdnode::GroupOptions;
using mdnode::GroupState;
using mdr::test::EtcdRig;
using Clock = std::chrono::steady_clock;
using Role = GroupState::Role;
using std::chrono::milliseconds;

namespace {

std::unique_ptr<EtcdRig> g_rig;

constexpr int kDriftMs = 200;

GroupOptions options(const std::string &group, const std::string &id)
{
	GroupOptions o;
	o.group = group;
	o.replica = id;
	o.address = "10.0.0." + id.substr(1) + ":7000";
	o.etcd.endpoints = g_rig ? g_rig->endpoints() : std::vector<std::string>{};
	o.etcd.request_timeout_ms = 800;
	o.ttl_s = 1;
	o.drift_margin_ms = kDriftMs;
	return o;
}

// A member and what its on_change reported, on the loop's thread.
struct Member {
	std::unique_ptr<GroupMember> m;
	std::vector<GroupState> seen;

	const GroupState &state() const { return m->state(); }
	bool leads() const { return state().role == Role::leader; }
};

std::unique_ptr<Member> make(const GroupOptions &o)
{
	auto p = std::make_unique<Member>();
	Member *raw = p.get();
	auto m = GroupMember::start(o, [raw](const GroupState &s) { raw->seen.push_back(s); });
	if (!m.ok())
		return nullptr;
	p->m = std::move(m.value());
	return p;
}

// Runs a loop of the members' fds and a 5 ms timer (tick, then done) until
// done() or timeout_ms; false on the timeout.
bool run_until(const std::vector<Member *> &ms, const std::function<bool()> &done, int timeout_ms,
	       const std::function<void(Clock::time_point)> &tick = {})
{
	EventLoop loop;
	bool ok = false;
	const auto deadline = Clock::now() + milliseconds(timeout_ms);

	for (Member *m : ms)
		loop.add_fd("group", m->m->fd(), [m] { m->m->process(); });
	if (!loop.add_timer("tick", 5, [&] {
		    const auto now = Clock::now();
		    if (tick)
			    tick(now);
		    if (done()) {
			    ok = true;
			    loop.stop();
		    } else if (now >= deadline) {
			    loop.stop();
		    }
	    }).ok())
		return false;
	loop.run();
	return ok;
}

// l leads and f, through its on_change, follows l at l's epoch.
bool follows(const Member &f, const Member &l)
{
	if (!l.leads() || f.leads() || f.seen.empty())
		return false;
	const GroupState &s = f.seen.back();
	return s.role == Role::follower && s.leader_id == l.m->state().leader_id &&
	       s.leader_address == l.state().leader_address && s.epoch == l.state().epoch &&
	       s.epoch > 0;
}

// Waits until one of a and b leads and the other follows it; the leader.
Member *wait_leader(Member &a, Member &b)
{
	if (!run_until({&a, &b}, [&] { return follows(a, b) || follows(b, a); }, 4000))
		return nullptr;
	return a.leads() ? &a : &b;
}

// Two members of group g, r1 and r2, once one leads (l) and the other (f)
// follows it.
struct Pair {
	std::unique_ptr<Member> a, b;
	Member *l = nullptr, *f = nullptr;

	bool start(const std::string &g, int request_timeout_ms = 800)
	{
		GroupOptions oa = options(g, "r1"), ob = options(g, "r2");
		oa.etcd.request_timeout_ms = ob.etcd.request_timeout_ms = request_timeout_ms;
		a = make(oa);
		b = make(ob);
		if (!a || !b || !(l = wait_leader(*a, *b)))
			return false;
		f = l == a.get() ? b.get() : a.get();
		return true;
	}
	std::vector<Member *> both() const { return {a.get(), b.get()}; }
};

} // namespace

static int setup(void **)
{
	g_rig = EtcdRig::start(1);
	return g_rig ? 0 : -1;
}

static int teardown(void **)
{
	g_rig.reset();
	return 0;
}

// Exactly one leads, the other sees its id, address and epoch; renewals keep
// it leading past the TTL; both records and the leader key are in etcd.
static void test_one_leads_the_other_follows(void **)
{
	Pair p;
	assert_true(p.start("t1"));
	Member *l = p.l, *f = p.f;
	assert_true(l->seen.back().role == Role::leader);
	assert_true(l->m->serving(Clock::now()));
	assert_false(f->m->serving(Clock::now()));
	assert_string_equal(l->state().leader_id.c_str(), l == p.a.get() ? "r1" : "r2");
	const int64_t epoch = l->state().epoch;

	// Three TTLs: the leader serves throughout, at the same epoch.
	int gaps = 0;
	assert_false(run_until(p.both(), [] { return false; }, 3000,
			       [&](Clock::time_point now) {
				       if (!l->m->serving(now) || f->leads())
					       gaps++;
			       }));
	assert_int_equal(gaps, 0);
	assert_int_equal(l->state().epoch, epoch);
	assert_true(follows(*f, *l));

	auto c = g_rig->client();
	auto members = c->range("/mdroute/groups/t1/members/");
	assert_true(members.ok());
	assert_int_equal(members.value().kvs.size(), 2);
	for (const auto &kv : members.value().kvs) {
		assert_true(kv.lease != 0);
		const std::string id = kv.key.substr(kv.key.rfind('/') + 1);
		assert_string_equal(kv.value.c_str(), ("10.0.0." + id.substr(1) + ":7000").c_str());
	}
	auto key = c->get("/mdroute/groups/t1/leader");
	assert_true(key.ok());
	assert_int_equal(key.value().kvs.size(), 1);
	const std::string want = l->state().leader_id + "\n" + l->state().leader_address;
	assert_string_equal(key.value().kvs[0].value.c_str(), want.c_str());
	assert_int_equal(key.value().kvs[0].create_revision, epoch);
}

#ifdef MDR_TEST_HOOKS
// The leader's thread frozen: serving() turns false on the loop's timer, at
// valid_until - drift_margin, before the other wins (both instants on the
// steady clock); the other's epoch is greater; thawed, the old leader finds
// its lease gone and follows the new one.
static void test_frozen_leader_stops_before_takeover(void **)
{
	Pair p;
	assert_true(p.start("t2"));
	Member *l = p.l, *f = p.f;
	const int64_t old_epoch = l->state().epoch;

	l->m->pause_renewals();
	Clock::time_point stopped{};
	assert_true(run_until(p.both(), [&] { return f->leads(); }, 5000,
			      [&](Clock::time_point now) {
				      if (stopped == Clock::time_point{} && !l->m->serving(now))
					      stopped = now;
			      }));
	assert_true(stopped != Clock::time_point{});
	assert_true(stopped < f->state().since);
	// The timer stopped it, at its limit (the loop ticks every 5 ms).
	const auto limit = l->state().valid_until - milliseconds(kDriftMs);
	assert_true(stopped >= limit);
	assert_true(stopped - limit < milliseconds(100));
	assert_true(f->state().epoch > old_epoch);

	l->m->resume_renewals();
	assert_true(run_until(p.both(), [&] { return follows(*l, *f); }, 3000));
	assert_false(l->m->serving(Clock::now()));
}
#endif

// resign() stops serving at once and the other leads well under the TTL;
// the resigned member's record is gone.
static void test_resign_hands_over(void **)
{
	Pair p;
	assert_true(p.start("t3"));
	Member *l = p.l, *f = p.f;
	const int64_t old_epoch = l->state().epoch;
	const std::string id = l->state().leader_id;

	const auto t0 = Clock::now();
	auto s = l->m->resign();
	assert_true(s.ok());
	assert_false(l->m->serving(Clock::now()));
	assert_true(l->state().role == Role::follower);
	assert_true(run_until(p.both(), [&] { return f->leads(); }, 1000));
	assert_true(f->state().since - t0 < milliseconds(400));
	assert_true(f->state().epoch > old_epoch);
	// What the resigned thread posted before does not make it lead again.
	assert_false(l->m->serving(Clock::now()));

	auto rec = g_rig->client()->get("/mdroute/groups/t3/members/" + id);
	assert_true(rec.ok());
	assert_true(rec.value().kvs.empty());
}

// step_down() stops serving at once, the key goes and the other leads well
// under the TTL; the one that stepped down campaigns again only after its
// hold, and then leads once the key is free.
static void test_step_down_holds_the_campaign(void **)
{
	Pair p;
	assert_true(p.start("t6"));
	Member *l = p.l, *f = p.f;
	const int64_t old_epoch = l->state().epoch;

	const auto t0 = Clock::now();
	l->m->step_down(milliseconds(2500));
	assert_false(l->m->serving(Clock::now()));
	assert_true(l->state().role == Role::follower);
	assert_true(run_until(p.both(), [&] { return f->leads(); }, 1000));
	assert_true(f->state().epoch > old_epoch);

	// The key free again at once: the held one does not take it before
	// its hold ends.
	const int64_t f_epoch = f->state().epoch;
	assert_true(f->m->resign().ok());
	assert_true(run_until(p.both(), [&] { return l->leads(); }, 5000));
	assert_true(Clock::now() - t0 >= milliseconds(2500));
	assert_true(l->state().epoch > f_epoch);
	assert_true(l->m->serving(Clock::now()));
}

static void expect_refused(GroupOptions o, const char *words)
{
	auto m = GroupMember::start(o, {});
	assert_false(m.ok());
	assert_int_equal(m.error(), -EINVAL);
	if (!strstr(m.message().c_str(), words)) {
		print_error("'%s' does not say '%s'\n", m.message().c_str(), words);
		fail();
	}
}

static void test_bad_ids_refused(void **)
{
	GroupOptions o = options("g", "r1");
	const std::string long_id(GroupMember::kMaxGroupId + 1, 'x');

	o.group = "a/b";
	expect_refused(o, "group id 'a/b' has a '/'");
	o.group = "";
	expect_refused(o, "group id is empty");
	o.group = long_id;
	expect_refused(o, "group id is longer than 64");
	o.group = "g";
	o.replica = "r 1";
	expect_refused(o, "replica id has a space");
	o.replica = "r\n1";
	expect_refused(o, "replica id has a space or a character that is not printable");
	o.replica = "../r1";
	expect_refused(o, "replica id '../r1' has a '/'");
	o.replica = "r1";
	o.address = "";
	expect_refused(o, "replica address is empty");
	o.address = "10.0.0.1:7000";
	o.drift_margin_ms = 1000;
	expect_refused(o, "drift margin");
	o.drift_margin_ms = kDriftMs;
	o.ttl_s = 0;
	expect_refused(o, "TTL");
	o.ttl_s = 3601;
	expect_refused(o, "TTL must be 1 to 3600 s");
	o.ttl_s = 1;
	o.etcd.request_timeout_ms = 1000;
	expect_refused(o, "request timeout (1000 ms) must be under the group's lease TTL");
	o.etcd.request_timeout_ms = 800;
	o.etcd.endpoints = {"https://127.0.0.1:2379"};
	auto m = GroupMember::start(o, {});
	assert_false(m.ok());
	assert_non_null(strstr(m.message().c_str(), "etcd"));
}

// Nothing listens: a follower whose reason names what failed, within the
// request timeout and a little, and a destructor that does not hang.
static void test_unreachable_etcd(void **)
{
	GroupOptions o = options("t5", "r1");
	o.etcd.endpoints = {"http://127.0.0.1:1"};
	o.etcd.request_timeout_ms = 300;
	o.etcd.dial_timeout_ms = 100;
	auto m = make(o);
	assert_non_null(m.get());

	const auto t0 = Clock::now();
	assert_true(run_until({m.get()}, [&] { return !m->seen.empty(); }, 2000));
	assert_true(Clock::now() - t0 < milliseconds(1000));
	const GroupState &s = m->seen.back();
	assert_true(s.role == Role::follower);
	assert_true(s.leader_id.empty());
	assert_non_null(strstr(s.reason.c_str(), "127.0.0.1:1"));
	assert_false(m->m->serving(Clock::now()));

	const auto t1 = Clock::now();
	m.reset();
	assert_true(Clock::now() - t1 < milliseconds(2 * 300 + 200));
}

// etcd gone: renewals fail at the transport, the leader stays leader with
// the last validity and the loop's timer stops it there; etcd back, the
// group has a serving leader again. Last: it restarts the rig's etcd.
static void test_transport_errors_keep_the_validity(void **)
{
	Pair p;
	assert_true(p.start("t6", 300));
	Member *l = p.l;

	g_rig->kill(0);
	Clock::time_point stopped{};
	auto failed = [&] {
		return !l->seen.empty() && l->seen.back().reason.rfind("renewal failed", 0) == 0;
	};
	assert_true(run_until(p.both(), [&] { return failed() && stopped != Clock::time_point{}; },
			      3000, [&](Clock::time_point now) {
				      if (stopped == Clock::time_point{} && !l->m->serving(now))
					      stopped = now;
			      }));
	assert_true(l->state().role == Role::leader);
	const auto limit = l->state().valid_until - milliseconds(kDriftMs);
	assert_true(stopped >= limit);
	assert_true(stopped - limit < milliseconds(100));
	assert_false(p.f->leads());

	assert_true(g_rig->restart(0));
	assert_true(run_until(p.both(), [&] {
		const auto now = Clock::now();
		return p.a->m->serving(now) || p.b->m->serving(now);
	}, 5000));
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_leads_the_other_follows),
#ifdef MDR_TEST_HOOKS
		cmocka_unit_test(test_frozen_leader_stops_before_takeover),
#endif
		cmocka_unit_test(test_resign_hands_over),
		cmocka_unit_test(test_step_down_holds_the_campaign),
		cmocka_unit_test(test_bad_ids_refused),
		cmocka_unit_test(test_unreachable_etcd),
		cmocka_unit_test(test_transport_errors_keep_the_validity),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
