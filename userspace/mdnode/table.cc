// SPDX-License-Identifier: GPL-2.0
//
// table.cc - see table.h.
#include "mdnode/table.h"

#include <array>
#include <bit>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include <endian.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/wire/wire.h"

namespace mdnode {

namespace {

mdr_wire_entry unallocated(uint64_t volume_id, uint64_t index)
{
	return mdr::wire::make_entry({.generation = 1, .pstart = 0, .dev_id = 0,
				      .state = MDR_EXT_UNALLOCATED},
				     volume_id, index);
}

// The entries of a new table differ only in their CRC, which covers the
// volume id, the index and the same 28 bytes. Over messages of one length
// a CRC is affine: crc(a ^ b) = crc(a) ^ crc(b) ^ crc(0). So flipping bit b
// of the index changes the CRC by a constant of its own, whatever the
// volume, the other bits and the rest of the entry; and going from index
// i to i + 1 flips bits 0 to countr_zero(i + 1), which changes the CRC by
// flips[countr_zero(i + 1)], the XOR of those bits' constants. The
// constants come from the real CRC of entries that differ in one bit.
struct IndexFlips {
	std::array<uint32_t, 64> flips;

	IndexFlips()
	{
		const mdr_wire_entry e = unallocated(0, 0);
		const uint32_t zero = mdr::wire::entry_crc(e, 0, 0);
		uint32_t acc = 0;

		for (unsigned b = 0; b < 64; b++) {
			acc ^= mdr::wire::entry_crc(e, 0, uint64_t{1} << b) ^ zero;
			flips[b] = acc;
		}
	}
};

} // namespace

void seal_unallocated(std::span<mdr_wire_entry> out, uint64_t volume_id, uint64_t first)
{
	static const IndexFlips k;

	if (out.empty())
		return;

	mdr_wire_entry e = unallocated(volume_id, first);
	uint32_t crc = le32toh(e.crc);

	assert(out.size() - 1 <= UINT64_MAX - first);
	out[0] = e;
	for (size_t n = 1; n < out.size(); n++) {
		crc ^= k.flips[std::countr_zero(first + n)];
		e.crc = htole32(crc);
		out[n] = e;
	}
}

mdr::Result<Table> Table::map(uint64_t nr_entries)
{
	// nr_entries <= 2^64 / 64 KiB: the byte count cannot overflow.
	const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
	const size_t len = (nr_entries * sizeof(mdr_wire_entry) + page - 1) / page * page;

	assert(nr_entries > 0);
	// Populated here, in one pass of the kernel, rather than by a fault
	// per page when the entries are sealed: a creation takes its memory
	// when it is prepared, before its journal write, and not in its
	// commit, after the write and before the reply.
	void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED) {
		const int err = errno;

		return mdr::Error(-err, "cannot map a table of " +
				  std::to_string(nr_entries) + " entries");
	}
	return Table(static_cast<mdr_wire_entry *>(p), nr_entries, len);
}

Table::Table(Table &&other) noexcept
	: entries_(std::exchange(other.entries_, nullptr)),
	  nr_(std::exchange(other.nr_, 0)),
	  map_len_(std::exchange(other.map_len_, 0))
{
}

Table &Table::operator=(Table &&other) noexcept
{
	if (this != &other) {
		unmap();
		entries_ = std::exchange(other.entries_, nullptr);
		nr_ = std::exchange(other.nr_, 0);
		map_len_ = std::exchange(other.map_len_, 0);
	}
	return *this;
}

Table::~Table()
{
	unmap();
}

void Table::unmap()
{
	if (entries_)
		munmap(entries_, map_len_);
	entries_ = nullptr;
	nr_ = 0;
	map_len_ = 0;
}

bool Table::operator==(const Table &other) const
{
	return bytes() == other.bytes() &&
	       (bytes() == 0 || std::memcmp(data(), other.data(), bytes()) == 0);
}

} // namespace mdnode
