// SPDX-License-Identifier: GPL-2.0
/*
 * inflight_test.c - KUnit: in-flight accounting, blocks and drains.
 */
#include <kunit/resource.h>
#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/slab.h>

#include "cache/inflight.h"

static int mdr_inflight_res_init(struct kunit_resource *res, void *context)
{
	res->data = context;
	return mdr_inflight_init(context);
}

static void mdr_inflight_res_free(struct kunit_resource *res)
{
	mdr_inflight_destroy(res->data);
}

/* A set-up accounting, destroyed when the test ends. */
static struct mdr_inflight *mdr_inflight_test_new(struct kunit *test)
{
	struct mdr_inflight *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, f);
	KUNIT_ASSERT_NOT_NULL(test, kunit_alloc_resource(test,
			mdr_inflight_res_init, mdr_inflight_res_free,
			GFP_KERNEL, f));
	return f;
}

static void mdr_inflight_test_enter_exit(struct kunit *test)
{
	struct mdr_inflight *f = mdr_inflight_test_new(test);
	mdr_inflight_token_t a, b;

	KUNIT_ASSERT_EQ(test, mdr_inflight_enter(f, 1, &a), 0);
	KUNIT_ASSERT_EQ(test, mdr_inflight_enter(f, 1, &b), 0);
	KUNIT_EXPECT_EQ(test, mdr_inflight_total(f), 2UL);
	mdr_inflight_exit(f, a);
	mdr_inflight_exit(f, b);
	KUNIT_EXPECT_EQ(test, mdr_inflight_total(f), 0UL);
}

static void mdr_inflight_test_block_refuses_range_only(struct kunit *test)
{
	struct mdr_inflight *f = mdr_inflight_test_new(test);
	mdr_inflight_token_t t;

	KUNIT_ASSERT_EQ(test, mdr_inflight_block(f, 10, 5), 0);
	KUNIT_EXPECT_EQ(test, mdr_inflight_enter(f, 10, &t), -EAGAIN);
	KUNIT_EXPECT_EQ(test, mdr_inflight_enter(f, 14, &t), -EAGAIN);
	KUNIT_EXPECT_EQ(test, mdr_inflight_total(f), 0UL);	/* not counted */
	KUNIT_ASSERT_EQ(test, mdr_inflight_enter(f, 9, &t), 0);
	mdr_inflight_exit(f, t);
	KUNIT_ASSERT_EQ(test, mdr_inflight_enter(f, 15, &t), 0);
	mdr_inflight_exit(f, t);
	mdr_inflight_unblock(f, 10, 5);
	KUNIT_ASSERT_EQ(test, mdr_inflight_enter(f, 12, &t), 0);
	mdr_inflight_exit(f, t);
}

static void mdr_inflight_test_block_slots_bounded(struct kunit *test)
{
	struct mdr_inflight *f = mdr_inflight_test_new(test);
	unsigned int i;

	for (i = 0; i < MDR_INFLIGHT_BLOCKS; i++)
		KUNIT_ASSERT_EQ(test, mdr_inflight_block(f, i * 10, 1), 0);
	KUNIT_EXPECT_EQ(test, mdr_inflight_block(f, 1000, 1), -EBUSY);
	mdr_inflight_unblock(f, 30, 1);
	KUNIT_EXPECT_FALSE(test, mdr_inflight_blocked(f, 30));
	KUNIT_EXPECT_TRUE(test, mdr_inflight_blocked(f, 40));
	KUNIT_EXPECT_EQ(test, mdr_inflight_block(f, 1000, 1), 0);
	/* a range reaching the end of the index space */
	mdr_inflight_unblock(f, 1000, 1);
	KUNIT_EXPECT_EQ(test, mdr_inflight_block(f, 5, U64_MAX), 0);
	KUNIT_EXPECT_TRUE(test, mdr_inflight_blocked(f, U64_MAX - 1));
}

struct drainer {
	struct mdr_inflight *f;
	struct completion done;
};

static int drain_thread(void *arg)
{
	struct drainer *d = arg;

	mdr_inflight_drain(d->f);
	complete(&d->done);
	return 0;
}

/* A drain waits for IO already in flight; new IO to its range is refused. */
static void mdr_inflight_test_drain_waits_for_old_io(struct kunit *test)
{
	struct mdr_inflight *f = mdr_inflight_test_new(test);
	struct drainer *d = kunit_kzalloc(test, sizeof(*d), GFP_KERNEL);
	mdr_inflight_token_t in_range, other, later;
	struct task_struct *t;

	KUNIT_ASSERT_NOT_NULL(test, d);
	KUNIT_ASSERT_EQ(test, mdr_inflight_enter(f, 3, &in_range), 0);

	d->f = f;
	init_completion(&d->done);
	KUNIT_ASSERT_EQ(test, mdr_inflight_block(f, 3, 1), 0);
	t = kthread_run(drain_thread, d, "mdr-drain-test");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));

	msleep(50);
	KUNIT_EXPECT_FALSE(test, completion_done(&d->done));
	/* IO that starts now, elsewhere, counts in the new phase */
	KUNIT_ASSERT_EQ(test, mdr_inflight_enter(f, 1000, &other), 0);
	KUNIT_EXPECT_EQ(test, mdr_inflight_enter(f, 3, &later), -EAGAIN);

	mdr_inflight_exit(f, in_range);
	KUNIT_EXPECT_GT(test, wait_for_completion_timeout(&d->done, HZ * 5),
			0UL);
	mdr_inflight_exit(f, other);
	mdr_inflight_unblock(f, 3, 1);
}

