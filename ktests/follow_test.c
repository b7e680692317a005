// SPDX-License-Identifier: GPL-2.0
/*
 * follow_test.c - KUnit: which replica of a group a connection goes to.
 */
#include <kunit/test.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/slab.h>

#include "proto/proto.h"
#include "transport/follow.h"

static struct sockaddr_storage mdr_v4(u8 last, u16 port)
{
	struct sockaddr_storage ss = {};
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	sin->sin_addr.s_addr = htonl(0xc0000200 | last);	/* 192.0.2.x */
	return ss;
}

static struct mdr_leader_info mdr_leader(u32 replica, u64 epoch, u8 last)
{
	struct mdr_leader_info l = {
		.epoch = epoch, .replica = replica, .port = 4791,
		.family = MDR_FAMILY_IPV4, .addr = { 192, 0, 2, last },
	};

	return l;
}

/* Three replicas, the second attached first. */
static struct mdr_follow *mdr_follow_new(struct kunit *test)
{
	struct mdr_follow *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	struct sockaddr_storage set[3] = {
		mdr_v4(1, 4791), mdr_v4(2, 4791), mdr_v4(3, 4791),
	};

	KUNIT_ASSERT_NOT_NULL(test, f);
	mdr_follow_init(f, &set[1], set, 3);
	return f;
}

static bool mdr_is(const struct sockaddr_storage *a, u8 last)
{
	struct sockaddr_storage want = mdr_v4(last, 4791);

	return mdr_addr_same(a, &want);
}

/* Without hints: the replicas after the first, round robin. */
static void mdr_follow_test_round_robin(struct kunit *test)
{
	struct mdr_follow *f = mdr_follow_new(test);

	KUNIT_EXPECT_TRUE(test, mdr_is(&f->now, 2));
	KUNIT_EXPECT_TRUE(test, mdr_is(mdr_follow_pick(f), 3));
	KUNIT_EXPECT_TRUE(test, mdr_is(mdr_follow_pick(f), 1));
	KUNIT_EXPECT_TRUE(test, mdr_is(mdr_follow_pick(f), 2));
	KUNIT_EXPECT_TRUE(test, mdr_is(mdr_follow_pick(f), 3));
	KUNIT_EXPECT_EQ(test, f->hops, 4U);
	mdr_follow_served(f);
	KUNIT_EXPECT_EQ(test, f->hops, 0U);
}

/* A node of its own: always the same address, whatever is named. */
static void mdr_follow_test_single_node(struct kunit *test)
{
	struct mdr_follow *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	struct sockaddr_storage only = mdr_v4(9, 4000);

	KUNIT_ASSERT_NOT_NULL(test, f);
	mdr_follow_init(f, &only, NULL, 0);
	KUNIT_EXPECT_EQ(test, f->nr, 1U);
	KUNIT_EXPECT_TRUE(test, mdr_addr_same(mdr_follow_pick(f), &only));
	KUNIT_EXPECT_TRUE(test, mdr_addr_same(mdr_follow_pick(f), &only));
}

/* A named leader is where the next connection goes, once. */
static void mdr_follow_test_hint_once(struct kunit *test)
{
	struct mdr_follow *f = mdr_follow_new(test);
	struct mdr_leader_info l = mdr_leader(1, 7, 1);

	KUNIT_EXPECT_EQ(test, mdr_follow_refused(f, &l), MDR_FOLLOW_GO);
	KUNIT_EXPECT_EQ(test, f->epoch, 7ULL);
	KUNIT_EXPECT_TRUE(test, mdr_is(mdr_follow_pick(f), 1));
	/* the leader failed: the round robin goes on where it was */
	mdr_follow_lost(f);
	KUNIT_EXPECT_TRUE(test, mdr_is(mdr_follow_pick(f), 3));
}

/* The round robin does not go straight back to the one that failed. */
static void mdr_follow_test_pass_over_lost(struct kunit *test)
{
	struct mdr_follow *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	struct sockaddr_storage set[3] = {
		mdr_v4(1, 4791), mdr_v4(2, 4791), mdr_v4(3, 4791),
	};
	struct mdr_leader_info l = mdr_leader(1, 4, 1);

	KUNIT_ASSERT_NOT_NULL(test, f);
	mdr_follow_init(f, &set[2], set, 3);
	KUNIT_EXPECT_EQ(test, mdr_follow_refused(f, &l), MDR_FOLLOW_GO);
	KUNIT_EXPECT_TRUE(test, mdr_is(mdr_follow_pick(f), 1));
	mdr_follow_lost(f);		/* the named leader is gone */
	KUNIT_EXPECT_TRUE(test, mdr_is(mdr_follow_pick(f), 2));
	KUNIT_EXPECT_TRUE(test, mdr_is(mdr_follow_pick(f), 3));
	/* once a leader served, every replica is in the turn again */
	mdr_follow_served(f);
	KUNIT_EXPECT_TRUE(test, mdr_is(mdr_follow_pick(f), 1));
}

