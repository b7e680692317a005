// SPDX-License-Identifier: GPL-2.0
/*
 * device.c - the life of a volume's device: attach and detach, the gendisk
 * and its limits, the block device's operations, the ioctl's target and
 * the metadata service's geometry checked, list and status, and the stop
 * that takes a volume off the transport. The bios the disk is sent go to
 * io.c, those that wait for the node to wait.c; the transport calls
 * callbacks.c.
 */
#include <linux/blkdev.h>
#include <linux/delay.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/xarray.h>
#include <linux/mdroute.h>
#include <linux/mdroute_wire.h>

#include "compat/compat.h"
#include "core/inject.h"
#include "core/key.h"
#include "core/params.h"
#include "volume/backing.h"
#include "volume/extent.h"
#include "volume/volume.h"

#define MDR_MINORS	16		/* partitions per volume */
#define MDR_MAX_VOLUMES	(1U << 16)

static DEFINE_MUTEX(mdr_vol_mutex);	/* attach, detach, list */
static DEFINE_XARRAY_ALLOC(mdr_vols);	/* index -> mdr_vol */
static int mdr_major;
struct workqueue_struct *mdr_wq;	/* resubmission, expiry, flushes */

static int mdr_disk_open(struct gendisk *disk)
{
	struct mdr_vol *vol = disk->private_data;

	/* disk->open_mutex is held: detach checks openers under it */
	if (test_bit(MDR_VOL_F_DYING, &vol->flags))
		return -ENXIO;
	return 0;
}

#ifdef MDR_HAVE_OPEN_GENDISK
static int mdr_bdev_open(struct gendisk *disk, blk_mode_t mode)
{
	return mdr_disk_open(disk);
}
#else
static int mdr_bdev_open(struct block_device *bdev, fmode_t mode)
{
	return mdr_disk_open(bdev->bd_disk);
}
#endif

static const struct block_device_operations mdr_bdev_ops = {
	.owner		= THIS_MODULE,
	.submit_bio	= mdr_submit_bio,
	.open		= mdr_bdev_open,
};

/* One address of the control ABI into a socket address; 0 or -errno. */
static int mdr_addr_from_ioctl(u16 family, u16 port, u32 scope_id,
			       const u8 *addr, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (!port)
		port = MDR_WIRE_PORT;
	switch (family) {
	case AF_INET: {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		if (memchr_inv(addr + 4, 0, 12) || scope_id)
			return -EINVAL;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, addr, 4);
		return 0;
	}
	case AF_INET6: {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		memcpy(&sin6->sin6_addr, addr, 16);
		sin6->sin6_scope_id = scope_id;
		return 0;
	}
	default:
		return -EAFNOSUPPORT;
	}
}

static bool mdr_addr_equal(const struct sockaddr_storage *a,
			   const struct sockaddr_storage *b)
{
	return !memcmp(a, b, sizeof(*a));
}

/*
 * The replica set of minor 3: every address well formed and once, the
 * target's among them, and a key, since replicas that do not lead name
 * the leader only to a host that proved one.
 */
static int mdr_group_from_ioctl(const struct mdr_ioctl_group *in,
				struct mdr_target *t)
{
	bool has_target = false;
	unsigned int i, j;
	int ret;

	if (in->reserved0 || memchr_inv(in->reserved, 0, sizeof(in->reserved)))
		return -EINVAL;
	if (!in->count) {
		/* a node of its own: nothing else may be set */
		if (in->group ||
		    memchr_inv(in->replicas, 0, sizeof(in->replicas)))
			return -EINVAL;
		return 0;
	}
	if (!in->group || in->count > MDR_REPLICAS_MAX)
		return -EINVAL;
	if (memchr_inv(&in->replicas[in->count], 0,
		       (MDR_REPLICAS_MAX - in->count) *
		       sizeof(in->replicas[0])))
		return -EINVAL;
	if (!t->key) {
		pr_warn_ratelimited("attach: a replica group needs the host's key: its replicas name the leader only to a host that proved one\n");
		return -EINVAL;
	}
	for (i = 0; i < in->count; i++) {
		const struct mdr_ioctl_replica *r = &in->replicas[i];

		ret = mdr_addr_from_ioctl(r->family, r->port, r->scope_id,
					  r->addr, &t->replicas[i]);
		if (ret)
			return ret;
		for (j = 0; j < i; j++)
			if (mdr_addr_equal(&t->replicas[i], &t->replicas[j]))
				return -EINVAL;
		has_target |= mdr_addr_equal(&t->replicas[i], &t->addr);
	}
	if (!has_target)
		return -EINVAL;
	t->group = in->group;
	t->nr_replicas = in->count;
	return 0;
}

