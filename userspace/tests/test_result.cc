// SPDX-License-Identifier: GPL-2.0
//
// test_result.cc - Result<T> and Status.
#include <cerrno>
#include <memory>
#include <variant>

#include "lib/util/result.h"

#include "tests/common/cmocka_cxx.h"

using mdr::Error;
using mdr::Result;
using mdr::Status;

static Result<int> half(int n)
{
	if (n % 2)
		return Error(-EINVAL, "odd");
	return n / 2;
}

static void test_value(void **)
{
	Result<int> r = half(8);

	assert_true(r.ok());
	assert_int_equal(r.value(), 4);
}

static void test_error_and_message(void **)
{
	Result<int> r = half(3);

	assert_false(r.ok());
	assert_int_equal(r.error(), -EINVAL);
	assert_string_equal(r.message().c_str(), "odd");
}

static void test_wrong_side_throws(void **)
{
	Result<int> bad = half(3);
	Result<int> good = half(2);
	bool threw_value = false, threw_error = false;

	try {
		(void)bad.value();
	} catch (const std::bad_variant_access &) {
		threw_value = true;
	}
	try {
		(void)good.error();
	} catch (const std::bad_variant_access &) {
		threw_error = true;
	}
	assert_true(threw_value);
	assert_true(threw_error);
}

static void test_move_only_value(void **)
{
	Result<std::unique_ptr<int>> r = std::make_unique<int>(7);
	std::unique_ptr<int> p = std::move(r).value();

	assert_non_null(p.get());
	assert_int_equal(*p, 7);
}

static void test_status(void **)
{
	Status ok;
	Status failed = Error(-EBUSY);

	assert_true(ok.ok());
	assert_false(failed.ok());
	assert_int_equal(failed.error(), -EBUSY);
	assert_true(failed.message().empty());
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_value),
		cmocka_unit_test(test_error_and_message),
		cmocka_unit_test(test_wrong_side_throws),
		cmocka_unit_test(test_move_only_value),
		cmocka_unit_test(test_status),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
