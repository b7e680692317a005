// SPDX-License-Identifier: GPL-2.0
//
// test_journal.cc - the journal on real files: round trips, group commit,
// crashes at every point of the log, damage, checkpoints, fail-stop on a
// write error, and the buffered fallback.
//
// Directories are made under /var/tmp, on a disk where the journal uses
// O_DIRECT.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/util/crc32c.h"
#include "mdnode/journal.h"

#include "tests/test_journal.h"

#include "tests/common/cmocka_cxx.h"

namespace fs = std::filesystem;
using mdnode::Journal;
using mdnode::JournalOptions;

namespace {

using namespace journal_test;

// One batch as the format in journal.h lays it out.
struct BatchAt {
	std::string file;
	uint64_t offset;
	uint64_t len;
	uint32_t records;
	uint64_t seq;
	uint64_t durable_seq;
};

uint32_t le32(const Bytes &d, size_t off)
{
	uint32_t v;
	std::memcpy(&v, d.data() + off, 4);
	return v;
}

uint64_t le64(const Bytes &d, size_t off)
{
	uint64_t v;
	std::memcpy(&v, d.data() + off, 8);
	return v;
}

Bytes read_file(const std::string &path)
{
	std::ifstream in(path, std::ios::binary);
	std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
	Bytes b(s.size());
	std::memcpy(b.data(), s.data(), s.size());
	return b;
}

void write_file(const std::string &path, const Bytes &b)
{
	std::ofstream out(path, std::ios::binary | std::ios::trunc);
	out.write(reinterpret_cast<const char *>(b.data()), static_cast<std::streamsize>(b.size()));
	assert_true(out.good());
}

void flip_byte(const std::string &path, uint64_t off)
{
	Bytes b = read_file(path);
	assert_true(off < b.size());
	b[off] ^= std::byte{0x20};
	write_file(path, b);
}

std::vector<BatchAt> batches_in(const std::string &dir)
{
	std::vector<BatchAt> v;

	for (const std::string &name : names_in(dir)) {
		if (!name.starts_with("journal-"))
			continue;
		const Bytes d = read_file(dir + "/" + name);
		for (uint64_t off = 0; off + 40 <= d.size();) {
			assert_int_equal(le32(d, off), 0x4a52444d);
			const uint64_t len = (40 + uint64_t{le32(d, off + 24)} + 4095) &
					     ~uint64_t{4095};
			v.push_back({name, off, len, le32(d, off + 28), le64(d, off + 8),
				     le64(d, off + 16)});
			off += len;
		}
	}
	return v;
}

// Lets edit change the header of batch b (40 bytes), then seals it again
// with a good CRC: the batch as a writer with other ideas would write it.
template <typename Edit>
void rewrite_batch(const std::string &dir, const BatchAt &b, Edit edit)
{
	const std::string path = dir + "/" + b.file;
	Bytes d = read_file(path);
	std::byte *h = d.data() + b.offset;

	edit(h);
	uint32_t payload_len, crc = 0;
	std::memcpy(&payload_len, h + 24, 4);
	std::memcpy(h + 32, &crc, 4);
	crc = mdr::crc32c(h, 40 + payload_len);
	std::memcpy(h + 32, &crc, 4);
	write_file(path, d);
}


void copy_dir(const std::string &from, const std::string &to)
{
	for (const auto &e : fs::directory_iterator(from))
		fs::copy_file(e.path(), to + "/" + e.path().filename().string());
}

void test_round_trip_across_segments(void **)
{
	TempDir dir;
	JournalOptions o = small_options(dir.path);
	const std::vector<Record> want = build_log(o, 300);

	// Many batches, several segments, the biggest record fits.
	const std::vector<BatchAt> batches = batches_in(dir.path);
	assert_true(batches.size() >= 50);
	assert_true(batches.back().file != batches.front().file);
	for (size_t i = 0; i < batches.size(); i++)
		assert_int_equal(batches[i].seq, i + 1);

	std::unique_ptr<Journal> j = reopen_expect(o, want);
	if (!j->direct_io())
		print_message("note: %s refuses O_DIRECT\n", dir.path.c_str());

	// Appends after a reopen continue the log.
	Acks acks;
	append_all(*j, records_for(300, 320), acks, 0);
	flush_ok(*j);
	j.reset();
	reopen_expect(o, records_for(0, 320));
}

// As the loop does: waits for the event fd and processes completions,
// until done() says so.
void complete_until(Journal &j, const std::function<bool()> &done)
{
	while (!done()) {
		struct pollfd p = {j.event_fd(), POLLIN, 0};
		assert_int_equal(poll(&p, 1, 10000), 1);
		j.process_completions();
	}
}

// Everything the loop appends before it polls again goes in one write, and
// the callbacks run in order from process_completions(); a callback's
// append goes in a later write. With round_end() (at_round_end), an append
// leaves the event fd alone and nothing is written until round_end().
void group_commit(bool at_round_end)
{
	TempDir dir;
	JournalOptions o;
	o.dir = dir.path;
	Opened op = open_journal(o);
	Journal &j = *op.journal;
	Acks acks;

	if (at_round_end)
		j.submit_at_round_end();
	const std::vector<Record> recs(1000, Record{9, Bytes(48, std::byte{1})});
	append_all(j, recs, acks, 0);
	assert_int_equal(acks.next, 0);	// never from append()
	if (at_round_end) {
		struct pollfd p = {j.event_fd(), POLLIN, 0};

		assert_int_equal(poll(&p, 1, 0), 0);
		j.process_completions();
		assert_int_equal(j.stats().batches, 0);
		j.round_end();
	}

	complete_until(j, [&] { return acks.next == recs.size(); });
	assert_int_equal(acks.failed, 0);
	assert_int_equal(j.stats().records, 1000);
	assert_int_equal(j.stats().batches, 1);

	// A callback may append; that record goes in a later write.
	bool inner_done = false;
	mdr::Status st = j.append(1, {}, [&](const mdr::Status &s) {
		assert_true(s.ok());
		mdr::Status a = j.append(2, {}, [&](const mdr::Status &s2) {
			assert_true(s2.ok());
			inner_done = true;
		});
		assert_true(a.ok());
		assert_int_equal(j.flush().error(), -EDEADLK);
	});
	assert_true(st.ok());
	flush_ok(j);
	assert_true(inner_done);
	assert_int_equal(j.stats().batches, 3);
}

void test_group_commit_batches(void **) { group_commit(false); }
void test_group_commit_at_round_end(void **) { group_commit(true); }

void test_append_rejects_oversized_payload(void **)
{
	TempDir dir;
	JournalOptions o;
	o.dir = dir.path;
	Opened op = open_journal(o);
	const Bytes big(Journal::kMaxPayload + 1);
	bool called = false;

	mdr::Status st = op.journal->append(1, big, [&](const mdr::Status &) { called = true; });
	assert_int_equal(st.error(), -EMSGSIZE);
	flush_ok(*op.journal);
	assert_false(called);
	assert_int_equal(op.journal->stats().records, 0);
}

void test_open_rejects_bad_options(void **)
{
	TempDir dir;
	JournalOptions o;

	o.dir = dir.path + "/missing";
	Opened op = open_journal(o);
	assert_int_equal(op.error, -ENOENT);
	assert_non_null(strstr(op.message.c_str(), "missing"));

	o.dir = dir.path;
	o.max_batch_bytes = Journal::kMinBatchBytes - 1;
	assert_int_equal(open_journal(o).error, -EINVAL);
	o.max_batch_bytes = Journal::kMinBatchBytes;
	o.queue_depth = 0;
	assert_int_equal(open_journal(o).error, -EINVAL);
}

// A crash can leave the last segment cut anywhere: at a batch boundary or
// inside the batch being written. Exactly the whole batches come back, and
// the journal takes appends again.
void test_crash_at_every_point(void **)
{
	TempDir src;
	const std::vector<Record> all = build_log(small_options(src.path), 60);
	const std::vector<BatchAt> batches = batches_in(src.path);
	uint64_t before = 0;	// records in the batches before batch k

	assert_true(batches.back().file != batches.front().file);

	for (size_t k = 0; k <= batches.size(); k++) {
		std::vector<uint64_t> cuts;
		if (k < batches.size()) {
			const BatchAt &b = batches[k];
			cuts = {b.offset, b.offset + 1, b.offset + 40, b.offset + b.len / 2,
				b.offset + b.len - 1};
		} else {
			cuts = {UINT64_MAX};	// no crash: everything is there
		}
		for (uint64_t cut : cuts) {
			TempDir dir;
			copy_dir(src.path, dir.path);
			if (k < batches.size()) {
				// Segments after the one being written did not exist yet.
				for (const std::string &name : names_in(dir.path))
					if (name > batches[k].file)
						fs::remove(dir.path + "/" + name);
				fs::resize_file(dir.path + "/" + batches[k].file, cut);
			}
			JournalOptions o = small_options(dir.path);
			std::vector<Record> want(all.begin(),
						 all.begin() + static_cast<ptrdiff_t>(before));
			std::unique_ptr<Journal> j = reopen_expect(o, want);

			Acks acks;
			append_all(*j, records_for(1000, 1003), acks, 0);
			flush_ok(*j);
			j.reset();
			const std::vector<Record> more = records_for(1000, 1003);
			want.insert(want.end(), more.begin(), more.end());
			reopen_expect(o, want);
		}
		if (k < batches.size())
			before += batches[k].records;
	}
	assert_int_equal(before, all.size());
}

void test_flipped_byte_in_last_batch_cuts_it(void **)
{
	TempDir dir;
	JournalOptions o = small_options(dir.path);
	const std::vector<Record> all = build_log(o, 40);
	const std::vector<BatchAt> batches = batches_in(dir.path);
	const BatchAt &last = batches.back();

	flip_byte(dir.path + "/" + last.file, last.offset + 45);
	Opened op = open_journal(o);
	assert_non_null(op.journal.get());
	assert_true(op.records == std::vector<Record>(all.begin(), all.end() - last.records));
	assert_int_equal(op.log->size(), 1);
	assert_non_null(strstr((*op.log)[0].c_str(), "torn tail"));
	assert_non_null(strstr((*op.log)[0].c_str(), last.file.c_str()));
	assert_int_equal(fs::file_size(dir.path + "/" + last.file), last.offset);
	op.journal.reset();

	// Reopening finds an intact log that ends where it was cut.
	std::unique_ptr<Journal> j =
		reopen_expect(o, std::vector<Record>(all.begin(), all.end() - last.records));
	Acks acks;
	append_all(*j, records_for(500, 505), acks, 0);
	flush_ok(*j);
	j.reset();
	std::vector<Record> want(all.begin(), all.end() - last.records);
	const std::vector<Record> more = records_for(500, 505);
	want.insert(want.end(), more.begin(), more.end());
	reopen_expect(o, want);
}

// Damage to a batch that later batches vouch for is not a torn write:
// open refuses, names the place, and changes nothing.
void test_flipped_byte_in_middle_batch_refuses_open(void **)
{
	TempDir dir;
	JournalOptions o = small_options(dir.path);
	build_log(o, 60);
	const std::vector<BatchAt> batches = batches_in(dir.path);
	const BatchAt &mid = batches[batches.size() / 2];

	flip_byte(dir.path + "/" + mid.file, mid.offset + 50);
	const std::vector<std::string> names = names_in(dir.path);
	const uintmax_t size = fs::file_size(dir.path + "/" + mid.file);

	Opened op = open_journal(o);
	assert_null(op.journal.get());
	assert_int_equal(op.error, -EBADMSG);
	assert_non_null(strstr(op.message.c_str(), mid.file.c_str()));
	assert_non_null(strstr(op.message.c_str(), "bad CRC"));
	assert_non_null(strstr(op.message.c_str(), "refusing to open"));
	assert_true(names_in(dir.path) == names);
	assert_int_equal(fs::file_size(dir.path + "/" + mid.file), size);
}

// A batch written while an earlier one was still in flight does not vouch
// for it: a crash can tear the earlier one and keep the later, and then
// both go.
void test_torn_batch_with_later_write_is_cut(void **)
{
	TempDir dir;
	JournalOptions o = small_options(dir.path);
	Opened op = open_journal(o);
	Journal &j = *op.journal;
	Acks acks;

	append_all(j, records_for(0, 5), acks, 0);
	flush_ok(j);
	// Two batches' worth: flush() writes both at once.
	append_all(j, records_for(5, 11), acks, 5);
	flush_ok(j);
	op.journal.reset();

	const std::vector<BatchAt> batches = batches_in(dir.path);
	assert_int_equal(batches.size(), 3);
	assert_int_equal(batches[1].durable_seq, batches[0].seq);
	assert_true(batches[2].durable_seq < batches[1].seq);
	flip_byte(dir.path + "/" + batches[1].file, batches[1].offset + 44);

	std::unique_ptr<Journal> j2 = reopen_expect(o, records_for(0, 5));
	j2.reset();
	assert_int_equal(batches_in(dir.path).size(), 1);
}

// Writes in flight together can straddle a segment change. A crash that
// tears the earlier and keeps the later leaves whole segments after the
// hole: they go too.
void test_torn_tail_before_later_segments_is_cut(void **)
{
	TempDir dir;
	JournalOptions o = small_options(dir.path);
	const std::vector<Record> all = build_log(o, 60);
	const std::vector<BatchAt> batches = batches_in(dir.path);

	// The last batch of the first segment, and everything after it
	// written while it was in flight.
	size_t k = 0;
	while (batches[k + 1].file == batches[0].file)
		k++;
	for (size_t i = k + 1; i < batches.size(); i++)
		rewrite_batch(dir.path, batches[i], [&](std::byte *h) {
			const uint64_t durable = batches[k].seq - 1;
			std::memcpy(h + 16, &durable, 8);
		});
	flip_byte(dir.path + "/" + batches[k].file, batches[k].offset + 60);

	uint64_t before = 0;
	for (size_t i = 0; i < k; i++)
		before += batches[i].records;
	Opened op = open_journal(o);
	assert_non_null(op.journal.get());
	assert_true(op.records ==
		    std::vector<Record>(all.begin(), all.begin() + static_cast<ptrdiff_t>(before)));
	assert_int_equal(op.log->size(), 1);
	assert_non_null(strstr((*op.log)[0].c_str(), "later segment(s) removed"));
	op.journal.reset();
	assert_int_equal(names_in(dir.path).size(), 1);
}

// A batch whose CRC holds was written as it is: if this build cannot read
// it, that is no torn write to cut.
void test_intact_but_unreadable_batch_refuses_open(void **)
{
	TempDir dir;
	JournalOptions o = small_options(dir.path);
	build_log(o, 20);
	const BatchAt last = batches_in(dir.path).back();
	const Bytes good = read_file(dir.path + "/" + last.file);

	rewrite_batch(dir.path, last, [](std::byte *h) { h[4] = std::byte{2}; });
	Opened op = open_journal(o);
	assert_int_equal(op.error, -EBADMSG);
	assert_non_null(strstr(op.message.c_str(), "format version 2"));

	write_file(dir.path + "/" + last.file, good);
	rewrite_batch(dir.path, last, [](std::byte *h) {
		uint32_t records;
		std::memcpy(&records, h + 28, 4);
		records++;
		std::memcpy(h + 28, &records, 4);
	});
	op = open_journal(o);
	assert_int_equal(op.error, -EBADMSG);
	assert_non_null(strstr(op.message.c_str(), "passes its CRC"));
}

void test_checkpoint_then_records(void **)
{
	TempDir dir;
	JournalOptions o = small_options(dir.path);
	const Bytes snap1(1000, std::byte{0x5a}), snap2(70000, std::byte{0xa5});
	Acks acks;

	{
		Opened op = open_journal(o);
		Journal &j = *op.journal;
		append_all(j, records_for(0, 100), acks, 0);	// several segments
		assert_true(j.checkpoint(snap1).ok());
		append_all(j, records_for(100, 130), acks, 100);
		flush_ok(j);
		assert_int_equal(acks.next, 130);
		assert_int_equal(j.stats().checkpoints, 1);
	}
	// Only the checkpoint and the segments after it are left.
	std::vector<std::string> names = names_in(dir.path);
	assert_true(names.front().starts_with("checkpoint-"));
	auto is_checkpoint = [](const std::string &n) { return n.starts_with("checkpoint-"); };
	assert_int_equal(std::count_if(names.begin(), names.end(), is_checkpoint), 1);

	Opened op = open_journal(o);
	assert_non_null(op.journal.get());
	assert_true(op.checkpoint == snap1);
	assert_true(op.records == records_for(100, 130));

	// A second checkpoint replaces the first; nothing replays after it.
	assert_true(op.journal->checkpoint(snap2).ok());
	op.journal.reset();
	names = names_in(dir.path);
	assert_int_equal(names.size(), 2);	// the checkpoint and an empty segment
	assert_true(names[0].starts_with("checkpoint-") && names[1].starts_with("journal-"));
	assert_int_equal(fs::file_size(dir.path + "/" + names[1]), 0);

	Opened again = open_journal(o);
	assert_non_null(again.journal.get());
	assert_true(again.checkpoint == snap2);
	assert_true(again.records.empty());
}

// A crash after a checkpoint, before the segments it covers were deleted:
// open() deletes them and replays only what follows the checkpoint.
void test_checkpoint_cleanup_after_crash(void **)
{
	TempDir dir, saved;
	JournalOptions o = small_options(dir.path);
	Opened op = open_journal(o);
	Acks acks;

	append_all(*op.journal, records_for(0, 50), acks, 0);
	flush_ok(*op.journal);
	copy_dir(dir.path, saved.path);
	assert_true(op.journal->checkpoint(Bytes(5, std::byte{7})).ok());
	append_all(*op.journal, records_for(50, 60), acks, 50);
	flush_ok(*op.journal);
	op.journal.reset();
	for (const std::string &name : names_in(saved.path))
		fs::copy_file(saved.path + "/" + name, dir.path + "/" + name,
			      fs::copy_options::skip_existing);
	write_file(dir.path + "/checkpoint-00000000000000ff.ckpt.tmp", Bytes(3));

	Opened again = open_journal(o);
	assert_non_null(again.journal.get());
	assert_true(again.checkpoint == Bytes(5, std::byte{7}));
	assert_true(again.records == records_for(50, 60));
	again.journal.reset();
	for (const std::string &name : names_in(saved.path))
		assert_false(fs::exists(dir.path + "/" + name));
	assert_false(fs::exists(dir.path + "/checkpoint-00000000000000ff.ckpt.tmp"));
}

// A damaged checkpoint fails open(), even with an older, intact one beside
// it: the segments between them are gone.
void test_corrupt_checkpoint_refuses_open(void **)
{
	TempDir dir;
	JournalOptions o = small_options(dir.path);
	Acks acks;
	Bytes older;
	std::string older_name;

	{
		Opened op = open_journal(o);
		Journal &j = *op.journal;
		append_all(j, records_for(0, 20), acks, 0);
		assert_true(j.checkpoint(Bytes(300, std::byte{1})).ok());
		older_name = names_in(dir.path).front();
		older = read_file(dir.path + "/" + older_name);
		append_all(j, records_for(20, 40), acks, 20);
		assert_true(j.checkpoint(Bytes(300, std::byte{2})).ok());
	}
	write_file(dir.path + "/" + older_name, older);	// as if its removal was lost
	std::string newest;
	for (const std::string &n : names_in(dir.path))
		if (n.starts_with("checkpoint-"))
			newest = n;
	assert_true(newest != older_name);

	flip_byte(dir.path + "/" + newest, 100);
	Opened op = open_journal(o);
	assert_null(op.journal.get());
	assert_int_equal(op.error, -EBADMSG);
	assert_non_null(strstr(op.message.c_str(), newest.c_str()));
	assert_non_null(strstr(op.message.c_str(), "bad CRC"));

	fs::resize_file(dir.path + "/" + newest, 20);
	op = open_journal(o);
	assert_int_equal(op.error, -EBADMSG);
	assert_non_null(strstr(op.message.c_str(), "truncated"));
}

// Segments lost from the start of the log are not mistaken for a clean log.
void test_missing_segment_refuses_open(void **)
{
	TempDir dir;
	JournalOptions o = small_options(dir.path);
	build_log(o, 100);
	const std::vector<std::string> names = names_in(dir.path);
	assert_true(names.size() >= 2);
	fs::remove(dir.path + "/" + names.front());

	Opened op = open_journal(o);
	assert_int_equal(op.error, -EBADMSG);
	assert_non_null(strstr(op.message.c_str(), "missing"));
}

// A write error (here EFBIG from RLIMIT_FSIZE, the kernel's own failure of
// the write) fails every record pending and every later one, and the
// journal never writes again.
void test_write_error_is_fail_stop(void **)
{
	TempDir dir;
	JournalOptions o = small_options(dir.path);
	Opened op = open_journal(o);
	Journal &j = *op.journal;
	Acks acks;

	append_all(j, records_for(0, 3), acks, 0);
	flush_ok(j);
	const std::string seg = names_in(dir.path).back();
	const uintmax_t size = fs::file_size(dir.path + "/" + seg);

	struct rlimit saved;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
	const struct rlimit limit = {size, saved.rlim_max};
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &limit), 0);

	append_all(j, records_for(3, 8), acks, 3);
	mdr::Status st = j.flush();
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &saved), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(st.error(), -EFBIG);
	assert_non_null(strstr(st.message().c_str(), seg.c_str()));
	assert_int_equal(acks.next, 8);
	assert_int_equal(acks.failed, 5);
	assert_int_equal(acks.last_error, -EFBIG);

	// Later appends fail too, through the event loop like any callback.
	append_all(j, records_for(8, 10), acks, 8);
	struct pollfd p = {j.event_fd(), POLLIN, 0};
	assert_int_equal(poll(&p, 1, 10000), 1);
	j.process_completions();
	assert_int_equal(acks.next, 10);
	assert_int_equal(acks.failed, 7);
	assert_int_equal(j.flush().error(), -EFBIG);
	assert_int_equal(j.checkpoint(Bytes(10)).error(), -EFBIG);
	assert_int_equal(fs::file_size(dir.path + "/" + seg), size);
	op.journal.reset();

	reopen_expect(o, records_for(0, 3));
}

