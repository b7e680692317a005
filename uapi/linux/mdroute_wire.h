/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * mdroute_wire.h - metadata protocol between mdroute hosts and mdnode.
 *
 * Shared verbatim by the kernel module, mdnode and mdctl; the protocol is
 * described in Documentation/wire-protocol.md. Everything here is
 * little-endian on the wire and fixed-size, with explicit padding.
 * It is one file past 800 lines on purpose: it is the single definition
 * of every message both sides compile, and a split would let a kernel and
 * a user space built from different parts of it disagree.
 *
 * Transport: one RDMA RC connection (rdma_cm) per (host, storage node,
 * tenant), or per admin client. On it:
 *   - two-sided SEND/RECV messages, each starting with struct mdr_wire_hdr:
 *     requests from the client, replies from mdnode, pushes from mdnode
 *     (invalidations) and the client's acks of them;
 *   - one-sided RDMA READs by hosts of extent entries from a volume's
 *     table, which mdnode registers for remote READ only.
 *
 * A receiver trusts nothing: it checks every message's length against
 * what it received, its magic, opcode and status, and every entry's
 * checksum, before using any of it.
 */
#ifndef _UAPI_LINUX_MDROUTE_WIRE_H
#define _UAPI_LINUX_MDROUTE_WIRE_H

#include <linux/types.h>

/*
 * Highest wire protocol version this header describes. Version 2 adds
 * MDR_INVAL_TRACK and struct mdr_wire_inval_ack (the pre-copy of moves).
 * Version 3 adds host authentication (MDR_OP_HOST_AUTH, the accept's
 * nonce on host connections) and the host registry (MDR_OP_HOST_*).
 * Version 4 adds the identity and state of each device to MDR_OP_DEV_LIST
 * replies (struct mdr_wire_device_ext).
 * Version 5 adds MDR_ST_NOT_LEADER, whose reply names the leader of a
 * replica group (struct mdr_wire_leader), and MDR_OP_GROUP_STATUS.
 * Version 6 adds online changes of a group's replica set
 * (MDR_OP_REPLICA_ADD, MDR_OP_REPLICA_REMOVE) and each replica's
 * membership in MDR_OP_GROUP_STATUS replies (struct mdr_wire_replica).
 * Version 7 adds epochs a host checks (struct mdr_wire_serving ends every
 * OK reply to OPEN, RENEW and ALLOC; struct mdr_wire_epoch_rec is READ
 * with every window of a group's table) and each replica's address for
 * hosts in MDR_OP_GROUP_STATUS replies (struct mdr_wire_replica_ext).
 */
#define MDR_WIRE_VERSION	7
/* The first version of struct mdr_wire_serving and the epoch record. */
#define MDR_WIRE_VERSION_EPOCH	7
/* Lowest version a peer built from this header still speaks. */
#define MDR_WIRE_VERSION_MIN	1

#define MDR_WIRE_CONN_MAGIC	0x5752444dU	/* "MDRW" as LE bytes */
#define MDR_WIRE_MSG_MAGIC	0x4d6d		/* "mM" as LE bytes */

#define MDR_WIRE_PORT		4791		/* default rdma_cm port */

/* Limits a peer can rely on, and refuse beyond. */
#define MDR_WIRE_MSG_MIN	256		/* every peer receives this much */
#define MDR_WIRE_MSG_MAX	65536		/* no message is larger */
#define MDR_WIRE_NAME_LEN	64		/* volume names, NUL-padded */
#define MDR_WIRE_SERIAL_LEN	40		/* device serial / WWID */
#define MDR_WIRE_IDENTITY_LEN	128		/* a disk's WWID or serial */
#define MDR_WIRE_EXTENT_SHIFT_MIN 16		/* 64 KiB */
#define MDR_WIRE_EXTENT_SHIFT_MAX 30		/* 1 GiB */
#define MDR_WIRE_EXTENT_SHIFT_DEFAULT 22	/* 4 MiB */
#define MDR_WIRE_READ_MAX	4096		/* bytes of entries per READ */

/* ---------------------------------------------------------------------- */
/* Connection establishment: rdma_cm private data (at most 56 bytes).     */

enum mdr_wire_role {
	MDR_ROLE_HOST	= 1,	/* a host's kernel: volumes, leases, READs */
	MDR_ROLE_ADMIN	= 2,	/* mdctl: admin RPCs, after MDR_OP_AUTH */
};

/**
 * struct mdr_wire_conn_req - private data of the connect request
 * @magic:	MDR_WIRE_CONN_MAGIC
 * @version_min: lowest protocol version the client speaks
 * @version_max: highest protocol version the client speaks
 * @role:	enum mdr_wire_role
 * @flags:	zero (no flags defined)
 * @tenant:	tenant whose volumes this connection reaches (hosts); 0 for
 *		admin connections
 * @host_id:	the host's identity, stable across reboots (hosts); a
 *		random id for admin connections
 * @queue_depth: most requests the client has outstanding at once
 * @recv_depth:	receive buffers the client keeps posted for mdnode's
 *		replies and pushes (>= queue_depth + push credits)
 * @max_msg:	largest message the client can receive (bytes, >= 256)
 * @reserved:	zero
 */
struct mdr_wire_conn_req {
	__le32 magic;
	__le16 version_min;
	__le16 version_max;
	__le16 role;
	__le16 flags;
	__le32 tenant;
	__le64 host_id;
	__le16 queue_depth;
	__le16 recv_depth;
	__le32 max_msg;
	__u8 reserved[24];
};

/**
 * struct mdr_wire_conn_rep - private data of the accept
 * @magic:	MDR_WIRE_CONN_MAGIC
 * @version:	negotiated: min(client version_max, mdnode's highest)
 * @flags:	zero
 * @queue_depth: requests the client may have outstanding (<= asked)
 * @push_credits: pushes mdnode has outstanding at once; <= recv_depth -
 *		queue_depth (the granted one), so recv_depth == queue_depth +
 *		push_credits is enough; >= 1 on host connections
 * @max_msg:	largest message mdnode can receive (bytes, >= 256)
 * @node_id:	the storage node's identity
 * @boot_id:	changes every time mdnode starts; a client that sees a new
 *		one knows that leases and opens were lost
 * @nonce:	random challenge: an admin client answers it in MDR_OP_AUTH,
 *		a host in MDR_OP_HOST_AUTH (version 3); zero on host
 *		connections of version 1 and 2
 */
struct mdr_wire_conn_rep {
	__le32 magic;
	__le16 version;
	__le16 flags;
	__le16 queue_depth;
	__le16 push_credits;
	__le32 max_msg;
	__le64 node_id;
	__le64 boot_id;
	__u8 nonce[16];
};

/**
 * struct mdr_wire_conn_rej - private data of a reject by mdnode
 * @magic:	MDR_WIRE_CONN_MAGIC
 * @version:	mdnode's highest version (on MDR_ST_VERSION)
 * @status:	enum mdr_wire_status: why
 */
