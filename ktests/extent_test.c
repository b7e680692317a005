// SPDX-License-Identifier: GPL-2.0
/*
 * extent_test.c - KUnit: extent arithmetic of the IO path.
 */
#include <kunit/test.h>

#include "volume/extent.h"

struct split_case {
	const char *name;
	unsigned int shift;	/* extent size, log2 bytes */
	u64 sector;
	u64 nr;			/* sectors */
	u64 first_piece;	/* what the first split keeps */
	u64 first_index;
	u64 last_index;
};

/* 4 MiB extents are 8192 sectors; 64 KiB ones 128; 1 GiB ones 2097152. */
static const struct split_case split_cases[] = {
	{ "inside one extent", 22, 8, 8, 8, 0, 0 },
	{ "ends at the boundary", 22, 8184, 8, 8, 0, 0 },
	{ "crosses one boundary", 22, 8190, 8, 2, 0, 1 },
	{ "starts at a boundary", 22, 8192, 8, 8, 1, 1 },
	{ "exactly one extent", 22, 8192, 8192, 8192, 1, 1 },
	{ "larger than an extent", 22, 100, 20000, 8092, 0, 2 },
	{ "one sector before the boundary", 22, 16383, 1, 1, 1, 1 },
	{ "unaligned end", 22, 8191, 3, 1, 0, 1 },
	{ "smallest extents", 16, 127, 2, 1, 0, 1 },
	{ "largest extents", 30, 2097151, 4096, 1, 0, 1 },
	{ "discard of many extents", 16, 64, 128 * 10, 64, 0, 10 },
	{ "far into a large volume", 22, (1ULL << 40) + 5, 16, 16,
	  (1ULL << 40) >> 13, (1ULL << 40) >> 13 },
};

static void split_case_desc(const struct split_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}
KUNIT_ARRAY_PARAM(split, split_cases, split_case_desc);

static void mdr_extent_test_split(struct kunit *test)
{
	const struct split_case *c = test->param_value;

	KUNIT_EXPECT_EQ(test, mdr_ext_split_sectors(c->sector, c->nr, c->shift),
			c->first_piece);
	KUNIT_EXPECT_EQ(test, mdr_ext_index(c->sector, c->shift),
			c->first_index);
	KUNIT_EXPECT_EQ(test, mdr_ext_last(c->sector, c->nr, c->shift),
			c->last_index);
}

/* Splitting repeatedly covers the IO exactly, one extent per piece. */
static void mdr_extent_test_split_covers_io(struct kunit *test)
{
	const unsigned int shift = 16;	/* 128-sector extents */
	u64 sector = 77, left = 1000, pieces = 0;

	while (left) {
		u64 n = mdr_ext_split_sectors(sector, left, shift);

		KUNIT_ASSERT_GT(test, n, 0ULL);
		KUNIT_EXPECT_EQ(test, mdr_ext_index(sector, shift),
				mdr_ext_index(sector + n - 1, shift));
		sector += n;
		left -= n;
		pieces++;
	}
	KUNIT_EXPECT_EQ(test, sector, 1077ULL);
	/* extents 0..8 (sector 1076 is in extent 8) */
	KUNIT_EXPECT_EQ(test, pieces, 9ULL);
}

static void mdr_extent_test_remap(struct kunit *test)
{
	/* sector 8195 is 3 sectors into extent 1 */
	KUNIT_EXPECT_EQ(test, mdr_ext_offset(8195, 22), 3ULL);
	KUNIT_EXPECT_EQ(test, mdr_ext_remap(8195, 0x200000, 22), 0x200003ULL);
	KUNIT_EXPECT_EQ(test, mdr_ext_remap(8192, 4096, 22), 4096ULL);
	KUNIT_EXPECT_EQ(test, mdr_ext_sector_shift(22), 13U);
}

static struct kunit_case mdr_extent_test_cases[] = {
	KUNIT_CASE_PARAM(mdr_extent_test_split, split_gen_params),
	KUNIT_CASE(mdr_extent_test_split_covers_io),
	KUNIT_CASE(mdr_extent_test_remap),
	{}
};

static struct kunit_suite mdr_extent_test_suite = {
	.name = "mdroute_extent",
	.test_cases = mdr_extent_test_cases,
};
kunit_test_suite(mdr_extent_test_suite);
