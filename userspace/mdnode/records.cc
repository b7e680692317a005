// SPDX-License-Identifier: GPL-2.0
//
// records.cc - see records.h.
#include "mdnode/records.h"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstdio>

#include <linux/mdroute_wire.h>

namespace mdnode {

namespace {

constexpr uint16_t kRecordVersion = 1;

struct Format {
	uint16_t type;
	const char *name;
	size_t size;	// of the payload
};

constexpr Format kFormats[] = {
	{kVolumeCreate, "VOLUME_CREATE", 96},
	{kVolumeDelete, "VOLUME_DELETE", 16},
	{kVolumeResize, "VOLUME_RESIZE", 32},
	{kExtentAlloc, "EXTENT_ALLOC", 40},
	{kMoveBegin, "MOVE_BEGIN", 56},
	{kMoveDone, "MOVE_DONE", 40},
	{kMoveAbort, "MOVE_ABORT", 40},
	{kHostAdd, "HOST_ADD", 88},
	{kHostRemove, "HOST_REMOVE", 16},
	{kDeviceRecord, "DEVICE_RECORD", 144},
	{kDeviceForget, "DEVICE_FORGET", 16},
	{kHolderAdd, "HOLDER_ADD", 24},
	{kHolderDrop, "HOLDER_DROP", 24},
	{kHoldersComplete, "HOLDERS_COMPLETE", 8},
};

const Format *format(uint16_t type)
{
	for (const Format &f : kFormats)
		if (f.type == type)
			return &f;
	return nullptr;
}

} // namespace

Writer &Writer::name(std::string_view name, size_t n)
{
	assert(name.size() < n);
	bytes_.insert(bytes_.end(), name.begin(), name.end());
	bytes_.resize(bytes_.size() + n - name.size());
	return *this;
}

Writer &Writer::padded(std::span<const uint8_t> bytes, size_t n)
{
	assert(bytes.size() <= n);
	bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
	bytes_.resize(bytes_.size() + n - bytes.size());
	return *this;
}

std::span<const uint8_t> Reader::bytes(size_t n)
{
	assert(left() >= n);
	std::span<const uint8_t> b = in_.subspan(pos_, n);

	pos_ += n;
	return b;
}

std::optional<std::string> Reader::name(size_t n)
{
	std::span<const uint8_t> field = in_.subspan(pos_, n);
	auto nul = std::find(field.begin(), field.end(), 0);

	pos_ += n;
	if (nul == field.end() ||
	    std::any_of(nul, field.end(), [](uint8_t c) { return c != 0; }))
		return std::nullopt;
	return std::string(field.begin(), nul);
}

uint64_t Reader::get(unsigned n)
{
	uint64_t v = 0;

	assert(left() >= n);
	for (unsigned i = 0; i < n; i++)
		v |= uint64_t{in_[pos_ + i]} << (8 * i);
	pos_ += n;
	return v;
}

Change encode_record(const Record &r)
{
	Writer out;

	out.le16(kRecordVersion).le16(0);
	switch (r.type) {
	case kVolumeCreate:
		out.le32(r.tenant).le64(r.volume_id).le64(r.size)
			.le32(r.extent_shift).le32(r.flags).name(r.name);
		break;
	case kVolumeDelete:
		out.le32(0).le64(r.volume_id);
		break;
	case kVolumeResize:
		out.le32(0).le64(r.volume_id).le64(r.size).le64(r.generation);
		break;
	case kExtentAlloc:
	case kMoveDone:
	case kMoveAbort:
		out.le32(r.dev_id).le64(r.volume_id).le64(r.index).le64(r.pstart)
			.le64(r.generation);
		break;
	case kMoveBegin:
		out.le32(r.dev_id).le64(r.volume_id).le64(r.index).le64(r.pstart)
			.le32(r.new_dev).le32(0).le64(r.new_pstart).le64(r.generation);
		break;
	case kHostAdd:
		out.le32(r.tenant).le64(r.host_id).le16(uint16_t(r.secret.size()))
			.le16(r.flags).le32(0).padded(r.secret, MDR_HOST_KEY_MAX);
		break;
	case kHostRemove:
		out.le32(0).le64(r.host_id);
		break;
	case kDeviceRecord:
		out.le32(r.dev_id).le64(r.size).name(r.identity, kDeviceIdentityLen);
		break;
	case kDeviceForget:
		out.le32(r.dev_id).le64(0);
		break;
	case kHolderAdd:
	case kHolderDrop:
		out.le32(0).le64(r.volume_id).le64(r.host_id);
		break;
	case kHoldersComplete:
		out.le32(0);
		break;
	}
	Change c{r.type, out.take()};
	assert(c.payload.size() == format(r.type)->size);
	return c;
}

mdr::Result<Record> decode_record(uint16_t type, std::span<const uint8_t> payload)
{
	const Format *f = format(type);

	if (!f)
		return mdr::Error(-EINVAL, "record of unknown type " + std::to_string(type));

	const std::string what = std::string("record ") + f->name;
	Reader in(payload);
	Record r{.type = type};

	if (payload.size() != f->size)
		return mdr::Error(-EINVAL, what + ": " + std::to_string(payload.size()) +
				  " bytes, not " + std::to_string(f->size));
	if (const uint16_t version = in.le16(); version != kRecordVersion)
		return mdr::Error(-EINVAL, what + ": unknown version " + std::to_string(version));

	bool reserved = in.le16() != 0;

	switch (type) {
	case kVolumeCreate: {
		r.tenant = in.le32();
		r.volume_id = in.le64();
		r.size = in.le64();
		r.extent_shift = in.le32();
		const uint32_t flags = in.le32();
		if (flags & ~uint32_t{kCreateHolders})
			return mdr::Error(-EINVAL, what + ": unknown flags");
		r.flags = uint16_t(flags);
		std::optional<std::string> name = in.name();
		if (!name)
			return mdr::Error(-EINVAL, what + ": the name is not NUL-padded");
		r.name = std::move(*name);
		break;
	}
	case kVolumeDelete:
		reserved |= in.le32() != 0;
		r.volume_id = in.le64();
		break;
	case kVolumeResize:
		reserved |= in.le32() != 0;
		r.volume_id = in.le64();
		r.size = in.le64();
		r.generation = in.le64();
		break;
	case kExtentAlloc:
	case kMoveDone:
	case kMoveAbort:
		r.dev_id = in.le32();
		r.volume_id = in.le64();
		r.index = in.le64();
		r.pstart = in.le64();
		r.generation = in.le64();
		break;
	case kMoveBegin:
		r.dev_id = in.le32();
		r.volume_id = in.le64();
		r.index = in.le64();
		r.pstart = in.le64();
		r.new_dev = in.le32();
		reserved |= in.le32() != 0;
		r.new_pstart = in.le64();
		r.generation = in.le64();
		break;
	case kHostAdd: {
		r.tenant = in.le32();
		r.host_id = in.le64();
		const uint16_t key_len = in.le16();
		r.flags = in.le16();
		reserved |= in.le32() != 0;
		std::span<const uint8_t> key = in.bytes(MDR_HOST_KEY_MAX);
		if (key_len < MDR_HOST_KEY_MIN || key_len > MDR_HOST_KEY_MAX ||
		    std::any_of(key.begin() + key_len, key.end(), [](uint8_t c) { return c; }))
			return mdr::Error(-EINVAL, what + ": key_len " + std::to_string(key_len) +
					  " out of range, or the key not zero-padded");
		if (r.flags & ~kHostAddReplace)
			return mdr::Error(-EINVAL, what + ": unknown flags");
		r.secret.assign(key.begin(), key.begin() + key_len);
		break;
	}
	case kHostRemove:
		reserved |= in.le32() != 0;
		r.host_id = in.le64();
		break;
	case kDeviceRecord: {
		r.dev_id = in.le32();
		r.size = in.le64();
		std::optional<std::string> identity = in.name(kDeviceIdentityLen);
		if (!identity)
			return mdr::Error(-EINVAL, what + ": the identity is not NUL-padded");
		r.identity = std::move(*identity);
		break;
	}
	case kDeviceForget:
		r.dev_id = in.le32();
		reserved |= in.le64() != 0;
		break;
	case kHolderAdd:
	case kHolderDrop:
		reserved |= in.le32() != 0;
		r.volume_id = in.le64();
		r.host_id = in.le64();
		break;
	case kHoldersComplete:
		reserved |= in.le32() != 0;
		break;
	}
	if (reserved)
		return mdr::Error(-EINVAL, what + ": a reserved field is not zero");
	return r;
}

std::string describe_record(const Record &r)
{
	const std::string what = std::string("record ") + format(r.type)->name;
	char host[24];

	std::snprintf(host, sizeof(host), "%016llx", (unsigned long long)r.host_id);
	if (r.of_host())
		return what + " (host " + host + ")";
	if (r.of_device())
		return what + " (device " + std::to_string(r.dev_id) + ")";
	if (r.type == kHoldersComplete)
		return what;
	if (r.of_holders())
		return what + " (volume " + std::to_string(r.volume_id) + ", host " + host + ")";

	std::string s = what + " (volume " + std::to_string(r.volume_id);

	if (!r.whole_volume())
		s += ", extent " + std::to_string(r.index);
	return s + ")";
}

} // namespace mdnode
