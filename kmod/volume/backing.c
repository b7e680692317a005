// SPDX-License-Identifier: GPL-2.0
/*
 * backing.c - bound backing devices.
 *
 * Binding and unbinding are rare and serialised by mdr_backing_mutex; the
 * IO path finds a device through its volume (io.c) and only comes
 * here, under mdr_backing_lock, the first time a volume uses a device.
 */
#include <linux/blkdev.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>
#include <linux/mdroute.h>

#include "compat/compat.h"
#include "volume/backing.h"

static DEFINE_MUTEX(mdr_backing_mutex);	/* bind, unbind, list */
static DEFINE_SPINLOCK(mdr_backing_lock);	/* users, dead */
static DEFINE_XARRAY(mdr_backings);		/* dev_id -> mdr_backing */
static char mdr_backing_holder;		/* exclusive-open holder */

/**
 * mdr_backing_bind() - open @devt exclusively as device @dev_id
 * @dev_id:	cluster-wide id, non-zero
 * @devt:	the local block device
 * @size:	out: its size in bytes
 * @lbs:	out: its logical block size
 *
 * Context: process; sleeps.
 * Return: 0; -EINVAL (id 0), -EEXIST (id bound already), -EBUSY (the
 * device is bound under another id or opened exclusively elsewhere), or
 * what opening it returned.
 */
int mdr_backing_bind(u32 dev_id, dev_t devt, u64 *size, u32 *lbs)
{
	struct mdr_bdev_handle handle;
	struct block_device *bdev;
	struct mdr_backing *b;
	unsigned long i;
	int ret;

	if (!dev_id)
		return -EINVAL;

	mutex_lock(&mdr_backing_mutex);
	if (xa_load(&mdr_backings, dev_id)) {
		ret = -EEXIST;
		goto out_unlock;
	}
	xa_for_each(&mdr_backings, i, b) {
		if (b->bdev->bd_dev == devt) {
			ret = -EBUSY;
			goto out_unlock;
		}
	}

	bdev = mdr_bdev_open_excl(devt, &mdr_backing_holder, &handle);
	if (IS_ERR(bdev)) {
		ret = PTR_ERR(bdev);
		goto out_unlock;
	}
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b) {
		ret = -ENOMEM;
		goto out_put_bdev;
	}
	b->dev_id = dev_id;
	b->bdev = bdev;
	b->handle = handle;
	atomic64_set(&b->errors, 0);
	ret = xa_err(xa_store(&mdr_backings, dev_id, b, GFP_KERNEL));
	if (ret)
		goto out_free;

	*size = bdev_nr_bytes(bdev);
	*lbs = bdev_logical_block_size(bdev);
	mutex_unlock(&mdr_backing_mutex);
	pr_info("device %u bound to %pg (%llu bytes)\n", dev_id, bdev, *size);
	return 0;

out_free:
	kfree(b);
out_put_bdev:
	mdr_bdev_close(&handle);
out_unlock:
	mutex_unlock(&mdr_backing_mutex);
	return ret;
}

/**
 * mdr_backing_unbind() - close device @dev_id
 * @dev_id:	cluster-wide id
 * @devt:	out: the local block device it was bound to
 *
 * Context: process; sleeps (an RCU grace period).
 * Return: 0, -ENOENT (not bound) or -EBUSY (an attached volume uses it).
 */
int mdr_backing_unbind(u32 dev_id, dev_t *devt)
{
	struct mdr_backing *b;
	int ret = 0;

	mutex_lock(&mdr_backing_mutex);
	/* IRQs off: a completion may take a user of another device */
	spin_lock_irq(&mdr_backing_lock);
	b = xa_load(&mdr_backings, dev_id);
	if (!b)
		ret = -ENOENT;
	else if (b->users)
		ret = -EBUSY;
	else
		b->dead = true;
	spin_unlock_irq(&mdr_backing_lock);
	if (ret) {
		mutex_unlock(&mdr_backing_mutex);
		return ret;
	}
	xa_erase(&mdr_backings, dev_id);
	mutex_unlock(&mdr_backing_mutex);

	synchronize_rcu();	/* lookups in mdr_backing_get_user() */
	*devt = b->bdev->bd_dev;
	pr_info("device %u unbound from %pg\n", dev_id, b->bdev);
	mdr_bdev_close(&b->handle);
	kfree(b);
	return 0;
}

