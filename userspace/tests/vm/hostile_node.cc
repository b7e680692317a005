// SPDX-License-Identifier: GPL-2.0
//
// hostile_node.cc - mdr-test-hostile-node: listens with rdma_cm as mdnode
// does and answers a host (the kernel module) with one kind of malformed
// thing, chosen by the scenario argument, for the VM tests of the kernel's
// validation:
//
//	mdr-test-hostile-node --listen 192.0.2.2 [--port N] [--lease-ms MS]
//		[--host-key FILE] [--epoch E] [--map-sector N] SCENARIO
//
// Everything not named by the scenario is answered correctly: the accept,
// OPEN (volume of 64 MiB, 4 MiB extents, a 16-entry table registered for
// remote READ), RENEW, CLOSE, ALLOC (extent mapped on device 1 at
// index * 8192 sectors). The table holds sealed, unallocated entries; with
// --map-sector N, entry 0 is mapped on device 1 at sector N instead
// (not in the scenarios entries and entries-foreign: they set it).
//
// Scenarios:
//   good            nothing malformed
//   rep-magic, rep-version, rep-flags, rep-qdepth, rep-credits,
//   rep-maxmsg, rep-nonce
//                   the accept's private data breaks that rule
//   reply-magic, reply-length, reply-opcode, reply-unknown-opcode,
//   reply-status, reply-reqid, reply-flags, reply-errlen
//                   the reply to OPEN breaks that header rule
//   open-shift, open-tablelen, open-volume, open-size, open-lease
//                   the OPEN reply's body breaks that rule
//   entries         a good OPEN; table entries 1-7 are each bad in one
//                   way (see kEntryKinds), 0 is mapped on device 1 at
//                   sector 0, 8-15 are unallocated
//   entries-foreign every entry is mapped on device 1 and sealed for
//                   another volume: each must be refused, also those of
//                   a read-ahead window that begins with one
//   alloc-entry     ALLOC replies carry an entry with a bad checksum
//   push-reason     after the first RENEW, pushes an INVALIDATE with an
//                   unknown reason
//   push-track-v1   accepts with wire version 1; after the first RENEW,
//                   pushes an INVALIDATE with reason TRACK (version 2 only)
//   alloc-stall     disconnects at the first ALLOC, never answers a later
//                   one (as mdnode holds an ALLOC while another lease
//                   holder is silent)
//   reopen-shift    after the first RENEW, disconnects; every OPEN after
//                   that answers 8 MiB extents (and 128 MiB, so the table
//                   keeps its length). An OPEN sent again before it (a
//                   host that timed the first out) still gets 4 MiB.
//   frozen          entry 5 is FROZEN, for ever (not 0: the partition scan
//                   of attach reads there)
//   stale           entry 5 is mapped at generation 2; with the answer to
//                   the first RENEW after a SIGUSR1 (sent once the host has
//                   read it), an INVALIDATE (MOVE) of extent 5 at
//                   generation 100: every answer from then on is older
//                   than the push
//   alloc-again     every ALLOC is answered MDR_ST_AGAIN
//   auth-wrong-mac  with --host-key: HOST_AUTH is answered with a proof
//                   that is not the node's (one bit flipped): the host
//                   must refuse the connection
//   auth-perm       with --host-key: HOST_AUTH is answered MDR_ST_PERM
//                   (and the connection cut), as mdnode refuses a host
//   record-stepped-down
//                   with --epoch: from SIGUSR1 on (connected or not), the
//                   epoch record says epoch 0, sealed, as a leader that
//                   stepped down writes it, on every connection; RPCs are
//                   still answered at epoch E. A host must use no window
//                   READ with it (entry 0 mapped by --map-sector where the
//                   test knows the data for wrong). Logs "record: epoch 0".
//
// Epochs (wire version 7, which a host speaks only with a key): every OK
// reply to OPEN, RENEW and ALLOC ends with struct mdr_wire_serving. By
// default the node is one of its own: epoch 0 and no record. With
// --epoch E it answers as the leader of group 7, replica 1, at epoch E: a
// 32-byte epoch record (sealed at E) is registered for remote READ in the
// page after the table, and the serving tail names E and that record.
// --epoch needs --host-key.
//
// Host authentication (wire version 3): with --host-key FILE (the host's
// key, 16 to 64 bytes, trailing newlines stripped) a host that asks for
// version 3 gets it, with a random nonce in the accept, and its HOST_AUTH
// is checked against that key (a wrong proof: MDR_ST_PERM and the
// connection is cut, as mdnode does) and answered with the node's proof;
// every scenario goes on after it. Without --host-key this node speaks
// version 2 at most, as a node from before hosts authenticate.
// Connections are served one at a time; a new one replaces the old, so a
// host that reconnects meets the same scenario again. Prints one line per
// event and runs until killed.
#include <endian.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>

