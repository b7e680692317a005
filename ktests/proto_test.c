// SPDX-License-Identifier: GPL-2.0
/*
 * proto_test.c - KUnit: extent entries, connection private data, message
 * validation, reconnect backoff and lease math of kmod/proto/.
 */
#include <crypto/hash.h>
#include <kunit/test.h>
#include <linux/crc32c.h>
#include <linux/string.h>

#include "proto/proto.h"

#define VOL	0x0123456789abcdefULL

static struct mdr_wire_entry make_entry(u64 gen, u64 pstart, u32 dev,
					u8 state, u64 vol, u64 index)
{
	struct mdr_wire_entry e;

	memset(&e, 0, sizeof(e));
	e.generation = cpu_to_le64(gen);
	e.pstart = cpu_to_le64(pstart);
	e.dev_id = cpu_to_le32(dev);
	e.state = state;
	mdr_entry_seal(&e, vol, index);
	return e;
}

/* ---- Entries --------------------------------------------------------- */

static void proto_test_entry_known_answer(struct kunit *test)
{
	static const u8 want[32] = {
		0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x5d, 0xd3, 0x89, 0x13,
	};
	struct mdr_wire_entry e = make_entry(7, 0x200000, 3, MDR_EXT_MAPPED,
					     VOL, 42);

	KUNIT_EXPECT_EQ(test, mdr_entry_crc(&e, VOL, 42), 0x1389d35dU);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(e.crc), 0x1389d35dU);
	KUNIT_EXPECT_EQ(test, memcmp(&e, want, sizeof(want)), 0);
	KUNIT_EXPECT_EQ(test, mdr_entry_check(&e, VOL, 42, 0), MDR_ENTRY_OK);
}

/* The entry is made for (VOL, 42); the case may break it, then checks. */
struct entry_case {
	const char *name;
	u64 gen, pstart;
	u32 dev;
	u8 state;
	void (*mangle)(struct mdr_wire_entry *e);
	bool reseal;		/* seal again after mangle */
	u64 vol, index, min_gen;	/* what the reader expects */
	enum mdr_entry_verdict want;
};

static void flip_pstart_bit(struct mdr_wire_entry *e)
{
	((u8 *)e)[9] ^= 0x01;
}

/* A READ racing a write: new generation, old placement. */
static void tear_entry(struct mdr_wire_entry *e)
{
	e->generation = cpu_to_le64(le64_to_cpu(e->generation) + 1);
}

static void flip_crc(struct mdr_wire_entry *e)
{
	e->crc ^= cpu_to_le32(0x80000000);
}

static void set_reserved(struct mdr_wire_entry *e)
{
	e->reserved[1] = 1;
}

static void set_reserved2(struct mdr_wire_entry *e)
{
	e->reserved2 = cpu_to_le32(1);
}

static const struct entry_case entry_cases[] = {
	{ "mapped", 7, 0x200000, 3, MDR_EXT_MAPPED, NULL, false,
	  VOL, 42, 0, MDR_ENTRY_OK },
	{ "unallocated", 1, 0, 0, MDR_EXT_UNALLOCATED, NULL, false,
	  VOL, 42, 0, MDR_ENTRY_OK },
	{ "frozen", 9, 0x800, 2, MDR_EXT_FROZEN, NULL, false,
	  VOL, 42, 0, MDR_ENTRY_OK },
	{ "same generation as seen", 7, 0x200000, 3, MDR_EXT_MAPPED, NULL,
	  false, VOL, 42, 7, MDR_ENTRY_OK },
	{ "torn: one bit", 7, 0x200000, 3, MDR_EXT_MAPPED, flip_pstart_bit,
	  false, VOL, 42, 0, MDR_ENTRY_BAD_CRC },
	{ "torn: racing update", 7, 0x200000, 3, MDR_EXT_MAPPED, tear_entry,
	  false, VOL, 42, 0, MDR_ENTRY_BAD_CRC },
	{ "crc flipped", 7, 0x200000, 3, MDR_EXT_MAPPED, flip_crc, false,
	  VOL, 42, 0, MDR_ENTRY_BAD_CRC },
	{ "misaddressed index", 7, 0x200000, 3, MDR_EXT_MAPPED, NULL, false,
	  VOL, 43, 0, MDR_ENTRY_BAD_CRC },
	{ "foreign volume", 7, 0x200000, 3, MDR_EXT_MAPPED, NULL, false,
	  VOL + 1, 42, 0, MDR_ENTRY_BAD_CRC },
	{ "stale generation", 7, 0x200000, 3, MDR_EXT_MAPPED, NULL, false,
	  VOL, 42, 8, MDR_ENTRY_STALE },
	{ "reserved set", 7, 0x200000, 3, MDR_EXT_MAPPED, set_reserved, true,
	  VOL, 42, 0, MDR_ENTRY_RESERVED },
	{ "reserved2 set", 7, 0x200000, 3, MDR_EXT_MAPPED, set_reserved2,
	  true, VOL, 42, 0, MDR_ENTRY_RESERVED },
	{ "state out of range", 7, 0x200000, 3, MDR_EXT_STATE_MAX, NULL,
	  false, VOL, 42, 0, MDR_ENTRY_BAD_STATE },
	{ "state 0xff", 7, 0x200000, 3, 0xff, NULL, false,
	  VOL, 42, 0, MDR_ENTRY_BAD_STATE },
	{ "unallocated with a device", 1, 0, 3, MDR_EXT_UNALLOCATED, NULL,
	  false, VOL, 42, 0, MDR_ENTRY_UNALLOC_PLACED },
	{ "unallocated with a pstart", 1, 8, 0, MDR_EXT_UNALLOCATED, NULL,
	  false, VOL, 42, 0, MDR_ENTRY_UNALLOC_PLACED },
	{ "generation zero", 0, 0x200000, 3, MDR_EXT_MAPPED, NULL, false,
	  VOL, 42, 0, MDR_ENTRY_ZERO_GEN },
	{ "mapped without a device", 7, 0x200000, 0, MDR_EXT_MAPPED, NULL,
	  false, VOL, 42, 0, MDR_ENTRY_NO_DEVICE },
	{ "frozen without a device", 7, 0x200000, 0, MDR_EXT_FROZEN, NULL,
	  false, VOL, 42, 0, MDR_ENTRY_NO_DEVICE },
};