static int mdr_target_from_ioctl(const struct mdr_ioctl_target *in,
				 const struct mdr_ioctl_group *group,
				 struct mdr_target *t)
{
	int ret;

	memset(t, 0, sizeof(*t));
	if (!in->host_id || in->key < 0)
		return -EINVAL;
	t->tenant = in->tenant;
	t->host_id = in->host_id;
	ret = mdr_addr_from_ioctl(in->family, in->port, in->scope_id,
				  in->addr, &t->addr);
	if (ret)
		return ret;
	if (in->key) {
		/* the caller's keyrings: only here, in its context */
		t->key = mdr_key_get(in->key);
		if (IS_ERR(t->key)) {
			ret = PTR_ERR(t->key);
			t->key = NULL;
			pr_warn_ratelimited("attach: key %d cannot be used (%d): it must be a logon key of %u to %u bytes the caller may search for\n",
					    in->key, ret, MDR_HOST_KEY_MIN,
					    MDR_HOST_KEY_MAX);
			return ret;
		}
	}
	ret = mdr_group_from_ioctl(group, t);
	if (ret) {
		mdr_key_put(t->key);
		t->key = NULL;
	}
	return ret;
}

/* A socket address into the control ABI's fields of struct mdr_ioctl_target. */
static void mdr_addr_to_ioctl(const struct sockaddr_storage *ss,
			      struct mdr_ioctl_target *out)
{
	out->family = ss->ss_family;
	memset(out->addr, 0, sizeof(out->addr));
	out->scope_id = 0;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)ss;

		out->port = ntohs(sin->sin_port);
		memcpy(out->addr, &sin->sin_addr, 4);
	} else {
		const struct sockaddr_in6 *sin6 = (const void *)ss;

		out->port = ntohs(sin6->sin6_port);
		memcpy(out->addr, &sin6->sin6_addr, 16);
		out->scope_id = sin6->sin6_scope_id;
	}
}

static void mdr_target_to_ioctl(const struct mdr_target *t,
				struct mdr_ioctl_target *out)
{
	memset(out, 0, sizeof(*out));
	out->tenant = t->tenant;
	out->host_id = t->host_id;
	out->key = t->key ? t->key->serial : 0;
	mdr_addr_to_ioctl(&t->addr, out);
}

/* The same metadata service: the same group, or the same node. */
static bool mdr_target_equal(const struct mdr_target *a,
			     const struct mdr_target *b)
{
	if (a->tenant != b->tenant || a->group != b->group)
		return false;
	return a->group || mdr_addr_equal(&a->addr, &b->addr);
}

/* What the metadata service said must make sense before a disk exists. */
static int mdr_geom_check(const struct mdr_vol_geom *g, u64 volume_id)
{
	u64 ext;

	if (g->volume_id != volume_id ||
	    g->extent_shift < MDR_WIRE_EXTENT_SHIFT_MIN ||
	    g->extent_shift > MDR_WIRE_EXTENT_SHIFT_MAX ||
	    !g->size || g->size % 4096)
		return -EPROTO;
	ext = 1ULL << g->extent_shift;
	if (g->nr_extents != DIV_ROUND_UP_ULL(g->size, ext))
		return -EPROTO;
	return 0;
}

