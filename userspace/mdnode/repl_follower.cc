// SPDX-License-Identifier: GPL-2.0
//
// repl_follower.cc - see repl_follower.h.
#include "mdnode/repl_follower.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace mdnode::repl {

namespace {

std::string num(uint64_t v) { return std::to_string(v); }

size_t held_cost(const std::vector<std::byte> &payload) { return payload.size() + kHeldRecordCost; }

} // namespace

mdr::Result<std::unique_ptr<LogReceiver>> LogReceiver::create(ReceiverOptions opts, Sink &sink,
							      ReplyLink &link)
{
	auto bad = [](const std::string &what) {
		return mdr::Error(-EINVAL, "log receiver: " + what);
	};

	if (mdr::Status ok = check_ring(opts.ring.size(), opts.max_batch_bytes); !ok.ok())
		return bad(ok.message());
	if (opts.epoch == 0)
		return bad("epoch 0");
	if (opts.last.epoch > opts.epoch)
		return bad("its log ends in epoch " + num(opts.last.epoch) + ", after " +
			   num(opts.epoch));
	if ((opts.last.epoch == 0) != (opts.last.index == 0))
		return bad("its log ends at epoch " + num(opts.last.epoch) + ", index " +
			   num(opts.last.index));
	if (opts.applied > opts.last.index)
		return bad("applied " + num(opts.applied) + " past its log's end " +
			   num(opts.last.index));
	if (opts.held.size() != opts.last.index - opts.applied)
		return bad(num(opts.held.size()) + " records held, not the " +
			   num(opts.last.index - opts.applied) + " after " + num(opts.applied));

	size_t bytes = 0;

	for (size_t i = 0; i < opts.held.size(); i++) {
		if (opts.held[i].index != opts.applied + 1 + i)
			return bad("held record " + num(i) + " at index " +
				   num(opts.held[i].index));
		bytes += held_cost(opts.held[i].payload);
	}
	if (bytes > opts.max_held_bytes)
		return bad("held records of " + num(bytes) + " bytes, past " +
			   num(opts.max_held_bytes));
	return std::unique_ptr<LogReceiver>(new LogReceiver(std::move(opts), sink, link));
}

// Every record of its log is durable: the caller flushed the journal.
// What is applied is committed.
LogReceiver::LogReceiver(ReceiverOptions opts, Sink &sink, ReplyLink &link)
	: sink_(sink), link_(link), ring_(opts.ring), max_batch_bytes_(opts.max_batch_bytes),
	  max_held_bytes_(opts.max_held_bytes), epoch_(opts.epoch), fenced_(opts.epoch),
	  last_(opts.last), durable_(opts.last.index), commit_(opts.applied),
	  matched_(opts.last.epoch == opts.epoch ? opts.last.index : opts.applied),
	  applied_(opts.applied), max_checkpoint_bytes_(opts.max_checkpoint_bytes),
	  self_(std::make_shared<LogReceiver *>(this))
{
	for (HeldRecord &r : opts.held) {
		held_bytes_ += held_cost(r.payload);
		held_.push_back(std::move(r));
	}
	scratch_.reserve(max_batch_bytes_);
}

LogReceiver::~LogReceiver() = default;

mdr::Status LogReceiver::set_failure(int err, const std::string &what)
{
	if (!failure_)
		failure_.emplace(err, "log receiver, epoch " + num(epoch_) + ": " + what);
	return *failure_;
}

void LogReceiver::fence(uint64_t epoch)
{
	fenced_ = std::max(fenced_, epoch);
	if (fenced())
		disconnected();
}

void LogReceiver::disconnected()
{
	std::vector<uint8_t>().swap(ckpt_);
}

std::vector<HeldRecord> LogReceiver::take_held()
{
	std::vector<HeldRecord> out(std::make_move_iterator(held_.begin()),
				    std::make_move_iterator(held_.end()));

	held_.clear();
	held_bytes_ = 0;
	return out;
}

mdr::Status LogReceiver::on_notify(uint32_t offset)
{
	if (failure_)
		return *failure_;
	if (fenced()) {
		stats_.dropped++;
		return {};
	}

	const uint64_t size = ring_.size();
	const uint64_t at = consumed_ % size;

	if (offset % kAlign || offset >= size)
		return set_failure(-EPROTO, "notify at " + num(offset) + " in a ring of " + num(size));
	if (offset != at) {
		// Only a wrap marker where the next entry was due moves the
		// reader to 0.
		if (offset != 0)
			return set_failure(-EPROTO, "notify at " + num(offset) +
					     ", the next entry is at " + num(at));

		mdr::Result<Entry> e = peek_entry(ring_.subspan(at), max_batch_bytes_);

		if (!e.ok() || !e.value().wrap)
			return set_failure(-EPROTO, "notify at 0, and no wrap marker at " + num(at));
		consumed_ += size - at;
		stats_.wraps++;
	}
	return take_batch(offset);
}

