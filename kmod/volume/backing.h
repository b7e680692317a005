/* SPDX-License-Identifier: GPL-2.0 */
/*
 * backing.h - the local block devices that hold extents, by cluster-wide
 * device id.
 *
 * The operator binds each device id this host may use to a local block
 * device (found by serial/WWID in user space); the module opens it
 * exclusively. A volume becomes a user of a device the first time it
 * routes IO there, and stays one until it is detached; a device with
 * users cannot be unbound.
 */
#ifndef MDR_BACKING_H
#define MDR_BACKING_H

#include <linux/atomic.h>
#include <linux/blkdev.h>
#include <linux/rcupdate.h>
#include <linux/types.h>

#include "compat/compat.h"

struct mdr_ioctl_dev_info;

/**
 * struct mdr_backing - one bound device
 * @dev_id:	cluster-wide id
 * @bdev:	opened exclusively while bound
 * @handle:	what closes it
 * @users:	volumes routing IO here (under mdr_backing_lock)
 * @dead:	unbound: takes no new users (under mdr_backing_lock)
 * @errors:	IOs the device failed
 * @rcu:	freed after a grace period
 */
struct mdr_backing {
	u32 dev_id;
	struct block_device *bdev;
	struct mdr_bdev_handle handle;
	unsigned int users;
	bool dead;
	atomic64_t errors;
	struct rcu_head rcu;
};

int mdr_backing_bind(u32 dev_id, dev_t devt, u64 *size, u32 *lbs);
int mdr_backing_unbind(u32 dev_id, dev_t *devt);
struct mdr_backing *mdr_backing_get_user(u32 dev_id);
void mdr_backing_put_user(struct mdr_backing *b);
int mdr_backing_list(void *out, u32 start, u32 count, u32 *total);
void mdr_backing_limits(struct queue_limits *lim);
void mdr_backing_exit(void);

#endif /* MDR_BACKING_H */
