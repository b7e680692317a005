// SPDX-License-Identifier: GPL-2.0
//
// replicas.cc - a storage node's replica group: mdctl node replicas, the
// group as the replica named sees it (MDR_OP_GROUP_STATUS: who leads, in
// which epoch, its log, and each replica's membership, state and durable
// index as far as it knows them); and mdctl replica add and remove, which
// change the set by one replica at its leader (MDR_OP_REPLICA_ADD,
// MDR_OP_REPLICA_REMOVE) and then ask the leader until the change is done.
#include <algorithm>
#include <cerrno>
#include <iterator>
#include <string>
#include <string_view>

#include "lib/util/json.h"
#include "lib/wire/wire.h"
#include "mdctl/cli.h"
#include "mdctl/parse.h"
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

// ---- replica add, replica remove ------------------------------------------

enum ReplicaOption { kOptAddr = kOptOwn, kOptNoWait, kOptTimeout };

// How long a change is waited for by default: a learner catches up from
// the log, or from a whole checkpoint when the log was truncated.
constexpr int kWaitDefaultS = 300;
// How often the leader is asked how it goes.
constexpr int kPollMs = 200;

constexpr mdr::OptionSpec kNoWaitOption = {kOptNoWait, "no-wait", 0, false};
constexpr mdr::OptionSpec kWaitTimeoutOption = {kOptTimeout, "timeout", 0, true};

#define MDCTL_REPLICA_OPTIONS							\
	"      --no-wait        return once the leader has begun the change\n"	\
	"      --timeout SECONDS\n"						\
	"                       how long to wait for the change to be done, 1 to\n"	\
	"                       86400 (default 300)\n"				\
	MDCTL_NODE_OPTIONS							\
	"  -o, --output FORMAT  table (default) or json\n"			\
	"  -h, --help           show this help\n"

constexpr std::string_view kReplicaAddUsage =
	"Usage: mdctl replica add ID --addr ADDR:PORT [--no-wait] [--timeout SECONDS]\n"
	"                         [--node ADDR[:PORT]] [--key-file FILE] [-o json]\n"
	"\n"
	"Add replica ID to the replica group of the storage node, its log\n"
	"listener at ADDR:PORT (numeric: IPv4:PORT or [IPv6]:PORT; the address\n"
	"the new replica's mdnode gives itself in its 'replica' lines). The\n"
	"leader takes it as a learner: it receives the log, or a checkpoint, and\n"
	"counts for no majority until it has caught up; then the set changes to\n"
	"hold it, and it is a voter. One change runs at a time.\n"
	"\n"
	"Any replica may be named: the change goes to the leader. mdctl then asks\n"
	"the leader every 200 ms and prints each step, until the replica is a\n"
	"voter; it fails if the leader changes first (run the add again).\n"
	"\n"
	"Options:\n"
	"      --addr ADDR:PORT the new replica's log listener\n"
	MDCTL_REPLICA_OPTIONS;

constexpr std::string_view kReplicaRemoveUsage =
	"Usage: mdctl replica remove ID [--no-wait] [--timeout SECONDS]\n"
	"                            [--node ADDR[:PORT]] [--key-file FILE] [-o json]\n"
	"\n"
	"Remove replica ID from the replica group of the storage node: it is\n"
	"leaving until a majority of the set before the change and one of the set\n"
	"after it hold the change, then no longer listed. The leader cannot remove\n"
	"itself, and a group keeps three replicas. One change runs at a time.\n"
	"\n"
	"Any replica may be named: the change goes to the leader. mdctl then asks\n"
	"the leader every 200 ms and prints each step, until the replica is no\n"
	"longer listed; it fails if the leader changes first (run the remove\n"
	"again).\n"
	"\n"
	"Options:\n"
	MDCTL_REPLICA_OPTIONS;

struct ReplicaChange {
	bool add = false;
	uint32_t id = 0;
	wire::WireEndpoint at{};	// add: the replica's log listener
	bool wait = true;
	int timeout_ms = kWaitDefaultS * 1000;

	std::string command() const { return add ? "replica add" : "replica remove"; }
	std::string replica() const { return "replica " + std::to_string(id); }
	std::string address() const
	{
		return wire::address_text(at.address.family, at.address.addr, at.port);
	}
};

