// SPDX-License-Identifier: GPL-2.0
/*
 * track_test.c - KUnit: granules written to extents being pre-copied.
 */
#include <kunit/test.h>
#include <linux/slab.h>

#include <linux/mdroute_wire.h>

#include "cache/track.h"

static struct mdr_track *mdr_track_new(struct kunit *test)
{
	struct mdr_track *t = kunit_kzalloc(test, sizeof(*t), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, t);
	mdr_track_init(t);
	return t;
}

/* A 4 MiB extent has 64 granules of 64 KiB; bits follow the bytes. */
static void mdr_track_test_granules(struct kunit *test)
{
	struct mdr_track *t = mdr_track_new(test);
	const u64 ext = 4ULL << 20, g = 64 << 10;
	u64 dirty = 0;

	mdr_track_start(t, 3, 22);
	mdr_track_write(t, 3, 3 * ext, 4096);		/* granule 0 */
	mdr_track_write(t, 3, 3 * ext + 5 * g + 100, 1);	/* granule 5 */
	mdr_track_write(t, 3, 3 * ext + 7 * g - 512, 1024);	/* 6 and 7 */
	mdr_track_write(t, 3, 3 * ext + ext - 4096, 4096);	/* granule 63 */
	mdr_track_write(t, 3, 3 * ext + 9 * g, 0);	/* nothing */
	KUNIT_ASSERT_TRUE(test, mdr_track_end(t, 3, &dirty));
	KUNIT_EXPECT_EQ(test, dirty, BIT_ULL(0) | BIT_ULL(5) | BIT_ULL(6) |
			BIT_ULL(7) | BIT_ULL(63));
	/* ended: a second end finds nothing, writes are not noted */
	mdr_track_write(t, 3, 3 * ext, 4096);
	KUNIT_EXPECT_FALSE(test, mdr_track_end(t, 3, &dirty));
	KUNIT_EXPECT_EQ(test, t->nr, 0U);
}

/* Granules are at least 4 KiB: a 64 KiB extent has 16 of them. */
static void mdr_track_test_small_and_large_extents(struct kunit *test)
{
	struct mdr_track *small = mdr_track_new(test);
	struct mdr_track *large = mdr_track_new(test);
	u64 dirty = 0;

	mdr_track_start(small, 0, MDR_WIRE_EXTENT_SHIFT_MIN);
	KUNIT_EXPECT_EQ(test, small->granule_shift, 12U);
	mdr_track_write(small, 0, 0, 64 << 10);	/* the whole extent */
	KUNIT_ASSERT_TRUE(test, mdr_track_end(small, 0, &dirty));
	KUNIT_EXPECT_EQ(test, dirty, GENMASK_ULL(15, 0));

	mdr_track_start(large, 1, MDR_WIRE_EXTENT_SHIFT_MAX);
	KUNIT_EXPECT_EQ(test, large->granule_shift, 24U);
	mdr_track_write(large, 1, (1ULL << 30) + (16 << 20), 512);
	KUNIT_ASSERT_TRUE(test, mdr_track_end(large, 1, &dirty));
	KUNIT_EXPECT_EQ(test, dirty, BIT_ULL(1));
}

/* A write running past the extent's end (never sent) stops at its end. */
static void mdr_track_test_write_clamped(struct kunit *test)
{
	struct mdr_track *t = mdr_track_new(test);
	u64 dirty = 0;

	mdr_track_start(t, 0, 22);
	mdr_track_write(t, 0, (4ULL << 20) - 4096, 1 << 20);
	KUNIT_ASSERT_TRUE(test, mdr_track_end(t, 0, &dirty));
	KUNIT_EXPECT_EQ(test, dirty, BIT_ULL(63));
}

/* Only the extents started are noted, each in its own mask. */
static void mdr_track_test_extents_apart(struct kunit *test)
{
	struct mdr_track *t = mdr_track_new(test);
	const u64 ext = 4ULL << 20;
	u64 dirty = 0;

	mdr_track_write(t, 1, ext, 4096);	/* nothing started */
	KUNIT_EXPECT_EQ(test, t->nr, 0U);
	mdr_track_start(t, 1, 22);
	mdr_track_start(t, 2, 22);
	mdr_track_write(t, 1, ext, 4096);
	mdr_track_write(t, 4, 4 * ext + (1 << 20), 4096);	/* not noted */
	KUNIT_ASSERT_TRUE(test, mdr_track_end(t, 2, &dirty));
	KUNIT_EXPECT_EQ(test, dirty, 0ULL);
	KUNIT_ASSERT_TRUE(test, mdr_track_end(t, 1, &dirty));
	KUNIT_EXPECT_EQ(test, dirty, BIT_ULL(0));
	KUNIT_EXPECT_FALSE(test, mdr_track_end(t, 4, &dirty));
}

