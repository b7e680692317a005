// SPDX-License-Identifier: GPL-2.0
//
// journal.cc - the journal: recovery at open, then group-committed batch
// writes through io_uring. The format is described in journal.h; reading
// the files back is journal_recovery.cc's, checkpoints journal_checkpoint.cc's.
//
// Durability: every batch write carries RWF_DSYNC. The write completes only
// once its data, and the file size that makes it reachable, are on stable
// storage: the kernel commits the file system's journal for the new size
// and flushes the device cache (or uses FUA where the device has it), or,
// through the page cache (file systems refusing O_DIRECT), runs the
// equivalent of fdatasync() on the range. One SQE and one CQE per batch,
// and each write is durable on its own, so writes in flight together need
// no ordering between them. A linked fdatasync would cost a second
// operation per batch and sync whatever else of the file is in flight;
// O_DSYNC at open would do the same as RWF_DSYNC, less visibly.
#include "mdnode/journal.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <string_view>
#include <utility>

#include <fcntl.h>
#include <liburing.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "lib/util/crc32c.h"
#include "lib/util/errors.h"
#include "mdnode/journal_disk.h"

namespace mdnode {

using namespace journal_disk;

namespace {

constexpr unsigned kMaxQueueDepth = 64;

} // namespace

struct Journal::Batch {
	explicit Batch(size_t capacity) : buf(alloc_buffer(capacity)) {}

