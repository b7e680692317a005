/* SPDX-License-Identifier: GPL-2.0 */
/*
 * extent_cache.h - where the extents of one volume live, as far as this
 * host knows.
 *
 * Pure: generic headers only; KUnit-tested in ktests/. Lookups are
 * lock-free (RCU over an XArray) and never allocate; inserts, drops and
 * eviction take the XArray's own lock with interrupts disabled, so any
 * context may call them. Memory is bounded by @max entries, evicted in
 * CLOCK order.
 *
 * Hit and miss counters belong to the caller (per-CPU on its IO path).
 *
 * Generation rule: an entry's generation never goes backwards. An entry
 * dropped by an invalidation leaves a tombstone that remembers the lowest
 * generation still acceptable; an insert older than what the cache holds
 * (entry or tombstone) is refused as stale.
 */
#ifndef MDR_EXTENT_CACHE_H
#define MDR_EXTENT_CACHE_H

#include <linux/atomic.h>
#include <linux/types.h>
#include <linux/xarray.h>

/**
 * struct mdr_loc - where one extent lives
 * @generation:	entry generation (>= 1)
 * @pstart:	first 512-byte sector on the device
 * @dev_id:	backing device id (0 when unallocated)
 * @state:	enum mdr_extent_state
 * @dev:	the caller's handle of @dev_id, resolved and checked before
 *		the insert so that the IO path need not look it up again;
 *		opaque here, and NULL when the caller had none
 */
struct mdr_loc {
	u64 generation;
	u64 pstart;
	u32 dev_id;
	u8 state;
	void *dev;
};

/**
 * struct mdr_cache - the location cache of one volume
 * @xa:		extent index -> struct mdr_cent
 * @max:	most entries (tombstones included) before eviction
 * @nr:		entries now
 * @hand:	CLOCK hand: the index eviction looks at next
 * @stale:	inserts refused because they were older than the cache
 * @evictions:	entries evicted to stay within @max
 */
struct mdr_cache {
	struct xarray xa;
	unsigned int max;
	atomic_t nr;
	unsigned long hand;
	atomic64_t stale;
	atomic64_t evictions;
};

enum mdr_cache_result {
	MDR_CACHE_HIT,		/* @loc is filled */
	MDR_CACHE_MISS,		/* nothing usable: fetch it */
};

int mdr_cache_init(struct mdr_cache *c, unsigned int max);
void mdr_cache_destroy(struct mdr_cache *c);

enum mdr_cache_result mdr_cache_lookup(struct mdr_cache *c, u64 index,
				       struct mdr_loc *loc);
int mdr_cache_insert(struct mdr_cache *c, u64 index,
		     const struct mdr_loc *loc);
void mdr_cache_drop(struct mdr_cache *c, u64 first, u64 count,
		    u64 min_generation);
bool mdr_cache_peek(struct mdr_cache *c, u64 index, struct mdr_loc *loc);
bool mdr_cache_next(struct mdr_cache *c, u64 *index, u64 last);
void mdr_cache_forget(struct mdr_cache *c, u64 first, u64 count);
void mdr_cache_clear(struct mdr_cache *c);

static inline unsigned int mdr_cache_count(struct mdr_cache *c)
{
	return atomic_read(&c->nr);
}

int mdr_cache_module_init(void);
void mdr_cache_module_exit(void);

#endif /* MDR_EXTENT_CACHE_H */
