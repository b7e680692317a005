// SPDX-License-Identifier: GPL-2.0
//
// crc32c.cc - CRC-32C with the SSE4.2 instruction where the CPU has it
// (chosen once, at first use), and slicing-by-8 tables elsewhere.
#include "lib/util/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace mdr {

namespace {

constexpr uint32_t kPoly = 0x82f63b78u;	// Castagnoli, reflected

using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables make_tables()
{
	Tables t{};

	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ ((c & 1) ? kPoly : 0);
		t[0][i] = c;
	}
	for (size_t s = 1; s < 8; s++)
		for (size_t i = 0; i < 256; i++)
			t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
	return t;
}

constexpr Tables kTables = make_tables();

uint32_t update_sw(uint32_t crc, const unsigned char *p, size_t len)
{
	while (len >= 8) {
		uint64_t v;

		std::memcpy(&v, p, 8);
		v ^= crc;	// little-endian hosts only (x86_64, aarch64)
		crc = kTables[7][v & 0xff] ^ kTables[6][(v >> 8) & 0xff] ^
		      kTables[5][(v >> 16) & 0xff] ^ kTables[4][(v >> 24) & 0xff] ^
		      kTables[3][(v >> 32) & 0xff] ^ kTables[2][(v >> 40) & 0xff] ^
		      kTables[1][(v >> 48) & 0xff] ^ kTables[0][v >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ kTables[0][(crc ^ *p++) & 0xff];
	return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
uint32_t update_hw(uint32_t crc, const unsigned char *p, size_t len)
{
	uint64_t c = crc;

	while (len >= 8) {
		uint64_t v;

		std::memcpy(&v, p, 8);
		c = _mm_crc32_u64(c, v);
		p += 8;
		len -= 8;
	}
	crc = static_cast<uint32_t>(c);
	while (len--)
		crc = _mm_crc32_u8(crc, *p++);
	return crc;
}

bool have_hw() { return __builtin_cpu_supports("sse4.2"); }
#else
uint32_t update_hw(uint32_t crc, const unsigned char *p, size_t len)
{
	return update_sw(crc, p, len);
}

bool have_hw() { return false; }
#endif

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	      "the slicing tables assume a little-endian host");

} // namespace

uint32_t crc32c_update(uint32_t crc, const void *data, size_t len)
{
	static const bool hw = have_hw();
	const auto *p = static_cast<const unsigned char *>(data);

	return hw ? update_hw(crc, p, len) : update_sw(crc, p, len);
}

} // namespace mdr
