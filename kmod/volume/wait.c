// SPDX-License-Identifier: GPL-2.0
/*
 * wait.c - bios that wait for the node: held (the time of the first wait
 * bounds every later one), parked on an extent being fetched or allocated,
 * deferred for a lease or the end of a drain. They are routed again by the
 * task whose fetch was answered or by the resubmit work, and failed by the
 * expire work after fast_io_fail_tmo, or at detach.
 */
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/jiffies.h>
#include <linux/percpu.h>
#include <linux/slab.h>

#include "core/params.h"
#include "volume/volume.h"
#include "volume/trace.h"

/*
 * How often deferred bios look again while the volume holds a lease: an
 * ALLOC answered AGAIN by a new leader waiting out the old leases is asked
 * again this soon after the wait ends, not up to a second later.
 */
#define MDR_DEFER_LOOK		(HZ / 4)

/* The task fetching on this CPU, with preemption off, if any. */
static DEFINE_PER_CPU(struct mdr_route_ctx *, mdr_fetching);

/*
 * Deferred bios or refetches are ready to be routed again: by the task
 * whose fetch is being answered on this CPU, or by the resubmit work.
 * Context: any.
 */
void mdr_vol_kick(struct mdr_vol *vol)
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

void mdr_bio_list_fail(struct mdr_vol *vol, struct bio_list *list,
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
void mdr_vol_defer_list(struct mdr_vol *vol, struct bio_list *list)
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
	queue_delayed_work(mdr_wq, &vol->expire_work, MDR_DEFER_LOOK);
}

/*
 * Runs expire_work within @delay, unless the volume is DYING: the check
 * is under @defer_lock, as in mdr_vol_defer_list(), and the works are
 * cancelled until neither runs (mdr_vol_flush_works()) once DYING is set.
 *
 * Pending already: nothing to do, without the lock, on every miss. A work
 * seen pending has not started, and starts after its pending bit is
 * cleared (a full barrier in the workqueue); what the caller parked under
 * the wait list's lock before this check is then seen by its
 * mdr_park_expire(), which takes that lock after.
 * Context: any.
 */
static void mdr_vol_arm_expiry_in(struct mdr_vol *vol, unsigned long delay)
{
	unsigned long flags;

	if (delayed_work_pending(&vol->expire_work))
		return;
	spin_lock_irqsave(&vol->defer_lock, flags);
	if (likely(!test_bit(MDR_VOL_F_DYING, &vol->flags)))
		queue_delayed_work(mdr_wq, &vol->expire_work, delay);
	spin_unlock_irqrestore(&vol->defer_lock, flags);
}