static void entry_case_desc(const struct entry_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(entry, entry_cases, entry_case_desc);

static void proto_test_entry_check(struct kunit *test)
{
	const struct entry_case *c = test->param_value;
	struct mdr_wire_entry e = make_entry(c->gen, c->pstart, c->dev,
					     c->state, VOL, 42);

	if (c->mangle)
		c->mangle(&e);
	if (c->reseal)
		mdr_entry_seal(&e, VOL, 42);
	KUNIT_EXPECT_EQ(test, mdr_entry_check(&e, c->vol, c->index, c->min_gen),
			c->want);
	KUNIT_EXPECT_NOT_NULL(test, mdr_entry_verdict_name(c->want));
}

static void proto_test_entry_unaligned(struct kunit *test)
{
	u8 buf[sizeof(struct mdr_wire_entry) + 1];
	struct mdr_wire_entry e = make_entry(5, 0x1000, 9, MDR_EXT_MAPPED,
					     VOL, 7);

	memcpy(buf + 1, &e, sizeof(e));
	KUNIT_EXPECT_EQ(test, mdr_entry_check((void *)(buf + 1), VOL, 7, 5),
			MDR_ENTRY_OK);
}

/* ---- Connection private data ---------------------------------------- */

static const struct mdr_conn_params sent = {
	.version_min = MDR_WIRE_VERSION_MIN,
	.version_max = MDR_WIRE_VERSION,
	.tenant = 5,
	.host_id = 0x1122334455667788ULL,
	.queue_depth = 16,
	.recv_depth = 32,
	.max_msg = 256,
};

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

/* ---- Messages -------------------------------------------------------- */

static void put_hdr(void *buf, u16 op, u16 flags, u16 status, u32 len,
		    u64 req_id)
{
	struct mdr_wire_hdr h = {
		.magic = cpu_to_le16(MDR_WIRE_MSG_MAGIC),
		.opcode = cpu_to_le16(op),
		.flags = cpu_to_le16(flags),
		.status = cpu_to_le16(status),
		.length = cpu_to_le32(len),
		.req_id = cpu_to_le64(req_id),
	};

	memcpy(buf, &h, sizeof(h));
}

static size_t good_open_rep(void *buf)
{
	struct mdr_wire_open_rep r;

	memset(&r, 0, sizeof(r));
	put_hdr(&r, MDR_OP_OPEN, MDR_WIRE_F_REPLY, 0, sizeof(r), 9);
	r.volume_id = cpu_to_le64(VOL);
	r.size = cpu_to_le64(10ULL << 22);
	r.table_addr = cpu_to_le64(0x7f0000001000ULL);
	r.table_len = cpu_to_le64(10 * 32);
	r.table_rkey = cpu_to_le32(0x1234);
	r.extent_shift = cpu_to_le32(22);
	r.lease_ms = cpu_to_le32(5000);
	r.generation = cpu_to_le64(1);
	strscpy(r.name, "vol-1", sizeof(r.name));
	memcpy(buf, &r, sizeof(r));
	return sizeof(r);
}

static size_t good_inval(void *buf)
{
	struct mdr_wire_inval r;

	memset(&r, 0, sizeof(r));
	put_hdr(&r, MDR_OP_INVALIDATE, 0, 0, sizeof(r), 33);
	r.volume_id = cpu_to_le64(VOL);
	r.first = cpu_to_le64(4);
	r.count = cpu_to_le64(2);
	r.generation = cpu_to_le64(12);
	r.reason = cpu_to_le32(MDR_INVAL_MOVE);
	memcpy(buf, &r, sizeof(r));
	return sizeof(r);
}

static size_t good_alloc_rep(void *buf)
{
	struct mdr_wire_alloc_rep r;

	memset(&r, 0, sizeof(r));
	put_hdr(&r, MDR_OP_ALLOC, MDR_WIRE_F_REPLY, 0, sizeof(r), 3);
	r.volume_id = cpu_to_le64(VOL);
	r.index = cpu_to_le64(42);
	r.entry = make_entry(7, 0x200000, 3, MDR_EXT_MAPPED, VOL, 42);
	memcpy(buf, &r, sizeof(r));
	return sizeof(r);
}

static size_t good_renew_rep(void *buf)
{
	struct mdr_wire_renew_rep r;

	memset(&r, 0, sizeof(r));
	put_hdr(&r, MDR_OP_RENEW, MDR_WIRE_F_REPLY, 0, sizeof(r), 4);
	r.lease_ms = cpu_to_le32(5000);
	memcpy(buf, &r, sizeof(r));
	return sizeof(r);
}

/* Version 7: who answered, appended to an OK reply of @len bytes. */
static size_t add_serving(void *buf, size_t len, u64 epoch)
{
	struct mdr_wire_serving sv = {
		.epoch = cpu_to_le64(epoch),
		.record_addr = cpu_to_le64(epoch ? 0x7f0000200000ULL : 0),
		.record_rkey = cpu_to_le32(epoch ? 0x77 : 0),
	};
	__le32 total = cpu_to_le32(len + sizeof(sv));

	memcpy(buf + len, &sv, sizeof(sv));
	memcpy(buf + offsetof(struct mdr_wire_hdr, length), &total,
	       sizeof(total));
	return len + sizeof(sv);
}

static size_t good_open_rep_v7(void *buf)
{
	return add_serving(buf, good_open_rep(buf), 9);
}

static size_t good_renew_rep_v7(void *buf)
{
	return add_serving(buf, good_renew_rep(buf), 9);
}

static size_t good_alloc_rep_v7(void *buf)
{
	return add_serving(buf, good_alloc_rep(buf), 9);
}

/* A node of its own on version 7: epoch 0, no record. */
static size_t own_renew_rep_v7(void *buf)
{
	return add_serving(buf, good_renew_rep(buf), 0);
}

/* A bare header: how mdnode says no. */
static size_t error_rep(void *buf)
{
	put_hdr(buf, MDR_OP_CLOSE, MDR_WIRE_F_REPLY, MDR_ST_STALE, 24, 5);
	return 24;
}

/* A follower's answer to an ALLOC: replica 2 leads at 192.0.2.12:4791. */
static size_t not_leader_rep(void *buf)
{
	struct mdr_wire_leader l;

	put_hdr(buf, MDR_OP_ALLOC, MDR_WIRE_F_REPLY, MDR_ST_NOT_LEADER,
		24 + sizeof(l), 6);
	memset(&l, 0, sizeof(l));
	l.epoch = cpu_to_le64(0x1234);
	l.replica = cpu_to_le32(2);
	l.port = cpu_to_le16(4791);
	l.family = MDR_FAMILY_IPV4;
	l.addr[0] = 192;
	l.addr[2] = 2;
	l.addr[3] = 12;
	memcpy(buf + 24, &l, sizeof(l));
	return 24 + sizeof(l);
}

/* the version the cases speak unless they say: before replies say who served */
#define VNOW			(MDR_WIRE_VERSION_EPOCH - 1)
#define OFF(type, field)	offsetof(struct type, field)
#define LOFF(field)		(24 + offsetof(struct mdr_wire_leader, field))
/* a field of the serving trailer of a version 7 renew_rep */
#define SOFF(field)		(OFF(mdr_wire_renew_rep_v7, serving) + \
				 OFF(mdr_wire_serving, field))

