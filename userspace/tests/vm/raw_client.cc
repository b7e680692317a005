// SPDX-License-Identifier: GPL-2.0
//
// raw_client.cc - mdr-test-raw-client: connects to mdnode with rdma_cm and
// sends what a well-behaved client never would, for the VM tests of
// mdnode's handling of bad input. One line of output per step:
//
//	mdr-test-raw-client --node 192.0.2.2 --pdata version:2:3
//		-> "connect: rejected status=8 (...) version=1"
//	mdr-test-raw-client --node 192.0.2.2 --tenant 1 magic ping
//		-> "connect: ok", "magic: disconnected"
//	mdr-test-raw-client --node 192.0.2.2 --role admin role ping
//		-> "role: reply opcode=0x1 status=5 (...)", "ping: reply ... status=0"
//
// Options: --node ADDR, --port N, --tenant N, --host-id N, --role host|admin,
// --wait MS (how long to wait for an answer to each message, 2000), and
// --pdata KIND, the connect request's private data:
//   good (default), magic (bad magic), none (no private data),
//   short:N (the first N bytes of a good one), version:MIN:MAX,
//   maxmsg:N (asks mdnode to send up to N bytes), greedy (asks for all a
//   connection may: 128 requests, 16 pushes, 65536-byte messages).
// --conns N: make N connections, one after the other, each printing its
// "connect: ..." line, and keep them all (no message is sent); --hold MS:
// then keep them MS ms more before exiting (0). A flood of connections.
// Messages (each sent once the previous one was answered):
//   ping          a well-formed PING
//   short         10 bytes: less than a header
//   overlength    a PING whose header claims more bytes than are sent
//   badsize       a PING of 32 bytes (a PING is 24)
//   opcode        an unknown opcode
//   magic         a wrong magic
//   flags         an unknown header flag
//   reserved      the header's reserved field not zero
//   status        a request with a non-zero status
//   reply         an OPEN reply sent to mdnode
//   role          an admin request (VOL_LIST) on a host connection, a host
//                 request (OPEN) on an admin connection
//   bodyreserved  an OPEN whose body's reserved field is not zero
//   novol         an ALLOC in a volume this connection has not opened
//   oversized     8192 bytes: more than mdnode's receive buffers hold
// For each: "NAME: reply opcode=0xN status=N (name)", "NAME: disconnected"
// or "NAME: no answer". The program stops at a disconnect. Exit 0 when the
// connection was made (or refused, as printed), 1 on local failures.
#include <endian.h>
#include <netdb.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "lib/verbs/verbs.h"
#include "lib/wire/wire.h"
#include "tests/vm/vm_client.h"

namespace {

namespace wire = mdr::wire;
using mdr::test::parse_u64;

constexpr uint32_t kMsgSize = 4096;	// what we receive, and announce
constexpr uint32_t kRecvSlots = 4;
constexpr uint32_t kSendSize = 8192;	// room for "oversized"
constexpr uint64_t kSendWr = 1ull << 32;

struct Options {
	std::string node;
	uint16_t port = MDR_WIRE_PORT;
	uint32_t tenant = 0;
	uint64_t host_id = 0x5157;
	mdr_wire_role role = MDR_ROLE_HOST;
	std::string pdata = "good";
	int wait_ms = 2000;
	uint64_t conns = 1;
	uint64_t hold_ms = 0;
};

int die(const char *what)
{
	printf("error: %s: %s\n", what, strerror(errno));
	return 1;
}

class Raw {
public:
	// The QP goes first; the members free the rest.
	~Raw()
	{
		if (id_ && id_->qp)
			rdma_destroy_qp(id_.get());
	}

	// 0: connected; 1: refused (printed); -1: local failure (printed).
	int connect(const Options &o);
	// Sends bytes; then waits for a reply or the end of the connection.
	void exchange(const std::string &name, const std::vector<std::byte> &msg, int wait_ms);
	bool connected() const { return connected_; }

private:
	bool cm_event(int timeout_ms, rdma_cm_event_type *type, std::vector<std::byte> *pdata);
	void post_recv(uint32_t slot);

