// SPDX-License-Identifier: GPL-2.0
//
// rdma_client.cc - see rdma_client.h.
#include "lib/client/rdma_client.h"

#include <netdb.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "lib/util/errors.h"
#include "lib/verbs/verbs.h"

namespace mdr {

namespace {

// Requests call_many() keeps outstanding, if mdnode grants as many: enough
// to cover the node's journal write under emulation, with the records of
// the requests in flight grouped into one write (a boot storm's creates).
constexpr uint16_t kQueueDepth = 32;
constexpr uint16_t kPushSlots = 16;			// mdnode grants min(16, ...)
constexpr uint16_t kRecvSlots = kQueueDepth + kPushSlots;	// replies + pushes
constexpr uint32_t kMsgSize = 16384;		// what we receive
constexpr uint32_t kSendSlots = kQueueDepth;	// one per outstanding request
constexpr uint32_t kSendSize = 4096;		// largest request: mdnode's max_msg
constexpr uint32_t kReadArea = 65536;		// largest READ
// The buffer: the receive slots, the send slots, the READ area.
constexpr size_t kSendAt = size_t(kRecvSlots) * kMsgSize;
constexpr size_t kReadAt = kSendAt + size_t(kSendSlots) * kSendSize;
constexpr uint64_t kSendWr = 1ull << 62, kAckWr = 2ull << 62, kReadWr = 3ull << 62;
constexpr uint64_t kWrKind = 3ull << 62;
// Requests, acks of pushes (at most kPushSlots unacked), one READ.
constexpr uint32_t kMaxSendWr = kSendSlots + kPushSlots + 1;

} // namespace

// The QP goes first; the members free the rest.
RdmaClient::~RdmaClient()
{
	if (id_ && id_->qp) {
		rdma_disconnect(id_.get());
		rdma_destroy_qp(id_.get());
	}
}

Result<int> RdmaClient::wait_cm(int expected)
{
	pollfd p{ec_->fd, POLLIN, 0};
	rdma_cm_event *ev;

	int n = ::poll(&p, 1, opts_.timeout_ms);
	if (n == 0)
		return Error(-ETIMEDOUT, "no answer from " + opts_.node);
	if (n < 0 || rdma_get_cm_event(ec_.get(), &ev))
		return errno_error("rdma_get_cm_event");
	const int got = ev->event;
	if (got == RDMA_CM_EVENT_ESTABLISHED) {
		auto rep = wire::parse_conn_rep(
			{static_cast<const std::byte *>(ev->param.conn.private_data),
			 ev->param.conn.private_data_len}, req_);
		const uint32_t node_qpn = ev->param.conn.qp_num;
		rdma_ack_cm_event(ev);
		if (!rep.ok())
			return Error(rep.error(), "bad accept from mdnode: " + rep.message());
		rep_ = rep.value();
		node_qpn_ = node_qpn;
		return got;
	}
	if (got == RDMA_CM_EVENT_REJECTED) {
		auto rej = wire::parse_conn_rej(
			{static_cast<const std::byte *>(ev->param.conn.private_data),
			 ev->param.conn.private_data_len});
		rdma_ack_cm_event(ev);
		if (!rej.ok())
			return Error(-ECONNREFUSED, "connection refused (is mdnode running on " +
							    opts_.node + "?)");
		return Error(wire::status_to_errno(rej.value().status),
			     "mdnode refused the connection: " +
				     wire::status_name(rej.value().status));
	}
	rdma_ack_cm_event(ev);
	if (got != expected)
		return Error(got == RDMA_CM_EVENT_ADDR_ERROR || got == RDMA_CM_EVENT_ROUTE_ERROR ||
					     got == RDMA_CM_EVENT_UNREACHABLE
				     ? -EHOSTUNREACH
				     : -ECONNREFUSED,
			     std::string("connecting to ") + opts_.node + ": " +
				     rdma_event_str(rdma_cm_event_type(got)));
	return got;
}

Result<std::unique_ptr<RdmaClient>> RdmaClient::connect(const ClientOptions &opts)
{
	std::unique_ptr<RdmaClient> c(new RdmaClient(opts));
	auto st = c->setup();

	if (!st.ok())
		return Error(st.error(), st.message());
	return c;
}

Status RdmaClient::setup()
{
	if (opts_.host_id == 0) {
		std::random_device rd;
		opts_.host_id = (uint64_t(rd()) << 32) ^ rd();
	}
	auto addr = verbs::resolve(opts_.node, opts_.port, 0);
	if (!addr.ok())
		return Error(addr.error(), addr.message());

	ec_.reset(rdma_create_event_channel());
	if (!ec_)
		return errno_error("rdma_create_event_channel");
	rdma_cm_id *id;
	if (rdma_create_id(ec_.get(), &id, nullptr, RDMA_PS_TCP))
		return errno_error("rdma_create_id");
	id_.reset(id);
	if (rdma_resolve_addr(id, nullptr, addr.value().sa(), opts_.timeout_ms))
		return errno_error("rdma_resolve_addr " + opts_.node);
	if (auto r = wait_cm(RDMA_CM_EVENT_ADDR_RESOLVED); !r.ok())
		return Error(r.error(), r.message());
	if (rdma_resolve_route(id, opts_.timeout_ms))
		return errno_error("rdma_resolve_route");
	if (auto r = wait_cm(RDMA_CM_EVENT_ROUTE_RESOLVED); !r.ok())
		return Error(r.error(), r.message());

	pd_.reset(ibv_alloc_pd(id->verbs));
	if (pd_)
		ch_.reset(ibv_create_comp_channel(id->verbs));
	if (ch_)
		cq_.reset(ibv_create_cq(id->verbs, kMaxSendWr + kRecvSlots, nullptr, ch_.get(), 0));
	if (!cq_)
		return errno_error("verbs setup");
	auto buf = verbs::Region::create(pd_.get(), kReadAt + kReadArea, IBV_ACCESS_LOCAL_WRITE);
	if (!buf.ok())
		return Error(buf.error(), buf.message());
	buf_ = std::move(buf).value();

	if (auto st = verbs::create_rc_qp(id, pd_.get(), cq_.get(),
					  {.send_wr = kMaxSendWr, .recv_wr = kRecvSlots,
					   .max_inline = sizeof(mdr_wire_inval_ack)});
	    !st.ok())
		return st;
	for (uint32_t i = 0; i < kRecvSlots; i++)
		if (auto st = post_recv(i); !st.ok())
			return st;
	for (uint32_t i = kSendSlots; i-- > 0;)
		free_send_.push_back(i);

	req_ = wire::ConnReq{.version_max = opts_.version_max, .role = opts_.role,
			     .tenant = opts_.tenant,
			     .host_id = opts_.host_id, .queue_depth = kQueueDepth,
			     .recv_depth = kRecvSlots, .max_msg = kMsgSize};
	auto pdata = wire::encode_conn_req(req_);
	if (!pdata.ok())
		return Error(pdata.error(), pdata.message());
	rdma_conn_param param{};
	param.private_data = &pdata.value();
	param.private_data_len = sizeof(pdata.value());
	param.initiator_depth = 1;	// our READs of tables
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_connect(id, &param))
		return errno_error("rdma_connect");
	if (auto r = wait_cm(RDMA_CM_EVENT_ESTABLISHED); !r.ok())
		return Error(r.error(), r.message());
	if (ibv_req_notify_cq(cq_.get(), 0))
		return errno_error("ibv_req_notify_cq");
	return {};
}

