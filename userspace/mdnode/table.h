// SPDX-License-Identifier: GPL-2.0
//
// table.h - a volume's extent table: the entries hosts READ remotely, in
// memory of its own. Pure logic apart from the mapping; callers own
// locking. Only the store (store.h) changes a table.
#ifndef MDNODE_TABLE_H
#define MDNODE_TABLE_H

#include <cstddef>
#include <cstdint>
#include <span>

#include <linux/mdroute_wire.h>

#include "lib/util/result.h"

namespace mdnode {

// Fills out with the entries of a new table for extents first, first + 1,
// ... of volume_id: unallocated, generation 1, each sealed for its place
// exactly as mdr::wire::make_entry() seals it. One CRC-32C in all, then one
// XOR an entry (store.cc says why that is the same CRC).
void seal_unallocated(std::span<mdr_wire_entry> out, uint64_t volume_id, uint64_t first);

// A volume's extent table: its entries in page-aligned anonymous memory of
// its own, which the server registers for remote READ. Owns the mapping and
// unmaps it when destroyed.
class Table {
public:
	// nr_entries (>= 1) zeroed entries, in memory already; -ENOMEM when
	// they cannot be mapped.
	static mdr::Result<Table> map(uint64_t nr_entries);

	Table(Table &&other) noexcept;
	Table &operator=(Table &&other) noexcept;
	Table(const Table &) = delete;
	Table &operator=(const Table &) = delete;
	~Table();

	std::span<const mdr_wire_entry> entries() const { return {entries_, nr_}; }
	// What to register: entry i is at data() + i * 32.
	const void *data() const { return entries_; }
	size_t bytes() const { return nr_ * sizeof(mdr_wire_entry); }

	// Same entries, byte for byte.
	bool operator==(const Table &other) const;

private:
	friend class Store;

	Table(mdr_wire_entry *entries, uint64_t nr, size_t map_len)
		: entries_(entries), nr_(nr), map_len_(map_len) {}
	// One store of a whole sealed entry: hosts may READ at any time.
	void put(uint64_t index, const mdr_wire_entry &entry) { entries_[index] = entry; }
	// Entries [first, nr) unallocated: only before hosts can READ them.
	void put_unallocated(uint64_t volume_id, uint64_t first)
	{
		seal_unallocated({entries_ + first, nr_ - first}, volume_id, first);
	}
	void unmap();

	mdr_wire_entry *entries_;
	uint64_t nr_;
	size_t map_len_;	// bytes() rounded up to pages
};

} // namespace mdnode

#endif // MDNODE_TABLE_H
