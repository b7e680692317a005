// SPDX-License-Identifier: GPL-2.0
//
// test_json.cc - the JSON writer.
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "lib/util/json.h"

#include "tests/common/cmocka_cxx.h"

using mdr::JsonWriter;
using namespace std::string_literals;

// The JSON text of one string value.
static std::string str(std::string_view s)
{
	return JsonWriter().value(s).str();
}

static void test_plain_string(void **)
{
	assert_string_equal(str("mdroute 0.1.0").c_str(), R"("mdroute 0.1.0")");
	assert_string_equal(str("").c_str(), R"("")");
}

static void test_escapes_quote_and_backslash(void **)
{
	assert_string_equal(str(R"(a"b\c)").c_str(), R"("a\"b\\c")");
}

static void test_escapes_short_forms(void **)
{
	assert_string_equal(str("\n\t\r\b\f").c_str(), R"("\n\t\r\b\f")");
}

static void test_escapes_other_control_chars(void **)
{
	assert_string_equal(str("\x01|\x1f|\x1b").c_str(), R"("\u0001|\u001f|\u001b")");
	assert_string_equal(str("a\0b"s).c_str(), R"("a\u0000b")");
}

static void test_passes_utf8_and_del_through(void **)
{
	// 2, 3 and 4 byte sequences, and U+007F which JSON does not escape.
	const std::string text = "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \x7f";
	// The lowest and highest code point of each length.
	const std::string bounds = "\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf";

	assert_string_equal(str(text).c_str(), ("\"" + text + "\"").c_str());
	assert_string_equal(str(bounds).c_str(), ("\"" + bounds + "\"").c_str());
}

static void test_replaces_invalid_utf8(void **)
{
	assert_string_equal(str("a\xff" "b").c_str(), R"("a\ufffdb")");
	// A lone continuation byte, '/' overlong in 2, 3 and 4 bytes, a
	// surrogate, above U+10FFFF.
	assert_string_equal(str("\x80").c_str(), R"("\ufffd")");
	assert_string_equal(str("\xc0\xaf").c_str(), R"("\ufffd\ufffd")");
	assert_string_equal(str("\xe0\x80\xaf").c_str(), R"("\ufffd\ufffd\ufffd")");
	assert_string_equal(str("\xf0\x80\x80\xaf").c_str(), R"("\ufffd\ufffd\ufffd\ufffd")");
	assert_string_equal(str("\xed\xa0\x80").c_str(), R"("\ufffd\ufffd\ufffd")");
	assert_string_equal(str("\xf4\x90\x80\x80").c_str(), R"("\ufffd\ufffd\ufffd\ufffd")");
	// Cut short at the end of the string, then by an ASCII byte.
	assert_string_equal(str("\xe2\x82").c_str(), R"("\ufffd\ufffd")");
	assert_string_equal(str("\xe2\x82" "x").c_str(), R"("\ufffd\ufffdx")");
}

static void test_exact_integers(void **)
{
	assert_string_equal(JsonWriter().value(std::numeric_limits<uint64_t>::max()).str().c_str(),
			    "18446744073709551615");
	assert_string_equal(JsonWriter().value(std::numeric_limits<int64_t>::min()).str().c_str(),
			    "-9223372036854775808");
	assert_string_equal(JsonWriter().value(std::numeric_limits<int64_t>::max()).str().c_str(),
			    "9223372036854775807");
	assert_string_equal(JsonWriter().value(uint32_t{4294967295u}).str().c_str(), "4294967295");
	assert_string_equal(JsonWriter().value(-1).str().c_str(), "-1");
	assert_string_equal(JsonWriter().value(0).str().c_str(), "0");
}

static void test_bools(void **)
{
	JsonWriter w;

	w.begin_array().value(true).value(false).end_array();
	assert_string_equal(w.str().c_str(), "[true,false]");
}

static void test_nesting_and_commas(void **)
{
	JsonWriter w;

	w.begin_object()
		.key("volumes").begin_array()
			.begin_object().key("id").value(1).key("name").value("a").end_object()
			.begin_object().key("id").value(2).end_object()
		.end_array()
		.key("empty_object").begin_object().end_object()
		.key("empty_array").begin_array().end_array()
		.key("nested").begin_array().begin_array().value(3).end_array().value(4).end_array()
	.end_object();
	assert_string_equal(w.str().c_str(),
			    R"({"volumes":[{"id":1,"name":"a"},{"id":2}],)"
			    R"("empty_object":{},"empty_array":[],"nested":[[3],4]})");
}

static void test_escapes_keys(void **)
{
	JsonWriter w;

	w.begin_object().key("a\"b\n").value("v").end_object();
	assert_string_equal(w.str().c_str(), R"({"a\"b\n":"v"})");
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_string),
		cmocka_unit_test(test_escapes_quote_and_backslash),
		cmocka_unit_test(test_escapes_short_forms),
		cmocka_unit_test(test_escapes_other_control_chars),
		cmocka_unit_test(test_passes_utf8_and_del_through),
		cmocka_unit_test(test_replaces_invalid_utf8),
		cmocka_unit_test(test_exact_integers),
		cmocka_unit_test(test_bools),
		cmocka_unit_test(test_nesting_and_commas),
		cmocka_unit_test(test_escapes_keys),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
