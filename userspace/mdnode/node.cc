// SPDX-License-Identifier: GPL-2.0
//
// node.cc - see node.h.
//
// Over 800 lines because it still holds every role of the node: sessions,
// leases, pushes and their fan-out, host RPCs, admin RPCs and moves. They
// part into rooms of their own with the user-space layout issue (mdnode by
// role), which must keep every test's meaning.
#include "mdnode/node.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <utility>
#include <cstring>

#include "mdnode/log.h"

namespace mdnode {

namespace {

MDNODE_LOG_SUBSYSTEM("node");

namespace wire = mdr::wire;

// A reply never exceeds what the smallest receiver takes, except lists,
// which are cut to fit the receiver's max_msg.
constexpr size_t kReplyBuf = MDR_WIRE_MSG_MAX;
constexpr unsigned kSectorShift = 9;

std::map<uint32_t, std::string> copier_paths(const NodeOptions &opts, const Store &store)
{
	std::map<uint32_t, std::string> paths = opts.device_paths;

	if (paths.empty())
		for (const wire::Device &d : store.devices())
			paths[d.dev_id] = store.device(d.dev_id)->path;
	return paths;
}

} // namespace

Node::Node(const NodeOptions &opts, Store &store, Journal &journal,
	   std::function<int64_t()> now_ms)
	: opts_(opts), store_(store), journal_(journal), now_ms_(std::move(now_ms)),
	  start_ms_(now_ms_()), first_new_volume_(store.next_volume_id()),
	  copier_(copier_paths(opts, store), opts.copier)
{
}

uint16_t Node::on_connect(const PeerInfo &peer)
{
	if (peer.role == MDR_ROLE_ADMIN && opts_.admin_key.empty()) {
		log_warn_rl("admin connection from %s refused: no admin key configured",
			    peer.address.c_str());
		return MDR_ST_PERM;
	}
	return MDR_ST_OK;
}

void Node::on_established(const PeerInfo &peer)
{
	// The session starts here, not at on_connect: a connection that never
	// completes leaves nothing behind.
	sessions_[peer.id].peer = peer;
}

void Node::on_message(ConnId conn, std::span<const std::byte> msg)
{
	auto it = sessions_.find(conn);
	if (it == sessions_.end() || it->second.closing)
		return;
	Session &s = it->second;
	auto m = wire::parse(msg, wire::Side::node,
			     static_cast<mdr_wire_role>(s.peer.role));

	if (!m.ok()) {
		stats_.bad_messages++;
		log_warn_rl("conn %llu (%s): bad message: %s",
			    (unsigned long long)conn, s.peer.address.c_str(),
			    m.message().c_str());
		// Answer a well-framed request with a bad field or the wrong role;
		// a peer that cannot frame its messages is cut off.
		auto hdr = wire::peek_header(msg);
		if (hdr && !hdr->reply() && (m.error() == -EINVAL || m.error() == -EPERM))
			reply_error(conn, hdr->req_id, hdr->opcode, m.error());
		else
			net_->disconnect(conn);
		return;
	}
	handle(s, m.value());
	// Whatever it sent, the host is there: pushes held back after a failed
	// send try again (an ack already did, in do_ack()).
	if (!s.queued.empty())
		send_pushes(s);
}

void Node::on_disconnected(ConnId conn)
{
	auto it = sessions_.find(conn);
	if (it == sessions_.end())
		return;
	// Leases outlive the connection; they only stop pointing at it.
	for (auto &[key, lease] : leases_)
		if (lease.conn == conn)
			lease.conn = 0;
	// Pushes in flight to it will never be acked, and those held back will
	// never be sent: the fan-outs wait for the lease to expire instead
	// (tick()), or for the host to open the volume again (do_open()).
	for (uint64_t push : it->second.pushes)
		pushes_.erase(push);
	for (uint64_t push : it->second.queued)
		pushes_.erase(push);
	// What the host noted for a move may not outlive the connection: its
	// MOVE ack, on a new one, no longer counts as tracked.
	if (it->second.peer.role == MDR_ROLE_HOST)
		for (auto &[key, op] : moves_)
			op.tracked.erase(it->second.peer.host_id);
	sessions_.erase(it);
}

void Node::handle(Session &s, const wire::Msg &m)
{
	const uint64_t id = m.hdr.req_id;

	stats_.requests++;
	// Admin operations need a proven key first (the opcode table says which).
	if (!m.hdr.reply() && wire::needs_auth(m.hdr.opcode) && !s.authenticated)
		return reply_error(s.peer.id, id, m.hdr.opcode, -EPERM);
	std::visit([&](const auto &b) {
		using T = std::decay_t<decltype(b)>;
		if constexpr (std::is_same_v<T, wire::OpenReq>)
			do_open(s, id, b);
		else if constexpr (std::is_same_v<T, wire::CloseReq>)
			do_close(s, id, b);
		else if constexpr (std::is_same_v<T, wire::RenewReq>)
			do_renew(s, id, b);
		else if constexpr (std::is_same_v<T, wire::AllocReq>)
			do_alloc(s, id, b);
		else if constexpr (std::is_same_v<T, wire::InvalidateAck>)
			do_ack(s, id, b);
		else if constexpr (std::is_same_v<T, wire::AuthReq>)
			do_auth(s, id, b);
		else if constexpr (std::is_same_v<T, wire::VolCreateReq>)
			do_create(s, id, b);
		else if constexpr (std::is_same_v<T, wire::VolDeleteReq>)
			do_delete(s, id, b);
		else if constexpr (std::is_same_v<T, wire::VolResizeReq>)
			do_resize(s, id, b);
		else if constexpr (std::is_same_v<T, wire::VolInfoReq>)
			do_info(s, id, b);
		else if constexpr (std::is_same_v<T, wire::VolListReq>)
			do_vol_list(s, id, b);
		else if constexpr (std::is_same_v<T, wire::DevListReq>)
			do_dev_list(s, id, b);
		else if constexpr (std::is_same_v<T, wire::NodeStatsReq>)
			do_stats(s, id);
		else if constexpr (std::is_same_v<T, wire::MoveReq>)
			do_move(s, id, b);
		else if constexpr (std::is_same_v<T, wire::DrainReq>)
			do_drain(s, id, b);
		else if constexpr (std::is_same_v<T, wire::PingReq>)
			reply(s.peer.id, id, wire::PingRep{});
		else
			// parse() lets through only what a node receives
			reply_error(s.peer.id, id, m.hdr.opcode, -EPROTO);
	}, m.body);
}

void Node::reply(ConnId conn, uint64_t req_id, const wire::Body &body)
{
	std::vector<std::byte> buf(wire::encoded_size(body));
	auto n = wire::encode(buf, req_id, body);

	if (!n.ok()) {
		// Our own reply does not encode: a bug. Cut the connection (the
		// client retries on a new one) rather than answer with another
		// message that might not encode either.
		log_error_rl("conn %llu: cannot encode a reply: %s",
			     (unsigned long long)conn, n.message().c_str());
		net_->disconnect(conn);
		return;
	}
	auto st = net_->send(conn, std::span(buf.data(), n.value()));
	if (!st.ok() && st.error() != -ENOTCONN) {
		log_warn_rl("conn %llu: reply lost: %s", (unsigned long long)conn,
			    st.message().c_str());
		net_->disconnect(conn);
	}
}

void Node::reply_error(ConnId conn, uint64_t req_id, uint16_t opcode, int err)
{
	stats_.errors++;
	reply(conn, req_id, wire::ErrorRep{.opcode = opcode,
					   .status = wire::errno_to_status(err)});
}

bool Node::lease_valid(uint64_t volume_id, uint64_t host_id) const
{
	auto it = leases_.find({volume_id, host_id});

	return it != leases_.end() && it->second.expires_ms > now_ms_();
}

bool Node::io_possible(const Lease &l, int64_t now) const
{
	return now < l.expires_ms + int64_t(opts_.io_hold_ms);
}

// A fan-out of this reason ends with the old places unused by the host:
// data moves or places are freed. ALLOC only tells of a new place; TRACK
// only starts the noting, which a lapse makes moot (every granule is then
// copied under the freeze).
static bool waits_for_io(uint32_t reason)
{
	return reason != MDR_INVAL_ALLOC && reason != MDR_INVAL_TRACK;
}

uint32_t Node::open_count(uint64_t volume_id) const
{
	uint32_t n = 0;
	const int64_t now = now_ms_();

	for (auto it = leases_.lower_bound({volume_id, 0});
	     it != leases_.end() && it->first.volume_id == volume_id; ++it)
		if (it->second.expires_ms > now)
			n++;
	return n;
}

void Node::do_open(Session &s, uint64_t req_id, const wire::OpenReq &r)
{
	if (s.peer.role != MDR_ROLE_HOST)
		return reply_error(s.peer.id, req_id, MDR_OP_OPEN, -EPERM);
	const Volume *v = (r.flags & MDR_OPEN_F_BY_NAME) ? store_.volume(r.name)
							 : store_.volume(r.volume_id);
	// Another tenant's volume does not exist, as far as this host can tell.
	if (!v || v->tenant != s.peer.tenant)
		return reply_error(s.peer.id, req_id, MDR_OP_OPEN, -ENOENT);
	// A delete or resize checked the leases and waits for its journal
	// write: a lease granted now would outlive the table it covers.
	if (store_.changing(v->id))
		return reply_error(s.peer.id, req_id, MDR_OP_OPEN, -EBUSY);

	auto rkey = net_->table_rkey(s.peer.id, v->id, v->table.data(), v->table.bytes());
	if (!rkey.ok()) {
		log_error("volume %llu: cannot register its table: %s",
			  (unsigned long long)v->id, rkey.message().c_str());
		return reply_error(s.peer.id, req_id, MDR_OP_OPEN, -ENOMEM);
	}
	leases_[{v->id, s.peer.host_id}] = Lease{
		.expires_ms = now_ms_() + opts_.lease_ms + opts_.drift_margin_ms,
		.conn = s.peer.id,
	};
	s.opened.insert(v->id);
	reply(s.peer.id, req_id, wire::OpenRep{
		.volume_id = v->id,
		.size = v->size,
		.table_addr = reinterpret_cast<uintptr_t>(v->table.data()),
		.table_len = v->table.bytes(),
		.table_rkey = rkey.value(),
		.extent_shift = v->extent_shift,
		.lease_ms = opts_.lease_ms,
		.generation = v->generation,
		.name = v->name,
	});
	// A host that reconnects and opens again renews its lease, so a
	// fan-out still waiting for it would wait for ever; and the push it
	// had was lost with the old connection, while the host may still hold
	// the old entry in its cache. It gets the push again, on the new
	// connection, once the volume is open there (within its push credits,
	// behind what is queued already; not twice on one connection).
	const uint64_t vol = v->id;
	std::vector<uint64_t> untracked;

	moves_lease_changed(vol, s.peer.host_id, true);
	for (auto &[fid, f] : fan_outs_) {
		if (f.volume_id != vol || !f.hosts.count(s.peer.host_id))
			continue;
		// TRACK only goes to version 2: on version 1 the host is not
		// tracked, and moves copy what it may have written.
		if (f.inv.reason == MDR_INVAL_TRACK && s.peer.version < 2)
			untracked.push_back(fid);
		else
			push(fid, s.peer.host_id, s);
	}
	for (uint64_t fid : untracked)
		settle(fid, s.peer.host_id, Settled{});
}

void Node::do_close(Session &s, uint64_t req_id, const wire::CloseReq &r)
{
	if (s.peer.role != MDR_ROLE_HOST)
		return reply_error(s.peer.id, req_id, MDR_OP_CLOSE, -ENOENT);
	// A lease that lapsed here (tick() took the volume off the session)
	// is closed too on the connection that held it: a host drains its IO
	// to the volume before it sends CLOSE, so nothing is left to wait out.
	auto l = leases_.find({r.volume_id, s.peer.host_id});
	const bool lapsed = l != leases_.end() && l->second.lapsed && l->second.conn == s.peer.id;
	if (!s.opened.erase(r.volume_id) && !lapsed)
		return reply_error(s.peer.id, req_id, MDR_OP_CLOSE, -ENOENT);
	leases_.erase({r.volume_id, s.peer.host_id});
	reply(s.peer.id, req_id, wire::CloseRep{});
	// Without a lease it is no longer waited for, ack or not.
	lease_gone(r.volume_id, s.peer.host_id);
}

void Node::do_renew(Session &s, uint64_t req_id, const wire::RenewReq &r)
{
	const int64_t now = now_ms_();
	std::vector<uint64_t> vols;

	if (s.peer.role != MDR_ROLE_HOST)
		return reply_error(s.peer.id, req_id, MDR_OP_RENEW, -EPERM);
	if (r.volume_id)
		vols.push_back(r.volume_id);
	else
		vols.assign(s.opened.begin(), s.opened.end());
	// A lease that lapsed may already have let a migration go ahead: the
	// host must open again and re-read, not just extend.
	for (uint64_t v : vols)
		if (!s.opened.count(v) || !lease_valid(v, s.peer.host_id))
			return reply_error(s.peer.id, req_id, MDR_OP_RENEW, -ESTALE);
	for (uint64_t v : vols) {
		Lease &l = leases_[{v, s.peer.host_id}];
		l.expires_ms = now + opts_.lease_ms + opts_.drift_margin_ms;
		l.conn = s.peer.id;
	}
	reply(s.peer.id, req_id, wire::RenewRep{.lease_ms = opts_.lease_ms});
}

void Node::do_alloc(Session &s, uint64_t req_id, const wire::AllocReq &r)
{
	const ConnId conn = s.peer.id;
	const uint64_t host = s.peer.host_id;

	if (s.peer.role != MDR_ROLE_HOST)
		return reply_error(conn, req_id, MDR_OP_ALLOC, -EPERM);
	if (!s.opened.count(r.volume_id) || !lease_valid(r.volume_id, host))
		return reply_error(conn, req_id, MDR_OP_ALLOC, -ESTALE);

	auto key = std::make_pair(r.volume_id, r.index);
	auto waiting = alloc_waiters_.find(key);
	if (waiting != alloc_waiters_.end()) {
		// The same extent is being allocated: answer with its result.
		waiting->second.emplace_back(conn, req_id);
		return;
	}
	auto prep = store_.prepare_alloc(r.volume_id, r.index);
	if (!prep.ok())
		return reply_error(conn, req_id, MDR_OP_ALLOC, prep.error());
	if (auto *entry = std::get_if<mdr_wire_entry>(&prep.value())) {
		// Already mapped: idempotent.
		return reply(conn, req_id, wire::AllocRep{.volume_id = r.volume_id,
							  .index = r.index,
							  .entry = wire::decode_entry(*entry)});
	}

	alloc_waiters_[key].emplace_back(conn, req_id);
	auto finish = [this, key](int err, const mdr_wire_entry &entry) {
		auto node = alloc_waiters_.extract(key);

		for (auto [c, id] : node.mapped()) {
			if (err)
				reply_error(c, id, MDR_OP_ALLOC, err);
			else
				reply(c, id, wire::AllocRep{.volume_id = key.first,
							    .index = key.second,
							    .entry = wire::decode_entry(entry)});
		}
	};
	change(std::move(std::get<Change>(prep.value())),
	       [this, key, host, finish](int err, const Applied *applied) {
		if (err)
			return finish(err, {});
		// Other holders may cache this extent as unallocated and would
		// read zeros where data now is: they hear of it before the
		// writer gets its answer.
		const mdr_wire_entry entry = applied->entry;
		fan_out(key.first, key.second, 1, wire::decode_entry(entry).generation,
			MDR_INVAL_ALLOC, host, [finish, entry] { finish(0, entry); });
	});
}

void Node::do_ack(Session &s, uint64_t req_id, const wire::InvalidateAck &r)
{
	// The ack's form is the session's version's, and a dirty mask names
	// granules of the extent only: otherwise the ack is refused as a
	// malformed message is (parse() checked the rest).
	std::string bad;
	const Volume *v = store_.volume(r.volume_id);

	if (r.extended != (s.peer.version >= 2))
		bad = std::string(r.extended ? "80" : "64") + "-byte ack on version " +
		      std::to_string(s.peer.version);
	else if (v && wire::track_granules(v->extent_shift) < 64 &&
		 r.dirty >> wire::track_granules(v->extent_shift))
		bad = "dirty granules beyond the extent's " +
		      std::to_string(wire::track_granules(v->extent_shift));
	if (!bad.empty()) {
		stats_.bad_messages++;
		log_warn_rl("conn %llu (%s): bad message: inval_ack: %s",
			    (unsigned long long)s.peer.id, s.peer.address.c_str(),
			    bad.c_str());
		net_->disconnect(s.peer.id);
		return;
	}

	auto it = pushes_.find(req_id);

	if (it == pushes_.end() || !s.pushes.erase(req_id)) {
		// Late ack of a push we gave up on, or a host making things up.
		log_warn_rl("conn %llu: ack of unknown push %llu",
			    (unsigned long long)s.peer.id, (unsigned long long)req_id);
		return;
	}
	const Push p = it->second;
	pushes_.erase(it);
	// The host gave its credit back (it counts the push as done before it
	// sends the ack): the next push held back for it goes now.
	send_pushes(s);
	settle(p.fan_out_id, p.host_id,
	       Settled{.acked = true, .flags = r.flags, .dirty = r.dirty});
}

void Node::fan_out(uint64_t volume_id, uint64_t first, uint64_t count,
		   uint64_t generation, uint32_t reason,
		   std::optional<uint64_t> except_host, std::function<void()> done,
		   std::function<void(uint64_t host_id, const Settled &)> settled)
{
	const uint64_t id = next_fan_out_++;
	FanOut &f = fan_outs_[id];
	const int64_t now = now_ms_();
	std::vector<uint64_t> dropped;

	f.volume_id = volume_id;
	f.done = std::move(done);
	f.settled = std::move(settled);
	f.inv.volume_id = volume_id;
	f.inv.first = first;
	f.inv.count = count;
	f.inv.generation = generation;
	f.inv.reason = reason;
	for (auto it = leases_.lower_bound({volume_id, 0});
	     it != leases_.end() && it->first.volume_id == volume_id; ++it) {
		const uint64_t host = it->first.host_id;

		// A lapsed holder too, while its old IO may still land.
		if (host == except_host ||
		    (it->second.expires_ms <= now &&
		     !(waits_for_io(reason) && io_possible(it->second, now))))
			continue;
		if (opts_.test_drop_invalidations) {
			stats_.invalidations_dropped++;
			log_warn("test: invalidation of volume %llu extents %llu+%llu "
				 "(generation %llu, reason %u) for host %016llx dropped",
				 (unsigned long long)volume_id, (unsigned long long)first,
				 (unsigned long long)count, (unsigned long long)generation,
				 reason, (unsigned long long)host);
			dropped.push_back(host);
			continue;
		}
		f.hosts.insert(host);
		auto sit = sessions_.find(it->second.conn);
		if (sit == sessions_.end())
			continue;	// not connected: its lease expires
		// Sent within the host's push credits, or held back until an ack
		// or tick() lets it go; a host that never acks loses its
		// connection after a lease period (expire_pushes()).
		push(id, host, sit->second);
	}
	// As if acked, but without what an ack says.
	if (f.settled)
		for (uint64_t host : dropped)
			f.settled(host, Settled{});
	if (f.hosts.empty()) {
		auto d = std::move(f.done);
		fan_outs_.erase(id);
		d();
	}
}

void Node::push(uint64_t fan_out_id, uint64_t host_id, Session &s)
{
	auto same = [&](uint64_t id) {
		const Push &p = pushes_.at(id);
		return p.fan_out_id == fan_out_id && p.host_id == host_id;
	};

	if (std::ranges::any_of(s.pushes, same) || std::ranges::any_of(s.queued, same))
		return;
	const uint64_t id = next_push_++;
	pushes_[id] = Push{.fan_out_id = fan_out_id, .host_id = host_id, .since_ms = now_ms_()};
	s.queued.push_back(id);
	send_pushes(s);
}

bool Node::push_wanted(const Push &p) const
{
	auto it = fan_outs_.find(p.fan_out_id);

	return it != fan_outs_.end() && it->second.hosts.count(p.host_id);
}

// The kernel ends the connection on a push beyond its push credits
// (mdr_push_recv), so no more than push_credits are ever unacked; and a push
// is never given up while the host keeps its lease: the fan-out would wait
// for ever. What cannot go now stays queued, in order.
void Node::send_pushes(Session &s)
{
	while (!s.closing && !s.queued.empty() && s.pushes.size() < s.peer.push_credits) {
		const uint64_t id = s.queued.front();
		auto it = pushes_.find(id);

		if (!push_wanted(it->second)) {
			// Its fan-out ended, or stopped waiting for this host.
			pushes_.erase(it);
			s.queued.pop_front();
			continue;
		}

		const wire::Invalidate &inv = fan_outs_.at(it->second.fan_out_id).inv;
		std::vector<std::byte> buf(wire::encoded_size(inv));
		auto n = wire::encode(buf, id, inv);

		if (!n.ok()) {
			// A bug: it stays queued, and expire_pushes() cuts the
			// connection rather than let the fan-out hang.
			log_error_rl("conn %llu: cannot encode a push: %s",
				     (unsigned long long)s.peer.id, n.message().c_str());
			return;
		}
		auto st = net_->send(s.peer.id, std::span(buf.data(), n.value()));
		if (!st.ok()) {
			// -ENOBUFS: every send buffer is in use, for a moment.
			// The next ack or tick() tries again. -ENOTCONN: the
			// connection is going, and its pushes with it.
			if (st.error() != -ENOTCONN)
				log_warn_rl("conn %llu: push held back: %s",
					    (unsigned long long)s.peer.id,
					    st.message().c_str());
			return;
		}
		s.queued.pop_front();
		s.pushes.insert(id);
		stats_.invalidations++;
	}
}

// A host that keeps renewing its lease but does not ack a push (or whose
// push could not be sent) would hold the fan-out, and the ALLOC or MOVE
// behind it, for ever. A push is overdue once it has waited as long as
// mdnode holds a lease without a renewal (lease_ms + margin): a host that
// stopped renewing has lost its lease by then (tick() reaps leases first),
// so only one that renews and does not do its part is cut off. The lease
// then no longer points at a connection, and the fan-out waits for it to
// run out or for the host to open the volume again on a new connection,
// where the push is sent again (do_open()).
void Node::expire_pushes()
{
	const int64_t now = now_ms_();
	const int64_t overdue = int64_t(opts_.lease_ms) + int64_t(opts_.drift_margin_ms);
	std::vector<ConnId> cut;

	for (auto &[conn, s] : sessions_) {
		if (s.closing)
			continue;
		// Held back for a fan-out that no longer waits for this host:
		// never to be sent.
		std::erase_if(s.queued, [&](uint64_t id) {
			auto it = pushes_.find(id);
			if (push_wanted(it->second))
				return false;
			pushes_.erase(it);
			return true;
		});
		send_pushes(s);

		// Only pushes a fan-out still waits for: a sent one it stopped
		// waiting for holds a credit, and what waits behind it is
		// overdue in its turn. And only to a host that holds its lease:
		// one whose lease lapsed may be slow to ack because its devices
		// still hold its IO, which io_hold_ms waits out; cutting it off
		// would cost every volume on the connection its pushes.
		auto overdue_for = [&](const Push &p) {
			return push_wanted(p) &&
			       lease_valid(fan_outs_.at(p.fan_out_id).volume_id, p.host_id);
		};
		int64_t oldest = now;
		for (uint64_t id : s.pushes)
			if (const Push &p = pushes_.at(id); overdue_for(p))
				oldest = std::min(oldest, p.since_ms);
		for (uint64_t id : s.queued)
			if (const Push &p = pushes_.at(id); overdue_for(p))
				oldest = std::min(oldest, p.since_ms);
		if (now - oldest < overdue)
			continue;
		stats_.push_timeouts++;
		log_warn_rl("conn %llu (%s, host %016llx): a push not acked after %lld ms "
			    "while the host holds its lease (%zu sent, %zu held back, "
			    "%u credits): disconnecting",
			    (unsigned long long)conn, s.peer.address.c_str(),
			    (unsigned long long)s.peer.host_id, (long long)(now - oldest),
			    s.pushes.size(), s.queued.size(), s.peer.push_credits);
		// Nothing it sends counts any more (a RENEW in particular), as
		// with the transport once it closes the connection.
		s.closing = true;
		cut.push_back(conn);
	}
	for (ConnId conn : cut) {
		for (auto &[key, lease] : leases_)
			if (lease.conn == conn)
				lease.conn = 0;
		net_->disconnect(conn);
	}
}

void Node::settle(uint64_t fan_out_id, uint64_t host_id, const Settled &how)
{
	auto it = fan_outs_.find(fan_out_id);

	if (it == fan_outs_.end() || !it->second.hosts.erase(host_id))
		return;
	if (it->second.settled)
		it->second.settled(host_id, how);
	if (it->second.hosts.empty()) {
		auto done = std::move(it->second.done);
		fan_outs_.erase(it);
		done();
	}
}

void Node::tick()
{
	const int64_t now = now_ms_();
	std::vector<std::pair<uint64_t, uint64_t>> lapsed, gone;	// (volume, host)

	for (auto it = leases_.begin(); it != leases_.end();) {
		Lease &l = it->second;

		if (!l.lapsed && l.expires_ms <= now) {
			l.lapsed = true;
			lapsed.emplace_back(it->first.volume_id, it->first.host_id);
			auto s = sessions_.find(l.conn);
			if (s != sessions_.end())
				s->second.opened.erase(it->first.volume_id);
			stats_.lease_expiries++;
			log_info("lease of host %016llx on volume %llu expired",
				 (unsigned long long)it->first.host_id,
				 (unsigned long long)it->first.volume_id);
		}
		if (l.lapsed && !io_possible(l, now)) {
			gone.emplace_back(it->first.volume_id, it->first.host_id);
			it = leases_.erase(it);
		} else {
			++it;
		}
	}
	// A host whose lease ran out sends no more IO to the volume until it
	// opens it again; what it sent before is waited out io_hold_ms more.
	maybe_checkpoint();
	for (auto [volume, host] : lapsed)
		lease_lapsed(volume, host);
	for (auto [volume, host] : gone)
		lease_gone(volume, host);
	// Pushes held back go when they can; overdue ones cut their connection.
	expire_pushes();
	if (!deferred_moves_.empty() && !in_restart_grace()) {
		auto deferred = std::exchange(deferred_moves_, {});
		for (auto &start : deferred)
			start();
	}
	// Moves whose holders all acked during the restart grace go on now.
	std::vector<MoveKey> ready;
	for (const auto &[key, op] : moves_)
		if (op.state == MoveOp::State::draining && op.acked && !in_restart_grace())
			ready.push_back(key);
	for (MoveKey key : ready)
		move_drained(key);
}

void Node::lease_lapsed(uint64_t volume_id, uint64_t host_id)
{
	std::vector<uint64_t> ids;

	moves_lease_changed(volume_id, host_id, false);
	for (auto &[id, f] : fan_outs_)
		if (f.volume_id == volume_id && f.hosts.count(host_id) &&
		    !waits_for_io(f.inv.reason))
			ids.push_back(id);
	for (uint64_t id : ids)
		settle(id, host_id, Settled{});
}

void Node::lease_gone(uint64_t volume_id, uint64_t host_id)
{
	std::vector<uint64_t> ids;

	moves_lease_changed(volume_id, host_id, false);
	for (auto &[id, f] : fan_outs_)
		if (f.volume_id == volume_id && f.hosts.count(host_id))
			ids.push_back(id);
	for (uint64_t id : ids)
		settle(id, host_id, Settled{});
}

void Node::change(Change c, std::function<void(int err, const Applied *applied)> done)
{
	auto shared = std::make_shared<Change>(std::move(c));

	auto queued = journal_.append(shared->type, std::as_bytes(std::span(shared->payload)),
				      [this, shared, done](const mdr::Status &st) {
		if (!st.ok()) {
			log_error("journal write failed: %s; change refused",
				  st.message().c_str());
			(void)store_.abort(*shared);
			return done(-EIO, nullptr);
		}
		auto applied = store_.commit(*shared);
		if (!applied.ok()) {
			// The journal now holds a change the state cannot take: a
			// bug. Stop, and let recovery rebuild from the journal.
			log_error("cannot apply a journaled change: %s",
				  applied.message().c_str());
			std::abort();
		}
		records_since_checkpoint_++;
		done(0, &applied.value());
	});
	if (!queued.ok()) {
		// The journal is read-only after a write error: fail-stop for
		// changes, while reads of the tables go on.
		log_error_rl("journal refuses the change: %s", queued.message().c_str());
		(void)store_.abort(*shared);
		done(-EIO, nullptr);
	}
}

// From tick(), never from a journal callback (the journal refuses), and
// only with no change in flight, so the snapshot holds exactly what the
// journal holds.
void Node::maybe_checkpoint()
{
	// A snapshot holds mapped entries only: none while an extent moves.
	if (records_since_checkpoint_ < opts_.checkpoint_records ||
	    store_.counts().in_flight || store_.counts().moving)
		return;
	const std::vector<uint8_t> snap = store_.snapshot();
	auto st = journal_.checkpoint(std::as_bytes(std::span(snap)));
	if (!st.ok()) {
		log_error("checkpoint failed: %s", st.message().c_str());
		return;
	}
	records_since_checkpoint_ = 0;
}

void Node::do_auth(Session &s, uint64_t req_id, const wire::AuthReq &r)
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int mac_len = 0;
	unsigned char msg[16 + 8];
	uint64_t host_le = htole64(s.peer.host_id);

