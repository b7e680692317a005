// SPDX-License-Identifier: GPL-2.0
//
// args.h - command line options, the GNU way, for the mdroute tools.
//
// Accepted forms: --name, --name=value, --name value, -x, -xvalue,
// -x value, and flags grouped as -xy. Options and operands may be mixed;
// "--" ends the options and "-" alone is an operand.
#ifndef MDR_ARGS_H
#define MDR_ARGS_H

#include <span>
#include <string_view>
#include <vector>

#include "lib/util/result.h"

namespace mdr {

struct OptionSpec {
	int id;				// reported back in ParsedOption
	std::string_view name;		// long form, without "--"
	char short_name;		// 0 for none
	bool takes_value;
};

struct ParsedOption {
	int id;
	std::string_view value;		// empty for a flag
};

// Views into the parsed arguments: valid as long as they are.
struct ParsedArgs {
	std::vector<ParsedOption> options;	// in command line order
	std::vector<std::string_view> operands;
};

// Fails with -EINVAL and a message such as "unknown option '--foo'".
Result<ParsedArgs> parse_args(std::span<const std::string_view> args,
			      std::span<const OptionSpec> specs);

} // namespace mdr

#endif // MDR_ARGS_H
