// SPDX-License-Identifier: GPL-2.0
//
// test_group.cc - mdnode's GroupMember against a real etcd, driven by an
// EventLoop as the daemon will: of two members one leads and the other sees
// it; a frozen leader stops serving on the loop's timer before the other
// wins; a resignation hands over well under the TTL; bad ids are refused;
// an unreachable etcd makes a follower with a reason, in bounded time; etcd
// lost under a leader keeps its validity until the loop's timer ends it.
// The replica set (group_config.h): its text refused when it is not one;
// the first member puts its bootstrap set, later ones read it whatever
// theirs says; a replica out of it never campaigns; the leader's swap
// changes it, and one guarded by an epoch that is over changes nothing; a
// replica the set places elsewhere than its own listener never campaigns.
// A follower at rest asks etcd for no campaign while the key is held, and
// spends no CPU waiting.
// The member records, read back by leader and follower alike: where each
// replica serves hosts. A Deposer ends a silent leader's epoch at once.
#include <sys/resource.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mdnode/group.h"
#include "mdnode/group_depose.h"
#include "mdnode/loop.h"
#include "tests/common/etcd_rig.h"

#include "tests/common/cmocka_cxx.h"

using mdnode::EventLoop;
using mdnode::GroupMember;
using mdnode::GroupOptions;
using mdnode::GroupState;
using mdnode::ReplicaArg;
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

// CPU time this process used so far, user and system, in seconds.
double cpu_s()
{
	struct rusage ru {};
	getrusage(RUSAGE_SELF, &ru);
	return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
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

	bool start(const std::string &g, int request_timeout_ms = 800, int ttl_s = 1)
	{
		GroupOptions oa = options(g, "r1"), ob = options(g, "r2");
		oa.etcd.request_timeout_ms = ob.etcd.request_timeout_ms = request_timeout_ms;
		oa.ttl_s = ob.ttl_s = ttl_s;
		a = make(oa);
		b = make(ob);
		if (!a || !b || !(l = wait_leader(*a, *b)))
			return false;
		f = l == a.get() ? b.get() : a.get();
		return true;
	}
	std::vector<Member *> both() const { return {a.get(), b.get()}; }
};

// Replica id (decimal) of a group with a replica set: a bootstrap set of
// ids, at 10.0.1.ID:4800.
GroupOptions config_options(const std::string &group, uint32_t id,
			    const std::vector<uint32_t> &set)
{
	GroupOptions o = options(group, "r" + std::to_string(id));
	o.replica = std::to_string(id);
	for (uint32_t r : set)
		o.bootstrap.push_back({r, "10.0.1." + std::to_string(r), 4800});
	return o;
}

std::string ids(const mdnode::GroupConfig &c)
{
	std::string s;
	for (const ReplicaArg &r : c.replicas)
		s += std::to_string(r.id);
	return s;
}

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

