// SPDX-License-Identifier: GPL-2.0
//
// test_migrate_precopy.cc - the pre-copy of a move (holders of wire version
// 2), driven through the Net seam with a fake transport: TRACK, the extent
// copied while in use, then under the freeze only the granules the holders
// report; dirty masks as runs; the whole extent again whenever a holder's
// notes cannot be trusted or a holder cannot note its writes; a move that
// ends before MOVE_BEGIN gives its reserved place back.
#include <bit>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "lib/wire/wire.h"
#include "mdnode/log.h"
#include "mdnode/node.h"
#include "mdnode/store.h"

#include "tests/test_migrate.h"

#include "tests/common/cmocka_cxx.h"

namespace wire = mdr::wire;
using mdnode::ConnId;

namespace {

using namespace mdr::test;

// ---------------------------------------------------------------------------
// The pre-copy (version 2 holders).

constexpr uint64_t kGranule = kExtent / MDR_WIRE_TRACK_GRANULES;	// 16 KiB

// What extent 1 holds when PreSetup stamped it, as one image.
std::vector<uint8_t> stamped(uint64_t seed)
{
	std::vector<uint8_t> buf(kExtent);
	stamp(buf, seed);
	return buf;
}

// Writes granule g of the extent at `at` (a host's write) and the same
// into the image.
void write_granule(Rig &r, const wire::Entry &at, unsigned g, uint64_t seed,
		   std::vector<uint8_t> *image = nullptr)
{
	std::vector<uint8_t> buf(kGranule);
	stamp(buf, seed);
	const int fd = ::open(r.dev_path.at(at.dev_id).c_str(), O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, buf.data(), kGranule, off_t((at.pstart << 9) + g * kGranule)),
			 ssize_t(kGranule));
	close(fd);
	if (image)
		std::memcpy(image->data() + g * kGranule, buf.data(), kGranule);
}

// The granules of the extent at `at` that differ from the image.
std::set<unsigned> differing(Rig &r, const wire::Entry &at, const std::vector<uint8_t> &image)
{
	std::vector<uint8_t> got(kExtent);
	std::set<unsigned> out;
	const int fd = ::open(r.dev_path.at(at.dev_id).c_str(), O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, got.data(), kExtent, off_t(at.pstart << 9)), ssize_t(kExtent));
	close(fd);
	for (unsigned g = 0; g < MDR_WIRE_TRACK_GRANULES; g++)
		if (std::memcmp(&got[g * kGranule], &image[g * kGranule], kGranule))
			out.insert(g);
	return out;
}

// A volume of 4 extents with extent 1 allocated on device 1 and stamped,
// held by `hosts` hosts of the given versions.
struct PreSetup {
	explicit PreSetup(Rig &r, std::vector<uint16_t> versions = {2})
	{
		assert_int_equal(wire::track_granule_shift(kShift), 14);
		r.past_grace();
		adm = r.admin();
		vol = r.create(adm, "db1", 4 * kExtent);
		for (size_t i = 0; i < versions.size(); i++)
			h.push_back(r.host(0x1111 * (i + 1), versions[i]));
		r.open(h[0], vol);
		at = r.alloc(h[0], vol, 1);
		r.write_extent(at, 101);
		for (size_t i = 1; i < h.size(); i++)
			r.open(h[i], vol);
	}

	// MOVE of extent 1 to device 2.
	void move(Rig &r)
	{
		r.send(adm, 20, wire::MoveReq{.volume_id = vol, .first = 1, .count = 1,
					      .to_dev = 2});
		r.flush();
	}

	// The move published: its ALLOC push acked by every host; the reply.
	wire::Entry finish(Rig &r, uint16_t status = MDR_ST_OK)
	{
		const wire::Entry e = r.entry(vol, 1);
		for (ConnId c : h) {
			if (r.quiet(c))
				continue;	// no lease any more
			wire::Msg push = r.one(c);
			expect_push(push, vol, 1, e.generation, MDR_INVAL_ALLOC);
			r.ack(c, push);
		}
		assert_int_equal(status_of(r.one(adm)), status);
		return e;
	}

