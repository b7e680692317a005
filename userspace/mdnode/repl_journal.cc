// SPDX-License-Identifier: GPL-2.0
//
// repl_journal.cc - see repl_journal.h.
#include "mdnode/repl_journal.h"

#include <algorithm>
#include <cerrno>
#include <string>

#include "mdnode/records.h"

namespace mdnode::repl {

namespace {

std::string num(uint64_t v) { return std::to_string(v); }

} // namespace

std::vector<std::byte> encode_mark(const LogMark &m)
{
	Writer w;

	w.le64(m.epoch).le64(m.first_index).le32(m.count).le32(0).le64(m.commit_index);
	return to_bytes(w.take());
}

mdr::Result<LogMark> decode_mark(std::span<const std::byte> payload)
{
	auto bad = [](const std::string &what) {
		return mdr::Error(-EINVAL, "log mark: " + what);
	};

	if (payload.size() != kLogMarkBytes)
		return bad(num(payload.size()) + " bytes, not " + num(kLogMarkBytes));

	Reader r(as_u8(payload));
	LogMark m;

	m.epoch = r.le64();
	m.first_index = r.le64();
	m.count = r.le32();
	const uint32_t reserved = r.le32();
	m.commit_index = r.le64();
	if (m.epoch == 0)
		return bad("epoch 0");
	if (m.first_index == 0)
		return bad("first index 0");
	if (m.count == 0)
		return bad("count 0");
	if (reserved)
		return bad("reserved field at 20 is not 0");
	if (m.commit_index >= m.first_index)
		return bad("commit index " + num(m.commit_index) + " not below its first index " +
			   num(m.first_index));
	return m;
}

std::vector<std::byte> encode_epoch_record(const EpochRecord &r)
{
	Writer w;

	w.le64(r.epoch);
	w.le32(r.bounds.held_ms);
	w.le32(r.bounds.io_hold_ms);
	return to_bytes(w.take());
}

mdr::Result<EpochRecord> decode_epoch_record(std::span<const std::byte> payload)
{
	if (payload.size() != kEpochRecordBytes)
		return mdr::Error(-EINVAL, "EPOCH record: " + num(payload.size()) + " bytes, not " +
					   num(kEpochRecordBytes));

	Reader rd(as_u8(payload));
	EpochRecord r;

	r.epoch = rd.le64();
	r.bounds.held_ms = rd.le32();
	r.bounds.io_hold_ms = rd.le32();
	if (r.epoch == 0)
		return mdr::Error(-EINVAL, "EPOCH record: epoch 0");
	if (mdr::Status st = check_lease_bounds(r.bounds); !st.ok())
		return mdr::Error(-EINVAL, "EPOCH record: " + st.message());
	return r;
}

namespace {

constexpr uint32_t kCheckpointMagic = 0x4752444d;	// "MDRG" as LE bytes
constexpr uint16_t kCheckpointVersion = 1;
constexpr uint16_t kCheckpointBounds = 1;		// flags: bit 0
constexpr size_t kRecentRecordHeader = 24;

} // namespace

std::vector<uint8_t> encode_checkpoint_header(const LogCheckpoint &c)
{
	Writer w;
	const LeaseBounds b = c.epoch_bounds.value_or(LeaseBounds{});
	uint64_t recent_bytes = 0;

	for (const HeldRecord &r : c.recent)
		recent_bytes += kRecentRecordHeader + r.payload.size();
	w.le32(kCheckpointMagic).le16(kCheckpointVersion)
		.le16(c.epoch_bounds ? kCheckpointBounds : 0)
		.le64(c.last.epoch).le64(c.last.index)
		.le32(b.held_ms).le32(b.io_hold_ms).le64(recent_bytes);
	for (const HeldRecord &r : c.recent) {
		w.le64(r.index).le64(r.epoch).le16(r.type).le16(0).le32(uint32_t(r.payload.size()));
		w.padded(as_u8(r.payload), r.payload.size());
	}
	return w.take();
}

namespace {

// The recent records of a checkpoint: in order, ending at last.
mdr::Result<std::deque<HeldRecord>> decode_recent(std::span<const uint8_t> in,
						  LogPosition last)
{
	std::deque<HeldRecord> out;

	while (!in.empty()) {
		if (in.size() < kRecentRecordHeader)
			return mdr::Error(-EINVAL, "a recent record overruns its section");

		Reader r(in.first(kRecentRecordHeader));
		HeldRecord h;

		h.index = r.le64();
		h.epoch = r.le64();
		h.type = r.le16();
		const uint16_t reserved = r.le16();
		const uint32_t len = r.le32();

		if (reserved)
			return mdr::Error(-EINVAL, "recent record " + num(h.index) +
						   ": reserved field not 0");
		if (len > in.size() - kRecentRecordHeader)
			return mdr::Error(-EINVAL, "recent record " + num(h.index) +
						   " overruns its section");
		if (!out.empty() && (h.index != out.back().index + 1 || h.epoch < out.back().epoch))
			return mdr::Error(-EINVAL, "recent record " + num(h.index) + " of epoch " +
						   num(h.epoch) + " after " +
						   num(out.back().index) + " of epoch " +
						   num(out.back().epoch));
		if (h.index == 0 || h.epoch == 0 || h.epoch > last.epoch || is_local(h.type) ||
		    h.type == kLogMark)
			return mdr::Error(-EINVAL, "recent record " + num(h.index) + " of epoch " +
						   num(h.epoch) + ", type " + num(h.type));
		const auto p = std::as_bytes(in.subspan(kRecentRecordHeader, len));
		h.payload.assign(p.begin(), p.end());
		out.push_back(std::move(h));
		in = in.subspan(kRecentRecordHeader + len);
	}
	if (!out.empty() && (out.back().index != last.index || out.back().epoch != last.epoch))
		return mdr::Error(-EINVAL, "recent records end at (" + num(out.back().epoch) + ", " +
					   num(out.back().index) + "), not at the log's last (" +
					   num(last.epoch) + ", " + num(last.index) + ")");
	return out;
}

} // namespace

mdr::Result<ReplicaCheckpoint> decode_checkpoint(std::span<const uint8_t> bytes)
{
	auto bad = [](const std::string &what) {
		return mdr::Error(-EINVAL, "the replica's checkpoint: " + what);
	};

	if (bytes.size() < kCheckpointHeaderBytes)
		return bad(num(bytes.size()) + " bytes, shorter than its header");

	Reader r(bytes.first(kCheckpointHeaderBytes));
	ReplicaCheckpoint c;

	if (r.le32() != kCheckpointMagic)
		return bad("not a replica's checkpoint");
	if (const uint16_t v = r.le16(); v != kCheckpointVersion)
		return bad("version " + num(v) + ", not " + num(kCheckpointVersion));
	const uint16_t flags = r.le16();
	if (flags & ~kCheckpointBounds)
		return bad("unknown flags " + num(flags));
	c.log.last.epoch = r.le64();
	c.log.last.index = r.le64();
	LeaseBounds b;
	b.held_ms = r.le32();
	b.io_hold_ms = r.le32();
	const uint64_t recent_bytes = r.le64();
	if ((c.log.last.index == 0) != (c.log.last.epoch == 0))
		return bad("index " + num(c.log.last.index) + " of epoch " +
			   num(c.log.last.epoch));
	if (flags & kCheckpointBounds) {
		if (mdr::Status st = check_lease_bounds(b); !st.ok())
			return bad(st.message());
		c.log.epoch_bounds = b;
	} else if (b.held_ms || b.io_hold_ms) {
		return bad("bounds without their flag");
	}
	if (recent_bytes > bytes.size() - kCheckpointHeaderBytes)
		return bad(num(recent_bytes) + " bytes of recent records past its end");
	auto recent = decode_recent(bytes.subspan(kCheckpointHeaderBytes, recent_bytes),
				    c.log.last);
	if (!recent.ok())
		return bad(recent.message());
	c.log.recent = std::move(recent).value();
	c.snapshot = bytes.subspan(kCheckpointHeaderBytes + recent_bytes);
	return c;
}

bool is_replica_checkpoint(std::span<const uint8_t> bytes)
{
	return bytes.size() >= 4 && Reader(bytes.first(4)).le32() == kCheckpointMagic;
}

bool changes_store(uint16_t type)
{
	return type != kEpochRecord;
}

bool is_local(uint16_t type)
{
	return type == kDeviceRecord || type == kDeviceForget;
}

void RecentLog::cut(uint64_t from_index)
{
	while (!records_.empty() && records_.back().index >= from_index) {
		bytes_ -= records_.back().payload.size();
		records_.pop_back();
	}
}

void RecentLog::push(HeldRecord r)
{
	bytes_ += r.payload.size();
	records_.push_back(std::move(r));
	while (bytes_ > kRecentBytes && records_.size() > 1) {
		bytes_ -= records_.front().payload.size();
		records_.pop_front();
	}
}

void RecentLog::assign(std::deque<HeldRecord> records)
{
	records_.clear();
	bytes_ = 0;
	for (HeldRecord &r : records)
		push(std::move(r));
}

LogRecovery::LogRecovery(Apply apply, Local local)
	: apply_(std::move(apply)), local_(std::move(local))
{
}

mdr::Status LogRecovery::checkpoint(std::span<const uint8_t> bytes, const LoadSnapshot &load)
{
	auto rc = decode_checkpoint(bytes);

	if (!rc.ok())
		return mdr::Error(rc.error(), rc.message());
	if (mdr::Status st = load(rc.value().snapshot); !st.ok())
		return st;

	const LogCheckpoint &c = rc.value().log;

	log_.last = c.last;
	log_.applied = c.last.index;
	log_.applied_epoch = c.last.epoch;
	log_.epoch_bounds = c.epoch_bounds;
	commit_ = c.last.index;
	recent_.assign(c.recent);
	return {};
}

// The epoch of a record the log holds (index <= last.index), 0 for index 0.
uint64_t LogRecovery::epoch_at(uint64_t index) const
{
	if (index == 0)
		return 0;
	if (index <= log_.applied)
		return index == log_.applied ? log_.applied_epoch : 0;
	return log_.held[index - log_.applied - 1].epoch;
}

mdr::Status LogRecovery::apply_committed()
{
	size_t n = 0;

	while (n < log_.held.size() && log_.held[n].index <= commit_) {
		const HeldRecord &r = log_.held[n];

		if (mdr::Status st = apply_(r.index, r.type, r.payload); !st.ok())
			return st;
		log_.applied = r.index;
		log_.applied_epoch = r.epoch;
		n++;
	}
	log_.held.erase(log_.held.begin(), log_.held.begin() + n);
	return {};
}

mdr::Status LogRecovery::record(uint16_t type, std::span<const std::byte> payload)
{
	auto bad = [this](const std::string &what) {
		return mdr::Error(-EINVAL, "the group's log, journal record " + num(seen_) + ": " +
					   what);
	};

	seen_++;
	if (type == kLogMark) {
		// A mark before the previous one's records all came: they
		// were lost with the journal's tail at a crash, and the
		// process after it went on (repl_journal.h).
		auto m = decode_mark(payload);

		if (!m.ok())
			return bad(m.message());

		const LogMark &mk = m.value();
		const uint64_t prev = mk.first_index - 1;

		if (prev > log_.last.index)
			return bad("a mark at index " + num(mk.first_index) + " after a gap: the log "
				   "ends at " + num(log_.last.index));
		if (prev < log_.applied || prev < commit_)
			return bad("a mark at index " + num(mk.first_index) + " cuts records up to " +
				   num(std::max(log_.applied, commit_)) + ", known committed");
		if (mk.epoch < epoch_at(prev))
			return bad("a mark of epoch " + num(mk.epoch) + " after a record of epoch " +
				   num(epoch_at(prev)));
		if (prev < log_.last.index) {
			const size_t keep = prev - log_.applied;

			log_.cut += log_.held.size() - keep;
			log_.held.resize(keep);
			recent_.cut(mk.first_index);
			log_.last = {epoch_at(prev), prev};
		}
		commit_ = std::max(commit_, mk.commit_index);
		mark_epoch_ = mk.epoch;
		pending_ = mk.count;
		return apply_committed();
	}
	if (!pending_ || is_local(type)) {
		log_.local_records++;
		return local_(type, payload);
	}
	if (type == kEpochRecord) {
		auto e = decode_epoch_record(payload);

		if (!e.ok())
			return bad(e.message());
		if (e.value().epoch != mark_epoch_)
			return bad("an EPOCH record of epoch " + num(e.value().epoch) +
				   " under a mark of " + num(mark_epoch_));
		log_.epoch_bounds = e.value().bounds;
	}
	pending_--;
	log_.log_records++;
	log_.last = {mark_epoch_, log_.last.index + 1};
	log_.held.push_back({log_.last.index, mark_epoch_, type,
			     std::vector<std::byte>(payload.begin(), payload.end())});
	recent_.push(log_.held.back());
	return apply_committed();
}

RecoveredLog LogRecovery::finish()
{
	pending_ = 0;
	log_.recent = recent_.take();
	return std::move(log_);
}

} // namespace mdnode::repl