/* Starting again forgets what was noted: the copy starts again too. */
static void mdr_track_test_restart_clears(struct kunit *test)
{
	struct mdr_track *t = mdr_track_new(test);
	u64 dirty = 0;

	mdr_track_start(t, 0, 22);
	mdr_track_write(t, 0, 0, 4096);
	mdr_track_start(t, 0, 22);
	KUNIT_EXPECT_EQ(test, t->nr, 1U);
	mdr_track_write(t, 0, 2 << 20, 4096);
	KUNIT_ASSERT_TRUE(test, mdr_track_end(t, 0, &dirty));
	KUNIT_EXPECT_EQ(test, dirty, BIT_ULL(32));
}

/* With every slot in use, the extent started first is forgotten. */
static void mdr_track_test_oldest_evicted(struct kunit *test)
{
	struct mdr_track *t = mdr_track_new(test);
	u64 dirty = 0, i;

	for (i = 0; i < MDR_TRACK_SLOTS; i++)
		mdr_track_start(t, 100 + i, 22);
	mdr_track_start(t, 100, 22);	/* restarted: now the newest */
	mdr_track_start(t, 200, 22);	/* evicts 101 */
	KUNIT_EXPECT_EQ(test, t->nr, (unsigned int)MDR_TRACK_SLOTS);
	KUNIT_EXPECT_FALSE(test, mdr_track_end(t, 101, &dirty));
	KUNIT_EXPECT_TRUE(test, mdr_track_end(t, 100, &dirty));
	KUNIT_EXPECT_TRUE(test, mdr_track_end(t, 200, &dirty));
	KUNIT_EXPECT_TRUE(test, mdr_track_end(t, 102, &dirty));
}

/* Any other invalidation of a range ends the noting of its extents. */
static void mdr_track_test_drop_range(struct kunit *test)
{
	struct mdr_track *t = mdr_track_new(test);
	u64 dirty = 0;

	mdr_track_start(t, 4, 22);
	mdr_track_start(t, 5, 22);
	mdr_track_start(t, 9, 22);
	mdr_track_start(t, U64_MAX, 22);
	mdr_track_drop(t, 5, 4);	/* 5 ..= 8 */
	KUNIT_EXPECT_FALSE(test, mdr_track_end(t, 5, &dirty));
	KUNIT_EXPECT_TRUE(test, mdr_track_end(t, 4, &dirty));
	KUNIT_EXPECT_TRUE(test, mdr_track_end(t, 9, &dirty));
	mdr_track_drop(t, 0, U64_MAX);	/* 0 ..= U64_MAX - 1 */
	KUNIT_EXPECT_TRUE(test, mdr_track_end(t, U64_MAX, &dirty));
	mdr_track_start(t, 7, 22);
	mdr_track_drop(t, 0, U64_MAX);
	KUNIT_EXPECT_EQ(test, t->nr, 0U);
}

/* Before the volume's geometry is known (shift 0), nothing is noted. */
static void mdr_track_test_bad_shift_notes_nothing(struct kunit *test)
{
	struct mdr_track *t = mdr_track_new(test);
	u64 dirty = 0;

	KUNIT_EXPECT_FALSE(test, mdr_track_start(t, 1, 0));
	KUNIT_EXPECT_FALSE(test, mdr_track_start(t, 1,
						 MDR_WIRE_EXTENT_SHIFT_MIN - 1));
	KUNIT_EXPECT_FALSE(test, mdr_track_start(t, 1,
						 MDR_WIRE_EXTENT_SHIFT_MAX + 1));
	KUNIT_EXPECT_EQ(test, t->nr, 0U);
	mdr_track_write(t, 1, 4ULL << 20, 4096);
	KUNIT_EXPECT_FALSE(test, mdr_track_end(t, 1, &dirty));
	KUNIT_EXPECT_TRUE(test, mdr_track_start(t, 1, 22));
}

static struct kunit_case mdr_track_test_cases[] = {
	KUNIT_CASE(mdr_track_test_granules),
	KUNIT_CASE(mdr_track_test_small_and_large_extents),
	KUNIT_CASE(mdr_track_test_write_clamped),
	KUNIT_CASE(mdr_track_test_extents_apart),
	KUNIT_CASE(mdr_track_test_restart_clears),
	KUNIT_CASE(mdr_track_test_oldest_evicted),
	KUNIT_CASE(mdr_track_test_drop_range),
	KUNIT_CASE(mdr_track_test_bad_shift_notes_nothing),
	{}
};

static struct kunit_suite mdr_track_test_suite = {
	.name = "mdroute_track",
	.test_cases = mdr_track_test_cases,
};
kunit_test_suite(mdr_track_test_suite);
