// SPDX-License-Identifier: GPL-2.0
//
// test_node.cc - what mdnode does with the messages it receives, driven
// through the Net seam with a fake transport: sessions and roles, tenant
// rules (the rkey is asked per connection, so per tenant PD), leases (RENEW,
// STALE, CLOSE, expiry), ALLOC with its invalidation fan-out settled by an
// ack or by a lease running out, joined ALLOCs, pushes within the push
// credits, retried after a failed send, and a holder that renews but never
// acks cut off, delete and resize refused while leases are held, and a
// journal that fails answering EIO.
//
// The store and the journal are the real ones, on a directory under
// /var/tmp; time is the Node's clock function, moved by hand.
#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>

#include "lib/auth.h"
#include "lib/wire.h"
#include "mdnode/log.h"
#include "mdnode/node.h"
#include "mdnode/store.h"

#include "tests/common/node_rig.h"

#include "tests/common/cmocka_cxx.h"

namespace fs = std::filesystem;
namespace wire = mdr::wire;
using mdnode::ConnId;
using mdnode::Node;
using mdnode::NodeOptions;
using mdnode::PeerInfo;

namespace {

using namespace mdr::test;

// Then what the host sent before may still land this much longer.
constexpr uint32_t kIoHoldMs = 300;
constexpr int64_t kWaitedOutMs = kHeldMs + kIoHoldMs;
constexpr uint32_t kShift = 16;	// 64 KiB extents: plenty on a small device

// Two devices that are never read or written: the node only allocates.
// Hosts speak version 2 here, unauthenticated under --host-auth optional;
// test_host_auth.cc has hosts that prove their key.
struct Rig : NodeRig {
	explicit Rig(NodeOptions o = options()) : NodeRig("mdr-node", 2)
	{
		start({{1, "/dev/fake-a", "SER-A", 64 * MiB}, {2, "/dev/fake-b", "SER-B", 32 * MiB}},
		      o, dir);
	}

	static NodeOptions options()
	{
		NodeOptions o = rig_options();
		o.io_hold_ms = kIoHoldMs;
		o.boot_id = 0xb007;
		return o;
	}

	ConnId host(uint32_t tenant, uint64_t host_id, uint16_t push_credits = 16)
	{
		PeerInfo p = peer(MDR_ROLE_HOST, tenant, host_id);

		p.push_credits = push_credits;
		return establish(p);
	}

	uint64_t create(ConnId admin_conn, const std::string &name, uint64_t size,
			uint32_t tenant)
	{
		return NodeRig::create(admin_conn, {.size = size, .extent_shift = kShift,
						    .tenant = tenant, .name = name});
	}

	wire::VolInfoRep info(ConnId admin_conn, const std::string &name)
	{
		send(admin_conn, 4, wire::VolInfoReq{.name = name});
		wire::Msg m = one(admin_conn);
		auto *rep = std::get_if<wire::VolInfoRep>(&m.body);
		if (!rep)
			fail_msg("info %s: status %u", name.c_str(), status_of(m));
		return *rep;
	}
};

// An ALLOC reply for (volume, index) with a mapped entry that matches what
// the table now holds.
wire::Entry expect_alloc(Rig &r, const wire::Msg &m, uint64_t req_id, uint64_t volume_id,
			 uint64_t index)
{
	assert_int_equal(m.hdr.req_id, req_id);
	auto *rep = std::get_if<wire::AllocRep>(&m.body);
	if (!rep)
		fail_msg("alloc %llu: status %u", (unsigned long long)req_id, status_of(m));
	assert_int_equal(rep->volume_id, volume_id);
	assert_int_equal(rep->index, index);
	assert_int_equal(rep->entry.state, MDR_EXT_MAPPED);
	assert_true(rep->entry.dev_id == 1 || rep->entry.dev_id == 2);
	const mdr_wire_entry &e = r.store->volume(volume_id)->table.entries()[index];
	assert_int_equal(wire::verify_entry(e, volume_id, index), wire::EntryCheck::ok);
	assert_true(wire::decode_entry(e) == rep->entry);
	return rep->entry;
}

// ---------------------------------------------------------------------------
// Sessions, roles, tenants

// OPEN answers with the volume's table and the rkey the transport gives for
// this connection; every connection asks for its own (its tenant's PD).
void test_open_returns_the_table_and_the_connections_rkey(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "db1", 8 * MiB, 7);
	const ConnId h1 = r.host(7, 0x1111);
	const ConnId h2 = r.host(7, 0x2222);
	const mdnode::Volume *v = r.store->volume(vol);

	wire::OpenRep rep = r.open(h1, vol);
	assert_int_equal(rep.volume_id, vol);
	assert_int_equal(rep.size, 8 * MiB);
	assert_int_equal(rep.table_addr, reinterpret_cast<uintptr_t>(v->table.data()));
	assert_int_equal(rep.table_len, (8 * MiB >> kShift) * sizeof(mdr_wire_entry));
	assert_int_equal(rep.table_rkey, FakeNet::rkey_for(h1, vol));
	assert_int_equal(rep.extent_shift, kShift);
	assert_int_equal(rep.lease_ms, kLeaseMs);
	assert_int_equal(rep.generation, 1);
	assert_string_equal(rep.name.c_str(), "db1");

	// By name, from another host of the tenant, on its own connection.
	r.send(h2, 9, wire::OpenReq{.flags = MDR_OPEN_F_BY_NAME, .name = "db1"});
	const wire::Msg m2 = r.one(h2);
	auto *rep2 = std::get_if<wire::OpenRep>(&m2.body);
	assert_non_null(rep2);
	assert_int_equal(rep2->volume_id, vol);
	assert_int_equal(rep2->table_rkey, FakeNet::rkey_for(h2, vol));

	assert_int_equal(r.net.rkey_calls.size(), 2);
	assert_int_equal(r.net.rkey_calls[0].conn, h1);
	assert_int_equal(r.net.rkey_calls[1].conn, h2);
	for (const auto &c : r.net.rkey_calls) {
		assert_int_equal(c.volume_id, vol);
		assert_ptr_equal(c.addr, v->table.data());
		assert_int_equal(c.len, v->table.bytes());
	}
	assert_int_equal(r.info(adm, "db1").vol.open_count, 2);
}

// A host of tenant 8 cannot tell tenant 7's volume from one that does not
// exist, by id or by name, and no table is registered for it.
void test_tenant_cannot_open_another_tenants_volume(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "a-vol", 4 * MiB, 7);
	const ConnId other = r.host(8, 0x8888);

	r.send(other, 10, wire::OpenReq{.volume_id = vol});
	wire::Msg m = r.one(other);
	assert_int_equal(status_of(m), MDR_ST_NOENT);
	assert_int_equal(std::get<wire::ErrorRep>(m.body).opcode, MDR_OP_OPEN);
	r.send(other, 11, wire::OpenReq{.flags = MDR_OPEN_F_BY_NAME, .name = "a-vol"});
	assert_int_equal(status_of(r.one(other)), MDR_ST_NOENT);
	r.send(other, 12, wire::OpenReq{.volume_id = vol + 100});
	assert_int_equal(status_of(r.one(other)), MDR_ST_NOENT);
	assert_true(r.net.rkey_calls.empty());

	// Nor can it allocate in it or hold a lease on it.
	assert_int_equal(r.call(other, 13, wire::AllocReq{.volume_id = vol, .index = 0}),
			 MDR_ST_STALE);
	assert_int_equal(r.call(other, 14, wire::RenewReq{.volume_id = vol}), MDR_ST_STALE);
	assert_int_equal(r.store->volume(vol)->allocated, 0);
	assert_int_equal(r.info(adm, "a-vol").vol.open_count, 0);

	// Its own tenant's volume of the same name space opens fine.
	const uint64_t mine = r.create(adm, "b-vol", 4 * MiB, 8);
	assert_int_equal(r.open(other, mine).table_rkey, FakeNet::rkey_for(other, mine));
	assert_true(r.quiet(adm));
}

