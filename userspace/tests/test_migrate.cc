// SPDX-License-Identifier: GPL-2.0
//
// test_migrate.cc - moves of extents between devices (MDR_OP_MOVE,
// MDR_OP_DRAIN), driven through the Net seam with a fake transport: the
// data arrives intact at the new place; the sequence a host sees (FROZEN
// at g1 and INVALIDATE(MOVE), then MAPPED at g1 + 1 and INVALIDATE(ALLOC));
// a silent lease holder delays the copy until its lease runs out, and so
// does the grace after a restart; a crash at every step rolls the move back
// or completes it, with generations that never go back; refusals of bad
// requests; a failed copy rolls back; drains; counters; the copier on its
// own, with its default options, and copying only some runs of a job.
//
// The store, the journal and the copier are the real ones, the devices are
// sparse files under /var/tmp; time is the Node's clock function, moved by
// hand. A crash is the Node, the journal and the store destroyed without
// anything written after the step, and the journal replayed into a new
// store, as mdnode does at start.
#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <endian.h>
#include <fcntl.h>
#include <unistd.h>

#include "lib/wire.h"
#include "mdnode/copier.h"
#include "mdnode/log.h"
#include "mdnode/node.h"
#include "mdnode/store.h"

#include "tests/common/node_rig.h"

#include "tests/common/cmocka_cxx.h"

namespace fs = std::filesystem;
namespace wire = mdr::wire;
using mdnode::ConnId;
using mdnode::NodeOptions;
using mdnode::PeerInfo;

namespace {

using namespace mdr::test;

// A lapsed holder's IO may land this much longer; then data moves.
constexpr uint32_t kIoHoldMs = 200;
constexpr int64_t kWaitedOutMs = kHeldMs + kIoHoldMs;
constexpr uint32_t kShift = 20;		// 1 MiB extents: a few chunks each
constexpr uint64_t kExtent = uint64_t{1} << kShift;
constexpr uint64_t kDev1Size = 32 * MiB;
constexpr uint64_t kDev2Size = 4 * MiB;	// 1 MiB label: room for 3 extents

// A block of 4 KiB stamped with where it belongs and a seed.
void stamp(std::vector<uint8_t> &buf, uint64_t seed)
{
	for (size_t i = 0; i < buf.size(); i += 8) {
		const uint64_t v = seed * 0x9e3779b97f4a7c15ull + i;
		std::memcpy(&buf[i], &v, 8);
	}
}

// Hosts speak version 1 unless asked: no pre-copy, the whole extent is
// copied under the freeze (the tests of the pre-copy ask for 2).
struct Rig : NodeRig {
	explicit Rig(bool bad_dev2_path = false, uint32_t hold_ms = kIoHoldMs)
		: NodeRig("mdr-migrate", 1), io_hold_ms(hold_ms)
	{
		jdir = dir + "/journal";
		fs::create_directory(jdir);
		dev_path[1] = dir + "/dev1";
		dev_path[2] = dir + "/dev2";
		make_file(dev_path[1], kDev1Size);
		make_file(dev_path[2], kDev2Size);
		if (bad_dev2_path)
			copier_paths = {{1, dev_path[1]}, {2, dir + "/no-such-device"}};
		start();
	}

	static void make_file(const std::string &path, uint64_t size)
	{
		const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		assert_true(fd >= 0);
		assert_int_equal(ftruncate(fd, off_t(size)), 0);
		close(fd);
	}

	// mdnode's start: devices, the journal replayed into a new store, the
	// node, the roll-back of unfinished moves. now does not move.
	void start()
	{
		NodeOptions o = rig_options();
		o.io_hold_ms = io_hold_ms;
		o.boot_id = 0xb007 + restarts;
		o.copier.chunk = 128 << 10;	// 8 chunks an extent
		o.copier.depth = 3;
		o.device_paths = copier_paths;
		NodeRig::start({{1, dev_path[1], "SER-A", kDev1Size},
				{2, dev_path[2], "SER-B", kDev2Size}},
			       o, jdir);
		auto st = node->recover_moves();
		if (!st.ok())
			fail_msg("recover: %s", st.message().c_str());
	}

	// kill -9: nothing more reaches the journal.
	void crash_and_restart()
	{
		node.reset();
		journal.reset();
		store.reset();
		net.sent.clear();
		restarts++;
		start();
	}

	// Past the grace after a start.
	void past_grace()
	{
		now += kHeldMs + io_hold_ms;
		node->tick();
	}

	ConnId host(uint64_t host_id, uint16_t version = 1)
	{
		return establish(peer(MDR_ROLE_HOST, 7, host_id, version));
	}

	// Copies finished and their ends journaled. The end of a pre-copy
	// journals MOVE_BEGIN, and with no holder to wait for that starts the
	// copy under the freeze: a second round.
	void copies()
	{
		for (int round = 0; round < 2; round++) {
			node->wait_copies();
			flush();
		}
	}

	uint64_t create(ConnId adm, const std::string &name, uint64_t size)
	{
		return NodeRig::create(adm, {.size = size, .extent_shift = kShift, .tenant = 7,
					     .name = name});
	}

	// Allocated by a host with no other holder: answered at once.
	wire::Entry alloc(ConnId conn, uint64_t volume_id, uint64_t index)
	{
		send(conn, 5, wire::AllocReq{.volume_id = volume_id, .index = index});
		flush();
		wire::Msg m = one(conn);
		auto *rep = std::get_if<wire::AllocRep>(&m.body);
		if (!rep)
			fail_msg("alloc %llu: status %u", (unsigned long long)index, status_of(m));
		return rep->entry;
	}