static void mdr_vol_info(struct mdr_vol *vol, struct mdr_ioctl_vol_info *info)
{
	memset(info, 0, sizeof(*info));
	info->index = vol->index;
	info->extent_shift = vol->geom.extent_shift;
	info->volume_id = vol->geom.volume_id;
	info->size = vol->geom.size;
	mdr_target_to_ioctl(&vol->target, &info->target);
	info->group = vol->target.group;
	if (vol->tvol) {
		struct sockaddr_storage now;

		/* of a group: where it is served now, not where it began */
		vol->tops->where(vol->tvol, &now, &info->epoch);
		mdr_addr_to_ioctl(&now, &info->target);
	}
	if (test_bit(MDR_VOL_F_LEASE, &vol->flags))
		info->flags |= MDR_VOL_LEASE_VALID;
	if (test_bit(MDR_VOL_F_READONLY, &vol->flags))
		info->flags |= MDR_VOL_READONLY;
	if (test_bit(MDR_VOL_F_DYING, &vol->flags))
		info->flags |= MDR_VOL_DYING;
	if (vol->disk)
		info->open_count = disk_openers(vol->disk);
	info->cached = mdr_cache_count(&vol->cache);
	info->inflight = mdr_inflight_total(&vol->inflight);
	strscpy(info->name, vol->geom.name, sizeof(info->name));
}

/* Undo everything but the disk; tolerates a volume set up halfway. */
static void mdr_vol_free(struct mdr_vol *vol)
{
	struct mdr_backing *b;
	unsigned long id;

	xa_for_each(&vol->devs, id, b)
		mdr_backing_put_user(b);
	xa_destroy(&vol->devs);
	mdr_cache_destroy(&vol->cache);
	mdr_inflight_destroy(&vol->inflight);
	bioset_exit(&vol->held_bs);
	bioset_exit(&vol->flush_bs);
	bioset_exit(&vol->clone_bs);
	bioset_exit(&vol->split_bs);
	free_percpu(vol->stats);
	mdr_key_put(vol->target.key);
	kfree(vol);
}

static struct mdr_vol *mdr_vol_alloc(void)
{
	struct mdr_vol *vol;

	vol = kzalloc(sizeof(*vol), GFP_KERNEL);
	if (!vol)
		return NULL;
	vol->index = -1;
	xa_init(&vol->devs);
	spin_lock_init(&vol->devs_lock);
	spin_lock_init(&vol->defer_lock);
	spin_lock_init(&vol->map_lock);
	bio_list_init(&vol->deferred);
	INIT_HLIST_HEAD(&vol->refetch);
	INIT_WORK(&vol->resubmit_work, mdr_vol_resubmit_work);
	INIT_DELAYED_WORK(&vol->expire_work, mdr_vol_expire_work);
	INIT_WORK(&vol->lapse_work, mdr_vol_lapse_work);
	spin_lock_init(&vol->flush_lock);
	bio_list_init(&vol->flush_slow);
	bio_list_init(&vol->flush_data);
	INIT_WORK(&vol->flush_work, mdr_flush_work);
	atomic_set(&vol->flushing, 0);
	mdr_track_init(&vol->track);
	mdr_waitlist_init(&vol->wait);
	atomic64_set(&vol->bad_dev, 0);
	mdr_reval_init(vol);
	vol->last_miss = U64_MAX - 1;
	vol->lease_end = jiffies;	/* no IO before the open's grant */
	vol->tops = &mdr_rdma_transport;

	/* first: mdr_vol_free() destroys the cache even when this fails */
	if (mdr_cache_init(&vol->cache, max(g_cache_max_extents, 1U)))
		goto out_free;
	if (mdr_inflight_init(&vol->inflight))
		goto out_free;
	vol->stats = alloc_percpu(struct mdr_vol_stats);
	if (!vol->stats)
		goto out_free;
	/*
	 * Rescuers: a submit_bio() that routes deferred bios clones several
	 * while the clones it made wait on current->bio_list; a mempool wait
	 * then punts them to the rescuer instead of waiting on itself.
	 */
	if (bioset_init(&vol->split_bs, BIO_POOL_SIZE, 0, BIOSET_NEED_RESCUER))
		goto out_free;
	if (bioset_init(&vol->clone_bs, BIO_POOL_SIZE,
			offsetof(struct mdr_io, clone),
			BIOSET_NEED_RESCUER | BIOSET_PERCPU_CACHE))
		goto out_free;
	if (bioset_init(&vol->flush_bs, BIO_POOL_SIZE, 0, 0))
		goto out_free;
	/* no rescuer: mdr_hold() never waits for the pool */
	if (bioset_init(&vol->held_bs, BIO_POOL_SIZE,
			offsetof(struct mdr_held, bio), 0))
		goto out_free;
	return vol;

out_free:
	mdr_vol_free(vol);
	return NULL;
}

