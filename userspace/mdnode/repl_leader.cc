// SPDX-License-Identifier: GPL-2.0
//
// repl_leader.cc - see repl_leader.h.
#include "mdnode/repl_leader.h"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <set>
#include <utility>

namespace mdnode::repl {

namespace {

std::string num(uint64_t v) { return std::to_string(v); }

std::string pos(const LogPosition &p)
{
	return "(epoch " + num(p.epoch) + ", index " + num(p.index) + ")";
}

} // namespace

const char *state_name(FollowerState s)
{
	switch (s) {
	case FollowerState::unready:
		return "unready";
	case FollowerState::streaming:
		return "streaming";
	case FollowerState::backlogged:
		return "backlogged";
	case FollowerState::needs_checkpoint:
		return "needs_checkpoint";
	case FollowerState::checkpointing:
		return "checkpointing";
	case FollowerState::dropped:
		return "dropped";
	}
	return "?";
}

mdr::Result<std::unique_ptr<LogShipper>> LogShipper::create(const ShipperOptions &opts,
							    ShipLink &link, OnCommit on_commit)
{
	if (mdr::Status ok = check_ring(opts.ring_bytes, opts.max_batch_bytes); !ok.ok())
		return mdr::Error(ok.error(), "log shipper: " + ok.message());
	if (opts.epoch == 0)
		return mdr::Error(-EINVAL, "log shipper: epoch 0");
	if (opts.start.epoch > opts.epoch || (opts.start.epoch == 0) != (opts.start.index == 0))
		return mdr::Error(-EINVAL, "log shipper: the log begins at " + pos(opts.start) +
					   " in epoch " + num(opts.epoch));
	if (opts.commit_index > opts.start.index)
		return mdr::Error(-EINVAL, "log shipper: commit index " + num(opts.commit_index) +
					   " past the log's end " + num(opts.start.index));
	if (opts.followers.empty())
		return mdr::Error(-EINVAL, "log shipper: no followers");
	if (std::set(opts.followers.begin(), opts.followers.end()).size() !=
	    opts.followers.size())
		return mdr::Error(-EINVAL, "log shipper: a follower named twice");
	if (opts.window_bytes < opts.max_batch_bytes)
		return mdr::Error(-EINVAL, "log shipper: a window of " + num(opts.window_bytes) +
					   " bytes holds no batch of " +
					   num(opts.max_batch_bytes));
	if (opts.heartbeat_ms < 1)
		return mdr::Error(-EINVAL, "log shipper: heartbeat interval below 1 ms");
	for (size_t i = 0; i < opts.prior.size(); i++) {
		const HeldRecord &r = opts.prior[i];
		const uint64_t want = opts.start.index - (opts.prior.size() - 1 - i);

		if (r.index != want || r.epoch == 0 ||
		    r.epoch > (i + 1 < opts.prior.size() ? opts.prior[i + 1].epoch
							  : opts.start.epoch) ||
		    (i + 1 == opts.prior.size() && r.epoch != opts.start.epoch) ||
		    r.payload.size() > kMaxRecordPayload)
			return mdr::Error(-EINVAL, "log shipper: prior record " + num(i) +
						   " at " + pos({r.epoch, r.index}) +
						   " is not of the log ending at " + pos(opts.start));
	}
	return std::unique_ptr<LogShipper>(new LogShipper(opts, link, std::move(on_commit)));
}

// The leader's journal holds the log it begins with durably: it adopted it
// and flushed before it ships.
LogShipper::LogShipper(const ShipperOptions &opts, ShipLink &link, OnCommit on_commit)
	: opts_(opts), link_(link), on_commit_(std::move(on_commit)),
	  last_index_(opts.start.index), local_durable_(opts.start.index),
	  commit_(opts.commit_index)
{
	for (const std::string &m : opts.followers)
		followers_.emplace(m, FollowerInfo{});
	voters_.push_back(opts.followers);
	// The prior records, one batch each, in their own epochs: the window
	// begins with them. The first one's prev_epoch is its own: no
	// follower is streamed from before it (connect()).
	for (size_t i = 0; i < opts.prior.size(); i++) {
		const HeldRecord &r = opts.prior[i];
		const RecordRef ref{r.type, r.payload};
		const BatchHeader h{.epoch = r.epoch, .first_index = r.index,
				    .prev_epoch = i ? opts.prior[i - 1].epoch : r.epoch,
				    .commit_index = std::min(commit_, r.index - 1)};

		window_.push_back({r.index, r.index, encode_batch(h, std::span(&ref, 1))});
		window_used_ += window_.back().bytes.size();
	}
	evict();
}

// The epoch of the prior record at index; 0 when it is not one.
uint64_t LogShipper::prior_epoch(uint64_t index) const
{
	const std::vector<HeldRecord> &p = opts_.prior;

	if (p.empty() || index < p.front().index || index > p.back().index)
		return 0;
	return p[index - p.front().index].epoch;
}

const FollowerInfo *LogShipper::follower(const std::string &member) const
{
	auto it = followers_.find(member);

	return it == followers_.end() ? nullptr : &it->second;
}

const LogShipper::Frame *LogShipper::frame_at(uint64_t first_index) const
{
	auto it = std::lower_bound(window_.begin(), window_.end(), first_index,
				   [](const Frame &f, uint64_t i) { return f.first_index < i; });

	if (it == window_.end() || it->first_index != first_index)
		return nullptr;
	return &*it;
}

const LogShipper::Frame *LogShipper::frame_holding(uint64_t index) const
{
	auto it = std::upper_bound(window_.begin(), window_.end(), index,
				   [](uint64_t i, const Frame &f) { return i < f.first_index; });

	if (it == window_.begin() || (--it)->last_index < index)
		return nullptr;
	return &*it;
}

mdr::Status LogShipper::connect(const std::string &member, const LogPosition &last,
				uint64_t durable_index)
{
	auto it = followers_.find(member);

	if (it == followers_.end())
		return mdr::Error(-ENOENT, "log shipper: " + member + " is not a follower");
	if (durable_index > last.index)
		return mdr::Error(-EINVAL, "log shipper: " + member + " says durable " +
					   num(durable_index) + " past its log's end " + pos(last));

	FollowerInfo &f = it->second;

	// A fresh ring: nothing written, nothing to consume. What it said
	// durable before is replaced by what its log holds now (a disk lost
	// since must not count).
	f = FollowerInfo{};
	f.state = FollowerState::streaming;
	// Its log must end where this epoch's can go on from: the log the
	// epoch began with, or a record of this epoch whose next one the
	// window still has (in a batch that begins there, or one that holds
	// it, which the follower takes from there: a crash can cut a batch
	// between two writes of its journal). A log that ends anywhere else
	// either lacks records from before the epoch or holds a tail that
	// diverges: not the shipper's to mend.
	// Or it ends past where the epoch began, in an older epoch: a tail
	// no majority had (the new leader's log holds every committed
	// record), which the follower cuts when this epoch's first batch
	// comes over it, if its record at the start matches (its receiver
	// checks).
	const bool at_start = last == opts_.start;
	const bool in_epoch = last.epoch == opts_.epoch && last.index > opts_.start.index &&
			      last.index <= last_index_;
	const bool old_tail = last.epoch < opts_.epoch && last.index > opts_.start.index;
	// Or behind the start, at a record the prior ones hold, of the
	// same epoch (log matching): streamed from after it.
	const bool behind = last.index < opts_.start.index && last.epoch != 0 &&
			    prior_epoch(last.index) == last.epoch;

	if (!at_start && !in_epoch && !old_tail && !behind) {
		need_checkpoint(f, "its log ends at " + pos(last) + "; epoch " +
				   num(opts_.epoch) + " began at " + pos(opts_.start));
		return {};
	}
	// Durable on its disk, of this epoch's log (or the log it began
	// with, up to its start): counted for commit.
	const LogPosition from = old_tail ? opts_.start : last;

	f.counted = true;
	f.durable_index = std::min(durable_index, from.index);
	if (!can_follow(from.index)) {
		f.next_index = from.index + 1;
		f.shipped_index = from.index;
		need_checkpoint(f, "index " + num(f.next_index) + " is not in the window");
		advance_commit();
		return {};
	}
	stream_after(f, from.index);
	pump(member, f);
	advance_commit();
	return {};
}

bool LogShipper::can_follow(uint64_t index) const
{
	return index >= last_index_ || frame_holding(index + 1);
}

// Only this epoch's batches hold more than one record (the prior ones are
// a record each), so a log that ends inside one ends in this epoch, and
// its receiver takes the batch from its log's end on.
void LogShipper::stream_after(FollowerInfo &f, uint64_t index)
{
	const Frame *fr = frame_holding(index + 1);

	f.shipped_index = index;
	f.next_index = fr ? fr->first_index : index + 1;
}

void LogShipper::disconnect(const std::string &member)
{
	auto it = followers_.find(member);

	if (it == followers_.end())
		return;
	it->second.state = FollowerState::unready;
	// A new connection starts over, with a checkpoint offered then.
	it->second.checkpoint.reset();
}

bool LogShipper::wants_checkpoint() const
{
	for (const auto &[member, f] : followers_)
		if (f.state == FollowerState::needs_checkpoint)
			return true;
	return false;
}

mdr::Status LogShipper::offer_checkpoint(std::shared_ptr<const ShippedCheckpoint> c)
{
	const LogPosition &at = c->last;

	// Its own committed records: a follower that installs it goes on
	// with this epoch's batches after it, and counts as this epoch's.
	if (at.epoch != opts_.epoch || at.index <= opts_.start.index || at.index > commit_)
		return mdr::Error(-EINVAL, "log shipper: a checkpoint at " + pos(at) + "; epoch " +
					   num(opts_.epoch) + " began at " + pos(opts_.start) +
					   ", commit index " + num(commit_));
	if (!can_follow(at.index))
		return mdr::Error(-EINVAL, "log shipper: a checkpoint at " + pos(at) + ": index " +
					   num(at.index + 1) + " is not in the window");
	if (c->bytes.size() < kCheckpointHeaderBytes || c->bytes.size() > UINT32_MAX)
		return mdr::Error(-EINVAL, "log shipper: a checkpoint of " +
					   num(c->bytes.size()) + " bytes");
	for (auto &[member, f] : followers_) {
		if (f.state != FollowerState::needs_checkpoint)
			continue;
		f.state = FollowerState::checkpointing;
		f.checkpoint = c;
		f.checkpoint_sent = 0;
		pump(member, f);
	}
	return {};
}

void LogShipper::need_checkpoint(FollowerInfo &f, std::string reason)
{
	f.state = FollowerState::needs_checkpoint;
	f.reason = std::move(reason);
}

mdr::Status LogShipper::drop(const std::string &member, FollowerInfo &f, mdr::Error e)
{
	f.state = FollowerState::dropped;
	f.reason = e.message;
	stats_.drops++;
	return mdr::Error(e.code, "log shipper: " + member + ": " + e.message);
}

mdr::Status LogShipper::ship(uint64_t first_index, std::span<const RecordRef> records)
{
	if (first_index != last_index_ + 1)
		return mdr::Error(-EINVAL, "log shipper: records at " + num(first_index) +
					   ", the log ends at " + num(last_index_));
	for (const RecordRef &r : records)
		if (r.payload.size() > kMaxRecordPayload)
			return mdr::Error(-EINVAL, "log shipper: a record of " +
						   num(r.payload.size()) + " bytes");

	// Batches of at most max_batch_bytes; a record of kMaxRecordPayload
	// fits in one (check_ring() holds max_batch_bytes to kMinBatchBytes).
	size_t i = 0;
	while (i < records.size()) {
		size_t bytes = kHeaderBytes;
		size_t n = 0;

		while (i + n < records.size() &&
		       bytes + record_bytes(records[i + n].payload.size()) <= opts_.max_batch_bytes)
			bytes += record_bytes(records[i + n++].payload.size());
		assert(n > 0);

		const uint64_t first = last_index_ + 1;
		// Raft's log matching check: the epoch of the record before.
		const uint64_t prev_epoch = first - 1 == opts_.start.index ? opts_.start.epoch
									    : opts_.epoch;
		BatchHeader h{.epoch = opts_.epoch, .first_index = first,
			      .prev_epoch = prev_epoch, .commit_index = commit_};

		window_.push_back({first, first + n - 1, encode_batch(h, records.subspan(i, n))});
		window_used_ += window_.back().bytes.size();
		last_index_ += n;
		stats_.batches++;
		stats_.records += n;
		i += n;
	}
	evict();
	for (auto &[member, f] : followers_)
		pump(member, f);
	return {};
}

void LogShipper::evict()
{
	while (window_used_ > opts_.window_bytes && window_.size() > 1) {
		window_used_ -= window_.front().bytes.size();
		window_.pop_front();
		stats_.evicted++;
	}

	const uint64_t first = window_.empty() ? last_index_ + 1 : window_.front().first_index;

	for (auto &[member, f] : followers_)
		if ((f.state == FollowerState::streaming || f.state == FollowerState::backlogged) &&
		    f.next_index < first)
			need_checkpoint(f, "index " + num(f.next_index) + " left the window");
}

// Writes the batches it lacks while its ring has room. Where a batch does
// not fit before the ring's end, a wrap marker takes the rest and the
// batch goes at 0: both must fit in the room the follower freed.
void LogShipper::pump(const std::string &member, FollowerInfo &f)
{
	if (f.state == FollowerState::checkpointing)
		return pump_checkpoint(member, f);
	while ((f.state == FollowerState::streaming || f.state == FollowerState::backlogged) &&
	       f.next_index <= last_index_) {
		const Frame *fr = frame_at(f.next_index);

		if (!fr) {
			need_checkpoint(f, "index " + num(f.next_index) + " is not in the window");
			return;
		}

		const Put p = put(member, f, fr->bytes);

		if (p == Put::failed)
			return;
		if (p == Put::full) {
			if (f.state != FollowerState::backlogged)
				stats_.backlog_waits++;
			f.state = FollowerState::backlogged;
			return;
		}
		f.shipped_index = fr->last_index;
		f.next_index = fr->last_index + 1;
		f.state = FollowerState::streaming;
		stats_.writes++;
	}
}

// Where an entry does not fit before the ring's end, a wrap marker takes
// the rest and the entry goes at 0: both must fit in the room the
// follower freed.
LogShipper::Put LogShipper::put(const std::string &member, FollowerInfo &f,
				std::span<const std::byte> entry)
{
	const uint64_t at = f.written % opts_.ring_bytes;
	const uint64_t len = align_up(entry.size());
	const bool wrap = at + len > opts_.ring_bytes;
	const uint64_t need = len + (wrap ? opts_.ring_bytes - at : 0);

	if (need > opts_.ring_bytes - (f.written - f.consumed))
		return Put::full;

	uint64_t off = at;
	mdr::Status st;

	if (wrap) {
		st = link_.write(member, static_cast<uint32_t>(at), encode_wrap());
		off = 0;
		stats_.wraps++;
	}
	if (st.ok())
		st = link_.write_notify(member, static_cast<uint32_t>(off), entry);
	if (!st.ok()) {
		(void)drop(member, f, mdr::Error(st.error(), "link: " + st.message()));
		return Put::failed;
	}
	f.written += need;
	return Put::done;
}

// The checkpoint's chunks, in order, while the ring has room; each is
// framed as it goes, so no more than one is copied at a time.
void LogShipper::pump_checkpoint(const std::string &member, FollowerInfo &f)
{
	const ShippedCheckpoint &c = *f.checkpoint;
	const std::span<const std::byte> all = std::as_bytes(std::span(c.bytes));

	while (f.checkpoint_sent < all.size()) {
		const size_t n = std::min<uint64_t>(chunk_room(opts_.max_batch_bytes),
						    all.size() - f.checkpoint_sent);
		const ChunkHeader h{.epoch = opts_.epoch, .last = c.last,
				    .total = static_cast<uint32_t>(all.size()),
				    .offset = f.checkpoint_sent};

		if (put(member, f, encode_chunk(h, all.subspan(f.checkpoint_sent, n))) != Put::done)
			return;
		f.checkpoint_sent += n;
		stats_.chunks++;
	}
}

// A DURABLE while it is shipped a checkpoint: room for more chunks, and
// once every chunk is consumed, its install (see the header).
mdr::Status LogShipper::checkpoint_durable(const std::string &member, FollowerInfo &f,
					   uint64_t durable_index)
{
	const LogPosition at = f.checkpoint->last;

	if (f.checkpoint_sent < f.checkpoint->bytes.size() || f.consumed < f.written) {
		// Still coming: its durable index is that of the log it had.
		if (f.counted && durable_index > f.shipped_index)
			return drop(member, f, mdr::Error(-ERANGE, "durable " + num(durable_index) +
								   " past " + num(f.shipped_index) +
								   " shipped to it"));
		if (f.counted)
			f.durable_index = std::max(f.durable_index, durable_index);
		advance_commit();
		pump(member, f);
		return {};
	}
	// It reports the last chunk consumed only once the checkpoint is
	// durable and loaded: its log ends there.
	if (durable_index != at.index)
		return drop(member, f, mdr::Error(-EPROTO, "durable " + num(durable_index) +
							   " once the checkpoint at " + pos(at) +
							   " was consumed"));
	f.checkpoint.reset();
	f.checkpoint_sent = 0;
	f.counted = true;
	f.durable_index = std::max(f.durable_index, at.index);
	f.state = FollowerState::streaming;
	stats_.checkpoints++;
	stream_after(f, at.index);
	if (!can_follow(at.index))
		need_checkpoint(f, "index " + num(at.index + 1) + " left the window while the "
				   "checkpoint was shipped");
	advance_commit();
	pump(member, f);
	return {};
}

mdr::Status LogShipper::local_durable(uint64_t index)
{
	if (index > last_index_)
		return mdr::Error(-ERANGE, "log shipper: durable " + num(index) +
					   ", the log ends at " + num(last_index_));
	local_durable_ = std::max(local_durable_, index);
	advance_commit();
	return {};
}

mdr::Status LogShipper::on_durable(const std::string &member, const Durable &d)
{
	auto it = followers_.find(member);

	if (it == followers_.end())
		return mdr::Error(-ENOENT, "log shipper: DURABLE from " + member +
					   ", not a follower");

	FollowerInfo &f = it->second;

	if (f.state == FollowerState::unready || f.state == FollowerState::dropped)
		return mdr::Error(-ENOTCONN, "log shipper: DURABLE from " + member +
					     ", not connected");
	if (d.epoch != opts_.epoch)
		return drop(member, f, mdr::Error(-ESTALE, "DURABLE of epoch " + num(d.epoch) +
							   " in epoch " + num(opts_.epoch)));
	if (d.consumed < f.consumed)
		return drop(member, f, mdr::Error(-EINVAL, "consumed " + num(d.consumed) +
							   " goes back from " + num(f.consumed)));
	if (d.consumed > f.written)
		return drop(member, f, mdr::Error(-ERANGE, "consumed " + num(d.consumed) +
							   " past the " + num(f.written) +
							   " bytes written"));
	f.consumed = d.consumed;
	if (f.state == FollowerState::checkpointing)
		return checkpoint_durable(member, f, d.durable_index);
	// Its log is not this epoch's: its durable index counts for nothing.
	if (!f.counted)
		return {};
	if (d.durable_index > f.shipped_index)
		return drop(member, f, mdr::Error(-ERANGE, "durable " + num(d.durable_index) +
							   " past " + num(f.shipped_index) +
							   " shipped to it"));
	// Lower than known: an older DURABLE overtaken by a newer one. What
	// is durable stays so; only the newest counts.
	if (d.durable_index < f.durable_index)
		stats_.stale_durables++;
	f.durable_index = std::max(f.durable_index, d.durable_index);
	advance_commit();
	pump(member, f);
	return {};
}

mdr::Status LogShipper::add_follower(const std::string &member)
{
	if (!followers_.emplace(member, FollowerInfo{}).second)
		return mdr::Error(-EEXIST, "log shipper: " + member + " is a follower already");
	return {};
}

bool LogShipper::voter(const std::string &member) const
{
	for (const auto &set : voters_)
		if (std::find(set.begin(), set.end(), member) != set.end())
			return true;
	return false;
}

mdr::Status LogShipper::remove_follower(const std::string &member)
{
	auto it = followers_.find(member);

	if (it == followers_.end())
		return mdr::Error(-ENOENT, "log shipper: " + member + " is not a follower");
	if (voter(member))
		return mdr::Error(-EBUSY, "log shipper: " + member + " votes");
	followers_.erase(it);
	return {};
}

mdr::Status LogShipper::set_voters(std::vector<std::vector<std::string>> sets)
{
	if (sets.empty() || sets.size() > 2)
		return mdr::Error(-EINVAL, "log shipper: " + num(sets.size()) + " voter sets");
	for (const auto &set : sets) {
		if (std::set(set.begin(), set.end()).size() != set.size())
			return mdr::Error(-EINVAL, "log shipper: a voter named twice");
		for (const std::string &m : set)
			if (!followers_.count(m))
				return mdr::Error(-EINVAL, "log shipper: voter " + m +
							   " is not a follower");
	}
	voters_ = std::move(sets);
	advance_commit();
	return {};
}

uint64_t LogShipper::majority_durable(const std::vector<std::string> &voters) const
{
	std::vector<uint64_t> durable{local_durable_};

	for (const std::string &m : voters) {
		auto it = followers_.find(m);
		durable.push_back(it == followers_.end() ? 0 : it->second.durable_index);
	}
	// The majority-th highest: that many members have it durable.
	const size_t majority = durable.size() / 2 + 1;

	std::nth_element(durable.begin(), durable.begin() + (majority - 1), durable.end(),
			 std::greater<>());
	return durable[majority - 1];
}

void LogShipper::advance_commit()
{
	uint64_t c = UINT64_MAX;

	for (const auto &set : voters_)
		c = std::min(c, majority_durable(set));

	// Only a record of this epoch commits by counting (Raft's rule): one
	// of an earlier epoch on a majority may still be cut by a leader of
	// an epoch between.
	if (c <= commit_ || c <= opts_.start.index)
		return;
	commit_ = c;
	if (on_commit_)
		on_commit_(commit_);
}

void LogShipper::tick(int64_t now_ms)
{
	if (heartbeat_sent_ && now_ms - last_heartbeat_ms_ < opts_.heartbeat_ms)
		return;
	heartbeat_sent_ = true;
	last_heartbeat_ms_ = now_ms;

	const std::vector<std::byte> msg = encode_control(Heartbeat{opts_.epoch, commit_});

	for (auto &[member, f] : followers_) {
		// A commit index means something only on a log that matches
		// this one: a follower whose log connect() found elsewhere
		// would apply its own records up to it.
		if (f.state == FollowerState::unready || f.state == FollowerState::dropped ||
		    !f.counted)
			continue;
		if (mdr::Status st = link_.send(member, msg); !st.ok()) {
			(void)drop(member, f, mdr::Error(st.error(), "link: " + st.message()));
			continue;
		}
		stats_.heartbeats++;
	}
}

} // namespace mdnode::repl
