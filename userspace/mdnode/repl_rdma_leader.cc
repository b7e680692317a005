// SPDX-License-Identifier: GPL-2.0
//
// repl_rdma_leader.cc - the leader's side of log shipping over RDMA: one
// connection per follower under the LogShipper (see repl_rdma.h).
//
// A connection, as its state says:
//
//	idle		no QP; tick() begins one once retry_at has passed
//			(never again after a refusal as stale: deposed)
//	resolving	rdma_cm resolves the follower's address and route
//	connecting	QP set up, the request sent; the accept carries the
//			ring, checked against what was asked (check_accept())
//	live		the shipper writes through it; ended by an error of
//			any kind, which reap() turns back into idle
#include "mdnode/repl_rdma.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <utility>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "lib/util/errors.h"
#include "lib/verbs/verbs.h"
#include "mdnode/log.h"
#include "mdnode/repl_rdma_ep.h"
#include "mdnode/repl_sendq.h"

namespace mdnode::repl {

namespace {

MDNODE_LOG_SUBSYSTEM("repl");

int64_t now_ms()
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(
		std::chrono::steady_clock::now().time_since_epoch()).count();
}

} // namespace

struct RdmaShipLink::Conn {
	enum class St { idle, resolving, connecting, live } st = St::idle;

	std::string member;
	ReplicaAddress where;
	std::unique_ptr<Endpoint> ep;
	// The follower's ring, as written here: its memory kept from one
	// connection to the next, registered for each once it is up.
	mdr::verbs::Mapping mirror_mem;
	mdr::verbs::Region mirror;
	ConnReq req;
	ConnAcc acc;
	int64_t retry_at = 0;
	std::string broken;		// why it ends, at the next reap()
	SendQueue sq;
	MemberLinkStats stats;

	Conn(uint32_t depth, size_t max_queued) : sq(depth, max_queued) {}
};

RdmaShipLink::RdmaShipLink(const LinkOptions &opts) : opts_(opts) {}

RdmaShipLink::~RdmaShipLink()
{
	for (auto &[member, c] : conns_) {
		if (c->st == Conn::St::live)
			rdma_disconnect(c->ep->cm());
		release(*c);
	}
}

mdr::Result<std::unique_ptr<RdmaShipLink>> RdmaShipLink::create(
	const LinkOptions &opts, std::vector<mdr::verbs::Mapping> mirrors)
{
	auto bad = [](const std::string &why) {
		return mdr::Error(-EINVAL, "replication link: " + why);
	};

	if (opts.followers.empty())
		return bad("no followers");
	if (opts.epoch == 0 || opts.leader_id == 0)
		return bad("epoch or leader id 0");
	if (opts.send_depth < 8)
		return bad("a send queue of " + std::to_string(opts.send_depth) + " WRs");
	if (mdr::Status ok = check_ring(opts.ring_bytes, opts.max_batch_bytes); !ok.ok())
		return bad(ok.message());

	std::unique_ptr<RdmaShipLink> l(new RdmaShipLink(opts));
	auto ec = mdr::verbs::event_channel();

	if (!ec.ok())
		return mdr::Error(ec.error(), ec.message());
	l->ec_ = std::move(ec).value();
	l->spare_mirrors_ = std::move(mirrors);
	for (const auto &[member, where] : opts.followers)
		if (mdr::Status st = l->add_member(member, where); !st.ok())
			return mdr::Error(st.error(), st.message());
	return l;
}

mdr::Status RdmaShipLink::add_member(const std::string &member, const ReplicaAddress &where)
{
	if (where.id == 0 || where.address.empty())
		return mdr::Error(-EINVAL, "replication link: follower " + member +
					   " without an id or address");
	if (conns_.count(member))
		return mdr::Error(-EEXIST, "replication link: follower " + member +
					   " is one already");

	auto c = std::make_unique<Conn>(opts_.send_depth, opts_.max_queued);

	c->member = member;
	c->where = where;
	// A mapping made ahead (its pages in place), of the ring's size.
	while (!spare_mirrors_.empty() && !c->mirror_mem) {
		if (spare_mirrors_.back().size() == opts_.ring_bytes)
			c->mirror_mem = std::move(spare_mirrors_.back());
		spare_mirrors_.pop_back();
	}
	conns_.emplace(member, std::move(c));
	return {};
}

