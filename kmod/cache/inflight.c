// SPDX-License-Identifier: GPL-2.0
/*
 * inflight.c - in-flight accounting of a volume's IO, and drains.
 *
 * Pure: generic headers only. KUnit: ktests/inflight_test.c.
 *
 * The ordering, in SRCU's terms (the barriers are named A-D below):
 *
 *   IO (mdr_inflight_enter)              drain (caller, then drain())
 *   enter[p]++ on this CPU (atomic)      publish the block or the flag
 *   smp_mb__after_atomic()        (B)    smp_mb()                    (A)
 *   read the block, then the flag,       wait: phase p^1 balances
 *   then the extent's location           flip: phase = p^1
 *   ... backing IO ...                   smp_mb()
 *   smp_mb__before_atomic()       (C)    wait: phase p balances
 *   exit[p]++ (atomic)                   (exits summed, smp_mb() (D),
 *   smp_mb__after_atomic()               then entries)
 *   read @draining, wake
 *
 * Each increment is one atomic RMW whose barriers make it a full one, as
 * smp_mb() beside a plain increment would (on x86 the locked instruction
 * is the barrier: one per entry and one per exit instead of three).
 *
 * A and B make the classic store-buffer pair: either the IO sees the block
 * (and is refused) or the drain sees the IO's entry (and waits for its
 * exit). The entry may be in either phase: an IO reads the phase, then
 * counts; if a flip came between, it counted in the phase the drain flips
 * to. That is why a drain first waits for the phase it is about to make
 * current (late entries of the last flip) and only then flips and waits for
 * the phase it leaves. C orders everything the IO did before its exit; D
 * makes a balanced sum mean no IO of the phase is left: an exit summed has
 * its entry summed after D (SRCU's srcu_readers_active_idx_check()).
 *
 * Lifetime: the last touch of @f by an exit (the wake-up) is inside an RCU
 * read-side section; once a drain has returned, synchronize_rcu() makes
 * every exit it waited for done with @f.
 */
#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/errno.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>

#include "cache/inflight.h"
#include "core/inject.h"

int mdr_inflight_init(struct mdr_inflight *f)
{
	f->cpu = alloc_percpu(struct mdr_inflight_cpu);
	if (!f->cpu)
		return -ENOMEM;
	f->phase = 0;
	f->nr_blocked = 0;
	spin_lock_init(&f->lock);
	mutex_init(&f->drain_mutex);
	f->draining = false;
	init_waitqueue_head(&f->wq);
	return 0;
}

/* Tolerates an @f whose init failed, or that was zeroed and never set up. */
void mdr_inflight_destroy(struct mdr_inflight *f)
{
	free_percpu(f->cpu);
	f->cpu = NULL;
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
 * mdr_inflight_exit() - an IO counted by mdr_inflight_enter() completed
 * @f:		the accounting
 * @token:	from mdr_inflight_enter()
 *
 * Context: any (bio completion).
 */
void mdr_inflight_exit(struct mdr_inflight *f, mdr_inflight_token_t token)
{
	rcu_read_lock();	/* the last touch of @f: see the top of the file */
	smp_mb__before_atomic();	/* C: the IO's work before its exit */
	atomic_long_inc(raw_cpu_ptr(&f->cpu->exit[token & 1]));
	smp_mb__after_atomic();	/* the exit before @draining, the wait queue */
	mdr_inject_delay(MDR_WIN_COMPLETE);
	/*
	 * waitqueue_active() after that barrier pairs with A: a drain stores
	 * @draining and queues itself (with barriers) before it sums. Nobody
	 * waits most of the time: no wait-queue lock then.
	 */
	if (READ_ONCE(f->draining) && waitqueue_active(&f->wq))
		wake_up(&f->wq);
	rcu_read_unlock();
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

/*
 * IO counted in the phases of @mask and not counted out. Exits are summed
 * first: an exit summed has its entry summed after D, so the result is
 * never below the truth (see the top of the file).
 */
static unsigned long mdr_pending(struct mdr_inflight *f, unsigned int mask)
{
	unsigned long in = 0, out = 0;
	unsigned int p;
	int cpu;

	for_each_possible_cpu(cpu)
		for (p = 0; p < 2; p++)
			if (mask & BIT(p))
				out += atomic_long_read(&per_cpu_ptr(f->cpu, cpu)->exit[p]);
	smp_mb();	/* D: exits before entries */
	for_each_possible_cpu(cpu)
		for (p = 0; p < 2; p++)
			if (mask & BIT(p))
				in += atomic_long_read(&per_cpu_ptr(f->cpu, cpu)->enter[p]);
	return in - out;
}

/**
 * mdr_inflight_drain() - wait for every IO that may not have seen a block
 * @f:		the accounting
 *
 * The caller first blocks a range (mdr_inflight_block()) or sets a flag
 * the IO path checks after mdr_inflight_enter(). Every IO that entered
 * before that was visible to it has completed when this returns; IO that
 * enters later sees the block or the flag. IO elsewhere in the volume is
 * waited for too (one count per CPU, not per extent: dm's SRCU around its
 * map does the same): a slow device makes every drain of the volume as
 * slow as its slowest IO. Never waited for: IO that entered after the
 * drain began.
 *
 * Context: process; sleeps.
 */
void mdr_inflight_drain(struct mdr_inflight *f)
{
	unsigned int cur;

	mutex_lock(&f->drain_mutex);
	WRITE_ONCE(f->draining, true);
	smp_mb();	/* A: the block before the counts; pairs with B */
	cur = f->phase & 1;
	/* late entries in the phase we flip to, from before the last flip */
	wait_event(f->wq, !mdr_pending(f, BIT(cur ^ 1)));
	WRITE_ONCE(f->phase, cur ^ 1);
	smp_mb();	/* the flip before the counts we read */
	wait_event(f->wq, !mdr_pending(f, BIT(cur)));
	WRITE_ONCE(f->draining, false);
	mutex_unlock(&f->drain_mutex);
}

/* IO in flight now, both phases (statistics, and detach's last check). */
unsigned long mdr_inflight_total(struct mdr_inflight *f)
{
	return mdr_pending(f, BIT(0) | BIT(1));
}