// A group at rest asks etcd only for its renewals and reads: over three
// TTLs no follower campaigns (no lease granted or revoked, no transaction,
// no watch set up again) while the key is held; and once the leader
// resigns the follower still wins at once, from the watch it kept.
static void test_a_follower_at_rest_does_not_campaign(void **)
{
	Pair p;
	assert_true(p.start("t7"));
	Member *l = p.l, *f = p.f;
	// Past the rounds of the start (the loser's try, its first reads).
	assert_false(run_until(p.both(), [] { return false; }, 500));

	const char *methods[] = {"LeaseGrant", "LeaseRevoke", "Txn", "Watch"};
	int64_t before[4], after[4];
	for (int i = 0; i < 4; i++)
		assert_true((before[i] = g_rig->calls(0, methods[i])) >= 0);
	const double cpu0 = cpu_s();
	assert_false(run_until(p.both(), [] { return false; }, 3000));
	// Nor does either thread spin: both members live in this process.
	const double cpu = cpu_s() - cpu0;
	if (cpu > 1.0) {
		print_error("%.2f s of CPU in 3 s at rest\n", cpu);
		fail();
	}
	for (int i = 0; i < 4; i++) {
		assert_true((after[i] = g_rig->calls(0, methods[i])) >= 0);
		if (after[i] != before[i]) {
			print_error("%s: %lld calls at rest\n", methods[i],
				    (long long)(after[i] - before[i]));
			fail();
		}
	}
	assert_true(follows(*f, *l));

	const int64_t old_epoch = l->state().epoch;
	const auto t0 = Clock::now();
	assert_true(l->m->resign().ok());
	assert_true(run_until(p.both(), [&] { return f->leads(); }, 1000));
	assert_true(f->state().since - t0 < milliseconds(400));
	assert_true(f->state().epoch > old_epoch);
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

// A Deposer ends the epoch of a leader that no longer renews (as a dead
// process does not) at once: the other leads well under the TTL of 4 s. It
// revokes the lease the follower's watch gave; a deposition of an epoch
// that is over revokes nothing, by that lease (gone) or by a read of the
// key (another's); epoch 0 is refused.
static void test_depose_ends_the_epoch_at_once(void **)
{
	Pair p;
	assert_true(p.start("t12", 800, 4));
	Member *l = p.l, *f = p.f;
	const int64_t old_epoch = l->state().epoch;
	const int64_t old_lease = f->state().leader_lease;

	assert_true(f->state().epoch == old_epoch && old_lease > 0);
	mdr::etcd::Options eo;
	eo.endpoints = g_rig->endpoints();
	eo.request_timeout_ms = 800;
	auto d = mdnode::Deposer::start(eo, "/mdroute/groups/t12/leader");
	assert_true(d.ok());
	mdnode::Deposer &dep = *d.value();
	assert_int_equal(dep.depose(0, old_lease).error(), -EINVAL);

	l->m->pause_renewals();
	const auto t0 = Clock::now();
	assert_true(dep.depose(old_epoch, old_lease).ok());
	std::optional<mdnode::Deposer::Outcome> o;
	assert_true(run_until(p.both(), [&] {
		if (!o)
			o = dep.take();
		return o && f->leads();
	}, 3000));
	assert_true(f->state().since - t0 < milliseconds(1500));
	assert_int_equal(o->epoch, old_epoch);
	assert_true(o->revoked.ok() && o->revoked.value());
	assert_true(f->state().epoch > old_epoch);

	// The epoch is over: its lease is gone, and the key another's.
	for (int64_t lease : {old_lease, int64_t(0)}) {
		assert_true(dep.depose(old_epoch, lease).ok());
		o.reset();
		assert_true(run_until(p.both(), [&] { return (o = dep.take()).has_value(); },
				      2000));
		assert_true(o->revoked.ok() && !o->revoked.value());
	}
	assert_true(f->leads());
	assert_true(f->m->serving(Clock::now()));

	// Thawed, the deposed one finds its lease gone and follows.
	l->m->resume_renewals();
	assert_true(run_until(p.both(), [&] { return follows(*l, *f); }, 3000));
	assert_false(l->m->serving(Clock::now()));
}
#endif

// A deposition etcd does not answer ends with etcd's error, in bounded time,
// and is not taken for one done; one under way refuses a second (-EBUSY).
static void test_depose_unreachable_etcd(void **)
{
	mdr::etcd::Options eo;
	eo.endpoints = {"http://127.0.0.1:1"};
	eo.request_timeout_ms = 300;
	eo.dial_timeout_ms = 100;
	auto d = mdnode::Deposer::start(eo, "/mdroute/groups/t13/leader");
	assert_true(d.ok());
	mdnode::Deposer &dep = *d.value();

	assert_true(dep.depose(7, 0).ok());
	assert_int_equal(dep.depose(8, 0).error(), -EBUSY);
	std::optional<mdnode::Deposer::Outcome> o;
	EventLoop loop;
	loop.add_fd("depose", dep.fd(), [&] {
		o = dep.take();
		if (o)
			loop.stop();
	});
	assert_true(loop.add_timer("limit", 2000, [&] { loop.stop(); }).ok());
	loop.run();
	assert_true(o.has_value());
	assert_int_equal(o->epoch, 7);
	assert_false(o->revoked.ok());
	assert_non_null(strstr(o->revoked.message().c_str(), "reading /mdroute/groups/t13/leader"));
}

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

static void test_config_text(void **)
{
	using mdnode::encode_group_config;
	using mdnode::parse_group_config;
	const std::vector<ReplicaArg> set{
		{3, "10.0.0.3", 4800}, {1, "10.0.0.1", 4800}, {2, "fd00::2", 4801}};
	const std::string text = encode_group_config(set);

	assert_string_equal(text.c_str(),
			    "1=10.0.0.1:4800\n2=[fd00::2]:4801\n3=10.0.0.3:4800\n");
	auto back = parse_group_config(text);
	assert_true(back.ok());
	assert_int_equal(back.value().size(), 3);
	assert_string_equal(back.value()[1].address.c_str(), "fd00::2");
	assert_int_equal(back.value()[1].port, 4801);

	const struct {
		const char *text, *words;
	} bad[] = {
		{"", "the set has 0 replicas"},
		{"1=10.0.0.1:4800\n2=10.0.0.2:4800\n", "the set has 2 replicas"},
		{"1=10.0.0.1:4800\n1=10.0.0.2:4800\n3=10.0.0.3:4800\n", "id 1 given twice"},
		{"1=10.0.0.1:4800\n2=10.0.0.1:4800\n3=10.0.0.3:4800\n", "share address"},
		{"1=10.0.0.1:4800\n2=0.0.0.0:4800\n3=10.0.0.3:4800\n", "not 0.0.0.0"},
		{"1=10.0.0.1:4800\n2=10.0.0.2\n3=10.0.0.3:4800\n", "lacks its port"},
		{"1=10.0.0.1:4800\n\n3=10.0.0.3:4800\n", "config line 2"},
		{"0=10.0.0.1:4800\n2=10.0.0.2:4800\n3=10.0.0.3:4800\n", "config line 1"},
		{"1=10.0.0.1:4800 2=10.0.0.2:4800 3=10.0.0.3:4800", "config line 1"},
	};
	for (const auto &b : bad) {
		auto r = parse_group_config(b.text);
		assert_false(r.ok());
		if (r.error() != -EINVAL || r.message().find(b.words) == std::string::npos)
			fail_msg("'%s': %d %s", b.text, r.error(), r.message().c_str());
	}
	assert_true(mdnode::with_change(set, true, {4, "10.0.0.4", 4800}).size() == 4);
	assert_int_equal(mdnode::with_change(set, false, {2, "", 0}).size(), 2);
}

// The first to start puts its set; the second's, different, is not used;
// a replica out of the set does not campaign, and joins it by the leader's
// swap; a second swap while one is pending is refused, as is a follower's.
static void test_config_bootstrap_and_swap(void **)
{
	auto a = make(config_options("c1", 1, {1, 2, 3}));
	assert_true(a != nullptr);
	assert_true(run_until({a.get()}, [&] { return a->leads(); }, 4000));
	assert_true(a->state().config.has_value());
	assert_string_equal(ids(*a->state().config).c_str(), "123");

	auto b = make(config_options("c1", 2, {2, 3, 4, 5}));
	auto d = make(config_options("c1", 4, {1, 2, 3, 4}));
	assert_true(run_until({a.get(), b.get(), d.get()}, [&] {
		return follows(*b, *a) && !d->seen.empty() && d->seen.back().config;
	}, 4000));
	assert_string_equal(ids(*b->seen.back().config).c_str(), "123");
	assert_non_null(strstr(d->state().reason.c_str(), "not in the group's replica set"));
	auto c = g_rig->client();
	auto key = c->get("/mdroute/groups/c1/config");
	assert_true(key.ok() && key.value().kvs.size() == 1);
	assert_string_equal(key.value().kvs[0].value.c_str(),
			    "1=10.0.1.1:4800\n2=10.0.1.2:4800\n3=10.0.1.3:4800\n");

	// The leader resigns: b wins, d never campaigns.
	assert_true(a->m->resign().ok());
	assert_true(run_until({b.get(), d.get()}, [&] { return b->leads(); }, 4000));
	assert_false(run_until({b.get(), d.get()}, [&] { return d->leads(); }, 1500));

	// b adds 4.
	std::optional<mdr::Result<mdnode::GroupConfig>> got;
	auto next = b->state().config->replicas;
	next.push_back({4, "10.0.1.4", 4800});
	assert_int_equal(d->m->change_config(next, [](auto) {}).error(), -EAGAIN);
	assert_true(b->m->change_config(next, [&](auto r) { got = std::move(r); }).ok());
	assert_int_equal(b->m->change_config(next, [](auto) {}).error(), -EBUSY);
	assert_true(run_until({b.get(), d.get()}, [&] { return got.has_value(); }, 4000));
	assert_true(got->ok());
	assert_string_equal(ids(got->value()).c_str(), "1234");
	assert_true(b->state().config == got->value());
	key = c->get("/mdroute/groups/c1/config");
	assert_int_equal(key.value().kvs[0].mod_revision, got->value().revision);
	// d reads the set with itself in it.
	assert_true(run_until({b.get(), d.get()}, [&] {
		return d->state().config && ids(*d->state().config) == "1234" &&
		       d->state().reason.find("not in") == std::string::npos;
	}, 4000));
}

// A replica whose own settings put its log listener elsewhere than the
// set does never campaigns, and says where each has it.
static void test_config_elsewhere_does_not_campaign(void **)
{
	auto a = make(config_options("c4", 1, {1, 2, 3}));
	assert_true(a != nullptr);
	assert_true(run_until({a.get()}, [&] { return a->leads(); }, 4000));

	GroupOptions ob = config_options("c4", 2, {1, 2, 3});
	ob.bootstrap[1].port = 4801;
	auto b = make(ob);
	assert_true(b != nullptr);
	assert_true(run_until({a.get(), b.get()}, [&] {
		return !b->seen.empty() && b->seen.back().config;
	}, 4000));
	assert_non_null(strstr(b->state().reason.c_str(), "listens for its log at 10.0.1.2:4801"));
	assert_non_null(strstr(b->state().reason.c_str(), "has it at 10.0.1.2:4800"));
	assert_true(a->m->resign().ok());
	assert_false(run_until({b.get()}, [&] { return b->leads(); }, 2000));
}

// An address is compared as an address: a set that spells a replica's
// IPv6 address otherwise than its own settings do bars nothing.
static void test_config_same_address_spelled_otherwise(void **)
{
	GroupOptions oa = config_options("c5", 1, {1, 2, 3});
	oa.bootstrap[0].address = "fd00::1";
	auto a = make(oa);
	assert_true(a != nullptr);
	assert_true(run_until({a.get()}, [&] { return a->leads(); }, 4000));
	assert_true(a->m->resign().ok());

	GroupOptions ob = config_options("c5", 1, {1, 2, 3});
	ob.bootstrap[0].address = "FD00:0::1";
	auto b = make(ob);
	assert_true(b != nullptr);
	assert_true(run_until({b.get()}, [&] { return b->leads(); }, 4000));
}

// The epoch's key gone (a successor's campaign could have made it again):
// the leader's swap changes nothing.
static void test_config_swap_of_an_epoch_over(void **)
{
	auto a = make(config_options("c2", 1, {1, 2, 3}));
	assert_true(a != nullptr);
	assert_true(run_until({a.get()}, [&] { return a->leads(); }, 4000));
	auto c = g_rig->client();
	const auto before = c->get("/mdroute/groups/c2/config").value().kvs[0];

	assert_true(c->del("/mdroute/groups/c2/leader").ok());
	std::optional<mdr::Result<mdnode::GroupConfig>> got;
	auto next = a->state().config->replicas;
	next.push_back({4, "10.0.1.4", 4800});
	// The loop may hear of the loss first: then it is not leading.
	const mdr::Status st = a->m->change_config(next, [&](auto r) { got = std::move(r); });
	if (st.ok()) {
		assert_true(run_until({a.get()}, [&] { return got.has_value(); }, 4000));
		assert_false(got->ok());
		assert_true(got->error() == -ESTALE || got->error() == -EAGAIN);
	} else {
		assert_int_equal(st.error(), -EAGAIN);
	}
	const auto after = c->get("/mdroute/groups/c2/config").value().kvs[0];
	assert_int_equal(after.mod_revision, before.mod_revision);
	assert_string_equal(after.value.c_str(), before.value.c_str());
}

// No set in etcd, and a log of its own: it puts nothing and does not
// campaign.
static void test_config_missing_for_a_replica_with_a_log(void **)
{
	GroupOptions o = config_options("c3", 1, {1, 2, 3});
	o.may_bootstrap = false;
	auto a = make(o);
	assert_true(a != nullptr);
	assert_false(run_until({a.get()}, [&] { return a->leads(); }, 1500));
	assert_non_null(strstr(a->state().reason.c_str(), "is missing"));
	auto c = g_rig->client();
	assert_true(c->get("/mdroute/groups/c3/config").value().kvs.empty());
}

// Each replica's address as the member records give it, at the leader and
// at a follower (GroupState::hosts): records that are no replica's or hold
// no address passed over; a member's record that lapsed keeps its address,
// one out of the set is forgotten with its record; a new address taken.
static void test_member_records_give_host_addresses(void **)
{
	using Hosts = std::map<uint32_t, std::string>;
	auto a = make(config_options("h1", 1, {1, 2, 3}));
	assert_true(a != nullptr);
	assert_true(run_until({a.get()}, [&] { return a->leads(); }, 4000));
	auto b = make(config_options("h1", 2, {1, 2, 3}));
	assert_true(b != nullptr);
	auto c = g_rig->client();
	const std::string at = "/mdroute/groups/h1/members/";
	assert_true(c->put(at + "3", "10.0.0.3:7000").ok());
	assert_true(c->put(at + "03", "10.0.0.9:7000").ok());
	assert_true(c->put(at + "x", "10.0.0.9:7000").ok());
	assert_true(c->put(at + "0", "10.0.0.9:7000").ok());
	assert_true(c->put(at + "9", "10.0.0.9 7000").ok());
	Hosts want{{1, "10.0.0.1:7000"}, {2, "10.0.0.2:7000"}, {3, "10.0.0.3:7000"}};
	const auto both = [&] {
		return a->leads() && a->state().hosts == want && b->state().hosts == want;
	};
	assert_true(run_until({a.get(), b.get()}, both, 4000));

	assert_true(c->del(at + "3").ok());
	assert_true(c->put(at + "5", "10.0.0.5:7000").ok());
	want[5] = "10.0.0.5:7000";
	assert_true(run_until({a.get(), b.get()}, both, 4000));

	assert_true(c->del(at + "5").ok());
	assert_true(c->put(at + "3", "[fd00::3]:7000").ok());
	want.erase(5);
	want[3] = "[fd00::3]:7000";
	assert_true(run_until({a.get(), b.get()}, both, 4000));
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_leads_the_other_follows),
		cmocka_unit_test(test_a_follower_at_rest_does_not_campaign),
#ifdef MDR_TEST_HOOKS
		cmocka_unit_test(test_frozen_leader_stops_before_takeover),
		cmocka_unit_test(test_depose_ends_the_epoch_at_once),
#endif
		cmocka_unit_test(test_depose_unreachable_etcd),
		cmocka_unit_test(test_resign_hands_over),
		cmocka_unit_test(test_step_down_holds_the_campaign),
		cmocka_unit_test(test_bad_ids_refused),
		cmocka_unit_test(test_unreachable_etcd),
		cmocka_unit_test(test_transport_errors_keep_the_validity),
		cmocka_unit_test(test_config_text),
		cmocka_unit_test(test_config_bootstrap_and_swap),
		cmocka_unit_test(test_config_swap_of_an_epoch_over),
		cmocka_unit_test(test_config_elsewhere_does_not_campaign),
		cmocka_unit_test(test_config_same_address_spelled_otherwise),
		cmocka_unit_test(test_config_missing_for_a_replica_with_a_log),
		cmocka_unit_test(test_member_records_give_host_addresses),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
