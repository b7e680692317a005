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
//	std::string text = format_metrics(snap);	// any thread, own copy
//
// Every family and its labels are listed in Documentation/operations.md,
// "Metrics". Label values are bounded: opcodes are the codec's, tenants
// at most kTenantSlots plus three (core.h), roles and states a handful.
#ifndef MDNODE_METRICS_H
#define MDNODE_METRICS_H

#include <cstdint>
#include <string>

#include "mdnode/core.h"
#include "mdnode/journal.h"
#include "mdnode/node.h"
#include "mdnode/store.h"

namespace mdnode {

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
};

// Copies the node's state into out without allocating. Loop thread only.
void take_snapshot(MetricsSnapshot &out, const Node &node, const Journal &journal,
		   const Store &store);

// The exposition (text format 0.0.4) of a snapshot.
std::string format_metrics(const MetricsSnapshot &m);

} // namespace mdnode

#endif // MDNODE_METRICS_H
