// SPDX-License-Identifier: GPL-2.0
/*
 * volume.c - attach and detach of volumes, and what the transport tells
 * them (entries, failures, invalidations, leases).
 *
 * Over 800 lines because it still holds three roles: the device's life
 * (attach, detach, teardown), parked and deferred bios, and the transport's
 * callbacks. They go to rooms of their own with the split of kmod/volume/
 * by role that the IO path's rework asks for (Documentation/volumes.md).
 */
#include <linux/blkdev.h>
#include <linux/delay.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/xarray.h>
#include <linux/mdroute.h>
#include <linux/mdroute_wire.h>

#include "core/inject.h"
#include "core/params.h"
#include "proto/proto.h"
#include "volume/backing.h"
#include "volume/extent.h"
#include "volume/volume.h"

#define MDR_MINORS	16		/* partitions per volume */
#define MDR_MAX_VOLUMES	(1U << 16)

static DEFINE_MUTEX(mdr_vol_mutex);	/* attach, detach, list */
static DEFINE_XARRAY_ALLOC(mdr_vols);	/* index -> mdr_vol */
static int mdr_major;
struct workqueue_struct *mdr_wq;	/* resubmission, expiry, flushes */

/* The task fetching on this CPU, with preemption off, if any. */
static DEFINE_PER_CPU(struct mdr_route_ctx *, mdr_fetching);

/*
 * Deferred bios or refetches are ready to be routed again: by the task
 * whose fetch is being answered on this CPU, or by the resubmit work.
 * Context: any.
 */
static void mdr_vol_kick(struct mdr_vol *vol)
{
	struct mdr_route_ctx *ctx = this_cpu_read(mdr_fetching);

	/*
	 * Only the task that set it can run while it is set: it is the
	 * one under us (softirq on its stack) or the one calling.
	 */
	if (ctx && ctx->vol == vol) {
		ctx->drain = true;
		return;
	}
	queue_work(mdr_wq, &vol->resubmit_work);
}

/**
 * mdr_vol_fetch() - ask the transport for entries [@first, @first + @count)
 * @vol:	the volume
 * @first:	first extent
 * @count:	extents
 * @ctx:	the routing task, or NULL
 *
 * With @ctx, answers that arrive before the transport returns set
 * @ctx->drain instead of waking the resubmit work: the caller must then
 * call mdr_vol_resubmit().
 *
 * Context: process (@ctx) or any but hard IRQ (no @ctx); does not sleep.
 * Return: as &mdr_transport_ops.fetch.
 */
int mdr_vol_fetch(struct mdr_vol *vol, u64 first, unsigned int count,
		  struct mdr_route_ctx *ctx)
{
	int ret;

	if (!ctx)
		return vol->tops->fetch(vol->tvol, first, count);
	preempt_disable();
	__this_cpu_write(mdr_fetching, ctx);
	ret = vol->tops->fetch(vol->tvol, first, count);
	__this_cpu_write(mdr_fetching, NULL);
	preempt_enable();
	return ret;
}

static void mdr_bio_list_fail(struct mdr_vol *vol, struct bio_list *list,
			      blk_status_t status)
{
	struct bio *bio;

	while ((bio = bio_list_pop(list))) {
		mdr_vol_stat_inc(vol, errors);
		bio->bi_status = status;
		bio_endio(bio);
	}
}

/*
 * Adds @list to the deferred bios, or fails it once the volume is DYING:
 * detach sets DYING, then empties @deferred under @defer_lock, so nothing
 * is deferred after that and no expiry is armed again.
 */
static void mdr_vol_defer_list(struct mdr_vol *vol, struct bio_list *list)
{
	unsigned long flags;

	spin_lock_irqsave(&vol->defer_lock, flags);
	if (unlikely(test_bit(MDR_VOL_F_DYING, &vol->flags))) {
		spin_unlock_irqrestore(&vol->defer_lock, flags);
		mdr_bio_list_fail(vol, list, BLK_STS_IOERR);
		return;
	}
	if (bio_list_empty(&vol->deferred))
		vol->deferred_since = jiffies;
	bio_list_merge(&vol->deferred, list);
	spin_unlock_irqrestore(&vol->defer_lock, flags);
	queue_delayed_work(mdr_wq, &vol->expire_work, HZ);
}

