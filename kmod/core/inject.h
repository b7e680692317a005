/* SPDX-License-Identifier: GPL-2.0 */
/*
 * inject.h - delays at the race windows of the IO path, for the torture
 * test. Built only into kernels with fault injection in debugfs (the debug
 * kernel of tools/debug-kernel); everywhere else each hook is an empty
 * inline and costs nothing.
 */
#ifndef MDR_INJECT_H
#define MDR_INJECT_H

/*
 * The windows, each named for where a hit holds the CPU. A window is
 * where an interleaving the ordering rules of Documentation/volumes.md
 * forbid would show, if the code did not rule it out.
 */
enum mdr_window {
	MDR_WIN_ROUTE,		/* a bio read its extent's location, not yet sent */
	MDR_WIN_INSERT,		/* a fetched answer is about to be cached */
	MDR_WIN_ACK,		/* an invalidation drained, its ack not yet sent */
	MDR_WIN_COMPLETE,	/* a backing IO completed, not yet accounted */
	MDR_WIN_TEARDOWN,	/* detach closed the transport, work not yet flushed */
	MDR_WIN_NR,
};

#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
void mdr_inject_delay(enum mdr_window w);
int mdr_inject_init(void);
void mdr_inject_exit(void);
#else
static inline void mdr_inject_delay(enum mdr_window w) { }
static inline int mdr_inject_init(void) { return 0; }
static inline void mdr_inject_exit(void) { }
#endif

#endif /* MDR_INJECT_H */
