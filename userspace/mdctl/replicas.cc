// SPDX-License-Identifier: GPL-2.0
//
// replicas.cc - mdctl node replicas: a replica group as the replica named
// sees it (MDR_OP_GROUP_STATUS): who leads, in which epoch, its log, and
// each replica's membership, state and durable index as far as it knows
// them.
#include <cerrno>
#include <iterator>
#include <string>
#include <string_view>

#include "lib/util/json.h"
#include "lib/wire/wire.h"
#include "mdctl/cli.h"
#include "mdctl/session.h"

namespace mdctl {

namespace {

namespace wire = mdr::wire;

constexpr std::string_view kNodeReplicasUsage =
	"Usage: mdctl node replicas [--node ADDR[:PORT]] [--key-file FILE] [-o json]\n"
	"\n"
	"Show the replica group of the storage node as the replica named sees it:\n"
	"its role (leader, taking-over: leading but not serving yet, follower,\n"
	"stopped), the leader it knows and its epoch, its log's last index and\n"
	"the commit index (a follower's: what it applied), and every replica of\n"
	"the set with its log address and membership (voter; learner, joining or\n"
	"leaving while 'mdctl replica add' or 'remove' changes the set). The\n"
	"leader also shows each follower's state (connecting, streaming,\n"
	"backlogged, needs-checkpoint, dropped) and the last index it reported\n"
	"durable; a follower knows only its own.\n"
	"Any replica answers, leader or not. A node of its own says so.\n"
	"\n"
	"Options:\n"
	MDCTL_NODE_OPTIONS
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

// The names of the values of the wire's replica enums, in their order.
constexpr const char *kRoles[] = {"none", "follower", "leader", "taking-over", "stopped"};
constexpr const char *kStates[] = {"unknown", "self", "connecting", "streaming",
				   "backlogged", "needs-checkpoint", "dropped"};
constexpr const char *kMemberships[] = {"voter", "learner", "joining", "leaving"};
static_assert(std::size(kRoles) == MDR_REPLICA_ROLE_MAX);
static_assert(std::size(kStates) == MDR_PEER_STATE_MAX);
static_assert(std::size(kMemberships) == MDR_MEMBER_MAX);

// The name of @value, the first one's beyond them (the codec refuses it).
template <size_t N>
std::string name_of(const char *const (&names)[N], unsigned value)
{
	return names[value < N ? value : 0];
}

std::string replica_address(const wire::Replica &r)
{
	return wire::address_text(r.family, r.addr, r.port);
}

int cmd_node_replicas(Args args, const Env &env)
{
	Common c;
	NodeSettings ns;
	std::unique_ptr<NodeSession> node;

	if (auto done = node_command(args, kNodeCommandOptions, kNodeReplicasUsage,
				     "node replicas", env, c, ns, node))
		return *done;
	auto rep = rpc<wire::GroupStatusRep>(*node, wire::GroupStatusReq{});
	if (!rep.ok() && rep.error() == -EPROTO && node->accepted().version < wire::kGroupVersion)
		return failure(env, "node replicas", -EPROTONOSUPPORT,
			       "mdnode at " + format_node(ns.target) + " speaks wire version " +
				       std::to_string(node->accepted().version),
			       "a node from before replica groups (version 5) has none");
	if (!rep.ok())
		return rpc_failure(env, "node replicas", rep, {}, ns.target);
	const wire::GroupStatusRep &r = rep.value();

	if (c.format == Format::json) {
		mdr::JsonWriter json;
		json.begin_object().key("node").value(format_node(ns.target));
		json.key("group").value(r.group);
		if (r.group) {
			json.key("self").value(uint64_t{r.self});
			json.key("role").value(name_of(kRoles, r.role));
			json.key("leader").value(uint64_t{r.leader});
			json.key("epoch").value(r.epoch);
			json.key("last_index").value(r.last_index);
			json.key("commit_index").value(r.commit_index);
			json.key("replicas").begin_array();
			for (const wire::Replica &p : r.replicas) {
				json.begin_object();
				json.key("id").value(uint64_t{p.id});
				json.key("address").value(replica_address(p));
				json.key("membership").value(name_of(kMemberships, p.membership));
				json.key("state").value(name_of(kStates, p.state));
				json.key("durable").value(p.durable);
				json.key("leader").value(p.id == r.leader);
				json.end_object();
			}
			json.end_array();
		}
		json.end_object();
		env.out << json.str() << '\n';
		return kExitOk;
	}
	if (!r.group) {
		env.out << format_node(ns.target) << ": a node of its own, no replica group\n";
		return kExitOk;
	}
	env.out << "group " << r.group << ", replica " << r.self << " (" << name_of(kRoles, r.role)
		<< "), leader "
		<< (r.leader ? std::to_string(r.leader) + " in epoch " + std::to_string(r.epoch)
			     : std::string("unknown"))
		<< ", log at " << r.last_index << ", committed " << r.commit_index << "\n";
	Table table({{"ID", true}, {"ADDRESS", false}, {"MEMBER", false}, {"STATE", false},
		     {"DURABLE", true}, {"LEADER", false}});
	for (const wire::Replica &p : r.replicas)
		table.add({std::to_string(p.id), replica_address(p), name_of(kMemberships, p.membership),
			   name_of(kStates, p.state), p.durable ? std::to_string(p.durable) : "-",
			   p.id == r.leader ? "*" : ""});
	table.print(env.out);
	return kExitOk;
}

const Registration kRegistered[] = {
	{sub("node", 2, "replicas", "show the replica group as one replica sees it",
	     cmd_node_replicas)},
};

} // namespace

} // namespace mdctl