	// Freed in reverse: the CQ, the buffers, the PD, the id, the channel.
	mdr::verbs::EventChannelPtr ec_;
	mdr::verbs::IdPtr id_;
	mdr::verbs::PdPtr pd_;
	mdr::verbs::Region buf_;	// receive slots, then the one send
	mdr::verbs::CqPtr cq_;
	bool connected_ = false;
};

bool Raw::cm_event(int timeout_ms, rdma_cm_event_type *type, std::vector<std::byte> *pdata)
{
	pollfd p{ec_->fd, POLLIN, 0};
	rdma_cm_event *ev;

	if (::poll(&p, 1, timeout_ms) <= 0 || rdma_get_cm_event(ec_.get(), &ev))
		return false;
	*type = ev->event;
	if (pdata) {
		const auto *b = static_cast<const std::byte *>(ev->param.conn.private_data);
		pdata->assign(b, b ? b + ev->param.conn.private_data_len : b);
	}
	rdma_ack_cm_event(ev);
	return true;
}

void Raw::post_recv(uint32_t slot)
{
	(void)mdr::verbs::post_recv(id_->qp, slot, buf_.data() + size_t(slot) * kMsgSize,
				    kMsgSize, buf_.lkey());
}

int Raw::connect(const Options &o)
{
	addrinfo hints{}, *res;
	rdma_cm_event_type type;
	const std::string port = std::to_string(o.port);

	hints.ai_flags = AI_NUMERICSERV;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(o.node.c_str(), port.c_str(), &hints, &res)) {
		printf("error: bad address %s\n", o.node.c_str());
		return -1;
	}
	ec_.reset(rdma_create_event_channel());
	rdma_cm_id *id = nullptr;
	if (ec_ && rdma_create_id(ec_.get(), &id, nullptr, RDMA_PS_TCP) == 0)
		id_.reset(id);
	if (!id_ || rdma_resolve_addr(id, nullptr, res->ai_addr, 2000)) {
		freeaddrinfo(res);
		return -die("rdma_resolve_addr");
	}
	freeaddrinfo(res);
	if (!cm_event(5000, &type, nullptr) || type != RDMA_CM_EVENT_ADDR_RESOLVED ||
	    rdma_resolve_route(id, 2000) || !cm_event(5000, &type, nullptr) ||
	    type != RDMA_CM_EVENT_ROUTE_RESOLVED)
		return -die("resolving the address and route");

	pd_.reset(ibv_alloc_pd(id->verbs));
	if (pd_)
		cq_.reset(ibv_create_cq(id->verbs, 64, nullptr, nullptr, 0));
	if (!cq_)
		return -die("verbs setup");
	auto buf = mdr::verbs::Region::create(pd_.get(), size_t(kRecvSlots) * kMsgSize + kSendSize,
					      IBV_ACCESS_LOCAL_WRITE);
	if (!buf.ok()) {
		printf("error: %s\n", buf.message().c_str());
		return -1;
	}
	buf_ = std::move(buf).value();
	if (!mdr::verbs::create_rc_qp(id, pd_.get(), cq_.get(),
				      {.send_wr = 8, .recv_wr = kRecvSlots}).ok())
		return -die("rdma_create_qp");
	for (uint32_t i = 0; i < kRecvSlots; i++)
		post_recv(i);

	// The private data: a good request, then spoiled as asked. A host
	// here has no key: it speaks the versions before authentication, as
	// the module does without one.
	wire::ConnReq req{.role = o.role, .tenant = o.role == MDR_ROLE_HOST ? o.tenant : 0,
			  .host_id = o.host_id, .queue_depth = 1,
			  .recv_depth = kRecvSlots, .max_msg = kMsgSize};
	if (o.role == MDR_ROLE_HOST)
		req.version_max = wire::kHostAuthVersion - 1;
	if (o.pdata == "greedy") {
		req.queue_depth = 128;
		req.recv_depth = 128 + 16;
		req.max_msg = MDR_WIRE_MSG_MAX;
	}
	auto good = wire::encode_conn_req(req);
	if (!good.ok()) {
		printf("error: %s\n", good.message().c_str());
		return -1;
	}
	mdr_wire_conn_req pd = good.value();
	size_t pd_len = sizeof(pd);
	uint64_t a, b;
	const std::string_view kind = o.pdata;
	if (kind == "magic") {
		pd.magic = htole32(0x12345678);
	} else if (kind == "none") {
		pd_len = 0;
	} else if (kind.starts_with("short:") && parse_u64(kind.substr(6), a) && a < sizeof(pd)) {
		pd_len = a;
	} else if (kind.starts_with("version:")) {
		const auto colon = kind.find(':', 8);
		if (colon == std::string_view::npos || !parse_u64(kind.substr(8, colon - 8), a) ||
		    !parse_u64(kind.substr(colon + 1), b)) {
			printf("error: bad --pdata %s\n", o.pdata.c_str());
			return -1;
		}
		pd.version_min = htole16(uint16_t(a));
		pd.version_max = htole16(uint16_t(b));
	} else if (kind.starts_with("maxmsg:") && parse_u64(kind.substr(7), a)) {
		pd.max_msg = htole32(uint32_t(a));
	} else if (kind != "good" && kind != "greedy") {
		printf("error: bad --pdata %s\n", o.pdata.c_str());
		return -1;
	}