#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "lib/auth/auth.h"
#include "lib/wire/wire.h"

namespace {

namespace wire = mdr::wire;
using wire::load;
using wire::store;

constexpr uint32_t kMsg = 4096;		// bytes per buffer; our max_msg
constexpr uint32_t kRecv = 64;		// receives posted (>= a host's queue depth)
constexpr uint32_t kSend = 64;		// send buffers, used round robin
constexpr uint64_t kVolSize = 64ull << 20;
constexpr uint32_t kShift = 22;
constexpr uint64_t kEntries = kVolSize >> kShift;

// The extent of the "frozen" and "stale" scenarios.
constexpr uint64_t kStuck = 5;

// Entries 1-7 of the "entries" scenario, in index order.
const char *const kEntryKinds[] = {
	"good: mapped on device 1 at sector 0",
	"bad crc",
	"misaddressed: sealed as entry 3 of the same volume",
	"state 7",
	"mapped on device 99 (not bound on the host)",
	"mapped on device 1 beyond its end",
	"unallocated with a pstart",
	"generation 0",
};

volatile sig_atomic_t g_stop;

void on_signal(int) { g_stop = 1; }

// The test says when (SIGUSR1): "stale", once the host has cached the
// extent; "record-stepped-down", when the leader steps down.
volatile sig_atomic_t g_usr1 = 0;
void on_usr1(int) { g_usr1 = 1; }

// The group and replica an --epoch node leads as.
constexpr uint64_t kGroup = 7;
constexpr uint32_t kReplica = 1;

struct Server {
	std::string scenario;
	uint32_t lease_ms = 30000;
	std::vector<uint8_t> host_key;	// --host-key: version 3 hosts prove it
	uint64_t epoch = 0;		// --epoch: 0, a node of its own
	std::optional<uint64_t> map_sector;	// --map-sector: of entry 0
	bool stepped_down = false;	// record-stepped-down: the record says 0
	wire::ConnReq conn_req{};	// of the connection served
	wire::ConnRep conn_rep{};
	uint32_t host_qpn = 0;		// the host's QP (its connect request)
	rdma_event_channel *ec = nullptr;
	rdma_cm_id *listen_id = nullptr;

	// the one connection served
	rdma_cm_id *id = nullptr;
	ibv_pd *pd = nullptr;
	ibv_comp_channel *ch = nullptr;
	ibv_cq *cq = nullptr;
	ibv_mr *mr = nullptr;		// receive and send buffers
	ibv_mr *table_mr = nullptr;	// the volume's table, remote READ
	ibv_mr *rec_mr = nullptr;	// --epoch: the epoch record, remote READ
	std::byte *buf = nullptr;
	size_t buf_len = 0;
	mdr_wire_entry *table = nullptr;
	mdr_wire_epoch_rec *rec = nullptr;	// the page after the table
	uint32_t next_send = 0;
	uint64_t volume_id = 0;
	uint64_t push_id = 1;
	bool pushed = false;
	bool cut = false;		// reopen-shift: disconnected once

