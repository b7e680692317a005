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
#define MDR_IOCTL_VERSION_MINOR	3
#define MDR_IOCTL_VERSION_PATCH	0

#define MDR_IOCTL_TYPE		0xE4	/* free in ioctl-number.rst */

/**
 * struct mdr_ioctl_hdr - leads every control ioctl argument
 * @version:	in: the caller's interface version (major, minor, patch);
 *		out: always the module's
 * @data_size:	size in bytes of the whole argument, this header included;
 *		must equal _IOC_SIZE() of the command
 * @flags:	the command's MDR_<COMMAND>_F_* bits; others must be 0
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

/* Attach flags (mdr_ioctl_hdr.flags of MDR_IOC_ATTACH). */
#define MDR_ATTACH_F_READONLY	0x0001	/* the disk is read-only */
/* Detach flags (mdr_ioctl_hdr.flags of MDR_IOC_DETACH). */
#define MDR_DETACH_F_FORCE	0x0001	/* fail IO with EIO, detach anyway */

/**
 * struct mdr_ioctl_bind - MDR_IOC_BIND, MDR_IOC_UNBIND
 * @hdr:	common header
 * @dev_id:	in: cluster-wide backing device id (non-zero)
 * @major:	in (BIND): the local block device holding it; out (UNBIND)
 * @minor:	in (BIND): see @major
 * @lbs:	out: its logical block size in bytes
 * @size:	out: its size in bytes
 * @reserved:	must be zero
 *
 * BIND opens the block device exclusively and routes IO of every volume
 * to @dev_id there. UNBIND is refused with EBUSY while an attached volume
 * has seen an extent on the device.
 */
struct mdr_ioctl_bind {
	struct mdr_ioctl_hdr hdr;
	__u32 dev_id;
	__u32 major;
	__u32 minor;
	__u32 lbs;
	__u64 size;
	__u64 reserved[4];
};

/**
 * struct mdr_ioctl_target - where a volume's metadata lives
 * @family:	AF_INET (2) or AF_INET6 (10)
 * @port:	rdma_cm port, host byte order (0: MDR_WIRE_PORT)
 * @tenant:	tenant of the volume
 * @addr:	IPv4 (first 4 bytes, the rest zero) or IPv6 address, network
 *		byte order
 * @host_id:	this host's identity at the metadata service (non-zero)
 * @scope_id:	IPv6 scope (interface index) of a link-local @addr; else 0
 * @key:	serial of a "logon" key the caller possesses whose payload is
 *		this host's secret at the metadata service (16 to 64 bytes):
 *		the host then speaks wire version 3 only and proves the key on
 *		every connection, and mdnode proves it back. 0: no key; the
 *		host speaks version 2 at most, unauthenticated, which a node
 *		that requires authentication refuses
 */
struct mdr_ioctl_target {
	__u16 family;
	__u16 port;
	__u32 tenant;
	__u8 addr[16];
	__u64 host_id;
	__u32 scope_id;
	__s32 key;
};

/* Replicas an attach may name: a group has 3 to 7. */
#define MDR_REPLICAS_MAX	8

/**
 * struct mdr_ioctl_replica - where one replica of a group serves hosts
 * @family:	AF_INET (2) or AF_INET6 (10)
 * @port:	rdma_cm port, host byte order (0: MDR_WIRE_PORT)
 * @scope_id:	IPv6 scope of a link-local @addr; else 0
 * @addr:	as struct mdr_ioctl_target's
 */
struct mdr_ioctl_replica {
	__u16 family;
	__u16 port;
	__u32 scope_id;
	__u8 addr[16];
};

/**
 * struct mdr_ioctl_group - the replica group a volume's metadata lives in
 * @group:	the group's id (non-zero with @count)
 * @count:	replicas in @replicas: 0 for a node of its own, else 1 to
 *		MDR_REPLICAS_MAX, the target's address among them
 * @reserved0:	must be zero
 * @replicas:	where each replica serves hosts; no address twice
 * @reserved:	must be zero
 *
 * The module connects to the target first. A replica that does not lead
 * names the leader, and the module goes there; when the connection breaks
 * or a replica names none, it tries the next replica of @replicas, with
 * the reconnect backoff. The group's replicas must know the host's key:
 * an attach with @count needs target.key. Volumes of one group (and
 * tenant) share a connection: a later attach's replicas that it lacks
 * join its set, up to MDR_REPLICAS_MAX.
 */