// A table that cannot be registered fails the OPEN without a lease.
void test_open_without_a_registration_takes_no_lease(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId h = r.host(1, 0x1);

	r.net.rkey_error = -ENOMEM;
	r.send(h, 5, wire::OpenReq{.volume_id = vol});
	assert_int_equal(status_of(r.one(h)), MDR_ST_NOMEM);
	assert_int_equal(r.info(adm, "v").vol.open_count, 0);
	assert_int_equal(r.call(h, 6, wire::RenewReq{.volume_id = vol}), MDR_ST_STALE);
	assert_int_equal(r.call(adm, 7, wire::VolDeleteReq{.name = "v"}), MDR_ST_OK);
}

// Every admin RPC on a host connection is refused with PERM (and the
// connection stays); nothing changes.
void test_admin_rpcs_are_refused_on_host_connections(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	r.create(adm, "v", 4 * MiB, 1);
	const ConnId h = r.host(1, 0x1);
	const std::vector<std::pair<uint16_t, wire::Body>> admin_ops = {
		{MDR_OP_AUTH, wire::AuthReq{}},
		{MDR_OP_VOL_CREATE, wire::VolCreateReq{.size = MiB, .tenant = 1, .name = "evil"}},
		{MDR_OP_VOL_DELETE, wire::VolDeleteReq{.name = "v"}},
		{MDR_OP_VOL_LIST, wire::VolListReq{}},
		{MDR_OP_VOL_INFO, wire::VolInfoReq{.name = "v"}},
		{MDR_OP_VOL_RESIZE, wire::VolResizeReq{.size = 8 * MiB, .name = "v"}},
		{MDR_OP_DEV_LIST, wire::DevListReq{}},
		{MDR_OP_NODE_STATS, wire::NodeStatsReq{}},
	};
	uint64_t id = 100;

	for (const auto &[op, b] : admin_ops) {
		r.send(h, id, b);
		r.flush();
		wire::Msg m = r.one(h);
		assert_int_equal(m.hdr.req_id, id);
		assert_int_equal(status_of(m), MDR_ST_PERM);
		assert_int_equal(std::get<wire::ErrorRep>(m.body).opcode, op);
		id++;
	}
	assert_true(r.net.disconnects.empty());
	assert_int_equal(r.store->counts().volumes, 1);
	assert_int_equal(r.store->volume("v")->size, 4 * MiB);
	assert_int_equal(r.call(h, id, wire::PingReq{}), MDR_ST_OK);
}

// Admin connections: refused outright without a configured key; with one,
// nothing but AUTH and PING before the key is proven; a wrong MAC is PERM
// and a disconnect; host RPCs are never allowed.
void test_admin_connections_need_the_key(void **)
{
	{
		NodeOptions o = Rig::options();
		o.admin_key.clear();
		Rig r(o);
		PeerInfo p = r.peer(MDR_ROLE_ADMIN, 0, 0xad);
		assert_int_equal(r.node->on_connect(p), MDR_ST_PERM);
		assert_int_equal(r.node->on_connect(r.peer(MDR_ROLE_HOST, 1, 2)), MDR_ST_OK);
	}
	Rig r;

	const PeerInfo p = r.peer(MDR_ROLE_ADMIN, 0, 0xad01);
	const ConnId a = r.establish(p);
	assert_int_equal(r.call(a, 1, wire::VolListReq{}), MDR_ST_PERM);
	assert_int_equal(r.call(a, 2, wire::VolCreateReq{.size = MiB, .tenant = 1,
							 .name = "x"}), MDR_ST_PERM);
	assert_int_equal(r.call(a, 3, wire::PingReq{}), MDR_ST_OK);
	assert_int_equal(r.store->counts().volumes, 0);

	// The MAC of another key, or over another connection's nonce.
	const PeerInfo q = r.peer(MDR_ROLE_ADMIN, 0, 0xad02);
	const ConnId b = r.establish(q);
	auto mac_of_q = [&q](const std::string &key) {
		return mdr::admin_mac(bytes(key), q.nonce, q.host_id);
	};
	assert_int_equal(r.call(b, 4, wire::AuthReq{.mac = mac_of_q("not-the-key-0123456")}),
			 MDR_ST_PERM);
	assert_int_equal(r.call(a, 5, wire::AuthReq{.mac = mac_of_q(kAdminKey)}), MDR_ST_PERM);
	assert_true(r.net.disconnects == (std::vector<ConnId>{b, a}));
	assert_int_equal(r.node->stats().auth_failures, 2);

	const ConnId c = r.admin();
	assert_int_equal(r.call(c, 6, wire::VolListReq{}), MDR_ST_OK);
	const uint64_t vol = r.create(c, "v", 4 * MiB, 3);
	// Host RPCs on an admin connection.
	assert_int_equal(r.call(c, 7, wire::OpenReq{.volume_id = vol}), MDR_ST_PERM);
	assert_int_equal(r.call(c, 8, wire::AllocReq{.volume_id = vol}), MDR_ST_PERM);
	assert_int_equal(r.call(c, 9, wire::RenewReq{}), MDR_ST_PERM);
	assert_int_equal(r.call(c, 10, wire::CloseReq{.volume_id = vol}), MDR_ST_PERM);
	assert_true(r.net.rkey_calls.empty());
}

// ---------------------------------------------------------------------------
// Leases