/*
 * A good message of @base, with @size bytes at @off overwritten by @val
 * (little-endian), received as @received bytes (0: the message's length).
 */
struct msg_case {
	const char *name;
	size_t (*base)(void *buf);
	unsigned int off, size;
	u64 val;
	int received;
	int want;
	u16 version;	/* 0: VNOW */
};

static const struct msg_case msg_cases[] = {
	{ "open_rep good", good_open_rep, 0, 0, 0, 0, 0 },
	{ "inval good", good_inval, 0, 0, 0, 0, 0 },
	{ "alloc_rep good", good_alloc_rep, 0, 0, 0, 0, 0 },
	{ "renew_rep good", good_renew_rep, 0, 0, 0, 0, 0 },
	{ "received longer than length", good_inval, 0, 0, 0, 256, 0 },
	/* framing and header */
	{ "shorter than a header", good_inval, 0, 0, 0, 23, -EPROTO },
	{ "bad magic", good_inval, OFF(mdr_wire_hdr, magic), 2, 0x4d6e, 0,
	  -EPROTO },
	{ "length above received", good_inval, OFF(mdr_wire_hdr, length), 4,
	  65, 0, -EPROTO },
	{ "length below header", good_inval, OFF(mdr_wire_hdr, length), 4, 23,
	  0, -EPROTO },
	{ "length zero", good_inval, OFF(mdr_wire_hdr, length), 4, 0, 0,
	  -EPROTO },
	{ "length above MSG_MAX", good_inval, OFF(mdr_wire_hdr, length), 4,
	  MDR_WIRE_MSG_MAX + 1, 0, -EPROTO },
	{ "unknown opcode", good_inval, OFF(mdr_wire_hdr, opcode), 2, 0x11, 0,
	  -EPROTO },
	{ "unknown flags", good_inval, OFF(mdr_wire_hdr, flags), 2, 0x2, 0,
	  -EPROTO },
	{ "status out of range", good_open_rep, OFF(mdr_wire_hdr, status), 2,
	  MDR_ST_MAX, 0, -EPROTO },
	{ "status in a push", good_inval, OFF(mdr_wire_hdr, status), 2, 1, 0,
	  -EPROTO },
	{ "reserved in header", good_inval, OFF(mdr_wire_hdr, reserved), 4, 1,
	  0, -EPROTO },
	/* direction and size per opcode */
	{ "open request to a host", good_open_rep, OFF(mdr_wire_hdr, flags),
	  2, 0, 0, -EPROTO },
	{ "ack to a host", good_inval, OFF(mdr_wire_hdr, flags), 2,
	  MDR_WIRE_F_REPLY, 0, -EPROTO },
	{ "admin reply to a host", good_renew_rep, OFF(mdr_wire_hdr, opcode),
	  2, MDR_OP_VOL_LIST, 0, -EPROTO },
	{ "open_rep short", good_open_rep, OFF(mdr_wire_hdr, length), 4, 143,
	  0, -EPROTO },
	{ "inval long", good_inval, OFF(mdr_wire_hdr, length), 4, 65, 256,
	  -EPROTO },
	{ "renew_rep as a close_rep", good_renew_rep,
	  OFF(mdr_wire_hdr, opcode), 2, MDR_OP_CLOSE, 0, -EPROTO },
	{ "error reply with a body", good_renew_rep,
	  OFF(mdr_wire_hdr, status), 2, MDR_ST_STALE, 0, -EPROTO },
	{ "error reply", error_rep, 0, 0, 0, 0, 0 },
	{ "error reply padded", error_rep, 0, 0, 0, 64, 0 },
	{ "error reply of an admin op", error_rep, OFF(mdr_wire_hdr, opcode),
	  2, MDR_OP_VOL_INFO, 0, -EPROTO },
	{ "error reply status out of range", error_rep,
	  OFF(mdr_wire_hdr, status), 2, MDR_ST_MAX, 0, -EPROTO },
	{ "close_rep", error_rep, OFF(mdr_wire_hdr, opcode) + 2, 4,
	  MDR_WIRE_F_REPLY, 0, 0 },
	/* MDR_ST_NOT_LEADER: the header and the leader */
	{ "not-leader", not_leader_rep, 0, 0, 0, 0, 0 },
	{ "not-leader without its leader", not_leader_rep,
	  OFF(mdr_wire_hdr, length), 4, 24, 0, -EPROTO },
	{ "leader with another status", not_leader_rep,
	  OFF(mdr_wire_hdr, status), 2, MDR_ST_AGAIN, 0, -EPROTO },
	{ "leader family", not_leader_rep, LOFF(family), 1, 5, 0, -EINVAL },
	{ "leader reserved", not_leader_rep, LOFF(reserved), 1, 1, 0, -EINVAL },
	{ "leader IPv4 long", not_leader_rep, LOFF(addr) + 4, 1, 1, 0,
	  -EINVAL },
	{ "leader port zero", not_leader_rep, LOFF(port), 2, 0, 0, -EINVAL },
	{ "leader epoch zero", not_leader_rep, LOFF(epoch), 8, 0, 0, -EINVAL },
	{ "address without a leader", not_leader_rep, LOFF(replica), 4, 0, 0,
	  -EINVAL },
	/* version 7: every OK reply to OPEN, RENEW and ALLOC says who served */
	{ "open_rep v7", good_open_rep_v7, 0, 0, 0, 0, 0, 7 },
	{ "renew_rep v7", good_renew_rep_v7, 0, 0, 0, 0, 0, 7 },
	{ "alloc_rep v7", good_alloc_rep_v7, 0, 0, 0, 0, 0, 7 },
	{ "renew_rep v7 of a node of its own", own_renew_rep_v7, 0, 0, 0, 0,
	  0, 7 },
	{ "open_rep v6 on v7", good_open_rep, 0, 0, 0, 0, -EPROTO, 7 },
	{ "alloc_rep v6 on v7", good_alloc_rep, 0, 0, 0, 0, -EPROTO, 7 },
	{ "open_rep v7 on v6", good_open_rep_v7, 0, 0, 0, 0, -EPROTO, 6 },
	{ "close_rep on v7", error_rep, OFF(mdr_wire_hdr, opcode) + 2, 4,
	  MDR_WIRE_F_REPLY, 0, 0, 7 },
	{ "error reply on v7", error_rep, 0, 0, 0, 0, 0, 7 },
	{ "not-leader on v7", not_leader_rep, 0, 0, 0, 0, 0, 7 },
	{ "serving reserved", good_renew_rep_v7, SOFF(reserved), 4, 1, 0,
	  -EINVAL, 7 },
	{ "serving record without an epoch", good_renew_rep_v7, SOFF(epoch), 8,
	  0, 0, -EINVAL, 7 },
	{ "serving rkey without an epoch", own_renew_rep_v7, SOFF(record_rkey),
	  4, 5, 0, -EINVAL, 7 },
	{ "serving epoch without its record", good_renew_rep_v7,
	  SOFF(record_rkey), 4, 0, 0, -EINVAL, 7 },
	/* bodies */
	{ "open_rep flags", good_open_rep, OFF(mdr_wire_open_rep, flags), 4,
	  1, 0, -EINVAL },
	{ "open_rep volume zero", good_open_rep,
	  OFF(mdr_wire_open_rep, volume_id), 8, 0, 0, -EINVAL },
	{ "open_rep size unaligned", good_open_rep,
	  OFF(mdr_wire_open_rep, size), 8, (10ULL << 22) + 512, 0, -EINVAL },
	{ "open_rep size zero", good_open_rep, OFF(mdr_wire_open_rep, size),
	  8, 0, 0, -EINVAL },
	{ "open_rep shift small", good_open_rep,
	  OFF(mdr_wire_open_rep, extent_shift), 4, 15, 0, -EINVAL },
	{ "open_rep shift large", good_open_rep,
	  OFF(mdr_wire_open_rep, extent_shift), 4, 31, 0, -EINVAL },
	{ "open_rep table short", good_open_rep,
	  OFF(mdr_wire_open_rep, table_len), 8, 9 * 32, 0, -EINVAL },
	{ "open_rep table wraps", good_open_rep,
	  OFF(mdr_wire_open_rep, table_addr), 8, ~0ULL - 100, 0, -EINVAL },
	{ "open_rep lease zero", good_open_rep,
	  OFF(mdr_wire_open_rep, lease_ms), 4, 0, 0, -EINVAL },
	{ "open_rep lease short", good_open_rep,
	  OFF(mdr_wire_open_rep, lease_ms), 4, MDR_WIRE_LEASE_MS_MIN - 1, 0,
	  -EINVAL },
	{ "open_rep lease long", good_open_rep,
	  OFF(mdr_wire_open_rep, lease_ms), 4, 0xffffffffULL, 0, -EINVAL },
	{ "open_rep name empty", good_open_rep, OFF(mdr_wire_open_rep, name),
	  1, 0, 0, -EINVAL },
	{ "open_rep name bad char", good_open_rep,
	  OFF(mdr_wire_open_rep, name), 1, '/', 0, -EINVAL },
	{ "open_rep name not padded", good_open_rep,
	  OFF(mdr_wire_open_rep, name) + 10, 1, 'x', 0, -EINVAL },
	{ "open_rep name tail not zero", good_open_rep,
	  OFF(mdr_wire_open_rep, name) + 56, 8, 0x4141414141414141ULL, 0,
	  -EINVAL },
	{ "renew_rep reserved", good_renew_rep,
	  OFF(mdr_wire_renew_rep, reserved), 4, 1, 0, -EINVAL },
	{ "renew_rep lease zero", good_renew_rep,
	  OFF(mdr_wire_renew_rep, lease_ms), 4, 0, 0, -EINVAL },
	{ "renew_rep lease short", good_renew_rep,
	  OFF(mdr_wire_renew_rep, lease_ms), 4, MDR_WIRE_LEASE_MS_MIN - 1, 0,
	  -EINVAL },
	{ "renew_rep lease long", good_renew_rep,
	  OFF(mdr_wire_renew_rep, lease_ms), 4, MDR_WIRE_LEASE_MS_MAX + 1, 0,
	  -EINVAL },
	{ "alloc_rep volume zero", good_alloc_rep,
	  OFF(mdr_wire_alloc_rep, volume_id), 8, 0, 0, -EINVAL },
	{ "alloc_rep misaddressed", good_alloc_rep,
	  OFF(mdr_wire_alloc_rep, index), 8, 41, 0, -EINVAL },
	{ "alloc_rep torn", good_alloc_rep,
	  OFF(mdr_wire_alloc_rep, entry) + 8, 8, 0x400000, 0, -EINVAL },
	{ "inval reserved", good_inval, OFF(mdr_wire_inval, reserved), 4, 1,
	  0, -EINVAL },
	{ "inval volume zero", good_inval, OFF(mdr_wire_inval, volume_id), 8,
	  0, 0, -EINVAL },
	{ "inval count zero", good_inval, OFF(mdr_wire_inval, count), 8, 0, 0,
	  -EINVAL },
	{ "inval range wraps", good_inval, OFF(mdr_wire_inval, count), 8,
	  ~0ULL - 2, 0, -EINVAL },
	{ "inval generation zero", good_inval,
	  OFF(mdr_wire_inval, generation), 8, 0, 0, -EINVAL },
	{ "inval reason zero", good_inval, OFF(mdr_wire_inval, reason), 4, 0,
	  0, -EINVAL },
	{ "inval reason unknown", good_inval, OFF(mdr_wire_inval, reason), 4,
	  5, 0, -EINVAL },
	/* good_inval names two extents: a TRACK names one */
	{ "inval track of a range", good_inval, OFF(mdr_wire_inval, reason),
	  4, MDR_INVAL_TRACK, 0, -EINVAL },
};

