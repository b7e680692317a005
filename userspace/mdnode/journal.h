// SPDX-License-Identifier: GPL-2.0
//
// journal.h - mdnode's journal: a durable, append-only log of opaque
// records, plus checkpoints. The store encodes each metadata change as a
// record (a type and up to 64 KiB of payload) and replays the records at
// start; the journal knows nothing about volumes.
//
// Single-threaded: everything runs on the event loop's thread, but for
// the file work of a checkpoint begun by begin_checkpoint(), which runs on
// a worker thread of its own (journal_checkpoint.cc says what it touches).
//
//	auto j = Journal::open(opts, load_snapshot, apply_record);
//	j.value()->append(kRecAlloc, bytes, [](const mdr::Status &st) {
//		// durable (st.ok()) or never will be: reply now
//	});
//	// the loop polls j->event_fd() for POLLIN, then:
//	j.value()->process_completions();
//
// Group commit: append() copies the record into the batch being filled and
// returns. The batch is written by the next process_completions(): append()
// makes the event fd readable when fewer than queue_depth writes are in
// flight, so everything the loop appends before it polls again goes out in
// one write; otherwise a write completes first, and the records appended
// meanwhile go out together in the next. A loop that calls round_end()
// after each round (submit_at_round_end()) has it written from there
// instead, without coming back for it. Each write carries RWF_DSYNC, so it
// is durable when it completes (the choice is explained in journal.cc).
// Completion callbacks run in append order, only once every write up to
// theirs is durable.
//
// Fail-stop: when a write fails (EIO, ENOSPC, ...), that batch's callbacks,
// those of every later record and those of every record appended afterwards
// get the error; the journal never writes again. An mdnode that cannot
// journal must not acknowledge anything: failed() tells its owner to end
// the process (mdnode exits with kExitJournalFailed, startup.h), so that
// the service manager restarts it and recovery serves what was durable.
//
// On-disk format, little-endian, in the directory JournalOptions::dir:
//
//	journal-<seq>.log	a segment; <seq> (16 lowercase hex digits) is the
//				sequence number of its first batch
//	checkpoint-<seq>.ckpt	a snapshot covering every batch up to <seq>
//	checkpoint-<seq>.ckpt.tmp  a checkpoint being written; removed at open
//
// Other files are left alone. A segment is a run of batches, each written
// by one write at a 4 KiB-aligned offset:
//
//	offset size  batch header (40 bytes)
//	     0    4  magic 0x4a52444d ("MDRJ" in a dump)
//	     4    2  format version, 1
//	     6    2  reserved, 0
//	     8    8  seq: 1, 2, 3, ... without gaps across segments
//	    16    8  durable_seq: every batch up to durable_seq was durable
//		     when this batch was written (see recovery)
//	    24    4  payload_len: bytes of records after the header
//	    28    4  record count
//	    32    4  CRC-32C of the header (with this field 0) and the records
//	    36    4  reserved, 0
//	    40       records, packed: type (2), length (4), payload (length,
//		     at most 64 KiB); then zeros up to a multiple of 4096
//
// A new segment starts when the next batch would take the current one past
// JournalOptions::segment_bytes, and at a checkpoint unless the current one
// is empty.
//
// A checkpoint file is a 32-byte header, then the snapshot:
//
//	     0    4  magic 0x4352444d ("MDRC")
//	     4    2  format version, 1
//	     6    2  reserved, 0
//	     8    8  seq: the last batch the snapshot covers (as in the name)
//	    16    8  snapshot length
//	    24    4  CRC-32C of the header (with this field 0) and the snapshot
//	    28    4  reserved, 0
//
// It is written under a temporary name, fsynced, renamed and the directory
// fsynced; only then are the segments it covers and older checkpoints
// deleted.
//
// Open makes what it replayed durable before it returns, so that nothing
// is served from a tail that only the page cache holds (what a crash in
// the page-cache fallback, or an abort with writes in flight, can leave):
// every segment that held a replayed batch is fdatasynced, and the
// directory is fsynced when a checkpoint was loaded (its rename) or open
// cut or created files. A later power loss then cannot drop what hosts
// were told, nor leave a batch written after open vouching, by its
// durable_seq, for a tail that is gone.
//
// Recovery (open): the newest checkpoint is verified and loaded; if it fails
// verification, open fails naming the file and the fault, never falling
// back to an older state (the segments it covered may be gone). Then the
// batches after it are replayed in order, up to the first one that is
// short, fails magic or CRC, or does not carry the next sequence number.
// Whatever follows is either a torn tail or damage:
//  - torn tail: writes in flight at a crash, never acknowledged. It is cut:
//    the segment is truncated at the last intact batch, later segments are
//    deleted, and appends continue from there.
//  - damage to acknowledged data: some intact batch further on says, by its
//    durable_seq, that the batch where replay stopped had been durable.
//    open() then fails with -EBADMSG naming the file and offset, and leaves
//    the directory untouched, rather than drop acknowledged updates or
//    resurrect the batches after the hole.
// A damaged batch that no later batch vouches for (the newest ones, written
// before anything recorded them as durable) cannot be told from a torn
// write, and is cut. A batch with a valid CRC but a newer format version,
// or malformed records, also fails open().
#ifndef MDNODE_JOURNAL_H
#define MDNODE_JOURNAL_H

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lib/util/result.h"
#include "mdnode/histogram.h"

