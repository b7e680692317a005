// SPDX-License-Identifier: GPL-2.0
//
// test_errors.cc - errno names and descriptions.
#include <cerrno>

#include "lib/util/errors.h"

#include "tests/common/cmocka_cxx.h"

using mdr::describe_errno;
using mdr::errno_name;

static void test_names_of_common_errnos(void **)
{
	assert_string_equal(errno_name(EPERM).c_str(), "EPERM");
	assert_string_equal(errno_name(ENOENT).c_str(), "ENOENT");
	assert_string_equal(errno_name(EACCES).c_str(), "EACCES");
	assert_string_equal(errno_name(EBUSY).c_str(), "EBUSY");
	assert_string_equal(errno_name(EINVAL).c_str(), "EINVAL");
	assert_string_equal(errno_name(ENOTTY).c_str(), "ENOTTY");
	assert_string_equal(errno_name(EFAULT).c_str(), "EFAULT");
	assert_string_equal(errno_name(ETIMEDOUT).c_str(), "ETIMEDOUT");
	assert_string_equal(errno_name(ECONNRESET).c_str(), "ECONNRESET");
	assert_string_equal(errno_name(EHWPOISON).c_str(), "EHWPOISON");
}

// Linux gives some errnos two names; the table holds one per value.
static void test_names_of_aliases(void **)
{
	assert_string_equal(errno_name(EWOULDBLOCK).c_str(), "EAGAIN");
	assert_string_equal(errno_name(EDEADLOCK).c_str(), "EDEADLK");
	assert_string_equal(errno_name(ENOTSUP).c_str(), "EOPNOTSUPP");
}

static void test_name_fallback(void **)
{
	assert_string_equal(errno_name(0).c_str(), "E?0");
	assert_string_equal(errno_name(4095).c_str(), "E?4095");
	// A -errno is not an errno: callers negate first.
	assert_string_equal(errno_name(-EBUSY).c_str(), ("E?-" + std::to_string(EBUSY)).c_str());
}

static void test_describe_format(void **)
{
	assert_string_equal(describe_errno(EBUSY).c_str(), "Device or resource busy (EBUSY)");
	assert_string_equal(describe_errno(EACCES).c_str(), "Permission denied (EACCES)");
	assert_string_equal(describe_errno(ENOTTY).c_str(),
			    "Inappropriate ioctl for device (ENOTTY)");
}

static void test_describe_unknown(void **)
{
	assert_string_equal(describe_errno(4095).c_str(), "Unknown error 4095 (E?4095)");
}

static void test_errno_error(void **)
{
	errno = ENODEV;
	mdr::Error e = mdr::errno_error("rdma_create_event_channel");
	assert_int_equal(e.code, -ENODEV);
	assert_string_equal(e.message.c_str(), "rdma_create_event_channel");

	// A failed call that left errno 0 still fails.
	errno = 0;
	assert_int_equal(mdr::errno_error("x").code, -EIO);
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_of_common_errnos),
		cmocka_unit_test(test_names_of_aliases),
		cmocka_unit_test(test_name_fallback),
		cmocka_unit_test(test_describe_format),
		cmocka_unit_test(test_describe_unknown),
		cmocka_unit_test(test_errno_error),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
