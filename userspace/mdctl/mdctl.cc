// SPDX-License-Identifier: GPL-2.0
//
// mdctl.cc - the commands of mdctl. Each is one function listed in
// kCommands; it prints a table by default or, with -o json, one JSON object
// whose snake_case keys are stable.
#include "mdctl/mdctl.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <arpa/inet.h>
#include <linux/mdroute_wire.h>
#include <sys/socket.h>

#include "lib/args.h"
#include "lib/errors.h"
#include "lib/json.h"
#include "lib/release.h"

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
int cmd_attach(Args args, const Env &env);
int cmd_detach(Args args, const Env &env);
int cmd_list(Args args, const Env &env);
int cmd_stats(Args args, const Env &env);
int cmd_bind(Args args, const Env &env);
int cmd_unbind(Args args, const Env &env);
int cmd_devices(Args args, const Env &env);
int cmd_help(Args args, const Env &env);

constexpr Command kCommands[] = {
	{"version", "show the versions of mdctl and of the loaded module", cmd_version},
	{"attach", "attach a volume as /dev/mdrN", cmd_attach},
	{"detach", "detach /dev/mdrN", cmd_detach},
	{"list", "list the attached volumes", cmd_list},
	{"stats", "show the counters of /dev/mdrN", cmd_stats},
	{"bind", "bind a backing device id to a local block device", cmd_bind},
	{"unbind", "unbind a backing device id", cmd_unbind},
	{"devices", "list the bound backing devices", cmd_devices},
	{"help", "show this help", cmd_help},
};

constexpr size_t kNameColumn = 10;	// width of the name column in help
static_assert(std::ranges::all_of(kCommands, [](const Command &cmd) {
	return cmd.name.size() < kNameColumn;
}));

enum OptionId { kOptHelp, kOptOutput };
constexpr mdr::OptionSpec kHelpOption = {kOptHelp, "help", 'h', false};
constexpr mdr::OptionSpec kOutputOption = {kOptOutput, "output", 'o', true};

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

std::string format_abi(uint32_t major, uint32_t minor, uint32_t patch)
{
	return std::to_string(major) + '.' + std::to_string(minor) + '.' + std::to_string(patch);
}

std::string own_abi()
{
	return format_abi(MDR_IOCTL_VERSION_MAJOR, MDR_IOCTL_VERSION_MINOR,
			  MDR_IOCTL_VERSION_PATCH);
}

std::string module_abi(const mdr::ModuleVersion &module)
{
	return format_abi(module.major, module.minor, module.patch);
}

