// SPDX-License-Identifier: GPL-2.0
//
// repl_rdma_follower.cc - the follower's side of log shipping over RDMA:
// the listener, the one leader connection with its ring, and the receiver
// that outlives it (see repl_rdma.h).
//
// Fencing, in the order replication.md asks: the old connection's QP goes
// to the error state and its ring is deregistered (a WRITE already on the
// wire then fails at this HCA, and its rkey names nothing), the receiver
// is fenced (what reached the ring before is dropped as of a lower
// epoch), and only then is the new leader answered.
#include "mdnode/repl_rdma.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>
#include <utility>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "lib/util/errors.h"
#include "lib/verbs/verbs.h"
#include "mdnode/log.h"
#include "mdnode/repl_rdma_ep.h"
#include "mdnode/thread.h"

namespace mdnode::repl {

namespace {

MDNODE_LOG_SUBSYSTEM("repl");

// From an accept to the making of the next spare: past the new leader's
// catching up (its backlog, its EPOCH record), which the thread's CPU
// would slow.
constexpr std::chrono::milliseconds kSpareAfter(2000);

// A leader's ring: its memory for remote write alone, in pd.
mdr::Result<mdr::verbs::Region> make_ring(ibv_pd *pd, uint64_t bytes)
{
	return mdr::verbs::Region::create(pd, bytes,
					  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
}

} // namespace

// The owner's Sink as the receivers see it: a journal or store that
// refuses a record marks the follower failed (fail-stop, journal.h). The
// flag outlives the follower: the journal's callbacks may come later.
class RdmaFollower::Guard final : public Sink {
public:
	explicit Guard(Sink &inner) : inner_(inner) {}

	mdr::Status begin_batch(const BatchHeader &h) override
	{
		mdr::Status st = inner_.begin_batch(h);

		if (!st.ok())
			*failed = true;
		return st;
	}
	mdr::Status append(uint16_t type, std::span<const std::byte> payload, Done done) override
	{
		mdr::Status st = inner_.append(type, payload,
					       [failed = failed, done](const mdr::Status &s) {
			if (!s.ok())
				*failed = true;
			if (done)
				done(s);
		});

		if (!st.ok())
			*failed = true;
		return st;
	}
	mdr::Status apply(uint64_t index, uint16_t type, std::span<const std::byte> payload) override
	{
		mdr::Status st = inner_.apply(index, type, payload);

		if (!st.ok())
			*failed = true;
		return st;
	}

	// A refusal changes nothing: the connection ends and the replica
	// goes on with its log. A journal that failed meanwhile stops the
	// process by itself (main.cc).
	mdr::Status install(const LogPosition &last, std::span<const uint8_t> checkpoint) override
	{
		return inner_.install(last, checkpoint);
	}

