// SPDX-License-Identifier: GPL-2.0
//
// host_auth.cc - see host_auth.h.
#include "mdnode/host_auth.h"

#include <cerrno>
#include <string>
#include <vector>

#include "lib/auth/auth.h"
#include "mdnode/log.h"

namespace mdnode {

namespace {

MDNODE_LOG_SUBSYSTEM("auth");

namespace wire = mdr::wire;

// What both proofs of the session's connection cover.
mdr::HostTranscript transcript(const NodeCore &core, const Session &s,
			       const std::array<uint8_t, 16> &host_nonce)
{
	return mdr::HostTranscript{
		.node_nonce = s.peer.nonce,
		.host_nonce = host_nonce,
		.host_id = s.peer.host_id,
		.node_id = core.opts.node_id,
		.boot_id = core.opts.boot_id,
		.tenant = s.peer.tenant,
		.version = s.peer.version,
		.host_qpn = s.peer.host_qpn,
		.node_qpn = s.peer.node_qpn,
	};
}

} // namespace

uint16_t HostAuth::admit(const PeerInfo &peer)
{
	if (peer.role != MDR_ROLE_HOST)
		return MDR_ST_OK;
	const RegisteredHost *h = core_.store.host(peer.host_id);
	const char *why = nullptr;

	// The connection's QP joins the protection domain of the tenant the
	// request names before any proof: a host id the registry does not
	// hold, or holds for another tenant, gets no QP at all.
	if (peer.version >= wire::kHostAuthVersion) {
		if (!h)
			why = "unknown host";
		else if (h->tenant != peer.tenant)
			why = "other tenant (the host is registered for another)";
	} else if (core_.opts.host_auth_required) {
		why = "speaks a wire version without authentication; this node requires it "
		      "(version 3)";
	} else if (h) {
		// Under optional, a host of the registry still proves its key:
		// its id is not for unauthenticated peers to claim.
		why = "is registered, and speaks a wire version without authentication";
	}
	if (!why)
		return MDR_ST_OK;
	// A host that cannot prove anything is a missing proof: counted.
	core_.stats.auth_failures++;
	log_warn_rl("host %016llx (%s, tenant %u, version %u): refused at connect: %s",
		    (unsigned long long)peer.host_id, peer.address.c_str(), peer.tenant,
		    peer.version, why);
	return MDR_ST_PERM;
}

void HostAuth::refuse(Session &s, const char *why)
{
	core_.stats.auth_failures++;
	log_warn_rl("%s %016llx (%s, tenant %u): refused: %s",
		    s.peer.role == MDR_ROLE_ADMIN ? "admin" : "host",
		    (unsigned long long)s.peer.host_id, s.peer.address.c_str(),
		    s.peer.tenant, why);
	s.closing = true;
	core_.net->disconnect(s.peer.id);
}

bool HostAuth::allowed(Session &s, const wire::Header &hdr)
{
	if (s.peer.role != MDR_ROLE_HOST || s.authenticated ||
	    !wire::needs_host_auth(hdr.opcode, s.peer.version))
		return true;
	// An ack is a reply: it gets none, the connection just goes.
	if (!hdr.reply())
		core_.reply_error(s.peer.id, hdr.req_id, hdr.opcode, -EPERM);
	refuse(s, (wire::opcode_name(hdr.opcode) + " before MDR_OP_HOST_AUTH").c_str());
	return false;
}

void HostAuth::do_host_auth(Session &s, uint64_t req_id, const wire::HostAuthReq &r)
{
	if (s.peer.version < wire::kHostAuthVersion || s.authenticated)
		return core_.reply_error(s.peer.id, req_id, MDR_OP_HOST_AUTH, -EINVAL);

	const RegisteredHost *h = core_.store.host(s.peer.host_id);
	const char *why = nullptr;
	const mdr::HostTranscript t = transcript(core_, s, r.nonce);

	if (!h)
		why = "unknown host";
	else if (h->tenant != s.peer.tenant)
		why = "other tenant (the host is registered for another)";
	else if (!mdr::mac_equal(mdr::host_mac(h->key, mdr::AuthLabel::host, t), r.mac))
		why = "wrong proof";
	if (why) {
		core_.reply_error(s.peer.id, req_id, MDR_OP_HOST_AUTH, -EPERM);
		return refuse(s, why);
	}
	s.authenticated = true;
	log_info_rl("host %016llx (%s): authenticated for tenant %u",
		    (unsigned long long)s.peer.host_id, s.peer.address.c_str(), s.peer.tenant);
	core_.reply(s.peer.id, req_id,
		    wire::HostAuthRep{.mac = mdr::host_mac(h->key, mdr::AuthLabel::node, t)});
}

void HostAuth::expire()
{
	const int64_t now = core_.now();

	// Admins prove the admin key in the same time: a connection that
	// proves nothing holds a slot of --max-connections, and an admin's QP
	// sits in tenant 0's protection domain.
	for (auto &[id, s] : core_.sessions) {
		const bool proves = s.peer.role == MDR_ROLE_ADMIN ||
				    s.peer.version >= wire::kHostAuthVersion;
		if (proves && !s.authenticated && !s.closing &&
		    now - s.since_ms >= int64_t(core_.opts.host_auth_timeout_ms))
			refuse(s, s.peer.role == MDR_ROLE_ADMIN ? "no MDR_OP_AUTH in time"
								: "no MDR_OP_HOST_AUTH in time");
	}
}

void HostAuth::do_add(Session &s, uint64_t req_id, const wire::HostAddReq &r)
{
	const ConnId conn = s.peer.id;
	auto key = mdr::open_host_add(core_.opts.admin_key, s.peer.nonce, r);

	if (!key.ok()) {
		log_warn_rl("admin %s: host %016llx not added: %s", s.peer.address.c_str(),
			    (unsigned long long)r.host_id, key.message().c_str());
		return core_.reply_error(conn, req_id, MDR_OP_HOST_ADD, key.error());
	}
	const bool replace = r.flags & MDR_HOST_ADD_F_REPLACE;
	auto prep = core_.store.prepare_host_add(r.host_id, r.tenant, key.value(), replace);
	mdr::wipe(key.value());
	if (!prep.ok())
		return core_.reply_error(conn, req_id, MDR_OP_HOST_ADD, prep.error());
	core_.change(std::move(prep.value()),
		     [this, conn, req_id, host = r.host_id, tenant = r.tenant,
		      replace](int err, const Applied *) {
		if (err)
			return core_.reply_error(conn, req_id, MDR_OP_HOST_ADD, err);
		log_info("host %016llx %s for tenant %u", (unsigned long long)host,
			 replace ? "has a new key" : "registered", tenant);
		core_.reply(conn, req_id, wire::HostAddRep{});
	});
}

void HostAuth::do_remove(Session &s, uint64_t req_id, const wire::HostRemoveReq &r)
{
	const ConnId conn = s.peer.id;
	auto prep = core_.store.prepare_host_remove(r.host_id);

	if (!prep.ok())
		return core_.reply_error(conn, req_id, MDR_OP_HOST_REMOVE, prep.error());
	core_.change(std::move(prep.value()),
		     [this, conn, req_id, host = r.host_id](int err, const Applied *) {
		if (err)
			return core_.reply_error(conn, req_id, MDR_OP_HOST_REMOVE, err);
		// Its connections go now; its leases run out as a silent host's
		// do (what waits for them goes on waiting), and are never
		// renewed: the host cannot authenticate any more.
		unsigned cut = 0;
		for (auto &[id, other] : core_.sessions)
			if (other.peer.role == MDR_ROLE_HOST && other.peer.host_id == host &&
			    !other.closing) {
				other.closing = true;
				core_.net->disconnect(id);
				cut++;
			}
		log_info("host %016llx removed; %u connections closed, %u leases run out",
			 (unsigned long long)host, cut, core_.leases.held_by(host));
		core_.reply(conn, req_id, wire::HostRemoveRep{});
	});
}

void HostAuth::do_list(Session &s, uint64_t req_id, const wire::HostListReq &r)
{
	// As many as the client receives: header, cursor and count, then 24
	// bytes a host.
	const size_t room = (s.peer.max_msg - sizeof(mdr_wire_host_list_rep)) /
			    sizeof(mdr_wire_host);
	const HostPage page = core_.store.list_hosts(r.cursor, room);
	wire::HostListRep rep;

	for (const RegisteredHost *h : page.hosts) {
		uint32_t conns = 0;

		for (const auto &[id, other] : core_.sessions)
			conns += other.peer.role == MDR_ROLE_HOST && other.peer.host_id == h->id &&
				 other.authenticated && !other.closing;
		rep.hosts.push_back({.host_id = h->id, .tenant = h->tenant, .connections = conns,
				     .leases = core_.leases.held_by(h->id)});
	}
	rep.next = page.next;
	core_.reply(s.peer.id, req_id, rep);
}

} // namespace mdnode