mdr::Status LogReceiver::take_batch(uint32_t offset)
{
	const std::span<const std::byte> rest = ring_.subspan(offset);
	// The length is read from the ring only to bound the copy (by
	// max_batch_bytes and the ring's end); the copy is what is checked
	// and used (see the header), whatever the ring holds meanwhile.
	mdr::Result<Entry> e = peek_entry(rest, max_batch_bytes_);

	if (!e.ok())
		return set_failure(e.error(), e.message());
	if (e.value().wrap)
		return set_failure(-EPROTO, "notify at " + num(offset) + " names a wrap marker");
	if (e.value().chunk)
		return take_chunk(rest, e.value().length);
	if (!ckpt_.empty())
		return set_failure(-EPROTO, "a batch within a checkpoint, " + num(ckpt_.size()) +
				     " of its " + num(ckpt_h_.total) + " bytes received");
	scratch_.resize(e.value().length);
	std::memcpy(scratch_.data(), rest.data(), scratch_.size());

	mdr::Result<Batch> parsed = parse_batch(scratch_, max_batch_bytes_);

	if (!parsed.ok())
		return set_failure(parsed.error(), parsed.message());

	Batch &b = parsed.value();
	BatchHeader &h = b.h;
	const uint64_t end = h.first_index + h.count - 1;

	// Its bytes are copied out whatever comes of them.
	consumed_ += align_up(b.length);
	// A batch of an earlier epoch is that epoch's records, which this
	// connection's leader sends a follower behind its start: the ring is
	// this connection's, its rkey given to this leader alone after the
	// follower fenced every lower epoch (replication.md, "The replication
	// connection"), so no deposed leader's bytes are in it. Its records
	// keep their epoch, and the log matching check below holds for them.
	if (h.epoch > epoch_)
		return set_failure(-EPROTO, "batch of epoch " + num(h.epoch) + " on the connection of " +
				     num(epoch_));
	if (end <= last_.index && last_.epoch == epoch_) {
		// Its log ends in this epoch: up to last_ it is the leader's.
		stats_.skipped++;
		send_durable();
		return failure_ ? *failure_ : mdr::Status();
	}
	if (h.first_index > last_.index + 1)
		return set_failure(-EPROTO, "batch at " + num(h.first_index) + " after a gap: the log "
				     "ends at " + num(last_.index));
	if (h.first_index <= last_.index && last_.epoch == epoch_ && h.epoch == epoch_) {
		// A resend over its log's end: only the rest is taken.
		if (mdr::Status st = trim_resent(b); !st.ok())
			return st;
	}
	if (h.first_index <= last_.index) {
		if (mdr::Status st = cut_tail(h); !st.ok())
			return st;
	} else if (h.prev_epoch != last_.epoch) {
		return set_failure(-EPROTO, "batch at " + num(h.first_index) + " follows a record of "
				     "epoch " + num(h.prev_epoch) + "; the log's last is of epoch " +
				     num(last_.epoch));
	}

	size_t bytes = 0;

	for (const RecordRef &r : b.records)
		bytes += r.payload.size() + kHeldRecordCost;
	if (held_bytes_ + bytes > max_held_bytes_)
		return set_failure(-ENOBUFS, "records past the commit index would hold " +
				      num(held_bytes_ + bytes) + " bytes, past " +
				      num(max_held_bytes_));

	if (mdr::Status st = sink_.begin_batch(h); !st.ok())
		return set_failure(st.error(), "journal refused the batch's mark: " + st.message());
	for (size_t i = 0; i < b.records.size(); i++) {
		const RecordRef &r = b.records[i];
		Sink::Done done;

		// One callback per batch: the journal runs them in order, each
		// once everything before it is durable too.
		if (i + 1 == b.records.size())
			done = [self = std::weak_ptr(self_), end](const mdr::Status &st) {
				auto alive = self.lock();

				if (!alive)
					return;
				if (!st.ok()) {
					(void)(*alive)->set_failure(st.error(), "journal: " + st.message());
					return;
				}
				(*alive)->durable(end);
			};
		if (mdr::Status st = sink_.append(r.type, r.payload, std::move(done)); !st.ok())
			return set_failure(st.error(), "journal refused a record: " + st.message());
		held_.push_back({h.first_index + i, h.epoch, r.type,
				 std::vector<std::byte>(r.payload.begin(), r.payload.end())});
	}
	held_bytes_ += bytes;
	last_ = {h.epoch, end};
	// prev_epoch matched: its log is the leader's through end.
	matched_ = end;
	commit_ = std::max(commit_, h.commit_index);
	stats_.batches++;
	stats_.records += h.count;
	apply_committed();
	return failure_ ? *failure_ : mdr::Status();
}

