/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * mdroute.h - control device ABI of the mdroute volume router.
 *
 * Shared verbatim by the kernel module (kmod/) and user space (userspace/).
 * Every ioctl argument starts with struct mdr_ioctl_hdr. The module checks
 * it the way dm-ioctl does (capability, type, version, size, reserved
 * fields) and always writes its own interface version back into the header,
 * so a caller that was refused learns which version it talks to.
 *
 * Versioning: a caller sets MDR_IOCTL_VERSION_{MAJOR,MINOR,PATCH} of the
 * header it was compiled with. The module accepts a request when the major
 * numbers are equal and the caller's minor is not greater than its own;
 * the patch level is informative. MDR_IOC_VERSION is accepted from any
 * version, so it can always be used to discover the module's.
 *
 * Compatibility: commands are dispatched on _IOC_NR(); a struct that grows
 * gets a new _IOC_SIZE and the module accepts every size between the first
 * published one and its own, reading only the fields the size covers.
 */
#ifndef _UAPI_LINUX_MDROUTE_H
#define _UAPI_LINUX_MDROUTE_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define MDR_CONTROL_NAME	"mdroute-control"	/* /dev/mdroute-control */

#define MDR_IOCTL_VERSION_MAJOR	0
#define MDR_IOCTL_VERSION_MINOR	1
#define MDR_IOCTL_VERSION_PATCH	0

#define MDR_IOCTL_TYPE		0xE4	/* free in ioctl-number.rst */

/**
 * struct mdr_ioctl_hdr - leads every control ioctl argument
 * @version:	in: the caller's interface version (major, minor, patch);
 *		out: always the module's
 * @data_size:	size in bytes of the whole argument, this header included;
 *		must equal _IOC_SIZE() of the command
 * @flags:	MDR_IOCTL_F_* bits valid for the command; others must be 0
 * @reserved:	must be zero
 */
struct mdr_ioctl_hdr {
	__u32 version[3];
	__u32 data_size;
	__u32 flags;
	__u32 reserved[3];
};

/**
 * struct mdr_ioctl_version - MDR_IOC_VERSION
 * @hdr:	common header
 * @wire_version: out: highest metadata wire protocol version the module
 *		speaks (see mdroute_wire.h)
 * @reserved0:	must be zero
 * @release:	out: module release string, NUL-terminated (e.g. "0.1.0")
 * @reserved:	must be zero
 */
struct mdr_ioctl_version {
	struct mdr_ioctl_hdr hdr;
	__u32 wire_version;
	__u32 reserved0;
	char release[32];
	__u64 reserved[4];
};

enum {
	MDR_CMD_VERSION = 0,
};

#define MDR_IOC_VERSION	_IOWR(MDR_IOCTL_TYPE, MDR_CMD_VERSION, \
			      struct mdr_ioctl_version)

/* Sizes are ABI: a change here is a new interface version. */
#ifdef __cplusplus
#define MDR_STATIC_ASSERT static_assert
#else
#define MDR_STATIC_ASSERT _Static_assert
#endif
MDR_STATIC_ASSERT(sizeof(struct mdr_ioctl_hdr) == 32, "mdr_ioctl_hdr size");
MDR_STATIC_ASSERT(sizeof(struct mdr_ioctl_version) == 104,
		  "mdr_ioctl_version size");
MDR_STATIC_ASSERT(__builtin_offsetof(struct mdr_ioctl_version, release) == 40,
		  "mdr_ioctl_version.release offset");
#undef MDR_STATIC_ASSERT

#endif /* _UAPI_LINUX_MDROUTE_H */
