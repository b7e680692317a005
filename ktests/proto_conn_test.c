// SPDX-License-Identifier: GPL-2.0
/*
 * proto_conn_test.c - KUnit: a host connection's private data, the version
 * both ends speak, its reconnect backoff and lease arithmetic
 * (kmod/proto/conn.c, lease.c).
 */
#include <kunit/test.h>
#include <linux/string.h>

#include "proto_test.h"

static void proto_test_conn_req_encode(struct kunit *test)
{
	struct mdr_wire_conn_req r;
	struct mdr_conn_params bad = sent;

	KUNIT_ASSERT_EQ(test, mdr_conn_req_encode(&r, &sent), 0);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(r.magic), MDR_WIRE_CONN_MAGIC);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(r.role), (u16)MDR_ROLE_HOST);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(r.tenant), 5U);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(r.host_id), sent.host_id);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(r.queue_depth), 16);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(r.recv_depth), 32);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(r.max_msg), 256U);
	KUNIT_EXPECT_TRUE(test, !memchr_inv(r.reserved, 0, sizeof(r.reserved)));

	bad.recv_depth = bad.queue_depth;
	KUNIT_EXPECT_EQ(test, mdr_conn_req_encode(&r, &bad), -EINVAL);
	bad = sent;
	bad.max_msg = MDR_WIRE_MSG_MIN - 1;
	KUNIT_EXPECT_EQ(test, mdr_conn_req_encode(&r, &bad), -EINVAL);
	bad = sent;
	bad.version_min = 0;
	KUNIT_EXPECT_EQ(test, mdr_conn_req_encode(&r, &bad), -EINVAL);
}

struct rep_case {
	const char *name;
	u32 magic;
	u16 version, flags, queue_depth, push_credits;
	u32 max_msg;
	u8 nonce0;
	size_t len;
	int want;
};

static const struct rep_case rep_cases[] = {
	{ "good", MDR_WIRE_CONN_MAGIC, MDR_WIRE_VERSION, 0, 16, 16, 4096, 0x5a,
	  48, 0 },
	{ "padded by rdma_cm", MDR_WIRE_CONN_MAGIC, MDR_WIRE_VERSION, 0, 16,
	  16, 4096, 0x5a, 56, 0 },
	{ "smaller queue", MDR_WIRE_CONN_MAGIC, MDR_WIRE_VERSION, 0, 4, 8,
	  4096, 0x5a, 48, 0 },
	{ "short", MDR_WIRE_CONN_MAGIC, MDR_WIRE_VERSION, 0, 16, 16, 4096, 0x5a,
	  47, -EPROTO },
	{ "empty", MDR_WIRE_CONN_MAGIC, MDR_WIRE_VERSION, 0, 16, 16, 4096, 0x5a,
	  0, -EPROTO },
	{ "bad magic", 0x12345678, MDR_WIRE_VERSION, 0, 16, 16, 4096, 0x5a, 48,
	  -EPROTO },
	{ "version above asked", MDR_WIRE_CONN_MAGIC, MDR_WIRE_VERSION + 1, 0,
	  16, 16, 4096, 0x5a, 48, -EPROTO },
	{ "version zero", MDR_WIRE_CONN_MAGIC, 0, 0, 16, 16, 4096, 0x5a, 48,
	  -EPROTO },
	{ "flags", MDR_WIRE_CONN_MAGIC, MDR_WIRE_VERSION, 1, 16, 16, 4096, 0x5a,
	  48, -EINVAL },
	{ "queue depth zero", MDR_WIRE_CONN_MAGIC, MDR_WIRE_VERSION, 0, 0, 16,
	  4096, 0x5a, 48, -EINVAL },
	{ "queue depth above asked", MDR_WIRE_CONN_MAGIC, MDR_WIRE_VERSION, 0,
	  17, 15, 4096, 0x5a, 48, -EINVAL },
	{ "push credits beyond buffers", MDR_WIRE_CONN_MAGIC,
	  MDR_WIRE_VERSION, 0, 16, 17, 4096, 0x5a, 48, -EINVAL },
	{ "no push credits", MDR_WIRE_CONN_MAGIC, MDR_WIRE_VERSION, 0, 16, 0,
	  4096, 0x5a, 48, -EINVAL },
	{ "max_msg too small", MDR_WIRE_CONN_MAGIC, MDR_WIRE_VERSION, 0, 16,
	  16, 255, 0x5a, 48, -EINVAL },
	{ "max_msg too large", MDR_WIRE_CONN_MAGIC, MDR_WIRE_VERSION, 0, 16,
	  16, MDR_WIRE_MSG_MAX + 1, 0x5a, 48, -EINVAL },
	{ "version 3 without a nonce", MDR_WIRE_CONN_MAGIC, 3, 0, 16, 16,
	  4096, 0, 48, -EINVAL },
	{ "version 2, no nonce", MDR_WIRE_CONN_MAGIC, 2, 0, 16, 16, 4096, 0,
	  48, 0 },
	{ "nonce before version 3", MDR_WIRE_CONN_MAGIC, 2, 0, 16, 16, 4096,
	  1, 48, -EINVAL },
};

