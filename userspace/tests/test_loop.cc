// SPDX-License-Identifier: GPL-2.0
//
// test_loop.cc - mdnode's event loop: a source that always has work left
// is given its budget per round and cannot starve another source or a
// timer; readiness alone calls a handler; stop() ends the loop after the
// round; what runs after a round runs after every handler of it, in the
// order it was added.
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

// Both hooks after both handlers of each round, in the order added; a
// hook's stop() ends the loop after that round.
void test_after_round_in_order(void **)
{
	EventLoop loop;
	const int a_fd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
	const int b_fd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
	std::string calls;

	assert_true(a_fd >= 0 && b_fd >= 0);
	loop.add_fd("a", a_fd, [&] { calls += 'a'; });
	loop.add_fd("b", b_fd, [&] { calls += 'b'; });
	loop.after_round([&] { calls += '1'; });
	loop.after_round([&] {
		calls += '2';
		if (calls.size() == 8)
			loop.stop();
	});
	loop.run();
	assert_string_equal(calls.c_str(), "ab12ab12");
	close(a_fd);
	close(b_fd);
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_budget_shares_rounds),
		cmocka_unit_test(test_timer_under_flood),
		cmocka_unit_test(test_after_round_in_order),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
