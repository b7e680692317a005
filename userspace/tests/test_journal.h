// SPDX-License-Identifier: GPL-2.0
//
// test_journal.h - what test_journal*.cc share: directories removed at the
// end, records of uneven sizes, a journal opened with what it replayed
// kept, appends whose callbacks check their order, a log built of
// batches of 1 to 5 records, and checkpoints held or failed.
#ifndef MDR_TESTS_TEST_JOURNAL_H
#define MDR_TESTS_TEST_JOURNAL_H

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mdnode/journal.h"

#include "tests/common/cmocka_cxx.h"

namespace journal_test {

namespace fs = std::filesystem;
using mdnode::Journal;
using mdnode::JournalOptions;

using Bytes = std::vector<std::byte>;

struct Record {
	uint16_t type;
	Bytes payload;
	bool operator==(const Record &) const = default;
};

// A directory removed with everything in it at the end of the test.
class TempDir {
public:
	explicit TempDir(const char *base = "/var/tmp")
	{
		std::string tmpl = std::string(base) + "/mdr-journal.XXXXXX";
		assert_non_null(mkdtemp(tmpl.data()));
		path = tmpl;
	}
	~TempDir()
	{
		std::error_code ec;
		fs::remove_all(path, ec);
	}
	TempDir(const TempDir &) = delete;
	TempDir &operator=(const TempDir &) = delete;

	std::string path;
};

// Sizes from empty to the largest, so batches and segments fill unevenly.
inline Record record_for(uint64_t i)
{
	static const size_t sizes[] = {0, 1, 48, 200, 4096, 65536, 7, 3000, 48, 48, 65535, 100};
	Record r{static_cast<uint16_t>(i * 7919), Bytes(sizes[i % std::size(sizes)])};

	for (size_t k = 0; k < r.payload.size(); k++)
		r.payload[k] = static_cast<std::byte>(i * 131 + k * 17 + 5);
	return r;
}

inline std::vector<Record> records_for(uint64_t from, uint64_t to)
{
	std::vector<Record> v;

	for (uint64_t i = from; i < to; i++)
		v.push_back(record_for(i));
	return v;
}

inline JournalOptions small_options(const std::string &dir)
{
	JournalOptions o;
	o.dir = dir;
	o.segment_bytes = 256 << 10;
	o.max_batch_bytes = Journal::kMinBatchBytes;
	return o;
}

struct Opened {
	std::unique_ptr<Journal> journal;	// null when open() failed
	int error = 0;
	std::string message;
	std::optional<Bytes> checkpoint;
	std::vector<Record> records;
	// Lines of JournalOptions::log, which the journal keeps calling.
	std::shared_ptr<std::vector<std::string>> log =
		std::make_shared<std::vector<std::string>>();
};

inline Opened open_journal(JournalOptions o)
{
	Opened out;
	o.log = [log = out.log](const std::string &line) { log->push_back(line); };
	auto r = Journal::open(
		o,
		[&out](std::span<const std::byte> s) {
			assert_false(out.checkpoint.has_value());
			assert_true(out.records.empty());
			out.checkpoint = Bytes(s.begin(), s.end());
			return mdr::Status();
		},
		[&out](uint16_t type, std::span<const std::byte> p) {
			out.records.push_back({type, Bytes(p.begin(), p.end())});
			return mdr::Status();
		});
	if (r.ok()) {
		out.journal = std::move(r).value();
	} else {
		out.error = r.error();
		out.message = r.message();
	}
	return out;
}

// Opens dir, which must hold exactly want (and the checkpoint snap, when
// given).
inline std::unique_ptr<Journal> reopen_expect(const JournalOptions &o,
					      const std::vector<Record> &want,
					      const std::optional<Bytes> &snap = std::nullopt)
{
	Opened op = open_journal(o);
	if (!op.journal)
		print_error("open: %s\n", op.message.c_str());
	assert_non_null(op.journal.get());
	assert_int_equal(op.records.size(), want.size());
	assert_true(op.records == want);
	if (snap)
		assert_true(op.checkpoint == snap);
	return std::move(op.journal);
}

// Appends recs; each callback checks it runs in order and succeeds.
struct Acks {
	uint64_t next = 0;	// index of the next callback due
	uint64_t failed = 0;
	int last_error = 0;
};

inline void append_all(Journal &j, const std::vector<Record> &recs, Acks &acks, uint64_t first)
{
	for (uint64_t i = 0; i < recs.size(); i++) {
		const uint64_t n = first + i;
		auto done = [&acks, n](const mdr::Status &s) {
			assert_int_equal(acks.next, n);
			acks.next++;
			if (!s.ok()) {
				acks.failed++;
				acks.last_error = s.error();
			}
		};
		mdr::Status st = j.append(recs[i].type, recs[i].payload, done);
		assert_true(st.ok());
	}
}

inline void flush_ok(Journal &j)
{
	mdr::Status st = j.flush();
	if (!st.ok())
		print_error("flush: %s\n", st.message().c_str());
	assert_true(st.ok());
}

inline std::vector<std::string> names_in(const std::string &dir)
{
	std::vector<std::string> v;

	for (const auto &e : fs::directory_iterator(dir))
		v.push_back(e.path().filename().string());
	std::sort(v.begin(), v.end());
	return v;
}

// Appends records [0, count) in groups of 1, 2, 3..., each group a batch of
// its own, and returns how many records each batch holds.
inline std::vector<Record> build_log(const JournalOptions &o, uint64_t count)
{
	Opened op = open_journal(o);
	assert_non_null(op.journal.get());
	Acks acks;
	uint64_t n = 0;

	for (uint64_t group = 1; n < count; group++) {
		const uint64_t end = std::min(count, n + group % 5 + 1);
		append_all(*op.journal, records_for(n, end), acks, n);
		flush_ok(*op.journal);
		n = end;
	}
	assert_int_equal(acks.next, count);
	assert_int_equal(acks.failed, 0);
	return records_for(0, count);
}

// A journal opened on a new directory with small_options(), and the acks
// of what is appended to it.
struct Fresh {
	TempDir dir;
	JournalOptions o = small_options(dir.path);
	Opened op = open_journal(o);
	Journal &j = *op.journal;
	Acks acks;

