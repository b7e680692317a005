// SPDX-License-Identifier: GPL-2.0
/*
 * waitlist.c - bios parked per extent while its location is fetched.
 *
 * Pure: generic headers only. KUnit: ktests/waitlist_test.c.
 */
#include <linux/bitops.h>
#include <linux/jiffies.h>
#include <linux/slab.h>

#include "cache/waitlist.h"

void mdr_waitlist_init(struct mdr_waitlist *wl)
{
	spin_lock_init(&wl->lock);
	hash_init(wl->table);
	wl->nr = 0;
}

static struct mdr_wait *mdr_waitlist_find(struct mdr_waitlist *wl, u64 index)
{
	struct mdr_wait *w;

	hash_for_each_possible(wl->table, w, node, index)
		if (w->index == index)
			return w;
	return NULL;
}

/**
 * mdr_waitlist_park() - park @bio until extent @index is known
 * @wl:		the wait list
 * @index:	extent index
 * @bio:	the bio; owned by the wait list until taken back
 * @alloc:	the bio needs the extent allocated (a write to an
 *		unallocated extent), not only fetched
 * @spare:	a zeroed struct mdr_wait the list takes (and clears *@spare)
 *		when the extent has no waiters yet; the caller frees it if
 *		it is still there
 * @now:	jiffies
 *
 * Context: any.
 * Return: what the caller must start: nothing (joined), a fetch or an
 * allocation. An allocation is asked for once per extent, even when a
 * fetch is already in flight.
 */
enum mdr_park_action mdr_waitlist_park(struct mdr_waitlist *wl, u64 index,
				       struct bio *bio, bool alloc,
				       struct mdr_wait **spare,
				       unsigned long now)
{
	enum mdr_park_action act = MDR_PARK_JOINED;
	struct mdr_wait *w;
	unsigned long flags;

	spin_lock_irqsave(&wl->lock, flags);
	w = mdr_waitlist_find(wl, index);
	if (!w) {
		w = *spare;
		*spare = NULL;
		w->index = index;
		bio_list_init(&w->bios);
		w->flags = 0;
		w->since = now;
		hash_add(wl->table, &w->node, index);
		wl->nr++;
	}
	bio_list_add(&w->bios, bio);
	if (alloc && !test_bit(MDR_WAIT_ALLOC, &w->flags)) {
		__set_bit(MDR_WAIT_ALLOC, &w->flags);
		act = MDR_PARK_ALLOC;
	} else if (!alloc && !test_bit(MDR_WAIT_FETCH, &w->flags) &&
		   !test_bit(MDR_WAIT_ALLOC, &w->flags)) {
		__set_bit(MDR_WAIT_FETCH, &w->flags);
		act = MDR_PARK_FETCH;
	}
	spin_unlock_irqrestore(&wl->lock, flags);
	return act;
}

/**
 * mdr_waitlist_expect() - register a fetch of extent @index that no bio
 * waits for yet (read-ahead)
 * @wl:		the wait list
 * @index:	extent index
 * @spare:	as for mdr_waitlist_park(); its MDR_WAIT_REVAL bit, if set,
 *		is kept (a revalidation's fetch), every other bit is reset
 * @now:	jiffies
 *
 * Context: any.
 * Return: true if registered; false if the extent has a request in flight
 * already (nothing changed).
 */
bool mdr_waitlist_expect(struct mdr_waitlist *wl, u64 index,
			 struct mdr_wait **spare, unsigned long now)
{
	struct mdr_wait *w;
	unsigned long flags;
	bool ret = false;

	spin_lock_irqsave(&wl->lock, flags);
	if (!mdr_waitlist_find(wl, index)) {
		w = *spare;
		*spare = NULL;
		w->index = index;
		bio_list_init(&w->bios);
		/* the caller may mark the spare MDR_WAIT_REVAL */
		w->flags = BIT(MDR_WAIT_FETCH) | (w->flags & BIT(MDR_WAIT_REVAL));
		w->since = now;
		hash_add(wl->table, &w->node, index);
		wl->nr++;
		ret = true;
	}
	spin_unlock_irqrestore(&wl->lock, flags);
	return ret;
}

/**
 * mdr_waitlist_detach() - unlink extent @index's wait, bios and all
 * @wl:		the wait list
 * @index:	extent index
 *
 * Context: any.
 * Return: the unlinked wait (the caller frees it with kfree() or gives it
 * to mdr_waitlist_repark()), or NULL if nothing was asked for @index.
 */
struct mdr_wait *mdr_waitlist_detach(struct mdr_waitlist *wl, u64 index)
{
	struct mdr_wait *w;
	unsigned long flags;

	spin_lock_irqsave(&wl->lock, flags);
	w = mdr_waitlist_find(wl, index);
	if (w) {
		hash_del(&w->node);
		wl->nr--;
	}
	spin_unlock_irqrestore(&wl->lock, flags);
	return w;
}