bool write_text(const char *path, const std::string &text)
{
	std::ofstream out(path);
	out << text;
	out.flush();
	return out.good();
}

// A mount namespace of our own: with CAP_SYS_ADMIN, or else inside a user
// namespace where we are root.
bool enter_mount_namespace()
{
	const uid_t uid = getuid();
	const gid_t gid = getgid();

	if (unshare(CLONE_NEWNS) == 0)
		return true;
	return unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0 &&
	       write_text("/proc/self/setgroups", "deny") &&
	       write_text("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") &&
	       write_text("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1");
}

// On a file system that refuses O_DIRECT (ramfs), the journal says so and
// writes through the page cache. ramfs is mounted in a mount namespace of
// a child process, so nothing outlives the test; skipped where no such
// namespace can be had.
void test_buffered_fallback_on_ramfs(void **)
{
	TempDir dir;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (!enter_mount_namespace() ||
		    mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0 ||
		    mount("mdr-journal-test", dir.path.c_str(), "ramfs", 0, nullptr) < 0)
			_exit(77);

		JournalOptions o = small_options(dir.path);
		std::vector<std::string> lines;
		o.log = [&lines](const std::string &line) { lines.push_back(line); };
		auto r = Journal::open(
			o, [](std::span<const std::byte>) { return mdr::Status(); },
			[](uint16_t, std::span<const std::byte>) { return mdr::Status(); });
		if (!r.ok() || r.value()->direct_io() || lines.size() != 1 ||
		    !strstr(lines[0].c_str(), "O_DIRECT"))
			_exit(1);
		Acks acks;
		auto done = [&acks](const mdr::Status &s) {
			acks.next++;
			acks.failed += !s.ok();
		};
		for (uint64_t i = 0; i < 50; i++) {
			const Record rec = record_for(i);
			if (!r.value()->append(rec.type, rec.payload, done).ok())
				_exit(1);
		}
		if (!r.value()->flush().ok() || acks.next != 50 || acks.failed)
			_exit(1);
		r.value().reset();

		std::vector<Record> back;
		r = Journal::open(
			o, [](std::span<const std::byte>) { return mdr::Status(); },
			[&back](uint16_t type, std::span<const std::byte> p) {
				back.push_back({type, Bytes(p.begin(), p.end())});
				return mdr::Status();
			});
		_exit(r.ok() && !r.value()->direct_io() && back == records_for(0, 50) ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
}

// tmpfs: O_DIRECT or not (it takes O_DIRECT since Linux 6.6), the round
// trip holds.
void test_round_trip_on_tmpfs(void **)
{
	if (!fs::is_directory("/dev/shm"))
		skip();
	TempDir dir("/dev/shm");
	JournalOptions o = small_options(dir.path);
	const std::vector<Record> want = build_log(o, 60);
	reopen_expect(o, want);
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_across_segments),
		cmocka_unit_test(test_group_commit_batches),
		cmocka_unit_test(test_group_commit_at_round_end),
		cmocka_unit_test(test_append_rejects_oversized_payload),
		cmocka_unit_test(test_open_rejects_bad_options),
		cmocka_unit_test(test_crash_at_every_point),
		cmocka_unit_test(test_flipped_byte_in_last_batch_cuts_it),
		cmocka_unit_test(test_flipped_byte_in_middle_batch_refuses_open),
		cmocka_unit_test(test_torn_batch_with_later_write_is_cut),
		cmocka_unit_test(test_torn_tail_before_later_segments_is_cut),
		cmocka_unit_test(test_intact_but_unreadable_batch_refuses_open),
		cmocka_unit_test(test_checkpoint_then_records),
		cmocka_unit_test(test_checkpoint_cleanup_after_crash),
		cmocka_unit_test(test_corrupt_checkpoint_refuses_open),
		cmocka_unit_test(test_missing_segment_refuses_open),
		cmocka_unit_test(test_write_error_is_fail_stop),
		cmocka_unit_test(test_buffered_fallback_on_ramfs),
		cmocka_unit_test(test_round_trip_on_tmpfs),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