	if (s.peer.role != MDR_ROLE_ADMIN)
		return reply_error(s.peer.id, req_id, MDR_OP_AUTH, -EPERM);
	std::memcpy(msg, s.peer.nonce.data(), 16);
	std::memcpy(msg + 16, &host_le, 8);
	if (!HMAC(EVP_sha256(), opts_.admin_key.data(), int(opts_.admin_key.size()),
		  msg, sizeof(msg), mac, &mac_len) || mac_len != r.mac.size() ||
	    CRYPTO_memcmp(mac, r.mac.data(), mac_len) != 0) {
		stats_.auth_failures++;
		log_warn_rl("admin %s: authentication failed", s.peer.address.c_str());
		reply_error(s.peer.id, req_id, MDR_OP_AUTH, -EPERM);
		net_->disconnect(s.peer.id);
		return;
	}
	s.authenticated = true;
	reply(s.peer.id, req_id, wire::AuthRep{});
}

wire::Volume Node::describe(const Volume &v) const
{
	return wire::Volume{
		.volume_id = v.id,
		.size = v.size,
		.allocated = v.allocated,
		.extent_shift = v.extent_shift,
		.tenant = v.tenant,
		.open_count = open_count(v.id),
		.name = v.name,
	};
}

wire::VolumeReply Node::volume_reply(const Volume &v) const
{
	return wire::VolumeReply{.vol = describe(v), .devs = store_.extents_by_device(v)};
}

