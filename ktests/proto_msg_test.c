// SPDX-License-Identifier: GPL-2.0
/*
 * proto_msg_test.c - KUnit: every message a host receives, parsed and
 * refused field by field, and the requests it sends (kmod/proto/msg.c).
 */
#include <kunit/test.h>
#include <linux/string.h>

#include "proto_test.h"

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


/* What OK replies of version 7 carry: who served them. */
static void proto_test_serving(struct kunit *test)
{
	u8 buf[256] = {};
	const char *why;
	struct mdr_msg m;

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
}

static struct kunit_case proto_msg_test_cases[] = {
	KUNIT_CASE_PARAM(proto_test_msg_parse, msg_gen_params),
	KUNIT_CASE(proto_test_msg_fields),
	KUNIT_CASE(proto_test_msg_encode),
	KUNIT_CASE(proto_test_track_push),
	KUNIT_CASE(proto_test_not_leader),
	KUNIT_CASE(proto_test_serving),
	KUNIT_CASE(proto_test_status_to_errno),
	{}
};

static struct kunit_suite proto_msg_test_suite = {
	.name = "mdroute_proto_msg",
	.test_cases = proto_msg_test_cases,
};

kunit_test_suite(proto_msg_test_suite);

MODULE_LICENSE("GPL");
