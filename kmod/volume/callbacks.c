// SPDX-License-Identifier: GPL-2.0
/*
 * callbacks.c - what the transport tells a volume (struct mdr_tvol_ops):
 * entries fetched, fetches and allocations failed, invalidations (and the
 * noting of a move's writes during its pre-copy), the lease granted or
 * lapsed.
 */
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/mdroute_wire.h>

#include "core/inject.h"
#include "proto/proto.h"
#include "volume/volume.h"

/* Entries arrived: cache them and route what waited for them. */
static void mdr_vol_entries(void *owner, u64 first,
			    const struct mdr_wire_entry *e, unsigned int n)
{
	struct mdr_vol *vol = owner;
	unsigned long flags;
	bool kick = false;
	unsigned int i;

	for (i = 0; i < n; i++) {
		u64 index = first + i;
		struct mdr_loc loc = {
			.generation = le64_to_cpu(e[i].generation),
			.pstart = le64_to_cpu(e[i].pstart),
			.dev_id = le32_to_cpu(e[i].dev_id),
			.state = e[i].state,
		};
		struct mdr_wait *w;
		bool stale, refused = false;

		/*
		 * Trusted only if asked for and not invalidated since: a
		 * slot without an entry keeps no generation floor, so an
		 * answer read before a move could otherwise land after it.
		 * The waiter's check and the insert are one step under
		 * @map_lock, which mdr_vol_invalidate() holds to mark the
		 * waiters stale, before it drops the cache: an invalidation
		 * either finds the waiter, or comes after the insert and
		 * drops it.
		 */
		mdr_inject_delay(MDR_WIN_INSERT);
		spin_lock_bh(&vol->map_lock);
		w = mdr_waitlist_detach(&vol->wait, index);
		if (!w) {
			spin_unlock_bh(&vol->map_lock);
			continue;
		}
		stale = test_bit(MDR_WAIT_STALE, &w->flags);
		if (!stale) {
			/*
			 * The device, once here, so the IO path uses it without
			 * a lookup. Only bios waiting on it make the volume a
			 * user of a device it did not use yet: an answer read
			 * ahead must not pin one (unbind) nor add it to every
			 * flush. Under @map_lock: the devices' locks nest in.
			 */
			if (loc.state == MDR_EXT_MAPPED) {
				struct mdr_backing *b = mdr_vol_resolve(vol, &loc,
						!bio_list_empty(&w->bios));

				loc.dev = IS_ERR(b) ? NULL : b;
			}
			/* revalidate.c: was the cached entry stale? */
			if (test_bit(MDR_WAIT_REVAL, &w->flags) &&
			    !test_bit(MDR_WAIT_ALLOC, &w->flags))
				mdr_reval_answer(vol, index, &loc);
			refused = mdr_cache_insert(&vol->cache, index, &loc) != 0;
		}
		spin_unlock_bh(&vol->map_lock);
		if (stale) {
			spin_lock_irqsave(&vol->defer_lock, flags);
			hlist_add_head(&w->node, &vol->refetch);
			spin_unlock_irqrestore(&vol->defer_lock, flags);
			kick = true;
			continue;
		}
		if (!bio_list_empty(&w->bios)) {
			mdr_vol_defer_list(vol, &w->bios);
			/*
			 * An answer the cache refused (older than a push said,
			 * or no memory) would be fetched again at once: its
			 * bios wait for the expiry work's pass instead (1 s).
			 */
			kick |= !refused;
		}
		kfree(w);
	}
	if (kick)
		mdr_vol_kick(vol);
}

/**
 * mdr_vol_failed() - a fetch or allocation of [@first, @first + @n) failed
 * @owner:	the volume
 * @first:	first extent
 * @n:		extents
 * @err:	-errno; -EAGAIN (the node said try again) and -ENOMEM (no
 *		memory for the request, here, which submit_bio context cannot
 *		wait for, or at the node) retry with the deferred bios, within
 *		a quarter of a second while there is a lease, until
 *		fast_io_fail_tmo from their first wait;
 *		anything else fails the bios
 *
 * Context: any.
 */
void mdr_vol_failed(void *owner, u64 first, unsigned int n, int err)
{
	blk_status_t status = errno_to_blk_status(err);
	struct mdr_vol *vol = owner;
	struct bio_list list;
	unsigned long wflags;
	struct bio *bio;
	unsigned int i;

	for (i = 0; i < n; i++) {
		bio_list_init(&list);
		if (!mdr_waitlist_take(&vol->wait, first + i, &list, &wflags))
			continue;
		/*
		 * Extents only read ahead have nothing to fail; an allocation
		 * whose bios all expired meanwhile is still worth the log.
		 */
		if (bio_list_empty(&list) &&
		    !test_bit(MDR_WAIT_ALLOC, &wflags))
			continue;
		if (err == -EAGAIN || err == -ENOMEM) {
			while ((bio = bio_list_pop(&list)))
				mdr_vol_defer(vol, bio);
			continue;
		}
		pr_warn_ratelimited("mdr%d: extent %llu: %s failed: %d\n",
				    vol->index, first + i,
				    test_bit(MDR_WAIT_ALLOC, &wflags) ?
				    "allocation" : "lookup", err);
		mdr_bio_list_fail(vol, &list, status);
	}
}

/*
 * mdnode is about to pre-copy extent @index while IO goes on: note the
 * granules written to it from now on. Writes counted in flight before
 * the drain's phase flip complete before it returns (the ack), and each
 * one counted after it sees the slot (mdr_inflight_enter()'s barrier
 * pairs with the drain's), so every write the pre-copy may have missed
 * is in the mask the move's ack carries.
 */
