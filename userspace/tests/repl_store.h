// SPDX-License-Identifier: GPL-2.0
//
// repl_store.h - the real Store and Journal under log shipping, for the
// tests that compare replicas byte for byte: test_repl_store.cc over the
// fake link of test_repl.h, and mdr-test-repl-rdma (vm/repl_rdma.cc) over
// RDMA in the guest. A Replica is a follower's journal and store (the
// Sink its receiver appends to and applies through); a Leader is
// NodeCore::change()'s path with replication in it: a change is
// prepared, journaled and shipped, and commits in the store (would be
// answered) once the shipper's commit index covers it.
#ifndef MDR_TESTS_REPL_STORE_H
#define MDR_TESTS_REPL_STORE_H

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "mdnode/journal.h"
#include "mdnode/records.h"
#include "mdnode/repl_checkpoint.h"
#include "mdnode/repl_follower.h"
#include "mdnode/repl_journal.h"
#include "mdnode/store.h"
#include "tests/test_journal.h"
#include "tests/test_store.h"

#include "tests/common/cmocka_cxx.h"

namespace repl_store {

using mdnode::Change;
using mdnode::Journal;
using mdnode::Store;

inline std::span<const std::byte> bytes_of(const std::vector<uint8_t> &v)
{
	return std::as_bytes(std::span(v));
}

inline std::span<const uint8_t> u8_of(std::span<const std::byte> b)
{
	return {reinterpret_cast<const uint8_t *>(b.data()), b.size()};
}

// A journal opened on dir, its records replayed into a new store: what a
// replica holds after a restart, and how many records its journal has.
struct Reopened {
	std::unique_ptr<Journal> journal;
	Store store = mdr::test::make_store();
	uint64_t records = 0;
};

inline Reopened reopen(const std::string &dir)
{
	Reopened r;
	auto j = Journal::open(journal_test::small_options(dir),
			       [](std::span<const std::byte>) { return mdr::Status(); },
			       [&r](uint16_t type, std::span<const std::byte> p) {
		r.records++;
		return r.store.replay(type, u8_of(p));
	});

	if (!j.ok())
		fail_msg("reopen %s: %s", dir.c_str(), j.message().c_str());
	r.journal = std::move(j).value();
	return r;
}

// A follower's journal and store, as its daemon would hold them.
// commit_index is the leader's: nothing is applied past it.
struct Replica : mdnode::repl::Sink {
	explicit Replica(std::function<uint64_t()> commit_index)
		: commit_index(std::move(commit_index)), journal(reopen(dir.path).journal)
	{
	}

	mdr::Status begin_batch(const mdnode::repl::BatchHeader &h) override
	{
		const mdnode::repl::LogMark m{.epoch = h.epoch, .first_index = h.first_index,
					      .count = h.count, .commit_index = h.commit_index};

		return journal->append(mdnode::kLogMark, mdnode::repl::encode_mark(m), {});
	}
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
		assert_true(index <= commit_index());
		assert_int_equal(index, applied + 1);
		applied = index;
		return store.replay(type, u8_of(payload));
	}
	// A checkpoint of the leader's, as GroupReplica installs one.
	mdr::Status install(const mdnode::repl::LogPosition &last,
			    std::span<const uint8_t> bytes) override
	{
		auto log = mdnode::repl::install_checkpoint(*journal, store, last, bytes);

		if (!log.ok())
			return mdr::Error(log.error(), log.message());
		durable = applied = last.index;
		installed++;
		return {};
	}
	// The journal writes what it has; whether anything became durable.
	bool step()
	{
		const uint64_t before = durable;

		journal_test::flush_ok(*journal);
		return durable != before;
	}
	// The replica stops (its journal flushed and closed) and starts
	// again: its journal, read as a replica's start reads it
	// (repl_journal.h), gives the store its checkpoint and the records
	// known committed, and the log (log.held: the records after them).
	void restart()
	{
		journal_test::flush_ok(*journal);
		journal.reset();
		store = mdr::test::make_store();

		mdnode::repl::LogRecovery rec(
			[this](uint64_t, uint16_t type, std::span<const std::byte> p) {
				return mdnode::repl::changes_store(type) ? store.replay(type, u8_of(p))
									 : mdr::Status();
			},
			[](uint16_t type, std::span<const std::byte>) {
				return mdr::Status(mdr::Error(-EINVAL, "local record " +
								     std::to_string(type)));
			});
		auto j = Journal::open(journal_test::small_options(dir.path),
				       [this, &rec](std::span<const std::byte> p) {
			return rec.checkpoint(u8_of(p), [this](std::span<const uint8_t> snap) {
				return store.load_snapshot(snap);
			});
		}, [&rec](uint16_t type, std::span<const std::byte> p) { return rec.record(type, p); });

		if (!j.ok())
			fail_msg("reopen %s: %s", dir.path.c_str(), j.message().c_str());
		journal = std::move(j).value();
		log = rec.finish();
		durable = log.last.index;
		applied = log.applied;
	}
	// A checkpoint as GroupReplica takes one: every record of its log
	// applied, the log's position before the store's snapshot.
	void checkpoint(uint64_t epoch, mdnode::LeaseBounds bounds)
	{
		assert_int_equal(applied, durable);
		const std::optional<std::vector<uint8_t>> c = mdnode::repl::take_checkpoint(
			{.last = {epoch, applied}, .epoch_bounds = bounds, .recent = {}}, store);

		assert_true(c.has_value());
		assert_true(journal->checkpoint(std::as_bytes(std::span(*c))).ok());
	}
	// What a leader's commit index would do to the held records.
	void apply_held()
	{
		for (const mdnode::repl::HeldRecord &r : log.held)
			if (mdnode::repl::changes_store(r.type))
				assert_true(store.replay(r.type, u8_of(r.payload)).ok());
		applied = log.last.index;
		log.held.clear();
	}

