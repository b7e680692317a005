// SPDX-License-Identifier: GPL-2.0
//
// test_buddy.cc - the buddy allocator of device space: exhaustion and
// refill, alignment, fragmentation and coalescing, replay by mark_used(),
// sizes that are not a power of two, and a random run against a model.
#include <cerrno>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <vector>

#include "mdnode/buddy.h"

#include "tests/common/cmocka_cxx.h"

using mdnode::Buddy;

namespace {

// Blocks given out, by first unit: their order.
using Blocks = std::map<uint64_t, unsigned>;

// Takes blocks of order until none is left; checks each is aligned, within
// [begin, end) and overlaps no other block given out.
void take_all(Buddy &b, unsigned order, uint64_t begin, uint64_t end, Blocks &blocks)
{
	while (std::optional<uint64_t> unit = b.alloc(order)) {
		const uint64_t size = uint64_t{1} << order;

		assert_int_equal(*unit % size, 0);
		assert_true(*unit >= begin && *unit + size <= end);
		auto next = blocks.lower_bound(*unit);
		if (next != blocks.end())
			assert_true(*unit + size <= next->first);
		if (next != blocks.begin()) {
			auto prev = std::prev(next);
			assert_true(prev->first + (uint64_t{1} << prev->second) <= *unit);
		}
		blocks.emplace(*unit, order);
	}
}

void test_exhaust_and_refill(void **)
{
	const Buddy fresh(16, 1024, 4);
	Buddy b = fresh;
	Blocks units;

	assert_int_equal(b.free_units(), 1008);
	take_all(b, 0, 16, 1024, units);
	assert_int_equal(units.size(), 1008);
	assert_int_equal(b.free_units(), 0);
	assert_int_equal(b.used_units(), 1008);
	for (unsigned k = 0; k <= 4; k++)
		assert_false(b.alloc(k).has_value());

	for (const auto &[unit, order] : units)
		b.free(unit, order);
	assert_true(b == fresh);

	// Everything coalesced again: 63 blocks of the largest order.
	Blocks large;
	take_all(b, 4, 16, 1024, large);
	assert_int_equal(large.size(), 63);
	assert_int_equal(b.free_units(), 0);
	assert_false(b.alloc(5).has_value());	// beyond max_order
}

void test_alignment_of_every_order(void **)
{
	Buddy b(16, uint64_t{1} << 20, 14);
	Blocks blocks;

	for (unsigned round = 0; round < 3; round++)
		for (unsigned k = 0; k <= 14; k++) {
			std::optional<uint64_t> unit = b.alloc(k);

			assert_true(unit.has_value());
			assert_int_equal(*unit % (uint64_t{1} << k), 0);
			assert_true(*unit >= 16);
			blocks.emplace(*unit, k);
		}
	// The largest blocks skip the first one, which holds units 0..15.
	for (const auto &[unit, order] : blocks)
		if (order == 14)
			assert_true(unit >= 16384);
	for (unsigned k = 15; k-- > 0;)
		take_all(b, k, 16, uint64_t{1} << 20, blocks);
	assert_int_equal(b.free_units(), 0);
}

void test_fragmentation_and_coalescing(void **)
{
	const Buddy fresh(0, 64, 6);
	Buddy b = fresh;
	Blocks units;

	take_all(b, 0, 0, 64, units);
	for (uint64_t u = 0; u < 64; u += 2)
		b.free(u, 0);
	// Half the space is free, in pieces no pair of which is a block.
	assert_int_equal(b.free_units(), 32);
	assert_false(b.alloc(1).has_value());
	for (uint64_t u = 1; u < 64; u += 2)
		b.free(u, 0);
	assert_true(b == fresh);
	assert_int_equal(b.alloc(6).value_or(1), 0);
}

void test_smallest_free_block_first(void **)
{
	Buddy b(0, 128, 6);

	assert_int_equal(b.alloc(6).value(), 0);
	assert_int_equal(b.alloc(0).value(), 64);	// splits 64..127
	b.free(0, 6);
	// Free now: 0 (order 6) and the halves split off 64..127.
	assert_int_equal(b.alloc(0).value(), 65);
	assert_int_equal(b.alloc(2).value(), 68);
	assert_int_equal(b.alloc(5).value(), 96);
	assert_int_equal(b.alloc(6).value(), 0);
	assert_int_equal(b.alloc(1).value(), 66);
	assert_int_equal(b.alloc(3).value(), 72);
	assert_int_equal(b.alloc(4).value(), 80);
	assert_int_equal(b.free_units(), 0);
}

void test_mark_used_replays_alloc(void **)
{
	Buddy live(16, 4096, 8);
	Blocks blocks;
	std::mt19937_64 rng(7);

	for (int i = 0; i < 400; i++) {
		if (!blocks.empty() && rng() % 3 == 0) {
			auto it = std::next(blocks.begin(), rng() % blocks.size());
			live.free(it->first, it->second);
			blocks.erase(it);
		} else {
			unsigned k = rng() % 9;
			if (std::optional<uint64_t> unit = live.alloc(k))
				blocks.emplace(*unit, k);
		}
	}

	// The same blocks taken in another order give the same state.
	Buddy replayed(16, 4096, 8);
	for (auto it = blocks.rbegin(); it != blocks.rend(); ++it)
		assert_true(replayed.mark_used(it->first, it->second).ok());
	assert_true(replayed == live);
	assert_int_equal(replayed.used_units(), live.used_units());
}

void test_mark_used_refuses(void **)
{
	Buddy b(16, 1000, 6);

	assert_true(b.mark_used(64, 5).ok());
	const Buddy before = b;

	assert_int_equal(b.mark_used(8, 3).error(), -EINVAL);	// label area
	assert_int_equal(b.mark_used(0, 6).error(), -EINVAL);
	assert_int_equal(b.mark_used(66, 2).error(), -EINVAL);	// misaligned
	assert_int_equal(b.mark_used(960, 6).error(), -EINVAL);	// beyond end
	assert_int_equal(b.mark_used(1000, 0).error(), -EINVAL);
	assert_int_equal(b.mark_used(0, 7).error(), -EINVAL);	// > max_order
	assert_int_equal(b.mark_used(64, 5).error(), -EEXIST);	// taken
	assert_int_equal(b.mark_used(72, 1).error(), -EEXIST);	// within it
	assert_int_equal(b.mark_used(64, 6).error(), -EEXIST);	// holds it
	assert_true(b == before);
	assert_true(b.mark_used(96, 5).ok());			// its buddy
	assert_true(b.mark_used(999, 0).ok());			// the last unit
}

void test_sizes_not_a_power_of_two(void **)
{
	for (uint64_t end : {17u, 100u, 12345u, 16384u + 16u + 1u}) {
		const Buddy fresh(16, end, 14);
		Buddy b = fresh;
		Blocks blocks;

		assert_int_equal(b.free_units(), end - 16);
		for (unsigned k = 15; k-- > 0;)
			take_all(b, k, 16, end, blocks);
		uint64_t total = 0;
		for (const auto &[unit, order] : blocks)
			total += uint64_t{1} << order;
		assert_int_equal(total, end - 16);
		for (const auto &[unit, order] : blocks)
			b.free(unit, order);
		assert_true(b == fresh);
	}
}

void test_random_against_model(void **)
{
	const uint64_t begin = 16, end = 3000;
	const Buddy fresh(begin, end, 7);
	Buddy b = fresh;
	std::vector<bool> used(end);
	Blocks blocks;
	std::mt19937_64 rng(42);

	for (int i = 0; i < 20000; i++) {
		if (!blocks.empty() && rng() % 2 == 0) {
			auto it = std::next(blocks.begin(), rng() % blocks.size());
			b.free(it->first, it->second);
			for (uint64_t u = 0; u < (uint64_t{1} << it->second); u++)
				used[it->first + u] = false;
			blocks.erase(it);
		} else {
			unsigned k = rng() % 8;
			std::optional<uint64_t> unit = b.alloc(k);
			if (!unit)
				continue;
			assert_int_equal(*unit % (uint64_t{1} << k), 0);
			assert_true(*unit >= begin && *unit + (uint64_t{1} << k) <= end);
			for (uint64_t u = 0; u < (uint64_t{1} << k); u++) {
				assert_false(used[*unit + u]);
				used[*unit + u] = true;
			}
			blocks.emplace(*unit, k);
		}
		uint64_t n = 0;
		for (const auto &[unit, order] : blocks)
			n += uint64_t{1} << order;
		assert_int_equal(b.used_units(), n);
	}
	for (const auto &[unit, order] : blocks)
		b.free(unit, order);
	assert_true(b == fresh);
}

// 2^28 units of 64 KiB: about 64 MiB of bitmaps (see buddy.h).
void test_16tib_device(void **)
{
	const uint64_t units = uint64_t{1} << 28;
	Buddy b(16, units, 14);

	assert_int_equal(b.free_units(), units - 16);
	assert_int_equal(b.alloc(14).value(), 16384);
	assert_int_equal(b.alloc(0).value(), 16);
	assert_true(b.mark_used(units - 16384, 14).ok());
	assert_int_equal(b.used_units(), 2 * 16384 + 1);
	b.free(16384, 14);
	b.free(16, 0);
	b.free(units - 16384, 14);
	assert_int_equal(b.free_units(), units - 16);
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exhaust_and_refill),
		cmocka_unit_test(test_alignment_of_every_order),
		cmocka_unit_test(test_fragmentation_and_coalescing),
		cmocka_unit_test(test_smallest_free_block_first),
		cmocka_unit_test(test_mark_used_replays_alloc),
		cmocka_unit_test(test_mark_used_refuses),
		cmocka_unit_test(test_sizes_not_a_power_of_two),
		cmocka_unit_test(test_random_against_model),
		cmocka_unit_test(test_16tib_device),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