// RENEW extends a valid lease; once it lapsed on the node's clock it is
// STALE (one volume, or all of them), also before tick() reaps it; once
// reaped the volume is no longer open on the connection.
void test_renew_extends_and_a_lapsed_lease_is_stale(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const uint64_t vol2 = r.create(adm, "w", 4 * MiB, 1);
	const ConnId h = r.host(1, 0x1);
	const int64_t t0 = r.now;

	r.open(h, vol);
	r.open(h, vol2);
	r.now = t0 + kHeldMs - 1;
	r.send(h, 20, wire::RenewReq{.volume_id = vol});
	const wire::Msg m = r.one(h);
	auto *rep = std::get_if<wire::RenewRep>(&m.body);
	assert_non_null(rep);
	assert_int_equal(rep->lease_ms, kLeaseMs);

	// vol2 was not renewed: it lapses at t0 + kHeldMs, vol lives on.
	r.now = t0 + kHeldMs;
	assert_int_equal(r.call(h, 21, wire::RenewReq{.volume_id = vol2}), MDR_ST_STALE);
	assert_int_equal(r.call(h, 22, wire::AllocReq{.volume_id = vol2}), MDR_ST_STALE);
	assert_int_equal(r.call(h, 23, wire::RenewReq{}), MDR_ST_STALE);	// all or none
	assert_int_equal(r.call(h, 24, wire::AllocReq{.volume_id = vol, .index = 1}),
			 MDR_ST_OK);

	r.node->tick();
	assert_int_equal(r.node->stats().lease_expiries, 1);
	assert_int_equal(r.call(h, 25, wire::RenewReq{}), MDR_ST_OK);	// vol only now
	assert_int_equal(r.call(h, 26, wire::RenewReq{.volume_id = vol2}), MDR_ST_STALE);

	// vol was renewed at t0 + kHeldMs - 1 and at t0 + kHeldMs.
	r.now = t0 + 2 * kHeldMs - 1;
	assert_int_equal(r.call(h, 27, wire::RenewReq{.volume_id = vol}), MDR_ST_OK);
	r.now = t0 + 3 * kHeldMs;
	r.node->tick();
	assert_int_equal(r.node->stats().lease_expiries, 2);
	assert_int_equal(r.call(h, 28, wire::RenewReq{.volume_id = vol}), MDR_ST_STALE);

	// Opening again starts a fresh lease.
	r.open(h, vol2);
	assert_int_equal(r.call(h, 29, wire::RenewReq{}), MDR_ST_OK);
	assert_int_equal(r.info(adm, "w").vol.open_count, 1);
	assert_int_equal(r.info(adm, "v").vol.open_count, 0);
}

// Opens belong to the connection, leases to the host: after a reconnect
// RENEW is STALE until the host opens again, but the old lease still keeps
// the volume from being deleted until it runs out and its IO is waited out.
void test_a_lease_outlives_its_connection(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId h = r.host(1, 0x1);
	const int64_t t0 = r.now;

	r.open(h, vol);
	r.node->on_disconnected(h);
	assert_int_equal(r.node->sessions(), 1);	// the admin's
	const ConnId h2 = r.host(1, 0x1);
	assert_int_equal(r.call(h2, 1, wire::RenewReq{.volume_id = vol}), MDR_ST_STALE);
	assert_int_equal(r.call(h2, 2, wire::AllocReq{.volume_id = vol}), MDR_ST_STALE);
	assert_int_equal(r.info(adm, "v").vol.open_count, 1);
	assert_int_equal(r.call(adm, 3, wire::VolDeleteReq{.name = "v"}), MDR_ST_BUSY);

	r.now = t0 + kHeldMs;
	r.node->tick();
	assert_int_equal(r.info(adm, "v").vol.open_count, 0);
	assert_int_equal(r.call(adm, 4, wire::VolDeleteReq{.name = "v"}), MDR_ST_BUSY);
	r.now = t0 + kWaitedOutMs;
	r.node->tick();
	assert_int_equal(r.call(adm, 5, wire::VolDeleteReq{.name = "v"}), MDR_ST_OK);
}

// CLOSE drops the lease at once: the volume is no longer open (RENEW and
// ALLOC are STALE, a second CLOSE is NOENT) and may be deleted.
void test_close_drops_the_lease(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId h = r.host(1, 0x1);
	const ConnId h2 = r.host(1, 0x2);

	assert_int_equal(r.call(h, 1, wire::CloseReq{.volume_id = vol}), MDR_ST_NOENT);
	r.open(h, vol);
	// Only the connection that opened it closes it.
	assert_int_equal(r.call(h2, 2, wire::CloseReq{.volume_id = vol}), MDR_ST_NOENT);
	assert_int_equal(r.call(adm, 3, wire::VolDeleteReq{.name = "v"}), MDR_ST_BUSY);

	r.send(h, 4, wire::CloseReq{.volume_id = vol});
	assert_true(std::holds_alternative<wire::CloseRep>(r.one(h).body));
	assert_int_equal(r.info(adm, "v").vol.open_count, 0);
	assert_int_equal(r.call(h, 5, wire::RenewReq{.volume_id = vol}), MDR_ST_STALE);
	assert_int_equal(r.call(h, 6, wire::AllocReq{.volume_id = vol}), MDR_ST_STALE);
	assert_int_equal(r.call(h, 7, wire::CloseReq{.volume_id = vol}), MDR_ST_NOENT);
	assert_int_equal(r.call(adm, 8, wire::VolDeleteReq{.name = "v"}), MDR_ST_OK);
	assert_true(r.net.forgotten == std::vector<uint64_t>{vol});
	assert_int_equal(r.node->stats().lease_expiries, 0);
}

// A lease that lapsed here may still be closed on its connection: the host
// drains its IO before CLOSE, so the volume need not wait io_hold_ms.
void test_close_ends_a_lapsed_lease(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId h = r.host(1, 0x1);
	const ConnId other = r.host(1, 0x1);

	r.open(h, vol);
	r.now += kHeldMs;
	r.node->tick();
	assert_int_equal(r.call(adm, 2, wire::VolDeleteReq{.name = "v"}), MDR_ST_BUSY);
	// Not on another connection of the same host.
	assert_int_equal(r.call(other, 3, wire::CloseReq{.volume_id = vol}), MDR_ST_NOENT);
	r.send(h, 4, wire::CloseReq{.volume_id = vol});
	assert_true(std::holds_alternative<wire::CloseRep>(r.one(h).body));
	assert_int_equal(r.call(h, 5, wire::CloseReq{.volume_id = vol}), MDR_ST_NOENT);
	r.send(adm, 6, wire::VolDeleteReq{.name = "v"});
	r.flush();
	assert_true(std::holds_alternative<wire::VolDeleteRep>(r.one(adm).body));
}

// DELETE and RESIZE are BUSY while any host holds a lease, and leave the
// volume as it was; once the lease has lapsed and the host's IO is waited
// out they go ahead and the table's registrations are dropped.
void test_delete_and_resize_are_busy_while_leases_are_held(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId h = r.host(1, 0x1);
	const int64_t t0 = r.now;

	r.open(h, vol);
	assert_int_equal(r.call(h, 1, wire::AllocReq{.volume_id = vol, .index = 2}), MDR_ST_OK);
	assert_int_equal(r.call(adm, 2, wire::VolDeleteReq{.name = "v"}), MDR_ST_BUSY);
	assert_int_equal(r.call(adm, 3, wire::VolResizeReq{.size = 8 * MiB, .name = "v"}),
			 MDR_ST_BUSY);
	assert_int_equal(r.call(adm, 4, wire::VolDeleteReq{.name = "nope"}), MDR_ST_NOENT);
	assert_int_equal(r.store->volume(vol)->size, 4 * MiB);
	assert_int_equal(r.store->volume(vol)->allocated, 1);
	assert_true(r.net.forgotten.empty());

	// Expired, its IO maybe still at the devices: still busy.
	r.now = t0 + kHeldMs;
	assert_int_equal(r.call(adm, 9, wire::VolDeleteReq{.name = "v"}), MDR_ST_BUSY);
	// Waited out, not reaped yet: no longer held.
	r.now = t0 + kWaitedOutMs;
	r.send(adm, 5, wire::VolResizeReq{.size = 8 * MiB, .name = "v"});
	assert_true(r.quiet(adm));	// durable first
	// Meanwhile no lease: it would outlive the table it covers.
	assert_int_equal(r.call(h, 10, wire::OpenReq{.volume_id = vol}), MDR_ST_BUSY);
	r.flush();
	const wire::Msg m = r.one(adm);
	auto *rep = std::get_if<wire::VolResizeRep>(&m.body);
	assert_non_null(rep);
	assert_int_equal(rep->vol.size, 8 * MiB);
	assert_int_equal(rep->vol.allocated, 1);
	assert_true(r.net.forgotten == std::vector<uint64_t>{vol});

	r.send(adm, 6, wire::VolDeleteReq{.name = "v"});
	r.flush();
	assert_true(std::holds_alternative<wire::VolDeleteRep>(r.one(adm).body));
	assert_true(r.net.forgotten == (std::vector<uint64_t>{vol, vol}));
	assert_null(r.store->volume(vol));
	r.node->tick();
	assert_int_equal(r.call(h, 7, wire::RenewReq{}), MDR_ST_OK);	// nothing open
}