// The ID operand and the options; a usage error, or nullopt.
std::optional<int> change_args(const Env &env, const Common &c, ReplicaChange &ch)
{
	bool addr = false;

	if (auto done = operands(env, c, 1, ch.command() + " needs a replica ID"))
		return done;
	std::optional<uint32_t> id = parse_id<uint32_t>(c.operands[0]);
	if (!id)
		return usage_error(env, "bad replica id '" + std::string(c.operands[0]) +
					"': expected 1 to 4294967295");
	ch.id = *id;
	for (const mdr::ParsedOption &opt : c.options) {
		int status = kExitUsage;
		if (opt.id == kOptAddr) {
			std::optional<wire::WireEndpoint> at = wire::endpoint_at(opt.value);
			if (!at)
				return usage_error(env, "bad address '" + std::string(opt.value) +
							"': expected IPv4:PORT or [IPv6]:PORT, "
							"numeric, port 1 to 65535");
			ch.at = *at;
			addr = true;
		} else if (opt.id == kOptNoWait) {
			ch.wait = false;
		} else if (opt.id == kOptTimeout) {
			std::optional<int> t = parse_timeout(env, opt.value, status);
			if (!t)
				return status;
			ch.timeout_ms = *t;
		}
	}
	if (ch.add && !addr)
		return usage_error(env, "replica add needs --addr ADDR:PORT, the new replica's "
					"log listener");
	return std::nullopt;
}

// The failure of REPLICA_ADD or REPLICA_REMOVE.
int change_failure(const Env &env, const ReplicaChange &ch, int err, const std::string &message,
		   const mdr::Target &target)
{
	std::string hint;

	switch (err) {
	case -EBUSY:
		hint = "another change of the replica set runs: see 'mdctl node replicas', and "
		       "try again once it is done";
		break;
	case -EEXIST:
		hint = ch.replica() + " is in the set already: see 'mdctl node replicas'";
		break;
	case -ENOENT:
		hint = ch.replica() + " is not in the set: see 'mdctl node replicas'";
		break;
	case -EINVAL:
		hint = ch.add ? "the address must be one the new replica can listen on"
			      : "the leader cannot remove itself, and a group keeps three replicas";
		break;
	case -ENOSPC:
		hint = "the group holds as many replicas as it can: remove one first";
		break;
	case -EIO:
		hint = "see the leader's mdnode log";
		break;
	default:
		hint = node_hint(err, target);
	}
	return failure(env, ch.command(), err, reply_context(ch.replica(), message), hint);
}

template <typename Rep>
mdr::Status begin(NodeSession &node, const wire::Body &request)
{
	auto rep = rpc<Rep>(node, request);

	if (!rep.ok())
		return mdr::Error(rep.error(), rep.message());
	return {};
}

// The outcome as JSON: done, or only begun (--no-wait).
void print_json(const Env &env, const NodeSettings &ns, const ReplicaChange &ch, bool done,
		uint64_t epoch)
{
	mdr::JsonWriter json;

	json.begin_object().key("node").value(format_node(ns.target));
	json.key("replica").value(uint64_t{ch.id});
	json.key("change").value(ch.add ? "add" : "remove");
	if (ch.add)
		json.key("address").value(ch.address());
	json.key("done").value(done);
	json.key("epoch").value(epoch);
	json.end_object();
	env.out << json.str() << '\n';
}