// As reap() ends a connection, without the shipper (it let the member go)
// and for good. rdma_cm's events of the id were acked as they came
// (on_cm_event()), so destroying it waits for nothing, and none of them
// names the Conn after this.
void RdmaShipLink::remove_member(const std::string &member)
{
	auto it = conns_.find(member);

	if (it == conns_.end())
		return;
	Conn &c = *it->second;
	if (c.st == Conn::St::live)
		rdma_disconnect(c.ep->cm());
	release(c);
	conns_.erase(it);
}

std::vector<mdr::verbs::Mapping> RdmaShipLink::take_mirrors()
{
	std::vector<mdr::verbs::Mapping> out = std::move(spare_mirrors_);

	spare_mirrors_.clear();
	for (auto &[member, c] : conns_) {
		if (c->st == Conn::St::live)
			rdma_disconnect(c->ep->cm());
		release(*c);
		c->st = Conn::St::idle;
		c->retry_at = std::numeric_limits<int64_t>::max();
		if (c->mirror_mem)
			out.push_back(std::move(c->mirror_mem));
	}
	return out;
}

std::vector<int> RdmaShipLink::fds() const
{
	std::vector<int> fds{ec_->fd};

	for (const auto &[member, c] : conns_)
		if (c->ep && c->ep->fd() >= 0)
			fds.push_back(c->ep->fd());
	return fds;
}

bool RdmaShipLink::process(int fd, unsigned budget)
{
	bool more = false;

	if (fd == ec_->fd)
		take_cm_events(ec_.get(), budget, [this](rdma_cm_event *ev) { on_cm_event(ev); });
	for (auto &[member, c] : conns_)
		if (c->ep && c->ep->fd() == fd) {
			Conn &cr = *c;
			more = c->ep->drain(budget, [&](const ibv_wc &wc) { on_completion(cr, wc); });
		}
	reap();
	return more;
}

void RdmaShipLink::tick()
{
	const int64_t now = now_ms();

	for (auto &[member, c] : conns_)
		if (c->st == Conn::St::idle && now >= c->retry_at)
			begin(*c);
	reap();
}

void RdmaShipLink::fail(Conn &c, const std::string &why)
{
	if (c.broken.empty())
		c.broken = why.empty() ? "failed" : why;
}

// Ends the connections that failed: the shipper stops writing to them,
// their QP goes before the mirror it reads, and tick() tries again.
void RdmaShipLink::reap()
{
	for (auto &[member, cp] : conns_) {
		Conn &c = *cp;

		if (c.broken.empty())
			continue;
		if (c.st == Conn::St::live) {
			c.stats.disconnects++;
			if (shipper_)
				shipper_->disconnect(member);
			rdma_disconnect(c.ep->cm());
		}
		log_warn_rl("follower %s (%s): %s", member.c_str(), c.where.address.c_str(),
			    c.broken.c_str());
		c.stats.last_error = std::exchange(c.broken, {});
		release(c);
		c.sq.clear();
		c.st = Conn::St::idle;
		if (c.retry_at != std::numeric_limits<int64_t>::max())
			c.retry_at = now_ms() + opts_.retry_ms;
	}
}

// The QP stops first, then the mirror it reads goes, then the PD the
// mirror was registered in.
void RdmaShipLink::release(Conn &c)
{
	if (c.ep)
		c.ep->kill();
	c.mirror.reset();
	c.ep.reset();
}

