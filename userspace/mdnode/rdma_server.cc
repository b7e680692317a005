// SPDX-License-Identifier: GPL-2.0
//
// rdma_server.cc - mdnode's RDMA transport (see rdma_server.h).
//
// Per connection: one CQ on its device's completion channel, one RC QP in
// the PD of (device, tenant), a receive pool of queue_depth + push_credits
// + 1 buffers of our max_msg (what a peer may send us) and a send pool of
// queue_depth + push_credits buffers of the peer's max_msg, capped at what
// we ever send its role (kHostSendMax, MDR_WIRE_MSG_MAX), both in one
// registered region. So a connection pins at most about 1.2 MiB (a host:
// 128 + 16 requests and pushes of 4096 bytes each way) or 3.2 MiB (an
// admin: 32 + 16 sends of up to 64 KiB), whatever it asks. Work request
// ids carry (connection, slot), so a completion that arrives after its
// connection was destroyed is recognised and dropped.
#include "mdnode/rdma_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <fcntl.h>
#include <sys/mman.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <deque>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "lib/auth/auth.h"
#include "lib/util/errors.h"
#include "lib/verbs/verbs.h"
#include "lib/wire/wire.h"
#include "mdnode/log.h"

namespace mdnode {

namespace {

MDNODE_LOG_SUBSYSTEM("rdma");

// Completions of one connection taken before the next connection's turn:
// a sender that keeps its CQ full gets this many per turn, then goes to
// the back of the device's backlog.
constexpr int kPollBatch = 16;

// wr_id: connection id in the high 44 bits, slot and direction below.
constexpr unsigned kSlotBits = 19;
constexpr uint64_t kRecvBit = 1ull << kSlotBits;

uint64_t make_wr_id(ConnId id, uint32_t slot, bool recv)
{
	return (id << (kSlotBits + 1)) | (recv ? kRecvBit : 0) | slot;
}

ConnId wr_conn(uint64_t wr_id) { return wr_id >> (kSlotBits + 1); }
uint32_t wr_slot(uint64_t wr_id) { return wr_id & (kRecvBit - 1); }
bool wr_is_recv(uint64_t wr_id) { return wr_id & kRecvBit; }

} // namespace

using mdr::errno_error;
using mdr::verbs::peer_address;
using mdr::verbs::set_nonblock;

struct RdmaServer::Device {
	ibv_context *ctx = nullptr;
	ibv_comp_channel *channel = nullptr;
	std::map<uint32_t, ibv_pd *> pds;	// by tenant
	int max_rd_atom = 0;			// READs a QP answers at once
	// Connections whose CQ had an event and is not drained yet, in order.
	std::deque<ConnId> backlog;

	~Device()
	{
		for (auto &[tenant, pd] : pds)
			ibv_dealloc_pd(pd);
		if (channel)
			ibv_destroy_comp_channel(channel);
	}
};

struct RdmaServer::Conn {
	ConnId id = 0;
	rdma_cm_id *cm = nullptr;
	Device *dev = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	PeerInfo peer{};
	uint32_t recv_slots = 0, send_slots = 0;
	uint32_t recv_size = 0;		// bytes per recv slot: our max_msg
	uint32_t send_size = 0;		// bytes per send slot: the peer's, capped
	std::byte *buf = nullptr;	// recv slots, then send slots
	size_t buf_len = 0;
	ibv_mr *mr = nullptr;
	std::vector<uint32_t> free_send;
	bool established = false;
	bool closing = false;

	std::byte *recv_buf(uint32_t slot) { return buf + size_t(slot) * recv_size; }
	std::byte *send_buf(uint32_t slot)
	{
		return buf + size_t(recv_slots) * recv_size + size_t(slot) * send_size;
	}

