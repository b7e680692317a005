// SPDX-License-Identifier: GPL-2.0
//
// repl_rdma_ep.cc - see repl_rdma_ep.h.
#include "mdnode/repl_rdma_ep.h"

#include <algorithm>
#include <cerrno>
#include <utility>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "lib/util/errors.h"

namespace mdnode::repl {

namespace {

// Completions taken from the CQ at a time.
constexpr int kPollBatch = 16;

} // namespace

// The QP goes before what it uses, the id last; the members free the rest.
Endpoint::~Endpoint()
{
	if (cm_ && cm_->qp)
		rdma_destroy_qp(cm_);
	cq_.reset();
	ch_.reset();
	recv_.reset();
	pd_.reset();
	if (cm_)
		rdma_destroy_id(cm_);
}

mdr::Status Endpoint::setup(uint32_t send_depth, uint32_t recv_depth, mdr::verbs::PdPtr own)
{
	pd_ = own ? std::move(own) : mdr::verbs::PdPtr(ibv_alloc_pd(cm_->verbs));
	if (!pd_)
		return mdr::errno_error("ibv_alloc_pd");
	ch_.reset(ibv_create_comp_channel(cm_->verbs));
	if (!ch_)
		return mdr::errno_error("ibv_create_comp_channel");
	if (!mdr::verbs::set_nonblock(ch_->fd))
		return mdr::errno_error("fcntl of the completion channel");
	cq_.reset(ibv_create_cq(cm_->verbs, int(send_depth + recv_depth), nullptr, ch_.get(), 0));
	if (!cq_ || ibv_req_notify_cq(cq_.get(), 0))
		return mdr::errno_error("ibv_create_cq");

	auto r = mdr::verbs::Region::create(pd(), size_t(recv_depth) * kControlSlot,
					    IBV_ACCESS_LOCAL_WRITE);
	if (!r.ok())
		return mdr::Error(r.error(), r.message());
	recv_ = std::move(r).value();
	if (mdr::Status st = mdr::verbs::create_rc_qp(cm_, pd(), cq_.get(),
						      {.send_wr = send_depth,
						       .recv_wr = recv_depth,
						       .max_inline = kControlSlot});
	    !st.ok())
		return st;
	for (recv_slots_ = 0; recv_slots_ < recv_depth; recv_slots_++)
		if (mdr::Status st = repost(recv_slots_); !st.ok())
			return st;
	return {};
}

void Endpoint::kill()
{
	ibv_qp_attr a{};

	a.qp_state = IBV_QPS_ERR;
	if (cm_ && cm_->qp)
		ibv_modify_qp(cm_->qp, &a, IBV_QP_STATE);
}

int Endpoint::fd() const { return ch_ ? ch_->fd : -1; }

bool Endpoint::drain(unsigned budget, const std::function<void(const ibv_wc &)> &fn)
{
	ibv_cq *cq;
	void *ctx;

	// Re-armed before polling, so a completion that lands in between
	// raises a new event instead of waiting in the CQ.
	while (ibv_get_cq_event(ch_.get(), &cq, &ctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		ibv_req_notify_cq(cq, 0);
	}

	ibv_wc wc[kPollBatch];

	while (budget) {
		const int want = int(std::min<unsigned>(budget, kPollBatch));
		const int n = ibv_poll_cq(cq_.get(), want, wc);

		if (n <= 0)
			return false;
		budget -= unsigned(n);
		for (int i = 0; i < n; i++)
			fn(wc[i]);
		if (n < want)
			return false;
	}
	return true;
}

std::span<const std::byte> Endpoint::slot(uint32_t i, uint32_t len) const
{
	return {recv_.data() + size_t(i) * kControlSlot, std::min(len, kControlSlot)};
}

mdr::Status Endpoint::repost(uint32_t i)
{
	return mdr::verbs::post_recv(cm_->qp, kRecvTag | i, recv_.data() + size_t(i) * kControlSlot,
				     kControlSlot, recv_.lkey());
}

mdr::Status Endpoint::send_inline(std::span<const std::byte> msg, uint64_t wr_id,
				  bool signalled)
{
	return mdr::verbs::post_send(cm_->qp, {.opcode = IBV_WR_SEND, .wr_id = wr_id,
					       .addr = msg.data(), .len = uint32_t(msg.size()),
					       .flags = (signalled ? unsigned(IBV_SEND_SIGNALED) : 0u) |
							IBV_SEND_INLINE});
}

rdma_conn_param conn_param(std::span<const std::byte> pdata)
{
	rdma_conn_param p{};

	p.private_data = pdata.data();
	p.private_data_len = uint8_t(pdata.size());
	// WRITEs only: no READ either way.
	p.initiator_depth = 0;
	p.responder_resources = 0;
	p.retry_count = 7;
	// A follower whose receives are all taken says RNR; the HCA tries
	// again without end: that is back-pressure too, not a failure.
	p.rnr_retry_count = 7;
	return p;
}

void take_cm_events(rdma_event_channel *ec, unsigned budget,
		    const std::function<void(rdma_cm_event *)> &fn)
{
	rdma_cm_event *ev;

	while (budget-- && rdma_get_cm_event(ec, &ev) == 0)
		fn(ev);
}

} // namespace mdnode::repl
