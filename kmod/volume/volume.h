/* SPDX-License-Identifier: GPL-2.0 */
/*
 * volume.h - an attached volume: /dev/mdrN, its location cache and its
 * link to the metadata service.
 */
#ifndef MDR_VOLUME_H
#define MDR_VOLUME_H

#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/percpu.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "cache/extent_cache.h"
#include "cache/inflight.h"
#include "cache/track.h"
#include "cache/waitlist.h"
#include "transport/transport.h"

struct mdr_backing;
struct mdr_ioctl_attach;
struct mdr_ioctl_vol_info;

/* Per-CPU counters of one volume (sysfs mdroute/stats). */
struct mdr_vol_stats {
	u64 hits;		/* lookups served by the cache */
	u64 misses;		/* lookups that fetched */
	u64 zero_reads;		/* reads of unallocated extents */
	u64 allocs;		/* allocations asked for */
	u64 deferred;		/* bios parked for a lease or a drain */
	u64 ops[4];		/* reads, writes, discards, write-zeroes */
	u64 bytes[4];		/* and their bytes */
	u64 flushes;
	u64 errors;		/* bios failed */
};

enum mdr_vol_stat_op {
	MDR_STAT_READ,
	MDR_STAT_WRITE,
	MDR_STAT_DISCARD,
	MDR_STAT_WRITE_ZEROES,
};

/**
 * struct mdr_reval - background revalidation of one volume (revalidate.c)
 * @work:	one pass, then re-armed for the next
 * @cursor:	extent index the next pass starts at
 * @period_ms:	period now (0: disabled); sysfs reads it
 * @last_pass:	jiffies of the last pass
 * @last_ios:	bios counted at the last pass (the IO rate between passes)
 * @passes:	passes that issued at least one READ
 * @reads:	READs issued
 * @entries:	answers compared with a cached entry
 * @stale:	answers newer than (or elsewhere than) the cached entry
 * @stale_frozen: of @stale, answers FROZEN: a move whose push may still
 *		have been on its way
 */
struct mdr_reval {
	struct delayed_work work;
	u64 cursor;
	u32 period_ms;
	unsigned long last_pass;
	u64 last_ios;
	atomic64_t passes;
	atomic64_t reads;
	atomic64_t entries;
	atomic64_t stale;
	atomic64_t stale_frozen;
};

/* bits of &mdr_vol.flags */
enum {
	MDR_VOL_F_LEASE,	/* the lease is valid: IO may be issued */
	MDR_VOL_F_DYING,	/* detach started: new IO fails */
	MDR_VOL_F_READONLY,
	MDR_VOL_F_LIVE,		/* attach finished: list, status, detach see it */
};

/**
 * struct mdr_vol - an attached volume
 * @index:	N of /dev/mdrN
 * @volume_id:	the volume attach asked for (@geom says the same once open)
 * @disk:	the block device
 * @geom:	what the metadata service said at open
 * @target:	where the metadata service is
 * @flags:	MDR_VOL_F_* bits
 * @lease_end:	jiffies: IO is issued only before it (the lease's deadline,
 *		checked on the IO path, so a late expiry timer cannot stretch
 *		the lease)
 * @tops:	transport
 * @tvol:	the transport's handle of this volume
 * @cache:	extent locations
 * @inflight:	IO in flight, for drains
 * @wait:	bios parked on an extent being fetched or allocated
 * @split_bs:	bios split at extent boundaries
 * @clone_bs:	clones sent to backing devices (front: struct mdr_io)
 * @held_bs:	bios that wait for the node (front: struct mdr_held)
 * @flush_bs:	empty flushes fanned out to the backing devices
 * @flush_lock:	protects @flush_slow and @flush_data
 * @flush_slow:	flushes waiting for memory to fan out
 * @flush_data:	bios whose flush is done and whose data is to be sent
 * @flush_work:	sends @flush_slow and @flush_data
 * @flushing:	flushes not finished yet: detach waits for them
 * @devs:	dev_id -> struct mdr_backing this volume uses
 * @devs_lock:	serialises additions to @devs
 * @map_lock:	makes a fetched answer's check and insert one step against
 *		an invalidation's marking of the waiters (mdr_vol_entries())
 * @defer_lock:	protects @deferred, @deferred_since and @refetch
 * @deferred:	bios waiting for a lease or the end of a drain
 * @deferred_since: jiffies when @deferred became non-empty
 * @refetch:	struct mdr_wait whose answer an invalidation overtook
 * @resubmit_work: routes @deferred again
 * @expire_work: once a second while bios wait: fails the parked ones that
 *		waited fast_io_fail_tmo, and @deferred after as long without
 *		a lease
 * @lapse_work:	waits for the IO of a lease that ran out (mdr_vol_lease())
 * @lapse_end:	jiffies: the deadline of the lease that ran out last
 * @lapse_io_ms: the longest the IO of a lease outlived it, in ms
 * @last_miss:	extent of the last miss: sequential misses prefetch
 * @stats:	per-CPU counters
 * @bad_dev:	IO to extents on devices not bound here
 * @reval:	background revalidation of the cache
 */
