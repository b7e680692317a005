// SPDX-License-Identifier: GPL-2.0
//
// test_repl_log.cc - a leader and two followers over the fake link of
// test_repl.h: a record is committed once durable on 2 of 3 and never
// before, the commit index only goes forward, followers apply exactly the
// committed prefix in order; lost, late and reordered DURABLEs, a flipped
// byte, a follower that stops acking (its ring fills, the leader backlogs
// it and commits with the other), one that falls behind the window (needs
// a checkpoint), an old epoch's write after a fence, and the ring's wrap.
#include <cerrno>
#include <cstdint>
#include <random>

#include "tests/test_repl.h"

#include "tests/common/cmocka_cxx.h"

using namespace repl_test;

namespace {

// Nothing commits on the leader's journal alone, nor on one follower
// alone; the leader and one follower, or two followers, commit.
void test_commit_needs_two_of_three(void **)
{
	World w;

	w.f("b").stalled = true;
	w.f("c").stalled = true;
	w.append(5);
	w.sync_leader();
	w.settle();
	assert_int_equal(w.leader->commit_index(), 0);
	assert_true(w.commits.empty());
	// The records are in both followers' journals, not durable: none
	// is applied.
	assert_int_equal(w.f("b").sink.journal.size(), 5);
	assert_int_equal(w.f("b").rx->durable_index(), 0);

	w.f("b").stalled = false;
	w.settle();
	assert_int_equal(w.leader->commit_index(), 5);
	assert_int_equal(w.commits.size(), 1);

	// Five more, not durable on the leader: c alone makes no majority
	// with the leader, b and c do without it.
	w.f("b").stalled = true;
	w.f("c").stalled = false;
	w.append(5);
	w.settle();
	assert_int_equal(w.leader->commit_index(), 5);
	w.f("b").stalled = false;
	w.settle();
	assert_int_equal(w.leader->commit_index(), 10);
	assert_int_equal(w.leader->local_durable_index(), 5);

	// The followers hear the commit from the next heartbeat and apply.
	w.leader->tick(0);
	w.settle();
	w.expect_applied("b", 10);
	w.expect_applied("c", 10);
	assert_int_equal(w.f("b").rx->commit_index(), 10);
}

// A stream of batches with journals syncing at random: every commit was
// durable on 2 of 3 (World::committed), the followers end up applying the
// whole log in order, and the small ring wraps many times.
void test_random_stream(void **)
{
	World w(kMinBatchBytes + 8192);
	std::mt19937 rng(7);

	for (int round = 0; round < 400; round++) {
		w.append(1 + rng() % 6);
		// Stalls that last some rounds, so rings fill.
		for (const char *id : {"b", "c"})
			if (rng() % 8 == 0)
				w.f(id).stalled = !w.f(id).stalled;
		if (rng() % 2)
			w.sync_leader();
		if (round % 10 == 0)
			w.leader->tick(round * 100);
		w.step();
		w.step();
	}
	w.f("b").stalled = w.f("c").stalled = false;
	w.sync_leader();
	w.settle();
	w.leader->tick(1 << 30);
	w.settle();

	const uint64_t n = w.log.size();
	assert_int_equal(w.leader->commit_index(), n);
	w.expect_applied("b", n);
	w.expect_applied("c", n);
	assert_true(w.leader->stats().wraps > 5);
	assert_true(w.f("b").rx->stats().wraps > 5);
	assert_true(w.leader->stats().backlog_waits > 0);
	for (size_t i = 1; i < w.commits.size(); i++)
		assert_true(w.commits[i] > w.commits[i - 1]);
	assert_true(w.f("b").closed.empty() && w.f("c").closed.empty());
}

// A lost DURABLE is covered by the next (durable indexes are cumulative);
// a held one holds the commit until it arrives.
void test_lost_and_late_durables(void **)
{
	World w;

	w.f("c").stalled = true;
	w.sync_leader();
	w.f("b").drop_acks = true;
	w.append(3);
	w.sync_leader();
	w.settle();
	assert_int_equal(w.leader->commit_index(), 0);
	assert_int_equal(w.f("b").rx->durable_index(), 3);

	w.f("b").drop_acks = false;
	w.append(2);
	w.sync_leader();
	w.settle();
	assert_int_equal(w.leader->commit_index(), 5);

	w.f("b").hold_acks = true;
	w.append(2);
	w.sync_leader();
	w.settle();
	assert_int_equal(w.leader->commit_index(), 5);
	assert_false(w.f("b").acks.empty());
	w.f("b").hold_acks = false;
	w.settle();
	assert_int_equal(w.leader->commit_index(), 7);
}

// DURABLEs overtaken by later ones: an older durable index is stale and
// ignored (the commit never goes back); an older consumed position going
// back is a protocol error that drops the follower.
void test_reordered_durables(void **)
{
	World w;

	// Two batches, each durable in a step of its own: two DURABLEs,
	// the second with a larger consumed position. Delivered newer first.
	w.f("c").stalled = true;
	w.f("b").hold_acks = true;
	w.append(2);
	w.step();
	w.append(2);
	w.step();
	assert_int_equal(w.f("b").acks.size(), 2);
	const Bytes older = w.f("b").acks[0], newer = w.f("b").acks[1];
	w.f("b").acks.clear();
	w.sync_leader();
	w.deliver_ack(w.f("b"), newer);
	assert_int_equal(w.leader->commit_index(), 4);
	w.deliver_ack(w.f("b"), older);
	assert_int_equal(w.ack_errors["b"], -EINVAL);
	assert_int_not_equal(w.f("b").closed.find("goes back"), std::string::npos);
	assert_int_equal(w.leader->stats().drops, 1);
	assert_int_equal(w.leader->commit_index(), 4);

	// With the same consumed position, an overtaken DURABLE is only
	// stale: the commit stays.
	World v;

	v.f("c").stalled = true;
	v.append(3);
	v.sync_leader();
	v.f("b").hold_acks = true;
	v.settle();
	const Durable last = std::get<Durable>(parse_control(v.f("b").acks.back()).value());
	Durable stale = last;
	stale.durable_index = 1;
	assert_true(v.leader->on_durable("b", last).ok());
	assert_int_equal(v.leader->commit_index(), 3);
	assert_true(v.leader->on_durable("b", stale).ok());
	assert_int_equal(v.leader->commit_index(), 3);
	assert_int_equal(v.leader->follower("b")->durable_index, 3);
	assert_int_equal(v.leader->stats().stale_durables, 1);
}

// A byte flipped on its way into b's ring: b's receiver refuses the batch
// (its CRC) and the connection closes; the leader commits with c.
void test_flipped_byte(void **)
{
	World w;

	w.append(3);
	w.sync_leader();
	w.settle();
	w.f("b").flip_next = true;
	w.append(4);
	w.sync_leader();
	w.settle();
	assert_int_not_equal(w.f("b").closed.find("CRC"), std::string::npos);
	assert_int_equal(w.f("b").rx->failure()->code, -EBADMSG);
	// Nothing of the bad batch reached b's journal.
	assert_int_equal(w.f("b").sink.journal.size(), 3);
	assert_int_equal(w.leader->commit_index(), 7);
	assert_int_equal(w.f("c").rx->durable_index(), 7);
}

// b stops acking: its ring fills and the leader backlogs it, committing
// with c; once b acks again its backlog goes out and it catches up.
void test_follower_stops_acking(void **)
{
	World w(128 << 10, 4 << 20);

	w.f("b").stalled = true;
	w.stream(100, 4);
	const FollowerInfo *b = w.leader->follower("b");
	assert_int_equal(b->state == FollowerState::backlogged, true);
	assert_true(b->shipped_index < w.log.size());
	assert_true(b->written - b->consumed <= w.opts.ring_bytes);
	assert_int_equal(w.leader->commit_index(), w.log.size());
	assert_int_equal(w.f("b").sink.durable, 0);

	w.f("b").stalled = false;
	w.settle();
	w.leader->tick(0);
	w.settle();
	assert_int_equal(b->state == FollowerState::streaming, true);
	assert_int_equal(b->durable_index, w.log.size());
	w.expect_applied("b", w.log.size());
	w.expect_applied("c", w.log.size());
}

// b stops acking and the window moves past what it lacks: b needs a
// checkpoint; the leader goes on committing with c, and b's durable index
// (of what it got) still counts.
void test_follower_behind_window(void **)
{
	World w(128 << 10, 96 << 10);

	w.f("b").stalled = true;
	w.stream(200, 3);
	const FollowerInfo *b = w.leader->follower("b");
	assert_int_equal(b->state == FollowerState::needs_checkpoint, true);
	assert_int_not_equal(b->reason.find("left the window"), std::string::npos);
	assert_true(w.leader->stats().evicted > 0);
	assert_true(w.leader->window_bytes() <= w.opts.window_bytes);
	assert_int_equal(w.leader->commit_index(), w.log.size());

	// Its journal catches up on what it got; nothing more is written.
	const uint64_t shipped = b->shipped_index;
	w.f("b").stalled = false;
	w.settle();
	w.append(3);
	w.sync_leader();
	w.settle();
	assert_int_equal(b->shipped_index, shipped);
	assert_int_equal(b->durable_index, shipped);
	assert_int_equal(w.f("b").sink.journal.size(), shipped);
}

// b's journal kept two of a batch's three records at a crash (the batch
// went into two of its writes): its new connection is sent that batch
// again, and b takes the third record only, with a mark of its own; it
// counts for commit at once and applies the log as c does.
void test_log_ends_inside_a_batch(void **)
{
	World w;
	FollowerEnd &b = w.f("b");

	w.append(3);
	w.sync_leader();
	w.settle();
	assert_int_equal(w.leader->commit_index(), 3);
	assert_int_equal(b.sink.marks.size(), 1);
	assert_true(b.sink.applied.empty());

	// The crash: what its journal has left, and its new receiver.
	b.sink.journal.resize(2);
	b.sink.durable = 2;
	b.sink.marks.clear();
	std::vector<HeldRecord> held;
	for (uint64_t i = 1; i <= 2; i++)
		held.push_back({i, World::kEpoch, w.log[i - 1].type, w.log[i - 1].payload});
	w.connect(b, {World::kEpoch, 2}, std::move(held), 0);

	const FollowerInfo &fb = *w.leader->follower("b");
	assert_int_equal(fb.state == FollowerState::streaming, true);
	assert_true(fb.counted);
	assert_int_equal(fb.durable_index, 2);
	assert_int_equal(fb.shipped_index, 3);
	w.settle();
	assert_true(b.closed.empty());
	assert_int_equal(b.rx->stats().trimmed, 2);
	assert_int_equal(b.rx->stats().skipped, 0);
	assert_int_equal(b.sink.marks.size(), 1);
	assert_int_equal(b.sink.marks[0].first_index, 3);
	assert_int_equal(b.sink.marks[0].count, 1);
	assert_int_equal(b.sink.journal.size(), 3);
	assert_true(b.sink.journal[2] == w.log[2]);
	assert_int_equal(fb.durable_index, 3);
	assert_int_equal(b.rx->last().index, 3);

	// It goes on with the log, and only c stalls: commits need b.
	w.f("c").stalled = true;
	w.stream(2, 3);
	w.leader->tick(1000);
	w.settle();
	assert_int_equal(w.leader->commit_index(), 9);
	w.expect_applied("b", 9);
}

// b learns of epoch 3: what the epoch-2 leader writes after is dropped and
// counted, nothing reaches b's journal and b sends no DURABLE.
void test_write_after_fence(void **)
{
	World w;

	w.append(2);
	w.sync_leader();
	w.settle();
	w.f("b").rx->fence(World::kEpoch + 1);
	assert_true(w.f("b").rx->fenced());
	const uint64_t durables = w.f("b").rx->stats().durables;

	w.append(3);
	w.sync_leader();
	w.leader->tick(0);
	w.settle();
	assert_int_equal(w.f("b").rx->stats().dropped, 2);	// the batch, the heartbeat
	assert_int_equal(w.f("b").sink.journal.size(), 2);
	assert_int_equal(w.f("b").rx->stats().durables, durables);
	assert_true(w.f("b").closed.empty());
	assert_int_equal(w.leader->commit_index(), 5);		// with c
	// A lower fence changes nothing.
	w.f("c").rx->fence(1);
	assert_false(w.f("c").rx->fenced());
}

// A batch that does not fit before the ring's end: a wrap marker where it
// would have gone, the batch at 0, both within what the follower freed.
void test_wrap_at_ring_end(void **)
{
	const uint64_t ring = kMinBatchBytes + 4096;
	World w(ring, 1 << 20, kMinBatchBytes);

	// Two records of about 40 KiB each: the second does not fit after
	// the first.
	for (uint64_t i = 0; i < 2; i++) {
		w.log.push_back({static_cast<uint16_t>(i + 1),
				 Bytes(40000, static_cast<std::byte>(i + 0x11))});
		RecordRef r{w.log[i].type, w.log[i].payload};

		assert_true(w.leader->ship(i + 1, std::span(&r, 1)).ok());
		w.sync_leader();
		w.settle();
	}
	assert_int_equal(w.leader->stats().wraps, 2);	// one in each ring
	assert_int_equal(w.f("b").rx->stats().wraps, 1);
	// The marker stands where the first batch ended, the second is at 0.
	const size_t first_len = align_up(kHeaderBytes + kRecordHeader + 40000);
	uint32_t magic;
	std::memcpy(&magic, w.f("b").ring.data() + first_len, 4);
	assert_int_equal(magic, kWrapMagic);
	assert_int_equal(w.f("b").rx->consumed(), ring + first_len);
	assert_int_equal(w.leader->follower("b")->written, ring + first_len);
	w.leader->tick(0);
	w.settle();
	w.expect_applied("b", 2);
	w.expect_applied("c", 2);
}

// Heartbeats go every interval to connected followers only, and carry the
// commit index the followers apply by.
void test_heartbeats(void **)
{
	World w;

	w.append(2);
	w.sync_leader();
	w.settle();
	w.leader->tick(1000);
	w.leader->tick(1050);
	assert_int_equal(w.leader->stats().heartbeats, 2);
	w.leader->tick(1100);
	assert_int_equal(w.leader->stats().heartbeats, 4);
	w.leader->disconnect("c");
	w.leader->tick(1200);
	assert_int_equal(w.leader->stats().heartbeats, 5);
	w.settle();
	w.expect_applied("b", 2);
	assert_int_equal(w.f("b").rx->commit_index(), 2);
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_commit_needs_two_of_three),
		cmocka_unit_test(test_random_stream),
		cmocka_unit_test(test_lost_and_late_durables),
		cmocka_unit_test(test_reordered_durables),
		cmocka_unit_test(test_flipped_byte),
		cmocka_unit_test(test_follower_stops_acking),
		cmocka_unit_test(test_follower_behind_window),
		cmocka_unit_test(test_log_ends_inside_a_batch),
		cmocka_unit_test(test_write_after_fence),
		cmocka_unit_test(test_wrap_at_ring_end),
		cmocka_unit_test(test_heartbeats),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
