// SPDX-License-Identifier: GPL-2.0
//
// verbs.cc - see verbs.h.
#include "lib/verbs/verbs.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "lib/util/errors.h"

namespace mdr::verbs {

Result<Address> resolve(const std::string &host, uint16_t port, int flags)
{
	addrinfo hints{}, *res = nullptr;
	const std::string serv = std::to_string(port);

	hints.ai_flags = flags | AI_NUMERICSERV;
	hints.ai_socktype = SOCK_STREAM;
	if (int ret = getaddrinfo(host.empty() ? nullptr : host.c_str(), serv.c_str(), &hints,
				  &res))
		return Error(-EINVAL, "address '" + host + "': " + gai_strerror(ret));
	std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> ai(res, freeaddrinfo);
	Address a{};

	std::memcpy(&a.ss, ai->ai_addr, std::min<size_t>(ai->ai_addrlen, sizeof(a.ss)));
	return a;
}

bool set_nonblock(int fd)
{
	const int fl = fcntl(fd, F_GETFL);

	return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

std::string peer_address(rdma_cm_id *id)
{
	char host[NI_MAXHOST], serv[NI_MAXSERV];
	sockaddr *sa = rdma_get_peer_addr(id);
	socklen_t len = sa->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);

	if (getnameinfo(sa, len, host, sizeof(host), serv, sizeof(serv),
			NI_NUMERICHOST | NI_NUMERICSERV))
		return "?";
	return std::string(host) + ':' + serv;
}

void Free::operator()(ibv_pd *pd) const { ibv_dealloc_pd(pd); }
void Free::operator()(ibv_cq *cq) const { ibv_destroy_cq(cq); }
void Free::operator()(ibv_comp_channel *ch) const { ibv_destroy_comp_channel(ch); }
void Free::operator()(rdma_event_channel *ec) const { rdma_destroy_event_channel(ec); }

void Free::operator()(rdma_cm_id *id) const
{
	if (id->qp)
		rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

Result<EventChannelPtr> event_channel()
{
	EventChannelPtr ec(rdma_create_event_channel());

	if (!ec)
		return errno_error("rdma_create_event_channel");
	if (!set_nonblock(ec->fd))
		return errno_error("fcntl of the rdma_cm event channel");
	return ec;
}

Status create_rc_qp(rdma_cm_id *id, ibv_pd *pd, ibv_cq *cq, const QpCaps &caps)
{
	ibv_qp_init_attr qa{};

	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = caps.sig_all;
	qa.cap.max_send_wr = caps.send_wr;
	qa.cap.max_recv_wr = caps.recv_wr;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = caps.max_inline;
	if (rdma_create_qp(id, pd, &qa))
		return errno_error("rdma_create_qp");
	if (qa.cap.max_inline_data < caps.max_inline)
		return Error(-EOPNOTSUPP, "the QP sends " + std::to_string(qa.cap.max_inline_data) +
					  " bytes inline, not " + std::to_string(caps.max_inline));
	return {};
}

Status post_recv(ibv_qp *qp, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey)
{
	ibv_sge sge{reinterpret_cast<uintptr_t>(addr), len, lkey};
	ibv_recv_wr wr{}, *bad;

	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (int ret = ibv_post_recv(qp, &wr, &bad))
		return Error(-ret, "ibv_post_recv");
	return {};
}

Status post_send(ibv_qp *qp, const SendWr &w)
{
	ibv_sge sge{reinterpret_cast<uintptr_t>(w.addr), w.len, w.lkey};
	ibv_send_wr wr{}, *bad;

	wr.wr_id = w.wr_id;
	wr.sg_list = w.len ? &sge : nullptr;
	wr.num_sge = w.len ? 1 : 0;
	wr.opcode = static_cast<ibv_wr_opcode>(w.opcode);
	wr.send_flags = w.flags;
	wr.wr.rdma.remote_addr = w.remote_addr;
	wr.wr.rdma.rkey = w.rkey;
	if (w.opcode == IBV_WR_RDMA_WRITE_WITH_IMM || w.opcode == IBV_WR_SEND_WITH_IMM)
		wr.imm_data = htonl(w.imm);
	if (int ret = ibv_post_send(qp, &wr, &bad))
		return Error(-ret, "ibv_post_send");
	return {};
}

Region &Region::operator=(Region &&o) noexcept
{
	if (this != &o) {
		reset();
		data_ = std::exchange(o.data_, nullptr);
		len_ = std::exchange(o.len_, 0);
		mr_ = std::exchange(o.mr_, nullptr);
		owned_ = o.owned_;
	}
	return *this;
}

Result<Region> Region::create(ibv_pd *pd, size_t len, int access)
{
	Region r;
	void *mem = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED)
		return errno_error("mmap of " + std::to_string(len) + " bytes");
	r.data_ = static_cast<std::byte *>(mem);
	r.len_ = len;
	r.mr_ = ibv_reg_mr(pd, mem, len, access);
	if (!r.mr_)
		return errno_error("ibv_reg_mr (is RLIMIT_MEMLOCK large enough?)");
	return r;
}

Result<Region> Region::over(ibv_pd *pd, const Mapping &m, int access)
{
	Region r;

	if (!m)
		return Error(-EINVAL, "registering an empty mapping");
	r.owned_ = false;
	r.mr_ = ibv_reg_mr(pd, m.data(), m.size(), access);
	if (!r.mr_)
		return errno_error("ibv_reg_mr (is RLIMIT_MEMLOCK large enough?)");
	r.data_ = m.data();
	r.len_ = m.size();
	return r;
}

// Deregistered before unmapped: the HCA must not reach pages given back.
void Region::reset()
{
	if (ibv_mr *mr = std::exchange(mr_, nullptr))
		ibv_dereg_mr(mr);
	std::byte *data = std::exchange(data_, nullptr);
	const size_t len = std::exchange(len_, 0);

	if (data && owned_)
		munmap(data, len);
	owned_ = true;
}

Mapping::~Mapping()
{
	if (data_)
		munmap(data_, len_);
}

Mapping &Mapping::operator=(Mapping &&o) noexcept
{
	if (this != &o) {
		if (data_)
			munmap(data_, len_);
		data_ = std::exchange(o.data_, nullptr);
		len_ = std::exchange(o.len_, 0);
	}
	return *this;
}

Result<Mapping> Mapping::create(size_t len)
{
	Mapping m;
	void *mem = mmap(nullptr, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (mem == MAP_FAILED)
		return errno_error("mmap of " + std::to_string(len) + " bytes");
	m.data_ = static_cast<std::byte *>(mem);
	m.len_ = len;
	return m;
}

uint32_t Region::lkey() const { return mr_->lkey; }
uint32_t Region::rkey() const { return mr_->rkey; }

} // namespace mdr::verbs