	~Conn()
	{
		if (cm && cm->qp)
			rdma_destroy_qp(cm);
		if (cq)
			ibv_destroy_cq(cq);
		if (mr)
			ibv_dereg_mr(mr);
		if (buf)
			munmap(buf, buf_len);
		if (cm)
			rdma_destroy_id(cm);
	}
};

RdmaServer::RdmaServer(const ServerOptions &opts, ServerHandler &handler)
	: opts_(opts), handler_(handler)
{
}

RdmaServer::~RdmaServer()
{
	for (auto &[key, mr] : tables_)
		ibv_dereg_mr(mr);
	conns_.clear();
	if (listen_id_)
		rdma_destroy_id(listen_id_);
	devices_.clear();
	if (ec_)
		rdma_destroy_event_channel(ec_);
}

mdr::Result<std::unique_ptr<RdmaServer>> RdmaServer::listen(const ServerOptions &opts,
							     ServerHandler &handler)
{
	std::unique_ptr<RdmaServer> s(new RdmaServer(opts, handler));
	auto addr = mdr::verbs::resolve(opts.address, opts.port, AI_NUMERICHOST | AI_PASSIVE);

	if (!addr.ok())
		return mdr::Error(addr.error(), "listen " + addr.message());

	s->ec_ = rdma_create_event_channel();
	if (!s->ec_)
		return errno_error("rdma_create_event_channel");
	if (!set_nonblock(s->ec_->fd))
		return errno_error("fcntl of the rdma_cm event channel");
	if (rdma_create_id(s->ec_, &s->listen_id_, nullptr, RDMA_PS_TCP))
		return errno_error("rdma_create_id");
	if (rdma_bind_addr(s->listen_id_, addr.value().sa()))
		return errno_error("rdma_bind_addr (is an RDMA device on that address?)");
	if (rdma_listen(s->listen_id_, 128))
		return errno_error("rdma_listen");
	// A listener bound to one address belongs to one device: set it up
	// now, so a missing device is an error at start, not at first connect.
	if (s->listen_id_->verbs) {
		auto dev = s->device_for(s->listen_id_->verbs);
		if (!dev.ok())
			return mdr::Error(dev.error(), dev.message());
	}
	return s;
}

std::vector<int> RdmaServer::fds() const
{
	std::vector<int> fds{ec_->fd};

	for (const auto &d : devices_)
		fds.push_back(d->channel->fd);
	return fds;
}

bool RdmaServer::process(int fd, unsigned budget)
{
	if (fd == ec_->fd) {
		rdma_cm_event *ev;

		// Non-blocking: one event per readiness, none if it went away.
		if (rdma_get_cm_event(ec_, &ev) == 0)
			on_cm_event(ev);
		return false;
	}
	for (auto &d : devices_)
		if (d->channel->fd == fd)
			return on_cq_event(*d, budget);
	return false;
}

mdr::Result<RdmaServer::Device *> RdmaServer::device_for(ibv_context *ctx)
{
	for (auto &d : devices_)
		if (d->ctx == ctx)
			return d.get();

	auto dev = std::make_unique<Device>();
	dev->ctx = ctx;
	dev->channel = ibv_create_comp_channel(ctx);
	if (!dev->channel)
		return errno_error("ibv_create_comp_channel");
	if (!set_nonblock(dev->channel->fd))
		return errno_error("fcntl of the completion channel");
	ibv_device_attr attr;
	if (ibv_query_device(ctx, &attr))
		return errno_error("ibv_query_device");
	dev->max_rd_atom = attr.max_qp_rd_atom;
	devices_.push_back(std::move(dev));
	log_info("using RDMA device %s", ibv_get_device_name(ctx->device));
	return devices_.back().get();
}

mdr::Result<ibv_pd *> RdmaServer::pd_for(Device &dev, uint32_t tenant)
{
	auto it = dev.pds.find(tenant);

	if (it != dev.pds.end())
		return it->second;
	ibv_pd *pd = ibv_alloc_pd(dev.ctx);
	if (!pd)
		return errno_error("ibv_alloc_pd");
	dev.pds.emplace(tenant, pd);
	return pd;
}

void RdmaServer::reject(rdma_cm_id *id, uint16_t status)
{
	auto rej = mdr::wire::encode_conn_rej({.version = MDR_WIRE_VERSION, .status = status});

	stats_.rejects++;
	if (rej.ok())
		rdma_reject(id, &rej.value(), sizeof(rej.value()));
	else
		rdma_reject(id, nullptr, 0);
}

void RdmaServer::on_cm_event(rdma_cm_event *ev)
{
	rdma_cm_id *id = ev->id;
	const rdma_cm_event_type type = ev->event;
	ConnId conn = id->context ? *static_cast<ConnId *>(id->context) : 0;

	if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		on_connect_request(ev);	// acks the event itself
		return;
	}
	rdma_ack_cm_event(ev);