// A piece of a checkpoint (see the header): copied out and checked as a
// batch is, then against the chunks before it.
mdr::Status LogReceiver::take_chunk(std::span<const std::byte> rest, size_t length)
{
	scratch_.resize(length);
	std::memcpy(scratch_.data(), rest.data(), scratch_.size());

	mdr::Result<Chunk> parsed = parse_chunk(scratch_, max_batch_bytes_);

	if (!parsed.ok())
		return set_failure(parsed.error(), parsed.message());

	const ChunkHeader &h = parsed.value().h;
	const std::span<const std::byte> bytes = parsed.value().bytes;
	const uint64_t ring_bytes = align_up(parsed.value().length);

	// The leader's own state: a deposed leader's bytes cannot be in
	// this connection's ring, and one of a later epoch is not this one's.
	if (h.epoch != epoch_)
		return set_failure(-EPROTO, "checkpoint chunk of epoch " + num(h.epoch) +
				     " on the connection of " + num(epoch_));
	if (ckpt_.empty()) {
		if (h.offset != 0)
			return set_failure(-EPROTO, "checkpoint chunk at " + num(h.offset) +
					     ", and none before it");
		if (h.total > max_checkpoint_bytes_)
			return set_failure(-EFBIG, "a checkpoint of " + num(h.total) +
					     " bytes, past the " + num(max_checkpoint_bytes_) +
					     " this follower takes");
		// Committed records are the leader's too: one at or past
		// what was applied holds them all.
		if (h.last.index < applied_)
			return set_failure(-EPROTO, "a checkpoint up to " + num(h.last.index) +
					     " would undo records applied up to " +
					     num(applied_));
		ckpt_h_ = h;
		ckpt_.reserve(h.total);
	} else if (h.last != ckpt_h_.last || h.total != ckpt_h_.total ||
		   h.offset != ckpt_.size()) {
		return set_failure(-EPROTO, "checkpoint chunk of (" + num(h.last.epoch) + ", " +
				     num(h.last.index) + ") at " + num(h.offset) + " of " +
				     num(h.total) + " bytes; expected (" +
				     num(ckpt_h_.last.epoch) + ", " + num(ckpt_h_.last.index) +
				     ") at " + num(ckpt_.size()) + " of " + num(ckpt_h_.total));
	}
	const auto *p = reinterpret_cast<const uint8_t *>(bytes.data());
	ckpt_.insert(ckpt_.end(), p, p + bytes.size());
	stats_.chunks++;
	if (ckpt_.size() < ckpt_h_.total) {
		consumed_ += ring_bytes;
		send_durable();
		return failure_ ? *failure_ : mdr::Status();
	}
	return install(ring_bytes);
}

// The checkpoint whole: the sink installs it (durable, then loaded), and
// the log is its position. The last chunk's ring bytes are reported only
// now: that DURABLE tells the leader it may stream what follows.
mdr::Status LogReceiver::install(uint64_t ring_bytes)
{
	const LogPosition last = ckpt_h_.last;

	// The journal runs earlier appends' callbacks as it flushes: they
	// may raise durable_, but neither apply to the store being replaced
	// nor report anything.
	installing_ = true;
	const mdr::Status st = sink_.install(last, ckpt_);
	installing_ = false;
	std::vector<uint8_t>().swap(ckpt_);
	if (!st.ok())
		return set_failure(st.error(), "refused a checkpoint up to (" + num(last.epoch) +
				     ", " + num(last.index) + "): " + st.message());
	// Every record of the log before it went with the journal's
	// segments; the ones held were its, or a tail past it no majority
	// had (a committed one would be in the leader's log, which ends
	// at or past the checkpoint's position).
	held_.clear();
	held_bytes_ = 0;
	last_ = last;
	durable_ = last.index;
	commit_ = std::max(commit_, last.index);
	matched_ = last.index;
	applied_ = last.index;
	consumed_ += ring_bytes;
	stats_.checkpoints++;
	send_durable();
	return failure_ ? *failure_ : mdr::Status();
}

