/* SPDX-License-Identifier: GPL-2.0 */
/*
 * track.h - which granules of an extent a host writes while mdnode
 * pre-copies it (MDR_INVAL_TRACK), for the ack of the move that follows.
 *
 * Pure: generic headers only; KUnit-tested. A few extents at a time are
 * noted, each in a 64-bit mask of granules (MDR_WIRE_TRACK_GRANULES). The
 * IO path reads @nr without the lock and takes it only while something is
 * noted, so a volume that is not being moved pays one load per write.
 * Forgetting is always safe: mdnode then copies the whole extent again.
 */
#ifndef MDR_TRACK_H
#define MDR_TRACK_H

#include <linux/spinlock.h>
#include <linux/types.h>

#define MDR_TRACK_SLOTS	8	/* extents noted at once; the oldest goes */

/**
 * struct mdr_track - the extents of one volume whose writes are noted
 * @nr:		slots in use; read locklessly by the IO path
 * @granule_shift: log2 bytes per granule (set by mdr_track_start())
 * @extent_mask: extent size - 1 (likewise)
 * @lock:	protects the rest
 * @seq:	stamps the slots in the order they were started
 * @slot:	[0, @nr): the extent, its mask, its stamp
 */
struct mdr_track {
	unsigned int nr;
	unsigned int granule_shift;
	u64 extent_mask;
	spinlock_t lock;
	u64 seq;
	struct {
		u64 index;
		u64 dirty;
		u64 seq;
	} slot[MDR_TRACK_SLOTS];
};

void mdr_track_init(struct mdr_track *t);
bool mdr_track_start(struct mdr_track *t, u64 index,
		     unsigned int extent_shift);
void mdr_track_write(struct mdr_track *t, u64 index, u64 offset, u32 len);
bool mdr_track_end(struct mdr_track *t, u64 index, u64 *dirty);
void mdr_track_drop(struct mdr_track *t, u64 first, u64 count);

#endif /* MDR_TRACK_H */
