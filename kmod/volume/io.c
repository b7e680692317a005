// SPDX-License-Identifier: GPL-2.0
/*
 * io.c - the IO path of a volume: split at extent boundaries, flush the
 * backing devices, look the extent up, remap to the backing device.
 * Never waits for the network: a bio that must wait for the node goes to
 * wait.c, which parks or defers it and returns.
 */
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/jiffies.h>
#include <linux/mdroute_wire.h>

#include "core/inject.h"
#include "volume/backing.h"
#include "volume/extent.h"
#include "volume/volume.h"

#define CREATE_TRACE_POINTS
#include "volume/trace.h"

static enum mdr_vol_stat_op mdr_stat_op(const struct bio *bio)
{
	switch (bio_op(bio)) {
	case REQ_OP_DISCARD:
		return MDR_STAT_DISCARD;
	case REQ_OP_WRITE_ZEROES:
		return MDR_STAT_WRITE_ZEROES;
	default:
		return op_is_write(bio_op(bio)) ? MDR_STAT_WRITE : MDR_STAT_READ;
	}
}

/*
 * The backing device for @dev_id, as this volume uses it. The first use
 * makes the volume a user of the device, so it cannot be unbound while the
 * volume is attached: a pointer to it stays good until detach.
 */
static struct mdr_backing *mdr_vol_backing(struct mdr_vol *vol, u32 dev_id,
					   bool use)
{
	struct mdr_backing *b, *old;
	unsigned long flags;

	b = xa_load(&vol->devs, dev_id);
	if (likely(b) || !use)
		return b;

	b = mdr_backing_get_user(dev_id);
	if (!b)
		return NULL;
	spin_lock_irqsave(&vol->devs_lock, flags);
	old = xa_load(&vol->devs, dev_id);
	if (!old && xa_err(xa_store(&vol->devs, dev_id, b, GFP_ATOMIC)))
		old = ERR_PTR(-ENOMEM);
	spin_unlock_irqrestore(&vol->devs_lock, flags);
	if (old) {
		/* raced with another CPU, or no memory: give ours back */
		mdr_backing_put_user(b);
		return IS_ERR(old) ? NULL : old;
	}
	return b;
}

/**
 * mdr_vol_resolve() - the backing device a MAPPED extent lives on
 * @vol:	the volume
 * @loc:	the extent's location, validated as an entry
 * @use:	IO goes there now: make the volume a user of the device if it
 *		is not one yet (otherwise only a device it uses is found)
 *
 * Done once when an entry is cached (mdr_vol_entries() stores the result
 * in the entry), so the IO path neither looks the device up again nor
 * checks the extent against its size; done again on the IO path only for
 * an entry that had no device then.
 *
 * Context: any; does not sleep.
 * Return: the device, whose pointer stays good while @vol is attached;
 * ERR_PTR(-ENODEV) if it is not bound here (or, without @use, not used by
 * @vol yet), ERR_PTR(-ERANGE) if the extent does not lie within it.
 */
struct mdr_backing *mdr_vol_resolve(struct mdr_vol *vol,
				    const struct mdr_loc *loc, bool use)
{
	u64 ext_sectors = 1ULL << mdr_ext_sector_shift(vol->geom.extent_shift);
	struct mdr_backing *b;

	b = mdr_vol_backing(vol, loc->dev_id, use);
	if (!b)
		return ERR_PTR(-ENODEV);
	if (loc->pstart + ext_sectors < loc->pstart ||
	    loc->pstart + ext_sectors > bdev_nr_sectors(b->bdev))
		return ERR_PTR(-ERANGE);
	return b;
}

/*
 * The clone of @bio for @b, with two savings over dm-linear's:
 *
 * - It comes from the volume's per-CPU cache of bios when that holds one
 *   (BIOSET_PERCPU_CACHE): no mempool and no slab round trip. dm's
 *   clones use its cache only for polled IO.
 *   bio_alloc_bioset() looks there only for REQ_ALLOC_CACHE, and
 *   bio_alloc_clone() takes its flags from @bio: so the flag is set on
 *   @bio for the call and taken off again (this task owns @bio until it
 *   is sent), and the clone never carries it to the device below.
 *   mdr_clone_put() fills the cache.
 * - One blk-cgroup association, @bio's, made on @b's queue: given the
 *   device, bio_alloc_clone() would first associate the task's cgroup in
 *   bio_init(), then replace it with @bio's.
 */
