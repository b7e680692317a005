// SPDX-License-Identifier: GPL-2.0
//
// bind.cc - mdctl bind, unbind and devices: the host's backing-device
// bindings, through the control device. attach binds the devices of a
// volume itself (attach.cc).
#include <cerrno>
#include <optional>
#include <string>

#include "lib/client/control.h"
#include "lib/util/json.h"
#include "mdctl/cli.h"
#include "mdctl/parse.h"

namespace mdctl {

namespace {

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
	Common c;

	if (auto done = parse_exactly(args, kOutputOptions, kBindUsage, env, c, 1,
				      "bind needs ID=/dev/X"))
		return *done;
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

	if (auto done =
		    parse_exactly(args, specs, kUnbindUsage, env, c, 1, "unbind needs a device id"))
		return *done;
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
	Common c;

	if (auto done = parse_exactly(args, kOutputOptions, kDevicesUsage, env, c, 0))
		return *done;

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

const Registration kRegistered[] = {
	{top(Place::bind, "bind", "bind a backing device id to a local block device", cmd_bind)},
	{top(Place::unbind, "unbind", "unbind a backing device id", cmd_unbind)},
	{top(Place::devices, "devices", "list the bound backing devices", cmd_devices)},
};

} // namespace

} // namespace mdctl
