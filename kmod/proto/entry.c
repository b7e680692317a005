// SPDX-License-Identifier: GPL-2.0
/*
 * entry.c - extent entries and a leader's epoch record as a host receives
 * them: the CRC that makes each self-verifying, and the rules of their
 * fields.
 *
 * Pure, as proto.h says: it runs in any context, the RDMA transport's CQ
 * softirq included, and copies received bytes into wire structs before it
 * reads their fields.
 */
#include <linux/crc32c.h>
#include <linux/kernel.h>
#include <linux/string.h>

#include "proto/proto.h"

/* ---- Extent entries ------------------------------------------------- */

/*
 * CRC-32C as iSCSI: initial ~0, final xor ~0, over (volume, index, entry).
 * One call over one buffer: on the miss path each crc32c() is a trip
 * through the crypto API.
 */
u32 mdr_entry_crc(const struct mdr_wire_entry *e, u64 volume_id, u64 index)
{
	struct {
		__le64 volume_id;
		__le64 index;
		u8 entry[offsetof(struct mdr_wire_entry, crc)];
	} __packed buf;

	buf.volume_id = cpu_to_le64(volume_id);
	buf.index = cpu_to_le64(index);
	memcpy(buf.entry, e, sizeof(buf.entry));
	return ~crc32c(~0U, &buf, sizeof(buf));
}

void mdr_entry_seal(struct mdr_wire_entry *e, u64 volume_id, u64 index)
{
	e->crc = cpu_to_le32(mdr_entry_crc(e, volume_id, index));
}

/* ---- A leader's epoch record (version 7) ---------------------------- */

static u32 mdr_epoch_rec_crc(const struct mdr_wire_epoch_rec *r)
{
	return ~crc32c(~0U, r, offsetof(struct mdr_wire_epoch_rec, crc));
}

void mdr_epoch_rec_seal(struct mdr_wire_epoch_rec *r)
{
	r->crc = cpu_to_le32(mdr_epoch_rec_crc(r));
}

/**
 * mdr_epoch_rec_check() - does a leader still serve at @epoch?
 * @r:		the record as READ after a window (any alignment: copied)
 * @epoch:	the epoch the connection is served at
 * @seen:	the epoch the record shows (0: it no longer serves)
 *
 * Return: MDR_EPOCH_OK when it shows @epoch: the window READ before it
 * was read while the replica served at it; otherwise why not.
 */
enum mdr_epoch_verdict mdr_epoch_rec_check(const struct mdr_wire_epoch_rec *r,
					   u64 epoch, u64 *seen)
{
	struct mdr_wire_epoch_rec c;

	memcpy(&c, r, sizeof(c));
	*seen = 0;
	if (le32_to_cpu(c.crc) != mdr_epoch_rec_crc(&c))
		return MDR_EPOCH_TORN;
	if (le32_to_cpu(c.magic) != MDR_WIRE_EPOCH_MAGIC || c.reserved)
		return MDR_EPOCH_BAD;
	*seen = le64_to_cpu(c.epoch);
	return *seen == epoch ? MDR_EPOCH_OK : MDR_EPOCH_OTHER;
}

/**
 * mdr_entry_check() - may this entry be used as entry @index of a volume?
 * @e:		the entry as read (any alignment is fine: it is copied)
 * @volume_id:	the volume it must belong to
 * @index:	the extent it must describe
 * @min_gen:	oldest generation still acceptable (0: any)
 *
 * Return: MDR_ENTRY_OK, or the first rule the entry breaks.
 */
enum mdr_entry_verdict mdr_entry_check(const struct mdr_wire_entry *e,
				       u64 volume_id, u64 index, u64 min_gen)
{
	struct mdr_wire_entry c;
	u64 gen;

	memcpy(&c, e, sizeof(c));
	if (le32_to_cpu(c.crc) != mdr_entry_crc(&c, volume_id, index))
		return MDR_ENTRY_BAD_CRC;
	if (!mdr_all_zero(c.reserved, sizeof(c.reserved)) || c.reserved2)
		return MDR_ENTRY_RESERVED;
	if (c.state >= MDR_EXT_STATE_MAX)
		return MDR_ENTRY_BAD_STATE;
	if (c.state == MDR_EXT_UNALLOCATED && (c.dev_id || c.pstart))
		return MDR_ENTRY_UNALLOC_PLACED;
	gen = le64_to_cpu(c.generation);
	if (!gen)
		return MDR_ENTRY_ZERO_GEN;
	if (c.state != MDR_EXT_UNALLOCATED && !c.dev_id)
		return MDR_ENTRY_NO_DEVICE;
	if (gen < min_gen)
		return MDR_ENTRY_STALE;
	return MDR_ENTRY_OK;
}

const char *mdr_entry_verdict_name(enum mdr_entry_verdict v)
{
	switch (v) {
	case MDR_ENTRY_OK:
		return "ok";
	case MDR_ENTRY_BAD_CRC:
		return "bad crc";
	case MDR_ENTRY_RESERVED:
		return "reserved not zero";
	case MDR_ENTRY_BAD_STATE:
		return "state out of range";
	case MDR_ENTRY_UNALLOC_PLACED:
		return "unallocated with a device or pstart";
	case MDR_ENTRY_ZERO_GEN:
		return "generation zero";
	case MDR_ENTRY_NO_DEVICE:
		return "placed without a device";
	case MDR_ENTRY_STALE:
		return "older generation than seen";
	}
	return "unknown verdict";
}
