// SPDX-License-Identifier: GPL-2.0
//
// test_repl_refuse.cc - what each side of log shipping refuses, one fault
// at a time, and the connections it takes back: the shipper's DURABLE
// checks (each drops the follower), its options and its connect() of a
// log it cannot stream to; the receiver's protocol errors on batches
// written by hand into its ring (gap, overlap, log mismatch, epochs,
// notify offsets, the held bound), the cut of an older epoch's tail and a
// shipper's stream to it, its idempotent skip, the matched index it
// applies by, journal and apply failures, and a reconnect within the epoch
// that resumes where the log ends.
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>

#include "tests/test_repl.h"

#include "tests/common/cmocka_cxx.h"

using namespace repl_test;

namespace {

// Options good but for one edit each, which make() refuses with -EINVAL
// saying the case's words.
template <typename Opts>
struct OptionCase {
	const char *words;
	void (*edit)(Opts &);
};

template <typename Opts, size_t N, typename Make>
void expect_refusals(const Opts &good, const OptionCase<Opts> (&cases)[N], Make make)
{
	for (const OptionCase<Opts> &c : cases) {
		Opts o = good;

		c.edit(o);
		auto r = make(std::move(o));
		assert_false(r.ok());
		if (r.error() != -EINVAL || r.message().find(c.words) == std::string::npos)
			fail_msg("want \"%s\", got \"%s\"", c.words, r.message().c_str());
	}
}

// ---- The shipper -----------------------------------------------------------

void test_durable_refused(void **)
{
	struct Case {
		const char *what;
		Durable (*make)(const FollowerInfo &b);
		int err;
		const char *words;
	};
	const Case cases[] = {
		{"another epoch", [](const FollowerInfo &b) {
			return Durable{World::kEpoch + 1, b.shipped_index, b.written};
		 }, -ESTALE, "DURABLE of epoch 3"},
		{"an index never shipped", [](const FollowerInfo &b) {
			return Durable{World::kEpoch, b.shipped_index + 1, b.written};
		 }, -ERANGE, "shipped to it"},
		{"consumed past written", [](const FollowerInfo &b) {
			return Durable{World::kEpoch, b.shipped_index, b.written + 8};
		 }, -ERANGE, "bytes written"},
		{"consumed going back", [](const FollowerInfo &b) {
			return Durable{World::kEpoch, b.shipped_index, b.consumed - 8};
		 }, -EINVAL, "goes back"},
	};

	for (const Case &c : cases) {
		World w;

		print_message("%s\n", c.what);
		w.append(4);
		w.sync_leader();
		w.settle();

		const FollowerInfo &b = *w.leader->follower("b");

		assert_true(b.consumed > 0);
		expect_error(w.leader->on_durable("b", c.make(b)), c.err, c.words);
		assert_int_equal(b.state == FollowerState::dropped, true);
		// Dropped: nothing more is written to it, and until a new
		// connection its DURABLEs are refused.
		const size_t writes = w.wrote.size();
		w.append(1);
		assert_int_equal(w.wrote.size(), writes + 1);	// c's only
		expect_error(w.leader->on_durable("b", Durable{World::kEpoch, 0, 0}), -ENOTCONN,
			     "not connected");
	}

	World w;
	expect_error(w.leader->on_durable("x", Durable{World::kEpoch, 0, 0}), -ENOENT,
		     "not a follower");
	expect_error(w.leader->ship(5, {}), -EINVAL, "the log ends at 0");
	expect_error(w.leader->local_durable(1), -ERANGE, "the log ends at 0");
	Bytes big(kMaxRecordPayload + 1);
	RecordRef r{1, big};
	expect_error(w.leader->ship(1, std::span(&r, 1)), -EINVAL, "a record of");
}

void test_shipper_options_refused(void **)
{
	struct Null : ShipLink {
		mdr::Status write(const std::string &, uint32_t, std::span<const std::byte>) override
		{
			return {};
		}
		mdr::Status notify(const std::string &, uint32_t) override { return {}; }
		mdr::Status send(const std::string &, std::span<const std::byte>) override
		{
			return {};
		}
	} link;
	const ShipperOptions good{.epoch = 3, .followers = {"b", "c"}, .start = {2, 10},
				  .commit_index = 8};
	assert_true(LogShipper::create(good, link, {}).ok());

	const OptionCase<ShipperOptions> cases[] = {
		{"epoch 0", [](ShipperOptions &o) { o.epoch = 0; }},
		{"the log begins at", [](ShipperOptions &o) { o.start = {4, 10}; }},
		{"the log begins at", [](ShipperOptions &o) { o.start = {0, 10}; }},
		{"past the log's end", [](ShipperOptions &o) { o.commit_index = 11; }},
		{"no followers", [](ShipperOptions &o) { o.followers.clear(); }},
		{"named twice", [](ShipperOptions &o) { o.followers = {"b", "b"}; }},
		{"holds no batch", [](ShipperOptions &o) { o.window_bytes = 4096; }},
		{"heartbeat", [](ShipperOptions &o) { o.heartbeat_ms = 0; }},
		{"ring of", [](ShipperOptions &o) { o.ring_bytes = 1 << 16; }},
	};
	expect_refusals(good, cases,
			[&link](ShipperOptions o) { return LogShipper::create(o, link, {}); });
}

// A log that is not where this epoch began, nor a record of it the
// leader has: the follower needs a checkpoint and its durable index counts
// for nothing. (One that ends inside a batch the leader has is streamed
// from that batch: test_repl_log.cc.)
void test_connect_elsewhere(void **)
{
	World w;

	w.append(3);
	w.sync_leader();
	w.settle();
	assert_int_equal(w.leader->commit_index(), 3);

	expect_error(w.leader->connect("x", {}, 0), -ENOENT, "not a follower");
	expect_error(w.leader->connect("b", {1, 4}, 5), -EINVAL, "past its log's end");
	// Of this epoch beyond the leader's log of 3 records.
	for (LogPosition p : {LogPosition{World::kEpoch, 4}, LogPosition{World::kEpoch, 9}}) {
		w.leader->disconnect("b");
		assert_true(w.leader->connect("b", p, p.index).ok());

		const FollowerInfo &b = *w.leader->follower("b");

		assert_int_equal(b.state == FollowerState::needs_checkpoint, true);
		assert_false(b.reason.empty());
	}
	// Its DURABLE of its own log does not count, nor drop it.
	const FollowerInfo &b = *w.leader->follower("b");
	assert_false(b.counted);
	assert_true(w.leader->on_durable("b", Durable{World::kEpoch, 2, 0}).ok());
	// Nor does it hear the commit index, which would make it apply its
	// own records: heartbeats go to c only.
	w.leader->tick(0);
	assert_int_equal(w.leader->stats().heartbeats, 1);
	assert_true(w.f("b").controls.empty());
	w.f("c").stalled = true;
	w.append(2);
	w.sync_leader();
	w.settle();
	assert_int_equal(w.leader->commit_index(), 3);
}

// b's log holds a tail of an older epoch past where this epoch began (a
// leader's records no majority had): it streams from the start, counts as
// durable only up to it, and b cuts its tail when the first batch comes
// over it; then b's log is the leader's and counts for the commit.
void test_connect_old_tail(void **)
{
	World w;
	FollowerEnd &b = w.f("b");
	std::vector<HeldRecord> tail;

	for (uint64_t i = 1; i <= 9; i++)
		tail.push_back({i, 1, 1, Bytes(20, std::byte{0x5a})});
	w.f("c").stalled = true;
	w.connect(b, {1, 9}, std::move(tail), 0);

	const FollowerInfo &f = *w.leader->follower("b");

	assert_true(f.state == FollowerState::streaming);
	assert_true(f.counted);
	assert_int_equal(f.durable_index, 0);
	assert_int_equal(f.next_index, 1);
	// Its old durable index does not commit anything.
	w.append(3);
	w.sync_leader();
	assert_int_equal(w.leader->commit_index(), 0);
	w.settle();
	assert_int_equal(b.rx->stats().cut, 9);
	assert_true(b.rx->last() == (LogPosition{World::kEpoch, 3}));
	assert_int_equal(b.sink.marks.size(), 1);
	assert_int_equal(b.sink.marks[0].first_index, 1);
	assert_int_equal(w.leader->commit_index(), 3);
	assert_true(b.closed.empty());
}

// A follower whose log ends behind the start, at a record of the prior
// ones with the same epoch, is streamed from after it, each record in a
// batch of its own epoch; one elsewhere needs a checkpoint; prior records
// that are not the log's end are refused.
void test_connect_behind_start(void **)
{
	struct : ShipLink {
		mdr::Status write(const std::string &, uint32_t off,
				  std::span<const std::byte> b) override
		{
			batches.push_back(parse_batch(b, kMinBatchBytes).value().h);
			(void)off;
			return {};
		}
		mdr::Status notify(const std::string &, uint32_t) override { return {}; }
		mdr::Status send(const std::string &, std::span<const std::byte>) override
		{
			return {};
		}
		std::vector<BatchHeader> batches;
	} link;
	ShipperOptions o{.epoch = 4, .followers = {"b", "c"}, .start = {2, 5}, .commit_index = 4};
	o.max_batch_bytes = kMinBatchBytes;
	o.ring_bytes = 4 * kMinBatchBytes;
	o.prior = {{3, 1, 1, Bytes(8)}, {4, 2, 1, Bytes(8)}, {5, 2, 1, Bytes(8)}};

	auto bad = o;
	bad.prior.pop_back();
	auto refused = LogShipper::create(bad, link, {});
	assert_false(refused.ok());
	assert_non_null(strstr(refused.message().c_str(), "prior record"));

	auto s = LogShipper::create(o, link, {});
	assert_true(s.ok());
	LogShipper &sh = *s.value();

	assert_true(sh.connect("b", {1, 3}, 3).ok());
	assert_true(sh.follower("b")->state == FollowerState::streaming);
	assert_int_equal(link.batches.size(), 2);
	assert_true(link.batches[0] == (BatchHeader{.epoch = 2, .first_index = 4, .prev_epoch = 1,
						    .count = 1, .payload_len = 14,
						    .commit_index = 3}));
	assert_int_equal(link.batches[1].prev_epoch, 2);
	assert_int_equal(link.batches[1].first_index, 5);
	// Another epoch at 3, or before the prior records: a checkpoint.
	for (LogPosition p : {LogPosition{2, 3}, LogPosition{1, 2}}) {
		assert_true(sh.connect("c", p, p.index).ok());
		assert_true(sh.follower("c")->state == FollowerState::needs_checkpoint);
	}
}

// b's connection drops mid-stream; a new one, with the receiver built from
// the old one's log and held records, resumes at the end of b's log.
void test_reconnect_in_epoch(void **)
{
	World w;

	w.f("c").stalled = true;
	w.append(4);
	w.sync_leader();
	w.settle();
	w.append(4);
	w.step();		// b takes 5..8, not committed yet
	FollowerEnd &b = w.f("b");
	w.close(b, "link lost");
	w.append(4);		// not written to b
	w.sync_leader();
	assert_true(w.leader->follower("b")->state == FollowerState::unready);

	// The journal is flushed before a new connection; what b holds
	// durable and not applied goes to the new receiver.
	b.sink.sync();
	const LogPosition last = b.rx->last();
	const uint64_t applied = b.rx->applied_index();
	std::vector<HeldRecord> held = b.rx->take_held();
	assert_int_equal(last.index, 8);
	assert_true(applied < last.index);
	assert_int_equal(held.size(), last.index - applied);
	w.connect(b, last, std::move(held), applied);
	w.settle();
	w.leader->tick(0);
	w.settle();
	assert_int_equal(w.leader->commit_index(), 12);
	w.expect_applied("b", 12);
	assert_true(b.closed.empty());
}

// ---- The receiver ----------------------------------------------------------

// A batch over a tail of an older epoch, past what was applied: the tail
// from its first index goes, if the record before it is of the batch's
// prev_epoch; a batch over this epoch's records is refused.
void test_receiver_cuts_old_tail(void **)
{
	{
		Lone l(1 << 20, 3);	// (3, 5), 4 and 5 held

		assert_true(l.take(next(4, 5, 3)).ok());
		assert_true(l.rx->last() == (LogPosition{4, 6}));
		assert_int_equal(l.rx->stats().cut, 1);
		assert_int_equal(l.sink.marks.size(), 1);
		assert_int_equal(l.sink.marks[0].first_index, 5);
		// A batch of this epoch over its log's end (the resend of one
		// a crash cut in its journal): the records after the end.
		assert_true(l.take(next(4, 6, 4), 3).ok());
		assert_true(l.rx->last() == (LogPosition{4, 8}));
		assert_int_equal(l.rx->stats().trimmed, 1);
		assert_int_equal(l.sink.marks.size(), 2);
		assert_int_equal(l.sink.marks[1].first_index, 7);
		assert_int_equal(l.sink.marks[1].count, 2);
		assert_int_equal(l.sink.journal.size(), 4);
		// One of an older epoch over this epoch's records: refused.
		expect_error(l.take(next(3, 8, 3), 2), -EPROTO, "of this epoch");
	}
	{
		// A resend whose first record is not the one it holds there.
		Lone l(1 << 20, 3);

		assert_true(l.take(next(4, 5, 3)).ok());
		expect_error(l.take(next(4, 6, 4), 3, 50), -EPROTO,
			     "resends record 6 unlike the one held");
		assert_int_equal(l.sink.journal.size(), 2);
	}
	{
		// Right after what was applied: taken as it says.
		Lone l(1 << 20, 3);

		assert_true(l.take(next(4, 4, 3)).ok());
		assert_int_equal(l.rx->stats().cut, 2);
		assert_true(l.rx->last() == (LogPosition{4, 5}));
	}
	{
		Lone l(1 << 20, 3);

		expect_error(l.take(next(4, 5, 2)), -EPROTO, "the log's record 4 is of epoch 3");
		assert_true(l.sink.journal.empty());
	}
}

void test_receiver_protocol_errors(void **)
{
	struct Case {
		const char *what;
		BatchHeader h;
		const char *words;
	};
	const Case cases[] = {
		{"a gap", next(4, 7, 4), "after a gap"},
		{"a cut of what was applied", next(4, 5, 3), "would cut records up to 5, applied"},
		{"another log before", next(4, 6, 2), "the log's last is of epoch 3"},
		{"a later epoch", next(5, 6, 3), "batch of epoch 5"},
	};

	for (const Case &c : cases) {
		Lone l;

		print_message("%s\n", c.what);
		expect_error(l.take(c.h), -EPROTO, c.words);
		assert_true(l.rx->failed());
		assert_true(l.sink.journal.empty());
		// Failed: it takes nothing more.
		expect_error(l.take(next()), -EPROTO, c.words);
	}

	// Notifies where no batch begins.
	struct Off {
		uint32_t offset;
		const char *words;
	};
	for (Off o : {Off{4, "notify at 4 in a ring"}, Off{1 << 30, "in a ring of"},
		      Off{64, "the next entry is at 0"}}) {
		Lone l;

		l.put(next());
		expect_error(l.rx->on_notify(o.offset), -EPROTO, o.words);
	}
	{
		// Notify at 0 when the next entry is not a wrap marker.
		Lone l;

		assert_true(l.take(next()).ok());
		expect_error(l.rx->on_notify(0), -EPROTO, "no wrap marker");
	}
	{
		// A notify naming the wrap marker itself.
		Lone l;
		const Bytes m = encode_wrap();

		std::memcpy(l.ring.data(), m.data(), m.size());
		expect_error(l.rx->on_notify(0), -EPROTO, "names a wrap marker");
	}
	{
		// A batch refused by the parser: its CRC.
		Lone l;
		const uint32_t off = l.put(next());

		l.ring[off + 60] ^= std::byte{4};
		expect_error(l.rx->on_notify(off), -EBADMSG, "CRC");
	}
	{
		// Records past the commit index beyond what may be held.
		const size_t cap = 2 * (100 + kHeldRecordCost) + 50;
		Lone l(cap);

		assert_true(l.take(next()).ok());
		expect_error(l.take(next(4, 8, 4)), -ENOBUFS, ("past " + std::to_string(cap)).c_str());
	}
	{
		// Records of no bytes still hold memory: counted, and refused.
		Lone l(40 * kHeldRecordCost);

		expect_error(l.take(next(), 64, 0), -ENOBUFS, "past");
		assert_true(l.sink.journal.empty());
	}
}

// Its log ends in records of epoch 3 the leader of 4 may not have: a
// commit index applies none of them until a batch's prev_epoch shows they
// are the leader's, and a batch over them is no resend to skip: it cuts
// them.
void test_receiver_applies_only_matched(void **)
{
	{
		Lone l(1 << 20, 3);	// 4 and 5 held, of epoch 3

		assert_int_equal(l.rx->matched_index(), 3);
		assert_true(l.rx->on_heartbeat(Heartbeat{4, 5}).ok());
		assert_int_equal(l.rx->applied_index(), 3);
		assert_true(l.sink.applied.empty());
		// The leader's 4..5 are not necessarily these: a batch over
		// them cuts them, and the leader's are applied in their place
		// once durable.
		assert_true(l.take(next(4, 4, 3)).ok());
		assert_int_equal(l.rx->stats().cut, 2);
		assert_int_equal(l.rx->applied_index(), 3);
		l.sink.sync();
		assert_int_equal(l.rx->applied_index(), 5);
		assert_int_equal(l.sink.applied.size(), 2);
		assert_int_equal(l.sink.applied[0].second.payload.size(), 100);
	}
	{
		Lone l(1 << 20, 3);

		// 6..7 follow a record of epoch 3 at 5: its 4 and 5 are the
		// leader's, and commit 5 applies them.
		BatchHeader h = next(4, 6, 3);
		h.commit_index = 3;
		assert_true(l.take(h).ok());
		assert_int_equal(l.rx->matched_index(), 7);
		l.sink.sync();
		assert_int_equal(l.rx->applied_index(), 3);
		assert_true(l.rx->on_heartbeat(Heartbeat{4, 5}).ok());
		assert_int_equal(l.rx->applied_index(), 5);
		assert_int_equal(l.sink.applied.size(), 2);
	}
}

// A batch it holds already is skipped: it frees its ring bytes at once
// with a DURABLE of the same durable index.
void test_receiver_skips_and_drops(void **)
{
	Lone l;

	assert_true(l.take(next()).ok());
	l.sink.sync();
	assert_int_equal(l.sent.size(), 1);
	assert_int_equal(l.sent[0].durable_index, 7);
	assert_int_equal(l.sent[0].consumed, l.at);

	assert_true(l.take(next()).ok());		// 6..7 again
	assert_int_equal(l.rx->stats().skipped, 1);
	assert_int_equal(l.sink.journal.size(), 2);
	assert_int_equal(l.sent.size(), 2);
	assert_int_equal(l.sent[1].durable_index, 7);
	assert_int_equal(l.sent[1].consumed, l.at);
	assert_false(l.rx->failed());

	// Then the log goes on; the commit index of a header applies.
	BatchHeader h = next(4, 8, 4);
	h.commit_index = 7;
	assert_true(l.take(h).ok());
	assert_int_equal(l.sink.applied.size(), 2);	// 6, 7: committed and durable
	l.sink.sync();
	assert_int_equal(l.rx->durable_index(), 9);
	assert_int_equal(l.rx->applied_index(), 7);
	assert_int_equal(l.rx->held_bytes(), 2 * (100 + kHeldRecordCost));

	// A batch of an earlier epoch is that epoch's records, sent by this
	// connection's leader: after a record of epoch 4, a log matching
	// error, never a batch to drop.
	expect_error(l.take(next(3, 10, 3)), -EPROTO, "the log's last is of epoch 4");
}

// A follower behind the log its leader began the epoch with: the
// leader's prior records, in their own epochs, bring it to the start.
void test_receiver_takes_prior_epochs(void **)
{
	Lone l;	// (3, 5), all applied, connection of epoch 4

	BatchHeader h = next(3, 6, 3);	// epoch 3's records 6..7
	h.commit_index = 5;
	assert_true(l.take(h).ok());
	assert_true(l.rx->last() == (LogPosition{3, 7}));
	assert_true(l.take(next(4, 8, 3)).ok());
	assert_true(l.rx->last() == (LogPosition{4, 9}));
	assert_int_equal(l.rx->stats().dropped, 0);
}

void test_receiver_controls(void **)
{
	Lone l;

	assert_true(l.take(next()).ok());
	l.sink.sync();
	// A heartbeat of a lower epoch is dropped; of this one, applies.
	assert_true(l.rx->on_control(encode_control(Heartbeat{3, 7})).ok());
	assert_int_equal(l.rx->applied_index(), 5);
	assert_true(l.rx->on_control(encode_control(Heartbeat{4, 7})).ok());
	assert_int_equal(l.rx->applied_index(), 7);
	// A commit index lower than known changes nothing.
	assert_true(l.rx->on_control(encode_control(Heartbeat{4, 6})).ok());
	assert_int_equal(l.rx->commit_index(), 7);

	Bytes junk = encode_control(Heartbeat{4, 7});
	junk[2] = std::byte{9};
	expect_error(Lone().rx->on_control(junk), -EPROTONOSUPPORT, "version");
	expect_error(Lone().rx->on_control(encode_control(Heartbeat{5, 7})), -EPROTO,
		     "HEARTBEAT of epoch 5");
	expect_error(Lone().rx->on_control(encode_control(Durable{4, 1, 0})), -EPROTO,
		     "other than HEARTBEAT");
}

void test_receiver_fail_stop(void **)
{
	{
		// The journal fails: the receiver fails with it, sends nothing.
		Lone l;

		assert_true(l.take(next()).ok());
		l.sink.sync(-EIO);
		assert_true(l.rx->failed());
		assert_int_equal(l.rx->failure()->code, -EIO);
		assert_true(l.sent.empty());
	}
	{
		// The store refuses a committed record.
		Lone l;

		l.sink.apply_error = -EINVAL;
		assert_true(l.take(next()).ok());
		l.sink.sync();
		expect_error(l.rx->on_heartbeat(Heartbeat{4, 7}), -EINVAL, "refused");
		assert_true(l.rx->failed());
		assert_int_not_equal(l.rx->failure()->message.find("cannot apply record 6"),
				     std::string::npos);
	}
	{
		// A journal callback after its receiver is gone does nothing.
		Lone l;

		assert_true(l.take(next()).ok());
		l.rx.reset();
		l.sink.sync();
		assert_true(l.sent.empty());
	}
}

void test_receiver_options_refused(void **)
{
	FakeSink sink;
	Lone link;
	Bytes ring(kMinBatchBytes + 8);
	auto base = [&ring]() {
		ReceiverOptions o;
		o.epoch = 4;
		o.last = {3, 5};
		o.applied = 4;
		o.held = {{5, 1, 1, Bytes(10)}};
		o.ring = ring;
		o.max_batch_bytes = kMinBatchBytes;
		return o;
	};
	assert_true(LogReceiver::create(base(), sink, link).ok());

	const OptionCase<ReceiverOptions> cases[] = {
		{"epoch 0", [](ReceiverOptions &o) { o.epoch = 0; }},
		{"after 4", [](ReceiverOptions &o) { o.last = {5, 5}; }},
		{"index 5", [](ReceiverOptions &o) { o.last = {0, 5}; }},
		{"past its log's end", [](ReceiverOptions &o) { o.applied = 6; }},
		{"not the 1 after", [](ReceiverOptions &o) { o.held.clear(); }},
		{"held record 0 at index 6", [](ReceiverOptions &o) { o.held[0].index = 6; }},
		{"past 4", [](ReceiverOptions &o) { o.max_held_bytes = 4; }},
		{"ring of", [](ReceiverOptions &o) { o.ring = o.ring.first(4096); }},
	};
	expect_refusals(base(), cases, [&sink, &link](ReceiverOptions o) {
		return LogReceiver::create(std::move(o), sink, link);
	});
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_durable_refused),
		cmocka_unit_test(test_shipper_options_refused),
		cmocka_unit_test(test_connect_elsewhere),
		cmocka_unit_test(test_connect_old_tail),
		cmocka_unit_test(test_connect_behind_start),
		cmocka_unit_test(test_reconnect_in_epoch),
		cmocka_unit_test(test_receiver_cuts_old_tail),
		cmocka_unit_test(test_receiver_protocol_errors),
		cmocka_unit_test(test_receiver_skips_and_drops),
		cmocka_unit_test(test_receiver_takes_prior_epochs),
		cmocka_unit_test(test_receiver_applies_only_matched),
		cmocka_unit_test(test_receiver_controls),
		cmocka_unit_test(test_receiver_fail_stop),
		cmocka_unit_test(test_receiver_options_refused),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
