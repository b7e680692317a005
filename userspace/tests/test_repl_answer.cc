// SPDX-License-Identifier: GPL-2.0
//
// test_repl_answer.cc - when a group's leader answers a change
// (repl_answer.h): a new leader answers nothing until a majority's logs,
// none ahead of its own, were heard, and, when its log holds records it
// has not applied, a record of its own epoch committed; one member ahead of it keeps it from serving; changes are
// answered in index order once the commit index covers them, never
// before, and all of them with an error when the replica stops leading.
#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include "mdnode/repl_answer.h"

#include "tests/common/cmocka_cxx.h"

using namespace mdnode::repl;
using Phase = LeaderGate::Phase;

namespace {

LeaderGate gate(uint64_t epoch, LogPosition own, uint64_t applied,
		std::vector<std::string> followers = {"b", "c"})
{
	auto g = LeaderGate::create(epoch, own, applied, followers);

	if (!g.ok())
		fail_msg("create: %s", g.message().c_str());
	return std::move(g).value();
}

void test_gate_refuses_bad_options(void **)
{
	struct {
		uint64_t epoch;
		LogPosition own;
		uint64_t applied;
		std::vector<std::string> followers;
	} cases[] = {
		{0, {}, 0, {"b", "c"}},
		{5, {6, 10}, 10, {"b", "c"}},		// a log of a later epoch
		{5, {4, 10}, 11, {"b", "c"}},		// applied past its log
		{5, {}, 0, {"b"}},			// a set of two
		{5, {}, 0, {"b", "b"}},
		{5, {}, 0, {"b", ""}},
	};
	for (const auto &c : cases) {
		auto g = LeaderGate::create(c.epoch, c.own, c.applied, c.followers);

		assert_false(g.ok());
		assert_int_equal(g.error(), -EINVAL);
	}
}

// Three replicas: one follower's log state makes a majority with its own;
// its log holds records it has not applied (20 of them, 15 applied): it
// serves once its epoch's first record committed.
void test_gate_majority_then_epoch_record(void **)
{
	LeaderGate g = gate(9, {4, 20}, 15);

	assert_int_equal(g.phase(), Phase::gathering);
	assert_int_equal(g.majority(), 2);
	// Not before the majority: no epoch record, no serving.
	assert_int_equal(g.epoch_record(21).error(), -EBUSY);
	assert_int_equal(g.on_log_state("x", {4, 20}).error(), -ENOENT);
	assert_int_equal(g.phase(), Phase::gathering);
	// Behind it in index, then in epoch with a longer log: neither is ahead.
	assert_true(g.on_log_state("b", {4, 18}).ok());
	assert_int_equal(g.phase(), Phase::committing);
	assert_true(g.on_log_state("c", {3, 40}).ok());
	assert_int_equal(g.phase(), Phase::committing);
	// The epoch's first record follows its own log, and is shipped once.
	assert_int_equal(g.epoch_record(22).error(), -EINVAL);
	assert_true(g.epoch_record(21).ok());
	assert_int_equal(g.epoch_record(21).error(), -EBUSY);
	// A commit index below it (records of earlier epochs) is not enough.
	g.on_commit(20);
	assert_int_equal(g.phase(), Phase::committing);
	g.on_commit(21);
	assert_true(g.serving());
}

// A member whose log is ahead (a later last epoch, or the same epoch and a
// longer log) may hold a committed record this log lacks: no serving, and
// a later member not ahead does not undo it.
void test_gate_member_ahead(void **)
{
	for (LogPosition ahead : {LogPosition{5, 1}, LogPosition{4, 21}}) {
		LeaderGate g = gate(9, {4, 20}, 20);

		assert_true(g.on_log_state("c", ahead).ok());
		assert_int_equal(g.phase(), Phase::behind);
		assert_string_equal(g.ahead_member().c_str(), "c");
		assert_true(g.ahead_log() == ahead);
		assert_true(g.on_log_state("b", {4, 20}).ok());
		assert_int_equal(g.phase(), Phase::behind);
		assert_int_equal(g.epoch_record(21).error(), -EBUSY);
		g.on_commit(100);
		assert_false(g.serving());
	}
	// Heard after a majority was, it changes nothing: any committed
	// record is on a majority, which shares a member with the one heard,
	// so a log not behind any of those heard holds it already.
	LeaderGate g = gate(9, {4, 20}, 10);
	assert_true(g.on_log_state("b", {4, 20}).ok());
	assert_true(g.on_log_state("c", {4, 30}).ok());
	assert_int_equal(g.phase(), Phase::committing);
}

// Five replicas: two followers' log states make the majority, and the
// first answer of a member counts, not a repeat. Its log empty (a new
// group), it still serves only once its EPOCH record committed: the
// record announces the lease bounds its leases are granted under.
void test_gate_five_and_repeats(void **)
{
	LeaderGate g = gate(3, {}, 0, {"b", "c", "d", "e"});

	assert_int_equal(g.majority(), 3);
	assert_true(g.on_log_state("b", {}).ok());
	assert_true(g.on_log_state("b", {}).ok());
	assert_int_equal(g.heard(), 2);
	assert_int_equal(g.phase(), Phase::gathering);
	assert_true(g.on_log_state("d", {}).ok());
	assert_int_equal(g.phase(), Phase::committing);
	assert_true(g.epoch_record(1).ok());
	g.on_commit(1);
	assert_true(g.serving());
}

// A log all applied, of an earlier epoch: its EPOCH record to commit once
// a majority, none ahead, was heard; one ahead keeps it from serving.
void test_gate_applied_log_serves(void **)
{
	LeaderGate g = gate(9, {4, 20}, 20);

	assert_true(g.on_log_state("b", {3, 25}).ok());
	assert_int_equal(g.phase(), Phase::committing);
	assert_true(g.epoch_record(21).ok());
	g.on_commit(21);
	assert_true(g.serving());
	LeaderGate h = gate(9, {4, 20}, 20);
	assert_true(h.on_log_state("b", {4, 22}).ok());
	assert_int_equal(h.phase(), Phase::behind);
}

void test_answers_in_order_at_commit(void **)
{
	AnswerQueue q;
	std::vector<std::pair<uint64_t, int>> answered;
	auto answer = [&](uint64_t i) {
		return [&answered, i](int err) { answered.emplace_back(i, err); };
	};

	assert_int_equal(q.hold(0, answer(0)).error(), -EINVAL);
	assert_true(q.hold(5, answer(5)).ok());
	assert_int_equal(q.hold(7, answer(7)).error(), -EINVAL);
	assert_true(q.hold(6, answer(6)).ok());
	assert_true(q.hold(7, answer(7)).ok());
	q.release(4);
	assert_true(answered.empty());
	q.release(6);
	assert_int_equal(answered.size(), 2);
	assert_int_equal(answered[0].first, 5);
	assert_int_equal(answered[1].first, 6);
	assert_int_equal(answered[1].second, 0);
	assert_int_equal(q.waiting(), 1);
	// A commit index never answers twice, nor one that went back.
	q.release(6);
	q.release(3);
	assert_int_equal(answered.size(), 2);
	q.release(7);
	assert_int_equal(answered.size(), 3);
	assert_int_equal(q.waiting(), 0);
}

// An answer that holds the next change and releases again (a client's
// next request, handled from the answer) is taken in order.
void test_answer_reenters(void **)
{
	AnswerQueue q;
	std::vector<uint64_t> answered;

	assert_true(q.hold(1, [&](int) {
		answered.push_back(1);
		assert_true(q.hold(3, [&](int) { answered.push_back(3); }).ok());
		q.release(2);
	}).ok());
	assert_true(q.hold(2, [&](int) { answered.push_back(2); }).ok());
	q.release(3);
	assert_int_equal(answered.size(), 3);
	assert_int_equal(answered[0], 1);
	assert_int_equal(answered[1], 2);
	assert_int_equal(answered[2], 3);
}

// Stopping to lead answers every waiting change with the error, and the
// indexes it held are not held again.
void test_abandon(void **)
{
	AnswerQueue q;
	std::vector<int> errs;

	for (uint64_t i = 1; i <= 3; i++)
		assert_true(q.hold(i, [&](int err) { errs.push_back(err); }).ok());
	q.release(1);
	q.abandon(-EAGAIN);
	assert_int_equal(errs.size(), 3);
	assert_int_equal(errs[0], 0);
	assert_int_equal(errs[1], -EAGAIN);
	assert_int_equal(errs[2], -EAGAIN);
	assert_int_equal(q.hold(2, [](int) {}).error(), -EINVAL);
	q.release(100);
	assert_int_equal(errs.size(), 3);
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gate_refuses_bad_options),
		cmocka_unit_test(test_gate_majority_then_epoch_record),
		cmocka_unit_test(test_gate_member_ahead),
		cmocka_unit_test(test_gate_five_and_repeats),
		cmocka_unit_test(test_gate_applied_log_serves),
		cmocka_unit_test(test_answers_in_order_at_commit),
		cmocka_unit_test(test_answer_reenters),
		cmocka_unit_test(test_abandon),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
