// SPDX-License-Identifier: GPL-2.0
//
// test_etcd_kv.cc - lib/etcd's client against a real one-member etcd: keys
// (put, get, range, delete, revisions), leases (grant, keepalive, revoke,
// expiry), the two transactions, and endpoints that do not answer.
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "lib/etcd/client.h"
#include "tests/common/etcd_rig.h"

#include "tests/common/cmocka_cxx.h"

using namespace mdr::etcd;
using mdr::test::EtcdRig;
using Clock = std::chrono::steady_clock;

namespace {

struct State {
	std::unique_ptr<EtcdRig> rig;
	std::unique_ptr<Client> c;
};

State *st(void **state)
{
	return static_cast<State *>(*state);
}

} // namespace

static int setup(void **state)
{
	auto *s = new State;
	s->rig = EtcdRig::start(1);
	if (!s->rig) {
		delete s;
		return -1;	// cmocka fails every test of the group
	}
	s->c = s->rig->client();
	*state = s;
	return s->c ? 0 : -1;
}

static int teardown(void **state)
{
	delete st(state);
	return 0;
}

static void test_put_get_range_delete(void **state)
{
	Client &c = *st(state)->c;
	auto r1 = c.put("/kv/a", "1");
	assert_true(r1.ok());
	auto a = c.get("/kv/a");
	assert_true(a.ok());
	assert_int_equal(a.value().kvs.size(), 1);
	assert_string_equal(a.value().kvs[0].value.c_str(), "1");
	assert_int_equal(a.value().kvs[0].create_revision, r1.value());
	assert_int_equal(a.value().kvs[0].mod_revision, r1.value());
	assert_int_equal(a.value().kvs[0].lease, 0);
	assert_true(a.value().revision >= r1.value());

	auto r2 = c.put("/kv/a", "2");
	assert_true(r2.ok());
	assert_true(r2.value() > r1.value());
	a = c.get("/kv/a");
	assert_true(a.ok());
	assert_int_equal(a.value().kvs[0].create_revision, r1.value());
	assert_int_equal(a.value().kvs[0].mod_revision, r2.value());
	assert_int_equal(a.value().kvs[0].version, 2);

	// Binary keys and values go through base64 both ways.
	std::string bin("\0\xff\n\"x", 5);
	assert_true(c.put("/kv/b", bin).ok());
	assert_true(c.put("/kv/c/d", "").ok());
	assert_true(c.put("/kw", "outside").ok());
	auto r = c.range("/kv/");
	assert_true(r.ok());
	assert_int_equal(r.value().kvs.size(), 3);
	assert_string_equal(r.value().kvs[0].key.c_str(), "/kv/a");
	assert_true(r.value().kvs[1].value == bin);
	assert_string_equal(r.value().kvs[2].key.c_str(), "/kv/c/d");
	assert_true(r.value().kvs[2].value.empty());

	auto missing = c.get("/kv/none");
	assert_true(missing.ok());
	assert_true(missing.value().kvs.empty());
	assert_true(missing.value().revision > r2.value());

	auto d = c.del("/kv/a");
	assert_true(d.ok());
	assert_int_equal(d.value(), 1);
	d = c.del("/kv/a");
	assert_true(d.ok());
	assert_int_equal(d.value(), 0);
	assert_true(c.get("/kv/a").value().kvs.empty());
	assert_int_equal(c.range("/kv/").value().kvs.size(), 2);
	assert_int_equal(c.get("").error(), -EINVAL);
}

