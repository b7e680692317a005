// SPDX-License-Identifier: GPL-2.0
//
// journal_checkpoint.cc - the journal's checkpoints (journal.h has the
// format): written at once by checkpoint(), as at a clean stop, or on a
// worker thread by begin_checkpoint() while the loop goes on serving.
//
// What the loop and the worker may touch while a checkpoint is in flight:
//  - The worker has the CheckpointJob: the snapshot (owned by the job, or
//    the caller's for checkpoint(), which does not return before it is
//    written), the seq it covers, the older checkpoint and the segments it
//    makes obsolete. The loop took those segments out of old_segments_ and
//    cut the segment before the worker started, so every file the worker
//    writes, renames or deletes is one the loop no longer names: the loop
//    appends to seg_ and to segments it makes later (first seqs past the
//    job's seq), and no batch points into a covered segment (flushed
//    first; spare batches hold no segment).
//  - dir_fd_, event_fd_ and opts_.dir are fixed from open() to ~Journal;
//    system calls on one fd from two threads are safe. The worker writes
//    the event fd to wake the loop.
//  - checkpoint_seq_, old_segments_ and stats_ are the loop's alone: the
//    loop reads the job's outcome (status, durable, removed) only once
//    finished is set (release, acquire), and joins the thread before it
//    takes them in (finish_checkpoint()).
//  - One at a time: begin_checkpoint() refuses while one is in flight, and
//    checkpoint() waits for it first. A journal that fails meanwhile
//    does not stop it: what it covers was durable before it began.
// At a clean stop, shut_down() (startup.cc) calls checkpoint(), which
// joins the one in flight and runs its done before it writes the final
// one; ~Journal joins it too (dropping its done), so no worker outlives
// the directory's fd.
#include "mdnode/journal.h"

#include <cerrno>
#include <system_error>
#include <utility>

#include <sys/eventfd.h>
#include <unistd.h>

#include "lib/util/crc32c.h"
#include "mdnode/journal_disk.h"
#include "mdnode/thread.h"

