// SPDX-License-Identifier: GPL-2.0
//
// test_control.cc - Control against a fake control device.
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include <fcntl.h>

#include "lib/control.h"
#include "tests/common/fake_sys.h"

#include "tests/common/cmocka_cxx.h"

using mdr::Control;
using mdr::ModuleVersion;
using mdr::test::FakeSys;
using mdr::test::fake_module;

static void test_open_path_and_flags(void **)
{
	FakeSys sys;
	auto control = Control::open(sys);

	assert_true(control.ok());
	assert_string_equal(sys.opened_path.c_str(), "/dev/mdroute-control");
	assert_int_equal(sys.open_flags, O_RDWR | O_CLOEXEC);
	assert_int_equal(sys.open_fds.size(), 1);
}

static void test_version_request(void **)
{
	FakeSys sys;
	sys.on_ioctl = fake_module(0, 1, 0, 1, "0.1.0");
	auto control = Control::open(sys);

	assert_true(control.ok());
	assert_true(control.value().version().ok());

	// Our version triple, the size of the whole argument, all else zero.
	struct mdr_ioctl_version want;
	std::memset(&want, 0, sizeof(want));
	want.hdr.version[0] = MDR_IOCTL_VERSION_MAJOR;
	want.hdr.version[1] = MDR_IOCTL_VERSION_MINOR;
	want.hdr.version[2] = MDR_IOCTL_VERSION_PATCH;
	want.hdr.data_size = sizeof(want);

	assert_int_equal(sys.requests.size(), 1);
	assert_int_equal(sys.requests[0], MDR_IOC_VERSION);
	assert_int_equal(sys.last_arg.size(), sizeof(want));
	assert_memory_equal(sys.last_arg.data(), &want, sizeof(want));
}

static void test_version_reply(void **)
{
	FakeSys sys;
	sys.on_ioctl = fake_module(3, 14, 15, 9, "3.14.15-rc2");
	auto control = Control::open(sys);
	assert_true(control.ok());

	auto version = control.value().version();
	assert_true(version.ok());
	const ModuleVersion &v = version.value();
	assert_int_equal(v.major, 3);
	assert_int_equal(v.minor, 14);
	assert_int_equal(v.patch, 15);
	assert_int_equal(v.wire_version, 9);
	assert_string_equal(v.release.c_str(), "3.14.15-rc2");
}

// The module's release buffer is not trusted to hold a NUL.
static void test_version_release_without_nul(void **)
{
	const std::string release(sizeof(mdr_ioctl_version::release), 'x');
	FakeSys sys;
	sys.on_ioctl = fake_module(0, 1, 0, 1, release);
	auto control = Control::open(sys);
	assert_true(control.ok());

	auto version = control.value().version();
	assert_true(version.ok());
	assert_int_equal(version.value().release.size(), 32);
	assert_string_equal(version.value().release.c_str(), release.c_str());
}

static void test_open_errors(void **)
{
	for (int err : {-ENOENT, -EACCES}) {
		FakeSys sys;
		sys.open_error = err;
		auto control = Control::open(sys);

		assert_false(control.ok());
		assert_int_equal(control.error(), err);
		assert_true(sys.open_fds.empty());
	}
}

static void test_version_ioctl_error(void **)
{
	FakeSys sys;
	sys.on_ioctl = [](unsigned long, void *) { return -EINVAL; };
	auto control = Control::open(sys);
	assert_true(control.ok());

	auto version = control.value().version();
	assert_false(version.ok());
	assert_int_equal(version.error(), -EINVAL);
}

static void test_closes_once(void **)
{
	FakeSys sys;
	{
		auto control = Control::open(sys);
		assert_true(control.ok());
		Control moved = std::move(control).value();
		assert_int_equal(sys.open_fds.size(), 1);
	}
	assert_true(sys.open_fds.empty());
	assert_int_equal(sys.bad_fd_calls, 0);
}

static void test_move_assignment_closes_target(void **)
{
	FakeSys sys;
	{
		Control a = Control::open(sys).value();
		Control b = Control::open(sys).value();
		assert_int_equal(sys.open_fds.size(), 2);

		a = std::move(b);
		assert_int_equal(sys.open_fds.size(), 1);
		assert_int_equal(*sys.open_fds.begin(), 4);	// b's descriptor
	}
	assert_true(sys.open_fds.empty());
	assert_int_equal(sys.bad_fd_calls, 0);
}

static bool compatible(uint32_t major, uint32_t minor, uint32_t patch)
{
	return mdr::interface_compatible({major, minor, patch, 1, "x"});
}

static void test_interface_compatible(void **)
{
	const uint32_t major = MDR_IOCTL_VERSION_MAJOR;
	const uint32_t minor = MDR_IOCTL_VERSION_MINOR;
	const uint32_t patch = MDR_IOCTL_VERSION_PATCH;

	assert_true(compatible(major, minor, patch));
	assert_true(compatible(major, minor, patch + 1));	// patch is informative
	assert_true(compatible(major, minor, 0));
	assert_true(compatible(major, minor + 1, 0));		// a newer module
	if (minor > 0)
		assert_false(compatible(major, minor - 1, patch));	// an older one
	assert_false(compatible(major + 1, minor, patch));
	assert_false(compatible(major - 1, minor, patch));	// wraps at 0: still another major
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_path_and_flags),
		cmocka_unit_test(test_version_request),
		cmocka_unit_test(test_version_reply),
		cmocka_unit_test(test_version_release_without_nul),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_version_ioctl_error),
		cmocka_unit_test(test_closes_once),
		cmocka_unit_test(test_move_assignment_closes_target),
		cmocka_unit_test(test_interface_compatible),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