static void test_lease_keepalive_revoke(void **state)
{
	Client &c = *st(state)->c;
	auto l = c.grant(5);
	assert_true(l.ok());
	assert_true(l.value().id > 0);
	assert_int_equal(l.value().ttl, 5);
	assert_true(c.put("/lease/k", "v", l.value().id).ok());
	auto k = c.get("/lease/k");
	assert_true(k.ok());
	assert_true(k.value().kvs[0].lease == l.value().id);

	auto ttl = c.keepalive(l.value().id);
	assert_true(ttl.ok());
	assert_int_equal(ttl.value(), 5);

	assert_true(c.revoke(l.value().id).ok());
	assert_true(c.get("/lease/k").value().kvs.empty());	// revoked with its lease
	ttl = c.keepalive(l.value().id);
	assert_true(ttl.ok());
	assert_int_equal(ttl.value(), 0);
	auto again = c.revoke(l.value().id);
	assert_false(again.ok());
	assert_int_equal(again.error(), -ENOENT);
	auto put = c.put("/lease/k", "v", l.value().id);
	assert_false(put.ok());
	assert_int_equal(put.error(), -ENOENT);
	assert_non_null(strstr(put.message().c_str(), "lease not found"));
	assert_int_equal(c.grant(0).error(), -EINVAL);
}

// A key under a lease of 2 s that nobody keeps alive: there before the TTL,
// gone soon after it (etcd checks expiries every 500 ms).
static void test_lease_expiry(void **state)
{
	Client &c = *st(state)->c;
	auto l = c.grant(2);
	assert_true(l.ok());
	auto t0 = Clock::now();
	assert_true(c.put("/lease/expiring", "v", l.value().id).ok());
	std::this_thread::sleep_for(std::chrono::milliseconds(1200));
	assert_int_equal(c.get("/lease/expiring").value().kvs.size(), 1);

	bool gone = false;
	while (Clock::now() - t0 < std::chrono::milliseconds(4000)) {
		if (c.get("/lease/expiring").value().kvs.empty()) {
			gone = true;
			break;
		}
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
	}
	assert_true(gone);
	assert_true(Clock::now() - t0 >= std::chrono::milliseconds(2000));
	auto ttl = c.keepalive(l.value().id);
	assert_true(ttl.ok());
	assert_int_equal(ttl.value(), 0);
}

static void test_create_if_absent(void **state)
{
	Client &c = *st(state)->c;
	auto l = c.grant(10);
	assert_true(l.ok());
	auto first = c.create("/txn/leader", "one", l.value().id);
	assert_true(first.ok());
	assert_true(first.value().created);
	assert_int_equal(first.value().kv.create_revision, first.value().revision);
	auto held = c.get("/txn/leader");
	assert_int_equal(held.value().kvs[0].create_revision, first.value().revision);
	assert_true(held.value().kvs[0].lease == l.value().id);

	auto second = c.create("/txn/leader", "two", 0);
	assert_true(second.ok());
	assert_false(second.value().created);
	assert_string_equal(second.value().kv.value.c_str(), "one");
	assert_int_equal(second.value().kv.create_revision, first.value().revision);
	assert_true(second.value().kv.lease == l.value().id);
	assert_string_equal(c.get("/txn/leader").value().kvs[0].value.c_str(), "one");

	// Once it is gone, the next create makes it anew, at a higher revision.
	assert_true(c.revoke(l.value().id).ok());
	auto third = c.create("/txn/leader", "three", 0);
	assert_true(third.ok());
	assert_true(third.value().created);
	assert_true(third.value().kv.create_revision > first.value().revision);
}

static void test_compare_and_swap(void **state)
{
	Client &c = *st(state)->c;
	auto r = c.put("/txn/config", "v1");
	assert_true(r.ok());
	auto ok = c.compare_and_swap("/txn/config", r.value(), "v2");
	assert_true(ok.ok());
	assert_true(ok.value().swapped);
	assert_true(ok.value().revision > r.value());

	// A writer that read the old revision loses and sees the new value.
	auto stale = c.compare_and_swap("/txn/config", r.value(), "v3");
	assert_true(stale.ok());
	assert_false(stale.value().swapped);
	assert_true(stale.value().current.has_value());
	assert_string_equal(stale.value().current->value.c_str(), "v2");
	assert_int_equal(stale.value().current->mod_revision, ok.value().revision);
	assert_string_equal(c.get("/txn/config").value().kvs[0].value.c_str(), "v2");

	// Revision 0: only if absent.
	auto fresh = c.compare_and_swap("/txn/absent", 0, "x");
	assert_true(fresh.ok());
	assert_true(fresh.value().swapped);
	auto not_absent = c.compare_and_swap("/txn/absent", 0, "y");
	assert_true(not_absent.ok());
	assert_false(not_absent.value().swapped);
	auto missing = c.compare_and_swap("/txn/missing", 5, "z");
	assert_true(missing.ok());
	assert_false(missing.value().swapped);
	assert_false(missing.value().current.has_value());
}