static void msg_case_desc(const struct msg_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(msg, msg_cases, msg_case_desc);

static void proto_test_msg_parse(struct kunit *test)
{
	const struct msg_case *c = test->param_value;
	u8 buf[512] = {};
	__le64 v = cpu_to_le64(c->val);
	const char *why = NULL;
	struct mdr_msg m;
	size_t len;
	int ret;

	len = c->base(buf);
	if (c->size)
		memcpy(buf + c->off, &v, c->size);
	ret = mdr_msg_parse(buf, c->received ? c->received : len,
			    c->version ?: VNOW, &m, &why);
	KUNIT_EXPECT_EQ_MSG(test, ret, c->want, "why: %s", why ?: "-");
	if (ret)
		KUNIT_EXPECT_NOT_NULL(test, why);
}

static void proto_test_msg_fields(struct kunit *test)
{
	u8 buf[256] = {};
	const char *why;
	struct mdr_msg m;

	KUNIT_ASSERT_EQ(test, mdr_msg_parse(buf, good_open_rep(buf), VNOW, &m, &why),
			0);
	KUNIT_EXPECT_TRUE(test, mdr_msg_is_reply(&m));
	KUNIT_EXPECT_EQ(test, m.req_id, 9ULL);
	KUNIT_EXPECT_EQ(test, m.open.volume_id, VOL);
	KUNIT_EXPECT_EQ(test, m.open.table_rkey, 0x1234U);
	KUNIT_EXPECT_EQ(test, m.open.lease_ms, 5000U);
	KUNIT_EXPECT_STREQ(test, m.open.name, "vol-1");

	KUNIT_ASSERT_EQ(test, mdr_msg_parse(buf, good_inval(buf), VNOW, &m, &why),
			0);
	KUNIT_EXPECT_FALSE(test, mdr_msg_is_reply(&m));
	KUNIT_EXPECT_EQ(test, m.inval.first, 4ULL);
	KUNIT_EXPECT_EQ(test, m.inval.count, 2ULL);
	KUNIT_EXPECT_EQ(test, m.inval.generation, 12ULL);

	KUNIT_ASSERT_EQ(test, mdr_msg_parse(buf, good_alloc_rep(buf), VNOW, &m,
					    &why), 0);
	KUNIT_EXPECT_EQ(test, m.alloc.index, 42ULL);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(m.alloc.entry.crc), 0x1389d35dU);
}