// After a start, a host may still hold a lease the previous process
// granted, and write: a volume from before the start is neither deleted
// nor resized until lease + margin + io hold have passed. One created since
// cannot have such a holder.
void test_delete_waits_out_the_leases_of_before_a_start(void **)
{
	Rig r;
	ConnId adm = r.admin();
	r.create(adm, "old", 4 * MiB, 1);
	const int64_t t0 = r.now;

	// The same store, a new process.
	r.node = std::make_unique<Node>(Rig::options(), *r.store, *r.journal,
					[&r] { return r.now; });
	r.node->attach(r.net);
	adm = r.admin();
	r.create(adm, "new", 4 * MiB, 1);
	assert_int_equal(r.call(adm, 2, wire::VolDeleteReq{.name = "old"}), MDR_ST_BUSY);
	assert_int_equal(r.call(adm, 3, wire::VolResizeReq{.size = 8 * MiB, .name = "old"}),
			 MDR_ST_BUSY);
	r.send(adm, 4, wire::VolDeleteReq{.name = "new"});
	r.flush();
	assert_true(std::holds_alternative<wire::VolDeleteRep>(r.one(adm).body));
	r.now = t0 + kWaitedOutMs - 1;
	assert_int_equal(r.call(adm, 5, wire::VolDeleteReq{.name = "old"}), MDR_ST_BUSY);
	r.now = t0 + kWaitedOutMs;
	r.send(adm, 6, wire::VolDeleteReq{.name = "old"});
	r.flush();
	assert_true(std::holds_alternative<wire::VolDeleteRep>(r.one(adm).body));
}

// ---------------------------------------------------------------------------
// ALLOC and the invalidation fan-out

// With no other lease holder, ALLOC is answered once the journal has the
// change, with the entry the table now holds; a retry is answered at once
// from the table, journaling nothing.
void test_alloc_is_durable_before_the_reply_and_idempotent(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId h = r.host(1, 0x1);

	r.open(h, vol);
	const uint64_t records = r.journal->stats().records;
	r.send(h, 30, wire::AllocReq{.volume_id = vol, .index = 5});
	assert_true(r.quiet(h));
	assert_int_equal(wire::decode_entry(r.store->volume(vol)->table.entries()[5]).state,
			 MDR_EXT_UNALLOCATED);
	r.flush();
	const wire::Entry e = expect_alloc(r, r.one(h), 30, vol, 5);
	assert_int_equal(r.journal->stats().records, records + 1);

	r.send(h, 31, wire::AllocReq{.volume_id = vol, .index = 5});
	const wire::Entry again = expect_alloc(r, r.one(h), 31, vol, 5);
	assert_true(again == e);
	assert_int_equal(r.journal->stats().records, records + 1);
	assert_int_equal(r.store->volume(vol)->allocated, 1);
	assert_int_equal(r.node->stats().invalidations, 0);

	// Beyond the volume.
	assert_int_equal(r.call(h, 32, wire::AllocReq{.volume_id = vol, .index = 64}),
			 MDR_ST_INVAL);
}

// Another lease holder hears of the allocation before the writer gets its
// reply; the reply waits for that holder's ack, and only its own ack of its
// own push counts.
void test_alloc_fan_out_settles_on_ack(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const uint64_t other_vol = r.create(adm, "w", 4 * MiB, 1);
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(1, 0xb);
	const ConnId c = r.host(1, 0xc);	// holds a lease on another volume only

	r.open(a, vol);
	r.open(b, vol);
	r.open(c, other_vol);
	r.send(a, 40, wire::AllocReq{.volume_id = vol, .index = 3});
	r.flush();
	assert_true(r.quiet(a));
	assert_true(r.quiet(c));
	const uint64_t gen = wire::decode_entry(r.store->volume(vol)->table.entries()[3]).generation;
	const wire::Msg pm = r.one(b);
	const wire::Invalidate push = expect_push(pm, vol, 3, gen);
	assert_int_equal(r.node->stats().invalidations, 1);

	// An ack of a push never sent, and a third host acking b's push.
	r.send(b, pm.hdr.req_id + 1000, r.ack_of(b, push));
	r.send(c, pm.hdr.req_id, r.ack_of(c, push));
	r.node->tick();
	assert_true(r.quiet(a));
	assert_true(r.quiet(b));
	assert_true(r.quiet(c));

	r.send(b, pm.hdr.req_id, r.ack_of(b, push));
	assert_true(r.quiet(b));	// an ack has no reply
	const wire::Entry e = expect_alloc(r, r.one(a), 40, vol, 3);
	assert_int_equal(e.generation, gen);

	// A second ack of the same push changes nothing.
	r.send(b, pm.hdr.req_id, r.ack_of(b, push));
	assert_true(r.quiet(a));
	assert_true(r.net.disconnects.empty());
}

// A holder that does not ack is waited out: the reply goes once its lease
// has run out (and tick() reaped it), not before; its late ack is ignored.
void test_alloc_fan_out_settles_on_lease_expiry(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(1, 0xb);
	const int64_t t0 = r.now;

	r.open(a, vol);
	r.open(b, vol);
	r.send(a, 50, wire::AllocReq{.volume_id = vol, .index = 0});
	r.flush();
	const wire::Msg pm = r.one(b);
	const wire::Invalidate push = expect_push(
		pm, vol, 0, wire::decode_entry(r.store->volume(vol)->table.entries()[0]).generation);

	// The writer keeps its own lease; b's runs out at t0 + kHeldMs.
	r.now = t0 + kLeaseMs;
	assert_int_equal(r.call(a, 51, wire::RenewReq{.volume_id = vol}), MDR_ST_OK);
	r.now = t0 + kHeldMs - 1;
	r.node->tick();
	assert_true(r.quiet(a));
	r.now = t0 + kHeldMs;
	r.node->tick();
	expect_alloc(r, r.one(a), 50, vol, 0);
	assert_int_equal(r.node->stats().lease_expiries, 1);

	r.send(b, pm.hdr.req_id, r.ack_of(b, push));
	assert_true(r.quiet(a));
	assert_true(r.quiet(b));
	assert_int_equal(r.call(b, 52, wire::RenewReq{.volume_id = vol}), MDR_ST_STALE);
	assert_int_equal(r.info(adm, "v").vol.open_count, 1);
}