	bool is(std::string_view s) const { return scenario == s; }
	std::byte *recv_buf(uint32_t i) { return buf + size_t(i) * kMsg; }
	std::byte *send_buf(uint32_t i) { return buf + size_t(kRecv + i) * kMsg; }

	void drop();
	bool listen(const char *addr, uint16_t port);
	void on_connect_request(rdma_cm_event *ev);
	void post_recv(uint32_t i);
	void send(const void *msg, size_t len);
	void fill_table(uint64_t vol);
	void write_record();
	void step_down();
	mdr_wire_serving serving() const;
	void on_message(const std::byte *b, uint32_t len);
	void poll_cq();
	int run();
};

void Server::drop()
{
	if (id) {
		if (id->qp)
			rdma_destroy_qp(id);
		rdma_destroy_id(id);
		id = nullptr;
	}
	if (cq)
		ibv_destroy_cq(cq);
	if (ch)
		ibv_destroy_comp_channel(ch);
	if (mr)
		ibv_dereg_mr(mr);
	if (table_mr)
		ibv_dereg_mr(table_mr);
	if (rec_mr)
		ibv_dereg_mr(rec_mr);
	if (pd)
		ibv_dealloc_pd(pd);
	if (buf)
		munmap(buf, buf_len);
	cq = nullptr;
	ch = nullptr;
	mr = table_mr = rec_mr = nullptr;
	pd = nullptr;
	buf = nullptr;
	table = nullptr;
	rec = nullptr;
	pushed = false;
}

bool Server::listen(const char *addr, uint16_t port)
{
	addrinfo hints{}, *res;
	const std::string p = std::to_string(port);

	hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(addr, p.c_str(), &hints, &res)) {
		printf("error: bad address %s\n", addr);
		return false;
	}
	ec = rdma_create_event_channel();
	bool ok = ec && !rdma_create_id(ec, &listen_id, nullptr, RDMA_PS_TCP) &&
		  !rdma_bind_addr(listen_id, res->ai_addr) && !rdma_listen(listen_id, 8);
	freeaddrinfo(res);
	if (!ok)
		printf("error: cannot listen on %s:%u: %s\n", addr, port, strerror(errno));
	return ok;
}

void Server::post_recv(uint32_t i)
{
	ibv_sge sge{reinterpret_cast<uintptr_t>(recv_buf(i)), kMsg, mr->lkey};
	ibv_recv_wr wr{}, *bad;

	wr.wr_id = i;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (ibv_post_recv(id->qp, &wr, &bad))
		printf("error: ibv_post_recv: %s\n", strerror(errno));
}

void Server::send(const void *msg, size_t len)
{
	const uint32_t i = next_send++ % kSend;
	ibv_sge sge{reinterpret_cast<uintptr_t>(send_buf(i)), uint32_t(len), mr->lkey};
	ibv_send_wr wr{}, *bad;

	memcpy(send_buf(i), msg, len);
	wr.wr_id = 1ull << 32 | i;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(id->qp, &wr, &bad))
		printf("error: ibv_post_send: %s\n", strerror(errno));
}