	switch (type) {
	case RDMA_CM_EVENT_ESTABLISHED:
		if (Conn *c = find(conn))
			establish(*c);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		if (conn)
			destroy_conn(conn);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		if (id == listen_id_) {
			log_error("the RDMA device %s of the listener was removed",
				  id->verbs ? ibv_get_device_name(id->verbs->device) : "?");
			device_lost_ = true;
			break;
		}
		if (conn)
			destroy_conn(conn);
		break;
	default:
		break;
	}
}

// Once per connection: at its ESTABLISHED event, or at its first receive
// if that comes first (the client may send as soon as it has our accept,
// and its message can complete here before our ESTABLISHED is read).
void RdmaServer::establish(Conn &c)
{
	if (c.established || c.closing)
		return;
	c.established = true;
	stats_.connects++;
	log_info_rl("conn %llu: %s established (role %u, tenant %u, host %016llx)",
		    (unsigned long long)c.id, c.peer.address.c_str(), c.peer.role,
		    c.peer.tenant, (unsigned long long)c.peer.host_id);
	handler_.on_established(c.peer);
}

void RdmaServer::on_connect_request(rdma_cm_event *ev)
{
	rdma_cm_id *id = ev->id;
	const auto *pd_bytes = static_cast<const std::byte *>(ev->param.conn.private_data);
	// The READs of tables the client will have in flight at once (in a
	// request event, the client's initiator depth is reported here).
	const uint8_t reads_in_flight = std::max(ev->param.conn.initiator_depth,
						 ev->param.conn.responder_resources);
	// The client's QP number, which a host's proof covers.
	const uint32_t qp_num = ev->param.conn.qp_num;
	auto req = mdr::wire::parse_conn_req(
		std::span<const std::byte>(pd_bytes, pd_bytes ? ev->param.conn.private_data_len : 0));
	rdma_ack_cm_event(ev);	// copied what we need; id stays ours

	if (!req.ok()) {
		stats_.bad_private_data++;
		log_warn_rl("connect from %s refused: %s", peer_address(id).c_str(),
			    req.message().c_str());
		reject(id, MDR_ST_PROTO);
		rdma_destroy_id(id);
		handler_.on_refused();
		return;
	}
	const mdr::wire::ConnReq &r = req.value();
	auto version = mdr::wire::negotiate_version(r.version_min, r.version_max);
	if (!version.ok()) {
		log_warn_rl("connect from %s refused: no common protocol version in %u..%u",
			    peer_address(id).c_str(), r.version_min, r.version_max);
		reject(id, MDR_ST_VERSION);
		rdma_destroy_id(id);
		handler_.on_refused();
		return;
	}

	auto c = std::make_unique<Conn>();
	c->id = next_id_++;
	c->cm = id;
	c->peer.id = c->id;
	c->peer.role = r.role;
	c->peer.version = version.value();
	c->peer.tenant = r.tenant;
	c->peer.host_id = r.host_id;
	c->peer.queue_depth = std::min(r.queue_depth, r.role == MDR_ROLE_ADMIN
			? std::min(kAdminQueueDepth, opts_.max_queue_depth) : opts_.max_queue_depth);
	// The client keeps recv_depth buffers for replies (one per request)
	// and pushes: we may push into what is left.
	c->peer.push_credits = static_cast<uint16_t>(
		std::min<uint32_t>(opts_.push_credits, r.recv_depth - c->peer.queue_depth));
	// What it receives bounds what we send; we send a host nothing longer
	// than kHostSendMax, so a larger wish costs no memory. The peer need
	// not learn of it: max_msg only bounds what it is sent.
	c->peer.max_msg = std::min(r.max_msg, r.role == MDR_ROLE_HOST ? kHostSendMax
								     : uint32_t(MDR_WIRE_MSG_MAX));
	c->peer.address = peer_address(id);
	if (const char *cap = over_limit(c->peer)) {
		stats_.limit_rejects++;
		log_warn_rl("connect from %s (role %u, tenant %u) refused: %s",
			    c->peer.address.c_str(), c->peer.role, c->peer.tenant, cap);
		reject(id, MDR_ST_NOMEM);
		handler_.on_refused();
		return;		// ~Conn destroys the id
	}
	c->peer.host_qpn = qp_num;
	c->peer.node_qpn = 0;	// once the QP exists
	// The challenge of an admin, and of a host from version 3 on: 16
	// random bytes (zero for older hosts, as their version says).
	c->peer.nonce = {};
	if (c->peer.role == MDR_ROLE_ADMIN || c->peer.version >= mdr::wire::kHostAuthVersion) {
		auto nonce = mdr::random_nonce();
		if (!nonce.ok()) {
			log_error_rl("connect from %s refused: %s", c->peer.address.c_str(),
				     nonce.message().c_str());
			reject(id, MDR_ST_NOMEM);
			return;		// ~Conn destroys the id
		}
		c->peer.nonce = nonce.value();
	}

	// Fills in the connection's resources; rejects on any failure.
	auto fail = [&](const char *what) {
		log_error_rl("conn from %s: %s: %s", c->peer.address.c_str(), what,
			     strerror(errno));
		reject(id, MDR_ST_NOMEM);
		c->cm = id;	// ~Conn destroys the id and all that exists
	};
	uint16_t st = handler_.on_connect(c->peer);
	if (st != MDR_ST_OK) {
		reject(id, st);
		return;		// ~Conn destroys the id
	}
	auto dev = device_for(id->verbs);
	if (!dev.ok())
		return fail("device");
	c->dev = dev.value();
	auto pd = pd_for(*c->dev, c->peer.tenant);
	if (!pd.ok())
		return fail("protection domain");
	c->pd = pd.value();

	// One reply per request and one ack per push come in at most; a spare
	// receive absorbs a peer that is one over before we disconnect it.
	c->recv_slots = c->peer.queue_depth + c->peer.push_credits + 1;
	c->send_slots = c->peer.queue_depth + c->peer.push_credits;
	c->recv_size = opts_.max_msg;
	c->send_size = c->peer.max_msg;
	c->buf_len = size_t(c->recv_slots) * c->recv_size + size_t(c->send_slots) * c->send_size;
	void *mem = mmap(nullptr, c->buf_len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return fail("buffers");
	c->buf = static_cast<std::byte *>(mem);
	c->mr = ibv_reg_mr(c->pd, c->buf, c->buf_len, IBV_ACCESS_LOCAL_WRITE);
	if (!c->mr)
		return fail("ibv_reg_mr (is RLIMIT_MEMLOCK large enough?)");
	const int cqe = int(c->recv_slots + c->send_slots);
	c->cq = ibv_create_cq(c->dev->ctx, cqe, reinterpret_cast<void *>(uintptr_t(c->id)),
			      c->dev->channel, 0);
	if (!c->cq)
		return fail("ibv_create_cq");
	if (ibv_req_notify_cq(c->cq, 0))
		return fail("ibv_req_notify_cq");

	if (!mdr::verbs::create_rc_qp(id, c->pd, c->cq, {.send_wr = c->send_slots,
							  .recv_wr = c->recv_slots,
							  .sig_all = true}).ok())
		return fail("rdma_create_qp");
	c->peer.node_qpn = id->qp->qp_num;

	for (uint32_t i = 0; i < c->recv_slots; i++)
		if (!post_recv(*c, i).ok())
			return fail("ibv_post_recv");
	for (uint32_t i = c->send_slots; i > 0; i--)
		c->free_send.push_back(i - 1);

	mdr::wire::ConnRep cr{
		.version = c->peer.version,
		.queue_depth = c->peer.queue_depth,
		.push_credits = c->peer.push_credits,
		.max_msg = opts_.max_msg,
		.node_id = opts_.node_id,
		.boot_id = opts_.boot_id,
	};
	cr.nonce = c->peer.nonce;
	auto rep = mdr::wire::encode_conn_rep(cr, r);
	if (!rep.ok()) {
		log_error_rl("conn from %s: cannot accept: %s", c->peer.address.c_str(),
			     rep.message().c_str());
		reject(id, MDR_ST_INVAL);
		return;
	}
	rdma_conn_param param{};
	param.private_data = &rep.value();
	param.private_data_len = sizeof(rep.value());
	// Clients READ our tables; we READ no one.
	param.responder_resources = std::max<uint8_t>(1, std::min<uint8_t>(
		reads_in_flight, uint8_t(std::min(c->dev->max_rd_atom, 255))));
	param.initiator_depth = 0;
	param.rnr_retry_count = 7;	// "infinite": a slow client is not dead
	// The id's context points into the Conn, which lives in conns_.
	id->context = &c->id;
	if (rdma_accept(id, &param)) {
		id->context = nullptr;
		return fail("rdma_accept");
	}
	conns_.emplace(c->id, std::move(c));
}

mdr::Status RdmaServer::post_recv(Conn &c, uint32_t slot)
{
	return mdr::verbs::post_recv(c.cm->qp, make_wr_id(c.id, slot, true), c.recv_buf(slot),
				     c.recv_size, c.mr->lkey);
}

mdr::Status RdmaServer::send(ConnId conn, std::span<const std::byte> msg)
{
	Conn *c = find(conn);

	if (!c || c->closing || !c->established)
		return mdr::Error(-ENOTCONN);
	if (msg.size() > c->peer.max_msg)
		return mdr::Error(-EMSGSIZE, "message larger than the peer receives");
	if (c->free_send.empty())
		return mdr::Error(-ENOBUFS, "no send buffer left");

	uint32_t slot = c->free_send.back();
	std::memcpy(c->send_buf(slot), msg.data(), msg.size());

	mdr::Status st = mdr::verbs::post_send(c->cm->qp, {.opcode = IBV_WR_SEND,
		.wr_id = make_wr_id(c->id, slot, false), .addr = c->send_buf(slot),
		.len = static_cast<uint32_t>(msg.size()), .lkey = c->mr->lkey});
	if (!st.ok()) {
		stats_.send_errors++;
		return st;
	}
	c->free_send.pop_back();
	stats_.messages_out++;
	return {};
}

bool RdmaServer::on_cq_event(Device &dev, unsigned budget)
{
	ibv_cq *cq;
	void *ctx;

	// Non-blocking: every event there is, each for a CQ of one connection
	// (its context is the connection's id).
	while (ibv_get_cq_event(dev.channel, &cq, &ctx) == 0) {
		const ConnId id = ConnId(reinterpret_cast<uintptr_t>(ctx));

		ibv_ack_cq_events(cq, 1);
		// Re-arm before draining, so a completion that lands in between
		// raises a new event instead of waiting for the next one.
		ibv_req_notify_cq(cq, 0);
		if (std::find(dev.backlog.begin(), dev.backlog.end(), id) == dev.backlog.end())
			dev.backlog.push_back(id);
	}

	// The CQs take turns, kPollBatch completions each, within the budget;
	// what is left waits for the loop's next round. A CQ that gave a full
	// batch may have more and goes to the back, so the budget is shared:
	// one sender that keeps its CQ full cannot take a round from the
	// others, whose requests are served in the same round as its own (a
	// connection's requests are bounded by its queue depth anyway, so it
	// cannot fill the budget alone for long). By id: a completion may end
	// its connection.
	ibv_wc wc[kPollBatch];
	while (budget && !dev.backlog.empty()) {
		const ConnId id = dev.backlog.front();
		Conn *c = find(id);
		const int want = int(std::min<unsigned>(budget, kPollBatch));
		const int n = c ? ibv_poll_cq(c->cq, want, wc) : 0;

		dev.backlog.pop_front();
		if (n <= 0)
			continue;	// drained, or gone
		if (n == want)
			dev.backlog.push_back(id);	// more may be there
		budget -= unsigned(n);
		for (int i = 0; i < n; i++)
			on_completion(wc[i]);
	}
	return !dev.backlog.empty();
}

void RdmaServer::on_completion(const ibv_wc &wc)
{
	Conn *c = find(wr_conn(wc.wr_id));
	const uint32_t slot = wr_slot(wc.wr_id);

	if (!c)
		return;		// its connection is already gone
	if (wc.status != IBV_WC_SUCCESS) {
		// A flush is the QP going down: nothing to report.
		if (wc.status != IBV_WC_WR_FLUSH_ERR) {
			(wr_is_recv(wc.wr_id) ? stats_.recv_errors : stats_.send_errors)++;
			log_warn_rl("conn %llu: %s completion error: %s",
				    (unsigned long long)c->id,
				    wr_is_recv(wc.wr_id) ? "recv" : "send",
				    ibv_wc_status_str(wc.status));
		}
		// A receive fails for what arrived (more than we receive): the
		// peer sent a malformed message.
		if (wr_is_recv(wc.wr_id) && wc.status != IBV_WC_WR_FLUSH_ERR && c->established)
			handler_.on_bad_receive(c->id);
		close_conn(*c);
		return;
	}
	if (!wr_is_recv(wc.wr_id)) {
		c->free_send.push_back(slot);
		return;
	}
	stats_.messages_in++;
	// A receive proves the client has our accept and its QP is up.
	establish(*c);
	if (!c->closing && c->established)
		handler_.on_message(c->id, std::span<const std::byte>(c->recv_buf(slot),
								       wc.byte_len));
	// The handler may have closed or destroyed it.
	c = find(wr_conn(wc.wr_id));
	if (c && !c->closing && !post_recv(*c, slot).ok())
		close_conn(*c);
}

void RdmaServer::disconnect(ConnId conn)
{
	if (Conn *c = find(conn))
		close_conn(*c);
}

void RdmaServer::close_conn(Conn &c)
{
	if (c.closing)
		return;
	c.closing = true;
	// DISCONNECTED follows and destroys it.
	rdma_disconnect(c.cm);
}

void RdmaServer::destroy_conn(ConnId id)
{
	auto it = conns_.find(id);

	if (it == conns_.end())
		return;
	std::unique_ptr<Conn> c = std::move(it->second);
	conns_.erase(it);
	c->cm->context = nullptr;
	if (c->established) {
		stats_.disconnects++;
		log_info_rl("conn %llu: %s closed", (unsigned long long)id,
			    c->peer.address.c_str());
		handler_.on_disconnected(id);
	}
}

const char *connection_cap(const ServerOptions &o, uint16_t role, const ConnCounts &n)
{
	if (n.total >= o.max_connections)
		return "max-connections reached";
	if (role != MDR_ROLE_HOST)
		return nullptr;
	// By the hosts, not by all: admins in the reserve do not lower what
	// hosts may have.
	if (n.hosts + std::min(o.admin_reserved, o.max_connections - 1) >= o.max_connections)
		return "the slots left are reserved for admin connections";
	if (n.of_tenant >= o.max_per_tenant)
		return "max-connections-per-tenant reached for the tenant";
	return nullptr;
}

const char *RdmaServer::over_limit(const PeerInfo &peer) const
{
	ConnCounts n{.total = conns_.size()};

	for (const auto &[id, c] : conns_) {
		if (c->peer.role != MDR_ROLE_HOST)
			continue;
		n.hosts++;
		n.of_tenant += c->peer.tenant == peer.tenant;
	}
	return connection_cap(opts_, peer.role, n);
}

RdmaServer::Conn *RdmaServer::find(ConnId id)
{
	auto it = conns_.find(id);

	return it == conns_.end() ? nullptr : it->second.get();
}

mdr::Result<uint32_t> RdmaServer::table_rkey(ConnId conn, uint64_t volume_id,
					     const void *addr, size_t len)
{
	Conn *c = find(conn);

	if (!c)
		return mdr::Error(-ENOTCONN);
	auto key = std::make_pair(c->pd, volume_id);
	auto it = tables_.find(key);
	if (it != tables_.end()) {
		if (it->second->addr == addr && it->second->length == len)
			return it->second->rkey;
		ibv_dereg_mr(it->second);	// the table moved (resize)
		tables_.erase(it);
	}
	// Remote READ only: every change goes through an RPC.
	ibv_mr *mr = ibv_reg_mr(c->pd, const_cast<void *>(addr), len,
				IBV_ACCESS_REMOTE_READ);
	if (!mr)
		return errno_error("ibv_reg_mr of a volume table");
	tables_.emplace(key, mr);
	stats_.tables_registered++;
	return mr->rkey;
}

void RdmaServer::forget_table(uint64_t volume_id)
{
	for (auto it = tables_.begin(); it != tables_.end();) {
		if (it->first.second == volume_id) {
			ibv_dereg_mr(it->second);
			it = tables_.erase(it);
		} else {
			++it;
		}
	}
}

} // namespace mdnode