// A holder that is not connected gets no push and is waited out; so is one
// that goes away between the push and its ack, and one whose connection is
// going (its push cannot be sent, and stays held back until then).
void test_fan_out_waits_out_unreachable_holders(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(1, 0xb);
	const ConnId c = r.host(1, 0xc);
	const ConnId d = r.host(1, 0xd);
	const int64_t t0 = r.now;

	r.open(a, vol);
	r.open(b, vol);
	r.open(c, vol);
	r.open(d, vol);
	r.node->on_disconnected(b);
	r.net.down.insert(d);
	r.send(a, 60, wire::AllocReq{.volume_id = vol, .index = 7});
	r.flush();
	assert_true(r.quiet(b));
	assert_true(r.quiet(d));
	expect_push(r.one(c), vol, 7,
		    wire::decode_entry(r.store->volume(vol)->table.entries()[7]).generation);
	r.node->on_disconnected(c);
	assert_int_equal(r.node->stats().invalidations, 1);

	r.now = t0 + kLeaseMs;
	assert_int_equal(r.call(a, 61, wire::RenewReq{}), MDR_ST_OK);
	r.now = t0 + kHeldMs - 1;
	r.node->tick();
	assert_true(r.quiet(a));
	r.now = t0 + kHeldMs;
	r.node->tick();
	expect_alloc(r, r.one(a), 60, vol, 7);
	assert_int_equal(r.node->stats().lease_expiries, 3);
}

// ALLOCs of an extent whose allocation is in flight join it: one record,
// one push, and every requester gets the same entry once the push is acked.
void test_alloc_requests_join_an_allocation_in_flight(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(1, 0xb);

	r.open(a, vol);
	r.open(b, vol);
	const uint64_t records = r.journal->stats().records;
	r.send(a, 70, wire::AllocReq{.volume_id = vol, .index = 9});
	r.send(a, 71, wire::AllocReq{.volume_id = vol, .index = 9});	// a retry
	r.send(b, 80, wire::AllocReq{.volume_id = vol, .index = 9});	// a race
	assert_true(r.quiet(a));
	assert_true(r.quiet(b));
	r.flush();
	assert_int_equal(r.journal->stats().records, records + 1);
	assert_int_equal(r.store->volume(vol)->allocated, 1);

	// b is a holder other than the first writer: it is told, and its own
	// ALLOC waits for its ack like the others.
	const wire::Msg pm = r.one(b);
	const wire::Invalidate push = expect_push(
		pm, vol, 9, wire::decode_entry(r.store->volume(vol)->table.entries()[9]).generation);
	assert_true(r.quiet(a));
	r.send(b, pm.hdr.req_id, r.ack_of(b, push));

	auto replies = r.take(a);
	assert_int_equal(replies.size(), 2);
	const wire::Entry e = expect_alloc(r, replies[0], 70, vol, 9);
	assert_true(expect_alloc(r, replies[1], 71, vol, 9) == e);
	assert_true(expect_alloc(r, r.one(b), 80, vol, 9) == e);
	assert_int_equal(r.node->stats().invalidations, 1);

	// Another extent is a separate allocation.
	r.send(b, 81, wire::AllocReq{.volume_id = vol, .index = 10});
	r.flush();
	const wire::Msg pm2 = r.one(a);
	r.send(a, pm2.hdr.req_id, r.ack_of(a, std::get<wire::Invalidate>(pm2.body)));
	assert_false(expect_alloc(r, r.one(b), 81, vol, 10) == e);
}

// Regression: a holder that CLOSEs the volume instead of acking the push
// has dropped its lease, so the fan-out no longer waits for it. It used to
// wait for ever (the lease it waited on was gone, so it never expired),
// and every later ALLOC of that extent joined the hung one.
void test_close_before_ack_settles_the_fan_out(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(1, 0xb);

	r.open(a, vol);
	r.open(b, vol);
	r.send(a, 90, wire::AllocReq{.volume_id = vol, .index = 4});
	r.flush();
	const wire::Msg pm = r.one(b);
	assert_true(std::holds_alternative<wire::Invalidate>(pm.body));
	assert_true(r.quiet(a));

	r.send(b, 91, wire::CloseReq{.volume_id = vol});
	auto out = r.take(b);
	assert_int_equal(out.size(), 1);
	assert_true(std::holds_alternative<wire::CloseRep>(out[0].body));
	const wire::Entry e = expect_alloc(r, r.one(a), 90, vol, 4);

	// Its late ack is harmless, and the extent is answered at once again.
	r.send(b, pm.hdr.req_id, r.ack_of(b, std::get<wire::Invalidate>(pm.body)));
	r.send(a, 92, wire::AllocReq{.volume_id = vol, .index = 4});
	assert_true(expect_alloc(r, r.one(a), 92, vol, 4) == e);
}

// Same for leases dropped by a delete: holders whose leases lapsed and
// whose IO is waited out, but were not reaped yet, do not hold the volume,
// and the fan-out waiting for them ends with the delete instead of waiting
// for a reap that never comes.
void test_delete_settles_a_fan_out_on_lapsed_leases(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(1, 0xb);

	r.open(a, vol);
	r.open(b, vol);
	r.send(a, 95, wire::AllocReq{.volume_id = vol, .index = 6});
	r.flush();
	assert_true(std::holds_alternative<wire::Invalidate>(r.one(b).body));
	r.now += kHeldMs;	// both lapse; no tick()
	assert_int_equal(r.call(adm, 97, wire::VolDeleteReq{.name = "v"}), MDR_ST_BUSY);
	r.now += kIoHoldMs;
	assert_int_equal(r.call(adm, 96, wire::VolDeleteReq{.name = "v"}), MDR_ST_OK);
	const wire::Msg m = r.one(a);
	assert_int_equal(m.hdr.req_id, 95);
	assert_true(std::holds_alternative<wire::AllocRep>(m.body));
	r.node->tick();
	assert_true(r.quiet(a));
	assert_int_equal(r.node->stats().lease_expiries, 0);
}