/*
 * Runs expire_work within a second, unless the volume is DYING: the check
 * is under @defer_lock, as in mdr_vol_defer_list(), and the works are
 * cancelled until neither runs (mdr_vol_flush_works()) once DYING is set.
 * Context: any.
 */
void mdr_vol_arm_expiry(struct mdr_vol *vol)
{
	unsigned long flags;

	spin_lock_irqsave(&vol->defer_lock, flags);
	if (likely(!test_bit(MDR_VOL_F_DYING, &vol->flags)))
		queue_delayed_work(mdr_wq, &vol->expire_work, HZ);
	spin_unlock_irqrestore(&vol->defer_lock, flags);
}

/**
 * mdr_vol_defer() - hold @bio until the lease is valid or a drain ends
 * @vol:	the volume
 * @bio:	a bio within one extent
 *
 * Deferred bios are routed again when the transport reports a valid lease
 * or an invalidation ends; without a lease they fail after
 * fast_io_fail_tmo. Once the volume is DYING, @bio fails instead.
 *
 * Context: any.
 */
void mdr_vol_defer(struct mdr_vol *vol, struct bio *bio)
{
	struct bio_list list = BIO_EMPTY_LIST;

	bio_list_add(&list, bio);
	mdr_vol_stat_inc(vol, deferred);
	mdr_vol_defer_list(vol, &list);
}

static struct bio_list mdr_vol_take_deferred(struct mdr_vol *vol)
{
	struct bio_list list;
	unsigned long flags;

	spin_lock_irqsave(&vol->defer_lock, flags);
	list = vol->deferred;
	bio_list_init(&vol->deferred);
	spin_unlock_irqrestore(&vol->defer_lock, flags);
	return list;
}

/*
 * Fetch again the extents whose answer an invalidation overtook. Bios that
 * have waited fast_io_fail_tmo for an extent that changes under every
 * lookup (a node that keeps moving it, or a hostile one) fail.
 */
static void mdr_vol_refetch(struct mdr_vol *vol, struct mdr_route_ctx *ctx)
{
	struct hlist_node *tmp;
	struct mdr_wait *w;
	HLIST_HEAD(list);
	int ret;

	spin_lock_irq(&vol->defer_lock);
	hlist_move_list(&vol->refetch, &list);
	spin_unlock_irq(&vol->defer_lock);

	hlist_for_each_entry_safe(w, tmp, &list, node) {
		u64 index = w->index;

		hlist_del(&w->node);
		if (bio_list_empty(&w->bios)) {
			kfree(w);	/* read ahead, and nobody waits */
			continue;
		}
		/* detach closes the transport once this work is flushed */
		if (unlikely(test_bit(MDR_VOL_F_DYING, &vol->flags))) {
			mdr_bio_list_fail(vol, &w->bios, BLK_STS_IOERR);
			kfree(w);
			continue;
		}
		if (time_after(jiffies, w->since + g_fast_io_fail_tmo * HZ)) {
			pr_warn_ratelimited("mdr%d: extent %llu changed during every lookup for %us: failing IO\n",
					    vol->index, index, g_fast_io_fail_tmo);
			mdr_bio_list_fail(vol, &w->bios, BLK_STS_IOERR);
			kfree(w);
			continue;
		}
		if (mdr_waitlist_repark(&vol->wait, w) != MDR_PARK_FETCH)
			continue;
		ret = mdr_vol_fetch(vol, index, 1, ctx);
		if (ret)
			mdr_vol_failed(vol, index, 1, ret);
	}
}

/* Passes over the deferred bios one task makes before it hands over. */
#define MDR_RESUBMIT_PASSES	4

/**
 * mdr_vol_resubmit() - fetch again what an invalidation overtook and route
 * the deferred bios
 * @vol:	the volume
 * @ctx:	the routing task
 *
 * Answers that arrive meanwhile on this CPU mean another pass; after a
 * few, the resubmit work takes over, so a task never loops for long on
 * behalf of others.
 *
 * Context: process; sleeps only for bio mempools.
 */