static void rep_case_desc(const struct rep_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(rep, rep_cases, rep_case_desc);

static void proto_test_conn_rep(struct kunit *test)
{
	const struct rep_case *c = test->param_value;
	u8 buf[64] = {};
	struct mdr_wire_conn_rep *r = (void *)buf;
	struct mdr_conn_accept a;
	const char *why = NULL;
	int ret;

	r->magic = cpu_to_le32(c->magic);
	r->version = cpu_to_le16(c->version);
	r->flags = cpu_to_le16(c->flags);
	r->queue_depth = cpu_to_le16(c->queue_depth);
	r->push_credits = cpu_to_le16(c->push_credits);
	r->max_msg = cpu_to_le32(c->max_msg);
	r->node_id = cpu_to_le64(77);
	r->boot_id = cpu_to_le64(0xb007);
	r->nonce[3] = c->nonce0;
	ret = mdr_conn_rep_parse(c->len ? buf : NULL, c->len, &sent, &a, &why);
	KUNIT_EXPECT_EQ(test, ret, c->want);
	if (ret) {
		KUNIT_EXPECT_NOT_NULL(test, why);
		return;
	}
	KUNIT_EXPECT_EQ(test, a.version, c->version);
	KUNIT_EXPECT_EQ(test, a.nonce[3], c->nonce0);
	KUNIT_EXPECT_EQ(test, a.queue_depth, c->queue_depth);
	KUNIT_EXPECT_EQ(test, a.push_credits, c->push_credits);
	KUNIT_EXPECT_EQ(test, a.node_id, 77ULL);
	KUNIT_EXPECT_EQ(test, a.boot_id, 0xb007ULL);
}

static void proto_test_conn_rej(struct kunit *test)
{
	struct mdr_wire_conn_rej r = {
		.magic = cpu_to_le32(MDR_WIRE_CONN_MAGIC),
		.version = cpu_to_le16(1),
		.status = cpu_to_le16(MDR_ST_VERSION),
	};
	const char *why;
	u16 st, ver;

	KUNIT_EXPECT_EQ(test, mdr_conn_rej_parse(&r, sizeof(r), &st, &ver,
						 &why), 0);
	KUNIT_EXPECT_EQ(test, st, (u16)MDR_ST_VERSION);
	KUNIT_EXPECT_EQ(test, mdr_conn_rej_parse(NULL, 0, &st, &ver, &why),
			-EPROTO);
	KUNIT_EXPECT_EQ(test, mdr_conn_rej_parse(&r, sizeof(r) - 1, &st, &ver,
						 &why), -EPROTO);
	r.version = 0;
	KUNIT_EXPECT_EQ(test, mdr_conn_rej_parse(&r, sizeof(r), &st, &ver,
						 &why), -EINVAL);
	r.status = cpu_to_le16(MDR_ST_OK);
	KUNIT_EXPECT_EQ(test, mdr_conn_rej_parse(&r, sizeof(r), &st, &ver,
						 &why), -EINVAL);
	r.status = cpu_to_le16(MDR_ST_MAX);
	KUNIT_EXPECT_EQ(test, mdr_conn_rej_parse(&r, sizeof(r), &st, &ver,
						 &why), -EINVAL);
	r.status = cpu_to_le16(MDR_ST_PERM);
	r.magic = 0;
	KUNIT_EXPECT_EQ(test, mdr_conn_rej_parse(&r, sizeof(r), &st, &ver,
						 &why), -EPROTO);
}

static void proto_test_version_negotiate(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, mdr_version_negotiate(1, 1), 1);
	KUNIT_EXPECT_EQ(test, mdr_version_negotiate(1, 9), MDR_WIRE_VERSION);
	KUNIT_EXPECT_EQ(test, mdr_version_negotiate(MDR_WIRE_VERSION + 1, 9),
			-EPROTONOSUPPORT);
	KUNIT_EXPECT_EQ(test, mdr_version_negotiate(2, 1), -EPROTONOSUPPORT);
	KUNIT_EXPECT_EQ(test, mdr_version_negotiate(0, 0), -EPROTONOSUPPORT);
}