void Server::fill_table(uint64_t vol)
{
	for (uint64_t i = 0; i < kEntries; i++) {
		wire::Entry e{.generation = 1};

		if (map_sector && i == 0)
			e = {.generation = 2, .pstart = *map_sector, .dev_id = 1,
			     .state = MDR_EXT_MAPPED};
		if (is("entries")) {
			switch (i) {
			case 0: e = {.generation = 2, .pstart = 0, .dev_id = 1,
				     .state = MDR_EXT_MAPPED}; break;
			case 1: case 2:
				e = {.generation = 2, .pstart = 8192 * i, .dev_id = 1,
				     .state = MDR_EXT_MAPPED}; break;
			case 3: e = {.generation = 2, .pstart = 8192 * i, .dev_id = 1,
				     .state = 7}; break;
			case 4: e = {.generation = 2, .pstart = 8192 * i, .dev_id = 99,
				     .state = MDR_EXT_MAPPED}; break;
			case 5: e = {.generation = 2, .pstart = 1ull << 40, .dev_id = 1,
				     .state = MDR_EXT_MAPPED}; break;
			case 6: e = {.generation = 1, .pstart = 8192}; break;
			case 7: e = {.generation = 0}; break;
			}
		}
		if (is("frozen") && i == kStuck)
			e = {.generation = 2, .pstart = 8192 * i, .dev_id = 1,
			     .state = MDR_EXT_FROZEN};
		if (is("stale") && i == kStuck)
			e = {.generation = 2, .pstart = 8192 * i, .dev_id = 1,
			     .state = MDR_EXT_MAPPED};
		if (is("entries-foreign")) {
			e = {.generation = 2, .pstart = 8192 * i, .dev_id = 1,
			     .state = MDR_EXT_MAPPED};
			table[i] = wire::make_entry(e, vol + 1, i);
			continue;
		}
		table[i] = wire::make_entry(e, vol, i);
		if (is("entries") && i == 1)
			store(table[i].crc, load(table[i].crc) ^ 1);
		if (is("entries") && i == 2)
			table[i] = wire::make_entry(e, vol, i + 1);
	}
}

// --epoch: what hosts READ after each window, at the epoch served, or 0
// once stepped down (the same replica and group).
void Server::write_record()
{
	if (rec)
		*rec = wire::make_epoch_record({.replica = kReplica, .group = kGroup,
						.epoch = stepped_down ? 0 : epoch});
}

void Server::step_down()
{
	stepped_down = true;
	write_record();
	printf("record: epoch 0 (stepped down); RPCs still answered at epoch %" PRIu64 "\n",
	       epoch);
}

// Version 7's tail: the same on every OK OPEN, RENEW and ALLOC reply of a
// connection; all zero from a node of its own.
mdr_wire_serving Server::serving() const
{
	mdr_wire_serving s{};

	if (epoch) {
		store(s.epoch, epoch);
		store(s.record_addr, reinterpret_cast<uintptr_t>(rec));
		store(s.record_rkey, rec_mr->rkey);
	}
	return s;
}