struct mdr_wire_conn_rej {
	__le32 magic;
	__le16 version;
	__le16 status;
};

/* ---------------------------------------------------------------------- */
/* Messages.                                                              */

enum mdr_wire_opcode {
	/* host -> mdnode, on host connections */
	MDR_OP_OPEN		= 0x01,	/* open a volume, take a lease */
	MDR_OP_CLOSE		= 0x02,	/* close it, drop the lease */
	MDR_OP_RENEW		= 0x03,	/* renew leases */
	MDR_OP_ALLOC		= 0x04,	/* allocate an extent (first write) */
	MDR_OP_HOST_AUTH	= 0x05,	/* mutual proof of the host's key (v3) */
	/* mdnode -> host; the host replies with the same opcode as the ack */
	MDR_OP_INVALIDATE	= 0x10,	/* drop a range of entries */
	/* admin -> mdnode, on admin connections */
	MDR_OP_AUTH		= 0x20,	/* prove the admin key */
	MDR_OP_VOL_CREATE	= 0x21,
	MDR_OP_VOL_DELETE	= 0x22,
	MDR_OP_VOL_LIST		= 0x23,
	MDR_OP_VOL_INFO		= 0x24,
	MDR_OP_VOL_RESIZE	= 0x25,
	MDR_OP_DEV_LIST		= 0x26,
	MDR_OP_NODE_STATS	= 0x27,
	MDR_OP_MOVE		= 0x28,	/* move extents to another device */
	MDR_OP_DRAIN		= 0x29,	/* move every extent off a device */
	MDR_OP_HOST_ADD		= 0x2a,	/* register a host and its key (v3) */
	MDR_OP_HOST_REMOVE	= 0x2b,	/* forget a host (v3) */
	MDR_OP_HOST_LIST	= 0x2c,	/* the registered hosts (v3) */
	MDR_OP_GROUP_STATUS	= 0x2d,	/* a replica's view of its group (v5) */
	MDR_OP_REPLICA_ADD	= 0x2e,	/* a replica joins the group (v6) */
	MDR_OP_REPLICA_REMOVE	= 0x2f,	/* a replica leaves the group (v6) */
	/* any connection */
	MDR_OP_PING		= 0x30,
};

/*
 * Status of a reply (and of a rejected connection). Each side translates
 * them to and from its own errno values; the numbers are the protocol's.
 */
enum mdr_wire_status {
	MDR_ST_OK	= 0,
	MDR_ST_INVAL	= 1,	/* malformed or out-of-range request */
	MDR_ST_NOENT	= 2,	/* no such volume / extent / device */
	MDR_ST_EXIST	= 3,	/* volume name taken */
	MDR_ST_NOSPC	= 4,	/* no physical space left */
	MDR_ST_PERM	= 5,	/* not allowed (role, tenant, auth) */
	MDR_ST_BUSY	= 6,	/* volume open by hosts, device in use */
	MDR_ST_PROTO	= 7,	/* unknown opcode, bad length */
	MDR_ST_VERSION	= 8,	/* no common protocol version */
	MDR_ST_STALE	= 9,	/* lease expired or unknown: open again */
	MDR_ST_AGAIN	= 10,	/* transient (extent frozen): retry later */
	MDR_ST_IO	= 11,	/* mdnode could not make the change durable */
	MDR_ST_NOMEM	= 12,	/* resources exhausted on mdnode */
	MDR_ST_NOT_LEADER = 13,	/* a replica that does not lead (v5) */
	MDR_ST_MAX
};

#define MDR_WIRE_F_REPLY	0x0001	/* a reply or an ack */

/**
 * struct mdr_wire_hdr - leads every message
 * @magic:	MDR_WIRE_MSG_MAGIC
 * @opcode:	enum mdr_wire_opcode
 * @flags:	MDR_WIRE_F_*; other bits zero
 * @status:	replies: enum mdr_wire_status; requests and pushes: 0
 * @length:	bytes of the whole message, this header included; never more
 *		than was received, nor than the receiver's max_msg
 * @reserved:	zero
 * @req_id:	chosen by the sender of a request or push, echoed in its
 *		reply; unique among the sender's outstanding ones
 *
 * A reply whose status is not MDR_ST_OK is this header alone (length 24),
 * whatever the opcode; it echoes the request's opcode and req_id. The one
 * exception is MDR_ST_NOT_LEADER: the header, then struct mdr_wire_leader
 * (length 56).
 */
struct mdr_wire_hdr {
	__le16 magic;
	__le16 opcode;
	__le16 flags;
	__le16 status;
	__le32 length;
	__le32 reserved;
	__le64 req_id;
};

/*
 * Address families of the protocol's own (not the operating system's).
 */
enum mdr_wire_family {
	MDR_FAMILY_NONE	= 0,
	MDR_FAMILY_IPV4	= 4,
	MDR_FAMILY_IPV6	= 6,
};

/**
 * struct mdr_wire_leader - body of an MDR_ST_NOT_LEADER reply (version 5)
 * @epoch:	the epoch of the leader named; 0 when none is known
 * @replica:	the leading replica's id in its group; 0 when none is
 *		known (an election is on: ask this replica again later)
 * @port:	the leader's rdma_cm port for hosts and admins; 0 when none
 * @family:	enum mdr_wire_family; MDR_FAMILY_NONE when none is known
 * @reserved:	zero
 * @addr:	the leader's address: IPv4 in the first 4 bytes (the rest
 *		zero), or IPv6; network byte order; all zero when none
 *
 * A replica of a group that does not lead answers every request only a
 * leader serves (OPEN, RENEW, ALLOC, CLOSE, changes of volumes, hosts and
 * moves) with this, on connections of version 5 and later; older peers
 * get MDR_ST_AGAIN. What it names is its own latest knowledge, which may
 * be behind: the client connects there, and a replica that does not lead
 * either answers the same way.
 */
struct mdr_wire_leader {
	__le64 epoch;
	__le32 replica;
	__le16 port;
	__u8 family;
	__u8 reserved;
	__u8 addr[16];
};

/* ---------------------------------------------------------------------- */
/* Extent entries: what hosts READ from a volume's table.                 */

enum mdr_extent_state {
	MDR_EXT_UNALLOCATED	= 0,	/* no space yet: reads are zeros */
	MDR_EXT_MAPPED		= 1,	/* at dev_id, pstart */
	MDR_EXT_FROZEN		= 2,	/* moving: IO waits for the next gen */
	MDR_EXT_STATE_MAX
};

