// SPDX-License-Identifier: GPL-2.0
//
// repl_rdma.cc - mdr-test-repl-rdma: log shipping over RDMA on the guest's
// soft-RoCE, with the real Store and Journal (tests/repl_store.h, which
// test_repl_store.cc runs over a fake link). A leader's LogShipper on an
// RdmaShipLink and two followers' LogReceivers behind RdmaFollowers, each
// follower on a replica address of its own, all in this process on one
// EventLoop (mdnode's), polled, never spinning:
//
//	stream	changes of many kinds, pipelined, through rings small enough
//		to wrap and fill: every replica's store snapshot is the
//		leader's byte for byte; b takes each batch with its notify
//		(one WRITE with immediate), c answers as a follower of a
//		release before features and takes a WRITE and a notify
//	restart	follower c stops (its connection, its journal closed),
//		changes commit with b meanwhile, c starts again from what its
//		journal replays and resumes where its log ended
//	fenced	a leader of epoch 3 connects to b: b fences epoch 2 (its QP
//		to error, its ring deregistered), the old leader's writes stop
//		reaching b and its reconnect is refused as stale (deposed by
//		3), b's log takes nothing of epoch 2 after the fence, and the
//		old leader still commits with c
//	probe	a probe of b's log port finds its process alive (b counts it,
//		as no leader's request); the old leader stops leading (its
//		mirrors' memory handed back) and c sees the hangup of epoch
//		2; with c stopped, a probe of its port finds it gone, as does
//		one of a port nobody listens on; one of an address no device
//		has proves nothing
//
//	mdr-test-repl-rdma --follower 192.0.2.11 --follower 192.0.2.12 [--port 4800]
//
// The leaders connect without a source address: inside one guest rdma_cm
// takes the device that owns the destination (testing.md), and a source
// on another device would not reach it. Each follower is reached on the
// rxe device of its own address.
// Prints one line per phase and the counters behind it. Exit: 0 pass,
// 1 fail, 77 skip (no RDMA device on an address).
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mdnode/loop.h"
#include "mdnode/repl_probe.h"
#include "mdnode/repl_rdma.h"
#include "tests/repl_store.h"

#include "tests/common/cmocka_cxx.h"

