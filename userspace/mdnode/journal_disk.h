// SPDX-License-Identifier: GPL-2.0
//
// journal_disk.h - the journal's files as they are on disk (journal.h
// describes the format): the headers of batches and checkpoints, the
// names of the files, and reading them back at open; a checkpoint's job.
// Only for journal.cc, journal_recovery.cc and journal_checkpoint.cc; the
// format does not change here.
#ifndef MDNODE_JOURNAL_DISK_H
#define MDNODE_JOURNAL_DISK_H

#include <atomic>
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/util/result.h"
#include "mdnode/journal.h"

namespace mdnode::journal_disk {

static_assert(std::endian::native == std::endian::little,
	      "headers are stored in host order, which must be little-endian");

inline constexpr uint32_t kBatchMagic = 0x4a52444d;		// "MDRJ"
inline constexpr uint32_t kCheckpointMagic = 0x4352444d;	// "MDRC"
inline constexpr uint16_t kFormatVersion = 1;
// Batch alignment: O_DIRECT needs offsets, lengths and buffers aligned to
// the logical block size, 4096 at most on the devices we run on.
inline constexpr size_t kBlock = 4096;
inline constexpr size_t kRecordHeader = 6;	// type (2), length (4)

struct BatchHeader {
	uint32_t magic;
	uint16_t version;
	uint16_t reserved0;
	uint64_t seq;
	uint64_t durable_seq;
	uint32_t payload_len;
	uint32_t records;
	uint32_t crc;
	uint32_t reserved1;
};
static_assert(sizeof(BatchHeader) == 40 && offsetof(BatchHeader, seq) == 8 &&
	      offsetof(BatchHeader, durable_seq) == 16 &&
	      offsetof(BatchHeader, payload_len) == 24 && offsetof(BatchHeader, crc) == 32);

struct CheckpointHeader {
	uint32_t magic;
	uint16_t version;
	uint16_t reserved0;
	uint64_t seq;
	uint64_t length;
	uint32_t crc;
	uint32_t reserved1;
};
static_assert(sizeof(CheckpointHeader) == 32 && offsetof(CheckpointHeader, seq) == 8 &&
	      offsetof(CheckpointHeader, length) == 16 && offsetof(CheckpointHeader, crc) == 24);

static_assert(Journal::kMinBatchBytes % kBlock == 0 &&
	      Journal::kMinBatchBytes >=
		      sizeof(BatchHeader) + kRecordHeader + Journal::kMaxPayload);


inline uint64_t round_up(uint64_t n)
{
	return (n + kBlock - 1) & ~uint64_t{kBlock - 1};
}

// "journal-<seq, 16 hex digits>.log", "checkpoint-<seq>.ckpt".
std::string segment_name(uint64_t seq);
std::string checkpoint_name(uint64_t seq);

// err is a positive errno.
mdr::Error sys_error(int err, const std::string &what);
mdr::Error corrupt(const std::string &what);
// The CRC-32C of a batch: its header (crc zeroed) and its payload.
uint32_t batch_crc(const BatchHeader &h, const std::byte *payload);

// The journal's directory while open() reads it.
class Dir {
public:
	Dir(int fd, const std::string &path) : fd_(fd), path_(path) {}

	std::string path(const std::string &name) const { return path_ + "/" + name; }

	// The whole of a file, in buf (reused between calls).
	mdr::Result<std::span<const std::byte>> read(const std::string &name,
						      std::vector<std::byte> &buf) const
	{
		int fd = ::openat(fd_, name.c_str(), O_RDONLY | O_CLOEXEC);
		struct stat st;

		if (fd < 0)
			return sys_error(errno, path(name));
		if (fstat(fd, &st) < 0) {
			mdr::Error e = sys_error(errno, path(name));
			::close(fd);
			return e;
		}
		buf.resize(static_cast<size_t>(st.st_size));
		size_t got = 0;
		while (got < buf.size()) {
			ssize_t n = ::pread(fd, buf.data() + got, buf.size() - got,
					    static_cast<off_t>(got));
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				mdr::Error e = sys_error(errno, path(name));
				::close(fd);
				return e;
			}
			if (n == 0)
				break;	// shrank meanwhile: what is there is what counts
			got += static_cast<size_t>(n);
		}
		::close(fd);
		return std::span<const std::byte>(buf.data(), got);
	}

