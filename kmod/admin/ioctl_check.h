/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ioctl_check.h - validation of control ioctl arguments.
 *
 * Pure: no device, no user memory. The callers copy the argument in and
 * own any locking; these helpers only decide whether it is acceptable.
 */
#ifndef MDR_IOCTL_CHECK_H
#define MDR_IOCTL_CHECK_H

#include <linux/types.h>
#include <linux/mdroute.h>

/**
 * struct mdr_ioctl_spec - what one control command accepts
 * @min_size:	smallest argument size, the first published struct (bytes)
 * @max_size:	argument size this module knows (bytes); >= @min_size
 * @valid_flags: MDR_IOCTL_F_* bits the command understands
 * @any_version: accept callers of any interface version (VERSION only)
 */
struct mdr_ioctl_spec {
	u32 min_size;
	u32 max_size;
	u32 valid_flags;
	bool any_version;
};

int mdr_ioctl_check_cmd(unsigned int cmd, const struct mdr_ioctl_spec *spec);
int mdr_ioctl_check_hdr(const struct mdr_ioctl_hdr *hdr, unsigned int size,
			const struct mdr_ioctl_spec *spec);
bool mdr_ioctl_version_compatible(const __u32 version[3]);
void mdr_ioctl_set_version(struct mdr_ioctl_hdr *hdr);

#endif /* MDR_IOCTL_CHECK_H */