	ConnId adm = 0;
	std::vector<ConnId> h;
	uint64_t vol = 0;
	wire::Entry at{};
};

// The whole sequence with a pre-copy: TRACK at the entry's generation, the
// extent in use meanwhile; the pre-copy only after the TRACK ack; then the
// freeze, MOVE, and under it only the granule the host reports is copied
// again: granule 7, written after the pre-copy but not reported, keeps the
// pre-copied data at the new place (the node copies exactly what hosts
// report; a real host reports every write).
void test_precopy_copies_again_only_the_reported_granules(void **)
{
	Rig r;
	PreSetup s(r);
	const uint64_t used1 = r.used(1), used2 = r.used(2);

	s.move(r);
	wire::Msg track = r.one(s.h[0]);
	expect_push(track, s.vol, 1, 2, MDR_INVAL_TRACK);
	// Reserved, not journaled; the host goes on using the extent.
	assert_int_equal(r.used(2), used2 + kExtent);
	assert_true(r.entry(s.vol, 1) == s.at);
	assert_int_equal(r.store->counts().moving, 0);
	assert_int_equal(r.node->moves_active(), 1);
	r.copies();
	assert_true(r.quiet(s.h[0]));
	assert_true(r.quiet(s.adm));

	r.ack(s.h[0], track);
	r.node->wait_copies();	// the pre-copy; MOVE_BEGIN appended
	std::vector<uint8_t> want = stamped(101);
	write_granule(r, s.at, 5, 205, &want);
	write_granule(r, s.at, 7, 207);
	r.flush();
	wire::Msg push = r.one(s.h[0]);
	expect_push(push, s.vol, 1, 3, MDR_INVAL_MOVE);
	assert_int_equal(r.entry(s.vol, 1).state, MDR_EXT_FROZEN);
	r.copies();
	assert_int_equal(r.entry(s.vol, 1).state, MDR_EXT_FROZEN);	// no ack yet

	r.ack(s.h[0], push, MDR_INVAL_ACK_F_TRACKED, uint64_t{1} << 5);
	r.copies();
	const wire::Entry e = s.finish(r);
	assert_int_equal(e.state, MDR_EXT_MAPPED);
	assert_int_equal(e.generation, 4);
	assert_int_equal(e.dev_id, 2);
	assert_true(differing(r, e, want).empty());
	assert_int_equal(r.used(1), used1 - kExtent);
	assert_int_equal(r.used(2), used2 + kExtent);
	const mdnode::NodeStats &st = r.node->stats();
	assert_int_equal(st.moves_done, 1);
	assert_int_equal(st.precopy_bytes, kExtent);
	assert_int_equal(st.freeze_bytes, kGranule);

	// The admin sees them.
	r.send(s.adm, 21, wire::NodeStatsReq{});
	const wire::Msg sm = r.one(s.adm);
	auto *rep = std::get_if<wire::NodeStatsRep>(&sm.body);
	assert_non_null(rep);
	assert_int_equal(rep->precopy_bytes, kExtent);
	assert_int_equal(rep->freeze_bytes, kGranule);
}

// Dirty granules apart and adjacent are copied as runs; none dirty: no
// data is copied under the freeze, only the fdatasync.
void test_precopy_dirty_masks(void **)
{
	const uint64_t masks[] = {0, 0x8000000000000001, 0x00000000000f0f00, ~uint64_t{0} >> 1};

	for (uint64_t mask : masks) {
		Rig r;
		PreSetup s(r);

		s.move(r);
		r.ack(s.h[0], r.one(s.h[0]));
		r.node->wait_copies();
		std::vector<uint8_t> want = stamped(101);
		for (unsigned g = 0; g < 64; g++)
			write_granule(r, s.at, g, 300 + g, mask >> g & 1 ? &want : nullptr);
		r.flush();
		r.ack(s.h[0], r.one(s.h[0]), MDR_INVAL_ACK_F_TRACKED, mask);
		r.copies();
		const wire::Entry e = s.finish(r);
		assert_int_equal(e.dev_id, 2);
		assert_true(differing(r, e, want).empty());
		assert_int_equal(r.node->stats().freeze_bytes,
				 uint64_t(std::popcount(mask)) * kGranule);
	}
}

