// SPDX-License-Identifier: GPL-2.0
//
// verbs.h - what every user of verbs and rdma_cm in user space does the
// same way: numeric addresses resolved, fds made non-blocking, a peer's
// address printed, work requests of one SGE posted, memory mapped and
// registered as one object. mdnode's transport (mdnode/rdma_server.cc),
// the RDMA client of mdnode (lib/client/rdma_client.cc) and the
// replication connections (mdnode/repl_rdma_*.cc) share it, so a fix to
// how a receive is posted or a region is released is made once.
//
// The provider's post and poll calls are static inline in
// <infiniband/verbs.h>: this is the seam that turns their returns into
// -errno (STYLE.md), not a mock point.
#ifndef MDR_VERBS_H
#define MDR_VERBS_H

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "lib/util/result.h"

struct ibv_comp_channel;
struct ibv_cq;
struct ibv_pd;
struct ibv_mr;
struct ibv_qp;
struct rdma_cm_id;
struct rdma_event_channel;

namespace mdr::verbs {

// An address and port for rdma_bind_addr() or rdma_resolve_addr():
// host by getaddrinfo() with flags (AI_NUMERICHOST, AI_PASSIVE, ...);
// an empty host with AI_PASSIVE is every address. -EINVAL naming host.
struct Address {
	sockaddr_storage ss;
	sockaddr *sa() { return reinterpret_cast<sockaddr *>(&ss); }
};
Result<Address> resolve(const std::string &host, uint16_t port, int flags);

// Every fd handed to an event loop reads non-blocking. The loop polls all
// its fds, then handles the ready ones in turn: handling one may destroy
// what made another ready (a DISCONNECTED event destroys a CQ whose
// completion event was waiting, and the kernel drops that event). A
// blocking read of the other would then wait forever, with the whole loop.
bool set_nonblock(int fd);

// "192.0.2.1:4791", or "?".
std::string peer_address(rdma_cm_id *id);

// RAII for the objects a connection owns (STYLE.md): each pointer frees
// its object with the provider's destroy call. An id goes with its QP, if
// it still has one; a QP must go before the CQ it uses, so an owner that
// holds both destroys the QP first (rdma_destroy_qp()) and declares the
// id before the CQ, PD and region, which members free in reverse.
struct Free {
	void operator()(ibv_pd *pd) const;
	void operator()(ibv_cq *cq) const;
	void operator()(ibv_comp_channel *ch) const;
	void operator()(rdma_event_channel *ec) const;
	void operator()(rdma_cm_id *id) const;
};
using PdPtr = std::unique_ptr<ibv_pd, Free>;
using CqPtr = std::unique_ptr<ibv_cq, Free>;
using CompChannelPtr = std::unique_ptr<ibv_comp_channel, Free>;
using EventChannelPtr = std::unique_ptr<rdma_event_channel, Free>;
using IdPtr = std::unique_ptr<rdma_cm_id, Free>;

// An rdma_cm event channel whose fd reads non-blocking.
Result<EventChannelPtr> event_channel();

// An RC QP on id, both queues on cq. max_inline: bytes a send may carry
// inline, at least (-EOPNOTSUPP when the device grants fewer); sig_all:
// every send signalled.
struct QpCaps {
	uint32_t send_wr;
	uint32_t recv_wr;
	uint32_t max_inline = 0;
	bool sig_all = false;
};
Status create_rc_qp(rdma_cm_id *id, ibv_pd *pd, ibv_cq *cq, const QpCaps &caps);

// A receive of one buffer. The provider's error as -errno.
Status post_recv(ibv_qp *qp, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey);

// A send-queue work request of at most one buffer (len 0: none, as a
// WRITE with immediate that only carries its immediate). imm is in host
// order; it travels in network order.
struct SendWr {
	int opcode;			// enum ibv_wr_opcode
	uint64_t wr_id = 0;
	const void *addr = nullptr;
	uint32_t len = 0;
	uint32_t lkey = 0;
	unsigned flags = 0;		// IBV_SEND_SIGNALED, IBV_SEND_INLINE, ...
	uint64_t remote_addr = 0;	// WRITE, READ
	uint32_t rkey = 0;
	uint32_t imm = 0;		// WRITE_WITH_IMM, SEND_WITH_IMM
};
Status post_send(ibv_qp *qp, const SendWr &w);

// Anonymous memory of len bytes with its pages in place (MAP_POPULATE),
// for a Region to register later: registering memory first touches its
// pages, and those faults, not the registration, are what costs (under
// emulation, about 60 ms for 16 MiB). Unmapped by the destructor.
class Mapping {
public:
	Mapping() = default;
	~Mapping();
	Mapping(Mapping &&o) noexcept { *this = std::move(o); }
	Mapping &operator=(Mapping &&o) noexcept;
	Mapping(const Mapping &) = delete;
	Mapping &operator=(const Mapping &) = delete;

	static Result<Mapping> create(size_t len);

	std::byte *data() const { return data_; }
	size_t size() const { return len_; }
	explicit operator bool() const { return data_ != nullptr; }

private:
	std::byte *data_ = nullptr;
	size_t len_ = 0;
};

// Anonymous memory of len bytes registered in pd with access: pinned
// once, released (deregistered, then unmapped) by the destructor or by
// reset(). Pages of their own, so a region's rkey never reaches memory
// beside it. over() registers a Mapping instead, which must outlive the
// region; reset() then only deregisters.
class Region {
public:
	Region() = default;
	~Region() { reset(); }
	Region(Region &&o) noexcept { *this = std::move(o); }
	Region &operator=(Region &&o) noexcept;
	Region(const Region &) = delete;
	Region &operator=(const Region &) = delete;

	static Result<Region> create(ibv_pd *pd, size_t len, int access);
	static Result<Region> over(ibv_pd *pd, const Mapping &m, int access);
	// Deregisters first: from then on the HCA refuses the region's rkey.
	void reset();

	std::byte *data() const { return data_; }
	size_t size() const { return len_; }
	ibv_mr *mr() const { return mr_; }
	uint32_t lkey() const;
	uint32_t rkey() const;

private:
	std::byte *data_ = nullptr;
	size_t len_ = 0;
	ibv_mr *mr_ = nullptr;
	bool owned_ = true;	// unmapped by reset()
};

} // namespace mdr::verbs

#endif // MDR_VERBS_H