static struct bio *mdr_clone(struct mdr_vol *vol, struct bio *bio,
			     struct mdr_backing *b)
{
	blk_opf_t opf = bio->bi_opf;
	struct bio *clone;

	bio->bi_opf |= REQ_ALLOC_CACHE;
	clone = bio_alloc_clone(NULL, bio, GFP_NOIO, &vol->clone_bs);
	bio->bi_opf = opf;
	if (unlikely(!clone))
		return NULL;
	clone->bi_opf &= ~REQ_ALLOC_CACHE;
	clone->bi_bdev = b->bdev;
	bio_clone_blkg_association(clone, bio);
	return clone;
}

/*
 * Back to the per-CPU cache when that is safe and takes nothing from the
 * bio_set's reserve:
 * - outside interrupt context: 6.1's bio_put() warns on a cached bio there
 *   (its test is in_interrupt(), which this one matches), and 6.12's does
 *   not cache softirq puts either;
 * - when this put is the clone's last (no other holder took a reference);
 * - when the mempool holds its full reserve: a clone taken from the
 *   reserve goes back to it through bio_free(), as 6.12's own
 *   mempool_is_saturated() rule does for the bios it caches.
 * Otherwise it is freed as any other clone, whichever way it came.
 */
static void mdr_clone_put(struct mdr_vol *vol, struct bio *clone)
{
	const mempool_t *pool = &vol->clone_bs.bio_pool;

	if (!in_interrupt() && !bio_flagged(clone, BIO_REFFED) &&
	    READ_ONCE(pool->curr_nr) >= pool->min_nr)
		clone->bi_opf |= REQ_ALLOC_CACHE;
	bio_put(clone);
}

static void mdr_clone_endio(struct bio *clone)
{
	struct mdr_io *io = container_of(clone, struct mdr_io, clone);
	struct mdr_vol *vol = io->vol;
	struct bio *orig = io->orig;
	mdr_inflight_token_t token = io->token;

	if (unlikely(clone->bi_status)) {
		orig->bi_status = clone->bi_status;
		mdr_vol_stat_inc(vol, errors);
		atomic64_inc(&io->b->errors);
	}
	if (io->start)
		bio_end_io_acct(orig, io->start);
	mdr_clone_put(vol, clone);
	bio_endio(orig);
	/* last: once the count drops, detach may free @vol */
	mdr_inflight_exit(&vol->inflight, token);
}

/*
 * Extent @index of @vol is at @loc, MAPPED: send @bio there. @bio is
 * counted in flight (@token) and stays counted until its clone completes.
 */
static void mdr_remap(struct mdr_vol *vol, struct bio *bio, u64 index,
		      const struct mdr_loc *loc, mdr_inflight_token_t token)
{
	unsigned int shift = vol->geom.extent_shift;
	struct mdr_backing *b = loc->dev;
	struct bio *clone;
	struct mdr_io *io;

	/* resolved and checked when cached, unless it failed then */
	if (unlikely(!b)) {
		b = mdr_vol_resolve(vol, loc, true);
		if (IS_ERR(b)) {
			if (PTR_ERR(b) == -ENODEV) {
				atomic64_inc(&vol->bad_dev);
				pr_warn_ratelimited("mdr%d: extent %llu is on device %u, which is not bound here\n",
						    vol->index, index, loc->dev_id);
			} else {
				pr_warn_ratelimited("mdr%d: extent %llu at sector %llu lies beyond device %u\n",
						    vol->index, index, loc->pstart,
						    loc->dev_id);
			}
			goto out_fail;
		}
	}
	/* counted first: a move's pre-copy learns of it either way */
	if (op_is_write(bio_op(bio)))
		mdr_track_write(&vol->track, index,
				bio->bi_iter.bi_sector << SECTOR_SHIFT,
				bio->bi_iter.bi_size);

	clone = mdr_clone(vol, bio, b);
	if (unlikely(!clone))
		goto out_fail;
	io = container_of(clone, struct mdr_io, clone);
	io->vol = vol;
	io->b = b;
	io->orig = bio;
	io->token = token;
	/* /sys/block/mdrN/queue/iostats; a start at jiffies 0 counts from 1 */
	io->start = 0;
	if (blk_queue_io_stat(vol->disk->queue))
		io->start = bio_start_io_acct(bio) ?: 1;
	clone->bi_iter.bi_sector =
		mdr_ext_remap(bio->bi_iter.bi_sector, loc->pstart, shift);
	clone->bi_end_io = mdr_clone_endio;
	clone->bi_private = io;
	trace_mdr_remap(vol->index, bio, index, loc->dev_id,
			clone->bi_iter.bi_sector);
	submit_bio_noacct(clone);
	return;

out_fail:
	mdr_inflight_exit(&vol->inflight, token);
	mdr_vol_stat_inc(vol, errors);
	bio_io_error(bio);
}