// Whenever a holder's notes cannot be trusted, the whole extent is copied
// under the freeze: an ack without MDR_INVAL_ACK_F_TRACKED; a holder that
// opened the volume after the TRACK push; one whose lease ran out instead
// of acking the MOVE; one whose lease ran out instead of acking TRACK;
// one that reconnected and opened again after its TRACK ack; one that
// reconnected on version 1 before it (no TRACK on that connection).
void test_precopy_falls_back_to_a_full_copy(void **)
{
	enum Case { untracked_ack, late_opener, move_lease_lost, track_lease_lost, reopened,
		    downgraded };

	for (Case c : {untracked_ack, late_opener, move_lease_lost, track_lease_lost, reopened,
		       downgraded}) {
		Rig r;
		PreSetup s(r, c == move_lease_lost || c == track_lease_lost
				      ? std::vector<uint16_t>{2, 2}
				      : std::vector<uint16_t>{2});
		const ConnId a = s.h[0];

		s.move(r);
		if (c == downgraded) {
			expect_push(r.one(a), s.vol, 1, 2, MDR_INVAL_TRACK);
			r.node->on_disconnected(a);
			s.h[0] = r.host(0x1111, 1);
			r.open(s.h[0], s.vol);	// the OPEN reply only: no TRACK
		} else {
			r.ack(a, r.one(a));
		}
		if (c == late_opener) {
			// A second host opens only now: no TRACK for it.
			s.h.push_back(r.host(0x2222, 2));
			r.open(s.h[1], s.vol);
		} else if (c == track_lease_lost) {
			(void)r.one(s.h[1]);	// never acked, never renewed
			r.now += kHeldMs - 1;
			r.send(a, 9, wire::RenewReq{.volume_id = s.vol});
			assert_int_equal(status_of(r.one(a)), MDR_ST_OK);
			r.now += 1;
			r.node->tick();
			s.h.pop_back();
		} else if (c == move_lease_lost) {
			r.ack(s.h[1], r.one(s.h[1]));
		}
		if (c == reopened) {
			r.node->on_disconnected(a);
			s.h[0] = r.host(0x1111, 2);
			r.open(s.h[0], s.vol);
		}
		r.node->wait_copies();
		std::vector<uint8_t> want = stamped(101);
		write_granule(r, s.at, 7, 207, &want);
		r.flush();

		const ConnId now_a = s.h[0];
		r.ack(now_a, r.one(now_a),
		    c == untracked_ack || c == downgraded ? 0 : MDR_INVAL_ACK_F_TRACKED, 0);
		if (c == late_opener)
			r.ack(s.h[1], r.one(s.h[1]), MDR_INVAL_ACK_F_TRACKED, 0);
		if (c == move_lease_lost) {
			(void)r.one(s.h[1]);	// never acked
			r.copies();
			assert_int_equal(r.entry(s.vol, 1).state, MDR_EXT_FROZEN);
			r.now += kHeldMs - 1;
			r.send(now_a, 9, wire::RenewReq{.volume_id = s.vol});
			assert_int_equal(status_of(r.one(now_a)), MDR_ST_OK);
			r.now += 1;
			r.node->tick();
			r.now += kIoHoldMs;	// its IO waited out
			r.node->tick();
			s.h.pop_back();
		} else if (c == track_lease_lost) {
			// The MOVE waits out what the lapsed holder sent before.
			r.copies();
			assert_int_equal(r.entry(s.vol, 1).state, MDR_EXT_FROZEN);
			r.now += kIoHoldMs;
			r.node->tick();
		}
		r.copies();
		const wire::Entry e = s.finish(r);
		assert_int_equal(e.dev_id, 2);
		if (!differing(r, e, want).empty())
			fail_msg("case %d: granule 7 not copied again", int(c));
		assert_int_equal(r.node->stats().freeze_bytes, kExtent);
		assert_int_equal(r.node->stats().precopy_bytes, kExtent);
	}
}

