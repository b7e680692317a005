/* SPDX-License-Identifier: GPL-2.0 */
/*
 * extent.h - extent arithmetic of the IO path.
 *
 * Pure: KUnit-tested in ktests/extent_test.c. Sectors are 512 bytes; an
 * extent is 1 << extent_shift bytes, extent_shift in
 * [MDR_WIRE_EXTENT_SHIFT_MIN, MDR_WIRE_EXTENT_SHIFT_MAX].
 */
#ifndef MDR_EXTENT_H
#define MDR_EXTENT_H

#include <linux/minmax.h>
#include <linux/types.h>

#define MDR_SECTOR_SHIFT	9

/* log2 of the sectors in one extent */
static inline unsigned int mdr_ext_sector_shift(unsigned int extent_shift)
{
	return extent_shift - MDR_SECTOR_SHIFT;
}

/* the extent @sector falls in */
static inline u64 mdr_ext_index(u64 sector, unsigned int extent_shift)
{
	return sector >> mdr_ext_sector_shift(extent_shift);
}

/* sectors from the start of its extent to @sector */
static inline u64 mdr_ext_offset(u64 sector, unsigned int extent_shift)
{
	return sector & ((1ULL << mdr_ext_sector_shift(extent_shift)) - 1);
}

/**
 * mdr_ext_split_sectors() - how much of an IO stays in one extent
 * @sector:	first sector of the IO
 * @nr_sectors:	its length (sectors, >= 1)
 * @extent_shift: log2 extent size in bytes
 *
 * Return: the sectors from @sector to the end of its extent or of the IO,
 * whichever comes first: what the first piece of a split keeps.
 */
static inline u64 mdr_ext_split_sectors(u64 sector, u64 nr_sectors,
					unsigned int extent_shift)
{
	u64 ext = 1ULL << mdr_ext_sector_shift(extent_shift);

	return min(nr_sectors, ext - mdr_ext_offset(sector, extent_shift));
}

/* extents [first, last] an IO touches; @nr_sectors >= 1 */
static inline u64 mdr_ext_last(u64 sector, u64 nr_sectors,
			       unsigned int extent_shift)
{
	return mdr_ext_index(sector + nr_sectors - 1, extent_shift);
}

/* sector on the device for @sector of the volume, in an extent at @pstart */
static inline u64 mdr_ext_remap(u64 sector, u64 pstart,
				unsigned int extent_shift)
{
	return pstart + mdr_ext_offset(sector, extent_shift);
}

#endif /* MDR_EXTENT_H */
