// SPDX-License-Identifier: GPL-2.0
//
// test_repl.h - what test_repl_*.cc share: a leader's LogShipper and two
// followers' LogReceivers in one process, over a fake link that memcpy's
// the leader's writes into the followers' ring buffers and queues notifies
// and control messages, with knobs to drop, hold, reorder or corrupt them;
// fake journals whose durability each test steps by hand. Every commit is
// checked against the truth of the fakes: durable on 2 of 3, never going
// back; every apply against the leader's commit and log. A receiver
// alone (Lone), its ring written by hand.
#ifndef MDR_TESTS_TEST_REPL_H
#define MDR_TESTS_TEST_REPL_H

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mdnode/repl_follower.h"
#include "mdnode/repl_leader.h"

#include "tests/common/cmocka_cxx.h"

namespace repl_test {

using namespace mdnode::repl;
using Bytes = std::vector<std::byte>;

struct Rec {
	uint16_t type;
	Bytes payload;
	bool operator==(const Rec &) const = default;
};

// Record i of the leader's log: uneven sizes, bytes that tell them apart.
inline Rec record_for(uint64_t index)
{
	static const size_t sizes[] = {0, 13, 200, 1000, 64, 4000, 7, 40};
	Rec r{static_cast<uint16_t>(1 + index % 11), Bytes(sizes[index % std::size(sizes)])};

	for (size_t k = 0; k < r.payload.size(); k++)
		r.payload[k] = static_cast<std::byte>(index * 31 + k * 7 + 1);
	return r;
}

// A follower's journal and store: appends wait for sync(); applies are
// kept, checked by the world's hook.
class FakeSink : public Sink {
public:
	mdr::Status begin_batch(const BatchHeader &h) override
	{
		marks.push_back(h);
		return {};
	}
	mdr::Status append(uint16_t type, std::span<const std::byte> payload, Done done) override
	{
		journal.push_back({type, Bytes(payload.begin(), payload.end())});
		pending.push_back(std::move(done));
		return {};
	}
	mdr::Status apply(uint64_t index, uint16_t type, std::span<const std::byte> payload) override
	{
		if (on_apply)
			on_apply(index);
		applied.push_back({index, {type, Bytes(payload.begin(), payload.end())}});
		return apply_error ? mdr::Status(mdr::Error(apply_error, "refused")) : mdr::Status();
	}
	// A checkpoint: the journal flushes first, then it is installed
	// (or refused with install_error).
	mdr::Status install(const LogPosition &last, std::span<const uint8_t> bytes) override
	{
		sync();
		if (install_error)
			return mdr::Error(install_error, "refused");
		installed.push_back({last, std::vector<uint8_t>(bytes.begin(), bytes.end())});
		applied.clear();
		base = last.index;
		durable = last.index;
		return {};
	}
	// Every record appended so far becomes durable (or fails), in order.
	void sync(int err = 0)
	{
		while (!pending.empty()) {
			Done d = std::move(pending.front());

			pending.pop_front();
			durable++;
			if (d)
				d(err ? mdr::Status(mdr::Error(err, "write failed")) : mdr::Status());
		}
	}

	std::vector<Rec> journal;		// appended
	std::vector<BatchHeader> marks;		// a batch's, before its records
	std::deque<Done> pending;		// callbacks of records not durable
	uint64_t durable = 0;			// records durable: the truth
	std::vector<std::pair<uint64_t, Rec>> applied;	// after base
	std::function<void(uint64_t)> on_apply;
	int apply_error = 0;
	std::vector<std::pair<LogPosition, std::vector<uint8_t>>> installed;
	uint64_t base = 0;			// the last checkpoint's index
	int install_error = 0;
};

struct FollowerEnd : ReplyLink {
	mdr::Status send(std::span<const std::byte> msg) override
	{
		acks.emplace_back(msg.begin(), msg.end());
		return {};
	}