struct mdr_vol {
	int index;
	u64 volume_id;
	struct gendisk *disk;
	struct mdr_vol_geom geom;
	struct mdr_target target;
	unsigned long flags;
	unsigned long lease_end;
	const struct mdr_transport_ops *tops;
	struct mdr_tvol *tvol;
	struct mdr_cache cache;
	struct mdr_inflight inflight;
	struct mdr_track track;
	struct mdr_waitlist wait;
	struct bio_set split_bs;
	struct bio_set clone_bs;
	struct bio_set held_bs;
	struct bio_set flush_bs;
	spinlock_t flush_lock;
	struct bio_list flush_slow;
	struct bio_list flush_data;
	struct work_struct flush_work;
	atomic_t flushing;
	struct xarray devs;
	spinlock_t devs_lock;
	spinlock_t map_lock;	/* answer vs invalidation, see above */
	spinlock_t defer_lock;
	struct bio_list deferred;
	unsigned long deferred_since;
	struct hlist_head refetch;
	struct work_struct resubmit_work;
	struct delayed_work expire_work;
	struct work_struct lapse_work;
	unsigned long lapse_end;
	u32 lapse_io_ms;
	u64 last_miss;
	struct mdr_vol_stats __percpu *stats;
	atomic64_t bad_dev;
	struct mdr_reval reval;
};

/**
 * struct mdr_held - a bio that had to wait for the node, and since when
 * @orig:	the bio it stands for, ended when this one ends
 * @since:	jiffies of its first wait: every later wait (parked for a
 *		lookup again, deferred while the extent is FROZEN or the node
 *		says AGAIN) counts from it, and it fails fast_io_fail_tmo after
 * @bio:	what is parked, deferred and routed; must be last (front_pad)
 */
struct mdr_held {
	struct bio *orig;
	unsigned long since;
	struct bio bio;
};

/**
 * struct mdr_io - a bio on its way to a backing device
 * @vol:	its volume
 * @b:		the device (@vol holds it until detach, after every IO)
 * @orig:	the volume's bio it carries
 * @start:	jiffies, for IO accounting; 0: not accounted (iostats off)
 * @token:	in-flight accounting
 * @clone:	sent to the device; must be last (bioset front_pad)
 */
struct mdr_io {
	struct mdr_vol *vol;
	struct mdr_backing *b;
	struct bio *orig;
	unsigned long start;
	mdr_inflight_token_t token;
	struct bio clone;
};

#define mdr_vol_stat_inc(vol, field) this_cpu_inc((vol)->stats->field)

/**
 * struct mdr_route_ctx - a task routing bios of one volume
 * @vol:	the volume
 * @drain:	answers for @vol arrived on this CPU while the task fetched:
 *		the task routes what they released (mdr_vol_resubmit())
 *		rather than waking the resubmit work
 *
 * A miss on a software RDMA device is often answered before the fetch
 * returns; routing the released bios from the same task saves a
 * context switch, which on a busy host costs more than the READ.
 */
struct mdr_route_ctx {
	struct mdr_vol *vol;
	bool drain;
};

/* device.c */
extern struct workqueue_struct *mdr_wq;
int mdr_vol_attach(struct mdr_ioctl_attach *a, bool readonly);
int mdr_vol_detach(u32 index, u64 volume_id, bool force);
int mdr_vol_list(void *out, u32 start, u32 count, u32 *total);
int mdr_vol_status(struct mdr_ioctl_vol_info *info);
unsigned int mdr_vol_count(void);
int mdr_vol_init(void);
void mdr_vol_exit(void);

/* io.c */
void mdr_submit_bio(struct bio *bio);
void mdr_flush_work(struct work_struct *work);
void mdr_route(struct mdr_vol *vol, struct bio *bio,
	       struct mdr_route_ctx *ctx);
struct mdr_backing *mdr_vol_resolve(struct mdr_vol *vol,
				    const struct mdr_loc *loc, bool use);

/* wait.c */
void mdr_vol_kick(struct mdr_vol *vol);
int mdr_vol_fetch(struct mdr_vol *vol, u64 first, unsigned int count,
		  struct mdr_route_ctx *ctx);
void mdr_bio_list_fail(struct mdr_vol *vol, struct bio_list *list,
		       blk_status_t status);
void mdr_vol_defer_list(struct mdr_vol *vol, struct bio_list *list);
void mdr_vol_arm_expiry(struct mdr_vol *vol);
void mdr_vol_defer(struct mdr_vol *vol, struct bio *bio);
void mdr_vol_resubmit(struct mdr_vol *vol, struct mdr_route_ctx *ctx);
void mdr_vol_resubmit_work(struct work_struct *work);
void mdr_vol_expire_work(struct work_struct *work);
bool mdr_held_expired(struct mdr_vol *vol, struct bio *bio);
void mdr_route_defer(struct mdr_vol *vol, struct bio *bio);
void mdr_park(struct mdr_vol *vol, struct bio *bio, u64 index, bool alloc,
	      struct mdr_route_ctx *ctx);
void mdr_vol_fail_all(struct mdr_vol *vol, blk_status_t status);

/* callbacks.c */
void mdr_vol_failed(void *owner, u64 first, unsigned int n, int err);
void mdr_vol_lapse_work(struct work_struct *work);
extern const struct mdr_tvol_ops mdr_vol_tvol_ops;

/* revalidate.c */
void mdr_reval_init(struct mdr_vol *vol);
void mdr_reval_start(struct mdr_vol *vol);
void mdr_reval_stop(struct mdr_vol *vol);
void mdr_reval_answer(struct mdr_vol *vol, u64 index,
		      const struct mdr_loc *ans);

/* sysfs.c */
extern const struct attribute_group *mdr_vol_attr_groups[];

#endif /* MDR_VOLUME_H */
