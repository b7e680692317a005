/* SPDX-License-Identifier: GPL-2.0 */
/*
 * waitlist.h - bios parked on an extent whose location is being fetched
 * or allocated.
 *
 * Pure: generic headers only (bio lists are chained through bi_next);
 * KUnit-tested. The first bio parked on an extent tells the caller to
 * start the fetch (or allocation); later ones join it; the answer takes
 * back those that did not wait too long meanwhile (mdr_waitlist_expire()
 * takes the others out). An invalidation that arrives while a fetch is in flight
 * marks it stale, so its answer is not trusted into the cache. Extents
 * read ahead are registered too, without bios: an answer is trusted only
 * for an extent that was asked for and not invalidated since.
 */
#ifndef MDR_WAITLIST_H
#define MDR_WAITLIST_H

#include <linux/bio.h>
#include <linux/hashtable.h>
#include <linux/spinlock.h>
#include <linux/types.h>

/**
 * struct mdr_wait - one extent that bios wait for
 * @node:	in &mdr_waitlist.table
 * @index:	extent index
 * @bios:	the parked bios, in arrival order
 * @flags:	MDR_WAIT_* bits
 * @since:	jiffies when the first bio parked
 */
struct mdr_wait {
	struct hlist_node node;
	u64 index;
	struct bio_list bios;
	unsigned long flags;
	unsigned long since;
};

enum {
	MDR_WAIT_FETCH,		/* a fetch of the entry is in flight */
	MDR_WAIT_ALLOC,		/* an allocation is in flight */
	MDR_WAIT_STALE,		/* invalidated meanwhile: refetch */
	MDR_WAIT_REVAL,		/* asked by revalidation: compare the answer */
};

/**
 * struct mdr_waitlist - the parked bios of one volume
 * @lock:	protects everything here
 * @table:	extent index -> struct mdr_wait
 * @nr:		extents with parked bios
 */
struct mdr_waitlist {
	spinlock_t lock;
	DECLARE_HASHTABLE(table, 8);
	unsigned int nr;
};

/* What the caller must start after parking a bio. */
enum mdr_park_action {
	MDR_PARK_JOINED,	/* a request already in flight serves it */
	MDR_PARK_FETCH,		/* start a fetch of the entry */
	MDR_PARK_ALLOC,		/* start an allocation of the extent */
};

void mdr_waitlist_init(struct mdr_waitlist *wl);
enum mdr_park_action mdr_waitlist_park(struct mdr_waitlist *wl, u64 index,
				       struct bio *bio, bool alloc,
				       struct mdr_wait **spare,
				       unsigned long now);
bool mdr_waitlist_expect(struct mdr_waitlist *wl, u64 index,
			 struct mdr_wait **spare, unsigned long now);
bool mdr_waitlist_take(struct mdr_waitlist *wl, u64 index,
		       struct bio_list *out, unsigned long *flags);
struct mdr_wait *mdr_waitlist_detach(struct mdr_waitlist *wl, u64 index);
enum mdr_park_action mdr_waitlist_repark(struct mdr_waitlist *wl,
					 struct mdr_wait *w);
void mdr_waitlist_mark_stale(struct mdr_waitlist *wl, u64 first, u64 count);
struct mdr_wait *mdr_waitlist_pop_any(struct mdr_waitlist *wl);
unsigned int mdr_waitlist_expire(struct mdr_waitlist *wl,
				 bool (*due)(struct bio *bio,
					     unsigned long since, void *arg),
				 void *arg, struct bio_list *out);
unsigned int mdr_waitlist_count(struct mdr_waitlist *wl);

#endif /* MDR_WAITLIST_H */