void Node::do_create(Session &s, uint64_t req_id, const wire::VolCreateReq &r)
{
	const ConnId conn = s.peer.id;
	auto prep = store_.prepare_create(r.name, r.size, r.extent_shift, r.tenant);

	if (!prep.ok())
		return reply_error(conn, req_id, MDR_OP_VOL_CREATE, prep.error());
	change(std::move(prep.value()), [this, conn, req_id](int err, const Applied *applied) {
		const Volume *v = err ? nullptr : store_.volume(applied->volume_id);
		if (!v)
			return reply_error(conn, req_id, MDR_OP_VOL_CREATE, err ? err : -EIO);
		log_info("volume %llu '%s' created", (unsigned long long)v->id, v->name.c_str());
		wire::VolCreateRep rep;
		static_cast<wire::VolumeReply &>(rep) = volume_reply(*v);
		reply(conn, req_id, rep);
	});
}

void Node::drop_leases(uint64_t volume_id)
{
	std::vector<uint64_t> hosts;

	for (auto it = leases_.lower_bound({volume_id, 0});
	     it != leases_.end() && it->first.volume_id == volume_id;) {
		hosts.push_back(it->first.host_id);
		it = leases_.erase(it);
	}
	for (auto &[id, s] : sessions_)
		s.opened.erase(volume_id);
	for (uint64_t host : hosts)
		lease_gone(volume_id, host);
}

