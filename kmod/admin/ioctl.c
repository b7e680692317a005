// SPDX-License-Identifier: GPL-2.0
/*
 * ioctl.c - /dev/mdroute-control and its ioctl pipeline.
 *
 * Every command goes through the same steps, in the order dm-ioctl uses:
 * capability -> type and direction -> size -> copy in -> header (data_size,
 * version, flags, reserved) -> command -> copy out. The module's interface
 * version is written back to the caller whenever the header was read, so a
 * refused caller can tell which version it talks to.
 */
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/nospec.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/mdroute_wire.h>

#include "admin/admin.h"
#include "admin/ioctl_check.h"
#include "volume/backing.h"
#include "volume/volume.h"

/* First published element sizes of LIST and DEV_LIST. */
#define MDR_VOL_INFO_SIZE_V0	184
#define MDR_DEV_INFO_SIZE_V0	48
/* ATTACH before minor 3: no group (zero-filled here) */
#define MDR_ATTACH_SIZE_V0	offsetof(struct mdr_ioctl_attach, group)

/**
 * struct mdr_ioctl_cmd - one control command
 * @spec:	what its argument may look like
 * @fn:		the command; @arg is a kernel copy of @spec.max_size bytes,
 *		zero beyond what the caller passed
 */
struct mdr_ioctl_cmd {
	struct mdr_ioctl_spec spec;
	int (*fn)(void *arg);
};

static int mdr_ioctl_version(void *arg)
{
	struct mdr_ioctl_version *v = arg;

	if (v->reserved0 || memchr_inv(v->reserved, 0, sizeof(v->reserved)))
		return -EINVAL;

	v->wire_version = MDR_WIRE_VERSION;
	strscpy(v->release, MDR_RELEASE, sizeof(v->release));
	return 0;
}

static int mdr_ioctl_bind(void *arg)
{
	struct mdr_ioctl_bind *b = arg;
	dev_t devt;

	if (memchr_inv(b->reserved, 0, sizeof(b->reserved)) || !b->dev_id)
		return -EINVAL;
	devt = MKDEV(b->major, b->minor);
	if (MAJOR(devt) != b->major || MINOR(devt) != b->minor)
		return -EINVAL;
	return mdr_backing_bind(b->dev_id, devt, &b->size, &b->lbs);
}

static int mdr_ioctl_unbind(void *arg)
{
	struct mdr_ioctl_bind *b = arg;
	dev_t devt;
	int ret;

	if (memchr_inv(b->reserved, 0, sizeof(b->reserved)) || !b->dev_id)
		return -EINVAL;
	ret = mdr_backing_unbind(b->dev_id, &devt);
	if (!ret) {
		b->major = MAJOR(devt);
		b->minor = MINOR(devt);
	}
	return ret;
}

static int mdr_ioctl_attach(void *arg)
{
	struct mdr_ioctl_attach *a = arg;

	/* @info is output only: a caller must not smuggle data in it */
	if (memchr_inv(&a->info, 0, sizeof(a->info)))
		return -EINVAL;
	return mdr_vol_attach(a, a->hdr.flags & MDR_ATTACH_F_READONLY);
}

static int mdr_ioctl_detach(void *arg)
{
	struct mdr_ioctl_detach *d = arg;

	if (d->reserved0 || memchr_inv(d->reserved, 0, sizeof(d->reserved)))
		return -EINVAL;
	return mdr_vol_detach(d->index, d->volume_id,
			      d->hdr.flags & MDR_DETACH_F_FORCE);
}

/*
 * LIST and DEV_LIST: fill a kernel array of the module's elements, copy
 * them out at the caller's element size (older, smaller ones get what
 * they cover; larger ones a zeroed tail).
 */
static int mdr_ioctl_list_common(struct mdr_ioctl_list *l, size_t elem,
				 size_t first_elem,
				 int (*fill)(void *out, u32 start, u32 count,
					     u32 *total))
{
	void __user *uarray = u64_to_user_ptr(l->array);
	u32 count = min_t(u32, l->count, MDR_LIST_MAX);
	size_t stride = l->elem_size ? l->elem_size : elem;
	void *buf = NULL;
	int n, i, ret = 0;

	if (l->reserved || stride < first_elem || stride > PAGE_SIZE)
		return -EINVAL;
	if (count && !l->array)
		return -EFAULT;
	if (count) {
		buf = kvcalloc(count, elem, GFP_KERNEL);
		if (!buf)
			return -ENOMEM;
	}
	n = fill(buf, l->start, count, &l->total);
	for (i = 0; i < n && !ret; i++) {
		void __user *dst = uarray + (size_t)i * stride;

		if (copy_to_user(dst, buf + (size_t)i * elem, min(stride, elem)) ||
		    (stride > elem && clear_user(dst + elem, stride - elem)))
			ret = -EFAULT;
	}
	l->count = n;
	l->elem_size = elem;
	kvfree(buf);
	return ret;
}

