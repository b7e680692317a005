// SPDX-License-Identifier: GPL-2.0
//
// test_store_tables.cc - the tables of mdnode's volumes: a new table's
// entries sealed as make_entry() seals them, large tables that verify entry
// by entry as created, grown and replayed, and volumes without a mapped
// extent.
#include <cstdint>
#include <span>
#include <vector>

#include "lib/wire/wire.h"
#include "mdnode/store.h"

#include "tests/test_store.h"

#include "tests/common/cmocka_cxx.h"

namespace {

using namespace mdr::test;

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

	// Header, two volumes, the two mapped entries, an empty host registry,
	// no recorded device, no holder.
	assert_int_equal(snap.size(), 24 + 2 * 104 + 2 * 32 + 8 + 8 + 16);
	Store loaded = make_store();
	assert_true(loaded.load_snapshot(snap).ok());
	assert_same_tables(s, loaded);

	const uint64_t in_use = used(s, 1) + used(s, 2);

	commit(s, log, prepared(s.prepare_delete(empty)));
	assert_int_equal(used(s, 1) + used(s, 2), in_use);
	commit(s, log, prepared(s.prepare_delete(used_vol)));
	assert_int_equal(used(s, 1) + used(s, 2), 0);
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seal_unallocated_matches_make_entry),
		cmocka_unit_test(test_large_tables_verify_entry_by_entry),
		cmocka_unit_test(test_volumes_without_extents),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