// Delete and resize replace or free the volume's table and its extents:
// refused while any host holds a lease, since hosts may have IO in flight
// to the extents and READ the table. done(id) runs once the change is
// durable and applied, and the table is no longer registered.
void Node::change_unopened(ConnId conn, uint64_t req_id, uint16_t opcode,
			   const std::string &name,
			   const std::function<mdr::Result<Change>(uint64_t id)> &prepare,
			   std::function<void(uint64_t id)> done)
{
	const Volume *v = store_.volume(name);

	if (!v)
		return reply_error(conn, req_id, opcode, -ENOENT);
	// Until online delete and resize push the change to hosts, they close
	// the volume first (or their leases lapse, and their IO is waited out).
	// Leases from before a start are unknown: waited out as a whole.
	if (v->id < first_new_volume_ && in_restart_grace())
		return reply_error(conn, req_id, opcode, -EBUSY);
	const int64_t now = now_ms_();
	for (auto it = leases_.lower_bound({v->id, 0});
	     it != leases_.end() && it->first.volume_id == v->id; ++it)
		if (io_possible(it->second, now))
			return reply_error(conn, req_id, opcode, -EBUSY);
	const uint64_t id = v->id;
	auto prep = prepare(id);
	if (!prep.ok())
		return reply_error(conn, req_id, opcode, prep.error());
	change(std::move(prep.value()),
	       [this, conn, req_id, opcode, id, done = std::move(done)](int err, const Applied *) {
		if (err)
			return reply_error(conn, req_id, opcode, err);
		// Nobody READs the old table once it is deregistered; it is
		// unmapped when the Applied that holds it goes.
		net_->forget_table(id);
		done(id);
	});
}