	mdr::Status remove(const std::string &name) const
	{
		if (::unlinkat(fd_, name.c_str(), 0) < 0 && errno != ENOENT)
			return sys_error(errno, "removing " + path(name));
		return {};
	}

	mdr::Status sync() const
	{
		if (::fsync(fd_) < 0)
			return sys_error(errno, "fsync of " + path_);
		return {};
	}

	// The data of a file, durable: what reading it showed, which may
	// have come from the page cache alone.
	mdr::Status datasync(const std::string &name) const
	{
		int fd = ::openat(fd_, name.c_str(), O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			return sys_error(errno, path(name));
		const int ret = ::fdatasync(fd);
		const int err = errno;
		::close(fd);
		if (ret < 0)
			return sys_error(err, "fdatasync of " + path(name));
		return {};
	}

private:
	int fd_;
	const std::string &path_;
};

// What is in the directory, each list sorted.
struct Listing {
	std::vector<uint64_t> segments;
	std::vector<uint64_t> checkpoints;
	std::vector<std::string> temps;
};
mdr::Result<Listing> list_dir(const std::string &dir);

// Loads checkpoint seq into fn, after checking its header and CRC.
mdr::Status load_checkpoint(const Dir &dir, uint64_t seq, const Journal::CheckpointFn &fn);

// Where replay stopped.
struct LogEnd {
	size_t seg = 0;			// index of the segment the log ends in
	uint64_t offset = 0;		// of its next batch
	uint64_t last_seq = 0;		// of the last intact batch
	// Why replay stopped short of the data, starting with the file's
	// name ("journal-...log offset 8192: bad CRC"); empty if it did not.
	std::string damage;
};

// Replays the records of the batches after covered, in segs (sorted,
// non-empty) up to the end of the log.
mdr::Result<LogEnd> replay(const Dir &dir, std::span<const uint64_t> segs, uint64_t covered,
			   const Journal::RecordFn &on_record);
// Fails if an intact batch at or after where replay stopped says that the
// batch due there was durable: then the log is damaged, not torn.
mdr::Status check_torn(const Dir &dir, std::span<const uint64_t> segs, const LogEnd &end);

// Buffers aligned for O_DIRECT (kBlock).
using Buffer = std::unique_ptr<std::byte[], decltype(&std::free)>;
Buffer alloc_buffer(size_t size);
mdr::Status write_all(int fd, const void *data, size_t len, const std::string &path);

} // namespace mdnode::journal_disk

namespace mdnode {

struct Journal::Segment {
	Segment(uint64_t first_seq, int fd, uint64_t size)
		: first_seq(first_seq), fd(fd), size(size)
	{
	}
	~Segment() { ::close(fd); }	// after its last write: nothing to report
	Segment(const Segment &) = delete;
	Segment &operator=(const Segment &) = delete;

	uint64_t first_seq;
	int fd;
	uint64_t size;		// written or being written
};

// One checkpoint: what the loop hands the worker, and what the worker
// hands back. journal_checkpoint.cc has the rules of who touches what.
struct Journal::CheckpointJob {
	// Set by the loop before the worker starts, read-only after:
	uint64_t seq = 0;			// the last batch it covers
	std::vector<uint8_t> owned;		// the snapshot, when begun
	std::span<const std::byte> snapshot;	// owned's bytes, or the caller's
	std::optional<uint64_t> older;		// checkpoint to delete once durable
	std::vector<uint64_t> covered;		// segments to delete once durable
	Done done;
	// Written by the worker, read by the loop once finished is true:
	mdr::Status status;
	bool durable = false;			// renamed and the directory synced
	size_t removed = 0;			// of covered, from the front
	std::atomic<bool> finished{false};
	std::thread worker;
};

} // namespace mdnode

#endif // MDNODE_JOURNAL_DISK_H
