// SPDX-License-Identifier: GPL-2.0
//
// journal_recovery.cc - see journal_disk.h: the journal's files read back
// at open (checkpoints, batches, torn tails), and the helpers of their
// names and writes.
#include "mdnode/journal_disk.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>
#include <optional>
#include <string_view>

#include "lib/util/crc32c.h"
#include "lib/util/errors.h"

namespace mdnode::journal_disk {

namespace {

std::string hex(uint64_t v, int width)
{
	char buf[24];

	std::snprintf(buf, sizeof(buf), "%0*" PRIx64, width, v);
	return buf;
}

constexpr std::string_view kSegmentPrefix = "journal-", kSegmentSuffix = ".log";
constexpr std::string_view kCheckpointPrefix = "checkpoint-", kCheckpointSuffix = ".ckpt";
constexpr std::string_view kTempSuffix = ".ckpt.tmp";

// The sequence number of "<prefix><16 lowercase hex digits><suffix>".
std::optional<uint64_t> parse_name(std::string_view name, std::string_view prefix,
				   std::string_view suffix)
{
	if (name.size() != prefix.size() + 16 + suffix.size() || !name.starts_with(prefix) ||
	    !name.ends_with(suffix))
		return std::nullopt;

	uint64_t v = 0;
	for (char c : name.substr(prefix.size(), 16)) {
		if (c >= '0' && c <= '9')
			v = v << 4 | static_cast<uint64_t>(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v << 4 | static_cast<uint64_t>(c - 'a' + 10);
		else
			return std::nullopt;
	}
	return v;
}

struct BatchView {
	BatchHeader h;
	const std::byte *payload;
	uint64_t disk_len;	// header, records and padding
};

// Checks the batch at data[off]: empty if it is intact, else why not. The
// version is left to the caller: an intact batch of another version is
// not a torn write.
std::string check_batch(std::span<const std::byte> data, uint64_t off, BatchView &v)
{
	const uint64_t avail = data.size() - off;

	if (avail < sizeof(BatchHeader))
		return "short header";
	std::memcpy(&v.h, data.data() + off, sizeof(v.h));
	if (v.h.magic != kBatchMagic)
		return "bad magic";
	v.disk_len = round_up(sizeof(BatchHeader) + uint64_t{v.h.payload_len});
	if (v.disk_len > avail)
		return "short batch (" + std::to_string(avail) + " of " +
		       std::to_string(v.disk_len) + " bytes)";
	v.payload = data.data() + off + sizeof(BatchHeader);
	if (batch_crc(v.h, v.payload) != v.h.crc)
		return "bad CRC";
	return {};
}

// Runs fn over the records of an intact batch, which must fill it exactly.
// file and off say where the batch is, for messages.
mdr::Status for_each_record(const BatchView &v, const Journal::RecordFn &fn,
			    const std::string &file, uint64_t off)
{
	const std::byte *p = v.payload, *end = v.payload + v.h.payload_len;
	auto malformed = [&](const std::string &what) {
		return corrupt(file + " offset " + std::to_string(off) + ": batch " +
			       std::to_string(v.h.seq) + " passes its CRC, but " + what);
	};

	for (uint32_t i = 0; i < v.h.records; i++) {
		uint16_t type;
		uint32_t len;

		if (end - p < static_cast<ptrdiff_t>(kRecordHeader))
			return malformed("record " + std::to_string(i) + " overruns it");
		std::memcpy(&type, p, 2);
		std::memcpy(&len, p + 2, 4);
		p += kRecordHeader;
		if (len > Journal::kMaxPayload || end - p < static_cast<ptrdiff_t>(len))
			return malformed("record " + std::to_string(i) + " of " +
					 std::to_string(len) + " bytes overruns it");
		mdr::Status st = fn(type, {p, len});
		if (!st.ok())
			return st;
		p += len;
	}
	if (p != end)
		return malformed(std::to_string(end - p) + " bytes follow its last record");
	return {};
}

} // namespace

std::string segment_name(uint64_t seq)
{
	return std::string(kSegmentPrefix) + hex(seq, 16) + std::string(kSegmentSuffix);
}

std::string checkpoint_name(uint64_t seq)
{
	return std::string(kCheckpointPrefix) + hex(seq, 16) + std::string(kCheckpointSuffix);
}

mdr::Error sys_error(int err, const std::string &what)
{
	return mdr::Error(-err, "journal: " + what + ": " + mdr::describe_errno(err));
}

mdr::Error corrupt(const std::string &what)
{
	return mdr::Error(-EBADMSG, "journal: " + what);
}

uint32_t batch_crc(const BatchHeader &h, const std::byte *payload)
{
	BatchHeader zeroed = h;

	zeroed.crc = 0;
	uint32_t c = mdr::crc32c_update(mdr::kCrc32cInit, &zeroed, sizeof(zeroed));
	return mdr::crc32c_finish(mdr::crc32c_update(c, payload, h.payload_len));
}

mdr::Result<Listing> list_dir(const std::string &dir)
{
	Listing l;
	std::error_code ec;

	for (auto it = std::filesystem::directory_iterator(dir, ec);
	     !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
		const std::string name = it->path().filename().string();

		if (auto seq = parse_name(name, kSegmentPrefix, kSegmentSuffix))
			l.segments.push_back(*seq);
		else if (auto seq = parse_name(name, kCheckpointPrefix, kCheckpointSuffix))
			l.checkpoints.push_back(*seq);
		else if (parse_name(name, kCheckpointPrefix, kTempSuffix))
			l.temps.push_back(name);
	}
	if (ec)
		return sys_error(ec.value(), "listing " + dir);
	std::sort(l.segments.begin(), l.segments.end());
	std::sort(l.checkpoints.begin(), l.checkpoints.end());
	return l;
}

mdr::Status load_checkpoint(const Dir &dir, uint64_t seq, const Journal::CheckpointFn &fn)
{
	const std::string name = checkpoint_name(seq);
	std::vector<std::byte> buf;
	auto data = dir.read(name, buf);
	if (!data.ok())
		return mdr::Error(data.error(), data.message());

	auto refuse = [&](const std::string &what) {
		return corrupt(dir.path(name) + ": " + what +
			       "; refusing to open: falling back to an older state would lose "
			       "updates whose journal segments may be deleted");
	};
	const std::span<const std::byte> d = data.value();
	CheckpointHeader h;

	if (d.size() < sizeof(h))
		return refuse("truncated (" + std::to_string(d.size()) + " bytes)");
	std::memcpy(&h, d.data(), sizeof(h));
	if (h.magic != kCheckpointMagic)
		return refuse("bad magic 0x" + hex(h.magic, 8));
	if (h.length != d.size() - sizeof(h))
		return refuse("header says " + std::to_string(h.length) +
			      " bytes of snapshot, the file holds " +
			      std::to_string(d.size() - sizeof(h)));
	const uint32_t stored = h.crc;
	h.crc = 0;
	uint32_t c = mdr::crc32c_update(mdr::kCrc32cInit, &h, sizeof(h));
	c = mdr::crc32c_finish(mdr::crc32c_update(c, d.data() + sizeof(h), h.length));
	if (c != stored)
		return refuse("bad CRC (stored 0x" + hex(stored, 8) + ", computed 0x" +
			      hex(c, 8) + ")");
	if (h.version != kFormatVersion)
		return refuse("format version " + std::to_string(h.version) +
			      ", this build reads " + std::to_string(kFormatVersion));
	if (h.seq != seq)
		return refuse("covers batches up to " + std::to_string(h.seq) + ", not " +
			      std::to_string(seq) + " as its name says");
	return fn(d.subspan(sizeof(h)));
}

mdr::Result<LogEnd> replay(const Dir &dir, std::span<const uint64_t> segs, uint64_t covered,
			   const Journal::RecordFn &on_record)
{
	std::vector<std::byte> buf;
	LogEnd end;
	uint64_t expect = segs[0];

	for (size_t i = 0; i < segs.size(); i++) {
		const std::string name = segment_name(segs[i]);

		if (segs[i] != expect) {
			end.damage = name + " starts at batch " + std::to_string(segs[i]) +
				     " where " + std::to_string(expect) + " was due";
			return end;
		}
		auto data = dir.read(name, buf);
		if (!data.ok())
			return mdr::Error(data.error(), data.message());
		const std::span<const std::byte> d = data.value();
		const std::string file = dir.path(name);

		end = LogEnd{i, 0, expect - 1, {}};
		while (end.offset < d.size()) {
			BatchView v;

			end.damage = check_batch(d, end.offset, v);
			if (end.damage.empty() && v.h.seq != expect)
				end.damage = "batch " + std::to_string(v.h.seq) + " where " +
					     std::to_string(expect) + " was due";
			if (!end.damage.empty()) {
				end.damage = name + " offset " + std::to_string(end.offset) + ": " +
					     end.damage;
				return end;
			}
			if (v.h.version != kFormatVersion)
				return corrupt(file + " offset " + std::to_string(end.offset) +
					       ": batch of format version " +
					       std::to_string(v.h.version) + ", this build reads " +
					       std::to_string(kFormatVersion));
			if (v.h.seq > covered) {
				mdr::Status st = for_each_record(v, on_record, file, end.offset);
				if (!st.ok())
					return mdr::Error(st.error(), st.message());
			}
			end.offset += v.disk_len;
			end.last_seq = expect++;
		}
	}
	return end;
}

mdr::Status check_torn(const Dir &dir, std::span<const uint64_t> segs, const LogEnd &end)
{
	const uint64_t due = end.last_seq + 1;
	std::vector<std::byte> buf;

	for (size_t i = end.seg; i < segs.size(); i++) {
		const std::string name = segment_name(segs[i]);
		auto data = dir.read(name, buf);
		if (!data.ok())
			return mdr::Error(data.error(), data.message());
		const std::span<const std::byte> d = data.value();

		for (uint64_t off = i == end.seg ? end.offset : 0; off < d.size(); off += kBlock) {
			BatchView v;

			if (check_batch(d, off, v).empty() && v.h.durable_seq >= due)
				return corrupt(dir.path(end.damage) + ", but batch " +
					       std::to_string(v.h.seq) + " (" + name + " offset " +
					       std::to_string(off) + ") was written after batch " +
					       std::to_string(due) + " was durable; refusing to "
					       "open: acknowledged updates would be lost");
		}
	}
	return {};
}

Buffer alloc_buffer(size_t size)
{
	void *p = std::aligned_alloc(kBlock, size);

	if (!p)
		throw std::bad_alloc();
	return Buffer(static_cast<std::byte *>(p), &std::free);
}

mdr::Status write_all(int fd, const void *data, size_t len, const std::string &path)
{
	const auto *p = static_cast<const std::byte *>(data);

	while (len > 0) {
		ssize_t n = ::write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sys_error(errno, "writing " + path);
		p += n;
		len -= static_cast<size_t>(n);
	}
	return {};
}

} // namespace mdnode::journal_disk
