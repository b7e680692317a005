// SPDX-License-Identifier: GPL-2.0
/*
 * revalidate_test.c - KUnit: the pure parts of background revalidation:
 * the period's adaptation, the cache walk that leaves the CLOCK alone,
 * and the wait-list mark that says an answer is a revalidation's.
 */
#include <kunit/test.h>
#include <linux/slab.h>
#include <linux/mdroute_wire.h>

#include "cache/extent_cache.h"
#include "cache/waitlist.h"
#include "volume/revalidate.h"

struct period_case {
	const char *name;
	u32 cur, elapsed, min, max;
	u64 ios;
	u32 want;
};

/* MDR_REVAL_HOT_IOPS is 64: 64 bios in 1 s, 640 in 10 s are hot. */
static const struct period_case period_cases[] = {
	{ "first period is the minimum", 0, 0, 1000, 60000, 0, 1000 },
	{ "idle doubles", 1000, 1000, 1000, 60000, 0, 2000 },
	{ "idle stops at the maximum", 40000, 40000, 1000, 60000, 0, 60000 },
	{ "idle at the maximum stays", 60000, 60000, 1000, 60000, 0, 60000 },
	{ "hot halves", 8000, 8000, 1000, 60000, 8 * 64, 4000 },
	{ "hot stops at the minimum", 1500, 1500, 1000, 60000, 1000, 1000 },
	{ "hot at the minimum stays", 1000, 1000, 1000, 60000, 64, 1000 },
	{ "warm keeps the period", 8000, 8000, 1000, 60000, 8 * 64 - 1, 8000 },
	{ "one bio is not idle", 4000, 4000, 1000, 60000, 1, 4000 },
	{ "rate counts the real elapsed time", 1000, 10000, 1000, 60000,
	  639, 1000 },
	{ "late pass, hot", 4000, 10000, 1000, 60000, 640, 2000 },
	{ "min 0 disables", 1000, 1000, 0, 60000, 0, 0 },
	{ "max 0 disables", 1000, 1000, 1000, 0, 0, 0 },
	{ "max below min acts as min", 1000, 1000, 5000, 2000, 0, 5000 },
	{ "lowered max applies at once", 60000, 1000, 1000, 10000, 100, 10000 },
	{ "raised min applies at once", 1000, 1000, 3000, 60000, 1000, 3000 },
	{ "zero elapsed counts as 1 ms", 2000, 0, 1000, 60000, 1, 1000 },
	{ "no overflow near the top", 0xf0000000U, 1000, 1, 0xffffffffU, 0,
	  0xffffffffU },
};

static void period_case_desc(const struct period_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}
KUNIT_ARRAY_PARAM(period, period_cases, period_case_desc);

static void mdr_reval_test_period(struct kunit *test)
{
	const struct period_case *c = test->param_value;

	KUNIT_EXPECT_EQ(test, mdr_reval_next_ms(c->cur, c->ios, c->elapsed,
						c->min, c->max), c->want);
}

/* An idle volume reaches the maximum by doubling, a hot one the minimum. */
static void mdr_reval_test_period_converges(struct kunit *test)
{
	u32 p = mdr_reval_next_ms(0, 0, 0, 1000, 60000);
	int steps = 0;

	while (p < 60000 && steps++ < 20)
		p = mdr_reval_next_ms(p, 0, p, 1000, 60000);
	KUNIT_EXPECT_EQ(test, p, 60000U);
	KUNIT_EXPECT_EQ(test, steps, 6);	/* 2, 4, 8, 16, 32, 60 s */
	steps = 0;
	while (p > 1000 && steps++ < 20)
		p = mdr_reval_next_ms(p, 100000, p, 1000, 60000);
	KUNIT_EXPECT_EQ(test, p, 1000U);
	KUNIT_EXPECT_EQ(test, steps, 6);
}

static struct mdr_loc loc(u64 gen)
{
	return (struct mdr_loc){ .generation = gen, .pstart = gen * 8192,
				 .dev_id = 1, .state = MDR_EXT_MAPPED };
}

static int reval_suite_init(struct kunit_suite *suite)
{
	return mdr_cache_module_init();
}

static void reval_suite_exit(struct kunit_suite *suite)
{
	mdr_cache_module_exit();
}