/**
 * mdr_waitlist_repark() - park a detached wait again for another fetch
 * @wl:		the wait list
 * @w:		from mdr_waitlist_detach(); the list owns it from here
 *
 * Its bios keep their place ahead of any that parked on the extent since,
 * and the extent keeps the older @since, so a wait that fetches again and
 * again can be bounded by its age.
 *
 * Context: any.
 * Return: MDR_PARK_FETCH if the caller must start a fetch of the extent,
 * MDR_PARK_JOINED if a request in flight serves it (@w was merged into
 * that extent's wait and freed).
 */
enum mdr_park_action mdr_waitlist_repark(struct mdr_waitlist *wl,
					 struct mdr_wait *w)
{
	enum mdr_park_action act = MDR_PARK_JOINED;
	struct mdr_wait *cur;
	unsigned long flags;

	spin_lock_irqsave(&wl->lock, flags);
	cur = mdr_waitlist_find(wl, w->index);
	if (cur) {
		bio_list_merge_head(&cur->bios, &w->bios);
		if (time_before(w->since, cur->since))
			cur->since = w->since;
		if (!test_bit(MDR_WAIT_FETCH, &cur->flags) &&
		    !test_bit(MDR_WAIT_ALLOC, &cur->flags)) {
			__set_bit(MDR_WAIT_FETCH, &cur->flags);
			act = MDR_PARK_FETCH;
		}
	} else {
		w->flags = BIT(MDR_WAIT_FETCH);
		hash_add(wl->table, &w->node, w->index);
		wl->nr++;
		act = MDR_PARK_FETCH;
	}
	spin_unlock_irqrestore(&wl->lock, flags);
	if (cur)
		kfree(w);
	return act;
}

/**
 * mdr_waitlist_take() - take back every bio parked on extent @index
 * @wl:		the wait list
 * @index:	extent index
 * @out:	the bios are appended here, in the order they parked
 * @flags:	MDR_WAIT_* bits the extent had
 *
 * Context: any.
 * Return: false if no bio waited for @index.
 */
bool mdr_waitlist_take(struct mdr_waitlist *wl, u64 index,
		       struct bio_list *out, unsigned long *flags)
{
	struct mdr_wait *w = mdr_waitlist_detach(wl, index);

	if (!w)
		return false;
	bio_list_merge(out, &w->bios);
	*flags = w->flags;
	kfree(w);
	return true;
}

/**
 * mdr_waitlist_pop_any() - detach some extent's waiters (teardown)
 * @wl:		the wait list
 *
 * Context: any.
 * Return: an unlinked struct mdr_wait the caller frees with kfree(), or
 * NULL when the list is empty.
 */
struct mdr_wait *mdr_waitlist_pop_any(struct mdr_waitlist *wl)
{
	struct mdr_wait *w = NULL;
	unsigned long flags;
	unsigned int bkt;

	spin_lock_irqsave(&wl->lock, flags);
	hash_for_each(wl->table, bkt, w, node)
		break;
	if (w) {
		hash_del(&w->node);
		wl->nr--;
	}
	spin_unlock_irqrestore(&wl->lock, flags);
	return w;
}

/**
 * mdr_waitlist_mark_stale() - an invalidation covers [@first, @first +
 * @count): answers to requests in flight for it must not be cached
 * @wl:		the wait list
 * @first:	first extent
 * @count:	extents
 *
 * Context: any.
 */
void mdr_waitlist_mark_stale(struct mdr_waitlist *wl, u64 first, u64 count)
{
	struct mdr_wait *w;
	unsigned long flags;
	unsigned int bkt;

	spin_lock_irqsave(&wl->lock, flags);
	hash_for_each(wl->table, bkt, w, node)
		if (w->index >= first && w->index - first < count)
			__set_bit(MDR_WAIT_STALE, &w->flags);
	spin_unlock_irqrestore(&wl->lock, flags);
}

/**
 * mdr_waitlist_expire() - take out the bios that waited too long
 * @wl:		the wait list
 * @due:	whether a bio, parked on a wait first parked on at @since
 *		(jiffies), must stop waiting
 * @arg:	for @due
 * @out:	the bios @due chose are appended here, in the order they
 *		parked
 *
 * Every extent keeps its wait, flags and all: the request in flight for
 * it still answers, into the cache, and serves the bios that stay or
 * park meanwhile.
 *
 * Context: any; @due runs under the list's lock, with interrupts off.
 * Return: how many bios still wait.
 */
unsigned int mdr_waitlist_expire(struct mdr_waitlist *wl,
				 bool (*due)(struct bio *bio,
					     unsigned long since, void *arg),
				 void *arg, struct bio_list *out)
{
	unsigned int bkt, left = 0;
	struct mdr_wait *w;
	unsigned long flags;

	spin_lock_irqsave(&wl->lock, flags);
	hash_for_each(wl->table, bkt, w, node) {
		struct bio_list keep;
		struct bio *bio;

		bio_list_init(&keep);
		while ((bio = bio_list_pop(&w->bios))) {
			if (due(bio, w->since, arg)) {
				bio_list_add(out, bio);
			} else {
				bio_list_add(&keep, bio);
				left++;
			}
		}
		w->bios = keep;
	}
	spin_unlock_irqrestore(&wl->lock, flags);
	return left;
}

unsigned int mdr_waitlist_count(struct mdr_waitlist *wl)
{
	return READ_ONCE(wl->nr);
}