/**
 * struct mdr_wire_entry - where one extent of one volume lives
 * @generation:	grows with every change of this entry; starts at 1
 * @pstart:	first 512-byte sector of the extent on the device
 * @dev_id:	cluster-wide backing device id (0 when unallocated)
 * @state:	enum mdr_extent_state
 * @reserved:	zero
 * @crc:	CRC-32C (Castagnoli, as iSCSI: initial ~0, final xor ~0) of
 *		the volume id (__le64), the extent index (__le64) and the 28
 *		bytes of this entry before @crc, in that order
 *
 * Entry i of a volume is at table_addr + i * 32. mdnode writes an entry
 * as a whole, but a READ racing that write may see a mix: the reader
 * checks @crc, which also covers where the entry belongs, so a torn,
 * misaddressed or foreign entry is detected, and retries; an entry whose
 * @generation is older than one the reader has seen is stale.
 */
struct mdr_wire_entry {
	__le64 generation;
	__le64 pstart;
	__le32 dev_id;
	__u8 state;
	__u8 reserved[3];
	__le32 reserved2;
	__le32 crc;
};

/* ---------------------------------------------------------------------- */
/* Host RPCs.                                                             */

#define MDR_OPEN_F_BY_NAME	0x0001	/* look the volume up by @name */

/**
 * struct mdr_wire_open_req - MDR_OP_OPEN
 * @volume_id:	the volume (unless MDR_OPEN_F_BY_NAME)
 * @flags:	MDR_OPEN_F_*
 * @reserved:	zero
 * @name:	volume name, NUL-padded (with MDR_OPEN_F_BY_NAME)
 */
struct mdr_wire_open_req {
	struct mdr_wire_hdr hdr;
	__le64 volume_id;
	__le32 flags;
	__le32 reserved;
	char name[MDR_WIRE_NAME_LEN];
};

/* Leases mdnode grants, and hosts accept (ms). */
#define MDR_WIRE_LEASE_MS_MIN	1000
#define MDR_WIRE_LEASE_MS_MAX	60000

/**
 * struct mdr_wire_open_rep - reply to MDR_OP_OPEN
 * @volume_id:	the volume
 * @size:	bytes; a multiple of 4096
 * @table_addr:	remote address of entry 0 of the volume's table
 * @table_len:	bytes of the table: nr_extents * 32
 * @table_rkey:	rkey of the table (remote READ only)
 * @extent_shift: log2 of the extent size in bytes
 * @lease_ms:	the lease just granted lasts this long from when the
 *		request was sent; renew well before. MDR_WIRE_LEASE_MS_MIN
 *		to MDR_WIRE_LEASE_MS_MAX: a host refuses any other
 * @flags:	zero
 * @generation:	volume generation: grows on resize
 * @name:	volume name, NUL-padded
 */
struct mdr_wire_open_rep {
	struct mdr_wire_hdr hdr;
	__le64 volume_id;
	__le64 size;
	__le64 table_addr;
	__le64 table_len;
	__le32 table_rkey;
	__le32 extent_shift;
	__le32 lease_ms;
	__le32 flags;
	__le64 generation;
	char name[MDR_WIRE_NAME_LEN];
};

/**
 * struct mdr_wire_vol_req - MDR_OP_CLOSE, MDR_OP_RENEW
 * @volume_id:	the volume; for RENEW, 0 renews every lease of the volumes
 *		opened on this connection, all or none
 *
 * RENEW of one volume answers MDR_ST_STALE when that volume's lease is
 * lost. RENEW of volume 0 answers MDR_ST_STALE when at least one lease is
 * lost, without saying which, and renews none: renew them one by one to
 * find out. An OK to RENEW of volume 0 does not prove every lease alive
 * (one mdnode already expired is no longer counted): a host keeps its own
 * clock of each lease.
 */
struct mdr_wire_vol_req {
	struct mdr_wire_hdr hdr;
	__le64 volume_id;
};

/**
 * struct mdr_wire_renew_rep - reply to MDR_OP_RENEW
 * @lease_ms:	the renewed leases last this long from when the request was
 *		sent; a lease mdnode no longer holds is reported by
 *		MDR_ST_STALE (the host opens again)
 * @reserved:	zero
 */
struct mdr_wire_renew_rep {
	struct mdr_wire_hdr hdr;
	__le32 lease_ms;
	__le32 reserved;
};

/**
 * struct mdr_wire_alloc_req - MDR_OP_ALLOC
 * @volume_id:	the volume
 * @index:	extent index
 *
 * Idempotent: allocating a mapped extent returns its entry. mdnode replies
 * once the allocation is durable and every other lease holder of the
 * volume has acknowledged its invalidation (or lost its lease).
 */
struct mdr_wire_alloc_req {
	struct mdr_wire_hdr hdr;
	__le64 volume_id;
	__le64 index;
};

/**
 * struct mdr_wire_alloc_rep - reply to MDR_OP_ALLOC
 * @volume_id:	the volume
 * @index:	extent index
 * @entry:	the extent's entry, as the table now holds it
 */
struct mdr_wire_alloc_rep {
	struct mdr_wire_hdr hdr;
	__le64 volume_id;
	__le64 index;
	struct mdr_wire_entry entry;
};

#define MDR_WIRE_EPOCH_MAGIC	0x4550524dU	/* "MRPE" as LE bytes */

/**
 * struct mdr_wire_serving - who answered: ends every MDR_ST_OK reply to
 * OPEN, RENEW and ALLOC on version 7 and later
 * @epoch:	the epoch of the leader that answered; 0 for a node of its
 *		own (not a replica of a group)
 * @record_addr: remote address of its epoch record (struct
 *		mdr_wire_epoch_rec); 0 with @epoch 0
 * @record_rkey: rkey of the record (remote READ only); 0 with @epoch 0
 * @reserved:	zero
 *
 * One connection is served at one epoch: every such reply on it carries
 * the same three values, and a host ends a connection whose values
 * change. A host never uses a reply of an epoch below the highest it has
 * seen from the group: that replica was replaced, and what it serves may
 * be stale (Documentation/wire-protocol.md, "Epochs").
 */
struct mdr_wire_serving {
	__le64 epoch;
	__le64 record_addr;
	__le32 record_rkey;
	__le32 reserved;
};

/**
 * struct mdr_wire_epoch_rec - a group leader's epoch record, READ by hosts
 * @magic:	MDR_WIRE_EPOCH_MAGIC
 * @replica:	the replica's id in its group
 * @group:	the group
 * @epoch:	the epoch it serves at; 0 once it stopped serving (it writes
 *		0 before it answers anything as a replica that does not lead)
 * @reserved:	zero
 * @crc:	CRC-32C (as struct mdr_wire_entry's) of the 28 bytes before
 *
 * A host READs it in the same post as, and after, every window of a
 * table: the responder executes the two in order, so a record that still
 * shows the connection's epoch proves that the window was read while the
 * replica served at that epoch. A record that does not verify was torn by
 * a write, and is read again with the window.
 */
struct mdr_wire_epoch_rec {
	__le32 magic;
	__le32 replica;
	__le64 group;
	__le64 epoch;
	__le32 reserved;
	__le32 crc;
};

/* OK replies of version 7 and later: the version 6 reply, then this. */
struct mdr_wire_open_rep_v7 {
	struct mdr_wire_open_rep rep;
	struct mdr_wire_serving serving;
};