void RdmaShipLink::begin(Conn &c)
{
	rdma_cm_id *id;

	c.stats.attempts++;
	if (rdma_create_id(ec_.get(), &id, &c, RDMA_PS_TCP))
		return fail(c, std::string("rdma_create_id: ") + strerror(errno));
	c.ep = std::make_unique<Endpoint>(id);
	c.st = Conn::St::resolving;

	auto dst = mdr::verbs::resolve(c.where.address, c.where.port, AI_NUMERICHOST);
	if (!dst.ok())
		return fail(c, dst.message());
	std::optional<mdr::verbs::Address> src;
	if (!opts_.source.empty()) {
		auto s = mdr::verbs::resolve(opts_.source, 0, AI_NUMERICHOST);
		if (!s.ok())
			return fail(c, "source " + s.message());
		src = s.value();
	}
	if (rdma_resolve_addr(id, src ? src->sa() : nullptr, dst.value().sa(), opts_.resolve_ms))
		return fail(c, std::string("rdma_resolve_addr: ") + strerror(errno));
}

void RdmaShipLink::on_cm_event(rdma_cm_event *ev)
{
	Conn *c = static_cast<Conn *>(ev->id->context);
	const rdma_cm_event_type type = ev->event;
	const int status = ev->status;
	// Private data lives in the event: copied before the ack frees it.
	const auto *p = static_cast<const std::byte *>(ev->param.conn.private_data);
	const std::vector<std::byte> pdata(p, p ? p + ev->param.conn.private_data_len : p);
	const bool ours = c && c->ep && c->ep->cm() == ev->id;

	rdma_ack_cm_event(ev);
	if (!ours)
		return;
	switch (type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(c->ep->cm(), opts_.resolve_ms))
			fail(*c, std::string("rdma_resolve_route: ") + strerror(errno));
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		on_route(*c);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		on_established(*c, pdata);
		break;
	case RDMA_CM_EVENT_REJECTED:
		on_rejected(*c, pdata);
		break;
	default:
		fail(*c, std::string(rdma_event_str(type)) + " (status " + std::to_string(status) +
				 ")");
		break;
	}
}

void RdmaShipLink::on_route(Conn &c)
{
	if (mdr::Status st = c.ep->setup(opts_.send_depth, opts_.recv_depth); !st.ok())
		return fail(c, st.message());

	c.req = {.group = opts_.group, .epoch = opts_.epoch, .leader_id = opts_.leader_id,
		 .max_batch_bytes = opts_.max_batch_bytes, .ring_bytes = opts_.ring_bytes};

	const std::vector<std::byte> pdata = encode_conn_req(c.req);
	rdma_conn_param param = conn_param(pdata);

	if (rdma_connect(c.ep->cm(), &param))
		return fail(c, std::string("rdma_connect: ") + strerror(errno));
	c.st = Conn::St::connecting;
}

void RdmaShipLink::on_established(Conn &c, std::span<const std::byte> pdata)
{
	if (c.st != Conn::St::connecting)
		return fail(c, "ESTABLISHED while not connecting");

	auto acc = parse_conn_acc(pdata);
	if (!acc.ok())
		return fail(c, acc.message());
	if (mdr::Status ok = check_accept(c.req, acc.value()); !ok.ok())
		return fail(c, ok.message());
	// The replica it dialed is the one the set names there: an address
	// of another replica would count one journal as two voters.
	if (acc.value().follower_id != c.where.id)
		return fail(c, "replica " + std::to_string(acc.value().follower_id) +
			       " answered at " + c.where.address + ":" +
			       std::to_string(c.where.port) + ", where the set has replica " +
			       std::to_string(c.where.id));
	// Written here, then by RDMA WRITE into the ring: local access only.
	// Only now: a follower that is down makes attempts that never come
	// here, and registering 16 MiB would stall the loop on each.
	if (!c.mirror_mem) {
		auto mem = mdr::verbs::Mapping::create(opts_.ring_bytes);
		if (!mem.ok())
			return fail(c, "mirror: " + mem.message());
		c.mirror_mem = std::move(mem).value();
	}
	auto m = mdr::verbs::Region::over(c.ep->pd(), c.mirror_mem, IBV_ACCESS_LOCAL_WRITE);
	if (!m.ok())
		return fail(c, "mirror: " + m.message());
	c.mirror = std::move(m).value();
	c.acc = acc.value();
	c.st = Conn::St::live;
	c.stats.connects++;
	log_info_rl("follower %s (%s): connected in epoch %llu, its log at (%llu, %llu)%s",
		    c.member.c_str(), c.where.address.c_str(), (unsigned long long)opts_.epoch,
		    (unsigned long long)c.acc.log.last.epoch,
		    (unsigned long long)c.acc.log.last.index,
		    c.acc.features & kFeatureEntryNotify
			    ? ""
			    : "; a WRITE and a notify per batch (it takes no bytes with a notify)");
	// The shipper writes what the follower lacks from here, through
	// write() and notify() on this connection.
	if (shipper_)
		if (mdr::Status st = shipper_->connect(c.member, c.acc.log.last,
						       c.acc.log.durable_index);
		    !st.ok())
			fail(c, st.message());
}