// The leader's change of the group's config: only while its key is the one
// created at its epoch.
static void test_compare_and_swap_guarded(void **state)
{
	Client &c = *st(state)->c;
	auto lead = c.create("/guard/leader", "1", 0);
	assert_true(lead.ok() && lead.value().created);
	const int64_t epoch = lead.value().kv.create_revision;
	auto cfg = c.put("/guard/config", "a");
	assert_true(cfg.ok());

	const Guard held{"/guard/leader", epoch};
	auto ok = c.compare_and_swap("/guard/config", cfg.value(), "b", 0, held);
	assert_true(ok.ok());
	assert_true(ok.value().swapped);

	// The key made again (a new epoch): the old leader's swap is refused,
	// and the config read at the revision it named shows the guard alone
	// refused it.
	assert_true(c.del("/guard/leader").ok());
	auto again = c.create("/guard/leader", "2", 0);
	assert_true(again.ok() && again.value().created);
	auto stale = c.compare_and_swap("/guard/config", ok.value().revision, "c", 0, held);
	assert_true(stale.ok());
	assert_false(stale.value().swapped);
	assert_true(stale.value().current.has_value());
	assert_int_equal(stale.value().current->mod_revision, ok.value().revision);
	assert_string_equal(c.get("/guard/config").value().kvs[0].value.c_str(), "b");

	// Deleted: likewise. A guard without a key or revision is refused.
	assert_true(c.del("/guard/leader").ok());
	const Guard now{"/guard/leader", again.value().kv.create_revision};
	auto gone = c.compare_and_swap("/guard/config", ok.value().revision, "d", 0, now);
	assert_true(gone.ok());
	assert_false(gone.value().swapped);
	assert_int_equal(c.compare_and_swap("/guard/config", 0, "e", 0, Guard{"", 1}).error(),
			 -EINVAL);
	assert_int_equal(
		c.compare_and_swap("/guard/config", 0, "e", 0, Guard{"/guard/leader", 0}).error(),
		-EINVAL);
}

// Nothing listens on the first endpoint: the call moves on to the next and
// the client stays there. Nothing at all: an error naming the endpoint.
static void test_endpoints(void **state)
{
	EtcdRig &rig = *st(state)->rig;
	const std::string dead = "http://127.0.0.1:1";
	Options o;
	o.endpoints = {dead, rig.endpoint(0)};
	o.request_timeout_ms = 2000;
	o.dial_timeout_ms = 200;
	auto c = connect(o);
	assert_true(c.ok());
	assert_true(c.value()->put("/ep/k", "v").ok());
	assert_string_equal(c.value()->endpoint().c_str(), rig.endpoint(0).c_str());

	o.endpoints = {dead};
	o.request_timeout_ms = 300;
	auto lone = connect(o);
	assert_true(lone.ok());
	auto t0 = Clock::now();
	auto r = lone.value()->get("/ep/k");
	assert_false(r.ok());
	assert_int_equal(r.error(), -ECONNREFUSED);
	assert_non_null(strstr(r.message().c_str(), dead.c_str()));
	assert_non_null(strstr(r.message().c_str(), "/v3/kv/range"));
	assert_true(Clock::now() - t0 < std::chrono::milliseconds(1000));

	for (auto bad : {Options{{}, 1000, 100}, Options{{"https://x:1"}, 1000, 100},
			 Options{{"http://127.0.0.1:1"}, 0, 100}})
		assert_int_equal(connect(bad).error(), -EINVAL);
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_get_range_delete),
		cmocka_unit_test(test_lease_keepalive_revoke),
		cmocka_unit_test(test_lease_expiry),
		cmocka_unit_test(test_create_if_absent),
		cmocka_unit_test(test_compare_and_swap),
		cmocka_unit_test(test_compare_and_swap_guarded),
		cmocka_unit_test(test_endpoints),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