/* A leader outside the attached set (added since) is followed too. */
static void mdr_follow_test_hint_outside_set(struct kunit *test)
{
	struct mdr_follow *f = mdr_follow_new(test);
	struct mdr_leader_info l = mdr_leader(4, 3, 44);

	KUNIT_EXPECT_EQ(test, mdr_follow_refused(f, &l), MDR_FOLLOW_GO);
	KUNIT_EXPECT_TRUE(test, mdr_is(mdr_follow_pick(f), 44));
	KUNIT_EXPECT_TRUE(test, mdr_is(mdr_follow_pick(f), 3));
}

/* No leader known, or the replica names itself (it is taking over). */
static void mdr_follow_test_wait(struct kunit *test)
{
	struct mdr_follow *f = mdr_follow_new(test);
	struct mdr_leader_info none = {};
	struct mdr_leader_info self = mdr_leader(2, 5, 2);

	KUNIT_EXPECT_EQ(test, mdr_follow_refused(f, &none), MDR_FOLLOW_WAIT);
	KUNIT_EXPECT_EQ(test, f->epoch, 0ULL);
	KUNIT_EXPECT_EQ(test, mdr_follow_refused(f, &self), MDR_FOLLOW_WAIT);
	KUNIT_EXPECT_EQ(test, f->epoch, 5ULL);
	KUNIT_EXPECT_FALSE(test, f->hinted);
}

/*
 * A replica cut from the others may never learn a leader: after
 * MDR_FOLLOW_WAITS answers on one connection the host moves on, and a new
 * connection waits as many again.
 */
static void mdr_follow_test_wait_bounded(struct kunit *test)
{
	struct mdr_follow *f = mdr_follow_new(test);
	struct mdr_leader_info none = {};
	unsigned int i;

	for (i = 1; i < MDR_FOLLOW_WAITS; i++)
		KUNIT_EXPECT_EQ(test, mdr_follow_refused(f, &none),
				MDR_FOLLOW_WAIT);
	KUNIT_EXPECT_EQ(test, mdr_follow_refused(f, &none), MDR_FOLLOW_NEXT);
	mdr_follow_lost(f);
	KUNIT_EXPECT_TRUE(test, mdr_is(mdr_follow_pick(f), 3));
	KUNIT_EXPECT_EQ(test, mdr_follow_refused(f, &none), MDR_FOLLOW_WAIT);
	KUNIT_EXPECT_EQ(test, f->waits, 1U);
}

/*
 * The leader died: a replica that names it at the epoch already seen has
 * not seen the election; one that names it at a newer epoch has. After
 * MDR_FOLLOW_WAITS answers the host goes back anyway.
 */
static void mdr_follow_test_lost_leader(struct kunit *test)
{
	struct mdr_follow *f = mdr_follow_new(test);
	struct mdr_leader_info old = mdr_leader(2, 5, 2);
	struct mdr_leader_info newer = mdr_leader(2, 6, 2);
	unsigned int i;

	KUNIT_EXPECT_TRUE(test, mdr_follow_epoch_ok(f, 5));
	mdr_follow_lost(f);				/* replica 2 */
	KUNIT_EXPECT_TRUE(test, mdr_is(mdr_follow_pick(f), 3));
	for (i = 1; i < MDR_FOLLOW_WAITS; i++)
		KUNIT_EXPECT_EQ(test, mdr_follow_refused(f, &old),
				MDR_FOLLOW_WAIT);
	KUNIT_EXPECT_EQ(test, mdr_follow_refused(f, &old), MDR_FOLLOW_GO);
	KUNIT_EXPECT_TRUE(test, mdr_is(mdr_follow_pick(f), 2));

	mdr_follow_lost(f);
	KUNIT_EXPECT_TRUE(test, mdr_is(mdr_follow_pick(f), 1));
	KUNIT_EXPECT_EQ(test, mdr_follow_refused(f, &newer), MDR_FOLLOW_GO);
	KUNIT_EXPECT_EQ(test, f->epoch, 6ULL);

	/* served: nothing is lost any more */
	mdr_follow_served(f);
	KUNIT_EXPECT_FALSE(test, f->lost);
}

/* Epochs only grow, whether served or named. */
static void mdr_follow_test_epochs(struct kunit *test)
{
	struct mdr_follow *f = mdr_follow_new(test);
	struct mdr_leader_info l = mdr_leader(1, 12, 1);

	KUNIT_EXPECT_TRUE(test, mdr_follow_epoch_ok(f, 0));
	KUNIT_EXPECT_TRUE(test, mdr_follow_epoch_ok(f, 10));
	KUNIT_EXPECT_TRUE(test, mdr_follow_epoch_ok(f, 10));
	KUNIT_EXPECT_FALSE(test, mdr_follow_epoch_ok(f, 9));
	KUNIT_EXPECT_FALSE(test, mdr_follow_epoch_ok(f, 0));
	mdr_follow_refused(f, &l);
	KUNIT_EXPECT_FALSE(test, mdr_follow_epoch_ok(f, 11));
	KUNIT_EXPECT_TRUE(test, mdr_follow_epoch_ok(f, 12));
	KUNIT_EXPECT_EQ(test, f->epoch, 12ULL);
}

