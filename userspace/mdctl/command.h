// SPDX-License-Identifier: GPL-2.0
//
// command.h - mdctl's command table. Every command file registers its own
// commands with a namespace-scope Registration:
//
//	const Registration kRegistered[] = {
//		{group(Place::volume, "volume", "create, delete, ... volumes")},
//		{sub("volume", 1, "create", "create a volume", cmd_volume_create)},
//	};
//
// The dispatch (mdctl.cc) finds the top-level commands here, and the
// subcommands of a group ("mdctl volume create"). Nothing else lists the
// commands: adding one is its function and its Registration.
//
// The objects of mdctl_core are linked whole (an OBJECT library), so a
// file that only registers is never left out by the linker.
#ifndef MDCTL_COMMAND_H
#define MDCTL_COMMAND_H

#include <cstddef>
#include <ostream>
#include <span>
#include <string_view>
#include <vector>

#include "mdctl/env.h"

namespace mdctl {

// A command's arguments, after its name.
using Args = std::span<const std::string_view>;
using RunFn = int (*)(Args args, const Env &env);

inline constexpr size_t kNameColumn = 10;	// width of the name column in help

// Where each top-level command stands in 'mdctl help': the order of this
// list. A group's subcommands are ordered by the number each registers.
enum class Place {
	version, volume, dev, node, replica, host, attach, detach, list, stats, migrate, bind,
	unbind, devices, help,
};

struct Command {
	std::string_view group;		// empty at the top; else the group's name
	std::string_view name;
	std::string_view summary;	// its line in the help
	int place;			// its order in that help
	RunFn run;			// nullptr: a group of subcommands
};

namespace detail {
consteval Command checked(Command c)
{
	if (c.name.empty() || c.name.size() >= kNameColumn)
		throw "a command name must fit the name column of the help";
	return c;
}
} // namespace detail

// A top-level command that runs itself.
consteval Command top(Place place, std::string_view name, std::string_view summary, RunFn run)
{
	return detail::checked({{}, name, summary, static_cast<int>(place), run});
}

// A top-level group: "mdctl NAME <subcommand>".
consteval Command group(Place place, std::string_view name, std::string_view summary)
{
	return detail::checked({{}, name, summary, static_cast<int>(place), nullptr});
}

// Subcommand NAME of @group_name, at @place in the group's help.
consteval Command sub(std::string_view group_name, int place, std::string_view name,
		      std::string_view summary, RunFn run)
{
	return detail::checked({group_name, name, summary, place, run});
}

// Adds @command to the table at static initialisation. Two commands of
// one name or one place in a group are a bug: the program aborts.
class Registration {
public:
	Registration(const Command &command);
};

// The commands of @group_name (empty: the top level), in their order.
std::vector<const Command *> commands_of(std::string_view group_name);

const Command *find_command(std::string_view group_name, std::string_view name);

// The lines of a help that list the commands of @group_name, in their
// order: "  NAME      SUMMARY".
void print_commands(std::ostream &out, std::string_view group_name);

} // namespace mdctl

#endif // MDCTL_COMMAND_H