	rdma_conn_param param{};
	param.private_data = pd_len ? &pd : nullptr;
	param.private_data_len = uint8_t(pd_len);
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_connect(id, &param))
		return -die("rdma_connect");
	std::vector<std::byte> rep;
	if (!cm_event(5000, &type, &rep)) {
		printf("connect: no answer\n");
		return 1;
	}
	if (type == RDMA_CM_EVENT_REJECTED) {
		auto rej = wire::parse_conn_rej(rep);
		if (rej.ok())
			printf("connect: rejected status=%u (%s) version=%u\n", rej.value().status,
			       wire::status_name(rej.value().status).c_str(), rej.value().version);
		else
			printf("connect: rejected without a reason (%s)\n", rej.message().c_str());
		return 1;
	}
	if (type != RDMA_CM_EVENT_ESTABLISHED) {
		printf("connect: %s\n", rdma_event_str(type));
		return 1;
	}
	auto acc = wire::parse_conn_rep(rep, req);
	if (!acc.ok()) {
		printf("connect: bad accept: %s\n", acc.message().c_str());
		return -1;
	}
	printf("connect: ok version=%u\n", acc.value().version);
	connected_ = true;
	return 0;
}

void Raw::exchange(const std::string &name, const std::vector<std::byte> &msg, int wait_ms)
{
	std::byte *out = buf_.data() + size_t(kRecvSlots) * kMsgSize;
	ibv_sge sge{reinterpret_cast<uintptr_t>(out), uint32_t(msg.size()), buf_.lkey()};
	ibv_send_wr wr{}, *bad;

	std::memcpy(out, msg.data(), msg.size());
	wr.wr_id = kSendWr;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(id_->qp, &wr, &bad)) {
		printf("%s: error: ibv_post_send\n", name.c_str());
		connected_ = false;
		return;
	}
	const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
	while (std::chrono::steady_clock::now() < end) {
		ibv_wc wc[8];
		int n = ibv_poll_cq(cq_.get(), 8, wc);

		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id == kSendWr)
				continue;	// the connection's end shows as a CM event
			const uint32_t slot = uint32_t(wc[i].wr_id);
			auto hdr = wire::peek_header({buf_.data() + size_t(slot) * kMsgSize,
						      wc[i].byte_len});
			post_recv(slot);
			if (!hdr || !hdr->reply()) {
				printf("%s: unexpected message from mdnode\n", name.c_str());
				continue;
			}
			printf("%s: reply opcode=0x%x status=%u (%s)\n", name.c_str(), hdr->opcode,
			       hdr->status, wire::status_name(hdr->status).c_str());
			return;
		}
		if (n > 0)
			continue;
		rdma_cm_event_type type;
		if (cm_event(1, &type, nullptr)) {
			if (type == RDMA_CM_EVENT_DISCONNECTED) {
				printf("%s: disconnected\n", name.c_str());
				connected_ = false;
				return;
			}
		}
	}
	printf("%s: no answer\n", name.c_str());
}

void put_hdr(std::vector<std::byte> &m, uint16_t opcode, uint16_t flags, uint32_t length)
{
	mdr_wire_hdr h{};

	h.magic = htole16(MDR_WIRE_MSG_MAGIC);
	h.opcode = htole16(opcode);
	h.flags = htole16(flags);
	h.length = htole32(length);
	h.req_id = htole64(0x77);
	if (m.size() < sizeof(h))
		m.resize(sizeof(h));
	std::memcpy(m.data(), &h, sizeof(h));
}

mdr_wire_hdr *hdr_of(std::vector<std::byte> &m)
{
	return reinterpret_cast<mdr_wire_hdr *>(m.data());
}

