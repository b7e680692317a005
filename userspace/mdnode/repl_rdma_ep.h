// SPDX-License-Identifier: GPL-2.0
//
// repl_rdma_ep.h - one end of a replication connection, as both sides set
// it up: the rdma_cm id, a PD of its own, a completion channel and CQ
// whose fd the loop polls, an RC QP, and receive buffers for control
// messages. Only for repl_rdma_leader.cc, repl_rdma_follower.cc and
// repl_rdma_ep.cc: what the two sides share, so it is written once.
//
// A PD per connection: a follower's ring is registered in the PD of its
// leader's connection alone, so no other QP of this process can name its
// rkey, and its deregistration (a fence, the connection's end) takes
// nothing else with it. A replica has a handful of these connections.
#ifndef MDNODE_REPL_RDMA_EP_H
#define MDNODE_REPL_RDMA_EP_H

#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "lib/util/result.h"
#include "lib/verbs/verbs.h"

struct ibv_wc;
struct rdma_conn_param;
struct rdma_cm_event;
struct rdma_cm_id;
struct rdma_event_channel;

namespace mdnode::repl {

// The largest control message (LOG_STATE, 48 bytes) fits a receive slot,
// and is sent inline: the WR carries its bytes, no send buffer waits for
// a completion.
inline constexpr uint32_t kControlSlot = 64;

// wr_id of receives: kRecvTag | slot; of sends: a sequence number below.
inline constexpr uint64_t kRecvTag = 1ull << 63;

class Endpoint {
public:
	// Takes id (rdma_destroy_id() at the end, and its QP before it).
	explicit Endpoint(rdma_cm_id *id) : cm_(id) {}
	~Endpoint();
	Endpoint(const Endpoint &) = delete;
	Endpoint &operator=(const Endpoint &) = delete;

	// PD, channel (non-blocking), CQ, QP of send_depth and recv_depth
	// WRs with room for a control message inline, and recv_depth
	// receives posted. Once the id has its device (route resolved, or a
	// connect request). own, when given, is the connection's PD, made
	// ahead on the id's device and used by nothing else.
	mdr::Status setup(uint32_t send_depth, uint32_t recv_depth,
			  mdr::verbs::PdPtr own = nullptr);

	// The QP to the error state: the peer's WRITEs and SENDs fail from
	// now on, and what was posted here is flushed.
	void kill();

	// Takes the channel's events (non-blocking), re-arms, and polls at
	// most budget completions, each to fn; true when some may be left.
	// fn may not destroy this endpoint.
	bool drain(unsigned budget, const std::function<void(const ibv_wc &)> &fn);

	// A receive slot's bytes, and its receive posted again.
	std::span<const std::byte> slot(uint32_t i, uint32_t len) const;
	mdr::Status repost(uint32_t i);

	// A control message as an inline SEND, wr_id as given; unless
	// signalled, it completes only with an error (or with the next
	// signalled one, which retires it).
	mdr::Status send_inline(std::span<const std::byte> msg, uint64_t wr_id,
				bool signalled = true);

	rdma_cm_id *cm() const { return cm_; }
	ibv_pd *pd() const { return pd_.get(); }
	int fd() const;

private:
	rdma_cm_id *cm_;
	// Freed in reverse: the receive buffers, the CQ, its channel, the PD.
	mdr::verbs::PdPtr pd_;
	mdr::verbs::CompChannelPtr ch_;
	mdr::verbs::CqPtr cq_;
	mdr::verbs::Region recv_;
	uint32_t recv_slots_ = 0;
};

// The parameters both sides connect with, pdata their private data (kept
// alive by the caller until the call).
rdma_conn_param conn_param(std::span<const std::byte> pdata);

// The rdma_cm events waiting on ec, at most budget, each to fn (which
// acks it). Non-blocking: none when there is none.
void take_cm_events(rdma_event_channel *ec, unsigned budget,
		    const std::function<void(rdma_cm_event *)> &fn);

} // namespace mdnode::repl

#endif // MDNODE_REPL_RDMA_EP_H