Status RdmaClient::post_recv(uint32_t slot)
{
	return verbs::post_recv(id_->qp, slot, buf_.data() + size_t(slot) * kMsgSize, kMsgSize,
				buf_.lkey());
}

// Sends @msg from send slot @slot, which stays the HCA's until the send
// completes.
Status RdmaClient::post_send(uint32_t slot, std::span<const std::byte> msg)
{
	std::byte *at = buf_.data() + kSendAt + size_t(slot) * kSendSize;

	std::memcpy(at, msg.data(), msg.size());
	return verbs::post_send(id_->qp, {.opcode = IBV_WR_SEND, .wr_id = kSendWr | slot,
					  .addr = at, .len = uint32_t(msg.size()),
					  .lkey = buf_.lkey(), .flags = IBV_SEND_SIGNALED});
}

void RdmaClient::on_recv(uint32_t slot, uint32_t len)
{
	// By the accept's version: a reply of another version's length is bad.
	auto m = wire::parse({buf_.data() + size_t(slot) * kMsgSize, len}, wire::Side::client,
			     opts_.role, rep_.version);

	if (m.ok() && std::holds_alternative<wire::Invalidate>(m.value().body)) {
		// Nothing cached here: acknowledge at once, inline (the message
		// is copied into the work request, so no buffer stays busy).
		invalidations_++;
		if (on_push_)
			on_push_(m.value().hdr.req_id, std::get<wire::Invalidate>(m.value().body));
		// Version 2's ack is the longer one. It never claims to have
		// noted writes (no MDR_INVAL_ACK_F_TRACKED): a move the client
		// holds a lease on copies the whole extent under the freeze.
		wire::InvalidateAck ack;
		static_cast<wire::InvalRange &>(ack) = std::get<wire::Invalidate>(m.value().body);
		ack.extended = rep_.version >= 2;
		std::byte out[sizeof(mdr_wire_inval_ack)];
		auto n = wire::encode(out, m.value().hdr.req_id, ack);
		if (n.ok() && opts_.ack_pushes) {
			ibv_sge sge{reinterpret_cast<uintptr_t>(out), uint32_t(n.value()), 0};
			ibv_send_wr wr{}, *bad;
			wr.wr_id = kAckWr;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_SEND;
			wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
			ibv_post_send(id_->qp, &wr, &bad);
		}
	} else if (!m.ok()) {
		bad_message_ = Error(m.error(), "bad message from mdnode: " + m.message());
	} else if (std::optional<size_t> i = pipeline_ ? pipeline_->complete(m.value().hdr.req_id)
						       : std::nullopt) {
		// Not ours (nullopt): the reply to a request given up.
		const auto &h = m.value().hdr;
		const auto *e = std::get_if<wire::ErrorRep>(&m.value().body);
		if (e && e->leader) {
			redirect_ = e->leader;
			(*replies_)[*i] = Error(wire::status_to_errno(h.status),
						wire::status_name(h.status) + ": " +
							wire::leader_text(*e->leader));
		} else if (h.status != MDR_ST_OK)
			(*replies_)[*i] = Error(wire::status_to_errno(h.status),
						wire::status_name(h.status));
		else
			(*replies_)[*i] = std::move(m.value());
		progress_++;
		if (watch_ && watch_->answered)
			watch_->answered(*i);
	}
	if (auto st = post_recv(slot); !st.ok())
		bad_message_ = Error(st.error(), "cannot repost a receive: " + st.message());
}