/**
 * mdr_route() - send a bio that lies within one extent where it belongs
 * @vol:	the volume
 * @bio:	no larger than the rest of its extent
 * @ctx:	the routing task: if @ctx->drain is set on return, the caller
 *		calls mdr_vol_resubmit()
 *
 * The bio is counted in flight before anything is read: the block of an
 * invalidation, DYING, the lease and the extent's location. A drain that
 * starts later waits for it, or it sees what the drain's caller set first
 * (Documentation/volumes.md, "The IO path against an invalidation"). It
 * stays counted only when it goes to a device.
 *
 * Context: process (submit_bio or the resubmit work); does not sleep
 * except for bio mempools.
 */
void mdr_route(struct mdr_vol *vol, struct bio *bio, struct mdr_route_ctx *ctx)
{
	u64 index = mdr_ext_index(bio->bi_iter.bi_sector,
				  vol->geom.extent_shift);
	mdr_inflight_token_t token;
	struct mdr_loc loc;

	if (mdr_inflight_enter(&vol->inflight, index, &token)) {
		/*
		 * A drain here, not the node: no clock starts. One that
		 * already runs still counts (a drain stuck on a device must
		 * not keep a bio that waited for the node waiting on).
		 */
		if (!mdr_held_expired(vol, bio))
			mdr_vol_defer(vol, bio);
		return;
	}
	if (unlikely(test_bit(MDR_VOL_F_DYING, &vol->flags))) {
		mdr_inflight_exit(&vol->inflight, token);
		mdr_vol_stat_inc(vol, errors);
		bio_io_error(bio);
		return;
	}
	if (unlikely(!test_bit(MDR_VOL_F_LEASE, &vol->flags) ||
		     !time_before(jiffies, READ_ONCE(vol->lease_end)))) {
		mdr_inflight_exit(&vol->inflight, token);
		mdr_route_defer(vol, bio);
		return;
	}
	if (mdr_cache_lookup(&vol->cache, index, &loc) == MDR_CACHE_MISS) {
		mdr_inflight_exit(&vol->inflight, token);
		mdr_inject_delay(MDR_WIN_ROUTE);
		mdr_vol_stat_inc(vol, misses);
		mdr_park(vol, bio, index, false, ctx);
		return;
	}
	mdr_inject_delay(MDR_WIN_ROUTE);
	mdr_vol_stat_inc(vol, hits);
	if (likely(loc.state == MDR_EXT_MAPPED)) {
		mdr_remap(vol, bio, index, &loc, token);
		return;
	}
	/* no device is touched from here */
	mdr_inflight_exit(&vol->inflight, token);

	if (loc.state == MDR_EXT_UNALLOCATED) {
		switch (bio_op(bio)) {
		case REQ_OP_READ:
			/* never written: zeros, without touching a device */
			mdr_vol_stat_inc(vol, zero_reads);
			zero_fill_bio(bio);
			bio_endio(bio);
			return;
		case REQ_OP_DISCARD:
		case REQ_OP_WRITE_ZEROES:
			bio_endio(bio);	/* it reads as zeros already */
			return;
		default:
			mdr_park(vol, bio, index, true, ctx);
			return;
		}
	}
	/*
	 * FROZEN, moving: wait. The end of the move is pushed, and that push
	 * routes deferred bios again. Keep only the generation, so they fetch
	 * the entry rather than depend on the push alone (a node restart can
	 * lose it); without one, expire_work routes them again every second.
	 */
	mdr_cache_drop(&vol->cache, index, 1, loc.generation);
	mdr_route_defer(vol, bio);
}