/* The walk finds cached entries in order and steps over tombstones. */
static void mdr_reval_test_cache_next_skips_tombstones(struct kunit *test)
{
	struct mdr_cache c;
	struct mdr_loc l = loc(1);
	u64 i = 0;

	KUNIT_ASSERT_EQ(test, mdr_cache_init(&c, 16), 0);
	KUNIT_EXPECT_FALSE(test, mdr_cache_next(&c, &i, 100));
	mdr_cache_insert(&c, 3, &l);
	mdr_cache_insert(&c, 4, &l);
	mdr_cache_insert(&c, 9, &l);
	mdr_cache_drop(&c, 4, 1, 2);	/* a tombstone */

	i = 0;
	KUNIT_ASSERT_TRUE(test, mdr_cache_next(&c, &i, 100));
	KUNIT_EXPECT_EQ(test, i, 3ULL);
	i = 4;
	KUNIT_ASSERT_TRUE(test, mdr_cache_next(&c, &i, 100));
	KUNIT_EXPECT_EQ(test, i, 9ULL);
	i = 10;
	KUNIT_EXPECT_FALSE(test, mdr_cache_next(&c, &i, 100));
	i = 4;
	KUNIT_EXPECT_FALSE(test, mdr_cache_next(&c, &i, 8));	/* bounded */
	i = 5;
	KUNIT_EXPECT_FALSE(test, mdr_cache_next(&c, &i, 4));	/* empty range */

	KUNIT_EXPECT_TRUE(test, mdr_cache_peek(&c, 9, &l));
	KUNIT_EXPECT_EQ(test, l.generation, 1ULL);
	KUNIT_EXPECT_FALSE(test, mdr_cache_peek(&c, 4, &l));	/* tombstone */
	KUNIT_EXPECT_FALSE(test, mdr_cache_peek(&c, 5, &l));
	mdr_cache_destroy(&c);
}

/*
 * Fill a 3-entry cache so that, after one sweep, 20 and 30 are
 * unreferenced and the hand stands before 20; touch 20 with @lookup or a
 * peek; one more insert evicts one of them.
 * Return: whether 20 survived.
 */
static bool touch_then_evict(struct kunit *test, bool lookup)
{
	struct mdr_cache c;
	struct mdr_loc l = loc(1);
	bool kept;

	KUNIT_EXPECT_EQ(test, mdr_cache_init(&c, 3), 0);
	mdr_cache_insert(&c, 10, &l);
	mdr_cache_insert(&c, 20, &l);
	mdr_cache_insert(&c, 30, &l);
	mdr_cache_insert(&c, 40, &l);	/* clears every bit, evicts 10 */
	KUNIT_EXPECT_FALSE(test, mdr_cache_peek(&c, 10, &l));
	if (lookup)
		mdr_cache_lookup(&c, 20, &l);
	else
		mdr_cache_peek(&c, 20, &l);
	mdr_cache_insert(&c, 50, &l);
	kept = mdr_cache_peek(&c, 20, &l);
	/* exactly one of 20 and 30 went */
	KUNIT_EXPECT_NE(test, kept, mdr_cache_peek(&c, 30, &l));
	mdr_cache_destroy(&c);
	return kept;
}

/* Revalidation reads the cache without keeping entries in it. */
static void mdr_reval_test_peek_leaves_clock(struct kunit *test)
{
	KUNIT_EXPECT_TRUE(test, touch_then_evict(test, true));	/* IO: kept */
	KUNIT_EXPECT_FALSE(test, touch_then_evict(test, false));
}

/* A revalidation's registration says so; read-ahead's does not. */
static void mdr_reval_test_expect_keeps_mark(struct kunit *test)
{
	struct mdr_waitlist wl;
	struct mdr_wait *s = kzalloc(sizeof(*s), GFP_KERNEL);
	struct bio_list out = BIO_EMPTY_LIST;
	unsigned long flags;

	KUNIT_ASSERT_NOT_NULL(test, s);
	mdr_waitlist_init(&wl);
	__set_bit(MDR_WAIT_REVAL, &s->flags);
	__set_bit(MDR_WAIT_STALE, &s->flags);	/* junk: reset */
	KUNIT_ASSERT_TRUE(test, mdr_waitlist_expect(&wl, 5, &s, 1));
	KUNIT_EXPECT_NULL(test, s);
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, s);
	KUNIT_ASSERT_TRUE(test, mdr_waitlist_expect(&wl, 6, &s, 1));

	KUNIT_ASSERT_TRUE(test, mdr_waitlist_take(&wl, 5, &out, &flags));
	KUNIT_EXPECT_EQ(test, flags, BIT(MDR_WAIT_FETCH) | BIT(MDR_WAIT_REVAL));
	KUNIT_ASSERT_TRUE(test, mdr_waitlist_take(&wl, 6, &out, &flags));
	KUNIT_EXPECT_EQ(test, flags, BIT(MDR_WAIT_FETCH));
	KUNIT_EXPECT_TRUE(test, bio_list_empty(&out));
}

static struct kunit_case mdr_reval_test_cases[] = {
	KUNIT_CASE_PARAM(mdr_reval_test_period, period_gen_params),
	KUNIT_CASE(mdr_reval_test_period_converges),
	KUNIT_CASE(mdr_reval_test_cache_next_skips_tombstones),
	KUNIT_CASE(mdr_reval_test_peek_leaves_clock),
	KUNIT_CASE(mdr_reval_test_expect_keeps_mark),
	{}
};

static struct kunit_suite mdr_reval_test_suite = {
	.name = "mdroute_revalidate",
	.suite_init = reval_suite_init,
	.suite_exit = reval_suite_exit,
	.test_cases = mdr_reval_test_cases,
};
kunit_test_suite(mdr_reval_test_suite);