template <typename Pred>
Status RdmaClient::poll_until(Pred pred, int timeout_ms)
{
	const auto deadline = std::chrono::steady_clock::now() +
			      std::chrono::milliseconds(timeout_ms);

	while (!pred()) {
		ibv_wc wc[16];
		int n = ibv_poll_cq(cq_.get(), 16, wc);

		if (n < 0)
			return Error(-EIO, "ibv_poll_cq");
		for (int i = 0; i < n; i++) {
			const bool ok = wc[i].status == IBV_WC_SUCCESS;

			if (wc[i].wr_id == kReadWr) {
				read_done_ = true;
				read_status_ = ok ? 0
					       : wc[i].status == IBV_WC_REM_ACCESS_ERR ? -EACCES
					       : -EIO;
			} else if (!ok) {
				// The QP is in error: the first real error says why,
				// the flushes after it say nothing more.
				if (!broken_ && wc[i].status != IBV_WC_WR_FLUSH_ERR)
					broken_why_ = ibv_wc_status_str(wc[i].status);
				broken_ = true;
			} else if ((wc[i].wr_id & kWrKind) == kSendWr) {
				free_send_.push_back(uint32_t(wc[i].wr_id & ~kWrKind));
				progress_++;
			} else if (wc[i].wr_id < kRecvSlots) {
				on_recv(uint32_t(wc[i].wr_id), wc[i].byte_len);
			}
		}
		if (pred())
			break;
		if (broken_)
			return Error(-ECONNRESET, "connection to mdnode lost" +
						  (broken_why_.empty() ? std::string()
								       : ": " + broken_why_));
		if (n > 0)
			continue;
		// Nothing ready: sleep on the completion channel and the
		// connection's events until the deadline. mdnode's disconnect
		// moves only its own QP to error: ours hears of it as an rdma_cm
		// event, and would otherwise wait for the deadline.
		const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
			deadline - std::chrono::steady_clock::now()).count();
		if (left <= 0)
			return Error(-ETIMEDOUT, "mdnode did not answer in time");
		pollfd p[2] = {{ch_->fd, POLLIN, 0}, {ec_->fd, POLLIN, 0}};
		if (::poll(p, 2, int(left)) <= 0)
			continue;
		if (p[0].revents & POLLIN) {
			ibv_cq *cq;
			void *ctx;
			if (ibv_get_cq_event(ch_.get(), &cq, &ctx) == 0) {
				ibv_ack_cq_events(cq, 1);
				ibv_req_notify_cq(cq_.get(), 0);
			}
		}
		rdma_cm_event *ev;
		if ((p[1].revents & POLLIN) && rdma_get_cm_event(ec_.get(), &ev) == 0) {
			const rdma_cm_event_type type = ev->event;
			rdma_ack_cm_event(ev);
			if (type == RDMA_CM_EVENT_DISCONNECTED ||
			    type == RDMA_CM_EVENT_DEVICE_REMOVAL ||
			    type == RDMA_CM_EVENT_TIMEWAIT_EXIT) {
				broken_ = true;
				if (broken_why_.empty())
					broken_why_ = "mdnode closed it";
				// What completed before the disconnect is taken next round.
			}
		}
	}
	return {};
}