/*
 * A flush is an empty parent bio (never submitted) with one empty
 * REQ_PREFLUSH child chained to it per backing device the volume has
 * used; when the last child completes, the parent ends, and the data of
 * the volume's bio, if any, is sent only then: a journal's commit block
 * must not reach the media before what it commits (dm orders the same).
 */
static void mdr_flush_endio(struct bio *parent)
{
	struct bio *orig = parent->bi_private;
	struct mdr_vol *vol = orig->bi_bdev->bd_disk->private_data;
	unsigned long flags;

	if (unlikely(parent->bi_status)) {
		orig->bi_status = parent->bi_status;
		mdr_vol_stat_inc(vol, errors);
	}
	bio_put(parent);
	if (orig->bi_status || !bio_sectors(orig)) {
		bio_endio(orig);
		/* last: once the count drops, detach may free @vol */
		atomic_dec(&vol->flushing);
		return;
	}
	/* the data goes through mdr_submit_bio again, from process context */
	orig->bi_opf &= ~REQ_PREFLUSH;
	spin_lock_irqsave(&vol->flush_lock, flags);
	bio_list_add(&vol->flush_data, orig);
	spin_unlock_irqrestore(&vol->flush_lock, flags);
	queue_work(mdr_wq, &vol->flush_work);
}

static struct bio *mdr_flush_child(struct mdr_vol *vol, struct mdr_backing *b,
				   gfp_t gfp)
{
	return bio_alloc_bioset(b->bdev, 0, REQ_OP_WRITE | REQ_PREFLUSH |
				REQ_SYNC, gfp, &vol->flush_bs);
}

/*
 * Fan @orig's flush out without waiting for memory: in submit_bio context
 * the children are only queued, so allocating several from one mempool
 * with GFP_NOIO could wait on bios that cannot complete yet.
 * Return: false if memory ran out (nothing was sent).
 */
static bool mdr_flush_nowait(struct mdr_vol *vol, struct bio *orig)
{
	const gfp_t gfp = GFP_NOWAIT | __GFP_NOWARN;
	struct bio_list children;
	struct mdr_backing *b;
	struct bio *parent, *child;
	unsigned long id;

	parent = bio_alloc_bioset(NULL, 0, REQ_OP_WRITE | REQ_PREFLUSH, gfp,
				  &vol->flush_bs);
	if (!parent)
		return false;
	parent->bi_end_io = mdr_flush_endio;
	parent->bi_private = orig;
	bio_list_init(&children);
	xa_for_each(&vol->devs, id, b) {
		child = mdr_flush_child(vol, b, gfp);
		if (!child) {
			while ((child = bio_list_pop(&children)))
				bio_put(child);
			bio_put(parent);
			return false;
		}
		bio_list_add(&children, child);
	}
	while ((child = bio_list_pop(&children))) {
		bio_chain(child, parent);
		submit_bio_noacct(child);
	}
	bio_endio(parent);	/* drops the parent's own count */
	return true;
}

/*
 * The slow path, in process context outside submit_bio: each child is sent
 * as soon as it is allocated, so the mempool's reserve always comes back.
 */
static void mdr_flush_wait(struct mdr_vol *vol, struct bio *orig)
{
	struct mdr_backing *b;
	struct bio *parent;
	unsigned long id;

	parent = bio_alloc_bioset(NULL, 0, REQ_OP_WRITE | REQ_PREFLUSH,
				  GFP_NOIO, &vol->flush_bs);
	parent->bi_end_io = mdr_flush_endio;
	parent->bi_private = orig;
	xa_for_each(&vol->devs, id, b) {
		struct bio *child = mdr_flush_child(vol, b, GFP_NOIO);

		bio_chain(child, parent);
		submit_bio_noacct(child);
	}
	bio_endio(parent);
}

