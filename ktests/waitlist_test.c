// SPDX-License-Identifier: GPL-2.0
/*
 * waitlist_test.c - KUnit: bios parked per extent.
 */
#include <kunit/test.h>
#include <linux/bio.h>
#include <linux/slab.h>

#include "cache/waitlist.h"

static struct bio *test_bio(struct kunit *test)
{
	struct bio *bio = bio_kmalloc(0, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, bio);
	bio_init(bio, NULL, NULL, 0, REQ_OP_READ);
	return bio;
}

static void free_bios(struct bio_list *list)
{
	struct bio *bio;

	while ((bio = bio_list_pop(list)))
		kfree(bio);
}

static struct mdr_wait *spare(struct kunit *test)
{
	struct mdr_wait *w = kzalloc(sizeof(*w), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, w);
	return w;
}

static void mdr_waitlist_test_first_fetches_others_join(struct kunit *test)
{
	struct mdr_waitlist wl;
	struct bio *a = test_bio(test), *b = test_bio(test);
	struct mdr_wait *s = spare(test);
	struct bio_list out = BIO_EMPTY_LIST;
	unsigned long flags;

	mdr_waitlist_init(&wl);
	KUNIT_EXPECT_EQ(test, mdr_waitlist_park(&wl, 7, a, false, &s, 100),
			MDR_PARK_FETCH);
	KUNIT_EXPECT_NULL(test, s);	/* taken */
	s = spare(test);
	KUNIT_EXPECT_EQ(test, mdr_waitlist_park(&wl, 7, b, false, &s, 101),
			MDR_PARK_JOINED);
	KUNIT_EXPECT_NOT_NULL(test, s);	/* not needed: the caller frees it */
	kfree(s);
	KUNIT_EXPECT_EQ(test, mdr_waitlist_count(&wl), 1U);

	KUNIT_EXPECT_FALSE(test, mdr_waitlist_take(&wl, 8, &out, &flags));
	KUNIT_ASSERT_TRUE(test, mdr_waitlist_take(&wl, 7, &out, &flags));
	KUNIT_EXPECT_TRUE(test, test_bit(MDR_WAIT_FETCH, &flags));
	/* in arrival order */
	KUNIT_EXPECT_PTR_EQ(test, bio_list_pop(&out), a);
	KUNIT_EXPECT_PTR_EQ(test, bio_list_pop(&out), b);
	KUNIT_EXPECT_TRUE(test, bio_list_empty(&out));
	KUNIT_EXPECT_EQ(test, mdr_waitlist_count(&wl), 0U);
	KUNIT_EXPECT_FALSE(test, mdr_waitlist_take(&wl, 7, &out, &flags));
	kfree(a);
	kfree(b);
}

static void mdr_waitlist_test_alloc_asked_once(struct kunit *test)
{
	struct mdr_waitlist wl;
	struct bio_list out = BIO_EMPTY_LIST;
	struct mdr_wait *s = spare(test);
	unsigned long flags;

	mdr_waitlist_init(&wl);
	/* a read fetches; a write joining it still needs an allocation */
	KUNIT_EXPECT_EQ(test, mdr_waitlist_park(&wl, 1, test_bio(test), false,
						&s, 0), MDR_PARK_FETCH);
	KUNIT_EXPECT_EQ(test, mdr_waitlist_park(&wl, 1, test_bio(test), true,
						&s, 0), MDR_PARK_ALLOC);
	KUNIT_EXPECT_EQ(test, mdr_waitlist_park(&wl, 1, test_bio(test), true,
						&s, 0), MDR_PARK_JOINED);
	/* a read behind an allocation waits for it, no extra fetch */
	KUNIT_EXPECT_EQ(test, mdr_waitlist_park(&wl, 1, test_bio(test), false,
						&s, 0), MDR_PARK_JOINED);
	KUNIT_ASSERT_TRUE(test, mdr_waitlist_take(&wl, 1, &out, &flags));
	KUNIT_EXPECT_TRUE(test, test_bit(MDR_WAIT_ALLOC, &flags));
	KUNIT_EXPECT_EQ(test, bio_list_size(&out), 4U);
	free_bios(&out);
}

static void mdr_waitlist_test_stale_marks_range(struct kunit *test)
{
	struct mdr_waitlist wl;
	struct bio_list out = BIO_EMPTY_LIST;
	struct mdr_wait *s;
	unsigned long flags;
	u64 i;

	mdr_waitlist_init(&wl);
	for (i = 10; i < 15; i++) {
		s = spare(test);
		mdr_waitlist_park(&wl, i, test_bio(test), false, &s, 0);
		KUNIT_EXPECT_NULL(test, s);
	}
	mdr_waitlist_mark_stale(&wl, 11, 3);
	for (i = 10; i < 15; i++) {
		KUNIT_ASSERT_TRUE(test, mdr_waitlist_take(&wl, i, &out, &flags));
		KUNIT_EXPECT_EQ(test, test_bit(MDR_WAIT_STALE, &flags),
				i >= 11 && i <= 13);
	}
	free_bios(&out);
}