	// Records [from, to) appended (after the others), and durable.
	void write(uint64_t from, uint64_t to)
	{
		append_all(j, records_for(from, to), acks, from);
		flush_ok(j);
	}
};

// The temporary file checkpoint seq is written to first.
inline std::string checkpoint_tmp(const std::string &dir, uint64_t seq)
{
	char name[64];

	snprintf(name, sizeof(name), "checkpoint-%016llx.ckpt.tmp", (unsigned long long)seq);
	return dir + "/" + name;
}

// A FIFO where checkpoint seq's temporary file goes: the writer's open
// blocks until release() opens the other end and reads what it writes;
// then its fsync fails (EINVAL), and it removes the FIFO. A checkpoint
// held in flight for as long as a test likes, then failed.
class HeldCheckpoint {
public:
	HeldCheckpoint(const std::string &dir, uint64_t seq) : path_(checkpoint_tmp(dir, seq))
	{
		assert_int_equal(mkfifo(path_.c_str(), 0600), 0);
	}

	void release()
	{
		int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
		char buf[4096];

		assert_true(fd >= 0);
		while (::read(fd, buf, sizeof(buf)) > 0) {
		}
		::close(fd);
	}

private:
	std::string path_;
};

// A directory where checkpoint seq's temporary file goes: writing it
// fails (EISDIR) until lift().
class RefusedCheckpoint {
public:
	RefusedCheckpoint(const std::string &dir, uint64_t seq) : path_(checkpoint_tmp(dir, seq))
	{
		assert_int_equal(mkdir(path_.c_str(), 0700), 0);
	}
	~RefusedCheckpoint() { lift(); }

	void lift() { ::rmdir(path_.c_str()); }

private:
	std::string path_;
};

} // namespace journal_test

#endif // MDR_TESTS_TEST_JOURNAL_H