void print_version_table(const Env &env, const std::optional<mdr::ModuleVersion> &module)
{
	env.out << "mdctl      " << mdr::release() << '\n'
		<< "ioctl ABI  " << own_abi() << '\n'
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
	"Show the release of mdctl and the ioctl interface version it speaks,\n"
	"and the release, ioctl interface version and wire protocol version of\n"
	"the loaded mdroute module.\n"
	"\n"
	"Options:\n"
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

int cmd_version(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {kOutputOption, kHelpOption};
	auto parsed = mdr::parse_args(args, specs);
	Format format = Format::table;

	if (!parsed.ok())
		return usage_error(env, parsed.message());
	for (const mdr::ParsedOption &opt : parsed.value().options) {
		if (opt.id == kOptHelp) {
			env.out << kVersionUsage;
			return kExitOk;
		}
		std::optional<Format> f = parse_format(opt.value);
		if (!f)
			return usage_error(env, "unknown output format '" +
						std::string(opt.value) + "'");
		format = *f;
	}
	if (!parsed.value().operands.empty())
		return unexpected_argument(env, parsed.value().operands.front());

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

	if (format == Format::json)
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

// ---- parsing -------------------------------------------------------------

// A decimal number, or hexadecimal after "0x"; nothing else around it.
template <typename T>
std::optional<T> parse_number(std::string_view text)
{
	int base = 10;
	T n{};

	if (text.starts_with("0x") || text.starts_with("0X")) {
		text.remove_prefix(2);
		base = 16;
	}
	if (text.empty())
		return std::nullopt;
	auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n, base);
	if (ec != std::errc() || end != text.data() + text.size())
		return std::nullopt;
	return n;
}

// An id that the module refuses when 0: a backing device or a volume.
template <typename T>
std::optional<T> parse_id(std::string_view text)
{
	std::optional<T> id = parse_number<T>(text);

	return id && *id ? id : std::nullopt;
}

struct BindSpec {
	uint32_t dev_id;
	std::string path;
};

// "ID=/dev/X": a device id and an absolute path.
std::optional<BindSpec> parse_bind_spec(std::string_view text)
{
	size_t eq = text.find('=');

	if (eq == text.npos)
		return std::nullopt;
	std::optional<uint32_t> id = parse_id<uint32_t>(text.substr(0, eq));
	std::string_view path = text.substr(eq + 1);
	if (!id || !path.starts_with('/'))
		return std::nullopt;
	return BindSpec{*id, std::string(path)};
}

int bad_binding(const Env &env, std::string_view text)
{
	return usage_error(env, "bad binding '" + std::string(text) +
				"': expected ID=/dev/X with ID a non-zero number");
}

// "ADDR[:PORT]": IPv4 ("192.0.2.2:4791"), IPv6 in brackets with a port
// ("[2001:db8::2]:4791") or without one, bare IPv6 ("2001:db8::2"). No port
// is port 0, which the module reads as MDR_WIRE_PORT.
std::optional<mdr::Target> parse_node(std::string_view text)
{
	mdr::Target t;
	std::string_view addr = text, port;

	if (text.starts_with('[')) {
		size_t close = text.find(']');
		if (close == text.npos)
			return std::nullopt;
		addr = text.substr(1, close - 1);
		std::string_view rest = text.substr(close + 1);
		if (!rest.empty()) {
			if (!rest.starts_with(':'))
				return std::nullopt;
			port = rest.substr(1);
			if (port.empty())
				return std::nullopt;
		}
		t.family = AF_INET6;
	} else if (std::count(text.begin(), text.end(), ':') > 1) {
		t.family = AF_INET6;
	} else {
		size_t colon = text.find(':');
		if (colon != text.npos) {
			addr = text.substr(0, colon);
			port = text.substr(colon + 1);
			if (port.empty())
				return std::nullopt;
		}
		t.family = AF_INET;
	}

	// inet_pton takes no scope ("%eth0"), which the ioctl could not carry.
	if (inet_pton(t.family, std::string(addr).c_str(), t.addr.data()) != 1)
		return std::nullopt;
	if (!port.empty()) {
		std::optional<uint16_t> p = parse_id<uint16_t>(port);
		if (!p || port.starts_with("0x"))
			return std::nullopt;
		t.port = *p;
	}
	return t;
}

// "/dev/mdrN", "mdrN" or "N".
std::optional<uint32_t> parse_volume_device(std::string_view text)
{
	if (text.starts_with("/dev/"))
		text.remove_prefix(5);
	if (text.starts_with("mdr"))
		text.remove_prefix(3);
	if (text.empty() || text.starts_with("0x") ||
	    (text.size() > 1 && text.starts_with('0')))
		return std::nullopt;
	return parse_number<uint32_t>(text);
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

// Parses the options of a command that knows -h and maybe -o. Returns an
// exit status when the command is done (help shown, usage error).
struct Common {
	Format format = Format::table;
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

// ---- attach, detach ------------------------------------------------------

enum AttachOption { kOptVolumeId = 100, kOptNode, kOptTenant, kOptHostId, kOptBind, kOptReadOnly };

constexpr std::string_view kAttachUsage =
	"Usage: mdctl attach --volume-id ID --node ADDR[:PORT] [--tenant T]\n"
	"                    [--host-id N] [--bind ID=/dev/X]... [--read-only]\n"
	"                    [-o|--output table|json]\n"
	"\n"
	"Attach volume ID, whose metadata the storage node ADDR serves, as a new\n"
	"block device and print its path (/dev/mdrN). Each --bind binds a backing\n"
	"device id to a local block device first, as 'mdctl bind' does; an id\n"
	"bound to that same block device already is left as it is. If the attach\n"
	"fails, the bindings it made are undone.\n"
	"\n"
	"Options:\n"
	"  -i, --volume-id ID   the volume (non-zero)\n"
	"  -n, --node ADDR[:PORT]\n"
	"                       storage node: IPv4, IPv6 or [IPv6]:PORT; the port\n"
	"                       defaults to 4791. Default: $MDCTL_NODE\n"
	"  -t, --tenant T       tenant of the volume (default 0)\n"
	"  -H, --host-id N      this host's id at the storage node (non-zero).\n"
	"                       Default: derived from /etc/machine-id: the first 8\n"
	"                       bytes, big-endian, of HMAC-SHA256 keyed with the\n"
	"                       machine id over \"mdroute-host-id\"\n"
	"  -b, --bind ID=/dev/X bind backing device ID to /dev/X (repeatable)\n"
	"  -r, --read-only      attach read-only\n"
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n"
	"\n"
	"Attaching by volume name through the storage node is not implemented yet.\n";

// Attach failures that say more with the node's address.
std::string attach_hint(int err, const mdr::Target &target)
{
	switch (err) {
	case -ECONNREFUSED:
	case -ETIMEDOUT:
	case -EHOSTUNREACH:
	case -ENETUNREACH:
	case -ECONNRESET:
	case -EADDRNOTAVAIL:
		return "is mdnode running on " + format_node(target) + "?";
	case -EEXIST:
		return "the volume is attached already; see 'mdctl list'";
	case -ENOENT:
		return "does the volume exist on " + format_node(target) + "?";
	default:
		return {};
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

int cmd_attach(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {
		{kOptVolumeId, "volume-id", 'i', true},
		{kOptNode, "node", 'n', true},
		{kOptTenant, "tenant", 't', true},
		{kOptHostId, "host-id", 'H', true},
		{kOptBind, "bind", 'b', true},
		{kOptReadOnly, "read-only", 'r', false},
		kOutputOption,
		kHelpOption,
	};
	std::optional<uint64_t> volume_id, host_id;
	std::optional<std::string> node;
	std::vector<BindSpec> binds;
	uint32_t tenant = 0;
	bool readonly = false;
	Common c;

	if (auto done = parse_common(args, specs, kAttachUsage, env, c))
		return *done;
	for (const mdr::ParsedOption &opt : c.options) {
		std::string value(opt.value);
		switch (opt.id) {
		case kOptVolumeId:
			volume_id = parse_id<uint64_t>(value);
			if (!volume_id)
				return usage_error(env, "bad volume id '" + value + "'");
			break;
		case kOptNode:
			node = value;
			break;
		case kOptTenant: {
			std::optional<uint32_t> t = parse_number<uint32_t>(value);
			if (!t)
				return usage_error(env, "bad tenant '" + value + "'");
			tenant = *t;
			break;
		}
		case kOptHostId:
			host_id = parse_id<uint64_t>(value);
			if (!host_id)
				return usage_error(env, "bad host id '" + value + "'");
			break;
		case kOptBind: {
			std::optional<BindSpec> spec = parse_bind_spec(value);
			if (!spec)
				return bad_binding(env, value);
			for (const BindSpec &other : binds)
				if (other.dev_id == spec->dev_id)
					return usage_error(env, "device " +
								std::to_string(spec->dev_id) +
								" is bound twice");
			binds.push_back(std::move(*spec));
			break;
		}
		case kOptReadOnly:
			readonly = true;
			break;
		}
	}
	if (!c.operands.empty())
		return usage_error(env, "attaching by volume name is not implemented yet: "
					"use --volume-id ID");
	if (!volume_id)
		return usage_error(env, "attach needs --volume-id ID");
	if (!node) {
		node = env.host.getenv("MDCTL_NODE");
		if (!node || node->empty())
			return usage_error(env, "no storage node: use --node ADDR[:PORT] "
						"or set MDCTL_NODE");
	}
	std::optional<mdr::Target> target = parse_node(*node);
	if (!target)
		return usage_error(env, "bad node address '" + *node +
					"': expected IPv4[:PORT], IPv6 or [IPv6]:PORT");
	target->tenant = tenant;

	if (!host_id) {
		auto machine_id = env.host.read_file(kMachineIdPath);
		if (!machine_id.ok())
			return failure(env, "attach", machine_id.error(), kMachineIdPath,
				       "pass --host-id N");
		auto derived = host_id_from_machine_id(machine_id.value());
		if (!derived.ok())
			return failure(env, "attach", derived.error(),
				       std::string(kMachineIdPath) + ": " + derived.message(),
				       "pass --host-id N");
		host_id = derived.value();
	}
	target->host_id = *host_id;

	// Every block device is looked up before anything changes.
	std::vector<mdr::DevNum> devs;
	for (const BindSpec &b : binds) {
		std::optional<mdr::DevNum> dev = block_device(env, "attach", b.path);
		if (!dev)
			return kExitFailure;
		devs.push_back(*dev);
	}

	auto control = open_control(env, "attach");
	if (!control)
		return kExitFailure;

	std::vector<uint32_t> bound;	// what to undo if the attach fails
	for (size_t i = 0; i < binds.size(); i++) {
		auto r = control->bind(binds[i].dev_id, devs[i]);
		if (r.ok()) {
			bound.push_back(binds[i].dev_id);
			continue;
		}
		// Bound to the same block device already (another volume's
		// attach did it): use it, and leave it bound.
		auto same = [&](const mdr::DeviceInfo &d) {
			return d.dev_id == binds[i].dev_id && d.dev.major == devs[i].major &&
			       d.dev.minor == devs[i].minor;
		};
		if (r.error() == -EEXIST) {
			auto all = control->dev_list();
			if (all.ok() && std::ranges::any_of(all.value(), same))
				continue;
		}
		std::string context = "bind " + std::to_string(binds[i].dev_id) + '=' +
				      binds[i].path;
		if (!r.message().empty())
			context += ": " + r.message();
		failure(env, "attach", r.error(), context,
			r.error() == -EEXIST ? "the id is bound to another block device; "
					       "see 'mdctl devices'"
					     : std::string_view());
		unbind_all(env, *control, bound);
		return kExitFailure;
	}

	auto attached = control->attach(*volume_id, *target, readonly);
	if (!attached.ok()) {
		failure(env, "attach", attached, attach_hint(attached.error(), *target));
		unbind_all(env, *control, bound);
		return kExitFailure;
	}

	const mdr::VolumeInfo &v = attached.value();
	if (c.format == Format::json) {
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
	} else {
		env.out << device_path(v.index) << '\n';
	}
	return kExitOk;
}

constexpr std::string_view kDetachUsage =
	"Usage: mdctl detach DEV [--force]\n"
	"\n"
	"Detach the volume at DEV (/dev/mdrN, mdrN or N). Refused while the device\n"
	"is open, unless --force: then IO waiting for metadata and new IO fail\n"
	"with EIO, IO already at a backing device completes, and the device goes\n"
	"away.\n"
	"\n"
	"Options:\n"
	"  -f, --force          detach even if the device is open\n"
	"  -h, --help           show this help\n";

enum DetachOption { kOptForce = 100 };

int cmd_detach(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {{kOptForce, "force", 'f', false},
						   kHelpOption};
	Common c;

	if (auto done = parse_common(args, specs, kDetachUsage, env, c))
		return *done;
	bool force = !c.options.empty();	// --force is the only other option
	if (c.operands.empty())
		return usage_error(env, "detach needs a device (/dev/mdrN, mdrN or N)");
	if (c.operands.size() > 1)
		return unexpected_argument(env, c.operands[1]);
	std::optional<uint32_t> index = parse_volume_device(c.operands[0]);
	if (!index)
		return usage_error(env, "bad device '" + std::string(c.operands[0]) +
					"': expected /dev/mdrN, mdrN or N");

	auto control = open_control(env, "detach");
	if (!control)
		return kExitFailure;
	mdr::Status st = control->detach(*index, 0, force);
	if (!st.ok()) {
		std::string hint;
		if (st.error() == -EBUSY)
			hint = "the device is open; close it, or use --force";
		else if (st.error() == -ENXIO)
			hint = "no volume is attached there; see 'mdctl list'";
		return failure(env, "detach", st.error(),
			       st.message().empty() ? device_path(*index) : st.message(), hint);
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
	auto parsed = mdr::parse_args(args, specs);

	if (!parsed.ok())
		return usage_error(env, parsed.message());
	if (!parsed.value().operands.empty())
		return unexpected_argument(env, parsed.value().operands.front());

	env.out << "Usage: mdctl <command> [options]\n"
		   "\n"
		   "Administer the mdroute volume router through "
		<< mdr::kControlPath << ".\n"
		   "\n"
		   "Commands:\n";
	for (const Command &cmd : kCommands)
		env.out << "  " << cmd.name << std::string(kNameColumn - cmd.name.size(), ' ')
			<< cmd.summary << '\n';
	env.out << "\n"
		   "Run 'mdctl <command> --help' for the options of a command.\n"
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
