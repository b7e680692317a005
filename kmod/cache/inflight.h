/* SPDX-License-Identifier: GPL-2.0 */
/*
 * inflight.h - in-flight accounting of a volume's IO, so that ranges of
 * extents can be blocked and everything that may have read their old
 * locations drained (invalidations, a move's write tracking, detach).
 *
 * Pure: generic headers only; KUnit-tested. The scheme is SRCU's: an IO
 * counts itself on its CPU in the current phase *before* it reads its
 * extent's location, and is counted out when its backing IO completes; a
 * drain flips the phase and waits until the old phase's counts balance.
 * IO that enters after the flip sees the drain's block (or the flag that
 * stopped the volume) and is refused, so a drain waits only for IO already
 * running and cannot be starved. The ordering argument is at
 * the top of inflight.c and in Documentation/volumes.md.
 */
#ifndef MDR_INFLIGHT_H
#define MDR_INFLIGHT_H

#include <linux/atomic.h>
#include <linux/errno.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>

#define MDR_INFLIGHT_BLOCKS	8	/* ranges blocked at once */

/*
 * One CPU's counts, per phase; an IO's exit may be on another CPU than its
 * entry. Atomic, so that one locked increment is both the count and its
 * full barrier (smp_mb__{before,after}_atomic()), and so that a task that
 * migrates between choosing the CPU and counting is still counted once.
 */
struct mdr_inflight_cpu {
	atomic_long_t enter[2];
	atomic_long_t exit[2];
};

/**
 * struct mdr_inflight - in-flight IO of one volume
 * @cpu:	per-CPU counts
 * @phase:	phase new IO counts in (0 or 1)
 * @nr_blocked:	ranges in @blocked; read locklessly by the IO path
 * @lock:	protects @blocked
 * @blocked:	ranges new IO must not enter: [first, end)
 * @drain_mutex: one drain at a time (it owns @phase)
 * @draining:	a drain waits: exits wake @wq
 * @wq:		drains wait here
 */
struct mdr_inflight {
	struct mdr_inflight_cpu __percpu *cpu;
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

/* What an IO took, to give back at completion: its phase. */
typedef u8 mdr_inflight_token_t;

int mdr_inflight_init(struct mdr_inflight *f);
void mdr_inflight_destroy(struct mdr_inflight *f);
void mdr_inflight_exit(struct mdr_inflight *f, mdr_inflight_token_t token);
int mdr_inflight_block(struct mdr_inflight *f, u64 first, u64 count);
void mdr_inflight_drain(struct mdr_inflight *f);
void mdr_inflight_unblock(struct mdr_inflight *f, u64 first, u64 count);
bool mdr_inflight_blocked(struct mdr_inflight *f, u64 index);
unsigned long mdr_inflight_total(struct mdr_inflight *f);

/**
 * __mdr_inflight_enter() - mdr_inflight_enter() with the phase it read
 * @f:		the accounting
 * @phase:	the phase the caller read (KUnit passes a stale one)
 * @index:	extent index
 * @token:	out: for mdr_inflight_exit()
 *
 * Inline: it is on every bio's path, and without a drain it is one locked
 * increment and one load.
 *
 * Context: any.
 * Return: as mdr_inflight_enter().
 */
static inline int __mdr_inflight_enter(struct mdr_inflight *f,
				       unsigned int phase, u64 index,
				       mdr_inflight_token_t *token)
{
	phase &= 1;
	atomic_long_inc(raw_cpu_ptr(&f->cpu->enter[phase]));
	smp_mb__after_atomic();	/* B: pairs with A in mdr_inflight_drain() */
	if (unlikely(READ_ONCE(f->nr_blocked)) &&
	    mdr_inflight_blocked(f, index)) {
		mdr_inflight_exit(f, phase);
		return -EAGAIN;
	}
	*token = phase;
	return 0;
}

/**
 * mdr_inflight_enter() - count an IO to extent @index, unless it is blocked
 * @f:		the accounting
 * @index:	extent index
 * @token:	what to give to mdr_inflight_exit() at completion
 *
 * Call it before reading the extent's location: from the return of 0 on,
 * a drain either waits for this IO or this IO sees the drain's block (and
 * anything the caller checks after it, as a flag set before the drain).
 *
 * Context: any.
 * Return: 0 (counted) or -EAGAIN (blocked: park the IO until the drain
 * ends; nothing was counted).
 */
static inline int mdr_inflight_enter(struct mdr_inflight *f, u64 index,
				     mdr_inflight_token_t *token)
{
	return __mdr_inflight_enter(f, READ_ONCE(f->phase), index, token);
}

#endif /* MDR_INFLIGHT_H */
