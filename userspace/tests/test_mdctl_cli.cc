// SPDX-License-Identifier: GPL-2.0
//
// test_mdctl_cli.cc - mdctl commands, output and exit status, run in
// process against a fake module.
#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <string>

#include "lib/util/release.h"
#include "tests/test_mdctl.h"

#include "tests/common/cmocka_cxx.h"

using namespace mdr::test;

namespace {

Outcome run(FakeSys &sys, std::initializer_list<const char *> args)
{
	FakeHost host;

	return run_mdctl(args, sys, host);
}

// A module one minor ahead of us, so each printed number is told apart.
FakeSys loaded_module()
{
	FakeSys sys;
	sys.on_ioctl = fake_module(MDR_IOCTL_VERSION_MAJOR, MDR_IOCTL_VERSION_MINOR + 1, 7, 3,
				   "9.8.7-rc1");
	return sys;
}

const std::string kRelease(mdr::release());
const std::string kOwnAbi = std::to_string(MDR_IOCTL_VERSION_MAJOR) + '.' +
			    std::to_string(MDR_IOCTL_VERSION_MINOR) + '.' +
			    std::to_string(MDR_IOCTL_VERSION_PATCH);
const std::string kModuleAbi = std::to_string(MDR_IOCTL_VERSION_MAJOR) + '.' +
			       std::to_string(MDR_IOCTL_VERSION_MINOR + 1) + ".7";

void assert_usage_error(std::initializer_list<const char *> args, const std::string &message)
{
	FakeSys sys = loaded_module();
	Outcome o = run(sys, args);

	assert_int_equal(o.status, 2);
	assert_string_equal(o.err.c_str(), ("mdctl: " + message + kTryHelp).c_str());
	assert_true(o.out.empty());
	assert_true(sys.requests.empty());
}

} // namespace

static void test_version_table(void **)
{
	FakeSys sys = loaded_module();
	Outcome o = run(sys, {"version"});

	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    ("mdctl      " + kRelease + "\n"
			     "ioctl ABI  " + kOwnAbi + "\n"
			     "wire       1 to " + std::to_string(MDR_WIRE_VERSION) + "\n"
			     "module     9.8.7-rc1 (ioctl ABI " + kModuleAbi + ", wire 3)\n").c_str());
	assert_true(o.err.empty());
	assert_true(sys.open_fds.empty());
}

static void test_version_json(void **)
{
	for (const char *option : {"-ojson", "--output=json"}) {
		FakeSys sys = loaded_module();
		Outcome o = run(sys, {"version", option});

		assert_int_equal(o.status, 0);
		assert_string_equal(o.out.c_str(),
				    ("{\"mdctl\":{\"release\":\"" + kRelease +
				     "\",\"ioctl_abi\":\"" + kOwnAbi + "\",\"wire_version_min\":1,"
				     "\"wire_version_max\":" + std::to_string(MDR_WIRE_VERSION) + "},"
				     "\"module\":{\"loaded\":true,\"release\":\"9.8.7-rc1\","
				     "\"ioctl_abi\":\"" + kModuleAbi + "\",\"wire_version\":3}}\n").c_str());
		assert_true(o.err.empty());
	}
}

static void test_version_json_escapes_module_release(void **)
{
	FakeSys sys;
	sys.on_ioctl = fake_module(MDR_IOCTL_VERSION_MAJOR, MDR_IOCTL_VERSION_MINOR, 0, 1,
				   "a\"b\\c\n");
	Outcome o = run(sys, {"version", "-o", "json"});

	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out.c_str(), R"("release":"a\"b\\c\n")"));
}