static void mdr_waitlist_test_pop_any_empties(struct kunit *test)
{
	struct mdr_waitlist wl;
	struct mdr_wait *s, *w;
	unsigned int n = 0;
	u64 i;

	mdr_waitlist_init(&wl);
	for (i = 0; i < 300; i++) {	/* more than the hash buckets */
		s = spare(test);
		mdr_waitlist_park(&wl, i * 1000, test_bio(test), false, &s, 0);
	}
	while ((w = mdr_waitlist_pop_any(&wl))) {
		free_bios(&w->bios);
		kfree(w);
		n++;
	}
	KUNIT_EXPECT_EQ(test, n, 300U);
	KUNIT_EXPECT_EQ(test, mdr_waitlist_count(&wl), 0U);
}

static void mdr_waitlist_test_expect_read_ahead(struct kunit *test)
{
	struct mdr_waitlist wl;
	struct bio *a = test_bio(test);
	struct bio_list out = BIO_EMPTY_LIST;
	struct mdr_wait *s = spare(test), *w;
	unsigned long flags;

	mdr_waitlist_init(&wl);
	/* read ahead: registered as fetched, with no bio */
	KUNIT_EXPECT_TRUE(test, mdr_waitlist_expect(&wl, 4, &s, 50));
	KUNIT_EXPECT_NULL(test, s);
	s = spare(test);
	KUNIT_EXPECT_FALSE(test, mdr_waitlist_expect(&wl, 4, &s, 51));
	KUNIT_EXPECT_NOT_NULL(test, s);	/* unchanged: the caller frees it */
	/* a bio for it rides on that fetch */
	KUNIT_EXPECT_EQ(test, mdr_waitlist_park(&wl, 4, a, false, &s, 52),
			MDR_PARK_JOINED);
	kfree(s);
	/* but one that needs an allocation still asks for it */
	s = spare(test);
	KUNIT_EXPECT_EQ(test, mdr_waitlist_park(&wl, 4, test_bio(test), true,
						&s, 53), MDR_PARK_ALLOC);
	kfree(s);
	/* nothing asked for extent 5: no wait to answer */
	KUNIT_EXPECT_NULL(test, mdr_waitlist_detach(&wl, 5));
	w = mdr_waitlist_detach(&wl, 4);
	KUNIT_ASSERT_NOT_NULL(test, w);
	KUNIT_EXPECT_EQ(test, w->since, 50UL);
	KUNIT_EXPECT_PTR_EQ(test, bio_list_peek(&w->bios), a);
	KUNIT_EXPECT_EQ(test, mdr_waitlist_count(&wl), 0U);
	KUNIT_EXPECT_FALSE(test, mdr_waitlist_take(&wl, 4, &out, &flags));
	free_bios(&w->bios);
	kfree(w);
}

static void mdr_waitlist_test_repark_keeps_age(struct kunit *test)
{
	struct mdr_waitlist wl;
	struct bio *a = test_bio(test), *b = test_bio(test);
	struct bio_list out = BIO_EMPTY_LIST;
	struct mdr_wait *s = spare(test), *w;
	unsigned long flags;

	mdr_waitlist_init(&wl);
	mdr_waitlist_park(&wl, 9, a, false, &s, 100);
	mdr_waitlist_mark_stale(&wl, 9, 1);
	/* the stale answer came: the wait leaves the list with its bios */
	w = mdr_waitlist_detach(&wl, 9);
	KUNIT_ASSERT_NOT_NULL(test, w);
	KUNIT_EXPECT_TRUE(test, test_bit(MDR_WAIT_STALE, &w->flags));
	/* meanwhile another bio parked and started a fetch of its own */
	s = spare(test);
	KUNIT_EXPECT_EQ(test, mdr_waitlist_park(&wl, 9, b, false, &s, 300),
			MDR_PARK_FETCH);
	/* back in: it rides on that fetch, first in line, with its age */
	KUNIT_EXPECT_EQ(test, mdr_waitlist_repark(&wl, w), MDR_PARK_JOINED);
	KUNIT_EXPECT_EQ(test, mdr_waitlist_count(&wl), 1U);
	w = mdr_waitlist_detach(&wl, 9);
	KUNIT_ASSERT_NOT_NULL(test, w);
	KUNIT_EXPECT_EQ(test, w->since, 100UL);
	KUNIT_EXPECT_FALSE(test, test_bit(MDR_WAIT_STALE, &w->flags));
	KUNIT_EXPECT_PTR_EQ(test, bio_list_pop(&w->bios), a);
	KUNIT_EXPECT_PTR_EQ(test, bio_list_pop(&w->bios), b);

	/* alone, it is linked again and needs a fetch, still as old */
	bio_list_add(&w->bios, a);
	__set_bit(MDR_WAIT_STALE, &w->flags);
	KUNIT_EXPECT_EQ(test, mdr_waitlist_repark(&wl, w), MDR_PARK_FETCH);
	KUNIT_ASSERT_TRUE(test, mdr_waitlist_take(&wl, 9, &out, &flags));
	KUNIT_EXPECT_TRUE(test, test_bit(MDR_WAIT_FETCH, &flags));
	KUNIT_EXPECT_FALSE(test, test_bit(MDR_WAIT_STALE, &flags));
	KUNIT_EXPECT_PTR_EQ(test, bio_list_pop(&out), a);
	kfree(a);
	kfree(b);
}

