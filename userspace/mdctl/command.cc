// SPDX-License-Identifier: GPL-2.0
//
// command.cc - the command table that the command files fill.
#include "mdctl/command.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>


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

} // namespace mdctl
