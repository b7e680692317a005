// SPDX-License-Identifier: GPL-2.0
//
// test_store_volumes.cc - mdnode's state, volume by volume: devices checked,
// creation, every prepare error, ALLOC (idempotent, in flight, spread by free
// space, past a fragmented device, ENOSPC), abort, delete, resize, ids never
// used again, and the queries; every entry of every table verifies after
// every step.
#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include <endian.h>
#include <unistd.h>

#include "lib/wire/wire.h"
#include "mdnode/store.h"

#include "tests/test_store.h"

#include "tests/common/cmocka_cxx.h"

namespace {

using namespace mdr::test;

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
	// Another volume's extent, for the store's total (kept, not summed).
	const uint64_t other = create(s, log, "other", 8 * MiB);
	alloc(s, log, other, 0);
	assert_int_equal(s.counts().extents, 3);
	const Applied shrunk = commit(s, log, prepared(s.prepare_resize(id, 4 * MiB)));
	v = s.volume(id);
	assert_int_equal(v->generation, 3);
	assert_int_equal(v->table.entries().size(), 1);
	assert_int_equal(v->allocated, 0);
	assert_int_equal(s.counts().extents, 1);
	// extents 1 and 4 freed; the other volume's is left
	assert_int_equal(used(s, 1) + used(s, 2), 4 * MiB);
	assert_memory_equal(&shrunk.old_table->entries()[4], &e4, sizeof(e4));

	// Grown again, the extents are new: unallocated at generation 1.
	commit(s, log, prepared(s.prepare_resize(id, 8 * MiB)));
	assert_int_equal(s.volume(id)->table.entries()[1].state, MDR_EXT_UNALLOCATED);
	assert_int_equal(s.volume(id)->generation, 4);
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
		cmocka_unit_test(test_ids_are_never_reused),
		cmocka_unit_test(test_queries),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
