// SPDX-License-Identifier: GPL-2.0
//
// node.cc - mdctl node stats: the counters of a storage node.
#include <cstdio>
#include <string>
#include <utility>

#include "lib/util/json.h"
#include "lib/wire/wire.h"
#include "mdctl/cli.h"
#include "mdctl/session.h"

namespace mdctl {

namespace {

constexpr std::string_view kNodeStatsUsage =
	"Usage: mdctl node stats [--node ADDR[:PORT]] [--key-file FILE] [-o json]\n"
	"\n"
	"Show the counters of the storage node since it started: connections,\n"
	"volumes, requests, errors, journal and invalidation counts, and extent\n"
	"moves (migrate, dev drain): in progress, done, failed, bytes copied by\n"
	"those done, the longest and the total stall of one extent (from its\n"
	"freeze to its publication at the new place, in microseconds), and\n"
	"push_timeouts: host connections cut for leaving an invalidation\n"
	"unacked while holding their lease. Of the moves done, precopy_bytes\n"
	"counts the bytes copied while hosts still used the extent, before its\n"
	"freeze, and freeze_bytes those copied under the freeze (the dirty parts\n"
	"after a pre-copy, the whole extent without one). auth_failures counts\n"
	"the proofs refused (admin and host), the host requests refused before\n"
	"a proof and the hosts cut for giving none in time; hosts is the size of\n"
	"the host registry. conn_refused counts the connect requests refused\n"
	"before a session (bad private data, no common version, a connection\n"
	"cap: --max-connections, --max-connections-per-tenant, the admin slots);\n"
	"fences the hosts fenced for owing an invalidation ack a lease long.\n"
	"A node that predates a counter (the move counters, push_timeouts,\n"
	"precopy_bytes, freeze_bytes, auth_failures, hosts, conn_refused and\n"
	"fences) reports it as 0.\n"
	"\n"
	"Options:\n"
	MDCTL_NODE_OPTIONS
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

int cmd_node_stats(Args args, const Env &env)
{
	Common c;
	NodeSettings ns;
	std::unique_ptr<NodeSession> node;

	if (auto done = node_command(args, kNodeCommandOptions, kNodeStatsUsage, "node stats", env,
				     c, ns, node))
		return *done;
	auto rep = rpc<mdr::wire::NodeStatsRep>(*node, mdr::wire::NodeStatsReq{});
	if (!rep.ok())
		return rpc_failure(env, "node stats", rep, {}, ns.target);
	const mdr::wire::NodeStatsRep &r = rep.value();
	const std::pair<std::string_view, uint64_t> counters[] = {
		{"boot_id", r.boot_id}, {"uptime_ms", r.uptime_ms},
		{"connections", r.connections}, {"volumes", r.volumes},
		{"requests", r.requests}, {"errors", r.errors},
		{"bad_messages", r.bad_messages}, {"journal_records", r.journal_records},
		{"journal_bytes", r.journal_bytes}, {"journal_syncs", r.journal_syncs},
		{"invalidations", r.invalidations}, {"lease_expiries", r.lease_expiries},
		{"moves_active", r.moves_active}, {"moves_done", r.moves_done},
		{"moves_failed", r.moves_failed}, {"move_bytes", r.move_bytes},
		{"move_stall_max_us", r.stall_max_us},
		{"move_stall_total_us", r.stall_total_us},
		{"push_timeouts", r.push_timeouts},
		{"precopy_bytes", r.precopy_bytes}, {"freeze_bytes", r.freeze_bytes},
		{"auth_failures", r.auth_failures}, {"hosts", r.hosts},
		{"conn_refused", r.conn_refused}, {"fences", r.fences},
	};

	if (c.format == Format::json) {
		mdr::JsonWriter json;
		json.begin_object().key("node").value(format_node(ns.target));
		for (const auto &[name, value] : counters)
			json.key(name).value(value);
		json.end_object();
		env.out << json.str() << '\n';
		return kExitOk;
	}
	Table table({{"COUNTER", false}, {"VALUE", true}});
	table.add({"node", format_node(ns.target)});
	for (const auto &[name, value] : counters) {
		char hex[19];
		// boot_id is an identity, read as hex like node_id in mdnode's log
		if (name == "boot_id")
			std::snprintf(hex, sizeof(hex), "0x%016llx",
				      static_cast<unsigned long long>(value));
		table.add({std::string(name), name == "boot_id" ? hex : std::to_string(value)});
	}
	table.print(env.out);
	return kExitOk;
}

const Registration kRegistered[] = {
	{group(Place::node, "node", "show the counters of a storage node")},
	{sub("node", 1, "stats", "show the counters of the node", cmd_node_stats)},
};

} // namespace

} // namespace mdctl
