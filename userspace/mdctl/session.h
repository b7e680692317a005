// SPDX-License-Identifier: GPL-2.0
//
// session.h - the storage node as the commands see it: which node and key
// (the command line, then $MDCTL_NODE, then mdctl.conf), the authenticated
// admin connection to mdnode (a NodeSession from the Host), its requests
// and their failures as operators read them.
#ifndef MDCTL_SESSION_H
#define MDCTL_SESSION_H

#include <cerrno>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lib/wire/wire.h"
#include "mdctl/cli.h"
#include "mdctl/config.h"
#include "mdctl/host.h"

namespace mdctl {

// The options every storage-node command takes, in its usage text.
#define MDCTL_NODE_OPTIONS							\
	"  -n, --node ADDR[:PORT]\n"						\
	"                       storage node: IPv4, IPv6 or [IPv6]:PORT; port\n"	\
	"                       4791 by default. Default: $MDCTL_NODE, else\n"	\
	"                       'node' in /etc/mdroute/mdctl.conf\n"		\
	"  -k, --key-file FILE  admin key of the node. Default: 'admin-key' in\n"	\
	"                       mdctl.conf, else /etc/mdroute/admin.key\n"

// What a command that talks to mdnode needs, from the command line, then
// $MDCTL_NODE (the node only), then the config file.
struct NodeSettings {
	mdr::Target target;		// port 0: MDR_WIRE_PORT
	std::string key_path;
	int timeout_ms = 5000;
	Config config;
};

// The config file, $MDCTL_CONFIG or /etc/mdroute/mdctl.conf; nullopt once
// the failure is told.
std::optional<Config> load_config(const Env &env, std::string_view command);

// Fills @ns; returns an exit status when the command cannot go on.
std::optional<int> node_settings(const Env &env, std::string_view command, const Common &c,
				 NodeSettings &ns);

// The hint for a failure to reach or use the node, if one helps.
std::string node_hint(int err, const mdr::Target &target);

// An authenticated admin connection, or nullptr once the failure is told.
std::unique_ptr<NodeSession> open_node(const Env &env, std::string_view command,
				       const NodeSettings &ns);

// The start of every storage-node command: its options, the node's
// settings and an admin connection. Returns an exit status when the
// command is done; checks of the operands come in between through @check.
template <typename Check>
std::optional<int> node_command(Args args, std::span<const mdr::OptionSpec> specs,
				std::string_view usage, std::string_view command,
				const Env &env, Common &c, NodeSettings &ns,
				std::unique_ptr<NodeSession> &node, Check check)
{
	if (auto done = parse_common(args, specs, usage, env, c))
		return done;
	if (auto done = check())
		return done;
	if (auto done = node_settings(env, command, c, ns))
		return done;
	node = open_node(env, command, ns);
	if (!node)
		return kExitFailure;
	return std::nullopt;
}

// The options of a storage-node command that has none of its own.
inline constexpr mdr::OptionSpec kNodeCommandOptions[] = {kNodeOption, kKeyFileOption,
							  kOutputOption, kHelpOption};

// The start of a storage-node command that takes no operands.
inline std::optional<int> node_command(Args args, std::span<const mdr::OptionSpec> specs,
				       std::string_view usage, std::string_view command,
				       const Env &env, Common &c, NodeSettings &ns,
				       std::unique_ptr<NodeSession> &node)
{
	return node_command(args, specs, usage, command, env, c, ns, node,
			    [&] { return operands(env, c, 0, {}); });
}

inline mdr::Error other_message()
{
	return mdr::Error(-EPROTO, "mdnode answered with another message");
}

// One request, and its reply of the kind expected.
template <typename Rep>
mdr::Result<Rep> rpc(NodeSession &node, const mdr::wire::Body &request, int timeout_ms = 0)
{
	auto msg = node.call(request, timeout_ms);

	if (!msg.ok())
		return mdr::Error(msg.error(), msg.message());
	if (auto *rep = std::get_if<Rep>(&msg.value().body))
		return std::move(*rep);
	return other_message();
}

// Requests pipelined on the connection, and their replies in the order of
// @requests; a reply of another kind than Rep is an error.
template <typename Rep>
std::vector<mdr::Result<mdr::wire::Msg>> rpc_many(NodeSession &node,
						  std::span<const mdr::wire::Body> requests)
{
	std::vector<mdr::Result<mdr::wire::Msg>> out = node.call_many(requests, 0);

	for (auto &msg : out)
		if (msg.ok() && !std::holds_alternative<Rep>(msg.value().body))
			msg = other_message();
	return out;
}

// A node that speaks a wire version below @version would not understand
// the request: the failure told ("... speaks wire version 2, which
// @lacks", "hint: @what came with version 3: upgrade mdnode"), else
// nullopt.
std::optional<int> require_version(const Env &env, std::string_view command,
				   const NodeSession &node, const NodeSettings &ns,
				   uint16_t version, std::string_view lacks, std::string_view what);

// @context, and ": " and the message of a failed request unless it is a
// status's name alone (which says no more than the errno failure() adds).
std::string reply_context(std::string context, const std::string &message);

// The failure of a request, with the hint its errno calls for.
int rpc_failure(const Env &env, std::string_view command, int err, const std::string &message,
		std::string context, const mdr::Target &target);

template <typename T>
int rpc_failure(const Env &env, std::string_view command, const mdr::Result<T> &r,
		std::string context, const mdr::Target &target)
{
	return rpc_failure(env, command, r.error(), r.message(), std::move(context), target);
}

// Every volume, backing device or registered host of the node: VOL_LIST,
// DEV_LIST or HOST_LIST page by page.
mdr::Result<std::vector<mdr::wire::Volume>> list_volumes(NodeSession &node);
mdr::Result<std::vector<mdr::wire::Device>> list_devices(NodeSession &node);
mdr::Result<std::vector<mdr::wire::Host>> list_hosts(NodeSession &node);

} // namespace mdctl

#endif // MDCTL_SESSION_H
