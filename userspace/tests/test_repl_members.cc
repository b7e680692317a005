// SPDX-License-Identifier: GPL-2.0
//
// test_repl_members.cc - the leader's shipper while the replica set
// changes (repl_leader.h, "Membership"; group_replica.h has the phases): a
// learner takes the log and counts for nothing; in a joint a record
// commits only on a majority of the set before and of the set after (not
// of the set after alone, nor of every follower); a follower removed gets
// nothing more; the calls' refusals. The world of
// test_repl.h checks every commit against the fakes' truth for each set.
#include <cerrno>
#include <cstdint>

#include "tests/test_repl.h"

#include "tests/common/cmocka_cxx.h"

using namespace repl_test;

namespace {

// A replica added while the group streams gets the whole log from the
// window and applies it, yet a commit never counts it.
void test_learner_counts_for_nothing(void **)
{
	World w;

	w.stream(3, 4);
	assert_int_equal(w.leader->commit_index(), 12);
	FollowerEnd &d = w.add("d");
	assert_false(w.leader->voter("d"));
	w.settle();
	assert_int_equal(d.sink.durable, 12);

	// b and c make nothing durable: the leader and d are two, but d
	// does not vote.
	w.f("b").stalled = true;
	w.f("c").stalled = true;
	w.append(3);
	w.sync_leader();
	w.settle();
	assert_int_equal(d.sink.durable, 15);
	assert_int_equal(w.leader->commit_index(), 12);
	assert_int_equal(w.leader->majority_durable({"b", "c", "d"}), 12);
	assert_int_equal(w.leader->majority_durable({"b", "d"}), 15);
	w.f("b").stalled = false;
	w.settle();
	assert_int_equal(w.leader->commit_index(), 15);
	w.leader->tick(0);
	w.settle();
	w.expect_applied("d", 15);
}

// In the joint, a majority of {a,b,c} alone commits nothing: it takes one
// of {a,b,c,d} too (three of four).
void test_joint_needs_both_majorities(void **)
{
	World w;

	w.stream(2, 2);
	w.add("d");
	w.settle();
	assert_true(w.leader->set_voters({{"b", "c"}, {"b", "c", "d"}}).ok());
	w.voters = {{"b", "c"}, {"b", "c", "d"}};
	assert_true(w.leader->voter("d"));

	w.f("c").stalled = true;
	w.f("d").stalled = true;
	w.append(2);
	w.sync_leader();
	w.settle();
	// The leader and b: 2 of 3, 2 of 4.
	assert_int_equal(w.leader->commit_index(), 4);
	w.f("d").stalled = false;
	w.settle();
	assert_int_equal(w.leader->commit_index(), 6);

	// The set after alone: {b,c,d} with the leader.
	assert_true(w.leader->set_voters({{"b", "c", "d"}}).ok());
	w.voters = {{"b", "c", "d"}};
	w.f("b").stalled = true;
	w.append(2);
	w.sync_leader();
	w.settle();
	assert_int_equal(w.leader->commit_index(), 6);	// leader and d: 2 of 4
	w.f("c").stalled = false;
	w.settle();
	assert_int_equal(w.leader->commit_index(), 8);
}

// c leaves: in the joint {b,c} / {b,d} a record on the leader and c alone
// does not commit; after it, c is let go and gets nothing more.
void test_removed_follower_gets_nothing(void **)
{
	World w;

	w.stream(2, 2);
	w.add("d");
	w.settle();
	assert_true(w.leader->set_voters({{"b", "c", "d"}}).ok());
	w.voters = {{"b", "c", "d"}};
	w.append(1);
	w.sync_leader();
	w.settle();

	assert_true(w.leader->set_voters({{"b", "c", "d"}, {"b", "d"}}).ok());
	w.voters = {{"b", "c", "d"}, {"b", "d"}};
	expect_error(w.leader->remove_follower("c"), -EBUSY, "votes");
	w.f("b").stalled = true;
	w.f("d").stalled = true;
	w.append(1);
	w.sync_leader();
	w.settle();
	// The leader and c: 2 of 4 before, 1 of 3 after.
	assert_int_equal(w.leader->commit_index(), 5);
	w.f("d").stalled = false;
	w.settle();
	assert_int_equal(w.leader->commit_index(), 6);

	assert_true(w.leader->set_voters({{"b", "d"}}).ok());
	w.voters = {{"b", "d"}};
	assert_true(w.leader->remove_follower("c").ok());
	assert_null(w.leader->follower("c"));
	const size_t wrote = w.wrote.size();
	w.append(2);
	w.sync_leader();
	w.leader->tick(0);
	w.settle();
	for (size_t i = wrote; i < w.wrote.size(); i++)
		assert_string_not_equal(w.wrote[i].member.c_str(), "c");
	// b stalled: the leader and d are 2 of 3.
	assert_int_equal(w.leader->commit_index(), 8);
	expect_error(w.leader->on_durable("c", Durable{World::kEpoch, 8, 0}), -ENOENT,
		     "not a follower");
}

// The rule is both majorities, not the set after's alone: c leaving
// {b,c,d}, a record on the leader and d is a majority of {b,d} but not of
// {b,c,d}; and not every follower's: with {b,c,d} voting and e learning,
// the leader, d and e are three of five but two of four voters.
void test_joint_is_not_the_set_after_alone(void **)
{
	World w;

	w.stream(1, 2);
	w.add("d");
	w.add("e");
	w.settle();
	assert_true(w.leader->set_voters({{"b", "c", "d"}}).ok());
	w.voters = {{"b", "c", "d"}};
	w.f("b").stalled = true;
	w.f("c").stalled = true;
	w.append(1);
	w.sync_leader();
	w.settle();
	assert_int_equal(w.f("e").sink.durable, 3);
	assert_int_equal(w.leader->commit_index(), 2);

	assert_true(w.leader->set_voters({{"b", "c", "d"}, {"b", "d"}}).ok());
	w.voters = {{"b", "c", "d"}, {"b", "d"}};
	w.settle();
	assert_int_equal(w.leader->majority_durable({"b", "d"}), 3);
	assert_int_equal(w.leader->commit_index(), 2);
	w.f("c").stalled = false;
	w.settle();
	assert_int_equal(w.leader->commit_index(), 3);
}

void test_refusals(void **)
{
	World w;

	expect_error(w.leader->add_follower("b"), -EEXIST, "already");
	expect_error(w.leader->remove_follower("x"), -ENOENT, "not a follower");
	expect_error(w.leader->remove_follower("b"), -EBUSY, "votes");
	expect_error(w.leader->set_voters({}), -EINVAL, "0 voter sets");
	expect_error(w.leader->set_voters({{"b"}, {"c"}, {"b", "c"}}), -EINVAL, "3 voter sets");
	expect_error(w.leader->set_voters({{"b", "x"}}), -EINVAL, "x is not a follower");
	expect_error(w.leader->set_voters({{"b", "b"}}), -EINVAL, "twice");
	assert_true(w.leader->voter("b") && w.leader->voter("c"));
	// A learner removed before it joined.
	w.add("d");
	assert_true(w.leader->remove_follower("d").ok());
	w.append(1);
	w.sync_leader();
	w.settle();
	assert_int_equal(w.leader->commit_index(), 1);
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_learner_counts_for_nothing),
		cmocka_unit_test(test_joint_needs_both_majorities),
		cmocka_unit_test(test_removed_follower_gets_nothing),
		cmocka_unit_test(test_joint_is_not_the_set_after_alone),
		cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