void Node::do_delete(Session &s, uint64_t req_id, const wire::VolDeleteReq &r)
{
	const ConnId conn = s.peer.id;

	change_unopened(conn, req_id, MDR_OP_VOL_DELETE, r.name,
			[this](uint64_t id) { return store_.prepare_delete(id); },
			[this, conn, req_id](uint64_t id) {
		drop_leases(id);
		log_info("volume %llu deleted", (unsigned long long)id);
		reply(conn, req_id, wire::VolDeleteRep{});
	});
}

void Node::do_resize(Session &s, uint64_t req_id, const wire::VolResizeReq &r)
{
	const ConnId conn = s.peer.id;

	change_unopened(conn, req_id, MDR_OP_VOL_RESIZE, r.name,
			[this, &r](uint64_t id) { return store_.prepare_resize(id, r.size); },
			[this, conn, req_id](uint64_t id) {
		wire::VolResizeRep rep;
		static_cast<wire::VolumeReply &>(rep) = volume_reply(*store_.volume(id));
		reply(conn, req_id, rep);
	});
}

void Node::do_info(Session &s, uint64_t req_id, const wire::VolInfoReq &r)
{
	const Volume *v = store_.volume(r.name);

	if (!v)
		return reply_error(s.peer.id, req_id, MDR_OP_VOL_INFO, -ENOENT);
	wire::VolInfoRep rep;
	static_cast<wire::VolumeReply &>(rep) = volume_reply(*v);
	reply(s.peer.id, req_id, rep);
}

void Node::do_vol_list(Session &s, uint64_t req_id, const wire::VolListReq &r)
{
	// As many as the client receives: header, cursor and count, then 104
	// bytes a volume.
	const size_t room = (s.peer.max_msg - sizeof(mdr_wire_vol_list_rep)) /
			    sizeof(mdr_wire_volume);
	wire::VolListRep rep;

	VolumePage page = store_.list_volumes(r.cursor, room);
	for (const Volume *v : page.volumes)
		rep.vols.push_back(describe(*v));
	rep.next = page.next;
	reply(s.peer.id, req_id, rep);
}

void Node::do_dev_list(Session &s, uint64_t req_id, const wire::DevListReq &r)
{
	const size_t room = (s.peer.max_msg - sizeof(mdr_wire_dev_list_rep)) /
			    sizeof(mdr_wire_device);
	wire::DevListRep rep;

	for (const wire::Device &d : store_.devices()) {
		if (d.dev_id < r.cursor)
			continue;
		if (rep.devs.size() == room) {
			rep.next = d.dev_id;
			break;
		}
		rep.devs.push_back(d);
	}
	reply(s.peer.id, req_id, rep);
}

void Node::do_stats(Session &s, uint64_t req_id)
{
	const auto &js = journal_.stats();

	reply(s.peer.id, req_id, wire::NodeStatsRep{
		.boot_id = opts_.boot_id,
		.uptime_ms = uint64_t(now_ms_() - start_ms_),
		.connections = sessions_.size(),
		.volumes = store_.counts().volumes,
		.requests = stats_.requests,
		.errors = stats_.errors,
		.bad_messages = stats_.bad_messages,
		.journal_records = js.records,
		.journal_bytes = js.bytes,
		.journal_syncs = js.syncs,
		.invalidations = stats_.invalidations,
		.lease_expiries = stats_.lease_expiries,
		.moves_active = moves_.size(),
		.moves_done = stats_.moves_done,
		.moves_failed = stats_.moves_failed,
		.move_bytes = stats_.move_bytes,
		.stall_max_us = stats_.stall_max_us,
		.stall_total_us = stats_.stall_total_us,
		.push_timeouts = stats_.push_timeouts,
		.precopy_bytes = stats_.precopy_bytes,
		.freeze_bytes = stats_.freeze_bytes,
	});
}