	std::shared_ptr<bool> failed = std::make_shared<bool>(false);

private:
	Sink &inner_;
};

struct RdmaFollower::Conn {
	std::unique_ptr<Endpoint> ep;
	mdr::verbs::Region ring;	// remote write, for this connection only
	uint64_t epoch = 0;
	// DURABLEs in the SQ: posted, and not retired by the completion of
	// a signalled one at or after them (flush_sends()).
	uint32_t sends = 0;
	uint64_t seq = 0;		// of the last one posted
	// The newest DURABLE that found the SQ full: it says all the ones
	// before it said, so it alone waits.
	std::vector<std::byte> pending;
	std::string broken;		// why it ends, once the CQ is drained
};

RdmaFollower::RdmaFollower(FollowerOptions opts, Sink &sink)
	: opts_(std::move(opts)), guard_(std::make_unique<Guard>(sink)),
	  fenced_(std::max(opts_.fenced_epoch, opts_.last.epoch)),
	  spare_bytes_(opts_.bounds.max_ring_bytes)
{
}

RdmaFollower::~RdmaFollower()
{
	// Its PD and ring go before the listener: the device's removal
	// waits for every verbs object on it.
	{
		std::lock_guard lock(spare_wait_->lock);
		spare_wait_->cancelled = true;
	}
	spare_wait_->cv.notify_all();
	if (spare_thread_.joinable())
		spare_thread_.join();
	spare_ = {};
	if (conn_) {
		conn_->ep->kill();
		rdma_disconnect(conn_->ep->cm());
	}
	conn_.reset();
	rx_.reset();
	if (listen_id_)
		rdma_destroy_id(listen_id_);
}

mdr::Result<std::unique_ptr<RdmaFollower>> RdmaFollower::listen(FollowerOptions opts, Sink &sink)
{
	if (opts.self.id == 0)
		return mdr::Error(-EINVAL, "replication follower: replica id 0");

	auto addr = mdr::verbs::resolve(opts.self.address, opts.self.port, AI_NUMERICHOST);
	if (!addr.ok())
		return mdr::Error(addr.error(), "replication follower: " + addr.message());

	std::unique_ptr<RdmaFollower> f(new RdmaFollower(std::move(opts), sink));
	auto ec = mdr::verbs::event_channel();

	if (!ec.ok())
		return mdr::Error(ec.error(), ec.message());
	f->ec_ = std::move(ec).value();
	if (rdma_create_id(f->ec_.get(), &f->listen_id_, nullptr, RDMA_PS_TCP))
		return mdr::errno_error("rdma_create_id");
	if (rdma_bind_addr(f->listen_id_, addr.value().sa()))
		return mdr::errno_error("rdma_bind_addr (is an RDMA device on that address?)");
	// One leader at a time; a few more requests may wait meanwhile.
	if (rdma_listen(f->listen_id_, 4))
		return mdr::errno_error("rdma_listen");
	f->prepare_spare(std::chrono::milliseconds(0));
	return f;
}

// The PD and ring of the next leader's connection, on a thread of its
// own (thread.h: it takes no signal): the listener's device is the one
// its connect requests come on (bound to an address of it), the size the
// last leader asked. Nothing there touches the follower. A spare that
// cannot be made (a thread, memory, the memlock limit) is only not there:
// the accept makes its ring as before.
void RdmaFollower::prepare_spare(std::chrono::milliseconds after)
{
	ibv_context *dev = listen_id_ ? listen_id_->verbs : nullptr;
	const uint64_t bytes = spare_bytes_;

	if (!dev || bytes == 0 || spare_.valid())
		return;
	// A thread whose spare was taken has ended.
	if (spare_thread_.joinable())
		spare_thread_.join();
	spare_dev_ = dev;
	std::packaged_task<mdr::Result<Spare>()> task([dev, bytes, after,
						       w = spare_wait_]() -> mdr::Result<Spare> {
		{
			std::unique_lock lock(w->lock);
			if (w->cv.wait_for(lock, after, [&] { return w->cancelled; }))
				return mdr::Error(-ECANCELED, "the follower ended first");
		}
		Spare s;

		s.pd.reset(ibv_alloc_pd(dev));
		if (!s.pd)
			return mdr::errno_error("ibv_alloc_pd");
		auto ring = make_ring(s.pd.get(), bytes);
		if (!ring.ok())
			return mdr::Error(ring.error(), ring.message());
		s.ring = std::move(ring).value();
		return s;
	});
	spare_ = task.get_future();
	try {
		spare_thread_ = thread_without_signals(std::move(task));
	} catch (const std::system_error &e) {
		spare_ = {};
		log_warn_rl("no ring made ahead: %s", e.what());
	}
}

// The spare, if it is ready, on id's device and of the size asked; else
// none (one that does not fit is freed here, a deregistration of a few
// ms). Never waits.
std::optional<RdmaFollower::Spare> RdmaFollower::take_spare(const rdma_cm_id *id,
							    uint64_t ring_bytes)
{
	if (!spare_.valid() ||
	    spare_.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
		return std::nullopt;
	std::optional<mdr::Result<Spare>> s;
	try {
		s.emplace(spare_.get());
	} catch (const std::exception &e) {	// what it threw (memory)
		log_warn_rl("a ring made ahead: %s", e.what());
		return std::nullopt;
	}
	if (!s->ok()) {
		log_warn_rl("a ring made ahead: %s", s->message().c_str());
		return std::nullopt;
	}
	if (id->verbs != spare_dev_ || s->value().ring.size() != ring_bytes)
		return std::nullopt;
	return std::move(*s).value();
}

std::vector<int> RdmaFollower::fds() const
{
	std::vector<int> fds{ec_->fd};

	if (conn_ && conn_->ep->fd() >= 0)
		fds.push_back(conn_->ep->fd());
	return fds;
}

bool RdmaFollower::process(int fd, unsigned budget)
{
	if (fd == ec_->fd) {
		take_cm_events(ec_.get(), budget, [this](rdma_cm_event *ev) { on_cm_event(ev); });
		return false;
	}
	if (!conn_ || conn_->ep->fd() != fd)
		return false;

	const bool more = conn_->ep->drain(budget, [this](const ibv_wc &wc) { on_completion(wc); });

	if (!conn_->broken.empty())
		end(conn_->broken);
	return more;
}

uint64_t RdmaFollower::take_hangup() { return std::exchange(hangup_, 0); }

uint64_t RdmaFollower::epoch() const { return rx_ ? rx_->epoch() : 0; }

ReceiverStats RdmaFollower::receiver_stats() const
{
	ReceiverStats s = past_rx_;

	if (rx_)
		s += rx_->stats();
	return s;
}

bool RdmaFollower::connected() const { return conn_ && conn_->broken.empty(); }
LogPosition RdmaFollower::last() const { return rx_ ? rx_->last() : opts_.last; }

uint64_t RdmaFollower::durable_index() const
{
	return rx_ ? rx_->durable_index() : opts_.last.index;
}

uint64_t RdmaFollower::applied_index() const
{
	return rx_ ? rx_->applied_index() : opts_.applied;
}

std::vector<HeldRecord> RdmaFollower::take_held()
{
	return rx_ ? rx_->take_held() : std::exchange(opts_.held, {});
}

bool RdmaFollower::failed() const { return *guard_->failed; }

bool RdmaFollower::settled() const
{
	return !rx_ || rx_->durable_index() == rx_->last().index;
}

void RdmaFollower::fence(uint64_t epoch)
{
	if (epoch <= fenced_)
		return;
	fenced_ = epoch;
	stats_.fences++;
	if (conn_ && conn_->epoch < epoch) {
		// Its QP and its ring first: nothing more lands in memory the
		// receiver might read.
		conn_->ep->kill();
		conn_->ring.reset();
		end("fenced by epoch " + std::to_string(epoch));
	}
	if (rx_)
		rx_->fence(epoch);
}

// The connection is gone; the receiver stays, to finish what its journal
// has in flight and to hand its log to the next one.
void RdmaFollower::end(const std::string &why)
{
	if (!conn_)
		return;
	log_info_rl("leader connection of epoch %llu ended: %s",
		    (unsigned long long)conn_->epoch, why.c_str());
	stats_.last_error = why;
	conn_->ep->kill();
	rdma_disconnect(conn_->ep->cm());
	conn_.reset();
	if (rx_)
		rx_->disconnected();
}

void RdmaFollower::on_cm_event(rdma_cm_event *ev)
{
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return on_request(ev);	// acks it

	rdma_cm_id *id = ev->id;
	const rdma_cm_event_type type = ev->event;

	rdma_ack_cm_event(ev);
	if (id == listen_id_) {
		if (type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
			// The removal waits until every verbs object on the
			// device is gone: the owner must let go (device_lost()).
			stats_.last_error = "the RDMA device of the listener was removed";
			device_lost_ = true;
		}
		return;
	}
	if (!conn_ || conn_->ep->cm() != id || type == RDMA_CM_EVENT_ESTABLISHED)
		return;
	// The leader's side ended it: its process may be gone (a dead
	// process's rdma_cm ids are destroyed, each sending its DREQ). This
	// side's own ends never come here: end() lets go of the id first.
	if (type == RDMA_CM_EVENT_DISCONNECTED)
		hangup_ = conn_->epoch;
	end(rdma_event_str(type));
}

void RdmaFollower::refuse(rdma_cm_id *id, uint16_t reason)
{
	stats_.refusals++;
	stats_.last_reject = reason;
	reject(id, reason);
}

void RdmaFollower::reject(rdma_cm_id *id, uint16_t reason)
{
	const std::vector<std::byte> rej = encode_conn_rej({reason, fenced_});

	rdma_reject(id, rej.data(), uint8_t(rej.size()));
	rdma_destroy_id(id);
}

void RdmaFollower::on_request(rdma_cm_event *ev)
{
	rdma_cm_id *id = ev->id;
	const auto *p = static_cast<const std::byte *>(ev->param.conn.private_data);
	auto req = parse_conn_req({p, p ? ev->param.conn.private_data_len : 0u});

	const bool probe = is_conn_probe({p, p ? ev->param.conn.private_data_len : 0u});

	rdma_ack_cm_event(ev);	// what we need is copied; id stays ours
	// Answered, not refused: a probe leaves the refusals and the last
	// reject (a leader's, for the operator) as they were.
	if (probe) {
		stats_.probes++;
		return reject(id, kRejProbe);
	}
	stats_.requests++;
	if (!req.ok()) {
		log_warn_rl("leader %s refused: %s", mdr::verbs::peer_address(id).c_str(),
			    req.message().c_str());
		return refuse(id, kRejInvalid);
	}

	const Admission a = *guard_->failed
		? Admission{kRejFailed, false}
		: admit(req.value(), opts_.bounds, fenced_, settled());

	if (a.reject) {
		log_warn_rl("leader %u of epoch %llu at %s refused: %s (fenced to %llu)",
			    req.value().leader_id, (unsigned long long)req.value().epoch,
			    mdr::verbs::peer_address(id).c_str(), reject_name(a.reject),
			    (unsigned long long)fenced_);
		return refuse(id, a.reject);
	}
	if (a.raises_fence)
		fence(req.value().epoch);
	// The same leader again: its old connection is of no more use.
	end("replaced by a new connection of epoch " + std::to_string(req.value().epoch));
	if (mdr::Status st = open(id, req.value()); !st.ok()) {
		log_error_rl("leader connection of epoch %llu: %s",
			     (unsigned long long)req.value().epoch, st.message().c_str());
		stats_.last_error = st.message();
	}
}

// Sets the connection up, gives it a receiver that goes on from the last
// one's log, and accepts with the ring. On failure the request is refused
// and the log stays where it was.
mdr::Status RdmaFollower::open(rdma_cm_id *id, const ConnReq &req)
{
	auto c = std::make_unique<Conn>();

	c->ep = std::make_unique<Endpoint>(id);
	c->epoch = req.epoch;

	auto no = [&](const std::string &why) {
		const std::vector<std::byte> rej = encode_conn_rej({kRejNoMem, fenced_});

		rdma_reject(id, rej.data(), uint8_t(rej.size()));
		stats_.refusals++;
		return mdr::Error(-ENOMEM, why);	// ~Conn destroys id
	};
	// Fresh for this connection: its rkey is new, and it goes with it.
	// Made ahead when it can be; the next one is made from here.
	std::optional<Spare> spare = take_spare(id, req.ring_bytes);
	spare_bytes_ = req.ring_bytes;
	prepare_spare(kSpareAfter);
	if (mdr::Status st = c->ep->setup(opts_.send_depth, opts_.recv_depth,
					  spare ? std::move(spare->pd) : nullptr);
	    !st.ok())
		return no(st.message());
	if (spare) {
		c->ring = std::move(spare->ring);
	} else {
		auto ring = make_ring(c->ep->pd(), req.ring_bytes);
		if (!ring.ok())
			return no("ring: " + ring.message());
		c->ring = std::move(ring).value();
	}

	ReceiverOptions ro;
	ro.epoch = req.epoch;
	ro.last = last();
	ro.applied = applied_index();
	ro.held = rx_ ? rx_->take_held() : std::exchange(opts_.held, {});
	ro.ring = {c->ring.data(), c->ring.size()};
	ro.max_batch_bytes = req.max_batch_bytes;
	ro.max_held_bytes = opts_.max_held_bytes;
	ro.max_checkpoint_bytes = opts_.max_checkpoint_bytes;

	auto rx = LogReceiver::create(std::move(ro), *guard_, *this);
	if (!rx.ok()) {
		// admit() checked what the request sets and the log is the
		// last receiver's: this is a log that does not hold together,
		// and its held records are gone. Stop (fail-stop).
		*guard_->failed = true;
		return no(rx.message());
	}
	// From here the new receiver holds the log, accepted or not.
	if (rx_)
		past_rx_ += rx_->stats();
	rx_ = std::move(rx).value();

	const ConnAcc acc{.ring_addr = reinterpret_cast<uintptr_t>(c->ring.data()),
			  .ring_rkey = c->ring.rkey(),
			  .follower_id = opts_.self.id,
			  .ring_bytes = c->ring.size(),
			  .log = {.epoch = req.epoch, .last = rx_->last(),
				  .durable_index = rx_->durable_index(), .fenced_epoch = fenced_},
			  .features = opts_.features};
	const std::vector<std::byte> pdata = encode_conn_acc(acc);
	rdma_conn_param param = conn_param(pdata);

	if (rdma_accept(id, &param))
		return no(std::string("rdma_accept: ") + strerror(errno));
	conn_ = std::move(c);
	stats_.accepts++;
	log_info_rl("leader %u of epoch %llu connected; the log at (%llu, %llu)", req.leader_id,
		    (unsigned long long)req.epoch, (unsigned long long)acc.log.last.epoch,
		    (unsigned long long)acc.log.last.index);
	return {};
}

void RdmaFollower::on_completion(const ibv_wc &wc)
{
	Conn &c = *conn_;

	if (!c.broken.empty())
		return;
	if (wc.status != IBV_WC_SUCCESS) {
		c.broken = std::string(wc.wr_id & kRecvTag ? "receive" : "send") +
			   " completion: " + ibv_wc_status_str(wc.status);
		return;
	}
	if (!(wc.wr_id & kRecvTag)) {
		// It and every DURABLE before it are done.
		c.sends = uint32_t(c.seq - wc.wr_id);
		return flush_sends();
	}

	const uint32_t slot = uint32_t(wc.wr_id & ~kRecvTag);
	auto got = classify_receive(wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM,
				    wc.wc_flags & IBV_WC_WITH_IMM, ntohl(wc.imm_data), wc.byte_len,
				    c.ring.size(), kControlSlot);
	mdr::Status st;

	if (!got.ok()) {
		st = mdr::Error(got.error(), got.message());
	} else if (const Notify *n = std::get_if<Notify>(&got.value())) {
		stats_.notifies++;
		st = rx_->on_notify(n->offset);
	} else {
		stats_.controls++;
		st = rx_->on_control(c.ep->slot(slot, wc.byte_len));
	}
	if (st.ok())
		st = c.ep->repost(slot);
	if (!st.ok())
		c.broken = st.message();
}

// ReplyLink: the receiver's DURABLEs. On a connection that is gone they
// are dropped: the next connection's accept carries the durable index.
mdr::Status RdmaFollower::send(std::span<const std::byte> msg)
{
	if (!conn_ || !conn_->broken.empty() || conn_->epoch != rx_->epoch())
		return {};
	if (!conn_->pending.empty())
		stats_.coalesced++;
	conn_->pending.assign(msg.begin(), msg.end());
	flush_sends();
	return {};
}

void RdmaFollower::flush_sends()
{
	Conn &c = *conn_;

	if (c.pending.empty())
		return;
	if (c.sends >= opts_.send_depth)
		return;

	// The others cost no completion to take: a wakeup of the loop each,
	// under load one per batch.
	const uint64_t seq = c.seq + 1;
	const bool signalled = durable_signalled(seq, c.sends, opts_.send_depth);

	if (mdr::Status st = c.ep->send_inline(c.pending, seq, signalled); !st.ok()) {
		c.broken = st.message();
		return;
	}
	c.seq = seq;
	c.pending.clear();
	c.sends++;
	stats_.durables++;
}

} // namespace mdnode::repl