namespace {

using namespace mdnode::repl;
using repl_store::Replica;

constexpr uint64_t kGroup = 7;
constexpr uint64_t kEpoch = 2;
// Small enough that the stream wraps the rings several times and fills
// them (backlog), large enough for a batch and a wrap marker.
constexpr uint64_t kRing = kMinBatchBytes + 4096;
constexpr int kPhaseMs = 30000;

struct Args {
	std::vector<std::string> followers;
	uint16_t port = 4800;
} g_args;

int64_t now_ms()
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(
		std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A follower: its journal and store, and its RDMA end (none while down).
struct Follower {
	std::string name;
	ReplicaAddress at;
	std::unique_ptr<Replica> replica;
	std::unique_ptr<RdmaFollower> rdma;
	uint64_t features = kFeatureEntryNotify;	// its accept's

	// Listens, its log as its replica holds it: every record durable,
	// applied and of epoch 2 (the only epoch that shipped records here).
	void start(uint64_t fenced)
	{
		FollowerOptions o;
		o.self = at;
		o.bounds = {.group = kGroup, .max_ring_bytes = 1 << 20};
		o.last = replica->log.last;
		o.applied = replica->applied;
		o.held = std::exchange(replica->log.held, {});
		o.fenced_epoch = fenced;
		o.features = features;
		auto f = RdmaFollower::listen(std::move(o), *replica);
		if (!f.ok())
			fail_msg("%s listens on %s: %s", name.c_str(), at.address.c_str(),
				 f.message().c_str());
		rdma = std::move(f).value();
	}
};

// A leader of an epoch: its shipper and its link.
struct Shipping {
	std::unique_ptr<LogShipper> shipper;
	std::unique_ptr<RdmaShipLink> link;

	Shipping(uint64_t epoch, uint32_t id, const std::vector<Follower *> &to,
		 LogPosition start, LogShipper::OnCommit on_commit)
	{
		LinkOptions lo;
		lo.group = kGroup;
		lo.epoch = epoch;
		lo.leader_id = id;
		lo.ring_bytes = kRing;
		lo.max_batch_bytes = kMinBatchBytes;
		lo.send_depth = 16;	// small: the SQ fills, and waits
		ShipperOptions so;
		so.epoch = epoch;
		so.start = start;
		so.commit_index = start.index;
		so.ring_bytes = kRing;
		so.max_batch_bytes = kMinBatchBytes;
		so.heartbeat_ms = 50;
		for (Follower *f : to) {
			lo.followers[f->name] = f->at;
			so.followers.push_back(f->name);
		}
		auto l = RdmaShipLink::create(lo);
		if (!l.ok())
			fail_msg("link: %s", l.message().c_str());
		link = std::move(l).value();
		auto s = LogShipper::create(so, *link, std::move(on_commit));
		if (!s.ok())
			fail_msg("shipper: %s", s.message().c_str());
		shipper = std::move(s).value();
		link->attach(*shipper);
	}
};

struct Rig {
	repl_store::Leader leader{
		[this](uint64_t index, uint16_t type, std::span<const std::byte> p) {
			const RecordRef r{type, p};
			mdr::Status st = old->shipper->ship(index, std::span(&r, 1));
			if (!st.ok())
				fail_msg("ship: %s", st.message().c_str());
		},
		[this](uint64_t index) { assert_true(old->shipper->local_durable(index).ok()); }};
	Follower b, c;
	std::unique_ptr<Shipping> old;		// epoch 2's leader
	std::unique_ptr<Shipping> newer;	// epoch 3's
	std::unique_ptr<ReplicaProbe> probe;

	Rig()
	{
		auto commit = [this] { return old->shipper->commit_index(); };
		int i = 0;

		for (Follower *f : {&b, &c}) {
			f->name = i ? "c" : "b";
			f->at = {uint32_t(2 + i), g_args.followers[i], g_args.port};
			f->replica = std::make_unique<Replica>(commit);
			// c answers as a release before features: the leader
			// writes its batches with a WRITE and a notify.
			if (i)
				f->features = 0;
			f->start(0);
			i++;
		}
		old = std::make_unique<Shipping>(kEpoch, 1, std::vector{&b, &c}, LogPosition{},
						 [this](uint64_t c) { leader.committed(c); });
	}

	// Runs mdnode's loop over every fd here until done() or kPhaseMs.
	void run_until(const std::function<bool()> &done, const char *what)
	{
		mdnode::EventLoop loop;
		const int64_t deadline = now_ms() + kPhaseMs;

		auto rdma = [&loop](const char *name, auto get) {
			loop.add({name, [get] { return get() ? get()->fds() : std::vector<int>{}; },
				  64, [get](int fd, unsigned budget) {
					  return get() ? get()->process(fd, budget) : false;
				  }});
		};
		rdma("old", [this] { return old ? old->link.get() : nullptr; });
		rdma("newer", [this] { return newer ? newer->link.get() : nullptr; });
		rdma("b", [this] { return b.rdma.get(); });
		rdma("c", [this] { return c.rdma.get(); });
		auto journal = [&loop](const char *name, auto get) {
			loop.add({name, [get] { return std::vector<int>{get()->event_fd()}; }, 1,
				  [get](int, unsigned) {
					  get()->process_completions();
					  return false;
				  }});
		};
		if (probe)
			loop.add_fd("probe", probe->fd(), [this] { probe->process(); });
		journal("journal", [this] { return leader.journal.get(); });
		journal("journal-b", [this] { return b.replica->journal.get(); });
		journal("journal-c", [this] { return c.replica->journal.get(); });
		assert_true(loop.add_timer("tick", 10, [&] {
			for (Shipping *s : {old.get(), newer.get()}) {
				if (!s)
					continue;
				s->shipper->tick(now_ms());
				s->link->tick();
			}
			if (probe)
				probe->tick(now_ms());
			if (done() || now_ms() > deadline)
				loop.stop();
		}).ok());
		loop.run();
		if (!done())
			fail_msg("%s: not within %d ms", what, kPhaseMs);
	}

	bool applied_all(const Follower &f) const
	{
		return f.replica->applied == leader.next - 1;
	}

	void expect_same(const Follower &f) const
	{
		const std::vector<uint8_t> snap = leader.store.snapshot();

		if (f.replica->store.snapshot() != snap)
			fail_msg("%s's snapshot differs from the leader's", f.name.c_str());
		mdr::test::assert_same_tables(f.replica->store, leader.store);
	}

	// Rounds of changes: a volume created, its extents allocated all at
	// once (pipelined), the volume of the round before deleted, a host
	// added now and then; each round waits for its commits.
	void rounds(int n)
	{
		for (int i = 0; i < n; i++) {
			const std::string name = "vol" + std::to_string(next_volume++);

			leader.change(leader.store.prepare_create(name, 16 << 20, 20, 7));
			run_until([this] { return leader.pending.empty(); }, "create");

			const uint64_t id = leader.store.volume(name)->id;
			for (uint64_t x = 0; x < 16; x++)
				leader.alloc(id, x);
			if (last_volume)
				leader.change(leader.store.prepare_delete(last_volume));
			if (i % 4 == 0) {
				const uint8_t key[32] = {uint8_t(i + 1)};
				leader.change(leader.store.prepare_host_add(100 + next_volume, 7, key,
									  false));
			}
			last_volume = id;
			run_until([this] { return leader.pending.empty(); }, "round");
		}
	}

	// n hosts added at once: more bytes than a ring holds, so the shipper
	// waits for room (backlog) while the SQ waits for completions.
	void burst(int n)
	{
		for (int i = 0; i < n; i++) {
			const uint8_t key[32] = {uint8_t(i), uint8_t(i >> 8), 1};

			leader.change(leader.store.prepare_host_add(next_host++, 7, key, false));
		}
		run_until([this] { return leader.pending.empty(); }, "burst");
	}

	uint64_t next_volume = 1;
	uint64_t last_volume = 0;
	uint64_t next_host = 1000;
};

Rig *g_rig;

int setup(void **)
{
	g_rig = new Rig();
	return 0;
}

int teardown(void **)
{
	delete g_rig;
	return 0;
}

void print_stats(const char *phase)
{
	const ShipperStats &s = g_rig->old->shipper->stats();

	printf("%s: committed %" PRIu64 ", batches %" PRIu64 ", writes %" PRIu64 ", wraps %" PRIu64
	       ", backlog waits %" PRIu64 ", heartbeats %" PRIu64 "\n",
	       phase, g_rig->old->shipper->commit_index(), s.batches, s.writes, s.wraps,
	       s.backlog_waits, s.heartbeats);
	for (const Follower *f : {&g_rig->b, &g_rig->c}) {
		const MemberLinkStats *m = g_rig->old->link->stats(f->name);

		printf("  %s: applied %" PRIu64 ", connects %" PRIu64 ", sq waits %" PRIu64
		       ", entries %" PRIu64 ", writes %" PRIu64 ", notifies %" PRIu64
		       ", durables %" PRIu64 ", last error: %s\n",
		       f->name.c_str(), f->replica->applied, m->connects, m->sq_waits, m->entries,
		       m->writes, m->notifies, m->durables,
		       m->last_error.empty() ? "none" : m->last_error.c_str());
	}
	fflush(stdout);
}

void test_stream(void **)
{
	Rig &r = *g_rig;

	r.run_until([&] { return r.old->link->connected("b") && r.old->link->connected("c"); },
		    "connect");
	r.rounds(30);
	r.burst(1000);
	r.rounds(10);
	r.run_until([&] { return r.applied_all(r.b) && r.applied_all(r.c); }, "apply");
	r.expect_same(r.b);
	r.expect_same(r.c);
	// The rings wrapped and filled: every path of the flow control ran.
	assert_true(r.old->shipper->stats().wraps >= 2);
	assert_true(r.old->shipper->stats().backlog_waits > 0);
	// b took each batch with its notify, c (no features) a WRITE and a
	// notify: both ways landed the same log.
	const MemberLinkStats *b = r.old->link->stats("b"), *c = r.old->link->stats("c");
	assert_true(b->entries > 0 && b->notifies == 0);
	assert_true(c->entries == 0 && c->notifies > 0 && c->writes >= c->notifies);
	print_stats("stream");
	printf("ok: stream: %" PRIu64 " changes, every replica's snapshot is the leader's\n",
	       r.leader.next - 1);
}

void test_restart(void **)
{
	Rig &r = *g_rig;

	// c stops: its connection goes, its journal is closed and replayed.
	r.c.rdma.reset();
	r.c.replica->restart();
	const uint64_t had = r.c.replica->applied;
	r.run_until([&] { return !r.old->link->connected("c"); }, "c's disconnect");
	// The leader commits with b alone meanwhile.
	r.rounds(5);
	assert_int_equal(r.c.replica->applied, had);
	r.run_until([&] { return r.applied_all(r.b); }, "apply on b");
	// c again, from its journal: it resumes where its log ended.
	r.c.start(kEpoch);
	r.run_until([&] { return r.applied_all(r.c); }, "c's catch-up");
	r.expect_same(r.c);
	r.expect_same(r.b);
	assert_int_equal(r.old->link->stats("c")->connects, 2);
	print_stats("restart");
	printf("ok: restart: c resumed at %" PRIu64 " and caught up to %" PRIu64 "\n", had,
	       r.c.replica->applied);
}

void test_fenced(void **)
{
	Rig &r = *g_rig;
	const LogPosition at = r.b.rdma->last();

	// A leader of epoch 3, from b's log (as its adoption would be).
	r.newer = std::make_unique<Shipping>(kEpoch + 1, 4, std::vector{&r.b}, at,
					     [](uint64_t) {});
	r.run_until([&] { return r.newer->link->connected("b"); }, "epoch 3's connect");
	assert_int_equal(r.b.rdma->fenced_epoch(), kEpoch + 1);
	assert_int_equal(r.b.rdma->epoch(), kEpoch + 1);
	// The old leader lost b, and is told it is deposed when it asks again.
	r.run_until([&] { return r.old->link->deposed_by() == kEpoch + 1; }, "stale refusal");
	assert_false(r.old->link->connected("b"));
	assert_int_equal(r.old->link->stats("b")->last_reject, kRejStale);
	assert_int_equal(r.b.rdma->stats().last_reject, kRejStale);
	// It still commits with c; b takes nothing of epoch 2 any more.
	r.rounds(3);
	r.run_until([&] { return r.applied_all(r.c); }, "apply on c");
	r.expect_same(r.c);
	assert_true(r.b.rdma->last() == at);
	assert_true(r.b.replica->durable == at.index);
	assert_true(r.newer->link->connected("b"));
	print_stats("fenced");
	printf("ok: fenced: b at epoch %" PRIu64 " refused epoch %" PRIu64
	       ", its log stays at %" PRIu64 "; c follows to %" PRIu64 "\n",
	       r.b.rdma->fenced_epoch(), kEpoch, at.index, r.c.replica->applied);
}

// One probe of address:port, to its verdict.
ReplicaProbe::Verdict probe(const std::string &address, uint16_t port)
{
	Rig &r = *g_rig;

	r.probe->start(address, port, now_ms(), 2000);
	r.run_until([&] { return r.probe->verdict() != ReplicaProbe::Verdict::pending; },
		    "a probe's verdict");
	printf("probe: %s:%u: %s (%s)\n", address.c_str(), port, verdict_name(r.probe->verdict()),
	       r.probe->detail().c_str());
	return r.probe->verdict();
}

void test_probe(void **)
{
	Rig &r = *g_rig;
	using V = ReplicaProbe::Verdict;

	auto p = ReplicaProbe::create(kGroup);
	assert_true(p.ok());
	r.probe = std::move(p).value();

	const FollowerStats before = r.b.rdma->stats();
	assert_true(probe(r.b.at.address, g_args.port) == V::alive);
	assert_int_equal(r.b.rdma->stats().probes, 1);
	assert_int_equal(r.b.rdma->stats().requests, before.requests);
	assert_int_equal(r.b.rdma->stats().refusals, before.refusals);
	assert_int_equal(r.b.rdma->stats().last_reject, before.last_reject);
	assert_true(r.newer->link->connected("b"));

	// The old leader stops leading (as a step down does): its mirrors'
	// memory comes back, one of the ring's size per follower, and c,
	// which it still shipped to, sees it hang up.
	(void)r.c.rdma->take_hangup();
	std::vector<mdr::verbs::Mapping> mirrors = r.old->link->take_mirrors();
	assert_int_equal(mirrors.size(), 2);
	for (const mdr::verbs::Mapping &m : mirrors)
		assert_int_equal(m.size(), kRing);
	assert_false(r.old->link->connected("c"));
	r.run_until([&] { return !r.c.rdma->connected(); }, "c's hangup");
	assert_int_equal(r.c.rdma->take_hangup(), kEpoch);
	assert_int_equal(r.c.rdma->take_hangup(), 0);

	r.c.rdma.reset();
	assert_true(probe(r.c.at.address, g_args.port) == V::gone);
	assert_true(probe(r.b.at.address, uint16_t(g_args.port + 1)) == V::gone);
	assert_true(probe("192.0.2.250", g_args.port) == V::unknown);
	printf("ok: probe: a listener alive, a stopped one and a free port gone, no device "
	       "unknown\n");
}

int usage()
{
	fprintf(stderr, "usage: mdr-test-repl-rdma --follower ADDR --follower ADDR [--port N]\n");
	return 2;
}

} // namespace

int main(int argc, char **argv)
{
	for (int i = 1; i + 1 < argc; i += 2) {
		const std::string opt = argv[i];

		if (opt == "--follower")
			g_args.followers.push_back(argv[i + 1]);
		else if (opt == "--port")
			g_args.port = uint16_t(std::atoi(argv[i + 1]));
		else
			return usage();
	}
	if (argc % 2 == 0 || g_args.followers.size() != 2)
		return usage();

	// No RDMA device on a follower's address: nothing to test here.
	for (const std::string &a : g_args.followers) {
		repl_store::Replica probe([] { return uint64_t{0}; });
		FollowerOptions o;

		o.self = {9, a, g_args.port};
		auto f = RdmaFollower::listen(std::move(o), probe);

		if (!f.ok()) {
			printf("SKIP: %s: %s\n", a.c_str(), f.message().c_str());
			return 77;
		}
	}

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_restart),
		cmocka_unit_test(test_fenced),
		cmocka_unit_test(test_probe),
	};
	return cmocka_run_group_tests(tests, setup, teardown) ? 1 : 0;
}