/* What a host sends passes mdnode's rules: sizes, header, ack echo. */
static void proto_test_msg_encode(struct kunit *test)
{
	u8 buf[256];
	struct mdr_wire_hdr h;
	struct mdr_inval_info inv = {
		.volume_id = VOL, .first = 1, .count = 3, .generation = 4,
		.reason = MDR_INVAL_ALLOC,
	};
	const struct mdr_inval_ack_info none = {};
	struct mdr_inval_ack_info tracked = {
		.flags = MDR_INVAL_ACK_F_TRACKED, .dirty = 0x8000000000000021ULL,
	};
	struct mdr_wire_inval_ack ack;
	struct mdr_msg m;
	const char *why;

	KUNIT_EXPECT_EQ(test, mdr_msg_open_req(buf, 1, VOL),
			sizeof(struct mdr_wire_open_req));
	memcpy(&h, buf, sizeof(h));
	KUNIT_EXPECT_EQ(test, le16_to_cpu(h.opcode), (u16)MDR_OP_OPEN);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(h.length), 104U);
	KUNIT_EXPECT_EQ(test, mdr_msg_vol_req(buf, MDR_OP_RENEW, 2, VOL),
			sizeof(struct mdr_wire_vol_req));
	KUNIT_EXPECT_EQ(test, mdr_msg_alloc_req(buf, 3, VOL, 9),
			sizeof(struct mdr_wire_alloc_req));
	mdr_msg_set_req_id(buf, 0xabcdef);
	memcpy(&h, buf, sizeof(h));
	KUNIT_EXPECT_EQ(test, le64_to_cpu(h.req_id), 0xabcdefULL);

	/* an ack is the push with MDR_WIRE_F_REPLY: clear it to re-parse */
	KUNIT_EXPECT_EQ(test, mdr_msg_inval_ack(buf, 77, &inv, 1, &none),
			sizeof(struct mdr_wire_inval));
	memcpy(&h, buf, sizeof(h));
	KUNIT_EXPECT_EQ(test, le16_to_cpu(h.flags), MDR_WIRE_F_REPLY);
	h.flags = 0;
	memcpy(buf, &h, sizeof(h));
	KUNIT_ASSERT_EQ(test, mdr_msg_parse(buf, 64, VNOW, &m, &why), 0);
	KUNIT_EXPECT_EQ(test, m.req_id, 77ULL);
	KUNIT_EXPECT_EQ(test, m.inval.count, 3ULL);

	/* version 2: the push, then flags and the dirty granules */
	memset(buf, 0xee, sizeof(buf));
	KUNIT_EXPECT_EQ(test, mdr_msg_inval_ack(buf, 78, &inv, 2, &none),
			sizeof(struct mdr_wire_inval_ack));
	memcpy(&ack, buf, sizeof(ack));
	KUNIT_EXPECT_EQ(test, le32_to_cpu(ack.inval.hdr.length), 80U);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(ack.inval.count), 3ULL);
	KUNIT_EXPECT_EQ(test, ack.flags, 0U);
	KUNIT_EXPECT_EQ(test, ack.reserved, 0U);
	KUNIT_EXPECT_EQ(test, ack.dirty, 0ULL);
	KUNIT_EXPECT_EQ(test, mdr_msg_inval_ack(buf, 79, &inv, 2, &tracked),
			sizeof(struct mdr_wire_inval_ack));
	memcpy(&ack, buf, sizeof(ack));
	KUNIT_EXPECT_EQ(test, le32_to_cpu(ack.flags),
			(u32)MDR_INVAL_ACK_F_TRACKED);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(ack.dirty), 0x8000000000000021ULL);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(ack.inval.hdr.req_id), 79ULL);
	/* a dirty mask without the flag is never sent */
	tracked.flags = 0;
	mdr_msg_inval_ack(buf, 80, &inv, 2, &tracked);
	memcpy(&ack, buf, sizeof(ack));
	KUNIT_EXPECT_EQ(test, ack.dirty, 0ULL);
	/* version 1 has no room for it: the push is echoed alone */
	tracked.flags = MDR_INVAL_ACK_F_TRACKED;
	memset(buf, 0xee, sizeof(buf));
	KUNIT_EXPECT_EQ(test, mdr_msg_inval_ack(buf, 81, &inv, 1, &tracked),
			sizeof(struct mdr_wire_inval));
	KUNIT_EXPECT_EQ(test, buf[sizeof(struct mdr_wire_inval)], 0xee);
}

