// SPDX-License-Identifier: GPL-2.0
//
// volume.cc - mdctl volume create, delete, list, info and resize: the
// volumes of a storage node, over an admin session (session.h).
#include <cerrno>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/util/json.h"
#include "lib/wire/wire.h"
#include "mdctl/batch.h"
#include "mdctl/cli.h"
#include "mdctl/parse.h"
#include "mdctl/session.h"

namespace mdctl {

namespace {

enum VolumeOption { kOptSize = kOptOwn, kOptExtentSize, kOptTenant, kOptAllOf };


// A volume size: a K/M/G/T size, a multiple of 4096.
std::optional<uint64_t> volume_size(const Env &env, std::string_view text, int &status)
{
	std::optional<uint64_t> size = parse_size(text);

	if (!size) {
		status = usage_error(env, "bad size '" + std::string(text) +
					  "': expected a number with an optional K, M, G or T "
					  "suffix, not 0");
		return std::nullopt;
	}
	if (*size % 4096) {
		status = usage_error(env, "bad size '" + std::string(text) +
					  "': not a multiple of 4096 bytes");
		return std::nullopt;
	}
	return size;
}

void volume_json(mdr::JsonWriter &json, const mdr::wire::Volume &v)
{
	json.key("volume_id").value(v.volume_id)
		.key("name").value(v.name)
		.key("size").value(v.size)
		.key("extent_size").value(extent_bytes(v.extent_shift))
		.key("tenant").value(v.tenant)
		.key("allocated_extents").value(v.allocated)
		.key("allocated_bytes").value(v.allocated << v.extent_shift)
		.key("open_count").value(v.open_count);
}

Table volume_table()
{
	return Table({{"NAME", false}, {"VOLUME_ID", true}, {"SIZE", true}, {"EXTENT", true},
		      {"TENANT", true}, {"ALLOCATED", true}, {"OPEN", true}});
}

void add_volume_row(Table &table, const mdr::wire::Volume &v)
{
	table.add({v.name, std::to_string(v.volume_id), format_size(v.size),
		   format_size(extent_bytes(v.extent_shift)), std::to_string(v.tenant),
		   format_size(v.allocated << v.extent_shift), std::to_string(v.open_count)});
}

// The reply of VOL_CREATE, VOL_INFO, VOL_RESIZE: the volume, and where its
// extents are.
void print_volume_reply(const Env &env, Format format, const mdr::wire::VolumeReply &r)
{
	if (format == Format::json) {
		mdr::JsonWriter json;
		json.begin_object();
		volume_json(json, r.vol);
		json.key("devices").begin_array();
		for (const mdr::wire::DevExtents &d : r.devs)
			json.begin_object()
				.key("dev_id").value(d.dev_id)
				.key("extents").value(d.extents)
				.key("bytes").value(d.extents << r.vol.extent_shift)
				.end_object();
		json.end_array().end_object();
		env.out << json.str() << '\n';
		return;
	}
	Table table = volume_table();
	add_volume_row(table, r.vol);
	table.print(env.out);
	if (r.devs.empty())
		return;
	Table devs({{"DEV_ID", true}, {"EXTENTS", true}, {"ALLOCATED", true}});
	for (const mdr::wire::DevExtents &d : r.devs)
		devs.add({std::to_string(d.dev_id), std::to_string(d.extents),
			  format_size(d.extents << r.vol.extent_shift)});
	env.out << '\n';
	devs.print(env.out);
}

constexpr std::string_view kVolumeCreateUsage =
	"Usage: mdctl volume create NAME --size SIZE [--extent-size SIZE] [--tenant T]\n"
	"                           [--node ADDR[:PORT]] [--key-file FILE] [-o json]\n"
	"\n"
	"Create volume NAME on the storage node: thin, so an extent gets space on\n"
	"its first write. Sizes take a K, M, G or T suffix (powers of 1024).\n"
	"\n"
	"Options:\n"
	"  -s, --size SIZE      size, a multiple of 4096 bytes\n"
	"  -e, --extent-size SIZE\n"
	"                       a power of two from 64K to 1G (default 4M)\n"
	"  -t, --tenant T       tenant (default: 'tenant' in mdctl.conf, else 0)\n"
	MDCTL_NODE_OPTIONS
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

int cmd_volume_create(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {
		{kOptSize, "size", 's', true}, {kOptExtentSize, "extent-size", 'e', true},
		{kOptTenant, "tenant", 't', true}, kNodeOption, kKeyFileOption,
		kOutputOption, kHelpOption,
	};
	constexpr std::string_view command = "volume create";
	mdr::wire::VolCreateReq req;
	std::optional<uint32_t> tenant;
	Common c;
	NodeSettings ns;
	std::unique_ptr<NodeSession> node;

	auto check = [&]() -> std::optional<int> {
		if (auto done = volume_operand(env, c, "volume create needs a NAME"))
			return done;
		req.name = std::string(c.operands[0]);
		for (const mdr::ParsedOption &opt : c.options) {
			int status = kExitUsage;
			if (opt.id == kOptSize) {
				std::optional<uint64_t> size = volume_size(env, opt.value, status);
				if (!size)
					return status;
				req.size = *size;
			} else if (opt.id == kOptExtentSize) {
				std::optional<uint64_t> bytes = parse_size(opt.value);
				std::optional<uint32_t> shift =
					bytes ? extent_shift_of(*bytes) : std::nullopt;
				if (!shift)
					return usage_error(env, "bad extent size '" +
								std::string(opt.value) +
								"': expected a power of two "
								"from 64K to 1G");
				req.extent_shift = *shift;
			} else if (opt.id == kOptTenant) {
				tenant = parse_number<uint32_t>(opt.value);
				if (!tenant)
					return usage_error(env, "bad tenant '" +
								std::string(opt.value) + "'");
			}
		}
		if (!req.size)
			return usage_error(env, "volume create needs --size SIZE");
		return std::nullopt;
	};
	if (auto done = node_command(args, specs, kVolumeCreateUsage, command, env, c, ns, node,
				     check))
		return *done;
	req.tenant = tenant.value_or(ns.config.tenant.value_or(0));
	auto rep = rpc<mdr::wire::VolCreateRep>(*node, req);
	if (!rep.ok())
		return rpc_failure(env, command, rep, "volume '" + req.name + "'", ns.target);
	print_volume_reply(env, c.format, rep.value());
	return kExitOk;
}

constexpr std::string_view kVolumeDeleteUsage =
	"Usage: mdctl volume delete NAME [--node ADDR[:PORT]] [--key-file FILE]\n"
	"       mdctl volume delete --all-of FILE [...]\n"
	"\n"
	"Delete volume NAME on the storage node, and free its extents. Refused\n"
	"while a host has it attached. With --all-of, delete every volume FILE\n"
	"names (the first word of each line; see 'mdctl attach --help') over one\n"
	"connection; the ones not there are skipped.\n"
	"\n"
	"Options:\n"
	"  -a, --all-of FILE    the volumes named in FILE\n"
	MDCTL_NODE_OPTIONS
	"  -h, --help           show this help\n";

int cmd_volume_delete(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {
		{kOptAllOf, "all-of", 'a', true}, kNodeOption, kKeyFileOption, kHelpOption,
	};
	constexpr std::string_view command = "volume delete";
	std::vector<BatchLine> batch;
	Common c;
	NodeSettings ns;
	std::unique_ptr<NodeSession> node;

	auto check = [&]() -> std::optional<int> {
		if (!c.options.empty()) {
			if (c.options.size() > 1)
				return usage_error(env, "--all-of is given twice");
			if (!c.operands.empty())
				return unexpected_argument(env, c.operands[0]);
			return read_batch(env, command, std::string(c.options[0].value), batch);
		}
		if (auto done = volume_operand(env, c, "volume delete needs a NAME"))
			return done;
		batch.push_back({std::string(c.operands[0]), {}, 0});
		return std::nullopt;
	};
	if (auto done = node_command(args, specs, kVolumeDeleteUsage, command, env, c, ns, node,
				     check))
		return *done;
	const bool all_of = !c.options.empty();
	// Pipelined: mdnode journals the deletes that arrive together in one
	// write. So all are tried, and the first failure is told.
	std::vector<mdr::wire::Body> reqs;
	for (const BatchLine &b : batch)
		reqs.push_back(mdr::wire::VolDeleteReq{b.name});
	auto reps = rpc_many<mdr::wire::VolDeleteRep>(*node, reqs);
	for (size_t i = 0; i < reps.size(); i++)
		if (!reps[i].ok() && !(all_of && reps[i].error() == -ENOENT))
			return rpc_failure(env, command, reps[i], "volume '" + batch[i].name + "'",
					   ns.target);
	return kExitOk;
}

constexpr std::string_view kVolumeListUsage =
	"Usage: mdctl volume list [--node ADDR[:PORT]] [--key-file FILE] [-o json]\n"
	"\n"
	"List the volumes of the storage node: name, id, size, extent size,\n"
	"tenant, space allocated and hosts that have it open.\n"
	"\n"
	"Options:\n"
	MDCTL_NODE_OPTIONS
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

int cmd_volume_list(Args args, const Env &env)
{
	Common c;
	NodeSettings ns;
	std::unique_ptr<NodeSession> node;

	if (auto done = node_command(args, kNodeCommandOptions, kVolumeListUsage, "volume list",
				     env, c, ns, node))
		return *done;
	auto vols = list_volumes(*node);
	if (!vols.ok())
		return rpc_failure(env, "volume list", vols, {}, ns.target);

	if (c.format == Format::json) {
		mdr::JsonWriter json;
		json.begin_object().key("volumes").begin_array();
		for (const mdr::wire::Volume &v : vols.value()) {
			json.begin_object();
			volume_json(json, v);
			json.end_object();
		}
		json.end_array().end_object();
		env.out << json.str() << '\n';
		return kExitOk;
	}
	Table table = volume_table();
	for (const mdr::wire::Volume &v : vols.value())
		add_volume_row(table, v);
	table.print(env.out);
	return kExitOk;
}

constexpr std::string_view kVolumeInfoUsage =
	"Usage: mdctl volume info NAME [--node ADDR[:PORT]] [--key-file FILE] [-o json]\n"
	"\n"
	"Show volume NAME and its allocation per backing device.\n"
	"\n"
	"Options:\n"
	MDCTL_NODE_OPTIONS
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

int cmd_volume_info(Args args, const Env &env)
{
	Common c;
	NodeSettings ns;
	std::unique_ptr<NodeSession> node;

	auto check = [&]() -> std::optional<int> {
		return volume_operand(env, c, "volume info needs a NAME");
	};
	if (auto done = node_command(args, kNodeCommandOptions, kVolumeInfoUsage, "volume info",
				     env, c, ns, node, check))
		return *done;
	const std::string name(c.operands[0]);
	auto rep = rpc<mdr::wire::VolInfoRep>(*node, mdr::wire::VolInfoReq{name});
	if (!rep.ok())
		return rpc_failure(env, "volume info", rep, "volume '" + name + "'", ns.target);
	print_volume_reply(env, c.format, rep.value());
	return kExitOk;
}

constexpr std::string_view kVolumeResizeUsage =
	"Usage: mdctl volume resize NAME --size SIZE [--node ADDR[:PORT]]\n"
	"                           [--key-file FILE] [-o json]\n"
	"\n"
	"Change the size of volume NAME. Refused while a host has it attached.\n"
	"\n"
	"Options:\n"
	"  -s, --size SIZE      new size, a multiple of 4096 bytes (K, M, G, T)\n"
	MDCTL_NODE_OPTIONS
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

int cmd_volume_resize(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {
		{kOptSize, "size", 's', true}, kNodeOption, kKeyFileOption, kOutputOption,
		kHelpOption,
	};
	mdr::wire::VolResizeReq req;
	Common c;
	NodeSettings ns;
	std::unique_ptr<NodeSession> node;

	auto check = [&]() -> std::optional<int> {
		if (auto done = volume_operand(env, c, "volume resize needs a NAME"))
			return done;
		req.name = std::string(c.operands[0]);
		for (const mdr::ParsedOption &opt : c.options) {
			int status = kExitUsage;
			std::optional<uint64_t> size = volume_size(env, opt.value, status);
			if (!size)
				return status;
			req.size = *size;
		}
		if (!req.size)
			return usage_error(env, "volume resize needs --size SIZE");
		return std::nullopt;
	};
	if (auto done = node_command(args, specs, kVolumeResizeUsage, "volume resize", env, c, ns,
				     node, check))
		return *done;
	auto rep = rpc<mdr::wire::VolResizeRep>(*node, req);
	if (!rep.ok())
		return rpc_failure(env, "volume resize", rep, "volume '" + req.name + "'",
				   ns.target);
	print_volume_reply(env, c.format, rep.value());
	return kExitOk;
}

const Registration kRegistered[] = {
	{group(Place::volume, "volume",
	       "create, delete, list, show or resize volumes on a storage node")},
	{sub("volume", 1, "create", "create a volume", cmd_volume_create)},
	{sub("volume", 2, "delete", "delete a volume", cmd_volume_delete)},
	{sub("volume", 3, "list", "list the volumes", cmd_volume_list)},
	{sub("volume", 4, "info", "show a volume and its allocation per device",
	     cmd_volume_info)},
	{sub("volume", 5, "resize", "change the size of a volume", cmd_volume_resize)},
};

} // namespace

} // namespace mdctl