void Server::on_connect_request(rdma_cm_event *ev)
{
	const auto *pd_bytes = static_cast<const std::byte *>(ev->param.conn.private_data);
	auto req = wire::parse_conn_req({pd_bytes, ev->param.conn.private_data_len});
	rdma_cm_id *nid = ev->id;
	const uint32_t qp_num = ev->param.conn.qp_num;

	if (!req.ok()) {
		printf("connect: bad request: %s\n", req.message().c_str());
		rdma_reject(nid, nullptr, 0);
		rdma_destroy_id(nid);
		return;
	}
	if (id) {
		printf("connect: replacing the previous connection\n");
		rdma_disconnect(id);
		drop();
	}
	id = nid;
	pd = ibv_alloc_pd(id->verbs);
	ch = pd ? ibv_create_comp_channel(id->verbs) : nullptr;
	cq = ch ? ibv_create_cq(id->verbs, kRecv + kSend + 4, nullptr, ch, 0) : nullptr;
	buf_len = size_t(kRecv + kSend) * kMsg + 2 * 4096;	// + the table, the record
	void *mem = mmap(nullptr, buf_len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!cq || mem == MAP_FAILED) {
		printf("error: verbs setup: %s\n", strerror(errno));
		buf = nullptr;
		drop();
		return;
	}
	buf = static_cast<std::byte *>(mem);
	table = reinterpret_cast<mdr_wire_entry *>(buf + size_t(kRecv + kSend) * kMsg);
	mr = ibv_reg_mr(pd, buf, size_t(kRecv + kSend) * kMsg, IBV_ACCESS_LOCAL_WRITE);
	table_mr = ibv_reg_mr(pd, table, 4096, IBV_ACCESS_REMOTE_READ);
	if (epoch) {
		rec = reinterpret_cast<mdr_wire_epoch_rec *>(buf + size_t(kRecv + kSend) * kMsg +
							     4096);
		rec_mr = ibv_reg_mr(pd, rec, sizeof(*rec), IBV_ACCESS_REMOTE_READ);
		write_record();
	}
	ibv_qp_init_attr qa{};
	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = kSend;
	qa.cap.max_recv_wr = kRecv;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (!mr || !table_mr || (epoch && !rec_mr) || rdma_create_qp(id, pd, &qa) ||
	    ibv_req_notify_cq(cq, 0)) {
		printf("error: verbs setup: %s\n", strerror(errno));
		drop();
		return;
	}
	for (uint32_t i = 0; i < kRecv; i++)
		post_recv(i);

	wire::ConnRep rep{};
	// As mdnode: the highest both speak (the kernel may be older), but
	// push-track-v1 speaks version 1.
	// Without a host key: a node of version 2, which no host proves to.
	const uint16_t top = host_key.empty() ? 2 : MDR_WIRE_VERSION;
	auto version = wire::negotiate_version(req.value().version_min,
					       std::min(req.value().version_max, top));
	rep.version = is("push-track-v1") ? 1 : version.ok() ? version.value() : top;
	if (rep.version >= wire::kHostAuthVersion)
		rep.nonce = mdr::random_nonce().value();
	rep.queue_depth = req.value().queue_depth;
	rep.push_credits = std::min<uint16_t>(16, req.value().recv_depth - rep.queue_depth);
	rep.max_msg = kMsg;
	rep.node_id = 0x4853544c;
	rep.boot_id = 0x1000 + uint64_t(getpid());
	auto enc = wire::encode_conn_rep(rep, req.value());
	if (!enc.ok()) {
		printf("error: encode_conn_rep: %s\n", enc.message().c_str());
		drop();
		return;
	}
	mdr_wire_conn_rep r = enc.value();
	conn_req = req.value();
	conn_rep = rep;
	host_qpn = qp_num;
	if (is("rep-magic"))
		store(r.magic, 0x12345678);
	else if (is("rep-version"))
		store(r.version, MDR_WIRE_VERSION + 1);
	else if (is("rep-flags"))
		store(r.flags, 4);
	else if (is("rep-qdepth"))
		store(r.queue_depth, req.value().queue_depth + 1);
	else if (is("rep-credits"))
		store(r.push_credits, req.value().recv_depth);
	else if (is("rep-maxmsg"))
		store(r.max_msg, 100);
	else if (is("rep-nonce"))
		r.nonce[3] = 1;

	rdma_conn_param param{};
	param.private_data = &r;
	param.private_data_len = sizeof(r);
	param.responder_resources = std::max<uint8_t>(1, ev->param.conn.initiator_depth);
	param.initiator_depth = 0;
	param.rnr_retry_count = 7;
	if (rdma_accept(id, &param)) {
		printf("error: rdma_accept: %s\n", strerror(errno));
		drop();
		return;
	}
	printf("connect: accepted host %" PRIx64 " tenant %u version %u epoch %" PRIu64 " (%s)\n",
	       req.value().host_id, req.value().tenant, rep.version,
	       rep.version >= wire::kEpochVersion ? epoch : 0, scenario.c_str());
}

