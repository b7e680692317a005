// SPDX-License-Identifier: GPL-2.0
/*
 * ioctl_check_test.c - KUnit: validation of control ioctl arguments.
 */
#include <kunit/test.h>
#include <linux/ioctl.h>

#include "admin/ioctl_check.h"

/* A command that takes a struct grown once: 104 bytes first, 120 now. */
static const struct mdr_ioctl_spec grown_spec = {
	.min_size = 104,
	.max_size = 120,
	.valid_flags = 0x3,
};

struct cmd_case {
	const char *name;
	unsigned int cmd;
	int want;
};

#define RW(type, nr, size)	_IOC(_IOC_READ | _IOC_WRITE, type, nr, size)

static const struct cmd_case cmd_cases[] = {
	{ "first published size", RW(MDR_IOCTL_TYPE, 1, 104), 0 },
	{ "current size", RW(MDR_IOCTL_TYPE, 1, 120), 0 },
	{ "size between", RW(MDR_IOCTL_TYPE, 1, 112), 0 },
	{ "too small", RW(MDR_IOCTL_TYPE, 1, 96), -EINVAL },
	{ "smaller than header", RW(MDR_IOCTL_TYPE, 1, 16), -EINVAL },
	{ "larger than known", RW(MDR_IOCTL_TYPE, 1, 128), -EINVAL },
	{ "foreign type", RW(0x12, 1, 104), -ENOTTY },
	{ "read only", _IOC(_IOC_READ, MDR_IOCTL_TYPE, 1, 104), -ENOTTY },
	{ "write only", _IOC(_IOC_WRITE, MDR_IOCTL_TYPE, 1, 104), -ENOTTY },
	{ "no direction", _IOC(_IOC_NONE, MDR_IOCTL_TYPE, 1, 0), -ENOTTY },
};

static void cmd_case_desc(const struct cmd_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(cmd, cmd_cases, cmd_case_desc);

static void mdr_ioctl_test_check_cmd(struct kunit *test)
{
	const struct cmd_case *c = test->param_value;

	KUNIT_EXPECT_EQ(test, mdr_ioctl_check_cmd(c->cmd, &grown_spec), c->want);
}

struct hdr_case {
	const char *name;
	struct mdr_ioctl_hdr hdr;
	unsigned int size;
	bool any_version;
	int want;
};

#define OUR_VERSION { MDR_IOCTL_VERSION_MAJOR, MDR_IOCTL_VERSION_MINOR, \
		      MDR_IOCTL_VERSION_PATCH }

static const struct hdr_case hdr_cases[] = {
	{ "ours", { OUR_VERSION, 104 }, 104, false, 0 },
	{ "grown size", { OUR_VERSION, 120 }, 120, false, 0 },
	{ "data_size below ioctl size", { OUR_VERSION, 104 }, 120, false,
	  -EINVAL },
	{ "data_size above ioctl size", { OUR_VERSION, 120 }, 104, false,
	  -EINVAL },
	{ "older minor", { { MDR_IOCTL_VERSION_MAJOR, 0, 0 }, 104 }, 104,
	  false, 0 },
	{ "newer minor", { { MDR_IOCTL_VERSION_MAJOR,
			     MDR_IOCTL_VERSION_MINOR + 1, 0 }, 104 }, 104,
	  false, -EINVAL },
	{ "other major", { { MDR_IOCTL_VERSION_MAJOR + 1, 0, 0 }, 104 }, 104,
	  false, -EINVAL },
	{ "other major, any version", { { MDR_IOCTL_VERSION_MAJOR + 1, 0, 0 },
					104 }, 104, true, 0 },
	{ "any patch level", { { MDR_IOCTL_VERSION_MAJOR,
				 MDR_IOCTL_VERSION_MINOR, 0xffffffff }, 104 },
	  104, false, 0 },
	{ "known flags", { OUR_VERSION, 104, 0x3 }, 104, false, 0 },
	{ "unknown flag", { OUR_VERSION, 104, 0x4 }, 104, false, -EINVAL },
	{ "high flag", { OUR_VERSION, 104, 0x80000000 }, 104, false, -EINVAL },
	{ "reserved[0]", { OUR_VERSION, 104, 0, { 1, 0, 0 } }, 104, false,
	  -EINVAL },
	{ "reserved[2]", { OUR_VERSION, 104, 0, { 0, 0, 0x100 } }, 104, false,
	  -EINVAL },
};

static void hdr_case_desc(const struct hdr_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(hdr, hdr_cases, hdr_case_desc);

static void mdr_ioctl_test_check_hdr(struct kunit *test)
{
	const struct hdr_case *c = test->param_value;
	struct mdr_ioctl_spec spec = grown_spec;

	spec.any_version = c->any_version;
	KUNIT_EXPECT_EQ(test, mdr_ioctl_check_hdr(&c->hdr, c->size, &spec),
			c->want);
}

static void mdr_ioctl_test_set_version_is_compatible(struct kunit *test)
{
	struct mdr_ioctl_hdr hdr;

	memset(&hdr, 0xa5, sizeof(hdr));
	mdr_ioctl_set_version(&hdr);
	KUNIT_EXPECT_EQ(test, hdr.version[0], MDR_IOCTL_VERSION_MAJOR);
	KUNIT_EXPECT_EQ(test, hdr.version[1], MDR_IOCTL_VERSION_MINOR);
	KUNIT_EXPECT_EQ(test, hdr.version[2], MDR_IOCTL_VERSION_PATCH);
	KUNIT_EXPECT_TRUE(test, mdr_ioctl_version_compatible(hdr.version));
	/* only the version is written */
	KUNIT_EXPECT_EQ(test, hdr.data_size, 0xa5a5a5a5U);
}

static void mdr_ioctl_test_uapi_layout(struct kunit *test)
{
	/* the same asserts as the header, seen from the kernel's compiler */
	KUNIT_EXPECT_EQ(test, sizeof(struct mdr_ioctl_hdr), 32);
	KUNIT_EXPECT_EQ(test, sizeof(struct mdr_ioctl_version), 104);
	KUNIT_EXPECT_EQ(test, _IOC_SIZE(MDR_IOC_VERSION),
			sizeof(struct mdr_ioctl_version));
	KUNIT_EXPECT_EQ(test, _IOC_NR(MDR_IOC_VERSION), MDR_CMD_VERSION);
}

static struct kunit_case mdr_ioctl_test_cases[] = {
	KUNIT_CASE_PARAM(mdr_ioctl_test_check_cmd, cmd_gen_params),
	KUNIT_CASE_PARAM(mdr_ioctl_test_check_hdr, hdr_gen_params),
	KUNIT_CASE(mdr_ioctl_test_set_version_is_compatible),
	KUNIT_CASE(mdr_ioctl_test_uapi_layout),
	{}
};

static struct kunit_suite mdr_ioctl_test_suite = {
	.name = "mdroute_ioctl",
	.test_cases = mdr_ioctl_test_cases,
};
kunit_test_suite(mdr_ioctl_test_suite);

MODULE_DESCRIPTION("KUnit tests for mdroute ioctl validation");
MODULE_LICENSE("GPL");
