// SPDX-License-Identifier: GPL-2.0
//
// attach_group.cc - the replica group an attach names to the module (the
// attach of ioctl minor 3): its id and where each replica serves hosts,
// from --group and --replica, else from what the node says of itself
// (GROUP_STATUS, when a node is asked: by NAME and with --all-of), else
// from 'group' and 'replicas' in mdctl.conf.
#include <algorithm>
#include <cerrno>

#include <sys/socket.h>

#include "mdctl/attach.h"

namespace mdctl {

namespace {

// The group as the node knows itself; group 0: a node of its own (also
// any node from before replica groups, which has none).
struct NodeGroup {
	uint64_t id = 0;
	uint32_t self = 0;
	uint16_t version = 0;			// the node's wire version
	std::vector<mdr::Endpoint> replicas;	// where they serve hosts, as far as known
};

// Where a replica serves hosts (version 7), if the node knows it.
std::optional<mdr::Endpoint> host_endpoint(const mdr::wire::Replica &r)
{
	if (r.host_family != MDR_FAMILY_IPV4 && r.host_family != MDR_FAMILY_IPV6)
		return std::nullopt;
	return mdr::Endpoint{.family = uint16_t(r.host_family == MDR_FAMILY_IPV4 ? AF_INET
										  : AF_INET6),
			     .port = r.host_port,
			     .addr = r.host_addr};
}

std::optional<int> ask_node(const Env &env, NodeSession &node, const NodeSettings &ns,
			    NodeGroup &said)
{
	if (node.accepted().version < mdr::wire::kGroupVersion)
		return std::nullopt;
	auto rep = rpc<mdr::wire::GroupStatusRep>(node, mdr::wire::GroupStatusReq{});
	if (!rep.ok())
		return rpc_failure(env, "attach", rep, "replica group", ns.target);
	said.id = rep.value().group;
	said.self = rep.value().self;
	said.version = node.accepted().version;
	for (const mdr::wire::Replica &r : rep.value().replicas)
		if (std::optional<mdr::Endpoint> e = host_endpoint(r))
			said.replicas.push_back(*e);
	return std::nullopt;
}

std::string group_name(uint64_t id)
{
	return "replica group " + std::to_string(id);
}

constexpr std::string_view kReplicasHint =
	"pass --replica ADDR[:PORT] for each replica, as it serves hosts (its --listen), "
	"or set 'replicas' in mdctl.conf";

} // namespace

std::string endpoint_text(const mdr::Endpoint &e)
{
	mdr::Target t;

	t.family = e.family;
	t.port = e.port;
	t.addr = e.addr;
	return format_node(t);
}

std::optional<int> resolve_group(const Env &env, const AttachArgs &a, const NodeSettings &ns,
				 NodeSession *node, const mdr::Target &target, mdr::Group &group)
{
	const Config &conf = ns.config;
	NodeGroup said;

	// Nothing to ask when the command line says all.
	if (node && !(a.group && !a.replicas.empty()))
		if (auto done = ask_node(env, *node, ns, said))
			return done;

	uint64_t id = a.group ? *a.group : node ? said.id : conf.group.value_or(0);
	std::vector<mdr::Endpoint> replicas = a.replicas;
	if (replicas.empty() && node && id && id == said.id)
		replicas = said.replicas;
	// mdctl.conf's replicas are its group's (config.cc has no replicas
	// without a group).
	if (replicas.empty() && id && conf.replicas && *conf.group == id)
		replicas = *conf.replicas;

	if (!id) {
		if (replicas.empty()) {
			group = {};
			return std::nullopt;
		}
		// --group 0 with --replica is a usage error (parse_attach)
		if (node)
			return failure(env, "attach", -EINVAL,
				       "--replica given, but mdnode at " + format_node(ns.target) +
					       " is a node of its own, in no replica group",
				       "name the group with --group ID");
		return failure(env, "attach", -EINVAL, "--replica given without a replica group",
			       "name it with --group ID, or set 'group' in mdctl.conf");
	}
	if (replicas.empty()) {
		if (node && id == said.id)
			return failure(env, "attach", -EINVAL,
				       "mdnode at " + format_node(ns.target) + " is replica " +
					       std::to_string(said.self) + " of " + group_name(id) +
					       ", and where the group's replicas serve hosts is "
					       "not known" +
					       (said.version < mdr::wire::kEpochVersion
							? " (wire version " +
								  std::to_string(said.version) +
								  " does not say it)"
							: std::string()),
				       kReplicasHint);
		return failure(env, "attach", -EINVAL,
			       group_name(id) + ": where its replicas serve hosts is not known",
			       kReplicasHint);
	}
	// The module connects to the target first: it must be in the set.
	const mdr::Endpoint self = mdr::endpoint_of(target);
	if (std::ranges::none_of(replicas, [&](const auto &r) { return mdr::same_endpoint(r, self); }))
		replicas.push_back(self);
	if (replicas.size() > MDR_REPLICAS_MAX)
		return failure(env, "attach", -EINVAL,
			       group_name(id) + ": with the node's address " +
				       format_node(ns.target) + ", " +
				       std::to_string(replicas.size()) + " replicas, more than " +
				       std::to_string(MDR_REPLICAS_MAX),
			       "leave a --replica out, or name the node among them");
	if (!target.key)
		return failure(env, "attach", -ENOKEY, group_name(id),
			       "a group's replicas name their leader only to a host that proved "
			       "its key: pass --host-key-file FILE (or --key-serial N, or set "
			       "host-key in mdctl.conf)");
	group = {id, std::move(replicas)};
	return std::nullopt;
}

} // namespace mdctl