void Server::on_message(const std::byte *b, uint32_t len)
{
	mdr_wire_hdr h;
	union {
		mdr_wire_open_rep open;
		mdr_wire_renew_rep renew;
		mdr_wire_alloc_rep alloc;
		mdr_wire_inval inval;
		mdr_wire_host_auth_rep auth;
		mdr_wire_hdr hdr;
		std::byte raw[512];
	} out{};

	if (len < sizeof(h)) {
		printf("recv: %u bytes\n", len);
		return;
	}
	memcpy(&h, b, sizeof(h));
	const uint16_t op = load(h.opcode);
	const uint64_t req_id = load(h.req_id);
	printf("recv: %s req_id=%" PRIu64 " flags=%u\n", wire::opcode_name(op).c_str(), req_id,
	       load(h.flags));
	if (load(h.flags) & MDR_WIRE_F_REPLY)
		return;	// an ack of our push
	auto header = [&](mdr_wire_hdr &o, uint16_t opcode, size_t size) {
		store(o.magic, MDR_WIRE_MSG_MAGIC);
		store(o.opcode, opcode);
		store(o.flags, MDR_WIRE_F_REPLY);
		store(o.length, uint32_t(size));
		store(o.req_id, req_id);
	};
	size_t size = sizeof(out.hdr);
	// An OK reply to OPEN, RENEW or ALLOC of @body bytes: with version
	// 7's tail after it. Returns the reply's size.
	auto served = [&](size_t body) {
		if (conn_rep.version < wire::kEpochVersion)
			return body;
		const mdr_wire_serving sv = serving();
		memcpy(out.raw + body, &sv, sizeof(sv));
		return body + sizeof(sv);
	};

	switch (op) {
	case MDR_OP_OPEN: {
		mdr_wire_open_req q;
		memcpy(&q, b, std::min<size_t>(len, sizeof(q)));
		volume_id = load(q.volume_id);
		fill_table(volume_id);
		size = served(sizeof(out.open));
		header(out.open.hdr, op, size);
		store(out.open.volume_id, volume_id);
		store(out.open.size, kVolSize);
		store(out.open.table_addr, reinterpret_cast<uintptr_t>(table));
		store(out.open.table_len, kEntries * sizeof(mdr_wire_entry));
		store(out.open.table_rkey, table_mr->rkey);
		store(out.open.extent_shift, kShift);
		store(out.open.lease_ms, lease_ms);
		store(out.open.generation, 1);
		snprintf(out.open.name, sizeof(out.open.name), "hostile%" PRIu64, volume_id);
		if (is("reopen-shift") && cut) {
			store(out.open.extent_shift, kShift + 1);
			store(out.open.size, kVolSize * 2);
		}

		if (is("reply-magic"))
			store(out.hdr.magic, 0x1111);
		else if (is("reply-length"))
			store(out.hdr.length, uint32_t(size + 64));
		else if (is("reply-opcode")) {
			// a well-formed RENEW reply, to the OPEN
			memset(&out, 0, sizeof(out));
			size = served(sizeof(out.renew));
			header(out.renew.hdr, MDR_OP_RENEW, size);
			store(out.renew.lease_ms, lease_ms);
		}
		else if (is("reply-unknown-opcode"))
			store(out.hdr.opcode, 0x7f);
		else if (is("reply-status"))
			store(out.hdr.status, 200);
		else if (is("reply-reqid"))
			store(out.hdr.req_id, req_id + (1ull << 40));
		else if (is("reply-flags"))
			store(out.hdr.flags, MDR_WIRE_F_REPLY | 0x40);
		else if (is("reply-errlen"))
			store(out.hdr.status, MDR_ST_NOENT);	// error replies are 24 bytes
		else if (is("open-shift"))
			store(out.open.extent_shift, 40);
		else if (is("open-tablelen"))
			store(out.open.table_len, (kEntries + 1) * sizeof(mdr_wire_entry));
		else if (is("open-volume"))
			store(out.open.volume_id, volume_id + 1);
		else if (is("open-size"))
			store(out.open.size, kVolSize + 512);
		else if (is("open-lease"))
			store(out.open.lease_ms, 0);
		break;
	}
	case MDR_OP_RENEW:
		size = served(sizeof(out.renew));
		header(out.renew.hdr, op, size);
		store(out.renew.lease_ms, lease_ms);
		break;
	case MDR_OP_CLOSE:
		header(out.hdr, op, size);
		break;
	case MDR_OP_ALLOC: {
		if (is("alloc-again")) {
			header(out.hdr, op, size);
			store(out.hdr.status, MDR_ST_AGAIN);
			break;
		}
		if (is("alloc-stall")) {
			if (!cut) {
				cut = true;
				rdma_disconnect(id);
				printf("disconnected\n");
			}
			return;
		}
		mdr_wire_alloc_req q;
		memcpy(&q, b, std::min<size_t>(len, sizeof(q)));
		const uint64_t index = load(q.index);
		wire::Entry e{.generation = 2, .pstart = index << (kShift - 9), .dev_id = 1,
			      .state = MDR_EXT_MAPPED};
		size = served(sizeof(out.alloc));
		header(out.alloc.hdr, op, size);
		store(out.alloc.volume_id, load(q.volume_id));
		store(out.alloc.index, index);
		out.alloc.entry = wire::make_entry(e, load(q.volume_id), index);
		if (is("alloc-entry"))
			store(out.alloc.entry.crc, load(out.alloc.entry.crc) ^ 0x100);
		else if (index < kEntries)
			table[index] = out.alloc.entry;
		break;
	}
	case MDR_OP_PING:
		header(out.hdr, op, size);
		break;
	case MDR_OP_HOST_AUTH: {
		auto m = wire::parse({b, len}, wire::Side::node, MDR_ROLE_HOST);
		const auto *q = m.ok() ? std::get_if<wire::HostAuthReq>(&m.value().body) : nullptr;
		const mdr::HostTranscript t{
			.node_nonce = conn_rep.nonce, .host_nonce = q ? q->nonce : mdr::Nonce{},
			.host_id = conn_req.host_id, .node_id = conn_rep.node_id,
			.boot_id = conn_rep.boot_id, .tenant = conn_req.tenant,
			.version = conn_rep.version, .host_qpn = host_qpn,
			.node_qpn = id->qp->qp_num};
		if (!q || host_key.empty() || is("auth-perm") ||
		    !mdr::mac_equal(mdr::host_mac(host_key, mdr::AuthLabel::host, t), q->mac)) {
			printf("auth: refused (%s)\n", !q ? m.message().c_str()
						  : host_key.empty() ? "no --host-key"
						  : is("auth-perm") ? "auth-perm"
								    : "wrong proof");
			header(out.hdr, op, size);
			store(out.hdr.status, MDR_ST_PERM);
			send(&out, size);
			rdma_disconnect(id);
			return;
		}
		mdr::Mac mac = mdr::host_mac(host_key, mdr::AuthLabel::node, t);
		if (is("auth-wrong-mac"))
			mac[0] ^= 1;
		size = sizeof(mdr_wire_host_auth_rep);
		header(out.auth.hdr, op, size);
		memcpy(out.auth.mac, mac.data(), mac.size());
		printf("auth: ok%s\n", is("auth-wrong-mac") ? " (answered with a wrong proof)" : "");
		break;
	}
	default:
		header(out.hdr, op, size);
		store(out.hdr.status, MDR_ST_PROTO);
		break;
	}
	send(&out, size);
	printf("sent: %s reply (%zu bytes)\n", wire::opcode_name(op).c_str(), size);

	if (op == MDR_OP_RENEW && is("reopen-shift") && !cut) {
		cut = true;
		rdma_disconnect(id);
		printf("disconnected\n");
	}
	if (op == MDR_OP_RENEW && (is("push-reason") || is("push-track-v1") ||
				   (is("stale") && g_usr1)) && !pushed) {
		const uint32_t reason = is("push-reason") ? 9
				      : is("stale")	  ? MDR_INVAL_MOVE
							  : MDR_INVAL_TRACK;

		pushed = true;
		mdr_wire_inval p{};
		store(p.hdr.magic, MDR_WIRE_MSG_MAGIC);
		store(p.hdr.opcode, MDR_OP_INVALIDATE);
		store(p.hdr.length, uint32_t(sizeof(p)));
		store(p.hdr.req_id, push_id++);
		store(p.volume_id, volume_id);
		store(p.first, is("stale") ? kStuck : 0);
		store(p.count, 1);
		store(p.generation, is("stale") ? 100 : 5);
		store(p.reason, reason);
		send(&p, sizeof(p));
		printf("sent: INVALIDATE push with reason %u\n", reason);
	}
}