void mdr_vol_resubmit(struct mdr_vol *vol, struct mdr_route_ctx *ctx)
{
	unsigned int pass;

	for (pass = 0; pass < MDR_RESUBMIT_PASSES; pass++) {
		struct bio_list list;
		struct bio *bio;

		ctx->drain = false;
		mdr_vol_refetch(vol, ctx);
		list = mdr_vol_take_deferred(vol);
		while ((bio = bio_list_pop(&list)))
			mdr_route(vol, bio, ctx);
		if (!ctx->drain)
			return;
	}
	queue_work(mdr_wq, &vol->resubmit_work);
}

static void mdr_vol_resubmit_work(struct work_struct *work)
{
	struct mdr_vol *vol = container_of(work, struct mdr_vol, resubmit_work);
	struct mdr_route_ctx ctx = { .vol = vol };

	mdr_vol_resubmit(vol, &ctx);
}

/*
 * Once a second while bios wait: the parked ones that waited
 * fast_io_fail_tmo fail (mdr_park_expire()); the deferred ones look again
 * when there is a lease (an extent may have stopped moving), or fail when
 * there was none for fast_io_fail_tmo.
 */
static void mdr_vol_expire_work(struct work_struct *work)
{
	struct mdr_vol *vol = container_of(to_delayed_work(work),
					   struct mdr_vol, expire_work);
	bool again = mdr_park_expire(vol) > 0;
	unsigned long deadline, flags;
	struct bio_list list;
	bool empty;

	spin_lock_irqsave(&vol->defer_lock, flags);
	empty = bio_list_empty(&vol->deferred);
	deadline = vol->deferred_since + g_fast_io_fail_tmo * HZ;
	spin_unlock_irqrestore(&vol->defer_lock, flags);

	if (empty) {
		/* nothing deferred */
	} else if (test_bit(MDR_VOL_F_LEASE, &vol->flags)) {
		/* waiting for a moving extent: look again */
		mdr_vol_kick(vol);
		again = true;
	} else if (time_after_eq(jiffies, deadline)) {
		list = mdr_vol_take_deferred(vol);
		pr_warn_ratelimited("mdr%d: no lease for %us: failing IO\n",
				    vol->index, g_fast_io_fail_tmo);
		mdr_bio_list_fail(vol, &list, BLK_STS_IOERR);
	} else {
		again = true;
	}
	if (again)
		mdr_vol_arm_expiry(vol);
}

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
 *		a second, until fast_io_fail_tmo from their first wait;
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
		/* extents only read ahead have nothing to fail */
		if (!mdr_waitlist_take(&vol->wait, first + i, &list, &wflags) ||
		    bio_list_empty(&list))
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
	/* one step against an answer's check and insert: mdr_vol_entries() */
	spin_lock_bh(&vol->map_lock);
	mdr_waitlist_mark_stale(&vol->wait, first, count);
	spin_unlock_bh(&vol->map_lock);
	if (generation)
		mdr_cache_drop(&vol->cache, first, count, generation);
	else	/* the volume changed: what we saw of it bounds nothing */
		mdr_cache_forget(&vol->cache, first, count);
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
static void mdr_vol_lapse_work(struct work_struct *work)
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
	.lease		= mdr_vol_lease,
};

static int mdr_bdev_open(struct block_device *bdev, fmode_t mode)
{
	struct mdr_vol *vol = bdev->bd_disk->private_data;

	/* bd_disk->open_mutex is held: detach checks openers under it */
	if (test_bit(MDR_VOL_F_DYING, &vol->flags))
		return -ENXIO;
	return 0;
}

static void mdr_bdev_release(struct gendisk *disk, fmode_t mode)
{
}

static const struct block_device_operations mdr_bdev_ops = {
	.owner		= THIS_MODULE,
	.submit_bio	= mdr_submit_bio,
	.open		= mdr_bdev_open,
	.release	= mdr_bdev_release,
};

static int mdr_target_from_ioctl(const struct mdr_ioctl_target *in,
				 struct mdr_target *t)
{
	u16 port = in->port ? in->port : MDR_WIRE_PORT;

