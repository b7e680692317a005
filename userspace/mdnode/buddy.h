// SPDX-License-Identifier: GPL-2.0
//
// buddy.h - physical space of one backing device: a binary buddy allocator
// of naturally aligned blocks of 2^order units (block b of order k is units
// [b << k, (b + 1) << k)). Pure logic; callers own locking.
//
// The free blocks of each order are a bitmap (bit b of order k set: block b
// of order k is free, and its buddy b ^ 1 is not), with summary levels above
// it (a bit per nonzero word of the level below), so the lowest free block
// of an order is found in one step per level. alloc(), free() and
// mark_used() are O(max_order * log64 units).
//
// Memory: one bit per block of every order, about 2 bits per unit, plus
// 1/63 of that for the summaries. In 64 KiB units that is 4 MiB per TiB of
// device, 64 MiB for 16 TiB: twice a plain bit per unit, which could not
// find a free aligned block of an order without scanning.
//
// The state is canonical: the same used blocks give the same bitmaps,
// whatever order they were taken and returned in, so two allocators compare
// equal exactly when they hold the same space.
#ifndef MDNODE_BUDDY_H
#define MDNODE_BUDDY_H

#include <cstdint>
#include <optional>
#include <vector>

#include "lib/util/result.h"

namespace mdnode {

class Buddy {
public:
	// Hands out units [begin, end) in blocks of at most 2^max_order units;
	// the units below begin are never handed out.
	Buddy(uint64_t begin, uint64_t end, unsigned max_order);

	// Takes the lowest free block of the smallest order >= order that has
	// one, splits it down to order, and returns its first unit; none when
	// no block is free at any order from order up (or order > max_order).
	std::optional<uint64_t> alloc(unsigned order);

	// Returns a block that alloc() or mark_used() gave out at this order,
	// and merges it with its free buddies.
	void free(uint64_t offset, unsigned order);

	// Takes the given block (journal replay): -EINVAL when it is not aligned
	// to its order or not within [begin, end), -EEXIST when any of its
	// units is in use.
	mdr::Status mark_used(uint64_t offset, unsigned order);

	uint64_t free_units() const { return end_ - begin_ - used_; }
	uint64_t used_units() const { return used_; }

	bool operator==(const Buddy &) const = default;

private:
	// A set of bit numbers with the lowest one found in log64 steps: level
	// 0 holds the bits, each further level a bit per nonzero word of the
	// one below, up to a single word.
	class Bits {
	public:
		explicit Bits(uint64_t size);
		bool test(uint64_t bit) const;
		void set(uint64_t bit);
		void clear(uint64_t bit);
		std::optional<uint64_t> first() const;
		bool operator==(const Bits &) const = default;

	private:
		std::vector<std::vector<uint64_t>> levels_;
	};

	// The order of the free block holding block offset of order, if any.
	std::optional<unsigned> free_holder(uint64_t offset, unsigned order) const;
	// Takes free block offset of order holder and frees the parts of it
	// that are not block offset of order.
	void split(uint64_t offset, unsigned holder, unsigned order);

	uint64_t begin_, end_;
	unsigned max_order_;
	uint64_t used_ = 0;		// units given out
	std::vector<Bits> free_;	// by order
};

} // namespace mdnode

#endif // MDNODE_BUDDY_H
