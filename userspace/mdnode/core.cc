// SPDX-License-Identifier: GPL-2.0
//
// core.cc - see core.h.
#include "mdnode/core.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <utility>

#include "mdnode/log.h"

namespace mdnode {

namespace {

MDNODE_LOG_SUBSYSTEM("node");

namespace wire = mdr::wire;

std::map<uint32_t, std::string> copier_paths(const NodeOptions &opts, const Store &store)
{
	std::map<uint32_t, std::string> paths = opts.device_paths;

	if (paths.empty())
		for (const wire::Device &d : store.devices())
			paths[d.dev_id] = store.device(d.dev_id)->path;
	return paths;
}

} // namespace

NodeCore::NodeCore(const NodeOptions &o, Store &s, Journal &j, std::function<int64_t()> now_ms)
	: opts(o), store(s), journal(j), leases(int64_t(o.io_hold_ms)),
	  copier(copier_paths(o, s), o.copier), now_ms_(std::move(now_ms)), start_ms_(now_ms_()),
	  windows_ms_(start_ms_),
	  first_new_volume_(s.next_volume_id()), checkpointed_records_(j.stats().records)
{
}

Session *NodeCore::session(ConnId conn)
{
	auto it = sessions.find(conn);

	return it == sessions.end() ? nullptr : &it->second;
}

int RequestStats::tenant_slot(uint32_t tenant)
{
	for (uint32_t i = 0; i < tenants; i++)
		if (tenant_ids[i] == tenant)
			return kFirstTenant + int(i);
	if (tenants == kTenantSlots)
		return kOther;
	tenant_ids[tenants] = tenant;
	return kFirstTenant + int(tenants++);
}

void NodeCore::request_begin(Session &s, const wire::Header &h)
{
	RequestStats &r = stats.req;

	// A host's tenant counts once it is who it says (its HOST_AUTH, or
	// a host of version 1 or 2 let in unproven): before that, any id
	// could be claimed, and the slots would go to made-up tenants. The
	// slot is looked up once per session, not per request.
	if (s.tenant_slot < 0) {
		if (s.peer.role == MDR_ROLE_ADMIN)
			s.tenant_slot = RequestStats::kAdmin;
		else if (s.authenticated || s.peer.version < wire::kHostAuthVersion)
			s.tenant_slot = r.tenant_slot(s.peer.tenant);
	}
	r.by_tenant[s.tenant_slot < 0 ? RequestStats::kUnproven : s.tenant_slot]++;
	if (h.reply())
		return;	// an ack of a push: Pushes::acked() times it
	if (h.opcode < kOpcodeSlots)
		r.requests[h.opcode]++;
	current_ = {s.peer.id, h.req_id, mono_us(), h.opcode, h.opcode < kOpcodeSlots};
}

void NodeCore::request_end(Session &s)
{
	if (!std::exchange(current_.open, false))
		return;
	// Answered later (a journal write, a zeroing, a fan-out, a move):
	// its clock waits in the session. A connection cut meanwhile takes
	// its table with it. A req_id in flight already (the peer reused
	// it) is not timed twice: one reply would stop both clocks.
	Session::InFlight *free_slot = nullptr;
	for (Session::InFlight &f : s.in_flight) {
		if (f.used && f.req_id == current_.req_id) {
			free_slot = nullptr;
			break;
		}
		if (!f.used && !free_slot)
			free_slot = &f;
	}
	if (free_slot)
		*free_slot = {current_.req_id, current_.start_us, current_.opcode, true};
	else
		stats.req.untimed++;
}

void NodeCore::request_replied(ConnId conn, uint64_t req_id)
{
	RequestStats &r = stats.req;

	if (current_.open && current_.conn == conn && current_.req_id == req_id) {
		current_.open = false;
		r.latency[current_.opcode].observe(uint64_t(mono_us() - current_.start_us));
		return;
	}
	Session *s = session(conn);
	if (!s)
		return;
	for (Session::InFlight &f : s->in_flight)
		if (f.used && f.req_id == req_id) {
			f.used = false;
			r.latency[f.opcode].observe(uint64_t(mono_us() - f.start_us));
			return;
		}
}

void NodeCore::reply(ConnId conn, uint64_t req_id, const wire::Body &body)
{
	request_replied(conn, req_id);
	wire::Body stamped = body;
	const bool served = std::visit([&](auto &m) {
		if constexpr (requires { m.serving; }) {
			m.serving = serving_for(conn);
			return true;
		}
		return false;
	}, stamped);
	send_reply(conn, req_id, served ? stamped : body);
}

std::optional<wire::Serving> NodeCore::serving_for(ConnId conn)
{
	const Session *s = session(conn);

	if (!s || s->peer.version < wire::kEpochVersion)
		return std::nullopt;
	const uint64_t epoch = epoch_record.epoch();
	if (!epoch)
		return wire::Serving{};
	auto w = net->expose_epoch_record(conn, epoch_record.bytes());
	if (!w.ok()) {
		// Zeros would tell the host another server: the connection
		// goes, and the host opens again (on a replica that can).
		log_error_rl("conn %llu: cannot register the epoch record: %s",
			     (unsigned long long)conn, w.message().c_str());
		net->disconnect(conn);
		return wire::Serving{};
	}
	return wire::Serving{.epoch = epoch, .record_addr = w.value().addr,
			     .record_rkey = w.value().key};
}

void NodeCore::send_reply(ConnId conn, uint64_t req_id, const wire::Body &body)
{
	std::vector<std::byte> buf(wire::encoded_size(body));
	auto n = wire::encode(buf, req_id, body);

	if (!n.ok()) {
		// Our own reply does not encode: a bug. Cut the connection (the
		// client retries on a new one) rather than answer with another
		// message that might not encode either.
		log_error_rl("conn %llu: cannot encode a reply: %s",
			     (unsigned long long)conn, n.message().c_str());
		net->disconnect(conn);
		return;
	}
	auto st = net->send(conn, std::span(buf.data(), n.value()));
	if (!st.ok() && st.error() != -ENOTCONN) {
		log_warn_rl("conn %llu: reply lost: %s", (unsigned long long)conn,
			    st.message().c_str());
		net->disconnect(conn);
	}
}

void NodeCore::reply_error(ConnId conn, uint64_t req_id, uint16_t opcode, int err)
{
	reply_error(conn, req_id, wire::ErrorRep{.opcode = opcode,
						 .status = wire::errno_to_status(err)});
}

void NodeCore::reply_error(ConnId conn, uint64_t req_id, const wire::ErrorRep &e)
{
	stats.errors++;
	if (e.opcode < kOpcodeSlots)
		stats.req.errors[e.opcode]++;
	reply(conn, req_id, e);
}

void NodeCore::refuse_not_leading(const Session &s, uint64_t req_id, uint16_t opcode)
{
	// Its etcd lease ran out on the loop's clock before tick() stopped
	// it: epoch 0 before it answers as a replica that does not lead
	// (epoch_record.h).
	epoch_record.stop();
	std::optional<wire::Leader> to = repl ? repl->redirect() : std::nullopt;

	if (!to || s.peer.version < wire::kGroupVersion)
		return reply_error(s.peer.id, req_id, opcode, -EAGAIN);
	reply_error(s.peer.id, req_id, wire::ErrorRep{.opcode = opcode,
						      .status = MDR_ST_NOT_LEADER, .leader = *to});
}

void NodeCore::reply_unparsed(ConnId conn, uint64_t req_id, uint16_t opcode, int err)
{
	stats.errors++;
	send_reply(conn, req_id, wire::ErrorRep{.opcode = opcode,
						.status = wire::errno_to_status(err)});
}

void NodeCore::change(Change c, std::function<void(int err, const Applied *applied)> done)
{
	if (repl)
		return change_replicated(std::move(c), std::move(done));

	auto shared = std::make_shared<Change>(std::move(c));

	auto queued = journal.append(shared->type, std::as_bytes(std::span(shared->payload)),
				     [this, shared, done](const mdr::Status &st) {
		if (!st.ok()) {
			log_error_rl("journal write failed: %s; change refused",
				     st.message().c_str());
			(void)store.abort(*shared);
			return done(-EIO, nullptr);
		}
		const Applied applied = commit_journaled(*shared);
		done(0, &applied);
	});
	if (!queued.ok()) {
		// The journal is read-only after a write error: fail-stop for
		// changes, while reads of the tables go on.
		log_error_rl("journal refuses the change: %s", queued.message().c_str());
		(void)store.abort(*shared);
		done(-EIO, nullptr);
	}
}

Applied NodeCore::commit_journaled(const Change &c)
{
	auto applied = store.commit(c);

	if (!applied.ok()) {
		// The journal now holds a change the state cannot take: a
		// bug. Stop, and let recovery rebuild from the journal.
		log_error("cannot apply a journaled change: %s", applied.message().c_str());
		log_flush();
		std::abort();
	}
	return std::move(applied).value();
}

// A replica's change: journaled, shipped, committed in the store and
// answered only at the commit index (repl_answer.h); the log journals it
// (with its mark) and tells its shipper when the local journal has it.
// The answer comes from the log alone, once: committed(0) when a majority
// has it durable (the local journal counting only once it has it),
// committed(err) when this replica stops leading first, its fate unknown
// here. A failed local journal answers nothing: the record may still
// commit on the followers, and the process stops (journal.h, fail-stop),
// which ends the leadership.
void NodeCore::change_replicated(Change c,
				 std::function<void(int err, const Applied *applied)> done)
{
	if (!repl->accepting()) {
		(void)store.abort(c);
		return done(-EAGAIN, nullptr);
	}

	auto shared = std::make_shared<Change>(std::move(c));
	auto shipped = repl->ship(shared->type, std::as_bytes(std::span(shared->payload)),
				  [this, shared, done](int err) {
		if (err) {
			(void)store.abort(*shared);
			return done(err, nullptr);
		}
		const Applied applied = commit_journaled(*shared);
		done(0, &applied);
	});
	if (!shipped.ok()) {
		log_error_rl("the group's log refuses the change: %s", shipped.message().c_str());
		(void)store.abort(*shared);
		return done(shipped.error() == -EAGAIN ? -EAGAIN : -EIO, nullptr);
	}
}

// From tick(), never from a journal callback (the journal refuses), and
// only with no change in flight, so the snapshot holds exactly what the
// journal holds.
void NodeCore::maybe_checkpoint()
{
	// A snapshot holds mapped entries only: none while an extent moves.
	if (journal.stats().records - checkpointed_records_ < opts.checkpoint_records ||
	    journal.checkpoint_in_flight() || now_ms_() < checkpoint_retry_ms_ ||
	    store.counts().in_flight || store.counts().moving)
		return;

	std::vector<uint8_t> snapshot;

	if (repl) {
		auto c = repl->checkpoint();

		if (!c)
			return;
		snapshot = std::move(*c);
	} else {
		snapshot = store.snapshot();
	}
	// Records journaled from now on are not in this snapshot.
	const uint64_t before = std::exchange(checkpointed_records_, journal.stats().records);
	auto st = journal.begin_checkpoint(std::move(snapshot), [this, before](const mdr::Status &s) {
		if (s.ok())
			checkpoint_backoff_ms_ = 0;
		else
			checkpoint_failed(s, before);
	});
	// Not begun: the journal has failed (the process is stopping) or
	// cannot cut a segment.
	if (!st.ok())
		checkpoint_failed(st, before);
}

void NodeCore::checkpoint_failed(const mdr::Status &st, uint64_t before)
{
	checkpointed_records_ = before;
	checkpoint_backoff_ms_ = std::clamp(2 * checkpoint_backoff_ms_, kCheckpointRetryMinMs,
					    kCheckpointRetryMaxMs);
	checkpoint_retry_ms_ = now_ms_() + checkpoint_backoff_ms_;
	log_error("checkpoint failed: %s; next try in %lld ms", st.message().c_str(),
		  (long long)checkpoint_backoff_ms_);
}

bool NodeCore::lease_valid(uint64_t volume_id, uint64_t host_id) const
{
	const Lease *l = leases.find({volume_id, host_id});

	return l && l->expires_ms > now_ms_();
}

bool NodeCore::io_possible(const Lease &l, int64_t now) const
{
	return now < l.expires_ms + int64_t(opts.io_hold_ms);
}

uint32_t NodeCore::open_count(uint64_t volume_id) const
{
	uint32_t n = 0;
	const int64_t now = now_ms_();

	for (const auto &[key, l] : leases.on_volume(volume_id))
		if (l.expires_ms > now)
			n++;
	return n;
}

void NodeCore::begin_windows(LeaseBounds inherited)
{
	windows_ms_ = now_ms_();
	first_new_volume_ = store.next_volume_id();
	inherited_ = inherited;
	opened_here_.clear();
}

void NodeCore::opened_here(uint64_t volume_id, const Session &s)
{
	// Older kernels keep what they cached when another process opens
	// the volume: they stay holders to wait out.
	if (s.peer.version >= wire::kEpochVersion)
		opened_here_.insert({volume_id, s.peer.host_id});
}

void NodeCore::drop_holder(uint64_t volume_id, uint64_t host_id, bool lapsed)
{
	// A lapse within the restart lease ends this lease, maybe not the
	// host's lease of before (a longer one).
	if (!accepting() || !store.holder(volume_id, host_id) || (lapsed && in_restart_lease()))
		return;
	change(store.prepare_holder_drop(volume_id, host_id), [](int, const Applied *) {});
}

void NodeCore::maybe_complete_holders()
{
	if (!store.holders_unknown() || completing_holders_ || !accepting() ||
	    in_restart_lease())
		return;
	completing_holders_ = true;
	change(store.prepare_holders_complete(), [this](int err, const Applied *) {
		completing_holders_ = false;
		if (!err)
			log_info("the hosts that may hold leases on volumes from before "
				 "holders were journaled are known from now on");
	});
}

bool NodeCore::holders_reached(uint64_t volume_id) const
{
	const Volume *v = store.volume(volume_id);

	// A lease granted here must lapse no earlier than the leases of
	// before, or a fan-out settled by its lapse (and a HOLDER_DROP)
	// would come while the host may still use an old one.
	if (!v || !v->holders_known || restart_bounds().held_ms > own_bounds(opts).held_ms)
		return false;
	for (uint64_t host : v->holders)
		if (!opened_here_.contains({volume_id, host}))
			return false;
	return true;
}

int64_t NodeCore::restart_lease_left() const
{
	return std::max<int64_t>(0, windows_ms_ + int64_t(restart_bounds().held_ms) - now_ms_());
}

bool NodeCore::in_restart_lease() const
{
	return restart_lease_left() > 0;
}

bool NodeCore::in_restart_grace() const
{
	const LeaseBounds b = restart_bounds();

	return now_ms_() < windows_ms_ + int64_t(b.held_ms) + int64_t(b.io_hold_ms);
}

void NodeCore::lease_granted(uint64_t volume_id, Session &s)
{
	stats.leases_granted++;
	for (LeaseEvents *w : watchers_)
		w->lease_granted(volume_id, s);
}

void NodeCore::lease_lapsed(uint64_t volume_id, uint64_t host_id)
{
	for (LeaseEvents *w : watchers_)
		w->lease_lapsed(volume_id, host_id);
}

void NodeCore::lease_gone(uint64_t volume_id, uint64_t host_id)
{
	for (LeaseEvents *w : watchers_)
		w->lease_gone(volume_id, host_id);
}

} // namespace mdnode