struct mdr_wire_renew_rep_v7 {
	struct mdr_wire_renew_rep rep;
	struct mdr_wire_serving serving;
};

struct mdr_wire_alloc_rep_v7 {
	struct mdr_wire_alloc_rep rep;
	struct mdr_wire_serving serving;
};

/* ---------------------------------------------------------------------- */
/* Pushes from mdnode.                                                    */

enum mdr_inval_reason {
	/* entries changed, no drain: an allocation, or the end of a move */
	MDR_INVAL_ALLOC		= 1,
	MDR_INVAL_MOVE		= 2,	/* extents move: drain before the ack */
	MDR_INVAL_DELETE	= 3,	/* volume deleted or shrunk */
	/* version >= 2: a move is about to copy the extent: note writes */
	MDR_INVAL_TRACK		= 4,
};

/**
 * struct mdr_wire_inval - MDR_OP_INVALIDATE (push), and its ack (reply)
 * @volume_id:	the volume
 * @first:	first extent index of the range
 * @count:	extents in the range (>= 1)
 * @generation:	the entries of the range will have at least this
 *		generation; the host never again uses an older one
 * @reason:	enum mdr_inval_reason
 * @reserved:	zero
 *
 * The host blocks new IO to the range, waits for in-flight IO to it to
 * complete when @reason asks a drain, drops the entries, and acks with
 * the same message, MDR_WIRE_F_REPLY set and the push's req_id.
 */
struct mdr_wire_inval {
	struct mdr_wire_hdr hdr;
	__le64 volume_id;
	__le64 first;
	__le64 count;
	__le64 generation;
	__le32 reason;
	__le32 reserved;
};

/*
 * MDR_INVAL_TRACK (version >= 2, @count 1, @generation the entry's current
 * one): mdnode is about to copy the extent while hosts still use it (the
 * pre-copy of a move). The host keeps its entry and its IO going, starts
 * noting which granules of the extent it writes, and acks once every
 * write to the extent submitted before the push has completed: what it
 * writes after the ack is noted. The noting ends with the MDR_INVAL_MOVE
 * of the extent, whose ack carries it, or with any other invalidation of
 * the extent. A host may stop noting at any time (it then acks the move
 * without MDR_INVAL_ACK_F_TRACKED); mdnode copies the whole extent again.
 */

/* A granule of an extent: 1/64th of it, but at least 4 KiB. */
#define MDR_WIRE_TRACK_GRANULES	64
#define MDR_WIRE_TRACK_MIN_SHIFT 12

/* struct mdr_wire_inval_ack.flags */
#define MDR_INVAL_ACK_F_TRACKED	(1U << 0)	/* @dirty is valid */

/**
 * struct mdr_wire_inval_ack - the ack of a push, on version >= 2
 * @inval:	the push, as it came, MDR_WIRE_F_REPLY set, length 80
 * @flags:	MDR_INVAL_ACK_F_*; other bits zero
 * @reserved:	zero
 * @dirty:	acks of MDR_INVAL_MOVE with MDR_INVAL_ACK_F_TRACKED: bit i
 *		set when the host wrote granule i of the extent (bytes
 *		[i * g, (i + 1) * g) with g = max(extent size / 64, 4 KiB))
 *		since it acked the extent's MDR_INVAL_TRACK; zero otherwise
 *
 * On version 1 the ack is struct mdr_wire_inval itself (64 bytes); on
 * version 2 it is this. mdnode reads @dirty only from the ack of a MOVE
 * push to a host that acked the TRACK push of the same move.
 */
struct mdr_wire_inval_ack {
	struct mdr_wire_inval inval;
	__le32 flags;
	__le32 reserved;
	__le64 dirty;
};

/* ---------------------------------------------------------------------- */
/* Host authentication (version 3).                                       */

#define MDR_HOST_KEY_MIN	16	/* bytes of a host's secret */
#define MDR_HOST_KEY_MAX	64

/**
 * struct mdr_wire_host_auth_req - MDR_OP_HOST_AUTH, the host's proof
 * @nonce:	the host's random challenge to mdnode (not all zero)
 * @mac:	HMAC-SHA256 keyed with the host's secret over struct
 *		mdr_wire_auth_transcript with @label MDR_AUTH_LABEL_HOST
 * Reply: struct mdr_wire_host_auth_rep (OK), or a bare header with
 * MDR_ST_PERM (unknown host, another tenant, wrong proof), after which
 * mdnode disconnects.
 */
struct mdr_wire_host_auth_req {
	struct mdr_wire_hdr hdr;
	__u8 nonce[16];
	__u8 mac[32];
};

/**
 * struct mdr_wire_host_auth_rep - reply to MDR_OP_HOST_AUTH, mdnode's proof
 * @mac:	HMAC-SHA256 keyed with the host's secret over struct
 *		mdr_wire_auth_transcript with @label MDR_AUTH_LABEL_NODE
 */
struct mdr_wire_host_auth_rep {
	struct mdr_wire_hdr hdr;
	__u8 mac[32];
};

#define MDR_AUTH_LABEL_HOST	"mdroute-host-v3"	/* 15 + NUL = 16 bytes */
#define MDR_AUTH_LABEL_NODE	"mdroute-node-v3"

/**
 * struct mdr_wire_auth_transcript - what both proofs of a host connection
 * are computed over; never sent. Each side fills it from what it sent and
 * received on this connection, so a proof is good for one connection only:
 * another node nonce, host nonce, boot or parameter gives another MAC.
 * @label:	MDR_AUTH_LABEL_HOST or MDR_AUTH_LABEL_NODE, NUL-padded: a
 *		proof of one side is never one of the other
 * @node_nonce:	mdr_wire_conn_rep.nonce
 * @host_nonce:	mdr_wire_host_auth_req.nonce
 * @host_id:	mdr_wire_conn_req.host_id
 * @node_id:	mdr_wire_conn_rep.node_id
 * @boot_id:	mdr_wire_conn_rep.boot_id
 * @tenant:	mdr_wire_conn_req.tenant
 * @version:	mdr_wire_conn_rep.version (negotiated)
 * @role:	MDR_ROLE_HOST
 * @host_qpn:	the host's QP number on this connection, as rdma_cm gives
 *		it to each side (the host's own QP; the node's connect request
 *		event)
 * @node_qpn:	mdnode's QP number on it (mdnode's own QP; the host's
 *		ESTABLISHED event): a relay between the two holds two
 *		connections, so the proofs it passes on name QPs neither end
 *		sees on its own
 */
struct mdr_wire_auth_transcript {
	__u8 label[16];
	__u8 node_nonce[16];
	__u8 host_nonce[16];
	__le64 host_id;
	__le64 node_id;
	__le64 boot_id;
	__le32 tenant;
	__le16 version;
	__le16 role;
	__le32 host_qpn;
	__le32 node_qpn;
};