// The bytes of message NAME on a connection of role, or false if unknown.
bool make(const std::string &name, mdr_wire_role role, std::vector<std::byte> &m)
{
	const uint32_t hs = sizeof(mdr_wire_hdr);

	m.assign(hs, std::byte{0});
	put_hdr(m, MDR_OP_PING, 0, hs);
	if (name == "ping") {
	} else if (name == "short") {
		m.resize(10);
	} else if (name == "overlength") {
		hdr_of(m)->length = htole32(100);
	} else if (name == "badsize") {
		m.resize(32);
		hdr_of(m)->length = htole32(32);
	} else if (name == "opcode") {
		hdr_of(m)->opcode = htole16(0x7f);
	} else if (name == "magic") {
		hdr_of(m)->magic = htole16(0x1234);
	} else if (name == "flags") {
		hdr_of(m)->flags = htole16(0x8000);
	} else if (name == "reserved") {
		hdr_of(m)->reserved = htole32(1);
	} else if (name == "status") {
		hdr_of(m)->status = htole16(MDR_ST_EXIST);
	} else if (name == "reply") {
		m.assign(sizeof(mdr_wire_open_rep), std::byte{0});
		put_hdr(m, MDR_OP_OPEN, MDR_WIRE_F_REPLY, sizeof(mdr_wire_open_rep));
	} else if (name == "role" && role == MDR_ROLE_HOST) {
		m.assign(sizeof(mdr_wire_list_req), std::byte{0});
		put_hdr(m, MDR_OP_VOL_LIST, 0, sizeof(mdr_wire_list_req));
	} else if (name == "role" || name == "bodyreserved") {
		mdr_wire_open_req o{};
		o.volume_id = htole64(1);
		if (name == "bodyreserved")
			o.reserved = htole32(1);
		m.assign(sizeof(o), std::byte{0});
		std::memcpy(m.data(), &o, sizeof(o));
		put_hdr(m, MDR_OP_OPEN, 0, sizeof(o));
	} else if (name == "novol") {
		mdr_wire_alloc_req a{};
		a.volume_id = htole64(999);
		m.assign(sizeof(a), std::byte{0});
		std::memcpy(m.data(), &a, sizeof(a));
		put_hdr(m, MDR_OP_ALLOC, 0, sizeof(a));
	} else if (name == "oversized") {
		m.resize(kSendSize);
		hdr_of(m)->length = htole32(kSendSize);
	} else {
		return false;
	}
	return true;
}

} // namespace

int main(int argc, char **argv)
{
	Options o;
	int i = 1;

	for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		const std::string_view a = argv[i], v = argv[i + 1];
		uint64_t n;

		if (mdr::test::address_option(a, v, o.node, o.port))
			continue;
		if (a == "--tenant" && parse_u64(v, n))
			o.tenant = uint32_t(n);
		else if (a == "--host-id" && parse_u64(v, n))
			o.host_id = n;
		else if (a == "--role" && (v == "host" || v == "admin"))
			o.role = v == "host" ? MDR_ROLE_HOST : MDR_ROLE_ADMIN;
		else if (a == "--pdata")
			o.pdata = v;
		else if (a == "--wait" && parse_u64(v, n))
			o.wait_ms = int(n);
		else if (a == "--conns" && parse_u64(v, n) && n >= 1 && n <= 4096)
			o.conns = n;
		else if (a == "--hold" && parse_u64(v, n))
			o.hold_ms = n;
		else {
			fprintf(stderr, "bad option %s %s (see the top of raw_client.cc)\n",
				argv[i], argv[i + 1]);
			return 2;
		}
	}
	if (o.node.empty()) {
		fprintf(stderr, "--node is required\n");
		return 2;
	}
	for (int k = i; k < argc; k++) {
		std::vector<std::byte> m;
		if (!make(argv[k], o.role, m)) {
			fprintf(stderr, "unknown message %s\n", argv[k]);
			return 2;
		}
	}

	if (o.conns > 1) {
		std::vector<std::unique_ptr<Raw>> held;
		for (uint64_t k = 0; k < o.conns; k++) {
			held.push_back(std::make_unique<Raw>());
			if (held.back()->connect(o) < 0)
				return 1;
			fflush(stdout);
		}
		printf("held: %zu\n", size_t(std::count_if(held.begin(), held.end(),
			[](const auto &r) { return r->connected(); })));
		fflush(stdout);
		std::this_thread::sleep_for(std::chrono::milliseconds(o.hold_ms));
		return 0;
	}
	Raw raw;
	int ret = raw.connect(o);
	if (ret)
		return ret < 0 ? 1 : 0;
	for (; i < argc && raw.connected(); i++) {
		std::vector<std::byte> m;
		make(argv[i], o.role, m);
		raw.exchange(argv[i], m, o.wait_ms);
		fflush(stdout);
	}
	return 0;
}
