/* SPDX-License-Identifier: GPL-2.0 */
/* params.h - module parameters shared by the volume and transport code */
#ifndef MDR_PARAMS_H
#define MDR_PARAMS_H

/* Seconds IO that needs the metadata service waits before failing (EIO). */
extern unsigned int g_fast_io_fail_tmo;
/* Per-request RPC timeout, milliseconds. */
extern unsigned int g_io_timeout_ms;
/* Adjacent entries one lookup READ fetches for sequential access. */
extern unsigned int g_prefetch;
/* Most extents cached per volume before the cache evicts. */
extern unsigned int g_cache_max_extents;
/* Revalidation period bounds, milliseconds; 0 disables revalidation. */
extern unsigned int g_revalidate_min_ms;
extern unsigned int g_revalidate_max_ms;
/* Most lookup READs one revalidation pass of a volume issues. */
extern unsigned int g_revalidate_reads;

#endif /* MDR_PARAMS_H */
