// SPDX-License-Identifier: GPL-2.0
/*
 * revalidate.c - background revalidation of cached entries, a safety net
 * for a lost invalidation.
 *
 * A per-volume delayed work walks the location cache with a cursor and
 * READs the table entries of runs of adjacent cached extents, registered
 * on the wait list like read-ahead (MDR_WAIT_REVAL): an answer is trusted
 * only if it was asked for and no invalidation covered it since. When a
 * trusted answer is newer than the cached entry (or the same generation
 * elsewhere), the cached entry was stale: it is counted, logged
 * (rate-limited) and replaced by the answer, so new IO goes where the
 * table says. The period adapts to the volume's IO rate
 * (mdr_reval_next_ms(), pure, in revalidate.h); each pass issues at most
 * revalidate_reads READs, so misses never wait long behind it.
 * Documentation/volumes.md, "Revalidation".
 */
#include <linux/jiffies.h>
#include <linux/slab.h>
#include <linux/mdroute_wire.h>

#include "core/params.h"
#include "volume/revalidate.h"
#include "volume/volume.h"

#define MDR_REVAL_WINDOW	32	/* entries one READ revalidates (1 KiB) */

/* Bios the volume has taken since it was attached. */
static u64 mdr_reval_ios(struct mdr_vol *vol)
{
	u64 sum = 0;
	int cpu, op;

	for_each_possible_cpu(cpu) {
		struct mdr_vol_stats *s = per_cpu_ptr(vol->stats, cpu);

		for (op = 0; op < ARRAY_SIZE(s->ops); op++)
			sum += s->ops[op];
	}
	return sum;
}

/*
 * Registers a revalidation fetch of @index on the wait list.
 * Return: false if the extent has a request in flight already (its answer
 * will serve) or memory is short.
 */
static bool mdr_reval_expect(struct mdr_vol *vol, u64 index)
{
	struct mdr_wait *spare;
	bool ok;

	/* on mdr_wq (WQ_MEM_RECLAIM): no reclaim that could wait for IO */
	spare = kzalloc(sizeof(*spare), GFP_NOIO | __GFP_NOWARN);
	if (!spare)
		return false;
	__set_bit(MDR_WAIT_REVAL, &spare->flags);
	ok = mdr_waitlist_expect(&vol->wait, index, &spare, jiffies);
	kfree(spare);	/* NULL when the list took it */
	return ok;
}

/*
 * One pass: from the cursor, READs of runs of up to MDR_REVAL_WINDOW
 * adjacent cached extents, at most revalidate_reads of them, once around
 * the cache at most.
 * Return: READs issued.
 */
static unsigned int mdr_reval_pass(struct mdr_vol *vol)
{
	unsigned int budget = READ_ONCE(g_revalidate_reads), reads = 0;
	u64 nr = vol->geom.nr_extents;
	u64 start = vol->reval.cursor < nr ? vol->reval.cursor : 0;
	u64 index = start, last = nr - 1;
	bool wrapped = false;

	while (reads < budget) {
		unsigned int n = 0;
		u64 first;
		int ret;

		if (index > last || !mdr_cache_next(&vol->cache, &index, last)) {
			if (wrapped || !start) {
				index = 0;
				break;
			}
			wrapped = true;
			index = 0;
			last = start - 1;
			continue;
		}
		first = index;
		while (n < MDR_REVAL_WINDOW && index <= last) {
			struct mdr_loc loc;

			if (!mdr_cache_peek(&vol->cache, index, &loc) ||
			    !mdr_reval_expect(vol, index))
				break;
			n++;
			index++;
		}
		if (!n) {
			index++;	/* gone, or a fetch of it is in flight */
			continue;
		}
		ret = mdr_vol_fetch(vol, first, n, NULL);
		if (ret) {
			/* takes the registrations back; no bio waits on them */
			mdr_vol_failed(vol, first, n, ret);
			break;
		}
		reads++;
	}
	vol->reval.cursor = index;
	return reads;
}

