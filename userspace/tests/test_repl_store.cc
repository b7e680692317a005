// SPDX-License-Identifier: GPL-2.0
//
// test_repl_store.cc - log shipping with the real Store and the real
// Journal, in temporary directories: the leader prepares changes, journals
// them and ships them, and commits each in its store only once 2 of 3 have
// it durable; the followers journal what they receive and apply the
// committed records with Store::replay(). At the end every replica's store
// snapshot is the leader's byte for byte, and each follower's journal,
// reopened, replays to the same state, also from a checkpoint. A follower
// the log cannot bring back (away past the window, or wiped) installs the
// leader's checkpoint and follows on, also after a restart; a truncated,
// corrupted or misplaced checkpoint is refused and changes nothing.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mdnode/config.h"
#include "mdnode/startup.h"
#include "tests/repl_store.h"
#include "tests/test_repl.h"

#include "tests/common/cmocka_cxx.h"

using namespace repl_test;

namespace {

using repl_store::Replica;

// A Replica of the follower's end of the fake link.
void plug(World &w, Replica &r, FollowerEnd &f)
{
	f.own_sink = &r;
	f.own_durable = [&r] { return r.durable; };
	f.own_step = [&r] { return r.step(); };
	w.connect(f, {}, {}, 0);
}

// The leader's journal and store, shipping into the world's shipper.
struct Leader : repl_store::Leader {
	explicit Leader(World &w)
		: repl_store::Leader(
			  [&w](uint64_t index, uint16_t type, std::span<const std::byte> p) {
				  assert_int_equal(index, w.log.size() + 1);
				  w.ship({{type, Bytes(p.begin(), p.end())}});
			  },
			  [&w](uint64_t index) {
				  w.leader_durable = index;
				  assert_true(w.leader->local_durable(index).ok());
			  })
	{
		w.leader_step = [this] { return step(); };
		w.on_commit = [this](uint64_t c) { committed(c); };
	}
};

// A leader and its followers b and c, connected; the shipper's window of
// window bytes.
struct Group {
	explicit Group(uint64_t window = 1 << 20) : w(kMinBatchBytes + 8192, window)
	{
		plug(w, b, w.f("b"));
		plug(w, c, w.f("c"));
	}

	// Extents [first, end) of the volume allocated and committed
	// everywhere: the heartbeat of the leader's tick at now_ms carries
	// the commit index (a later one than the last tick's).
	void allocs(uint64_t volume_id, uint64_t first, uint64_t end, int64_t now_ms)
	{
		for (uint64_t i = first; i < end; i++)
			l.alloc(volume_id, i);
		w.settle();
		w.leader->tick(now_ms);
		w.settle();
	}

