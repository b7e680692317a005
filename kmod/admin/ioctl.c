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

#define MDR_IOCTL_FIXED(type) \
	.min_size = sizeof(type), .max_size = sizeof(type)

static const struct mdr_ioctl_cmd mdr_ioctl_cmds[] = {
	[MDR_CMD_VERSION] = {
		.spec = { MDR_IOCTL_FIXED(struct mdr_ioctl_version),
			  .any_version = true },
		.fn = mdr_ioctl_version,
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