/* A drain does not wait for IO that entered after it began. */
static void mdr_inflight_test_drain_not_starved(struct kunit *test)
{
	struct mdr_inflight *f = mdr_inflight_test_new(test);
	struct drainer *d = kunit_kzalloc(test, sizeof(*d), GFP_KERNEL);
	mdr_inflight_token_t old, newer;
	struct task_struct *t;

	KUNIT_ASSERT_NOT_NULL(test, d);
	KUNIT_ASSERT_EQ(test, mdr_inflight_enter(f, 0, &old), 0);

	/* no block: new IO to the same extent keeps entering */
	d->f = f;
	init_completion(&d->done);
	t = kthread_run(drain_thread, d, "mdr-drain-test");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	msleep(50);
	KUNIT_ASSERT_EQ(test, mdr_inflight_enter(f, 0, &newer), 0);

	/* the old IO completing ends the drain; the newer one is still out */
	mdr_inflight_exit(f, old);
	KUNIT_EXPECT_GT(test, wait_for_completion_timeout(&d->done, HZ * 5),
			0UL);
	KUNIT_EXPECT_EQ(test, mdr_inflight_total(f), 1UL);
	mdr_inflight_exit(f, newer);

	/* with nothing in flight a drain returns at once */
	mdr_inflight_drain(f);
	KUNIT_EXPECT_EQ(test, mdr_inflight_total(f), 0UL);
}

/*
 * An IO that read the phase before a drain's flip and counted only after
 * that drain looked: the next drain waits for it (SRCU's reason for two
 * waits), although it counts in the phase the next drain flips to.
 */
static void mdr_inflight_test_late_entry_waited_for(struct kunit *test)
{
	struct mdr_inflight *f = mdr_inflight_test_new(test);
	struct drainer *d = kunit_kzalloc(test, sizeof(*d), GFP_KERNEL);
	unsigned int stale = READ_ONCE(f->phase);
	mdr_inflight_token_t late;
	struct task_struct *t;

	KUNIT_ASSERT_NOT_NULL(test, d);
	mdr_inflight_drain(f);	/* flips: the phase read above is old now */
	KUNIT_ASSERT_NE(test, READ_ONCE(f->phase), stale);
	KUNIT_ASSERT_EQ(test, __mdr_inflight_enter(f, stale, 7, &late), 0);

	KUNIT_ASSERT_EQ(test, mdr_inflight_block(f, 7, 1), 0);
	d->f = f;
	init_completion(&d->done);
	t = kthread_run(drain_thread, d, "mdr-drain-test");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	msleep(50);
	KUNIT_EXPECT_FALSE(test, completion_done(&d->done));
	mdr_inflight_exit(f, late);
	KUNIT_EXPECT_GT(test, wait_for_completion_timeout(&d->done, HZ * 5),
			0UL);
	mdr_inflight_unblock(f, 7, 1);
	KUNIT_EXPECT_EQ(test, mdr_inflight_total(f), 0UL);
}

/* Entries and exits of both phases add up; a flip between them changes nothing. */
static void mdr_inflight_test_total_balances(struct kunit *test)
{
	struct mdr_inflight *f = mdr_inflight_test_new(test);
	mdr_inflight_token_t t[8];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		KUNIT_ASSERT_EQ(test, mdr_inflight_enter(f, i, &t[i]), 0);
		if (i == 3)	/* 4 in one phase, 4 in the other */
			WRITE_ONCE(f->phase, f->phase ^ 1);
	}
	KUNIT_EXPECT_EQ(test, mdr_inflight_total(f), 8UL);
	for (i = 0; i < ARRAY_SIZE(t); i++)
		mdr_inflight_exit(f, t[i]);
	KUNIT_EXPECT_EQ(test, mdr_inflight_total(f), 0UL);
}

static struct kunit_case mdr_inflight_test_cases[] = {
	KUNIT_CASE(mdr_inflight_test_enter_exit),
	KUNIT_CASE(mdr_inflight_test_block_refuses_range_only),
	KUNIT_CASE(mdr_inflight_test_block_slots_bounded),
	KUNIT_CASE(mdr_inflight_test_drain_waits_for_old_io),
	KUNIT_CASE(mdr_inflight_test_drain_not_starved),
	KUNIT_CASE(mdr_inflight_test_late_entry_waited_for),
	KUNIT_CASE(mdr_inflight_test_total_balances),
	{}
};

static struct kunit_suite mdr_inflight_test_suite = {
	.name = "mdroute_inflight",
	.test_cases = mdr_inflight_test_cases,
};
kunit_test_suite(mdr_inflight_test_suite);
