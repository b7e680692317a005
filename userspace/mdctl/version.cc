// SPDX-License-Identifier: GPL-2.0
//
// version.cc - mdctl version: the releases and interface versions of mdctl
// and of the loaded module.
#include <cerrno>
#include <optional>
#include <string>

#include <linux/mdroute_wire.h>

#include "lib/client/control.h"
#include "lib/util/json.h"
#include "lib/util/release.h"
#include "mdctl/cli.h"

namespace mdctl {

namespace {

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
	Common c;

	if (auto done = parse_exactly(args, kOutputOptions, kVersionUsage, env, c, 0))
		return *done;

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

const Registration kRegistered[] = {
	{top(Place::version, "version",
	     "show the versions of mdctl, the module and the wire protocol", cmd_version)},
};

} // namespace

} // namespace mdctl