struct io_uring;

namespace mdnode {

struct JournalOptions {
	std::string dir;			// must exist
	uint64_t segment_bytes = 64 << 20;	// see the format above
	uint32_t max_batch_bytes = 1 << 20;	// header and records of one write
	unsigned queue_depth = 4;		// batch writes in flight, 1..64
	// Notable events of open() (O_DIRECT refused, a tail cut), one line
	// each, without a trailing newline. May be empty.
	std::function<void(const std::string &line)> log;
};

class Journal {
public:
	static constexpr size_t kMaxPayload = 64 << 10;
	// The smallest max_batch_bytes: room for one record of kMaxPayload.
	static constexpr uint32_t kMinBatchBytes = 68 << 10;

	// Called once per record with the outcome; may be empty. One per
	// record costs about 15 ns; with libstdc++, a capture of up to 16
	// bytes (a pointer and a request id) does not allocate.
	using Done = std::function<void(const mdr::Status &)>;
	using CheckpointFn = std::function<mdr::Status(std::span<const std::byte> snapshot)>;
	using RecordFn = std::function<mdr::Status(uint16_t type,
						   std::span<const std::byte> payload)>;

	struct Stats {
		uint64_t records = 0;		// appended
		uint64_t bytes = 0;		// written to segments, with headers and padding
		uint64_t batches = 0;		// batch writes completed
		uint64_t syncs = 0;		// device syncs: one per batch write, plus the
						// fsyncs of new segments, cuts and checkpoints
		uint64_t segments = 0;		// created
		uint64_t checkpoints = 0;	// written
		uint64_t checkpoint_failures = 0;	// not written (or not cleaned up)
		// Of the batch writes completed: records in each, and the time
		// from its submission to its completion (durable: RWF_DSYNC).
		Histogram<kBatchRecords> batch_records{};
		Histogram<kLatencyUs> sync_us{};
	};

	// Replays the journal in opts.dir: on_checkpoint once if a checkpoint
	// exists, then on_record for every record after it, in order. An error
	// from either stops the replay and open() returns it. When open()
	// fails, whatever was replayed must be discarded.
	static mdr::Result<std::unique_ptr<Journal>> open(const JournalOptions &opts,
							  const CheckpointFn &on_checkpoint,
							  const RecordFn &on_record);

	// Waits for the writes in flight (so none lands after the journal is
	// gone) and drops the callbacks not called yet: flush() first to
	// learn their outcome.
	~Journal();
	Journal(const Journal &) = delete;
	Journal &operator=(const Journal &) = delete;

	// Queues a record; done is called later from process_completions() or
	// flush(), never from append() itself. Fails only with -EMSGSIZE, for
	// a payload larger than kMaxPayload; done is then not called.
	// Callbacks may append.
	mdr::Status append(uint16_t type, std::span<const std::byte> payload, Done done);

	// Readable when process_completions() has work. Never closed while
	// the journal lives.
	int event_fd() const { return event_fd_; }

	// Reaps finished writes, runs their callbacks and starts the next
	// writes. Does not block. Does nothing from a callback.
	void process_completions();

	// From now on the owner calls round_end() after each round of its
	// loop, which submits what the round appended; an append then no
	// longer makes the event fd readable to bring the loop back for it
	// (per batch, a write and a read of the fd and a round of the loop
	// fewer). Completions still make it readable.
	void submit_at_round_end() { at_round_end_ = true; }
	// Starts the writes of what was appended, as far as the queue depth
	// allows. Does nothing from a callback.
	void round_end();

