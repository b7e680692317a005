// SPDX-License-Identifier: GPL-2.0
//
// cli.cc - the steps every mdctl command shares.
#include "mdctl/cli.h"

#include <cerrno>
#include <utility>

#include "lib/util/errors.h"
#include "lib/wire/wire.h"
#include "mdctl/parse.h"

namespace mdctl {

int usage_error(const Env &env, std::string_view message)
{
	env.err << "mdctl: " << message << "\nTry 'mdctl --help'.\n";
	return kExitUsage;
}

int unexpected_argument(const Env &env, std::string_view arg)
{
	return usage_error(env, "unexpected argument '" + std::string(arg) + "'");
}

int failure(const Env &env, std::string_view command, int err, std::string_view context,
	    std::string_view hint)
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

std::optional<int> parse_timeout(const Env &env, std::string_view text, int &status)
{
	std::optional<uint32_t> s = parse_id<uint32_t>(text);

	if (!s || *s > kTimeoutMaxS) {
		status = usage_error(env, "bad timeout '" + std::string(text) + "': expected 1 to " +
					  std::to_string(kTimeoutMaxS) + " seconds");
		return std::nullopt;
	}
	return static_cast<int>(*s) * 1000;
}

std::optional<int> operands(const Env &env, const Common &c, size_t n, std::string_view missing)
{
	if (c.operands.size() < n)
		return usage_error(env, missing);
	if (c.operands.size() > n)
		return unexpected_argument(env, c.operands[n]);
	return std::nullopt;
}

std::optional<int> parse_exactly(Args args, std::span<const mdr::OptionSpec> specs,
				 std::string_view usage, const Env &env, Common &c, size_t n,
				 std::string_view missing)
{
	if (auto done = parse_common(args, specs, usage, env, c))
		return done;
	return operands(env, c, n, missing);
}

std::optional<int> check_volume_name(const Env &env, std::string_view name)
{
	if (mdr::wire::valid_volume_name(name))
		return std::nullopt;
	return usage_error(env, "bad volume name '" + std::string(name) +
				"': use 1 to 63 of A-Z a-z 0-9 . _ -");
}

std::optional<int> volume_operand(const Env &env, const Common &c, std::string_view missing)
{
	if (auto done = operands(env, c, 1, missing))
		return done;
	return check_volume_name(env, c.operands[0]);
}

namespace {

constexpr std::string_view kModuleHint = "is the mdroute module loaded? try 'modprobe mdroute'";

// The control device once open, or its failure told.
std::optional<mdr::Control> opened(const Env &env, std::string_view command,
				   mdr::Result<mdr::Control> control)
{
	if (control.ok())
		return std::move(control).value();
	failure(env, command, control.error(), mdr::kControlPath,
		control.error() == -ENOENT ? kModuleHint : std::string_view());
	return std::nullopt;
}

} // namespace

std::optional<mdr::Control> open_control(const Env &env, std::string_view command)
{
	return opened(env, command, mdr::Control::open(env.sys));
}

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
	return opened(env, command, std::move(control));
}

int bad_binding(const Env &env, std::string_view text)
{
	return usage_error(env, "bad binding '" + std::string(text) +
				"': expected ID=/dev/X with ID a non-zero number");
}

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

} // namespace mdctl