void RdmaShipLink::on_rejected(Conn &c, std::span<const std::byte> pdata)
{
	auto rej = parse_conn_rej(pdata);

	c.stats.refusals++;
	// No reject of ours: nobody listens there (yet), or the path failed.
	if (!rej.ok())
		return fail(c, "refused (no replica listening?)");
	c.stats.last_reject = rej.value().reason;
	if (rej.value().reason == kRejStale && rej.value().fenced_epoch > opts_.epoch) {
		// A newer leader exists: never again from this one.
		deposed_by_ = std::max(deposed_by_, rej.value().fenced_epoch);
		c.retry_at = std::numeric_limits<int64_t>::max();
	}
	fail(c, std::string("refused: ") + reject_name(rej.value().reason) + ", fenced to epoch " +
			std::to_string(rej.value().fenced_epoch));
}

RdmaShipLink::Conn *RdmaShipLink::live(const std::string &member)
{
	auto it = conns_.find(member);

	if (it == conns_.end() || it->second->st != Conn::St::live || !it->second->broken.empty())
		return nullptr;
	return it->second.get();
}

bool RdmaShipLink::connected(const std::string &member) const
{
	auto it = conns_.find(member);

	return it != conns_.end() && it->second->st == Conn::St::live;
}

const LogState *RdmaShipLink::log_state(const std::string &member) const
{
	auto it = conns_.find(member);

	if (it == conns_.end() || it->second->st != Conn::St::live)
		return nullptr;
	return &it->second->acc.log;
}

const MemberLinkStats *RdmaShipLink::stats(const std::string &member) const
{
	auto it = conns_.find(member);

	return it == conns_.end() ? nullptr : &it->second->stats;
}

mdr::Status RdmaShipLink::enqueue(const std::string &member, SendQueue::Op op)
{
	Conn *c = live(member);

	if (!c)
		return mdr::Error(-ENOTCONN, "replication link: " + member + " not connected");
	if (mdr::Status st = c->sq.push(std::move(op)); !st.ok()) {
		fail(*c, st.message());
		return mdr::Error(st.error(), "replication link: " + st.message());
	}
	flush(*c);
	if (!c->broken.empty())
		return mdr::Error(-ECONNRESET, "replication link: " + c->broken);
	return {};
}

// The shipper's offsets are its own, but checked all the same: a WRITE
// past the ring would fail at the follower's HCA and cost the connection.
mdr::Status RdmaShipLink::in_ring(uint32_t offset, size_t len) const
{
	if (uint64_t{offset} + len > opts_.ring_bytes || offset % kAlign)
		return mdr::Error(-ERANGE, "replication link: a write of " + std::to_string(len) +
						   " bytes at " + std::to_string(offset));
	return {};
}

mdr::Status RdmaShipLink::write(const std::string &member, uint32_t offset,
				std::span<const std::byte> bytes)
{
	if (mdr::Status st = in_ring(offset, bytes.size()); !st.ok())
		return st;
	return enqueue(member, {SendQueue::write, offset, {bytes.begin(), bytes.end()}});
}

mdr::Status RdmaShipLink::notify(const std::string &member, uint32_t offset)
{
	return enqueue(member, {SendQueue::notify, offset, {}});
}

