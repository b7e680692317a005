// SPDX-License-Identifier: GPL-2.0
/*
 * extent_cache_test.c - KUnit: the location cache.
 */
#include <kunit/test.h>
#include <linux/mdroute_wire.h>

#include "cache/extent_cache.h"

static struct mdr_loc loc(u64 gen, u32 dev, u64 pstart)
{
	return (struct mdr_loc){ .generation = gen, .pstart = pstart,
				 .dev_id = dev, .state = MDR_EXT_MAPPED };
}

static int cache_suite_init(struct kunit_suite *suite)
{
	return mdr_cache_module_init();
}

static void cache_suite_exit(struct kunit_suite *suite)
{
	mdr_cache_module_exit();
}

static int cache_init(struct kunit *test)
{
	struct mdr_cache *c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);

	if (!c || mdr_cache_init(c, 4))
		return -ENOMEM;
	test->priv = c;
	return 0;
}

static void cache_exit(struct kunit *test)
{
	mdr_cache_destroy(test->priv);
}

static void mdr_cache_test_miss_then_hit(struct kunit *test)
{
	struct mdr_cache *c = test->priv;
	struct mdr_loc in = loc(3, 7, 0x800), out = {};
	int handle;

	in.dev = &handle;
	KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 5, &out), MDR_CACHE_MISS);
	KUNIT_EXPECT_EQ(test, mdr_cache_insert(c, 5, &in), 0);
	KUNIT_ASSERT_EQ(test, mdr_cache_lookup(c, 5, &out), MDR_CACHE_HIT);
	KUNIT_EXPECT_EQ(test, out.generation, 3ULL);
	KUNIT_EXPECT_EQ(test, out.dev_id, 7U);
	KUNIT_EXPECT_EQ(test, out.pstart, 0x800ULL);
	KUNIT_EXPECT_EQ(test, out.state, (u8)MDR_EXT_MAPPED);
	KUNIT_EXPECT_PTR_EQ(test, out.dev, (void *)&handle);
	KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 4, &out), MDR_CACHE_MISS);
	KUNIT_EXPECT_EQ(test, mdr_cache_count(c), 1U);
}

static void mdr_cache_test_generation_never_goes_back(struct kunit *test)
{
	struct mdr_cache *c = test->priv;
	struct mdr_loc newer = loc(5, 1, 100), older = loc(4, 2, 200), out;

	KUNIT_ASSERT_EQ(test, mdr_cache_insert(c, 9, &newer), 0);
	KUNIT_EXPECT_EQ(test, mdr_cache_insert(c, 9, &older), -ESTALE);
	KUNIT_EXPECT_EQ(test, atomic64_read(&c->stale), 1LL);
	KUNIT_ASSERT_EQ(test, mdr_cache_lookup(c, 9, &out), MDR_CACHE_HIT);
	KUNIT_EXPECT_EQ(test, out.generation, 5ULL);
	KUNIT_EXPECT_EQ(test, out.pstart, 100ULL);

	/* newer replaces; the same generation again changes nothing */
	newer = loc(6, 3, 300);
	KUNIT_EXPECT_EQ(test, mdr_cache_insert(c, 9, &newer), 0);
	older = loc(6, 4, 400);
	KUNIT_EXPECT_EQ(test, mdr_cache_insert(c, 9, &older), 0);
	KUNIT_ASSERT_EQ(test, mdr_cache_lookup(c, 9, &out), MDR_CACHE_HIT);
	KUNIT_EXPECT_EQ(test, out.dev_id, 3U);
	KUNIT_EXPECT_EQ(test, mdr_cache_count(c), 1U);
}