	memset(t, 0, sizeof(*t));
	if (!in->host_id || in->reserved)
		return -EINVAL;
	t->tenant = in->tenant;
	t->host_id = in->host_id;
	switch (in->family) {
	case AF_INET: {
		struct sockaddr_in *sin = (struct sockaddr_in *)&t->addr;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, in->addr, 4);
		if (memchr_inv(in->addr + 4, 0, sizeof(in->addr) - 4) ||
		    in->scope_id)
			return -EINVAL;
		return 0;
	}
	case AF_INET6: {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&t->addr;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		memcpy(&sin6->sin6_addr, in->addr, 16);
		sin6->sin6_scope_id = in->scope_id;
		return 0;
	}
	default:
		return -EAFNOSUPPORT;
	}
}

static void mdr_target_to_ioctl(const struct mdr_target *t,
				struct mdr_ioctl_target *out)
{
	memset(out, 0, sizeof(*out));
	out->tenant = t->tenant;
	out->host_id = t->host_id;
	out->family = t->addr.ss_family;
	if (t->addr.ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)&t->addr;

		out->port = ntohs(sin->sin_port);
		memcpy(out->addr, &sin->sin_addr, 4);
	} else {
		const struct sockaddr_in6 *sin6 = (const void *)&t->addr;

		out->port = ntohs(sin6->sin6_port);
		memcpy(out->addr, &sin6->sin6_addr, 16);
		out->scope_id = sin6->sin6_scope_id;
	}
}

static bool mdr_target_equal(const struct mdr_target *a,
			     const struct mdr_target *b)
{
	return a->tenant == b->tenant &&
	       !memcmp(&a->addr, &b->addr, sizeof(a->addr));
}

/* What the metadata service said must make sense before a disk exists. */
static int mdr_geom_check(const struct mdr_vol_geom *g, u64 volume_id)
{
	u64 ext;

	if (g->volume_id != volume_id ||
	    g->extent_shift < MDR_WIRE_EXTENT_SHIFT_MIN ||
	    g->extent_shift > MDR_WIRE_EXTENT_SHIFT_MAX ||
	    !g->size || g->size % 4096)
		return -EPROTO;
	ext = 1ULL << g->extent_shift;
	if (g->nr_extents != DIV_ROUND_UP_ULL(g->size, ext))
		return -EPROTO;
	return 0;
}

static void mdr_vol_info(struct mdr_vol *vol, struct mdr_ioctl_vol_info *info)
{
	memset(info, 0, sizeof(*info));
	info->index = vol->index;
	info->extent_shift = vol->geom.extent_shift;
	info->volume_id = vol->geom.volume_id;
	info->size = vol->geom.size;
	mdr_target_to_ioctl(&vol->target, &info->target);
	if (test_bit(MDR_VOL_F_LEASE, &vol->flags))
		info->flags |= MDR_VOL_LEASE_VALID;
	if (test_bit(MDR_VOL_F_READONLY, &vol->flags))
		info->flags |= MDR_VOL_READONLY;
	if (test_bit(MDR_VOL_F_DYING, &vol->flags))
		info->flags |= MDR_VOL_DYING;
	if (vol->disk)
		info->open_count = disk_openers(vol->disk);
	info->cached = mdr_cache_count(&vol->cache);
	info->inflight = mdr_inflight_total(&vol->inflight);
	strscpy(info->name, vol->geom.name, sizeof(info->name));
}

/* Undo everything but the disk; tolerates a volume set up halfway. */
static void mdr_vol_free(struct mdr_vol *vol)
{
	struct mdr_backing *b;
	unsigned long id;

	xa_for_each(&vol->devs, id, b)
		mdr_backing_put_user(b);
	xa_destroy(&vol->devs);
	mdr_cache_destroy(&vol->cache);
	mdr_inflight_destroy(&vol->inflight);
	bioset_exit(&vol->held_bs);
	bioset_exit(&vol->flush_bs);
	bioset_exit(&vol->clone_bs);
	bioset_exit(&vol->split_bs);
	free_percpu(vol->stats);
	kfree(vol);
}

static struct mdr_vol *mdr_vol_alloc(void)
{
	struct mdr_vol *vol;