/* ---------------------------------------------------------------------- */
/* Admin RPCs.                                                            */

/**
 * struct mdr_wire_auth_req - MDR_OP_AUTH
 * @mac:	HMAC-SHA256 keyed with the node's admin key over the nonce of
 *		the accept followed by the connect request's host_id (__le64)
 */
struct mdr_wire_auth_req {
	struct mdr_wire_hdr hdr;
	__u8 mac[32];
};

/**
 * struct mdr_wire_volume - a volume, as admin RPCs describe it
 * @volume_id:	assigned by mdnode at create, never reused
 * @size:	bytes
 * @allocated:	extents with physical space
 * @extent_shift: log2 of the extent size in bytes
 * @tenant:	owning tenant
 * @open_count:	hosts that hold a lease on it
 * @reserved:	zero
 * @name:	NUL-padded
 */
struct mdr_wire_volume {
	__le64 volume_id;
	__le64 size;
	__le64 allocated;
	__le32 extent_shift;
	__le32 tenant;
	__le32 open_count;
	__le32 reserved;
	char name[MDR_WIRE_NAME_LEN];
};

/**
 * struct mdr_wire_vol_create_req - MDR_OP_VOL_CREATE
 * @size:	bytes; a multiple of 4096, > 0
 * @extent_shift: log2 extent size (0: default); MDR_WIRE_EXTENT_SHIFT_*
 * @tenant:	owning tenant
 * @name:	NUL-padded; [A-Za-z0-9._-], 1 to 63 characters
 * Reply: struct mdr_wire_vol_rep.
 */
struct mdr_wire_vol_create_req {
	struct mdr_wire_hdr hdr;
	__le64 size;
	__le32 extent_shift;
	__le32 tenant;
	char name[MDR_WIRE_NAME_LEN];
};

/**
 * struct mdr_wire_vol_name_req - MDR_OP_VOL_DELETE, MDR_OP_VOL_INFO,
 * MDR_OP_VOL_RESIZE
 * @size:	RESIZE: the new size in bytes; otherwise zero
 * @name:	the volume, NUL-padded
 */
struct mdr_wire_vol_name_req {
	struct mdr_wire_hdr hdr;
	__le64 size;
	char name[MDR_WIRE_NAME_LEN];
};

/**
 * struct mdr_wire_dev_extents - extents of a volume on one device
 * @dev_id:	the device
 * @reserved:	zero
 * @extents:	extents of the volume allocated on it
 */
struct mdr_wire_dev_extents {
	__le32 dev_id;
	__le32 reserved;
	__le64 extents;
};

/**
 * struct mdr_wire_vol_rep - reply to VOL_CREATE, VOL_INFO, VOL_RESIZE
 * @vol:	the volume as it is now
 * @nr_devs:	entries in @devs: extents allocated per device
 * @reserved:	zero
 * @devs:	extents per device
 */
struct mdr_wire_vol_rep {
	struct mdr_wire_hdr hdr;
	struct mdr_wire_volume vol;
	__le32 nr_devs;
	__le32 reserved;
	struct mdr_wire_dev_extents devs[];
};

/**
 * struct mdr_wire_list_req - MDR_OP_VOL_LIST, MDR_OP_DEV_LIST
 * @cursor:	0 for the first page, then the reply's @next
 */
struct mdr_wire_list_req {
	struct mdr_wire_hdr hdr;
	__le64 cursor;
};

/**
 * struct mdr_wire_vol_list_rep - reply to MDR_OP_VOL_LIST
 * @next:	cursor of the next page; 0 when this is the last
 * @count:	volumes in @vols (as many as fit the receiver's max_msg)
 * @reserved:	zero
 * @vols:	in volume id order
 */
struct mdr_wire_vol_list_rep {
	struct mdr_wire_hdr hdr;
	__le64 next;
	__le32 count;
	__le32 reserved;
	struct mdr_wire_volume vols[];
};

/**
 * struct mdr_wire_device - a backing device of the storage node
 * @dev_id:	cluster-wide id
 * @reserved:	zero
 * @size:	bytes
 * @used:	bytes allocated to extents
 * @serial:	serial number or WWID, NUL-padded
 */
struct mdr_wire_device {
	__le32 dev_id;
	__le32 reserved;
	__le64 size;
	__le64 used;
	char serial[MDR_WIRE_SERIAL_LEN];
};

/* struct mdr_wire_device_ext.state */
enum mdr_dev_state {
	MDR_DEV_ONLINE		= 0,	/* configured: the disk recorded for its id */
	MDR_DEV_MISSING		= 1,	/* recorded, not configured: no allocation */
	MDR_DEV_STATE_MAX
};

/**
 * struct mdr_wire_device_ext - a backing device, from version 4
 * @dev:	as before version 4 (a missing device: the size recorded, no
 *		space used, no serial)
 * @state:	enum mdr_dev_state
 * @reserved:	zero
 * @identity:	the WWID, else the serial, of the disk mdnode recorded for
 *		the id, NUL-padded
 */
struct mdr_wire_device_ext {
	struct mdr_wire_device dev;
	__le32 state;
	__le32 reserved;
	char identity[MDR_WIRE_IDENTITY_LEN];
};

/**
 * struct mdr_wire_dev_list_rep - reply to MDR_OP_DEV_LIST
 * @next:	cursor of the next page; 0 when this is the last
 * @count:	devices in @devs
 * @reserved:	zero
 * @devs:	in device id order: struct mdr_wire_device on a connection of
 *		version 1 to 3, struct mdr_wire_device_ext from version 4
 */
struct mdr_wire_dev_list_rep {
	struct mdr_wire_hdr hdr;
	__le64 next;
	__le32 count;
	__le32 reserved;
	struct mdr_wire_device devs[];
};

/**
 * struct mdr_wire_node_stats_rep - reply to MDR_OP_NODE_STATS
 * Counters since mdnode started, each a __le64; later versions append.
 */
struct mdr_wire_node_stats_rep {
	struct mdr_wire_hdr hdr;
	__le64 boot_id;
	__le64 uptime_ms;
	__le64 connections;	/* open now */
	__le64 volumes;
	__le64 requests;	/* RPCs served */
	__le64 errors;		/* RPCs answered with a non-OK status */
	__le64 bad_messages;	/* dropped as malformed */
	__le64 journal_records;
	__le64 journal_bytes;
	__le64 journal_syncs;
	__le64 invalidations;	/* pushes sent */
	__le64 lease_expiries;
};

/*
 * Appended to struct mdr_wire_node_stats_rep by mdnode since the first
 * migration release (the reply is then 168 bytes); a reply of 120 bytes
 * comes from a node without it. Counters since mdnode started.
 */
