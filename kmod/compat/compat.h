/* SPDX-License-Identifier: GPL-2.0 */
/*
 * compat.h - the block-layer interfaces that differ between the kernels
 * mdroute builds for (Debian's 6.1 and 6.12), behind one name each.
 *
 * Chosen by what the kernel's headers offer (kmod/compat/probe.sh, run by
 * Kbuild into probed.h), never by version number: a backport that brings
 * an interface to an older kernel gets the newer path. A kernel that has
 * neither of the two known forms of an interface stops the build here,
 * rather than guessing.
 */
#ifndef MDR_COMPAT_H
#define MDR_COMPAT_H

#include <linux/blkdev.h>
#include <linux/err.h>
#include <linux/fs.h>

#include "compat/probed.h"

/**
 * mdr_alloc_disk() - a bio-based disk with the sizes of @lim
 * @lim:	logical and physical block size, io_min, max_hw_sectors,
 *		chunk_sectors, max_hw_discard_sectors, discard_granularity
 *		(when there is discard) and max_write_zeroes_sectors are
 *		taken, nothing else; features are set here
 *
 * The disk passes flushes and FUA on (a device bound later may cache
 * writes), is not rotational, and accounts its IO as blk-mq disks do
 * (queue/iostats turns that off). Nothing else: not NOWAIT, as the IO path
 * may wait for bio mempools; not POLL, as it has no poll_bio.
 *
 * Context: process; sleeps.
 * Return: the disk, or an ERR_PTR().
 */
#ifdef MDR_HAVE_ALLOC_DISK_LIMITS
static inline struct gendisk *mdr_alloc_disk(struct queue_limits *lim)
{
#ifndef MDR_HAVE_BLK_FEAT
#error "blk_alloc_disk() takes limits but they have no features: unknown kernel"
#endif
	/*
	 * Only the fields named above, as the 6.1 path sets them: anything
	 * else stacked from the devices (zone append, secure erase, io_opt,
	 * segments, alignments) is not this disk's, and zone limits without
	 * BLK_FEAT_ZONED fail validation. The rest gets the defaults.
	 */
	struct queue_limits l = {
		.logical_block_size	= lim->logical_block_size,
		.physical_block_size	= lim->physical_block_size,
		.io_min			= lim->io_min,
		.max_hw_sectors		= lim->max_hw_sectors,
		.chunk_sectors		= lim->chunk_sectors,
		.max_hw_discard_sectors	= lim->max_hw_discard_sectors,
		.discard_granularity	= lim->max_hw_discard_sectors ?
					  lim->discard_granularity : 0,
		.max_write_zeroes_sectors = lim->max_write_zeroes_sectors,
		.features		= BLK_FEAT_WRITE_CACHE | BLK_FEAT_FUA |
					  BLK_FEAT_IO_STAT,
	};

	return blk_alloc_disk(&l, NUMA_NO_NODE);
}
#else
static inline struct gendisk *mdr_alloc_disk(struct queue_limits *lim)
{
	struct request_queue *q;
	struct gendisk *disk;

	disk = blk_alloc_disk(NUMA_NO_NODE);
	if (!disk)
		return ERR_PTR(-ENOMEM);
	q = disk->queue;
	blk_queue_logical_block_size(q, lim->logical_block_size);
	blk_queue_physical_block_size(q, lim->physical_block_size);
	blk_queue_io_min(q, lim->io_min);
	blk_queue_max_hw_sectors(q, lim->max_hw_sectors);
	blk_queue_chunk_sectors(q, lim->chunk_sectors);
	blk_queue_max_discard_sectors(q, lim->max_hw_discard_sectors);
	if (lim->max_hw_discard_sectors)
		q->limits.discard_granularity = lim->discard_granularity;
	blk_queue_max_write_zeroes_sectors(q, lim->max_write_zeroes_sectors);
	blk_queue_write_cache(q, true, true);
	blk_queue_flag_set(QUEUE_FLAG_NONROT, q);
	blk_queue_flag_set(QUEUE_FLAG_IO_STAT, q);
	return disk;
}
#endif

/*
 * What closes an exclusively opened backing device: the file that holds it
 * open, on kernels that open block devices as files; the device otherwise.
 */
struct mdr_bdev_handle {
#ifdef MDR_HAVE_BDEV_FILE
	struct file *file;
#else
	struct block_device *bdev;
#endif
};

/**
 * mdr_bdev_open_excl() - open @devt for reading and writing, exclusively
 * @devt:	the device
 * @holder:	the exclusive holder (the same pointer for every open)
 * @h:		out: what mdr_bdev_close() needs
 *
 * Context: process; sleeps.
 * Return: the device, or an ERR_PTR() of what opening returned (-EBUSY:
 * held by someone else).
 */
static inline struct block_device *
mdr_bdev_open_excl(dev_t devt, void *holder, struct mdr_bdev_handle *h)
{
#if defined(MDR_HAVE_BDEV_FILE)
	struct file *f = bdev_file_open_by_dev(devt, BLK_OPEN_READ |
					       BLK_OPEN_WRITE, holder, NULL);

	if (IS_ERR(f))
		return ERR_CAST(f);
	h->file = f;
	return file_bdev(f);
#elif defined(MDR_HAVE_BLKDEV_GET_FMODE)
	h->bdev = blkdev_get_by_dev(devt, FMODE_READ | FMODE_WRITE |
				    FMODE_EXCL, holder);
	return h->bdev;
#else
#error "neither bdev_file_open_by_dev() nor the fmode_t blkdev_get_by_dev(): unknown kernel"
#endif
}

/* Closes what mdr_bdev_open_excl() opened. Context: process; sleeps. */
static inline void mdr_bdev_close(struct mdr_bdev_handle *h)
{
#ifdef MDR_HAVE_BDEV_FILE
	bdev_fput(h->file);
#else
	blkdev_put(h->bdev, FMODE_READ | FMODE_WRITE | FMODE_EXCL);
#endif
}

#endif /* MDR_COMPAT_H */
