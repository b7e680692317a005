/* SPDX-License-Identifier: GPL-2.0 */
/*
 * transport.h - how volumes reach their metadata service.
 *
 * The volume code (kmod/volume/) never calls verbs: it asks a transport to
 * open a volume, to fetch entries into the location cache and to allocate
 * extents, and the transport calls back with entries, failures,
 * invalidations and lease changes. The RDMA transport (kmod/transport/
 * rdma.c) implements it over ib_core and rdma_cm; a TCP transport can
 * implement the same table later.
 */
#ifndef MDR_TRANSPORT_H
#define MDR_TRANSPORT_H

#include <linux/socket.h>
#include <linux/types.h>
#include <linux/mdroute.h>
#include <linux/mdroute_wire.h>

struct mdr_inval_ack_info;	/* proto/proto.h */

/**
 * struct mdr_target - the metadata service a volume lives on
 * @addr:	mdnode's address (AF_INET or AF_INET6, port set); of a
 *		group, the replica to try first
 * @tenant:	tenant the volume belongs to
 * @host_id:	this host's identity, stable across reboots
 * @key:	its secret there (kmod/core/key.h), a reference the holder
 *		of the target owns; NULL: the host does not authenticate
 * @group:	the replica group @addr belongs to; 0: a node of its own
 * @nr_replicas: addresses in @replicas (0 without a group); @addr is one
 * @replicas:	where the group's replicas serve hosts
 */
struct mdr_target {
	struct sockaddr_storage addr;
	u32 tenant;
	u64 host_id;
	struct key *key;
	u64 group;
	unsigned int nr_replicas;
	struct sockaddr_storage replicas[MDR_REPLICAS_MAX];
};

/**
 * struct mdr_vol_geom - a volume as the metadata service describes it
 * @volume_id:	cluster-wide volume id
 * @size:	bytes, a multiple of 4096
 * @nr_extents:	entries in the volume's table
 * @extent_shift: log2 of the extent size in bytes
 * @lease_ms:	duration of the lease granted at open
 * @generation:	volume generation (grows on resize)
 * @name:	NUL-terminated volume name
 */
struct mdr_vol_geom {
	u64 volume_id;
	u64 size;
	u64 nr_extents;
	u32 extent_shift;
	u32 lease_ms;
	u64 generation;
	char name[MDR_WIRE_NAME_LEN];
};

/**
 * struct mdr_tvol_ops - what a transport tells the volume that owns a handle
 *
 * @owner is the pointer given to &mdr_transport_ops.open. No callback runs
 * after &mdr_transport_ops.close has returned.
 *
 * @entries:	entries [@first, @first + @n) arrived, from a fetch or an
 *		allocation. Each was validated (checksum over volume id and
 *		index, state, bounds); the generation rule is the cache's.
 *		Context: any, must not sleep.
 * @failed:	a fetch or allocation of [@first, @first + @n) failed with
 *		@err (-EIO after fast_io_fail_tmo, -ENOSPC, -ENOENT, ...).
 *		Context: any, must not sleep.
 * @invalidate:	mdnode pushed an invalidation of [@first, @first + @count):
 *		block new IO to the range, drain in-flight IO to it when
 *		@reason is MDR_INVAL_MOVE or MDR_INVAL_DELETE, drop the
 *		entries, never use a generation below @generation again.
 *		@generation 0 says the volume itself changed (its entries'
 *		generations started again): forget the range entirely.
 *		MDR_INVAL_TRACK (one extent) changes no entry: note the
 *		granules written to it from now on, and return once the
 *		writes to it already submitted completed. The ack of the
 *		MDR_INVAL_MOVE of a noted extent carries what was written:
 *		set @ack (zeroed by the transport) to it. The transport acks
 *		when this returns.
 *		Context: process, may sleep (bounded by in-flight IO).
 * @drop:	the transport learnt on its own (a reopen) that what the
 *		volume caches of [@first, @first + @count) may be out of
 *		date: forget it as @invalidate does, but without a drain
 *		(the IO already sent was sent under a lease that mdnode
 *		waits out before it moves data). Context: process, must
 *		not sleep: it runs in the lease work, which a drain on one
 *		slow device must not hold up for every volume.
 * @lease:	the volume's lease was granted or renewed (@valid: it lasts
 *		until @deadline_ns, ktime_get_ns() time, margins for drift
 *		already taken off) or expired. The volume issues no IO while
 *		it is not valid, nor past @deadline_ns even before the
 *		expiry is reported (a timer may run late).
 *		Context: any, must not sleep.
 */
struct mdr_tvol_ops {
	void (*entries)(void *owner, u64 first,
			const struct mdr_wire_entry *e, unsigned int n);
	void (*failed)(void *owner, u64 first, unsigned int n, int err);
	void (*invalidate)(void *owner, u64 first, u64 count,
			   u64 generation, u32 reason,
			   struct mdr_inval_ack_info *ack);
	void (*drop)(void *owner, u64 first, u64 count, u64 generation);
	void (*lease)(void *owner, bool valid, u64 deadline_ns);
};

struct mdr_tvol;

/**
 * struct mdr_transport_ops - a way to reach metadata services
 * @name:	"rdma", ...
 * @open:	connect to @t (or share an existing connection), open
 *		@volume_id and fill @geom. Context: process, sleeps.
 *		Return: a handle or ERR_PTR().
 * @close:	close the volume (best effort towards mdnode) and release the
 *		handle. Context: process, sleeps.
 * @fetch:	read entries [@first, @first + @count) of the table; results
 *		come through &mdr_tvol_ops.entries or .failed. A request the
 *		transport cannot serve now is queued and fails after
 *		fast_io_fail_tmo. The answer may be called back before this
 *		returns, on this CPU. Context: not hard IRQ, must not sleep.
 *		Return: 0 (queued) or -errno (nothing will be called back).
 * @alloc:	allocate extent @index (idempotent); the result comes like a
 *		fetch's. Context and return: as @fetch.
 * @where:	the address the volume's metadata is asked at now (of a
 *		group: the replica connected to, the leader once one served)
 *		and the highest epoch of the group seen. Context: any.
 */
struct mdr_transport_ops {
	const char *name;
	struct mdr_tvol *(*open)(const struct mdr_target *t, u64 volume_id,
				 void *owner, const struct mdr_tvol_ops *ops,
				 struct mdr_vol_geom *geom);
	void (*close)(struct mdr_tvol *tv);
	int (*fetch)(struct mdr_tvol *tv, u64 first, unsigned int count);
	int (*alloc)(struct mdr_tvol *tv, u64 index);
	void (*where)(struct mdr_tvol *tv, struct sockaddr_storage *addr,
		      u64 *epoch);
};

extern const struct mdr_transport_ops mdr_rdma_transport;

int mdr_rdma_init(void);
void mdr_rdma_exit(void);

#endif /* MDR_TRANSPORT_H */
