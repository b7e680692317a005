// SPDX-License-Identifier: GPL-2.0
//
// records.h - the journal's records of the store's changes: their types,
// their on-disk layout, and the one encoder and decoder of each. Pure
// logic: bytes in, bytes out. The store (store.h) makes and applies them;
// the snapshot (snapshot.cc) reads and writes its own layout with the same
// little-endian Writer and Reader.
//
// Records (Change::type, then the payload; all little-endian). Every payload
// starts with __le16 version (1) and __le16 reserved; replay() refuses a
// record of an unknown type or version, of another length, or with a
// reserved field that is not zero.
//
//   1 VOLUME_CREATE, 96 bytes
//	 0 __le16 version, reserved   4 __le32 tenant   8 __le64 volume_id
//	16 __le64 size (bytes)       24 __le32 extent_shift
//	28 __le32 flags (1 HOLDERS: every holder is journaled from the
//	   create on; 0 in a record of a node from before holders)
//	32 char name[64], NUL-padded
//   2 VOLUME_DELETE, 16 bytes
//	 0 __le16 version, reserved   4 __le32 reserved   8 __le64 volume_id
//   3 VOLUME_RESIZE, 32 bytes
//	 0 __le16 version, reserved   4 __le32 reserved   8 __le64 volume_id
//	16 __le64 size (bytes)       24 __le64 generation (the volume's, new)
//   4 EXTENT_ALLOC, 40 bytes
//	 0 __le16 version, reserved   4 __le32 dev_id     8 __le64 volume_id
//	16 __le64 index              24 __le64 pstart (512-byte sectors)
//	32 __le64 generation (the entry's, new)
//   5 MOVE_BEGIN, 56 bytes: the extent is frozen at its old place, and the
//     new place is taken
//	 0 __le16 version, reserved   4 __le32 old_dev    8 __le64 volume_id
//	16 __le64 index              24 __le64 old_pstart
//	32 __le32 new_dev, 36 reserved                    40 __le64 new_pstart
//	48 __le64 generation (the entry's, frozen: g1)
//   6 MOVE_DONE, 40 bytes: the extent is mapped at its new place, the old
//     one is free
//	 0 __le16 version, reserved   4 __le32 new_dev    8 __le64 volume_id
//	16 __le64 index              24 __le64 new_pstart
//	32 __le64 generation (g1 + 1)
//   7 MOVE_ABORT, 40 bytes: the extent is mapped at its old place again,
//     the new one is free
//   8 HOST_ADD, 88 bytes: a host and its key join the registry (or, with
//     the flag REPLACE, a known host of that tenant gets a new key)
//	 0 __le16 version, reserved   4 __le32 tenant     8 __le64 host_id
//	16 __le16 key_len            18 __le16 flags (1: REPLACE)
//	20 __le32 reserved           24 __u8 key[64], zero-padded
//   9 HOST_REMOVE, 16 bytes
//	 0 __le16 version, reserved   4 __le32 reserved   8 __le64 host_id
//  10 DEVICE_RECORD, 144 bytes: the disk configured as a device id, as
//     mdnode found it (the start-up check holds every later start to it)
//	 0 __le16 version, reserved   4 __le32 dev_id     8 __le64 size (bytes)
//	16 char identity[128], NUL-padded: the WWID, else the serial
//  11 DEVICE_FORGET, 16 bytes: the device id has no recorded disk
//	 0 __le16 version, reserved   4 __le32 dev_id     8 __le64 reserved
//  (12 LOG_MARK and 13 EPOCH are a replica's: repl_journal.h)
//  14 HOLDER_ADD, 24 bytes: the host may hold a lease on the volume from
//     now on (journaled before an OPEN is granted: store.h, "Holders")
//	 0 __le16 version, reserved   4 __le32 reserved   8 __le64 volume_id
//	16 __le64 host_id
//  15 HOLDER_DROP, 24 bytes: the host holds no lease on the volume (it
//     closed it, or its lease lapsed); the same layout
//  16 HOLDERS_COMPLETE, 8 bytes: every volume's holders are journaled
//     from now on (volumes created by a node from before holders)
//	 0 __le16 version, reserved   4 __le32 reserved
// The host records hold keys: the data directory is root's alone
// (Documentation/security.md).
#ifndef MDNODE_RECORDS_H
#define MDNODE_RECORDS_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <linux/mdroute_wire.h>

#include "lib/util/result.h"

