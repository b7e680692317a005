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

#endif /* MDR_PARAMS_H */