	std::string id;
	Bytes ring;
	FakeSink sink;
	std::unique_ptr<LogReceiver> rx;
	std::deque<uint32_t> notifies;		// leader -> follower, in order
	std::deque<Bytes> controls;		// leader -> follower
	std::deque<Bytes> acks;			// follower -> leader
	// Knobs.
	bool stalled = false;		// its journal makes nothing durable
	bool hold_acks = false;		// DURABLEs wait (a slow network)
	bool drop_acks = false;		// DURABLEs are lost
	bool flip_next = false;		// one byte of the next batch written flips
	// A sink of the test's own (a real journal and store) in place of
	// sink, from the next connect(): what it has durable, and a step of
	// its journal that says whether anything became durable.
	Sink *own_sink = nullptr;
	std::function<uint64_t()> own_durable;
	std::function<bool()> own_step;
	// Outcome.
	std::string closed;		// why its connection was closed
};

class World : public ShipLink {
public:
	static constexpr uint64_t kEpoch = 2;

	explicit World(uint64_t ring_bytes = 128 << 10, uint64_t window_bytes = 1 << 20,
		       uint32_t max_batch = 16 << 10)
		: max_batch_(max_batch)
	{
		opts.epoch = kEpoch;
		opts.followers = {"b", "c"};
		opts.ring_bytes = ring_bytes;
		opts.max_batch_bytes = std::max<uint32_t>(max_batch, kMinBatchBytes);
		opts.window_bytes = std::max<uint64_t>(window_bytes, opts.max_batch_bytes);
		opts.heartbeat_ms = 100;
		auto s = LogShipper::create(opts, *this, [this](uint64_t c) { committed(c); });
		if (!s.ok())
			fail_msg("create: %s", s.message().c_str());
		leader = std::move(s).value();
		for (const std::string &id : opts.followers) {
			auto &f = followers[id];

			f = std::make_unique<FollowerEnd>();
			f->id = id;
			f->ring.assign(ring_bytes, std::byte{0});
			f->sink.on_apply = [this, id](uint64_t index) { check_apply(id, index); };
			connect(*f, {}, {}, 0);
		}
	}

	FollowerEnd &f(const std::string &id) { return *followers.at(id); }

	// A follower more, connected with an empty log (a new replica): a
	// learner until set_voters() names it.
	FollowerEnd &add(const std::string &id)
	{
		auto &e = followers[id];

		assert_true(leader->add_follower(id).ok());
		e = std::make_unique<FollowerEnd>();
		e->id = id;
		e->ring.assign(opts.ring_bytes, std::byte{0});
		e->sink.on_apply = [this, id](uint64_t index) { check_apply(id, index); };
		connect(*e, {}, {}, 0);
		return *e;
	}

	// A new connection for the follower, its log at last (held: the
	// records after applied).
	void connect(FollowerEnd &f, LogPosition last, std::vector<HeldRecord> held,
		     uint64_t applied)
	{
		ReceiverOptions o;
		o.epoch = kEpoch;
		o.last = last;
		o.applied = applied;
		o.held = std::move(held);
		o.ring = f.ring;
		o.max_batch_bytes = opts.max_batch_bytes;
		auto r = LogReceiver::create(std::move(o), f.own_sink ? *f.own_sink : f.sink, f);
		if (!r.ok())
			fail_msg("receiver: %s", r.message().c_str());
		f.rx = std::move(r).value();
		f.notifies.clear();
		f.controls.clear();
		f.acks.clear();
		f.closed.clear();
		assert_true(leader->connect(f.id, last, last.index).ok());
	}

	// A new connection of the follower, its log where the last one left
	// it.
	void reconnect(FollowerEnd &f)
	{
		const LogPosition last = f.rx->last();
		const uint64_t applied = f.rx->applied_index();

		connect(f, last, f.rx->take_held(), applied);
	}

	// ShipLink: into the followers' memory and queues.
	mdr::Status write(const std::string &m, uint32_t offset, std::span<const std::byte> b) override
	{
		FollowerEnd &e = f(m);

		assert_true(uint64_t{offset} + b.size() <= e.ring.size());
		assert_int_equal(offset % kAlign, 0);
		std::memcpy(e.ring.data() + offset, b.data(), b.size());
		if (e.flip_next && b.size() > kHeaderBytes) {
			e.ring[offset + b.size() - 1] ^= std::byte{0x01};
			e.flip_next = false;
		}
		wrote.push_back({m, offset, b.size()});
		return {};
	}
	mdr::Status notify(const std::string &m, uint32_t offset) override
	{
		f(m).notifies.push_back(offset);
		return {};
	}
	mdr::Status send(const std::string &m, std::span<const std::byte> msg) override
	{
		f(m).controls.emplace_back(msg.begin(), msg.end());
		return {};
	}