unsigned RdmaClient::queue_depth() const
{
	return std::min<unsigned>(rep_.queue_depth, kQueueDepth);
}

Result<wire::Msg> RdmaClient::call(const wire::Body &request, int timeout_ms)
{
	return std::move(call_many(std::span(&request, 1), timeout_ms)[0]);
}

std::vector<Result<wire::Msg>> RdmaClient::call_many(std::span<const wire::Body> requests,
						     int timeout_ms, const Watch *watch)
{
	std::vector<std::optional<Result<wire::Msg>>> replies(requests.size());
	const unsigned depth = watch && watch->depth ? std::min(watch->depth, queue_depth())
						     : queue_depth();
	Pipeline pipeline(requests.size(), depth, next_req_);
	std::optional<Error> failed;

	if (timeout_ms <= 0)
		timeout_ms = opts_.timeout_ms;
	pipeline_ = &pipeline;
	replies_ = &replies;
	watch_ = watch;
	bad_message_.reset();
	while (!pipeline.done()) {
		// Fill the window: a credit and a send slot for each request.
		while (!failed && !free_send_.empty()) {
			std::optional<Pipeline::Send> s = pipeline.next();
			if (!s)
				break;
			std::byte out[kSendSize];
			const size_t max = std::min<size_t>(kSendSize, rep_.max_msg);
			auto n = wire::encoded_size(requests[s->index]) <= max
					 ? wire::encode(std::span(out, max), s->req_id,
							requests[s->index])
					 : Result<size_t>(Error(-EMSGSIZE, "request too large"));
			if (!n.ok()) {
				pipeline.complete(s->req_id);
				replies[s->index] = Error(n.error(), n.message());
				continue;
			}
			const uint32_t slot = free_send_.back();
			if (auto st = post_send(slot, std::span(out, n.value())); !st.ok()) {
				failed = Error(st.error(), st.message());
				break;
			}
			free_send_.pop_back();
			if (watch && watch->sent)
				watch->sent(s->index);
		}
		if (failed || pipeline.done())
			break;
		const uint64_t before = progress_;
		auto st = poll_until([&] { return progress_ != before || bad_message_; },
				     timeout_ms);
		if (!st.ok())
			failed = Error(st.error(), st.message());
		else if (bad_message_)
			failed = *bad_message_;
		if (failed)
			break;
	}
	if (failed)
		for (size_t i : pipeline.abandon())
			replies[i] = *failed;
	next_req_ = pipeline.next_id();
	pipeline_ = nullptr;
	replies_ = nullptr;
	watch_ = nullptr;

	std::vector<Result<wire::Msg>> out;
	out.reserve(replies.size());
	for (auto &r : replies)
		out.push_back(std::move(*r));
	return out;
}

