// SPDX-License-Identifier: GPL-2.0
//
// mdctl.cc - the commands of mdctl. Each is one function listed in
// kCommands; it prints a table by default or, with -o json, one JSON object
// whose snake_case keys are stable.
#include "mdctl/mdctl.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <arpa/inet.h>
#include <linux/mdroute_wire.h>
#include <sys/socket.h>

#include "lib/args.h"
#include "lib/errors.h"
#include "lib/json.h"
#include "lib/release.h"
#include "lib/wire.h"
#include "mdctl/config.h"
#include "mdctl/parse.h"

namespace mdctl {

namespace {

enum ExitStatus { kExitOk = 0, kExitFailure = 1, kExitUsage = 2 };

using Args = std::span<const std::string_view>;

struct Command {
	std::string_view name;
	std::string_view summary;
	int (*run)(Args args, const Env &env);
};

int cmd_version(Args args, const Env &env);
int cmd_volume(Args args, const Env &env);
int cmd_dev(Args args, const Env &env);
int cmd_node(Args args, const Env &env);
int cmd_attach(Args args, const Env &env);
int cmd_detach(Args args, const Env &env);
int cmd_list(Args args, const Env &env);
int cmd_stats(Args args, const Env &env);
int cmd_migrate(Args args, const Env &env);
int cmd_dev_drain(Args args, const Env &env);
int cmd_bind(Args args, const Env &env);
int cmd_unbind(Args args, const Env &env);
int cmd_devices(Args args, const Env &env);
int cmd_help(Args args, const Env &env);

constexpr Command kCommands[] = {
	{"version", "show the versions of mdctl, the module and the wire protocol", cmd_version},
	{"volume", "create, delete, list, show or resize volumes on a storage node",
	 cmd_volume},
	{"dev", "list or drain the backing devices of a storage node", cmd_dev},
	{"node", "show the counters of a storage node", cmd_node},
	{"attach", "attach a volume as /dev/mdrN", cmd_attach},
	{"detach", "detach /dev/mdrN", cmd_detach},
	{"list", "list the attached volumes", cmd_list},
	{"stats", "show the counters of /dev/mdrN", cmd_stats},
	{"migrate", "move extents of a volume to another device", cmd_migrate},
	{"bind", "bind a backing device id to a local block device", cmd_bind},
	{"unbind", "unbind a backing device id", cmd_unbind},
	{"devices", "list the bound backing devices", cmd_devices},
	{"help", "show this help", cmd_help},
};

constexpr size_t kNameColumn = 10;	// width of the name column in help
static_assert(std::ranges::all_of(kCommands, [](const Command &cmd) {
	return cmd.name.size() < kNameColumn;
}));

// Every option of every command: an id each, so one parser can take the
// common ones (help, output, node, key file) out for all.
enum OptionId {
	kOptHelp, kOptOutput, kOptNode, kOptKeyFile,
	kOptVolumeId, kOptTenant, kOptHostId, kOptBind, kOptReadOnly, kOptForce,
	kOptSize, kOptExtentSize, kOptAllOf, kOptExtent, kOptToDev, kOptTiming, kOptJobs,
	kOptTimeout,
};
constexpr mdr::OptionSpec kHelpOption = {kOptHelp, "help", 'h', false};
constexpr mdr::OptionSpec kOutputOption = {kOptOutput, "output", 'o', true};
constexpr mdr::OptionSpec kNodeOption = {kOptNode, "node", 'n', true};
constexpr mdr::OptionSpec kKeyFileOption = {kOptKeyFile, "key-file", 'k', true};

enum class Format { table, json };

std::optional<Format> parse_format(std::string_view name)
{
	if (name == "table")
		return Format::table;
	if (name == "json")
		return Format::json;
	return std::nullopt;
}

int usage_error(const Env &env, std::string_view message)
{
	env.err << "mdctl: " << message << "\nTry 'mdctl --help'.\n";
	return kExitUsage;
}

int unexpected_argument(const Env &env, std::string_view arg)
{
	return usage_error(env, "unexpected argument '" + std::string(arg) + "'");
}

// "mdctl: version failed: Permission denied (EACCES)", and a hint if one
// helps. @context names what failed when the command alone does not
// ("/dev/sdz: No such file or directory (ENOENT)").
int failure(const Env &env, std::string_view command, int err,
	    std::string_view context = {}, std::string_view hint = {})
{
	env.err << "mdctl: " << command << " failed: ";
	if (!context.empty())
		env.err << context << ": ";
	env.err << mdr::describe_errno(-err) << '\n';
	if (!hint.empty())
		env.err << "hint: " << hint << '\n';
	else if (err == -EACCES || err == -EPERM)
		env.err << "hint: run as root\n";
	return kExitFailure;
}

template <typename T>
int failure(const Env &env, std::string_view command, const mdr::Result<T> &result,
	    std::string_view hint = {})
{
	return failure(env, command, result.error(), result.message(), hint);
}

// ---- formatting ----------------------------------------------------------

// Binary units: "512 B", "4 MiB", "1.5 GiB" (one decimal when not exact).
std::string format_size(uint64_t bytes)
{
	static constexpr const char *kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	size_t unit = 0;

	while (unit + 1 < std::size(kUnits) && bytes >> (10 * (unit + 1)))
		unit++;
	const uint64_t scale = uint64_t{1} << (10 * unit);
	if (bytes % scale == 0)
		return std::to_string(bytes / scale) + ' ' + kUnits[unit];
	// tenths, rounded to nearest; 128 bits so EiB do not overflow
	auto tenths = static_cast<uint64_t>(
		(static_cast<unsigned __int128>(bytes) * 10 + scale / 2) / scale);
	return std::to_string(tenths / 10) + '.' + std::to_string(tenths % 10) + ' ' +
	       kUnits[unit];
}

std::string device_path(uint32_t index)
{
	return "/dev/mdr" + std::to_string(index);
}

std::string sysfs_dir(uint32_t index)
{
	return "/sys/block/mdr" + std::to_string(index) + "/mdroute";
}

std::string node_address(const mdr::Target &t)
{
	char text[INET6_ADDRSTRLEN] = "?";

	inet_ntop(t.family, t.addr.data(), text, sizeof(text));
	return text;
}

uint16_t node_port(const mdr::Target &t)
{
	return t.port ? t.port : MDR_WIRE_PORT;
}

std::string format_node(const mdr::Target &t)
{
	std::string addr = node_address(t);

	if (t.family == AF_INET6)
		addr = '[' + addr + ']';
	return addr + ':' + std::to_string(node_port(t));
}

std::string_view volume_state(uint32_t flags)
{
	if (flags & MDR_VOL_DYING)
		return "dying";
	return flags & MDR_VOL_LEASE_VALID ? "active" : "lease-expired";
}

// Columns padded to their widest cell, two spaces apart; numbers right-aligned.
class Table {
public:
	struct Column {
		std::string_view title;
		bool right;
	};

	explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

	void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

