// SPDX-License-Identifier: GPL-2.0
//
// test_store.h - what test_store_*.cc check mdnode's state with: a store on
// two devices, changes prepared and committed into a log as the journal
// would hold it, that log replayed into a fresh store, and that every
// entry of every table verifies for its place after every step.
#ifndef MDR_TESTS_TEST_STORE_H
#define MDR_TESTS_TEST_STORE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <endian.h>

#include "lib/util/crc32c.h"
#include "lib/wire/wire.h"
#include "mdnode/store.h"
#include "tests/common/units.h"

#include "tests/common/cmocka_cxx.h"

namespace mdr::test {

using mdnode::Allocation;
using mdnode::Applied;
using mdnode::Change;
using mdnode::Device;
using mdnode::Store;
using mdnode::Volume;


// Device 1 of 64 MiB, device 2 of 32 MiB.
inline std::vector<Device> two_devices()
{
	return {{1, "/dev/vdb", "SER-1", 64 * MiB}, {2, "/dev/vdc", "SER-2", 32 * MiB}};
}

inline Store make_store(std::vector<Device> devices = two_devices())
{
	mdr::Result<Store> s = Store::create(std::move(devices));

	if (!s.ok())
		fail_msg("create: %s", s.message().c_str());
	return std::move(s).value();
}

// The CRC of an entry as <linux/mdroute_wire.h> defines it, computed here.
inline uint32_t entry_crc(const mdr_wire_entry &e, uint64_t volume_id, uint64_t index)
{
	const uint64_t where[2] = {htole64(volume_id), htole64(index)};
	uint32_t c = mdr::crc32c_update(mdr::kCrc32cInit, where, sizeof(where));

	c = mdr::crc32c_update(c, &e, offsetof(mdr_wire_entry, crc));
	return mdr::crc32c_finish(c);
}

inline void check_entry(const mdr_wire_entry &e, uint64_t volume_id, uint64_t index)
{
	assert_int_equal(le32toh(e.crc), entry_crc(e, volume_id, index));
	assert_int_equal(e.reserved[0] | e.reserved[1] | e.reserved[2], 0);
	assert_int_equal(e.reserved2, 0);
	if (e.state == MDR_EXT_MAPPED || e.state == MDR_EXT_FROZEN) {
		// allocated (2), and frozen (3) for a move
		assert_true(le64toh(e.generation) >= (e.state == MDR_EXT_MAPPED ? 2u : 3u));
		assert_int_not_equal(le32toh(e.dev_id), 0);
	} else {
		assert_int_equal(e.state, MDR_EXT_UNALLOCATED);
		assert_int_equal(le64toh(e.generation), 1);
		assert_int_equal(le32toh(e.dev_id), 0);
		assert_int_equal(le64toh(e.pstart), 0);
	}
}

// Every entry of every table is sealed for its place and well-formed, and
// each volume counts its mapped extents right.
inline void check_tables(const Store &s)
{
	for (const Volume *v : s.list_volumes(0, SIZE_MAX).volumes) {
		const uint64_t extent = uint64_t{1} << v->extent_shift;
		uint64_t mapped = 0;

		assert_int_equal(v->table.entries().size(), (v->size + extent - 1) / extent);
		for (uint64_t i = 0; i < v->table.entries().size(); i++) {
			check_entry(v->table.entries()[i], v->id, i);
			// a frozen extent still has its space
			mapped += v->table.entries()[i].state != MDR_EXT_UNALLOCATED;
		}
		assert_int_equal(mapped, v->allocated);
	}
}

// What the journal holds: the committed changes, in order.
using Log = std::vector<Change>;

inline Change prepared(mdr::Result<Change> r)
{
	if (!r.ok())
		fail_msg("prepare: %s", r.message().c_str());
	return std::move(r).value();
}

inline Change prepared_alloc(Store &s, uint64_t volume_id, uint64_t index)
{
	mdr::Result<Allocation> r = s.prepare_alloc(volume_id, index);

	if (!r.ok())
		fail_msg("prepare_alloc: %s", r.message().c_str());
	assert_true(std::holds_alternative<Change>(r.value()));
	return std::get<Change>(std::move(r).value());
}

inline Applied commit(Store &s, Log &log, const Change &c)
{
	mdr::Result<Applied> done = s.commit(c);

	if (!done.ok())
		fail_msg("commit: %s", done.message().c_str());
	log.push_back(c);
	check_tables(s);
	return std::move(done).value();
}

inline uint64_t create(Store &s, Log &log, const std::string &name, uint64_t size,
		       uint32_t shift = 0)
{
	return commit(s, log, prepared(s.prepare_create(name, size, shift, 7))).volume_id;
}

// The extent's entry, mapping the extent first if it is not.
inline mdr_wire_entry alloc(Store &s, Log &log, uint64_t volume_id, uint64_t index)
{
	mdr::Result<Allocation> r = s.prepare_alloc(volume_id, index);
	mdr_wire_entry e;

	if (!r.ok())
		fail_msg("prepare_alloc: %s", r.message().c_str());
	if (const mdr_wire_entry *mapped = std::get_if<mdr_wire_entry>(&r.value()))
		e = *mapped;
	else
		e = commit(s, log, std::get<Change>(r.value())).entry;
	check_entry(e, volume_id, index);
	assert_int_equal(e.state, MDR_EXT_MAPPED);
	return e;
}

inline Store replayed(const Log &log, std::vector<Device> devices = two_devices())
{
	Store s = make_store(std::move(devices));

	for (const Change &c : log) {
		mdr::Status ok = s.replay(c.type, c.payload);

		if (!ok.ok())
			fail_msg("replay: %s", ok.message().c_str());
	}
	check_tables(s);
	return s;
}

inline void assert_same_tables(const Store &a, const Store &b)
{
	const std::vector<const Volume *> va = a.list_volumes(0, SIZE_MAX).volumes;
	const std::vector<const Volume *> vb = b.list_volumes(0, SIZE_MAX).volumes;

	assert_int_equal(va.size(), vb.size());
	for (size_t i = 0; i < va.size(); i++) {
		assert_int_equal(va[i]->id, vb[i]->id);
		assert_int_equal(va[i]->table.bytes(), vb[i]->table.bytes());
		assert_memory_equal(va[i]->table.data(), vb[i]->table.data(),
				    va[i]->table.bytes());
	}
}

inline uint64_t used(const Store &s, uint32_t dev_id)
{
	for (const mdr::wire::Device &d : s.devices())
		if (d.dev_id == dev_id)
			return d.used;
	fail_msg("no device %u", dev_id);
	return 0;
}

inline void assert_contains(const std::string &text, const char *part)
{
	if (text.find(part) == std::string::npos)
		fail_msg("'%s' does not say '%s'", text.c_str(), part);
}

// bytes with the little-endian field of n bytes at off set to v.
inline std::vector<uint8_t> patched(std::vector<uint8_t> bytes, size_t off, uint64_t v,
				    unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		bytes.at(off + i) = static_cast<uint8_t>(v >> (8 * i));
	return bytes;
}

inline uint64_t field(const std::vector<uint8_t> &bytes, size_t off, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= uint64_t{bytes.at(off + i)} << (8 * i);
	return v;
}

// Volumes of three extent sizes on both devices, grown, shrunk and
// deleted, with an allocation aborted on the way.
inline void build(Store &s, Log &log)
{
	const uint64_t a = create(s, log, "a", 8 * MiB, 20);
	const uint64_t b = create(s, log, "b", 2 * MiB, 16);
	const uint64_t c = create(s, log, "c", 12 * MiB, 22);

	for (uint64_t i = 0; i < 8; i++)
		alloc(s, log, a, i);
	for (uint64_t i = 0; i < 32; i += 3)
		alloc(s, log, b, i);
	alloc(s, log, c, 0);
	alloc(s, log, c, 2);
	assert_true(s.abort(prepared_alloc(s, c, 1)).ok());
	commit(s, log, prepared(s.prepare_resize(a, 16 * MiB)));
	for (uint64_t i = 8; i < 16; i += 2)
		alloc(s, log, a, i);
	commit(s, log, prepared(s.prepare_resize(b, MiB)));
	commit(s, log, prepared(s.prepare_delete(c)));

	const uint64_t d = create(s, log, "d", 4 * MiB, 18);

	for (uint64_t i = 0; i < 16; i++)
		alloc(s, log, d, i);
}

} // namespace mdr::test

#endif // MDR_TESTS_TEST_STORE_H