static void mdr_cache_test_drop_leaves_floor(struct kunit *test)
{
	struct mdr_cache *c = test->priv;
	struct mdr_loc a = loc(2, 1, 10), b = loc(2, 1, 20), out;

	KUNIT_ASSERT_EQ(test, mdr_cache_insert(c, 0, &a), 0);
	KUNIT_ASSERT_EQ(test, mdr_cache_insert(c, 1, &b), 0);
	/* an invalidation of extent 1 that says: generation 4 or later */
	mdr_cache_drop(c, 1, 1, 4);
	KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 0, &out), MDR_CACHE_HIT);
	KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 1, &out), MDR_CACHE_MISS);

	/* a racing READ that returns the old entry is refused */
	KUNIT_EXPECT_EQ(test, mdr_cache_insert(c, 1, &b), -ESTALE);
	b = loc(3, 1, 20);
	KUNIT_EXPECT_EQ(test, mdr_cache_insert(c, 1, &b), -ESTALE);
	b = loc(4, 2, 40);
	KUNIT_EXPECT_EQ(test, mdr_cache_insert(c, 1, &b), 0);
	KUNIT_ASSERT_EQ(test, mdr_cache_lookup(c, 1, &out), MDR_CACHE_HIT);
	KUNIT_EXPECT_EQ(test, out.dev_id, 2U);
}

static void mdr_cache_test_drop_keeps_own_generation(struct kunit *test)
{
	struct mdr_cache *c = test->priv;
	struct mdr_loc a = loc(9, 1, 10), out;

	KUNIT_ASSERT_EQ(test, mdr_cache_insert(c, 3, &a), 0);
	mdr_cache_drop(c, 0, 100, 2);	/* floor below what we saw */
	KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 3, &out), MDR_CACHE_MISS);
	a = loc(8, 1, 10);
	KUNIT_EXPECT_EQ(test, mdr_cache_insert(c, 3, &a), -ESTALE);
	a = loc(9, 1, 10);
	KUNIT_EXPECT_EQ(test, mdr_cache_insert(c, 3, &a), 0);
	KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 3, &out), MDR_CACHE_HIT);
}

static void mdr_cache_test_drop_range_bounds(struct kunit *test)
{
	struct mdr_cache *c = test->priv;
	struct mdr_loc a = loc(1, 1, 0), out;
	u64 i;

	for (i = 10; i < 14; i++)
		KUNIT_ASSERT_EQ(test, mdr_cache_insert(c, i, &a), 0);
	mdr_cache_drop(c, 11, 2, 1);
	KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 10, &out), MDR_CACHE_HIT);
	KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 11, &out), MDR_CACHE_MISS);
	KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 12, &out), MDR_CACHE_MISS);
	KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 13, &out), MDR_CACHE_HIT);
	/* a count reaching past the end of the index space is clamped */
	mdr_cache_drop(c, 13, U64_MAX, 1);
	KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 13, &out), MDR_CACHE_MISS);
	KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 10, &out), MDR_CACHE_HIT);
}

static void mdr_cache_test_bounded_clock_eviction(struct kunit *test)
{
	struct mdr_cache *c = test->priv;	/* max 4 */
	struct mdr_loc a = loc(1, 1, 0), out;
	u64 i;

	for (i = 0; i < 4; i++)
		KUNIT_ASSERT_EQ(test, mdr_cache_insert(c, i, &a), 0);
	KUNIT_EXPECT_EQ(test, mdr_cache_count(c), 4U);

	/* one sweep clears every referenced bit, then evicts index 0 */
	KUNIT_ASSERT_EQ(test, mdr_cache_insert(c, 4, &a), 0);
	KUNIT_EXPECT_EQ(test, mdr_cache_count(c), 4U);
	KUNIT_EXPECT_EQ(test, atomic64_read(&c->evictions), 1LL);
	KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 0, &out), MDR_CACHE_MISS);

	/* a lookup marks 1 used: the hand passes it and takes 2 */
	KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 1, &out), MDR_CACHE_HIT);
	KUNIT_ASSERT_EQ(test, mdr_cache_insert(c, 5, &a), 0);
	KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 1, &out), MDR_CACHE_HIT);
	KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 2, &out), MDR_CACHE_MISS);
	KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 5, &out), MDR_CACHE_HIT);

	/* many more inserts: never above the bound */
	for (i = 100; i < 200; i++) {
		KUNIT_ASSERT_EQ(test, mdr_cache_insert(c, i, &a), 0);
		KUNIT_ASSERT_LE(test, mdr_cache_count(c), 4U);
	}
	KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 199, &out), MDR_CACHE_HIT);
}