/* A TRACK push names one extent and is parsed like the others. */
static void proto_test_track_push(struct kunit *test)
{
	u8 buf[128];
	struct mdr_wire_inval r;
	struct mdr_msg m;
	const char *why = NULL;

	good_inval(buf);
	memcpy(&r, buf, sizeof(r));
	r.count = cpu_to_le64(1);
	r.reason = cpu_to_le32(MDR_INVAL_TRACK);
	memcpy(buf, &r, sizeof(r));
	KUNIT_ASSERT_EQ(test, mdr_msg_parse(buf, sizeof(r), VNOW, &m, &why), 0);
	KUNIT_EXPECT_EQ(test, m.inval.reason, (u32)MDR_INVAL_TRACK);
	KUNIT_EXPECT_EQ(test, m.inval.first, 4ULL);
	KUNIT_EXPECT_EQ(test, m.inval.count, 1ULL);
}

static void proto_test_not_leader(struct kunit *test)
{
	static const u8 addr[16] = { 192, 0, 2, 12 };
	u8 buf[64];
	struct mdr_msg m;
	const char *why = NULL;
	size_t len = not_leader_rep(buf);

	KUNIT_ASSERT_EQ(test, mdr_msg_parse(buf, len, VNOW, &m, &why), 0);
	KUNIT_EXPECT_EQ(test, m.status, (u16)MDR_ST_NOT_LEADER);
	KUNIT_EXPECT_EQ(test, m.leader.epoch, 0x1234ULL);
	KUNIT_EXPECT_EQ(test, m.leader.replica, 2U);
	KUNIT_EXPECT_EQ(test, m.leader.port, (u16)4791);
	KUNIT_EXPECT_EQ(test, m.leader.family, (u8)MDR_FAMILY_IPV4);
	KUNIT_EXPECT_EQ(test, memcmp(m.leader.addr, addr, sizeof(addr)), 0);
}

static void proto_test_status_to_errno(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, mdr_status_to_errno(MDR_ST_OK), 0);
	KUNIT_EXPECT_EQ(test, mdr_status_to_errno(MDR_ST_NOSPC), -ENOSPC);
	KUNIT_EXPECT_EQ(test, mdr_status_to_errno(MDR_ST_STALE), -ESTALE);
	KUNIT_EXPECT_EQ(test, mdr_status_to_errno(MDR_ST_NOMEM), -ENOMEM);
	KUNIT_EXPECT_EQ(test, mdr_status_to_errno(MDR_ST_NOT_LEADER), -EAGAIN);
	KUNIT_EXPECT_EQ(test, mdr_status_to_errno(MDR_ST_MAX), -EPROTO);
	KUNIT_EXPECT_EQ(test, mdr_status_to_errno(0xffff), -EPROTO);
}

/* ---- Backoff and leases ---------------------------------------------- */

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


/* ---- Host authentication --------------------------------------------- */

/*
 * The vector user space checks too (userspace/tests): HMAC-SHA256 keyed
 * with "0123456789abcdef0123456789abcdef" over the transcript of node
 * nonce 00..0f, host nonce 10..1f, host 0x93, node 0x1122334455667788,
 * boot 0x99aabbccddeeff00, tenant 1, version 3, host QP 0x11, node QP
 * 0x22, computed independently (Python's hmac module).
 */
static const u8 auth_host_mac[32] = {
	0xe8, 0xc4, 0xb6, 0x63, 0x46, 0xda, 0xcc, 0x87, 0x9f, 0xc5, 0x59,
	0xc1, 0x9d, 0x59, 0x0e, 0x7c, 0xea, 0xdf, 0x6f, 0xe4, 0xf5, 0x94,
	0xd2, 0x6f, 0x0d, 0xb2, 0xbc, 0x8a, 0x8b, 0xfc, 0x7f, 0x14,
};

static const u8 auth_node_mac[32] = {
	0x76, 0x9b, 0xe0, 0x90, 0xc4, 0xa7, 0xa4, 0xb3, 0xa8, 0xfe, 0x25,
	0xb1, 0xb7, 0xd3, 0xb0, 0x9e, 0x23, 0x70, 0xd5, 0xc8, 0x7f, 0x85,
	0xbf, 0xfc, 0x8f, 0xb9, 0x9e, 0xf5, 0x6c, 0x67, 0x8c, 0x02,
};

static void auth_vector(struct mdr_conn_params *p, struct mdr_conn_accept *a,
			u8 *host_nonce)
{
	unsigned int i;

	*p = sent;
	p->host_id = 0x93;
	p->tenant = 1;
	memset(a, 0, sizeof(*a));
	a->version = 3;
	a->node_id = 0x1122334455667788ULL;
	a->boot_id = 0x99aabbccddeeff00ULL;
	a->host_qpn = 0x11;
	a->node_qpn = 0x22;
	for (i = 0; i < 16; i++) {
		a->nonce[i] = i;
		host_nonce[i] = 16 + i;
	}
}