void Server::poll_cq()
{
	ibv_cq *ev_cq;
	void *ctx;
	ibv_wc wc[16];
	int n;

	if (ibv_get_cq_event(ch, &ev_cq, &ctx))
		return;
	ibv_ack_cq_events(ev_cq, 1);
	ibv_req_notify_cq(cq, 0);
	while ((n = ibv_poll_cq(cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
					printf("completion: %s\n", ibv_wc_status_str(wc[i].status));
				continue;
			}
			if (wc[i].opcode != IBV_WC_RECV)
				continue;
			const uint32_t slot = uint32_t(wc[i].wr_id);
			on_message(recv_buf(slot), wc[i].byte_len);
			if (id)
				post_recv(slot);
		}
	}
	fflush(stdout);
}

int Server::run()
{
	printf("listening (%s)\n", scenario.c_str());
	fflush(stdout);
	while (!g_stop) {
		if (g_usr1 && is("record-stepped-down") && !stepped_down)
			step_down();
		pollfd p[2] = {{ec->fd, POLLIN, 0}, {ch ? ch->fd : -1, POLLIN, 0}};
		if (::poll(p, 2, 1000) < 0)
			continue;
		if (p[1].revents & POLLIN)
			poll_cq();
		if (!(p[0].revents & POLLIN))
			continue;
		rdma_cm_event *ev;
		if (rdma_get_cm_event(ec, &ev))
			continue;
		const rdma_cm_event_type type = ev->event;
		rdma_cm_id *eid = ev->id;
		printf("cm: %s\n", rdma_event_str(type));
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			on_connect_request(ev);
			rdma_ack_cm_event(ev);
		} else {
			rdma_ack_cm_event(ev);
			if ((type == RDMA_CM_EVENT_DISCONNECTED ||
			     type == RDMA_CM_EVENT_TIMEWAIT_EXIT) && eid == id) {
				rdma_disconnect(id);
				drop();
			}
		}
		fflush(stdout);
	}
	drop();
	rdma_destroy_id(listen_id);
	rdma_destroy_event_channel(ec);
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	Server s;
	std::string addr;
	uint64_t port = MDR_WIRE_PORT;
	int i = 1;

	setvbuf(stdout, nullptr, _IOLBF, 0);
	for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		std::string_view a = argv[i], v = argv[i + 1];
		uint64_t n = 0;
		auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
		const bool num = ec == std::errc() && p == v.data() + v.size();

		if (a == "--listen")
			addr = v;
		else if (a == "--port" && num && n && n < 65536)
			port = n;
		else if (a == "--lease-ms" && num && n && n < (1ull << 32))
			s.lease_ms = uint32_t(n);
		else if (a == "--epoch" && num)
			s.epoch = n;
		else if (a == "--map-sector" && num)
			s.map_sector = n;
		else if (a == "--host-key") {
			auto k = mdr::read_key_file(std::string(v), MDR_HOST_KEY_MIN,
						    MDR_HOST_KEY_MAX);
			if (!k.ok()) {
				fprintf(stderr, "%s\n", k.message().c_str());
				return 2;
			}
			s.host_key = std::move(k).value();
		} else
			break;
	}
	if (addr.empty() || i != argc - 1) {
		fprintf(stderr, "usage: %s --listen ADDR [--port N] [--lease-ms MS] "
			"[--host-key FILE] [--epoch E] [--map-sector N] SCENARIO\n", argv[0]);
		return 2;
	}
	s.scenario = argv[i];
	// Epochs are version 7's, which a host without a key never asks for.
	if (s.epoch && s.host_key.empty()) {
		fprintf(stderr, "%s: --epoch needs --host-key\n", argv[0]);
		return 2;
	}
	if (s.is("record-stepped-down") && !s.epoch) {
		fprintf(stderr, "%s: record-stepped-down needs --epoch\n", argv[0]);
		return 2;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGUSR1, on_usr1);
	if (!s.listen(addr.c_str(), uint16_t(port)))
		return 1;
	return s.run();
}