	vol = kzalloc(sizeof(*vol), GFP_KERNEL);
	if (!vol)
		return NULL;
	vol->index = -1;
	xa_init(&vol->devs);
	spin_lock_init(&vol->devs_lock);
	spin_lock_init(&vol->defer_lock);
	spin_lock_init(&vol->map_lock);
	bio_list_init(&vol->deferred);
	INIT_HLIST_HEAD(&vol->refetch);
	INIT_WORK(&vol->resubmit_work, mdr_vol_resubmit_work);
	INIT_DELAYED_WORK(&vol->expire_work, mdr_vol_expire_work);
	INIT_WORK(&vol->lapse_work, mdr_vol_lapse_work);
	spin_lock_init(&vol->flush_lock);
	bio_list_init(&vol->flush_slow);
	bio_list_init(&vol->flush_data);
	INIT_WORK(&vol->flush_work, mdr_flush_work);
	atomic_set(&vol->flushing, 0);
	mdr_track_init(&vol->track);
	mdr_waitlist_init(&vol->wait);
	atomic64_set(&vol->bad_dev, 0);
	mdr_reval_init(vol);
	vol->last_miss = U64_MAX - 1;
	vol->lease_end = jiffies;	/* no IO before the open's grant */
	vol->tops = &mdr_rdma_transport;

	/* first: mdr_vol_free() destroys the cache even when this fails */
	if (mdr_cache_init(&vol->cache, max(g_cache_max_extents, 1U)))
		goto out_free;
	if (mdr_inflight_init(&vol->inflight))
		goto out_free;
	vol->stats = alloc_percpu(struct mdr_vol_stats);
	if (!vol->stats)
		goto out_free;
	/*
	 * Rescuers: a submit_bio() that routes deferred bios clones several
	 * while the clones it made wait on current->bio_list; a mempool wait
	 * then punts them to the rescuer instead of waiting on itself.
	 */
	if (bioset_init(&vol->split_bs, BIO_POOL_SIZE, 0, BIOSET_NEED_RESCUER))
		goto out_free;
	if (bioset_init(&vol->clone_bs, BIO_POOL_SIZE,
			offsetof(struct mdr_io, clone), BIOSET_NEED_RESCUER))
		goto out_free;
	if (bioset_init(&vol->flush_bs, BIO_POOL_SIZE, 0, 0))
		goto out_free;
	/* no rescuer: mdr_hold() never waits for the pool */
	if (bioset_init(&vol->held_bs, BIO_POOL_SIZE,
			offsetof(struct mdr_held, bio), 0))
		goto out_free;
	return vol;

out_free:
	mdr_vol_free(vol);
	return NULL;
}

static int mdr_vol_add_disk(struct mdr_vol *vol)
{
	u32 ext_sectors = 1U << mdr_ext_sector_shift(vol->geom.extent_shift);
	struct queue_limits lim;
	struct request_queue *q;
	struct gendisk *disk;
	int ret;

	disk = blk_alloc_disk(NUMA_NO_NODE);
	if (!disk)
		return -ENOMEM;
	q = disk->queue;

	/* the strictest limits of every device the volume may use */
	blk_set_stacking_limits(&lim);
	mdr_backing_limits(&lim);
	blk_queue_logical_block_size(q, max(lim.logical_block_size, 512U));
	blk_queue_physical_block_size(q, max(lim.physical_block_size, 512U));
	blk_queue_io_min(q, lim.io_min);
	blk_queue_max_hw_sectors(q, min(lim.max_hw_sectors, ext_sectors));
	blk_queue_chunk_sectors(q, ext_sectors);	/* split per extent */
	blk_queue_max_discard_sectors(q, min(lim.max_discard_sectors,
					     ext_sectors));
	if (lim.max_discard_sectors)
		q->limits.discard_granularity =
			max(lim.discard_granularity, lim.logical_block_size);
	blk_queue_max_write_zeroes_sectors(q, min(lim.max_write_zeroes_sectors,
						  ext_sectors));
	/* devices bound later may cache writes: always pass flush and FUA */
	blk_queue_write_cache(q, true, true);
	blk_queue_flag_set(QUEUE_FLAG_NONROT, q);
	/* accounted, as blk-mq disks are; queue/iostats turns it off */
	blk_queue_flag_set(QUEUE_FLAG_IO_STAT, q);

	disk->major = mdr_major;
	disk->first_minor = vol->index * MDR_MINORS;
	disk->minors = MDR_MINORS;
	disk->fops = &mdr_bdev_ops;
	disk->private_data = vol;
	snprintf(disk->disk_name, DISK_NAME_LEN, "mdr%d", vol->index);
	set_capacity(disk, vol->geom.size >> SECTOR_SHIFT);
	if (test_bit(MDR_VOL_F_READONLY, &vol->flags))
		set_disk_ro(disk, true);

	vol->disk = disk;
	ret = device_add_disk(NULL, disk, mdr_vol_attr_groups);
	if (ret) {
		vol->disk = NULL;
		put_disk(disk);
	}
	return ret;
}

