// SPDX-License-Identifier: GPL-2.0
//
// session.cc - the storage node's settings, the admin connection to it and
// the failures of its requests.
#include "mdctl/session.h"

#include <iterator>
#include <utility>

#include "mdctl/follow.h"
#include "mdctl/parse.h"

namespace mdctl {

// The default path may be missing, $MDCTL_CONFIG's may not.
std::optional<Config> load_config(const Env &env, std::string_view command)
{
	std::optional<std::string> env_path = env.host.getenv(kConfigEnv);
	const bool named = env_path && !env_path->empty();
	const std::string path = named ? *env_path : kConfigPath;

	auto text = env.host.read_file(path);
	if (!text.ok()) {
		if (text.error() == -ENOENT && !named)
			return Config{};
		failure(env, command, text.error(), "config file " + path,
			named ? "$MDCTL_CONFIG names it" : std::string_view());
		return std::nullopt;
	}
	auto config = parse_config(path, text.value());
	if (!config.ok()) {
		env.err << "mdctl: " << command << " failed: " << config.message() << '\n';
		return std::nullopt;
	}
	return std::move(config).value();
}

namespace {

// Errors that mean nobody answered at the node's address.
bool unreachable(int err)
{
	switch (err) {
	case -ECONNREFUSED:
	case -ETIMEDOUT:
	case -EHOSTUNREACH:
	case -ENETUNREACH:
	case -ECONNRESET:
	case -EADDRNOTAVAIL:
		return true;
	default:
		return false;
	}
}

// Pages of VOL_LIST or DEV_LIST, joined. A page that does not move the
// cursor on is a broken node, not a reason to loop.
template <typename Req, typename Rep, typename Elem>
mdr::Result<std::vector<Elem>> list_all_pages(NodeSession &node,
					      std::vector<Elem> Rep::*elems,
					      uint64_t (*id)(const Elem &))
{
	std::vector<Elem> all;
	uint64_t cursor = 0;

	do {
		Req req;
		req.cursor = cursor;
		auto page = rpc<Rep>(node, req);
		if (!page.ok())
			return mdr::Error(page.error(), page.message());
		std::vector<Elem> &got = page.value().*elems;
		const uint64_t next = page.value().next;
		if (next && (got.empty() || next <= id(got.back()) || next <= cursor))
			return mdr::Error(-EPROTO, "mdnode's list does not advance");
		all.insert(all.end(), std::make_move_iterator(got.begin()),
			   std::make_move_iterator(got.end()));
		cursor = next;
	} while (cursor);
	return all;
}

} // namespace

std::optional<int> node_settings(const Env &env, std::string_view command, const Common &c,
				 NodeSettings &ns)
{
	std::optional<Config> config = load_config(env, command);

	if (!config)
		return kExitFailure;
	std::string node;
	std::optional<std::string> from_env = env.host.getenv("MDCTL_NODE");
	if (c.node)
		node = *c.node;
	else if (from_env && !from_env->empty())
		node = *from_env;
	else if (config->node)
		node = *config->node;
	else
		return usage_error(env, "no storage node: use --node ADDR[:PORT], set MDCTL_NODE "
					"or 'node =' in " + std::string(kConfigPath));
	std::optional<mdr::Target> target = parse_node(node);
	if (!target)
		return usage_error(env, "bad node address '" + node +
					"': expected IPv4[:PORT], IPv6 or [IPv6]:PORT");
	ns.target = *target;
	ns.key_path = c.key_file.value_or(config->admin_key.value_or(kDefaultKeyPath));
	ns.timeout_ms = static_cast<int>(config->timeout_ms.value_or(5000));
	ns.config = std::move(*config);
	return std::nullopt;
}

std::string node_hint(int err, const mdr::Target &target)
{
	if (unreachable(err))
		return "is mdnode running on " + format_node(target) + "?";
	if (err == -EPERM || err == -EACCES)
		return "is the admin key (--key-file, or admin-key in mdctl.conf) the one "
		       "mdnode's admin-key names?";
	return {};
}

std::unique_ptr<NodeSession> open_node(const Env &env, std::string_view command,
				       const NodeSettings &ns)
{
	auto key = env.host.read_file(ns.key_path);
	if (!key.ok()) {
		failure(env, command, key.error(), "admin key " + ns.key_path,
			"pass --key-file FILE, or set admin-key in " + std::string(kConfigPath));
		return nullptr;
	}
	std::string k = std::move(key).value();
	while (k.ends_with('\n'))	// as mdnode reads it
		k.pop_back();
	if (k.size() < 16) {
		env.err << "mdctl: " << command << " failed: admin key " << ns.key_path
			<< " is shorter than 16 bytes\n";
		return nullptr;
	}

	NodeOptions opts{node_address(ns.target), node_port(ns.target), ns.timeout_ms};
	const std::span<const uint8_t> kb(reinterpret_cast<const uint8_t *>(k.data()), k.size());
	auto session = env.host.connect_node(opts, kb);
	if (session.ok())
		return follow_leader(env.host, opts, kb, std::move(session).value());
	std::string context = "mdnode at " + format_node(ns.target);
	// The client's own words repeat the hint for an unreachable node.
	if (!session.message().empty() && !unreachable(session.error()))
		context += ": " + session.message();
	failure(env, command, session.error(), context, node_hint(session.error(), ns.target));
	return nullptr;
}

std::optional<int> require_version(const Env &env, std::string_view command,
				   const NodeSession &node, const NodeSettings &ns,
				   uint16_t version, std::string_view lacks, std::string_view what)
{
	const uint16_t spoken = node.accepted().version;

	if (spoken >= version)
		return std::nullopt;
	return failure(env, command, -EPROTONOSUPPORT,
		       "mdnode at " + format_node(ns.target) + " speaks wire version " +
			       std::to_string(spoken) + ", which " + std::string(lacks),
		       std::string(what) + " came with version " + std::to_string(version) +
			       ": upgrade mdnode");
}

// The status name the client gives as message says no more than the
// errno, so it is left out; what follows it (NOT_LEADER's leader) is not.
std::string reply_context(std::string context, const std::string &message)
{
	const bool bare_status = message.starts_with("MDR_ST_") &&
				 message.find(' ') == std::string::npos;

	if (!message.empty() && !bare_status)
		context += (context.empty() ? "" : ": ") + message;
	return context;
}

int rpc_failure(const Env &env, std::string_view command, int err, const std::string &message,
		std::string context, const mdr::Target &target)
{
	std::string hint = node_hint(err, target);

	context = reply_context(std::move(context), message);
	switch (err) {
	case -ENOENT:
		hint = "see 'mdctl volume list'";
		break;
	case -EEXIST:
		hint = "the name is taken; see 'mdctl volume list'";
		break;
	case -EBUSY:
		hint = "a host has the volume attached; detach it there first";
		break;
	case -ENOSPC:
		hint = "the node's devices are full; see 'mdctl dev list'";
		break;
	}
	return failure(env, command, err, context, hint);
}

mdr::Result<std::vector<mdr::wire::Volume>> list_volumes(NodeSession &node)
{
	return list_all_pages<mdr::wire::VolListReq>(
		node, &mdr::wire::VolListRep::vols,
		+[](const mdr::wire::Volume &v) { return v.volume_id; });
}

mdr::Result<std::vector<mdr::wire::Device>> list_devices(NodeSession &node)
{
	return list_all_pages<mdr::wire::DevListReq>(
		node, &mdr::wire::DevListRep::devs,
		+[](const mdr::wire::Device &d) { return uint64_t{d.dev_id}; });
}

mdr::Result<std::vector<mdr::wire::Host>> list_hosts(NodeSession &node)
{
	return list_all_pages<mdr::wire::HostListReq>(
		node, &mdr::wire::HostListRep::hosts,
		+[](const mdr::wire::Host &h) { return h.host_id; });
}

} // namespace mdctl