Result<std::vector<std::byte>> RdmaClient::read(uint64_t addr, uint32_t rkey, uint32_t len)
{
	std::byte *area = buf_.data() + kReadAt;

	if (len == 0 || len > kReadArea)
		return Error(-EINVAL, "READ length out of range");
	ibv_sge sge{reinterpret_cast<uintptr_t>(area), len, buf_.lkey()};
	ibv_send_wr wr{}, *bad;
	wr.wr_id = kReadWr;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	read_done_ = false;
	read_status_ = 0;
	if (int ret = ibv_post_send(id_->qp, &wr, &bad))
		return Error(-ret, "ibv_post_send (READ)");
	if (auto st = poll_until([this] { return read_done_; }, opts_.timeout_ms); !st.ok())
		return Error(st.error(), st.error() == -ETIMEDOUT
						 ? "the RDMA READ did not complete in time"
						 : st.message());
	if (read_status_)
		return Error(read_status_, "RDMA READ failed");
	return std::vector<std::byte>(area, area + len);
}

Status RdmaClient::serve_pushes(int ms)
{
	auto st = poll_until([] { return false; }, ms);

	if (st.error() == -ETIMEDOUT)
		return {};
	return st;
}

Status RdmaClient::authenticate(std::span<const uint8_t> key)
{
	auto r = call(wire::AuthReq{.mac = admin_mac(key, rep_.nonce, opts_.host_id)});

	if (!r.ok())
		return Error(r.error(), "authentication: " + r.message());
	return {};
}

HostTranscript RdmaClient::host_transcript(const Nonce &host_nonce) const
{
	return HostTranscript{.node_nonce = rep_.nonce, .host_nonce = host_nonce,
			      .host_id = req_.host_id, .node_id = rep_.node_id,
			      .boot_id = rep_.boot_id, .tenant = req_.tenant,
			      .version = rep_.version, .host_qpn = id_->qp->qp_num,
			      .node_qpn = node_qpn_};
}

Result<wire::HostAuthReq> RdmaClient::authenticate_host(std::span<const uint8_t> key)
{
	if (opts_.role != MDR_ROLE_HOST || rep_.version < wire::kHostAuthVersion)
		return Error(-EINVAL, "host authentication needs a host connection of wire "
				      "version 3, not " + std::to_string(rep_.version));
	auto nonce = random_nonce();
	if (!nonce.ok())
		return Error(nonce.error(), nonce.message());
	const HostTranscript t = host_transcript(nonce.value());
	wire::HostAuthReq req{.nonce = nonce.value(),
			      .mac = host_mac(key, AuthLabel::host, t)};
	auto r = call(req);
	if (!r.ok())
		return Error(r.error(), "authentication: " + r.message());
	const auto *rep = std::get_if<wire::HostAuthRep>(&r.value().body);
	if (!rep)
		return Error(-EPROTO, "authentication: mdnode answered with another message");
	if (!mac_equal(host_mac(key, AuthLabel::node, t), rep->mac))
		return Error(-EACCES, "authentication: mdnode's proof is wrong: it does not "
				      "hold this host's key");
	return req;
}

} // namespace mdr