/*
 * Inserts in scattered order, every cached entry referenced before each:
 * the hand often has every other entry behind it, and must wrap twice.
 */
static void mdr_cache_test_bound_holds_when_all_referenced(struct kunit *test)
{
	struct mdr_cache *c = test->priv;	/* max 4 */
	struct mdr_loc a = loc(1, 1, 0), out;
	u64 recent[8] = {};
	unsigned int i, j;

	for (i = 1; i <= 500; i++) {
		u64 index = (i * 7919ULL) % 1009;

		for (j = 0; j < ARRAY_SIZE(recent); j++)
			mdr_cache_lookup(c, recent[j], &out);
		KUNIT_ASSERT_EQ(test, mdr_cache_insert(c, index, &a), 0);
		KUNIT_ASSERT_LE_MSG(test, mdr_cache_count(c), 4U,
				    "insert %u (index %llu)", i, index);
		KUNIT_ASSERT_EQ(test, mdr_cache_lookup(c, index, &out),
				MDR_CACHE_HIT);
		recent[i % ARRAY_SIZE(recent)] = index;
	}
}

static void mdr_cache_test_tombstones_count_and_go_first(struct kunit *test)
{
	struct mdr_cache *c = test->priv;
	struct mdr_loc a = loc(1, 1, 0), out;
	u64 i;

	for (i = 0; i < 4; i++)
		KUNIT_ASSERT_EQ(test, mdr_cache_insert(c, i, &a), 0);
	mdr_cache_drop(c, 2, 1, 5);
	KUNIT_EXPECT_EQ(test, mdr_cache_count(c), 4U);
	KUNIT_ASSERT_EQ(test, mdr_cache_insert(c, 10, &a), 0);
	/* the referenced entries survive the first pass; the tombstone not */
	KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 0, &out), MDR_CACHE_HIT);
	KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 1, &out), MDR_CACHE_HIT);
	KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 3, &out), MDR_CACHE_HIT);
	KUNIT_EXPECT_EQ(test, mdr_cache_count(c), 4U);
	/* with its tombstone gone, extent 2's floor is forgotten */
	KUNIT_EXPECT_EQ(test, mdr_cache_insert(c, 2, &a), 0);
}

static void mdr_cache_test_clear(struct kunit *test)
{
	struct mdr_cache *c = test->priv;
	struct mdr_loc a = loc(1, 1, 0), out;

	KUNIT_ASSERT_EQ(test, mdr_cache_insert(c, 1, &a), 0);
	mdr_cache_drop(c, 1, 1, 3);
	KUNIT_ASSERT_EQ(test, mdr_cache_insert(c, 2, &a), 0);
	mdr_cache_clear(c);
	KUNIT_EXPECT_EQ(test, mdr_cache_count(c), 0U);
	KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 2, &out), MDR_CACHE_MISS);
	/* clear forgets floors too (a volume generation change) */
	KUNIT_EXPECT_EQ(test, mdr_cache_insert(c, 1, &a), 0);
}

static void mdr_cache_test_forget_range_drops_floors(struct kunit *test)
{
	struct mdr_cache *c = test->priv;
	struct mdr_loc a = loc(7, 1, 0), old = loc(1, 2, 0), out;

	KUNIT_ASSERT_EQ(test, mdr_cache_insert(c, 1, &a), 0);
	KUNIT_ASSERT_EQ(test, mdr_cache_insert(c, 2, &a), 0);
	KUNIT_ASSERT_EQ(test, mdr_cache_insert(c, 5, &a), 0);
	mdr_cache_drop(c, 2, 1, 9);
	/* the volume started its generations again over extents 0..3 */
	mdr_cache_forget(c, 0, 4);
	KUNIT_EXPECT_EQ(test, mdr_cache_count(c), 1U);
	KUNIT_EXPECT_EQ(test, mdr_cache_insert(c, 1, &old), 0);
	KUNIT_EXPECT_EQ(test, mdr_cache_insert(c, 2, &old), 0);
	/* outside the range the floor still holds */
	KUNIT_EXPECT_EQ(test, mdr_cache_insert(c, 5, &old), -ESTALE);
	KUNIT_ASSERT_EQ(test, mdr_cache_lookup(c, 2, &out), MDR_CACHE_HIT);
	KUNIT_EXPECT_EQ(test, out.generation, 1ULL);
}

