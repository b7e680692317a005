// SPDX-License-Identifier: GPL-2.0
//
// mdctl.cc - the commands of mdctl. Each is one function listed in
// kCommands; it prints a table by default or, with -o json, one JSON object
// whose snake_case keys are stable.
#include "mdctl/mdctl.h"

#include <algorithm>
#include <cerrno>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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
int cmd_help(Args args, const Env &env);

constexpr Command kCommands[] = {
	{"version", "show the versions of mdctl and of the loaded module", cmd_version},
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

// "mdctl: version failed: Permission denied (EACCES)", and a hint if one helps.
int failure(const Env &env, std::string_view command, int err)
{
	env.err << "mdctl: " << command << " failed: " << mdr::describe_errno(-err) << '\n';
	if (err == -EACCES || err == -EPERM)
		env.err << "hint: run as root\n";
	return kExitFailure;
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
