/* SPDX-License-Identifier: GPL-2.0 */
/*
 * proto.h - the metadata wire protocol as the kernel client checks it.
 *
 * Pure: generic headers only, no verbs, no block layer, no locks (callers
 * own locking), nothing that sleeps or allocates, so it runs in any
 * context; KUnit-tested in ktests/proto_*_test.c. Everything received
 * from mdnode goes through here before any of it is used: connection
 * private data (conn.c), every message header and body (msg.c), every
 * extent entry and epoch record (entry.c). lease.c has the reconnect
 * backoff and the lease arithmetic, auth.c the host's proof.
 *
 * The rules mirror the user-space codec (userspace/lib/wire/), seen from
 * a host connection's client side.
 */
#ifndef MDR_PROTO_H
#define MDR_PROTO_H

#include <linux/string.h>
#include <linux/types.h>
#include <linux/mdroute_wire.h>

/* Reserved bytes, and the rest of a name after its NUL, are zero. */
static inline bool mdr_all_zero(const void *p, size_t n)
{
	return !memchr_inv(p, 0, n);
}

/* Entries one READ may carry (MDR_WIRE_READ_MAX bytes). */
#define MDR_READ_MAX_ENTRIES \
	(MDR_WIRE_READ_MAX / sizeof(struct mdr_wire_entry))

/* ---- Extent entries ------------------------------------------------- */

/* Which rule an entry breaks; mdr_entry_check() checks in this order. */
enum mdr_entry_verdict {
	MDR_ENTRY_OK,
	MDR_ENTRY_BAD_CRC,		/* torn, misaddressed, foreign: re-read */
	MDR_ENTRY_RESERVED,		/* reserved bytes not zero */
	MDR_ENTRY_BAD_STATE,		/* state >= MDR_EXT_STATE_MAX */
	MDR_ENTRY_UNALLOC_PLACED,	/* unallocated with dev_id or pstart */
	MDR_ENTRY_ZERO_GEN,		/* generations start at 1 */
	MDR_ENTRY_NO_DEVICE,		/* mapped or frozen with dev_id 0 */
	MDR_ENTRY_STALE,		/* older than the caller has seen */
};

u32 mdr_entry_crc(const struct mdr_wire_entry *e, u64 volume_id, u64 index);
void mdr_entry_seal(struct mdr_wire_entry *e, u64 volume_id, u64 index);
enum mdr_entry_verdict mdr_entry_check(const struct mdr_wire_entry *e,
				       u64 volume_id, u64 index, u64 min_gen);
const char *mdr_entry_verdict_name(enum mdr_entry_verdict v);

/* ---- Connection private data ---------------------------------------- */

/**
 * struct mdr_conn_params - what a host asks for in its connect request
 * @version_min: lowest protocol version spoken
 * @version_max: highest protocol version spoken
 * @tenant:	tenant of the connection
 * @host_id:	this host
 * @queue_depth: requests outstanding at once (>= 1)
 * @recv_depth:	receive buffers posted (> @queue_depth)
 * @max_msg:	largest message received (MDR_WIRE_MSG_MIN..MSG_MAX)
 */
struct mdr_conn_params {
	u16 version_min;
	u16 version_max;
	u32 tenant;
	u64 host_id;
	u16 queue_depth;
	u16 recv_depth;
	u32 max_msg;
};

/**
 * struct mdr_conn_accept - mdnode's accept, checked and host-endian
 * @version:	negotiated version
 * @queue_depth: requests the host may have outstanding
 * @push_credits: pushes mdnode may have outstanding
 * @max_msg:	largest message mdnode receives
 * @node_id:	the storage node
 * @boot_id:	changes at every mdnode start
 * @nonce:	mdnode's challenge (version 3; zero before)
 * @host_qpn:	our QP's number (filled in by the transport)
 * @node_qpn:	mdnode's QP number, from the ESTABLISHED event (ditto)
 */
struct mdr_conn_accept {
	u16 version;
	u16 queue_depth;
	u16 push_credits;
	u32 max_msg;
	u64 node_id;
	u64 boot_id;
	u8 nonce[16];
	u32 host_qpn;
	u32 node_qpn;
};

