// SPDX-License-Identifier: GPL-2.0
//
// test_node_sessions.cc - mdnode's sessions, roles and tenants, through the
// Net seam with a fake transport: OPEN answers with the table and the rkey
// of the connection (asked per connection, so per tenant PD), a host cannot
// open another tenant's volume nor get a lease without a registration,
// admin RPCs are refused on host connections, admin connections need the
// key, and malformed messages are answered or cut.
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "lib/auth/auth.h"
#include "lib/wire/wire.h"
#include "mdnode/log.h"
#include "mdnode/node.h"

#include "tests/test_node.h"

#include "tests/common/cmocka_cxx.h"

namespace wire = mdr::wire;
using mdnode::ConnId;
using mdnode::NodeOptions;
using mdnode::PeerInfo;

namespace {

using namespace mdr::test;

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
	r.flush();	// its HOLDER_ADD, journaled before the lease
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

// A new record is sealed at epoch 0: never all zero, which a host would
// read as torn, again and again.
void test_epoch_record_starts_sealed(void **)
{
	mdnode::EpochRecord rec;
	mdr_wire_epoch_rec w;

	std::memcpy(&w, rec.bytes().data(), sizeof(w));
	assert_true(wire::verify_epoch_record(w) == wire::EpochRecordCheck::ok);
	assert_int_equal(wire::decode_epoch_record(w).epoch, 0);
	assert_int_equal(reinterpret_cast<uintptr_t>(rec.bytes().data()) % 32, 0);
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

// A host of wire version 1 or 2 names its own id, 0 too: its OPEN journals
// it as a holder like any other, and the journal replays into the same
// state (a record the state refused would stop the node).
void test_host_zero_is_a_holder(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId h = r.host(1, 0);

	r.open(h, vol);
	assert_true(r.store->holder(vol, 0));
	assert_int_equal(r.call(h, 4, wire::CloseReq{.volume_id = vol}), MDR_ST_OK);
	r.flush();
	assert_false(r.store->volume(vol)->holders.contains(0));
	r.open(h, vol);
	r.restart();
	assert_true(r.store->holder(vol, 0));
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
	r.flush();
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

} // namespace

int main()
{
	mdnode::set_log_level(mdnode::LogLevel::error);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_returns_the_table_and_the_connections_rkey),
		cmocka_unit_test(test_epoch_record_starts_sealed),
		cmocka_unit_test(test_tenant_cannot_open_another_tenants_volume),
		cmocka_unit_test(test_host_zero_is_a_holder),
		cmocka_unit_test(test_open_without_a_registration_takes_no_lease),
		cmocka_unit_test(test_admin_rpcs_are_refused_on_host_connections),
		cmocka_unit_test(test_admin_connections_need_the_key),
		cmocka_unit_test(test_bad_messages_are_answered_or_cut),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
