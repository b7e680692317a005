// SPDX-License-Identifier: GPL-2.0
/*
 * main.c - mdroute module entry points.
 *
 * mdroute gives a host virtual block volumes /dev/mdrN whose IO is routed,
 * per extent, to the local device that holds each block. See
 * Documentation/ for the design and the consistency rule it keeps.
 */
#include <linux/module.h>
#include <linux/mdroute.h>
#include <linux/mdroute_wire.h>

#include "admin/admin.h"

static int __init mdr_init(void)
{
	int ret;

	ret = mdr_ctl_init();
	if (ret) {
		pr_err("cannot register /dev/%s: %d\n", MDR_CONTROL_NAME, ret);
		return ret;
	}

	pr_info("release %s loaded (ioctl ABI %u.%u.%u, wire %u)\n",
		MDR_RELEASE, MDR_IOCTL_VERSION_MAJOR, MDR_IOCTL_VERSION_MINOR,
		MDR_IOCTL_VERSION_PATCH, MDR_WIRE_VERSION);
	return 0;
}

static void __exit mdr_exit(void)
{
	mdr_ctl_exit();
	pr_info("unloaded\n");
}

module_init(mdr_init);
module_exit(mdr_exit);

MODULE_DESCRIPTION("mdroute: per-extent block volume router");
MODULE_LICENSE("GPL");
MODULE_VERSION(MDR_RELEASE);