	World w;
	Leader l{w};
	std::function<uint64_t()> commit = [this] { return w.leader->commit_index(); };
	Replica b{commit}, c{commit};
};

void test_stores_equal(void **)
{
	Group g;
	World &w = g.w;
	Leader &l = g.l;
	Replica &b = g.b, &c = g.c;

	// Volumes, then extents allocated many at a time, with c's journal
	// stalled for a while: the leader commits with b, c catches up.
	l.change(l.store.prepare_create("db1", 64 << 20, 0, 7));
	l.change(l.store.prepare_create("db2", 32 << 20, 20, 7));
	w.settle();
	assert_int_equal(l.answered.size(), 2);
	const uint64_t v1 = l.store.volume("db1")->id, v2 = l.store.volume("db2")->id;

	w.f("c").stalled = true;
	for (uint64_t i = 0; i < 12; i++)
		l.alloc(v1, i);
	w.settle();
	assert_int_equal(l.answered.size(), 14);
	assert_int_equal(c.durable, 2);
	// Not answered before it is committed: on the leader's journal
	// alone it is not.
	w.f("b").stalled = true;
	for (uint64_t i = 0; i < 8; i++)
		l.alloc(v2, i);
	w.settle();
	assert_int_equal(l.answered.size(), 14);
	assert_int_equal(l.store.volume("db2")->allocated, 0);
	w.f("b").stalled = false;
	w.f("c").stalled = false;
	w.settle();
	assert_int_equal(l.answered.size(), 22);

	const uint8_t key[32] = {1, 2, 3};
	l.change(l.store.prepare_host_add(9, 7, key, false));
	l.change(l.store.prepare_resize(v2, 16 << 20));
	w.settle();
	l.change(l.store.prepare_delete(v1));
	w.settle();
	w.leader->tick(0);
	w.settle();

	assert_int_equal(l.answered.size(), 25);
	assert_true(l.pending.empty());
	assert_int_equal(b.applied, 25);
	assert_int_equal(c.applied, 25);
	const std::vector<uint8_t> snap = l.store.snapshot();
	assert_true(b.store.snapshot() == snap);
	assert_true(c.store.snapshot() == snap);
	assert_true(b.store == l.store);
	mdr::test::assert_same_tables(c.store, l.store);

	// Each follower's journal holds the log: reopened and read as a
	// replica's start reads it, the records its marks knew committed are
	// in the store and the rest held (the last batch's commit came in a
	// HEARTBEAT, which no mark carries); with them, the same state.
	for (Replica *r : {&b, &c}) {
		r->restart();
		assert_int_equal(r->log.last.index, 25);
		assert_int_equal(r->log.last.epoch, World::kEpoch);
		assert_true(r->applied < 25);
		assert_int_equal(r->applied + r->log.held.size(), 25);
		assert_false(r->store.snapshot() == snap);
		r->apply_held();
		assert_true(r->store.snapshot() == snap);
	}
}

// A follower checkpoints once every record of its log is applied: its
// journal starts over from the store's snapshot behind the log's
// position. Started again, it holds the same state and log (the records
// after the checkpoint read as before, the bounds of its last EPOCH
// record kept), and the log goes on from there.
void test_follower_checkpoint(void **)
{
	Group g;
	Leader &l = g.l;
	Replica &b = g.b;

	l.change(l.store.prepare_create("db1", 64 << 20, 0, 7));
	g.w.settle();
	const uint64_t v1 = l.store.volume("db1")->id;
	g.allocs(v1, 0, 6, 0);
	assert_int_equal(b.applied, 7);
	const uint64_t segments = b.journal->stats().segments;
	b.checkpoint(World::kEpoch, {7000, 3000});
	assert_int_equal(b.journal->stats().checkpoints, 1);
	assert_true(b.journal->stats().segments > segments);

	g.allocs(v1, 6, 9, 60000);
	assert_int_equal(b.applied, 10);

	b.restart();
	assert_true(b.log.last == (mdnode::repl::LogPosition{World::kEpoch, 10}));
	// The records after the checkpoint, as journaled: those its marks
	// knew committed applied, the rest held.
	assert_true(b.log.applied >= 7);
	assert_int_equal(b.log.applied + b.log.held.size(), 10);
	assert_int_equal(b.log.log_records, 10 - 7);
	assert_true(b.log.epoch_bounds == (mdnode::LeaseBounds{7000, 3000}));
	b.apply_held();
	assert_true(b.store.snapshot() == l.store.snapshot());

	// Once more with nothing after the checkpoint: the log is its
	// position alone.
	b.checkpoint(World::kEpoch, {6000, 0});
	b.restart();
	assert_true(b.log.last == (mdnode::repl::LogPosition{World::kEpoch, 10}));
	assert_int_equal(b.log.applied, 10);
	assert_true(b.log.held.empty());
	assert_true(b.log.epoch_bounds == (mdnode::LeaseBounds{6000, 0}));
	assert_true(b.store.snapshot() == l.store.snapshot());
}

// A start (mdnode::recover()) takes a data directory of its own kind and
// refuses the other: a replica's checkpoint by a single node, a single
// node's by a replica. A replica's starts at its checkpoint's position.
void test_a_start_refuses_the_other_kind(void **)
{
	Group g;

	g.l.change(g.l.store.prepare_create("db1", 64 << 20, 0, 7));
	g.w.settle();
	g.allocs(g.l.store.volume("db1")->id, 0, 2, 0);
	g.b.checkpoint(World::kEpoch, {7000, 3000});
	journal_test::flush_ok(*g.b.journal);
	g.b.journal.reset();

	mdnode::Config cfg;
	cfg.data_dir = g.b.dir.path;
	mdnode::Store single = mdr::test::make_store();
	assert_true(mdnode::recover(cfg, single, nullptr) == nullptr);
	mdnode::Store replica = mdr::test::make_store();
	mdnode::repl::RecoveredLog log;
	assert_true(mdnode::recover(cfg, replica, &log) != nullptr);
	assert_true(log.last == (mdnode::repl::LogPosition{World::kEpoch, 3}));
	assert_int_equal(log.applied, 3);
	assert_true(log.epoch_bounds == (mdnode::LeaseBounds{7000, 3000}));
	assert_true(replica.snapshot() == g.l.store.snapshot());

	journal_test::TempDir d;
	{
		auto j = mdnode::Journal::open(journal_test::small_options(d.path),
				       [](std::span<const std::byte>) { return mdr::Status(); },
				       [](uint16_t, std::span<const std::byte>) {
			return mdr::Status();
		});
		assert_true(j.ok());
		const std::vector<uint8_t> snap = g.l.store.snapshot();
		assert_true(j.value()->checkpoint(std::as_bytes(std::span(snap))).ok());
	}
	cfg.data_dir = d.path;
	mdnode::Store as_replica = mdr::test::make_store();
	assert_true(mdnode::recover(cfg, as_replica, &log) == nullptr);
	mdnode::Store as_single = mdr::test::make_store();
	assert_true(mdnode::recover(cfg, as_single, nullptr) != nullptr);
	assert_true(as_single.snapshot() == g.l.store.snapshot());
}

// ---- A checkpoint shipped ---------------------------------------------------

// A group whose window holds one batch of the smallest size, and a volume
// of 896 extents of 64 KiB: c is away while 800 of them are allocated
// (a batch each, past the window), and comes back needing a checkpoint.
struct Behind : Group {
	Behind() : Group(kMinBatchBytes)
	{
		l.change(l.store.prepare_create("big", 56 << 20, 16, 7));
		w.settle();
		v = l.store.volume("big")->id;
		allocs(v, 0, 4, 0);
		away = c.store.snapshot();
		w.close(w.f("c"), "away");
		allocs(v, 4, 804, 100);
		assert_int_equal(c.applied, 5);
		w.reconnect(w.f("c"));
		assert_true(w.leader->follower("c")->state == FollowerState::needs_checkpoint);
	}

