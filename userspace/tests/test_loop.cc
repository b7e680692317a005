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

// An fd that stays readable (nothing reads it), closed with the test.
struct ReadyFd {
	int fd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);

	ReadyFd() { assert_true(fd >= 0); }
	~ReadyFd() { close(fd); }
	ReadyFd(const ReadyFd &) = delete;
	ReadyFd &operator=(const ReadyFd &) = delete;
};

// A flood (a source that always has work left) next to a source that is
// always readable: each has its turn every round, the flood with its
// budget.
void test_budget_shares_rounds(void **)
{
	EventLoop loop;
	const ReadyFd flood, other;
	const int flood_fd = flood.fd, other_fd = other.fd;
	std::string calls;

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
}

// A timer runs while a source floods the loop.
void test_timer_under_flood(void **)
{
	EventLoop loop;
	int ticks = 0;
	long floods = 0;
	const ReadyFd flood;
	const int fd = flood.fd;

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
}

// Both hooks after both handlers of each round, in the order added; a
// hook's stop() ends the loop after that round.
void test_after_round_in_order(void **)
{
	EventLoop loop;
	const ReadyFd a, b;
	std::string calls;

	loop.add_fd("a", a.fd, [&] { calls += 'a'; });
	loop.add_fd("b", b.fd, [&] { calls += 'b'; });
	loop.after_round([&] { calls += '1'; });
	loop.after_round([&] {
		calls += '2';
		if (calls.size() == 8)
			loop.stop();
	});
	loop.run();
	assert_string_equal(calls.c_str(), "ab12ab12");
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
