// SPDX-License-Identifier: GPL-2.0
/*
 * ioctl_check.c - validation of control ioctl arguments (dm-ioctl style).
 *
 * Pure: generic headers only; callers own locking. KUnit: ktests/.
 */
#include <linux/errno.h>
#include <linux/ioctl.h>
#include <linux/string.h>

#include "admin/ioctl_check.h"

/**
 * mdr_ioctl_check_cmd() - check an ioctl number against a command's spec
 * @cmd:	the ioctl number as passed to unlocked_ioctl
 * @spec:	what the command with this _IOC_NR() accepts
 *
 * Return: 0 if @cmd is well formed for @spec; -ENOTTY if its type or
 * direction is not ours; -EINVAL if its size is outside what the command
 * accepts.
 */
int mdr_ioctl_check_cmd(unsigned int cmd, const struct mdr_ioctl_spec *spec)
{
	unsigned int size = _IOC_SIZE(cmd);

	if (_IOC_TYPE(cmd) != MDR_IOCTL_TYPE)
		return -ENOTTY;
	if (_IOC_DIR(cmd) != (_IOC_READ | _IOC_WRITE))
		return -ENOTTY;
	if (size < sizeof(struct mdr_ioctl_hdr) ||
	    size < spec->min_size || size > spec->max_size)
		return -EINVAL;
	return 0;
}

/**
 * mdr_ioctl_version_compatible() - may a caller of this version be served?
 * @version:	the caller's (major, minor, patch)
 *
 * Return: true if the major numbers are equal and the caller does not ask
 * for a minor version newer than ours.
 */
bool mdr_ioctl_version_compatible(const __u32 version[3])
{
	return version[0] == MDR_IOCTL_VERSION_MAJOR &&
	       version[1] <= MDR_IOCTL_VERSION_MINOR;
}

/**
 * mdr_ioctl_check_hdr() - check the common header of a copied-in argument
 * @hdr:	the argument's header, already in kernel memory
 * @size:	_IOC_SIZE() of the ioctl number, already checked against @spec
 * @spec:	what the command accepts
 *
 * Return: 0 or -EINVAL (wrong data_size, incompatible version, unknown
 * flags, non-zero reserved fields).
 */
int mdr_ioctl_check_hdr(const struct mdr_ioctl_hdr *hdr, unsigned int size,
			const struct mdr_ioctl_spec *spec)
{
	if (hdr->data_size != size)
		return -EINVAL;
	if (!spec->any_version && !mdr_ioctl_version_compatible(hdr->version))
		return -EINVAL;
	if (hdr->flags & ~spec->valid_flags)
		return -EINVAL;
	if (memchr_inv(hdr->reserved, 0, sizeof(hdr->reserved)))
		return -EINVAL;
	return 0;
}

/**
 * mdr_ioctl_set_version() - write this module's interface version
 * @hdr:	header to fill in
 */
void mdr_ioctl_set_version(struct mdr_ioctl_hdr *hdr)
{
	hdr->version[0] = MDR_IOCTL_VERSION_MAJOR;
	hdr->version[1] = MDR_IOCTL_VERSION_MINOR;
	hdr->version[2] = MDR_IOCTL_VERSION_PATCH;
}