/**
 * mdr_backing_get_user() - become a user of device @dev_id
 * @dev_id:	cluster-wide id
 *
 * Context: any.
 * Return: the device, which cannot be unbound until
 * mdr_backing_put_user(); NULL if it is not bound.
 */
struct mdr_backing *mdr_backing_get_user(u32 dev_id)
{
	struct mdr_backing *b;
	unsigned long flags;

	rcu_read_lock();
	spin_lock_irqsave(&mdr_backing_lock, flags);
	b = xa_load(&mdr_backings, dev_id);
	if (b && !b->dead)
		b->users++;
	else
		b = NULL;
	spin_unlock_irqrestore(&mdr_backing_lock, flags);
	rcu_read_unlock();
	return b;
}

void mdr_backing_put_user(struct mdr_backing *b)
{
	unsigned long flags;

	spin_lock_irqsave(&mdr_backing_lock, flags);
	WARN_ON_ONCE(!b->users);
	b->users--;
	spin_unlock_irqrestore(&mdr_backing_lock, flags);
}

/**
 * mdr_backing_list() - describe the bound devices, in id order
 * @out:	room for @count struct mdr_ioctl_dev_info
 * @start:	lowest device id to describe
 * @count:	elements of @out
 * @total:	out: devices bound
 *
 * Context: process.
 * Return: descriptions written.
 */
int mdr_backing_list(void *out, u32 start, u32 count, u32 *total)
{
	struct mdr_ioctl_dev_info *info = out;
	struct mdr_backing *b;
	unsigned long id;
	u32 n = 0, all = 0;

	mutex_lock(&mdr_backing_mutex);
	xa_for_each(&mdr_backings, id, b) {
		if (id >= start && n < count) {
			struct mdr_ioctl_dev_info *d = &info[n++];

			memset(d, 0, sizeof(*d));
			d->dev_id = b->dev_id;
			d->major = MAJOR(b->bdev->bd_dev);
			d->minor = MINOR(b->bdev->bd_dev);
			spin_lock_irq(&mdr_backing_lock);
			d->users = b->users;
			spin_unlock_irq(&mdr_backing_lock);
			d->size = bdev_nr_bytes(b->bdev);
			d->errors = atomic64_read(&b->errors);
		}
		all++;
	}
	mutex_unlock(&mdr_backing_mutex);
	*total = all;
	return n;
}

/**
 * mdr_backing_limits() - stack the limits of every bound device
 * @lim:	limits of a new volume, set up by blk_set_stacking_limits()
 *
 * A volume may route IO to any bound device, so it takes the strictest
 * limits of them all (dm does the same over its targets).
 *
 * Context: process.
 */
void mdr_backing_limits(struct queue_limits *lim)
{
	bool discard = true;
	unsigned int n = 0;
	struct mdr_backing *b;
	unsigned long id;

	mutex_lock(&mdr_backing_mutex);
	xa_for_each(&mdr_backings, id, b) {
		blk_stack_limits(lim, &bdev_get_queue(b->bdev)->limits, 0);
		discard &= bdev_max_discard_sectors(b->bdev) != 0;
		n++;
	}
	mutex_unlock(&mdr_backing_mutex);

	/* blk_stack_limits() keeps discard if any device has it: all must */
	if (!n || !discard) {
		lim->max_discard_sectors = 0;
		lim->max_hw_discard_sectors = 0;
	}
	if (!n)
		lim->max_write_zeroes_sectors = 0;
}

/* Module exit: every volume is gone, so no device has users. */
void mdr_backing_exit(void)
{
	struct mdr_backing *b;
	unsigned long id;
	dev_t devt;

	xa_for_each(&mdr_backings, id, b)
		mdr_backing_unbind(b->dev_id, &devt);
	xa_destroy(&mdr_backings);
}