static void test_version_module_not_loaded(void **)
{
	FakeSys sys;
	sys.open_error = -ENOENT;

	Outcome o = run(sys, {"version"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    ("mdctl      " + kRelease + "\n"
			     "ioctl ABI  " + kOwnAbi + "\n"
			     "wire       1 to " + std::to_string(MDR_WIRE_VERSION) + "\n"
			     "module     not loaded\n").c_str());
	assert_true(o.err.empty());

	o = run(sys, {"version", "-o", "json"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    ("{\"mdctl\":{\"release\":\"" + kRelease +
			     "\",\"ioctl_abi\":\"" + kOwnAbi + "\",\"wire_version_min\":1,"
				     "\"wire_version_max\":" + std::to_string(MDR_WIRE_VERSION) + "},"
			     "\"module\":{\"loaded\":false}}\n").c_str());
}

static void test_version_permission_denied(void **)
{
	FakeSys sys;
	sys.open_error = -EACCES;
	Outcome o = run(sys, {"version"});

	assert_int_equal(o.status, 1);
	assert_string_equal(o.err.c_str(),
			    "mdctl: version failed: Permission denied (EACCES)\n"
			    "hint: run as root\n");
	assert_true(o.out.empty());
}

static void test_version_ioctl_fails(void **)
{
	FakeSys sys;
	sys.on_ioctl = [](unsigned long, void *) { return -EINVAL; };
	Outcome o = run(sys, {"version", "-o", "json"});

	assert_int_equal(o.status, 1);
	assert_string_equal(o.err.c_str(), "mdctl: version failed: Invalid argument (EINVAL)\n");
	assert_true(o.out.empty());
	assert_true(sys.open_fds.empty());
}

// The versions are still shown: they are what it takes to fix it.
static void test_version_incompatible_module(void **)
{
	FakeSys sys;
	sys.on_ioctl = fake_module(MDR_IOCTL_VERSION_MAJOR + 1, 0, 0, 2, "99.0.0");
	Outcome o = run(sys, {"version"});

	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.out.c_str(), "module     99.0.0 (ioctl ABI "));
	assert_string_equal(o.err.c_str(),
			    ("mdctl: version failed: module ioctl ABI " +
			     std::to_string(MDR_IOCTL_VERSION_MAJOR + 1) +
			     ".0.0 is not compatible with mdctl's " + kOwnAbi + "\n"
			     "hint: install mdctl and the module from the same release\n").c_str());
}

static void test_usage_errors(void **)
{
	assert_usage_error({}, "no command given");
	assert_usage_error({"bogus"}, "unknown command 'bogus'");
	assert_usage_error({"--bogus"}, "unknown option '--bogus'");
	assert_usage_error({"version", "--bogus"}, "unknown option '--bogus'");
	assert_usage_error({"version", "-x"}, "unknown option '-x'");
	assert_usage_error({"version", "-o", "xml"}, "unknown output format 'xml'");
	assert_usage_error({"version", "-o"}, "option '-o' needs a value");
	assert_usage_error({"version", "extra"}, "unexpected argument 'extra'");
	assert_usage_error({"help", "version"}, "unexpected argument 'version'");
}

static void test_help(void **)
{
	for (auto args : {std::initializer_list<const char *>{"help"}, {"--help"}, {"-h"}}) {
		FakeSys sys;
		Outcome o = run(sys, args);

		assert_int_equal(o.status, 0);
		assert_true(o.out.starts_with("Usage: mdctl <command> [options]\n"));
		assert_non_null(strstr(o.out.c_str(), "\n  version   show the versions"));
		assert_true(o.err.empty());
	}
}

static void test_version_help(void **)
{
	for (const char *option : {"--help", "-h"}) {
		FakeSys sys = loaded_module();
		Outcome o = run(sys, {"version", option});

		assert_int_equal(o.status, 0);
		assert_true(o.out.starts_with("Usage: mdctl version [-o|--output table|json]\n"));
		assert_true(o.err.empty());
		assert_true(sys.requests.empty());
	}
}

static void test_write_error_fails(void **)
{
	FakeSys sys = loaded_module();
	std::ostringstream out, err;
	FakeHost host;
	const char *argv[] = {"mdctl", "version", nullptr};

	out.setstate(std::ios::badbit);
	assert_int_equal(mdctl::run(2, argv, {out, err, sys, host}), 1);
	assert_string_equal(err.str().c_str(), "mdctl: cannot write output\n");
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version_table),
		cmocka_unit_test(test_version_json),
		cmocka_unit_test(test_version_json_escapes_module_release),
		cmocka_unit_test(test_version_module_not_loaded),
		cmocka_unit_test(test_version_permission_denied),
		cmocka_unit_test(test_version_ioctl_fails),
		cmocka_unit_test(test_version_incompatible_module),
		cmocka_unit_test(test_usage_errors),
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_version_help),
		cmocka_unit_test(test_write_error_fails),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