// ---------------------------------------------------------------------------
// Moves. The consistency rule: the data of an extent is copied only once
// every host that may send IO to its old place has acknowledged the
// invalidation (and drained) or lost its lease; the old place is freed
// only once the new one is durable, journaled and in the table.
//
// The pre-copy bends it for what is copied twice. Before the freeze, with
// every lease holder on version 2, the extent is copied while hosts still
// write it; under the freeze (the rule above holds there: every holder
// acked MOVE or lost its lease) only the granules the holders report are
// copied again. A granule not copied again was not written since the
// pre-copy read it:
//  - each holder acks TRACK only once its writes to the extent submitted
//    before the push have completed, and notes every write it submits
//    after the push; the pre-copy starts after the last TRACK ack (or
//    lease loss), so a write either completed before the pre-copy read its
//    granule, or is noted;
//  - a holder acks MOVE only once its writes have drained, with the
//    granules noted since its TRACK ack: every noted write is done and
//    reported before the copy under the freeze reads;
//  - a write by any other host would not be reported, so every granule is
//    copied again whenever one could have happened: a MOVE ack without
//    MDR_INVAL_ACK_F_TRACKED, or from a host that did not ack TRACK (a
//    lease expiry settled it) or lost its connection since; a holder of
//    the MOVE settled by its lease instead of an ack; any lease on the
//    volume granted or lost between the TRACK push and the MOVE push (a
//    new holder writes untracked; a lost one never reports its notes).
//    Once the MOVE push is out the extent is frozen: a new holder waits.

void Node::MoveTotals::add(const wire::MovedExtent &x, uint64_t extent_bytes)
{
	moved++;
	bytes += extent_bytes;
	stall_max_us = std::max<uint64_t>(stall_max_us, x.stall_us);
	stall_total_us += x.stall_us;
}

// Leases granted before a restart are unknown to this process, but their
// holders may still have IO in flight to the places they cached: no data
// moves until every such lease has run out and its IO can no longer land.
bool Node::in_restart_grace() const
{
	return now_ms_() < start_ms_ + int64_t(opts_.lease_ms) + int64_t(opts_.drift_margin_ms) +
				   int64_t(opts_.io_hold_ms);
}

namespace {

uint64_t all_granules(unsigned granules)
{
	return granules >= 64 ? ~uint64_t{0} : (uint64_t{1} << granules) - 1;
}

} // namespace

bool Node::can_precopy(uint64_t volume_id) const
{
	const int64_t now = now_ms_();

	for (auto it = leases_.lower_bound({volume_id, 0});
	     it != leases_.end() && it->first.volume_id == volume_id; ++it) {
		if (it->second.expires_ms <= now)
			continue;
		auto s = sessions_.find(it->second.conn);
		if (s == sessions_.end() || s->second.closing || s->second.peer.version < 2)
			return false;
	}
	return true;
}

// The pre-copy (Documentation/migration.md): when every holder can note
// its writes, the extent is copied to a place reserved for it while hosts
// keep using it, and under the freeze only the granules they wrote since
// are copied again. Otherwise, or when anything about the holders changes
// meanwhile, the whole extent is copied under the freeze.
void Node::move_extent(uint64_t volume_id, uint64_t index, uint32_t to_dev,
		       std::function<void(int err, const wire::MovedExtent &)> done)
{
	if (in_restart_grace()) {
		deferred_moves_.push_back([this, volume_id, index, to_dev,
					   done = std::move(done)]() mutable {
			move_extent(volume_id, index, to_dev, std::move(done));
		});
		return;
	}

	const MoveKey key{volume_id, index};
	const bool precopy = can_precopy(volume_id);
	std::optional<Change> begin;
	uint64_t place = 0;

	if (precopy) {
		// Not journaled: a crash before MOVE_BEGIN loses only the
		// reservation, and what the pre-copy wrote is in free space.
		auto r = store_.reserve_move(volume_id, index, to_dev);
		if (!r.ok()) {
			log_warn_rl("move refused: %s", r.message().c_str());
			return done(r.error(), {});
		}
		place = r.value();
	} else {
		auto prep = store_.prepare_move(volume_id, index, to_dev);
		if (!prep.ok()) {
			log_warn_rl("move refused: %s", prep.message().c_str());
			return done(prep.error(), {});
		}
		begin = std::move(prep.value());
	}

	MoveOp &op = moves_[key];
	const Volume *v = store_.volume(volume_id);

	op.done = std::move(done);
	op.to_dev = to_dev;
	op.extent_shift = v->extent_shift;
	op.granule_shift = wire::track_granule_shift(op.extent_shift);
	op.granules = wire::track_granules(op.extent_shift);
	op.dirty = all_granules(op.granules);
	op.t.start = mono_us();
	if (!precopy) {
		op.t.tracked = op.t.precopied = op.t.start;
		return move_begin(key, std::move(*begin));
	}

	const wire::Entry e = wire::decode_entry(v->table.entries()[index]);

	op.precopy = true;
	op.dirty = 0;
	op.state = MoveOp::State::tracking;
	op.where = Move{.volume_id = volume_id, .index = index,
			.old_dev = e.dev_id, .new_dev = to_dev,
			.old_pstart = e.pstart, .new_pstart = place,
			.generation = e.generation};
	fan_out(volume_id, index, 1, e.generation, MDR_INVAL_TRACK, std::nullopt,
		[this, key] { move_tracked(key); },
		[this, key](uint64_t host, const Settled &how) {
		// Settled by its lease, the host notes nothing for this move.
		auto it = moves_.find(key);
		if (it != moves_.end() && how.acked)
			it->second.tracked.insert(host);
	});
}

// Every holder acked TRACK (each noting its writes from the push on, its
// writes from before it complete) or lost its lease: the pre-copy reads
// the extent from now on.
void Node::move_tracked(MoveKey key)
{
	MoveOp &op = moves_.at(key);
	const CopyJob job{
		.src_dev = op.where.old_dev,
		.src_off = op.where.old_pstart << kSectorShift,
		.dst_dev = op.where.new_dev,
		.dst_off = op.where.new_pstart << kSectorShift,
		.len = uint64_t{1} << op.extent_shift,
		// The fdatasync under the freeze makes it durable too.
		.sync = false,
		// Copies under a freeze, which IO waits for, go first.
		.background = true,
	};

	op.t.tracked = mono_us();
	op.state = MoveOp::State::precopying;
	copier_.start(job, [this, key](int err, const CopyTimes &) {
		move_precopied(key, err);
	});
}

void Node::move_precopied(MoveKey key, int err)
{
	MoveOp &op = moves_.at(key);

	op.t.precopied = mono_us();
	if (err) {
		// Nothing journaled: the reserved place is free again.
		store_.release_move(key.first, key.second);
		return move_finish(key, -EIO);
	}

	auto prep = store_.prepare_move(key.first, key.second, op.to_dev);

	if (!prep.ok()) {
		store_.release_move(key.first, key.second);
		log_warn_rl("move refused: %s", prep.message().c_str());
		return move_finish(key, prep.error());
	}
	move_begin(key, std::move(prep.value()));
}