static void proto_test_backoff_bounds(struct kunit *test)
{
	static const u32 rnds[] = { 0, 1, 499, 500, 0x7fffffff, 0xffffffff };
	unsigned int a, i;

	for (a = 0; a < 40; a++) {
		u64 d = a < 6 ? 1000ULL << a : 30000;

		d = min_t(u64, d, 30000);
		for (i = 0; i < ARRAY_SIZE(rnds); i++) {
			u32 ms = mdr_backoff_ms(a, 1000, 30000, rnds[i]);

			KUNIT_EXPECT_GE(test, ms, (u32)(d / 2));
			KUNIT_EXPECT_LE(test, ms, (u32)d);
		}
	}
	KUNIT_EXPECT_EQ(test, mdr_backoff_ms(0, 1000, 30000, 0), 500U);
	KUNIT_EXPECT_EQ(test, mdr_backoff_ms(1, 1000, 30000, 1000), 2000U);
	KUNIT_EXPECT_EQ(test, mdr_backoff_ms(~0U, 1000, 30000, 0), 15000U);
	KUNIT_EXPECT_EQ(test, mdr_backoff_ms(3, 0, 30000, 7), 0U);
}

static void proto_test_backoff_jitter_spreads(struct kunit *test)
{
	u32 lo = mdr_backoff_ms(2, 1000, 30000, 0);
	u32 hi = mdr_backoff_ms(2, 1000, 30000, 2000);

	KUNIT_EXPECT_EQ(test, lo, 2000U);
	KUNIT_EXPECT_EQ(test, hi, 4000U);
}

static void proto_test_lease_deadline(struct kunit *test)
{
	const u64 t0 = 1000ULL * NSEC_PER_SEC;
	/* 5 s lease: margin 100 + 78 ms */
	u64 dl = mdr_lease_deadline(t0, 5000);

	KUNIT_EXPECT_EQ(test, mdr_lease_margin_ms(5000), 178ULL);
	KUNIT_EXPECT_EQ(test, dl, t0 + 4822ULL * NSEC_PER_MSEC);
	KUNIT_EXPECT_TRUE(test, mdr_lease_valid(dl - 1, dl));
	KUNIT_EXPECT_FALSE(test, mdr_lease_valid(dl, dl));
	KUNIT_EXPECT_LT(test, mdr_lease_renew_at(t0, 5000), dl);
	KUNIT_EXPECT_EQ(test, mdr_lease_renew_at(t0, 5000),
			t0 + 1666ULL * NSEC_PER_MSEC);
	/* a lease shorter than the margin is expired when it arrives */
	KUNIT_EXPECT_EQ(test, mdr_lease_deadline(t0, 100), t0);
	KUNIT_EXPECT_FALSE(test, mdr_lease_valid(t0, mdr_lease_deadline(t0, 1)));
	/* the largest lease does not overflow */
	KUNIT_EXPECT_GT(test, mdr_lease_deadline(t0, U32_MAX), t0);
}

static struct kunit_case proto_conn_test_cases[] = {
	KUNIT_CASE(proto_test_conn_req_encode),
	KUNIT_CASE_PARAM(proto_test_conn_rep, rep_gen_params),
	KUNIT_CASE(proto_test_conn_rej),
	KUNIT_CASE(proto_test_version_negotiate),
	KUNIT_CASE(proto_test_backoff_bounds),
	KUNIT_CASE(proto_test_backoff_jitter_spreads),
	KUNIT_CASE(proto_test_lease_deadline),
	{}
};

static struct kunit_suite proto_conn_test_suite = {
	.name = "mdroute_proto_conn",
	.test_cases = proto_conn_test_cases,
};

kunit_test_suite(proto_conn_test_suite);

MODULE_LICENSE("GPL");
