// SPDX-License-Identifier: GPL-2.0
//
// buddy.cc - see buddy.h.
#include "mdnode/buddy.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cerrno>
#include <string>

namespace mdnode {

Buddy::Bits::Bits(uint64_t size)
{
	do {
		size = std::max<uint64_t>((size + 63) / 64, 1);
		levels_.emplace_back(size);
	} while (size > 1);
}

bool Buddy::Bits::test(uint64_t bit) const
{
	const std::vector<uint64_t> &words = levels_.front();

	return bit / 64 < words.size() && (words[bit / 64] >> (bit % 64) & 1);
}

void Buddy::Bits::set(uint64_t bit)
{
	for (std::vector<uint64_t> &level : levels_) {
		uint64_t &word = level[bit / 64];
		const bool had_bits = word != 0;

		word |= uint64_t{1} << (bit % 64);
		if (had_bits)
			return;	// the levels above know this word already
		bit /= 64;
	}
}

void Buddy::Bits::clear(uint64_t bit)
{
	for (std::vector<uint64_t> &level : levels_) {
		uint64_t &word = level[bit / 64];

		word &= ~(uint64_t{1} << (bit % 64));
		if (word != 0)
			return;
		bit /= 64;
	}
}

std::optional<uint64_t> Buddy::Bits::first() const
{
	uint64_t bit = 0;

	if (levels_.back()[0] == 0)
		return std::nullopt;
	for (auto level = levels_.rbegin(); level != levels_.rend(); ++level)
		bit = bit * 64 + std::countr_zero((*level)[bit]);
	return bit;
}

Buddy::Buddy(uint64_t begin, uint64_t end, unsigned max_order)
	: begin_(begin), end_(end), max_order_(max_order)
{
	assert(begin <= end && max_order < 64);
	for (unsigned k = 0; k <= max_order; k++)
		free_.emplace_back((end >> k) + 1);	// + 1: the last block's buddy

	// The largest aligned blocks that fit, from begin up: no two of them
	// are buddies, or they would have been one block.
	for (uint64_t unit = begin; unit < end;) {
		unsigned k = max_order;

		while (k > 0 && ((unit & ((uint64_t{1} << k) - 1)) ||
				 end - unit < (uint64_t{1} << k)))
			k--;
		free_[k].set(unit >> k);
		unit += uint64_t{1} << k;
	}
}

std::optional<unsigned> Buddy::free_holder(uint64_t offset, unsigned order) const
{
	for (unsigned k = order; k <= max_order_; k++)
		if (free_[k].test(offset >> k))
			return k;
	return std::nullopt;
}

void Buddy::split(uint64_t offset, unsigned holder, unsigned order)
{
	free_[holder].clear(offset >> holder);
	for (unsigned k = holder; k-- > order;)
		free_[k].set((offset >> k) ^ 1);	// the other half
	used_ += uint64_t{1} << order;
}

std::optional<uint64_t> Buddy::alloc(unsigned order)
{
	for (unsigned k = order; k <= max_order_; k++) {
		std::optional<uint64_t> block = free_[k].first();

		if (block) {
			split(*block << k, k, order);
			return *block << k;
		}
	}
	return std::nullopt;
}

void Buddy::free(uint64_t offset, unsigned order)
{
	uint64_t block = offset >> order;
	unsigned k = order;

	assert(order <= max_order_ && (block << order) == offset &&
	       offset >= begin_ && offset < end_ && !free_holder(offset, order));
	for (; k < max_order_ && free_[k].test(block ^ 1); k++) {
		free_[k].clear(block ^ 1);
		block >>= 1;
	}
	free_[k].set(block);
	used_ -= uint64_t{1} << order;
}

mdr::Status Buddy::mark_used(uint64_t offset, unsigned order)
{
	const std::string block = "block of 2^" + std::to_string(order) +
				  " units at unit " + std::to_string(offset);

	if (order > max_order_ || (offset >> order << order) != offset)
		return mdr::Error(-EINVAL, block + " is not aligned to its size");
	if (offset < begin_ || offset > end_ ||
	    end_ - offset < (uint64_t{1} << order))
		return mdr::Error(-EINVAL, block + " is outside units [" +
				  std::to_string(begin_) + ", " +
				  std::to_string(end_) + ")");

	std::optional<unsigned> holder = free_holder(offset, order);

	if (!holder)
		return mdr::Error(-EEXIST, block + " is in use");
	split(offset, *holder, order);
	return {};
}

} // namespace mdnode