void Node::move_begin(MoveKey key, Change begin)
{
	MoveOp &op = moves_.at(key);

	op.state = MoveOp::State::freezing;
	op.t.asked = mono_us();
	change(std::move(begin), [this, key](int err, const Applied *) {
		if (err)
			return move_finish(key, err);	// nothing changed
		move_frozen(key);
	});
}

// Until its MOVE push goes out, a move trusts no host's notes once a lease
// on the volume was granted (the new holder may write untracked) or lost
// (its holder's notes are never acked). Afterwards the extent is frozen
// and new holders wait; a host that opens again may have lost its notes.
void Node::moves_lease_changed(uint64_t volume_id, uint64_t host_id, bool opened)
{
	for (auto &[key, op] : moves_) {
		if (key.first != volume_id || !op.precopy)
			continue;
		switch (op.state) {
		case MoveOp::State::tracking:
		case MoveOp::State::precopying:
		case MoveOp::State::freezing:
			op.dirty = all_granules(op.granules);
			break;
		default:
			if (opened)
				op.tracked.erase(host_id);
			break;
		}
	}
}

// MOVE_BEGIN is durable and the table holds the extent FROZEN at g1: hosts
// that READ it now wait. Those that cached it are told, and drain. After a
// pre-copy, each ack says what its host wrote since its TRACK ack.
void Node::move_frozen(MoveKey key)
{
	MoveOp &op = moves_.at(key);
	const Move &m = *store_.move(key.first, key.second);

	// MOVE_BEGIN took the place the pre-copy wrote (prepare_move() on a
	// reserved place): were it another, all of it would be copied.
	if (op.precopy && (m.new_dev != op.where.new_dev || m.new_pstart != op.where.new_pstart))
		op.dirty = all_granules(op.granules);
	op.where = m;
	op.state = MoveOp::State::draining;
	op.frozen_ms = now_ms_();
	op.t.frozen = mono_us();
	fan_out(key.first, key.second, 1, op.where.generation, MDR_INVAL_MOVE,
		std::nullopt, [this, key] {
		auto it = moves_.find(key);
		if (it == moves_.end())
			return;
		it->second.acked = true;
		it->second.t.acked = mono_us();
		move_drained(key);
	}, [this, key](uint64_t host, const Settled &how) {
		auto it = moves_.find(key);
		if (it == moves_.end())
			return;
		MoveOp &o = it->second;
		// Only a host that acked TRACK, kept its lease and its
		// connection, and says it noted every write, is believed.
		if (o.precopy && how.acked && (how.flags & MDR_INVAL_ACK_F_TRACKED) &&
		    o.tracked.count(host))
			o.dirty |= how.dirty & all_granules(o.granules);
		else
			o.dirty = all_granules(o.granules);
	});
}

// Every holder acked or lost its lease: nothing is written to the old place
// any more. The copy runs on the copier's thread.
void Node::move_drained(MoveKey key)
{
	auto it = moves_.find(key);

	if (it == moves_.end() || it->second.state != MoveOp::State::draining ||
	    !it->second.acked || in_restart_grace())
		return;	// tick() tries again after the grace

	MoveOp &op = it->second;
	CopyJob job{
		.src_dev = op.where.old_dev,
		.src_off = op.where.old_pstart << kSectorShift,
		.dst_dev = op.where.new_dev,
		.dst_off = op.where.new_pstart << kSectorShift,
		.len = uint64_t{1} << op.extent_shift,
	};

	// After a pre-copy, the dirty granules, adjacent ones as one run (the
	// copier cuts runs into chunks); none: only the fdatasync, which makes
	// the pre-copy durable. All of them: the whole extent, as without.
	if (op.dirty != all_granules(op.granules)) {
		job.runs.emplace();
		for (unsigned i = 0; i < op.granules;) {
			if (!(op.dirty >> i & 1)) {
				i++;
				continue;
			}
			unsigned j = i;
			while (j < op.granules && (op.dirty >> j & 1))
				j++;
			job.runs->push_back({uint64_t{i} << op.granule_shift,
					     uint64_t{j - i} << op.granule_shift});
			i = j;
		}
	}
	op.freeze_bytes = copy_bytes(job);
	op.state = MoveOp::State::copying;
	copier_.start(job, [this, key](int err, const CopyTimes &times) {
		move_copied(key, err, times);
	});
}

// The new place holds the data durably (or the copy failed): journal the
// end of the move, MOVE_DONE or MOVE_ABORT.
void Node::move_copied(MoveKey key, int err, const CopyTimes &times)
{
	MoveOp &op = moves_.at(key);

	op.t.copy = times;
	op.t.copied = mono_us();
	auto prep = err ? store_.prepare_move_abort(key.first, key.second)
			: store_.prepare_move_done(key.first, key.second);

	op.state = MoveOp::State::ending;
	// The copier logged what failed; the admin learns that the data could
	// not be moved.
	op.err = err ? -EIO : 0;
	if (!prep.ok()) {
		// Only this request ends a move: a bug. The extent stays frozen
		// until a restart rolls the move back.
		log_error("volume %llu extent %llu: cannot end the move: %s",
			  (unsigned long long)key.first, (unsigned long long)key.second,
			  prep.message().c_str());
		return move_finish(key, prep.error());
	}
	change(std::move(prep.value()), [this, key](int jerr, const Applied *applied) {
		move_ended(key, jerr, applied);
	});
}

// The table holds the extent MAPPED at g1 + 1, at its new place (or at the
// old one after a failed copy). Hosts waiting on the frozen entry READ it
// again on this invalidation; no drain is needed.
void Node::move_ended(MoveKey key, int jerr, const Applied *applied)
{
	MoveOp &op = moves_.at(key);

	if (jerr) {
		log_error("volume %llu extent %llu: the end of the move could not be "
			  "journaled: the extent stays frozen until a restart rolls the "
			  "move back", (unsigned long long)key.first,
			  (unsigned long long)key.second);
		return move_finish(key, jerr);
	}

	const wire::Entry e = wire::decode_entry(applied->entry);

	op.t.ended = mono_us();
	if (!op.err) {
		const int64_t stall_ms = now_ms_() - op.frozen_ms;

		op.result = wire::MovedExtent{
			.index = key.second,
			.old_pstart = op.where.old_pstart,
			.new_pstart = op.where.new_pstart,
			.old_dev = op.where.old_dev,
			.new_dev = op.where.new_dev,
			.generation = e.generation,
			.stall_us = uint32_t(std::min<int64_t>(stall_ms * 1000, UINT32_MAX)),
		};
	}
	op.state = MoveOp::State::announcing;
	fan_out(key.first, key.second, 1, e.generation, MDR_INVAL_ALLOC, std::nullopt,
		[this, key] {
		MoveOp &o = moves_.at(key);
		o.t.published = mono_us();
		move_finish(key, o.err);
	});
}