/* Fail every bio parked or deferred on @vol. */
static void mdr_vol_fail_all(struct mdr_vol *vol, blk_status_t status)
{
	struct bio_list list = mdr_vol_take_deferred(vol);
	struct hlist_node *tmp;
	struct mdr_wait *w;
	HLIST_HEAD(refetch);

	mdr_bio_list_fail(vol, &list, status);
	spin_lock_irq(&vol->defer_lock);
	hlist_move_list(&vol->refetch, &refetch);
	spin_unlock_irq(&vol->defer_lock);
	hlist_for_each_entry_safe(w, tmp, &refetch, node) {
		hlist_del(&w->node);
		mdr_bio_list_fail(vol, &w->bios, status);
		kfree(w);
	}
	while ((w = mdr_waitlist_pop_any(&vol->wait))) {
		mdr_bio_list_fail(vol, &w->bios, status);
		kfree(w);
	}
}

/* Waits for the volume's works; once DYING, none uses the transport. */
static void mdr_vol_flush_works(struct mdr_vol *vol)
{
	/* each may queue the other: until neither ran */
	do {
		cancel_delayed_work_sync(&vol->expire_work);
	} while (flush_work(&vol->resubmit_work));
}

/*
 * Takes a DYING volume off the transport and waits until nothing but its
 * owner touches it: no work, no callback, no IO at a device, no flush.
 * Parked and deferred bios fail. Shared by detach and a failed attach
 * (whose open may already have let a push queue work).
 *
 * The order is the lifetime rule: DYING (set by the caller) stops new IO
 * (mdr_route() checks it after counting itself in flight), deferrals
 * (mdr_vol_defer_list()) and refetches; then the works are flushed, so
 * none is inside the transport when it closes; close() ends the callbacks;
 * the works they queued are flushed again (they only fail bios now); the
 * drain waits for IO at the devices, and synchronize_rcu() for the last
 * touch of each completion (inflight.c).
 */
static void mdr_vol_stop(struct mdr_vol *vol)
{
	mdr_reval_stop(vol);
	mdr_vol_flush_works(vol);
	/*
	 * IO at the backing devices completes before the node hears of the
	 * close: CLOSE ends the lease at once, and the node may then move the
	 * extents or reuse their places. DYING, set by the caller, turns new
	 * IO away in mdr_route(), after its in-flight count (barriers A/B of
	 * inflight.c): what got past it before is what this drain waits for,
	 * and nothing reaches a device after it.
	 */
	mdr_inflight_drain(&vol->inflight);
	vol->tops->close(vol->tvol);
	mdr_inject_delay(MDR_WIN_TEARDOWN);
	mdr_vol_flush_works(vol);
	flush_work(&vol->lapse_work);
	mdr_vol_fail_all(vol, BLK_STS_IOERR);

	while (atomic_read(&vol->flushing))
		msleep(20);
	flush_work(&vol->flush_work);
	synchronize_rcu();
	WARN_ON_ONCE(mdr_inflight_total(&vol->inflight));
}

/**
 * mdr_vol_attach() - MDR_IOC_ATTACH: open a volume and create /dev/mdrN
 * @a:		the ioctl argument; @a->info is filled on success
 * @readonly:	the disk is read-only
 *
 * The volume takes its index under mdr_vol_mutex at once, so a concurrent
 * attach of the same volume sees it and fails with -EEXIST; list, status
 * and detach see it only once it is LIVE.
 *
 * Context: process; sleeps (connects to the metadata service).
 * Return: 0 or -errno.
 */