	Buffer buf;			// kBlock-aligned, for O_DIRECT
	uint64_t used = sizeof(BatchHeader);	// header and records so far
	uint32_t records = 0;
	std::vector<Done> done;		// the non-empty ones, in append order
	// Set when submitted:
	uint64_t seq = 0;
	std::shared_ptr<Segment> seg;
	uint64_t offset = 0;
	uint32_t len = 0;		// used, rounded up to kBlock
	int64_t submitted_us = 0;	// mono_us(): for Stats::sync_us
	bool completed = false;		// or failed before it was submitted
	int res = 0;			// 0 or -errno
};

Journal::Journal(const JournalOptions &opts) : opts_(opts)
{
}

Journal::~Journal()
{
	// Its worker uses the directory's fd and the event fd.
	if (ckpt_ && ckpt_->worker.joinable())
		ckpt_->worker.join();
	if (ring_) {
		// The kernel reads the buffers of the writes in flight.
		while (in_flight_ > 0) {
			io_uring_cqe *cqe;
			int ret = io_uring_wait_cqe(ring_.get(), &cqe);

			if (ret == -EINTR)
				continue;
			if (ret < 0) {
				// No telling when they end: leave their buffers to them.
				for (auto &b : batches_)
					if (!b->completed)
						static_cast<void>(b->buf.release());
				break;
			}
			reap();
		}
		io_uring_queue_exit(ring_.get());
	}
	if (event_fd_ >= 0)
		::close(event_fd_);
	if (dir_fd_ >= 0)
		::close(dir_fd_);
}

std::string Journal::path(const std::string &name) const
{
	return opts_.dir + "/" + name;
}

mdr::Result<std::unique_ptr<Journal>> Journal::open(const JournalOptions &opts,
						     const CheckpointFn &on_checkpoint,
						     const RecordFn &on_record)
{
	if (opts.dir.empty() || opts.queue_depth < 1 || opts.queue_depth > kMaxQueueDepth ||
	    opts.max_batch_bytes < kMinBatchBytes || opts.max_batch_bytes > opts.segment_bytes)
		return mdr::Error(-EINVAL, "journal: options: need a directory, queue_depth 1.." +
					   std::to_string(kMaxQueueDepth) + " and " +
					   std::to_string(kMinBatchBytes) +
					   " <= max_batch_bytes <= segment_bytes");

	std::unique_ptr<Journal> j(new Journal(opts));
	j->dir_fd_ = ::open(opts.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (j->dir_fd_ < 0)
		return sys_error(errno, opts.dir);
	const Dir dir(j->dir_fd_, j->opts_.dir);

	auto listing = list_dir(opts.dir);
	if (!listing.ok())
		return mdr::Error(listing.error(), listing.message());
	const Listing &l = listing.value();

	// Nothing on disk changes until everything has been read and checked.
	uint64_t covered = 0;
	if (!l.checkpoints.empty()) {
		covered = l.checkpoints.back();
		mdr::Status st = load_checkpoint(dir, covered, on_checkpoint);
		if (!st.ok())
			return mdr::Error(st.error(), st.message());
	}

	// Replay starts in the last segment holding batch covered + 1: the
	// ones before it hold only covered batches.
	std::span<const uint64_t> segs = l.segments;
	while (segs.size() > 1 && segs[1] <= covered + 1)
		segs = segs.subspan(1);
	if (!segs.empty() && segs[0] > covered + 1)
		return corrupt(dir.path(segment_name(segs[0])) + " is the oldest segment, but " +
			       (l.checkpoints.empty()
					? std::string("there is no checkpoint")
					: checkpoint_name(covered) + " covers only up to batch " +
						  std::to_string(covered)) +
			       ": batches " + std::to_string(covered + 1) + ".." +
			       std::to_string(segs[0] - 1) + " are missing");

	LogEnd end{0, 0, covered, {}};
	if (!segs.empty()) {
		auto r = replay(dir, segs, covered, on_record);
		if (!r.ok())
			return mdr::Error(r.error(), r.message());
		end = std::move(r).value();
	}
	if (!end.damage.empty()) {
		mdr::Status st = check_torn(dir, segs, end);
		if (!st.ok())
			return mdr::Error(st.error(), st.message());
	}

	mdr::Status st = j->init_ring();
	if (!st.ok())
		return mdr::Error(st.error(), st.message());

	// Cut the torn tail: later segments first, so that a crash halfway
	// leaves a log that reads the same.
	if (!end.damage.empty()) {
		for (size_t i = segs.size() - 1; i > end.seg; i--) {
			st = dir.remove(segment_name(segs[i]));
			if (!st.ok())
				return mdr::Error(st.error(), st.message());
		}
	}
	// What was replayed may be in the page cache alone: durable before
	// anything is served from it (journal.h, "Open makes what it
	// replayed durable"). The tail segment is synced by open_tail().
	const bool replayed = !segs.empty() && end.last_seq > covered;
	for (size_t i = 0; replayed && i < end.seg; i++) {
		st = dir.datasync(segment_name(segs[i]));
		if (!st.ok())
			return mdr::Error(st.error(), st.message());
		j->stats_.syncs++;
	}
	// Segments before segs hold only covered batches.
	size_t obsolete = static_cast<size_t>(segs.data() - l.segments.data());
	// Appends continue in the last segment if it ends where they start.
	// It does not when it ends before the checkpoint: then all it holds is
	// covered, and a new segment starts after the checkpoint (its creation
	// syncs the directory).
	bool dir_synced = false;
	if (!segs.empty() && end.last_seq >= covered) {
		st = j->open_tail(segs[end.seg], end.offset, replayed);
		j->next_seq_ = end.last_seq + 1;
		j->old_segments_.assign(segs.begin(),
					segs.begin() + static_cast<ptrdiff_t>(end.seg));
	} else {
		if (!segs.empty())
			obsolete += end.seg + 1;
		st = j->create_segment(covered + 1);
		j->next_seq_ = covered + 1;
		dir_synced = true;
	}
	// A cut, and the rename of the checkpoint loaded (a crash may have
	// come before checkpoint() synced the directory), are durable before
	// anything builds on them, the removals below included.
	if (st.ok() && !dir_synced && (!end.damage.empty() || !l.checkpoints.empty())) {
		st = dir.sync();
		if (st.ok())
			j->stats_.syncs++;
	}
	if (st.ok() && !end.damage.empty() && opts.log)
		opts.log("journal: " + dir.path(end.damage) + ": torn tail cut there; " +
			 std::to_string(segs.size() - 1 - end.seg) + " later segment(s) removed");
	if (!st.ok())
		return mdr::Error(st.error(), st.message());
	j->durable_seq_ = j->next_seq_ - 1;

	// What a crash in checkpoint() or in an earlier open() left behind.
	for (size_t i = 0; st.ok() && i < obsolete; i++)
		st = dir.remove(segment_name(l.segments[i]));
	for (size_t i = 0; st.ok() && i + 1 < l.checkpoints.size(); i++)
		st = dir.remove(checkpoint_name(l.checkpoints[i]));
	for (size_t i = 0; st.ok() && i < l.temps.size(); i++)
		st = dir.remove(l.temps[i]);
	if (!st.ok())
		return mdr::Error(st.error(), st.message());
	if (!l.checkpoints.empty())
		j->checkpoint_seq_ = covered;
	return j;
}

mdr::Status Journal::init_ring()
{
	ring_ = std::make_unique<io_uring>();
	int ret = io_uring_queue_init(opts_.queue_depth, ring_.get(), 0);
	if (ret < 0) {
		ring_.reset();
		return sys_error(-ret, "io_uring_queue_init");
	}
	event_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (event_fd_ < 0)
		return sys_error(errno, "eventfd");
	ret = io_uring_register_eventfd(ring_.get(), event_fd_);
	if (ret < 0)
		return sys_error(-ret, "io_uring_register_eventfd");
	return {};
}

// Opens a segment for writing, with O_DIRECT unless the file system
// refused it before. flags hold the access mode and creation flags.
mdr::Result<int> Journal::open_segment(const std::string &name, int flags)
{
	if (direct_io_) {
		int fd = ::openat(dir_fd_, name.c_str(), flags | O_DIRECT | O_CLOEXEC, 0600);
		if (fd >= 0)
			return fd;
		if (errno != EINVAL)
			return sys_error(errno, path(name));
		// Refused after the lookup: O_CREAT | O_EXCL has already
		// created the file, so open it again without O_EXCL.
		flags &= ~O_EXCL;
		direct_io_ = false;
		if (opts_.log)
			opts_.log("journal: " + opts_.dir + ": the file system refuses "
				  "O_DIRECT; writing through the page cache, each write still "
				  "with RWF_DSYNC");
	}
	int fd = ::openat(dir_fd_, name.c_str(), flags | O_CLOEXEC, 0600);
	if (fd < 0)
		return sys_error(errno, path(name));
	return fd;
}

// Opens the last segment for appends at size, cutting what follows, and
// makes what it holds durable when replay read batches from it.
mdr::Status Journal::open_tail(uint64_t seq, uint64_t size, bool replayed)
{
	const std::string name = segment_name(seq);
	auto fd = open_segment(name, O_WRONLY);
	if (!fd.ok())
		return mdr::Error(fd.error(), fd.message());
	seg_ = std::make_shared<Segment>(seq, fd.value(), size);

	struct stat st;
	if (fstat(seg_->fd, &st) < 0)
		return sys_error(errno, path(name));
	if (static_cast<uint64_t>(st.st_size) == size) {
		if (!replayed)
			return {};
		if (fdatasync(seg_->fd) < 0)
			return sys_error(errno, "fdatasync of " + path(name));
		stats_.syncs++;
		return {};
	}
	if (ftruncate(seg_->fd, static_cast<off_t>(size)) < 0)
		return sys_error(errno, "truncating " + path(name));
	if (fsync(seg_->fd) < 0)
		return sys_error(errno, "fsync of " + path(name));
	stats_.syncs++;
	return {};
}

// Starts segment seq; appends go there from now on. The directory is
// synced so that the segment outlives a crash with the batches in it.
mdr::Status Journal::create_segment(uint64_t seq)
{
	const std::string name = segment_name(seq);
	auto fd = open_segment(name, O_WRONLY | O_CREAT | O_EXCL);
	if (!fd.ok())
		return mdr::Error(fd.error(), fd.message());
	if (seg_)
		old_segments_.push_back(seg_->first_seq);
	seg_ = std::make_shared<Segment>(seq, fd.value(), 0);
	if (fsync(dir_fd_) < 0)
		return sys_error(errno, "fsync of " + opts_.dir);
	stats_.segments++;
	stats_.syncs++;
	return {};
}

Journal::Batch &Journal::filling_batch(size_t record_bytes)
{
	if (submitted_ == batches_.size() ||
	    batches_.back()->used + record_bytes > opts_.max_batch_bytes) {
		if (spare_.empty()) {
			const uint64_t capacity = round_up(opts_.max_batch_bytes);
			batches_.push_back(std::make_unique<Batch>(capacity));
		} else {
			batches_.push_back(std::move(spare_.back()));
			spare_.pop_back();
		}
	}
	return *batches_.back();
}

mdr::Status Journal::append(uint16_t type, std::span<const std::byte> payload, Done done)
{
	if (payload.size() > kMaxPayload)
		return mdr::Error(-EMSGSIZE, "journal: a record of " +
					     std::to_string(payload.size()) + " bytes; at most " +
					     std::to_string(kMaxPayload));
	if (failed_) {
		if (done) {
			refused_.push_back(std::move(done));
			wake();
		}
		return {};
	}

	Batch &b = filling_batch(kRecordHeader + payload.size());
	const bool first = b.records == 0;
	std::byte *p = b.buf.get() + b.used;
	const auto len = static_cast<uint32_t>(payload.size());

	std::memcpy(p, &type, 2);
	std::memcpy(p + 2, &len, 4);
	if (len)
		std::memcpy(p + kRecordHeader, payload.data(), len);
	b.used += kRecordHeader + len;
	b.records++;
	if (done)
		b.done.push_back(std::move(done));
	stats_.records++;

	// The batch is written from the next process_completions(), with
	// everything else appended until then: at once if a write slot is
	// free (the loop finishes what it is doing, then finds the event fd
	// readable), else when a write completes. Or from round_end(), at the
	// end of the loop's round.
	if (first && !delivering_ && !at_round_end_ && in_flight_ < opts_.queue_depth)
		wake();
	return {};
}

void Journal::submit_pending()
{
	while (!failed_ && submitted_ < batches_.size() && in_flight_ < opts_.queue_depth)
		submit(*batches_[submitted_]);
}

void Journal::submit(Batch &b)
{
	const auto len = static_cast<uint32_t>(round_up(b.used));

	if (seg_->size > 0 && seg_->size + len > opts_.segment_bytes) {
		mdr::Status st = create_segment(next_seq_);
		if (!st.ok()) {
			fail(mdr::Error(st.error(), st.message()));
			return;
		}
	}

	BatchHeader h = {};
	h.magic = kBatchMagic;
	h.version = kFormatVersion;
	h.seq = next_seq_;
	h.durable_seq = durable_seq_;
	h.payload_len = static_cast<uint32_t>(b.used - sizeof(h));
	h.records = b.records;
	h.crc = batch_crc(h, b.buf.get() + sizeof(h));
	std::memcpy(b.buf.get(), &h, sizeof(h));
	std::memset(b.buf.get() + b.used, 0, len - b.used);

	// Never null: at most queue_depth writes are in flight, and the ring
	// has as many entries, each consumed by the kernel at submission.
	io_uring_sqe *sqe = io_uring_get_sqe(ring_.get());
	io_uring_prep_write(sqe, seg_->fd, b.buf.get(), len, seg_->size);
	sqe->rw_flags = RWF_DSYNC;
	io_uring_sqe_set_data(sqe, &b);
	b.submitted_us = mono_us();
	int ret = io_uring_submit(ring_.get());
	if (ret < 0) {
		fail(sys_error(-ret, "submitting a write to " +
					     path(segment_name(seg_->first_seq))));
		return;
	}

	b.seq = next_seq_++;
	b.seg = seg_;
	b.offset = seg_->size;
	b.len = len;
	seg_->size += len;
	submitted_++;
	in_flight_++;
}

void Journal::reap()
{
	io_uring_cqe *cqe;
	unsigned head, n = 0;

	io_uring_for_each_cqe(ring_.get(), head, cqe) {
		auto &b = *static_cast<Batch *>(io_uring_cqe_get_data(cqe));

		b.completed = true;
		in_flight_--;
		n++;
		if (cqe->res == static_cast<int>(b.len)) {
			stats_.batches++;
			stats_.bytes += b.len;
			stats_.syncs++;
			stats_.batch_records.observe(b.records);
			stats_.sync_us.observe(uint64_t(mono_us() - b.submitted_us));
			continue;
		}
		const int err = cqe->res < 0 ? -cqe->res : EIO;
		std::string what = "write of batch " + std::to_string(b.seq) + " to " +
				   path(segment_name(b.seg->first_seq)) + " at offset " +
				   std::to_string(b.offset);
		if (cqe->res >= 0)
			what += " stopped after " + std::to_string(cqe->res) + " of " +
				std::to_string(b.len) + " bytes";
		b.res = -err;
		fail(sys_error(err, what));
	}
	io_uring_cq_advance(ring_.get(), n);
}

// Runs the callbacks of the batches at the front that are complete.
void Journal::deliver()
{
	delivering_ = true;
	while (!batches_.empty() && batches_.front()->completed) {
		std::unique_ptr<Batch> b = std::move(batches_.front());
		batches_.pop_front();
		submitted_--;

		// After a failed batch, none counts as durable: recovery cuts
		// the log at the hole.
		const bool ok = b->res == 0 && !error_delivered_;
		if (ok)
			durable_seq_ = b->seq;
		else
			error_delivered_ = true;
		const mdr::Status st = ok ? mdr::Status() : mdr::Status(*failed_);
		for (Done &done : b->done)
			done(st);

		if (spare_.size() <= opts_.queue_depth) {
			b->used = sizeof(BatchHeader);
			b->records = 0;
			b->done.clear();
			b->seg.reset();
			b->completed = false;
			b->res = 0;
			spare_.push_back(std::move(b));
		}
	}
	// Records appended after the failure come after all the others; those
	// appended by these callbacks wait for the next call (see wake()).
	if (batches_.empty() && !refused_.empty()) {
		std::vector<Done> refused = std::exchange(refused_, {});
		const mdr::Status st(*failed_);

		for (Done &done : refused)
			done(st);
	}
	delivering_ = false;
}

// Read-only from now on: the batches not submitted fail with the writes.
void Journal::fail(mdr::Error error)
{
	if (failed_)
		return;
	failed_ = std::move(error);
	for (size_t i = submitted_; i < batches_.size(); i++) {
		batches_[i]->completed = true;
		batches_[i]->res = failed_->code;
	}
	submitted_ = batches_.size();
	wake();
}

// Makes the event fd readable: a batch to start, or callbacks due
// without a write.
void Journal::wake()
{
	// Fails only when the counter is about to overflow: readable anyway.
	static_cast<void>(eventfd_write(event_fd_, 1));
}

void Journal::process_completions()
{
	eventfd_t n;

	if (delivering_)
		return;
	// EAGAIN when nothing was signalled; the ring is looked at anyway.
	static_cast<void>(eventfd_read(event_fd_, &n));
	reap();
	deliver();
	submit_pending();
	reap_checkpoint();
}

void Journal::round_end()
{
	if (!delivering_)
		submit_pending();
}

mdr::Status Journal::flush()
{
	if (delivering_)
		return mdr::Error(-EDEADLK, "journal: flush() from a completion callback");
	while (!batches_.empty() || !refused_.empty()) {
		submit_pending();
		if (in_flight_ > 0) {
			io_uring_cqe *cqe;
			int ret;

			do
				ret = io_uring_wait_cqe(ring_.get(), &cqe);
			while (ret == -EINTR);
			if (ret < 0) {
				fail(sys_error(-ret, "waiting for journal writes"));
				return *failed_;
			}
		}
		reap();
		deliver();
	}
	if (failed_)
		return *failed_;
	return {};
}

} // namespace mdnode