void Node::move_finish(MoveKey key, int err)
{
	auto node = moves_.extract(key);
	MoveOp &op = node.mapped();

	if (err) {
		stats_.moves_failed++;
		log_warn("volume %llu extent %llu: move to device %u failed: %s",
			 (unsigned long long)key.first, (unsigned long long)key.second,
			 op.to_dev, strerror(-err));
	} else {
		stats_.moves_done++;
		stats_.move_bytes += uint64_t{1} << op.extent_shift;
		stats_.precopy_bytes += op.precopy ? uint64_t{1} << op.extent_shift : 0;
		stats_.freeze_bytes += op.freeze_bytes;
		stats_.stall_max_us = std::max<uint64_t>(stats_.stall_max_us, op.result.stall_us);
		stats_.stall_total_us += op.result.stall_us;
		const MoveOp::Times &t = op.t;

		// Stage times in µs, each from the end of the one before; the
		// stall is drain through end. tools/bench/migrate reads them.
		// Without a pre-copy, track and precopy are 0, and every granule
		// is dirty.
		log_info("volume %llu extent %llu moved from device %u sector %llu to "
			 "device %u sector %llu, generation %llu, dirty %d/%u, mask 0x%016llx, "
			 "stall %u us; "
			 "stages us: track %lld precopy %lld begin %lld drain %lld queue %lld "
			 "io %lld sync %lld loop %lld end %lld publish %lld",
			 (unsigned long long)key.first, (unsigned long long)key.second,
			 op.result.old_dev, (unsigned long long)op.result.old_pstart,
			 op.result.new_dev, (unsigned long long)op.result.new_pstart,
			 (unsigned long long)op.result.generation,
			 std::popcount(op.dirty), op.granules, (unsigned long long)op.dirty,
			 op.result.stall_us,
			 (long long)(t.tracked - t.start), (long long)(t.precopied - t.tracked),
			 (long long)(t.frozen - t.asked), (long long)(t.acked - t.frozen),
			 (long long)(t.copy.started - t.acked),
			 (long long)(t.copy.written - t.copy.started),
			 (long long)(t.copy.synced - t.copy.written),
			 (long long)(t.copied - t.copy.synced), (long long)(t.ended - t.copied),
			 (long long)(t.published - t.ended));
	}
	op.done(err, op.result);
}

mdr::Status Node::recover_moves()
{
	for (const Move &m : store_.moves()) {
		auto prep = store_.prepare_move_abort(m.volume_id, m.index);

		if (!prep.ok())
			return mdr::Error(prep.error(), prep.message());

		int result = -EINPROGRESS;

		change(std::move(prep.value()),
		       [&result](int err, const Applied *) { result = err; });
		if (auto st = journal_.flush(); !st.ok())
			return st;
		if (result)
			return mdr::Error(result, "cannot roll back the move of extent " +
					  std::to_string(m.index) + " of volume " +
					  std::to_string(m.volume_id));
		log_info("volume %llu extent %llu: the move to device %u did not finish: "
			 "rolled back to device %u, generation %llu",
			 (unsigned long long)m.volume_id, (unsigned long long)m.index,
			 m.new_dev, m.old_dev, (unsigned long long)(m.generation + 1));
	}
	return {};
}

// All-or-nothing checks first, so that a request that cannot be served
// moves nothing: see Documentation/migration.md.
void Node::do_move(Session &s, uint64_t req_id, const wire::MoveReq &r)
{
	const ConnId conn = s.peer.id;
	const Volume *v = (r.flags & MDR_MOVE_F_BY_NAME) ? store_.volume(r.name)
							 : store_.volume(r.volume_id);

	if (!v)
		return reply_error(conn, req_id, MDR_OP_MOVE, -ENOENT);

	const uint64_t nr = v->table.entries().size();

	if (r.first >= nr || r.count > nr - r.first ||
	    sizeof(mdr_wire_move_rep) + r.count * sizeof(mdr_wire_move_extent) >
		    s.peer.max_msg)
		return reply_error(conn, req_id, MDR_OP_MOVE, -EINVAL);
	if (!store_.device(r.to_dev))
		return reply_error(conn, req_id, MDR_OP_MOVE, -ENOENT);
	for (uint64_t i = r.first; i < r.first + r.count; i++) {
		const wire::Entry e = wire::decode_entry(v->table.entries()[i]);

		if (moves_.contains({v->id, i}) || store_.move(v->id, i))
			return reply_error(conn, req_id, MDR_OP_MOVE, -EBUSY);
		if (e.state != MDR_EXT_MAPPED || e.dev_id == r.to_dev)
			return reply_error(conn, req_id, MDR_OP_MOVE, -EINVAL);
	}
	if (store_.free_extents(r.to_dev, v->extent_shift) < r.count)
		return reply_error(conn, req_id, MDR_OP_MOVE, -ENOSPC);

	auto rep = std::make_shared<wire::MoveRep>();

	rep->volume_id = v->id;
	move_next(conn, req_id, v->id, r.first, r.first + r.count, r.to_dev, rep);
}

void Node::move_next(ConnId conn, uint64_t req_id, uint64_t volume_id, uint64_t index,
		     uint64_t last, uint32_t to_dev, std::shared_ptr<wire::MoveRep> rep)
{
	if (index == last)
		return reply(conn, req_id, *rep);

	const uint64_t bytes = uint64_t{1} << store_.volume(volume_id)->extent_shift;

	move_extent(volume_id, index, to_dev,
		    [=, this](int err, const wire::MovedExtent &x) {
		if (err)
			return reply_error(conn, req_id, MDR_OP_MOVE, err);
		rep->extents.push_back(x);
		rep->bytes += bytes;
		rep->stall_max_us = std::max<uint64_t>(rep->stall_max_us, x.stall_us);
		rep->stall_total_us += x.stall_us;
		move_next(conn, req_id, volume_id, index + 1, last, to_dev, rep);
	});
}

void Node::do_drain(Session &s, uint64_t req_id, const wire::DrainReq &r)
{
	const ConnId conn = s.peer.id;

	if (!store_.device(r.dev_id) || (r.to_dev && !store_.device(r.to_dev)))
		return reply_error(conn, req_id, MDR_OP_DRAIN, -ENOENT);
	if (!r.to_dev && !store_.roomiest_device(r.dev_id))
		return reply_error(conn, req_id, MDR_OP_DRAIN, -ENOSPC);
	drain_next(conn, req_id, r.dev_id, r.to_dev, std::make_shared<Drain>());
}

// The scan goes on after the extent it moved last, and a pass that moved
// anything is followed by another from the start: extents allocated on the
// device behind the scan while the drain runs are found too, and the
// event loop reads each entry of the node about twice per drain, not once
// per extent moved (on a node of millions of entries, that was a scan of
// all of them in the loop before every move). Extents another request
// moves are left alone.
void Node::drain_next(ConnId conn, uint64_t req_id, uint32_t dev_id, uint32_t to_dev,
		      std::shared_ptr<Drain> d)
{
	auto scan = [&](uint64_t volume_id, uint64_t index) {
		auto next = store_.next_on_device(dev_id, volume_id, index);

		while (next && (moves_.contains(*next) ||
				store_.move(next->first, next->second)))
			next = store_.next_on_device(dev_id, next->first, next->second + 1);
		return next;
	};
	auto next = scan(d->volume_id, d->index);

	if (!next && d->pass_moved) {
		d->pass_moved = false;
		next = scan(0, 0);
	}

	auto finish = [this, conn, req_id, dev_id, d](int err) {
		reply(conn, req_id, wire::DrainRep{
			.dev_id = dev_id,
			.status = wire::errno_to_status(err),
			.moved = d->totals.moved,
			.remaining = store_.extents_on_device(dev_id),
			.bytes = d->totals.bytes,
			.stall_max_us = d->totals.stall_max_us,
			.stall_total_us = d->totals.stall_total_us,
		});
	};
	if (!next)
		return finish(0);
	d->volume_id = next->first;
	d->index = next->second + 1;

	const uint32_t target = to_dev ? to_dev : store_.roomiest_device(dev_id);
	const uint64_t bytes = uint64_t{1} << store_.volume(next->first)->extent_shift;

	move_extent(next->first, next->second, target,
		    [=, this](int err, const wire::MovedExtent &x) {
		if (err)
			return finish(err);
		d->totals.add(x, bytes);
		d->pass_moved = true;
		drain_next(conn, req_id, dev_id, to_dev, d);
	});
}

} // namespace mdnode