int mdr_conn_req_encode(struct mdr_wire_conn_req *r,
			const struct mdr_conn_params *p);
int mdr_conn_rep_parse(const void *pd, size_t len,
		       const struct mdr_conn_params *sent,
		       struct mdr_conn_accept *a, const char **why);
int mdr_conn_rej_parse(const void *pd, size_t len, u16 *status,
		       u16 *version, const char **why);
int mdr_version_negotiate(u16 peer_min, u16 peer_max);

/* ---- Messages ------------------------------------------------------- */

/* 0 for MDR_ST_OK, else -errno (-EPROTO for a status out of range). */
int mdr_status_to_errno(u16 status);

/**
 * struct mdr_open_info - a checked reply to MDR_OP_OPEN
 * @volume_id:	the volume
 * @size:	bytes, a multiple of 4096
 * @table_addr:	remote address of entry 0
 * @table_len:	bytes of the table: entries * 32
 * @table_rkey:	rkey of the table
 * @extent_shift: log2 of the extent size in bytes
 * @lease_ms:	lease duration from when the request was sent
 * @generation:	volume generation
 * @name:	NUL-terminated volume name
 */
struct mdr_open_info {
	u64 volume_id;
	u64 size;
	u64 table_addr;
	u64 table_len;
	u32 table_rkey;
	u32 extent_shift;
	u32 lease_ms;
	u64 generation;
	char name[MDR_WIRE_NAME_LEN];
};

/**
 * struct mdr_inval_info - a checked MDR_OP_INVALIDATE push
 * @volume_id:	the volume
 * @first:	first extent of the range
 * @count:	extents in the range, >= 1, first + count does not wrap
 * @generation:	floor of the range's generations from now on
 * @reason:	enum mdr_inval_reason
 */
struct mdr_inval_info {
	u64 volume_id;
	u64 first;
	u64 count;
	u64 generation;
	u32 reason;
};

/**
 * struct mdr_inval_ack_info - what an ack tells besides the push's range
 * @flags:	MDR_INVAL_ACK_F_TRACKED or 0
 * @dirty:	with MDR_INVAL_ACK_F_TRACKED: granules written since the
 *		extent's MDR_INVAL_TRACK (struct mdr_wire_inval_ack)
 *
 * Only a version 2 ack carries it; a version 1 ack is the push itself.
 */
struct mdr_inval_ack_info {
	u32 flags;
	u64 dirty;
};

/**
 * struct mdr_leader_info - who leads a replica group (struct mdr_wire_leader)
 * @epoch:	its epoch; 0 with @replica 0
 * @replica:	its replica id; 0: the replica answering knows none
 * @port:	its rdma_cm port
 * @family:	enum mdr_wire_family
 * @addr:	network byte order; IPv4 in the first 4 bytes
 */
struct mdr_leader_info {
	u64 epoch;
	u32 replica;
	u16 port;
	u8 family;
	u8 addr[16];
};

/**
 * struct mdr_serving_info - who answered (struct mdr_wire_serving, v7)
 * @epoch:	the epoch of the leader that answered; 0: a node of its own
 * @record_addr: its epoch record's remote address (0 with @epoch 0)
 * @record_rkey: the record's rkey (0 with @epoch 0, else not 0)
 */
struct mdr_serving_info {
	u64 epoch;
	u64 record_addr;
	u32 record_rkey;
};

/**
 * struct mdr_msg - a received message, checked and host-endian
 * @opcode:	enum mdr_wire_opcode
 * @flags:	MDR_WIRE_F_*
 * @status:	enum mdr_wire_status (replies)
 * @length:	bytes of the message
 * @req_id:	request id (of the request replied to, or of the push)
 * @open:	MDR_OP_OPEN reply with MDR_ST_OK
 * @lease_ms:	MDR_OP_RENEW reply with MDR_ST_OK
 * @alloc:	MDR_OP_ALLOC reply with MDR_ST_OK; the entry is verified
 *		against (volume_id, index) and is mapped
 * @inval:	MDR_OP_INVALIDATE push
 * @leader:	any reply with MDR_ST_NOT_LEADER (version 5)
 * @serving:	OK replies to OPEN, RENEW and ALLOC of version 7; zero on
 *		earlier versions and other messages
 */
