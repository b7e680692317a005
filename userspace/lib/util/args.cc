// SPDX-License-Identifier: GPL-2.0
//
// args.cc - command line options.
#include "lib/util/args.h"

#include <cerrno>
#include <string>

namespace mdr {

namespace {

const OptionSpec *find_long(std::span<const OptionSpec> specs, std::string_view name)
{
	for (const OptionSpec &spec : specs)
		if (spec.name == name)
			return &spec;
	return nullptr;
}

const OptionSpec *find_short(std::span<const OptionSpec> specs, char name)
{
	for (const OptionSpec &spec : specs)
		if (spec.short_name != 0 && spec.short_name == name)
			return &spec;
	return nullptr;
}

Error unknown(std::string_view option)
{
	return Error(-EINVAL, "unknown option '" + std::string(option) + "'");
}

Error misused(std::string_view option, std::string_view problem)
{
	return Error(-EINVAL, "option '" + std::string(option) + "' " + std::string(problem));
}

} // namespace

Result<ParsedArgs> parse_args(std::span<const std::string_view> args,
			      std::span<const OptionSpec> specs)
{
	ParsedArgs parsed;

	for (size_t i = 0; i < args.size(); i++) {
		std::string_view arg = args[i];

		if (arg == "--") {
			parsed.operands.insert(parsed.operands.end(),
					       args.begin() + i + 1, args.end());
			break;
		}

		if (arg.starts_with("--")) {
			size_t eq = arg.find('=');
			bool attached = eq != arg.npos;		// --name=value
			std::string_view option = arg.substr(0, eq);
			std::string_view value = attached ? arg.substr(eq + 1) : "";
			const OptionSpec *spec = find_long(specs, option.substr(2));

			if (!spec)
				return unknown(option);
			if (!spec->takes_value && attached)
				return misused(option, "takes no value");
			if (spec->takes_value && !attached) {
				if (i + 1 == args.size())
					return misused(option, "needs a value");
				value = args[++i];
			}
			parsed.options.push_back({spec->id, value});
			continue;
		}

		if (arg.size() < 2 || arg[0] != '-') {
			parsed.operands.push_back(arg);
			continue;
		}

		// One or more short options; one that takes a value ends the group.
		for (size_t j = 1; j < arg.size(); j++) {
			const OptionSpec *spec = find_short(specs, arg[j]);
			const std::string option = {'-', arg[j]};

			if (!spec)
				return unknown(option);
			if (!spec->takes_value) {
				parsed.options.push_back({spec->id, {}});
				continue;
			}
			std::string_view value = arg.substr(j + 1);
			if (value.empty()) {
				if (i + 1 == args.size())
					return misused(option, "needs a value");
				value = args[++i];
			}
			parsed.options.push_back({spec->id, value});
			break;
		}
	}
	return parsed;
}

} // namespace mdr
