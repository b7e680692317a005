// SPDX-License-Identifier: GPL-2.0
//
// crc32c.h - CRC-32C (Castagnoli), the checksum of extent entries and of
// journal records.
//
//	uint32_t c = mdr::crc32c(data, len);		// one buffer
//	uint32_t c = mdr::crc32c_finish(
//		mdr::crc32c_update(mdr::crc32c_update(kCrc32cInit, a, na), b, nb));
//
// Same value as the kernel's ~crc32c(~0, data, len) and iSCSI's CRC.
#ifndef MDR_CRC32C_H
#define MDR_CRC32C_H

#include <cstddef>
#include <cstdint>

namespace mdr {

inline constexpr uint32_t kCrc32cInit = 0xffffffffu;

// Feeds len bytes into a running (not yet finished) CRC.
uint32_t crc32c_update(uint32_t crc, const void *data, size_t len);

inline uint32_t crc32c_finish(uint32_t crc) { return ~crc; }

inline uint32_t crc32c(const void *data, size_t len)
{
	return crc32c_finish(crc32c_update(kCrc32cInit, data, len));
}

} // namespace mdr

#endif // MDR_CRC32C_H