static int mdr_vol_add_disk(struct mdr_vol *vol)
{
	u32 ext_sectors = 1U << mdr_ext_sector_shift(vol->geom.extent_shift);
	struct queue_limits lim;
	struct gendisk *disk;
	int ret;

	/* the strictest limits of every device the volume may use */
	blk_set_stacking_limits(&lim);
	mdr_backing_limits(&lim);
	lim.logical_block_size = max(lim.logical_block_size, 512U);
	lim.physical_block_size = max(lim.physical_block_size, 512U);
	lim.max_hw_sectors = min(lim.max_hw_sectors, ext_sectors);
	lim.chunk_sectors = ext_sectors;	/* split per extent */
	lim.max_hw_discard_sectors = min(lim.max_hw_discard_sectors,
					 ext_sectors);
	if (lim.max_hw_discard_sectors)
		lim.discard_granularity = max(lim.discard_granularity,
					      lim.logical_block_size);
	lim.max_write_zeroes_sectors = min(lim.max_write_zeroes_sectors,
					   ext_sectors);
	/* caching writes, not rotational, accounted: compat/compat.h */
	disk = mdr_alloc_disk(&lim);
	if (IS_ERR(disk))
		return PTR_ERR(disk);

	disk->major = mdr_major;
	disk->first_minor = vol->index * MDR_MINORS;
	disk->minors = MDR_MINORS;
	disk->fops = &mdr_bdev_ops;
	disk->private_data = vol;
	snprintf(disk->disk_name, DISK_NAME_LEN, "mdr%d", vol->index);
	set_capacity(disk, vol->geom.size >> SECTOR_SHIFT);
	if (test_bit(MDR_VOL_F_READONLY, &vol->flags))
		set_disk_ro(disk, true);

	vol->disk = disk;
	ret = device_add_disk(NULL, disk, mdr_vol_attr_groups);
	if (ret) {
		vol->disk = NULL;
		put_disk(disk);
	}
	return ret;
}

/* Waits for the volume's works; once DYING, none uses the transport. */
static void mdr_vol_flush_works(struct mdr_vol *vol)
{
	/* each may queue the other: until neither ran */
	do {
		cancel_delayed_work_sync(&vol->expire_work);
	} while (flush_work(&vol->resubmit_work));
}

/*
 * Takes a DYING volume off the transport and waits until nothing but its
 * owner touches it: no work, no callback, no IO at a device, no flush.
 * Parked and deferred bios fail. Shared by detach and a failed attach
 * (whose open may already have let a push queue work).
 *
 * The order is the lifetime rule: DYING (set by the caller) stops new IO
 * (mdr_route() checks it after counting itself in flight), deferrals
 * (mdr_vol_defer_list()) and refetches; then the works are flushed, so
 * none is inside the transport when it closes; close() ends the callbacks;
 * the works they queued are flushed again (they only fail bios now); the
 * drain waits for IO at the devices, and synchronize_rcu() for the last
 * touch of each completion (inflight.c).
 */
static void mdr_vol_stop(struct mdr_vol *vol)
{
	mdr_reval_stop(vol);
	mdr_vol_flush_works(vol);
	/*
	 * IO at the backing devices completes before the node hears of the
	 * close: CLOSE ends the lease at once, and the node may then move the
	 * extents or reuse their places. DYING, set by the caller, turns new
	 * IO away in mdr_route(), after its in-flight count (barriers A/B of
	 * inflight.c): what got past it before is what this drain waits for,
	 * and nothing reaches a device after it.
	 */
	mdr_inflight_drain(&vol->inflight);
	vol->tops->close(vol->tvol);
	mdr_inject_delay(MDR_WIN_TEARDOWN);
	mdr_vol_flush_works(vol);
	flush_work(&vol->lapse_work);
	mdr_vol_fail_all(vol, BLK_STS_IOERR);

	while (atomic_read(&vol->flushing))
		msleep(20);
	flush_work(&vol->flush_work);
	synchronize_rcu();
	WARN_ON_ONCE(mdr_inflight_total(&vol->inflight));
}