static int mdr_ioctl_list(void *arg)
{
	return mdr_ioctl_list_common(arg, sizeof(struct mdr_ioctl_vol_info),
				     MDR_VOL_INFO_SIZE_V0, mdr_vol_list);
}

static int mdr_ioctl_dev_list(void *arg)
{
	return mdr_ioctl_list_common(arg, sizeof(struct mdr_ioctl_dev_info),
				     MDR_DEV_INFO_SIZE_V0, mdr_backing_list);
}

static int mdr_ioctl_status(void *arg)
{
	struct mdr_ioctl_status *st = arg;
	u32 index = st->info.index;

	/* only the index goes in */
	st->info.index = 0;
	if (memchr_inv(&st->info, 0, sizeof(st->info)))
		return -EINVAL;
	st->info.index = index;
	return mdr_vol_status(&st->info);
}

#define MDR_IOCTL_FIXED(type) \
	.min_size = sizeof(type), .max_size = sizeof(type)

static const struct mdr_ioctl_cmd mdr_ioctl_cmds[] = {
	[MDR_CMD_VERSION] = {
		.spec = { MDR_IOCTL_FIXED(struct mdr_ioctl_version),
			  .any_version = true },
		.fn = mdr_ioctl_version,
	},
	[MDR_CMD_BIND] = {
		.spec = { MDR_IOCTL_FIXED(struct mdr_ioctl_bind) },
		.fn = mdr_ioctl_bind,
	},
	[MDR_CMD_UNBIND] = {
		.spec = { MDR_IOCTL_FIXED(struct mdr_ioctl_bind) },
		.fn = mdr_ioctl_unbind,
	},
	[MDR_CMD_ATTACH] = {
		.spec = { .min_size = MDR_ATTACH_SIZE_V0,
			  .max_size = sizeof(struct mdr_ioctl_attach),
			  .valid_flags = MDR_ATTACH_F_READONLY },
		.fn = mdr_ioctl_attach,
	},
	[MDR_CMD_DETACH] = {
		.spec = { MDR_IOCTL_FIXED(struct mdr_ioctl_detach),
			  .valid_flags = MDR_DETACH_F_FORCE },
		.fn = mdr_ioctl_detach,
	},
	[MDR_CMD_LIST] = {
		.spec = { MDR_IOCTL_FIXED(struct mdr_ioctl_list) },
		.fn = mdr_ioctl_list,
	},
	[MDR_CMD_STATUS] = {
		.spec = { MDR_IOCTL_FIXED(struct mdr_ioctl_status) },
		.fn = mdr_ioctl_status,
	},
	[MDR_CMD_DEV_LIST] = {
		.spec = { MDR_IOCTL_FIXED(struct mdr_ioctl_list) },
		.fn = mdr_ioctl_dev_list,
	},
};

static const struct mdr_ioctl_cmd *mdr_ioctl_lookup(unsigned int cmd)
{
	unsigned int nr = _IOC_NR(cmd);

	if (nr >= ARRAY_SIZE(mdr_ioctl_cmds))
		return NULL;
	nr = array_index_nospec(nr, ARRAY_SIZE(mdr_ioctl_cmds));
	return mdr_ioctl_cmds[nr].fn ? &mdr_ioctl_cmds[nr] : NULL;
}

static long mdr_ctl_ioctl(struct file *file, unsigned int cmd,
			  unsigned long uarg)
{
	void __user *argp = (void __user *)uarg;
	struct mdr_ioctl_hdr __user *uhdr = argp;
	const struct mdr_ioctl_cmd *c;
	unsigned int size = _IOC_SIZE(cmd);
	struct mdr_ioctl_hdr *hdr;
	int ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;

	c = mdr_ioctl_lookup(cmd);
	if (!c)
		return -ENOTTY;
	ret = mdr_ioctl_check_cmd(cmd, &c->spec);
	if (ret)
		return ret;

	hdr = kzalloc(c->spec.max_size, GFP_KERNEL);
	if (!hdr)
		return -ENOMEM;
	if (copy_from_user(hdr, argp, size)) {
		ret = -EFAULT;
		goto out_free;
	}

	ret = mdr_ioctl_check_hdr(hdr, size, &c->spec);
	if (!ret)
		ret = c->fn(hdr);

	mdr_ioctl_set_version(hdr);
	if (!ret) {
		if (copy_to_user(argp, hdr, size))
			ret = -EFAULT;
	} else if (copy_to_user(uhdr->version, hdr->version,
				sizeof(hdr->version))) {
		ret = -EFAULT;
	}
out_free:
	kfree(hdr);
	return ret;
}

static const struct file_operations mdr_ctl_fops = {
	.owner		= THIS_MODULE,
	.open		= nonseekable_open,
	.unlocked_ioctl	= mdr_ctl_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

static struct miscdevice mdr_ctl_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= MDR_CONTROL_NAME,
	.mode	= 0600,
	.fops	= &mdr_ctl_fops,
};

int mdr_ctl_init(void)
{
	return misc_register(&mdr_ctl_misc);
}

void mdr_ctl_exit(void)
{
	misc_deregister(&mdr_ctl_misc);
}
