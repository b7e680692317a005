// SPDX-License-Identifier: GPL-2.0
/*
 * extent_cache.c - the per-volume location cache.
 *
 * Pure: generic headers only; the XArray's lock is the only lock, taken
 * with interrupts disabled, so callers in any context may change the
 * cache. KUnit: ktests/extent_cache_test.c.
 *
 * Layout: the XArray maps an extent index either to a struct mdr_cent, an
 * immutable location (replaced as a whole, freed after an RCU grace
 * period, so a lookup copies a consistent one), or to a value entry, the
 * tombstone an invalidation leaves: it holds the lowest generation the
 * cache may accept for that extent. 48 bytes per entry plus about 9 bytes
 * of XArray node (576 bytes per 64 slots) per densely used index.
 */
#include <linux/errno.h>
#include <linux/limits.h>
#include <linux/minmax.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/mdroute_wire.h>

#include "cache/extent_cache.h"

/**
 * struct mdr_cent - a cached location (struct mdr_loc, flattened so the
 * CLOCK bit fits in its padding: 48 bytes)
 * @generation:	entry generation
 * @pstart:	first 512-byte sector on the device
 * @dev_id:	backing device id
 * @state:	enum mdr_extent_state
 * @referenced:	CLOCK bit: set by lookups, cleared by the eviction sweep
 * @dev:	the caller's handle of @dev_id
 * @rcu:	deferred free
 */
struct mdr_cent {
	u64 generation;
	u64 pstart;
	u32 dev_id;
	u8 state;
	u8 referenced;
	void *dev;
	struct rcu_head rcu;
};

static_assert(sizeof(struct mdr_cent) == 48);

static struct kmem_cache *mdr_cent_cache;

int mdr_cache_module_init(void)
{
	mdr_cent_cache = KMEM_CACHE(mdr_cent, 0);
	return mdr_cent_cache ? 0 : -ENOMEM;
}

void mdr_cache_module_exit(void)
{
	rcu_barrier();	/* mdr_cent_free() callbacks still queued */
	kmem_cache_destroy(mdr_cent_cache);
}

static void mdr_cent_free(struct rcu_head *rcu)
{
	kmem_cache_free(mdr_cent_cache, container_of(rcu, struct mdr_cent, rcu));
}

/* Generation an XArray entry (location or tombstone) stands for. */
static u64 mdr_slot_generation(void *e)
{
	if (xa_is_value(e))
		return xa_to_value(e);
	return ((struct mdr_cent *)e)->generation;
}

/* Tombstone for @generation; generations beyond LONG_MAX saturate. */
static void *mdr_tombstone(u64 generation)
{
	return xa_mk_value(min_t(u64, generation, LONG_MAX));
}

/**
 * mdr_cache_init() - set up an empty cache
 * @c:		the cache
 * @max:	most entries it keeps (>= 1)
 *
 * Return: 0 or -EINVAL.
 */
int mdr_cache_init(struct mdr_cache *c, unsigned int max)
{
	if (!max)
		return -EINVAL;
	xa_init_flags(&c->xa, XA_FLAGS_LOCK_IRQ);
	c->max = max;
	atomic_set(&c->nr, 0);
	c->hand = 0;
	atomic64_set(&c->stale, 0);
	atomic64_set(&c->evictions, 0);
	return 0;
}

/* Last index of [first, first + count), clamped to the index space. */
static unsigned long mdr_range_last(u64 first, u64 count)
{
	return count - 1 > ULONG_MAX - first ? ULONG_MAX : first + count - 1;
}

/* Slots changed with interrupts off before the lock is let go a moment */
#define MDR_CACHE_LOCK_BATCH	256

/*
 * Empties every used slot of [@first, @first + @count) (@forget), or turns
 * it into a tombstone of at least @min_generation. Each slot changes on
 * its own, so the lock is let go every MDR_CACHE_LOCK_BATCH slots: a
 * whole 100 GiB volume is 25600 of them, too many to keep interrupts off
 * for, and an insert or a lookup meanwhile meets each slot before or
 * after, never half-changed.
 */
