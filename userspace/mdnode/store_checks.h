// SPDX-License-Identifier: GPL-2.0
//
// store_checks.h - what the store's files share: checks of a volume's
// settings, the table's size and an error with context. Only for
// store.cc, store_apply.cc and snapshot.cc.
#ifndef MDNODE_STORE_CHECKS_H
#define MDNODE_STORE_CHECKS_H

#include <algorithm>
#include <cerrno>
#include <string>
#include <string_view>

#include "lib/util/result.h"
#include "lib/wire/wire.h"
#include "mdnode/store.h"

namespace mdnode::store_checks {

template <typename T>
inline mdr::Error fail(const mdr::Result<T> &r, const std::string &context)
{
	return mdr::Error(r.error(), context + ": " + r.message());
}

inline mdr::Status check_size(uint64_t size)
{
	if (size == 0 || size % 4096)
		return mdr::Error(-EINVAL, "size " + std::to_string(size) +
				  ": use a multiple of 4096 above 0");
	return {};
}

inline mdr::Status check_volume(std::string_view name, uint64_t size, uint32_t shift)
{
	if (!mdr::wire::valid_volume_name(name))
		return mdr::Error(-EINVAL, "volume name '" + std::string(name) +
				  "': use 1 to 63 of A-Z a-z 0-9 . _ -");
	if (shift < MDR_WIRE_EXTENT_SHIFT_MIN || shift > MDR_WIRE_EXTENT_SHIFT_MAX)
		return mdr::Error(-EINVAL, "extent shift " + std::to_string(shift) +
				  ": use 16 (64 KiB) to 30 (1 GiB)");
	return check_size(size);
}

// A record's generation is one above what it follows (whose: "the
// volume's", "the entry's", ...).
inline mdr::Status follows(uint64_t generation, uint64_t before, const char *whose)
{
	if (generation != before + 1)
		return mdr::Error(-EINVAL, "generation " + std::to_string(generation) +
				  " does not follow " + whose + " " + std::to_string(before));
	return {};
}

// A disk recorded for a device id (DEVICE_RECORD, a snapshot's device).
inline mdr::Status check_recorded_device(uint32_t id, uint64_t size,
					 std::string_view identity)
{
	if (id == 0 || size == 0)
		return mdr::Error(-EINVAL, "device id and size must not be 0");
	if (identity.empty() || identity.size() >= kDeviceIdentityLen ||
	    std::any_of(identity.begin(), identity.end(),
			[](char c) { return c < 0x20 || c >= 0x7f; }))
		return mdr::Error(-EINVAL, "identity '" + std::string(identity) +
				  "': use 1 to " + std::to_string(kDeviceIdentityLen - 1) +
				  " printable ASCII characters");
	return {};
}

inline uint64_t nr_extents(uint64_t size, unsigned shift)
{
	return (size >> shift) + ((size & ((uint64_t{1} << shift) - 1)) != 0);
}

inline mdr::wire::Entry entry_at(const Volume &v, uint64_t index)
{
	return mdr::wire::decode_entry(v.table.entries()[index]);
}

} // namespace mdnode::store_checks

#endif // MDNODE_STORE_CHECKS_H