namespace mdnode {

enum RecordType : uint16_t {
	kVolumeCreate = 1,
	kVolumeDelete = 2,
	kVolumeResize = 3,
	kExtentAlloc = 4,
	kMoveBegin = 5,
	kMoveDone = 6,
	kMoveAbort = 7,
	kHostAdd = 8,
	kHostRemove = 9,
	kDeviceRecord = 10,
	kDeviceForget = 11,
	// A replica's journal only (repl_journal.h): never given to the
	// store. LOG_MARK is its own, EPOCH a record of the group's log.
	kLogMark = 12,
	kEpochRecord = 13,
	kHolderAdd = 14,
	kHolderDrop = 15,
	kHoldersComplete = 16,
};

// A device's identity in DEVICE_RECORD and the snapshot: NUL-padded, so
// of at most kDeviceIdentityLen - 1 printable characters.
inline constexpr size_t kDeviceIdentityLen = 128;

// HOST_ADD's flags.
inline constexpr uint16_t kHostAddReplace = 1;
// VOLUME_CREATE's flags.
inline constexpr uint16_t kCreateHolders = 1;

// A record to journal, from Store::prepare_*(). Once the journal has it
// durably, pass it to Store::commit(); if the journal failed, to
// Store::abort(). One of the two, once.
struct Change {
	uint16_t type;			// RecordType
	std::vector<uint8_t> payload;	// see the formats above
};

// Changes in flight, moves and reservations are keyed by (volume id,
// extent index); changes of a whole volume use kWholeVolume, beyond every
// index; changes of the host registry (0, host id): no volume has id 0.
using ExtentKey = std::pair<uint64_t, uint64_t>;
inline constexpr uint64_t kWholeVolume = UINT64_MAX;
// Places (pstart) are in 512-byte sectors; the copier takes bytes.
inline constexpr unsigned kSectorShift = 9;

// A record, decoded.
struct Record {
	uint16_t type;
	uint64_t volume_id = 0;
	uint64_t size = 0;		// CREATE, RESIZE: bytes
	uint32_t extent_shift = 0;	// CREATE
	uint32_t tenant = 0;		// CREATE
	std::string name{};		// CREATE
	uint64_t generation = 0;	// RESIZE: the volume's; else the entry's
	uint64_t index = 0;		// ALLOC, MOVE_*
	// ALLOC: the place; MOVE_BEGIN, MOVE_ABORT: the old place; MOVE_DONE:
	// the new place; DEVICE_*: the device
	uint32_t dev_id = 0;
	uint64_t pstart = 0;		// 512-byte sectors
	uint32_t new_dev = 0;		// MOVE_BEGIN
	uint64_t new_pstart = 0;	// MOVE_BEGIN
	uint64_t host_id = 0;		// HOST_*, HOLDER_ADD, HOLDER_DROP
	uint16_t flags = 0;		// HOST_ADD: kHostAdd*; CREATE: kCreate*
	std::vector<uint8_t> secret{};	// HOST_ADD: the host's key
	std::string identity{};		// DEVICE_RECORD (size: its bytes)

	bool whole_volume() const
	{
		return type == kVolumeCreate || type == kVolumeDelete ||
		       type == kVolumeResize;
	}
	bool of_host() const { return type == kHostAdd || type == kHostRemove; }
	bool of_device() const { return type == kDeviceRecord || type == kDeviceForget; }
	// Reserve nothing and exclude no other change (store.h, "Holders").
	bool of_holders() const
	{
		return type == kHolderAdd || type == kHolderDrop || type == kHoldersComplete;
	}
	ExtentKey key() const
	{
		if (of_host())
			return {0, host_id};
		if (of_device())
			return {kWholeVolume, dev_id};
		return {volume_id, whole_volume() ? kWholeVolume : index};
	}
};

// The record's bytes, in the layout of its type.
Change encode_record(const Record &r);
// -EINVAL naming the record for an unknown type or version, another
// length, a reserved field that is not zero or a name not NUL-padded.
mdr::Result<Record> decode_record(uint16_t type, std::span<const uint8_t> payload);
// "record EXTENT_ALLOC (volume 3, extent 7)", for errors.
std::string describe_record(const Record &r);

// The same bytes as uint8_t, which Reader and Writer take, and back.
inline std::span<const uint8_t> as_u8(std::span<const std::byte> b)
{
	return {reinterpret_cast<const uint8_t *>(b.data()), b.size()};
}

inline std::vector<std::byte> to_bytes(const std::vector<uint8_t> &v)
{
	const auto b = std::as_bytes(std::span(v));

	return {b.begin(), b.end()};
}

// Little-endian fields, appended.
class Writer {
public:
	Writer &le16(uint16_t v) { return put(v, 2); }
	Writer &le32(uint32_t v) { return put(v, 4); }
	Writer &le64(uint64_t v) { return put(v, 8); }
	// NUL-padded to n bytes (name.size() < n).
	Writer &name(std::string_view name, size_t n = MDR_WIRE_NAME_LEN);
	// The bytes, zero-padded to n (bytes.size() <= n).
	Writer &padded(std::span<const uint8_t> bytes, size_t n);

	std::vector<uint8_t> take() { return std::move(bytes_); }

private:
	Writer &put(uint64_t v, unsigned n)
	{
		for (unsigned i = 0; i < n; i++)
			bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
		return *this;
	}

	std::vector<uint8_t> bytes_;
};

// Reads little-endian fields the caller has checked are there (left()).
class Reader {
public:
	explicit Reader(std::span<const uint8_t> in) : in_(in) {}

	uint16_t le16() { return static_cast<uint16_t>(get(2)); }
	uint32_t le32() { return static_cast<uint32_t>(get(4)); }
	uint64_t le64() { return get(8); }
	// A NUL-padded name field of n bytes; none when it holds no NUL, or
	// bytes other than NUL after the first one.
	std::optional<std::string> name(size_t n = MDR_WIRE_NAME_LEN);
	// n bytes.
	std::span<const uint8_t> bytes(size_t n);

	size_t left() const { return in_.size() - pos_; }

private:
	uint64_t get(unsigned n);

	std::span<const uint8_t> in_;
	size_t pos_ = 0;
};

} // namespace mdnode

#endif // MDNODE_RECORDS_H