static void mdr_cache_unset(struct mdr_cache *c, u64 first, u64 count,
			    bool forget, u64 min_generation)
{
	XA_STATE(xas, &c->xa, 0);
	unsigned long flags, next;
	unsigned int done = 0;
	void *e;

	if (!count || first > ULONG_MAX)
		return;
	xas_set(&xas, first);
	xas_lock_irqsave(&xas, flags);
	xas_for_each(&xas, e, mdr_range_last(first, count)) {
		if (forget) {
			xas_store(&xas, NULL);
			atomic_dec(&c->nr);
		} else {
			xas_store(&xas, mdr_tombstone(max(mdr_slot_generation(e),
							  min_generation)));
		}
		if (!xa_is_value(e))
			call_rcu(&((struct mdr_cent *)e)->rcu, mdr_cent_free);
		if (++done % MDR_CACHE_LOCK_BATCH)
			continue;
		if (xas.xa_index == ULONG_MAX)
			break;
		/*
		 * Not xas_pause(): a store of NULL may have freed the node
		 * the state points into. The walk starts again after the
		 * slot just changed.
		 */
		next = xas.xa_index + 1;
		xas_unlock_irqrestore(&xas, flags);
		xas_lock_irqsave(&xas, flags);
		xas_set(&xas, next);
	}
	xas_unlock_irqrestore(&xas, flags);
}

/**
 * mdr_cache_forget() - forget extents [@first, @first + @count), tombstones
 * included
 * @c:		the cache
 * @first:	first extent index
 * @count:	extents (>= 1)
 *
 * For a volume whose entries' generations started again (it was shrunk and
 * grown): what the cache saw of it no longer bounds what it may accept.
 *
 * Context: any; concurrent lookups see either the old entries or none.
 */
void mdr_cache_forget(struct mdr_cache *c, u64 first, u64 count)
{
	mdr_cache_unset(c, first, count, true, 0);
}

/**
 * mdr_cache_clear() - forget every entry and tombstone
 * @c:		the cache
 *
 * Context: any.
 */
void mdr_cache_clear(struct mdr_cache *c)
{
	mdr_cache_forget(c, 0, U64_MAX);
}

/**
 * mdr_cache_destroy() - free everything the cache holds
 * @c:		the cache; no lookup may run any more
 */
void mdr_cache_destroy(struct mdr_cache *c)
{
	mdr_cache_clear(c);
	xa_destroy(&c->xa);
}

/* Copies a cached entry (not a tombstone) into @loc; @touch sets its bit. */
static bool mdr_cache_read(struct mdr_cache *c, u64 index, struct mdr_loc *loc,
			   bool touch)
{
	XA_STATE(xas, &c->xa, index);
	struct mdr_cent *e;
	bool found = false;

	if (index > ULONG_MAX)
		return false;

	/*
	 * xa_load() without its own RCU section: on the IO path, where each
	 * rcu_read_lock() and unlock is a call (PREEMPT_RCU).
	 */
	rcu_read_lock();
	do {
		e = xas_load(&xas);
		if (xa_is_zero(e))
			e = NULL;
	} while (xas_retry(&xas, e));
	if (e && !xa_is_value(e)) {
		loc->generation = e->generation;
		loc->pstart = e->pstart;
		loc->dev_id = e->dev_id;
		loc->state = e->state;
		loc->dev = e->dev;
		/* read-mostly line: write the bit only when it changes */
		if (touch && !READ_ONCE(e->referenced))
			WRITE_ONCE(e->referenced, 1);
		found = true;
	}
	rcu_read_unlock();
	return found;
}

/**
 * mdr_cache_lookup() - where does extent @index live?
 * @c:		the cache
 * @index:	extent index
 * @loc:	filled on a hit
 *
 * Context: any; lock-free.
 * Return: MDR_CACHE_HIT with @loc filled, or MDR_CACHE_MISS.
 */
enum mdr_cache_result mdr_cache_lookup(struct mdr_cache *c, u64 index,
				       struct mdr_loc *loc)
{
	return mdr_cache_read(c, index, loc, true) ? MDR_CACHE_HIT :
						     MDR_CACHE_MISS;
}

/*
 * CLOCK sweep: from the hand, clear referenced bits and evict the first
 * unreferenced entries (tombstones have no bit and go first) until the
 * cache is within its bound. @keep, the index just inserted, stays. The
 * hand may wrap twice: when every other entry lies below it and is
 * referenced, the first wrap only clears their bits and the second
 * evicts. Each entry is seen at most three times, so the sweep is bounded.
 */
static void mdr_cache_evict_locked(struct mdr_cache *c, unsigned long keep)
{
	XA_STATE(xas, &c->xa, c->hand);
	unsigned long budget = 3UL * atomic_read(&c->nr) + 3;
	unsigned int wraps = 0;
	void *e;

	while (atomic_read(&c->nr) > c->max && budget--) {
		e = xas_find(&xas, ULONG_MAX);
		if (!e) {
			if (++wraps > 2)
				break;
			xas_set(&xas, 0);
			continue;
		}
		if (xas.xa_index == keep)
			continue;
		if (!xa_is_value(e)) {
			struct mdr_cent *ce = e;

			if (READ_ONCE(ce->referenced)) {
				WRITE_ONCE(ce->referenced, 0);
				continue;
			}
			call_rcu(&ce->rcu, mdr_cent_free);
		}
		xas_store(&xas, NULL);
		atomic_dec(&c->nr);
		atomic64_inc(&c->evictions);
	}
	c->hand = xas.xa_index + 1;
}