/* Sends what waited for memory, and the data of finished flushes. */
void mdr_flush_work(struct work_struct *work)
{
	struct mdr_vol *vol = container_of(work, struct mdr_vol, flush_work);
	struct bio_list slow, data;
	struct bio *bio;

	spin_lock_irq(&vol->flush_lock);
	slow = vol->flush_slow;
	data = vol->flush_data;
	bio_list_init(&vol->flush_slow);
	bio_list_init(&vol->flush_data);
	spin_unlock_irq(&vol->flush_lock);

	while ((bio = bio_list_pop(&slow)))
		mdr_flush_wait(vol, bio);
	while ((bio = bio_list_pop(&data))) {
		submit_bio_noacct(bio);
		atomic_dec(&vol->flushing);
	}
}

/* Flush every backing device @vol has used, then send @bio's data. */
static void mdr_flush(struct mdr_vol *vol, struct bio *bio)
{
	mdr_vol_stat_inc(vol, flushes);
	atomic_inc(&vol->flushing);
	if (mdr_flush_nowait(vol, bio))
		return;
	spin_lock_irq(&vol->flush_lock);
	bio_list_add(&vol->flush_slow, bio);
	spin_unlock_irq(&vol->flush_lock);
	queue_work(mdr_wq, &vol->flush_work);
}

/**
 * mdr_submit_bio() - entry point of /dev/mdrN
 * @bio:	from the block layer
 *
 * Context: process; never waits for the metadata service.
 */
void mdr_submit_bio(struct bio *bio)
{
	struct mdr_vol *vol = bio->bi_bdev->bd_disk->private_data;
	struct mdr_route_ctx ctx = { .vol = vol };
	unsigned int shift = vol->geom.extent_shift;
	enum mdr_vol_stat_op op;
	u64 sectors;

	if (unlikely(test_bit(MDR_VOL_F_DYING, &vol->flags))) {
		mdr_vol_stat_inc(vol, errors);
		bio_io_error(bio);
		return;
	}
	/*
	 * Read-only: the block layer only warns about writes from kernel
	 * users (bio_check_ro()); nothing but an empty flush goes on.
	 */
	if (unlikely(test_bit(MDR_VOL_F_READONLY, &vol->flags) &&
		     op_is_write(bio_op(bio)) &&
		     !((bio->bi_opf & REQ_PREFLUSH) && !bio_sectors(bio)))) {
		mdr_vol_stat_inc(vol, errors);
		bio_io_error(bio);
		return;
	}
	/*
	 * The flush before any split: a split keeps REQ_PREFLUSH in both
	 * halves, which would flush every device once per piece. The data
	 * comes back here without the flag once the flush is done.
	 */
	if (bio->bi_opf & REQ_PREFLUSH) {
		if (!xa_empty(&vol->devs)) {
			mdr_flush(vol, bio);	/* the data follows the flush */
			return;
		}
		/* nothing was ever written through this volume */
		mdr_vol_stat_inc(vol, flushes);
		bio->bi_opf &= ~REQ_PREFLUSH;
		if (!bio_sectors(bio)) {
			bio_endio(bio);
			return;
		}
	}
	/*
	 * Reads and writes are split only where extents end: the backing
	 * queue splits a clone for its own limits, as under dm-linear. The
	 * other operations (discards, write-zeroes) keep what this queue's
	 * limits say of them (dm splits its "abnormal" IO the same way).
	 */
	if (unlikely(bio_op(bio) != REQ_OP_READ &&
		     bio_op(bio) != REQ_OP_WRITE)) {
		bio = bio_split_to_limits(bio);
		if (!bio)
			return;
	}

	/*
	 * One extent per bio: split off what lies in the first extent and
	 * requeue the rest, which comes back here (md's pattern: one split
	 * per pass keeps the bio_set's reserve sufficient).
	 */
	sectors = mdr_ext_split_sectors(bio->bi_iter.bi_sector,
					bio_sectors(bio), shift);
	if (sectors < bio_sectors(bio)) {
		struct bio *split = bio_split(bio, sectors, GFP_NOIO,
					      &vol->split_bs);

		bio_chain(split, bio);
		submit_bio_noacct(bio);
		bio = split;
	}

	op = mdr_stat_op(bio);
	this_cpu_inc(vol->stats->ops[op]);
	this_cpu_add(vol->stats->bytes[op], bio->bi_iter.bi_size);
	mdr_route(vol, bio, &ctx);
	/* a miss answered at once: route what it released from here */
	if (ctx.drain)
		mdr_vol_resubmit(vol, &ctx);
}