struct mdr_ioctl_group {
	__u64 group;
	__u32 count;
	__u32 reserved0;
	struct mdr_ioctl_replica replicas[MDR_REPLICAS_MAX];
	__u64 reserved[2];
};

/**
 * struct mdr_ioctl_vol_info - an attached volume
 * @index:	N of /dev/mdrN
 * @extent_shift: log2 of the extent size in bytes
 * @volume_id:	cluster-wide volume id
 * @size:	bytes
 * @target:	its metadata service: of a group, the replica the module is
 *		connected to (the leader, once one answered)
 * @flags:	MDR_VOL_* state bits
 * @open_count:	openers of /dev/mdrN
 * @cached:	extents in the location cache
 * @inflight:	bios issued to backing devices and not completed
 * @name:	volume name, NUL-terminated
 * @group:	(minor 3) its replica group; 0 for a node of its own
 * @epoch:	(minor 3) the highest epoch of the group's leaders the
 *		module has seen served; 0 when none yet
 * @reserved:	zero
 */
struct mdr_ioctl_vol_info {
	__u32 index;
	__u32 extent_shift;
	__u64 volume_id;
	__u64 size;
	struct mdr_ioctl_target target;
	__u32 flags;
	__u32 open_count;
	__u64 cached;
	__u64 inflight;
	char name[64];
	__u64 group;
	__u64 epoch;
	__u64 reserved[2];
};

#define MDR_VOL_LEASE_VALID	0x0001	/* IO may go to backing devices */
#define MDR_VOL_READONLY	0x0002
#define MDR_VOL_DYING		0x0004	/* being detached */

/**
 * struct mdr_ioctl_attach - MDR_IOC_ATTACH
 * @hdr:	common header; flags MDR_ATTACH_F_*
 * @volume_id:	in: the volume to attach
 * @target:	in: its metadata service
 * @info:	out: the new volume (index, size, extent size, name)
 * @group:	in (minor 3): the replica group that serves @target, or all
 *		zero for a node of its own. An attach of minor 2 ends at
 *		@group (264 bytes) and names a node of its own
 */
struct mdr_ioctl_attach {
	struct mdr_ioctl_hdr hdr;
	__u64 volume_id;
	struct mdr_ioctl_target target;
	struct mdr_ioctl_vol_info info;
	struct mdr_ioctl_group group;
};

/**
 * struct mdr_ioctl_detach - MDR_IOC_DETACH
 * @hdr:	common header; flags MDR_DETACH_F_*
 * @index:	in: N of /dev/mdrN
 * @reserved0:	must be zero
 * @volume_id:	in: must match the volume attached at @index (0: any)
 * @reserved:	must be zero
 *
 * Without MDR_DETACH_F_FORCE a volume that is open is refused (EBUSY).
 * With it, IO waiting for metadata and new IO fail with EIO, IO already at
 * a backing device completes, and the disk goes away.
 */
struct mdr_ioctl_detach {
	struct mdr_ioctl_hdr hdr;
	__u32 index;
	__u32 reserved0;
	__u64 volume_id;
	__u64 reserved[2];
};

/**
 * struct mdr_ioctl_list - MDR_IOC_LIST (volumes), MDR_IOC_DEV_LIST (bound
 * backing devices)
 * @hdr:	common header
 * @count:	in: elements @array has room for; out: elements written
 *		(at most MDR_LIST_MAX per call)
 * @total:	out: elements that exist, @start or not
 * @array:	user pointer to @count elements of @elem_size bytes: struct
 *		mdr_ioctl_vol_info (LIST) or struct mdr_ioctl_dev_info
 *		(DEV_LIST), in index / device id order
 * @start:	in: first volume index / device id to describe; a caller
 *		pages with the last one it got plus one
 * @elem_size:	in: bytes per element of @array as the caller knows them (0:
 *		the module's); out: the module's. A larger element gets its
 *		tail zeroed, a smaller (older) one only what it covers; below
 *		the first published size is refused
 * @reserved:	must be zero
 */
struct mdr_ioctl_list {
	struct mdr_ioctl_hdr hdr;
	__u32 count;
	__u32 total;
	__u64 array;
	__u32 start;
	__u32 elem_size;
	__u64 reserved;
};

