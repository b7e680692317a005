// SPDX-License-Identifier: GPL-2.0
//
// node_rig.cc - the fake transport and the rig of the node's tests.
#include "tests/common/node_rig.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <utility>
#include <variant>

#include <stdlib.h>

#include "lib/auth/auth.h"

#include "tests/common/cmocka_cxx.h"

namespace fs = std::filesystem;

namespace mdr::test {

std::span<const uint8_t> bytes(const std::string &s)
{
	return {reinterpret_cast<const uint8_t *>(s.data()), s.size()};
}

uint16_t status_of(const wire::Msg &m)
{
	if (auto *e = std::get_if<wire::ErrorRep>(&m.body))
		return e->status;
	return MDR_ST_OK;
}

const wire::Invalidate &expect_push(const wire::Msg &m, uint64_t volume_id, uint64_t index,
				    uint64_t generation, uint32_t reason)
{
	auto *p = std::get_if<wire::Invalidate>(&m.body);
	assert_non_null(p);
	assert_int_equal(p->volume_id, volume_id);
	assert_int_equal(p->first, index);
	assert_int_equal(p->count, 1);
	assert_int_equal(p->generation, generation);
	assert_int_equal(p->reason, reason);
	return *p;
}

TempDir::TempDir(const std::string &prefix)
{
	std::string tmpl = "/var/tmp/" + prefix + ".XXXXXX";
	assert_non_null(mkdtemp(tmpl.data()));
	path = tmpl;
}

TempDir::~TempDir()
{
	std::error_code ec;
	fs::remove_all(path, ec);
}

mdr::Status FakeNet::send(ConnId conn, std::span<const std::byte> msg)
{
	if (down.count(conn))
		return mdr::Error(-ENOTCONN, "fake: not connected");
	if (auto it = send_error.find(conn); it != send_error.end() && it->second)
		return mdr::Error(it->second, "fake: send fails");
	sent[conn].emplace_back(msg.begin(), msg.end());
	return {};
}

mdr::Result<uint32_t> FakeNet::table_rkey(ConnId conn, uint64_t volume_id, const void *addr,
					  size_t len)
{
	rkey_calls.push_back({conn, volume_id, addr, len});
	if (rkey_error)
		return mdr::Error(rkey_error, "fake: cannot register");
	return rkey_for(conn, volume_id);
}

bool FakeNet::cut(ConnId conn) const
{
	return std::find(disconnects.begin(), disconnects.end(), conn) != disconnects.end();
}

mdnode::NodeOptions rig_options()
{
	mdnode::NodeOptions o;
	o.lease_ms = kLeaseMs;
	o.drift_margin_ms = kMarginMs;
	o.admin_key.assign(kAdminKey.begin(), kAdminKey.end());
	o.host_auth_required = false;
	// Most rigs' devices are never written; test_node_zero.cc zeroes.
	o.zero_extents = false;
	return o;
}

NodeRig::NodeRig(const std::string &prefix, uint16_t host_version_, const std::string &at)
	: host_version(host_version_)
{
	if (at.empty()) {
		owned_.emplace(prefix);
		dir = owned_->path;
	} else {
		dir = at;
	}
}

NodeRig::~NodeRig()
{
	// The node (and its copier) before the journal and the store.
	node.reset();
	journal.reset();
}

void NodeRig::start(std::vector<mdnode::Device> devices, const mdnode::NodeOptions &o,
		    const std::string &journal_dir)
{
	node.reset();
	journal.reset();
	auto s = mdnode::Store::create(std::move(devices));
	assert_true(s.ok());
	store.emplace(std::move(s).value());
	mdnode::JournalOptions jo;
	jo.dir = journal_dir;
	auto j = mdnode::Journal::open(
		jo,
		[this](std::span<const std::byte> snap) {
			return store->load_snapshot(
				{reinterpret_cast<const uint8_t *>(snap.data()), snap.size()});
		},
		[this](uint16_t type, std::span<const std::byte> p) {
			return store->replay(
				type, {reinterpret_cast<const uint8_t *>(p.data()), p.size()});
		});
	if (!j.ok())
		fail_msg("journal: %s", j.message().c_str());
	journal = std::move(j).value();
	options = o;
	node = std::make_unique<mdnode::Node>(o, *store, *journal, [this] { return now; });
	node->attach(net);
}

mdnode::PeerInfo NodeRig::peer(uint16_t role, uint32_t tenant, uint64_t host_id,
			       uint16_t version)
{
	mdnode::PeerInfo p{};
	p.id = next_conn++;
	p.role = role;
	if (!version)
		version = role == MDR_ROLE_HOST ? host_version : MDR_WIRE_VERSION;
	p.version = version;
	p.tenant = tenant;
	p.host_id = host_id;
	p.queue_depth = 16;
	p.push_credits = 16;
	p.max_msg = 4096;
	p.address = "192.0.2.1:" + std::to_string(40000 + p.id);
	p.host_qpn = uint32_t(0x100 + p.id);
	p.node_qpn = uint32_t(0x200 + p.id);
	p.nonce = {};
	if (role == MDR_ROLE_ADMIN || version >= 3)
		p.nonce = mdr::random_nonce().value();
	return p;
}

uint16_t NodeRig::connect(const mdnode::PeerInfo &p)
{
	const uint16_t st = node->on_connect(p);
	if (st == MDR_ST_OK) {
		node->on_established(p);
		peers[p.id] = p;
	}
	return st;
}

ConnId NodeRig::establish(const mdnode::PeerInfo &p)
{
	assert_int_equal(connect(p), MDR_ST_OK);
	return p.id;
}

ConnId NodeRig::admin(bool authenticate, uint16_t version)
{
	const mdnode::PeerInfo p = peer(MDR_ROLE_ADMIN, 0, 0xad00 + next_conn, version);
	const ConnId c = establish(p);
	if (!authenticate)
		return c;
	send(c, 1, wire::AuthReq{.mac = mdr::admin_mac(bytes(kAdminKey), p.nonce, p.host_id)});
	assert_true(std::holds_alternative<wire::AuthRep>(one(c).body));
	return c;
}

void NodeRig::send(ConnId conn, uint64_t req_id, const wire::Body &body)
{
	Bytes buf(wire::encoded_size(body));
	auto n = wire::encode(buf, req_id, body);
	if (!n.ok())
		fail_msg("encode: %s", n.message().c_str());
	node->on_message(conn, std::span(buf.data(), n.value()));
}

void NodeRig::flush()
{
	auto st = journal->flush();
	if (!st.ok())
		fail_msg("journal: %s", st.message().c_str());
}

std::vector<wire::Msg> NodeRig::take(ConnId conn)
{
	std::vector<wire::Msg> out;

	for (const Bytes &b : net.sent[conn]) {
		auto m = wire::parse(b, wire::Side::client,
				     static_cast<mdr_wire_role>(peers.at(conn).role));
		if (!m.ok())
			fail_msg("conn %llu got a bad message: %s", (unsigned long long)conn,
				 m.message().c_str());
		out.push_back(std::move(m).value());
	}
	net.sent[conn].clear();
	return out;
}

wire::Msg NodeRig::one(ConnId conn)
{
	auto v = take(conn);
	if (v.size() != 1)
		fail_msg("conn %llu: %zu messages, expected 1", (unsigned long long)conn,
			 v.size());
	return std::move(v[0]);
}

uint16_t NodeRig::call(ConnId conn, uint64_t req_id, const wire::Body &body)
{
	send(conn, req_id, body);
	flush();
	wire::Msg m = one(conn);
	assert_int_equal(m.hdr.req_id, req_id);
	return status_of(m);
}

uint64_t NodeRig::create(ConnId admin_conn, const wire::VolCreateReq &req)
{
	send(admin_conn, 2, req);
	flush();
	wire::Msg m = one(admin_conn);
	auto *rep = std::get_if<wire::VolCreateRep>(&m.body);
	if (!rep)
		fail_msg("create %s: status %u", req.name.c_str(), status_of(m));
	return rep->vol.volume_id;
}

wire::OpenRep NodeRig::open(ConnId conn, uint64_t volume_id)
{
	send(conn, 3, wire::OpenReq{.volume_id = volume_id});
	// The first OPEN of a host journals it as a holder first.
	settle();
	wire::Msg m = one(conn);
	auto *rep = std::get_if<wire::OpenRep>(&m.body);
	if (!rep)
		fail_msg("open %llu: status %u", (unsigned long long)volume_id, status_of(m));
	return *rep;
}

uint16_t NodeRig::add_host(ConnId a, uint64_t host, uint32_t tenant, const std::string &key,
			   uint16_t flags)
{
	auto req = mdr::host_add_request(bytes(kAdminKey), peers.at(a).nonce, host, tenant, flags,
					 bytes(key));
	assert_true(req.ok());
	send(a, 5, req.value());
	settle();
	return status_of(one(a));
}

mdr::HostTranscript NodeRig::transcript(ConnId c, const mdr::Nonce &host_nonce) const
{
	const mdnode::PeerInfo &p = peers.at(c);
	return {.node_nonce = p.nonce, .host_nonce = host_nonce, .host_id = p.host_id,
		.node_id = options.node_id, .boot_id = options.boot_id, .tenant = p.tenant,
		.version = p.version, .host_qpn = p.host_qpn, .node_qpn = p.node_qpn};
}

wire::HostAuthReq NodeRig::proof(ConnId c, const std::string &key) const
{
	wire::HostAuthReq r{.nonce = mdr::random_nonce().value()};
	r.mac = mdr::host_mac(bytes(key), mdr::AuthLabel::host, transcript(c, r.nonce));
	return r;
}

ConnId NodeRig::proven_host(uint32_t tenant, uint64_t host_id, const std::string &key,
			    uint16_t version)
{
	const ConnId c = establish(peer(MDR_ROLE_HOST, tenant, host_id, version));
	const wire::HostAuthReq r = proof(c, key);
	send(c, 1, r);
	wire::Msg m = one(c);
	auto *rep = std::get_if<wire::HostAuthRep>(&m.body);
	if (!rep)
		fail_msg("host auth: status %u", status_of(m));
	assert_true(mdr::mac_equal(rep->mac, mdr::host_mac(bytes(key), mdr::AuthLabel::node,
							   transcript(c, r.nonce))));
	return c;
}

wire::InvalidateAck NodeRig::ack_of(ConnId host, const wire::Invalidate &push, uint32_t flags,
				    uint64_t dirty) const
{
	wire::InvalidateAck a;
	static_cast<wire::InvalRange &>(a) = push;
	a.extended = peers.at(host).version >= 2;
	a.flags = flags;
	a.dirty = dirty;
	return a;
}

void NodeRig::ack(ConnId host, const wire::Msg &m, uint32_t flags, uint64_t dirty)
{
	send(host, m.hdr.req_id, ack_of(host, std::get<wire::Invalidate>(m.body), flags, dirty));
}

} // namespace mdr::test