	// The leader appends n records to its journal and ships them.
	void append(uint64_t n)
	{
		std::vector<Rec> recs;

		for (uint64_t i = 0; i < n; i++)
			recs.push_back(record_for(log.size() + 1 + i));
		ship(recs);
	}

	// The leader ships these records, next in its log.
	void ship(const std::vector<Rec> &recs)
	{
		std::vector<RecordRef> refs;
		const uint64_t first = log.size() + 1;

		for (const Rec &r : recs)
			refs.push_back({r.type, r.payload});
		log.insert(log.end(), recs.begin(), recs.end());
		mdr::Status st = leader->ship(first, refs);
		if (!st.ok())
			fail_msg("ship: %s", st.message().c_str());
	}

	// rounds of n records each, made durable on the leader, settled.
	void stream(int rounds, uint64_t n)
	{
		for (int i = 0; i < rounds; i++) {
			append(n);
			sync_leader();
			settle();
		}
	}

	// The leader's journal makes everything durable.
	void sync_leader()
	{
		leader_durable = log.size();
		assert_true(leader->local_durable(leader_durable).ok());
	}

	// One round: every follower takes its notifies and control messages,
	// its journal syncs unless stalled, and its DURABLEs reach the
	// leader unless held or dropped. Returns whether anything moved.
	bool step()
	{
		bool moved = leader_step && leader_step();

		for (auto &[id, fp] : followers) {
			FollowerEnd &e = *fp;

			while (!e.closed.size() && !e.notifies.empty()) {
				const uint32_t off = e.notifies.front();

				e.notifies.pop_front();
				moved = true;
				if (mdr::Status st = e.rx->on_notify(off); !st.ok())
					close(e, st.message());
			}
			while (!e.closed.size() && !e.controls.empty()) {
				Bytes m = std::move(e.controls.front());

				e.controls.pop_front();
				moved = true;
				if (mdr::Status st = e.rx->on_control(m); !st.ok())
					close(e, st.message());
			}
			if (e.own_step) {
				moved |= !e.stalled && e.own_step();
			} else if (!e.stalled && !e.sink.pending.empty()) {
				e.sink.sync();
				moved = true;
			}
			while (!e.closed.size() && !e.hold_acks && !e.acks.empty()) {
				Bytes m = std::move(e.acks.front());

				e.acks.pop_front();
				moved = true;
				if (e.drop_acks)
					continue;
				deliver_ack(e, m);
			}
		}
		return moved;
	}

	void deliver_ack(FollowerEnd &e, const Bytes &m)
	{
		mdr::Result<Control> c = parse_control(m);

		assert_true(c.ok());
		if (mdr::Status st = leader->on_durable(e.id, std::get<Durable>(c.value()));
		    !st.ok()) {
			ack_errors[e.id] = st.error();
			close(e, st.message());
		}
	}

	void settle()
	{
		for (int i = 0; i < 10000 && step(); i++) {
		}
	}

	void close(FollowerEnd &e, const std::string &why)
	{
		e.closed = why.empty() ? "closed" : why;
		leader->disconnect(e.id);
	}

	// The leader's log, from index first on, as the follower applied it.
	void expect_applied(const std::string &id, uint64_t upto)
	{
		const auto &a = f(id).sink.applied;

		assert_int_equal(a.size(), upto);
		for (uint64_t i = 0; i < upto; i++) {
			assert_int_equal(a[i].first, i + 1);
			assert_true(a[i].second == log[i]);
		}
	}

	ShipperOptions opts;
	std::unique_ptr<LogShipper> leader;
	std::map<std::string, std::unique_ptr<FollowerEnd>> followers;
	std::vector<Rec> log;			// the leader's records; index i at i - 1
	uint64_t leader_durable = 0;		// its journal's truth
	std::vector<uint64_t> commits;		// as on_commit told them
	std::map<std::string, int> ack_errors;	// on_durable's, by follower
	struct Wrote {
		std::string member;
		uint32_t offset;
		size_t len;
	};
	std::vector<Wrote> wrote;
	// A step of the leader's own journal, when the test has a real one;
	// whether anything became durable.
	std::function<bool()> leader_step;
	// Told of each commit, after the checks.
	std::function<void(uint64_t)> on_commit;
	// The followers of each set a commit needs a majority of, the leader
	// voting in each: the truth the test keeps beside set_voters().
	std::vector<std::vector<std::string>> voters{{"b", "c"}};

private:
	// A commit is durable on a majority of each voter set by the fakes'
	// own count, and only goes forward.
	void committed(uint64_t c)
	{
		for (const auto &set : voters) {
			unsigned durable = leader_durable >= c;

			for (const std::string &id : set) {
				const FollowerEnd &e = f(id);
				durable += (e.own_durable ? e.own_durable() : e.sink.durable) >= c;
			}
			if (durable < (set.size() + 1) / 2 + 1)
				fail_msg("commit %llu durable on %u of %zu", (unsigned long long)c,
					 durable, set.size() + 1);
		}
		assert_true(commits.empty() || c > commits.back());
		assert_true(c <= log.size());
		commits.push_back(c);
		if (on_commit)
			on_commit(c);
	}

