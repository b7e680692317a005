// SPDX-License-Identifier: GPL-2.0
/*
 * inject.c - delays at the race windows of the IO path (inject.h), so the
 * torture test hits the interleavings that the IO path's ordering rules
 * must survive: a submitting task preempted or its vCPU stalled between
 * two steps, while the other CPU runs a whole invalidation.
 *
 * Each window has the kernel's fault attributes in debugfs, at
 * /sys/kernel/debug/mdroute/inject/<window>/ (probability, interval,
 * times, space, verbose, task-filter: see the kernel's
 * Documentation/fault-injection/fault-injection.rst), plus:
 *   delay_us	how long a hit holds the CPU (default 0: nothing happens)
 *   hits	how many times the window was widened
 *
 * A hit spins rather than sleeps: every window may be reached in atomic
 * context (a CQ callback, a bio completion, a preempt-disabled fetch),
 * and a spinning vCPU is what a stalled one looks like to the other.
 */
#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/fault-inject.h>
#include <linux/minmax.h>

#include "core/inject.h"
#include "transport/rdma.h"

#define MDR_INJECT_MAX_US	100000	/* a hit never holds a CPU longer */

static const char *const mdr_window_names[MDR_WIN_NR] = {
	[MDR_WIN_ROUTE]		= "route",
	[MDR_WIN_INSERT]	= "insert",
	[MDR_WIN_ACK]		= "ack",
	[MDR_WIN_COMPLETE]	= "complete",
	[MDR_WIN_TEARDOWN]	= "teardown",
};

static struct mdr_window_ctl {
	struct fault_attr attr;
	u32 delay_us;
	atomic_t hits;
} mdr_windows[MDR_WIN_NR];

static struct dentry *mdr_inject_dir;

/**
 * mdr_inject_delay() - widen window @w, if its fault attributes say so
 * @w:	the window
 *
 * Context: any.
 */
void mdr_inject_delay(enum mdr_window w)
{
	struct mdr_window_ctl *ctl = &mdr_windows[w];
	u32 us = READ_ONCE(ctl->delay_us);

	if (!us || !should_fail(&ctl->attr, 1))
		return;
	atomic_inc(&ctl->hits);
	us = min_t(u32, us, MDR_INJECT_MAX_US);
	while (us) {
		u32 step = min_t(u32, us, 1000);

		udelay(step);
		us -= step;
	}
}

int mdr_inject_init(void)
{
	unsigned int w;

	mdr_inject_dir = debugfs_create_dir("inject", mdr_debugfs_root());
	for (w = 0; w < MDR_WIN_NR; w++) {
		struct mdr_window_ctl *ctl = &mdr_windows[w];
		struct dentry *d;

		ctl->attr = (struct fault_attr)FAULT_ATTR_INITIALIZER;
		ctl->attr.verbose = 0;	/* a stack per hit would flood the log */
		d = fault_create_debugfs_attr(mdr_window_names[w],
					      mdr_inject_dir, &ctl->attr);
		if (IS_ERR(d)) {
			debugfs_remove_recursive(mdr_inject_dir);
			return PTR_ERR(d);
		}
		debugfs_create_u32("delay_us", 0600, d, &ctl->delay_us);
		debugfs_create_atomic_t("hits", 0400, d, &ctl->hits);
	}
	return 0;
}

void mdr_inject_exit(void)
{
	debugfs_remove_recursive(mdr_inject_dir);
	mdr_inject_dir = NULL;
}
