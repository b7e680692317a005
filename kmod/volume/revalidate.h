/* SPDX-License-Identifier: GPL-2.0 */
/*
 * revalidate.h - how often a volume revalidates its cached entries.
 *
 * Pure: generic headers only; KUnit-tested in ktests/revalidate_test.c.
 * Revalidation is a safety net for a lost invalidation (revalidate.c):
 * the period shortens while the volume is hot and lengthens while it is
 * idle, between revalidate_min_ms and revalidate_max_ms.
 */
#ifndef MDR_REVALIDATE_H
#define MDR_REVALIDATE_H

#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/types.h>

/* IO per second from which a volume counts as hot: the period halves */
#define MDR_REVAL_HOT_IOPS	64

/**
 * mdr_reval_next_ms() - the period until the next revalidation pass
 * @cur_ms:	the period that ended (0: none yet)
 * @ios:	bios the volume took during it
 * @elapsed_ms:	how long it really lasted (>= 1; the pass ran late or early)
 * @min_ms:	revalidate_min_ms; 0 disables
 * @max_ms:	revalidate_max_ms; 0 disables, below @min_ms counts as @min_ms
 *
 * Idle (no IO): the period doubles toward @max_ms. Hot (at least
 * MDR_REVAL_HOT_IOPS): it halves toward @min_ms. Anything between keeps
 * it. The result always lies in [@min_ms, @max_ms]: bounds changed at run
 * time take effect at the next pass. A first period (@cur_ms 0) is @min_ms.
 *
 * Return: milliseconds, or 0 when revalidation is disabled.
 */
static inline u32 mdr_reval_next_ms(u32 cur_ms, u64 ios, u32 elapsed_ms,
				    u32 min_ms, u32 max_ms)
{
	u64 next;

	if (!min_ms || !max_ms)
		return 0;
	max_ms = max(max_ms, min_ms);
	if (!cur_ms)
		return min_ms;
	elapsed_ms = max(elapsed_ms, 1U);
	if (!ios)
		next = (u64)cur_ms * 2;
	else if (ios >= div_u64((u64)MDR_REVAL_HOT_IOPS * elapsed_ms + 999, 1000))
		next = cur_ms / 2;
	else
		next = cur_ms;
	return clamp_t(u64, next, min_ms, max_ms);
}

#endif /* MDR_REVALIDATE_H */
