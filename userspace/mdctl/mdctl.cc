// SPDX-License-Identifier: GPL-2.0
//
// mdctl.cc - mdctl's dispatch and usage: the command named first runs with
// the rest of the line (a group's subcommand with the rest after it), and
// 'mdctl help' and each group's help list the commands. The commands
// register themselves in the command table (command.h), a file per group:
//
//	version.cc	version
//	volume.cc	volume create, delete, list, info, resize
//	dev.cc		dev list
//	migrate.cc	migrate, dev drain (the moves)
//	node.cc		node stats
//	replicas.cc	node replicas, replica add, remove (a replica group)
//	hosts.cc	host add, remove, list (the node's registry), id, gen-key
//	attach.cc	attach by NAME or --volume-id; attach_all.cc: --all-of
//	detach.cc	detach
//	list.cc		list, stats
//	bind.cc		bind, unbind, devices
//
// What they share: cli.h (exit statuses, errors, common options, the
// control device), output.h (tables, JSON, units), session.h (the storage
// node and its admin session), batch.h (batch files, jobs, --timing),
// host_identity.h (this host's id and key, for attach and the host group).
//
// The options are parsed by lib/util/args.h, and each usage text is written out
// whole, not by an argument library. CLI11 (Debian's libcli11-dev 2.1.2)
// was tried and left out: its generated help has another layout, so every
// usage text would stay a literal anyway, and keeping the errors and exit
// statuses byte-identical would take a layer that reads argv again. It
// names an option missing its value by the long form ("--output: 1
// required TEXT missing" where mdctl says "option '-o' needs a value"),
// reports that before an unknown option that came first ("version --bogus
// -o"), takes "--read-only=yes" as a flag's value where mdctl refuses it,
// and refuses an empty "--key-file=" before mdctl can say "--key-file needs
// a path". That layer would be more code than the parsing it replaces.
#include "mdctl/mdctl.h"

#include <string>
#include <string_view>
#include <vector>

#include "lib/client/control.h"
#include "mdctl/cli.h"
#include "mdctl/command.h"

namespace mdctl {

namespace {

int cmd_help(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {kHelpOption};
	Common c;

	if (auto done = parse_common(args, specs, {}, env, c); done && *done != kExitOk)
		return *done;
	if (auto done = operands(env, c, 0, {}))
		return *done;

	env.out << "Usage: mdctl <command> [options]\n"
		   "\n"
		   "Attach mdroute volumes on this host (through "
		<< mdr::kControlPath << ")\n"
		   "and administer storage nodes (mdnode).\n"
		   "\n"
		   "Commands:\n";
	print_commands(env.out, {});
	env.out << "\n"
		   "Run 'mdctl <command> --help' for the options of a command.\n"
		   "The storage node is --node, else $MDCTL_NODE, else 'node' in\n"
		   "/etc/mdroute/mdctl.conf ($MDCTL_CONFIG names another file).\n"
		   "Exit status: 0 ok, 1 failure, 2 usage error.\n";
	return kExitOk;
}

// "mdctl GROUP ARGS...": the subcommand ARGS[0] with the rest, or the
// group's help; a missing or unknown subcommand is a usage error.
int run_group(std::string_view group_name, Args args, const Env &env)
{
	const std::vector<const Command *> subs = commands_of(group_name);
	std::string names;

	for (const Command *sub : subs)
		names += (names.empty() ? "" : ", ") + std::string(sub->name);
	if (args.empty())
		return usage_error(env, std::string(group_name) + " needs a subcommand: " + names);
	if (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		env.out << "Usage: mdctl " << group_name
			<< " <subcommand> [options]\n\nSubcommands:\n";
		print_commands(env.out, group_name);
		env.out << "\nRun 'mdctl " << group_name
			<< " <subcommand> --help' for its options.\n";
		return kExitOk;
	}
	if (const Command *sub = find_command(group_name, args[0]))
		return sub->run(args.subspan(1), env);
	return usage_error(env, "unknown " + std::string(group_name) + " subcommand '" +
				std::string(args[0]) + "': expected " + names);
}

const Registration kRegistered[] = {
	{top(Place::help, "help", "show this help", cmd_help)},
};

int dispatch(Args args, const Env &env)
{
	if (args.empty())
		return usage_error(env, "no command given");

	std::string_view name = args.front();
	if (name == "-h" || name == "--help")
		name = "help";
	if (const Command *cmd = find_command({}, name)) {
		if (!cmd->run)
			return run_group(cmd->name, args.subspan(1), env);
		return cmd->run(args.subspan(1), env);
	}

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
