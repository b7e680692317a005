// SPDX-License-Identifier: GPL-2.0
/*
 * proto_entry_test.c - KUnit: extent entries and a leader's epoch record
 * (kmod/proto/entry.c).
 */
#include <kunit/test.h>
#include <linux/crc32c.h>
#include <linux/string.h>

#include "proto_test.h"

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


/* A leader's epoch record: its checks, and its CRC. */
static void proto_test_epoch_record(struct kunit *test)
{
	struct mdr_wire_epoch_rec r = {
		.magic = cpu_to_le32(MDR_WIRE_EPOCH_MAGIC),
		.replica = cpu_to_le32(2),
		.group = cpu_to_le64(7),
		.epoch = cpu_to_le64(9),
	};
	u64 seen;

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

static struct kunit_case proto_entry_test_cases[] = {
	KUNIT_CASE(proto_test_entry_known_answer),
	KUNIT_CASE_PARAM(proto_test_entry_check, entry_gen_params),
	KUNIT_CASE(proto_test_entry_unaligned),
	KUNIT_CASE(proto_test_epoch_record),
	{}
};

static struct kunit_suite proto_entry_test_suite = {
	.name = "mdroute_proto_entry",
	.test_cases = proto_entry_test_cases,
};

kunit_test_suite(proto_entry_test_suite);

MODULE_LICENSE("GPL");
