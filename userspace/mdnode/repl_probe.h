// SPDX-License-Identifier: GPL-2.0
//
// repl_probe.h - whether the process of a replica is gone, asked of the
// kernel of its host: an rdma_cm connect to the port its log listener
// (RdmaFollower) holds, carrying a probe (repl_conn.h).
//
//	gone	the peer's connection manager refused the request itself, as
//		one for a port nobody listens on on that device (REJ reason
//		IB_CM_REJ_INVALID_SERVICE_ID): no process holds the listener
//	alive	a process answered: its reject (kRejProbe from a replica of
//		this release, kRejInvalid from an older one), or an accept
//	unknown	anything else: no answer in time, an address or route that
//		does not resolve, an unreachable host (a host that is down or
//		cut off answers like this), a reject of another reason. rdma_cm
//		rejects with reason 28 and no private data for many causes in
//		a live process, so such a reject proves nothing; replicas that
//		share a host and an RDMA device share the port's service id,
//		and a dead one among them is never proved gone (the lease
//		decides)
//
// Why "gone" means the process ended: the listener is an rdma_cm id of
// the replica's own, which it holds from its start to its end: a replica
// that stops (stop(), a removed RDMA device, a failed journal) cancels
// its copies, waits for the IO they have in flight and only then lets
// its GroupReplica go (main.cc), and exits. Otherwise the kernel drops
// the listener when the process dies, with its rdma_cm file. A process
// that died serves nothing after: no answer, no renewal; the tables a
// host may READ are frozen (nothing writes them) and their regions go
// with its verbs file. A process that was killed may leave device IO in
// flight: what any stop leaves (replication.md, "Fencing a deposed
// leader").
//
// On iWARP a port nobody listens on refuses the TCP connect, which rdma_cm
// reports otherwise than reason 8: replicas there are never proved gone.
//
// A process started again on the same port is alive, not the one probed:
// the verdict is then "alive", and the caller falls back to the etcd
// lease running out. A probe never says "gone" of a live process; it may
// say "alive" or "unknown" of a dead one.
//
// Single-threaded, on the loop: fd() is the rdma_cm channel's, process()
// takes its events, tick() ends a probe at its deadline.
#ifndef MDNODE_REPL_PROBE_H
#define MDNODE_REPL_PROBE_H

#include <cstdint>
#include <memory>
#include <string>

#include "lib/util/result.h"
#include "lib/verbs/verbs.h"

struct rdma_cm_event;
struct rdma_cm_id;

namespace mdnode::repl {

class ReplicaProbe {
public:
	enum class Verdict { none, pending, gone, alive, unknown };

	// group: what the probe says it asks for. It connects from any
	// address, as the leader's link does: the route decides.
	static mdr::Result<std::unique_ptr<ReplicaProbe>> create(uint64_t group);
	~ReplicaProbe();
	ReplicaProbe(const ReplicaProbe &) = delete;
	ReplicaProbe &operator=(const ReplicaProbe &) = delete;

	int fd() const;
	// A probe of address:port, over at now_ms + timeout_ms at the latest;
	// one under way is dropped.
	void start(const std::string &address, uint16_t port, int64_t now_ms, int timeout_ms);
	void process();
	void tick(int64_t now_ms);
	// Drops a probe under way; verdict() is none.
	void cancel();

	Verdict verdict() const { return verdict_; }
	// What the verdict rests on, for the log.
	const std::string &detail() const { return detail_; }

private:
	explicit ReplicaProbe(uint64_t group) : group_(group) {}
	void on_event(rdma_cm_event *ev);
	void finish(Verdict v, std::string detail);
	void drop_id();

	const uint64_t group_;
	mdr::verbs::EventChannelPtr ec_;
	rdma_cm_id *id_ = nullptr;
	int64_t deadline_ = 0;
	int timeout_ms_ = 0;
	Verdict verdict_ = Verdict::none;
	std::string detail_;
};

const char *verdict_name(ReplicaProbe::Verdict v);

} // namespace mdnode::repl

#endif // MDNODE_REPL_PROBE_H