// Asks the leader every kPollMs until the change is done (the replica
// added a voter, the one removed no longer listed), the leader changed
// first (its epoch is not @epoch) or the timeout ran out; a line each time
// the replica's membership changes.
int wait_for(const Env &env, const Common &c, const NodeSettings &ns, NodeSession &node,
	     const ReplicaChange &ch, uint64_t epoch)
{
	std::string told;

	for (int waited_ms = 0;; waited_ms += kPollMs) {
		auto rep = rpc<wire::GroupStatusRep>(node, wire::GroupStatusReq{});
		if (!rep.ok())
			return failure(env, ch.command(), rep.error(),
				       reply_context(ch.replica() + ": asking the leader how the "
						     "change goes", rep.message()),
				       "the change was begun: see 'mdctl node replicas'");
		const wire::GroupStatusRep &r = rep.value();
		auto p = std::find_if(r.replicas.begin(), r.replicas.end(),
				      [&](const wire::Replica &x) { return x.id == ch.id; });
		const bool listed = p != r.replicas.end();
		const std::string now = listed ? name_of(kMemberships, p->membership)
					: ch.add ? "not listed" : "removed";

		if (now != told && c.format == Format::table)
			env.out << ch.replica() << ": " << now << '\n';
		told = now;
		if (ch.add ? listed && p->membership == MDR_MEMBER_VOTER : !listed) {
			if (c.format == Format::json)
				print_json(env, ns, ch, true, r.epoch);
			return kExitOk;
		}
		if (!epoch)
			epoch = r.epoch;
		if (r.epoch != epoch)
			return failure(env, ch.command(), -EAGAIN,
				       "the leader changed (epoch " + std::to_string(epoch) + " -> " +
					       std::to_string(r.epoch) + ") before " + ch.replica() +
					       (ch.add ? " joined" : " left"),
				       std::string("run the ") + (ch.add ? "add" : "remove") + " again");
		if (waited_ms >= ch.timeout_ms)
			return failure(env, ch.command(), -ETIMEDOUT,
				       ch.replica() + " is still " +
					       (now == "voter" || now == "learner" ? "a " : "") + now +
					       (listed ? " (" + name_of(kStates, p->state) + ")" : "") +
					       " after " + std::to_string(ch.timeout_ms / 1000) + " s",
				       "the change goes on at the leader: see 'mdctl node replicas', "
				       "or wait longer with --timeout");
		env.host.sleep_ms(kPollMs);
	}
}

int change_replica(Args args, const Env &env, std::span<const mdr::OptionSpec> specs,
		   std::string_view usage, ReplicaChange ch)
{
	Common c;
	NodeSettings ns;
	std::unique_ptr<NodeSession> node;

	if (auto done = node_command(args, specs, usage, ch.command(), env, c, ns, node,
				     [&] { return change_args(env, c, ch); }))
		return *done;
	if (auto done = require_version(env, ch.command(), *node, ns, wire::kMembershipVersion,
					"cannot change a replica set",
					"changes of a replica set"))
		return *done;
	// The epoch the change is begun in, as the replica named knows it.
	auto before = rpc<wire::GroupStatusRep>(*node, wire::GroupStatusReq{});
	if (!before.ok())
		return failure(env, ch.command(), before.error(),
			       reply_context(ch.replica(), before.message()),
			       node_hint(before.error(), ns.target));
	if (!before.value().group)
		return failure(env, ch.command(), -EINVAL,
			       "mdnode at " + format_node(ns.target) +
				       " is a node of its own, no replica group");
	const mdr::Status begun =
		ch.add ? begin<wire::ReplicaAddRep>(
				 *node, wire::ReplicaAddReq{.id = ch.id, .port = ch.at.port,
							    .family = ch.at.address.family,
							    .addr = ch.at.address.addr})
		       : begin<wire::ReplicaRemoveRep>(*node, wire::ReplicaRemoveReq{.id = ch.id});
	if (!begun.ok())
		return change_failure(env, ch, begun.error(), begun.message(), ns.target);
	if (c.format == Format::table)
		env.out << ch.replica() << ": "
			<< (ch.add ? "add begun, its log at " + ch.address() : "removal begun")
			<< '\n';
	if (ch.wait)
		return wait_for(env, c, ns, *node, ch, before.value().epoch);
	if (c.format == Format::json)
		print_json(env, ns, ch, false, before.value().epoch);
	return kExitOk;
}

int cmd_replica_add(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {
		{kOptAddr, "addr", 0, true}, kNoWaitOption, kWaitTimeoutOption, kNodeOption,
		kKeyFileOption, kOutputOption, kHelpOption,
	};

	return change_replica(args, env, specs, kReplicaAddUsage, {.add = true});
}

int cmd_replica_remove(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {
		kNoWaitOption, kWaitTimeoutOption, kNodeOption, kKeyFileOption, kOutputOption,
		kHelpOption,
	};

	return change_replica(args, env, specs, kReplicaRemoveUsage, {});
}

const Registration kRegistered[] = {
	{sub("node", 2, "replicas", "show the replica group as one replica sees it",
	     cmd_node_replicas)},
	{group(Place::replica, "replica", "add or remove a replica of a storage node's group")},
	{sub("replica", 1, "add", "add a replica to the group", cmd_replica_add)},
	{sub("replica", 2, "remove", "remove a replica from the group", cmd_replica_remove)},
};

} // namespace

} // namespace mdctl
