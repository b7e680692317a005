/* SPDX-License-Identifier: GPL-2.0 */
/*
 * inflight.h - per-extent in-flight accounting, so that a range of extents
 * can be blocked and drained (invalidations need it).
 *
 * Pure: generic headers only; KUnit-tested. IO to extent i counts in
 * bucket hash(i) of the current phase; a drain blocks its range, flips the
 * phase and waits until the old phase's buckets of the range are empty.
 * IO that started after the flip counts in the new phase, so a drain
 * waits only for IO that was already running and cannot be starved. Two
 * extents sharing a bucket only make a drain wait a little longer.
 */
#ifndef MDR_INFLIGHT_H
#define MDR_INFLIGHT_H

#include <linux/atomic.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>

#define MDR_INFLIGHT_BUCKETS	256	/* per phase; a power of two */
#define MDR_INFLIGHT_BLOCKS	8	/* ranges blocked at once */

/**
 * struct mdr_inflight - in-flight IO of one volume, by extent
 * @count:	[phase][bucket] IO in flight
 * @phase:	phase new IO counts in (0 or 1)
 * @nr_blocked:	ranges in @blocked; read locklessly by the IO path
 * @lock:	protects @blocked
 * @blocked:	ranges new IO must not enter: [first, end)
 * @drain_mutex: one drain at a time
 * @draining:	a drain waits: completions wake @wq
 * @wq:		drains wait here
 */
struct mdr_inflight {
	atomic_t count[2][MDR_INFLIGHT_BUCKETS];
	unsigned int phase;
	unsigned int nr_blocked;
	spinlock_t lock;
	struct {
		u64 first;
		u64 end;
	} blocked[MDR_INFLIGHT_BLOCKS];
	struct mutex drain_mutex;
	bool draining;
	wait_queue_head_t wq;
};

/* What an IO took, to give back at completion. */
typedef u16 mdr_inflight_token_t;

void mdr_inflight_init(struct mdr_inflight *f);
int mdr_inflight_enter(struct mdr_inflight *f, u64 index,
		       mdr_inflight_token_t *token);
void mdr_inflight_exit(struct mdr_inflight *f, mdr_inflight_token_t token);
int mdr_inflight_block(struct mdr_inflight *f, u64 first, u64 count);
void mdr_inflight_drain(struct mdr_inflight *f, u64 first, u64 count);
void mdr_inflight_unblock(struct mdr_inflight *f, u64 first, u64 count);
bool mdr_inflight_blocked(struct mdr_inflight *f, u64 index);
unsigned long mdr_inflight_total(struct mdr_inflight *f);

#endif /* MDR_INFLIGHT_H */