// A holder gets at most its push_credits pushes unacked (the kernel ends
// the connection on one more); the others wait, in order, and each ack lets
// exactly the next one go. Every ALLOC completes once its push is acked.
void test_pushes_stay_within_the_push_credits(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(1, 0xb, 2);
	auto gen = [&](uint64_t index) {
		return wire::decode_entry(r.store->volume(vol)->table.entries()[index]).generation;
	};

	r.open(a, vol);
	r.open(b, vol);
	for (uint64_t i = 0; i < 5; i++)
		r.send(a, 100 + i, wire::AllocReq{.volume_id = vol, .index = i});
	r.flush();
	assert_true(r.quiet(a));
	std::vector<wire::Msg> out = r.take(b);
	assert_int_equal(out.size(), 2);
	expect_push(out[0], vol, 0, gen(0));
	expect_push(out[1], vol, 1, gen(1));
	assert_int_equal(r.node->stats().invalidations, 2);
	r.node->tick();
	assert_true(r.quiet(b));

	std::vector<wire::Msg> unacked = std::move(out);
	for (uint64_t i = 0; i < 5; i++) {
		const wire::Msg pm = unacked.front();
		unacked.erase(unacked.begin());
		r.send(b, pm.hdr.req_id, r.ack_of(b, std::get<wire::Invalidate>(pm.body)));
		if (i + 2 < 5) {
			const wire::Msg next = r.one(b);
			expect_push(next, vol, i + 2, gen(i + 2));
			unacked.push_back(next);
		} else {
			assert_true(r.quiet(b));
		}
		expect_alloc(r, r.one(a), 100 + i, vol, i);
		assert_true(unacked.size() <= 2);
	}
	assert_int_equal(r.node->stats().invalidations, 5);
	assert_int_equal(r.node->stats().push_timeouts, 0);
	assert_true(r.net.disconnects.empty());
}

// A push whose send fails (the transport's send buffers all in use) is not
// given up: the holder keeps renewing its lease, so the fan-out would wait
// for ever. It goes once sending works, from tick() or when the host sends
// anything, and the ALLOC completes on its ack, not before.
void test_a_push_that_cannot_be_sent_is_sent_again(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(1, 0xb);
	const int64_t t0 = r.now;
	auto gen = [&](uint64_t index) {
		return wire::decode_entry(r.store->volume(vol)->table.entries()[index]).generation;
	};

	r.open(a, vol);
	r.open(b, vol);
	r.net.send_error[b] = -ENOBUFS;
	r.send(a, 110, wire::AllocReq{.volume_id = vol, .index = 1});
	r.flush();
	r.node->tick();
	assert_true(r.quiet(a));
	assert_true(r.quiet(b));
	assert_int_equal(r.node->stats().invalidations, 0);

	// Retried from tick() once sending works.
	r.net.send_error[b] = 0;
	r.now = t0 + kLeaseMs / 4;
	r.node->tick();
	const wire::Msg pm = r.one(b);
	expect_push(pm, vol, 1, gen(1));
	// Renewing is no ack: the ALLOC still waits.
	r.now = t0 + kLeaseMs / 2;
	assert_int_equal(r.call(b, 111, wire::RenewReq{}), MDR_ST_OK);
	assert_int_equal(r.call(a, 112, wire::RenewReq{}), MDR_ST_OK);
	r.node->tick();
	assert_true(r.quiet(a));
	r.send(b, pm.hdr.req_id, r.ack_of(b, std::get<wire::Invalidate>(pm.body)));
	expect_alloc(r, r.one(a), 110, vol, 1);

	// Or with the reply to the next message the host sends.
	r.net.send_error[b] = -ENOBUFS;
	r.send(a, 113, wire::AllocReq{.volume_id = vol, .index = 2});
	r.flush();
	assert_true(r.quiet(b));
	r.net.send_error[b] = 0;
	r.send(b, 114, wire::RenewReq{});
	std::vector<wire::Msg> out = r.take(b);
	assert_int_equal(out.size(), 2);
	assert_true(std::holds_alternative<wire::RenewRep>(out[0].body));
	expect_push(out[1], vol, 2, gen(2));
	assert_true(r.quiet(a));
	r.send(b, out[1].hdr.req_id, r.ack_of(b, std::get<wire::Invalidate>(out[1].body)));
	expect_alloc(r, r.one(a), 113, vol, 2);
	assert_int_equal(r.node->stats().invalidations, 2);
	assert_int_equal(r.node->stats().push_timeouts, 0);
	assert_true(r.net.disconnects.empty());
}

// A holder that renews but never acks would hold the ALLOC for ever: once
// the push has waited as long as a lease is held without renewal, its
// connection is cut (and counted), and what it sends then is ignored, a
// RENEW included, so its lease runs out and the ALLOC completes.
void test_a_holder_that_never_acks_is_cut_off(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(1, 0xb);
	const int64_t t0 = r.now;

	r.open(a, vol);
	r.open(b, vol);
	r.send(a, 120, wire::AllocReq{.volume_id = vol, .index = 5});
	r.flush();
	const wire::Msg pm = r.one(b);
	assert_true(std::holds_alternative<wire::Invalidate>(pm.body));

	r.now = t0 + kLeaseMs;
	assert_int_equal(r.call(a, 121, wire::RenewReq{}), MDR_ST_OK);
	assert_int_equal(r.call(b, 122, wire::RenewReq{}), MDR_ST_OK);
	r.now = t0 + kHeldMs - 1;
	r.node->tick();
	assert_true(r.net.disconnects.empty());
	r.now = t0 + kHeldMs;
	r.node->tick();
	assert_true(r.net.disconnects == std::vector<ConnId>{b});
	assert_int_equal(r.node->stats().push_timeouts, 1);
	assert_true(r.quiet(a));

	// Cut: not renewed, not acked, not cut again while it goes.
	r.send(b, 123, wire::RenewReq{});
	r.send(b, pm.hdr.req_id, r.ack_of(b, std::get<wire::Invalidate>(pm.body)));
	assert_true(r.quiet(b));
	r.node->tick();
	assert_int_equal(r.net.disconnects.size(), 1);
	assert_int_equal(r.node->stats().push_timeouts, 1);
	r.node->on_disconnected(b);
	assert_int_equal(r.node->sessions(), 2);

	// b's lease, last renewed at t0 + kLeaseMs, runs out.
	r.now = t0 + 2 * kLeaseMs;
	assert_int_equal(r.call(a, 124, wire::RenewReq{}), MDR_ST_OK);
	r.now = t0 + kLeaseMs + kHeldMs - 1;
	r.node->tick();
	assert_true(r.quiet(a));
	r.now = t0 + kLeaseMs + kHeldMs;
	r.node->tick();
	expect_alloc(r, r.one(a), 120, vol, 5);
	assert_int_equal(r.node->stats().lease_expiries, 1);
	assert_int_equal(r.node->stats().push_timeouts, 1);

	// The admin sees it.
	r.send(adm, 125, wire::NodeStatsReq{});
	const wire::Msg sm = r.one(adm);
	auto *st = std::get_if<wire::NodeStatsRep>(&sm.body);
	assert_non_null(st);
	assert_int_equal(st->push_timeouts, 1);
	assert_int_equal(st->invalidations, 1);
}