mdr::Status RdmaShipLink::write_notify(const std::string &member, uint32_t offset,
				       std::span<const std::byte> bytes)
{
	Conn *c = live(member);

	// A follower of a release before kFeatureEntryNotify refuses a
	// notify with bytes: a WRITE, then the notify.
	if (!c || !(c->acc.features & kFeatureEntryNotify))
		return ShipLink::write_notify(member, offset, bytes);
	if (mdr::Status st = in_ring(offset, bytes.size()); !st.ok())
		return st;
	return enqueue(member, {SendQueue::write_notify, offset, {bytes.begin(), bytes.end()}});
}

mdr::Status RdmaShipLink::send(const std::string &member, std::span<const std::byte> msg)
{
	if (msg.size() > kControlSlot)
		return mdr::Error(-EMSGSIZE, "replication link: a control message of " +
						     std::to_string(msg.size()) + " bytes");
	return enqueue(member, {SendQueue::send, 0, {msg.begin(), msg.end()}});
}

// Posts what the send queue lets go now, in order (repl_sendq.h). A WRITE
// copies its bytes into the mirror at its ring offset and goes from there.
void RdmaShipLink::flush(Conn &c)
{
	while (c.broken.empty()) {
		const SendQueue::Op *op = c.sq.next();

		if (!op)
			break;

		const uint64_t seq = c.sq.next_seq();
		const unsigned flags = SendQueue::signalled(*op) ? IBV_SEND_SIGNALED : 0;
		mdr::Status st;

		switch (op->kind) {
		case SendQueue::write:
		case SendQueue::write_notify: {
			const bool entry = op->kind == SendQueue::write_notify;

			std::memcpy(c.mirror.data() + op->offset, op->bytes.data(), op->bytes.size());
			st = mdr::verbs::post_send(c.ep->cm()->qp, {
				.opcode = entry ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE,
				.wr_id = seq,
				.addr = c.mirror.data() + op->offset, .len = uint32_t(op->bytes.size()),
				.lkey = c.mirror.lkey(), .flags = flags,
				.remote_addr = c.acc.ring_addr + op->offset, .rkey = c.acc.ring_rkey,
				.imm = entry ? op->offset : 0});
			(entry ? c.stats.entries : c.stats.writes)++;
			break;
		}
		case SendQueue::notify:
			st = mdr::verbs::post_send(c.ep->cm()->qp, {
				.opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .wr_id = seq, .flags = flags,
				.remote_addr = c.acc.ring_addr, .rkey = c.acc.ring_rkey,
				.imm = op->offset});
			c.stats.notifies++;
			break;
		case SendQueue::send:
			st = c.ep->send_inline(op->bytes, seq);
			c.stats.sends++;
			break;
		}
		if (!st.ok())
			return fail(c, st.message());
		c.sq.pop();
	}
	c.stats.sq_waits = c.sq.waits();
}

void RdmaShipLink::on_completion(Conn &c, const ibv_wc &wc)
{
	if (!c.broken.empty())
		return;
	if (wc.status != IBV_WC_SUCCESS)
		return fail(c, std::string(wc.wr_id & kRecvTag ? "receive" : "send") +
				       " completion: " + ibv_wc_status_str(wc.status));
	if (!(wc.wr_id & kRecvTag)) {
		c.sq.completed(wc.wr_id);
		return flush(c);
	}

	const uint32_t slot = uint32_t(wc.wr_id & ~kRecvTag);
	// The leader lends no memory: a notify to it is refused with the rest.
	auto got = classify_receive(wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM,
				    wc.wc_flags & IBV_WC_WITH_IMM, ntohl(wc.imm_data), wc.byte_len,
				    0, kControlSlot);
	if (!got.ok())
		return fail(c, got.message());

	auto msg = parse_control(c.ep->slot(slot, wc.byte_len));
	if (!msg.ok())
		return fail(c, msg.message());
	const Durable *d = std::get_if<Durable>(&msg.value());
	if (!d)
		return fail(c, "a control message other than DURABLE from a follower");
	c.stats.durables++;
	if (shipper_)
		if (mdr::Status st = shipper_->on_durable(c.member, *d); !st.ok())
			return fail(c, st.message());
	if (mdr::Status st = c.ep->repost(slot); !st.ok())
		fail(c, st.message());
}

} // namespace mdnode::repl
