// SPDX-License-Identifier: GPL-2.0
//
// cli.h - the steps every mdctl command shares: exit statuses, usage errors
// and failures as operators read them, the options common to all commands
// and their parser, and the control device. Output is in output.h, the
// storage node in session.h.
#ifndef MDCTL_CLI_H
#define MDCTL_CLI_H

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/client/control.h"
#include "lib/util/args.h"
#include "lib/util/result.h"
#include "mdctl/command.h"
#include "mdctl/output.h"

namespace mdctl {

enum ExitStatus { kExitOk = 0, kExitFailure = 1, kExitUsage = 2 };

// "mdctl: MESSAGE" and the pointer to --help, on stderr: kExitUsage.
int usage_error(const Env &env, std::string_view message);

int unexpected_argument(const Env &env, std::string_view arg);

// "mdctl: version failed: Permission denied (EACCES)", and a hint if one
// helps: kExitFailure. @context names what failed when the command alone
// does not ("/dev/sdz: No such file or directory (ENOENT)").
int failure(const Env &env, std::string_view command, int err,
	    std::string_view context = {}, std::string_view hint = {});

template <typename T>
int failure(const Env &env, std::string_view command, const mdr::Result<T> &result,
	    std::string_view hint = {})
{
	return failure(env, command, result.error(), result.message(), hint);
}

// The ids of the options every command may take; parse_common() keeps the
// others, numbered from kOptOwn by each command file, for the command.
enum CommonOption { kOptHelp, kOptOutput, kOptNode, kOptKeyFile, kOptOwn = 100 };

inline constexpr mdr::OptionSpec kHelpOption = {kOptHelp, "help", 'h', false};
inline constexpr mdr::OptionSpec kOutputOption = {kOptOutput, "output", 'o', true};
inline constexpr mdr::OptionSpec kNodeOption = {kOptNode, "node", 'n', true};
inline constexpr mdr::OptionSpec kKeyFileOption = {kOptKeyFile, "key-file", 'k', true};

// The options of a command that has none of its own.
inline constexpr mdr::OptionSpec kOutputOptions[] = {kOutputOption, kHelpOption};

// A command line after parse_common().
struct Common {
	Format format = Format::table;
	std::optional<std::string> node;		// --node
	std::optional<std::string> key_file;		// --key-file
	std::vector<mdr::ParsedOption> options;		// the command's own
	std::vector<std::string_view> operands;
};

// Parses the options of a command that knows -h and maybe -o, --node and
// --key-file. Returns an exit status when the command is done (help shown,
// usage error).
std::optional<int> parse_common(Args args, std::span<const mdr::OptionSpec> specs,
				std::string_view usage, const Env &env, Common &common);

// Exactly @n operands, else a usage error (@missing when too few).
std::optional<int> operands(const Env &env, const Common &c, size_t n, std::string_view missing);

// parse_common(), then exactly @n operands.
std::optional<int> parse_exactly(Args args, std::span<const mdr::OptionSpec> specs,
				 std::string_view usage, const Env &env, Common &c, size_t n,
				 std::string_view missing = {});

// --timeout SECONDS (1 to kTimeoutMaxS), in milliseconds; nullopt once
// the usage error is told, its exit status in @status.
inline constexpr int kTimeoutMaxS = 86400;
std::optional<int> parse_timeout(const Env &env, std::string_view text, int &status);

// A usage error unless @name is a valid volume name.
std::optional<int> check_volume_name(const Env &env, std::string_view name);

// Exactly one operand, a valid volume name (@missing when there is none).
std::optional<int> volume_operand(const Env &env, const Common &c, std::string_view missing);

inline uint64_t extent_bytes(uint32_t shift)
{
	return uint64_t{1} << shift;
}

// The control device, or nullopt once the failure is told.
std::optional<mdr::Control> open_control(const Env &env, std::string_view command);

// The same for attach, which loads the module first when it is missing
// (no control device): "loads the module if needed".
std::optional<mdr::Control> open_control_loading(const Env &env, std::string_view command);

// The usage error of an ID=/dev/X that does not parse.
int bad_binding(const Env &env, std::string_view text);

// A block device to bind, looked up before anything changes; nullopt once
// the failure is told.
std::optional<mdr::DevNum> block_device(const Env &env, std::string_view command,
					const std::string &path);

} // namespace mdctl

#endif // MDCTL_CLI_H
