// SPDX-License-Identifier: GPL-2.0
//
// test_journal_durable.cc - the journal's guarantees across a second
// fault: what open() replayed is made durable before it returns (counted
// in its syncs), and checkpoints written on a worker while appends go
// on, one at a time, a failure counted and leaving the log whole.
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <poll.h>
#include <unistd.h>

#include "mdnode/journal.h"

#include "tests/test_journal.h"

#include "tests/common/cmocka_cxx.h"

namespace {

using namespace journal_test;

size_t segments_in(const std::string &dir)
{
	size_t n = 0;

	for (const std::string &name : names_in(dir))
		n += name.starts_with("journal-");
	return n;
}

// Runs the journal's completions until done is true (10 s at the most).
template <typename Pred>
void run_until(Journal &j, Pred done)
{
	for (int i = 0; i < 1000 && !done(); i++) {
		struct pollfd p = {j.event_fd(), POLLIN, 0};
		static_cast<void>(poll(&p, 1, 10));
		j.process_completions();
	}
	assert_true(done());
}

Bytes as_bytes(const std::vector<uint8_t> &v)
{
	Bytes b(v.size());
	std::memcpy(b.data(), v.data(), v.size());
	return b;
}

// Every segment replay read a batch from is synced, and nothing else: on
// a log of several segments and no checkpoint, one sync each.
void test_open_syncs_every_replayed_segment(void **)
{
	TempDir dir;
	JournalOptions o = small_options(dir.path);
	const std::vector<Record> want = build_log(o, 60);
	const size_t segments = segments_in(dir.path);
	assert_true(segments >= 3);

	std::unique_ptr<Journal> j = reopen_expect(o, want);
	assert_int_equal(j->stats().syncs, segments);
	j.reset();
	// The same again: open changes nothing it did not sync.
	j = reopen_expect(o, want);
	assert_int_equal(j->stats().syncs, segments);
}

// After a checkpoint, the records after it: their segment, and the
// directory for the checkpoint's rename. A checkpoint covering everything:
// the directory alone.
void test_open_syncs_directory_after_checkpoint(void **)
{
	Fresh f;
	const Bytes snap(100, std::byte{7});
	append_all(f.j, records_for(0, 20), f.acks, 0);
	assert_true(f.j.checkpoint(snap).ok());
	f.op.journal.reset();
	const JournalOptions &o = f.o;
	{
		std::unique_ptr<Journal> j = reopen_expect(o, {}, snap);
		assert_int_equal(j->stats().syncs, 1);
		Acks acks;
		append_all(*j, records_for(20, 25), acks, 0);
		flush_ok(*j);
	}
	assert_int_equal(reopen_expect(o, records_for(20, 25), snap)->stats().syncs, 2);
}

// A checkpoint on the worker: appends are written and acknowledged while
// it is held; a second one is refused meanwhile; once it ends, the log
// holds the checkpoint and what came after, the segments it covers gone.
void test_begin_checkpoint_beside_appends(void **)
{
	Fresh f;
	auto &[dir, o, op, j, acks] = f;

	f.write(0, 30);
	const uint64_t seq = j.stats().batches;
	HeldCheckpoint held(dir.path, seq);
	const std::vector<uint8_t> snap(5000, 0x5a);
	int done = 0, status = 1;
	assert_true(j.begin_checkpoint(snap, [&](const mdr::Status &s) {
		done++;
		status = s.ok() ? 0 : s.error();
	}).ok());
	assert_true(j.checkpoint_in_flight());
	assert_int_equal(j.begin_checkpoint(snap, nullptr).error(), -EBUSY);

	append_all(j, records_for(30, 40), acks, 30);
	run_until(j, [&] { return acks.next == 40; });
	assert_int_equal(acks.failed, 0);
	assert_int_equal(done, 0);
	assert_true(j.checkpoint_in_flight());

	// Held in its open until released, then failed: the log is whole.
	held.release();
	run_until(j, [&] { return done == 1; });
	assert_int_equal(status, -EINVAL);
	assert_false(j.checkpoint_in_flight());
	assert_int_equal(j.stats().checkpoint_failures, 1);
	assert_int_equal(j.stats().checkpoints, 0);
	op.journal.reset();
	std::unique_ptr<Journal> again = reopen_expect(o, records_for(0, 40));

	// Not held: written, and what it covers goes.
	done = 0;
	append_all(*again, records_for(40, 42), acks, 40);
	flush_ok(*again);
	assert_true(again->begin_checkpoint(snap, [&](const mdr::Status &s) {
		done++;
		status = s.ok() ? 0 : s.error();
	}).ok());
	append_all(*again, records_for(42, 45), acks, 42);
	run_until(*again, [&] { return done == 1 && acks.next == 45; });
	assert_int_equal(status, 0);
	assert_int_equal(again->stats().checkpoints, 1);
	assert_int_equal(segments_in(dir.path), 1);
	again.reset();

	reopen_expect(o, records_for(42, 45), as_bytes(snap));
}

// A checkpoint that cannot be written is counted and leaves the journal
// usable and the segments it would have made obsolete; the next one that
// succeeds deletes them too.
void test_failed_checkpoint_keeps_the_log(void **)
{
	Fresh f;
	auto &[dir, o, op, j, acks] = f;

	f.write(0, 40);
	const size_t segments = segments_in(dir.path);
	assert_true(segments >= 2);
	RefusedCheckpoint refused(dir.path, j.stats().batches);
	int status = 0;
	assert_true(j.begin_checkpoint(std::vector<uint8_t>(64, 1), [&](const mdr::Status &s) {
		status = s.error();
	}).ok());
	j.wait_checkpoint();
	assert_int_equal(status, -EISDIR);
	assert_int_equal(j.stats().checkpoint_failures, 1);
	// The segment was cut for it: one more.
	assert_int_equal(segments_in(dir.path), segments + 1);

	f.write(40, 45);
	assert_int_equal(acks.failed, 0);
	refused.lift();
	const Bytes snap(64, std::byte{2});
	assert_true(j.checkpoint(snap).ok());
	assert_int_equal(j.stats().checkpoints, 1);
	assert_int_equal(segments_in(dir.path), 1);
	op.journal.reset();

	reopen_expect(o, {}, snap);
}

// checkpoint() (a clean stop) waits for the one in flight, runs its done,
// then writes its own; a journal destroyed with one in flight waits for
// its worker.
void test_checkpoint_joins_the_one_in_flight(void **)
{
	Fresh f;
	const Bytes last(10, std::byte{9});
	int done = 0;
	append_all(f.j, records_for(0, 10), f.acks, 0);
	assert_true(f.j.begin_checkpoint(std::vector<uint8_t>(10, 1), [&](const mdr::Status &s) {
		done += s.ok();
	}).ok());
	append_all(f.j, records_for(10, 12), f.acks, 10);
	assert_true(f.j.checkpoint(last).ok());
	assert_int_equal(done, 1);
	assert_int_equal(f.j.stats().checkpoints, 2);
	assert_int_equal(f.acks.next, 12);
	f.op.journal.reset();
	const JournalOptions &o = f.o;
	{
		std::unique_ptr<Journal> j = reopen_expect(o, {}, last);
		Acks acks;
		append_all(*j, records_for(0, 3), acks, 0);
		flush_ok(*j);
		assert_true(j->begin_checkpoint(std::vector<uint8_t>(10, 3), nullptr).ok());
	}
	reopen_expect(o, {}, Bytes(10, std::byte{3}));
}

} // namespace

int main()
{
	alarm(60);	// a checkpoint held for ever fails the run, not hangs it
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_syncs_every_replayed_segment),
		cmocka_unit_test(test_open_syncs_directory_after_checkpoint),
		cmocka_unit_test(test_begin_checkpoint_beside_appends),
		cmocka_unit_test(test_failed_checkpoint_keeps_the_log),
		cmocka_unit_test(test_checkpoint_joins_the_one_in_flight),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