#define MDR_LIST_MAX	4096	/* elements one LIST call writes at most */

/**
 * struct mdr_ioctl_dev_info - a bound backing device
 * @dev_id:	cluster-wide id
 * @major:	local block device
 * @minor:	local block device
 * @users:	attached volumes that route IO to it
 * @size:	bytes
 * @errors:	IOs it failed
 * @reserved:	zero
 */
struct mdr_ioctl_dev_info {
	__u32 dev_id;
	__u32 major;
	__u32 minor;
	__u32 users;
	__u64 size;
	__u64 errors;
	__u64 reserved[2];
};

/**
 * struct mdr_ioctl_status - MDR_IOC_STATUS
 * @hdr:	common header
 * @info:	in: info.index; out: the volume
 */
struct mdr_ioctl_status {
	struct mdr_ioctl_hdr hdr;
	struct mdr_ioctl_vol_info info;
};

enum {
	MDR_CMD_VERSION = 0,
	MDR_CMD_BIND	= 1,
	MDR_CMD_UNBIND	= 2,
	MDR_CMD_ATTACH	= 3,
	MDR_CMD_DETACH	= 4,
	MDR_CMD_LIST	= 5,
	MDR_CMD_STATUS	= 6,
	MDR_CMD_DEV_LIST = 7,
};

#define MDR_IOC_VERSION	_IOWR(MDR_IOCTL_TYPE, MDR_CMD_VERSION, \
			      struct mdr_ioctl_version)
#define MDR_IOC_BIND	_IOWR(MDR_IOCTL_TYPE, MDR_CMD_BIND, \
			      struct mdr_ioctl_bind)
#define MDR_IOC_UNBIND	_IOWR(MDR_IOCTL_TYPE, MDR_CMD_UNBIND, \
			      struct mdr_ioctl_bind)
#define MDR_IOC_ATTACH	_IOWR(MDR_IOCTL_TYPE, MDR_CMD_ATTACH, \
			      struct mdr_ioctl_attach)
#define MDR_IOC_DETACH	_IOWR(MDR_IOCTL_TYPE, MDR_CMD_DETACH, \
			      struct mdr_ioctl_detach)
#define MDR_IOC_LIST	_IOWR(MDR_IOCTL_TYPE, MDR_CMD_LIST, \
			      struct mdr_ioctl_list)
#define MDR_IOC_STATUS	_IOWR(MDR_IOCTL_TYPE, MDR_CMD_STATUS, \
			      struct mdr_ioctl_status)
#define MDR_IOC_DEV_LIST _IOWR(MDR_IOCTL_TYPE, MDR_CMD_DEV_LIST, \
			       struct mdr_ioctl_list)

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
MDR_STATIC_ASSERT(sizeof(struct mdr_ioctl_bind) == 88, "mdr_ioctl_bind size");
MDR_STATIC_ASSERT(sizeof(struct mdr_ioctl_target) == 40,
		  "mdr_ioctl_target size");
MDR_STATIC_ASSERT(sizeof(struct mdr_ioctl_vol_info) == 184,
		  "mdr_ioctl_vol_info size");
MDR_STATIC_ASSERT(sizeof(struct mdr_ioctl_replica) == 24,
		  "mdr_ioctl_replica size");
MDR_STATIC_ASSERT(sizeof(struct mdr_ioctl_group) == 224,
		  "mdr_ioctl_group size");
MDR_STATIC_ASSERT(sizeof(struct mdr_ioctl_attach) == 488,
		  "mdr_ioctl_attach size");
MDR_STATIC_ASSERT(__builtin_offsetof(struct mdr_ioctl_attach, group) == 264,
		  "mdr_ioctl_attach size of minor 2");
MDR_STATIC_ASSERT(sizeof(struct mdr_ioctl_detach) == 64,
		  "mdr_ioctl_detach size");
MDR_STATIC_ASSERT(sizeof(struct mdr_ioctl_list) == 64, "mdr_ioctl_list size");
MDR_STATIC_ASSERT(sizeof(struct mdr_ioctl_dev_info) == 48,
		  "mdr_ioctl_dev_info size");
MDR_STATIC_ASSERT(sizeof(struct mdr_ioctl_status) == 216,
		  "mdr_ioctl_status size");
#undef MDR_STATIC_ASSERT

#endif /* _UAPI_LINUX_MDROUTE_H */