	// Applied in order, only what the leader committed, only what the
	// follower holds durably.
	void check_apply(const std::string &id, uint64_t index)
	{
		assert_true(index <= leader->commit_index());
		assert_true(index <= f(id).sink.durable);
		assert_int_equal(index, f(id).sink.base + f(id).sink.applied.size() + 1);
	}

	uint32_t max_batch_;
};

// st is the error err, its message naming words.
inline void expect_error(const mdr::Status &st, int err, const char *words)
{
	assert_false(st.ok());
	if (st.error() != err || st.message().find(words) == std::string::npos)
		fail_msg("want %d \"%s\", got %d \"%s\"", err, words, st.error(),
			 st.message().c_str());
}

// A receiver alone, batches and chunks written into its ring by hand.
struct Lone : ReplyLink {
	mdr::Status send(std::span<const std::byte> msg) override
	{
		sent.push_back(std::get<Durable>(parse_control(msg).value()));
		return {};
	}

	Bytes ring = Bytes(kMinBatchBytes + 4096);
	FakeSink sink;
	std::vector<Durable> sent;
	std::unique_ptr<LogReceiver> rx;
	uint64_t at = 0;	// where the next batch is written

	// Epoch 4; its log ends at (3, 5), applied up to applied (all of it
	// unless told), the records after it held.
	explicit Lone(size_t max_held = 1 << 20, uint64_t applied = 5,
		      uint32_t max_checkpoint = 1 << 20)
	{
		ReceiverOptions o;
		o.epoch = 4;
		o.last = {3, 5};
		o.applied = applied;
		for (uint64_t i = applied + 1; i <= 5; i++)
			o.held.push_back({i, 3, 1, Bytes(10)});
		o.ring = ring;
		o.max_batch_bytes = kMinBatchBytes;
		o.max_held_bytes = max_held;
		o.max_checkpoint_bytes = max_checkpoint;
		auto r = LogReceiver::create(std::move(o), sink, *this);
		assert_true(r.ok());
		rx = std::move(r).value();
	}

	// A batch of count records of bytes each written at the next place;
	// the offset it took.
	uint32_t put(BatchHeader h, uint32_t count = 2, size_t bytes = 100)
	{
		std::vector<Bytes> p(count, Bytes(bytes, std::byte{0x42}));
		std::vector<RecordRef> refs;

		for (const Bytes &b : p)
			refs.push_back({1, b});

		return put_entry(encode_batch(h, refs));
	}
	// An entry written at the next place; the offset it took.
	uint32_t put_entry(const Bytes &b)
	{
		const uint32_t off = static_cast<uint32_t>(at);

		std::memcpy(ring.data() + off, b.data(), b.size());
		at += align_up(b.size());
		return off;
	}
	mdr::Status take(BatchHeader h, uint32_t count = 2, size_t bytes = 100)
	{
		return rx->on_notify(put(h, count, bytes));
	}
	// A chunk of a checkpoint, written and notified.
	mdr::Status chunk(const ChunkHeader &h, std::span<const std::byte> piece)
	{
		return rx->on_notify(put_entry(encode_chunk(h, piece)));
	}
};

inline BatchHeader next(uint64_t epoch = 4, uint64_t first = 6, uint64_t prev = 3)
{
	return {.epoch = epoch, .first_index = first, .prev_epoch = prev,
		.commit_index = std::min<uint64_t>(5, first - 1)};
}

} // namespace repl_test

#endif // MDR_TESTS_TEST_REPL_H
