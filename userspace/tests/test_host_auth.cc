// SPDX-License-Identifier: GPL-2.0
//
// test_host_auth.cc - hosts authenticate (wire version 3) and the host
// registry, in mdnode, through the Net seam with a fake transport: a good
// proof and mdnode's proof back, a wrong proof, an unknown host, another
// tenant, a request replayed on a new connection, OPEN and acks before
// HOST_AUTH, a second HOST_AUTH, the auth timeout, version 2 hosts under
// --host-auth required and optional, HOST_ADD's wrap (bad padding,
// EXIST, REPLACE), HOST_REMOVE cutting connections while the leases run
// out, HOST_LIST, the counters of NODE_STATS, and the registry across a
// restart (journal replay and snapshot, and a snapshot of before hosts).
// A proven host of version 7 is told who serves each OK reply to OPEN,
// RENEW and ALLOC (the serving tail and the epoch record's window).
//
// The store and the journal are the real ones, on a directory under
// /var/tmp; time is the Node's clock function, moved by hand.
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "lib/auth/auth.h"
#include "lib/wire/wire.h"
#include "mdnode/log.h"
#include "mdnode/node.h"
#include "mdnode/store.h"

#include "tests/common/node_rig.h"

#include "tests/common/cmocka_cxx.h"

namespace wire = mdr::wire;
using mdnode::ConnId;
using mdnode::NodeOptions;
using mdnode::PeerInfo;
using mdnode::Store;

namespace {

using namespace mdr::test;

constexpr uint64_t kNodeId = 0x1122334455667788, kBootId = 0x99aabbccddeeff00;
constexpr uint32_t kIoHoldMs = 300;
constexpr uint32_t kAuthTimeoutMs = 2000;
constexpr uint64_t kHost = 0x93;
const std::string kKey = "0123456789abcdef0123456789abcdef";
const std::string kOtherKey = "another host key, 33 bytes long!!";

NodeOptions node_options(bool required = true)
{
	NodeOptions o = rig_options();
	o.io_hold_ms = kIoHoldMs;
	o.node_id = kNodeId;
	o.boot_id = kBootId;
	o.host_auth_required = required;
	o.host_auth_timeout_ms = kAuthTimeoutMs;
	return o;
}

// Hosts speak version 3 unless a peer is given another.
struct Rig : NodeRig {
	explicit Rig(NodeOptions o = node_options(), std::string at = {})
		: NodeRig("mdr-auth", 3, at), opts(o)
	{
		start();
	}

	// A node on the store the journal in dir recovers (as mdnode starts).
	void start() { NodeRig::start({{1, "/dev/fake-a", "SER-A", 64 * MiB}}, opts, dir); }

	// A host connection of version 3 (or the one given) that proved key;
	// mdnode's proof checked.
	ConnId host(uint32_t tenant, uint64_t host_id, const std::string &key = kKey,
		    uint16_t version = 0)
	{
		return proven_host(tenant, host_id, key, version);
	}

	// A version 3 (or version) host connection that has not
	// authenticated yet.
	ConnId unproven(uint32_t tenant, uint64_t host_id, uint16_t version = 0)
	{
		return establish(peer(MDR_ROLE_HOST, tenant, host_id, version));
	}

	uint64_t create(ConnId a, const std::string &name, uint32_t tenant)
	{
		return NodeRig::create(a, {.size = 4 * MiB, .extent_shift = 16, .tenant = tenant,
					   .name = name});
	}

	wire::HostListRep list(ConnId a, uint64_t cursor = 0)
	{
		send(a, 6, wire::HostListReq{.cursor = cursor});
		wire::Msg m = one(a);
		auto *rep = std::get_if<wire::HostListRep>(&m.body);
		if (!rep)
			fail_msg("host list: status %u", status_of(m));
		return *rep;
	}

	wire::NodeStatsRep stats(ConnId a)
	{
		send(a, 7, wire::NodeStatsReq{});
		return std::get<wire::NodeStatsRep>(one(a).body);
	}

