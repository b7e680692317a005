// SPDX-License-Identifier: GPL-2.0
/*
 * sysfs.c - /sys/block/mdrN/mdroute/: what a volume is and what it did.
 * Read-only; counters are summed over CPUs when read.
 */
#include <linux/blkdev.h>
#include <linux/device.h>
#include <linux/sysfs.h>

#include "volume/volume.h"

static struct mdr_vol *mdr_dev_vol(struct device *dev)
{
	return dev_to_disk(dev)->private_data;
}

/* Sum of one u64 field of the per-CPU counters. */
static u64 mdr_stat_sum(struct mdr_vol *vol, size_t offset)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += *(u64 *)((char *)per_cpu_ptr(vol->stats, cpu) + offset);
	return sum;
}

#define MDR_STAT_ATTR(name, field)					\
static ssize_t name##_show(struct device *dev,				\
			   struct device_attribute *attr, char *buf)	\
{									\
	return sysfs_emit(buf, "%llu\n", mdr_stat_sum(mdr_dev_vol(dev),	\
			  offsetof(struct mdr_vol_stats, field)));	\
}									\
static DEVICE_ATTR_RO(name)

MDR_STAT_ATTR(cache_hits, hits);
MDR_STAT_ATTR(cache_misses, misses);
MDR_STAT_ATTR(zero_reads, zero_reads);
MDR_STAT_ATTR(allocations, allocs);
MDR_STAT_ATTR(deferred, deferred);
MDR_STAT_ATTR(reads, ops[MDR_STAT_READ]);
MDR_STAT_ATTR(writes, ops[MDR_STAT_WRITE]);
MDR_STAT_ATTR(discards, ops[MDR_STAT_DISCARD]);
MDR_STAT_ATTR(write_zeroes, ops[MDR_STAT_WRITE_ZEROES]);
MDR_STAT_ATTR(read_bytes, bytes[MDR_STAT_READ]);
MDR_STAT_ATTR(write_bytes, bytes[MDR_STAT_WRITE]);
MDR_STAT_ATTR(discard_bytes, bytes[MDR_STAT_DISCARD]);
MDR_STAT_ATTR(write_zeroes_bytes, bytes[MDR_STAT_WRITE_ZEROES]);
MDR_STAT_ATTR(flushes, flushes);
MDR_STAT_ATTR(errors, errors);

static ssize_t volume_id_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", mdr_dev_vol(dev)->geom.volume_id);
}
static DEVICE_ATTR_RO(volume_id);

static ssize_t name_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "%s\n", mdr_dev_vol(dev)->geom.name);
}
static DEVICE_ATTR_RO(name);

static ssize_t extent_size_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n",
			  1ULL << mdr_dev_vol(dev)->geom.extent_shift);
}
static DEVICE_ATTR_RO(extent_size);

static ssize_t tenant_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%u\n", mdr_dev_vol(dev)->target.tenant);
}
static DEVICE_ATTR_RO(tenant);

/* The replica group; 0 for a node of its own. */
static ssize_t group_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%llu\n", mdr_dev_vol(dev)->target.group);
}
static DEVICE_ATTR_RO(group);

/*
 * Where the metadata is asked now (@now): of a group, the replica connected
 * to (the leader, once one served); and the highest epoch of the group's
 * leaders seen (0 when none yet). The disk's attributes go before the
 * transport handle closes (del_gendisk() first), and come after it opened.
 */
static u64 mdr_where(struct device *dev, struct sockaddr_storage *now)
{
	struct mdr_vol *vol = mdr_dev_vol(dev);
	u64 epoch;

	vol->tops->where(vol->tvol, now, &epoch);
	return epoch;
}

static ssize_t replica_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	struct sockaddr_storage now;

	mdr_where(dev, &now);
	return sysfs_emit(buf, "%pISpc\n", &now);
}
static DEVICE_ATTR_RO(replica);

static ssize_t epoch_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	struct sockaddr_storage now;

	return sysfs_emit(buf, "%llu\n", mdr_where(dev, &now));
}
static DEVICE_ATTR_RO(epoch);

static ssize_t lease_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%s\n",
			  test_bit(MDR_VOL_F_LEASE, &mdr_dev_vol(dev)->flags) ?
			  "valid" : "expired");
}
static DEVICE_ATTR_RO(lease);

