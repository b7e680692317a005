// SPDX-License-Identifier: GPL-2.0
//
// command.cc - the command table that the command files fill, and the
// runner of a group's subcommands.
#include "mdctl/command.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "mdctl/cli.h"

namespace mdctl {

namespace {

// Filled before main() by the Registrations: a function's static, so it
// exists whichever file registers first.
std::vector<Command> &table()
{
	static std::vector<Command> commands;
	return commands;
}

[[noreturn]] void bad_registration(const Command &c, const char *what)
{
	std::fprintf(stderr, "mdctl: command '%.*s%s%.*s' %s\n",
		     static_cast<int>(c.group.size()), c.group.data(), c.group.empty() ? "" : " ",
		     static_cast<int>(c.name.size()), c.name.data(), what);
	std::abort();
}

} // namespace

Registration::Registration(const Command &command)
{
	for (const Command &c : table()) {
		if (c.group != command.group)
			continue;
		if (c.name == command.name)
			bad_registration(command, "is registered twice");
		if (c.place == command.place)
			bad_registration(command, "takes the place of another in the help");
	}
	table().push_back(command);
}

std::vector<const Command *> commands_of(std::string_view group_name)
{
	std::vector<const Command *> out;

	for (const Command &c : table())
		if (c.group == group_name)
			out.push_back(&c);
	std::ranges::sort(out, {}, &Command::place);
	return out;
}

const Command *find_command(std::string_view group_name, std::string_view name)
{
	for (const Command &c : table())
		if (c.group == group_name && c.name == name)
			return &c;
	return nullptr;
}

void print_commands(std::ostream &out, std::string_view group_name)
{
	for (const Command *c : commands_of(group_name))
		out << "  " << c->name << std::string(kNameColumn - c->name.size(), ' ')
		    << c->summary << '\n';
}

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

} // namespace mdctl