	NodeOptions opts;
};

// A registered host proves its key, gets mdnode's proof back, and then
// opens its tenant's volume; HOST_LIST and NODE_STATS count it.
void test_good_auth(void **)
{
	Rig r;
	const ConnId a = r.admin();
	assert_int_equal(r.add_host(a, kHost, 1, kKey), MDR_ST_OK);
	const uint64_t vol = r.create(a, "v1", 1);
	const ConnId h = r.host(1, kHost);

	assert_int_equal(r.call(h, 3, wire::OpenReq{.volume_id = vol}), MDR_ST_OK);
	assert_int_equal(r.call(h, 4, wire::PingReq{}), MDR_ST_OK);
	const wire::HostListRep l = r.list(a);
	assert_int_equal(l.hosts.size(), 1);
	assert_true((l.hosts[0] == wire::Host{.host_id = kHost, .tenant = 1, .connections = 1,
					       .leases = 1}));
	assert_int_equal(l.next, 0);
	const wire::NodeStatsRep st = r.stats(a);
	assert_int_equal(st.hosts, 1);
	assert_int_equal(st.auth_failures, 0);
	assert_true(r.net.disconnects.empty());
}

// Wrong proof, unknown host, another tenant: PERM, counted, cut; what the
// connection sends after that is ignored.
void test_refused_proofs(void **)
{
	Rig r;
	const ConnId a = r.admin();
	assert_int_equal(r.add_host(a, kHost, 1, kKey), MDR_ST_OK);
	assert_int_equal(r.add_host(a, 0x94, 2, kOtherKey), MDR_ST_OK);
	r.create(a, "v1", 1);

	// A host id the registry does not hold, or holds for another tenant,
	// is refused at the connect, before its QP joins the tenant's
	// protection domain.
	assert_int_equal(r.connect(r.peer(MDR_ROLE_HOST, 1, 0x95)), MDR_ST_PERM);
	assert_int_equal(r.connect(r.peer(MDR_ROLE_HOST, 1, 0x94)), MDR_ST_PERM);
	assert_int_equal(r.node->stats().auth_failures, 2);

	// A registered host with another key: refused at its proof, and cut.
	const ConnId wrong = r.unproven(1, kHost);
	assert_int_equal(r.call(wrong, 1, r.proof(wrong, kOtherKey)), MDR_ST_PERM);
	assert_true(r.net.cut(wrong));
	// Cut: an OPEN now gets no answer at all.
	r.send(wrong, 2, wire::OpenReq{.flags = MDR_OPEN_F_BY_NAME, .name = "v1"});
	assert_true(r.take(wrong).empty());
	assert_int_equal(r.stats(a).auth_failures, 3);
	assert_int_equal(r.list(a).hosts[0].connections, 0);
}

// A request recorded from one connection is no proof on another: the
// accept's nonce differs.
void test_replayed_proof(void **)
{
	Rig r;
	const ConnId a = r.admin();
	assert_int_equal(r.add_host(a, kHost, 1, kKey), MDR_ST_OK);
	const ConnId first = r.unproven(1, kHost);
	const wire::HostAuthReq recorded = r.proof(first, kKey);
	assert_int_equal(r.call(first, 1, recorded), MDR_ST_OK);

	const ConnId second = r.unproven(1, kHost);
	assert_int_equal(r.call(second, 1, recorded), MDR_ST_PERM);
	assert_true(r.net.cut(second));
	assert_false(r.net.cut(first));
	assert_int_equal(r.node->stats().auth_failures, 1);
}

// A relay between a host and mdnode holds two connections: the host's
// proof names the QPs of its own, with the node nonce the relay passed on.
// On the relay's connection to mdnode that proof is refused.
void test_relayed_proof(void **)
{
	Rig r;
	const ConnId a = r.admin();
	assert_int_equal(r.add_host(a, kHost, 1, kKey), MDR_ST_OK);
	const ConnId relayed = r.unproven(1, kHost);

	for (int side = 0; side < 2; side++) {
		const ConnId c = side ? r.unproven(1, kHost) : relayed;
		wire::HostAuthReq q{.nonce = mdr::random_nonce().value()};
		mdr::HostTranscript t = r.transcript(c, q.nonce);
		// The QPs of the host's connection to the relay.
		(side ? t.node_qpn : t.host_qpn) += 0x1000;
		q.mac = mdr::host_mac(bytes(kKey), mdr::AuthLabel::host, t);
		assert_int_equal(r.call(c, 1, q), MDR_ST_PERM);
		assert_true(r.net.cut(c));
	}
	assert_int_equal(r.node->stats().auth_failures, 2);
}

// OPEN, RENEW and acks before HOST_AUTH: refused and cut (an ack gets no
// reply); PING is fine; a second HOST_AUTH and a nonce of zeros are
// INVAL.
void test_requests_before_auth(void **)
{
	Rig r;
	const ConnId a = r.admin();
	assert_int_equal(r.add_host(a, kHost, 1, kKey), MDR_ST_OK);
	const uint64_t vol = r.create(a, "v1", 1);

	ConnId h = r.unproven(1, kHost);
	assert_int_equal(r.call(h, 1, wire::PingReq{}), MDR_ST_OK);
	assert_int_equal(r.call(h, 2, wire::OpenReq{.volume_id = vol}), MDR_ST_PERM);
	assert_true(r.net.cut(h));
	assert_int_equal(r.node->stats().auth_failures, 1);

	h = r.unproven(1, kHost);
	assert_int_equal(r.call(h, 2, wire::RenewReq{}), MDR_ST_PERM);
	assert_true(r.net.cut(h));

	h = r.unproven(1, kHost);
	wire::InvalidateAck ack{{.volume_id = vol, .first = 0, .count = 1, .generation = 2,
				 .reason = MDR_INVAL_ALLOC}, true};
	r.send(h, 9, ack);
	assert_true(r.take(h).empty());
	assert_true(r.net.cut(h));
	assert_int_equal(r.node->stats().auth_failures, 3);

	h = r.host(1, kHost);
	assert_int_equal(r.call(h, 3, r.proof(h, kKey)), MDR_ST_INVAL);
	assert_false(r.net.cut(h));

	// The codec refuses a nonce of zeros: INVAL, as any bad field.
	h = r.unproven(1, kHost);
	Bytes buf(sizeof(mdr_wire_host_auth_req));
	wire::HostAuthReq good = r.proof(h, kKey);
	assert_true(wire::encode(buf, 4, good).ok());
	std::memset(buf.data() + sizeof(mdr_wire_hdr), 0, 16);
	r.node->on_message(h, buf);
	assert_int_equal(status_of(r.one(h)), MDR_ST_INVAL);
}

// A version 3 host that never proves is cut after the timeout, counted;
// so is an admin that never proves the admin key.
void test_auth_timeout(void **)
{
	Rig r;
	const ConnId a = r.admin();
	assert_int_equal(r.add_host(a, kHost, 1, kKey), MDR_ST_OK);
	const ConnId silent = r.unproven(1, kHost);
	const ConnId proven = r.host(1, kHost);
	const PeerInfo mute = r.peer(MDR_ROLE_ADMIN, 0, 0xad99);
	assert_int_equal(r.connect(mute), MDR_ST_OK);

	r.now += kAuthTimeoutMs - 1;
	r.node->tick();
	assert_false(r.net.cut(silent));
	assert_false(r.net.cut(mute.id));
	r.now += 1;
	r.node->tick();
	assert_true(r.net.cut(silent));
	assert_true(r.net.cut(mute.id));
	assert_false(r.net.cut(proven));
	assert_false(r.net.cut(a));
	assert_int_equal(r.node->stats().auth_failures, 2);
	r.node->tick();
	assert_int_equal(r.node->stats().auth_failures, 2);
}

// Version 2 hosts: refused under required, served unproven under optional
// (where version 3 hosts still prove) unless their id is in the registry.
void test_version_2_hosts_by_policy(void **)
{
	{
		Rig r;
		const ConnId a = r.admin();
		assert_int_equal(r.add_host(a, kHost, 1, kKey), MDR_ST_OK);
		assert_int_equal(r.connect(r.peer(MDR_ROLE_HOST, 1, kHost, 2)), MDR_ST_PERM);
		assert_int_equal(r.connect(r.peer(MDR_ROLE_HOST, 1, 0x99, 1)), MDR_ST_PERM);
		assert_int_equal(r.connect(r.peer(MDR_ROLE_HOST, 1, kHost, 3)), MDR_ST_OK);
		// A host that offers no proof is a missing proof: counted.
		assert_int_equal(r.node->stats().auth_failures, 2);
	}
	Rig r(node_options(false));
	const ConnId a = r.admin();
	const uint64_t vol = r.create(a, "v1", 1);
	const PeerInfo old = r.peer(MDR_ROLE_HOST, 1, 0x99, 2);
	assert_int_equal(r.connect(old), MDR_ST_OK);
	assert_int_equal(r.call(old.id, 1, wire::OpenReq{.volume_id = vol}), MDR_ST_OK);
	// HOST_AUTH means nothing at version 2.
	assert_int_equal(r.call(old.id, 2, r.proof(old.id, kKey)), MDR_ST_INVAL);
	assert_int_equal(r.add_host(a, kHost, 1, kKey), MDR_ST_OK);
	const ConnId v3 = r.unproven(1, kHost);
	assert_int_equal(r.call(v3, 1, wire::OpenReq{.volume_id = vol}), MDR_ST_PERM);
	// A registered host id is not for a version 2 peer to claim.
	assert_int_equal(r.connect(r.peer(MDR_ROLE_HOST, 1, kHost, 2)), MDR_ST_PERM);
}

// HOST_ADD: the key arrives sealed for this admin connection; a request
// sealed for another connection or with another admin key, or changed on
// the way, is PERM. EXIST without REPLACE; REPLACE keeps the tenant and
// connections, and new ones need the new key.
void test_host_add_wrap_and_replace(void **)
{
	Rig r;
	const ConnId a = r.admin();
	const ConnId other = r.admin();

	// Sealed for the other connection.
	wire::HostAddReq req = mdr::host_add_request(bytes(kAdminKey), r.peers.at(other).nonce,
						     kHost, 1, 0, bytes(kKey)).value();
	assert_int_equal(r.call(a, 1, req), MDR_ST_PERM);
	// With another admin key.
	req = mdr::host_add_request(bytes(kAdminKey + "?"), r.peers.at(a).nonce, kHost, 1, 0,
				    bytes(kKey)).value();
	assert_int_equal(r.call(a, 1, req), MDR_ST_PERM);
	// Its tenant changed on the way.
	req = mdr::host_add_request(bytes(kAdminKey), r.peers.at(a).nonce, kHost, 1, 0,
				    bytes(kKey)).value();
	req.tenant = 2;
	assert_int_equal(r.call(a, 1, req), MDR_ST_PERM);
	assert_int_equal(r.stats(a).hosts, 0);

	assert_int_equal(r.add_host(a, kHost, 1, kKey), MDR_ST_OK);
	assert_int_equal(r.add_host(a, kHost, 1, kKey), MDR_ST_EXIST);
	assert_int_equal(r.add_host(a, kHost, 2, kOtherKey, MDR_HOST_ADD_F_REPLACE), MDR_ST_INVAL);
	assert_int_equal(r.add_host(a, 0x99, 1, kKey, MDR_HOST_ADD_F_REPLACE), MDR_ST_NOENT);
	const ConnId before = r.host(1, kHost, kKey);
	assert_int_equal(r.add_host(a, kHost, 1, kOtherKey, MDR_HOST_ADD_F_REPLACE), MDR_ST_OK);
	assert_false(r.net.cut(before));
	assert_int_equal(r.call(before, 2, wire::PingReq{}), MDR_ST_OK);
	const ConnId old_key = r.unproven(1, kHost);
	assert_int_equal(r.call(old_key, 1, r.proof(old_key, kKey)), MDR_ST_PERM);
	r.host(1, kHost, kOtherKey);
	const wire::HostListRep l = r.list(a);
	assert_int_equal(l.hosts.size(), 1);
	assert_int_equal(l.hosts[0].tenant, 1);
	assert_int_equal(l.hosts[0].connections, 2);
}

// HOST_REMOVE cuts the host's connections at once; its lease stays until
// it has run out and its IO is waited out (a delete of the volume is
// BUSY meanwhile, as for a silent host), and it cannot come back.
void test_remove_cuts_connections_leases_run_out(void **)
{
	Rig r;
	const ConnId a = r.admin();
	assert_int_equal(r.add_host(a, kHost, 1, kKey), MDR_ST_OK);
	assert_int_equal(r.add_host(a, 0x94, 1, kOtherKey), MDR_ST_OK);
	const uint64_t vol = r.create(a, "v1", 1);
	const ConnId h1 = r.host(1, kHost), h2 = r.host(1, kHost);
	const ConnId other = r.host(1, 0x94, kOtherKey);
	assert_int_equal(r.call(h1, 3, wire::OpenReq{.volume_id = vol}), MDR_ST_OK);

	assert_int_equal(r.call(a, 8, wire::HostRemoveReq{.host_id = 0x77}), MDR_ST_NOENT);
	assert_int_equal(r.call(a, 8, wire::HostRemoveReq{.host_id = kHost}), MDR_ST_OK);
	assert_true(r.net.cut(h1) && r.net.cut(h2));
	assert_false(r.net.cut(other));
	r.node->on_disconnected(h1);
	r.node->on_disconnected(h2);
	assert_int_equal(r.stats(a).hosts, 1);

	// The lease was renewed by nobody; it still counts until it is gone.
	assert_int_equal(r.call(a, 9, wire::VolDeleteReq{.name = "v1"}), MDR_ST_BUSY);
	// Removed: its id is refused at the connect.
	assert_int_equal(r.connect(r.peer(MDR_ROLE_HOST, 1, kHost)), MDR_ST_PERM);
	r.now += kLeaseMs + kMarginMs + kIoHoldMs;
	r.node->tick();
	r.now += kIoHoldMs;
	r.node->tick();
	assert_int_equal(r.call(a, 9, wire::VolDeleteReq{.name = "v1"}), MDR_ST_OK);
}

// HOST_LIST pages by the client's max_msg: 4096 bytes hold 169 hosts.
void test_host_list_pages(void **)
{
	Rig r;
	const ConnId a = r.admin();
	const size_t room = (4096 - sizeof(mdr_wire_host_list_rep)) / sizeof(mdr_wire_host);

	for (uint64_t h = 1; h <= room + 3; h++)
		assert_int_equal(r.add_host(a, h * 2, 1, kKey), MDR_ST_OK);
	const wire::HostListRep p1 = r.list(a);
	assert_int_equal(p1.hosts.size(), room);
	assert_int_equal(p1.next, (room + 1) * 2);
	const wire::HostListRep p2 = r.list(a, p1.next);
	assert_int_equal(p2.hosts.size(), 3);
	assert_int_equal(p2.next, 0);
	assert_int_equal(p2.hosts[2].host_id, (room + 3) * 2);
}

// The registry comes back from the journal after a restart, and from a
// checkpoint; a snapshot of before hosts (version 1) loads with none.
void test_registry_survives_restart(void **)
{
	const TempDir dir("mdr-auth-restart");
	{
		Rig r(node_options(), dir.path);
		const ConnId a = r.admin();
		assert_int_equal(r.add_host(a, kHost, 1, kKey), MDR_ST_OK);
		assert_int_equal(r.add_host(a, 0x94, 2, kKey), MDR_ST_OK);
		assert_int_equal(r.add_host(a, 0x95, 3, kKey), MDR_ST_OK);
		assert_int_equal(r.add_host(a, kHost, 1, kOtherKey, MDR_HOST_ADD_F_REPLACE),
				 MDR_ST_OK);
		assert_int_equal(r.call(a, 8, wire::HostRemoveReq{.host_id = 0x94}), MDR_ST_OK);
	}
	{
		// Replayed from the journal.
		Rig r(node_options(), dir.path);
		assert_int_equal(r.store->counts().hosts, 2);
		assert_null(r.store->host(0x94));
		const mdnode::RegisteredHost *h = r.store->host(kHost);
		assert_non_null(h);
		assert_int_equal(h->tenant, 1);
		assert_true(h->key == std::vector<uint8_t>(kOtherKey.begin(), kOtherKey.end()));
		r.host(1, kHost, kOtherKey);
		r.host(3, 0x95, kKey);

		// Snapshot round trip, and a checkpoint the next start reads.
		const std::vector<uint8_t> snap = r.store->snapshot();
		auto fresh = Store::create({{1, "/dev/fake-a", "SER-A", 64 * MiB}}).value();
		assert_true(fresh.load_snapshot(snap).ok());
		assert_true(fresh == *r.store);
		assert_true(r.journal->checkpoint(std::as_bytes(std::span(snap))).ok());

		// A snapshot without the registry: version 1, no trailer.
		auto empty = Store::create({{1, "/dev/fake-a", "SER-A", 64 * MiB}}).value();
		std::vector<uint8_t> v1 = empty.snapshot();
		assert_int_equal(v1.size(), 24 + 8 + 8 + 16);
		v1.resize(24);
		v1[4] = 1;
		auto old = Store::create({{1, "/dev/fake-a", "SER-A", 64 * MiB}}).value();
		assert_true(old.load_snapshot(v1).ok());
		assert_int_equal(old.counts().hosts, 0);
		// A torn registry is refused.
		std::vector<uint8_t> torn = snap;
		torn.pop_back();
		auto t = Store::create({{1, "/dev/fake-a", "SER-A", 64 * MiB}}).value();
		assert_int_equal(t.load_snapshot(torn).error(), -EINVAL);
	}
	{
		Rig r(node_options(), dir.path);
		assert_int_equal(r.store->counts().hosts, 2);
		r.host(1, kHost, kOtherKey);
	}
}

// Replay refuses host records that do not fit: a second HOST_ADD, a
// REPLACE of another tenant, a REMOVE of an unknown host.
void test_replay_checks_host_records(void **)
{
	auto s = Store::create({{1, "/dev/fake-a", "SER-A", 64 * MiB}}).value();
	mdnode::Record add{.type = mdnode::kHostAdd, .tenant = 1, .host_id = kHost,
			   .secret = std::vector<uint8_t>(kKey.begin(), kKey.end())};
	const mdnode::Change c = mdnode::encode_record(add);

	assert_int_equal(c.payload.size(), 88);
	assert_true(s.replay(c.type, c.payload).ok());
	assert_int_equal(s.replay(c.type, c.payload).error(), -EEXIST);
	add.flags = mdnode::kHostAddReplace;
	add.tenant = 2;
	const mdnode::Change other = mdnode::encode_record(add);
	assert_int_equal(s.replay(other.type, other.payload).error(), -EINVAL);
	const mdnode::Change rm = mdnode::encode_record({.type = mdnode::kHostRemove,
							 .host_id = 0x77});
	assert_int_equal(s.replay(rm.type, rm.payload).error(), -ENOENT);
	// A key not zero-padded in the record.
	std::vector<uint8_t> bad = c.payload;
	bad.back() = 1;
	assert_int_equal(mdnode::decode_record(c.type, bad).error(), -EINVAL);
	auto back = mdnode::decode_record(c.type, c.payload);
	assert_true(back.ok());
	assert_true(back.value().secret == std::vector<uint8_t>(kKey.begin(), kKey.end()));
}

// Version 7: every OK reply to OPEN, RENEW and ALLOC says who serves. A
// node of its own: zeros, and no record registered. Its record serving at
// an epoch, as a group's leader writes it: that epoch and the record's
// window on the connection (registered in the tenant's PD as volume 0's
// table), the same on every reply. A proven host of version 6 gets no
// tail. (Hosts of version 3 and later must be in the registry: one that is
// not is refused at the connect, and what it sends then is never
// answered.)
void test_serving_stamp(void **)
{
	Rig r;
	const ConnId a = r.admin();
	assert_int_equal(r.add_host(a, kHost, 1, kKey), MDR_ST_OK);
	const uint64_t vol = r.create(a, "v1", 1);
	const auto body = [&](ConnId h, uint64_t id, const wire::Body &req) {
		r.send(h, id, req);
		r.flush();
		wire::Msg m = r.one(h);
		assert_int_equal(status_of(m), MDR_ST_OK);
		return m.body;
	};
	const auto serving = [&](ConnId h, uint64_t id, const wire::Body &req) {
		return std::visit([](const auto &b) -> std::optional<wire::Serving> {
			if constexpr (requires { b.serving; })
				return b.serving;
			fail_msg("a reply without a serving field");
			return std::nullopt;
		}, body(h, id, req));
	};
	const wire::OpenReq open{.volume_id = vol};
	const wire::RenewReq renew{.volume_id = vol};
	const wire::AllocReq alloc{.volume_id = vol, .index = 0};

	const ConnId own = r.host(1, kHost, kKey, 7);
	for (const wire::Body &q : {wire::Body(open), wire::Body(renew), wire::Body(alloc)})
		assert_true(serving(own, 3, q) == wire::Serving{});
	for (const FakeNet::RkeyCall &c : r.net.rkey_calls)
		assert_int_not_equal(c.volume_id, 0);

	mdnode::EpochRecord &rec = r.node->epoch_record();
	rec.serve(2, 7, 9);
	const ConnId h = r.host(1, kHost, kKey, 7);
	const wire::Serving want{.epoch = 9,
				 .record_addr = reinterpret_cast<uintptr_t>(rec.bytes().data()),
				 .record_rkey = FakeNet::rkey_for(h, 0)};
	for (const wire::Body &q : {wire::Body(open), wire::Body(renew), wire::Body(alloc),
				    wire::Body(renew)})
		assert_true(serving(h, 4, q) == want);
	const FakeNet::RkeyCall &reg = r.net.rkey_calls.back();
	assert_int_equal(reg.conn, h);
	assert_int_equal(reg.volume_id, 0);
	assert_ptr_equal(reg.addr, rec.bytes().data());
	assert_int_equal(reg.len, sizeof(mdr_wire_epoch_rec));

	const ConnId v6 = r.host(1, kHost, kKey, 6);
	for (const wire::Body &q : {wire::Body(open), wire::Body(renew), wire::Body(alloc)})
		assert_false(serving(v6, 5, q).has_value());
	assert_true(r.net.disconnects.empty());
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_auth),
		cmocka_unit_test(test_refused_proofs),
		cmocka_unit_test(test_replayed_proof),
		cmocka_unit_test(test_relayed_proof),
		cmocka_unit_test(test_requests_before_auth),
		cmocka_unit_test(test_auth_timeout),
		cmocka_unit_test(test_version_2_hosts_by_policy),
		cmocka_unit_test(test_host_add_wrap_and_replace),
		cmocka_unit_test(test_remove_cuts_connections_leases_run_out),
		cmocka_unit_test(test_host_list_pages),
		cmocka_unit_test(test_registry_survives_restart),
		cmocka_unit_test(test_replay_checks_host_records),
		cmocka_unit_test(test_serving_stamp),
	};

	mdnode::set_log_level(mdnode::LogLevel::error);
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