struct mdr_wire_node_stats_mig {
	__le64 moves_active;	/* extent moves in progress */
	__le64 moves_done;	/* published at their new place */
	__le64 moves_failed;	/* rolled back (copy or journal error) */
	__le64 move_bytes;	/* bytes copied by moves that were published */
	__le64 stall_max_us;	/* longest freeze-to-publish of one extent */
	__le64 stall_total_us;	/* sum of them */
};

/*
 * Appended after struct mdr_wire_node_stats_mig by mdnode since push
 * credits are enforced (the reply is then 176 bytes); a reply of 168 bytes
 * comes from a node without it. Counters since mdnode started.
 */
struct mdr_wire_node_stats_push {
	__le64 push_timeouts;	/* connections cut for a push not acked */
};

/*
 * Appended after struct mdr_wire_node_stats_push by mdnode since it counts
 * what moves copy before and under the freeze (the reply is then 192
 * bytes); a reply of 176 bytes comes from a node without it. Counters since
 * mdnode started, of the moves published.
 */
struct mdr_wire_node_stats_copy {
	__le64 precopy_bytes;	/* copied by a pre-copy, before the freeze */
	__le64 freeze_bytes;	/* copied under the freeze */
};

/*
 * Appended after struct mdr_wire_node_stats_copy by mdnode since hosts
 * authenticate (version 3; the reply is then 208 bytes); a reply of 192
 * bytes comes from a node without it. Counters since mdnode started.
 */
struct mdr_wire_node_stats_auth {
	__le64 auth_failures;	/* host or admin proofs refused, or missing */
	__le64 hosts;		/* in the registry now */
};

/*
 * Appended after struct mdr_wire_node_stats_auth by mdnode since it caps
 * connections (the reply is then 224 bytes); a reply of 208 bytes comes
 * from a node without it. Counters since mdnode started.
 */
struct mdr_wire_node_stats_limits {
	__le64 conn_refused;	/* connect requests refused: private data, version, caps */
	__le64 fences;		/* hosts fenced for owing an ack a lease long */
};

/* ---------------------------------------------------------------------- */
/* Migration (admin).                                                     */

#define MDR_MOVE_F_BY_NAME	0x0001	/* look the volume up by @name */
#define MDR_WIRE_MOVE_MAX	64	/* extents per MDR_OP_MOVE */

/**
 * struct mdr_wire_move_req - MDR_OP_MOVE
 * @volume_id:	the volume (unless MDR_MOVE_F_BY_NAME; then zero)
 * @first:	first extent index
 * @count:	extents, 1 ..= MDR_WIRE_MOVE_MAX; each is mapped, and on
 *		another device than @to_dev
 * @to_dev:	the device to move them to (non-zero)
 * @flags:	MDR_MOVE_F_*
 * @reserved:	zero
 * @name:	volume name, NUL-padded (with MDR_MOVE_F_BY_NAME; else zero)
 *
 * mdnode moves the extents one after another and replies when the last
 * one is published at its new place, or at the first failure (an error
 * reply; the extents moved before it stay moved). Each move freezes the
 * extent (hosts wait), invalidates it at every lease holder with
 * MDR_INVAL_MOVE and waits for the acks or for the leases to expire,
 * copies it, and publishes it with MDR_INVAL_ALLOC.
 * Reply: struct mdr_wire_move_rep with one element per extent.
 */
struct mdr_wire_move_req {
	struct mdr_wire_hdr hdr;
	__le64 volume_id;
	__le64 first;
	__le32 count;
	__le32 to_dev;
	__le32 flags;
	__le32 reserved;
	char name[MDR_WIRE_NAME_LEN];
};

/**
 * struct mdr_wire_move_extent - one extent moved
 * @index:	extent index
 * @old_pstart:	first 512-byte sector of the old place, now free
 * @new_pstart:	first 512-byte sector of the new place
 * @old_dev:	device of the old place
 * @new_dev:	device of the new place
 * @generation:	of the entry as published at the new place
 * @stall_us:	from the freeze to the publication: how long IO to the
 *		extent waited at most
 * @reserved:	zero
 */
struct mdr_wire_move_extent {
	__le64 index;
	__le64 old_pstart;
	__le64 new_pstart;
	__le32 old_dev;
	__le32 new_dev;
	__le64 generation;
	__le32 stall_us;
	__le32 reserved;
};

/**
 * struct mdr_wire_move_rep - reply to MDR_OP_MOVE
 * @volume_id:	the volume
 * @bytes:	bytes copied
 * @stall_max_us: the longest @stall_us of the extents
 * @stall_total_us: the sum of them
 * @count:	elements in @extents: the request's count
 * @reserved:	zero
 * @extents:	in index order
 */
struct mdr_wire_move_rep {
	struct mdr_wire_hdr hdr;
	__le64 volume_id;
	__le64 bytes;
	__le64 stall_max_us;
	__le64 stall_total_us;
	__le32 count;
	__le32 reserved;
	struct mdr_wire_move_extent extents[];
};

/**
 * struct mdr_wire_drain_req - MDR_OP_DRAIN
 * @dev_id:	the device to empty (non-zero)
 * @to_dev:	where to: a device other than @dev_id, or 0 for the other
 *		device with the most free space, chosen per extent
 *
 * Moves every extent of every volume that is mapped on @dev_id, one after
 * another, as MDR_OP_MOVE does, and stops at the first failure. Extents
 * allocated on @dev_id meanwhile are moved too, as long as the drain runs.
 */
struct mdr_wire_drain_req {
	struct mdr_wire_hdr hdr;
	__le32 dev_id;
	__le32 to_dev;
};

/**
 * struct mdr_wire_drain_rep - reply to MDR_OP_DRAIN
 * @dev_id:	the device
 * @status:	enum mdr_wire_status of the move that failed and stopped the
 *		drain; MDR_ST_OK when none did
 * @moved:	extents moved off the device
 * @remaining:	extents still mapped on it (0: drained)
 * @bytes:	bytes copied
 * @stall_max_us: the longest freeze-to-publish of one extent
 * @stall_total_us: the sum of them
 */
struct mdr_wire_drain_rep {
	struct mdr_wire_hdr hdr;
	__le32 dev_id;
	__le32 status;
	__le64 moved;
	__le64 remaining;
	__le64 bytes;
	__le64 stall_max_us;
	__le64 stall_total_us;
};

/* ---------------------------------------------------------------------- */
/* The host registry (admin, version 3).                                  */

#define MDR_HOST_ADD_F_REPLACE	0x0001	/* replace the key of a known host */
#define MDR_AUTH_LABEL_WRAP	"mdroute-wrap-v3"	/* 15 + NUL = 16 bytes */
#define MDR_AUTH_LABEL_HOST_ADD	"mdroute-hadd-v3"