static void mdr_reval_work(struct work_struct *work)
{
	struct mdr_vol *vol = container_of(to_delayed_work(work),
					   struct mdr_vol, reval.work);
	struct mdr_reval *r = &vol->reval;
	unsigned long now = jiffies;
	u64 ios = mdr_reval_ios(vol);
	unsigned int reads;
	u32 next;

	if (test_bit(MDR_VOL_F_DYING, &vol->flags))
		return;
	next = mdr_reval_next_ms(r->period_ms, ios - r->last_ios,
				 jiffies_to_msecs(now - r->last_pass),
				 READ_ONCE(g_revalidate_min_ms),
				 READ_ONCE(g_revalidate_max_ms));
	r->last_pass = now;
	r->last_ios = ios;
	WRITE_ONCE(r->period_ms, next);
	if (!next) {
		/* disabled: look at the parameters again in a second */
		queue_delayed_work(mdr_wq, &r->work, HZ);
		return;
	}
	/* without a lease the READs would only wait for one */
	if (test_bit(MDR_VOL_F_LEASE, &vol->flags)) {
		reads = mdr_reval_pass(vol);
		if (reads) {
			atomic64_inc(&r->passes);
			atomic64_add(reads, &r->reads);
		}
	}
	queue_delayed_work(mdr_wq, &r->work, msecs_to_jiffies(next));
}

/**
 * mdr_reval_init() - set up the revalidation of a volume being allocated
 * @vol:	the volume
 */
void mdr_reval_init(struct mdr_vol *vol)
{
	INIT_DELAYED_WORK(&vol->reval.work, mdr_reval_work);
	atomic64_set(&vol->reval.passes, 0);
	atomic64_set(&vol->reval.reads, 0);
	atomic64_set(&vol->reval.entries, 0);
	atomic64_set(&vol->reval.stale, 0);
	atomic64_set(&vol->reval.stale_frozen, 0);
}

/**
 * mdr_reval_start() - start revalidating an attached volume
 * @vol:	the volume, its disk added
 *
 * Context: process.
 */
void mdr_reval_start(struct mdr_vol *vol)
{
	u32 first = READ_ONCE(g_revalidate_min_ms);

	vol->reval.last_pass = jiffies;
	vol->reval.last_ios = 0;
	vol->reval.period_ms = 0;
	queue_delayed_work(mdr_wq, &vol->reval.work,
			   first ? msecs_to_jiffies(first) : HZ);
}

/**
 * mdr_reval_stop() - stop revalidating before the transport handle closes
 * @vol:	the volume, MDR_VOL_F_DYING set
 *
 * Context: process; waits for a pass that runs. Answers to READs it
 * issued may still arrive until the transport handle is closed.
 */
void mdr_reval_stop(struct mdr_vol *vol)
{
	cancel_delayed_work_sync(&vol->reval.work);
}

/**
 * mdr_reval_answer() - compare a revalidation's answer with the cache
 * @vol:	the volume
 * @index:	extent
 * @ans:	the answer, validated, trusted (asked for, not invalidated
 *		since), about to be inserted into the cache
 *
 * An answer newer than the cached entry says this host missed a change:
 * counted and logged. The caller's insert then replaces the entry; an
 * answer of the same generation but another place or state (which mdnode
 * never gives) drops the cached entry first, so the answer replaces it.
 *
 * Context: any (the transport's entries callback); does not sleep.
 */
void mdr_reval_answer(struct mdr_vol *vol, u64 index,
		      const struct mdr_loc *ans)
{
	struct mdr_loc old;

	if (!mdr_cache_peek(&vol->cache, index, &old))
		return;	/* dropped or evicted meanwhile: nothing to compare */
	atomic64_inc(&vol->reval.entries);
	if (ans->generation < old.generation)
		return;	/* read before a change this host knows: refused */
	if (ans->generation == old.generation && ans->state == old.state &&
	    ans->dev_id == old.dev_id && ans->pstart == old.pstart)
		return;

	atomic64_inc(&vol->reval.stale);
	if (ans->state == MDR_EXT_FROZEN)
		atomic64_inc(&vol->reval.stale_frozen);
	pr_warn_ratelimited("mdr%d: revalidation: extent %llu was stale: cached generation %llu (state %u, device %u, sector %llu), table generation %llu (state %u, device %u, sector %llu)\n",
			    vol->index, index, old.generation, old.state,
			    old.dev_id, old.pstart, ans->generation,
			    ans->state, ans->dev_id, ans->pstart);
	if (ans->generation == old.generation)
		mdr_cache_drop(&vol->cache, index, 1, old.generation);
}