	// Blocks until every record appended so far, and any a callback it
	// runs appends, is durable and its callback has run. Returns the
	// journal's failure if it has failed. Not from a callback (-EDEADLK).
	mdr::Status flush();

	// Writes a snapshot of the state after every record appended so far,
	// then deletes the segments and checkpoint it makes obsolete. Blocks:
	// it flushes first. A failure to write the checkpoint leaves the
	// journal usable; a failure to start the next segment fails it. Not
	// from a callback (-EDEADLK).
	// Waits first for a checkpoint begun by begin_checkpoint() (its done
	// runs here), as at a clean stop.
	mdr::Status checkpoint(std::span<const std::byte> snapshot);

	// The same without blocking the loop: flushes (which waits for
	// nothing when no record is pending, as from the node's tick with no
	// change in flight), cuts the segment on this thread, then writes the
	// checkpoint and deletes what it makes obsolete on a worker thread.
	// done runs from a later process_completions() (or checkpoint(), or
	// wait_checkpoint()) with the outcome; meanwhile appends go on.
	// Fails with -EBUSY while one is in flight, with the journal's
	// failure if it has failed; done is then not called. Not from a
	// callback (-EDEADLK).
	mdr::Status begin_checkpoint(std::vector<uint8_t> snapshot, Done done);
	bool checkpoint_in_flight() const { return ckpt_ != nullptr; }
	// Blocks until a checkpoint in flight has ended and runs its done.
	void wait_checkpoint();

	// The first write failure: the journal is read-only for good, and
	// its owner should stop (see fail-stop above).
	bool failed() const { return failed_.has_value(); }
	const mdr::Error *failure() const { return failed_ ? &*failed_ : nullptr; }

	// False when the file system refused O_DIRECT (then writes go through
	// the page cache, still with RWF_DSYNC).
	bool direct_io() const { return direct_io_; }
	const Stats &stats() const { return stats_; }

private:
	struct Batch;
	struct Segment;
	struct CheckpointJob;

	explicit Journal(const JournalOptions &opts);
	mdr::Status init_ring();
	mdr::Status open_tail(uint64_t seq, uint64_t size, bool replayed);
	mdr::Status create_segment(uint64_t seq);
	mdr::Result<int> open_segment(const std::string &name, int flags);
	Batch &filling_batch(size_t record_bytes);
	void submit_pending();
	void submit(Batch &b);
	void reap();
	void deliver();
	void fail(mdr::Error error);
	void wake();
	mdr::Result<std::unique_ptr<CheckpointJob>> prepare_checkpoint();
	void finish_checkpoint(std::unique_ptr<CheckpointJob> job);
	void reap_checkpoint();
	// The file work of one, on whichever thread (journal_checkpoint.cc).
	static void run_checkpoint(int dir_fd, const std::string &dir, CheckpointJob &job);
	std::string path(const std::string &name) const;

	JournalOptions opts_;
	int dir_fd_ = -1;
	int event_fd_ = -1;
	std::unique_ptr<io_uring> ring_;	// set once initialised
	bool direct_io_ = true;
	std::shared_ptr<Segment> seg_;		// where the next batch goes
	std::vector<uint64_t> old_segments_;	// first seqs of the others on disk
	std::optional<uint64_t> checkpoint_seq_;	// of the one on disk
	uint64_t next_seq_ = 1;			// of the next batch submitted
	uint64_t durable_seq_ = 0;		// every batch up to it is durable
	// Every batch whose callbacks have not run, in append order: the
	// first submitted_ are submitted (or failed unsubmitted by fail()),
	// the rest are being filled.
	std::deque<std::unique_ptr<Batch>> batches_;
	size_t submitted_ = 0;
	unsigned in_flight_ = 0;		// submitted and not completed
	std::vector<std::unique_ptr<Batch>> spare_;
	std::optional<mdr::Error> failed_;	// the first failure: read-only
	bool error_delivered_ = false;		// later batches get failed_ too
	std::vector<Done> refused_;		// appended after the failure
	bool delivering_ = false;		// in a callback
	bool at_round_end_ = false;		// submit_at_round_end()
	std::unique_ptr<CheckpointJob> ckpt_;	// begun, its done not run yet
	Stats stats_;
};

} // namespace mdnode

#endif // MDNODE_JOURNAL_H
