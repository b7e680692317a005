// SPDX-License-Identifier: GPL-2.0
/*
 * main.c - mdroute module entry points and parameters.
 *
 * mdroute gives a host virtual block volumes /dev/mdrN whose IO is routed,
 * per extent, to the local device that holds each block. See
 * Documentation/ for the design and the consistency rule it keeps.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mdroute.h>
#include <linux/mdroute_wire.h>

#include "admin/admin.h"
#include "cache/extent_cache.h"
#include "core/inject.h"
#include "core/params.h"
#include "transport/transport.h"
#include "volume/volume.h"

unsigned int g_fast_io_fail_tmo = 30;
module_param_named(fast_io_fail_tmo, g_fast_io_fail_tmo, uint, 0644);
MODULE_PARM_DESC(fast_io_fail_tmo,
		 "Seconds IO that needs the metadata service waits before it fails with EIO. Default: 30");

unsigned int g_io_timeout_ms = 10;
module_param_named(io_timeout_ms, g_io_timeout_ms, uint, 0644);
MODULE_PARM_DESC(io_timeout_ms,
		 "Metadata RPC timeout in ms: sent again up to 5 times, each attempt waiting twice as long, then reconnect. Default: 10");

#define MDR_PREFETCH_MAX (MDR_WIRE_READ_MAX / sizeof(struct mdr_wire_entry))

/* Checked at load and at every write through sysfs. */
static int mdr_prefetch_set(const char *val, const struct kernel_param *kp)
{
	unsigned int n;
	int ret = kstrtouint(val, 0, &n);

	if (ret)
		return ret;
	if (!n || n > MDR_PREFETCH_MAX)
		return -EINVAL;
	WRITE_ONCE(*(unsigned int *)kp->arg, n);
	return 0;
}

static const struct kernel_param_ops mdr_prefetch_ops = {
	.set = mdr_prefetch_set,
	.get = param_get_uint,
};

unsigned int g_prefetch = 16;
module_param_cb(prefetch, &mdr_prefetch_ops, &g_prefetch, 0644);
MODULE_PARM_DESC(prefetch,
		 "Entries one lookup reads when misses are sequential (1..128). Default: 16");

unsigned int g_cache_max_extents = 1U << 20;
module_param_named(cache_max_extents, g_cache_max_extents, uint, 0444);
MODULE_PARM_DESC(cache_max_extents,
		 "Most extent locations cached per volume (about 50 bytes each). Default: 1048576");

unsigned int g_revalidate_min_ms = 1000;
module_param_named(revalidate_min_ms, g_revalidate_min_ms, uint, 0644);
MODULE_PARM_DESC(revalidate_min_ms,
		 "Shortest period of the background revalidation of cached entries, while a volume is hot (ms; 0 disables). Default: 1000");

unsigned int g_revalidate_max_ms = 60000;
module_param_named(revalidate_max_ms, g_revalidate_max_ms, uint, 0644);
MODULE_PARM_DESC(revalidate_max_ms,
		 "Longest revalidation period, reached while a volume is idle (ms; 0 disables). Default: 60000");

unsigned int g_revalidate_reads = 4;
module_param_named(revalidate_reads, g_revalidate_reads, uint, 0644);
MODULE_PARM_DESC(revalidate_reads,
		 "Most lookup READs (of up to 32 adjacent entries) one revalidation pass of a volume issues. Default: 4");

static int __init mdr_init(void)
{
	int ret;

	ret = mdr_cache_module_init();
	if (ret)
		return ret;
	ret = mdr_vol_init();
	if (ret)
		goto out_cache;
	ret = mdr_rdma_init();
	if (ret)
		goto out_vol;
	ret = mdr_inject_init();	/* under the transport's debugfs root */
	if (ret)
		goto out_rdma;
	ret = mdr_ctl_init();
	if (ret) {
		pr_err("cannot register /dev/%s: %d\n", MDR_CONTROL_NAME, ret);
		goto out_inject;
	}

	pr_info("release %s loaded (ioctl ABI %u.%u.%u, wire %u)\n",
		MDR_RELEASE, MDR_IOCTL_VERSION_MAJOR, MDR_IOCTL_VERSION_MINOR,
		MDR_IOCTL_VERSION_PATCH, MDR_WIRE_VERSION);
	return 0;

out_inject:
	mdr_inject_exit();
out_rdma:
	mdr_rdma_exit();
out_vol:
	mdr_vol_exit();
out_cache:
	mdr_cache_module_exit();
	return ret;
}

static void __exit mdr_exit(void)
{
	mdr_ctl_exit();
	mdr_inject_exit();
	mdr_rdma_exit();
	mdr_vol_exit();
	mdr_cache_module_exit();
	pr_info("unloaded\n");
}

module_init(mdr_init);
module_exit(mdr_exit);

MODULE_DESCRIPTION("mdroute: per-extent block volume router");
MODULE_LICENSE("GPL");
MODULE_VERSION(MDR_RELEASE);
