// SPDX-License-Identifier: GPL-2.0
//
// repl_format.cc - see repl_format.h.
#include "mdnode/repl_format.h"

#include <cassert>
#include <cerrno>
#include <cstring>
#include <string>

#include "lib/util/crc32c.h"
#include "mdnode/records.h"

namespace mdnode::repl {

namespace {

constexpr size_t kCrcOffset = 48;
constexpr size_t kControlHeader = 16;

uint32_t batch_crc(std::span<const std::byte> header, std::span<const std::byte> payload)
{
	const uint32_t zero = 0;
	uint32_t c = mdr::crc32c_update(mdr::kCrc32cInit, header.data(), kCrcOffset);

	c = mdr::crc32c_update(c, &zero, sizeof(zero));
	c = mdr::crc32c_update(c, header.data() + kCrcOffset + 4, kHeaderBytes - kCrcOffset - 4);
	c = mdr::crc32c_update(c, payload.data(), payload.size());
	return mdr::crc32c_finish(c);
}

mdr::Error bad(int err, const std::string &what)
{
	return mdr::Error(err, "log batch: " + what);
}

std::string num(uint64_t v) { return std::to_string(v); }

// A batch or a chunk encoded, its CRC computed into its header.
std::vector<std::byte> sealed(std::vector<uint8_t> bytes)
{
	std::vector<std::byte> out = to_bytes(std::move(bytes));
	const uint32_t crc = batch_crc(std::span(out).first(kHeaderBytes),
				       std::span(out).subspan(kHeaderBytes));

	Writer c;
	c.le32(crc);
	std::memcpy(out.data() + kCrcOffset, c.take().data(), 4);
	return out;
}

// What a batch and a chunk share, checked before their own fields: the
// header's first 8 bytes (magic, version, reserved), the length at 36
// (header and what follows, within max_batch_bytes and bytes), the
// reserved field at 52, and the CRC at 48 over the whole. The length; an
// error names the entry as what does.
mdr::Result<size_t> check_entry(std::span<const std::byte> bytes, uint32_t magic,
				uint32_t max_batch_bytes, const std::string &what)
{
	auto bad = [&what](int err, const std::string &why) {
		return mdr::Error(err, what + ": " + why);
	};

	if (bytes.size() < kHeaderBytes)
		return bad(-EMSGSIZE, num(bytes.size()) + " bytes, less than a header");

	Reader r(as_u8(bytes.first(kHeaderBytes)));

	if (uint32_t m = r.le32(); m != magic)
		return bad(-EBADMSG, "bad magic " + num(m));
	if (uint16_t v = r.le16(); v != kFormatVersion)
		return bad(-EPROTONOSUPPORT, "format version " + num(v) + ", not " +
					     num(kFormatVersion));
	if (r.le16() != 0)
		return bad(-EINVAL, "reserved field at 6 is not 0");
	(void)r.bytes(28);
	const size_t length = kHeaderBytes + size_t{r.le32()};
	(void)r.bytes(8);
	const uint32_t crc = r.le32();
	if (r.le32() != 0)
		return bad(-EINVAL, "reserved field at 52 is not 0");
	if (length > max_batch_bytes)
		return bad(-EMSGSIZE, num(length) + " bytes; at most " + num(max_batch_bytes));
	if (length > bytes.size())
		return bad(-EMSGSIZE, num(length) + " bytes in " + num(bytes.size()));
	if (uint32_t want = batch_crc(bytes.first(kHeaderBytes),
				      bytes.subspan(kHeaderBytes, length - kHeaderBytes));
	    want != crc)
		return bad(-EBADMSG, "CRC " + num(crc) + ", computed " + num(want));
	return length;
}

} // namespace

int compare_logs(const LogPosition &a, const LogPosition &b)
{
	if (a.epoch != b.epoch)
		return a.epoch < b.epoch ? -1 : 1;
	if (a.index != b.index)
		return a.index < b.index ? -1 : 1;
	return 0;
}

mdr::Status check_ring(uint64_t ring_bytes, uint32_t max_batch_bytes)
{
	if (max_batch_bytes < kMinBatchBytes || max_batch_bytes % kAlign)
		return mdr::Error(-EINVAL, "max_batch_bytes " + num(max_batch_bytes) +
					   ": a multiple of 8 of at least " + num(kMinBatchBytes));
	if (ring_bytes % kAlign || ring_bytes > kMaxRingBytes)
		return mdr::Error(-EINVAL, "ring of " + num(ring_bytes) +
					   " bytes: a multiple of 8 of at most 4 GiB");
	// A batch that does not fit before the end goes at 0 after a marker:
	// a ring of less than this could refuse one forever.
	if (ring_bytes < uint64_t{max_batch_bytes} + kWrapBytes)
		return mdr::Error(-EINVAL, "ring of " + num(ring_bytes) +
					   " bytes: less than a batch of " +
					   num(max_batch_bytes) + " and a wrap marker");
	return {};
}

std::vector<std::byte> encode_batch(const BatchHeader &h, std::span<const RecordRef> records)
{
	size_t payload = 0;

	for (const RecordRef &r : records) {
		assert(r.payload.size() <= kMaxRecordPayload);
		payload += record_bytes(r.payload.size());
	}
	assert(payload <= UINT32_MAX && records.size() <= UINT32_MAX);

	Writer w;
	w.le32(kBatchMagic).le16(kFormatVersion).le16(0).le64(h.epoch).le64(h.first_index)
		.le64(h.prev_epoch).le32(static_cast<uint32_t>(records.size()))
		.le32(static_cast<uint32_t>(payload)).le64(h.commit_index).le32(0).le32(0);
	for (const RecordRef &r : records) {
		w.le16(r.type).le32(static_cast<uint32_t>(r.payload.size()));
		w.padded(as_u8(r.payload), r.payload.size());
	}

	return sealed(w.take());
}

std::vector<std::byte> encode_wrap()
{
	Writer w;

	w.le32(kWrapMagic).le32(0);
	return to_bytes(w.take());
}

mdr::Result<Entry> peek_entry(std::span<const std::byte> bytes, uint32_t max_batch_bytes)
{
	if (bytes.size() < 4)
		return bad(-EMSGSIZE, num(bytes.size()) + " bytes to the ring's end");

	Reader r(as_u8(bytes));
	const uint32_t magic = r.le32();

	if (magic == kWrapMagic) {
		if (bytes.size() < kWrapBytes)
			return bad(-EMSGSIZE, "wrap marker past the ring's end");
		if (r.le32() != 0)
			return bad(-EINVAL, "wrap marker's reserved field is not 0");
		return Entry{true, kWrapBytes};
	}
	if (magic != kBatchMagic && magic != kChunkMagic)
		return bad(-EBADMSG, "bad magic " + num(magic));
	if (bytes.size() < kHeaderBytes)
		return bad(-EMSGSIZE, "header past the ring's end");

	// A chunk's length is where a batch's payload_len is.
	Reader len(as_u8(bytes.subspan(36, 4)));
	const uint64_t length = kHeaderBytes + uint64_t{len.le32()};
	const char *what = magic == kChunkMagic ? "checkpoint chunk" : "batch";

	if (length > max_batch_bytes)
		return bad(-EMSGSIZE, std::string(what) + " of " + num(length) +
				      " bytes; at most " + num(max_batch_bytes));
	if (length > bytes.size())
		return bad(-EMSGSIZE, std::string(what) + " of " + num(length) +
				      " bytes past the ring's end, " + num(bytes.size()) +
				      " bytes away");
	return Entry{false, static_cast<size_t>(length), magic == kChunkMagic};
}

mdr::Result<Batch> parse_batch(std::span<const std::byte> bytes, uint32_t max_batch_bytes)
{
	mdr::Result<size_t> length = check_entry(bytes, kBatchMagic, max_batch_bytes, "log batch");

	if (!length.ok())
		return mdr::Error(length.error(), length.message());

	Reader r(as_u8(bytes.subspan(8, 40)));
	Batch b{};
	BatchHeader &h = b.h;

	h.epoch = r.le64();
	h.first_index = r.le64();
	h.prev_epoch = r.le64();
	h.count = r.le32();
	h.payload_len = r.le32();
	h.commit_index = r.le64();
	b.length = length.value();
	if (h.epoch == 0)
		return bad(-EINVAL, "epoch 0");
	if (h.first_index == 0)
		return bad(-EINVAL, "first_index 0");
	if (h.count == 0)
		return bad(-EINVAL, "no records");
	if (h.first_index > UINT64_MAX - h.count)
		return bad(-EINVAL, "first_index " + num(h.first_index) + " + count " +
				    num(h.count) + " overflows");
	if (h.prev_epoch > h.epoch)
		return bad(-EINVAL, "prev_epoch " + num(h.prev_epoch) + " above epoch " +
				    num(h.epoch));
	if ((h.first_index == 1) != (h.prev_epoch == 0))
		return bad(-EINVAL, "prev_epoch " + num(h.prev_epoch) + " at first_index " +
				    num(h.first_index) +
				    ": 0 exactly when there is no record before");
	if (h.commit_index >= h.first_index)
		return bad(-EINVAL, "commit_index " + num(h.commit_index) +
				    " not below first_index " + num(h.first_index));
	if (uint64_t{h.count} * kRecordHeader > h.payload_len)
		return bad(-EINVAL, "count " + num(h.count) + " in a payload of " +
				    num(h.payload_len) + " bytes");

	const std::span<const std::byte> payload = bytes.subspan(kHeaderBytes, h.payload_len);

	// Only now are the records walked: the CRC vouches for the lengths.
	size_t at = 0;
	b.records.reserve(h.count);
	for (uint32_t i = 0; i < h.count; i++) {
		if (payload.size() - at < kRecordHeader)
			return bad(-EINVAL, "record " + num(i) + " of " + num(h.count) +
					    " past payload_len");

		Reader rec(as_u8(payload.subspan(at, kRecordHeader)));
		const uint16_t type = rec.le16();
		const uint32_t len = rec.le32();

		at += kRecordHeader;
		if (len > kMaxRecordPayload)
			return bad(-EINVAL, "record " + num(i) + " of " + num(len) +
					    " bytes; at most " + num(kMaxRecordPayload));
		if (len > payload.size() - at)
			return bad(-EINVAL, "record " + num(i) + " of " + num(len) +
					    " bytes past payload_len");
		b.records.push_back({type, payload.subspan(at, len)});
		at += len;
	}
	if (at != payload.size())
		return bad(-EINVAL, num(payload.size() - at) + " bytes after the " +
				    num(h.count) + " records");
	return b;
}

// ---- Checkpoint chunks -----------------------------------------------------

std::vector<std::byte> encode_chunk(const ChunkHeader &h, std::span<const std::byte> bytes)
{
	assert(!bytes.empty() && bytes.size() <= UINT32_MAX);

	Writer w;
	w.le32(kChunkMagic).le16(kFormatVersion).le16(0).le64(h.epoch).le64(h.last.epoch)
		.le64(h.last.index).le32(h.total).le32(static_cast<uint32_t>(bytes.size()))
		.le64(h.offset).le32(0).le32(0);
	w.padded(as_u8(bytes), bytes.size());

	return sealed(w.take());
}

mdr::Result<Chunk> parse_chunk(std::span<const std::byte> bytes, uint32_t max_batch_bytes)
{
	auto bad = [](int err, const std::string &what) {
		return mdr::Error(err, "checkpoint chunk: " + what);
	};
	mdr::Result<size_t> length = check_entry(bytes, kChunkMagic, max_batch_bytes,
						 "checkpoint chunk");

	if (!length.ok())
		return mdr::Error(length.error(), length.message());

	Reader r(as_u8(bytes.subspan(8, 40)));
	Chunk c{};
	ChunkHeader &h = c.h;

	h.epoch = r.le64();
	h.last.epoch = r.le64();
	h.last.index = r.le64();
	h.total = r.le32();
	const uint32_t len = r.le32();
	h.offset = r.le64();
	c.length = length.value();
	if (h.epoch == 0)
		return bad(-EINVAL, "epoch 0");
	if (h.last.epoch == 0 || h.last.index == 0 || h.last.epoch > h.epoch)
		return bad(-EINVAL, "the checkpoint's position (epoch " + num(h.last.epoch) +
				    ", index " + num(h.last.index) + ") in epoch " + num(h.epoch));
	if (h.total < kCheckpointHeaderBytes)
		return bad(-EINVAL, "a checkpoint of " + num(h.total) + " bytes, less than its "
				    "header");
	if (len == 0)
		return bad(-EINVAL, "chunk_len 0");
	if (h.offset > h.total || len > h.total - h.offset)
		return bad(-EINVAL, num(len) + " bytes at offset " + num(h.offset) +
				    " past the checkpoint's " + num(h.total));
	c.bytes = bytes.subspan(kHeaderBytes, len);
	return c;
}

// ---- Control messages ------------------------------------------------------

namespace {

struct ControlInfo {
	uint16_t type;
	const char *name;
	uint32_t length;
};

constexpr ControlInfo kControls[] = {
	{kDurable, "DURABLE", 32},
	{kHeartbeat, "HEARTBEAT", 24},
	{kLogStateReq, "LOG_STATE_REQ", 16},
	{kLogState, "LOG_STATE", 48},
};

const ControlInfo *control_info(uint16_t type)
{
	for (const ControlInfo &c : kControls)
		if (c.type == type)
			return &c;
	return nullptr;
}

mdr::Error bad_control(int err, const char *name, const std::string &what)
{
	return mdr::Error(err, std::string("control ") + name + ": " + what);
}

} // namespace

std::vector<std::byte> encode_control(const Control &m)
{
	Writer w;
	auto head = [&w](uint16_t type, uint64_t epoch) {
		w.le16(type).le16(kFormatVersion).le32(control_info(type)->length).le64(epoch);
	};

	if (auto *d = std::get_if<Durable>(&m)) {
		head(kDurable, d->epoch);
		w.le64(d->durable_index).le64(d->consumed);
	} else if (auto *hb = std::get_if<Heartbeat>(&m)) {
		head(kHeartbeat, hb->epoch);
		w.le64(hb->commit_index);
	} else if (auto *q = std::get_if<LogStateReq>(&m)) {
		head(kLogStateReq, q->epoch);
	} else {
		const LogState &s = std::get<LogState>(m);

		head(kLogState, s.epoch);
		w.le64(s.last.epoch).le64(s.last.index).le64(s.durable_index)
			.le64(s.fenced_epoch);
	}
	return to_bytes(w.take());
}

mdr::Result<Control> parse_control(std::span<const std::byte> bytes)
{
	if (bytes.size() < kControlHeader)
		return bad_control(-EMSGSIZE, "?", num(bytes.size()) + " bytes, less than a header");

	Reader r(as_u8(bytes));
	const uint16_t type = r.le16();
	const ControlInfo *info = control_info(type);

	if (!info)
		return bad_control(-EINVAL, "?", "unknown type " + num(type));
	if (uint16_t v = r.le16(); v != kFormatVersion)
		return bad_control(-EPROTONOSUPPORT, info->name, "format version " + num(v));

	const uint32_t length = r.le32();

	if (length != info->length)
		return bad_control(-EMSGSIZE, info->name, "length " + num(length) + ", not " +
							  num(info->length));
	if (bytes.size() != info->length)
		return bad_control(-EMSGSIZE, info->name, num(bytes.size()) + " bytes, not " +
							  num(info->length));

	const uint64_t epoch = r.le64();

	if (epoch == 0)
		return bad_control(-EINVAL, info->name, "epoch 0");
	switch (type) {
	case kDurable: {
		Durable d{epoch, r.le64(), r.le64()};
		return Control{d};
	}
	case kHeartbeat:
		return Control{Heartbeat{epoch, r.le64()}};
	case kLogStateReq:
		return Control{LogStateReq{epoch}};
	default: {
		LogState s{epoch, {}, 0, 0};

		s.last.epoch = r.le64();
		s.last.index = r.le64();
		s.durable_index = r.le64();
		s.fenced_epoch = r.le64();
		if (mdr::Status ok = check_log_state(s); !ok.ok())
			return bad_control(ok.error(), info->name, ok.message());
		return Control{s};
	}
	}
}

mdr::Status check_log_state(const LogState &s)
{
	// It answers only once it fenced every epoch below the request's.
	if (s.fenced_epoch < s.epoch)
		return mdr::Error(-EINVAL, "fenced_epoch " + num(s.fenced_epoch) +
					   " below epoch " + num(s.epoch));
	if (s.last.epoch > s.fenced_epoch)
		return mdr::Error(-EINVAL, "last_epoch " + num(s.last.epoch) +
					   " above fenced_epoch " + num(s.fenced_epoch));
	if ((s.last.epoch == 0) != (s.last.index == 0))
		return mdr::Error(-EINVAL, "last_epoch " + num(s.last.epoch) + " with last_index " +
					   num(s.last.index) + ": 0 only both, for an empty log");
	if (s.durable_index > s.last.index)
		return mdr::Error(-EINVAL, "durable_index " + num(s.durable_index) +
					   " above last_index " + num(s.last.index));
	return {};
}

} // namespace mdnode::repl