/* Freed by the caller at its end: no assertion may return between. */
static struct crypto_shash *auth_tfm(struct kunit *test)
{
	struct crypto_shash *tfm = mdr_auth_tfm_alloc();

	KUNIT_ASSERT_FALSE(test, IS_ERR(tfm));
	return tfm;
}

static void proto_test_auth_known_answer(struct kunit *test)
{
	static const u8 key[] = "0123456789abcdef0123456789abcdef";
	struct mdr_wire_auth_transcript t;
	struct mdr_conn_params p;
	struct mdr_conn_accept a;
	u8 nonce[16], mac[32];
	struct crypto_shash *tfm = auth_tfm(test);

	auth_vector(&p, &a, nonce);
	mdr_auth_transcript(&t, MDR_AUTH_LABEL_HOST, nonce, &p, &a);
	KUNIT_EXPECT_STREQ(test, (char *)t.label, "mdroute-host-v3");
	KUNIT_EXPECT_EQ(test, t.label[15], 0);
	KUNIT_EXPECT_EQ(test, t.node_nonce[15], 15);
	KUNIT_EXPECT_EQ(test, t.host_nonce[0], 16);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(t.role), (u16)MDR_ROLE_HOST);
	KUNIT_EXPECT_EQ(test, mdr_auth_hmac(tfm, key, 32, &t, mac), 0);
	KUNIT_EXPECT_EQ(test, memcmp(mac, auth_host_mac, sizeof(mac)), 0);

	mdr_auth_transcript(&t, MDR_AUTH_LABEL_NODE, nonce, &p, &a);
	KUNIT_EXPECT_EQ(test, mdr_auth_hmac(tfm, key, 32, &t, mac), 0);
	KUNIT_EXPECT_EQ(test, memcmp(mac, auth_node_mac, sizeof(mac)), 0);
	crypto_free_shash(tfm);
}

/* Every field is in the proof: change one, and the MAC changes. */
static void proto_test_auth_binds_everything(struct kunit *test)
{
	static const u8 key[] = "0123456789abcdef0123456789abcdef";
	struct mdr_wire_auth_transcript t;
	struct mdr_conn_params p, p2;
	struct mdr_conn_accept a, a2;
	u8 nonce[16], nonce2[16], mac[32];
	struct crypto_shash *tfm = auth_tfm(test);
	unsigned int i;

	auth_vector(&p, &a, nonce);
	for (i = 0; i < 9; i++) {
		p2 = p;
		a2 = a;
		memcpy(nonce2, nonce, sizeof(nonce2));
		switch (i) {
		case 0:
			a2.nonce[5] ^= 1;
			break;
		case 1:
			nonce2[9] ^= 1;
			break;
		case 2:
			p2.host_id++;
			break;
		case 3:
			p2.tenant++;
			break;
		case 4:
			a2.node_id++;
			break;
		case 5:
			a2.boot_id++;
			break;
		case 6:
			a2.host_qpn++;
			break;
		case 7:
			a2.node_qpn++;
			break;
		default:
			a2.version++;
			break;
		}
		mdr_auth_transcript(&t, MDR_AUTH_LABEL_HOST, nonce2, &p2, &a2);
		KUNIT_EXPECT_EQ(test, mdr_auth_hmac(tfm, key, 32, &t, mac), 0);
		KUNIT_EXPECT_NE(test, memcmp(mac, auth_host_mac, sizeof(mac)), 0);
	}
	/* a secret outside 16..64 bytes is refused, not used */
	KUNIT_EXPECT_EQ(test, mdr_auth_hmac(tfm, key, 15, &t, mac), -EINVAL);
	KUNIT_EXPECT_EQ(test, mdr_auth_hmac(tfm, key, 65, &t, mac), -EINVAL);
	crypto_free_shash(tfm);
}

static void proto_test_auth_messages(struct kunit *test)
{
	struct mdr_wire_host_auth_req r;
	u8 buf[sizeof(r)] = {}, nonce[16], mac[32];
	const char *why = NULL;
	struct mdr_msg m;
	size_t len;

	memset(nonce, 0xa5, sizeof(nonce));
	memset(mac, 0x3c, sizeof(mac));
	len = mdr_msg_host_auth_req(buf, 77, nonce, mac);
	KUNIT_ASSERT_EQ(test, len, sizeof(r));
	memcpy(&r, buf, sizeof(r));
	KUNIT_EXPECT_EQ(test, le16_to_cpu(r.hdr.opcode), MDR_OP_HOST_AUTH);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(r.hdr.flags), 0);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(r.hdr.length), 72U);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(r.hdr.req_id), 77ULL);
	KUNIT_EXPECT_EQ(test, memcmp(r.nonce, nonce, sizeof(nonce)), 0);
	KUNIT_EXPECT_EQ(test, memcmp(r.mac, mac, sizeof(mac)), 0);

	/* mdnode's proof */
	memset(buf, 0, sizeof(buf));
	put_hdr(buf, MDR_OP_HOST_AUTH, MDR_WIRE_F_REPLY, 0, 56, 77);
	memset(buf + 24, 0x42, 32);
	KUNIT_ASSERT_EQ(test, mdr_msg_parse(buf, 56, VNOW, &m, &why), 0);
	KUNIT_EXPECT_EQ(test, m.auth_mac[0], 0x42);
	KUNIT_EXPECT_EQ(test, m.auth_mac[31], 0x42);
	/* a refusal is a bare header */
	put_hdr(buf, MDR_OP_HOST_AUTH, MDR_WIRE_F_REPLY, MDR_ST_PERM, 24, 77);
	KUNIT_ASSERT_EQ(test, mdr_msg_parse(buf, 24, VNOW, &m, &why), 0);
	KUNIT_EXPECT_EQ(test, mdr_status_to_errno(m.status), -EPERM);
	/* a keyed host asks for [3, 3]: an accept of version 2 is refused */
	{
		struct mdr_conn_params keyed = sent;
		struct mdr_wire_conn_rep rep = {
			.magic = cpu_to_le32(MDR_WIRE_CONN_MAGIC),
			.version = cpu_to_le16(2),
			.queue_depth = cpu_to_le16(16),
			.push_credits = cpu_to_le16(16),
			.max_msg = cpu_to_le32(4096),
		};
		struct mdr_conn_accept acc;

		keyed.version_min = 3;
		keyed.version_max = 3;
		KUNIT_EXPECT_EQ(test, mdr_conn_rep_parse(&rep, sizeof(rep), &keyed,
							 &acc, &why), -EPROTO);
		/* and without a key the same accept is good */
		keyed.version_min = 1;
		keyed.version_max = MDR_WIRE_VERSION_NOAUTH;
		KUNIT_EXPECT_EQ(test, mdr_conn_rep_parse(&rep, sizeof(rep), &keyed,
							 &acc, &why), 0);
	}
	/* an OK reply without the MAC, or a push of it, is malformed */
	put_hdr(buf, MDR_OP_HOST_AUTH, MDR_WIRE_F_REPLY, 0, 24, 77);
	KUNIT_EXPECT_EQ(test, mdr_msg_parse(buf, 24, VNOW, &m, &why), -EPROTO);
	put_hdr(buf, MDR_OP_HOST_AUTH, 0, 0, 56, 77);
	KUNIT_EXPECT_EQ(test, mdr_msg_parse(buf, 56, VNOW, &m, &why), -EPROTO);
}