/* Within a second. */
void mdr_vol_arm_expiry(struct mdr_vol *vol)
{
	mdr_vol_arm_expiry_in(vol, HZ);
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

void mdr_vol_resubmit_work(struct work_struct *work)
{
	struct mdr_vol *vol = container_of(work, struct mdr_vol, resubmit_work);
	struct mdr_route_ctx ctx = { .vol = vol };

	mdr_vol_resubmit(vol, &ctx);
}

/*
 * mdr_waitlist_expire(): @bio, parked for an answer, has waited
 * fast_io_fail_tmo since its first wait for the node, or, if it could not
 * be held, since the first park on its extent.
 */
static bool mdr_park_due(struct bio *bio, unsigned long since, void *arg)
{
	struct mdr_vol *vol = arg;

	if (bio->bi_pool == &vol->held_bs)
		since = container_of(bio, struct mdr_held, bio)->since;
	return !time_before(jiffies, since + g_fast_io_fail_tmo * HZ);
}

/**
 * mdr_park_expire() - fail the parked bios that waited too long
 * @vol:	the volume
 *
 * A request in flight is bounded by its own retries and the connection's
 * teardown, which together can outlast fast_io_fail_tmo by much (an
 * ALLOC's slot waits a lease per attempt): the bios do not wait for it.
 * Its answer, when it comes, still fills the cache.
 *
 * Context: process (expire_work).
 * Return: how many bios still wait for an answer.
 */
static unsigned int mdr_park_expire(struct mdr_vol *vol)
{
	struct bio_list late;
	unsigned int left;
	struct bio *bio;

	bio_list_init(&late);
	left = mdr_waitlist_expire(&vol->wait, mdr_park_due, vol, &late);
	if (!bio_list_empty(&late))
		pr_warn_ratelimited("mdr%d: IO waited %us for an answer of the metadata service: failing it\n",
				    vol->index, g_fast_io_fail_tmo);
	while ((bio = bio_list_pop(&late))) {
		mdr_vol_stat_inc(vol, errors);
		bio_io_error(bio);
	}
	return left;
}

/*
 * Once a second while bios wait: the parked ones that waited
 * fast_io_fail_tmo fail (mdr_park_expire()); the deferred ones look again
 * when there is a lease (an extent may have stopped moving, the node may
 * allocate now), every MDR_DEFER_LOOK, or fail when there was none for
 * fast_io_fail_tmo.
 */
void mdr_vol_expire_work(struct work_struct *work)
{
	struct mdr_vol *vol = container_of(to_delayed_work(work),
					   struct mdr_vol, expire_work);
	bool again = mdr_park_expire(vol) > 0, soon = false;
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
		/*
		 * Waiting for a moving extent, or for an ALLOC the node
		 * answered AGAIN (a leader that waits out the leases of the
		 * one before): look again soon.
		 */
		mdr_vol_kick(vol);
		soon = true;
	} else if (time_after_eq(jiffies, deadline)) {
		list = mdr_vol_take_deferred(vol);
		pr_warn_ratelimited("mdr%d: no lease for %us: failing IO\n",
				    vol->index, g_fast_io_fail_tmo);
		mdr_bio_list_fail(vol, &list, BLK_STS_IOERR);
	} else {
		again = true;
	}
	if (soon)
		mdr_vol_arm_expiry_in(vol, MDR_DEFER_LOOK);
	else if (again)
		mdr_vol_arm_expiry(vol);
}

static void mdr_held_endio(struct bio *bio)
{
	struct mdr_held *h = container_of(bio, struct mdr_held, bio);
	struct bio *orig = h->orig;

	if (unlikely(bio->bi_status))
		orig->bi_status = bio->bi_status;
	bio_put(bio);
	bio_endio(orig);
}

/* A held @bio whose first wait was fast_io_fail_tmo ago is failed. */
bool mdr_held_expired(struct mdr_vol *vol, struct bio *bio)
{
	struct mdr_held *h;

	if (bio->bi_pool != &vol->held_bs)
		return false;
	h = container_of(bio, struct mdr_held, bio);
	if (likely(time_before(jiffies, h->since + g_fast_io_fail_tmo * HZ)))
		return false;
	pr_warn_ratelimited("mdr%d: IO at sector %llu waited %us for the metadata service: failing it\n",
			    vol->index, (u64)bio->bi_iter.bi_sector,
			    g_fast_io_fail_tmo);
	mdr_vol_stat_inc(vol, errors);
	bio_io_error(bio);
	return true;
}

/*
 * @bio must wait for the node: a lookup, an allocation, a lease, the end
 * of a move. The first time, it is wrapped in a struct mdr_held that
 * remembers when; once held for fast_io_fail_tmo, it fails instead of
 * waiting again, so no answer of the node (stale entries, an extent FROZEN
 * for ever, AGAIN after AGAIN) keeps IO waiting without end.
 * Only bios that wait pay for it.
 * Context: process (mdr_route()); does not sleep.
 * Return: the bio to park or defer, or NULL if @bio was failed.
 */
static struct bio *mdr_hold(struct mdr_vol *vol, struct bio *bio)
{
	struct mdr_held *h;
	struct bio *held;