// A batch over the end of its log (step 4 of the header): only an older
// epoch's tail, after what was applied, that the batch's prev_epoch
// matches.
// Its log ended inside the batch (a crash between two journal writes of
// one batch), and the leader sends the batch again. Up to last_ the
// records are the same leader's at the same indexes (one leader per
// epoch): only the rest is taken. Those it still holds in memory are
// compared, so that a leader that broke the rule is a protocol error, not
// a log that parts from its own silently.
mdr::Status LogReceiver::trim_resent(Batch &b)
{
	BatchHeader &h = b.h;
	const uint64_t held = last_.index - h.first_index + 1;

	for (uint64_t i = 0; i < held; i++) {
		const uint64_t index = h.first_index + i;
		const RecordRef &r = b.records[i];

		if (index > applied_) {
			const HeldRecord &mine = held_[index - applied_ - 1];

			if (mine.type != r.type || !std::ranges::equal(mine.payload, r.payload))
				return set_failure(-EPROTO, "batch of epoch " + num(h.epoch) +
						       " resends record " + num(index) +
						       " unlike the one held");
		}
		h.payload_len -= uint32_t(record_bytes(r.payload.size()));
	}
	b.records.erase(b.records.begin(), b.records.begin() + ptrdiff_t(held));
	h.first_index = last_.index + 1;
	h.count -= uint32_t(held);
	h.prev_epoch = last_.epoch;
	stats_.trimmed += held;
	return {};
}

mdr::Status LogReceiver::cut_tail(const BatchHeader &h)
{
	const uint64_t prev = h.first_index - 1;

	if (last_.epoch >= epoch_)
		return set_failure(-EPROTO, "batch of " + num(h.first_index) + ".." +
				     num(h.first_index + h.count - 1) + " overlaps the log's end at " +
				     num(last_.index) + ", of this epoch");
	if (prev < applied_)
		return set_failure(-EPROTO, "batch at " + num(h.first_index) + " would cut records "
				     "up to " + num(applied_) + ", applied");
	if (prev > applied_ && held_[prev - applied_ - 1].epoch != h.prev_epoch)
		return set_failure(-EPROTO, "batch at " + num(h.first_index) + " follows a record of "
				     "epoch " + num(h.prev_epoch) + "; the log's record " + num(prev) +
				     " is of epoch " + num(held_[prev - applied_ - 1].epoch));

	const size_t keep = prev - applied_;

	while (held_.size() > keep) {
		held_bytes_ -= held_cost(held_.back().payload);
		held_.pop_back();
		stats_.cut++;
	}
	last_ = {prev > applied_ ? held_.back().epoch : h.prev_epoch, prev};
	durable_ = std::min(durable_, prev);
	matched_ = std::min(matched_, prev);
	return {};
}

mdr::Status LogReceiver::on_control(std::span<const std::byte> msg)
{
	if (failure_)
		return *failure_;

	mdr::Result<Control> m = parse_control(msg);

	if (!m.ok())
		return set_failure(m.error(), m.message());
	if (const Heartbeat *hb = std::get_if<Heartbeat>(&m.value()))
		return on_heartbeat(*hb);
	return set_failure(-EPROTO, "a control message other than HEARTBEAT from the leader");
}

mdr::Status LogReceiver::on_heartbeat(const Heartbeat &hb)
{
	if (failure_)
		return *failure_;
	if (fenced() || hb.epoch < epoch_) {
		stats_.dropped++;
		return {};
	}
	if (hb.epoch > epoch_)
		return set_failure(-EPROTO, "HEARTBEAT of epoch " + num(hb.epoch));
	commit_ = std::max(commit_, hb.commit_index);
	apply_committed();
	return failure_ ? *failure_ : mdr::Status();
}

void LogReceiver::durable(uint64_t index)
{
	durable_ = std::max(durable_, index);
	apply_committed();
	send_durable();
}

ReceiverStats &operator+=(ReceiverStats &a, const ReceiverStats &b)
{
	a.batches += b.batches;
	a.records += b.records;
	a.skipped += b.skipped;
	a.trimmed += b.trimmed;
	a.dropped += b.dropped;
	a.wraps += b.wraps;
	a.durables += b.durables;
	a.applied += b.applied;
	a.cut += b.cut;
	a.chunks += b.chunks;
	a.checkpoints += b.checkpoints;
	return a;
}

void LogReceiver::send_durable()
{
	if (failure_ || fenced() || installing_)
		return;
	if (mdr::Status st = link_.send(encode_control(Durable{epoch_, durable_, consumed_}));
	    !st.ok()) {
		(void)set_failure(st.error(), "link: " + st.message());
		return;
	}
	stats_.durables++;
}

// In index order, only what the leader said committed and the journal has
// durable: a record applied is never undone.
void LogReceiver::apply_committed()
{
	if (failure_ || fenced() || installing_)
		return;

	const uint64_t upto = std::min({commit_, durable_, matched_});

	while (!held_.empty() && held_.front().index <= upto) {
		HeldRecord &r = held_.front();

		if (mdr::Status st = sink_.apply(r.index, r.type, r.payload); !st.ok()) {
			(void)set_failure(st.error(), "cannot apply record " + num(r.index) + ": " +
					       st.message());
			return;
		}
		applied_ = r.index;
		held_bytes_ -= held_cost(r.payload);
		held_.pop_front();
		stats_.applied++;
	}
}

} // namespace mdnode::repl
