// SPDX-License-Identifier: GPL-2.0
//
// test_migrate.h - the rig of test_migrate_*.cc and test_node_zero.cc:
// mdnode on two devices that are sparse files in the rig's directory
// (device 2 with room for 3 extents of 1 MiB), its copier copying in chunks
// of 128 KiB, hosts of wire version 1 unless asked, extents zeroed before
// their ALLOC only when asked, and a Setup of a volume with two extents
// allocated and stamped with known data.
//
// The store, the journal and the copier are the real ones; time is the
// Node's clock function, moved by hand. A crash is the Node, the journal
// and the store destroyed without anything written after the step, and the
// journal replayed into a new store, as mdnode does at start.
#ifndef MDR_TESTS_TEST_MIGRATE_H
#define MDR_TESTS_TEST_MIGRATE_H

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "lib/wire/wire.h"
#include "mdnode/node.h"
#include "mdnode/store.h"

#include "tests/common/node_rig.h"

#include "tests/common/cmocka_cxx.h"

namespace mdr::test {

// A lapsed holder's IO may land this much longer; then data moves.
inline constexpr uint32_t kIoHoldMs = 200;
inline constexpr int64_t kWaitedOutMs = kHeldMs + kIoHoldMs;
inline constexpr uint32_t kShift = 20;		// 1 MiB extents: a few chunks each
inline constexpr uint64_t kExtent = uint64_t{1} << kShift;
inline constexpr uint64_t kDev1Size = 32 * MiB;
inline constexpr uint64_t kDev2Size = 4 * MiB;	// 1 MiB label: room for 3 extents

// A block of 4 KiB stamped with where it belongs and a seed.
inline void stamp(std::vector<uint8_t> &buf, uint64_t seed)
{
	for (size_t i = 0; i < buf.size(); i += 8) {
		const uint64_t v = seed * 0x9e3779b97f4a7c15ull + i;
		std::memcpy(&buf[i], &v, 8);
	}
}

// Hosts speak version 1 unless asked: no pre-copy, the whole extent is
// copied under the freeze (the tests of the pre-copy ask for 2).
struct Rig : NodeRig {
	explicit Rig(bool bad_dev2_path = false, uint32_t hold_ms = kIoHoldMs, bool zero = false)
		: NodeRig("mdr-migrate", 1), io_hold_ms(hold_ms), zero_extents(zero)
	{
		jdir = dir + "/journal";
		std::filesystem::create_directory(jdir);
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
	// node, the roll-back of unfinished moves (unless as a replica of a
	// group, which leaves them to its leader). now does not move.
	void start(bool recover = true)
	{
		mdnode::NodeOptions o = rig_options();
		o.io_hold_ms = io_hold_ms;
		o.boot_id = 0xb007 + restarts;
		o.copier.chunk = 128 << 10;	// 8 chunks an extent
		o.copier.depth = 3;
		o.device_paths = copier_paths;
		o.zero_extents = zero_extents;
		NodeRig::start({{1, dev_path[1], "SER-A", kDev1Size},
				{2, dev_path[2], "SER-B", kDev2Size}},
			       o, jdir);
		if (!recover)
			return;
		auto st = node->recover_moves();
		if (!st.ok())
			fail_msg("recover: %s", st.message().c_str());
	}

	// kill -9: nothing more reaches the journal.
	void crash_and_restart(bool recover = true)
	{
		node.reset();
		journal.reset();
		store.reset();
		net.sent.clear();
		restarts++;
		start(recover);
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
		if (zero_extents)
			node->wait_copies();	// the zeroing (and any copy queued)
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
	bool zero_extents;	// NodeOptions::zero_extents of every start
	std::string jdir;
	std::map<uint32_t, std::string> dev_path;
	std::map<uint32_t, std::string> copier_paths;
	unsigned restarts = 0;
};

// An extent whose move froze it and then rolled back: mapped at its old
// place again, two generations past it (the freeze, the roll back).
inline void expect_rolled_back(const wire::Entry &e, const wire::Entry &was)
{
	assert_int_equal(e.state, MDR_EXT_MAPPED);
	assert_int_equal(e.generation, was.generation + 2);
	assert_int_equal(e.dev_id, was.dev_id);
	assert_int_equal(e.pstart, was.pstart);
}

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

	// The MOVE of extent 1 to device 2 (req_id 20) frozen: its push
	// to the host, not acked.
	wire::Msg freeze(Rig &r) const
	{
		r.send(adm, 20, wire::MoveReq{.volume_id = vol, .first = 1, .count = 1,
					      .to_dev = 2});
		r.flush();
		return r.one(host);
	}

	ConnId adm = 0, host = 0;
	uint64_t vol = 0;
	wire::Entry at[2];
};

} // namespace mdr::test

#endif // MDR_TESTS_TEST_MIGRATE_H