static void mdr_vol_track(struct mdr_vol *vol, u64 index)
{
	/* a push right after OPEN may come before attach stores the geometry */
	if (mdr_track_start(&vol->track, index,
			    READ_ONCE(vol->geom.extent_shift)))
		mdr_inflight_drain(&vol->inflight);
}

/*
 * Forget what is known of [first, first + count): the answers on their way
 * and the cached entries (tombstones of at least @generation; none when it
 * is 0, for a volume that changed: what we saw of it bounds nothing).
 */
static void mdr_vol_unmap(struct mdr_vol *vol, u64 first, u64 count,
			  u64 generation)
{
	/* one step against an answer's check and insert: mdr_vol_entries() */
	spin_lock_bh(&vol->map_lock);
	mdr_waitlist_mark_stale(&vol->wait, first, count);
	spin_unlock_bh(&vol->map_lock);
	if (generation)
		mdr_cache_drop(&vol->cache, first, count, generation);
	else
		mdr_cache_forget(&vol->cache, first, count);
}

/*
 * mdnode changed entries [first, first + count): block new IO to them,
 * forget them, wait for IO already at the devices when the data moves.
 */
static void mdr_vol_invalidate(void *owner, u64 first, u64 count,
			       u64 generation, u32 reason,
			       struct mdr_inval_ack_info *ack)
{
	struct mdr_vol *vol = owner;
	bool drain = reason != MDR_INVAL_ALLOC;

	if (reason == MDR_INVAL_TRACK) {
		mdr_vol_track(vol, first);
		return;
	}
	if (drain) {
		/* MDR_INFLIGHT_BLOCKS drains running: wait for a slot */
		while (mdr_inflight_block(&vol->inflight, first, count))
			usleep_range(100, 1000);
	}
	mdr_vol_unmap(vol, first, count, generation);
	if (drain) {
		/* IO that read the old place before the block completes */
		mdr_inflight_drain(&vol->inflight);
		/* nothing more is written: what was noted is complete */
		if (reason == MDR_INVAL_MOVE && count == 1 &&
		    mdr_track_end(&vol->track, first, &ack->dirty))
			ack->flags |= MDR_INVAL_ACK_F_TRACKED;
		mdr_inflight_unblock(&vol->inflight, first, count);
	}
	/* any other change ends the noting: the move it was for is over */
	mdr_track_drop(&vol->track, first, count);
	mdr_vol_kick(vol);
}

/* A reopen found the cache may be out of date: see &mdr_tvol_ops.drop. */
static void mdr_vol_drop(void *owner, u64 first, u64 count, u64 generation)
{
	struct mdr_vol *vol = owner;

	mdr_vol_unmap(vol, first, count, generation);
	mdr_track_drop(&vol->track, first, count);
	mdr_vol_kick(vol);
}

/*
 * The lease ran out. mdr_route() turns IO away from the deadline on
 * (@lease_end, after the IO's in-flight count), so the IO counted now is
 * all of this lease's that may still reach a device: wait for it, and keep
 * how long after the deadline it took. mdnode waits out a lapsed lease for
 * io_hold_ms more before it moves data (Documentation/volumes.md, "The IO
 * path against lease expiry"); lease_lapse_io_ms in sysfs is what to
 * compare with. The deadline is the one that ran out (@lapse_end, kept when
 * the lease did), and the drain may also wait for IO of a lease granted
 * again meanwhile: the figure is an upper bound. Its own work: a slow
 * device must not hold up the lease work of every volume on the connection.
 */
void mdr_vol_lapse_work(struct work_struct *work)
{
	struct mdr_vol *vol = container_of(work, struct mdr_vol, lapse_work);
	unsigned long end = READ_ONCE(vol->lapse_end);
	unsigned int late;

	mdr_inflight_drain(&vol->inflight);
	late = time_after(jiffies, end) ? jiffies_to_msecs(jiffies - end) : 0;
	if (late > READ_ONCE(vol->lapse_io_ms))
		WRITE_ONCE(vol->lapse_io_ms, late);
	pr_info("mdr%d: the IO of the lapsed lease completed %u ms after its deadline\n",
		vol->index, late);
}

static void mdr_vol_lease(void *owner, bool valid, u64 deadline_ns)
{
	struct mdr_vol *vol = owner;

	if (valid) {
		unsigned long j = jiffies;	/* first: a delay shortens */
		u64 now = ktime_get_ns();

		/*
		 * In jiffies, rounded down, from a jiffies read before the
		 * clock: mdr_route() compares with jiffies. jiffies may lag
		 * by a few ticks when the CPU that keeps time stalls; the
		 * lease's drift margin covers that.
		 */
		WRITE_ONCE(vol->lease_end, j +
			   (deadline_ns > now ?
			    nsecs_to_jiffies(deadline_ns - now) : 0));
		set_bit(MDR_VOL_F_LEASE, &vol->flags);
		mdr_vol_kick(vol);	/* bios deferred at the old deadline */
	} else if (test_and_clear_bit(MDR_VOL_F_LEASE, &vol->flags)) {
		pr_warn("mdr%d: lease of volume %llu expired: IO waits\n",
			vol->index, vol->geom.volume_id);
		WRITE_ONCE(vol->lapse_end, READ_ONCE(vol->lease_end));
		/* detach flushes it after the close, the last callback */
		queue_work(mdr_wq, &vol->lapse_work);
	}
}

const struct mdr_tvol_ops mdr_vol_tvol_ops = {
	.entries	= mdr_vol_entries,
	.failed		= mdr_vol_failed,
	.invalidate	= mdr_vol_invalidate,
	.drop		= mdr_vol_drop,
	.lease		= mdr_vol_lease,
};
