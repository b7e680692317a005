// SPDX-License-Identifier: GPL-2.0
//
// test_repl_store.cc - log shipping with the real Store and the real
// Journal, in temporary directories: the leader prepares changes, journals
// them and ships them, and commits each in its store only once 2 of 3 have
// it durable; the followers journal what they receive and apply the
// committed records with Store::replay(). At the end every replica's store
// snapshot is the leader's byte for byte, and each follower's journal,
// reopened, replays to the same state.
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mdnode/journal.h"
#include "mdnode/store.h"
#include "tests/test_journal.h"
#include "tests/test_repl.h"
#include "tests/test_store.h"

#include "tests/common/cmocka_cxx.h"

using namespace repl_test;
using mdnode::Change;
using mdnode::Journal;
using mdnode::Store;

namespace {

std::span<const std::byte> bytes_of(const std::vector<uint8_t> &v)
{
	return std::as_bytes(std::span(v));
}

std::unique_ptr<Journal> open_empty(const std::string &dir)
{
	journal_test::Opened op = journal_test::open_journal(journal_test::small_options(dir));

	if (!op.journal)
		fail_msg("open %s: %s", dir.c_str(), op.message.c_str());
	assert_true(op.records.empty());
	return std::move(op.journal);
}

// A follower's journal and store, as its daemon would hold them.
struct Replica : Sink {
	explicit Replica(World &w) : w(w), journal(open_empty(dir.path)) {}

	mdr::Status append(uint16_t type, std::span<const std::byte> payload, Done done) override
	{
		return journal->append(type, payload, [this, done](const mdr::Status &st) {
			if (st.ok())
				durable++;
			if (done)
				done(st);
		});
	}
	mdr::Status apply(uint64_t index, uint16_t type, std::span<const std::byte> payload) override
	{
		// Only what the leader committed, in order.
		assert_true(index <= w.leader->commit_index());
		assert_int_equal(index, applied + 1);
		applied = index;
		return store.replay(type, {reinterpret_cast<const uint8_t *>(payload.data()),
					   payload.size()});
	}
	bool step()
	{
		const uint64_t before = durable;

		journal_test::flush_ok(*journal);
		return durable != before;
	}
	void plug(FollowerEnd &f)
	{
		f.own_sink = this;
		f.own_durable = [this] { return durable; };
		f.own_step = [this] { return step(); };
		w.connect(f, {}, {}, 0);
	}

	World &w;
	journal_test::TempDir dir;
	std::unique_ptr<Journal> journal;
	Store store = mdr::test::make_store();
	uint64_t durable = 0;
	uint64_t applied = 0;
};

// The leader: NodeCore::change()'s path with replication in it. A change
// is prepared, journaled and shipped; it commits in the store, and would
// be answered, once the shipper's commit index covers it.
struct Leader {
	explicit Leader(World &w) : w(w), journal(open_empty(dir.path))
	{
		w.leader_step = [this] {
			const uint64_t before = durable;

			journal_test::flush_ok(*journal);
			return durable != before;
		};
		w.on_commit = [this](uint64_t c) {
			for (auto it = pending.begin(); it != pending.end() && it->first <= c;
			     it = pending.erase(it)) {
				mdr::Result<mdnode::Applied> done = store.commit(it->second);

				if (!done.ok())
					fail_msg("commit: %s", done.message().c_str());
				answered.push_back(it->first);
			}
		};
	}

	void change(mdr::Result<Change> prepared)
	{
		if (!prepared.ok())
			fail_msg("prepare: %s", prepared.message().c_str());

		Change c = std::move(prepared).value();
		const uint64_t index = w.log.size() + 1;

		assert_true(journal->append(c.type, bytes_of(c.payload),
					    [this, index](const mdr::Status &st) {
			assert_true(st.ok());
			durable = index;
			w.leader_durable = index;
			assert_true(w.leader->local_durable(index).ok());
		}).ok());
		w.ship({{c.type, Bytes(bytes_of(c.payload).begin(), bytes_of(c.payload).end())}});
		pending.emplace(index, std::move(c));
	}

	void alloc(uint64_t volume_id, uint64_t index)
	{
		mdr::Result<mdnode::Allocation> a = store.prepare_alloc(volume_id, index);

		assert_true(a.ok());
		change(std::get<Change>(std::move(a).value()));
	}

	World &w;
	journal_test::TempDir dir;
	std::unique_ptr<Journal> journal;
	Store store = mdr::test::make_store();
	std::map<uint64_t, Change> pending;
	std::vector<uint64_t> answered;
	uint64_t durable = 0;
};

void test_stores_equal(void **)
{
	World w(kMinBatchBytes + 8192);
	Leader l(w);
	Replica b(w), c(w);

	b.plug(w.f("b"));
	c.plug(w.f("c"));

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

	// Each follower's journal holds the log: reopened and replayed, the
	// same state.
	for (Replica *r : {&b, &c}) {
		r->journal.reset();

		Store again = mdr::test::make_store();
		auto j = Journal::open(journal_test::small_options(r->dir.path),
				       [](std::span<const std::byte>) { return mdr::Status(); },
				       [&again](uint16_t type, std::span<const std::byte> p) {
			return again.replay(type, {reinterpret_cast<const uint8_t *>(p.data()),
						   p.size()});
		});
		assert_true(j.ok());
		assert_true(again.snapshot() == snap);
	}
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stores_equal),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