	void print(std::ostream &out) const
	{
		std::vector<size_t> width;
		for (const Column &c : columns_)
			width.push_back(c.title.size());
		for (const auto &row : rows_)
			for (size_t i = 0; i < row.size(); i++)
				width[i] = std::max(width[i], row[i].size());

		auto line = [&](auto cell) {
			std::string text;
			for (size_t i = 0; i < columns_.size(); i++) {
				std::string value(cell(i));
				std::string pad(width[i] - value.size(), ' ');
				if (i)
					text += "  ";
				text += columns_[i].right ? pad + value : value + pad;
			}
			while (text.ends_with(' '))
				text.pop_back();
			out << text << '\n';
		};
		line([&](size_t i) { return columns_[i].title; });
		for (const auto &row : rows_)
			line([&](size_t i) { return std::string_view(row[i]); });
	}

private:
	std::vector<Column> columns_;
	std::vector<std::vector<std::string>> rows_;
};

// ---- common steps --------------------------------------------------------

// Parses the options of a command that knows -h and maybe -o, --node and
// --key-file. Returns an exit status when the command is done (help shown,
// usage error).
struct Common {
	Format format = Format::table;
	std::optional<std::string> node;		// --node
	std::optional<std::string> key_file;		// --key-file
	std::vector<mdr::ParsedOption> options;		// the command's own
	std::vector<std::string_view> operands;
};

std::optional<int> parse_common(Args args, std::span<const mdr::OptionSpec> specs,
				std::string_view usage, const Env &env, Common &common)
{
	auto parsed = mdr::parse_args(args, specs);

	if (!parsed.ok())
		return usage_error(env, parsed.message());
	for (const mdr::ParsedOption &opt : parsed.value().options) {
		if (opt.id == kOptHelp) {
			env.out << usage;
			return kExitOk;
		}
		if (opt.id == kOptNode) {
			common.node = std::string(opt.value);
			continue;
		}
		if (opt.id == kOptKeyFile) {
			if (opt.value.empty())
				return usage_error(env, "--key-file needs a path");
			common.key_file = std::string(opt.value);
			continue;
		}
		if (opt.id != kOptOutput) {
			common.options.push_back(opt);
			continue;
		}
		std::optional<Format> f = parse_format(opt.value);
		if (!f)
			return usage_error(env, "unknown output format '" +
						std::string(opt.value) + "'");
		common.format = *f;
	}
	common.operands = std::move(parsed.value().operands);
	return std::nullopt;
}

constexpr std::string_view kModuleHint = "is the mdroute module loaded? try 'modprobe mdroute'";

std::optional<mdr::Control> open_control(const Env &env, std::string_view command)
{
	auto control = mdr::Control::open(env.sys);

	if (control.ok())
		return std::move(control).value();
	failure(env, command, control.error(), mdr::kControlPath,
		control.error() == -ENOENT ? kModuleHint : std::string_view());
	return std::nullopt;
}

// The control device for attach, which loads the module first when it is
// missing (no control device): "loads the module if needed".
std::optional<mdr::Control> open_control_loading(const Env &env, std::string_view command)
{
	auto control = mdr::Control::open(env.sys);

	if (!control.ok() && control.error() == -ENOENT) {
		auto status = env.host.run_program({"modprobe", "mdroute"});
		if (!status.ok()) {
			failure(env, command, status.error(), "modprobe mdroute",
				"is kmod installed? or load the module with insmod");
			return std::nullopt;
		}
		if (status.value() != 0) {
			env.err << "mdctl: " << command << " failed: modprobe mdroute exited with "
				<< status.value() << "\nhint: is the mdroute module installed "
				   "(make install)?\n";
			return std::nullopt;
		}
		control = mdr::Control::open(env.sys);
	}
	if (control.ok())
		return std::move(control).value();
	failure(env, command, control.error(), mdr::kControlPath,
		control.error() == -ENOENT ? kModuleHint : std::string_view());
	return std::nullopt;
}

// ---- the storage node ----------------------------------------------------

// What a command that talks to mdnode needs, from the command line, then
// $MDCTL_NODE (the node only), then the config file.
struct NodeSettings {
	mdr::Target target;		// port 0: MDR_WIRE_PORT
	std::string key_path;
	int timeout_ms = 5000;
	Config config;
};

// The config file: the default path may be missing, $MDCTL_CONFIG's may not.
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

// Fills @ns; returns an exit status when the command cannot go on.
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

std::string node_hint(int err, const mdr::Target &target)
{
	if (unreachable(err))
		return "is mdnode running on " + format_node(target) + "?";
	if (err == -EPERM || err == -EACCES)
		return "is the admin key (--key-file, or admin-key in mdctl.conf) the one "
		       "mdnode's admin-key names?";
	return {};
}

// An authenticated admin connection, or nullptr once the failure is told.
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
	auto session = env.host.connect_node(
		opts, {reinterpret_cast<const uint8_t *>(k.data()), k.size()});
	if (session.ok())
		return std::move(session).value();
	std::string context = "mdnode at " + format_node(ns.target);
	// The client's own words repeat the hint for an unreachable node.
	if (!session.message().empty() && !unreachable(session.error()))
		context += ": " + session.message();
	failure(env, command, session.error(), context, node_hint(session.error(), ns.target));
	return nullptr;
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
	return mdr::Error(-EPROTO, "mdnode answered with another message");
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
			msg = mdr::Error(-EPROTO, "mdnode answered with another message");
	return out;
}

// The failure of a request: the status name the client gives as message
// says no more than the errno, so it is left out.
template <typename T>
int rpc_failure(const Env &env, std::string_view command, const mdr::Result<T> &r,
		std::string context, const mdr::Target &target)
{
	std::string hint = node_hint(r.error(), target);

	if (!r.message().empty() && !r.message().starts_with("MDR_ST_"))
		context += (context.empty() ? "" : ": ") + r.message();
	switch (r.error()) {
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
	return failure(env, command, r.error(), context, hint);
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

std::optional<int> check_volume_name(const Env &env, std::string_view name)
{
	if (mdr::wire::valid_volume_name(name))
		return std::nullopt;
	return usage_error(env, "bad volume name '" + std::string(name) +
				"': use 1 to 63 of A-Z a-z 0-9 . _ -");
}

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

uint64_t extent_bytes(uint32_t shift)
{
	return uint64_t{1} << shift;
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

int bad_binding(const Env &env, std::string_view text)
{
	return usage_error(env, "bad binding '" + std::string(text) +
				"': expected ID=/dev/X with ID a non-zero number");
}

// A block device to bind, looked up before anything changes.
std::optional<mdr::DevNum> block_device(const Env &env, std::string_view command,
					const std::string &path)
{
	auto info = env.host.stat(path);

	if (!info.ok()) {
		failure(env, command, info.error(), path);
		return std::nullopt;
	}
	if (!info.value().block_device) {
		failure(env, command, -ENOTBLK, path);
		return std::nullopt;
	}
	return info.value().rdev;
}

// "/dev/nvme0n1" from /sys/dev/block/M:m/uevent, or nothing.
std::optional<std::string> block_device_path(const Env &env, mdr::DevNum dev)
{
	auto uevent = env.host.read_file("/sys/dev/block/" + std::to_string(dev.major) + ':' +
					 std::to_string(dev.minor) + "/uevent");
	if (!uevent.ok())
		return std::nullopt;
	std::string_view text = uevent.value();
	while (!text.empty()) {
		size_t nl = text.find('\n');
		std::string_view line = text.substr(0, nl);
		if (line.starts_with("DEVNAME=") && line.size() > 8)
			return "/dev/" + std::string(line.substr(8));
		text = nl == text.npos ? std::string_view() : text.substr(nl + 1);
	}
	return std::nullopt;
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

std::string format_devnum(mdr::DevNum dev)
{
	return std::to_string(dev.major) + ':' + std::to_string(dev.minor);
}

// ---- version -------------------------------------------------------------

std::string format_abi(uint32_t major, uint32_t minor, uint32_t patch)
{
	return std::to_string(major) + '.' + std::to_string(minor) + '.' + std::to_string(patch);
}

std::string own_abi()
{
	return format_abi(MDR_IOCTL_VERSION_MAJOR, MDR_IOCTL_VERSION_MINOR,
			  MDR_IOCTL_VERSION_PATCH);
}

// The wire protocol versions mdctl speaks to mdnode: "1", or "1 to 2".
std::string own_wire()
{
	std::string text = std::to_string(MDR_WIRE_VERSION_MIN);

	if (MDR_WIRE_VERSION != MDR_WIRE_VERSION_MIN)
		text += " to " + std::to_string(MDR_WIRE_VERSION);
	return text;
}

std::string module_abi(const mdr::ModuleVersion &module)
{
	return format_abi(module.major, module.minor, module.patch);
}

void print_version_table(const Env &env, const std::optional<mdr::ModuleVersion> &module)
{
	env.out << "mdctl      " << mdr::release() << '\n'
		<< "ioctl ABI  " << own_abi() << '\n'
		<< "wire       " << own_wire() << '\n'
		<< "module     ";
	if (module)
		env.out << module->release << " (ioctl ABI " << module_abi(*module)
			<< ", wire " << module->wire_version << ")\n";
	else
		env.out << "not loaded\n";
}

void print_version_json(const Env &env, const std::optional<mdr::ModuleVersion> &module)
{
	mdr::JsonWriter json;

	json.begin_object();
	json.key("mdctl").begin_object()
		.key("release").value(mdr::release())
		.key("ioctl_abi").value(own_abi())
		.key("wire_version_min").value(MDR_WIRE_VERSION_MIN)
		.key("wire_version_max").value(MDR_WIRE_VERSION)
		.end_object();
	json.key("module").begin_object().key("loaded").value(module.has_value());
	if (module)
		json.key("release").value(module->release)
			.key("ioctl_abi").value(module_abi(*module))
			.key("wire_version").value(module->wire_version);
	json.end_object();
	json.end_object();
	env.out << json.str() << '\n';
}

constexpr std::string_view kVersionUsage =
	"Usage: mdctl version [-o|--output table|json]\n"
	"\n"
	"Show the release of mdctl, the ioctl interface version and the metadata\n"
	"wire protocol versions it speaks, and the release, ioctl interface\n"
	"version and wire protocol version of the loaded mdroute module.\n"
	"\n"
	"Options:\n"
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

int cmd_version(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {kOutputOption, kHelpOption};
	Common c;

	if (auto done = parse_common(args, specs, kVersionUsage, env, c))
		return *done;
	if (!c.operands.empty())
		return unexpected_argument(env, c.operands.front());

	// No control device means no module: a report, not a failure.
	std::optional<mdr::ModuleVersion> module;
	auto control = mdr::Control::open(env.sys);
	if (control.ok()) {
		auto version = control.value().version();
		if (!version.ok())
			return failure(env, "version", version.error());
		module = std::move(version).value();
	} else if (control.error() != -ENOENT) {
		return failure(env, "version", control.error());
	}

	if (c.format == Format::json)
		print_version_json(env, module);
	else
		print_version_table(env, module);

	// Reported after the versions, which are what it takes to fix it.
	if (module && !mdr::interface_compatible(*module)) {
		env.err << "mdctl: version failed: module ioctl ABI " << module_abi(*module)
			<< " is not compatible with mdctl's " << own_abi() << '\n'
			<< "hint: install mdctl and the module from the same release\n";
		return kExitFailure;
	}
	return kExitOk;
}

// ---- bind, unbind, devices -----------------------------------------------

constexpr std::string_view kBindUsage =
	"Usage: mdctl bind ID=/dev/X [-o|--output table|json]\n"
	"\n"
	"Bind backing device ID (the cluster-wide id, non-zero) to the local\n"
	"block device /dev/X: the module opens it exclusively and routes the IO\n"
	"of every attached volume to ID there. Prints its size.\n"
	"\n"
	"Options:\n"
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

int cmd_bind(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {kOutputOption, kHelpOption};
	Common c;

	if (auto done = parse_common(args, specs, kBindUsage, env, c))
		return *done;
	if (c.operands.empty())
		return usage_error(env, "bind needs ID=/dev/X");
	if (c.operands.size() > 1)
		return unexpected_argument(env, c.operands[1]);
	std::optional<BindSpec> spec = parse_bind_spec(c.operands[0]);
	if (!spec)
		return bad_binding(env, c.operands[0]);

	std::optional<mdr::DevNum> dev = block_device(env, "bind", spec->path);
	if (!dev)
		return kExitFailure;
	auto control = open_control(env, "bind");
	if (!control)
		return kExitFailure;
	auto bound = control->bind(spec->dev_id, *dev);
	if (!bound.ok()) {
		std::string_view hint;
		if (bound.error() == -EEXIST)
			hint = "the id is bound already; see 'mdctl devices'";
		else if (bound.error() == -EBUSY)
			hint = "the block device is bound under another id or in use";
		return failure(env, "bind", bound, hint);
	}

	const mdr::BindInfo &b = bound.value();
	if (c.format == Format::json) {
		mdr::JsonWriter json;
		json.begin_object()
			.key("dev_id").value(spec->dev_id)
			.key("path").value(spec->path)
			.key("major").value(dev->major)
			.key("minor").value(dev->minor)
			.key("size").value(b.size)
			.key("logical_block_size").value(b.lbs)
			.end_object();
		env.out << json.str() << '\n';
	} else {
		env.out << "device " << spec->dev_id << " bound to " << spec->path << ": "
			<< format_size(b.size) << ", " << b.lbs << "-byte logical blocks\n";
	}
	return kExitOk;
}

constexpr std::string_view kUnbindUsage =
	"Usage: mdctl unbind ID\n"
	"\n"
	"Unbind backing device ID and close its block device. Refused while an\n"
	"attached volume routes IO to it.\n"
	"\n"
	"Options:\n"
	"  -h, --help           show this help\n";

int cmd_unbind(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {kHelpOption};
	Common c;

	if (auto done = parse_common(args, specs, kUnbindUsage, env, c))
		return *done;
	if (c.operands.empty())
		return usage_error(env, "unbind needs a device id");
	if (c.operands.size() > 1)
		return unexpected_argument(env, c.operands[1]);
	std::optional<uint32_t> id = parse_id<uint32_t>(c.operands[0]);
	if (!id)
		return usage_error(env, "bad device id '" + std::string(c.operands[0]) + "'");

	auto control = open_control(env, "unbind");
	if (!control)
		return kExitFailure;
	auto unbound = control->unbind(*id);
	if (!unbound.ok()) {
		std::string_view hint;
		if (unbound.error() == -ENOENT)
			hint = "the id is not bound; see 'mdctl devices'";
		else if (unbound.error() == -EBUSY)
			hint = "an attached volume uses it; detach the volume first";
		return failure(env, "unbind", unbound.error(),
			       unbound.message().empty() ? "device " + std::to_string(*id)
							 : unbound.message(),
			       hint);
	}
	return kExitOk;
}

constexpr std::string_view kDevicesUsage =
	"Usage: mdctl devices [-o|--output table|json]\n"
	"\n"
	"List the bound backing devices: id, local block device, size, attached\n"
	"volumes using it, and IOs it failed.\n"
	"\n"
	"Options:\n"
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

int cmd_devices(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {kOutputOption, kHelpOption};
	Common c;

	if (auto done = parse_common(args, specs, kDevicesUsage, env, c))
		return *done;
	if (!c.operands.empty())
		return unexpected_argument(env, c.operands[0]);

	auto control = open_control(env, "devices");
	if (!control)
		return kExitFailure;
	auto devices = control->dev_list();
	if (!devices.ok())
		return failure(env, "devices", devices);

	if (c.format == Format::json) {
		mdr::JsonWriter json;
		json.begin_object().key("devices").begin_array();
		for (const mdr::DeviceInfo &d : devices.value()) {
			std::optional<std::string> path = block_device_path(env, d.dev);
			json.begin_object()
				.key("dev_id").value(d.dev_id)
				.key("major").value(d.dev.major)
				.key("minor").value(d.dev.minor)
				.key("path");
			if (path)
				json.value(*path);
			else
				json.null();
			json.key("size").value(d.size)
				.key("users").value(d.users)
				.key("errors").value(d.errors)
				.end_object();
		}
		json.end_array().end_object();
		env.out << json.str() << '\n';
		return kExitOk;
	}

	Table table({{"ID", true}, {"DEVICE", false}, {"MAJ:MIN", false}, {"SIZE", true},
		     {"USERS", true}, {"ERRORS", true}});
	for (const mdr::DeviceInfo &d : devices.value())
		table.add({std::to_string(d.dev_id),
			   block_device_path(env, d.dev).value_or("-"), format_devnum(d.dev),
			   format_size(d.size), std::to_string(d.users),
			   std::to_string(d.errors)});
	table.print(env.out);
	return kExitOk;
}

// ---- storage-node commands -------------------------------------------------

// The options every storage-node command takes, in its usage text.
#define MDCTL_NODE_OPTIONS							\
	"  -n, --node ADDR[:PORT]\n"						\
	"                       storage node: IPv4, IPv6 or [IPv6]:PORT; port\n"	\
	"                       4791 by default. Default: $MDCTL_NODE, else\n"	\
	"                       'node' in /etc/mdroute/mdctl.conf\n"		\
	"  -k, --key-file FILE  admin key of the node. Default: 'admin-key' in\n"	\
	"                       mdctl.conf, else /etc/mdroute/admin.key\n"

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

// Exactly @n operands.
std::optional<int> operands(const Env &env, const Common &c, size_t n, std::string_view missing)
{
	if (c.operands.size() < n)
		return usage_error(env, missing);
	if (c.operands.size() > n)
		return unexpected_argument(env, c.operands[n]);
	return std::nullopt;
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
		if (auto done = operands(env, c, 1, "volume create needs a NAME"))
			return done;
		if (auto done = check_volume_name(env, c.operands[0]))
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

struct BatchLine {
	std::string name;
	std::optional<uint64_t> size;		// create it if missing
	uint32_t extent_shift = 0;		// 0: the default
};

// The lines of a batch file: "NAME [SIZE [EXTENT_SIZE]]", blank lines and
// '#' comments ignored. Fails with a usage error naming FILE:LINE.
std::optional<int> read_batch(const Env &env, std::string_view command, const std::string &path,
			      std::vector<BatchLine> &lines)
{
	auto text = env.host.read_file(path);

	if (!text.ok())
		return failure(env, command, text.error(), path);
	std::string_view rest = text.value();
	std::set<std::string> names;
	for (unsigned n = 1; !rest.empty(); n++) {
		size_t nl = rest.find('\n');
		std::string_view line = rest.substr(0, nl);
		rest = nl == rest.npos ? std::string_view() : rest.substr(nl + 1);
		const std::string where = path + ':' + std::to_string(n) + ": ";

		std::vector<std::string_view> words;
		while (!line.empty() && !line.starts_with('#')) {
			size_t b = line.find_first_not_of(" \t\r");
			if (b == line.npos || line[b] == '#')
				break;
			line.remove_prefix(b);
			size_t e = line.find_first_of(" \t\r");
			words.push_back(line.substr(0, e));
			line = e == line.npos ? std::string_view() : line.substr(e);
		}
		if (words.empty())
			continue;
		if (words.size() > 3)
			return usage_error(env, where + "expected NAME [SIZE [EXTENT_SIZE]]");
		BatchLine b;
		b.name = std::string(words[0]);
		if (!mdr::wire::valid_volume_name(b.name))
			return usage_error(env, where + "bad volume name '" + b.name + "'");
		if (!names.insert(b.name).second)
			return usage_error(env, where + "volume '" + b.name + "' named twice");
		if (words.size() > 1) {
			b.size = parse_size(words[1]);
			if (!b.size || *b.size % 4096)
				return usage_error(env, where + "bad size '" + std::string(words[1]) +
							"': expected a multiple of 4096 with an "
							"optional K, M, G or T suffix");
		}
		if (words.size() > 2) {
			std::optional<uint64_t> bytes = parse_size(words[2]);
			std::optional<uint32_t> shift = bytes ? extent_shift_of(*bytes) : std::nullopt;
			if (!shift)
				return usage_error(env, where + "bad extent size '" +
							std::string(words[2]) +
							"': expected a power of two from 64K to 1G");
			b.extent_shift = *shift;
		}
		lines.push_back(std::move(b));
	}
	if (lines.empty())
		return usage_error(env, path + ": names no volume");
	return std::nullopt;
}

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
		if (auto done = operands(env, c, 1, "volume delete needs a NAME"))
			return done;
		if (auto done = check_volume_name(env, c.operands[0]))
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
	static constexpr mdr::OptionSpec specs[] = {kNodeOption, kKeyFileOption, kOutputOption,
						   kHelpOption};
	Common c;
	NodeSettings ns;
	std::unique_ptr<NodeSession> node;

	if (auto done = node_command(args, specs, kVolumeListUsage, "volume list", env, c, ns,
				     node, [&] { return operands(env, c, 0, {}); }))
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
	static constexpr mdr::OptionSpec specs[] = {kNodeOption, kKeyFileOption, kOutputOption,
						   kHelpOption};
	Common c;
	NodeSettings ns;
	std::unique_ptr<NodeSession> node;

	auto check = [&]() -> std::optional<int> {
		if (auto done = operands(env, c, 1, "volume info needs a NAME"))
			return done;
		return check_volume_name(env, c.operands[0]);
	};
	if (auto done = node_command(args, specs, kVolumeInfoUsage, "volume info", env, c, ns,
				     node, check))
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
		if (auto done = operands(env, c, 1, "volume resize needs a NAME"))
			return done;
		if (auto done = check_volume_name(env, c.operands[0]))
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

constexpr std::string_view kDevListUsage =
	"Usage: mdctl dev list [--node ADDR[:PORT]] [--key-file FILE] [-o json]\n"
	"\n"
	"List the backing devices of the storage node: id, serial or WWID (by\n"
	"which hosts find them, see 'mdctl attach --help'), size and space used.\n"
	"\n"
	"Options:\n"
	MDCTL_NODE_OPTIONS
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

int cmd_dev_list(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {kNodeOption, kKeyFileOption, kOutputOption,
						   kHelpOption};
	Common c;
	NodeSettings ns;
	std::unique_ptr<NodeSession> node;

	if (auto done = node_command(args, specs, kDevListUsage, "dev list", env, c, ns, node,
				     [&] { return operands(env, c, 0, {}); }))
		return *done;
	auto devs = list_devices(*node);
	if (!devs.ok())
		return rpc_failure(env, "dev list", devs, {}, ns.target);

	if (c.format == Format::json) {
		mdr::JsonWriter json;
		json.begin_object().key("devices").begin_array();
		for (const mdr::wire::Device &d : devs.value())
			json.begin_object()
				.key("dev_id").value(d.dev_id)
				.key("serial").value(d.serial)
				.key("size").value(d.size)
				.key("used").value(d.used)
				.end_object();
		json.end_array().end_object();
		env.out << json.str() << '\n';
		return kExitOk;
	}
	Table table({{"DEV_ID", true}, {"SERIAL", false}, {"SIZE", true}, {"USED", true},
		     {"USE%", true}});
	for (const mdr::wire::Device &d : devs.value()) {
		std::string pct = "-";
		if (d.size)
			pct = std::to_string(static_cast<uint64_t>(
				      static_cast<unsigned __int128>(d.used) * 100 / d.size)) + '%';
		table.add({std::to_string(d.dev_id), d.serial.empty() ? "-" : d.serial,
			   format_size(d.size), format_size(d.used), pct});
	}
	table.print(env.out);
	return kExitOk;
}

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
	"after a pre-copy, the whole extent without one). A node that predates a\n"
	"counter (the move counters, push_timeouts, precopy_bytes and\n"
	"freeze_bytes) reports it as 0.\n"
	"\n"
	"Options:\n"
	MDCTL_NODE_OPTIONS
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

int cmd_node_stats(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {kNodeOption, kKeyFileOption, kOutputOption,
						   kHelpOption};
	Common c;
	NodeSettings ns;
	std::unique_ptr<NodeSession> node;

	if (auto done = node_command(args, specs, kNodeStatsUsage, "node stats", env, c, ns, node,
				     [&] { return operands(env, c, 0, {}); }))
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

// ---- command groups --------------------------------------------------------

struct Subcommand {
	std::string_view name;
	std::string_view summary;
	int (*run)(Args args, const Env &env);
};

// "mdctl volume create ...": the group's subcommand runs with the rest.
int run_group(std::string_view group, std::span<const Subcommand> subs, Args args,
	      const Env &env)
{
	std::string names;

	for (const Subcommand &sub : subs)
		names += (names.empty() ? "" : ", ") + std::string(sub.name);
	if (args.empty())
		return usage_error(env, std::string(group) + " needs a subcommand: " + names);
	if (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		env.out << "Usage: mdctl " << group << " <subcommand> [options]\n\nSubcommands:\n";
		for (const Subcommand &sub : subs)
			env.out << "  " << sub.name << std::string(kNameColumn - sub.name.size(), ' ')
				<< sub.summary << '\n';
		env.out << "\nRun 'mdctl " << group << " <subcommand> --help' for its options.\n";
		return kExitOk;
	}
	for (const Subcommand &sub : subs)
		if (sub.name == args[0])
			return sub.run(args.subspan(1), env);
	return usage_error(env, "unknown " + std::string(group) + " subcommand '" +
				std::string(args[0]) + "': expected " + names);
}

int cmd_volume(Args args, const Env &env)
{
	static constexpr Subcommand subs[] = {
		{"create", "create a volume", cmd_volume_create},
		{"delete", "delete a volume", cmd_volume_delete},
		{"list", "list the volumes", cmd_volume_list},
		{"info", "show a volume and its allocation per device", cmd_volume_info},
		{"resize", "change the size of a volume", cmd_volume_resize},
	};
	return run_group("volume", subs, args, env);
}

int cmd_dev(Args args, const Env &env)
{
	static constexpr Subcommand subs[] = {
		{"list", "list the backing devices of the node", cmd_dev_list},
		{"drain", "move every extent off a device", cmd_dev_drain},
	};
	return run_group("dev", subs, args, env);
}

int cmd_node(Args args, const Env &env)
{
	static constexpr Subcommand subs[] = {
		{"stats", "show the counters of the node", cmd_node_stats},
	};
	return run_group("node", subs, args, env);
}

// ---- migrate, drain ---------------------------------------------------------

// A move waits for every lease holder to drain (up to a lease and its margin
// when one is silent) and copies extents of 4 MiB and more: far longer than
// the 5 s of one ordinary request, under emulation above all.
constexpr int kMoveTimeoutDefaultS = 600;
constexpr int kMoveTimeoutMaxS = 86400;

#define MDCTL_TIMEOUT_OPTION							\
	"      --timeout SECONDS\n"						\
	"                       how long one request to the node may take, 1 to\n"	\
	"                       86400 (default 600): a move waits for the hosts\n"	\
	"                       to drain and copies the data before it answers\n"

constexpr mdr::OptionSpec kTimeoutOption = {kOptTimeout, "timeout", 0, true};

// --timeout SECONDS, in milliseconds.
std::optional<int> parse_timeout(const Env &env, std::string_view text, int &status)
{
	std::optional<uint32_t> s = parse_id<uint32_t>(text);

	if (!s || *s > kMoveTimeoutMaxS) {
		status = usage_error(env, "bad timeout '" + std::string(text) +
					  "': expected 1 to 86400 seconds");
		return std::nullopt;
	}
	return static_cast<int>(*s) * 1000;
}

std::string format_ms(uint64_t us)
{
	char text[32];

	std::snprintf(text, sizeof(text), "%llu.%03llu", static_cast<unsigned long long>(us / 1000),
		      static_cast<unsigned long long>(us % 1000));
	return text;
}

// The hint for a failed MOVE or DRAIN.
std::string move_hint(int err, std::string_view name, uint32_t to_dev, const mdr::Target &target)
{
	switch (err) {
	case -ENOENT:
		return "see 'mdctl volume list' and 'mdctl dev list'";
	case -EINVAL:
		return "see 'mdctl volume info " + std::string(name) + "'";
	case -EBUSY:
		return "another move or an allocation holds an extent; try again";
	case -ENOSPC:
		return "device " + std::to_string(to_dev) +
		       " has too few free extents; see 'mdctl dev list'";
	case -EIO:
		return "the node could not copy or journal a move; see mdnode's log";
	case -ETIMEDOUT:
		return "the node may still be moving; raise --timeout, and see "
		       "'mdctl node stats'";
	default:
		return node_hint(err, target);
	}
}

constexpr std::string_view kMigrateUsage =
	"Usage: mdctl migrate NAME --extent N[-M] --to-dev ID [--timeout SECONDS]\n"
	"                     [--node ADDR[:PORT]] [--key-file FILE] [-o json]\n"
	"\n"
	"Move extents N to M (both included) of volume NAME to backing device ID\n"
	"of the same storage node, while hosts keep using the volume: IO to an\n"
	"extent waits while it moves (its stall). The node takes up to 64 extents\n"
	"a request; a longer range is sent in batches, one after another.\n"
	"Extents with nothing to move (never written, or on device ID already)\n"
	"are skipped. Prints each extent: moved or skipped, from where to where,\n"
	"the bytes copied and its stall. If a batch fails, the extents before it\n"
	"stay moved, and those of the batch that moved before the failure too.\n"
	"\n"
	"Options:\n"
	"  -x, --extent N[-M]   the extents, first to last (both included)\n"
	"  -d, --to-dev ID      the device to move them to (non-zero)\n"
	MDCTL_TIMEOUT_OPTION
	MDCTL_NODE_OPTIONS
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

// What became of one extent of a migrate.
struct ExtentResult {
	uint64_t index;
	std::optional<mdr::wire::MovedExtent> moved;	// nullopt: skipped
};

struct MigrateReport {
	std::string name;
	uint64_t volume_id = 0;
	uint32_t to_dev = 0;
	uint64_t extent_bytes = 0;
	std::vector<ExtentResult> extents;
	uint64_t moved = 0, skipped = 0, bytes = 0, stall_max_us = 0, stall_total_us = 0;

	void add(const mdr::wire::MovedExtent &x)
	{
		extents.push_back({x.index, x});
		moved++;
		bytes += extent_bytes;
		stall_max_us = std::max<uint64_t>(stall_max_us, x.stall_us);
		stall_total_us += x.stall_us;
	}
	void skip(uint64_t index)
	{
		extents.push_back({index, std::nullopt});
		skipped++;
	}
};

void print_migrate(const Env &env, Format format, const MigrateReport &r,
		   std::optional<int> error)
{
	if (format == Format::json) {
		mdr::JsonWriter json;
		json.begin_object()
			.key("volume").value(r.name)
			.key("volume_id").value(r.volume_id)
			.key("to_dev").value(r.to_dev)
			.key("moved").value(r.moved)
			.key("skipped").value(r.skipped)
			.key("bytes").value(r.bytes)
			.key("stall_max_us").value(r.stall_max_us)
			.key("stall_total_us").value(r.stall_total_us);
		if (error)
			json.key("error").value(mdr::errno_name(-*error));
		json.key("extents").begin_array();
		for (const ExtentResult &e : r.extents) {
			json.begin_object().key("index").value(e.index);
			if (!e.moved) {
				json.key("result").value("skipped").end_object();
				continue;
			}
			const mdr::wire::MovedExtent &x = *e.moved;
			json.key("result").value("moved")
				.key("old_dev").value(x.old_dev)
				.key("old_pstart").value(x.old_pstart)
				.key("new_dev").value(x.new_dev)
				.key("new_pstart").value(x.new_pstart)
				.key("generation").value(x.generation)
				.key("bytes").value(r.extent_bytes)
				.key("stall_us").value(x.stall_us)
				.end_object();
		}
		json.end_array().end_object();
		env.out << json.str() << '\n';
		return;
	}
	Table table({{"EXTENT", true}, {"RESULT", false}, {"FROM", true}, {"TO", true},
		     {"BYTES", true}, {"STALL_MS", true}});
	for (const ExtentResult &e : r.extents) {
		if (!e.moved) {
			table.add({std::to_string(e.index), "skipped", "-", "-", "-", "-"});
			continue;
		}
		table.add({std::to_string(e.index), "moved", std::to_string(e.moved->old_dev),
			   std::to_string(e.moved->new_dev), format_size(r.extent_bytes),
			   format_ms(e.moved->stall_us)});
	}
	if (!r.extents.empty())
		table.print(env.out);
	env.out << "moved " << r.moved << " extent" << (r.moved == 1 ? "" : "s") << " ("
		<< format_size(r.bytes) << ") of volume '" << r.name << "' to device "
		<< r.to_dev << ", skipped " << r.skipped << "; stall max "
		<< format_ms(r.stall_max_us) << " ms, total " << format_ms(r.stall_total_us)
		<< " ms\n";
}

// One MOVE of extents [first, first + count); a refusal of the batch as
// invalid (an extent has nothing to move) is retried extent by extent, and
// the extents the node refuses alone as invalid are skipped.
mdr::Status move_batch(NodeSession &node, MigrateReport &r, uint64_t first, uint32_t count,
		       int timeout_ms)
{
	mdr::wire::MoveReq req;
	req.volume_id = r.volume_id;
	req.first = first;
	req.count = count;
	req.to_dev = r.to_dev;
	auto rep = rpc<mdr::wire::MoveRep>(node, req, timeout_ms);
	if (rep.ok()) {
		if (rep.value().extents.size() != count)
			return mdr::Error(-EPROTO, "mdnode's reply to MOVE lacks extents");
		for (const mdr::wire::MovedExtent &x : rep.value().extents) {
			if (x.index < first || x.index - first >= count)
				return mdr::Error(-EPROTO, "mdnode moved another extent");
			r.add(x);
		}
		return {};
	}
	if (rep.error() != -EINVAL)
		return mdr::Error(rep.error(), rep.message());
	if (count == 1) {
		r.skip(first);
		return {};
	}
	for (uint32_t i = 0; i < count; i++)
		if (auto st = move_batch(node, r, first + i, 1, timeout_ms); !st.ok())
			return st;
	return {};
}

int cmd_migrate(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {
		{kOptExtent, "extent", 'x', true}, {kOptToDev, "to-dev", 'd', true},
		kTimeoutOption, kNodeOption, kKeyFileOption, kOutputOption, kHelpOption,
	};
	constexpr std::string_view command = "migrate";
	std::optional<ExtentRange> range;
	std::optional<uint32_t> dev;
	int timeout_ms = kMoveTimeoutDefaultS * 1000;
	Common c;
	NodeSettings ns;
	std::unique_ptr<NodeSession> node;

	auto check = [&]() -> std::optional<int> {
		if (auto done = operands(env, c, 1, "migrate needs a volume NAME"))
			return done;
		if (auto done = check_volume_name(env, c.operands[0]))
			return done;
		for (const mdr::ParsedOption &opt : c.options) {
			int status = kExitUsage;
			if (opt.id == kOptExtent) {
				range = parse_extent_range(opt.value);
				// the last index + 1 is the end of the range: it must fit
				if (!range || range->last == UINT64_MAX)
					return usage_error(env, "bad extent range '" +
								std::string(opt.value) +
								"': expected N or N-M with M >= N");
			} else if (opt.id == kOptToDev) {
				dev = parse_id<uint32_t>(opt.value);
				if (!dev)
					return usage_error(env, "bad device id '" +
								std::string(opt.value) + "'");
			} else if (opt.id == kOptTimeout) {
				std::optional<int> t = parse_timeout(env, opt.value, status);
				if (!t)
					return status;
				timeout_ms = *t;
			}
		}
		if (!range)
			return usage_error(env, "migrate needs --extent N[-M]");
		if (!dev)
			return usage_error(env, "migrate needs --to-dev ID");
		return std::nullopt;
	};
	if (auto done = node_command(args, specs, kMigrateUsage, command, env, c, ns, node, check))
		return *done;

	MigrateReport r;
	r.name = std::string(c.operands[0]);
	r.to_dev = *dev;
	mdr::wire::VolInfoReq info;
	info.name = r.name;
	auto vol = rpc<mdr::wire::VolInfoRep>(*node, info);
	if (!vol.ok())
		return rpc_failure(env, command, vol, "volume '" + r.name + "'", ns.target);
	const mdr::wire::Volume &v = vol.value().vol;
	const uint64_t extents = ((v.size - 1) >> v.extent_shift) + 1;
	if (range->last >= extents) {
		env.err << "mdctl: " << command << " failed: volume '" << r.name << "' has extents 0-"
			<< extents - 1 << ", not " << range->first << '-' << range->last << '\n';
		return kExitFailure;
	}
	r.volume_id = v.volume_id;
	r.extent_bytes = extent_bytes(v.extent_shift);

	for (uint64_t first = range->first; first <= range->last;) {
		const auto count = static_cast<uint32_t>(
			std::min<uint64_t>(range->last - first + 1, MDR_WIRE_MOVE_MAX));
		auto st = move_batch(*node, r, first, count, timeout_ms);
		if (!st.ok()) {
			// What moved before the failure stays moved: it is told.
			if (c.format == Format::json || !r.extents.empty())
				print_migrate(env, c.format, r, st.error());
			std::string context = "extents " + std::to_string(first) + '-' +
					      std::to_string(first + count - 1) + " of volume '" +
					      r.name + "'";
			if (!st.message().empty() && !st.message().starts_with("MDR_ST_"))
				context += ": " + st.message();
			return failure(env, command, st.error(), context,
				       move_hint(st.error(), r.name, r.to_dev, ns.target));
		}
		first += count;
	}
	print_migrate(env, c.format, r, std::nullopt);
	return kExitOk;
}

constexpr std::string_view kDevDrainUsage =
	"Usage: mdctl dev drain ID [--to-dev ID] [--timeout SECONDS]\n"
	"                      [--node ADDR[:PORT]] [--key-file FILE] [-o json]\n"
	"\n"
	"Move every extent of every volume off backing device ID, while hosts\n"
	"keep using the volumes. Each goes to --to-dev, else to the other device\n"
	"with the most free space. The node moves them one after another and\n"
	"answers when done, with the extents moved and those still on the device\n"
	"(another request was moving them, or a move failed): then it fails.\n"
	"The device may take new extents again afterwards.\n"
	"\n"
	"Options:\n"
	"  -d, --to-dev ID      the device to move them to (default: any other)\n"
	MDCTL_TIMEOUT_OPTION
	MDCTL_NODE_OPTIONS
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

int cmd_dev_drain(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {
		{kOptToDev, "to-dev", 'd', true}, kTimeoutOption, kNodeOption, kKeyFileOption,
		kOutputOption, kHelpOption,
	};
	constexpr std::string_view command = "dev drain";
	mdr::wire::DrainReq req;
	int timeout_ms = kMoveTimeoutDefaultS * 1000;
	Common c;
	NodeSettings ns;
	std::unique_ptr<NodeSession> node;

	auto check = [&]() -> std::optional<int> {
		if (auto done = operands(env, c, 1, "dev drain needs a device ID"))
			return done;
		std::optional<uint32_t> id = parse_id<uint32_t>(c.operands[0]);
		if (!id)
			return usage_error(env, "bad device id '" + std::string(c.operands[0]) + "'");
		req.dev_id = *id;
		for (const mdr::ParsedOption &opt : c.options) {
			int status = kExitUsage;
			if (opt.id == kOptToDev) {
				std::optional<uint32_t> to = parse_id<uint32_t>(opt.value);
				if (!to || *to == req.dev_id)
					return usage_error(env, "bad device id '" +
								std::string(opt.value) +
								"': expected another device");
				req.to_dev = *to;
			} else if (opt.id == kOptTimeout) {
				std::optional<int> t = parse_timeout(env, opt.value, status);
				if (!t)
					return status;
				timeout_ms = *t;
			}
		}
		return std::nullopt;
	};
	if (auto done = node_command(args, specs, kDevDrainUsage, command, env, c, ns, node, check))
		return *done;
	auto rep = rpc<mdr::wire::DrainRep>(*node, req, timeout_ms);
	if (!rep.ok())
		return failure(env, command, rep.error(), "device " + std::to_string(req.dev_id),
			       move_hint(rep.error(), {}, req.to_dev, ns.target));
	const mdr::wire::DrainRep &r = rep.value();
	const int err = r.status != MDR_ST_OK ? mdr::wire::status_to_errno(r.status)
			: r.remaining ? -EBUSY : 0;
	if (c.format == Format::json) {
		mdr::JsonWriter json;
		json.begin_object()
			.key("dev_id").value(r.dev_id)
			.key("to_dev").value(req.to_dev)
			.key("moved").value(r.moved)
			.key("remaining").value(r.remaining)
			.key("bytes").value(r.bytes)
			.key("stall_max_us").value(r.stall_max_us)
			.key("stall_total_us").value(r.stall_total_us)
			.key("status").value(mdr::wire::status_name(r.status))
			.end_object();
		env.out << json.str() << '\n';
	} else {
		env.out << "drained device " << r.dev_id << ": moved " << r.moved << " extent"
			<< (r.moved == 1 ? "" : "s") << " (" << format_size(r.bytes) << "), "
			<< r.remaining << " remaining; stall max " << format_ms(r.stall_max_us)
			<< " ms, total " << format_ms(r.stall_total_us) << " ms\n";
	}
	if (!err)
		return kExitOk;
	return failure(env, command, err,
		       "device " + std::to_string(r.dev_id) + ": " + std::to_string(r.remaining) +
			       " extent" + (r.remaining == 1 ? "" : "s") + " remain",
		       r.status != MDR_ST_OK ? move_hint(err, {}, req.to_dev, ns.target)
					     : "other requests were moving them; run it again");
}

// ---- attach, detach ------------------------------------------------------

constexpr std::string_view kAttachUsage =
	"Usage: mdctl attach NAME [--node ADDR[:PORT]] [--key-file FILE]\n"
	"                    [--host-id N] [--bind ID=/dev/X]... [--read-only]\n"
	"       mdctl attach --all-of FILE [--timing] [same options]\n"
	"       mdctl attach --volume-id ID [--node ADDR[:PORT]] [--tenant T]\n"
	"                    [--host-id N] [--bind ID=/dev/X]... [--read-only]\n"
	"\n"
	"Attach a volume of a storage node as a new block device and print its\n"
	"path (/dev/mdrN). Loads the mdroute module (modprobe) if it is not.\n"
	"\n"
	"By NAME: looks the volume up on the node, then binds every backing device\n"
	"of the node to the local disk whose serial or WWID (sysfs serial,\n"
	"device/serial, wwid, device/wwid) is the one the node reports, unless a\n"
	"--bind names the disk. A device of the node found on no local disk is\n"
	"left unbound, with a note: IO to extents the node puts there fails with\n"
	"EIO. If it already holds extents of the volume, the attach fails before\n"
	"anything changes. A device bound to that same disk already is used as it\n"
	"is. If the attach fails, the bindings it made are undone.\n"
	"\n"
	"With --all-of FILE: attaches every volume FILE lists, over one admin\n"
	"connection, attaches --jobs of them at a time, and prints a line per\n"
	"volume. Each line of FILE is\n"
	"  NAME [SIZE [EXTENT_SIZE]]\n"
	"and with a SIZE the volume is created first if the node lacks it ('#'\n"
	"starts a comment). If any step fails, everything done is undone: the\n"
	"volumes it attached are detached, those it created are deleted, the\n"
	"devices it bound are unbound.\n"
	"\n"
	"By --volume-id: attaches volume ID without asking the node (no admin key\n"
	"needed); only the --bind devices are bound.\n"
	"\n"
	"Options:\n"
	"  -a, --all-of FILE    attach (and create) the volumes listed in FILE\n"
	"  -i, --volume-id ID   the volume by id (non-zero)\n"
	MDCTL_NODE_OPTIONS
	"  -t, --tenant T       tenant of the volume, with --volume-id (default:\n"
	"                       'tenant' in mdctl.conf, else 0); by NAME, the\n"
	"                       volume's own, which it must match if given\n"
	"  -H, --host-id N      this host's id at the storage node (non-zero).\n"
	"                       Default: 'host-id' in mdctl.conf, else derived from\n"
	"                       /etc/machine-id: the first 8 bytes, big-endian, of\n"
	"                       HMAC-SHA256 keyed with the machine id over\n"
	"                       \"mdroute-host-id\"\n"
	"  -b, --bind ID=/dev/X bind backing device ID to /dev/X (repeatable)\n"
	"  -r, --read-only      attach read-only\n"
	"  -T, --timing         print where the time went to stderr (--all-of)\n"
	"  -j, --jobs N         attach N volumes at a time (--all-of; default 4)\n"
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

// Attach failures that say more with the node's address.
std::string attach_hint(int err, const mdr::Target &target)
{
	switch (err) {
	case -EEXIST:
		return "the volume is attached already; see 'mdctl list'";
	case -ENOENT:
		return "does the volume exist on " + format_node(target) + "?";
	default:
		return node_hint(err, target);
	}
}

// Undoes the bindings an attach made, newest first; says what it cannot undo.
void unbind_all(const Env &env, mdr::Control &control, const std::vector<uint32_t> &ids)
{
	for (auto id = ids.rbegin(); id != ids.rend(); ++id) {
		auto unbound = control.unbind(*id);
		if (!unbound.ok())
			env.err << "mdctl: attach: could not undo binding of device " << *id
				<< ": " << mdr::describe_errno(-unbound.error()) << '\n';
	}
}

// A backing device id and the local block device it is to be bound to.
struct Binding {
	uint32_t dev_id;
	std::string path;
	mdr::DevNum dev;
};

// Binds each of @binds; one bound to that same block device already
// (another volume's attach did it) is used and left bound. The ids it
// bound are appended to @bound. False once the failure is told.
bool bind_devices(const Env &env, std::string_view command, mdr::Control &control,
		  const std::vector<Binding> &binds, std::vector<uint32_t> &bound)
{
	for (const Binding &b : binds) {
		auto r = control.bind(b.dev_id, b.dev);
		if (r.ok()) {
			bound.push_back(b.dev_id);
			continue;
		}
		auto same = [&](const mdr::DeviceInfo &d) {
			return d.dev_id == b.dev_id && d.dev.major == b.dev.major &&
			       d.dev.minor == b.dev.minor;
		};
		if (r.error() == -EEXIST) {
			auto all = control.dev_list();
			if (all.ok() && std::ranges::any_of(all.value(), same))
				continue;
		}
		std::string context = "bind " + std::to_string(b.dev_id) + '=' + b.path;
		if (!r.message().empty())
			context += ": " + r.message();
		failure(env, command, r.error(), context,
			r.error() == -EEXIST ? "the id is bound to another block device; "
					       "see 'mdctl devices'"
					     : std::string_view());
		return false;
	}
	return true;
}

std::string trim_sysfs(std::string_view s)
{
	size_t b = s.find_first_not_of(" \t\r\n");
	size_t e = s.find_last_not_of(" \t\r\n");

	return b == s.npos ? std::string() : std::string(s.substr(b, e - b + 1));
}

// serial or WWID -> the whole disk that shows it: of /sys/block/NAME/
// serial, device/serial, wwid and device/wwid, the first that is not
// empty, which is what mdnode reports for its devices (mdnode/probe.cc).
// mdroute's own disks are left out.
std::map<std::string, Binding> local_disks(const Env &env)
{
	std::map<std::string, Binding> disks;
	auto names = env.host.list_dir("/sys/block");

	if (!names.ok())
		return disks;
	std::ranges::sort(names.value());	// the first of two same serials wins
	for (const std::string &name : names.value()) {
		if (name.starts_with("mdr"))
			continue;
		const std::string dir = "/sys/block/" + name + '/';
		auto dev = env.host.read_file(dir + "dev");
		if (!dev.ok())
			continue;
		std::string text = trim_sysfs(dev.value());
		size_t colon = text.find(':');
		std::optional<uint32_t> major = parse_number<uint32_t>(text.substr(0, colon));
		std::optional<uint32_t> minor =
			colon == text.npos ? std::nullopt
					   : parse_number<uint32_t>(text.substr(colon + 1));
		if (!major || !minor)
			continue;
		for (const char *attr : {"serial", "device/serial", "wwid", "device/wwid"}) {
			auto serial = env.host.read_file(dir + attr);
			std::string s = serial.ok() ? trim_sysfs(serial.value()) : std::string();
			if (s.empty())
				continue;
			disks.emplace(s, Binding{0, "/dev/" + name, {*major, *minor}});
			break;
		}
	}
	return disks;
}

// Where each device of the node is on this host.
struct BindPlan {
	std::vector<Binding> binds;
	std::map<uint32_t, std::string> missing;	// id -> serial: on no local disk
};

std::optional<int> plan_bindings(const Env &env, std::string_view command,
				 const std::vector<mdr::wire::Device> &devs,
				 const std::vector<BindSpec> &overrides,
				 const mdr::Target &target, BindPlan &plan)
{
	std::set<uint32_t> overridden;

	for (const BindSpec &o : overrides) {
		if (std::ranges::none_of(devs, [&](const auto &d) { return d.dev_id == o.dev_id; })) {
			failure(env, command, -ENODEV,
				"--bind " + std::to_string(o.dev_id) + '=' + o.path + ": mdnode at " +
					format_node(target) + " has no device " +
					std::to_string(o.dev_id),
				"see 'mdctl dev list'");
			return kExitFailure;
		}
		std::optional<mdr::DevNum> dev = block_device(env, command, o.path);
		if (!dev)
			return kExitFailure;
		plan.binds.push_back({o.dev_id, o.path, *dev});
		overridden.insert(o.dev_id);
	}
	std::map<std::string, Binding> disks = local_disks(env);
	for (const mdr::wire::Device &d : devs) {
		if (overridden.contains(d.dev_id))
			continue;
		auto disk = d.serial.empty() ? disks.end() : disks.find(d.serial);
		if (disk == disks.end()) {
			plan.missing[d.dev_id] = d.serial;
			continue;
		}
		plan.binds.push_back({d.dev_id, disk->second.path, disk->second.dev});
	}
	return std::nullopt;
}

// A volume whose extents are on a device this host cannot reach would
// read and write garbage or fail: refused before anything changes.
std::optional<int> check_reachable(const Env &env, std::string_view command,
				   const mdr::wire::VolumeReply &v, const BindPlan &plan)
{
	for (const mdr::wire::DevExtents &d : v.devs) {
		auto m = plan.missing.find(d.dev_id);
		if (m == plan.missing.end() || d.extents == 0)
			continue;
		return failure(env, command, -ENODEV,
			       "volume '" + v.vol.name + "': device " + std::to_string(d.dev_id) +
				       " (serial '" + m->second + "') holds " +
				       std::to_string(d.extents) +
				       " of its extents but is on no disk of this host",
			       "bind it with --bind " + std::to_string(d.dev_id) + "=/dev/X");
	}
	return std::nullopt;
}

void note_missing(const Env &env, std::string_view command, const BindPlan &plan)
{
	for (const auto &[id, serial] : plan.missing)
		env.err << "mdctl: " << command << ": note: device " << id << " (serial '"
			<< serial << "') is on no disk of this host; IO to extents the node "
			   "allocates there will fail\n";
}

// Seconds since @start, for --timing.
double since(std::chrono::steady_clock::time_point start)
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// --timing: "name: 1000 in 12.345 s (12.345 ms each)".
void print_timing(const Env &env, std::string_view command, std::string_view step, size_t n,
		  double secs)
{
	char line[160];

	if (n > 1)
		std::snprintf(line, sizeof(line), "%.*s: %zu in %.3f s (%.3f ms each)",
			      static_cast<int>(step.size()), step.data(), n, secs,
			      secs * 1000 / static_cast<double>(n));
	else
		std::snprintf(line, sizeof(line), "%.*s: %.3f s", static_cast<int>(step.size()),
			      step.data(), secs);
	env.err << "mdctl: " << command << ": timing: " << line << '\n';
}

// --timing of one call per volume (an ioctl), from a clock around each:
// "attach ioctl: min 1.2 ms, median 3.4 ms, p90 .., p99 .., max ..; sum
// 12.3 s". The sum over the wall time of the step is how much the jobs
// overlapped.
void print_latencies(const Env &env, std::string_view command, std::string_view step,
		     std::vector<double> secs)
{
	if (secs.empty())
		return;
	std::sort(secs.begin(), secs.end());
	auto at = [&](double q) {
		return secs[std::min(secs.size() - 1,
				     static_cast<size_t>(q * static_cast<double>(secs.size())))] *
		       1000;
	};
	double sum = 0;
	for (double x : secs)
		sum += x;
	char line[200];
	std::snprintf(line, sizeof(line),
		      "%.*s: min %.1f ms, median %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms; "
		      "sum %.3f s",
		      static_cast<int>(step.size()), step.data(), secs.front() * 1000, at(0.5),
		      at(0.9), at(0.99), secs.back() * 1000, sum);
	env.err << "mdctl: " << command << ": timing: " << line << '\n';
}

// Calls fn(i) for every i below @n from @jobs threads, and hands out no
// more once one returns false. Attaches and detaches overlap in the
// module: it holds its volume lock neither while it opens a volume at the
// node and adds the disk, nor while it removes the disk and closes it.
template <typename Fn>
void run_jobs(size_t n, unsigned jobs, Fn fn)
{
	std::atomic<size_t> next = 0;
	std::atomic<bool> failed = false;
	auto worker = [&] {
		for (size_t i; !failed && (i = next++) < n;)
			if (!fn(i))
				failed = true;
	};
	std::vector<std::thread> threads;

	for (size_t t = 1; t < std::min<size_t>(jobs, n); t++)
		threads.emplace_back(worker);
	worker();
	for (std::thread &t : threads)
		t.join();
}

constexpr unsigned kDefaultJobs = 4;
constexpr unsigned kMaxJobs = 64;

std::optional<int> parse_jobs(const Env &env, std::string_view text, unsigned &jobs)
{
	std::optional<unsigned> n = parse_id<unsigned>(text);

	if (!n || *n > kMaxJobs || text.starts_with("0x"))
		return usage_error(env, "bad number of jobs '" + std::string(text) +
					"': expected 1 to " + std::to_string(kMaxJobs));
	jobs = *n;
	return std::nullopt;
}

struct AttachArgs {
	std::optional<std::string> name;
	std::optional<std::string> all_of;
	std::optional<uint64_t> volume_id;
	std::optional<uint32_t> tenant;
	std::optional<uint64_t> host_id;
	std::vector<BindSpec> binds;
	bool readonly = false;
	bool timing = false;
	std::optional<unsigned> jobs;
};

std::optional<int> parse_attach(const Env &env, const Common &c, AttachArgs &a)
{
	for (const mdr::ParsedOption &opt : c.options) {
		std::string value(opt.value);
		switch (opt.id) {
		case kOptVolumeId:
			a.volume_id = parse_id<uint64_t>(value);
			if (!a.volume_id)
				return usage_error(env, "bad volume id '" + value + "'");
			break;
		case kOptAllOf:
			a.all_of = value;
			break;
		case kOptTenant:
			a.tenant = parse_number<uint32_t>(value);
			if (!a.tenant)
				return usage_error(env, "bad tenant '" + value + "'");
			break;
		case kOptHostId:
			a.host_id = parse_id<uint64_t>(value);
			if (!a.host_id)
				return usage_error(env, "bad host id '" + value + "'");
			break;
		case kOptBind: {
			std::optional<BindSpec> spec = parse_bind_spec(value);
			if (!spec)
				return bad_binding(env, value);
			for (const BindSpec &other : a.binds)
				if (other.dev_id == spec->dev_id)
					return usage_error(env, "device " +
								std::to_string(spec->dev_id) +
								" is bound twice");
			a.binds.push_back(std::move(*spec));
			break;
		}
		case kOptReadOnly:
			a.readonly = true;
			break;
		case kOptTiming:
			a.timing = true;
			break;
		case kOptJobs: {
			unsigned n = 0;
			if (auto done = parse_jobs(env, opt.value, n))
				return done;
			a.jobs = n;
			break;
		}
		}
	}
	if (c.operands.size() > 1)
		return unexpected_argument(env, c.operands[1]);
	if (!c.operands.empty()) {
		if (auto done = check_volume_name(env, c.operands[0]))
			return done;
		a.name = std::string(c.operands[0]);
	}
	const int ways = a.name.has_value() + a.all_of.has_value() + a.volume_id.has_value();
	if (ways == 0)
		return usage_error(env, "attach needs a volume NAME, --all-of FILE or "
					"--volume-id ID");
	if (ways > 1)
		return usage_error(env, "attach takes one of NAME, --all-of FILE and "
					"--volume-id ID");
	if ((a.timing || a.jobs) && !a.all_of)
		return usage_error(env, std::string(a.timing ? "--timing" : "--jobs") +
					" goes with --all-of");
	return std::nullopt;
}

// --host-id, else the config's, else derived from the machine id.
std::optional<uint64_t> resolve_host_id(const Env &env, const AttachArgs &a, const Config &config)
{
	if (a.host_id)
		return a.host_id;
	if (config.host_id)
		return config.host_id;
	auto machine_id = env.host.read_file(kMachineIdPath);
	if (!machine_id.ok()) {
		failure(env, "attach", machine_id.error(), kMachineIdPath, "pass --host-id N");
		return std::nullopt;
	}
	auto derived = host_id_from_machine_id(machine_id.value());
	if (!derived.ok()) {
		failure(env, "attach", derived.error(),
			std::string(kMachineIdPath) + ": " + derived.message(), "pass --host-id N");
		return std::nullopt;
	}
	return derived.value();
}

void print_attached(const Env &env, Format format, const mdr::VolumeInfo &v,
		    const std::vector<uint32_t> &bound)
{
	if (format == Format::table) {
		env.out << device_path(v.index) << '\n';
		return;
	}
	mdr::JsonWriter json;
	json.begin_object()
		.key("device").value(device_path(v.index))
		.key("index").value(v.index)
		.key("volume_id").value(v.volume_id)
		.key("name").value(v.name)
		.key("size").value(v.size)
		.key("extent_size").value(uint64_t{1} << v.extent_shift)
		.key("read_only").value((v.flags & MDR_VOL_READONLY) != 0)
		.key("host_id").value(v.target.host_id)
		.key("bound").begin_array();
	for (uint32_t id : bound)
		json.value(id);
	json.end_array().end_object();
	env.out << json.str() << '\n';
}

// The last step of every attach: bind, attach, or undo the bindings.
int bind_and_attach(const Env &env, const std::vector<Binding> &binds, uint64_t volume_id,
		    const mdr::Target &target, bool readonly, Format format)
{
	auto control = open_control_loading(env, "attach");
	if (!control)
		return kExitFailure;
	std::vector<uint32_t> bound;	// what to undo if the attach fails
	if (!bind_devices(env, "attach", *control, binds, bound)) {
		unbind_all(env, *control, bound);
		return kExitFailure;
	}
	auto attached = control->attach(volume_id, target, readonly);
	if (!attached.ok()) {
		failure(env, "attach", attached, attach_hint(attached.error(), target));
		unbind_all(env, *control, bound);
		return kExitFailure;
	}
	print_attached(env, format, attached.value(), bound);
	return kExitOk;
}

int attach_all_of(const Env &env, const Common &c, const AttachArgs &a, const NodeSettings &ns,
		  uint64_t host_id);

int cmd_attach(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {
		{kOptVolumeId, "volume-id", 'i', true},
		{kOptAllOf, "all-of", 'a', true},
		kNodeOption,
		kKeyFileOption,
		{kOptTenant, "tenant", 't', true},
		{kOptHostId, "host-id", 'H', true},
		{kOptBind, "bind", 'b', true},
		{kOptReadOnly, "read-only", 'r', false},
		{kOptTiming, "timing", 'T', false},
		{kOptJobs, "jobs", 'j', true},
		kOutputOption,
		kHelpOption,
	};
	AttachArgs a;
	Common c;
	NodeSettings ns;

	if (auto done = parse_common(args, specs, kAttachUsage, env, c))
		return *done;
	if (auto done = parse_attach(env, c, a))
		return *done;
	if (auto done = node_settings(env, "attach", c, ns))
		return *done;
	std::optional<uint64_t> host_id = resolve_host_id(env, a, ns.config);
	if (!host_id)
		return kExitFailure;
	mdr::Target target = ns.target;
	target.host_id = *host_id;

	if (a.all_of)
		return attach_all_of(env, c, a, ns, *host_id);

	if (a.volume_id) {
		// Every block device is looked up before anything changes.
		std::vector<Binding> binds;
		for (const BindSpec &b : a.binds) {
			std::optional<mdr::DevNum> dev = block_device(env, "attach", b.path);
			if (!dev)
				return kExitFailure;
			binds.push_back({b.dev_id, b.path, *dev});
		}
		target.tenant = a.tenant.value_or(ns.config.tenant.value_or(0));
		return bind_and_attach(env, binds, *a.volume_id, target, a.readonly, c.format);
	}

	// By name: what the node says first, nothing changed until it is known.
	std::unique_ptr<NodeSession> node = open_node(env, "attach", ns);
	if (!node)
		return kExitFailure;
	auto info = rpc<mdr::wire::VolInfoRep>(*node, mdr::wire::VolInfoReq{*a.name});
	if (!info.ok())
		return rpc_failure(env, "attach", info, "volume '" + *a.name + "'", ns.target);
	const mdr::wire::Volume &vol = info.value().vol;
	if (a.tenant && *a.tenant != vol.tenant)
		return failure(env, "attach", -EPERM,
			       "volume '" + vol.name + "' is of tenant " + std::to_string(vol.tenant) +
				       ", not " + std::to_string(*a.tenant),
			       "leave --tenant out: the volume's own is used");
	auto devs = list_devices(*node);
	if (!devs.ok())
		return rpc_failure(env, "attach", devs, "device list", ns.target);
	BindPlan plan;
	if (auto done = plan_bindings(env, "attach", devs.value(), a.binds, ns.target, plan))
		return *done;
	if (auto done = check_reachable(env, "attach", info.value(), plan))
		return *done;
	node.reset();	// the admin connection is not needed any more
	note_missing(env, "attach", plan);
	target.tenant = vol.tenant;
	return bind_and_attach(env, plan.binds, vol.volume_id, target, a.readonly, c.format);
}

// What a batch attach did, to undo it if a later step fails.
struct BatchUndo {
	std::vector<std::string> created;	// volumes created on the node
	std::vector<uint32_t> bound;		// devices bound
	std::vector<uint32_t> attached;		// indexes of /dev/mdrN

	void run(const Env &env, NodeSession &node, mdr::Control *control)
	{
		if (control) {
			for (auto i = attached.rbegin(); i != attached.rend(); ++i) {
				mdr::Status st = control->detach(*i, 0, true);
				if (!st.ok())
					env.err << "mdctl: attach: could not undo attach of "
						<< device_path(*i) << ": "
						<< mdr::describe_errno(-st.error()) << '\n';
			}
			unbind_all(env, *control, bound);
		}
		std::vector<mdr::wire::Body> deletes;
		for (auto n = created.rbegin(); n != created.rend(); ++n)
			deletes.push_back(mdr::wire::VolDeleteReq{*n});
		auto reps = rpc_many<mdr::wire::VolDeleteRep>(node, deletes);
		for (size_t i = 0; i < reps.size(); i++)
			if (!reps[i].ok())
				env.err << "mdctl: attach: could not undo creation of volume '"
					<< created[created.size() - 1 - i]
					<< "': " << mdr::describe_errno(-reps[i].error()) << '\n';
	}
};

int attach_all_of(const Env &env, const Common &c, const AttachArgs &a, const NodeSettings &ns,
		  uint64_t host_id)
{
	using clock = std::chrono::steady_clock;
	std::vector<BatchLine> lines;
	if (auto done = read_batch(env, "attach", *a.all_of, lines))
		return *done;

	auto t0 = clock::now();
	std::unique_ptr<NodeSession> node = open_node(env, "attach", ns);
	if (!node)
		return kExitFailure;
	const double connect_s = since(t0);

	t0 = clock::now();
	auto devs = list_devices(*node);
	if (!devs.ok())
		return rpc_failure(env, "attach", devs, "device list", ns.target);
	BindPlan plan;
	if (auto done = plan_bindings(env, "attach", devs.value(), a.binds, ns.target, plan))
		return *done;
	const double plan_s = since(t0);

	// On the node: create what is missing, look up the rest.
	BatchUndo undo;
	std::vector<mdr::wire::Volume> vols;
	std::vector<bool> created;
	size_t creates = 0, infos = 0;
	double create_s = 0, info_s = 0;
	auto fail = [&](mdr::Control *control) {
		undo.run(env, *node, control);
		return kExitFailure;
	};
	// The creations pipelined, then the lookups of the rest (and of those
	// that exist already): mdnode journals the creations that arrive
	// together in one write. Every creation that succeeded is undone on a
	// failure, also those after the first that failed.
	std::vector<std::optional<mdr::wire::VolumeReply>> replies(lines.size());
	std::vector<bool> made(lines.size());
	std::vector<mdr::wire::Body> reqs;
	std::vector<size_t> of;			// the line of each request
	for (size_t i = 0; i < lines.size(); i++) {
		if (!lines[i].size)
			continue;
		mdr::wire::VolCreateReq req;
		req.size = *lines[i].size;
		req.extent_shift = lines[i].extent_shift;
		req.tenant = a.tenant.value_or(ns.config.tenant.value_or(0));
		req.name = lines[i].name;
		reqs.push_back(std::move(req));
		of.push_back(i);
	}
	auto t = clock::now();
	auto made_reps = rpc_many<mdr::wire::VolCreateRep>(*node, reqs);
	create_s = since(t);
	creates = reqs.size();
	std::optional<size_t> create_failed;
	for (size_t k = 0; k < made_reps.size(); k++) {
		if (made_reps[k].ok()) {
			replies[of[k]] = std::get<mdr::wire::VolCreateRep>(
				std::move(made_reps[k].value().body));
			made[of[k]] = true;
			undo.created.push_back(lines[of[k]].name);
		} else if (made_reps[k].error() != -EEXIST && !create_failed) {
			create_failed = k;
		}
	}
	if (create_failed) {
		rpc_failure(env, "attach", made_reps[*create_failed],
			    "volume '" + lines[of[*create_failed]].name + "'", ns.target);
		return fail(nullptr);
	}
	reqs.clear();
	of.clear();
	for (size_t i = 0; i < lines.size(); i++) {
		if (replies[i])
			continue;
		reqs.push_back(mdr::wire::VolInfoReq{lines[i].name});
		of.push_back(i);
	}
	t = clock::now();
	auto info_reps = rpc_many<mdr::wire::VolInfoRep>(*node, reqs);
	info_s = since(t);
	infos = reqs.size();
	for (size_t k = 0; k < info_reps.size(); k++) {
		if (!info_reps[k].ok()) {
			rpc_failure(env, "attach", info_reps[k],
				    "volume '" + lines[of[k]].name + "'", ns.target);
			return fail(nullptr);
		}
		replies[of[k]] = std::get<mdr::wire::VolInfoRep>(
			std::move(info_reps[k].value().body));
	}
	for (size_t i = 0; i < lines.size(); i++) {
		const BatchLine &b = lines[i];
		std::optional<mdr::wire::VolumeReply> &reply = replies[i];
		if (!made[i]) {
			const mdr::wire::Volume &v = reply->vol;
			if ((b.size && v.size != *b.size) ||
			    (b.extent_shift && v.extent_shift != b.extent_shift)) {
				env.err << "mdctl: attach failed: volume '" << b.name
					<< "' exists with size " << v.size << " and extent size "
					<< extent_bytes(v.extent_shift) << ", not as " << *a.all_of
					<< " says\n";
				return fail(nullptr);
			}
		}
		if (a.tenant && reply->vol.tenant != *a.tenant) {
			failure(env, "attach", -EPERM,
				"volume '" + b.name + "' is of tenant " +
					std::to_string(reply->vol.tenant));
			return fail(nullptr);
		}
		if (check_reachable(env, "attach", *reply, plan))
			return fail(nullptr);
		vols.push_back(reply->vol);
		created.push_back(made[i]);
	}
	note_missing(env, "attach", plan);

	// On this host: bind every device once, then attach each volume.
	t0 = clock::now();
	auto control = open_control_loading(env, "attach");
	if (!control)
		return fail(nullptr);
	if (!bind_devices(env, "attach", *control, plan.binds, undo.bound))
		return fail(&*control);
	const double bind_s = since(t0);

	t0 = clock::now();
	std::vector<std::optional<mdr::Result<mdr::VolumeInfo>>> results(vols.size());
	mdr::Target target = ns.target;
	target.host_id = host_id;
	std::vector<double> ioctl_s;
	std::mutex ioctl_mu;
	run_jobs(vols.size(), a.jobs.value_or(kDefaultJobs), [&](size_t i) {
		mdr::Target t = target;
		t.tenant = vols[i].tenant;
		auto start = clock::now();
		results[i] = control->attach(vols[i].volume_id, t, a.readonly);
		const double took = since(start);
		std::lock_guard lock(ioctl_mu);
		ioctl_s.push_back(took);
		return results[i]->ok();
	});
	const double attach_s = since(t0);
	std::vector<mdr::VolumeInfo> attached;
	const mdr::Result<mdr::VolumeInfo> *first_error = nullptr;
	size_t failed_at = 0;
	for (size_t i = 0; i < results.size(); i++) {
		if (!results[i])
			continue;	// not tried: an earlier one failed
		if (results[i]->ok()) {
			undo.attached.push_back(results[i]->value().index);
			attached.push_back(results[i]->value());
		} else if (!first_error) {
			first_error = &*results[i];
			failed_at = i;
		}
	}
	if (first_error) {
		target.tenant = vols[failed_at].tenant;
		failure(env, "attach", first_error->error(),
			"volume '" + vols[failed_at].name + "'" +
				(first_error->message().empty() ? "" : ": " + first_error->message()),
			attach_hint(first_error->error(), target));
		return fail(&*control);
	}

	if (a.timing) {
		print_timing(env, "attach", "connect", 1, connect_s);
		print_timing(env, "attach", "device list and local disks", 1, plan_s);
		if (creates)
			print_timing(env, "attach", "create", creates, create_s);
		if (infos)
			print_timing(env, "attach", "info", infos, info_s);
		print_timing(env, "attach", "bind", plan.binds.size(), bind_s);
		print_timing(env, "attach", "attach", attached.size(), attach_s);
		print_latencies(env, "attach", "attach ioctl", std::move(ioctl_s));
	}

	if (c.format == Format::json) {
		mdr::JsonWriter json;
		json.begin_object().key("volumes").begin_array();
		for (size_t i = 0; i < attached.size(); i++)
			json.begin_object()
				.key("name").value(vols[i].name)
				.key("volume_id").value(vols[i].volume_id)
				.key("device").value(device_path(attached[i].index))
				.key("index").value(attached[i].index)
				.key("size").value(vols[i].size)
				.key("created").value(static_cast<bool>(created[i]))
				.end_object();
		json.end_array().key("bound").begin_array();
		for (uint32_t id : undo.bound)
			json.value(id);
		json.end_array().end_object();
		env.out << json.str() << '\n';
		return kExitOk;
	}
	Table table({{"NAME", false}, {"DEVICE", false}, {"VOLUME_ID", true}, {"SIZE", true},
		     {"CREATED", false}});
	for (size_t i = 0; i < attached.size(); i++)
		table.add({vols[i].name, device_path(attached[i].index),
			   std::to_string(vols[i].volume_id), format_size(vols[i].size),
			   created[i] ? "yes" : "no"});
	table.print(env.out);
	return kExitOk;
}

constexpr std::string_view kDetachUsage =
	"Usage: mdctl detach DEV|NAME [--force]\n"
	"       mdctl detach --all-of FILE [--force] [--timing]\n"
	"\n"
	"Detach the volume at DEV (/dev/mdrN, mdrN or N), or the attached volume\n"
	"called NAME (an operand that reads as a device is one). Refused while\n"
	"the device is open, unless --force: then IO waiting for metadata and new\n"
	"IO fail with EIO, IO already at a backing device completes, and the\n"
	"device goes away. Bound backing devices stay bound (see 'mdctl unbind').\n"
	"\n"
	"With --all-of FILE, detaches every volume named in FILE (the first word\n"
	"of each line, as for 'mdctl attach --all-of'); every name must be\n"
	"attached, which is checked before anything is detached. It detaches\n"
	"--jobs at a time and starts no more after a failure; the volumes\n"
	"detached stay detached.\n"
	"\n"
	"Options:\n"
	"  -a, --all-of FILE    the volumes named in FILE\n"
	"  -f, --force          detach even if the device is open\n"
	"  -T, --timing         print where the time went to stderr (--all-of)\n"
	"  -j, --jobs N         detach N volumes at a time (--all-of; default 4)\n"
	"  -h, --help           show this help\n";

int detach_failed(const Env &env, uint32_t index, const mdr::Status &st)
{
	std::string hint;
	if (st.error() == -EBUSY)
		hint = "the device is open; close it, or use --force";
	else if (st.error() == -ENXIO)
		hint = "no volume is attached there; see 'mdctl list'";
	return failure(env, "detach", st.error(),
		       st.message().empty() ? device_path(index) : st.message(), hint);
}

int detach_one(const Env &env, mdr::Control &control, uint32_t index, bool force)
{
	mdr::Status st = control.detach(index, 0, force);

	return st.ok() ? kExitOk : detach_failed(env, index, st);
}

// The index of the attached volume called @name: one of them.
std::optional<uint32_t> find_attached(const Env &env, const std::vector<mdr::VolumeInfo> &vols,
				      const std::string &name)
{
	std::optional<uint32_t> index;

	for (const mdr::VolumeInfo &v : vols) {
		if (v.name != name)
			continue;
		if (index) {
			failure(env, "detach", -EINVAL,
				"volume '" + name + "' is attached from more than one node",
				"name it by device: " + device_path(*index) + " or " +
					device_path(v.index));
			return std::nullopt;
		}
		index = v.index;
	}
	if (!index)
		failure(env, "detach", -ENXIO, "volume '" + name + "'",
			"it is not attached here; see 'mdctl list'");
	return index;
}

int cmd_detach(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {
		{kOptForce, "force", 'f', false}, {kOptAllOf, "all-of", 'a', true},
		{kOptTiming, "timing", 'T', false}, {kOptJobs, "jobs", 'j', true}, kHelpOption,
	};
	bool force = false, timing = false;
	std::optional<unsigned> jobs;
	std::optional<std::string> all_of;
	Common c;

	if (auto done = parse_common(args, specs, kDetachUsage, env, c))
		return *done;
	for (const mdr::ParsedOption &opt : c.options) {
		if (opt.id == kOptForce)
			force = true;
		else if (opt.id == kOptTiming)
			timing = true;
		else if (opt.id == kOptJobs) {
			unsigned n = 0;
			if (auto done = parse_jobs(env, opt.value, n))
				return *done;
			jobs = n;
		} else
			all_of = std::string(opt.value);
	}
	if (all_of && !c.operands.empty())
		return unexpected_argument(env, c.operands[0]);
	if ((timing || jobs) && !all_of)
		return usage_error(env, std::string(timing ? "--timing" : "--jobs") +
					" goes with --all-of");
	if (!all_of && c.operands.empty())
		return usage_error(env, "detach needs a device (/dev/mdrN, mdrN or N) or a "
					"volume name");
	if (c.operands.size() > 1)
		return unexpected_argument(env, c.operands[1]);

	std::vector<BatchLine> lines;
	std::optional<uint32_t> index;
	if (all_of) {
		if (auto done = read_batch(env, "detach", *all_of, lines))
			return *done;
	} else {
		index = parse_volume_device(c.operands[0]);
		if (!index && !mdr::wire::valid_volume_name(c.operands[0]))
			return usage_error(env, "bad device or volume name '" +
						std::string(c.operands[0]) +
						"': expected /dev/mdrN, mdrN, N or a name");
		if (!index)
			lines.push_back({std::string(c.operands[0]), {}, 0});
	}

	auto control = open_control(env, "detach");
	if (!control)
		return kExitFailure;
	if (index)
		return detach_one(env, *control, *index, force);

	auto vols = control->list();
	if (!vols.ok())
		return failure(env, "detach", vols);
	std::vector<uint32_t> indexes;
	for (const BatchLine &b : lines) {
		std::optional<uint32_t> i = find_attached(env, vols.value(), b.name);
		if (!i)
			return kExitFailure;
		indexes.push_back(*i);
	}
	auto t0 = std::chrono::steady_clock::now();
	std::vector<std::optional<mdr::Status>> results(indexes.size());
	std::vector<double> ioctl_s(indexes.size());
	run_jobs(indexes.size(), jobs.value_or(kDefaultJobs), [&](size_t i) {
		auto t = std::chrono::steady_clock::now();
		results[i] = control->detach(indexes[i], 0, force);
		ioctl_s[i] = since(t);
		return results[i]->ok();
	});
	for (size_t i = 0; i < results.size(); i++)
		if (results[i] && !results[i]->ok())
			return detach_failed(env, indexes[i], *results[i]);
	if (timing) {
		print_timing(env, "detach", "detach", indexes.size(), since(t0));
		print_latencies(env, "detach", "detach ioctl", std::move(ioctl_s));
	}
	return kExitOk;
}

// ---- list, stats ---------------------------------------------------------

constexpr std::string_view kListUsage =
	"Usage: mdctl list [-o|--output table|json]\n"
	"\n"
	"List the attached volumes: device, volume id and name, size, extent size,\n"
	"storage node, tenant, state (active, lease-expired, dying), openers,\n"
	"cached extents, IOs in flight and the location cache hit rate.\n"
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

void json_optional(mdr::JsonWriter &json, std::string_view key, std::optional<uint64_t> v)
{
	json.key(key);
	if (v)
		json.value(*v);
	else
		json.null();
}

int cmd_list(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {kOutputOption, kHelpOption};
	Common c;

	if (auto done = parse_common(args, specs, kListUsage, env, c))
		return *done;
	if (!c.operands.empty())
		return unexpected_argument(env, c.operands[0]);

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
			json.begin_object()
				.key("device").value(device_path(v.index))
				.key("index").value(v.index)
				.key("volume_id").value(v.volume_id)
				.key("name").value(v.name)
				.key("size").value(v.size)
				.key("extent_size").value(uint64_t{1} << v.extent_shift)
				.key("node_address").value(node_address(v.target))
				.key("node_port").value(node_port(v.target))
				.key("tenant").value(v.target.tenant)
				.key("host_id").value(v.target.host_id)
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
		     {"OPEN", true}, {"CACHED", true}, {"INFLIGHT", true}, {"HIT_RATE", true}});
	for (const mdr::VolumeInfo &v : volumes.value()) {
		std::string state(volume_state(v.flags));
		if (v.flags & MDR_VOL_READONLY)
			state += ",ro";
		table.add({device_path(v.index), std::to_string(v.volume_id),
			   v.name.empty() ? "-" : v.name, format_size(v.size),
			   format_size(uint64_t{1} << v.extent_shift), format_node(v.target),
			   std::to_string(v.target.tenant), state, std::to_string(v.open_count),
			   std::to_string(v.cached), std::to_string(v.inflight),
			   format_hit_rate(cache_counters(env, v.index))});
	}
	table.print(env.out);
	return kExitOk;
}

constexpr std::string_view kStatsUsage =
	"Usage: mdctl stats DEV [-o|--output table|json]\n"
	"\n"
	"Show every attribute of /sys/block/mdrN/mdroute/ for the volume at DEV\n"
	"(/dev/mdrN, mdrN or N): what it is (volume_id, name, extent_size, tenant,\n"
	"lease) and its counters. Reading them needs no privilege.\n"
	"\n"
	"Options:\n"
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

int cmd_stats(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {kOutputOption, kHelpOption};
	Common c;

	if (auto done = parse_common(args, specs, kStatsUsage, env, c))
		return *done;
	if (c.operands.empty())
		return usage_error(env, "stats needs a device (/dev/mdrN, mdrN or N)");
	if (c.operands.size() > 1)
		return unexpected_argument(env, c.operands[1]);
	std::optional<uint32_t> index = parse_volume_device(c.operands[0]);
	if (!index)
		return usage_error(env, "bad device '" + std::string(c.operands[0]) +
					"': expected /dev/mdrN, mdrN or N");

	const std::string dir = sysfs_dir(*index);
	auto names = env.host.list_dir(dir);
	if (!names.ok())
		return failure(env, "stats", names.error(), device_path(*index),
			       names.error() == -ENOENT
				       ? "no volume is attached there; see 'mdctl list'"
				       : std::string_view());
	std::ranges::sort(names.value());

	// name -> value as read, without the newline
	std::vector<std::pair<std::string, std::string>> attrs;
	for (const std::string &name : names.value()) {
		auto text = env.host.read_file(dir + '/' + name);
		if (!text.ok())
			return failure(env, "stats", text.error(), dir + '/' + name);
		std::string value = std::move(text).value();
		if (value.ends_with('\n'))
			value.pop_back();
		attrs.emplace_back(name, std::move(value));
	}

	auto is_size = [](std::string_view name) {
		return name.ends_with("_bytes") || name == "extent_size";
	};
	if (c.format == Format::json) {
		mdr::JsonWriter json;
		json.begin_object()
			.key("device").value(device_path(*index))
			.key("index").value(*index)
			.key("stats").begin_object();
		for (const auto &[name, value] : attrs) {
			json.key(name);
			std::optional<uint64_t> n = parse_number<uint64_t>(value);
			if (n && name != "name" && !value.starts_with("0x"))
				json.value(*n);
			else
				json.value(value);
		}
		json.end_object().end_object();
		env.out << json.str() << '\n';
		return kExitOk;
	}

	Table table({{"ATTRIBUTE", false}, {"VALUE", true}});
	for (const auto &[name, value] : attrs) {
		std::optional<uint64_t> n = parse_number<uint64_t>(value);
		table.add({name, n && is_size(name) ? format_size(*n) : value});
	}
	table.print(env.out);
	return kExitOk;
}

int cmd_help(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {kHelpOption};
	Common c;

	if (auto done = parse_common(args, specs, {}, env, c); done && *done != kExitOk)
		return *done;
	if (!c.operands.empty())
		return unexpected_argument(env, c.operands.front());

	env.out << "Usage: mdctl <command> [options]\n"
		   "\n"
		   "Attach mdroute volumes on this host (through "
		<< mdr::kControlPath << ")\n"
		   "and administer storage nodes (mdnode).\n"
		   "\n"
		   "Commands:\n";
	for (const Command &cmd : kCommands)
		env.out << "  " << cmd.name << std::string(kNameColumn - cmd.name.size(), ' ')
			<< cmd.summary << '\n';
	env.out << "\n"
		   "Run 'mdctl <command> --help' for the options of a command.\n"
		   "The storage node is --node, else $MDCTL_NODE, else 'node' in\n"
		   "/etc/mdroute/mdctl.conf ($MDCTL_CONFIG names another file).\n"
		   "Exit status: 0 ok, 1 failure, 2 usage error.\n";
	return kExitOk;
}

int dispatch(Args args, const Env &env)
{
	if (args.empty())
		return usage_error(env, "no command given");

	std::string_view name = args.front();
	if (name == "-h" || name == "--help")
		name = "help";
	for (const Command &cmd : kCommands)
		if (cmd.name == name)
			return cmd.run(args.subspan(1), env);

	if (name.starts_with('-'))
		return usage_error(env, "unknown option '" + std::string(name) + "'");
	return usage_error(env, "unknown command '" + std::string(name) + "'");
}

} // namespace

int run(int argc, const char *const argv[], const Env &env)
{
	std::vector<std::string_view> args;

	for (int i = 1; i < argc; i++)
		args.emplace_back(argv[i]);
	int status = dispatch(args, env);

	// Output cut short (a full disk, a closed pipe) must not pass as success.
	if (!env.out.flush()) {
		env.err << "mdctl: cannot write output\n";
		return kExitFailure;
	}
	return status;
}

} // namespace mdctl