struct mdr_msg {
	u16 opcode;
	u16 flags;
	u16 status;
	u32 length;
	u64 req_id;
	union {
		struct mdr_open_info open;
		u32 lease_ms;
		struct {
			u64 volume_id;
			u64 index;
			struct mdr_wire_entry entry;
		} alloc;
		struct mdr_inval_info inval;
		u8 auth_mac[32];	/* MDR_OP_HOST_AUTH: mdnode's proof */
		struct mdr_leader_info leader;
	};
	struct mdr_serving_info serving;
};

static inline bool mdr_msg_is_reply(const struct mdr_msg *m)
{
	return m->flags & MDR_WIRE_F_REPLY;
}

int mdr_msg_parse(const void *buf, size_t received, u16 version,
		  struct mdr_msg *m, const char **why);

/* What a READ of a leader's epoch record (version 7) shows. */
enum mdr_epoch_verdict {
	MDR_EPOCH_OK,		/* it serves at the epoch expected */
	MDR_EPOCH_TORN,		/* bad crc: read again with the window */
	MDR_EPOCH_BAD,		/* bad magic or reserved bytes */
	MDR_EPOCH_OTHER,	/* it serves at another epoch, or no more */
};

void mdr_epoch_rec_seal(struct mdr_wire_epoch_rec *r);
enum mdr_epoch_verdict mdr_epoch_rec_check(const struct mdr_wire_epoch_rec *r,
					   u64 epoch, u64 *seen);

/* Encoders of what a host sends; each returns the message's length. */
size_t mdr_msg_open_req(void *buf, u64 req_id, u64 volume_id);
size_t mdr_msg_vol_req(void *buf, u16 opcode, u64 req_id, u64 volume_id);
size_t mdr_msg_alloc_req(void *buf, u64 req_id, u64 volume_id, u64 index);
size_t mdr_msg_inval_ack(void *buf, u64 req_id,
			 const struct mdr_inval_info *inval, u16 version,
			 const struct mdr_inval_ack_info *ack);
void mdr_msg_set_req_id(void *buf, u64 req_id);

/* ---- Host authentication (version 3; kmod/proto/auth.c) ------------- */

/* The first version whose hosts prove a key, and the last before it. */
#define MDR_WIRE_VERSION_AUTH	3
#define MDR_WIRE_VERSION_NOAUTH	(MDR_WIRE_VERSION_AUTH - 1)

void mdr_auth_transcript(struct mdr_wire_auth_transcript *t,
			 const char *label, const u8 *host_nonce,
			 const struct mdr_conn_params *p,
			 const struct mdr_conn_accept *a);
struct crypto_shash;
struct crypto_shash *mdr_auth_tfm_alloc(void);
int mdr_auth_hmac(struct crypto_shash *tfm, const u8 *secret,
		  unsigned int len, const struct mdr_wire_auth_transcript *t,
		  u8 *mac);
size_t mdr_msg_host_auth_req(void *buf, u64 req_id, const u8 *nonce,
			     const u8 *mac);

/* ---- Reconnect backoff and leases ----------------------------------- */

u32 mdr_backoff_ms(unsigned int attempt, u32 base_ms, u32 max_ms, u32 rnd);

/*
 * A lease granted for lease_ms counts from when its request was sent; the
 * host stops trusting it a margin earlier, for clock rate drift between
 * host and node and timer slack: a fixed part plus 1/64 of the lease.
 */
#define MDR_LEASE_DRIFT_MS	100

u64 mdr_lease_margin_ms(u32 lease_ms);
u64 mdr_lease_deadline(u64 sent_ns, u32 lease_ms);
u64 mdr_lease_renew_at(u64 sent_ns, u32 lease_ms);
bool mdr_lease_valid(u64 now_ns, u64 deadline_ns);

#endif /* MDR_PROTO_H */
