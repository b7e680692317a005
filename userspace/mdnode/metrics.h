// SPDX-License-Identifier: GPL-2.0
//
// metrics.h - what mdnode's metrics endpoint shows: a snapshot of the
// node's counters, taken on the loop's thread, and its exposition in
// Prometheus' text format, made from the snapshot alone on the endpoint's
// thread (metrics_http.h). The counters themselves are counted where the
// events happen (NodeStats in core.h, Journal::Stats); nothing here is on
// the path of a request.
//
//	MetricsSnapshot snap;
//	take_snapshot(snap, node, journal, store);	// loop thread
//	replica->metrics(snap.replica);			// a replica's, too
//	std::string text = format_metrics(snap);	// any thread, own copy
//
// Every family and its labels are listed in Documentation/operations.md,
// "Metrics". Label values are bounded: opcodes are the codec's, tenants
// at most kTenantSlots plus three (core.h), roles and states a handful,
// replicas the set's (kMaxReplicas).
#ifndef MDNODE_METRICS_H
#define MDNODE_METRICS_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include <linux/mdroute_wire.h>

#include "mdnode/config.h"
#include "mdnode/core.h"
#include "mdnode/journal.h"
#include "mdnode/node.h"
#include "mdnode/repl_follower.h"
#include "mdnode/repl_leader.h"
#include "mdnode/store.h"

namespace mdnode {

// A replica of a group (replication.md), for the mdnode_replica_ and
// mdnode_repl_ families: GroupReplica::metrics() fills it. A node of its
// own keeps role MDR_REPLICA_NONE and shows none of them.
struct ReplicaMetrics {
	uint16_t role = MDR_REPLICA_NONE;	// enum mdr_replica_role
	uint64_t epoch = 0;			// the leader's it knows; 0: none
	uint64_t last_index = 0;		// of its log
	uint64_t commit_index = 0;		// as group_status() says it
	// Its log's follower end, every connection's since the start.
	repl::ReceiverStats received{};
	uint64_t log_refusals = 0;		// connections it refused
	// Leading: this epoch's shipper, and each follower as it sees it.
	bool leading = false;
	repl::ShipperStats shipped{};
	uint64_t window_bytes = 0;
	struct Follower {
		uint32_t id = 0;
		repl::FollowerState state = repl::FollowerState::unready;
		// Its durable index is known to this leader: it connected in
		// this epoch with a log the shipper counts.
		bool known = false;
		uint64_t durable_index = 0;
	};
	// The set's other members and a replica being added.
	std::array<Follower, kMaxReplicas> followers{};
	size_t n_followers = 0;
};

// Plain values only (no pointer into the node, no container that
// allocates): copied as a whole under the endpoint's lock.
struct MetricsSnapshot {
	NodeStats node{};
	Journal::Stats journal{};
	bool journal_failed = false;
	uint64_t leases = 0, leases_lapsed = 0;
	uint64_t volumes = 0, extents = 0, hosts = 0, moves_active = 0;
	bool restart_grace = false;
	uint64_t log_dropped = 0;
	int64_t uptime_ms = 0;
	ReplicaMetrics replica{};
};

// Copies the node's state into out without allocating. Loop thread only.
// A replica's part is its own to fill (GroupReplica::metrics()).
void take_snapshot(MetricsSnapshot &out, const Node &node, const Journal &journal,
		   const Store &store);

// The exposition (text format 0.0.4) of a snapshot.
std::string format_metrics(const MetricsSnapshot &m);

} // namespace mdnode

#endif // MDNODE_METRICS_H