/* due(): a bio is "late" when its bi_private says so */
static bool test_due(struct bio *bio, unsigned long since, void *arg)
{
	unsigned long *seen = arg;

	*seen = since;
	return bio->bi_private == arg;
}

static void mdr_waitlist_test_expire_keeps_the_wait(struct kunit *test)
{
	struct bio *a = test_bio(test), *b = test_bio(test), *c = test_bio(test);
	struct bio_list out = BIO_EMPTY_LIST;
	struct mdr_wait *s = spare(test);
	struct mdr_waitlist wl;
	unsigned long flags, seen = 0;

	mdr_waitlist_init(&wl);
	/* nothing parked: nothing taken, nothing left */
	KUNIT_EXPECT_EQ(test, mdr_waitlist_expire(&wl, test_due, &seen, &out),
			0U);
	KUNIT_EXPECT_TRUE(test, bio_list_empty(&out));

	mdr_waitlist_park(&wl, 4, a, true, &s, 100);
	s = spare(test);
	mdr_waitlist_park(&wl, 4, b, true, &s, 200);
	kfree(s);
	s = spare(test);
	mdr_waitlist_park(&wl, 4, c, true, &s, 300);
	kfree(s);
	a->bi_private = &seen;
	c->bi_private = &seen;
	KUNIT_EXPECT_EQ(test, mdr_waitlist_expire(&wl, test_due, &seen, &out),
			1U);
	KUNIT_EXPECT_EQ(test, seen, 100UL);	/* the extent's first park */
	KUNIT_EXPECT_PTR_EQ(test, bio_list_pop(&out), a);
	KUNIT_EXPECT_PTR_EQ(test, bio_list_pop(&out), c);
	KUNIT_EXPECT_TRUE(test, bio_list_empty(&out));

	/* the allocation in flight still serves the extent: no second one */
	s = spare(test);
	KUNIT_EXPECT_EQ(test, mdr_waitlist_park(&wl, 4, a, true, &s, 400),
			MDR_PARK_JOINED);
	kfree(s);
	KUNIT_EXPECT_EQ(test, mdr_waitlist_count(&wl), 1U);
	/* and its answer takes back what stayed, in order */
	KUNIT_ASSERT_TRUE(test, mdr_waitlist_take(&wl, 4, &out, &flags));
	KUNIT_EXPECT_TRUE(test, test_bit(MDR_WAIT_ALLOC, &flags));
	KUNIT_EXPECT_PTR_EQ(test, bio_list_pop(&out), b);
	KUNIT_EXPECT_PTR_EQ(test, bio_list_pop(&out), a);
	KUNIT_EXPECT_TRUE(test, bio_list_empty(&out));
	kfree(a);
	kfree(b);
	kfree(c);
}

static struct kunit_case mdr_waitlist_test_cases[] = {
	KUNIT_CASE(mdr_waitlist_test_first_fetches_others_join),
	KUNIT_CASE(mdr_waitlist_test_alloc_asked_once),
	KUNIT_CASE(mdr_waitlist_test_stale_marks_range),
	KUNIT_CASE(mdr_waitlist_test_pop_any_empties),
	KUNIT_CASE(mdr_waitlist_test_expect_read_ahead),
	KUNIT_CASE(mdr_waitlist_test_repark_keeps_age),
	KUNIT_CASE(mdr_waitlist_test_expire_keeps_the_wait),
	{}
};

static struct kunit_suite mdr_waitlist_test_suite = {
	.name = "mdroute_waitlist",
	.test_cases = mdr_waitlist_test_cases,
};
kunit_test_suite(mdr_waitlist_test_suite);
