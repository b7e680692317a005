// SPDX-License-Identifier: GPL-2.0
//
// ioctl_abi.cc - proves the module's MDR_IOC_VERSION follows the ABI of
// <linux/mdroute.h>: versioning, header and reserved field checks, and the
// errno of every malformed request.
//
// Runs as root inside a VM with mdroute loaded. Exit: 0 pass, 1 fail,
// 77 skip (no /dev/mdroute-control).
#include <cerrno>
#include <cstring>

#include <sys/ioctl.h>

#include "lib/client/control.h"

#include "tests/vm/control_tests.h"

static int g_fd = -1;

// A well-formed MDR_IOC_VERSION argument from a caller of our version.
static struct mdr_ioctl_version version_request()
{
	struct mdr_ioctl_version v;

	std::memset(&v, 0, sizeof(v));
	v.hdr.version[0] = MDR_IOCTL_VERSION_MAJOR;
	v.hdr.version[1] = MDR_IOCTL_VERSION_MINOR;
	v.hdr.version[2] = MDR_IOCTL_VERSION_PATCH;
	v.hdr.data_size = sizeof(v);
	return v;
}

// 0 on success, else the errno.
static int call(unsigned long request, void *arg)
{
	return ioctl(g_fd, request, arg) < 0 ? errno : 0;
}

static void assert_module_version(const struct mdr_ioctl_hdr &hdr)
{
	assert_int_equal(hdr.version[0], MDR_IOCTL_VERSION_MAJOR);
	assert_int_equal(hdr.version[1], MDR_IOCTL_VERSION_MINOR);
	assert_int_equal(hdr.version[2], MDR_IOCTL_VERSION_PATCH);
}

// (a)
static void test_version_succeeds(void **)
{
	struct mdr_ioctl_version v = version_request();

	assert_int_equal(call(MDR_IOC_VERSION, &v), 0);
	assert_module_version(v.hdr);
	assert_non_null(memchr(v.release, '\0', sizeof(v.release)));
	assert_true(strlen(v.release) > 0);
	assert_true(v.wire_version >= 1);
	// Reply fields the ABI reserves stay zero.
	assert_int_equal(v.hdr.flags, 0);
	assert_int_equal(v.reserved0, 0);
	for (__u64 r : v.reserved)
		assert_int_equal(r, 0);
}

// (b)
static void test_version_from_any_major(void **)
{
	struct mdr_ioctl_version v = version_request();

	v.hdr.version[0] = MDR_IOCTL_VERSION_MAJOR + 1;
	v.hdr.version[1] = 0;
	assert_int_equal(call(MDR_IOC_VERSION, &v), 0);
	assert_module_version(v.hdr);
}

// (c)
static void test_data_size_mismatch(void **)
{
	const __u32 sizes[] = {0, sizeof(struct mdr_ioctl_hdr), sizeof(struct mdr_ioctl_version) - 1,
			       sizeof(struct mdr_ioctl_version) + 8};

	for (__u32 size : sizes) {
		struct mdr_ioctl_version v = version_request();

		v.hdr.data_size = size;
		assert_int_equal(call(MDR_IOC_VERSION, &v), EINVAL);
	}
}

// (d) A refused caller still learns the module's version.
static void test_hdr_reserved_writes_back_version(void **)
{
	struct mdr_ioctl_version v = version_request();

	v.hdr.version[0] = MDR_IOCTL_VERSION_MAJOR + 1;
	v.hdr.version[1] = 77;
	v.hdr.version[2] = 99;
	v.hdr.reserved[1] = 1;
	assert_int_equal(call(MDR_IOC_VERSION, &v), EINVAL);
	assert_module_version(v.hdr);
}

static void test_hdr_reserved_each(void **)
{
	for (size_t i = 0; i < 3; i++) {
		struct mdr_ioctl_version v = version_request();

		v.hdr.reserved[i] = 1u << 31;
		assert_int_equal(call(MDR_IOC_VERSION, &v), EINVAL);
	}
}

// (e)
static void test_unknown_flag(void **)
{
	struct mdr_ioctl_version v = version_request();

	v.hdr.flags = 1u << 31;
	assert_int_equal(call(MDR_IOC_VERSION, &v), EINVAL);
}

// (f)
static void test_struct_reserved(void **)
{
	struct mdr_ioctl_version v = version_request();

	v.reserved0 = 1;
	assert_int_equal(call(MDR_IOC_VERSION, &v), EINVAL);

	for (size_t i = 0; i < 4; i++) {
		v = version_request();
		v.reserved[i] = 1ull << 63;
		assert_int_equal(call(MDR_IOC_VERSION, &v), EINVAL);
	}
}

// (g)
static void test_unknown_command(void **)
{
	struct mdr_ioctl_version v = version_request();

	assert_int_equal(call(_IOWR(MDR_IOCTL_TYPE, 0x7f, struct mdr_ioctl_version), &v), ENOTTY);
}

// (h)
static void test_wrong_type(void **)
{
	struct mdr_ioctl_version v = version_request();

	assert_int_equal(call(_IOWR(0x12, MDR_CMD_VERSION, struct mdr_ioctl_version), &v), ENOTTY);
}

// (i) The argument cannot even hold the header.
static void test_size_below_header(void **)
{
	struct mdr_ioctl_version v = version_request();

	assert_int_equal(call(_IOWR(MDR_IOCTL_TYPE, MDR_CMD_VERSION, __u32[4]), &v), EINVAL);
}

// (j)
static void test_bad_pointer(void **)
{
	assert_int_equal(call(MDR_IOC_VERSION, nullptr), EFAULT);
	assert_int_equal(call(MDR_IOC_VERSION, reinterpret_cast<void *>(1)), EFAULT);
}

// (k)
static void test_wrong_direction(void **)
{
	struct mdr_ioctl_version v = version_request();

	assert_int_equal(call(_IOR(MDR_IOCTL_TYPE, MDR_CMD_VERSION, struct mdr_ioctl_version), &v),
			 ENOTTY);
	assert_int_equal(call(_IOW(MDR_IOCTL_TYPE, MDR_CMD_VERSION, struct mdr_ioctl_version), &v),
			 ENOTTY);
}

// The library's view agrees with the raw ioctl.
static void test_control_class(void **)
{
	auto control = mdr::Control::open();
	assert_true(control.ok());

	auto version = control.value().version();
	assert_true(version.ok());
	assert_true(mdr::interface_compatible(version.value()));

	struct mdr_ioctl_version v = version_request();
	assert_int_equal(call(MDR_IOC_VERSION, &v), 0);
	assert_string_equal(version.value().release.c_str(), v.release);
	assert_int_equal(version.value().wire_version, v.wire_version);
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version_succeeds),
		cmocka_unit_test(test_version_from_any_major),
		cmocka_unit_test(test_data_size_mismatch),
		cmocka_unit_test(test_hdr_reserved_writes_back_version),
		cmocka_unit_test(test_hdr_reserved_each),
		cmocka_unit_test(test_unknown_flag),
		cmocka_unit_test(test_struct_reserved),
		cmocka_unit_test(test_unknown_command),
		cmocka_unit_test(test_wrong_type),
		cmocka_unit_test(test_size_below_header),
		cmocka_unit_test(test_bad_pointer),
		cmocka_unit_test(test_wrong_direction),
		cmocka_unit_test(test_control_class),
	};

	return run_control_tests("mdr-test-ioctl-abi", g_fd, tests);
}
