// SPDX-License-Identifier: GPL-2.0
//
// group_dead_leader.cc - a follower that sees its leader's process die ends
// that leader's epoch at once (replication.md, "A dead leader").
//
//	hangup	the leader's side ended the log connection (its DREQ: what
//		the connections of a process that died send)
//	probe	is anything listening on that leader's log port? Asked again
//		every kProbeAgainMs while the answer proves nothing (one that
//		gets no answer takes kProbeTimeoutMs), for one TTL at most
//		(after that the lease has run out anyway)
//	depose	nothing listens: the process is gone; its etcd lease is
//		revoked (Deposer), the key goes with it, and every replica's
//		campaign goes on as after an expiry. Asked again, within the
//		TTL, when etcd fails it
//
// Only for the leader etcd names now, at the epoch of the connection that
// ended: a hangup of an epoch that is over, or of a leader that answers,
// changes nothing. Both followers may do it; the second finds the key
// gone or made again and revokes nothing. What the group then does is
// what it does after an expiry: the leader it elects waits out the dead
// one's leases as ever (held_ms from when it serves), and they were all
// granted before the process died, so before that.
#include <algorithm>

#include "mdnode/group_replica.h"
#include "mdnode/log.h"

namespace mdnode {

namespace {

MDNODE_LOG_SUBSYSTEM("group");

// One probe's time: rdma_cm resolves and connects in milliseconds on a
// live network; a host that is down does not answer at all.
constexpr int kProbeTimeoutMs = 500;
// Between two probes that proved nothing: the dead process's listener
// may go a moment after its connections (another file of the process).
constexpr int64_t kProbeAgainMs = 100;

} // namespace

void GroupReplica::on_hangup(uint64_t epoch, int64_t now_ms)
{
	// A leader can connect, and die, before etcd's key reached this
	// replica (its reading waits in a campaign for up to a third of the
	// TTL): kept for on_group(), which calls this again once the key
	// names that epoch.
	if (epoch > known_epoch_) {
		early_hangup_ = {epoch, now_ms};
		return;
	}
	if (shipper_ || stopped_ || epoch != known_epoch_ || known_leader_id_ == 0 ||
	    known_leader_id_ == settings_.self || (probing_ && probing_->epoch == epoch))
		return;
	auto it = std::find_if(members_.begin(), members_.end(),
			       [this](const ReplicaArg &a) { return a.id == known_leader_id_; });
	if (it == members_.end())
		return;
	// Rate-limited: a live leader that drops this follower again and
	// again (a connection it refuses) makes a hangup each time.
	log_info_rl("group %llu: leader %u of epoch %llu ended its log connection; probing "
		    "%s:%u", (unsigned long long)settings_.group, known_leader_id_,
		    (unsigned long long)epoch, it->address.c_str(), it->port);
	probing_ = Probing{epoch, *it, now_ms + int64_t(settings_.ttl_s) * 1000, now_ms};
	probe_->start(it->address, it->port, now_ms, kProbeTimeoutMs);
	probe_tick(now_ms);
}

// Probing, then deposing: a deposition refused (one of another epoch
// under way) or failed (etcd) is asked again every kProbeAgainMs, within
// the TTL.
void GroupReplica::probe_tick(int64_t now_ms)
{
	if (!probing_)
		return;
	Probing &p = *probing_;
	auto done = [&](const char *what) {
		log_info_rl("group %llu: leader %u of epoch %llu: %s (%s)",
			    (unsigned long long)settings_.group, p.leader.id,
			    (unsigned long long)p.epoch, what, probe_->detail().c_str());
		probe_->cancel();
		probing_.reset();
	};

	if (shipper_ || stopped_ || p.epoch != known_epoch_) {
		probe_->cancel();
		probing_.reset();
		return;
	}
	if (p.gone) {
		if (p.asked || now_ms < p.last + kProbeAgainMs)
			return;
		if (now_ms >= p.until)
			return done("not deposed within a TTL; its etcd lease decides");
		p.last = now_ms;
		if (mdr::Status s = deposer_->depose(int64_t(p.epoch), known_lease_); !s.ok()) {
			log_warn_rl("group %llu: epoch %llu not deposed yet: %s",
				    (unsigned long long)settings_.group,
				    (unsigned long long)p.epoch, s.message().c_str());
			return;
		}
		p.asked = true;
		return;
	}
	probe_->tick(now_ms);
	switch (probe_->verdict()) {
	case repl::ReplicaProbe::Verdict::pending:
		return;
	case repl::ReplicaProbe::Verdict::gone:
		log_warn("group %llu: leader %u of epoch %llu: its process is gone (%s); revoking "
			 "its etcd lease", (unsigned long long)settings_.group, p.leader.id,
			 (unsigned long long)p.epoch, probe_->detail().c_str());
		probe_->cancel();
		p.gone = true;
		p.last = now_ms - kProbeAgainMs;
		return probe_tick(now_ms);
	case repl::ReplicaProbe::Verdict::alive:
		return done("its process answers; its etcd lease decides");
	case repl::ReplicaProbe::Verdict::none:
	case repl::ReplicaProbe::Verdict::unknown:
		break;
	}
	if (now_ms >= p.until)
		return done("nothing proved it gone within a TTL; its etcd lease decides");
	if (now_ms >= p.last + kProbeAgainMs) {
		log_info_rl("group %llu: leader %u of epoch %llu: a probe proved nothing (%s)",
			    (unsigned long long)settings_.group, p.leader.id,
			    (unsigned long long)p.epoch, probe_->detail().c_str());
		p.last = now_ms;
		probe_->start(p.leader.address, p.leader.port, now_ms, kProbeTimeoutMs);
	}
}

void GroupReplica::deposed()
{
	auto o = deposer_->take();
	if (!o)
		return;
	const bool ours = probing_ && probing_->gone && int64_t(probing_->epoch) == o->epoch;

	if (!o->revoked.ok()) {
		log_warn_rl("group %llu: epoch %lld not deposed: %s",
			    (unsigned long long)settings_.group, (long long)o->epoch,
			    o->revoked.message().c_str());
		if (ours)
			probing_->asked = false;	// asked again from the tick
		return;
	}
	log_info("group %llu: epoch %lld %s", (unsigned long long)settings_.group,
		 (long long)o->epoch,
		 o->revoked.value() ? "deposed: its leader key is gone"
				    : "was over already (its key gone or made again, or its lease "
				      "gone)");
	if (ours)
		probing_.reset();
}

} // namespace mdnode
