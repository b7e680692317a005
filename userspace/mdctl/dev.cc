// SPDX-License-Identifier: GPL-2.0
//
// dev.cc - mdctl dev list: the backing devices of a storage node. The
// group's other subcommand, dev drain, moves extents and lives with
// migrate (migrate.cc).
#include <optional>
#include <string>
#include <vector>

#include "lib/util/json.h"
#include "lib/wire/wire.h"
#include "mdctl/cli.h"
#include "mdctl/session.h"

namespace mdctl {

namespace {

constexpr std::string_view kDevListUsage =
	"Usage: mdctl dev list [--node ADDR[:PORT]] [--key-file FILE] [-o json]\n"
	"\n"
	"List the backing devices of the storage node: id, serial or WWID (by\n"
	"which hosts find them, see 'mdctl attach --help'), identity (the WWID,\n"
	"else the serial, the node recorded of the disk), state, size and space\n"
	"used. STATE is online for a configured device, missing for one the node\n"
	"recorded but is not configured with (it allocates nothing there). A node\n"
	"older than wire version 4 shows neither: '-'.\n"
	"\n"
	"Options:\n"
	MDCTL_NODE_OPTIONS
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

std::string state_name(uint32_t state)
{
	return state == MDR_DEV_ONLINE ? "online" : state == MDR_DEV_MISSING ? "missing" : "?";
}

int cmd_dev_list(Args args, const Env &env)
{
	Common c;
	NodeSettings ns;
	std::unique_ptr<NodeSession> node;

	if (auto done = node_command(args, kNodeCommandOptions, kDevListUsage, "dev list", env, c,
				     ns, node))
		return *done;
	auto devs = list_devices(*node);
	if (!devs.ok())
		return rpc_failure(env, "dev list", devs, {}, ns.target);
	// Identity and state came with version 4.
	const bool known = node->accepted().version >= mdr::wire::kDeviceStateVersion;

	if (c.format == Format::json) {
		mdr::JsonWriter json;
		json.begin_object().key("devices").begin_array();
		for (const mdr::wire::Device &d : devs.value()) {
			json.begin_object()
				.key("dev_id").value(d.dev_id)
				.key("serial").value(d.serial);
			if (known)
				json.key("identity").value(d.identity)
					.key("state").value(state_name(d.state));
			json.key("size").value(d.size)
				.key("used").value(d.used)
				.end_object();
		}
		json.end_array().end_object();
		env.out << json.str() << '\n';
		return kExitOk;
	}
	Table table({{"DEV_ID", true}, {"SERIAL", false}, {"IDENTITY", false}, {"STATE", false},
		     {"SIZE", true}, {"USED", true}, {"USE%", true}});
	for (const mdr::wire::Device &d : devs.value()) {
		std::string pct = "-";
		if (d.size)
			pct = std::to_string(static_cast<uint64_t>(
				      static_cast<unsigned __int128>(d.used) * 100 / d.size)) + '%';
		table.add({std::to_string(d.dev_id), d.serial.empty() ? "-" : d.serial,
			   known && !d.identity.empty() ? d.identity : "-",
			   known ? state_name(d.state) : "-", format_size(d.size),
			   format_size(d.used), pct});
	}
	table.print(env.out);
	return kExitOk;
}

const Registration kRegistered[] = {
	{group(Place::dev, "dev", "list or drain the backing devices of a storage node")},
	{sub("dev", 1, "list", "list the backing devices of the node", cmd_dev_list)},
};

} // namespace

} // namespace mdctl