// A holder cut off for a push it did not ack, with more held back behind
// it, opens the volume again on a new connection within its lease: it gets
// every push again there, within its credits, and the ALLOCs complete on
// its acks. What the old connection had is gone with it.
void test_a_cut_off_holder_gets_its_pushes_again_on_reopen(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(1, 0xb, 1);
	const int64_t t0 = r.now;
	auto gen = [&](uint64_t index) {
		return wire::decode_entry(r.store->volume(vol)->table.entries()[index]).generation;
	};

	r.open(a, vol);
	r.open(b, vol);
	r.send(a, 130, wire::AllocReq{.volume_id = vol, .index = 6});
	r.send(a, 131, wire::AllocReq{.volume_id = vol, .index = 7});
	r.flush();
	const wire::Msg old = r.one(b);	// the other is held back
	expect_push(old, vol, 6, gen(6));

	r.now = t0 + kLeaseMs;
	assert_int_equal(r.call(a, 132, wire::RenewReq{}), MDR_ST_OK);
	assert_int_equal(r.call(b, 133, wire::RenewReq{}), MDR_ST_OK);
	r.now = t0 + kHeldMs;
	r.node->tick();
	assert_true(r.net.disconnects == std::vector<ConnId>{b});
	assert_int_equal(r.node->stats().push_timeouts, 1);
	r.node->on_disconnected(b);

	const ConnId b2 = r.host(1, 0xb, 1);
	r.send(b2, 134, wire::OpenReq{.volume_id = vol});
	std::vector<wire::Msg> out = r.take(b2);
	assert_int_equal(out.size(), 2);
	assert_true(std::holds_alternative<wire::OpenRep>(out[0].body));
	expect_push(out[1], vol, 6, gen(6));
	// The old connection's push id means nothing here.
	r.send(b2, old.hdr.req_id, r.ack_of(b2, std::get<wire::Invalidate>(old.body)));
	assert_true(r.quiet(b2));
	assert_true(r.quiet(a));

	r.send(b2, out[1].hdr.req_id, r.ack_of(b2, std::get<wire::Invalidate>(out[1].body)));
	const wire::Msg next = r.one(b2);
	expect_push(next, vol, 7, gen(7));
	expect_alloc(r, r.one(a), 130, vol, 6);
	r.send(b2, next.hdr.req_id, r.ack_of(b2, std::get<wire::Invalidate>(next.body)));
	expect_alloc(r, r.one(a), 131, vol, 7);
	assert_true(r.quiet(b2));
	assert_int_equal(r.node->stats().invalidations, 3);
	assert_int_equal(r.node->stats().push_timeouts, 1);
	assert_int_equal(r.node->stats().lease_expiries, 0);
	r.node->tick();
	assert_int_equal(r.net.disconnects.size(), 1);
}

// ---------------------------------------------------------------------------
// Journal failure

// A journal that cannot write fails every change with IO, joined requests
// included, pushes nothing and leaves the state as it was; later changes
// are refused the same way (fail-stop), while what needs no change goes on.
void test_journal_failure_answers_eio(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(1, 0xb);

	r.open(a, vol);
	assert_int_equal(r.call(a, 1, wire::AllocReq{.volume_id = vol, .index = 0}), MDR_ST_OK);
	r.open(b, vol);
	const uint64_t segment_size = [&] {
		uint64_t size = 0;
		for (const auto &f : fs::directory_iterator(r.dir))
			if (f.path().extension() == ".log")
				size = std::max<uint64_t>(size, f.file_size());
		return size;
	}();
	assert_true(segment_size > 0);
	const auto *t = static_cast<const std::byte *>(r.store->volume(vol)->table.data());
	const Bytes before_table(t, t + r.store->volume(vol)->table.bytes());

	// The kernel's own failure of the write: EFBIG past RLIMIT_FSIZE.
	struct rlimit saved;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
	const struct rlimit limit = {segment_size, saved.rlim_max};
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &limit), 0);
	r.send(a, 2, wire::AllocReq{.volume_id = vol, .index = 1});
	r.send(a, 3, wire::AllocReq{.volume_id = vol, .index = 1});	// joins
	const mdr::Status st = r.journal->flush();
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &saved), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_false(st.ok());

	auto replies = r.take(a);
	assert_int_equal(replies.size(), 2);
	for (const wire::Msg &m : replies) {
		assert_int_equal(status_of(m), MDR_ST_IO);
		assert_int_equal(std::get<wire::ErrorRep>(m.body).opcode, MDR_OP_ALLOC);
	}
	assert_true(r.quiet(b));
	assert_int_equal(r.store->counts().in_flight, 0);
	assert_int_equal(r.store->volume(vol)->allocated, 1);

	// Fail-stop: every later change gets IO too.
	r.send(a, 4, wire::AllocReq{.volume_id = vol, .index = 2});
	r.send(adm, 5, wire::VolCreateReq{.size = MiB, .extent_shift = kShift, .tenant = 1,
					  .name = "late"});
	(void)r.journal->flush();
	assert_int_equal(status_of(r.one(a)), MDR_ST_IO);
	assert_int_equal(status_of(r.one(adm)), MDR_ST_IO);
	assert_null(r.store->volume("late"));
	assert_true(r.quiet(b));
	// (An aborted create uses up its volume id, so compare all but that.)
	assert_int_equal(r.store->counts().volumes, 1);
	assert_int_equal(r.store->counts().extents, 1);
	assert_int_equal(r.store->counts().in_flight, 0);
	const auto entries = r.store->volume(vol)->table.entries();
	assert_memory_equal(entries.data(), before_table.data(), before_table.size());

	// Reads and leases go on: the extent mapped before is answered.
	r.send(a, 6, wire::AllocReq{.volume_id = vol, .index = 0});
	expect_alloc(r, r.one(a), 6, vol, 0);
	r.send(a, 7, wire::RenewReq{});
	assert_true(std::holds_alternative<wire::RenewRep>(r.one(a).body));
}

// ---------------------------------------------------------------------------
// Bad input

// A malformed request that is well framed is answered with an error; one
// that cannot be framed cuts the connection; neither changes anything.
void test_bad_messages_are_answered_or_cut(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId h = r.host(1, 0x1);

	// OPEN by id 0 without the by-name flag: a bad field.
	Bytes buf(wire::encoded_size(wire::OpenReq{.volume_id = vol}));
	auto n = wire::encode(buf, 77, wire::OpenReq{.volume_id = vol});
	assert_true(n.ok());
	auto *req = reinterpret_cast<mdr_wire_open_req *>(buf.data());
	wire::store(req->volume_id, 0);
	r.node->on_message(h, std::span(buf.data(), n.value()));
	wire::Msg m = r.one(h);
	assert_int_equal(m.hdr.req_id, 77);
	assert_int_equal(status_of(m), MDR_ST_INVAL);
	assert_true(r.net.disconnects.empty());

	// Garbage.
	const Bytes junk(10, std::byte{0x5a});
	r.node->on_message(h, junk);
	assert_true(r.quiet(h));
	assert_true(r.net.disconnects == std::vector<ConnId>{h});
	assert_int_equal(r.node->stats().bad_messages, 2);
	assert_true(r.net.rkey_calls.empty());

	// A connection the node does not know (never established) is ignored.
	r.send(999, 1, wire::PingReq{});
	assert_true(r.quiet(999));
}

