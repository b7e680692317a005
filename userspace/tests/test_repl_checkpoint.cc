// SPDX-License-Identifier: GPL-2.0
//
// test_repl_checkpoint.cc - a checkpoint shipped to a follower its log can
// no longer bring back, over the fake link of test_repl.h (the sinks take
// any bytes: test_repl_store.cc installs real ones): it goes in chunks
// through a ring smaller than it, only over bytes the follower reported
// consumed; the follower installs it once, then streams on from the
// record after it. A refusal, a disconnect or a fence mid-shipment leave
// the follower's log as it was and drop what it received; a second need
// (a reconnect, or the window moving past it meanwhile) gets a checkpoint
// of its own. The receiver's refusals of chunks written by hand.
#include <cerrno>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "tests/test_repl.h"

#include "tests/common/cmocka_cxx.h"

using namespace repl_test;

namespace {

// n bytes that tell a checkpoint at (kEpoch, index) apart: the fake sinks
// take anything, and a ring of 128 KiB holds two chunks of it at most.
std::shared_ptr<const ShippedCheckpoint> blob(uint64_t index, size_t n = 1 << 20)
{
	auto c = std::make_shared<ShippedCheckpoint>();

	c->last = {World::kEpoch, index};
	c->bytes.resize(n);
	for (size_t i = 0; i < n; i++)
		c->bytes[i] = static_cast<uint8_t>(index + i * 13);
	return c;
}

// The follower is away while the log goes past the window, then comes
// back: it needs a checkpoint.
void away_and_back(World &w, const std::string &id)
{
	w.close(w.f(id), "away");
	w.stream(200, 3);
	w.reconnect(w.f(id));
	assert_true(w.leader->follower(id)->state == FollowerState::needs_checkpoint);
	assert_true(w.leader->wants_checkpoint());
}

// c away and back, then shipped a checkpoint at the log's end while its
// DURABLEs are held: part of it is in its ring, and the leader waits for
// room.
std::shared_ptr<const ShippedCheckpoint> stalled_shipment(World &w)
{
	away_and_back(w, "c");

	const auto ck = blob(w.log.size());
	const FollowerInfo *c = w.leader->follower("c");

	w.f("c").hold_acks = true;
	assert_true(w.leader->offer_checkpoint(ck).ok());
	w.settle();
	assert_true(c->state == FollowerState::checkpointing);
	assert_true(c->checkpoint_sent < ck->bytes.size());
	assert_true(w.f("c").rx->checkpoint_bytes() > 0);
	return ck;
}

// What the follower applied after its checkpoint is the leader's log
// after it, in order.
void expect_follows(World &w, const std::string &id, uint64_t from)
{
	const FakeSink &s = w.f(id).sink;

	assert_int_equal(s.base, from);
	assert_int_equal(from + s.applied.size(), w.log.size());
	for (size_t i = 0; i < s.applied.size(); i++) {
		assert_int_equal(s.applied[i].first, from + 1 + i);
		assert_true(s.applied[i].second == w.log[from + i]);
	}
}

// ck offered and installed, c's n-th checkpoint: it streams on from it.
void install_and_follow(World &w, const std::shared_ptr<const ShippedCheckpoint> &ck, size_t n)
{
	assert_true(w.leader->offer_checkpoint(ck).ok());
	w.settle();
	assert_int_equal(w.f("c").sink.installed.size(), n);
	assert_true(w.leader->follower("c")->state == FollowerState::streaming);
	w.stream(2, 2);
	w.leader->tick(1000);
	w.settle();
	expect_follows(w, "c", ck->last.index);
}

// 1 MiB through a ring of 128 KiB: chunk by chunk as the follower frees
// room, installed once whole, and the batches after it follow.
void test_checkpoint_in_chunks(void **)
{
	World w(128 << 10, 96 << 10);

	w.stream(5, 3);
	away_and_back(w, "c");

	const FollowerInfo *c = w.leader->follower("c");
	const uint64_t k = w.log.size();
	const auto ck = blob(k);

	// Refused: not this epoch's committed records.
	auto bad = std::make_shared<ShippedCheckpoint>(*ck);
	bad->last = {World::kEpoch - 1, k};
	expect_error(w.leader->offer_checkpoint(bad), -EINVAL, "a checkpoint at");
	bad->last = {World::kEpoch, k + 1};
	expect_error(w.leader->offer_checkpoint(bad), -EINVAL, "commit index");
	bad->last = {World::kEpoch, 2};
	expect_error(w.leader->offer_checkpoint(bad), -EINVAL, "not in the window");
	bad->last = {World::kEpoch, k};
	bad->bytes.resize(kCheckpointHeaderBytes - 1);
	expect_error(w.leader->offer_checkpoint(bad), -EINVAL, "39 bytes");
	assert_true(c->state == FollowerState::needs_checkpoint);

	assert_true(w.leader->offer_checkpoint(ck).ok());
	assert_true(c->state == FollowerState::checkpointing);
	assert_false(w.leader->wants_checkpoint());
	// No more than the ring holds went before the follower freed room.
	assert_true(c->checkpoint_sent < ck->bytes.size());
	assert_true(c->written - c->consumed <= w.opts.ring_bytes);
	w.settle();

	const FakeSink &s = w.f("c").sink;
	assert_int_equal(s.installed.size(), 1);
	assert_true(s.installed[0].first == (LogPosition{World::kEpoch, k}));
	assert_true(s.installed[0].second == ck->bytes);
	assert_true(c->state == FollowerState::streaming);
	assert_true(c->checkpoint == nullptr);
	assert_int_equal(ck.use_count(), 1);
	assert_int_equal(c->durable_index, k);
	assert_int_equal(w.leader->stats().checkpoints, 1);
	const size_t room = chunk_room(w.opts.max_batch_bytes);
	assert_int_equal(w.leader->stats().chunks, (ck->bytes.size() + room - 1) / room);
	assert_int_equal(w.f("c").rx->stats().checkpoints, 1);
	assert_true(w.f("c").rx->last() == (LogPosition{World::kEpoch, k}));
	assert_int_equal(w.f("c").rx->applied_index(), k);
	assert_int_equal(w.f("c").rx->checkpoint_bytes(), 0);

	// It counts again: the commit goes on with it alone.
	w.f("b").stalled = true;
	w.stream(4, 2);
	w.leader->tick(1000);
	w.settle();
	assert_int_equal(w.leader->commit_index(), w.log.size());
	expect_follows(w, "c", k);
	assert_true(w.f("c").closed.empty());
}

// The follower refuses what it received (its sink's checks): its
// connection ends, the leader lets the checkpoint go, and a new
// connection gets another.
void test_refused_then_installed(void **)
{
	World w(128 << 10, 96 << 10);

	away_and_back(w, "c");
	const uint64_t k = w.log.size();
	w.f("c").sink.install_error = -EINVAL;
	assert_true(w.leader->offer_checkpoint(blob(k, 100 << 10)).ok());
	w.settle();
	assert_int_not_equal(w.f("c").closed.find("refused a checkpoint"), std::string::npos);
	assert_true(w.f("c").sink.installed.empty());
	assert_true(w.f("c").rx->failed());
	assert_true(w.leader->follower("c")->state == FollowerState::unready);
	assert_true(w.leader->follower("c")->checkpoint == nullptr);

	w.f("c").sink.install_error = 0;
	w.reconnect(w.f("c"));
	install_and_follow(w, blob(k, 100 << 10), 1);
}

// The leader takes the install only from the DURABLE that reports every
// chunk consumed at the checkpoint's index: another index there is a
// protocol error, which drops the follower.
void test_install_reported_at_its_index(void **)
{
	World w(128 << 10, 96 << 10);

	away_and_back(w, "c");
	const uint64_t k = w.log.size();
	const FollowerInfo *c = w.leader->follower("c");

	w.f("c").hold_acks = true;
	assert_true(w.leader->offer_checkpoint(blob(k, 1000)).ok());
	w.settle();
	assert_int_equal(w.f("c").sink.installed.size(), 1);
	assert_true(c->state == FollowerState::checkpointing);
	const std::string why = "durable " + std::to_string(k - 1) + " once the checkpoint";

	expect_error(w.leader->on_durable("c", Durable{World::kEpoch, k - 1, c->written}),
		     -EPROTO, why.c_str());
	assert_true(c->state == FollowerState::dropped);
}

// Its connection ends mid-shipment: the leader lets the checkpoint go,
// the follower drops the chunks it had; the new connection needs one
// again and gets one whole.
void test_disconnect_mid_shipment(void **)
{
	World w(128 << 10, 96 << 10);
	auto first = stalled_shipment(w);
	const uint64_t k = first->last.index;
	const FollowerInfo *c = w.leader->follower("c");

	w.close(w.f("c"), "lost");
	w.f("c").rx->disconnected();	// as RdmaFollower::end() does
	assert_true(c->state == FollowerState::unready);
	assert_int_equal(first.use_count(), 1);
	assert_int_equal(w.f("c").rx->checkpoint_bytes(), 0);
	assert_true(w.f("c").sink.installed.empty());

	w.f("c").hold_acks = false;
	w.reconnect(w.f("c"));
	assert_true(c->state == FollowerState::needs_checkpoint);
	install_and_follow(w, blob(k), 1);
}

// The window moves past the checkpoint's next record while it is
// shipped: installed, the follower needs another, and streams after the
// second. An offer finds only the followers that need one then: one
// already shipped keeps its own.
void test_second_need(void **)
{
	World w(128 << 10, 96 << 10);
	const auto one = stalled_shipment(w);
	const uint64_t k1 = one->last.index;
	const FollowerInfo *c = w.leader->follower("c");

	// Meanwhile the log goes on with b, past the window.
	w.stream(200, 3);
	assert_true(c->state == FollowerState::checkpointing);
	assert_false(w.leader->wants_checkpoint());
	assert_true(w.leader->offer_checkpoint(blob(w.log.size())).ok());
	assert_true(c->checkpoint == one);

	w.f("c").hold_acks = false;
	w.settle();
	assert_int_equal(w.f("c").sink.installed.size(), 1);
	assert_true(c->state == FollowerState::needs_checkpoint);
	assert_int_not_equal(c->reason.find("while the checkpoint was shipped"), std::string::npos);
	assert_int_equal(c->durable_index, k1);

	install_and_follow(w, blob(w.log.size(), 200 << 10), 2);
	assert_int_equal(w.leader->stats().checkpoints, 2);
}

// ---- The receiver alone ----------------------------------------------------

// A checkpoint of the leader of epoch 4 at (4, 9), in three chunks.
struct Pieces {
	Bytes all = Bytes(300, std::byte{0x77});
	ChunkHeader h{.epoch = 4, .last = {4, 9}, .total = 300, .offset = 0};

