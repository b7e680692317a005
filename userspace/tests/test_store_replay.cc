// SPDX-License-Identifier: GPL-2.0
//
// test_store_replay.cc - mdnode's state rebuilt: live changes against the
// same records replayed into a fresh store, records that do not fit
// refused, snapshots round trip and refuse what does not fit, and nothing
// replays while changes are in flight.
#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/wire/wire.h"
#include "mdnode/store.h"

#include "tests/test_store.h"

#include "tests/common/cmocka_cxx.h"

namespace {

using namespace mdr::test;

void test_replay_matches_live(void **)
{
	Store live = make_store();
	Log log;

	build(live, log);

	Store again = replayed(log);

	assert_true(again == live);
	assert_true(live.counts().extents > 0);
	assert_int_equal(again.counts().extents, live.counts().extents);
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
	refused(mdnode::kVolumeCreate, patched(create_rec, 28, 3, 4), -EINVAL, "unknown flags");
	refused(12, alloc_rec, -EINVAL, "unknown type 12");
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
	assert_int_equal(loaded.counts().extents, live.counts().extents);
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

	assert_int_equal(snap.size(), 24 + 104 + 2 * 32 + 8 + 8 + 16);
	refused(patched(snap, 0, 0, 4), -EINVAL, "bad magic");
	refused({snap.begin(), snap.begin() + 10}, -EINVAL, "shorter than a header");
	refused({snap.begin(), snap.end() - 1}, -EINVAL, "ends before the holders");
	refused({snap.begin(), snap.end() - 17}, -EINVAL, "ends before the recorded devices");
	refused({snap.begin(), snap.end() - 25}, -EINVAL, "ends before the host registry");
	refused({snap.begin(), snap.end() - 33}, -EINVAL, "ends within");
	refused({snap.begin(), snap.begin() + 100}, -EINVAL, "ends within volume 1");
	std::vector<uint8_t> longer = snap;
	longer.push_back(0);
	refused(longer, -EINVAL, "1 bytes after the last holder");
	refused(patched(snap, 4, 5, 2), -EINVAL, "unknown version 5");
	const size_t holders = snap.size() - 16;
	refused(patched(snap, holders, 1, 8), -EINVAL, "of unknown holders");
	refused(patched(snap, holders + 8, 1, 8), -EINVAL, "ends within holder 1 of 1");
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

// Holders (store.h): added and dropped by records, live and at replay
// alike; a drop in flight makes the host no holder at once; a holder of a
// volume deleted meanwhile changes nothing; a volume created by a node
// from before holders (its VOLUME_CREATE without the flag) has holders
// unknown until HOLDERS_COMPLETE, through snapshots too.
void test_holders(void **)
{
	Store live = make_store();
	Log log;
	const uint64_t a = create(live, log, "a", 4 * MiB);
	const uint64_t b = create(live, log, "b", 4 * MiB);

	assert_true(live.volume(a)->holders_known);
	commit(live, log, live.prepare_holder_add(a, 0x11));
	commit(live, log, live.prepare_holder_add(a, 0x22));
	commit(live, log, live.prepare_holder_add(b, 0x11));
	// A host of version 1 or 2 names its id, 0 too.
	commit(live, log, live.prepare_holder_add(a, 0));
	assert_true(live.holder(a, 0x11) && live.holder(a, 0x22) && live.holder(b, 0x11));
	assert_true(live.holder(a, 0));
	assert_false(live.holder(b, 0x22));

	const Change drop = live.prepare_holder_drop(a, 0x22);
	assert_false(live.holder(a, 0x22));
	assert_true(live.volume(a)->holders.contains(0x22));
	assert_int_equal(live.counts().in_flight, 1);
	assert_int_equal(live.replay(drop.type, drop.payload).error(), -EBUSY);
	commit(live, log, drop);
	assert_int_equal(live.counts().in_flight, 0);
	assert_false(live.volume(a)->holders.contains(0x22));

	// Added while its volume goes: nothing.
	const Change late = live.prepare_holder_add(b, 0x33);
	commit(live, log, prepared(live.prepare_delete(b)));
	commit(live, log, late);
	assert_null(live.volume(b));
	assert_int_equal(live.abort(late).error(), -ENOENT);

	// A volume of a node from before: its create without the flag.
	mdnode::Record old{.type = mdnode::kVolumeCreate, .volume_id = 7, .size = 4 * MiB,
			   .extent_shift = 16, .tenant = 0, .name = "old"};
	const Change old_create = mdnode::encode_record(old);
	assert_true(live.replay(old_create.type, old_create.payload).ok());
	log.push_back(old_create);
	assert_false(live.volume(7)->holders_known);
	assert_int_equal(live.holders_unknown(), 1);

	Store again = replayed(log);
	assert_true(again == live);
	Store loaded = make_store();
	assert_true(loaded.load_snapshot(live.snapshot()).ok());
	assert_true(loaded == live);
	assert_true(loaded.snapshot() == live.snapshot());
	assert_false(loaded.volume(7)->holders_known);
	assert_true(loaded.holder(a, 0x11) && loaded.holder(a, 0));

	// A snapshot of version 3 (no holders section): none known.
	std::vector<uint8_t> v3 = live.snapshot();
	v3.resize(v3.size() - 8 - 8 * live.holders_unknown() - 8 - 16 * 2);
	v3[4] = 3;
	Store older = make_store();
	assert_true(older.load_snapshot(v3).ok());
	assert_false(older.volume(a)->holders_known);
	assert_true(older.volume(a)->holders.empty());
	assert_int_equal(older.holders_unknown(), 2);

	commit(live, log, live.prepare_holders_complete());
	assert_true(live.volume(7)->holders_known);
	assert_int_equal(live.holders_unknown(), 0);
	assert_true(replayed(log) == live);
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

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay_matches_live),
		cmocka_unit_test(test_replay_refuses_what_does_not_fit),
		cmocka_unit_test(test_snapshot_round_trip),
		cmocka_unit_test(test_snapshot_refuses_what_does_not_fit),
		cmocka_unit_test(test_holders),
		cmocka_unit_test(test_nothing_replays_with_changes_in_flight),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