// Requests that arrive together (an admin client's pipeline) are journaled
// in one write, one sync for all (group commit); none is answered before
// that write is durable; a name taken by a creation in flight is refused.
// A creation is answered only once its record is durable, and not seen
// before: no reply, no VOL_INFO, no OPEN. Then every entry of the table a
// host is told to READ verifies for its place, and the reply counts no
// extents on any device.
void test_create_is_answered_once_durable_with_a_valid_table(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const ConnId h = r.host(1, 0x1);
	const uint64_t size = 4096 * (uint64_t{1} << kShift) + 4096;	// 4097 extents
	const uint64_t records = r.journal->stats().records;
	const uint64_t syncs = r.journal->stats().syncs;

	r.send(adm, 10, wire::VolCreateReq{.size = size, .extent_shift = kShift, .tenant = 1,
					   .name = "fresh"});
	assert_true(r.quiet(adm));
	assert_int_equal(r.journal->stats().syncs, syncs);
	r.send(adm, 11, wire::VolInfoReq{.name = "fresh"});
	assert_int_equal(status_of(r.one(adm)), MDR_ST_NOENT);
	r.send(h, 12, wire::OpenReq{.flags = MDR_OPEN_F_BY_NAME, .name = "fresh"});
	assert_int_equal(status_of(r.one(h)), MDR_ST_NOENT);

	r.flush();
	assert_int_equal(r.journal->stats().records, records + 1);
	assert_true(r.journal->stats().syncs > syncs);
	wire::Msg m = r.one(adm);
	assert_int_equal(m.hdr.req_id, 10);
	auto *rep = std::get_if<wire::VolCreateRep>(&m.body);
	assert_non_null(rep);
	assert_int_equal(rep->vol.size, size);
	assert_int_equal(rep->vol.allocated, 0);
	assert_true(rep->devs.empty());

	const uint64_t vol = rep->vol.volume_id;
	const wire::OpenRep o = r.open(h, vol);
	const auto *entries = reinterpret_cast<const mdr_wire_entry *>(uintptr_t(o.table_addr));

	assert_int_equal(o.table_len, 4097 * sizeof(mdr_wire_entry));
	for (uint64_t i = 0; i < 4097; i++) {
		assert_int_equal(wire::verify_entry(entries[i], vol, i), wire::EntryCheck::ok);
		const wire::Entry e = wire::decode_entry(entries[i]);
		assert_int_equal(e.state, MDR_EXT_UNALLOCATED);
		assert_int_equal(e.generation, 1);
	}
}

void test_pipelined_creates_and_deletes_share_one_journal_write(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	auto stats = [&] {
		r.send(adm, 900, wire::NodeStatsReq{});
		wire::Msg m = r.one(adm);
		assert_true(std::holds_alternative<wire::NodeStatsRep>(m.body));
		return std::get<wire::NodeStatsRep>(m.body);
	};
	// Delivers the journal's writes as the event loop does, until @n
	// replies came; returns them by req_id.
	auto run_loop = [&](size_t n) {
		std::map<uint64_t, wire::Msg> got;
		while (got.size() < n) {
			struct pollfd p = {r.journal->event_fd(), POLLIN, 0};
			assert_int_equal(poll(&p, 1, 10000), 1);
			r.journal->process_completions();
			for (wire::Msg &m : r.take(adm))
				got.emplace(m.hdr.req_id, std::move(m));
		}
		return got;
	};
	const int kCount = 32;

	const wire::NodeStatsRep before = stats();
	for (int i = 0; i < kCount; i++)
		r.send(adm, 100 + i, wire::VolCreateReq{.size = MiB, .extent_shift = kShift,
							.tenant = 1,
							.name = "v" + std::to_string(i)});
	r.send(adm, 200, wire::VolCreateReq{.size = MiB, .extent_shift = kShift, .tenant = 1,
					    .name = "v7"});
	// Nothing durable yet: only the refusal of the name taken in flight.
	wire::Msg refused = r.one(adm);
	assert_int_equal(refused.hdr.req_id, 200);
	assert_int_equal(status_of(refused), MDR_ST_EXIST);
	std::map<uint64_t, wire::Msg> got = run_loop(kCount);
	std::set<uint64_t> ids;
	for (int i = 0; i < kCount; i++) {
		auto *rep = std::get_if<wire::VolCreateRep>(&got.at(100 + i).body);
		assert_non_null(rep);
		assert_string_equal(rep->vol.name.c_str(), ("v" + std::to_string(i)).c_str());
		ids.insert(rep->vol.volume_id);
	}
	assert_int_equal(ids.size(), kCount);
	const wire::NodeStatsRep created = stats();
	assert_int_equal(created.journal_records - before.journal_records, kCount);
	assert_int_equal(created.journal_syncs - before.journal_syncs, 1);

	// The same for deletes, with one of a name that is not there.
	for (int i = 0; i < kCount; i++)
		r.send(adm, 300 + i, wire::VolDeleteReq{.name = "v" + std::to_string(i)});
	r.send(adm, 400, wire::VolDeleteReq{.name = "nope"});
	refused = r.one(adm);
	assert_int_equal(refused.hdr.req_id, 400);
	assert_int_equal(status_of(refused), MDR_ST_NOENT);
	got = run_loop(kCount);
	for (int i = 0; i < kCount; i++)
		assert_int_equal(status_of(got.at(300 + i)), MDR_ST_OK);
	const wire::NodeStatsRep deleted = stats();
	assert_int_equal(deleted.journal_records - created.journal_records, kCount);
	assert_int_equal(deleted.journal_syncs - created.journal_syncs, 1);
	assert_int_equal(deleted.volumes, 0);
}

} // namespace

int main()
{
	mdnode::set_log_level(mdnode::LogLevel::error);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_returns_the_table_and_the_connections_rkey),
		cmocka_unit_test(test_tenant_cannot_open_another_tenants_volume),
		cmocka_unit_test(test_open_without_a_registration_takes_no_lease),
		cmocka_unit_test(test_admin_rpcs_are_refused_on_host_connections),
		cmocka_unit_test(test_admin_connections_need_the_key),
		cmocka_unit_test(test_renew_extends_and_a_lapsed_lease_is_stale),
		cmocka_unit_test(test_a_lease_outlives_its_connection),
		cmocka_unit_test(test_close_drops_the_lease),
		cmocka_unit_test(test_delete_and_resize_are_busy_while_leases_are_held),
		cmocka_unit_test(test_delete_waits_out_the_leases_of_before_a_start),
		cmocka_unit_test(test_close_ends_a_lapsed_lease),
		cmocka_unit_test(test_alloc_is_durable_before_the_reply_and_idempotent),
		cmocka_unit_test(test_alloc_fan_out_settles_on_ack),
		cmocka_unit_test(test_alloc_fan_out_settles_on_lease_expiry),
		cmocka_unit_test(test_fan_out_waits_out_unreachable_holders),
		cmocka_unit_test(test_alloc_requests_join_an_allocation_in_flight),
		cmocka_unit_test(test_close_before_ack_settles_the_fan_out),
		cmocka_unit_test(test_delete_settles_a_fan_out_on_lapsed_leases),
		cmocka_unit_test(test_pushes_stay_within_the_push_credits),
		cmocka_unit_test(test_a_push_that_cannot_be_sent_is_sent_again),
		cmocka_unit_test(test_a_holder_that_never_acks_is_cut_off),
		cmocka_unit_test(test_a_cut_off_holder_gets_its_pushes_again_on_reopen),
		cmocka_unit_test(test_journal_failure_answers_eio),
		cmocka_unit_test(test_bad_messages_are_answered_or_cut),
		cmocka_unit_test(test_pipelined_creates_and_deletes_share_one_journal_write),
		cmocka_unit_test(test_create_is_answered_once_durable_with_a_valid_table),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
