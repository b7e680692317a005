// SPDX-License-Identifier: GPL-2.0
//
// test_loop.cc - mdnode's event loop: a source that always has work left
// is given its budget per round and cannot starve another source or a
// timer; readiness alone calls a handler; stop() ends the loop after the
// round.
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mdnode/loop.h"

#include "tests/common/cmocka_cxx.h"

using mdnode::EventLoop;

namespace {

// A flood (a source that always has work left) next to a source that is
// always readable: each has its turn every round, the flood with its
// budget.
void test_budget_shares_rounds(void **)
{
	EventLoop loop;
	const int flood_fd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
	const int other_fd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
	std::string calls;

	assert_true(flood_fd >= 0 && other_fd >= 0);
	loop.add({"flood", [&] { return std::vector<int>{flood_fd}; }, 8,
		  [&](int fd, unsigned budget) {
		assert_int_equal(fd, flood_fd);
		assert_int_equal(budget, 8);
		calls += 'F';
		return true;	// never done
	}});
	loop.add_fd("other", other_fd, [&] {
		calls += 'O';
		if (calls.size() == 10)
			loop.stop();
	});
	loop.run();
	assert_string_equal(calls.c_str(), "FOFOFOFOFO");
	close(flood_fd);
	close(other_fd);
}

// A timer runs while a source floods the loop.
void test_timer_under_flood(void **)
{
	EventLoop loop;
	int ticks = 0;
	long floods = 0;
	const int fd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);

	loop.add({"flood", [&] { return std::vector<int>{fd}; }, 1,
		  [&](int, unsigned) {
		floods++;
		return true;
	}});
	assert_true(loop.add_timer("tick", 5, [&] {
		if (++ticks == 3)
			loop.stop();
	}).ok());
	loop.run();
	assert_int_equal(ticks, 3);
	assert_true(floods > 3);
	close(fd);
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_budget_shares_rounds),
		cmocka_unit_test(test_timer_under_flood),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
