// SPDX-License-Identifier: GPL-2.0
//
// test_store.cc - mdnode's state: every prepare error, commit and abort,
// live changes against the same records replayed into a fresh store,
// snapshots, and that every entry of every table verifies after every step.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <endian.h>
#include <unistd.h>

#include "lib/crc32c.h"
#include "lib/wire.h"
#include "mdnode/store.h"

#include "tests/common/cmocka_cxx.h"

using mdnode::Allocation;
using mdnode::Applied;
using mdnode::Change;
using mdnode::Device;
using mdnode::Store;
using mdnode::Volume;

namespace {

constexpr uint64_t MiB = uint64_t{1} << 20;

// Device 1 of 64 MiB, device 2 of 32 MiB.
std::vector<Device> two_devices()
{
	return {{1, "/dev/vdb", "SER-1", 64 * MiB}, {2, "/dev/vdc", "SER-2", 32 * MiB}};
}

Store make_store(std::vector<Device> devices = two_devices())
{
	mdr::Result<Store> s = Store::create(std::move(devices));

	if (!s.ok())
		fail_msg("create: %s", s.message().c_str());
	return std::move(s).value();
}

// The CRC of an entry as <linux/mdroute_wire.h> defines it, computed here.
uint32_t entry_crc(const mdr_wire_entry &e, uint64_t volume_id, uint64_t index)
{
	const uint64_t where[2] = {htole64(volume_id), htole64(index)};
	uint32_t c = mdr::crc32c_update(mdr::kCrc32cInit, where, sizeof(where));

	c = mdr::crc32c_update(c, &e, offsetof(mdr_wire_entry, crc));
	return mdr::crc32c_finish(c);
}

void check_entry(const mdr_wire_entry &e, uint64_t volume_id, uint64_t index)
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
void check_tables(const Store &s)
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

Change prepared(mdr::Result<Change> r)
{
	if (!r.ok())
		fail_msg("prepare: %s", r.message().c_str());
	return std::move(r).value();
}

Change prepared_alloc(Store &s, uint64_t volume_id, uint64_t index)
{
	mdr::Result<Allocation> r = s.prepare_alloc(volume_id, index);

	if (!r.ok())
		fail_msg("prepare_alloc: %s", r.message().c_str());
	assert_true(std::holds_alternative<Change>(r.value()));
	return std::get<Change>(std::move(r).value());
}

Applied commit(Store &s, Log &log, const Change &c)
{
	mdr::Result<Applied> done = s.commit(c);

	if (!done.ok())
		fail_msg("commit: %s", done.message().c_str());
	log.push_back(c);
	check_tables(s);
	return std::move(done).value();
}

uint64_t create(Store &s, Log &log, const std::string &name, uint64_t size,
		uint32_t shift = 0)
{
	return commit(s, log, prepared(s.prepare_create(name, size, shift, 7))).volume_id;
}

// The extent's entry, mapping the extent first if it is not.
mdr_wire_entry alloc(Store &s, Log &log, uint64_t volume_id, uint64_t index)
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

Store replayed(const Log &log, std::vector<Device> devices = two_devices())
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

void assert_same_tables(const Store &a, const Store &b)
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

uint64_t used(const Store &s, uint32_t dev_id)
{
	for (const mdr::wire::Device &d : s.devices())
		if (d.dev_id == dev_id)
			return d.used;
	fail_msg("no device %u", dev_id);
	return 0;
}

void assert_contains(const std::string &text, const char *part)
{
	if (text.find(part) == std::string::npos)
		fail_msg("'%s' does not say '%s'", text.c_str(), part);
}

// bytes with the little-endian field of n bytes at off set to v.
std::vector<uint8_t> patched(std::vector<uint8_t> bytes, size_t off, uint64_t v,
			     unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		bytes.at(off + i) = static_cast<uint8_t>(v >> (8 * i));
	return bytes;
}

uint64_t field(const std::vector<uint8_t> &bytes, size_t off, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= uint64_t{bytes.at(off + i)} << (8 * i);
	return v;
}

// Volumes of three extent sizes on both devices, grown, shrunk and
// deleted, with an allocation aborted on the way.
void build(Store &s, Log &log)
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

// A new table's entries, sealed one XOR apart, are byte for byte what
// make_entry() seals, for indexes across every bit that can flip, and for
// volume ids of any width.
void test_seal_unallocated_matches_make_entry(void **)
{
	const uint64_t firsts[] = {0, 1, 7, 4095, (uint64_t{1} << 32) - 300,
				   (uint64_t{1} << 63) - 200, UINT64_MAX - 599};
	const uint64_t volume_ids[] = {1, 2, 0x8000000000000001, UINT64_MAX - 1};
	std::vector<mdr_wire_entry> out(600);

	for (uint64_t first : firsts)
		for (uint64_t volume_id : volume_ids) {
			mdnode::seal_unallocated(out, volume_id, first);
			for (uint64_t n = 0; n < out.size(); n++) {
				const mdr_wire_entry want = mdr::wire::make_entry(
					{.generation = 1, .pstart = 0, .dev_id = 0,
					 .state = MDR_EXT_UNALLOCATED},
					volume_id, first + n);

				assert_memory_equal(&out[n], &want, sizeof(want));
				check_entry(out[n], volume_id, first + n);
			}
		}
	// Nothing to fill, nothing written.
	mdnode::seal_unallocated(std::span<mdr_wire_entry>(), 1, 0);
}

// Every entry of a large new table, as created, grown and replayed, is
// valid for a READ of its place, and no other volume's.
void test_large_tables_verify_entry_by_entry(void **)
{
	Store s = make_store();
	Log log;
	const uint64_t GiB = 1024 * MiB;
	const uint64_t id = create(s, log, "big", 100 * GiB);	// 25600 entries
	const uint64_t other = create(s, log, "other", 100 * GiB);
	const mdr_wire_entry e = alloc(s, log, id, 25599);

	auto verify_all = [](const Volume &v) {
		for (uint64_t i = 0; i < v.table.entries().size(); i++)
			assert_int_equal(mdr::wire::verify_entry(v.table.entries()[i], v.id, i),
					 mdr::wire::EntryCheck::ok);
	};
	assert_int_equal(s.volume(id)->table.entries().size(), 25600);
	verify_all(*s.volume(id));
	verify_all(*s.volume(other));
	// Sealed for its own place only.
	assert_int_equal(mdr::wire::verify_entry(s.volume(other)->table.entries()[7], id, 7),
			 mdr::wire::EntryCheck::bad_crc);
	assert_int_equal(mdr::wire::verify_entry(s.volume(id)->table.entries()[7], id, 8),
			 mdr::wire::EntryCheck::bad_crc);

	commit(s, log, prepared(s.prepare_resize(id, 200 * GiB)));
	assert_int_equal(s.volume(id)->table.entries().size(), 51200);
	verify_all(*s.volume(id));
	assert_memory_equal(&s.volume(id)->table.entries()[25599], &e, sizeof(e));

	Store again = replayed(log);

	assert_same_tables(s, again);
	verify_all(*again.volume(id));
}

// Volumes without a mapped extent answer without a look at their table:
// no extents on any device, nothing to free at delete, no entries in a
// snapshot; next to them a volume with extents counts and frees its own.
void test_volumes_without_extents(void **)
{
	Store s = make_store();
	Log log;
	const uint64_t empty = create(s, log, "empty", 400 * MiB);
	const uint64_t used_vol = create(s, log, "used", 16 * MiB);

	alloc(s, log, used_vol, 1);
	alloc(s, log, used_vol, 3);
	assert_true(s.extents_by_device(*s.volume(empty)).empty());

	uint64_t counted = 0;

	for (const mdr::wire::DevExtents &d : s.extents_by_device(*s.volume(used_vol)))
		counted += d.extents;
	assert_int_equal(counted, 2);

	const std::vector<uint8_t> snap = s.snapshot();

	// Header, two volumes, the two mapped entries, an empty host registry.
	assert_int_equal(snap.size(), 24 + 2 * 104 + 2 * 32 + 8);
	Store loaded = make_store();
	assert_true(loaded.load_snapshot(snap).ok());
	assert_same_tables(s, loaded);

	const uint64_t in_use = used(s, 1) + used(s, 2);

	commit(s, log, prepared(s.prepare_delete(empty)));
	assert_int_equal(used(s, 1) + used(s, 2), in_use);
	commit(s, log, prepared(s.prepare_delete(used_vol)));
	assert_int_equal(used(s, 1) + used(s, 2), 0);
}

void test_devices_are_checked(void **)
{
	assert_int_equal(Store::create({{0, "/dev/a", "A", 64 * MiB}}).error(), -EINVAL);
	assert_int_equal(Store::create({{1, "/dev/a", "A", 64 * MiB},
					{1, "/dev/b", "B", 64 * MiB}}).error(), -EINVAL);
	assert_int_equal(Store::create({{1, "/dev/a", std::string(40, 'S'), 64 * MiB}}).error(),
			 -EINVAL);
	assert_int_equal(Store::create({{1, "/dev/a", "A\n", 64 * MiB}}).error(), -EINVAL);
	assert_int_equal(Store::create({{1, "/dev/a", "A", MiB + 65535}}).error(), -EINVAL);
	assert_true(Store::create({{1, "/dev/a", std::string(39, 'S'), MiB + 65536}}).ok());

	Store s = make_store({{7, "/dev/b", "B", 32 * MiB}, {3, "/dev/a", "A", 64 * MiB}});
	const std::vector<mdr::wire::Device> devs = s.devices();

	assert_int_equal(devs.size(), 2);
	assert_int_equal(devs[0].dev_id, 3);
	assert_int_equal(devs[0].size, 64 * MiB);
	assert_int_equal(devs[0].used, 0);
	assert_string_equal(devs[0].serial.c_str(), "A");
	assert_int_equal(devs[1].dev_id, 7);
}

void test_create_volume(void **)
{
	Store s = make_store();
	Log log;
	const uint64_t id = create(s, log, "db1", 10 * MiB + 4096, 20);
	const Volume *v = s.volume("db1");

	assert_int_equal(id, 1);
	assert_non_null(v);
	assert_ptr_equal(v, s.volume(id));
	assert_string_equal(v->name.c_str(), "db1");
	assert_int_equal(v->size, 10 * MiB + 4096);
	assert_int_equal(v->extent_shift, 20);
	assert_int_equal(v->tenant, 7);
	assert_int_equal(v->generation, 1);
	assert_int_equal(v->allocated, 0);
	assert_int_equal(v->table.entries().size(), 11);
	assert_int_equal(v->table.bytes(), 11 * sizeof(mdr_wire_entry));
	assert_ptr_equal(v->table.data(), v->table.entries().data());
	assert_int_equal(reinterpret_cast<uintptr_t>(v->table.data()) % sysconf(_SC_PAGESIZE), 0);

	const uint64_t id2 = create(s, log, "db2", 4096);	// default extent size

	assert_int_equal(id2, 2);
	assert_int_equal(s.volume(id2)->extent_shift, MDR_WIRE_EXTENT_SHIFT_DEFAULT);
	assert_int_equal(s.volume(id2)->table.entries().size(), 1);
	assert_int_equal(s.counts().volumes, 2);
	assert_int_equal(s.counts().extents, 0);
	assert_int_equal(s.counts().in_flight, 0);
	assert_null(s.volume(3));
	assert_null(s.volume("db3"));
}

void test_prepare_errors(void **)
{
	Store s = make_store();
	Log log;
	const uint64_t id = create(s, log, "vol", 4 * MiB, 20);	// 4 extents
	const std::vector<uint8_t> before = s.snapshot();

	for (const char *name : {"", "a/b", "a b", "caf\xc3\xa9", "x\n"})
		assert_int_equal(s.prepare_create(name, 4096, 0, 0).error(), -EINVAL);
	assert_int_equal(s.prepare_create(std::string(64, 'a'), 4096, 0, 0).error(), -EINVAL);
	for (uint64_t size : {uint64_t{0}, uint64_t{4095}, uint64_t{4097}})
		assert_int_equal(s.prepare_create("new", size, 0, 0).error(), -EINVAL);
	assert_int_equal(s.prepare_create("new", 4096, 15, 0).error(), -EINVAL);
	assert_int_equal(s.prepare_create("new", 4096, 31, 0).error(), -EINVAL);
	assert_int_equal(s.prepare_create("vol", 4096, 0, 0).error(), -EEXIST);

	// A name being created is taken; the volume is not there yet.
	const Change pending_create = prepared(s.prepare_create(std::string(63, 'a'), 4096, 0, 0));
	assert_int_equal(s.prepare_create(std::string(63, 'a'), 4096, 0, 0).error(), -EEXIST);
	assert_int_equal(s.prepare_alloc(id + 1, 0).error(), -ENOENT);
	assert_int_equal(s.prepare_delete(id + 1).error(), -ENOENT);

	assert_int_equal(s.prepare_delete(99).error(), -ENOENT);
	assert_int_equal(s.prepare_resize(99, 4096).error(), -ENOENT);
	assert_int_equal(s.prepare_alloc(99, 0).error(), -ENOENT);
	assert_int_equal(s.prepare_alloc(id, 4).error(), -ERANGE);
	assert_int_equal(s.prepare_alloc(id, UINT64_MAX).error(), -ERANGE);
	assert_int_equal(s.prepare_resize(id, 0).error(), -EINVAL);
	assert_int_equal(s.prepare_resize(id, 4097).error(), -EINVAL);
	assert_int_equal(s.prepare_resize(id, 4 * MiB).error(), -EINVAL);

	// Changes of one volume exclude each other.
	const Change pending_alloc = prepared_alloc(s, id, 1);
	mdr::Result<Allocation> again = s.prepare_alloc(id, 1);
	assert_int_equal(again.error(), -EINPROGRESS);
	assert_contains(again.message(), "being allocated");
	assert_int_equal(s.prepare_delete(id).error(), -EBUSY);
	assert_int_equal(s.prepare_resize(id, 8 * MiB).error(), -EBUSY);
	assert_true(s.abort(pending_alloc).ok());

	const Change pending_resize = prepared(s.prepare_resize(id, 8 * MiB));
	assert_int_equal(s.prepare_alloc(id, 0).error(), -EBUSY);
	assert_int_equal(s.prepare_delete(id).error(), -EBUSY);
	assert_int_equal(s.prepare_resize(id, 2 * MiB).error(), -EBUSY);
	assert_true(s.abort(pending_resize).ok());
	assert_true(s.abort(pending_create).ok());

	// Nothing changed but the next id: the aborted create's is not reused.
	std::vector<uint8_t> after = s.snapshot();
	assert_int_equal(field(after, 8, 8), 3);
	assert_true(patched(after, 8, 2, 8) == before);
	assert_int_equal(s.counts().in_flight, 0);
	assert_int_equal(used(s, 1) + used(s, 2), 0);
	check_tables(s);
}

void test_alloc_maps_and_is_idempotent(void **)
{
	Store s = make_store();
	Log log;
	const uint64_t id = create(s, log, "vol", 16 * MiB);	// 4 MiB extents
	const mdr_wire_entry e = alloc(s, log, id, 3);
	const Volume *v = s.volume(id);

	assert_int_equal(le64toh(e.generation), 2);
	assert_int_equal(le32toh(e.dev_id), 1);			// the most free space
	assert_int_equal(le64toh(e.pstart) % (4 * MiB / 512), 0);	// aligned
	assert_true(le64toh(e.pstart) >= MiB / 512);		// past the label
	assert_memory_equal(&v->table.entries()[3], &e, sizeof(e));
	assert_int_equal(v->allocated, 1);

	// Again: the same entry, nothing to journal.
	mdr::Result<Allocation> again = s.prepare_alloc(id, 3);
	assert_true(again.ok());
	assert_true(std::holds_alternative<mdr_wire_entry>(again.value()));
	assert_memory_equal(&std::get<mdr_wire_entry>(again.value()), &e, sizeof(e));
	assert_int_equal(log.size(), 2);
	assert_int_equal(s.counts().extents, 1);
	assert_int_equal(s.counts().in_flight, 0);
	assert_int_equal(used(s, 1), 4 * MiB);
	assert_int_equal(used(s, 2), 0);
}

void test_alloc_in_flight_is_reported_and_invisible(void **)
{
	Store s = make_store();
	Log log;
	const uint64_t id = create(s, log, "vol", 16 * MiB);
	const mdr_wire_entry before = s.volume(id)->table.entries()[0];
	const Change c0 = prepared_alloc(s, id, 0);

	assert_int_equal(c0.type, mdnode::kExtentAlloc);
	mdr::Result<Allocation> again = s.prepare_alloc(id, 0);
	assert_int_equal(again.error(), -EINPROGRESS);
	// Hosts see nothing before the journal has it.
	assert_memory_equal(&s.volume(id)->table.entries()[0], &before, sizeof(before));
	assert_int_equal(s.counts().in_flight, 1);
	assert_int_equal(used(s, 1), 4 * MiB);	// but the space is reserved

	// Another extent goes elsewhere meanwhile.
	const Change c1 = prepared_alloc(s, id, 1);
	assert_false(field(c0.payload, 4, 4) == field(c1.payload, 4, 4) &&
		     field(c0.payload, 24, 8) == field(c1.payload, 24, 8));

	const Applied a0 = commit(s, log, c0);
	assert_int_equal(a0.volume_id, id);
	assert_int_equal(a0.index, 0);
	assert_memory_equal(&s.volume(id)->table.entries()[0], &a0.entry, sizeof(a0.entry));
	commit(s, log, c1);
	assert_true(std::holds_alternative<mdr_wire_entry>(s.prepare_alloc(id, 0).value()));
	assert_int_equal(s.counts().in_flight, 0);
}

void test_alloc_spreads_by_free_space(void **)
{
	// 144 and 128 free units of 64 KiB after the label.
	Store s = make_store({{1, "/dev/a", "A", 10 * MiB}, {2, "/dev/b", "B", 9 * MiB}});
	Log log;
	const uint64_t id = create(s, log, "vol", 8 * MiB, 20);
	const uint32_t expect[] = {1, 1, 2, 1, 2, 1};	// ties go to the lower id

	for (uint64_t i = 0; i < 6; i++)
		assert_int_equal(le32toh(alloc(s, log, id, i).dev_id), expect[i]);
	assert_int_equal(used(s, 1), 4 * MiB);
	assert_int_equal(used(s, 2), 2 * MiB);
}

void test_alloc_skips_a_fragmented_device(void **)
{
	Store s = make_store({{1, "/dev/a", "A", 9 * MiB}, {2, "/dev/b", "B", 8 * MiB}});
	Log log;
	const uint64_t small = create(s, log, "small", MiB, 16);
	const uint64_t big = create(s, log, "big", 4 * MiB, 22);

	// A 64 KiB extent in the middle of device 1's only 4 MiB block.
	const Change c = prepared_alloc(s, small, 0);
	assert_true(s.abort(c).ok());
	assert_true(s.replay(c.type, patched(c.payload, 24, 64 * 128, 8)).ok());

	// Device 1 has more free space, but only device 2 a 4 MiB block.
	assert_true(9 * MiB - used(s, 1) > 8 * MiB - used(s, 2));
	assert_int_equal(le32toh(alloc(s, log, big, 0).dev_id), 2);
}

void test_enospc_changes_nothing(void **)
{
	// One 4 MiB-aligned block after the label: units 64..127.
	Store s = make_store({{1, "/dev/a", "A", 9 * MiB}});
	Log log;
	const uint64_t big = create(s, log, "big", 16 * MiB);

	assert_int_equal(le64toh(alloc(s, log, big, 0).pstart), 4 * MiB / 512);

	const std::vector<uint8_t> before = s.snapshot();
	mdr::Result<Allocation> r = s.prepare_alloc(big, 1);

	assert_int_equal(r.error(), -ENOSPC);
	assert_contains(r.message(), "no device");
	assert_true(s.snapshot() == before);
	assert_int_equal(used(s, 1), 4 * MiB);
	assert_int_equal(s.counts().in_flight, 0);

	// The rest still serves smaller extents, around the big one.
	const uint64_t small = create(s, log, "small", MiB, 16);
	for (uint64_t i = 0; i < 16; i++) {
		const uint64_t pstart = le64toh(alloc(s, log, small, i).pstart);

		assert_true(pstart >= MiB / 512);
		assert_true(pstart < 4 * MiB / 512 || pstart >= 8 * MiB / 512);
	}
	assert_int_equal(s.prepare_alloc(big, 1).error(), -ENOSPC);
}

void test_abort_gives_back(void **)
{
	Store s = make_store();
	Log log;
	const Change c = prepared(s.prepare_create("vol", 16 * MiB, 0, 1));

	assert_true(s.abort(c).ok());
	assert_null(s.volume("vol"));
	assert_int_equal(s.counts().in_flight, 0);
	assert_int_equal(s.abort(c).error(), -ENOENT);	// once
	assert_int_equal(s.commit(c).error(), -ENOENT);	// and not committed after

	const uint64_t id = create(s, log, "vol", 16 * MiB);	// the name is free
	assert_int_equal(id, 2);	// the aborted id is not used again

	const Change a = prepared_alloc(s, id, 0);
	assert_int_equal(used(s, 1), 4 * MiB);
	assert_true(s.abort(a).ok());
	assert_int_equal(used(s, 1), 0);
	check_tables(s);
	assert_int_equal(le64toh(alloc(s, log, id, 0).generation), 2);
	assert_int_equal(s.commit(a).error(), -ENOENT);

	const Change b = prepared_alloc(s, id, 1);
	commit(s, log, b);
	assert_int_equal(s.commit(b).error(), -ENOENT);	// not twice
	assert_int_equal(s.abort(b).error(), -ENOENT);
	assert_int_equal(s.commit(Change{9, {}}).error(), -ENOENT);
	assert_int_equal(s.abort(Change{mdnode::kVolumeDelete, {1, 2}}).error(), -ENOENT);
}

void test_delete_frees_and_hands_back_the_table(void **)
{
	Store s = make_store();
	Log log;
	const uint64_t id = create(s, log, "vol", 16 * MiB);
	alloc(s, log, id, 0);
	const mdr_wire_entry e2 = alloc(s, log, id, 2);
	const void *table = s.volume(id)->table.data();

	Applied done = commit(s, log, prepared(s.prepare_delete(id)));
	assert_int_equal(done.volume_id, id);
	assert_true(done.old_table.has_value());
	assert_ptr_equal(done.old_table->data(), table);
	// Still mapped: hosts may READ it until the server deregisters it.
	assert_memory_equal(&done.old_table->entries()[2], &e2, sizeof(e2));
	done.old_table.reset();

	assert_null(s.volume(id));
	assert_null(s.volume("vol"));
	assert_int_equal(used(s, 1) + used(s, 2), 0);
	assert_int_equal(s.counts().volumes, 0);
	assert_int_equal(s.counts().extents, 0);
	assert_int_equal(create(s, log, "vol", 4096), 2);
}

void test_resize_grows_and_shrinks(void **)
{
	Store s = make_store();
	Log log;
	const uint64_t id = create(s, log, "vol", 8 * MiB);	// 2 extents
	const mdr_wire_entry e1 = alloc(s, log, id, 1);

	const Applied grown = commit(s, log, prepared(s.prepare_resize(id, 16 * MiB + 4096)));
	const Volume *v = s.volume(id);
	assert_int_equal(v->size, 16 * MiB + 4096);
	assert_int_equal(v->generation, 2);
	assert_int_equal(v->table.entries().size(), 5);
	assert_memory_equal(&v->table.entries()[1], &e1, sizeof(e1));
	assert_int_equal(v->allocated, 1);
	// The old table stays as it was until the server drops it.
	assert_int_equal(grown.old_table->entries().size(), 2);
	assert_memory_equal(&grown.old_table->entries()[1], &e1, sizeof(e1));

	const mdr_wire_entry e4 = alloc(s, log, id, 4);
	const Applied shrunk = commit(s, log, prepared(s.prepare_resize(id, 4 * MiB)));
	v = s.volume(id);
	assert_int_equal(v->generation, 3);
	assert_int_equal(v->table.entries().size(), 1);
	assert_int_equal(v->allocated, 0);
	assert_int_equal(used(s, 1) + used(s, 2), 0);	// extents 1 and 4 freed
	assert_memory_equal(&shrunk.old_table->entries()[4], &e4, sizeof(e4));

	// Grown again, the extents are new: unallocated at generation 1.
	commit(s, log, prepared(s.prepare_resize(id, 8 * MiB)));
	assert_int_equal(s.volume(id)->table.entries()[1].state, MDR_EXT_UNALLOCATED);
	assert_int_equal(s.volume(id)->generation, 4);
}

void test_replay_matches_live(void **)
{
	Store live = make_store();
	Log log;

	build(live, log);

	Store again = replayed(log);

	assert_true(again == live);
	assert_same_tables(again, live);
	assert_true(again.snapshot() == live.snapshot());
	assert_int_equal(used(again, 1), used(live, 1));
	assert_int_equal(used(again, 2), used(live, 2));

	// And both go on the same way.
	const uint64_t a = live.volume("a")->id;
	assert_true(prepared_alloc(again, a, 9).payload == prepared_alloc(live, a, 9).payload);
}

void test_replay_refuses_what_does_not_fit(void **)
{
	Store live = make_store();
	Log log;
	const uint64_t id = create(live, log, "vol", 16 * MiB);

	alloc(live, log, id, 0);
	commit(live, log, prepared(live.prepare_resize(id, 32 * MiB)));	// 8 extents

	const Change delete_99 = prepared(live.prepare_delete(id));
	assert_true(live.abort(delete_99).ok());

	const std::vector<uint8_t> &create_rec = log[0].payload;
	const std::vector<uint8_t> &alloc_rec = log[1].payload;
	const std::vector<uint8_t> &resize_rec = log[2].payload;
	// Extent 1 in extent 0's place, which is taken.
	const std::vector<uint8_t> ext1 = patched(alloc_rec, 16, 1, 8);
	const uint64_t pstart0 = field(alloc_rec, 24, 8);

	Store s = replayed(log);
	const std::vector<uint8_t> before = s.snapshot();
	auto refused = [&](uint16_t type, const std::vector<uint8_t> &payload, int err,
			   const char *says) {
		mdr::Status st = s.replay(type, payload);

		assert_int_equal(st.error(), err);
		assert_contains(st.message(), says);
		assert_true(s.snapshot() == before);
		check_tables(s);
	};

	refused(mdnode::kExtentAlloc, ext1, -EEXIST,
		"record EXTENT_ALLOC (volume 1, extent 1): device 1: ");
	refused(mdnode::kExtentAlloc, ext1, -EEXIST, "in use");
	refused(mdnode::kExtentAlloc, patched(alloc_rec, 8, 99, 8), -ENOENT,
		"EXTENT_ALLOC (volume 99, extent 0): no such volume");
	refused(mdnode::kExtentAlloc, patched(ext1, 4, 9, 4), -ENOENT,
		"device 9 is not configured");
	refused(mdnode::kExtentAlloc, alloc_rec, -EEXIST, "mapped already");
	refused(mdnode::kExtentAlloc, patched(ext1, 32, 3, 8), -EINVAL,
		"generation 3 does not follow the entry's 1");
	refused(mdnode::kExtentAlloc, patched(alloc_rec, 16, 8, 8), -ERANGE, "8 extents");
	refused(mdnode::kExtentAlloc, patched(ext1, 24, pstart0 + 8192 + 8, 8), -EINVAL,
		"not aligned");
	refused(mdnode::kExtentAlloc, patched(ext1, 24, 0, 8), -EINVAL, "outside");
	refused(mdnode::kVolumeCreate, create_rec, -EEXIST, "exists");
	refused(mdnode::kVolumeCreate, patched(create_rec, 8, 5, 8), -EEXIST, "taken");
	refused(mdnode::kVolumeCreate, patched(patched(create_rec, 8, 5, 8), 32, '/', 1),
		-EINVAL, "volume name");
	refused(mdnode::kVolumeResize, resize_rec, -EINVAL,
		"generation 2 does not follow the volume's 2");
	refused(mdnode::kVolumeDelete, patched(delete_99.payload, 8, 99, 8), -ENOENT,
		"VOLUME_DELETE (volume 99)");

	// Malformed records.
	refused(mdnode::kExtentAlloc, {alloc_rec.begin(), alloc_rec.end() - 1}, -EINVAL,
		"39 bytes, not 40");
	refused(mdnode::kExtentAlloc, patched(ext1, 0, 2, 2), -EINVAL, "unknown version 2");
	refused(mdnode::kExtentAlloc, patched(ext1, 2, 1, 2), -EINVAL, "reserved");
	refused(mdnode::kVolumeCreate, patched(create_rec, 28, 1, 4), -EINVAL, "reserved");
	refused(10, alloc_rec, -EINVAL, "unknown type 10");
	std::vector<uint8_t> unpadded = patched(create_rec, 8, 5, 8);
	for (size_t i = 32; i < 96; i++)
		unpadded[i] = 'a';
	refused(mdnode::kVolumeCreate, unpadded, -EINVAL, "NUL-padded");

	// What fits still does.
	assert_true(s.replay(mdnode::kExtentAlloc, patched(ext1, 24, pstart0 + 8192, 8)).ok());
	check_tables(s);
}

void test_snapshot_round_trip(void **)
{
	Store live = make_store();
	Log log;

	build(live, log);

	const std::vector<uint8_t> snap = live.snapshot();
	Store loaded = make_store();

	assert_true(loaded.load_snapshot(snap).ok());
	check_tables(loaded);
	assert_true(loaded == live);
	assert_same_tables(loaded, live);
	assert_true(loaded.snapshot() == snap);

	// The journal goes on from it: generations continue.
	const uint64_t a = live.volume("a")->id;
	Log later;
	commit(live, later, prepared_alloc(live, a, 9));
	commit(live, later, prepared(live.prepare_resize(a, 20 * MiB)));
	for (const Change &c : later)
		assert_true(loaded.replay(c.type, c.payload).ok());
	assert_true(loaded == live);
}

void test_snapshot_refuses_what_does_not_fit(void **)
{
	Store live = make_store();
	Log log;
	const uint64_t id = create(live, log, "vol", 16 * MiB);

	alloc(live, log, id, 0);
	alloc(live, log, id, 1);

	// Header 24 bytes, volume 104, then the entries at 128 and 160.
	const std::vector<uint8_t> snap = live.snapshot();
	auto refused = [](const std::vector<uint8_t> &bytes, int err, const char *says) {
		Store s = make_store();
		mdr::Status st = s.load_snapshot(bytes);

		assert_int_equal(st.error(), err);
		assert_contains(st.message(), says);
		assert_true(s == make_store());
	};

	assert_int_equal(snap.size(), 24 + 104 + 2 * 32 + 8);
	refused(patched(snap, 0, 0, 4), -EINVAL, "bad magic");
	refused({snap.begin(), snap.begin() + 10}, -EINVAL, "shorter than a header");
	refused({snap.begin(), snap.end() - 1}, -EINVAL, "ends before the host registry");
	refused({snap.begin(), snap.end() - 9}, -EINVAL, "ends within");
	refused({snap.begin(), snap.begin() + 100}, -EINVAL, "ends within volume 1");
	std::vector<uint8_t> longer = snap;
	longer.push_back(0);
	refused(longer, -EINVAL, "1 bytes after the last host");
	refused(patched(snap, 4, 3, 2), -EINVAL, "unknown version 3");
	refused(patched(snap, 24 + 104 + 2 * 32, 1, 8), -EINVAL, "ends within host 1 of 1");
	refused(patched(snap, 8, 1, 8), -EINVAL, "below the next id");
	refused(patched(snap, 24 + 24, 15, 4), -EINVAL, "extent shift 15");
	refused(patched(snap, 160 + 16, field(snap, 128 + 16, 8), 8), -EEXIST, "in use");
	refused(patched(snap, 128 + 24, 9, 4), -ENOENT, "device 9");
	refused(patched(snap, 128 + 8, 1, 8), -EINVAL, "mapped at generation 1");
	refused(patched(snap, 160, 0, 8), -EINVAL, "out of order");
	refused(patched(snap, 160, 4, 8), -EINVAL, "beyond the volume");

	// Only into an empty store.
	assert_int_equal(live.load_snapshot(snap).error(), -EBUSY);
}

void test_ids_are_never_reused(void **)
{
	Store s = make_store();
	Log log;

	assert_int_equal(create(s, log, "a", 4096), 1);
	const uint64_t b = create(s, log, "b", 4096);
	commit(s, log, prepared(s.prepare_delete(b)));
	const uint64_t c = create(s, log, "c", 4096);
	assert_int_equal(c, 3);
	commit(s, log, prepared(s.prepare_delete(c)));	// the highest one

	Log ignored;
	Store from_journal = replayed(log);
	assert_int_equal(create(from_journal, ignored, "d", 4096), 4);

	Store from_snapshot = make_store();
	assert_true(from_snapshot.load_snapshot(s.snapshot()).ok());
	assert_int_equal(create(from_snapshot, ignored, "d", 4096), 4);
	commit(from_snapshot, ignored, prepared(from_snapshot.prepare_delete(4)));

	Store twice = make_store();
	assert_true(twice.load_snapshot(from_snapshot.snapshot()).ok());
	assert_int_equal(create(twice, ignored, "d", 4096), 5);
}

void test_queries(void **)
{
	Store s = make_store({{1, "/dev/a", "A", 16 * MiB}, {2, "/dev/b", "B", 16 * MiB}});
	Log log;

	for (int i = 1; i <= 5; i++)
		create(s, log, "v" + std::to_string(i), 4 * MiB, 20);
	commit(s, log, prepared(s.prepare_delete(3)));

	mdnode::VolumePage page = s.list_volumes(0, 2);
	assert_int_equal(page.volumes.size(), 2);
	assert_int_equal(page.volumes[0]->id, 1);
	assert_int_equal(page.volumes[1]->id, 2);
	assert_int_equal(page.next, 4);
	page = s.list_volumes(page.next, 2);
	assert_int_equal(page.volumes.size(), 2);
	assert_int_equal(page.volumes[0]->id, 4);
	assert_int_equal(page.volumes[1]->id, 5);
	assert_int_equal(page.next, 0);
	assert_int_equal(s.list_volumes(6, 2).volumes.size(), 0);
	assert_null(s.volume("v3"));

	for (uint64_t i = 0; i < 4; i++)
		alloc(s, log, 1, i);
	alloc(s, log, 2, 3);
	const std::vector<mdr::wire::DevExtents> per_dev = s.extents_by_device(*s.volume(1));
	assert_int_equal(per_dev.size(), 2);
	assert_int_equal(per_dev[0].dev_id, 1);
	assert_int_equal(per_dev[0].extents, 2);
	assert_int_equal(per_dev[1].dev_id, 2);
	assert_int_equal(per_dev[1].extents, 2);
	assert_int_equal(s.extents_by_device(*s.volume(4)).size(), 0);

	const std::vector<mdr::wire::Device> devs = s.devices();
	assert_int_equal(devs[0].used + devs[1].used, 5 * MiB);
	assert_string_equal(devs[1].serial.c_str(), "B");

	const Change c = prepared_alloc(s, 5, 0);
	assert_int_equal(s.counts().volumes, 4);
	assert_int_equal(s.counts().extents, 5);
	assert_int_equal(s.counts().in_flight, 1);
	assert_true(s.abort(c).ok());
}

void test_nothing_replays_with_changes_in_flight(void **)
{
	Store s = make_store();
	Log log;

	create(s, log, "a", 4096);

	const Change c = prepared(s.prepare_create("b", 4096, 0, 0));
	Store t = make_store();
	const Change d = prepared(t.prepare_create("b", 4096, 0, 0));

	assert_int_equal(s.replay(log[0].type, log[0].payload).error(), -EBUSY);
	assert_int_equal(t.load_snapshot(s.snapshot()).error(), -EBUSY);
	assert_true(s.abort(c).ok());
	assert_true(t.abort(d).ok());
	assert_true(t.load_snapshot(s.snapshot()).ok());
}

// MOVE_BEGIN freezes the extent at its old place and takes the new one;
// MOVE_DONE maps it at the new place and frees the old one; MOVE_ABORT
// maps it at the old place again and frees the new one. The generation
// grows by one at each. While it moves, nothing else is prepared on the
// extent or its volume. Replay rebuilds the same state, and refuses an end
// without a begin, or one that does not match it.
void test_move_records(void **)
{
	Store live = make_store();
	Log log;
	const uint64_t id = create(live, log, "vol", 16 * MiB);
	const mdr::wire::Entry e0 = mdr::wire::decode_entry(alloc(live, log, id, 0));
	const uint32_t to = e0.dev_id == 1 ? 2 : 1;
	auto entry = [&](const Store &st) {
		return mdr::wire::decode_entry(st.volume(id)->table.entries()[0]);
	};
	auto used = [](const Store &st, uint32_t dev) {
		for (const auto &d : st.devices())
			if (d.dev_id == dev)
				return d.used;
		return uint64_t{0};
	};
	const uint64_t used_to = used(live, to);

	assert_int_equal(live.prepare_move(id, 0, e0.dev_id).error(), -EINVAL);
	assert_int_equal(live.prepare_move(id, 1, to).error(), -EINVAL);	// unallocated
	assert_int_equal(live.prepare_move(id, 4, to).error(), -ERANGE);
	assert_int_equal(live.prepare_move(id, 0, 9).error(), -ENOENT);
	assert_int_equal(live.prepare_move(id + 1, 0, to).error(), -ENOENT);

	const Change begin = prepared(live.prepare_move(id, 0, to));
	assert_int_equal(live.prepare_move(id, 0, to).error(), -EBUSY);	// in flight
	commit(live, log, begin);
	mdr::wire::Entry e = entry(live);
	assert_int_equal(e.state, MDR_EXT_FROZEN);
	assert_int_equal(e.generation, 3);
	assert_int_equal(e.dev_id, e0.dev_id);
	assert_int_equal(e.pstart, e0.pstart);
	assert_int_equal(used(live, to), used_to + 4 * MiB);
	assert_int_equal(live.counts().moving, 1);
	assert_int_equal(live.moves().size(), 1);
	assert_int_equal(live.prepare_move(id, 0, to).error(), -EBUSY);
	assert_int_equal(live.prepare_alloc(id, 0).error(), -EAGAIN);
	assert_int_equal(live.prepare_delete(id).error(), -EBUSY);
	assert_int_equal(live.prepare_resize(id, 32 * MiB).error(), -EBUSY);
	assert_int_equal(live.prepare_move_done(id, 1).error(), -ENOENT);

	// Replayed up to here: the same move in progress.
	assert_true(replayed(log) == live);

	const Change done = prepared(live.prepare_move_done(id, 0));
	assert_int_equal(live.prepare_move_abort(id, 0).error(), -EBUSY);
	commit(live, log, done);
	e = entry(live);
	assert_int_equal(e.state, MDR_EXT_MAPPED);
	assert_int_equal(e.generation, 4);
	assert_int_equal(e.dev_id, to);
	assert_int_equal(used(live, e0.dev_id), 0);
	assert_int_equal(live.counts().moving, 0);
	assert_true(replayed(log) == live);

	// And back, aborted: the old place (now `to`) again, one on.
	commit(live, log, prepared(live.prepare_move(id, 0, e0.dev_id)));
	const mdr::wire::Entry placed = e;
	commit(live, log, prepared(live.prepare_move_abort(id, 0)));
	e = entry(live);
	assert_int_equal(e.state, MDR_EXT_MAPPED);
	assert_int_equal(e.generation, 6);
	assert_int_equal(e.dev_id, placed.dev_id);
	assert_int_equal(e.pstart, placed.pstart);
	assert_int_equal(used(live, e0.dev_id), 0);
	Store again = replayed(log);
	assert_true(again == live);

	// An end without a begin, or a begin of a moving extent.
	const Store before = replayed(log);
	mdr::Status st = again.replay(mdnode::kMoveDone, done.payload);
	assert_int_equal(st.error(), -ENOENT);
	assert_contains(st.message(), "record MOVE_DONE (volume 1, extent 0): the extent is not moving");
	st = again.replay(mdnode::kMoveBegin, begin.payload);
	assert_int_equal(st.error(), -EINVAL);
	assert_contains(st.message(), "not mapped at the old place");
	st = again.replay(mdnode::kMoveBegin, patched(begin.payload, 36, 1, 4));
	assert_int_equal(st.error(), -EINVAL);
	assert_contains(st.message(), "reserved");
	assert_true(again == before);
}

// A place reserved for a move's pre-copy is taken from the device until
// MOVE_BEGIN takes it over (prepare_move() on that device), or it is
// released; nothing is journaled for it, so a replay does not have it.
// While it is reserved, the volume is neither deleted nor resized.
void test_move_reservations(void **)
{
	Store s = make_store();
	Log log;
	const uint64_t id = create(s, log, "v", 4 * MiB, 20);
	const mdr_wire_entry e0 = alloc(s, log, id, 0);
	alloc(s, log, id, 1);
	const uint32_t to = le32toh(e0.dev_id) == 1 ? 2 : 1;
	const uint64_t before = used(s, to);

	assert_int_equal(s.reserve_move(id, 0, le32toh(e0.dev_id)).error(), -EINVAL);
	assert_int_equal(s.reserve_move(id, 2, to).error(), -EINVAL);	// unallocated
	assert_int_equal(s.reserve_move(id, 0, 9).error(), -ENOENT);
	assert_int_equal(used(s, to), before);

	// Reserved, then released: the space comes back.
	mdr::Result<uint64_t> place = s.reserve_move(id, 0, to);
	assert_true(place.ok());
	assert_int_equal(used(s, to), before + MiB);
	assert_int_equal(s.reserve_move(id, 0, to).error(), -EBUSY);
	assert_int_equal(s.prepare_delete(id).error(), -EBUSY);
	assert_int_equal(s.prepare_resize(id, 8 * MiB).error(), -EBUSY);
	assert_int_equal(used(replayed(log), to), before);
	s.release_move(id, 0);
	s.release_move(id, 0);	// none: nothing
	assert_int_equal(used(s, to), before);

	// Reserved, then taken by MOVE_BEGIN at that very place.
	place = s.reserve_move(id, 0, to);
	assert_true(place.ok());
	mdr::Result<uint64_t> other = s.reserve_move(id, 1, to);
	assert_true(other.ok());
	assert_int_not_equal(other.value(), place.value());
	const Change begin = prepared(s.prepare_move(id, 0, to));
	assert_int_equal(used(s, to), before + 2 * MiB);
	commit(s, log, begin);
	assert_int_equal(s.move(id, 0)->new_pstart, place.value());
	assert_int_equal(used(s, to), before + 2 * MiB);
	s.release_move(id, 0);	// taken over: nothing to release
	assert_int_equal(used(s, to), before + 2 * MiB);
	s.release_move(id, 1);
	assert_int_equal(used(s, to), before + MiB);
	commit(s, log, prepared(s.prepare_move_abort(id, 0)));
	assert_int_equal(used(s, to), before);
	assert_true(s.prepare_delete(id).ok());
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_devices_are_checked),
		cmocka_unit_test(test_create_volume),
		cmocka_unit_test(test_prepare_errors),
		cmocka_unit_test(test_alloc_maps_and_is_idempotent),
		cmocka_unit_test(test_alloc_in_flight_is_reported_and_invisible),
		cmocka_unit_test(test_alloc_spreads_by_free_space),
		cmocka_unit_test(test_alloc_skips_a_fragmented_device),
		cmocka_unit_test(test_enospc_changes_nothing),
		cmocka_unit_test(test_abort_gives_back),
		cmocka_unit_test(test_delete_frees_and_hands_back_the_table),
		cmocka_unit_test(test_resize_grows_and_shrinks),
		cmocka_unit_test(test_replay_matches_live),
		cmocka_unit_test(test_replay_refuses_what_does_not_fit),
		cmocka_unit_test(test_snapshot_round_trip),
		cmocka_unit_test(test_snapshot_refuses_what_does_not_fit),
		cmocka_unit_test(test_ids_are_never_reused),
		cmocka_unit_test(test_queries),
		cmocka_unit_test(test_nothing_replays_with_changes_in_flight),
		cmocka_unit_test(test_move_records),
		cmocka_unit_test(test_move_reservations),
		cmocka_unit_test(test_seal_unallocated_matches_make_entry),
		cmocka_unit_test(test_large_tables_verify_entry_by_entry),
		cmocka_unit_test(test_volumes_without_extents),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