	ChunkHeader at(uint64_t offset) const
	{
		ChunkHeader c = h;

		c.offset = offset;
		return c;
	}
	std::span<const std::byte> piece(uint64_t offset) const
	{
		return std::span(all).subspan(offset, 100);
	}
};

// Chunk by chunk: each but the last reported consumed at once, the last
// only with the install, which makes the log the checkpoint's.
void test_receiver_installs(void **)
{
	Lone l(1 << 20, 3);
	Pieces p;

	assert_true(l.chunk(p.at(0), p.piece(0)).ok());
	assert_int_equal(l.sent.size(), 1);
	assert_int_equal(l.sent.back().consumed, kHeaderBytes + 104);
	assert_int_equal(l.sent.back().durable_index, 5);
	assert_int_equal(l.rx->checkpoint_bytes(), 100);
	assert_true(l.chunk(p.at(100), p.piece(100)).ok());
	assert_true(l.sink.installed.empty());
	assert_true(l.chunk(p.at(200), p.piece(200)).ok());

	assert_int_equal(l.sink.installed.size(), 1);
	assert_true(l.sink.installed[0].first == (LogPosition{4, 9}));
	assert_int_equal(l.sink.installed[0].second.size(), 300);
	assert_true(l.rx->last() == (LogPosition{4, 9}));
	assert_int_equal(l.rx->applied_index(), 9);
	assert_int_equal(l.rx->durable_index(), 9);
	assert_int_equal(l.rx->held_bytes(), 0);
	assert_int_equal(l.rx->checkpoint_bytes(), 0);
	assert_int_equal(l.sent.back().durable_index, 9);
	assert_int_equal(l.sent.back().consumed, l.at);
	// The held records went with the log: nothing of them is applied.
	assert_true(l.sink.applied.empty());
	// The batch after it follows.
	BatchHeader h = next(4, 10, 4);
	h.commit_index = 9;
	assert_true(l.take(h).ok());
	assert_true(l.rx->last() == (LogPosition{4, 11}));
}

// What a receiver refuses of a checkpoint's chunks; each leaves its log
// as it was and installs nothing.
void test_receiver_refuses_chunks(void **)
{
	Pieces p;
	auto at = [&p](uint64_t off, ChunkHeader h) {
		h.offset = off;
		return h;
	};
	struct Case {
		const char *what;
		std::function<mdr::Status(Lone &)> run;
		int err;
		const char *words;
	};
	const Case cases[] = {
		{"another epoch", [&](Lone &l) {
			 ChunkHeader h = p.h;
			 h.epoch = 3;
			 h.last = {3, 9};
			 return l.chunk(h, p.piece(0));
		 }, -EPROTO, "checkpoint chunk of epoch 3 on the connection of 4"},
		{"a first chunk past 0",
		 [&](Lone &l) { return l.chunk(p.at(100), p.piece(100)); }, -EPROTO,
		 "and none before it"},
		{"past what it takes", [&](Lone &l) {
			 ChunkHeader h = p.h;
			 h.total = 2u << 20;
			 return l.chunk(h, p.piece(0));
		 }, -EFBIG, "past the 1048576"},
		{"behind what was applied", [&](Lone &l) {
			 ChunkHeader h = p.h;
			 h.last = {3, 4};
			 return l.chunk(h, p.piece(0));
		 }, -EPROTO, "would undo records applied up to 5"},
		{"a gap", [&](Lone &l) {
			 assert_true(l.chunk(p.at(0), p.piece(0)).ok());
			 return l.chunk(p.at(200), p.piece(200));
		 }, -EPROTO, "expected (4, 9) at 100"},
		{"another position", [&](Lone &l) {
			 assert_true(l.chunk(p.at(0), p.piece(0)).ok());
			 ChunkHeader h = at(100, p.h);
			 h.last = {4, 10};
			 return l.chunk(h, p.piece(100));
		 }, -EPROTO, "expected (4, 9)"},
		{"another size", [&](Lone &l) {
			 assert_true(l.chunk(p.at(0), p.piece(0)).ok());
			 ChunkHeader h = at(100, p.h);
			 h.total = 400;
			 return l.chunk(h, p.piece(100));
		 }, -EPROTO, "of 300"},
		{"a batch within it", [&](Lone &l) {
			 assert_true(l.chunk(p.at(0), p.piece(0)).ok());
			 return l.take(next());
		 }, -EPROTO, "a batch within a checkpoint"},
		{"refused by the sink", [&](Lone &l) {
			 l.sink.install_error = -EINVAL;
			 for (uint64_t off : {0, 100})
				 assert_true(l.chunk(p.at(off), p.piece(off)).ok());
			 return l.chunk(p.at(200), p.piece(200));
		 }, -EINVAL, "refused a checkpoint up to (4, 9): refused"},
	};

	for (const Case &c : cases) {
		Lone l;

		print_message("%s\n", c.what);
		expect_error(c.run(l), c.err, c.words);
		assert_true(l.rx->failed());
		assert_true(l.sink.installed.empty());
		assert_true(l.rx->last() == (LogPosition{3, 5}));
		assert_int_equal(l.rx->applied_index(), 5);
	}
}

// The leader of epoch 4 stops mid-shipment and one of epoch 5 connects:
// the fence drops what was received and the chunks still in the ring;
// the new connection's receiver, from the same log, takes the new
// leader's checkpoint whole.
void test_receiver_fenced_mid_shipment(void **)
{
	Lone l;
	Pieces p;

	assert_true(l.chunk(p.at(0), p.piece(0)).ok());
	l.rx->fence(5);
	assert_int_equal(l.rx->checkpoint_bytes(), 0);
	assert_true(l.chunk(p.at(100), p.piece(100)).ok());
	assert_true(l.chunk(p.at(200), p.piece(200)).ok());
	assert_int_equal(l.rx->stats().dropped, 2);
	assert_true(l.sink.installed.empty());
	assert_true(l.rx->last() == (LogPosition{3, 5}));

	ReceiverOptions o;
	o.epoch = 5;
	o.last = l.rx->last();
	o.applied = l.rx->applied_index();
	o.held = l.rx->take_held();
	o.ring = l.ring;
	o.max_batch_bytes = kMinBatchBytes;
	auto r = LogReceiver::create(std::move(o), l.sink, l);
	assert_true(r.ok());
	l.rx = std::move(r).value();
	l.at = 0;
	p.h.epoch = 5;
	p.h.last = {5, 12};
	for (uint64_t off : {0, 100, 200})
		assert_true(l.chunk(p.at(off), p.piece(off)).ok());
	assert_int_equal(l.sink.installed.size(), 1);
	assert_true(l.rx->last() == (LogPosition{5, 12}));
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checkpoint_in_chunks),
		cmocka_unit_test(test_refused_then_installed),
		cmocka_unit_test(test_install_reported_at_its_index),
		cmocka_unit_test(test_disconnect_mid_shipment),
		cmocka_unit_test(test_second_need),
		cmocka_unit_test(test_receiver_installs),
		cmocka_unit_test(test_receiver_refuses_chunks),
		cmocka_unit_test(test_receiver_fenced_mid_shipment),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
