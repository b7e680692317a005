// SPDX-License-Identifier: GPL-2.0
//
// test_crc32c.cc - CRC-32C against published check values, and the
// incremental form against the one-shot form.
#include <cstring>
#include <string>
#include <vector>

#include "lib/util/crc32c.h"

#include "tests/common/cmocka_cxx.h"

namespace {

void test_check_values(void **)
{
	// The standard check value of CRC-32C, and RFC 3720 B.4 vectors.
	assert_int_equal(mdr::crc32c("123456789", 9), 0xe3069283u);
	std::vector<unsigned char> zeros(32, 0), ones(32, 0xff), inc(32);
	for (int i = 0; i < 32; i++)
		inc[i] = static_cast<unsigned char>(i);
	assert_int_equal(mdr::crc32c(zeros.data(), 32), 0x8a9136aau);
	assert_int_equal(mdr::crc32c(ones.data(), 32), 0x62a8ab43u);
	assert_int_equal(mdr::crc32c(inc.data(), 32), 0x46dd794eu);
	assert_int_equal(mdr::crc32c("", 0), 0u);
}

void test_incremental_equals_one_shot(void **)
{
	std::string data;
	for (int i = 0; i < 1000; i++)
		data += static_cast<char>(i * 7 + 3);
	const uint32_t whole = mdr::crc32c(data.data(), data.size());

	// every split point, including unaligned ones and the ends
	for (size_t cut = 0; cut <= data.size(); cut += 13) {
		uint32_t c = mdr::crc32c_update(mdr::kCrc32cInit, data.data(), cut);
		c = mdr::crc32c_update(c, data.data() + cut, data.size() - cut);
		assert_int_equal(mdr::crc32c_finish(c), whole);
	}
}

void test_detects_one_bit_flip(void **)
{
	unsigned char buf[64];
	for (int i = 0; i < 64; i++)
		buf[i] = static_cast<unsigned char>(i);
	const uint32_t good = mdr::crc32c(buf, sizeof(buf));

	for (int bit = 0; bit < 64 * 8; bit++) {
		buf[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
		assert_int_not_equal(mdr::crc32c(buf, sizeof(buf)), good);
		buf[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
	}
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_values),
		cmocka_unit_test(test_incremental_equals_one_shot),
		cmocka_unit_test(test_detects_one_bit_flip),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
