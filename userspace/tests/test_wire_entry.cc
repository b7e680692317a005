// SPDX-License-Identifier: GPL-2.0
//
// test_wire_entry.cc - extent entries: seal and verify, every single-bit
// flip, misaddressed and torn reads, the rules after the crc, and the
// known-answer vector the kernel's implementation shares.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "lib/wire/wire.h"

#include "tests/test_wire.h"

#include "tests/common/cmocka_cxx.h"

namespace {

using namespace mdr::test;

// ---- Extent entries -------------------------------------------------------

const w::Entry kEntries[] = {
	{1, 0, 0, MDR_EXT_UNALLOCATED},
	{2, 0x200000, 3, MDR_EXT_MAPPED},
	{UINT64_MAX, UINT64_MAX, UINT32_MAX, MDR_EXT_FROZEN},
};

void test_entry_round_trip(void **)
{
	for (const w::Entry &want : kEntries) {
		const mdr_wire_entry e = w::make_entry(want, kVol, kIndex);

		assert_int_equal(w::verify_entry(e, kVol, kIndex), w::EntryCheck::ok);
		assert_true(w::decode_entry(e) == want);
		assert_int_equal(w::load(e.crc), w::entry_crc(e, kVol, kIndex));
	}
}

void test_entry_every_bit_flip(void **)
{
	for (const w::Entry &want : kEntries) {
		const mdr_wire_entry good = w::make_entry(want, kVol, kIndex);

		for (size_t bit = 0; bit < sizeof(good) * 8; bit++) {
			mdr_wire_entry e = good;
			auto *p = reinterpret_cast<unsigned char *>(&e);

			p[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
			assert_int_equal(w::verify_entry(e, kVol, kIndex),
					 w::EntryCheck::bad_crc);
		}
	}
}

void test_entry_misaddressed(void **)
{
	const mdr_wire_entry e = w::make_entry(kEntries[1], kVol, kIndex);
	const std::pair<uint64_t, uint64_t> elsewhere[] = {
		{kVol + 1, kIndex}, {kVol, kIndex + 1}, {kVol, kIndex - 1},
		{kIndex, kVol}, {kVol ^ (uint64_t{1} << 63), kIndex}, {0, kIndex},
	};

	for (const auto &[vol, index] : elsewhere)
		assert_int_equal(w::verify_entry(e, vol, index), w::EntryCheck::bad_crc);
}

// A READ racing mdnode's write of the next generation: 16 bytes of each.
void test_entry_torn(void **)
{
	const mdr_wire_entry a = w::make_entry({5, 0x100000, 3, MDR_EXT_MAPPED}, kVol, kIndex);
	const mdr_wire_entry b = w::make_entry({6, 0x900000, 4, MDR_EXT_MAPPED}, kVol, kIndex);
	const mdr_wire_entry c = w::make_entry({6, 0x100000, 3, MDR_EXT_FROZEN}, kVol, kIndex);

	for (const auto &[old_e, new_e] : {std::pair{a, b}, std::pair{b, a},
					    std::pair{a, c}, std::pair{c, a}}) {
		mdr_wire_entry torn;

		std::memcpy(&torn, &old_e, 16);
		std::memcpy(reinterpret_cast<char *>(&torn) + 16,
			    reinterpret_cast<const char *>(&new_e) + 16, 16);
		assert_int_equal(w::verify_entry(torn, kVol, kIndex),
				 w::EntryCheck::bad_crc);
	}
}

void test_entry_rules(void **)
{
	struct {
		w::Entry entry;
		void (*edit)(mdr_wire_entry &);
		w::EntryCheck want;
	} cases[] = {
		{{1, 0, 0, MDR_EXT_UNALLOCATED}, [](mdr_wire_entry &e) { e.reserved[0] = 1; },
		 w::EntryCheck::reserved_nonzero},
		{{1, 0, 0, MDR_EXT_UNALLOCATED}, [](mdr_wire_entry &e) { e.reserved[2] = 0x80; },
		 w::EntryCheck::reserved_nonzero},
		{{1, 0, 0, MDR_EXT_UNALLOCATED},
		 [](mdr_wire_entry &e) { w::store(e.reserved2, 0x01000000); },
		 w::EntryCheck::reserved_nonzero},
		{{1, 8, 1, MDR_EXT_STATE_MAX}, nullptr, w::EntryCheck::bad_state},
		{{1, 8, 1, 0xff}, nullptr, w::EntryCheck::bad_state},
		{{1, 0, 1, MDR_EXT_UNALLOCATED}, nullptr, w::EntryCheck::unallocated_placed},
		{{1, 8, 0, MDR_EXT_UNALLOCATED}, nullptr, w::EntryCheck::unallocated_placed},
		{{0, 0, 0, MDR_EXT_UNALLOCATED}, nullptr, w::EntryCheck::zero_generation},
		{{0, 8, 1, MDR_EXT_MAPPED}, nullptr, w::EntryCheck::zero_generation},
		{{1, 8, 0, MDR_EXT_MAPPED}, nullptr, w::EntryCheck::no_device},
		{{1, 8, 0, MDR_EXT_FROZEN}, nullptr, w::EntryCheck::no_device},
	};

	for (const auto &c : cases) {
		mdr_wire_entry e = w::make_entry(c.entry, kVol, kIndex);

		if (c.edit) {
			c.edit(e);
			w::seal_entry(e, kVol, kIndex);
		}
		assert_int_equal(w::verify_entry(e, kVol, kIndex), c.want);
	}
	assert_string_equal(w::entry_check_name(w::EntryCheck::bad_crc), "bad crc");
}

// The known-answer vector, also for the kernel's implementation:
//   volume id 0x0123456789abcdef, index 42,
//   entry {generation 7, pstart 0x200000, dev_id 3, state MAPPED}
//   crc 0x1389d35d; the 32 bytes:
//   07 00 00 00 00 00 00 00  00 00 20 00 00 00 00 00
//   03 00 00 00 01 00 00 00  00 00 00 00 5d d3 89 13
void test_entry_known_answer(void **)
{
	const unsigned char want[32] = {
		0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x5d, 0xd3, 0x89, 0x13,
	};
	const uint64_t vol = 0x0123456789abcdef, index = 42;
	const mdr_wire_entry e = w::make_entry({7, 0x200000, 3, MDR_EXT_MAPPED}, vol, index);

	assert_memory_equal(&e, want, sizeof(want));
	assert_int_equal(w::entry_crc(e, vol, index), 0x1389d35du);

	mdr_wire_entry from_bytes;
	std::memcpy(&from_bytes, want, sizeof(want));
	assert_int_equal(w::verify_entry(from_bytes, vol, index), w::EntryCheck::ok);
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_entry_round_trip),
		cmocka_unit_test(test_entry_every_bit_flip),
		cmocka_unit_test(test_entry_misaddressed),
		cmocka_unit_test(test_entry_torn),
		cmocka_unit_test(test_entry_rules),
		cmocka_unit_test(test_entry_known_answer),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