/* A second attach's set: the replicas new to the connection join it. */
static void mdr_follow_test_merge(struct kunit *test)
{
	struct mdr_follow *f = mdr_follow_new(test);
	struct sockaddr_storage more[3] = {
		mdr_v4(3, 4791), mdr_v4(4, 4791), mdr_v4(2, 4792),
	};

	KUNIT_EXPECT_EQ(test, mdr_follow_merge(f, more, 3), 0U);
	KUNIT_EXPECT_EQ(test, f->nr, 5U);
	/* the round robin goes on where it was, then reaches the new ones */
	KUNIT_EXPECT_TRUE(test, mdr_is(mdr_follow_pick(f), 3));
	KUNIT_EXPECT_TRUE(test, mdr_is(mdr_follow_pick(f), 4));
	KUNIT_EXPECT_TRUE(test, mdr_addr_same(mdr_follow_pick(f), &more[2]));
	KUNIT_EXPECT_TRUE(test, mdr_is(mdr_follow_pick(f), 1));
	/* the same set again adds nothing */
	KUNIT_EXPECT_EQ(test, mdr_follow_merge(f, more, 3), 0U);
	KUNIT_EXPECT_EQ(test, f->nr, 5U);
}

/* A set that does not fit: what fits joins, the rest is counted. */
static void mdr_follow_test_merge_full(struct kunit *test)
{
	struct mdr_follow *f = mdr_follow_new(test);
	struct sockaddr_storage more[MDR_REPLICAS_MAX];
	unsigned int i;

	for (i = 0; i < MDR_REPLICAS_MAX; i++)
		more[i] = mdr_v4(10 + i, 4791);
	KUNIT_EXPECT_EQ(test, mdr_follow_merge(f, more, MDR_REPLICAS_MAX), 3U);
	KUNIT_EXPECT_EQ(test, f->nr, (unsigned int)MDR_REPLICAS_MAX);
	KUNIT_EXPECT_TRUE(test, mdr_is(&f->set[2], 3));
	KUNIT_EXPECT_TRUE(test, mdr_addr_same(&f->set[7], &more[4]));
	KUNIT_EXPECT_EQ(test, mdr_follow_merge(f, more, MDR_REPLICAS_MAX), 3U);
}

static void mdr_follow_test_leader_addr(struct kunit *test)
{
	struct mdr_leader_info l6 = {
		.epoch = 1, .replica = 3, .port = 4800,
		.family = MDR_FAMILY_IPV6,
		.addr = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 },
	};
	struct mdr_leader_info none = {};
	struct mdr_leader_info l4 = mdr_leader(1, 1, 7);
	struct sockaddr_storage ss, want = mdr_v4(7, 4791);
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

	KUNIT_EXPECT_EQ(test, mdr_leader_addr(&l4, &ss), 0);
	KUNIT_EXPECT_TRUE(test, mdr_addr_same(&ss, &want));
	KUNIT_EXPECT_EQ(test, mdr_leader_addr(&l6, &ss), 0);
	KUNIT_EXPECT_EQ(test, ss.ss_family, AF_INET6);
	KUNIT_EXPECT_EQ(test, ntohs(sin6->sin6_port), 4800);
	KUNIT_EXPECT_EQ(test, sin6->sin6_addr.s6_addr[0], 0x20);
	KUNIT_EXPECT_EQ(test, sin6->sin6_addr.s6_addr[15], 1);
	KUNIT_EXPECT_EQ(test, mdr_leader_addr(&none, &ss), -ENOENT);
	/* a leader at the unspecified address is not followed */
	memset(l4.addr, 0, sizeof(l4.addr));
	KUNIT_EXPECT_EQ(test, mdr_leader_addr(&l4, &ss), -ENOENT);
}

static struct kunit_case mdr_follow_test_cases[] = {
	KUNIT_CASE(mdr_follow_test_round_robin),
	KUNIT_CASE(mdr_follow_test_single_node),
	KUNIT_CASE(mdr_follow_test_hint_once),
	KUNIT_CASE(mdr_follow_test_pass_over_lost),
	KUNIT_CASE(mdr_follow_test_hint_outside_set),
	KUNIT_CASE(mdr_follow_test_wait),
	KUNIT_CASE(mdr_follow_test_wait_bounded),
	KUNIT_CASE(mdr_follow_test_lost_leader),
	KUNIT_CASE(mdr_follow_test_epochs),
	KUNIT_CASE(mdr_follow_test_merge),
	KUNIT_CASE(mdr_follow_test_merge_full),
	KUNIT_CASE(mdr_follow_test_leader_addr),
	{}
};

static struct kunit_suite mdr_follow_test_suite = {
	.name = "mdroute_follow",
	.test_cases = mdr_follow_test_cases,
};
kunit_test_suite(mdr_follow_test_suite);
