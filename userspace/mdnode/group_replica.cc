// SPDX-License-Identifier: GPL-2.0
//
// group_replica.cc - see group_replica.h.
#include "mdnode/group_replica.h"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <map>
#include <utility>

#include "mdnode/log.h"
#include "mdnode/loop.h"
#include "mdnode/node.h"
#include "mdnode/repl_checkpoint.h"
#include "mdnode/startup.h"

namespace mdnode {

namespace {

MDNODE_LOG_SUBSYSTEM("group");

// Ops of the leader's and the follower's channels per round of the loop.
constexpr unsigned kReplBudget = 64;

} // namespace

mdr::Result<std::unique_ptr<GroupReplica>> GroupReplica::start(const ReplicaSettings &s,
							      Node &node, Store &store,
							      Journal &journal,
							      repl::RecoveredLog log)
{
	std::unique_ptr<GroupReplica> r(new GroupReplica(s, node, store, journal));
	const ReplicaArg *self = nullptr;

	// Until etcd's set is read, the settings' (the set etcd is given
	// when it holds none).
	r->members_ = s.replicas;

	for (const ReplicaArg &a : s.replicas)
		if (a.id == s.self)
			self = &a;
	if (!self)
		return mdr::Error(-EINVAL, "replica " + std::to_string(s.self) + " not in the set");

	repl::FollowerOptions fo;
	fo.self = {self->id, self->address, self->port};
	fo.bounds = {.group = s.group, .max_ring_bytes = s.ring_bytes};
	// Its log as the journal left it: all durable (replayed), applied
	// up to log.applied, the rest held. Fenced to the epoch of its last
	// record: it took that epoch's leader already.
	log_info("group %llu: its log ends at (%llu, %llu), applied up to %llu, %zu records "
		 "held%s", (unsigned long long)s.group, (unsigned long long)log.last.epoch,
		 (unsigned long long)log.last.index, (unsigned long long)log.applied,
		 log.held.size(), log.cut ? ", a tail cut" : "");
	fo.last = log.last;
	fo.applied = log.applied;
	fo.held = std::move(log.held);
	fo.fenced_epoch = log.last.epoch;
	r->recent_.assign(std::move(log.recent));
	r->log_bounds_ = log.epoch_bounds;
	auto f = repl::RdmaFollower::listen(std::move(fo), *r);
	if (!f.ok())
		return mdr::Error(f.error(), "the log listener on " + self->address + ":" +
					     std::to_string(self->port) + ": " + f.message());
	r->follower_ = std::move(f).value();
	// The mirrors this replica writes its followers' rings from once it
	// leads, mapped now: their first touch would otherwise come in the
	// takeover, when every millisecond is a host's pause (about 60 ms
	// for 16 MiB under emulation).
	for (size_t i = 1; i < s.replicas.size(); i++) {
		auto m = mdr::verbs::Mapping::create(s.ring_bytes);
		if (!m.ok())
			return mdr::Error(m.error(), "a log mirror: " + m.message());
		r->mirrors_.push_back(std::move(m).value());
	}
	auto probe = repl::ReplicaProbe::create(s.group);
	if (!probe.ok())
		return mdr::Error(probe.error(), probe.message());
	r->probe_ = std::move(probe).value();

	GroupOptions go;
	go.group = std::to_string(s.group);
	go.replica = member_name(s.self);
	go.address = s.client_address;
	go.etcd.endpoints = s.etcd;
	// Under the TTL (group.h): a renewal's answer comes back while what
	// it extends still holds, with a fifth of it to spare.
	go.etcd.request_timeout_ms = s.ttl_s * 800;
	go.ttl_s = s.ttl_s;
	go.drift_margin_ms = s.drift_margin_ms;
	go.bootstrap = s.replicas;
	go.may_bootstrap = log.last.index == 0 && log.last.epoch == 0;
	auto d = Deposer::start(go.etcd, "/mdroute/groups/" + go.group + "/leader");
	if (!d.ok())
		return mdr::Error(d.error(), "group " + std::to_string(s.group) + ": " + d.message());
	r->deposer_ = std::move(d).value();
	GroupReplica *raw = r.get();
	auto m = GroupMember::start(std::move(go),
				    [raw](const GroupState &st) { raw->on_group(st); });
	if (!m.ok())
		return mdr::Error(m.error(), "group " + std::to_string(s.group) + ": " +
					     m.message());
	r->member_ = std::move(m).value();
	return r;
}

GroupReplica::GroupReplica(const ReplicaSettings &s, Node &node, Store &store, Journal &journal)
	: settings_(s), node_(node), store_(store), journal_(journal)
{
}

GroupReplica::~GroupReplica() = default;

void GroupReplica::add_to(EventLoop &loop)
{
	loop.add_fd("group", member_->fd(), [this] { member_->process(); });
	loop.add({"repl-follower", [this] { return follower_->fds(); }, kReplBudget,
		  [this](int fd, unsigned budget) {
			  const bool more = follower_->process(fd, budget);
			  if (uint64_t e = follower_->take_hangup())
				  on_hangup(e, steady_ms());
			  return more;
		  }});
	loop.add_fd("repl-probe", probe_->fd(), [this] {
		probe_->process();
		probe_tick(steady_ms());
	});
	loop.add_fd("depose", deposer_->fd(), [this] { deposed(); });
	loop.add({"repl-leader",
		  [this] { return link_ ? link_->fds() : std::vector<int>{}; }, kReplBudget,
		  [this](int fd, unsigned budget) {
			  if (!link_)
				  return false;
			  const bool more = link_->process(fd, budget);
			  answer_committed();
			  return more;
		  }});
	loop.after_round([this] { ship_appended(); });
}

bool GroupReplica::accepting() const
{
	return shipper_ && !stopped_ && gate_ && gate_->serving() &&
	       member_->serving(GroupMember::Clock::now());
}

// The group's log on the follower: what its receiver appends goes to the
// journal after its batch's mark, what is committed to the store, as a
// restart replays it.
mdr::Status GroupReplica::begin_batch(const repl::BatchHeader &h)
{
	const repl::LogMark m{.epoch = h.epoch, .first_index = h.first_index, .count = h.count,
			      .commit_index = h.commit_index};

	if (mdr::Status st = journal_.append(kLogMark, repl::encode_mark(m), {}); !st.ok())
		return st;
	recent_.cut(h.first_index);
	batch_next_ = h.first_index;
	batch_epoch_ = h.epoch;
	return {};
}

mdr::Status GroupReplica::append(uint16_t type, std::span<const std::byte> payload, Done done)
{
	std::optional<repl::EpochRecord> er;

	if (type == kEpochRecord) {
		auto e = repl::decode_epoch_record(payload);

		if (!e.ok())
			return mdr::Error(e.error(), e.message());
		er = e.value();
	}
	if (mdr::Status st = journal_.append(type, payload, std::move(done)); !st.ok())
		return st;
	if (er)
		log_bounds_ = er->bounds;
	recent_.push({batch_next_++, batch_epoch_, type,
		      std::vector<std::byte>(payload.begin(), payload.end())});
	return {};
}

mdr::Status GroupReplica::apply(uint64_t, uint16_t type, std::span<const std::byte> payload)
{
	if (!repl::changes_store(type))
		return {};
	return store_.replay(type, {reinterpret_cast<const uint8_t *>(payload.data()),
				    payload.size()});
}

// Its receiver blocks the loop for the write (Journal::checkpoint()): a
// follower this far behind serves nothing current, and the one write of
// the checkpoint, as at a clean stop, keeps its journal, its store and
// its log from ever disagreeing in memory meanwhile.
mdr::Status GroupReplica::install(const repl::LogPosition &last,
				  std::span<const uint8_t> checkpoint)
{
	auto log = repl::install_checkpoint(journal_, store_, last, checkpoint);

	if (!log.ok()) {
		log_error_rl("group %llu: %s", (unsigned long long)settings_.group,
			     log.message().c_str());
		return mdr::Error(log.error(), log.message());
	}
	recent_.assign(std::move(log.value().recent));
	log_bounds_ = log.value().epoch_bounds;
	log_info("group %llu: installed the leader's checkpoint of %zu bytes; the log now "
		 "ends at (%llu, %llu)", (unsigned long long)settings_.group, checkpoint.size(),
		 (unsigned long long)last.epoch, (unsigned long long)last.index);
	return {};
}

void GroupReplica::on_group(const GroupState &s)
{
	log_info("group %llu: %s, leader %s at %s, epoch %lld (%s)",
		 (unsigned long long)settings_.group,
		 s.role == GroupState::Role::leader ? "leading" : "following",
		 s.leader_id.empty() ? "none" : s.leader_id.c_str(),
		 s.leader_address.empty() ? "-" : s.leader_address.c_str(), (long long)s.epoch,
		 s.reason.c_str());
	known_leader_ = known_leader(s);
	known_epoch_ = s.epoch > 0 ? uint64_t(s.epoch) : 0;
	known_lease_ = s.leader_lease;
	known_leader_id_ = 0;
	if (known_epoch_) {
		const char *end = s.leader_id.data() + s.leader_id.size();

		// The whole id, or none: "12x" names no replica.
		if (std::from_chars(s.leader_id.data(), end, known_leader_id_).ptr != end)
			known_leader_id_ = 0;
	}
	if (s.role == GroupState::Role::leader && s.epoch > 0) {
		if (!shipper_ && !stopped_) {
			// The set the epoch begins with, read after the win.
			if (s.config)
				members_ = s.config->replicas;
			lead(uint64_t(s.epoch));
		}
		return;
	}
	if (shipper_)
		return stop("it no longer holds the leader key: " + s.reason);
	if (s.config)
		members_ = s.config->replicas;
	// A follower: nothing of an epoch below the leader's is taken from
	// now on, whichever connection comes first.
	if (s.epoch > 0)
		follower_->fence(uint64_t(s.epoch));
	// The leader of a hangup that came before etcd's key named it.
	if (early_hangup_ && early_hangup_->first <= known_epoch_) {
		const auto [epoch, at] = *std::exchange(early_hangup_, std::nullopt);
		const int64_t now = steady_ms();

		if (now - at < int64_t(settings_.ttl_s) * 1000)
			on_hangup(epoch, now);
	}
}

// The leader etcd names, as clients are sent to it; all zero for none, or
// for a record whose id or address is not one (it is logged above).
mdr::wire::Leader GroupReplica::known_leader(const GroupState &s) const
{
	uint32_t id = 0;
	const char *end = s.leader_id.data() + s.leader_id.size();

	if (s.epoch <= 0 || std::from_chars(s.leader_id.data(), end, id).ptr != end)
		return {};
	return mdr::wire::leader_at(uint64_t(s.epoch), id, s.leader_address)
		.value_or(mdr::wire::Leader{});
}

// None while it leads, has led or is named the leader (a record of its
// own from before a restart, until its lease lapses): the client asks
// again here rather than being sent in a circle.
std::optional<mdr::wire::Leader> GroupReplica::redirect() const
{
	if (shipper_ || stopped_ || known_leader_.replica == settings_.self)
		return std::nullopt;
	return known_leader_;
}

void GroupReplica::lead(uint64_t epoch)
{
	// Its own end first: the leader before this one writes no more into
	// its ring, and what it wrote there is checked against epoch.
	follower_->fence(epoch);
	// What its log holds is durable before it counts as its own
	// (LogShipper's start): the follower's last batch may still be on
	// its way to the disk.
	if (mdr::Status st = journal_.flush(); !st.ok())
		return stop("its journal: " + st.message());

	const repl::LogPosition own = follower_->last();
	const uint64_t applied = follower_->applied_index();
	std::vector<std::string> names;
	repl::LinkOptions lo;

	lo.group = settings_.group;
	lo.epoch = epoch;
	lo.leader_id = settings_.self;
	lo.ring_bytes = settings_.ring_bytes;
	lo.max_batch_bytes = settings_.max_batch_bytes;
	for (const ReplicaArg &a : members_) {
		if (a.id == settings_.self)
			continue;
		names.push_back(member_name(a.id));
		lo.followers[member_name(a.id)] = {a.id, a.address, a.port};
	}
	repl::ShipperOptions so;
	so.epoch = epoch;
	so.followers = names;
	so.start = own;
	so.commit_index = applied;
	so.ring_bytes = settings_.ring_bytes;
	so.max_batch_bytes = settings_.max_batch_bytes;
	so.heartbeat_ms = std::max(1, settings_.ttl_s * 1000 / 3);
	// Its log's last records, for a follower behind its start: only a
	// run that ends where its log does.
	if (!recent_.records().empty() && recent_.records().back().index == own.index &&
	    recent_.records().back().epoch == own.epoch)
		so.prior.assign(recent_.records().begin(), recent_.records().end());

	auto gate = repl::LeaderGate::create(epoch, own, applied, names);
	if (!gate.ok())
		return stop("its gate: " + gate.message());
	auto link = repl::RdmaShipLink::create(lo, std::move(mirrors_));
	if (!link.ok())
		return stop("its links to the followers: " + link.message());
	// Noted here, answered by answer_committed() once the shipper's call
	// returned: an answer may start another change, which ships.
	auto shipper = repl::LogShipper::create(so, *link.value(), [this](uint64_t commit) {
		commit_index_ = commit;
	});
	if (!shipper.ok())
		return stop("its shipper: " + shipper.message());

	epoch_ = epoch;
	next_index_ = own.index + 1;
	local_durable_ = own.index;	// flushed above
	commit_index_ = applied;
	epoch_shipped_ = false;
	serving_begun_ = false;
	settled_ = false;
	// What a host may hold from the leaders before: the last EPOCH record
	// its log took announced it. A later record can only be wider (each
	// announces its own widened by the one before) or a settle, shipped
	// once every lease out there was its leader's own: either way the
	// last one bounds every lease still out, also when it was a tail a
	// later mark cut (it was true when shipped, and time only ends
	// leases). Its log, as a majority's most up-to-date one, holds every
	// committed EPOCH record.
	announced_ = widest(settings_.lease_bounds, log_bounds_.value_or(LeaseBounds{}));
	gate_.emplace(std::move(gate).value());
	link_ = std::move(link).value();
	shipper_ = std::move(shipper).value();
	link_->attach(*shipper_);
	link_->tick();
	log_info("group %llu: leading in epoch %llu from its log at (%llu, %llu), applied "
		 "%llu; serving once %zu of %zu replicas' logs are heard",
		 (unsigned long long)settings_.group, (unsigned long long)epoch,
		 (unsigned long long)own.epoch, (unsigned long long)own.index,
		 (unsigned long long)applied, gate_->majority(), names.size() + 1);
}

void GroupReplica::tick(int64_t now_ms)
{
	if (stopped_)
		return;
	if (follower_->failed())
		return stop("its journal or store refused a record of the leader's");
	// As the hosts' transport does: hold nothing on a removed device.
	if (follower_->device_lost())
		return stop("the RDMA device of its log listener was removed");
	probe_tick(now_ms);
	if (!shipper_)
		return;
	if (!member_->serving(GroupMember::Clock::now()))
		return stop("its etcd lease ran out (valid until, less the drift margin, passed)");
	if (uint64_t by = link_->deposed_by())
		return stop("a follower is fenced to epoch " + std::to_string(by));

	for (const ReplicaArg &a : members_) {
		if (a.id == settings_.self)
			continue;
		if (const repl::LogState *ls = link_->log_state(member_name(a.id)))
			(void)gate_->on_log_state(member_name(a.id), ls->last);
	}
	switch (gate_->phase()) {
	case repl::LeaderGate::Phase::behind:
		return step_down("replica " + gate_->ahead_member() + "'s log at (" +
				 std::to_string(gate_->ahead_log().epoch) + ", " +
				 std::to_string(gate_->ahead_log().index) + ") is ahead of its own");
	case repl::LeaderGate::Phase::committing:
	case repl::LeaderGate::Phase::serving:
		if (!epoch_shipped_) {
			// Its epoch's first record: after a majority's logs, none
			// ahead, were heard, never before (it would go over the
			// tail of a log ahead).
			const std::vector<std::byte> rec =
				repl::encode_epoch_record({epoch_, announced_});
			auto idx = append_and_ship(kEpochRecord, rec, [](int) {});
			if (!idx.ok())
				return stop("its EPOCH record: " + idx.message());
			epoch_shipped_ = true;
			log_bounds_ = announced_;
			if (gate_->phase() == repl::LeaderGate::Phase::committing)
				if (mdr::Status st = gate_->epoch_record(idx.value()); !st.ok())
					return stop("its gate: " + st.message());
		}
		break;
	case repl::LeaderGate::Phase::gathering:
		break;
	}
	shipper_->tick(now_ms);
	link_->tick();
	answer_committed();
	settle_bounds();
	offer_checkpoint();
	membership_tick();
}

void GroupReplica::offer_checkpoint()
{
	if (!shipper_ || stopped_ || !shipper_->wants_checkpoint())
		return;

	const std::optional<repl::LogCheckpoint> log = checkpoint_position();
	std::optional<std::vector<uint8_t>> bytes;

	if (log)
		bytes = repl::take_checkpoint(*log, store_);
	if (!bytes)
		return;	// not now: the next tick tries again

	const size_t size = bytes->size();
	auto c = std::make_shared<repl::ShippedCheckpoint>(
		repl::ShippedCheckpoint{log->last, std::move(*bytes)});

	if (mdr::Status st = shipper_->offer_checkpoint(std::move(c)); !st.ok()) {
		log_warn_rl("group %llu: %s", (unsigned long long)settings_.group,
			    st.message().c_str());
		return;
	}
	log_info("group %llu: shipping a checkpoint at (%llu, %llu), %zu bytes, to the "
		 "followers its log cannot bring back", (unsigned long long)settings_.group,
		 (unsigned long long)log->last.epoch, (unsigned long long)log->last.index, size);
}

// Every lease a host may hold is its own once its windows are over: the
// next leader need wait out only its bounds.
void GroupReplica::settle_bounds()
{
	if (!serving_begun_ || settled_ || stopped_ || node_.in_restart_grace())
		return;
	settled_ = true;
	if (announced_ == settings_.lease_bounds)
		return;

	const std::vector<std::byte> rec =
		repl::encode_epoch_record({epoch_, settings_.lease_bounds});

	if (auto idx = append_and_ship(kEpochRecord, rec, [](int) {}); !idx.ok())
		return stop("its EPOCH record settling its lease bounds: " + idx.message());
	announced_ = settings_.lease_bounds;
	log_bounds_ = announced_;
	log_info("group %llu: the leases of the leaders before epoch %llu have run out: "
		 "leases held for %u ms, IO held for %u ms from now on",
		 (unsigned long long)settings_.group, (unsigned long long)epoch_,
		 announced_.held_ms, announced_.io_hold_ms);
}

mdr::Result<uint64_t> GroupReplica::ship(uint16_t type, std::span<const std::byte> payload,
					 std::function<void(int err)> committed)
{
	// NodeCore asked accepting() just before; only a leader that
	// stopped (or never led) ships nothing.
	if (!shipper_ || stopped_)
		return mdr::Error(-EAGAIN, "not leading");
	return append_and_ship(type, payload, std::move(committed));
}

std::optional<std::vector<uint8_t>> GroupReplica::checkpoint() const
{
	const std::optional<repl::LogCheckpoint> log = checkpoint_position();

	if (!log)
		return std::nullopt;
	return repl::take_checkpoint(*log, store_);
}

// Then the store holds every record of its log, and a restart needs
// nothing of the journal before the checkpoint but the log's position.
std::optional<repl::LogCheckpoint> GroupReplica::checkpoint_position() const
{
	repl::LogCheckpoint c{.last = {}, .epoch_bounds = log_bounds_, .recent = {}};

	if (stopped_)
		return std::nullopt;
	if (shipper_) {
		// Its first record, EPOCH, is committed once it serves. Its
		// own journal has them all too: the commit may have counted
		// the followers without it, and the checkpoint's flush would
		// then wait on the disk in the loop.
		if (!serving_begun_ || commit_index_ + 1 != next_index_ || answers_.waiting() ||
		    local_durable_ + 1 != next_index_)
			return std::nullopt;
		c.last = {epoch_, commit_index_};
	} else {
		c.last = follower_->last();
		if (follower_->applied_index() != c.last.index)
			return std::nullopt;
	}
	// Its last records, for a follower behind a start of this replica
	// as leader (ShipperOptions::prior): only a run that ends where its
	// log does.
	if (!recent_.records().empty() && recent_.records().back().index == c.last.index &&
	    recent_.records().back().epoch == c.last.epoch)
		c.recent = recent_.records();
	return c;
}

// The mark and the record go to the journal back to back (nothing else is
// journaled between them: one thread), then, at the end of the loop's
// round, to the shipper with the round's other records (ship_appended()).
// A journal that refuses the mark took nothing; one that takes the mark
// and refuses the record has failed (journal.h: it refuses only what is
// too large, and a change never is), and the next start reads the mark's
// record as lost at a crash.
mdr::Result<uint64_t> GroupReplica::append_and_ship(uint16_t type,
						    std::span<const std::byte> payload,
						    std::function<void(int err)> committed)
{
	const uint64_t index = next_index_;
	const repl::LogMark m{.epoch = epoch_, .first_index = index, .count = 1,
			      .commit_index = commit_index_};

	if (mdr::Status st = journal_.append(kLogMark, repl::encode_mark(m), {}); !st.ok())
		return mdr::Error(st.error(), st.message());
	mdr::Status st = journal_.append(type, payload, [this, index](const mdr::Status &s) {
		if (s.ok())
			local_durable(index);
		else
			log_error_rl("journal write failed: %s; the record at %llu waits for the "
				     "group's commit while the process stops", s.message().c_str(),
				     (unsigned long long)index);
	});
	if (!st.ok()) {
		stop("its journal refused the record at " + std::to_string(index) + " after its "
		     "mark: " + st.message());
		return mdr::Error(st.error(), st.message());
	}

	unshipped_.push_back({index, epoch_, type,
			      std::vector<std::byte>(payload.begin(), payload.end())});
	recent_.push({index, epoch_, type, std::vector<std::byte>(payload.begin(), payload.end())});
	if (mdr::Status h = answers_.hold(index, std::move(committed)); !h.ok()) {
		log_error("cannot wait for the commit of %llu: %s", (unsigned long long)index,
			  h.message().c_str());
		log_flush();
		std::abort();
	}
	next_index_++;
	return index;
}

// Group commit for the followers, as the journal's for the disk: at QD16
// a round prepares about as many changes, and one batch of them costs a
// follower one wakeup, one journal write and one DURABLE, the leader one
// WRITE per follower and one DURABLE to take from each. A change waits
// for no timer: the round that prepared it ships it.
void GroupReplica::ship_appended()
{
	if (unshipped_.empty())
		return;

	std::vector<repl::RecordRef> refs;

	// A stop or step down in this round dropped them with the shipper.
	assert(shipper_);
	refs.reserve(unshipped_.size());
	for (const repl::HeldRecord &r : unshipped_)
		refs.push_back({r.type, r.payload});
	if (mdr::Status sh = shipper_->ship(unshipped_.front().index, refs); !sh.ok()) {
		// The journal holds records the group's log lacks: the logs
		// would part from here on. A bug: stop, as for a journaled
		// change the state cannot take.
		log_error("cannot ship the journaled records at %llu..%llu: %s",
			  (unsigned long long)unshipped_.front().index,
			  (unsigned long long)unshipped_.back().index, sh.message().c_str());
		log_flush();
		std::abort();
	}
	unshipped_.clear();
}

void GroupReplica::local_durable(uint64_t index)
{
	local_durable_ = std::max(local_durable_, index);
	// After a stop the shipper is gone: nothing counts any more.
	if (!shipper_)
		return;
	// The journal may finish a write within the round that appended it.
	ship_appended();
	if (mdr::Status st = shipper_->local_durable(index); !st.ok())
		return stop("its journal's durable index " + std::to_string(index) + ": " +
			    st.message());
	answer_committed();
}

// The held records go to the store in the same step that lets the gate
// serve: no change is prepared against a store without them.
void GroupReplica::answer_committed()
{
	if (!gate_)
		return;
	gate_->on_commit(commit_index_);
	// The gate turns serving here or in tick(), which calls this too:
	// said once, where it happens.
	if (gate_->serving() && !serving_begun_) {
		if (mdr::Status st = apply_held(); !st.ok())
			return stop("applying the records its log held before epoch " +
				    std::to_string(epoch_) + ": " + st.message());
		serving_begun_ = true;
		// The record shows the epoch before any reply of it goes out:
		// accepting() holds from this step on.
		node_.epoch_record().serve(settings_.self, settings_.group, epoch_);
		node_.begin_leading(announced_);
		log_info("group %llu: serving in epoch %llu, %zu replicas' logs heard; the "
			 "leases of the leaders before are waited out for %u ms, their IO for "
			 "%u ms more", (unsigned long long)settings_.group,
			 (unsigned long long)epoch_, gate_->heard(), announced_.held_ms,
			 announced_.io_hold_ms);
	}
	answers_.release(commit_index_);
}

// Its EPOCH record committed, so did every record before it: its follower
// end's held records go to the store. That end takes nothing more (fenced
// to this epoch), and this process never follows again once it served.
mdr::Status GroupReplica::apply_held()
{
	for (const repl::HeldRecord &r : follower_->take_held())
		if (mdr::Status st = apply(r.index, r.type, r.payload); !st.ok())
			return mdr::Error(st.error(), "record " + std::to_string(r.index) + ": " +
						      st.message());
	return {};
}

// Before it shipped anything of its epoch: it goes back to following, and
// campaigns again only after two TTLs, so that the replica ahead wins.
void GroupReplica::step_down(const std::string &why)
{
	node_.epoch_record().stop();	// first: epoch_record.h
	log_warn("group %llu: stepping down from epoch %llu: %s",
		 (unsigned long long)settings_.group, (unsigned long long)epoch_, why.c_str());
	answers_.abandon(-EAGAIN);
	change_.reset();
	unshipped_.clear();
	shipper_.reset();
	// Its mirrors' memory is kept, mapped, for the epoch it may lead next.
	if (link_)
		mirrors_ = link_->take_mirrors();
	link_.reset();
	gate_.reset();
	member_->step_down(std::chrono::milliseconds(2 * settings_.ttl_s * 1000));
}

// Stops leading (or following) for good in this process: what waits is
// answered AGAIN, hosts are cut, the followers' connections closed; the
// loop stops the process at its next round (failed()).
void GroupReplica::stop(const std::string &why)
{
	node_.epoch_record().stop();	// first: epoch_record.h
	if (stopped_)
		return;
	failure_ = why;
	log_error("group %llu: stopping: %s", (unsigned long long)settings_.group, why.c_str());
	end();
}

// What waits is answered AGAIN, as at a failure: the client asks the next
// leader, which has every committed record. The resignation deletes the
// key only after hosts were cut and copies stopped (end()), so the next
// leader, elected from then on, finds no host served here; it waits out
// the leases granted here all the same (its EPOCH bounds).
void GroupReplica::shut_down()
{
	node_.epoch_record().stop();	// first: epoch_record.h
	if (stopped_)
		return;
	log_info("group %llu: stopping cleanly%s", (unsigned long long)settings_.group,
		 shipper_ ? ": the leader key goes now" : "");
	end();
}

void GroupReplica::end()
{
	node_.epoch_record().stop();	// first: epoch_record.h
	stopped_ = true;
	answers_.abandon(-EAGAIN);
	// Before valid_until - drift_margin (tick() stops it there): no
	// successor exists yet, and none of its copies writes after this
	// but what was submitted.
	node_.stop_copies();
	node_.stop_serving_hosts();
	// The shipper writes through the link: it goes first. A change of
	// the set is the next leader's to find in etcd, done or not.
	change_.reset();
	unshipped_.clear();
	shipper_.reset();
	link_.reset();
	gate_.reset();
	// Bounded by etcd's request timeout; what it leaves lapses with its
	// lease.
	(void)member_->resign();
}

} // namespace mdnode