/**
 * struct mdr_wire_host_add_req - MDR_OP_HOST_ADD
 * @host_id:	the host (non-zero), as its connect requests name it
 * @tenant:	the one tenant its connections may serve (non-zero)
 * @flags:	MDR_HOST_ADD_F_*
 * @key_len:	bytes of the secret, MDR_HOST_KEY_MIN ..= MDR_HOST_KEY_MAX
 * @nonce:	this request's own, random: no two requests of a connection
 *		share a keystream
 * @wrapped:	the secret, zero-padded to 64 bytes, XORed with a keystream:
 *		bytes 32 * i ..= 32 * i + 31 are HMAC-SHA256, keyed with the
 *		admin key, over MDR_AUTH_LABEL_WRAP (16 bytes) || the accept's
 *		nonce (16) || @nonce (16) || @host_id (__le64) || i (one
 *		byte), for i = 0, 1. The padding must unwrap to zero.
 * @mac:	HMAC-SHA256, keyed with the admin key, over
 *		MDR_AUTH_LABEL_HOST_ADD (16 bytes) || the accept's nonce (16)
 *		|| the 96 bytes of this request from @host_id to the end of
 *		@wrapped: who holds the admin key chose every field
 * Reply: a bare header. MDR_ST_EXIST: the host is known (and no
 * MDR_HOST_ADD_F_REPLACE); MDR_ST_PERM: @mac is wrong; MDR_ST_INVAL: a
 * field breaks a rule above. With REPLACE the tenant must stay the same;
 * connections already authenticated stay, new ones need the new key.
 */
struct mdr_wire_host_add_req {
	struct mdr_wire_hdr hdr;
	__le64 host_id;
	__le32 tenant;
	__le16 flags;
	__le16 key_len;
	__u8 nonce[16];
	__u8 wrapped[MDR_HOST_KEY_MAX];
	__u8 mac[32];
};

/**
 * struct mdr_wire_host_remove_req - MDR_OP_HOST_REMOVE
 * @host_id:	the host
 * Reply: a bare header (MDR_ST_NOENT: no such host). Its connections are
 * closed at once; its leases end when they expire, as those of a host that
 * went silent (a move waits for them), and are never renewed.
 */
struct mdr_wire_host_remove_req {
	struct mdr_wire_hdr hdr;
	__le64 host_id;
};

/**
 * struct mdr_wire_host - a host, as MDR_OP_HOST_LIST describes it
 * @host_id:	the host
 * @tenant:	its tenant
 * @connections: its authenticated connections now
 * @leases:	the leases it holds now
 * @reserved:	zero
 */
struct mdr_wire_host {
	__le64 host_id;
	__le32 tenant;
	__le32 connections;
	__le32 leases;
	__le32 reserved;
};

/**
 * struct mdr_wire_host_list_rep - reply to MDR_OP_HOST_LIST
 * (request: struct mdr_wire_list_req; @cursor is a host id)
 * @next:	the first host id not in this page; 0 on the last page
 * @count:	elements in @hosts
 * @reserved:	zero
 * @hosts:	in host id order; never a key
 */
struct mdr_wire_host_list_rep {
	struct mdr_wire_hdr hdr;
	__le64 next;
	__le32 count;
	__le32 reserved;
	struct mdr_wire_host hosts[];
};

/* ---------------------------------------------------------------------- */
/* A replica group (version 5; changes of its set, version 6).            */

enum mdr_replica_role {
	MDR_REPLICA_NONE	= 0,	/* a node of its own: no group */
	MDR_REPLICA_FOLLOWER	= 1,
	MDR_REPLICA_LEADER	= 2,	/* leads and serves */
	MDR_REPLICA_TAKING_OVER	= 3,	/* leads, does not serve yet */
	MDR_REPLICA_STOPPED	= 4,	/* led and stopped: its process ends */
	MDR_REPLICA_ROLE_MAX
};

/* A replica as the one answering sees it (a follower sees only itself). */
enum mdr_replica_state {
	MDR_PEER_UNKNOWN	= 0,	/* not seen from here */
	MDR_PEER_SELF		= 1,	/* the replica answering */
	MDR_PEER_CONNECTING	= 2,	/* the leader has no log state of it */
	MDR_PEER_STREAMING	= 3,	/* takes the leader's batches */
	MDR_PEER_BACKLOGGED	= 4,	/* behind: its ring is full */
	MDR_PEER_NEEDS_CHECKPOINT = 5,	/* behind the leader's window */
	MDR_PEER_DROPPED	= 6,	/* its connection failed */
	MDR_PEER_STATE_MAX
};

/*
 * A replica's place in the set (version 6). The set changes one replica at
 * a time: an added replica is a learner until it has caught up, then
 * joining; a removed one is leaving. While a change runs, a majority
 * counts only if it is one of the set before the change and one of the
 * set after it, until etcd holds the new set.
 */
enum mdr_replica_membership {
	MDR_MEMBER_VOTER	= 0,	/* counts for every majority */
	MDR_MEMBER_LEARNER	= 1,	/* joining: takes the log, no vote */
	MDR_MEMBER_JOINING	= 2,	/* in both sets until etcd has it */
	MDR_MEMBER_LEAVING	= 3,	/* likewise, leaving */
	MDR_MEMBER_MAX
};

/**
 * struct mdr_wire_replica - one replica of the set, in MDR_OP_GROUP_STATUS
 * @durable:	the last index of its log known durable there: its own for
 *		MDR_PEER_SELF, the last DURABLE it sent for the leader's
 *		view of a follower; 0 when not known
 * @id:		its replica id, non-zero
 * @state:	enum mdr_replica_state
 * @port:	its log listener's port
 * @family:	enum mdr_wire_family of @addr, its log listener's address
 * @membership:	enum mdr_replica_membership (version 6; zero before)
 * @reserved:	zero
 * @addr:	IPv4 in the first 4 bytes, the rest zero; or IPv6
 */
struct mdr_wire_replica {
	__le64 durable;
	__le32 id;
	__le16 state;
	__le16 port;
	__u8 family;
	__u8 membership;
	__u8 reserved[6];
	__u8 addr[16];
};

/**
 * struct mdr_wire_replica_ext - one replica of the set, version 7
 * @replica:	as before version 7 (its log listener)
 * @host_port:	its rdma_cm port for hosts and admins; 0 when not known
 * @host_family: enum mdr_wire_family of @host_addr; MDR_FAMILY_NONE when
 *		not known
 * @reserved:	zero
 * @host_addr:	its address for hosts and admins: IPv4 in the first 4
 *		bytes, the rest zero; or IPv6
 *
 * A host attaching a volume of the group learns from it where each
 * replica serves, to follow the leader when it changes.
 */
struct mdr_wire_replica_ext {
	struct mdr_wire_replica replica;
	__le16 host_port;
	__u8 host_family;
	__u8 reserved[5];
	__u8 host_addr[16];
};