/**
 * mdr_vol_attach() - MDR_IOC_ATTACH: open a volume and create /dev/mdrN
 * @a:		the ioctl argument; @a->info is filled on success
 * @readonly:	the disk is read-only
 *
 * The volume takes its index under mdr_vol_mutex at once, so a concurrent
 * attach of the same volume sees it and fails with -EEXIST; list, status
 * and detach see it only once it is LIVE.
 *
 * Context: process; sleeps (connects to the metadata service).
 * Return: 0 or -errno.
 */
int mdr_vol_attach(struct mdr_ioctl_attach *a, bool readonly)
{
	struct mdr_vol *vol, *other;
	unsigned long i;
	u32 index;
	int ret;

	if (!a->volume_id)
		return -EINVAL;
	vol = mdr_vol_alloc();
	if (!vol)
		return -ENOMEM;
	vol->volume_id = a->volume_id;
	ret = mdr_target_from_ioctl(&a->target, &a->group, &vol->target);
	if (ret)
		goto out_free;
	if (readonly)
		set_bit(MDR_VOL_F_READONLY, &vol->flags);

	mutex_lock(&mdr_vol_mutex);
	xa_for_each(&mdr_vols, i, other) {
		if (other->volume_id == a->volume_id &&
		    mdr_target_equal(&other->target, &vol->target)) {
			mutex_unlock(&mdr_vol_mutex);
			ret = -EEXIST;
			goto out_free;
		}
	}
	ret = xa_alloc(&mdr_vols, &index, vol,
		       XA_LIMIT(0, MDR_MAX_VOLUMES - 1), GFP_KERNEL);
	mutex_unlock(&mdr_vol_mutex);
	if (ret)
		goto out_free;
	vol->index = index;

	/* the open's grant sets the lease, and its deadline, through ->lease */
	vol->tvol = vol->tops->open(&vol->target, a->volume_id, vol,
				    &mdr_vol_tvol_ops, &vol->geom);
	if (IS_ERR(vol->tvol)) {
		ret = PTR_ERR(vol->tvol);
		vol->tvol = NULL;
		goto out_release_index;
	}
	vol->geom.name[sizeof(vol->geom.name) - 1] = '\0';
	ret = mdr_geom_check(&vol->geom, a->volume_id);
	if (ret) {
		pr_warn("volume %llu: the metadata service described it inconsistently\n",
			a->volume_id);
		goto out_stop;
	}

	ret = mdr_vol_add_disk(vol);
	if (ret)
		goto out_stop;
	mdr_reval_start(vol);	/* before detach can find the volume */

	__module_get(THIS_MODULE);	/* rmmod waits for the detach */
	mdr_vol_info(vol, &a->info);
	pr_info("mdr%d: volume %llu \"%s\" attached (%llu bytes, %u KiB extents, tenant %u)\n",
		vol->index, vol->geom.volume_id, vol->geom.name, vol->geom.size,
		1U << (vol->geom.extent_shift - 10), vol->target.tenant);
	/* the last touch: from here a detach may free the volume */
	mutex_lock(&mdr_vol_mutex);
	set_bit(MDR_VOL_F_LIVE, &vol->flags);
	mutex_unlock(&mdr_vol_mutex);
	return 0;

out_stop:
	set_bit(MDR_VOL_F_DYING, &vol->flags);
	mdr_vol_stop(vol);
out_release_index:
	mutex_lock(&mdr_vol_mutex);
	xa_erase(&mdr_vols, index);
	mutex_unlock(&mdr_vol_mutex);
out_free:
	mdr_vol_free(vol);
	return ret;
}

/**
 * mdr_vol_detach() - MDR_IOC_DETACH: remove /dev/mdrN
 * @index:	N
 * @volume_id:	must match, unless 0
 * @force:	fail pending IO and detach even if the disk is open
 *
 * Context: process; sleeps until IO at the backing devices completes.
 * Return: 0, -ENXIO (no such volume), -EINVAL (another volume is
 * attached there) or -EBUSY (open, without @force).
 */