int mdr_vol_attach(struct mdr_ioctl_attach *a, bool readonly)
{
	struct mdr_vol *vol, *other;
	unsigned long i;
	u32 index;
	int ret;

	if (!a->volume_id)
		return -EINVAL;
	vol = mdr_vol_alloc();
	if (!vol)
		return -ENOMEM;
	vol->volume_id = a->volume_id;
	ret = mdr_target_from_ioctl(&a->target, &vol->target);
	if (ret)
		goto out_free;
	if (readonly)
		set_bit(MDR_VOL_F_READONLY, &vol->flags);

	mutex_lock(&mdr_vol_mutex);
	xa_for_each(&mdr_vols, i, other) {
		if (other->volume_id == a->volume_id &&
		    mdr_target_equal(&other->target, &vol->target)) {
			mutex_unlock(&mdr_vol_mutex);
			ret = -EEXIST;
			goto out_free;
		}
	}
	ret = xa_alloc(&mdr_vols, &index, vol,
		       XA_LIMIT(0, MDR_MAX_VOLUMES - 1), GFP_KERNEL);
	mutex_unlock(&mdr_vol_mutex);
	if (ret)
		goto out_free;
	vol->index = index;

	/* the open's grant sets the lease, and its deadline, through ->lease */
	vol->tvol = vol->tops->open(&vol->target, a->volume_id, vol,
				    &mdr_vol_tvol_ops, &vol->geom);
	if (IS_ERR(vol->tvol)) {
		ret = PTR_ERR(vol->tvol);
		vol->tvol = NULL;
		goto out_release_index;
	}
	vol->geom.name[sizeof(vol->geom.name) - 1] = '\0';
	ret = mdr_geom_check(&vol->geom, a->volume_id);
	if (ret) {
		pr_warn("volume %llu: the metadata service described it inconsistently\n",
			a->volume_id);
		goto out_stop;
	}

	ret = mdr_vol_add_disk(vol);
	if (ret)
		goto out_stop;
	mdr_reval_start(vol);	/* before detach can find the volume */

	__module_get(THIS_MODULE);	/* rmmod waits for the detach */
	mdr_vol_info(vol, &a->info);
	pr_info("mdr%d: volume %llu \"%s\" attached (%llu bytes, %u KiB extents, tenant %u)\n",
		vol->index, vol->geom.volume_id, vol->geom.name, vol->geom.size,
		1U << (vol->geom.extent_shift - 10), vol->target.tenant);
	/* the last touch: from here a detach may free the volume */
	mutex_lock(&mdr_vol_mutex);
	set_bit(MDR_VOL_F_LIVE, &vol->flags);
	mutex_unlock(&mdr_vol_mutex);
	return 0;

out_stop:
	set_bit(MDR_VOL_F_DYING, &vol->flags);
	mdr_vol_stop(vol);
out_release_index:
	mutex_lock(&mdr_vol_mutex);
	xa_erase(&mdr_vols, index);
	mutex_unlock(&mdr_vol_mutex);
out_free:
	mdr_vol_free(vol);
	return ret;
}

/**
 * mdr_vol_detach() - MDR_IOC_DETACH: remove /dev/mdrN
 * @index:	N
 * @volume_id:	must match, unless 0
 * @force:	fail pending IO and detach even if the disk is open
 *
 * Context: process; sleeps until IO at the backing devices completes.
 * Return: 0, -ENXIO (no such volume), -EINVAL (another volume is
 * attached there) or -EBUSY (open, without @force).
 */
