// SPDX-License-Identifier: GPL-2.0
//
// copier.cc - see copier.h.
#include "mdnode/copier.h"
#include "mdnode/thread.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <liburing.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mdnode/log.h"

namespace mdnode {

namespace {

MDNODE_LOG_SUBSYSTEM("copier");

constexpr size_t kAlign = 4096;	// O_DIRECT: buffers, offsets, lengths

} // namespace

uint64_t copy_bytes(const CopyJob &job)
{
	uint64_t n = 0;

	if (!job.runs)
		return job.len;
	for (const CopyRun &r : *job.runs)
		n += r.len;
	return n;
}

Copier::Copier(std::map<uint32_t, std::string> paths, const CopierOptions &opts)
	: paths_(std::move(paths)), opts_(opts)
{
	opts_.depth = std::clamp(opts_.depth, 1u, 64u);
	opts_.chunk = std::max<uint32_t>(opts_.chunk / kAlign * kAlign, kAlign);
	event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (event_fd_ < 0)
		log_error("eventfd: %s: moves will fail", strerror(errno));
	worker_ = thread_without_signals([this] { run(); });
}

Copier::~Copier()
{
	{
		std::lock_guard lock(mu_);
		stop_ = true;
	}
	cv_.notify_all();
	worker_.join();
	if (ring_)
		io_uring_queue_exit(ring_.get());
	for (auto &[dev, fd] : fds_)
		close(fd);
	for (void *b : retired_)
		free(b);
	for (void *b : bufs_)
		free(b);
	if (event_fd_ >= 0)
		close(event_fd_);
}

void Copier::start(const CopyJob &job, Done done)
{
	{
		std::lock_guard lock(mu_);
		auto at = job.background ? queue_.end()
					 : std::find_if(queue_.begin(), queue_.end(),
							[](const Item &i) { return i.job.background; });
		queue_.insert(at, {job, std::move(done), 0, {.queued = mono_us()}});
		busy_++;
	}
	cv_.notify_all();
}

void Copier::process_completions()
{
	uint64_t n;

	if (event_fd_ >= 0 && read(event_fd_, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_warn_rl("eventfd: %s", strerror(errno));
	for (;;) {
		Item it;
		{
			std::lock_guard lock(mu_);
			if (finished_.empty())
				return;
			it = std::move(finished_.front());
			finished_.pop_front();
			busy_--;
		}
		if (!it.err)
			(it.job.zero ? zeroed_ : bytes_) += copy_bytes(it.job);
		it.done(it.err, it.times);
	}
}

void Copier::wait_all()
{
	{
		std::unique_lock lock(mu_);
		cv_.wait(lock, [this] { return finished_.size() == busy_; });
	}
	process_completions();
}

void Copier::run()
{
	for (;;) {
		Item it;
		{
			std::unique_lock lock(mu_);
			cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
			if (stop_)
				return;
			it = std::move(queue_.front());
			queue_.pop_front();
		}
		it.times.started = mono_us();
		if (cancelled_.load(std::memory_order_relaxed))
			it.err = -ECANCELED;
		else
			it.err = it.job.zero ? zero(it.job, it.times) : copy(it.job, it.times);
		it.times.synced = mono_us();
		if (!it.times.written)	// failed before the IO
			it.times.written = it.times.synced;
		{
			std::lock_guard lock(mu_);
			finished_.push_back(std::move(it));
		}
		cv_.notify_all();
		const uint64_t one = 1;
		if (event_fd_ >= 0 && write(event_fd_, &one, sizeof(one)) < 0)
			log_warn_rl("eventfd: %s", strerror(errno));
	}
}

int Copier::fd_of(uint32_t dev)
{
	auto it = fds_.find(dev);

	if (it != fds_.end())
		return it->second;

	auto p = paths_.find(dev);

	if (p == paths_.end())
		return -ENODEV;
	int fd = ::open(p->second.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0 && errno == EINVAL) {
		log_warn("%s: no O_DIRECT on this file system: copying through "
			 "the page cache", p->second.c_str());
		fd = ::open(p->second.c_str(), O_RDWR | O_CLOEXEC);
	}
	if (fd < 0) {
		const int err = errno;

		log_error_rl("device %u: %s: %s", dev, p->second.c_str(), strerror(err));
		return -err;
	}
	fds_[dev] = fd;
	return fd;
}

// Reads chunk i into slot s, then writes it from there; a slot is reused
// once its write has completed. user_data: slot << 1 | (1 if a write).
int Copier::copy(const CopyJob &job, CopyTimes &times)
{
	if (job.zero || job.src_off % kAlign || job.dst_off % kAlign || job.len % kAlign)
		return -EINVAL;

	// The IOs: each run (or the whole) cut into chunks.
	std::vector<CopyRun> ios;
	const std::vector<CopyRun> all{{0, job.len}};
	uint64_t end = 0;

	for (const CopyRun &r : job.runs ? *job.runs : all) {
		if (r.off % kAlign || r.len % kAlign || !r.len || r.off < end ||
		    r.len > job.len || r.off > job.len - r.len)
			return -EINVAL;
		end = r.off + r.len;
		for (uint64_t at = r.off; at < end; at += opts_.chunk)
			ios.push_back({at, std::min<uint64_t>(opts_.chunk, end - at)});
	}

	const int src = fd_of(job.src_dev);
	const int dst = fd_of(job.dst_dev);

	if (src < 0)
		return src;
	if (dst < 0)
		return dst;
	while (bufs_.size() < opts_.depth) {
		void *b = nullptr;

		if (posix_memalign(&b, kAlign, opts_.chunk))
			return -ENOMEM;
		bufs_.push_back(b);
	}

	int ret;

	if (!ring_) {
		auto ring = std::make_unique<io_uring>();

		ret = io_uring_queue_init(opts_.depth, ring.get(), 0);
		if (ret < 0)
			return ret;
		ring_ = std::move(ring);
	}
	io_uring &ring = *ring_;

	struct Slot {
		uint64_t off = 0;	// within the extent
		uint32_t len = 0;
		bool busy = false;
	};
	std::vector<Slot> slots(opts_.depth);
	const uint64_t total = copy_bytes(job);
	uint64_t written = 0;
	size_t next = 0;	// in ios
	unsigned in_flight = 0;
	int err = 0;

	while (written < total && (!err || in_flight)) {
		// Cancelled: no chunk is read or written from here on; what
		// was submitted completes.
		if (!err && cancelled_.load(std::memory_order_relaxed))
			err = -ECANCELED;
		for (unsigned s = 0; !err && s < slots.size() && next < ios.size(); s++) {
			if (slots[s].busy)
				continue;
			io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			if (!sqe)
				break;
			slots[s] = {ios[next].off, uint32_t(ios[next].len), true};
			io_uring_prep_read(sqe, src, bufs_[s], slots[s].len,
					   job.src_off + slots[s].off);
			io_uring_sqe_set_data64(sqe, uint64_t{s} << 1);
			next++;
			in_flight++;
		}
		if (!in_flight)
			break;
		ret = io_uring_submit_and_wait(&ring, 1);
		if (ret < 0 && ret != -EINTR) {
			err = ret;
			break;
		}

		io_uring_cqe *cqe;
		unsigned head, seen = 0;

		io_uring_for_each_cqe(&ring, head, cqe) {
			const uint64_t ud = io_uring_cqe_get_data64(cqe);
			const unsigned s = unsigned(ud >> 1);
			const bool was_write = ud & 1;
			Slot &slot = slots[s];

			seen++;
			in_flight--;
			if (cqe->res != int(slot.len)) {
				if (!err)
					err = cqe->res < 0 ? cqe->res : -EIO;
				slot.busy = false;
				continue;
			}
			if (was_write || err) {
				written += was_write ? slot.len : 0;
				slot.busy = false;
				continue;
			}
			io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			if (!sqe) {
				// The ring has as many entries as slots: never.
				err = -EBUSY;
				slot.busy = false;
				continue;
			}
			io_uring_prep_write(sqe, dst, bufs_[s], slot.len, job.dst_off + slot.off);
			io_uring_sqe_set_data64(sqe, uint64_t{s} << 1 | 1);
			in_flight++;
		}
		io_uring_cq_advance(&ring, seen);
	}
	times.written = mono_us();
	if (in_flight) {
		// Left after a failed submit: a new ring for the next copy, so
		// that none of these completes into it, and new buffers, since
		// the kernel may still read into these. They are kept until
		// the copier goes, not reused: the next copy must not write
		// what a late read left in them.
		io_uring_queue_exit(ring_.get());
		ring_.reset();
		retired_.insert(retired_.end(), bufs_.begin(), bufs_.end());
		bufs_.clear();
	}
	if (!err && written != total)
		err = -EIO;
	// The new place is journaled once this returns: its data must be on
	// stable storage, past any volatile write cache.
	if (!err && job.sync && fdatasync(dst))
		err = -errno;
	if (err)
		log_error_rl("copy of %llu bytes from device %u to %u failed: %s",
			     (unsigned long long)total, job.src_dev, job.dst_dev,
			     strerror(-err));
	return err;
}

// The destination reads zeros, durably, once this returns 0.
int Copier::zero(const CopyJob &job, CopyTimes &times)
{
	if (job.dst_off % kAlign || job.len % kAlign || !job.len)
		return -EINVAL;

	const int fd = fd_of(job.dst_dev);

	if (fd < 0)
		return fd;

	struct stat st;
	int err = 0;

	if (fstat(fd, &st))
		err = -errno;
	else if (S_ISBLK(st.st_mode)) {
		uint64_t range[2] = {job.dst_off, job.len};

		if (ioctl(fd, BLKZEROOUT, range))
			err = -errno;
	} else if (fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
			     off_t(job.dst_off), off_t(job.len))) {
		err = errno == EOPNOTSUPP ? write_zeros(fd, job.dst_off, job.len) : -errno;
	}
	times.written = mono_us();
	if (!err && job.sync && fdatasync(fd))
		err = -errno;
	if (err)
		log_error_rl("zeroing of %llu bytes at %llu on device %u failed: %s",
			     (unsigned long long)job.len, (unsigned long long)job.dst_off,
			     job.dst_dev, strerror(-err));
	return err;
}

// Zeros written from one aligned buffer (the fd may be O_DIRECT), for a
// file system that cannot zero a range itself.
int Copier::write_zeros(int fd, uint64_t off, uint64_t len)
{
	void *b = nullptr;

	if (posix_memalign(&b, kAlign, opts_.chunk))
		return -ENOMEM;
	std::memset(b, 0, opts_.chunk);

	int err = 0;

	for (uint64_t at = 0; at < len && !err;) {
		if (cancelled_.load(std::memory_order_relaxed)) {
			err = -ECANCELED;
			break;
		}
		const size_t n = std::min<uint64_t>(opts_.chunk, len - at);
		const ssize_t w = pwrite(fd, b, n, off_t(off + at));

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			err = w < 0 ? -errno : -EIO;
		else
			at += uint64_t(w);
	}
	free(b);
	return err;
}

} // namespace mdnode