	// The leader's checkpoint of what it committed, as GroupReplica
	// takes one (every record committed and answered), with its last
	// records; edit changes its bytes.
	std::shared_ptr<const ShippedCheckpoint> checkpoint(
		const std::function<void(mdnode::repl::LogCheckpoint &)> &log_edit = {},
		const std::function<void(std::vector<uint8_t> &)> &edit = {})
	{
		assert_true(l.pending.empty());
		mdnode::repl::LogCheckpoint log{.last = {World::kEpoch, w.leader->commit_index()},
						.epoch_bounds = mdnode::LeaseBounds{7000, 3000},
						.recent = {}};
		for (uint64_t i = log.last.index - 2; i <= log.last.index; i++)
			log.recent.push_back({i, World::kEpoch, w.log[i - 1].type,
					      w.log[i - 1].payload});
		const mdnode::repl::LogPosition at = log.last;
		if (log_edit)
			log_edit(log);
		auto bytes = mdnode::repl::take_checkpoint(log, l.store);
		assert_true(bytes.has_value());
		if (edit)
			edit(*bytes);
		return std::make_shared<ShippedCheckpoint>(
			ShippedCheckpoint{at, std::move(*bytes)});
	}

	uint64_t v = 0;
	std::vector<uint8_t> away;	// c's store when it went
};

// c installs the leader's checkpoint: its store is the leader's byte for
// byte, its journal's checkpoint is it, and it follows the batches after
// it; started again, it starts from there.
void test_behind_installs_a_checkpoint(void **)
{
	Behind g;

	assert_true(g.w.leader->offer_checkpoint(g.checkpoint()).ok());
	g.w.settle();
	assert_int_equal(g.c.installed, 1);
	assert_true(g.w.f("c").closed.empty());
	assert_int_equal(g.c.journal->stats().checkpoints, 1);
	assert_true(g.c.store.snapshot() == g.l.store.snapshot());
	assert_true(g.w.leader->follower("c")->state == FollowerState::streaming);

	g.allocs(g.v, 804, 814, 200);
	assert_int_equal(g.c.applied, g.w.log.size());
	assert_true(g.c.store.snapshot() == g.l.store.snapshot());
	mdr::test::assert_same_tables(g.c.store, g.l.store);

	g.c.restart();
	assert_true(g.c.log.last == (LogPosition{World::kEpoch, g.w.log.size()}));
	assert_int_equal(g.c.log.log_records, 10);
	assert_true(g.c.log.epoch_bounds == (mdnode::LeaseBounds{7000, 3000}));
	g.c.apply_held();
	assert_true(g.c.store.snapshot() == g.l.store.snapshot());
}

// A follower whose data directory was wiped (an empty log) is the same:
// its restart right after the install starts from the checkpoint alone,
// and it follows from there.
void test_wiped_installs_a_checkpoint(void **)
{
	Behind g;
	Replica fresh{g.commit};

	plug(g.w, fresh, g.w.f("c"));
	assert_true(g.w.leader->follower("c")->state == FollowerState::needs_checkpoint);
	const auto ck = g.checkpoint();
	assert_true(g.w.leader->offer_checkpoint(ck).ok());
	g.w.settle();
	assert_int_equal(fresh.installed, 1);
	assert_true(fresh.store.snapshot() == g.l.store.snapshot());

	fresh.restart();
	assert_true(fresh.log.last == ck->last);
	assert_int_equal(fresh.log.applied, ck->last.index);
	assert_true(fresh.log.held.empty());
	assert_int_equal(fresh.log.recent.size(), 3);
	assert_true(fresh.log.recent.back().payload == g.w.log.back().payload);
	assert_true(fresh.log.epoch_bounds == (mdnode::LeaseBounds{7000, 3000}));
	assert_true(fresh.store.snapshot() == g.l.store.snapshot());

	g.w.connect(g.w.f("c"), fresh.log.last, {}, fresh.log.applied);
	g.allocs(g.v, 804, 810, 200);
	assert_int_equal(fresh.applied, g.w.log.size());
	assert_true(fresh.store.snapshot() == g.l.store.snapshot());
}

// What c refuses, each with its reason, leaving its journal and store as
// they were; started again it holds the log it had, and a good checkpoint
// then installs.
void test_bad_checkpoints_refused(void **)
{
	Behind g;
	using Log = mdnode::repl::LogCheckpoint;
	using Raw = std::vector<uint8_t>;
	struct Case {
		const char *what;
		std::function<void(Log &)> log_edit;
		std::function<void(Raw &)> edit;
		bool flip;		// in transit
		const char *words;
	};
	const Case cases[] = {
		{"truncated", {}, [](Raw &b) { b.resize(b.size() - 9); }, false, "snapshot: "},
		{"corrupted", {}, [](Raw &b) { b[1] ^= 0x20; }, false,
		 "not a replica's checkpoint"},
		{"another epoch inside", [](Log &l) {
			 l.last.epoch = World::kEpoch + 1;
			 l.recent.clear();
		 }, {}, false, "its chunks said (epoch 2"},
		{"bounds refused",
		 [](Log &l) { l.epoch_bounds = mdnode::LeaseBounds{UINT32_MAX, 0}; }, {}, false,
		 "held_ms 4294967295 above"},
		{"flipped on the way", {}, {}, true, "checkpoint chunk: CRC"},
	};
	const uint64_t records = g.c.journal->stats().records;

	for (const Case &k : cases) {
		print_message("%s\n", k.what);
		FollowerEnd &f = g.w.f("c");

		f.flip_next = k.flip;
		assert_true(g.w.leader->offer_checkpoint(g.checkpoint(k.log_edit, k.edit)).ok());
		g.w.settle();
		if (f.closed.find(k.words) == std::string::npos)
			fail_msg("closed: \"%s\"", f.closed.c_str());
		assert_int_equal(g.c.installed, 0);
		assert_int_equal(g.c.journal->stats().checkpoints, 0);
		assert_int_equal(g.c.journal->stats().records, records);
		assert_true(g.c.store.snapshot() == g.away);
		g.w.reconnect(f);
	}

	g.c.restart();
	assert_true(g.c.log.last == (LogPosition{World::kEpoch, 5}));
	g.w.connect(g.w.f("c"), g.c.log.last, g.c.log.held, g.c.log.applied);
	assert_true(g.w.leader->offer_checkpoint(g.checkpoint()).ok());
	g.w.settle();
	assert_int_equal(g.c.installed, 1);
	assert_true(g.c.store.snapshot() == g.l.store.snapshot());
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stores_equal),
		cmocka_unit_test(test_follower_checkpoint),
		cmocka_unit_test(test_a_start_refuses_the_other_kind),
		cmocka_unit_test(test_behind_installs_a_checkpoint),
		cmocka_unit_test(test_wiped_installs_a_checkpoint),
		cmocka_unit_test(test_bad_checkpoints_refused),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