/* What OK replies of version 7 carry, and the epoch record's checks. */
static void proto_test_serving_and_epoch_record(struct kunit *test)
{
	struct mdr_wire_epoch_rec r = {
		.magic = cpu_to_le32(MDR_WIRE_EPOCH_MAGIC),
		.replica = cpu_to_le32(2),
		.group = cpu_to_le64(7),
		.epoch = cpu_to_le64(9),
	};
	u8 buf[256] = {};
	const char *why;
	struct mdr_msg m;
	u64 seen;

	KUNIT_ASSERT_EQ(test, mdr_msg_parse(buf, good_alloc_rep_v7(buf), 7, &m,
					    &why), 0);
	KUNIT_EXPECT_EQ(test, m.serving.epoch, 9ULL);
	KUNIT_EXPECT_EQ(test, m.serving.record_addr, 0x7f0000200000ULL);
	KUNIT_EXPECT_EQ(test, m.serving.record_rkey, 0x77U);
	KUNIT_EXPECT_EQ(test, m.alloc.index, 42ULL);
	/* earlier versions: nothing served, however it was filled before */
	KUNIT_ASSERT_EQ(test, mdr_msg_parse(buf, good_renew_rep(buf), 6, &m,
					    &why), 0);
	KUNIT_EXPECT_EQ(test, m.serving.epoch, 0ULL);
	KUNIT_EXPECT_EQ(test, m.serving.record_rkey, 0U);

	mdr_epoch_rec_seal(&r);
	KUNIT_EXPECT_EQ(test, mdr_epoch_rec_check(&r, 9, &seen), MDR_EPOCH_OK);
	KUNIT_EXPECT_EQ(test, seen, 9ULL);
	KUNIT_EXPECT_EQ(test, mdr_epoch_rec_check(&r, 8, &seen),
			MDR_EPOCH_OTHER);
	KUNIT_EXPECT_EQ(test, seen, 9ULL);
	/* torn: a write of the record raced the READ */
	r.epoch = cpu_to_le64(10);
	KUNIT_EXPECT_EQ(test, mdr_epoch_rec_check(&r, 9, &seen),
			MDR_EPOCH_TORN);
	/* it stopped serving: epoch 0, sealed */
	r.epoch = 0;
	mdr_epoch_rec_seal(&r);
	KUNIT_EXPECT_EQ(test, mdr_epoch_rec_check(&r, 9, &seen),
			MDR_EPOCH_OTHER);
	KUNIT_EXPECT_EQ(test, seen, 0ULL);
	/* what is not a record, even with a good crc */
	r.epoch = cpu_to_le64(9);
	r.magic = cpu_to_le32(MDR_WIRE_EPOCH_MAGIC + 1);
	mdr_epoch_rec_seal(&r);
	KUNIT_EXPECT_EQ(test, mdr_epoch_rec_check(&r, 9, &seen), MDR_EPOCH_BAD);
	r.magic = cpu_to_le32(MDR_WIRE_EPOCH_MAGIC);
	r.reserved = cpu_to_le32(1);
	mdr_epoch_rec_seal(&r);
	KUNIT_EXPECT_EQ(test, mdr_epoch_rec_check(&r, 9, &seen), MDR_EPOCH_BAD);
	/* the CRC is CRC-32C over the 28 bytes before it: a known answer */
	memset(&r, 0, sizeof(r));
	mdr_epoch_rec_seal(&r);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(r.crc), ~crc32c(~0U, &r, 28));
}

static struct kunit_case proto_test_cases[] = {
	KUNIT_CASE(proto_test_entry_known_answer),
	KUNIT_CASE_PARAM(proto_test_entry_check, entry_gen_params),
	KUNIT_CASE(proto_test_entry_unaligned),
	KUNIT_CASE(proto_test_conn_req_encode),
	KUNIT_CASE_PARAM(proto_test_conn_rep, rep_gen_params),
	KUNIT_CASE(proto_test_conn_rej),
	KUNIT_CASE(proto_test_version_negotiate),
	KUNIT_CASE_PARAM(proto_test_msg_parse, msg_gen_params),
	KUNIT_CASE(proto_test_msg_fields),
	KUNIT_CASE(proto_test_msg_encode),
	KUNIT_CASE(proto_test_track_push),
	KUNIT_CASE(proto_test_not_leader),
	KUNIT_CASE(proto_test_serving_and_epoch_record),
	KUNIT_CASE(proto_test_status_to_errno),
	KUNIT_CASE(proto_test_backoff_bounds),
	KUNIT_CASE(proto_test_backoff_jitter_spreads),
	KUNIT_CASE(proto_test_lease_deadline),
	KUNIT_CASE(proto_test_auth_known_answer),
	KUNIT_CASE(proto_test_auth_binds_everything),
	KUNIT_CASE(proto_test_auth_messages),
	{}
};

static struct kunit_suite proto_test_suite = {
	.name = "mdroute_proto",
	.test_cases = proto_test_cases,
};

kunit_test_suite(proto_test_suite);

MODULE_LICENSE("GPL");