	std::function<uint64_t()> commit_index;
	journal_test::TempDir dir;
	std::unique_ptr<Journal> journal;
	Store store = mdr::test::make_store();
	uint64_t durable = 0;
	uint64_t applied = 0;
	uint64_t installed = 0;		// checkpoints
	mdnode::repl::RecoveredLog log;	// as the last restart read it
};

class Leader {
public:
	// ship: the record at index, for the shipper; durable: the
	// leader's journal has every record up to index durable.
	using Ship = std::function<void(uint64_t index, uint16_t type,
					std::span<const std::byte> payload)>;
	using Durable = std::function<void(uint64_t index)>;

	Leader(Ship ship, Durable durable)
		: journal(reopen(dir.path).journal), ship_(std::move(ship)),
		  durable_(std::move(durable))
	{
	}

	void change(mdr::Result<Change> prepared)
	{
		if (!prepared.ok())
			fail_msg("prepare: %s", prepared.message().c_str());

		Change c = std::move(prepared).value();
		const uint64_t index = next++;

		assert_true(journal->append(c.type, bytes_of(c.payload),
					    [this, index](const mdr::Status &st) {
			assert_true(st.ok());
			durable = index;
			durable_(index);
		}).ok());
		ship_(index, c.type, bytes_of(c.payload));
		pending.emplace(index, std::move(c));
	}

	void alloc(uint64_t volume_id, uint64_t index)
	{
		mdr::Result<mdnode::Allocation> a = store.prepare_alloc(volume_id, index);

		assert_true(a.ok());
		change(std::get<Change>(std::move(a).value()));
	}

	// The shipper's commit index reached c: the changes up to it take
	// effect and are answered.
	void committed(uint64_t c)
	{
		for (auto it = pending.begin(); it != pending.end() && it->first <= c;
		     it = pending.erase(it)) {
			mdr::Result<mdnode::Applied> done = store.commit(it->second);

			if (!done.ok())
				fail_msg("commit: %s", done.message().c_str());
			answered.push_back(it->first);
		}
	}

	bool step()
	{
		const uint64_t before = durable;

		journal_test::flush_ok(*journal);
		return durable != before;
	}

	journal_test::TempDir dir;
	std::unique_ptr<Journal> journal;
	Store store = mdr::test::make_store();
	std::map<uint64_t, Change> pending;
	std::vector<uint64_t> answered;
	uint64_t durable = 0;
	uint64_t next = 1;		// the index of the next change

private:
	Ship ship_;
	Durable durable_;
};

} // namespace repl_store

#endif // MDR_TESTS_REPL_STORE_H