int mdr_vol_detach(u32 index, u64 volume_id, bool force)
{
	struct mdr_vol *vol;
	int ret = 0;

	mutex_lock(&mdr_vol_mutex);
	vol = xa_load(&mdr_vols, index);
	if (!vol || !test_bit(MDR_VOL_F_LIVE, &vol->flags)) {
		mutex_unlock(&mdr_vol_mutex);
		return -ENXIO;
	}
	if (volume_id && vol->volume_id != volume_id) {
		mutex_unlock(&mdr_vol_mutex);
		return -EINVAL;
	}
	mutex_lock(&vol->disk->open_mutex);
	if (disk_openers(vol->disk) && !force)
		ret = -EBUSY;
	else
		set_bit(MDR_VOL_F_DYING, &vol->flags);
	mutex_unlock(&vol->disk->open_mutex);
	if (ret) {
		mutex_unlock(&mdr_vol_mutex);
		return ret;
	}
	/*
	 * Hidden from list, status and a second detach, but keeping its
	 * index and its volume id until the transport has closed it: an
	 * attach of the same volume meanwhile gets -EEXIST, not a second
	 * handle beside the dying one on the connection.
	 */
	clear_bit(MDR_VOL_F_LIVE, &vol->flags);
	mutex_unlock(&mdr_vol_mutex);

	pr_info("mdr%d: detaching volume %llu%s\n", vol->index,
		vol->geom.volume_id, force ? " (forced)" : "");
	/*
	 * New IO fails from here; what is parked for the network fails now,
	 * before del_gendisk() writes back what the page cache holds.
	 */
	mdr_vol_fail_all(vol, BLK_STS_IOERR);
	del_gendisk(vol->disk);	/* no submit_bio() runs on after it */
	mdr_vol_stop(vol);
	mutex_lock(&mdr_vol_mutex);
	xa_erase(&mdr_vols, index);
	mutex_unlock(&mdr_vol_mutex);

	put_disk(vol->disk);
	vol->disk = NULL;
	mdr_vol_free(vol);
	module_put(THIS_MODULE);
	return 0;
}

/**
 * mdr_vol_list() - describe the attached volumes, in index order
 * @out:	room for @count struct mdr_ioctl_vol_info
 * @start:	lowest index to describe
 * @count:	elements of @out
 * @total:	out: volumes attached
 *
 * Return: descriptions written.
 */
int mdr_vol_list(void *out, u32 start, u32 count, u32 *total)
{
	struct mdr_ioctl_vol_info *info = out;
	struct mdr_vol *vol;
	unsigned long i;
	u32 n = 0, all = 0;

	mutex_lock(&mdr_vol_mutex);
	xa_for_each(&mdr_vols, i, vol) {
		if (!test_bit(MDR_VOL_F_LIVE, &vol->flags))
			continue;	/* still attaching */
		if (i >= start && n < count)
			mdr_vol_info(vol, &info[n++]);
		all++;
	}
	mutex_unlock(&mdr_vol_mutex);
	*total = all;
	return n;
}

/**
 * mdr_vol_status() - describe volume @info->index
 * @info:	in: index; out: the volume
 *
 * Return: 0 or -ENXIO.
 */
int mdr_vol_status(struct mdr_ioctl_vol_info *info)
{
	struct mdr_vol *vol;
	int ret = -ENXIO;

	mutex_lock(&mdr_vol_mutex);
	vol = xa_load(&mdr_vols, info->index);
	if (vol && test_bit(MDR_VOL_F_LIVE, &vol->flags)) {
		mdr_vol_info(vol, info);
		ret = 0;
	}
	mutex_unlock(&mdr_vol_mutex);
	return ret;
}

/* Volumes attached or attaching now: rmmod is refused while there are any. */
unsigned int mdr_vol_count(void)
{
	struct mdr_vol *vol;
	unsigned int n = 0;
	unsigned long i;

	mutex_lock(&mdr_vol_mutex);
	xa_for_each(&mdr_vols, i, vol)
		n++;
	mutex_unlock(&mdr_vol_mutex);
	return n;
}

int mdr_vol_init(void)
{
	int ret;

	mdr_wq = alloc_workqueue("mdroute", WQ_MEM_RECLAIM, 0);
	if (!mdr_wq)
		return -ENOMEM;
	mdr_major = register_blkdev(0, "mdr");
	if (mdr_major < 0) {
		ret = mdr_major;
		destroy_workqueue(mdr_wq);
		return ret;
	}
	return 0;
}

void mdr_vol_exit(void)
{
	unregister_blkdev(mdr_major, "mdr");
	destroy_workqueue(mdr_wq);
	mdr_backing_exit();
}
