// SPDX-License-Identifier: GPL-2.0
//
// node.cc - see node.h: sessions, the dispatch of requests, the clock.
#include "mdnode/node.h"

#include <algorithm>
#include <cerrno>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "mdnode/log.h"

namespace mdnode {

namespace {

MDNODE_LOG_SUBSYSTEM("node");

namespace wire = mdr::wire;

// What a replica that does not lead refuses: every request that grants,
// keeps or uses a lease, and every admin change, of the replica set too.
// Reads of the state (the lists, a volume's info, the statistics, the
// group's status) and the proofs are answered.
bool leader_only(uint16_t opcode)
{
	switch (opcode) {
	case MDR_OP_OPEN:
	case MDR_OP_CLOSE:
	case MDR_OP_RENEW:
	case MDR_OP_ALLOC:
	case MDR_OP_VOL_CREATE:
	case MDR_OP_VOL_DELETE:
	case MDR_OP_VOL_RESIZE:
	case MDR_OP_MOVE:
	case MDR_OP_DRAIN:
	case MDR_OP_HOST_ADD:
	case MDR_OP_HOST_REMOVE:
	case MDR_OP_REPLICA_ADD:
	case MDR_OP_REPLICA_REMOVE:
		return true;
	default:
		return false;
	}
}

} // namespace

Node::Node(const NodeOptions &opts, Store &store, Journal &journal,
	   std::function<int64_t()> now_ms)
	: core_(opts, store, journal, std::move(now_ms)), pushes_(core_),
	  mover_(core_, pushes_), host_(core_, pushes_), auth_(core_),
	  admin_(core_, mover_)
{
	// Moves first: a lease granted or lost changes what a move trusts
	// before the fan-outs waiting for that host settle.
	core_.watch_leases(mover_);
	core_.watch_leases(pushes_);
}

uint16_t Node::on_connect(const PeerInfo &peer)
{
	if (peer.role == MDR_ROLE_ADMIN && core_.opts.admin_key.empty()) {
		log_warn_rl("admin connection from %s refused: no admin key configured",
			    peer.address.c_str());
		return MDR_ST_PERM;
	}
	return auth_.admit(peer);
}

void Node::on_established(const PeerInfo &peer)
{
	// The session starts here, not at on_connect: a connection that never
	// completes leaves nothing behind.
	Session &s = core_.sessions[peer.id];

	s.peer = peer;
	s.since_ms = core_.now();
	// The clocks of its requests: no more are outstanding than the
	// queue depth it was granted (the transport posts as many receives).
	s.in_flight.assign(std::max<size_t>(peer.queue_depth, 1), Session::InFlight{});
	core_.stats.connections++;
	if (peer.role == MDR_ROLE_ADMIN)
		core_.stats.connected_admins++;
	else
		core_.stats.connected_hosts++;
}

void Node::on_message(ConnId conn, std::span<const std::byte> msg)
{
	Session *sp = core_.session(conn);
	if (!sp || sp->closing)
		return;
	Session &s = *sp;
	auto m = wire::parse(msg, wire::Side::node,
			     static_cast<mdr_wire_role>(s.peer.role));

	if (!m.ok()) {
		core_.stats.bad_messages++;
		log_warn_rl("conn %llu (%s): bad message: %s",
			    (unsigned long long)conn, s.peer.address.c_str(),
			    m.message().c_str());
		// Answer a well-framed request with a bad field or the wrong role;
		// a peer that cannot frame its messages is cut off.
		auto hdr = wire::peek_header(msg);
		if (hdr && !hdr->reply() && (m.error() == -EINVAL || m.error() == -EPERM))
			core_.reply_unparsed(conn, hdr->req_id, hdr->opcode, m.error());
		else
			core_.net->disconnect(conn);
		return;
	}
	core_.request_begin(s, m.value().hdr);
	handle(s, m.value());
	core_.request_end(s);
	// Whatever it sent, the host is there: pushes held back after a failed
	// send try again (an ack already did, in Pushes::acked()).
	if (!s.queued.empty())
		pushes_.send_pushes(s);
}

void Node::on_disconnected(ConnId conn)
{
	auto it = core_.sessions.find(conn);
	if (it == core_.sessions.end())
		return;
	// Leases outlive the connection; they only stop pointing at it.
	core_.leases.detach(conn);
	pushes_.forget(it->second);
	// Only a host that is who it says tells moves it went: an unproven
	// peer claiming its id must not make them copy whole extents.
	const Session &gone = it->second;
	if (gone.peer.role == MDR_ROLE_ADMIN)
		core_.stats.connected_admins--;
	else
		core_.stats.connected_hosts--;
	if (gone.peer.role == MDR_ROLE_HOST &&
	    (gone.authenticated || gone.peer.version < wire::kHostAuthVersion))
		mover_.host_disconnected(gone.peer.host_id);
	core_.sessions.erase(it);
}

void Node::handle(Session &s, const wire::Msg &m)
{
	const uint64_t id = m.hdr.req_id;

	core_.stats.requests++;
	// Admin operations need a proven key first (the opcode table says which).
	if (!m.hdr.reply() && wire::needs_auth(m.hdr.opcode) && !s.authenticated)
		return core_.reply_error(s.peer.id, id, m.hdr.opcode, -EPERM);
	// Host messages of version 3 need the host's proof first (the table
	// says which); without it the host is cut off.
	if (!auth_.allowed(s, m.hdr))
		return;
	// A replica that does not lead names the leader (or AGAIN: it is
	// about to lead, or the client is older than version 5).
	if (!m.hdr.reply() && leader_only(m.hdr.opcode) && !core_.accepting())
		return core_.refuse_not_leading(s, id, m.hdr.opcode);
	std::visit([&](const auto &b) {
		using T = std::decay_t<decltype(b)>;
		if constexpr (std::is_same_v<T, wire::OpenReq>)
			host_.do_open(s, id, b);
		else if constexpr (std::is_same_v<T, wire::CloseReq>)
			host_.do_close(s, id, b);
		else if constexpr (std::is_same_v<T, wire::RenewReq>)
			host_.do_renew(s, id, b);
		else if constexpr (std::is_same_v<T, wire::AllocReq>)
			host_.do_alloc(s, id, b);
		else if constexpr (std::is_same_v<T, wire::InvalidateAck>)
			host_.do_ack(s, id, b);
		else if constexpr (std::is_same_v<T, wire::HostAuthReq>)
			auth_.do_host_auth(s, id, b);
		else if constexpr (std::is_same_v<T, wire::AuthReq>)
			admin_.do_auth(s, id, b);
		else if constexpr (std::is_same_v<T, wire::HostAddReq>)
			auth_.do_add(s, id, b);
		else if constexpr (std::is_same_v<T, wire::HostRemoveReq>)
			auth_.do_remove(s, id, b);
		else if constexpr (std::is_same_v<T, wire::HostListReq>)
			auth_.do_list(s, id, b);
		else if constexpr (std::is_same_v<T, wire::VolCreateReq>)
			admin_.do_create(s, id, b);
		else if constexpr (std::is_same_v<T, wire::VolDeleteReq>)
			admin_.do_delete(s, id, b);
		else if constexpr (std::is_same_v<T, wire::VolResizeReq>)
			admin_.do_resize(s, id, b);
		else if constexpr (std::is_same_v<T, wire::VolInfoReq>)
			admin_.do_info(s, id, b);
		else if constexpr (std::is_same_v<T, wire::VolListReq>)
			admin_.do_vol_list(s, id, b);
		else if constexpr (std::is_same_v<T, wire::DevListReq>)
			admin_.do_dev_list(s, id, b);
		else if constexpr (std::is_same_v<T, wire::NodeStatsReq>)
			admin_.do_stats(s, id);
		else if constexpr (std::is_same_v<T, wire::GroupStatusReq>)
			admin_.do_group_status(s, id);
		else if constexpr (std::is_same_v<T, wire::ReplicaAddReq>)
			admin_.do_replica_add(s, id, b);
		else if constexpr (std::is_same_v<T, wire::ReplicaRemoveReq>)
			admin_.do_replica_remove(s, id, b);
		else if constexpr (std::is_same_v<T, wire::MoveReq>)
			mover_.do_move(s, id, b);
		else if constexpr (std::is_same_v<T, wire::DrainReq>)
			mover_.do_drain(s, id, b);
		else if constexpr (std::is_same_v<T, wire::PingReq>)
			core_.reply(s.peer.id, id, wire::PingRep{});
		else
			// parse() lets through only what a node receives
			core_.reply_error(s.peer.id, id, m.hdr.opcode, -EPROTO);
	}, m.body);
}

void Node::stop_serving_hosts()
{
	std::vector<ConnId> hosts;

	for (const auto &[conn, s] : core_.sessions)
		if (s.peer.role == MDR_ROLE_HOST)
			hosts.push_back(conn);
	// Each goes through on_disconnected() when the transport has it down.
	for (ConnId conn : hosts)
		core_.net->disconnect(conn);
}

void Node::tick()
{
	const int64_t now = core_.now();
	const Leases::Expired ex = core_.leases.expire(now);

	for (const auto &[key, conn] : ex.lapsed) {
		if (Session *s = core_.session(conn))
			s->opened.erase(key.volume_id);
		core_.stats.lease_expiries++;
		// Peers choose how many leases lapse at once (a host with many
		// volumes going silent): rate-limited, the rest counted.
		log_info_rl("lease of host %016llx on volume %llu expired",
			    (unsigned long long)key.host_id, (unsigned long long)key.volume_id);
	}
	core_.maybe_checkpoint();
	// A host whose lease ran out sends no more IO to the volume until it
	// opens it again; what it sent before is waited out io_hold_ms more.
	for (const auto &[key, conn] : ex.lapsed) {
		core_.lease_lapsed(key.volume_id, key.host_id);
		core_.drop_holder(key.volume_id, key.host_id, true);
	}
	core_.maybe_complete_holders();
	for (const LeaseKey &key : ex.gone)
		core_.lease_gone(key.volume_id, key.host_id);
	// Pushes held back go when they can; overdue ones cut their connection.
	pushes_.expire_pushes();
	auth_.expire();
	mover_.tick();
}

} // namespace mdnode