namespace mdnode {

using namespace journal_disk;

namespace {

std::string in_dir(const std::string &dir, const std::string &name)
{
	return dir + "/" + name;
}

// Writes checkpoint seq under a temporary name, fsyncs it, renames it and
// fsyncs the directory.
mdr::Status write_checkpoint(int dir_fd, const std::string &dir, uint64_t seq,
			     std::span<const std::byte> snapshot)
{
	const std::string name = checkpoint_name(seq), tmp = name + ".tmp";
	int fd = ::openat(dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return sys_error(errno, in_dir(dir, tmp));

	CheckpointHeader h = {};
	h.magic = kCheckpointMagic;
	h.version = kFormatVersion;
	h.seq = seq;
	h.length = snapshot.size();
	uint32_t c = mdr::crc32c_update(mdr::kCrc32cInit, &h, sizeof(h));
	h.crc = mdr::crc32c_finish(mdr::crc32c_update(c, snapshot.data(), snapshot.size()));

	mdr::Status st = write_all(fd, &h, sizeof(h), in_dir(dir, tmp));
	if (st.ok())
		st = write_all(fd, snapshot.data(), snapshot.size(), in_dir(dir, tmp));
	if (st.ok() && ::fsync(fd) < 0)
		st = sys_error(errno, "fsync of " + in_dir(dir, tmp));
	::close(fd);	// fsynced, or failed already
	if (st.ok() && ::renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) < 0)
		st = sys_error(errno, "renaming " + in_dir(dir, tmp));
	if (!st.ok()) {
		::unlinkat(dir_fd, tmp.c_str(), 0);	// best effort; open() removes it too
		return st;
	}
	if (::fsync(dir_fd) < 0)
		return sys_error(errno, "fsync of " + dir);
	return {};
}

mdr::Status remove_file(int dir_fd, const std::string &dir, const std::string &name)
{
	if (::unlinkat(dir_fd, name.c_str(), 0) < 0 && errno != ENOENT)
		return sys_error(errno, "removing " + in_dir(dir, name));
	return {};
}

} // namespace

// Writes it, then deletes the older checkpoint and the segments it covers.
void Journal::run_checkpoint(int dir_fd, const std::string &dir, CheckpointJob &job)
{
	job.status = write_checkpoint(dir_fd, dir, job.seq, job.snapshot);
	if (!job.status.ok())
		return;
	job.durable = true;
	if (job.older && *job.older != job.seq) {
		job.status = remove_file(dir_fd, dir, checkpoint_name(*job.older));
		if (!job.status.ok())
			return;
	}
	for (; job.removed < job.covered.size(); job.removed++) {
		job.status = remove_file(dir_fd, dir, segment_name(job.covered[job.removed]));
		if (!job.status.ok())
			return;
	}
}

// On the loop: every record appended so far durable, the segment cut so
// that what follows is not covered, the files the checkpoint makes
// obsolete handed over.
mdr::Result<std::unique_ptr<Journal::CheckpointJob>> Journal::prepare_checkpoint()
{
	mdr::Status st = flush();
	if (!st.ok())
		return mdr::Error(st.error(), st.message());

	auto job = std::make_unique<CheckpointJob>();
	job->seq = next_seq_ - 1;
	job->older = checkpoint_seq_;
	if (seg_->size > 0) {
		st = create_segment(next_seq_);
		if (!st.ok()) {
			fail(mdr::Error(st.error(), st.message()));
			return mdr::Error(st.error(), st.message());
		}
	}
	// All of them hold only batches up to seq now.
	job->covered = std::exchange(old_segments_, {});
	return job;
}

// On the loop, the worker joined: the outcome taken in, then told.
void Journal::finish_checkpoint(std::unique_ptr<CheckpointJob> job)
{
	if (job->durable) {
		checkpoint_seq_ = job->seq;
		stats_.checkpoints++;
		stats_.syncs += 2;
	}
	if (!job->status.ok())
		stats_.checkpoint_failures++;
	// What it did not delete is still there, older than every segment since.
	old_segments_.insert(old_segments_.begin(),
			     job->covered.begin() + static_cast<ptrdiff_t>(job->removed),
			     job->covered.end());
	if (job->done) {
		const uint64_t records = stats_.records;

		delivering_ = true;
		job->done(job->status);
		delivering_ = false;
		// What it appended is written by the next process_completions().
		if (stats_.records != records)
			wake();
	}
}

void Journal::reap_checkpoint()
{
	if (ckpt_ && ckpt_->finished.load(std::memory_order_acquire))
		wait_checkpoint();
}

void Journal::wait_checkpoint()
{
	if (!ckpt_)
		return;
	if (ckpt_->worker.joinable())
		ckpt_->worker.join();
	finish_checkpoint(std::move(ckpt_));
}

mdr::Status Journal::checkpoint(std::span<const std::byte> snapshot)
{
	if (delivering_)
		return mdr::Error(-EDEADLK, "journal: checkpoint() from a completion callback");
	wait_checkpoint();
	auto job = prepare_checkpoint();
	if (!job.ok())
		return mdr::Error(job.error(), job.message());
	job.value()->snapshot = snapshot;
	run_checkpoint(dir_fd_, opts_.dir, *job.value());
	mdr::Status st = job.value()->status;
	finish_checkpoint(std::move(job).value());
	return st;
}

mdr::Status Journal::begin_checkpoint(std::vector<uint8_t> snapshot, Done done)
{
	if (delivering_)
		return mdr::Error(-EDEADLK, "journal: begin_checkpoint() from a completion callback");
	if (ckpt_)
		return mdr::Error(-EBUSY, "journal: a checkpoint is in flight");
	auto job = prepare_checkpoint();
	if (!job.ok())
		return mdr::Error(job.error(), job.message());
	ckpt_ = std::move(job).value();
	ckpt_->owned = std::move(snapshot);
	ckpt_->snapshot = std::as_bytes(std::span(ckpt_->owned));
	ckpt_->done = std::move(done);

	CheckpointJob *p = ckpt_.get();
	auto work = [this, p] {
		run_checkpoint(dir_fd_, opts_.dir, *p);
		p->finished.store(true, std::memory_order_release);
		wake();
	};
	try {
		p->worker = thread_without_signals(work);
	} catch (const std::system_error &) {
		work();	// no thread to be had: here, blocking, rather than never
	}
	return {};
}

} // namespace mdnode
