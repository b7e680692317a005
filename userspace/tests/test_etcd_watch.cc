// SPDX-License-Identifier: GPL-2.0
//
// test_etcd_watch.cc - lib/etcd's watches against a real etcd: puts and
// deletes in order, history from a past revision, a resume across a restart
// of the etcd process on the same data, a compaction reported as an error
// event, and a destructor that cancels at once.
#include <cerrno>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lib/etcd/client.h"
#include "tests/common/etcd_rig.h"

#include "tests/common/cmocka_cxx.h"

using namespace mdr::etcd;
using mdr::test::EtcdRig;
using mdr::test::WatchLog;
using Clock = std::chrono::steady_clock;

namespace {

std::unique_ptr<EtcdRig> g_rig;
std::unique_ptr<Client> g_client;

void check_event(const WatchEvent &ev, WatchEvent::Type type, const char *key, const char *value)
{
	assert_true(ev.type == type);
	assert_string_equal(ev.kv.key.c_str(), key);
	if (value)
		assert_string_equal(ev.kv.value.c_str(), value);
}

} // namespace

static int setup(void **)
{
	g_rig = EtcdRig::start(1);
	if (g_rig)
		g_client = g_rig->client();
	return g_client ? 0 : -1;
}

static int teardown(void **)
{
	g_client.reset();
	g_rig.reset();
	return 0;
}

static void test_puts_and_deletes_in_order(void **)
{
	Client &c = *g_client;
	auto base = c.put("/w/base", "x");
	assert_true(base.ok());
	WatchLog seen;
	auto w = c.watch({"/w/p/", true, base.value() + 1}, seen.callback());
	assert_true(c.put("/w/p/a", "1").ok());
	assert_true(c.put("/w/p/b", "2").ok());
	assert_true(c.del("/w/p/a").ok());
	assert_true(c.put("/w/other", "not watched").ok());
	assert_true(c.put("/w/p/a", "3").ok());
	assert_true(seen.wait_for(4));

	auto evs = seen.copy();
	assert_int_equal(evs.size(), 4);
	check_event(evs[0], WatchEvent::Type::put, "/w/p/a", "1");
	check_event(evs[1], WatchEvent::Type::put, "/w/p/b", "2");
	check_event(evs[2], WatchEvent::Type::del, "/w/p/a", nullptr);
	check_event(evs[3], WatchEvent::Type::put, "/w/p/a", "3");
	for (size_t i = 1; i < evs.size(); i++)
		assert_true(evs[i].kv.mod_revision > evs[i - 1].kv.mod_revision);
	assert_int_equal(w->next_revision(), evs[3].kv.mod_revision + 1);

	// The same history again, from a past revision, on one key.
	WatchLog past;
	auto w2 = c.watch({"/w/p/a", false, base.value() + 1}, past.callback());
	assert_true(past.wait_for(3));
	auto evs2 = past.copy();
	assert_int_equal(evs2.size(), 3);
	assert_int_equal(evs2[0].kv.mod_revision, evs[0].kv.mod_revision);
	assert_int_equal(evs2[1].kv.mod_revision, evs[2].kv.mod_revision);
	assert_int_equal(evs2[2].kv.mod_revision, evs[3].kv.mod_revision);
}

// etcd dies and comes back on its data: the watch says it was cut, resumes
// after the last event it delivered, and nothing is lost or repeated. Its
// thread is held in the callback meanwhile, so that the writes below land
// while it has no stream: only a resume from its revision brings them.
static void test_resumes_after_restart(void **)
{
	Client &c = *g_client;
	auto base = c.put("/r/k", "0");
	assert_true(base.ok());
	WatchLog seen;
	seen.hold_at = std::string(1, '1');	// (GCC 12 misjudges = "1")
	auto w = c.watch({"/r/", true, base.value()}, seen.callback());
	assert_true(c.put("/r/k", "1").ok());
	assert_true(seen.wait_holding());

	g_rig->kill(0);
	assert_true(g_rig->restart(0));
	assert_true(c.put("/r/k", "2").ok());
	assert_true(c.del("/r/k").ok());
	assert_true(c.put("/r/j", "3").ok());
	seen.release();
	assert_true(seen.wait_for(5));
	std::this_thread::sleep_for(std::chrono::milliseconds(100));

	auto evs = seen.copy();
	assert_int_equal(evs.size(), 5);
	check_event(evs[0], WatchEvent::Type::put, "/r/k", "0");
	assert_int_equal(evs[0].kv.mod_revision, base.value());
	check_event(evs[1], WatchEvent::Type::put, "/r/k", "1");
	check_event(evs[2], WatchEvent::Type::put, "/r/k", "2");
	check_event(evs[3], WatchEvent::Type::del, "/r/k", nullptr);
	check_event(evs[4], WatchEvent::Type::put, "/r/j", "3");
	for (size_t i = 1; i < evs.size(); i++)
		assert_int_equal(evs[i].kv.mod_revision, evs[i - 1].kv.mod_revision + 1);
	assert_true(seen.interrupted() >= 1);
}

// Revisions the watch needs were compacted: an error event, then silence.
static void test_compaction_is_an_error(void **)
{
	Client &c = *g_client;
	auto r1 = c.put("/c/k", "1");
	assert_true(r1.ok());
	assert_true(c.put("/c/k", "2").ok());
	auto r3 = c.put("/c/k", "3");
	assert_true(r3.ok());
	assert_true(g_rig->compact(r3.value()));

	WatchLog seen;
	auto w = c.watch({"/c/k", false, r1.value()}, seen.callback());
	assert_true(seen.wait_for(1));
	assert_true(c.put("/c/k", "4").ok());
	std::this_thread::sleep_for(std::chrono::milliseconds(200));
	auto evs = seen.copy();
	assert_int_equal(evs.size(), 1);
	assert_true(evs[0].type == WatchEvent::Type::compacted);
	assert_int_equal(evs[0].code, -ESTALE);
	assert_int_equal(evs[0].compact_revision, r3.value());
	assert_false(evs[0].message.empty());
}

// A watch that sees nothing, destroyed: at once, and no callback after.
static void test_destructor_cancels(void **)
{
	WatchLog seen;
	auto w = g_client->watch({"/quiet/", true, 0}, seen.callback());
	std::this_thread::sleep_for(std::chrono::milliseconds(100));
	auto t0 = Clock::now();
	w.reset();
	assert_true(Clock::now() - t0 < std::chrono::milliseconds(300));
	assert_true(g_client->put("/quiet/k", "v").ok());
	std::this_thread::sleep_for(std::chrono::milliseconds(100));
	assert_true(seen.copy().empty());
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_puts_and_deletes_in_order),
		cmocka_unit_test(test_resumes_after_restart),
		cmocka_unit_test(test_compaction_is_an_error),
		cmocka_unit_test(test_destructor_cancels),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