static ssize_t cached_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%u\n", mdr_cache_count(&mdr_dev_vol(dev)->cache));
}
static DEVICE_ATTR_RO(cached);

static ssize_t stale_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%lld\n",
			  atomic64_read(&mdr_dev_vol(dev)->cache.stale));
}
static DEVICE_ATTR_RO(stale);

static ssize_t evictions_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n",
			  atomic64_read(&mdr_dev_vol(dev)->cache.evictions));
}
static DEVICE_ATTR_RO(evictions);

static ssize_t inflight_show(struct device *dev,
			     struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lu\n",
			  mdr_inflight_total(&mdr_dev_vol(dev)->inflight));
}
static DEVICE_ATTR_RO(inflight);

static ssize_t parked_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%u\n",
			  mdr_waitlist_count(&mdr_dev_vol(dev)->wait));
}
static DEVICE_ATTR_RO(parked);

static ssize_t unbound_device_errors_show(struct device *dev,
					  struct device_attribute *attr,
					  char *buf)
{
	return sysfs_emit(buf, "%lld\n",
			  atomic64_read(&mdr_dev_vol(dev)->bad_dev));
}
static DEVICE_ATTR_RO(unbound_device_errors);

static ssize_t lease_lapse_io_ms_show(struct device *dev,
				      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n",
			  READ_ONCE(mdr_dev_vol(dev)->lapse_io_ms));
}
static DEVICE_ATTR_RO(lease_lapse_io_ms);

#define MDR_REVAL_ATTR(name, field)					\
static ssize_t name##_show(struct device *dev,				\
			   struct device_attribute *attr, char *buf)	\
{									\
	return sysfs_emit(buf, "%lld\n",					\
			  atomic64_read(&mdr_dev_vol(dev)->reval.field));	\
}									\
static DEVICE_ATTR_RO(name)

/* revalidate.c: what the background revalidation did */
MDR_REVAL_ATTR(revalidations, passes);
MDR_REVAL_ATTR(revalidate_reads, reads);
MDR_REVAL_ATTR(revalidated_entries, entries);
MDR_REVAL_ATTR(stale_found, stale);
MDR_REVAL_ATTR(stale_found_frozen, stale_frozen);

static ssize_t revalidate_period_ms_show(struct device *dev,
					 struct device_attribute *attr,
					 char *buf)
{
	return sysfs_emit(buf, "%u\n",
			  READ_ONCE(mdr_dev_vol(dev)->reval.period_ms));
}
static DEVICE_ATTR_RO(revalidate_period_ms);

static struct attribute *mdr_vol_attrs[] = {
	&dev_attr_volume_id.attr,
	&dev_attr_name.attr,
	&dev_attr_extent_size.attr,
	&dev_attr_tenant.attr,
	&dev_attr_group.attr,
	&dev_attr_replica.attr,
	&dev_attr_epoch.attr,
	&dev_attr_lease.attr,
	&dev_attr_cached.attr,
	&dev_attr_cache_hits.attr,
	&dev_attr_cache_misses.attr,
	&dev_attr_stale.attr,
	&dev_attr_evictions.attr,
	&dev_attr_inflight.attr,
	&dev_attr_parked.attr,
	&dev_attr_zero_reads.attr,
	&dev_attr_allocations.attr,
	&dev_attr_deferred.attr,
	&dev_attr_reads.attr,
	&dev_attr_writes.attr,
	&dev_attr_discards.attr,
	&dev_attr_write_zeroes.attr,
	&dev_attr_read_bytes.attr,
	&dev_attr_write_bytes.attr,
	&dev_attr_discard_bytes.attr,
	&dev_attr_write_zeroes_bytes.attr,
	&dev_attr_flushes.attr,
	&dev_attr_errors.attr,
	&dev_attr_unbound_device_errors.attr,
	&dev_attr_lease_lapse_io_ms.attr,
	&dev_attr_revalidations.attr,
	&dev_attr_revalidate_reads.attr,
	&dev_attr_revalidated_entries.attr,
	&dev_attr_stale_found.attr,
	&dev_attr_stale_found_frozen.attr,
	&dev_attr_revalidate_period_ms.attr,
	NULL,
};

static const struct attribute_group mdr_vol_attr_group = {
	.name	= "mdroute",
	.attrs	= mdr_vol_attrs,
};

const struct attribute_group *mdr_vol_attr_groups[] = {
	&mdr_vol_attr_group,
	NULL,
};