	if (mdr_held_expired(vol, bio))
		return NULL;
	if (bio->bi_pool == &vol->held_bs)
		return bio;
	/*
	 * Without reclaim: the resubmit work routes bios too, and a mempool
	 * wait there could wait for held bios that only that work routes.
	 * Past the pool's reserve, under memory pressure, @bio waits as it
	 * is: without the bound, never without progress.
	 */
	held = bio_alloc_clone(bio->bi_bdev, bio, GFP_NOWAIT | __GFP_NOWARN,
			       &vol->held_bs);
	if (unlikely(!held))
		return bio;
	h = container_of(held, struct mdr_held, bio);
	h->orig = bio;
	h->since = jiffies;
	held->bi_end_io = mdr_held_endio;
	return held;
}

/* mdr_route(): @bio waits on the deferred list, from its first wait on */
void mdr_route_defer(struct mdr_vol *vol, struct bio *bio)
{
	bio = mdr_hold(vol, bio);
	if (bio)
		mdr_vol_defer(vol, bio);
}

/*
 * Registers extents @index + 1 .. @index + @count - 1 as being fetched,
 * up to the first that already is (or memory runs out): answers are
 * cached only for extents asked for.
 * Return: how many extents to fetch from @index.
 */
static unsigned int mdr_read_ahead(struct mdr_vol *vol, u64 index,
				   unsigned int count)
{
	unsigned int i;

	for (i = 1; i < count; i++) {
		struct mdr_wait *spare = kzalloc(sizeof(*spare),
						 GFP_NOWAIT | __GFP_NOWARN);
		bool ok = spare && mdr_waitlist_expect(&vol->wait, index + i,
						       &spare, jiffies);

		kfree(spare);	/* NULL when the list took it */
		if (!ok)
			break;
	}
	return i;
}

/* Park @bio on extent @index and start what it needs. */
void mdr_park(struct mdr_vol *vol, struct bio *bio, u64 index, bool alloc,
	      struct mdr_route_ctx *ctx)
{
	struct mdr_wait *spare;
	enum mdr_park_action act;
	unsigned int count = 1, prefetch;
	int ret;

	bio = mdr_hold(vol, bio);
	if (!bio)
		return;
	spare = kzalloc(sizeof(*spare), GFP_NOWAIT | __GFP_NOWARN);
	if (unlikely(!spare)) {
		/* not ENOMEM to the file system: routed again within 1 s */
		mdr_vol_defer(vol, bio);
		return;
	}
	act = mdr_waitlist_park(&vol->wait, index, bio, alloc, &spare, jiffies);
	kfree(spare);
	mdr_vol_arm_expiry(vol);	/* its bound: mdr_park_expire() */

	switch (act) {
	case MDR_PARK_JOINED:
		return;
	case MDR_PARK_ALLOC:
		mdr_vol_stat_inc(vol, allocs);
		trace_mdr_miss(vol->index, index, true);
		ret = vol->tops->alloc(vol->tvol, index);
		break;
	case MDR_PARK_FETCH:
	default:
		/*
		 * A run of misses on adjacent extents reads ahead, never
		 * more than half the cache would hold.
		 */
		prefetch = READ_ONCE(g_prefetch);
		if (READ_ONCE(vol->last_miss) + 1 == index && prefetch > 1)
			count = mdr_read_ahead(vol, index,
					       min3((u64)prefetch,
						    (u64)vol->cache.max / 2 + 1,
						    vol->geom.nr_extents -
						    index));
		WRITE_ONCE(vol->last_miss, index);
		trace_mdr_miss(vol->index, index, false);
		ret = mdr_vol_fetch(vol, index, count, ctx);
		break;
	}
	if (ret)	/* nothing will answer: fail what waits */
		mdr_vol_failed(vol, index, count, ret);
}

/* Fail every bio parked or deferred on @vol. */
void mdr_vol_fail_all(struct mdr_vol *vol, blk_status_t status)
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
