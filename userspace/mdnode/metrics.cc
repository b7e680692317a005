// SPDX-License-Identifier: GPL-2.0
//
// metrics.cc - see metrics.h. The names follow Prometheus' conventions:
// mdnode_ first, counters end in _total, durations are histograms in
// seconds (_seconds), sizes in bytes (_bytes), and a family's labels are
// the same on all its series.
#include "mdnode/metrics.h"

#include <array>
#include <cctype>
#include <span>
#include <string_view>
#include <vector>

#include <linux/mdroute_wire.h>

#include "lib/util/prometheus.h"
#include "lib/util/release.h"
#include "lib/wire/wire.h"
#include "mdnode/log.h"

namespace mdnode {

namespace prom = mdr::prom;

namespace {

// The opcodes a node takes as requests, with their label: "open" for
// MDR_OP_OPEN. INVALIDATE is mdnode's own push (its acks are the
// mdnode_push_* families), so it has no request series.
struct OpcodeLabel {
	uint16_t opcode;
	std::string label;
};

const std::vector<OpcodeLabel> &opcode_labels()
{
	static const std::vector<OpcodeLabel> labels = [] {
		std::vector<OpcodeLabel> v;
		constexpr std::string_view prefix = "MDR_OP_";

		for (uint16_t op = 0; op < kOpcodeSlots; op++) {
			std::string name = mdr::wire::opcode_name(op);
			if (op == MDR_OP_INVALIDATE || !name.starts_with(prefix) ||
			    name.find('?') != std::string::npos)
				continue;
			std::string label = name.substr(prefix.size());
			for (char &c : label)
				c = char(std::tolower(static_cast<unsigned char>(c)));
			v.push_back({op, std::move(label)});
		}
		return v;
	}();
	return labels;
}

template <const HistogramBounds &B>
void put_histogram(prom::Writer &w, std::string_view name, std::span<const prom::Label> labels,
		   const Histogram<B> &h)
{
	std::array<double, kHistogramBounds> le;

	for (size_t i = 0; i < kHistogramBounds; i++)
		le[i] = double(B.le[i]) / B.divisor;
	w.histogram(name, labels, le, h.counts, double(h.sum) / B.divisor);
}

template <const HistogramBounds &B>
void put_histogram(prom::Writer &w, std::string_view name, std::string_view help,
		   const Histogram<B> &h)
{
	w.family(name, help, prom::Type::histogram);
	put_histogram(w, name, std::span<const prom::Label>(), h);
}

void counter(prom::Writer &w, std::string_view name, std::string_view help, uint64_t v)
{
	w.family(name, help, prom::Type::counter);
	w.sample(name, {}, v);
}

void gauge(prom::Writer &w, std::string_view name, std::string_view help, uint64_t v)
{
	w.family(name, help, prom::Type::gauge);
	w.sample(name, {}, v);
}

void requests(prom::Writer &w, const RequestStats &r)
{
	const auto &ops = opcode_labels();

	w.family("mdnode_requests_total", "Requests received, by opcode.", prom::Type::counter);
	for (const OpcodeLabel &o : ops)
		w.sample("mdnode_requests_total", {{"opcode", o.label}}, r.requests[o.opcode]);
	w.family("mdnode_request_errors_total",
		 "Requests answered with an error status, by opcode.", prom::Type::counter);
	for (const OpcodeLabel &o : ops)
		w.sample("mdnode_request_errors_total", {{"opcode", o.label}}, r.errors[o.opcode]);
	w.family("mdnode_request_duration_seconds",
		 "Time from a request's arrival to its reply's send, by opcode.",
		 prom::Type::histogram);
	for (const OpcodeLabel &o : ops) {
		const prom::Label l[] = {{"opcode", o.label}};
		put_histogram(w, "mdnode_request_duration_seconds", l, r.latency[o.opcode]);
	}
	counter(w, "mdnode_requests_untimed_total",
		"Requests answered but not timed: beyond the queue depth their "
		"connection was granted.", r.untimed);

	w.family("mdnode_tenant_requests_total",
		 "Requests and acks received, by tenant: the first 64 tenants proven get "
		 "a series each, later ones count as \"other\"; \"admin\" is admin "
		 "connections, \"unproven\" hosts before HOST_AUTH.",
		 prom::Type::counter);
	w.sample("mdnode_tenant_requests_total", {{"tenant", "unproven"}},
		 r.by_tenant[RequestStats::kUnproven]);
	w.sample("mdnode_tenant_requests_total", {{"tenant", "admin"}},
		 r.by_tenant[RequestStats::kAdmin]);
	w.sample("mdnode_tenant_requests_total", {{"tenant", "other"}},
		 r.by_tenant[RequestStats::kOther]);
	for (uint32_t i = 0; i < r.tenants && i < kTenantSlots; i++) {
		const std::string t = std::to_string(r.tenant_ids[i]);
		w.sample("mdnode_tenant_requests_total", {{"tenant", t}},
			 r.by_tenant[RequestStats::kFirstTenant + i]);
	}
}

void connections(prom::Writer &w, const NodeStats &s)
{
	counter(w, "mdnode_connections_total", "Connections established since the start.",
		s.connections);
	w.family("mdnode_connections_open", "Connections open now, by role.", prom::Type::gauge);
	w.sample("mdnode_connections_open", {{"role", "host"}}, s.connected_hosts);
	w.sample("mdnode_connections_open", {{"role", "admin"}}, s.connected_admins);
	counter(w, "mdnode_connections_refused_total",
		"Connect requests refused by the transport: bad private data, no common "
		"version, a connection cap.", s.conn_refused);
	counter(w, "mdnode_bad_messages_total",
		"Messages that failed to parse or could not be received.", s.bad_messages);
	counter(w, "mdnode_auth_failures_total",
		"Proofs refused or missing: admin AUTH, HOST_AUTH, host requests before "
		"HOST_AUTH, hosts silent past the auth timeout.", s.auth_failures);
}

void leases(prom::Writer &w, const MetricsSnapshot &m)
{
	const NodeStats &s = m.node;

	w.family("mdnode_leases",
		 "Leases held: valid, or lapsed while their host's IO may still land.",
		 prom::Type::gauge);
	w.sample("mdnode_leases", {{"state", "valid"}}, m.leases - m.leases_lapsed);
	w.sample("mdnode_leases", {{"state", "lapsed"}}, m.leases_lapsed);
	counter(w, "mdnode_leases_granted_total", "Leases granted by OPEN.", s.leases_granted);
	counter(w, "mdnode_lease_renewals_total", "Leases extended by RENEW, one per volume.",
		s.lease_renewals);
	counter(w, "mdnode_leases_lapsed_total", "Leases that ran out without renewal.",
		s.lease_expiries);
	gauge(w, "mdnode_restart_grace",
	      "1 while leases granted before the start may still be held.", m.restart_grace);
}

void pushes(prom::Writer &w, const NodeStats &s)
{
	counter(w, "mdnode_pushes_sent_total", "Invalidations pushed to hosts.",
		s.invalidations);
	counter(w, "mdnode_push_acks_total", "Pushes acknowledged by their host.", s.push_acks);
	put_histogram(w, "mdnode_push_ack_duration_seconds",
		      "Time from a push's send to its ack.", s.push_ack_us);
	counter(w, "mdnode_push_timeouts_total",
		"Connections cut for a push left unacked a lease period.", s.push_timeouts);
	counter(w, "mdnode_fences_total",
		"Hosts fenced for owing an ack a lease period across connections.", s.fences);
}

void journal(prom::Writer &w, const MetricsSnapshot &m)
{
	const Journal::Stats &j = m.journal;

	counter(w, "mdnode_journal_records_total", "Records appended to the journal.",
		j.records);
	counter(w, "mdnode_journal_bytes_total",
		"Bytes written to journal segments, headers and padding included.", j.bytes);
	counter(w, "mdnode_journal_batches_total", "Batch writes completed.", j.batches);
	put_histogram(w, "mdnode_journal_batch_records", "Records in each batch written.",
		      j.batch_records);
	put_histogram(w, "mdnode_journal_sync_duration_seconds",
		      "Time from a batch write's submission to its durable completion.",
		      j.sync_us);
	counter(w, "mdnode_journal_syncs_total",
		"Device syncs: batch writes and the fsyncs of segments and checkpoints.",
		j.syncs);
	counter(w, "mdnode_journal_segments_total", "Journal segments created.", j.segments);
	counter(w, "mdnode_checkpoints_total", "Checkpoints written.", j.checkpoints);
	counter(w, "mdnode_checkpoint_failures_total", "Checkpoints that failed.",
		j.checkpoint_failures);
	gauge(w, "mdnode_journal_failed",
	      "1 once a journal write failed: mdnode stops and is to be restarted.",
	      m.journal_failed);
}

void moves(prom::Writer &w, const MetricsSnapshot &m)
{
	const NodeStats &s = m.node;

	counter(w, "mdnode_moves_done_total", "Extent moves published.", s.moves_done);
	counter(w, "mdnode_moves_failed_total", "Extent moves rolled back.", s.moves_failed);
	counter(w, "mdnode_move_bytes_total", "Bytes of the extents moved.", s.move_bytes);
	counter(w, "mdnode_move_precopy_bytes_total",
		"Bytes pre-copied while hosts used the extent.", s.precopy_bytes);
	counter(w, "mdnode_move_freeze_bytes_total",
		"Bytes copied while the extent was frozen.", s.freeze_bytes);
	put_histogram(w, "mdnode_move_stall_seconds",
		      "Time hosts waited on a frozen extent, per move published.", s.stall_us);
	gauge(w, "mdnode_moves_active", "Extent moves under way.", m.moves_active);
	counter(w, "mdnode_extents_zeroed_total", "Extents zeroed before their ALLOC.",
		s.extents_zeroed);
	counter(w, "mdnode_extent_zero_failures_total",
		"Zeroings that failed (their ALLOC was answered EIO).", s.zero_failures);
}

const char *role_label(uint16_t role)
{
	switch (role) {
	case MDR_REPLICA_FOLLOWER:
		return "follower";
	case MDR_REPLICA_TAKING_OVER:
		return "taking_over";
	case MDR_REPLICA_LEADER:
		return "leader";
	case MDR_REPLICA_STOPPED:
		return "stopped";
	}
	return nullptr;
}

// The leader's side: counters of this epoch's shipper (a new epoch begins
// them at zero, as a restart does), and each follower's state and lag.
void shipping(prom::Writer &w, const ReplicaMetrics &r)
{
	using repl::FollowerState;
	static constexpr FollowerState states[] = {
		FollowerState::unready, FollowerState::streaming, FollowerState::backlogged,
		FollowerState::needs_checkpoint, FollowerState::checkpointing,
		FollowerState::dropped,
	};
	const std::span<const ReplicaMetrics::Follower> fs(r.followers.data(), r.n_followers);

	counter(w, "mdnode_repl_shipped_batches_total",
		"Batches the leader framed of its records, this epoch.", r.shipped.batches);
	counter(w, "mdnode_repl_shipped_records_total",
		"Records the leader framed into batches, this epoch.", r.shipped.records);
	counter(w, "mdnode_repl_ring_writes_total",
		"Batches written into the followers' rings, this epoch.", r.shipped.writes);
	counter(w, "mdnode_repl_backlog_waits_total",
		"Batches that found a follower's ring full, this epoch.",
		r.shipped.backlog_waits);
	counter(w, "mdnode_repl_follower_drops_total",
		"Followers dropped for a protocol error or a failed link, this epoch.",
		r.shipped.drops);
	counter(w, "mdnode_repl_follower_checkpoints_total",
		"Checkpoints followers installed from this leader, this epoch.",
		r.shipped.checkpoints);
	gauge(w, "mdnode_repl_window_bytes",
	      "Bytes of recent batches the leader keeps for backlogs and reconnects.",
	      r.window_bytes);
	w.family("mdnode_repl_follower_state",
		 "1 for the state each follower is in, as the leader ships to it.",
		 prom::Type::gauge);
	for (const ReplicaMetrics::Follower &f : fs) {
		const std::string id = std::to_string(f.id);

		for (FollowerState s : states)
			w.sample("mdnode_repl_follower_state",
				 {{"replica", id}, {"state", repl::state_name(s)}}, f.state == s);
	}
	// No sample for a follower whose durable index the leader does not
	// know yet: its lag would read as the whole log after every
	// failover. A follower reports no index past what was shipped to it
	// (LogShipper::on_durable()); the clamp only keeps a gauge from
	// wrapping.
	w.family("mdnode_repl_follower_lag_records",
		 "Records of the leader's log a follower has not reported durable; none "
		 "until it connected in this epoch.",
		 prom::Type::gauge);
	for (const ReplicaMetrics::Follower &f : fs)
		if (f.known)
			w.sample("mdnode_repl_follower_lag_records",
				 {{"replica", std::to_string(f.id)}},
				 r.last_index > f.durable_index ? r.last_index - f.durable_index
								: 0);
}

void replica(prom::Writer &w, const ReplicaMetrics &r)
{
	static constexpr uint16_t roles[] = {MDR_REPLICA_FOLLOWER, MDR_REPLICA_TAKING_OVER,
					     MDR_REPLICA_LEADER, MDR_REPLICA_STOPPED};

	if (!role_label(r.role))
		return;
	w.family("mdnode_replica_role", "1 for the role this replica has now.", prom::Type::gauge);
	for (uint16_t role : roles)
		w.sample("mdnode_replica_role", {{"role", role_label(role)}}, r.role == role);
	gauge(w, "mdnode_replica_epoch",
	      "The epoch of the leader this replica knows (its own when it leads); 0: none.",
	      r.epoch);
	gauge(w, "mdnode_replica_last_index", "The index of the last record of its log.",
	      r.last_index);
	gauge(w, "mdnode_replica_commit_index",
	      "The leader's commit index; a follower's last record applied.", r.commit_index);
	counter(w, "mdnode_repl_received_batches_total",
		"Batches of a leader's log this replica appended to its journal.",
		r.received.batches);
	counter(w, "mdnode_repl_received_records_total",
		"Records of a leader's log this replica appended to its journal.",
		r.received.records);
	counter(w, "mdnode_repl_durables_sent_total",
		"DURABLE messages this replica sent its leader.", r.received.durables);
	counter(w, "mdnode_repl_checkpoints_installed_total",
		"Checkpoints of a leader's state this replica installed.",
		r.received.checkpoints);
	counter(w, "mdnode_repl_log_refusals_total",
		"Log connections this replica refused (replication.md, \"The replication "
		"connection\").",
		r.log_refusals);
	if (r.leading)
		shipping(w, r);
}

} // namespace

void take_snapshot(MetricsSnapshot &out, const Node &node, const Journal &journal,
		   const Store &store)
{
	const Counts c = store.counts();

	out.node = node.stats();
	out.journal = journal.stats();
	out.journal_failed = journal.failed();
	out.leases = node.leases();
	out.leases_lapsed = node.leases_lapsed();
	out.volumes = c.volumes;
	out.extents = c.extents;
	out.hosts = c.hosts;
	out.moves_active = node.moves_active();
	out.restart_grace = node.in_restart_grace();
	out.log_dropped = log_dropped();
	out.uptime_ms = node.uptime_ms();
}

std::string format_metrics(const MetricsSnapshot &m)
{
	prom::Writer w;
	const std::string wire_version = std::to_string(MDR_WIRE_VERSION);

	w.family("mdnode_build_info", "The release of this mdnode and its wire protocol.",
		 prom::Type::gauge);
	w.sample("mdnode_build_info",
		 {{"release", mdr::release()}, {"wire_version", wire_version}}, 1);
	w.family("mdnode_uptime_seconds", "Time since mdnode started.", prom::Type::gauge);
	w.sample_double("mdnode_uptime_seconds", {}, double(m.uptime_ms) / 1000);

	requests(w, m.node.req);
	connections(w, m.node);
	leases(w, m);
	pushes(w, m.node);
	journal(w, m);
	moves(w, m);
	replica(w, m.replica);
	gauge(w, "mdnode_volumes", "Volumes on this node.", m.volumes);
	gauge(w, "mdnode_extents_mapped", "Extents with a place on a device.", m.extents);
	gauge(w, "mdnode_hosts_registered", "Hosts in the host registry.", m.hosts);
	counter(w, "mdnode_log_lines_dropped_total",
		"Log lines dropped because stderr was slower than they came.", m.log_dropped);
	return w.take();
}

} // namespace mdnode
