// SPDX-License-Identifier: GPL-2.0
//
// test_args.cc - command line option parsing.
#include <cerrno>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "lib/util/args.h"

#include "tests/common/cmocka_cxx.h"

using mdr::OptionSpec;
using mdr::ParsedArgs;
using mdr::Result;

enum { kHelp, kVerbose, kOutput };

static constexpr OptionSpec kSpecs[] = {
	{kHelp, "help", 'h', false},
	{kVerbose, "verbose", 'v', false},
	{kOutput, "output", 'o', true},
};

static Result<ParsedArgs> parse(std::initializer_list<std::string_view> args)
{
	const std::vector<std::string_view> v(args);

	return mdr::parse_args(v, kSpecs);
}

static void assert_option(const ParsedArgs &p, size_t i, int id, std::string_view value)
{
	assert_true(i < p.options.size());
	assert_int_equal(p.options[i].id, id);
	assert_true(p.options[i].value == value);
}

static void assert_fails(std::initializer_list<std::string_view> args, const char *message)
{
	Result<ParsedArgs> r = parse(args);

	assert_false(r.ok());
	assert_int_equal(r.error(), -EINVAL);
	assert_string_equal(r.message().c_str(), message);
}

static void test_long_forms(void **)
{
	Result<ParsedArgs> r = parse({"--help", "--output=json", "--output", "table", "--output="});

	assert_true(r.ok());
	assert_int_equal(r.value().options.size(), 4);
	assert_option(r.value(), 0, kHelp, "");
	assert_option(r.value(), 1, kOutput, "json");
	assert_option(r.value(), 2, kOutput, "table");
	assert_option(r.value(), 3, kOutput, "");
	assert_true(r.value().operands.empty());
}

static void test_short_forms(void **)
{
	Result<ParsedArgs> r = parse({"-h", "-ojson", "-o", "table"});

	assert_true(r.ok());
	assert_int_equal(r.value().options.size(), 3);
	assert_option(r.value(), 0, kHelp, "");
	assert_option(r.value(), 1, kOutput, "json");
	assert_option(r.value(), 2, kOutput, "table");
}

static void test_grouped_short_flags(void **)
{
	Result<ParsedArgs> r = parse({"-vho", "json", "-vojson"});

	assert_true(r.ok());
	assert_int_equal(r.value().options.size(), 5);
	assert_option(r.value(), 0, kVerbose, "");
	assert_option(r.value(), 1, kHelp, "");
	assert_option(r.value(), 2, kOutput, "json");
	assert_option(r.value(), 3, kVerbose, "");
	assert_option(r.value(), 4, kOutput, "json");
}

static void test_operands_mixed_with_options(void **)
{
	Result<ParsedArgs> r = parse({"vol0", "-o", "-v", "-", "--", "-h", "--x"});

	assert_true(r.ok());
	// A value is taken as is, even when it looks like an option.
	assert_int_equal(r.value().options.size(), 1);
	assert_option(r.value(), 0, kOutput, "-v");
	const std::vector<std::string_view> want = {"vol0", "-", "-h", "--x"};
	assert_true(r.value().operands == want);
}

static void test_errors(void **)
{
	assert_fails({"--bogus"}, "unknown option '--bogus'");
	assert_fails({"--bogus=1"}, "unknown option '--bogus'");
	assert_fails({"-x"}, "unknown option '-x'");
	assert_fails({"-vx"}, "unknown option '-x'");
	assert_fails({"--output"}, "option '--output' needs a value");
	assert_fails({"-o"}, "option '-o' needs a value");
	assert_fails({"-vo"}, "option '-o' needs a value");
	assert_fails({"--help=yes"}, "option '--help' takes no value");
	// A prefix is not a match.
	assert_fails({"--out", "json"}, "unknown option '--out'");
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_long_forms),
		cmocka_unit_test(test_short_forms),
		cmocka_unit_test(test_grouped_short_flags),
		cmocka_unit_test(test_operands_mixed_with_options),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