/* Ranges longer than the slots changed under one hold of the lock. */
static void mdr_cache_test_drop_and_forget_long_ranges(struct kunit *test)
{
	struct mdr_cache *c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);
	const u64 n = 3 * 256 + 7;
	struct mdr_loc a = loc(2, 1, 0), newer = loc(6, 1, 0), out;
	u64 i;

	KUNIT_ASSERT_NOT_NULL(test, c);
	KUNIT_ASSERT_EQ(test, mdr_cache_init(c, 2 * n), 0);
	/* every other index, so that the walk skips empty slots too */
	for (i = 0; i < n; i++)
		KUNIT_ASSERT_EQ(test, mdr_cache_insert(c, 2 * i, &a), 0);
	KUNIT_ASSERT_EQ(test, mdr_cache_count(c), (unsigned int)n);
	mdr_cache_drop(c, 1, 2 * n, 5);
	KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 0, &out), MDR_CACHE_HIT);
	for (i = 1; i < n; i++) {
		KUNIT_EXPECT_EQ(test, mdr_cache_lookup(c, 2 * i, &out),
				MDR_CACHE_MISS);
		KUNIT_EXPECT_EQ(test, mdr_cache_insert(c, 2 * i, &a), -ESTALE);
	}
	KUNIT_EXPECT_EQ(test, mdr_cache_insert(c, 2 * n - 2, &newer), 0);
	mdr_cache_forget(c, 0, 2 * n);
	KUNIT_EXPECT_EQ(test, mdr_cache_count(c), 0U);
	for (i = 0; i < n; i++)
		KUNIT_EXPECT_EQ(test, mdr_cache_insert(c, 2 * i, &a), 0);
	KUNIT_EXPECT_EQ(test, mdr_cache_count(c), (unsigned int)n);
	mdr_cache_destroy(c);
}

static void mdr_cache_test_unallocated_and_zero_max(struct kunit *test)
{
	struct mdr_cache *c = test->priv, z;
	struct mdr_loc u = { .generation = 1, .state = MDR_EXT_UNALLOCATED };
	struct mdr_loc out;

	KUNIT_ASSERT_EQ(test, mdr_cache_insert(c, 0, &u), 0);
	KUNIT_ASSERT_EQ(test, mdr_cache_lookup(c, 0, &out), MDR_CACHE_HIT);
	KUNIT_EXPECT_EQ(test, out.state, (u8)MDR_EXT_UNALLOCATED);
	KUNIT_EXPECT_EQ(test, mdr_cache_init(&z, 0), -EINVAL);
}

static struct kunit_case mdr_cache_test_cases[] = {
	KUNIT_CASE(mdr_cache_test_miss_then_hit),
	KUNIT_CASE(mdr_cache_test_generation_never_goes_back),
	KUNIT_CASE(mdr_cache_test_drop_leaves_floor),
	KUNIT_CASE(mdr_cache_test_drop_keeps_own_generation),
	KUNIT_CASE(mdr_cache_test_drop_range_bounds),
	KUNIT_CASE(mdr_cache_test_bounded_clock_eviction),
	KUNIT_CASE(mdr_cache_test_bound_holds_when_all_referenced),
	KUNIT_CASE(mdr_cache_test_tombstones_count_and_go_first),
	KUNIT_CASE(mdr_cache_test_clear),
	KUNIT_CASE(mdr_cache_test_forget_range_drops_floors),
	KUNIT_CASE(mdr_cache_test_drop_and_forget_long_ranges),
	KUNIT_CASE(mdr_cache_test_unallocated_and_zero_max),
	{}
};

static struct kunit_suite mdr_cache_test_suite = {
	.name = "mdroute_extent_cache",
	.suite_init = cache_suite_init,
	.suite_exit = cache_suite_exit,
	.init = cache_init,
	.exit = cache_exit,
	.test_cases = mdr_cache_test_cases,
};
kunit_test_suite(mdr_cache_test_suite);