	// What a host READs.
	wire::Entry entry(uint64_t volume_id, uint64_t index)
	{
		const mdr_wire_entry &e = store->volume(volume_id)->table.entries()[index];
		assert_int_equal(wire::verify_entry(e, volume_id, index), wire::EntryCheck::ok);
		return wire::decode_entry(e);
	}

	void write_extent(const wire::Entry &at, uint64_t seed)
	{
		std::vector<uint8_t> buf(kExtent);
		stamp(buf, seed);
		const int fd = ::open(dev_path.at(at.dev_id).c_str(), O_WRONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(pwrite(fd, buf.data(), buf.size(), off_t(at.pstart << 9)),
				 ssize_t(buf.size()));
		close(fd);
	}

	bool extent_holds(const wire::Entry &at, uint64_t seed)
	{
		std::vector<uint8_t> want(kExtent), got(kExtent);
		stamp(want, seed);
		const int fd = ::open(dev_path.at(at.dev_id).c_str(), O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(pread(fd, got.data(), got.size(), off_t(at.pstart << 9)),
				 ssize_t(got.size()));
		close(fd);
		return want == got;
	}

	uint64_t used(uint32_t dev_id)
	{
		for (const wire::Device &d : store->devices())
			if (d.dev_id == dev_id)
				return d.used;
		fail_msg("no device %u", dev_id);
		return 0;
	}

	uint32_t io_hold_ms;	// NodeOptions::io_hold_ms of every start
	std::string jdir;
	std::map<uint32_t, std::string> dev_path;
	std::map<uint32_t, std::string> copier_paths;
	unsigned restarts = 0;
};

// A volume of 4 extents on device 1, extents 0 and 1 allocated by a host
// that keeps its lease, stamped with known data.
struct Setup {
	explicit Setup(Rig &r)
	{
		r.past_grace();
		adm = r.admin();
		vol = r.create(adm, "db1", 4 * kExtent);
		host = r.host(0x1111);
		r.open(host, vol);
		for (uint64_t i = 0; i < 2; i++) {
			at[i] = r.alloc(host, vol, i);
			assert_int_equal(at[i].dev_id, 1);
			assert_int_equal(at[i].generation, 2);
			r.write_extent(at[i], 100 + i);
		}
	}

	ConnId adm = 0, host = 0;
	uint64_t vol = 0;
	wire::Entry at[2];
};

// ---------------------------------------------------------------------------

// The whole sequence: what the host sees at each step, where the data ends
// up, what the admin is told, and when.
void test_move_freezes_copies_and_publishes(void **)
{
	Rig r;
	Setup s(r);
	const uint64_t used1 = r.used(1), used2 = r.used(2);

	r.send(s.adm, 20, wire::MoveReq{.volume_id = s.vol, .first = 1, .count = 1,
					.to_dev = 2});
	r.flush();
	// Frozen at the old place, one generation on; the holder is told to
	// drain; the new place is taken.
	wire::Entry e = r.entry(s.vol, 1);
	assert_int_equal(e.state, MDR_EXT_FROZEN);
	assert_int_equal(e.generation, 3);
	assert_int_equal(e.dev_id, 1);
	assert_int_equal(e.pstart, s.at[1].pstart);
	wire::Msg push = r.one(s.host);
	expect_push(push, s.vol, 1, 3, MDR_INVAL_MOVE);
	assert_int_equal(r.used(2), used2 + kExtent);
	assert_int_equal(r.node->moves_active(), 1);

	// Nothing is copied before the ack.
	r.now += 100;
	r.node->tick();
	r.copies();
	assert_true(r.quiet(s.adm));
	assert_int_equal(r.entry(s.vol, 1).state, MDR_EXT_FROZEN);

	// Acked: copied, journaled, published at the new place.
	r.now += 20;
	r.ack(s.host, push);
	r.copies();
	e = r.entry(s.vol, 1);
	assert_int_equal(e.state, MDR_EXT_MAPPED);
	assert_int_equal(e.generation, 4);
	assert_int_equal(e.dev_id, 2);
	assert_true(r.extent_holds(e, 101));
	assert_int_equal(r.used(1), used1 - kExtent);
	// Hosts waiting on the frozen entry look again; no drain needed.
	push = r.one(s.host);
	expect_push(push, s.vol, 1, 4, MDR_INVAL_ALLOC);
	assert_true(r.quiet(s.adm));
	r.ack(s.host, push);

	wire::Msg m = r.one(s.adm);
	assert_int_equal(m.hdr.req_id, 20);
	auto *rep = std::get_if<wire::MoveRep>(&m.body);
	if (!rep)
		fail_msg("move: status %u", status_of(m));
	assert_int_equal(rep->volume_id, s.vol);
	assert_int_equal(rep->bytes, kExtent);
	assert_int_equal(rep->extents.size(), 1);
	const wire::MovedExtent &x = rep->extents[0];
	assert_int_equal(x.index, 1);
	assert_int_equal(x.old_dev, 1);
	assert_int_equal(x.old_pstart, s.at[1].pstart);
	assert_int_equal(x.new_dev, 2);
	assert_int_equal(x.new_pstart, e.pstart);
	assert_int_equal(x.generation, 4);
	assert_int_equal(x.stall_us, 120000);
	assert_int_equal(rep->stall_max_us, 120000);
	assert_int_equal(r.node->moves_active(), 0);
	// The other extent did not move.
	assert_true(r.entry(s.vol, 0) == s.at[0]);
	assert_true(r.extent_holds(s.at[0], 100));

	// Counters.
	r.send(s.adm, 21, wire::NodeStatsReq{});
	m = r.one(s.adm);
	auto *st = std::get_if<wire::NodeStatsRep>(&m.body);
	assert_non_null(st);
	assert_int_equal(st->moves_active, 0);
	assert_int_equal(st->moves_done, 1);
	assert_int_equal(st->moves_failed, 0);
	assert_int_equal(st->move_bytes, kExtent);
	assert_int_equal(st->stall_max_us, 120000);
	assert_int_equal(st->stall_total_us, 120000);
	// A host on version 1: no pre-copy, the whole extent under the freeze.
	assert_int_equal(st->precopy_bytes, 0);
	assert_int_equal(st->freeze_bytes, kExtent);
}

// Back and forth, by id and by name: the generation grows by two a move
// and the data follows.
void test_move_back_and_forth(void **)
{
	Rig r;
	Setup s(r);

	for (int round = 0; round < 4; round++) {
		const uint32_t to = round % 2 ? 1 : 2;
		const uint64_t g = r.entry(s.vol, 1).generation;
		wire::MoveReq req{.volume_id = s.vol, .first = 1, .count = 1, .to_dev = to};

		if (round % 2) {
			req.volume_id = 0;
			req.flags = MDR_MOVE_F_BY_NAME;
			req.name = "db1";
		}
		r.send(s.adm, 40 + round, req);
		r.flush();
		wire::Msg push = r.one(s.host);
		expect_push(push, s.vol, 1, g + 1, MDR_INVAL_MOVE);
		r.ack(s.host, push);
		r.copies();
		push = r.one(s.host);
		expect_push(push, s.vol, 1, g + 2, MDR_INVAL_ALLOC);
		r.ack(s.host, push);
		wire::Msg m = r.one(s.adm);
		assert_int_equal(status_of(m), MDR_ST_OK);
		const wire::Entry e = r.entry(s.vol, 1);
		assert_int_equal(e.dev_id, to);
		assert_int_equal(e.generation, g + 2);
		assert_true(r.extent_holds(e, 101));
		// Keep the lease: the test's clock does not move, but say so.
		r.send(s.host, 9, wire::RenewReq{.volume_id = s.vol});
		assert_int_equal(status_of(r.one(s.host)), MDR_ST_OK);
	}
	assert_int_equal(r.node->stats().moves_done, 4);
}

// The admin moves extent 0 to device 2: it freezes, and the Setup's holder
// is told and acks.
void move_acked(Rig &r, Setup &s)
{
	r.send(s.adm, 20, wire::MoveReq{.volume_id = s.vol, .first = 0, .count = 1,
					.to_dev = 2});
	r.flush();
	const wire::Msg push = r.one(s.host);
	expect_push(push, s.vol, 0, 3, MDR_INVAL_MOVE);
	r.ack(s.host, push);
}

// Extent 0 is on device 2 with its data, the Setup's holder is told, and
// the admin gets the reply (returned).
wire::Msg expect_published(Rig &r, Setup &s)
{
	const wire::Entry e = r.entry(s.vol, 0);
	assert_int_equal(e.state, MDR_EXT_MAPPED);
	assert_int_equal(e.dev_id, 2);
	assert_true(r.extent_holds(e, 100));
	const wire::Msg push = r.one(s.host);
	expect_push(push, s.vol, 0, 4, MDR_INVAL_ALLOC);
	r.ack(s.host, push);
	wire::Msg m = r.one(s.adm);
	assert_int_equal(status_of(m), MDR_ST_OK);
	return m;
}

// A lapsed holder's lease has run out: extent 0 stays frozen until
// io_hold_ms later, then is published.
wire::Msg publish_after_the_hold(Rig &r, Setup &s)
{
	r.now += kIoHoldMs - 1;
	r.node->tick();
	r.copies();
	assert_int_equal(r.entry(s.vol, 0).state, MDR_EXT_FROZEN);
	assert_true(r.quiet(s.adm));
	r.now += 1;
	r.node->tick();
	r.copies();
	return expect_published(r, s);
}

// A holder that never acks (its connection is gone) is waited out: the
// copy starts only once its lease has run out, and io_hold_ms more.
void test_silent_holder_delays_the_copy_until_its_lease_expires(void **)
{
	Rig r;
	Setup s(r);
	const ConnId other = r.host(0x2222);

	r.open(other, s.vol);
	r.send(s.adm, 20, wire::MoveReq{.volume_id = s.vol, .first = 0, .count = 1,
					.to_dev = 2});
	r.flush();
	wire::Msg push = r.one(s.host);
	expect_push(push, s.vol, 0, 3, MDR_INVAL_MOVE);
	(void)r.one(other);	// pushed, never acked
	r.ack(s.host, push);
	r.node->on_disconnected(other);

	r.now += kHeldMs - 1;
	r.node->tick();
	r.copies();
	assert_int_equal(r.entry(s.vol, 0).state, MDR_EXT_FROZEN);
	assert_true(r.quiet(s.adm));

	// The one that acked renews; the silent one's lease runs out, and
	// what it may have sent before is waited out io_hold_ms longer.
	r.send(s.host, 9, wire::RenewReq{.volume_id = s.vol});
	assert_int_equal(status_of(r.one(s.host)), MDR_ST_OK);
	r.now += 1;
	r.node->tick();
	r.copies();
	assert_int_equal(r.entry(s.vol, 0).state, MDR_EXT_FROZEN);
	assert_true(r.quiet(s.adm));
	const wire::Msg m = publish_after_the_hold(r, s);
	assert_int_equal(std::get<wire::MoveRep>(m.body).extents[0].stall_us,
			 kWaitedOutMs * 1000);
}

// A holder whose lease ran out before the move began may still have IO at
// its devices: the move freezes, and copies only io_hold_ms after the lapse.
void test_move_after_a_lapse_waits_out_the_holders_io(void **)
{
	Rig r;
	Setup s(r);
	const ConnId other = r.host(0x2222);

	r.open(other, s.vol);
	r.node->on_disconnected(other);
	r.now += kHeldMs - 1;
	r.send(s.host, 9, wire::RenewReq{.volume_id = s.vol});
	assert_int_equal(status_of(r.one(s.host)), MDR_ST_OK);
	r.now += 1;
	r.node->tick();	// the other's lease lapses
	assert_int_equal(r.node->stats().lease_expiries, 1);

	move_acked(r, s);
	r.copies();
	assert_int_equal(r.entry(s.vol, 0).state, MDR_EXT_FROZEN);
	publish_after_the_hold(r, s);
}

// A holder whose lease lapsed while it stayed connected still gets the MOVE
// push (its devices may still hold its IO). A slow ack from it is waited
// out by io_hold_ms: it is not cut off as an overdue push, which would cost
// every volume on its connection its pushes.
void test_lapsed_holder_is_not_cut_off_for_a_slow_ack(void **)
{
	constexpr uint32_t hold = 3 * kHeldMs;	// longer than a push may be overdue
	Rig r(false, hold);
	Setup s(r);
	const ConnId other = r.host(0x2222);
	uint64_t req = 9;

	r.open(other, s.vol);
	r.now += kHeldMs - 1;
	assert_int_equal(r.call(s.host, req++, wire::RenewReq{.volume_id = s.vol}), MDR_ST_OK);
	r.now += 1;
	r.node->tick();	// the other's lease lapses; it stays connected
	move_acked(r, s);
	expect_push(r.one(other), s.vol, 0, 3, MDR_INVAL_MOVE);	// never acked
	for (int64_t waited = 0; waited < hold; waited += kLeaseMs / 2) {
		r.copies();
		assert_int_equal(r.entry(s.vol, 0).state, MDR_EXT_FROZEN);
		r.now += kLeaseMs / 2;
		assert_int_equal(r.call(s.host, req++, wire::RenewReq{.volume_id = s.vol}),
				 MDR_ST_OK);
		r.node->tick();
	}
	r.copies();
	assert_int_equal(r.node->stats().push_timeouts, 0);
	assert_true(r.net.disconnects.empty());
	expect_published(r, s);
}

// A holder that reconnects (its push lost with the old connection) and
// opens the volume again renews its lease: it gets the push again on the
// new connection, and the move waits for that ack, not for ever.
void test_reconnected_holder_gets_the_push_again(void **)
{
	Rig r;
	Setup s(r);

	r.send(s.adm, 20, wire::MoveReq{.volume_id = s.vol, .first = 0, .count = 1,
					.to_dev = 2});
	r.flush();
	(void)r.one(s.host);	// lost with the connection
	r.node->on_disconnected(s.host);
	const ConnId again = r.host(0x1111);
	r.now += kHeldMs - 100;
	r.send(again, 3, wire::OpenReq{.volume_id = s.vol});
	std::vector<wire::Msg> got = r.take(again);
	assert_int_equal(got.size(), 2);
	assert_true(std::holds_alternative<wire::OpenRep>(got[0].body));
	wire::Msg push = got[1];
	expect_push(push, s.vol, 0, 3, MDR_INVAL_MOVE);
	r.now += 200;	// past the first lease: the reopen renewed it
	r.node->tick();
	r.copies();
	assert_int_equal(r.entry(s.vol, 0).state, MDR_EXT_FROZEN);
	r.ack(again, push);
	r.copies();
	push = r.one(again);
	expect_push(push, s.vol, 0, 4, MDR_INVAL_ALLOC);
	r.ack(again, push);
	assert_int_equal(status_of(r.one(s.adm)), MDR_ST_OK);
	assert_true(r.extent_holds(r.entry(s.vol, 0), 100));
}

// After a start, leases granted before it are unknown but may still be
// used, and their IO still land: no move starts before lease + margin +
// io hold, even with no holder at all (it is deferred, not frozen: IO
// would only wait longer).
void test_no_copy_within_the_grace_after_a_start(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "db1", 2 * kExtent);
	const ConnId h = r.host(0x1111);

	r.open(h, vol);
	const wire::Entry at = r.alloc(h, vol, 0);
	r.write_extent(at, 7);
	r.send(h, 6, wire::CloseReq{.volume_id = vol});
	assert_int_equal(status_of(r.one(h)), MDR_ST_OK);

	r.send(adm, 20, wire::MoveReq{.volume_id = vol, .first = 0, .count = 1, .to_dev = 2});
	r.flush();
	r.now += kWaitedOutMs - 1;
	r.node->tick();
	r.copies();
	// Not even frozen yet: IO would only wait longer.
	assert_int_equal(r.entry(vol, 0).state, MDR_EXT_MAPPED);
	assert_int_equal(r.entry(vol, 0).generation, 2);
	assert_true(r.quiet(adm));
	r.now += 1;
	r.node->tick();
	r.flush();	// MOVE_BEGIN, then the copy
	r.copies();
	assert_int_equal(status_of(r.one(adm)), MDR_ST_OK);
	assert_true(r.extent_holds(r.entry(vol, 0), 7));
	assert_int_equal(r.entry(vol, 0).generation, 4);
}

// A crash at each step: before the ack, while the copy runs (its end
// never reaches the loop), after the copy but before its end is durable
// (these roll back), and after MOVE_DONE is durable (complete). The
// generation a host has seen is never undercut, the space of the losing
// place is free, and a later move works.
void test_crash_at_each_step(void **)
{
	for (int step = 0; step < 4; step++) {
		Rig r;
		Setup s(r);
		const uint64_t used1 = r.used(1), used2 = r.used(2);

		r.send(s.adm, 20, wire::MoveReq{.volume_id = s.vol, .first = 1, .count = 1,
						.to_dev = 2});
		r.flush();
		wire::Msg push = r.one(s.host);
		uint64_t seen = 3;	// FROZEN g1
		if (step >= 1)
			r.ack(s.host, push);	// the copy is queued
		if (step >= 2)
			r.node->wait_copies();	// the end is appended, not written
		if (step == 3) {
			r.flush();
			seen = 4;	// MAPPED at the new place
		}
		r.crash_and_restart();

		const wire::Entry e = r.entry(s.vol, 1);
		assert_int_equal(e.state, MDR_EXT_MAPPED);
		assert_true(e.generation >= seen);
		assert_int_equal(e.generation, 4);
		assert_int_equal(r.store->counts().moving, 0);
		if (step < 3) {
			assert_int_equal(e.dev_id, 1);
			assert_int_equal(e.pstart, s.at[1].pstart);
			assert_int_equal(r.used(1), used1);
			assert_int_equal(r.used(2), used2);
		} else {
			assert_int_equal(e.dev_id, 2);
			assert_int_equal(r.used(1), used1 - kExtent);
			assert_int_equal(r.used(2), used2 + kExtent);
		}
		assert_true(r.extent_holds(e, 101));
		assert_true(r.entry(s.vol, 0) == s.at[0]);

		// Recovered once more: nothing changes (the roll-back was
		// journaled).
		r.crash_and_restart();
		assert_true(r.entry(s.vol, 1) == e);

		// A later move goes on from there.
		r.past_grace();
		const ConnId adm = r.admin();
		const uint32_t to = e.dev_id == 1 ? 2 : 1;
		r.send(adm, 30, wire::MoveReq{.volume_id = s.vol, .first = 1, .count = 1,
					      .to_dev = to});
		r.flush();
		r.copies();
		wire::Msg m = r.one(adm);
		assert_int_equal(status_of(m), MDR_ST_OK);
		const wire::Entry moved = r.entry(s.vol, 1);
		assert_int_equal(moved.generation, 6);
		assert_int_equal(moved.dev_id, to);
		assert_true(r.extent_holds(moved, 101));
	}
}

// Bad requests move nothing. Decided: every extent of the range must be
// mapped (an unallocated one has nothing to move: INVAL), on another device
// than to_dev (INVAL), not moving (BUSY); the range within the volume
// (INVAL), the volume and the device known (NOENT), room on to_dev for the
// whole range (NOSPC); admins only (PERM).
void test_move_refusals(void **)
{
	Rig r;
	Setup s(r);
	auto move = [&](uint64_t vol, uint64_t first, uint32_t count, uint32_t to) {
		return r.call(s.adm, 50, wire::MoveReq{.volume_id = vol, .first = first,
						      .count = count, .to_dev = to});
	};

	assert_int_equal(move(s.vol + 1, 0, 1, 2), MDR_ST_NOENT);
	assert_int_equal(r.call(s.adm, 51, wire::MoveReq{.count = 1, .to_dev = 2,
							 .flags = MDR_MOVE_F_BY_NAME,
							 .name = "nope"}),
			 MDR_ST_NOENT);
	assert_int_equal(move(s.vol, 0, 1, 3), MDR_ST_NOENT);
	assert_int_equal(move(s.vol, 0, 1, 1), MDR_ST_INVAL);	// same device
	assert_int_equal(move(s.vol, 2, 1, 2), MDR_ST_INVAL);	// unallocated
	assert_int_equal(move(s.vol, 1, 2, 2), MDR_ST_INVAL);	// 2 unallocated
	assert_int_equal(move(s.vol, 4, 1, 2), MDR_ST_INVAL);	// beyond
	assert_int_equal(move(s.vol, 3, 2, 2), MDR_ST_INVAL);	// partly beyond

	// Device 2 has room for 3 extents: a volume of 4 on device 1 does not
	// fit.
	const uint64_t big = r.create(s.adm, "big", 4 * kExtent);
	const ConnId h = r.host(0x3333);
	r.open(h, big);
	for (uint64_t i = 0; i < 4; i++)
		(void)r.alloc(h, big, i);
	assert_int_equal(move(big, 0, 4, 2), MDR_ST_NOSPC);

	// Moving: a second move of the extent is busy, an ALLOC of it is told
	// to come back, the volume is not deleted.
	r.send(s.adm, 60, wire::MoveReq{.volume_id = s.vol, .first = 0, .count = 1,
					.to_dev = 2});
	r.flush();
	wire::Msg push = r.one(s.host);
	assert_int_equal(move(s.vol, 0, 1, 2), MDR_ST_BUSY);
	assert_int_equal(r.call(s.host, 61, wire::AllocReq{.volume_id = s.vol, .index = 0}),
			 MDR_ST_AGAIN);
	r.ack(s.host, push);
	r.copies();
	r.ack(s.host, r.one(s.host));
	assert_int_equal(status_of(r.one(s.adm)), MDR_ST_OK);

	// Roles and authentication.
	assert_int_equal(r.call(s.host, 70, wire::MoveReq{.volume_id = s.vol, .first = 1,
							  .count = 1, .to_dev = 2}),
			 MDR_ST_PERM);
	const ConnId unauth = r.admin(false);
	assert_int_equal(r.call(unauth, 71, wire::MoveReq{.volume_id = s.vol, .first = 1,
							  .count = 1, .to_dev = 2}),
			 MDR_ST_PERM);
	assert_int_equal(r.call(unauth, 72, wire::DrainReq{.dev_id = 1}), MDR_ST_PERM);
	assert_int_equal(r.call(s.adm, 73, wire::DrainReq{.dev_id = 9}), MDR_ST_NOENT);
	assert_int_equal(r.call(s.adm, 74, wire::DrainReq{.dev_id = 1, .to_dev = 9}),
			 MDR_ST_NOENT);
	assert_int_equal(r.node->stats().moves_done, 1);
}

// A copy that fails (the new device cannot be opened) rolls the move back:
// mapped at the old place one generation on, the new place free, IO told.
void test_failed_copy_rolls_back(void **)
{
	Rig r(true);
	Setup s(r);
	const uint64_t used2 = r.used(2);

	r.send(s.adm, 20, wire::MoveReq{.volume_id = s.vol, .first = 0, .count = 1,
					.to_dev = 2});
	r.flush();
	r.ack(s.host, r.one(s.host));
	r.copies();
	const wire::Entry e = r.entry(s.vol, 0);
	assert_int_equal(e.state, MDR_EXT_MAPPED);
	assert_int_equal(e.generation, 4);
	assert_int_equal(e.dev_id, 1);
	assert_int_equal(e.pstart, s.at[0].pstart);
	assert_int_equal(r.used(2), used2);
	wire::Msg push = r.one(s.host);
	expect_push(push, s.vol, 0, 4, MDR_INVAL_ALLOC);
	r.ack(s.host, push);
	assert_int_equal(status_of(r.one(s.adm)), MDR_ST_IO);
	assert_int_equal(r.node->stats().moves_failed, 1);
	assert_int_equal(r.node->stats().moves_done, 0);
	assert_true(r.extent_holds(e, 100));
}

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

// Acks refused as malformed (the connection is cut, the push stays
// unacked): the wrong size for the session's version, unknown flags, a
// reserved field set, dirty granules without MDR_INVAL_ACK_F_TRACKED or
// beyond the extent's granules (16 of a 64 KiB extent).
void test_malformed_acks_are_refused(void **)
{
	enum Case { long_on_v1, short_on_v2, flags, reserved, untracked_dirty, beyond };

	for (Case c : {long_on_v1, short_on_v2, flags, reserved, untracked_dirty, beyond}) {
		Rig r;
		r.past_grace();
		const ConnId adm = r.admin();
		r.send(adm, 2, wire::VolCreateReq{.size = 4 * kExtent,
						  .extent_shift = c == beyond ? 16u : kShift,
						  .tenant = 7, .name = "db1"});
		r.flush();
		const uint64_t vol = std::get<wire::VolCreateRep>(r.one(adm).body).vol.volume_id;
		const ConnId h = r.host(0x1111, c == long_on_v1 ? 1 : 2);
		r.open(h, vol);
		(void)r.alloc(h, vol, 1);
		r.send(adm, 20, wire::MoveReq{.volume_id = vol, .first = 1, .count = 1,
					      .to_dev = 2});
		r.flush();
		wire::Msg push = r.one(h);
		if (c == beyond) {
			// Tracked: MOVE comes after the pre-copy.
			r.ack(h, push);
			r.copies();
			push = r.one(h);
		}

		wire::InvalidateAck a = r.ack_of(h, std::get<wire::Invalidate>(push.body));
		a.extended = c != short_on_v2 && (c == long_on_v1 || a.extended);
		if (c == beyond) {
			a.flags = MDR_INVAL_ACK_F_TRACKED;
			a.dirty = uint64_t{1} << 16;
		}
		Bytes buf(wire::encoded_size(a));
		auto n = wire::encode(buf, push.hdr.req_id, a);
		assert_true(n.ok());
		auto put32 = [&](size_t off, uint32_t v) {
			v = htole32(v);
			std::memcpy(&buf[off], &v, 4);
		};
		if (c == flags)
			put32(offsetof(mdr_wire_inval_ack, flags), 2);
		if (c == reserved)
			put32(offsetof(mdr_wire_inval_ack, reserved), 1);
		if (c == untracked_dirty) {
			const uint64_t d = htole64(1);
			std::memcpy(&buf[offsetof(mdr_wire_inval_ack, dirty)], &d, 8);
		}
		const uint64_t bad = r.node->stats().bad_messages;
		r.node->on_message(h, buf);
		assert_int_equal(r.node->stats().bad_messages, bad + 1);
		assert_int_equal(r.net.disconnects.size(), 1);
		assert_int_equal(r.net.disconnects[0], h);
		// Not taken as an ack: the move still waits.
		r.copies();
		if (c == long_on_v1 || c == beyond)
			assert_int_equal(r.entry(vol, 1).state, MDR_EXT_FROZEN);
		else
			assert_int_equal(r.entry(vol, 1).state, MDR_EXT_MAPPED);
		assert_int_equal(r.node->moves_active(), 1);
		assert_true(r.quiet(adm));
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

// DRAIN moves every extent of every volume off the device.
void test_drain_empties_a_device(void **)
{
	Rig r;
	Setup s(r);
	const uint64_t other = r.create(s.adm, "db2", 2 * kExtent);
	r.open(s.host, other);
	const wire::Entry o = r.alloc(s.host, other, 1);
	r.write_extent(o, 300);

	r.send(s.adm, 80, wire::DrainReq{.dev_id = 1});
	for (int i = 0; i < 3; i++) {
		r.flush();
		wire::Msg push = r.one(s.host);
		assert_int_equal(std::get<wire::Invalidate>(push.body).reason, MDR_INVAL_MOVE);
		r.ack(s.host, push);
		r.copies();
		push = r.one(s.host);
		assert_int_equal(std::get<wire::Invalidate>(push.body).reason, MDR_INVAL_ALLOC);
		r.ack(s.host, push);
	}
	wire::Msg m = r.one(s.adm);
	auto *rep = std::get_if<wire::DrainRep>(&m.body);
	if (!rep)
		fail_msg("drain: status %u", status_of(m));
	assert_int_equal(rep->dev_id, 1);
	assert_int_equal(rep->status, MDR_ST_OK);
	assert_int_equal(rep->moved, 3);
	assert_int_equal(rep->remaining, 0);
	assert_int_equal(rep->bytes, 3 * kExtent);
	assert_int_equal(r.used(1), 0);
	assert_true(r.extent_holds(r.entry(s.vol, 0), 100));
	assert_true(r.extent_holds(r.entry(s.vol, 1), 101));
	assert_true(r.extent_holds(r.entry(other, 1), 300));

	// Nothing left: answered at once.
	assert_int_equal(r.call(s.adm, 81, wire::DrainReq{.dev_id = 1}), MDR_ST_OK);
}

// An extent allocated on the device behind the drain's scan, while the
// drain runs, is moved too: a pass that moved anything is followed by
// another from the start.
void test_drain_finds_extents_allocated_behind_it(void **)
{
	Rig r;
	r.past_grace();
	const ConnId adm = r.admin();
	const uint64_t db1 = r.create(adm, "db1", 2 * kExtent);
	const uint64_t db2 = r.create(adm, "db2", 2 * kExtent);
	const ConnId host = r.host(0x1111);
	r.open(host, db1);
	r.open(host, db2);
	const wire::Entry ahead = r.alloc(host, db2, 1);
	assert_int_equal(ahead.dev_id, 1);
	r.write_extent(ahead, 300);
	auto freeze = [&](uint64_t volume_id, uint64_t index) {
		r.flush();
		wire::Msg push = r.one(host);
		const auto &inv = std::get<wire::Invalidate>(push.body);
		assert_int_equal(inv.reason, MDR_INVAL_MOVE);
		assert_int_equal(inv.volume_id, volume_id);
		assert_int_equal(inv.first, index);
		r.ack(host, push);
	};
	auto publish = [&] {
		r.copies();
		wire::Msg push = r.one(host);
		assert_int_equal(std::get<wire::Invalidate>(push.body).reason, MDR_INVAL_ALLOC);
		r.ack(host, push);
	};

	r.send(adm, 80, wire::DrainReq{.dev_id = 1});
	freeze(db2, 1);
	// the scan is past db1: its extent 0 lands behind it
	const wire::Entry behind = r.alloc(host, db1, 0);
	assert_int_equal(behind.dev_id, 1);
	r.write_extent(behind, 100);
	publish();
	freeze(db1, 0);			// found by the second pass
	publish();
	wire::Msg m = r.one(adm);
	auto *rep = std::get_if<wire::DrainRep>(&m.body);
	if (!rep)
		fail_msg("drain: status %u", status_of(m));
	assert_int_equal(rep->status, MDR_ST_OK);
	assert_int_equal(rep->moved, 2);
	assert_int_equal(rep->remaining, 0);
	assert_int_equal(r.used(1), 0);
	assert_true(r.extent_holds(r.entry(db1, 0), 100));
	assert_true(r.extent_holds(r.entry(db2, 1), 300));
}

// The copier with its default options (a 4 MiB extent in flight at once)
// copies whole extents, one after another on the same ring, also after a
// job that failed; its stamps are in order.
void test_copier_copies_extents_with_its_defaults(void **)
{
	TempDir dir("mdr-migrate");
	const std::string a = dir.path + "/a", b = dir.path + "/b";
	constexpr uint64_t kBig = 4 * MiB;

	Rig::make_file(a, 3 * kBig);
	Rig::make_file(b, 3 * kBig);
	for (uint64_t i = 0; i < 3; i++) {
		std::vector<uint8_t> buf(kBig);
		stamp(buf, 500 + i);
		const int fd = ::open(a.c_str(), O_WRONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(pwrite(fd, buf.data(), buf.size(), off_t(i * kBig)),
				 ssize_t(buf.size()));
		close(fd);
	}

	mdnode::Copier c({{1, a}, {2, b}, {3, dir.path + "/no-such-device"}}, {});
	std::vector<std::pair<int, mdnode::CopyTimes>> got;
	auto done = [&got](int err, const mdnode::CopyTimes &t) { got.emplace_back(err, t); };

	// Extent 0 to the end of b, a failure, then extent 2 to the start.
	c.start({.src_dev = 1, .src_off = 0, .dst_dev = 2, .dst_off = 2 * kBig, .len = kBig},
		done);
	c.start({.src_dev = 1, .src_off = kBig, .dst_dev = 3, .dst_off = 0, .len = kBig}, done);
	c.start({.src_dev = 1, .src_off = 2 * kBig, .dst_dev = 2, .dst_off = 0, .len = kBig},
		done);
	c.wait_all();
	assert_int_equal(got.size(), 3);
	assert_int_equal(got[0].first, 0);
	assert_int_equal(got[1].first, -ENOENT);
	assert_int_equal(got[2].first, 0);
	assert_int_equal(c.bytes_copied(), 2 * kBig);
	for (const auto &[err, t] : got) {
		assert_true(t.queued > 0);
		assert_true(t.queued <= t.started);
		assert_true(t.started <= t.written);
		assert_true(t.written <= t.synced);
	}

	std::vector<uint8_t> want(kBig), have(kBig);
	const int fd = ::open(b.c_str(), O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	for (auto [seed, off] : {std::pair<uint64_t, uint64_t>{500, 2 * kBig}, {502, 0}}) {
		stamp(want, seed);
		assert_int_equal(pread(fd, have.data(), have.size(), off_t(off)),
				 ssize_t(have.size()));
		assert_true(want == have);
	}
	close(fd);
}

// Runs of a job: only those bytes are copied, each cut into chunks (of
// 128 KiB here: a run of 320 KiB is three IOs); no run: nothing but the
// fdatasync. Runs out of order, overlapping, unaligned, empty or beyond
// the job are refused.
void test_copier_copies_only_the_runs(void **)
{
	TempDir dir("mdr-migrate");
	const std::string a = dir.path + "/a", b = dir.path + "/b";
	constexpr uint64_t kLen = MiB;

	Rig::make_file(a, kLen);
	Rig::make_file(b, kLen);
	std::vector<uint8_t> src(kLen), old(kLen), got(kLen);
	stamp(src, 600);
	stamp(old, 601);
	int fd = ::open(a.c_str(), O_WRONLY | O_CLOEXEC);
	assert_int_equal(pwrite(fd, src.data(), kLen, 0), ssize_t(kLen));
	close(fd);
	fd = ::open(b.c_str(), O_WRONLY | O_CLOEXEC);
	assert_int_equal(pwrite(fd, old.data(), kLen, 0), ssize_t(kLen));
	close(fd);

	mdnode::Copier c({{1, a}, {2, b}}, {.chunk = 128 << 10, .depth = 2});
	std::vector<int> errs;
	auto done = [&errs](int err, const mdnode::CopyTimes &) { errs.push_back(err); };
	const std::vector<mdnode::CopyRun> runs{{4096, 4096}, {64 << 10, 320 << 10},
						{kLen - 8192, 8192}};
	const mdnode::CopyJob job{.src_dev = 1, .dst_dev = 2, .len = kLen, .runs = runs};

	assert_int_equal(mdnode::copy_bytes(job), 4096 + (320 << 10) + 8192);
	c.start(job, done);
	c.start({.src_dev = 1, .dst_dev = 2, .len = kLen, .runs = std::vector<mdnode::CopyRun>{},
		 .sync = false}, done);
	const std::vector<std::vector<mdnode::CopyRun>> bad{
		{{8192, 4096}, {4096, 4096}},	// out of order
		{{0, 8192}, {4096, 4096}},	// overlapping
		{{512, 4096}},			// unaligned
		{{0, 0}},			// empty
		{{kLen - 4096, 8192}},		// beyond
	};
	for (const auto &r : bad)
		c.start({.src_dev = 1, .dst_dev = 2, .len = kLen, .runs = r}, done);
	c.wait_all();
	assert_int_equal(errs.size(), 2 + bad.size());
	assert_int_equal(errs[0], 0);
	assert_int_equal(errs[1], 0);
	for (size_t i = 2; i < errs.size(); i++)
		assert_int_equal(errs[i], -EINVAL);
	assert_int_equal(c.bytes_copied(), mdnode::copy_bytes(job));

	fd = ::open(b.c_str(), O_RDONLY | O_CLOEXEC);
	assert_int_equal(pread(fd, got.data(), kLen, 0), ssize_t(kLen));
	close(fd);
	for (uint64_t off = 0; off < kLen; off += 4096) {
		const bool copied = std::any_of(runs.begin(), runs.end(), [&](const auto &r) {
			return off >= r.off && off < r.off + r.len;
		});
		const auto &want = copied ? src : old;
		if (std::memcmp(&got[off], &want[off], 4096))
			fail_msg("block at %llu: not the %s data", (unsigned long long)off,
				 copied ? "copied" : "old");
	}
}

} // namespace

int main()
{
	mdnode::set_log_level(mdnode::LogLevel::error);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_move_freezes_copies_and_publishes),
		cmocka_unit_test(test_move_back_and_forth),
		cmocka_unit_test(test_silent_holder_delays_the_copy_until_its_lease_expires),
		cmocka_unit_test(test_move_after_a_lapse_waits_out_the_holders_io),
		cmocka_unit_test(test_lapsed_holder_is_not_cut_off_for_a_slow_ack),
		cmocka_unit_test(test_reconnected_holder_gets_the_push_again),
		cmocka_unit_test(test_no_copy_within_the_grace_after_a_start),
		cmocka_unit_test(test_crash_at_each_step),
		cmocka_unit_test(test_move_refusals),
		cmocka_unit_test(test_failed_copy_rolls_back),
		cmocka_unit_test(test_precopy_copies_again_only_the_reported_granules),
		cmocka_unit_test(test_precopy_dirty_masks),
		cmocka_unit_test(test_precopy_falls_back_to_a_full_copy),
		cmocka_unit_test(test_precopy_needs_every_holder_on_version_2),
		cmocka_unit_test(test_malformed_acks_are_refused),
		cmocka_unit_test(test_move_failed_before_begin_frees_its_place),
		cmocka_unit_test(test_drain_empties_a_device),
		cmocka_unit_test(test_drain_finds_extents_allocated_behind_it),
		cmocka_unit_test(test_copier_copies_extents_with_its_defaults),
		cmocka_unit_test(test_copier_copies_only_the_runs),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