int mdr_vol_detach(u32 index, u64 volume_id, bool force)
{
	struct mdr_vol *vol;
	int ret = 0;

	mutex_lock(&mdr_vol_mutex);
	vol = xa_load(&mdr_vols, index);
	if (!vol || !test_bit(MDR_VOL_F_LIVE, &vol->flags)) {
		mutex_unlock(&mdr_vol_mutex);
		return -ENXIO;
	}
	if (volume_id && vol->volume_id != volume_id) {
		mutex_unlock(&mdr_vol_mutex);
		return -EINVAL;
	}
	mutex_lock(&vol->disk->open_mutex);
	if (disk_openers(vol->disk) && !force)
		ret = -EBUSY;
	else
		set_bit(MDR_VOL_F_DYING, &vol->flags);
	mutex_unlock(&vol->disk->open_mutex);
	if (ret) {
		mutex_unlock(&mdr_vol_mutex);
		return ret;
	}
	/*
	 * Hidden from list, status and a second detach, but keeping its
	 * index and its volume id until the transport has closed it: an
	 * attach of the same volume meanwhile gets -EEXIST, not a second
	 * handle beside the dying one on the connection.
	 */
	clear_bit(MDR_VOL_F_LIVE, &vol->flags);
	mutex_unlock(&mdr_vol_mutex);

	pr_info("mdr%d: detaching volume %llu%s\n", vol->index,
		vol->geom.volume_id, force ? " (forced)" : "");
	/*
	 * New IO fails from here; what is parked for the network fails now,
	 * before del_gendisk() writes back what the page cache holds.
	 */
	mdr_vol_fail_all(vol, BLK_STS_IOERR);
	del_gendisk(vol->disk);	/* no submit_bio() runs on after it */
	mdr_vol_stop(vol);
	mutex_lock(&mdr_vol_mutex);
	xa_erase(&mdr_vols, index);
	mutex_unlock(&mdr_vol_mutex);

	put_disk(vol->disk);
	vol->disk = NULL;
	mdr_vol_free(vol);
	module_put(THIS_MODULE);
	return 0;
}

/**
 * mdr_vol_list() - describe the attached volumes, in index order
 * @out:	room for @count struct mdr_ioctl_vol_info
 * @start:	lowest index to describe
 * @count:	elements of @out
 * @total:	out: volumes attached
 *
 * Return: descriptions written.
 */
int mdr_vol_list(void *out, u32 start, u32 count, u32 *total)
{
	struct mdr_ioctl_vol_info *info = out;
	struct mdr_vol *vol;
	unsigned long i;
	u32 n = 0, all = 0;

	mutex_lock(&mdr_vol_mutex);
	xa_for_each(&mdr_vols, i, vol) {
		if (!test_bit(MDR_VOL_F_LIVE, &vol->flags))
			continue;	/* still attaching */
		if (i >= start && n < count)
			mdr_vol_info(vol, &info[n++]);
		all++;
	}
	mutex_unlock(&mdr_vol_mutex);
	*total = all;
	return n;
}

/**
 * mdr_vol_status() - describe volume @info->index
 * @info:	in: index; out: the volume
 *
 * Return: 0 or -ENXIO.
 */
int mdr_vol_status(struct mdr_ioctl_vol_info *info)
{
	struct mdr_vol *vol;
	int ret = -ENXIO;

	mutex_lock(&mdr_vol_mutex);
	vol = xa_load(&mdr_vols, info->index);
	if (vol && test_bit(MDR_VOL_F_LIVE, &vol->flags)) {
		mdr_vol_info(vol, info);
		ret = 0;
	}
	mutex_unlock(&mdr_vol_mutex);
	return ret;
}

/* Volumes attached or attaching now: rmmod is refused while there are any. */
unsigned int mdr_vol_count(void)
{
	struct mdr_vol *vol;
	unsigned int n = 0;
	unsigned long i;

	mutex_lock(&mdr_vol_mutex);
	xa_for_each(&mdr_vols, i, vol)
		n++;
	mutex_unlock(&mdr_vol_mutex);
	return n;
}

int mdr_vol_init(void)
{
	int ret;

	mdr_wq = alloc_workqueue("mdroute", WQ_MEM_RECLAIM, 0);
	if (!mdr_wq)
		return -ENOMEM;
	mdr_major = register_blkdev(0, "mdr");
	if (mdr_major < 0) {
		ret = mdr_major;
		destroy_workqueue(mdr_wq);
		return ret;
	}
	return 0;
}

void mdr_vol_exit(void)
{
	unregister_blkdev(mdr_major, "mdr");
	destroy_workqueue(mdr_wq);
	mdr_backing_exit();
}
