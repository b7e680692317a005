// SPDX-License-Identifier: GPL-2.0
//
// copier.h - copies extents between the node's backing devices for moves,
// and zeroes extents before they are allocated, on a thread of its own so
// that the event loop never waits for data.
//
//	Copier c({{1, "/dev/vda"}, {2, "/dev/nvme0n1"}}, {});
//	c.start({.src_dev = 1, .src_off = a, .dst_dev = 2, .dst_off = b,
//		 .len = 4 << 20}, [](int err) { ... });
//	// the loop polls c.event_fd() for POLLIN, then:
//	c.process_completions();	// runs the callbacks of finished copies
//
// The worker copies one job at a time with its own io_uring (set up at its
// first copy and kept): reads and writes of `chunk` bytes at most (a run
// of a job that copies only some runs is cut into chunks of its own),
// `depth` of them in flight, each chunk written as soon as it is read. Devices are opened
// on first use, O_RDWR | O_DIRECT (plain buffered IO where the file system
// refuses O_DIRECT, as test files on tmpfs do), and the destination is made
// durable (fdatasync) before a copy is reported done: the new place is
// journaled only after that.
//
// A zeroing job (CopyJob::zero) writes zeros over its destination instead:
// BLKZEROOUT on a block device (the device's write-zeroes, else the kernel
// writes zero pages), FALLOC_FL_ZERO_RANGE on a file, plain writes of zeros
// where neither is there; then the same fdatasync.
//
// A job whose device cannot be opened, or whose IO fails or comes up short,
// ends with that -errno; what it wrote is garbage the caller does not use.
#ifndef MDNODE_COPIER_H
#define MDNODE_COPIER_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "mdnode/histogram.h"

struct io_uring;

namespace mdnode {

// The defaults put a whole 4 MiB extent in flight at once. 32 IOs of
// 128 KiB were measured against these 8 of 512 KiB and gave the copy no
// gain (Documentation/performance.md, "Migration").
struct CopierOptions {
	uint32_t chunk = 512 << 10;	// bytes per IO; a multiple of 4096
	unsigned depth = 8;		// IOs in flight, 1..64
};

// Where a copy's time went: steady-clock stamps (mono_us()), for the
// move's stage times. What the loop adds before it runs the callback is
// its own now minus `synced`.
struct CopyTimes {
	int64_t queued = 0;	// start() was called
	int64_t started = 0;	// the worker took the job
	int64_t written = 0;	// the last write completed
	int64_t synced = 0;	// fdatasync returned: the worker is done
};

// Bytes [off, off + len) of a job's extent.
struct CopyRun {
	uint64_t off = 0;		// 4096-aligned
	uint64_t len = 0;		// a multiple of 4096

	bool operator==(const CopyRun &) const = default;
};

struct CopyJob {
	uint32_t src_dev = 0;
	uint64_t src_off = 0;		// bytes, 4096-aligned
	uint32_t dst_dev = 0;
	uint64_t dst_off = 0;		// bytes, 4096-aligned
	uint64_t len = 0;		// bytes, a multiple of 4096
	// Only these runs of the len bytes, in order, apart and within them
	// (none: no data, only the fdatasync); unset: all of it.
	std::optional<std::vector<CopyRun>> runs{};
	// fdatasync the destination before the copy is done; false for a
	// copy that something later makes durable (a move's pre-copy).
	bool sync = true;
	// Queued behind every other job (a move's pre-copy, which no IO waits
	// for); the others go ahead of the background ones already queued.
	bool background = false;
	// Zeros over [dst_off, dst_off + len) rather than a copy: src_dev,
	// src_off and runs are not used.
	bool zero = false;
};

// The bytes a job copies.
uint64_t copy_bytes(const CopyJob &job);

class Copier {
public:
	// err: 0 or -errno.
	using Done = std::function<void(int err, const CopyTimes &times)>;

	// paths: device id -> path of the block device (or file).
	Copier(std::map<uint32_t, std::string> paths, const CopierOptions &opts);
	// Waits for the job being copied; drops the callbacks not run yet.
	~Copier();
	Copier(const Copier &) = delete;
	Copier &operator=(const Copier &) = delete;

	// Queues a copy (background jobs last); done runs later, from
	// process_completions().
	void start(const CopyJob &job, Done done);

	// Readable when a copy has finished.
	int event_fd() const { return event_fd_; }
	// Runs the callbacks of finished copies, in the order they finished.
	// Does not block.
	void process_completions();
	// Blocks until every copy started so far has finished, then runs
	// their callbacks (tests, shutdown).
	void wait_all();

	// Writes nothing more, for good: the copy running ends before its
	// next chunk (what was submitted completes), and every job queued or
	// started later fails, -ECANCELED, without IO. A group's leader that
	// stops calls it (GroupReplica::stop()): a deposed leader's copier
	// must not write places its successor may hand out. Any thread.
	void cancel() { cancelled_.store(true, std::memory_order_relaxed); }

	// Bytes of the copies reported done (copy_bytes() of each), and of
	// the zeroing jobs.
	uint64_t bytes_copied() const { return bytes_; }
	uint64_t bytes_zeroed() const { return zeroed_; }

private:
	struct Item {
		CopyJob job;
		Done done;
		int err = 0;
		CopyTimes times{};
	};

	void run();
	int copy(const CopyJob &job, CopyTimes &times);
	int zero(const CopyJob &job, CopyTimes &times);
	int write_zeros(int fd, uint64_t off, uint64_t len);
	int fd_of(uint32_t dev);

	std::map<uint32_t, std::string> paths_;
	CopierOptions opts_;
	int event_fd_ = -1;
	// Worker thread only.
	std::map<uint32_t, int> fds_;
	std::vector<void *> bufs_;
	std::vector<void *> retired_;	// bufs_ IO may still reach; freed at exit
	std::unique_ptr<io_uring> ring_;	// set once initialised

	std::mutex mu_;
	std::condition_variable cv_;
	std::deque<Item> queue_;	// waiting for the worker
	std::deque<Item> finished_;	// waiting for process_completions()
	size_t busy_ = 0;		// queued or being copied
	bool stop_ = false;
	std::atomic<bool> cancelled_{false};	// cancel()
	uint64_t bytes_ = 0;		// loop thread: copies reported done
	uint64_t zeroed_ = 0;		// loop thread: zeroing reported done
	std::thread worker_;
};

} // namespace mdnode

#endif // MDNODE_COPIER_H