// A holder on version 1 cannot note its writes, nor can one that is not
// connected: no TRACK push to anyone, MOVE at once, the whole extent
// copied under the freeze.
void test_precopy_needs_every_holder_on_version_2(void **)
{
	for (int disconnected = 0; disconnected < 2; disconnected++) {
		Rig r;
		PreSetup s(r, disconnected ? std::vector<uint16_t>{2, 2}
					   : std::vector<uint16_t>{2, 1});
		const uint64_t used2 = r.used(2);

		if (disconnected)
			r.node->on_disconnected(s.h[1]);
		s.move(r);
		assert_int_equal(r.entry(s.vol, 1).state, MDR_EXT_FROZEN);
		assert_int_equal(r.used(2), used2 + kExtent);
		wire::Msg push = r.one(s.h[0]);
		expect_push(push, s.vol, 1, 3, MDR_INVAL_MOVE);
		r.ack(s.h[0], push, MDR_INVAL_ACK_F_TRACKED, 0);
		if (!disconnected) {
			push = r.one(s.h[1]);
			expect_push(push, s.vol, 1, 3, MDR_INVAL_MOVE);
			r.ack(s.h[1], push);
		} else {
			s.h.pop_back();
			r.now += kHeldMs - 1;
			r.send(s.h[0], 9, wire::RenewReq{.volume_id = s.vol});
			assert_int_equal(status_of(r.one(s.h[0])), MDR_ST_OK);
			r.now += 1;
			r.node->tick();
			r.now += kIoHoldMs;	// its IO waited out
			r.node->tick();
		}
		r.copies();
		const wire::Entry e = s.finish(r);
		assert_int_equal(e.dev_id, 2);
		assert_true(r.extent_holds(e, 101));
		assert_int_equal(r.node->stats().precopy_bytes, 0);
		assert_int_equal(r.node->stats().freeze_bytes, kExtent);
	}
}

// A move that ends before MOVE_BEGIN (its pre-copy fails) gives its
// reserved place back: nothing was journaled, the extent stays where it
// is at its generation, and device 2 has room for 3 extents again. A crash
// during the pre-copy leaves the same.
void test_move_failed_before_begin_frees_its_place(void **)
{
	for (int crash = 0; crash < 2; crash++) {
		Rig r(!crash);
		PreSetup s(r);
		const uint64_t used2 = r.used(2);
		const uint64_t records = r.journal->stats().records;

		s.move(r);
		assert_int_equal(r.used(2), used2 + kExtent);
		assert_int_equal(r.store->free_extents(2, kShift), 2);
		r.ack(s.h[0], r.one(s.h[0]));
		if (crash) {
			r.crash_and_restart();
		} else {
			r.copies();
			assert_int_equal(status_of(r.one(s.adm)), MDR_ST_IO);
			assert_true(r.quiet(s.h[0]));	// never frozen
			assert_int_equal(r.node->stats().moves_failed, 1);
			assert_int_equal(r.node->moves_active(), 0);
			assert_int_equal(r.journal->stats().records, records);
		}
		assert_int_equal(r.used(2), used2);
		assert_int_equal(r.store->free_extents(2, kShift), 3);
		assert_true(r.entry(s.vol, 1) == s.at);
		assert_true(r.extent_holds(s.at, 101));
	}
}

} // namespace

int main()
{
	mdnode::set_log_level(mdnode::LogLevel::error);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_precopy_copies_again_only_the_reported_granules),
		cmocka_unit_test(test_precopy_dirty_masks),
		cmocka_unit_test(test_precopy_falls_back_to_a_full_copy),
		cmocka_unit_test(test_precopy_needs_every_holder_on_version_2),
		cmocka_unit_test(test_move_failed_before_begin_frees_its_place),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
