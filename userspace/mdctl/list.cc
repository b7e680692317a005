// SPDX-License-Identifier: GPL-2.0
//
// list.cc - mdctl list: the volumes attached on this host, from the control
// device and their sysfs attributes (stats.cc shows all of one's).
#include <algorithm>
#include <cerrno>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/client/control.h"
#include "lib/util/json.h"
#include "mdctl/cli.h"
#include "mdctl/parse.h"

namespace mdctl {

namespace {

std::string sysfs_dir(uint32_t index)
{
	return "/sys/block/mdr" + std::to_string(index) + "/mdroute";
}

std::string_view volume_state(uint32_t flags)
{
	if (flags & MDR_VOL_DYING)
		return "dying";
	return flags & MDR_VOL_LEASE_VALID ? "active" : "lease-expired";
}

// A sysfs counter: one unsigned number and a newline.
std::optional<uint64_t> read_counter(const Env &env, const std::string &path)
{
	auto text = env.host.read_file(path);

	if (!text.ok())
		return std::nullopt;
	std::string_view value = text.value();
	if (value.ends_with('\n'))
		value.remove_suffix(1);
	if (value.starts_with("0x"))
		return std::nullopt;
	return parse_number<uint64_t>(value);
}

constexpr std::string_view kListUsage =
	"Usage: mdctl list [-o|--output table|json]\n"
	"\n"
	"List the attached volumes: device, volume id and name, size, extent size,\n"
	"storage node, tenant, state (active, lease-expired, dying), openers,\n"
	"cached extents, IOs in flight, the location cache hit rate, the replica\n"
	"group, and the highest epoch of its leaders the module has seen serve (0\n"
	"before one has; both '-' for a node of its own). Of a group, the node is\n"
	"the replica the module is connected to: the leader, once one answered.\n"
	"\n"
	"Options:\n"
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

struct CacheCounters {
	std::optional<uint64_t> hits, misses;
};

CacheCounters cache_counters(const Env &env, uint32_t index)
{
	return {read_counter(env, sysfs_dir(index) + "/cache_hits"),
		read_counter(env, sysfs_dir(index) + "/cache_misses")};
}

std::string format_hit_rate(const CacheCounters &cc)
{
	if (!cc.hits || !cc.misses || *cc.hits + *cc.misses == 0)
		return "-";
	unsigned __int128 lookups = static_cast<unsigned __int128>(*cc.hits) + *cc.misses;
	auto tenths = static_cast<uint64_t>((static_cast<unsigned __int128>(*cc.hits) * 1000 +
					     lookups / 2) / lookups);
	return std::to_string(tenths / 10) + '.' + std::to_string(tenths % 10) + '%';
}

int cmd_list(Args args, const Env &env)
{
	Common c;

	if (auto done = parse_exactly(args, kOutputOptions, kListUsage, env, c, 0))
		return *done;

	auto control = open_control(env, "list");
	if (!control)
		return kExitFailure;
	auto volumes = control->list();
	if (!volumes.ok())
		return failure(env, "list", volumes);

	if (c.format == Format::json) {
		mdr::JsonWriter json;
		json.begin_object().key("volumes").begin_array();
		for (const mdr::VolumeInfo &v : volumes.value()) {
			CacheCounters cc = cache_counters(env, v.index);
			json.begin_object();
			attached_volume_json(json, v);
			json.key("node_address").value(node_address(v.target))
				.key("node_port").value(node_port(v.target))
				.key("tenant").value(v.target.tenant)
				.key("host_id").value(v.target.host_id)
				.key("key_serial").value(v.target.key)
				.key("group").value(v.group)
				.key("epoch").value(v.epoch)
				.key("state").value(volume_state(v.flags))
				.key("lease_valid").value((v.flags & MDR_VOL_LEASE_VALID) != 0)
				.key("dying").value((v.flags & MDR_VOL_DYING) != 0)
				.key("read_only").value((v.flags & MDR_VOL_READONLY) != 0)
				.key("open_count").value(v.open_count)
				.key("cached_extents").value(v.cached)
				.key("in_flight").value(v.inflight);
			json_optional(json, "cache_hits", cc.hits);
			json_optional(json, "cache_misses", cc.misses);
			json.end_object();
		}
		json.end_array().end_object();
		env.out << json.str() << '\n';
		return kExitOk;
	}

	Table table({{"DEVICE", false}, {"VOLUME_ID", true}, {"NAME", false}, {"SIZE", true},
		     {"EXTENT", true}, {"NODE", false}, {"TENANT", true}, {"STATE", false},
		     {"OPEN", true}, {"CACHED", true}, {"INFLIGHT", true}, {"HIT_RATE", true},
		     {"GROUP", true}, {"EPOCH", true}});
	for (const mdr::VolumeInfo &v : volumes.value()) {
		std::string state(volume_state(v.flags));
		if (v.flags & MDR_VOL_READONLY)
			state += ",ro";
		table.add({device_path(v.index), std::to_string(v.volume_id),
			   v.name.empty() ? "-" : v.name, format_size(v.size),
			   format_size(uint64_t{1} << v.extent_shift), format_node(v.target),
			   std::to_string(v.target.tenant), state, std::to_string(v.open_count),
			   std::to_string(v.cached), std::to_string(v.inflight),
			   format_hit_rate(cache_counters(env, v.index)),
			   v.group ? std::to_string(v.group) : "-",
			   v.group ? std::to_string(v.epoch) : "-"});
	}
	table.print(env.out);
	return kExitOk;
}

const Registration kRegistered[] = {
	{top(Place::list, "list", "list the attached volumes", cmd_list)},
};

} // namespace

} // namespace mdctl