/**
 * mdr_cache_insert() - remember where extent @index lives
 * @c:		the cache
 * @index:	extent index
 * @loc:	its location, already validated
 *
 * An entry older than the one (or the tombstone) the cache holds is
 * refused; one of the same generation leaves the cache as it is.
 *
 * Context: any (allocates with GFP_ATOMIC).
 * Return: 0, -ESTALE (older than what the cache knows), -ERANGE or
 * -ENOMEM.
 */
int mdr_cache_insert(struct mdr_cache *c, u64 index, const struct mdr_loc *loc)
{
	struct mdr_cent *n, *old_cent = NULL;
	unsigned long flags;
	void *old, *ret;
	int err = 0;

	if (index > ULONG_MAX)
		return -ERANGE;
	n = kmem_cache_alloc(mdr_cent_cache, GFP_ATOMIC);
	if (!n)
		return -ENOMEM;
	n->generation = loc->generation;
	n->pstart = loc->pstart;
	n->dev_id = loc->dev_id;
	n->state = loc->state;
	n->dev = loc->dev;
	n->referenced = 1;

	xa_lock_irqsave(&c->xa, flags);
	old = xa_load(&c->xa, index);
	if (old && loc->generation < mdr_slot_generation(old)) {
		atomic64_inc(&c->stale);
		err = -ESTALE;
		goto out_unlock;
	}
	if (old && !xa_is_value(old) &&
	    loc->generation == mdr_slot_generation(old))
		goto out_unlock;	/* same entry: nothing to change */

	ret = __xa_store(&c->xa, index, n, GFP_ATOMIC);
	if (xa_is_err(ret)) {
		err = xa_err(ret);
		goto out_unlock;
	}
	n = NULL;
	if (!old)
		atomic_inc(&c->nr);
	else if (!xa_is_value(old))
		old_cent = old;
	if (atomic_read(&c->nr) > c->max)
		mdr_cache_evict_locked(c, index);
out_unlock:
	xa_unlock_irqrestore(&c->xa, flags);
	if (old_cent)
		call_rcu(&old_cent->rcu, mdr_cent_free);
	if (n)
		kmem_cache_free(mdr_cent_cache, n);
	return err;
}

/**
 * mdr_cache_drop() - forget extents [@first, @first + @count)
 * @c:		the cache
 * @first:	first extent index
 * @count:	extents
 * @min_generation: lowest generation the cache may accept for them from
 *		now on (an invalidation's generation; 0: no floor)
 *
 * Cached entries of the range become tombstones that remember the larger
 * of their own generation and @min_generation, so a later insert of an
 * older entry is refused.
 *
 * Context: any.
 */
void mdr_cache_drop(struct mdr_cache *c, u64 first, u64 count,
		    u64 min_generation)
{
	mdr_cache_unset(c, first, count, false, min_generation);
}

/**
 * mdr_cache_peek() - the cached location of extent @index, for a reader
 * that is not IO (revalidation): the CLOCK bit is left alone
 * @c:		the cache
 * @index:	extent index
 * @loc:	filled when an entry (not a tombstone) is cached
 *
 * Context: any; lock-free.
 * Return: true if @loc was filled.
 */
bool mdr_cache_peek(struct mdr_cache *c, u64 index, struct mdr_loc *loc)
{
	return mdr_cache_read(c, index, loc, false);
}

/**
 * mdr_cache_next() - the first extent from *@index to @last that has an
 * entry cached (tombstones are skipped)
 * @c:		the cache
 * @index:	in: where to start; out: the extent found
 * @last:	last extent to look at
 *
 * Context: any; lock-free. An entry found may be gone when the caller
 * looks at it.
 * Return: true if one was found.
 */
bool mdr_cache_next(struct mdr_cache *c, u64 *index, u64 last)
{
	XA_STATE(xas, &c->xa, 0);
	bool found = false;
	void *e;

	if (*index > ULONG_MAX || *index > last)
		return false;
	if (last > ULONG_MAX)
		last = ULONG_MAX;
	xas_set(&xas, *index);
	rcu_read_lock();
	xas_for_each(&xas, e, last) {
		if (xas_retry(&xas, e) || xa_is_value(e))
			continue;
		*index = xas.xa_index;
		found = true;
		break;
	}
	rcu_read_unlock();
	return found;
}
