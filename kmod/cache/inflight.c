// SPDX-License-Identifier: GPL-2.0
/*
 * inflight.c - per-extent in-flight accounting and range drains.
 *
 * Pure: generic headers only. KUnit: ktests/inflight_test.c.
 */
#include <linux/errno.h>
#include <linux/hash.h>
#include <linux/sched.h>

#include "cache/inflight.h"
#include "core/inject.h"

static unsigned int mdr_bucket(u64 index)
{
	return hash_64(index, ilog2(MDR_INFLIGHT_BUCKETS));
}

void mdr_inflight_init(struct mdr_inflight *f)
{
	unsigned int p, b;

	for (p = 0; p < 2; p++)
		for (b = 0; b < MDR_INFLIGHT_BUCKETS; b++)
			atomic_set(&f->count[p][b], 0);
	f->phase = 0;
	f->nr_blocked = 0;
	spin_lock_init(&f->lock);
	mutex_init(&f->drain_mutex);
	f->draining = false;
	init_waitqueue_head(&f->wq);
}

/**
 * mdr_inflight_blocked() - may new IO enter extent @index?
 * @f:		the accounting
 * @index:	extent index
 *
 * Context: any.
 * Return: true if a drain blocks @index.
 */
bool mdr_inflight_blocked(struct mdr_inflight *f, u64 index)
{
	unsigned long flags;
	bool blocked = false;
	unsigned int i;

	if (!READ_ONCE(f->nr_blocked))
		return false;
	spin_lock_irqsave(&f->lock, flags);
	for (i = 0; i < f->nr_blocked; i++)
		if (index >= f->blocked[i].first && index < f->blocked[i].end)
			blocked = true;
	spin_unlock_irqrestore(&f->lock, flags);
	return blocked;
}

/**
 * mdr_inflight_enter() - count an IO to extent @index, unless it is blocked
 * @f:		the accounting
 * @index:	extent index
 * @token:	what to give to mdr_inflight_exit() at completion
 *
 * Context: any.
 * Return: 0 (counted) or -EAGAIN (blocked: park the IO until the drain
 * ends; nothing was counted).
 */
int mdr_inflight_enter(struct mdr_inflight *f, u64 index,
		       mdr_inflight_token_t *token)
{
	unsigned int phase = READ_ONCE(f->phase) & 1;
	unsigned int b = mdr_bucket(index);

	atomic_inc(&f->count[phase][b]);
	smp_mb__after_atomic();	/* pairs with smp_mb() in mdr_inflight_drain() */
	if (mdr_inflight_blocked(f, index)) {
		mdr_inflight_exit(f, phase * MDR_INFLIGHT_BUCKETS + b);
		return -EAGAIN;
	}
	*token = phase * MDR_INFLIGHT_BUCKETS + b;
	return 0;
}

/**
 * mdr_inflight_exit() - an IO counted by mdr_inflight_enter() completed
 * @f:		the accounting
 * @token:	from mdr_inflight_enter()
 *
 * Context: any (bio completion).
 */
void mdr_inflight_exit(struct mdr_inflight *f, mdr_inflight_token_t token)
{
	unsigned int phase = token / MDR_INFLIGHT_BUCKETS & 1;
	unsigned int b = token % MDR_INFLIGHT_BUCKETS;

	/* atomic_dec_and_test() is fully ordered: a drain sees the count */
	if (!atomic_dec_and_test(&f->count[phase][b]))
		return;
	mdr_inject_delay(MDR_WIN_COMPLETE);
	if (READ_ONCE(f->draining))
		wake_up(&f->wq);
}

/**
 * mdr_inflight_block() - stop new IO from entering [@first, @first + @count)
 * @f:		the accounting
 * @first:	first extent
 * @count:	extents (>= 1)
 *
 * Context: any.
 * Return: 0, or -EBUSY when MDR_INFLIGHT_BLOCKS ranges are already blocked
 * (the caller retries after another drain ends).
 */
int mdr_inflight_block(struct mdr_inflight *f, u64 first, u64 count)
{
	unsigned long flags;
	int ret = -EBUSY;

	spin_lock_irqsave(&f->lock, flags);
	if (f->nr_blocked < MDR_INFLIGHT_BLOCKS) {
		f->blocked[f->nr_blocked].first = first;
		f->blocked[f->nr_blocked].end =
			count > U64_MAX - first ? U64_MAX : first + count;
		WRITE_ONCE(f->nr_blocked, f->nr_blocked + 1);
		ret = 0;
	}
	spin_unlock_irqrestore(&f->lock, flags);
	return ret;
}

/**
 * mdr_inflight_unblock() - let IO into a range blocked before
 * @f:		the accounting
 * @first:	as given to mdr_inflight_block()
 * @count:	as given to mdr_inflight_block()
 *
 * Context: any.
 */
void mdr_inflight_unblock(struct mdr_inflight *f, u64 first, u64 count)
{
	u64 end = count > U64_MAX - first ? U64_MAX : first + count;
	unsigned long flags;
	unsigned int i;

	spin_lock_irqsave(&f->lock, flags);
	for (i = 0; i < f->nr_blocked; i++) {
		if (f->blocked[i].first != first || f->blocked[i].end != end)
			continue;
		f->blocked[i] = f->blocked[f->nr_blocked - 1];
		WRITE_ONCE(f->nr_blocked, f->nr_blocked - 1);
		break;
	}
	spin_unlock_irqrestore(&f->lock, flags);
}

static bool mdr_range_empty(struct mdr_inflight *f, unsigned int phase,
			    u64 first, u64 count)
{
	u64 i;

	if (count >= MDR_INFLIGHT_BUCKETS) {
		for (i = 0; i < MDR_INFLIGHT_BUCKETS; i++)
			if (atomic_read(&f->count[phase][i]))
				return false;
		return true;
	}
	for (i = 0; i < count; i++)
		if (atomic_read(&f->count[phase][mdr_bucket(first + i)]))
			return false;
	return true;
}

/**
 * mdr_inflight_drain() - wait for IO to a blocked range to complete
 * @f:		the accounting
 * @first:	first extent (blocked with mdr_inflight_block())
 * @count:	extents
 *
 * Waits for every IO to the range that was counted before the call. IO
 * that enters afterwards sees the block and is refused, so the wait ends
 * when the IO already at the devices completes.
 *
 * Context: process; sleeps.
 */
void mdr_inflight_drain(struct mdr_inflight *f, u64 first, u64 count)
{
	unsigned int old;

	mutex_lock(&f->drain_mutex);
	WRITE_ONCE(f->draining, true);
	/*
	 * The block is published before the flip and the flip before the
	 * wait: an IO that read the old phase is counted there, one that read
	 * the new phase sees the block. Pairs with smp_mb__after_atomic() in
	 * mdr_inflight_enter().
	 */
	smp_mb();
	old = f->phase & 1;
	WRITE_ONCE(f->phase, old ^ 1);
	smp_mb();	/* the flip before the counts we read */
	wait_event(f->wq, mdr_range_empty(f, old, first, count));
	WRITE_ONCE(f->draining, false);
	mutex_unlock(&f->drain_mutex);
}

/* IO in flight now, both phases (statistics). */
unsigned long mdr_inflight_total(struct mdr_inflight *f)
{
	unsigned long sum = 0;
	unsigned int p, b;

	for (p = 0; p < 2; p++)
		for (b = 0; b < MDR_INFLIGHT_BUCKETS; b++)
			sum += atomic_read(&f->count[p][b]);
	return sum;
}
