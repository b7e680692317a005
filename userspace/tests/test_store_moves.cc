// SPDX-License-Identifier: GPL-2.0
//
// test_store_moves.cc - the records of a move in mdnode's state: MOVE_BEGIN
// freezes an extent and takes its new place, MOVE_DONE maps it there and
// frees the old one, MOVE_ABORT rolls back; a place reserved for a
// pre-copy, and what it keeps from happening meanwhile.
#include <cerrno>
#include <cstdint>
#include <vector>

#include <endian.h>

#include "lib/wire/wire.h"
#include "mdnode/store.h"

#include "tests/test_store.h"

#include "tests/common/cmocka_cxx.h"

namespace {

using namespace mdr::test;

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
		cmocka_unit_test(test_move_records),
		cmocka_unit_test(test_move_reservations),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
