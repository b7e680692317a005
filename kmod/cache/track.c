// SPDX-License-Identifier: GPL-2.0
/*
 * track.c - granules written to extents that mdnode pre-copies.
 *
 * Pure: generic headers only. KUnit: ktests/track_test.c.
 */
#include <linux/bits.h>
#include <linux/minmax.h>

#include <linux/mdroute_wire.h>

#include "cache/track.h"

/**
 * mdr_track_init() - nothing noted yet
 * @t:		the volume's tracking
 */
void mdr_track_init(struct mdr_track *t)
{
	t->nr = 0;
	t->granule_shift = MDR_WIRE_TRACK_MIN_SHIFT;
	t->extent_mask = 0;
	t->seq = 0;
	spin_lock_init(&t->lock);
}

/* lock held. Return: the slot of @index, or -1. */
static int mdr_track_find(struct mdr_track *t, u64 index)
{
	unsigned int i;

	for (i = 0; i < t->nr; i++)
		if (t->slot[i].index == index)
			return i;
	return -1;
}

/* lock held */
static void mdr_track_remove(struct mdr_track *t, unsigned int i)
{
	t->slot[i] = t->slot[t->nr - 1];
	WRITE_ONCE(t->nr, t->nr - 1);
}

/**
 * mdr_track_start() - note writes to extent @index from now on
 * @t:		the volume's tracking
 * @index:	the extent
 * @extent_shift: log2 extent size, MDR_WIRE_EXTENT_SHIFT_MIN ..= _MAX
 *		(the volume's: the same at every call); any other value, as
 *		before the volume's geometry is known, notes nothing
 *
 * Starts again from an empty mask when @index was noted already. With
 * every slot in use the one started first is forgotten.
 *
 * The caller then waits for the IO to @index counted before (a drain of
 * the in-flight accounting, whose barriers order this against the IO
 * path's check): each write either completed before that wait ended or
 * is noted by mdr_track_write().
 *
 * Context: any.
 * Return: true when @index is noted from now on.
 */
bool mdr_track_start(struct mdr_track *t, u64 index,
		     unsigned int extent_shift)
{
	unsigned long flags;
	unsigned int i;
	int s;

	if (extent_shift < MDR_WIRE_EXTENT_SHIFT_MIN ||
	    extent_shift > MDR_WIRE_EXTENT_SHIFT_MAX)
		return false;	/* unnoted: mdnode copies the whole extent */
	spin_lock_irqsave(&t->lock, flags);
	t->granule_shift = max_t(unsigned int, MDR_WIRE_TRACK_MIN_SHIFT,
				 extent_shift - ilog2(MDR_WIRE_TRACK_GRANULES));
	t->extent_mask = (1ULL << extent_shift) - 1;
	s = mdr_track_find(t, index);
	if (s < 0 && t->nr == MDR_TRACK_SLOTS) {
		s = 0;
		for (i = 1; i < t->nr; i++)
			if (t->slot[i].seq < t->slot[s].seq)
				s = i;
	} else if (s < 0) {
		s = t->nr;
		WRITE_ONCE(t->nr, t->nr + 1);
	}
	t->slot[s].index = index;
	t->slot[s].dirty = 0;
	t->slot[s].seq = ++t->seq;
	spin_unlock_irqrestore(&t->lock, flags);
	return true;
}

/**
 * mdr_track_write() - a write of @len bytes at @offset of extent @index
 * @t:		the volume's tracking
 * @index:	the extent
 * @offset:	byte offset of the write in the volume (only its place in
 *		the extent counts)
 * @len:	bytes (0 marks nothing)
 *
 * Called for every write, discard and write-zeroes after it is counted in
 * flight and before it is sent to the device.
 *
 * Context: any.
 */
void mdr_track_write(struct mdr_track *t, u64 index, u64 offset, u32 len)
{
	unsigned long flags;
	u64 in, start, end;
	unsigned int gs;
	int s;

	if (likely(!READ_ONCE(t->nr)) || !len)
		return;
	spin_lock_irqsave(&t->lock, flags);
	s = mdr_track_find(t, index);
	if (s >= 0) {
		gs = t->granule_shift;
		in = offset & t->extent_mask;
		start = in >> gs;
		/* up to the extent's last granule */
		end = min(in + len - 1, t->extent_mask) >> gs;
		t->slot[s].dirty |= GENMASK_ULL(end, start);
	}
	spin_unlock_irqrestore(&t->lock, flags);
}

/**
 * mdr_track_end() - stop noting @index and say what was written
 * @t:		the volume's tracking
 * @index:	the extent
 * @dirty:	out: the granules written since mdr_track_start()
 *
 * Context: any.
 * Return: true when @index was noted (and *@dirty is set).
 */
bool mdr_track_end(struct mdr_track *t, u64 index, u64 *dirty)
{
	unsigned long flags;
	int s;

	spin_lock_irqsave(&t->lock, flags);
	s = mdr_track_find(t, index);
	if (s >= 0) {
		*dirty = t->slot[s].dirty;
		mdr_track_remove(t, s);
	}
	spin_unlock_irqrestore(&t->lock, flags);
	return s >= 0;
}

/**
 * mdr_track_drop() - stop noting the extents of [@first, @first + @count)
 * @t:		the volume's tracking
 * @first:	first extent
 * @count:	extents
 *
 * Context: any.
 */
void mdr_track_drop(struct mdr_track *t, u64 first, u64 count)
{
	unsigned long flags;
	unsigned int i;

	if (!READ_ONCE(t->nr))
		return;
	spin_lock_irqsave(&t->lock, flags);
	for (i = t->nr; i-- > 0;)
		if (t->slot[i].index >= first &&
		    t->slot[i].index - first < count)
			mdr_track_remove(t, i);
	spin_unlock_irqrestore(&t->lock, flags);
}