/**
 * struct mdr_wire_group_status_rep - reply to MDR_OP_GROUP_STATUS
 * (request: a bare header; any replica answers, leader or not)
 * @group:	the group; 0 for a node of its own (then every other field
 *		is zero and @count 0)
 * @epoch:	the epoch of the leader it knows; 0 when none
 * @last_index:	its log's last record
 * @commit_index: the leader's commit index; a follower's applied index
 * @self:	its replica id
 * @leader:	the leader's replica id as it knows it; 0 when none
 * @role:	enum mdr_replica_role
 * @count:	elements in @replicas
 * @reserved:	zero
 * @replicas:	the replica set, in id order, itself among them; on
 *		version 7 and later each element is struct
 *		mdr_wire_replica_ext (64 bytes), before it struct
 *		mdr_wire_replica (40 bytes)
 */
struct mdr_wire_group_status_rep {
	struct mdr_wire_hdr hdr;
	__le64 group;
	__le64 epoch;
	__le64 last_index;
	__le64 commit_index;
	__le32 self;
	__le32 leader;
	__le16 role;
	__le16 count;
	__le32 reserved;
	struct mdr_wire_replica replicas[];
};

/**
 * struct mdr_wire_replica_change_req - MDR_OP_REPLICA_ADD, _REMOVE (v6)
 * @id:		the replica, non-zero
 * @port:	ADD: its log listener's port, non-zero; REMOVE: zero
 * @family:	ADD: MDR_FAMILY_IPV4 or MDR_FAMILY_IPV6; REMOVE: zero
 * @reserved:	zero
 * @addr:	ADD: its log listener's address, as in struct
 *		mdr_wire_leader; REMOVE: all zero
 *
 * Changes the replica set of the group by one replica, at its leader: a
 * replica that does not lead answers MDR_ST_NOT_LEADER, a node of its own
 * MDR_ST_INVAL. Reply: a bare header once the change is begun: ADD takes
 * the replica as a learner, REMOVE begins its leaving; MDR_OP_GROUP_STATUS
 * shows how it goes on. MDR_ST_BUSY: another change runs; MDR_ST_EXIST: an
 * ADD of a member; MDR_ST_NOENT: a REMOVE of none; MDR_ST_INVAL: the
 * leader's own removal, an address no replica could listen on, or a group
 * left below three; MDR_ST_NOSPC: a group past its largest size.
 */
struct mdr_wire_replica_change_req {
	struct mdr_wire_hdr hdr;
	__le32 id;
	__le16 port;
	__u8 family;
	__u8 reserved;
	__u8 addr[16];
};

/* ---------------------------------------------------------------------- */
/* Layout checks: sizes and offsets are the protocol.                     */

#ifdef __cplusplus
#define MDR_WIRE_ASSERT static_assert
#else
#define MDR_WIRE_ASSERT _Static_assert
#endif
#define MDR_WIRE_OFF(type, field) __builtin_offsetof(struct type, field)

MDR_WIRE_ASSERT(sizeof(struct mdr_wire_conn_req) == 56,
		"connect private data is at most 56 bytes");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_conn_rep) == 48, "conn_rep");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_conn_rej) == 8, "conn_rej");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_hdr) == 24, "hdr");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_leader) == 32, "leader");
MDR_WIRE_ASSERT(MDR_WIRE_OFF(mdr_wire_hdr, length) == 8, "hdr.length");
MDR_WIRE_ASSERT(MDR_WIRE_OFF(mdr_wire_hdr, req_id) == 16, "hdr.req_id");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_entry) == 32, "entry");
MDR_WIRE_ASSERT(MDR_WIRE_OFF(mdr_wire_entry, crc) == 28, "entry.crc");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_open_req) == 104, "open_req");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_open_rep) == 144, "open_rep");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_vol_req) == 32, "vol_req");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_renew_rep) == 32, "renew_rep");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_alloc_req) == 40, "alloc_req");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_alloc_rep) == 72, "alloc_rep");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_serving) == 24, "serving");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_epoch_rec) == 32, "epoch_rec");
MDR_WIRE_ASSERT(MDR_WIRE_OFF(mdr_wire_epoch_rec, crc) == 28, "epoch_rec.crc");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_open_rep_v7) == 168, "open_rep_v7");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_renew_rep_v7) == 56, "renew_rep_v7");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_alloc_rep_v7) == 96, "alloc_rep_v7");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_inval) == 64, "inval");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_inval_ack) == 80, "inval_ack");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_auth_req) == 56, "auth_req");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_volume) == 104, "volume");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_vol_create_req) == 104,
		"vol_create_req");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_vol_name_req) == 96, "vol_name_req");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_dev_extents) == 16, "dev_extents");
/* Messages ending in an array: the array's offset is the fixed part. */
MDR_WIRE_ASSERT(MDR_WIRE_OFF(mdr_wire_vol_rep, devs) == 136, "vol_rep");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_list_req) == 32, "list_req");
MDR_WIRE_ASSERT(MDR_WIRE_OFF(mdr_wire_vol_list_rep, vols) == 40,
		"vol_list_rep");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_device) == 64, "device");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_device_ext) == 200, "device_ext");
MDR_WIRE_ASSERT(MDR_WIRE_OFF(mdr_wire_dev_list_rep, devs) == 40,
		"dev_list_rep");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_node_stats_rep) == 24 + 12 * 8,
		"node_stats_rep");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_node_stats_mig) == 6 * 8,
		"node_stats_mig");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_node_stats_push) == 8,
		"node_stats_push");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_node_stats_copy) == 2 * 8,
		"node_stats_copy");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_node_stats_auth) == 2 * 8,
		"node_stats_auth");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_node_stats_limits) == 2 * 8,
		"node_stats_limits");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_move_req) == 120, "move_req");
MDR_WIRE_ASSERT(MDR_WIRE_OFF(mdr_wire_move_req, name) == 56, "move_req.name");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_move_extent) == 48, "move_extent");
MDR_WIRE_ASSERT(MDR_WIRE_OFF(mdr_wire_move_rep, extents) == 64, "move_rep");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_drain_req) == 32, "drain_req");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_drain_rep) == 72, "drain_rep");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_host_auth_req) == 72, "host_auth_req");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_host_auth_rep) == 56, "host_auth_rep");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_auth_transcript) == 88,
		"auth_transcript");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_host_add_req) == 152, "host_add_req");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_host_remove_req) == 32,
		"host_remove_req");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_host) == 24, "host");
MDR_WIRE_ASSERT(MDR_WIRE_OFF(mdr_wire_host_list_rep, hosts) == 40,
		"host_list_rep");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_replica) == 40, "replica");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_replica_ext) == 64, "replica_ext");
MDR_WIRE_ASSERT(MDR_WIRE_OFF(mdr_wire_group_status_rep, replicas) == 72,
		"group_status_rep");
MDR_WIRE_ASSERT(MDR_WIRE_OFF(mdr_wire_replica, membership) == 17,
		"replica.membership");
MDR_WIRE_ASSERT(sizeof(struct mdr_wire_replica_change_req) == 48,
		"replica_change_req");

#undef MDR_WIRE_OFF
#undef MDR_WIRE_ASSERT

#endif /* _UAPI_LINUX_MDROUTE_WIRE_H */
