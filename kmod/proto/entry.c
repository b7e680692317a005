// SPDX-License-Identifier: GPL-2.0
/*
 * entry.c - extent entries, connection private data and messages of the
 * metadata protocol, checked as a host receives them.
 *
 * Pure: callers own locking; nothing here sleeps or allocates, so it runs
 * in any context (the RDMA transport calls it from CQ softirq context).
 * Received bytes are copied into wire structs before their fields are read.
 */
#include <linux/bitops.h>
#include <linux/crc32c.h>
#include <linux/ctype.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/minmax.h>
#include <linux/string.h>
#include <linux/time64.h>

#include "proto/proto.h"

#define MDR_HDR_SIZE		sizeof(struct mdr_wire_hdr)
#define MDR_SIZE_ALIGN		4096	/* volume sizes are multiples of it */

/* ---- Extent entries ------------------------------------------------- */

/*
 * CRC-32C as iSCSI: initial ~0, final xor ~0, over (volume, index, entry).
 * One call over one buffer: on the miss path each crc32c() is a trip
 * through the crypto API.
 */
u32 mdr_entry_crc(const struct mdr_wire_entry *e, u64 volume_id, u64 index)
{
	struct {
		__le64 volume_id;
		__le64 index;
		u8 entry[offsetof(struct mdr_wire_entry, crc)];
	} __packed buf;

	buf.volume_id = cpu_to_le64(volume_id);
	buf.index = cpu_to_le64(index);
	memcpy(buf.entry, e, sizeof(buf.entry));
	return ~crc32c(~0U, &buf, sizeof(buf));
}

void mdr_entry_seal(struct mdr_wire_entry *e, u64 volume_id, u64 index)
{
	e->crc = cpu_to_le32(mdr_entry_crc(e, volume_id, index));
}

static bool mdr_all_zero(const void *p, size_t n)
{
	return !memchr_inv(p, 0, n);
}

/* ---- A leader's epoch record (version 7) ---------------------------- */

static u32 mdr_epoch_rec_crc(const struct mdr_wire_epoch_rec *r)
{
	return ~crc32c(~0U, r, offsetof(struct mdr_wire_epoch_rec, crc));
}

void mdr_epoch_rec_seal(struct mdr_wire_epoch_rec *r)
{
	r->crc = cpu_to_le32(mdr_epoch_rec_crc(r));
}

/**
 * mdr_epoch_rec_check() - does a leader still serve at @epoch?
 * @r:		the record as READ after a window (any alignment: copied)
 * @epoch:	the epoch the connection is served at
 * @seen:	the epoch the record shows (0: it no longer serves)
 *
 * Return: MDR_EPOCH_OK when it shows @epoch: the window READ before it
 * was read while the replica served at it; otherwise why not.
 */
enum mdr_epoch_verdict mdr_epoch_rec_check(const struct mdr_wire_epoch_rec *r,
					   u64 epoch, u64 *seen)
{
	struct mdr_wire_epoch_rec c;

	memcpy(&c, r, sizeof(c));
	*seen = 0;
	if (le32_to_cpu(c.crc) != mdr_epoch_rec_crc(&c))
		return MDR_EPOCH_TORN;
	if (le32_to_cpu(c.magic) != MDR_WIRE_EPOCH_MAGIC || c.reserved)
		return MDR_EPOCH_BAD;
	*seen = le64_to_cpu(c.epoch);
	return *seen == epoch ? MDR_EPOCH_OK : MDR_EPOCH_OTHER;
}

/**
 * mdr_entry_check() - may this entry be used as entry @index of a volume?
 * @e:		the entry as read (any alignment is fine: it is copied)
 * @volume_id:	the volume it must belong to
 * @index:	the extent it must describe
 * @min_gen:	oldest generation still acceptable (0: any)
 *
 * Return: MDR_ENTRY_OK, or the first rule the entry breaks.
 */
enum mdr_entry_verdict mdr_entry_check(const struct mdr_wire_entry *e,
				       u64 volume_id, u64 index, u64 min_gen)
{
	struct mdr_wire_entry c;
	u64 gen;

	memcpy(&c, e, sizeof(c));
	if (le32_to_cpu(c.crc) != mdr_entry_crc(&c, volume_id, index))
		return MDR_ENTRY_BAD_CRC;
	if (!mdr_all_zero(c.reserved, sizeof(c.reserved)) || c.reserved2)
		return MDR_ENTRY_RESERVED;
	if (c.state >= MDR_EXT_STATE_MAX)
		return MDR_ENTRY_BAD_STATE;
	if (c.state == MDR_EXT_UNALLOCATED && (c.dev_id || c.pstart))
		return MDR_ENTRY_UNALLOC_PLACED;
	gen = le64_to_cpu(c.generation);
	if (!gen)
		return MDR_ENTRY_ZERO_GEN;
	if (c.state != MDR_EXT_UNALLOCATED && !c.dev_id)
		return MDR_ENTRY_NO_DEVICE;
	if (gen < min_gen)
		return MDR_ENTRY_STALE;
	return MDR_ENTRY_OK;
}

const char *mdr_entry_verdict_name(enum mdr_entry_verdict v)
{
	switch (v) {
	case MDR_ENTRY_OK:
		return "ok";
	case MDR_ENTRY_BAD_CRC:
		return "bad crc";
	case MDR_ENTRY_RESERVED:
		return "reserved not zero";
	case MDR_ENTRY_BAD_STATE:
		return "state out of range";
	case MDR_ENTRY_UNALLOC_PLACED:
		return "unallocated with a device or pstart";
	case MDR_ENTRY_ZERO_GEN:
		return "generation zero";
	case MDR_ENTRY_NO_DEVICE:
		return "placed without a device";
	case MDR_ENTRY_STALE:
		return "older generation than seen";
	}
	return "unknown verdict";
}

/* ---- Connection private data ---------------------------------------- */

static bool mdr_max_msg_ok(u32 max_msg)
{
	return max_msg >= MDR_WIRE_MSG_MIN && max_msg <= MDR_WIRE_MSG_MAX;
}

/**
 * mdr_conn_req_encode() - the private data of a host's connect request
 * @r:	filled in, reserved bytes zero
 * @p:	what to ask for
 *
 * Return: 0, or -EINVAL when mdnode would refuse @p.
 */
int mdr_conn_req_encode(struct mdr_wire_conn_req *r,
			const struct mdr_conn_params *p)
{
	if (!p->version_min || p->version_min > p->version_max ||
	    !p->queue_depth || p->recv_depth <= p->queue_depth ||
	    !mdr_max_msg_ok(p->max_msg))
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->magic = cpu_to_le32(MDR_WIRE_CONN_MAGIC);
	r->version_min = cpu_to_le16(p->version_min);
	r->version_max = cpu_to_le16(p->version_max);
	r->role = cpu_to_le16(MDR_ROLE_HOST);
	r->tenant = cpu_to_le32(p->tenant);
	r->host_id = cpu_to_le64(p->host_id);
	r->queue_depth = cpu_to_le16(p->queue_depth);
	r->recv_depth = cpu_to_le16(p->recv_depth);
	r->max_msg = cpu_to_le32(p->max_msg);
	return 0;
}

/**
 * mdr_version_negotiate() - the highest version this build and a peer
 * speaking [@peer_min, @peer_max] share
 *
 * Return: the version, or -EPROTONOSUPPORT.
 */
int mdr_version_negotiate(u16 peer_min, u16 peer_max)
{
	u16 lo = max_t(u16, peer_min, MDR_WIRE_VERSION_MIN);
	u16 hi = min_t(u16, peer_max, MDR_WIRE_VERSION);

	if (peer_min > peer_max || lo > hi)
		return -EPROTONOSUPPORT;
	return hi;
}

/**
 * mdr_conn_rep_parse() - check mdnode's accept of the request @sent
 * @pd:		private data of the ESTABLISHED event
 * @len:	its length (rdma_cm may pad: longer is fine)
 * @sent:	what was asked
 * @a:		filled in on success
 * @why:	set to a static reason on failure
 *
 * Return: 0, -EPROTO (framing, version) or -EINVAL (a field).
 */
int mdr_conn_rep_parse(const void *pd, size_t len,
		       const struct mdr_conn_params *sent,
		       struct mdr_conn_accept *a, const char **why)
{
	struct mdr_wire_conn_rep r;

	if (!pd || len < sizeof(r)) {
		*why = "accept private data too short";
		return -EPROTO;
	}
	memcpy(&r, pd, sizeof(r));
	if (le32_to_cpu(r.magic) != MDR_WIRE_CONN_MAGIC) {
		*why = "accept has a bad magic";
		return -EPROTO;
	}
	a->version = le16_to_cpu(r.version);
	a->queue_depth = le16_to_cpu(r.queue_depth);
	a->push_credits = le16_to_cpu(r.push_credits);
	a->max_msg = le32_to_cpu(r.max_msg);
	a->node_id = le64_to_cpu(r.node_id);
	a->boot_id = le64_to_cpu(r.boot_id);
	memcpy(a->nonce, r.nonce, sizeof(a->nonce));
	if (a->version < max_t(u16, sent->version_min, MDR_WIRE_VERSION_MIN) ||
	    a->version > min_t(u16, sent->version_max, MDR_WIRE_VERSION)) {
		*why = "accept version outside the range asked";
		return -EPROTO;
	}
	if (r.flags) {
		*why = "accept flags not zero";
		return -EINVAL;
	}
	if (!a->queue_depth || a->queue_depth > sent->queue_depth) {
		*why = "accept queue_depth out of range";
		return -EINVAL;
	}
	/* Our buffers hold a reply per request and a push per credit. */
	if (a->push_credits > sent->recv_depth - a->queue_depth) {
		*why = "accept push_credits exceed the receive buffers";
		return -EINVAL;
	}
	if (!a->push_credits) {
		*why = "no push credits on a host connection";
		return -EINVAL;
	}
	if (!mdr_max_msg_ok(a->max_msg)) {
		*why = "accept max_msg out of range";
		return -EINVAL;
	}
	/* a zero challenge would let a proof be replayed */
	if (a->version >= MDR_WIRE_VERSION_AUTH && mdr_all_zero(r.nonce, sizeof(r.nonce))) {
		*why = "no nonce in a version 3 accept";
		return -EINVAL;
	}
	if (a->version < MDR_WIRE_VERSION_AUTH && !mdr_all_zero(r.nonce, sizeof(r.nonce))) {
		*why = "nonce on a host connection before version 3";
		return -EINVAL;
	}
	return 0;
}

/**
 * mdr_conn_rej_parse() - why mdnode refused a connection
 * @pd:		private data of the REJECTED event (may be NULL)
 * @len:	its length
 * @status:	enum mdr_wire_status, never MDR_ST_OK
 * @version:	mdnode's highest version
 * @why:	set to a static reason on failure
 *
 * Return: 0, or -EPROTO/-EINVAL when the private data is not mdnode's.
 */
int mdr_conn_rej_parse(const void *pd, size_t len, u16 *status,
		       u16 *version, const char **why)
{
	struct mdr_wire_conn_rej r;

	if (!pd || len < sizeof(r)) {
		*why = "reject private data too short";
		return -EPROTO;
	}
	memcpy(&r, pd, sizeof(r));
	if (le32_to_cpu(r.magic) != MDR_WIRE_CONN_MAGIC) {
		*why = "reject has a bad magic";
		return -EPROTO;
	}
	*status = le16_to_cpu(r.status);
	*version = le16_to_cpu(r.version);
	if (*status == MDR_ST_OK || *status >= MDR_ST_MAX) {
		*why = "reject status is no reason to reject";
		return -EINVAL;
	}
	if (*status == MDR_ST_VERSION && !*version) {
		*why = "reject version zero with MDR_ST_VERSION";
		return -EINVAL;
	}
	return 0;
}

/* ---- Messages ------------------------------------------------------- */

int mdr_status_to_errno(u16 status)
{
	static const int errs[MDR_ST_MAX] = {
		[MDR_ST_OK] = 0,
		[MDR_ST_INVAL] = -EINVAL,
		[MDR_ST_NOENT] = -ENOENT,
		[MDR_ST_EXIST] = -EEXIST,
		[MDR_ST_NOSPC] = -ENOSPC,
		[MDR_ST_PERM] = -EPERM,
		[MDR_ST_BUSY] = -EBUSY,
		[MDR_ST_PROTO] = -EPROTO,
		[MDR_ST_VERSION] = -EPROTONOSUPPORT,
		[MDR_ST_STALE] = -ESTALE,
		[MDR_ST_AGAIN] = -EAGAIN,
		[MDR_ST_IO] = -EIO,
		[MDR_ST_NOMEM] = -ENOMEM,
		/* try again, where the reply says the leader is */
		[MDR_ST_NOT_LEADER] = -EAGAIN,
	};

	if (status >= MDR_ST_MAX)
		return -EPROTO;
	return errs[status];
}

/*
 * What a host receives on its connection, and in which direction: replies
 * to its four requests, and invalidation pushes. A PING request is legal
 * from mdnode (either side may ping) and a PING reply would answer a ping
 * of ours: both are header only.
 */
struct mdr_rx_shape {
	u16 opcode;
	bool push;	/* arrives as a request (no MDR_WIRE_F_REPLY) */
	bool serving;	/* version 7: struct mdr_wire_serving follows */
	u32 size;	/* exact length of an MDR_ST_OK message before it */
};

static const struct mdr_rx_shape mdr_rx_shapes[] = {
	{ MDR_OP_OPEN, false, true, sizeof(struct mdr_wire_open_rep) },
	{ MDR_OP_CLOSE, false, false, MDR_HDR_SIZE },
	{ MDR_OP_RENEW, false, true, sizeof(struct mdr_wire_renew_rep) },
	{ MDR_OP_ALLOC, false, true, sizeof(struct mdr_wire_alloc_rep) },
	{ MDR_OP_HOST_AUTH, false, false,
	  sizeof(struct mdr_wire_host_auth_rep) },
	{ MDR_OP_INVALIDATE, true, false, sizeof(struct mdr_wire_inval) },
	{ MDR_OP_PING, true, false, MDR_HDR_SIZE },
	{ MDR_OP_PING, false, false, MDR_HDR_SIZE },
};

static const struct mdr_rx_shape *mdr_rx_shape(u16 opcode, bool push)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(mdr_rx_shapes); i++)
		if (mdr_rx_shapes[i].opcode == opcode &&
		    mdr_rx_shapes[i].push == push)
			return &mdr_rx_shapes[i];
	return NULL;
}

static bool mdr_known_opcode(u16 opcode)
{
	switch (opcode) {
	case MDR_OP_OPEN ... MDR_OP_HOST_AUTH:
	case MDR_OP_INVALIDATE:
	case MDR_OP_AUTH ... MDR_OP_NODE_STATS:
	case MDR_OP_PING:
		return true;
	}
	return false;
}

/* Volume names: [A-Za-z0-9._-], 1 to 63 characters, NUL-padded. */
static bool mdr_name_ok(const char *f, size_t size)
{
	const char *nul = memchr(f, 0, size);
	size_t i, len;

	if (!nul || nul == f)
		return false;
	len = nul - f;
	for (i = 0; i < len; i++)
		if (!isalnum(f[i]) && f[i] != '.' && f[i] != '_' && f[i] != '-')
			return false;
	return mdr_all_zero(nul, size - len);
}

static u64 mdr_extents_of(u64 size, u32 shift)
{
	return (size >> shift) + !!(size & (BIT_ULL(shift) - 1));
}

static int mdr_parse_open_rep(const void *buf, struct mdr_open_info *o,
			      const char **why)
{
	struct mdr_wire_open_rep r;

	memcpy(&r, buf, sizeof(r));
	o->volume_id = le64_to_cpu(r.volume_id);
	o->size = le64_to_cpu(r.size);
	o->table_addr = le64_to_cpu(r.table_addr);
	o->table_len = le64_to_cpu(r.table_len);
	o->table_rkey = le32_to_cpu(r.table_rkey);
	o->extent_shift = le32_to_cpu(r.extent_shift);
	o->lease_ms = le32_to_cpu(r.lease_ms);
	o->generation = le64_to_cpu(r.generation);
	if (r.flags) {
		*why = "open_rep: flags not zero";
		return -EINVAL;
	}
	if (!mdr_name_ok(r.name, sizeof(r.name))) {
		*why = "open_rep: bad name";
		return -EINVAL;
	}
	memcpy(o->name, r.name, sizeof(o->name));
	if (!o->volume_id) {
		*why = "open_rep: volume_id zero";
		return -EINVAL;
	}
	if (!o->size || o->size % MDR_SIZE_ALIGN) {
		*why = "open_rep: size zero or not a multiple of 4096";
		return -EINVAL;
	}
	if (o->extent_shift < MDR_WIRE_EXTENT_SHIFT_MIN ||
	    o->extent_shift > MDR_WIRE_EXTENT_SHIFT_MAX) {
		*why = "open_rep: extent_shift out of range";
		return -EINVAL;
	}
	/* at most 2^48 entries (shift >= 16): the product cannot overflow */
	if (o->table_len != mdr_extents_of(o->size, o->extent_shift) *
			    sizeof(struct mdr_wire_entry)) {
		*why = "open_rep: table_len does not cover the size";
		return -EINVAL;
	}
	if (o->table_addr > U64_MAX - o->table_len) {
		*why = "open_rep: table wraps the address space";
		return -EINVAL;
	}
	if (!o->lease_ms) {
		*why = "open_rep: lease_ms zero";
		return -EINVAL;
	}
	if (o->lease_ms < MDR_WIRE_LEASE_MS_MIN ||
	    o->lease_ms > MDR_WIRE_LEASE_MS_MAX) {
		*why = "open_rep: lease_ms out of range";
		return -EINVAL;
	}
	return 0;
}

/*
 * The leader a replica that does not lead names (version 5): all zero, or
 * a replica, its epoch, port and an address of a known family.
 */
static int mdr_parse_leader(const void *buf, struct mdr_leader_info *l,
			    const char **why)
{
	struct mdr_wire_leader w;
	bool addr_zero;

	memcpy(&w, buf, sizeof(w));
	l->epoch = le64_to_cpu(w.epoch);
	l->replica = le32_to_cpu(w.replica);
	l->port = le16_to_cpu(w.port);
	l->family = w.family;
	memcpy(l->addr, w.addr, sizeof(l->addr));
	addr_zero = !memchr_inv(w.addr, 0, sizeof(w.addr));

	if (w.reserved) {
		*why = "leader reserved not zero";
		return -EINVAL;
	}
	if (l->family != MDR_FAMILY_NONE && l->family != MDR_FAMILY_IPV4 &&
	    l->family != MDR_FAMILY_IPV6) {
		*why = "leader of an unknown family";
		return -EINVAL;
	}
	if (!l->replica) {
		if (l->epoch || l->port || l->family || !addr_zero) {
			*why = "an address or epoch without a leader";
			return -EINVAL;
		}
		return 0;
	}
	if (!l->epoch || !l->port || !l->family) {
		*why = "leader without an epoch, port or family";
		return -EINVAL;
	}
	if (l->family == MDR_FAMILY_IPV4 && memchr_inv(w.addr + 4, 0, 12)) {
		*why = "leader's IPv4 address longer than 4 bytes";
		return -EINVAL;
	}
	return 0;
}

static int mdr_parse_renew_rep(const void *buf, u32 *lease_ms,
			       const char **why)
{
	struct mdr_wire_renew_rep r;

	memcpy(&r, buf, sizeof(r));
	*lease_ms = le32_to_cpu(r.lease_ms);
	if (r.reserved) {
		*why = "renew_rep: reserved not zero";
		return -EINVAL;
	}
	if (!*lease_ms) {
		*why = "renew_rep: lease_ms zero";
		return -EINVAL;
	}
	if (*lease_ms < MDR_WIRE_LEASE_MS_MIN ||
	    *lease_ms > MDR_WIRE_LEASE_MS_MAX) {
		*why = "renew_rep: lease_ms out of range";
		return -EINVAL;
	}
	return 0;
}

static int mdr_parse_alloc_rep(const void *buf, struct mdr_msg *m,
			       const char **why)
{
	struct mdr_wire_alloc_rep r;
	enum mdr_entry_verdict v;

	memcpy(&r, buf, sizeof(r));
	m->alloc.volume_id = le64_to_cpu(r.volume_id);
	m->alloc.index = le64_to_cpu(r.index);
	m->alloc.entry = r.entry;
	if (!m->alloc.volume_id) {
		*why = "alloc_rep: volume_id zero";
		return -EINVAL;
	}
	v = mdr_entry_check(&r.entry, m->alloc.volume_id, m->alloc.index, 0);
	if (v != MDR_ENTRY_OK) {
		*why = "alloc_rep: entry does not verify";
		return -EINVAL;
	}
	if (r.entry.state != MDR_EXT_MAPPED) {
		*why = "alloc_rep: entry not mapped";
		return -EINVAL;
	}
	return 0;
}

/* Who answered (version 7): a node of its own, or a leader and its record. */
static int mdr_parse_serving(const void *buf, struct mdr_serving_info *o,
			     const char **why)
{
	struct mdr_wire_serving r;

	memcpy(&r, buf, sizeof(r));
	o->epoch = le64_to_cpu(r.epoch);
	o->record_addr = le64_to_cpu(r.record_addr);
	o->record_rkey = le32_to_cpu(r.record_rkey);
	if (r.reserved) {
		*why = "serving: reserved not zero";
		return -EINVAL;
	}
	if (!o->epoch && (o->record_addr || o->record_rkey)) {
		*why = "serving: an epoch record without an epoch";
		return -EINVAL;
	}
	if (o->epoch && !o->record_rkey) {
		*why = "serving: an epoch without its record";
		return -EINVAL;
	}
	return 0;
}

static int mdr_parse_inval(const void *buf, struct mdr_inval_info *o,
			   const char **why)
{
	struct mdr_wire_inval r;

	memcpy(&r, buf, sizeof(r));
	o->volume_id = le64_to_cpu(r.volume_id);
	o->first = le64_to_cpu(r.first);
	o->count = le64_to_cpu(r.count);
	o->generation = le64_to_cpu(r.generation);
	o->reason = le32_to_cpu(r.reason);
	if (r.reserved) {
		*why = "inval: reserved not zero";
		return -EINVAL;
	}
	if (!o->volume_id) {
		*why = "inval: volume_id zero";
		return -EINVAL;
	}
	if (!o->count) {
		*why = "inval: count zero";
		return -EINVAL;
	}
	if (o->count > U64_MAX - o->first) {
		*why = "inval: first + count overflows";
		return -EINVAL;
	}
	if (!o->generation) {
		*why = "inval: generation zero";
		return -EINVAL;
	}
	if (o->reason < MDR_INVAL_ALLOC || o->reason > MDR_INVAL_TRACK) {
		*why = "inval: unknown reason";
		return -EINVAL;
	}
	if (o->reason == MDR_INVAL_TRACK && o->count != 1) {
		*why = "inval: track of more than one extent";
		return -EINVAL;
	}
	return 0;
}

/**
 * mdr_msg_parse() - check a message a host received, in the protocol's
 * order: framing, header fields, direction and size for the opcode, body
 * @buf:	the receive buffer
 * @received:	bytes the completion reported
 * @version:	the connection's negotiated version
 * @m:		filled in on success (host-endian)
 * @why:	set to a static reason on failure
 *
 * The caller still matches @m->req_id against its outstanding requests
 * and the reply's body against what it asked (volume, index).
 *
 * Return: 0, -EPROTO (framing, header, size, direction) or -EINVAL (a
 * field of the body).
 */
int mdr_msg_parse(const void *buf, size_t received, u16 version,
		  struct mdr_msg *m, const char **why)
{
	const struct mdr_rx_shape *shape;
	struct mdr_wire_hdr h;
	bool reply, serving;
	u32 size;
	int ret;

	if (received < MDR_HDR_SIZE) {
		*why = "shorter than a header";
		return -EPROTO;
	}
	memcpy(&h, buf, sizeof(h));
	m->opcode = le16_to_cpu(h.opcode);
	m->flags = le16_to_cpu(h.flags);
	m->status = le16_to_cpu(h.status);
	m->length = le32_to_cpu(h.length);
	m->req_id = le64_to_cpu(h.req_id);
	m->serving = (struct mdr_serving_info){};
	reply = m->flags & MDR_WIRE_F_REPLY;

	if (le16_to_cpu(h.magic) != MDR_WIRE_MSG_MAGIC) {
		*why = "bad magic";
		return -EPROTO;
	}
	if (m->length > received) {
		*why = "length exceeds the bytes received";
		return -EPROTO;
	}
	if (m->length < MDR_HDR_SIZE) {
		*why = "length shorter than a header";
		return -EPROTO;
	}
	if (m->length > MDR_WIRE_MSG_MAX) {
		*why = "length exceeds MDR_WIRE_MSG_MAX";
		return -EPROTO;
	}
	if (!mdr_known_opcode(m->opcode)) {
		*why = "unknown opcode";
		return -EPROTO;
	}
	if (m->flags & ~MDR_WIRE_F_REPLY) {
		*why = "unknown header flags";
		return -EPROTO;
	}
	if (m->status >= MDR_ST_MAX) {
		*why = "status out of range";
		return -EPROTO;
	}
	if (!reply && m->status != MDR_ST_OK) {
		*why = "status in a push";
		return -EPROTO;
	}
	if (h.reserved) {
		*why = "header reserved not zero";
		return -EPROTO;
	}
	shape = mdr_rx_shape(m->opcode, !reply);
	if (!shape) {
		*why = "not a message a host receives";
		return -EPROTO;
	}
	if (reply && m->status == MDR_ST_NOT_LEADER) {
		if (m->length != MDR_HDR_SIZE + sizeof(struct mdr_wire_leader)) {
			*why = "not-leader reply of the wrong length";
			return -EPROTO;
		}
		return mdr_parse_leader(buf + MDR_HDR_SIZE, &m->leader, why);
	}
	if (reply && m->status != MDR_ST_OK) {
		if (m->length != MDR_HDR_SIZE) {
			*why = "error reply longer than a header";
			return -EPROTO;
		}
		return 0;
	}
	serving = shape->serving && version >= MDR_WIRE_VERSION_EPOCH;
	size = shape->size + (serving ? sizeof(struct mdr_wire_serving) : 0);
	if (m->length != size) {
		*why = "length wrong for the opcode";
		return -EPROTO;
	}
	if (serving) {
		ret = mdr_parse_serving(buf + shape->size, &m->serving, why);
		if (ret)
			return ret;
	}

	switch (m->opcode) {
	case MDR_OP_OPEN:
		return mdr_parse_open_rep(buf, &m->open, why);
	case MDR_OP_RENEW:
		return mdr_parse_renew_rep(buf, &m->lease_ms, why);
	case MDR_OP_ALLOC:
		return mdr_parse_alloc_rep(buf, m, why);
	case MDR_OP_INVALIDATE:
		return mdr_parse_inval(buf, &m->inval, why);
	case MDR_OP_HOST_AUTH:
		memcpy(m->auth_mac,
		       buf + offsetof(struct mdr_wire_host_auth_rep, mac),
		       sizeof(m->auth_mac));
		return 0;
	}
	return 0;	/* header only: CLOSE reply, PING */
}

static void mdr_hdr_init(struct mdr_wire_hdr *h, u16 opcode, bool reply,
			 size_t len, u64 req_id)
{
	memset(h, 0, sizeof(*h));
	h->magic = cpu_to_le16(MDR_WIRE_MSG_MAGIC);
	h->opcode = cpu_to_le16(opcode);
	h->flags = cpu_to_le16(reply ? MDR_WIRE_F_REPLY : 0);
	h->length = cpu_to_le32(len);
	h->req_id = cpu_to_le64(req_id);
}

size_t mdr_msg_open_req(void *buf, u64 req_id, u64 volume_id)
{
	struct mdr_wire_open_req r;

	memset(&r, 0, sizeof(r));
	mdr_hdr_init(&r.hdr, MDR_OP_OPEN, false, sizeof(r), req_id);
	r.volume_id = cpu_to_le64(volume_id);
	memcpy(buf, &r, sizeof(r));
	return sizeof(r);
}

/* MDR_OP_CLOSE and MDR_OP_RENEW */
size_t mdr_msg_vol_req(void *buf, u16 opcode, u64 req_id, u64 volume_id)
{
	struct mdr_wire_vol_req r;

	mdr_hdr_init(&r.hdr, opcode, false, sizeof(r), req_id);
	r.volume_id = cpu_to_le64(volume_id);
	memcpy(buf, &r, sizeof(r));
	return sizeof(r);
}

size_t mdr_msg_alloc_req(void *buf, u64 req_id, u64 volume_id, u64 index)
{
	struct mdr_wire_alloc_req r;

	mdr_hdr_init(&r.hdr, MDR_OP_ALLOC, false, sizeof(r), req_id);
	r.volume_id = cpu_to_le64(volume_id);
	r.index = cpu_to_le64(index);
	memcpy(buf, &r, sizeof(r));
	return sizeof(r);
}

/* The host's proof: its challenge to mdnode and its MAC (32 bytes). */
size_t mdr_msg_host_auth_req(void *buf, u64 req_id, const u8 *nonce,
			     const u8 *mac)
{
	struct mdr_wire_host_auth_req r;

	mdr_hdr_init(&r.hdr, MDR_OP_HOST_AUTH, false, sizeof(r), req_id);
	memcpy(r.nonce, nonce, sizeof(r.nonce));
	memcpy(r.mac, mac, sizeof(r.mac));
	memcpy(buf, &r, sizeof(r));
	return sizeof(r);
}

/* The ack of a push: its range, MDR_WIRE_F_REPLY, its req_id. */
size_t mdr_msg_inval_ack(void *buf, u64 req_id,
			 const struct mdr_inval_info *inval, u16 version,
			 const struct mdr_inval_ack_info *ack)
{
	struct mdr_wire_inval_ack r;
	size_t len = version >= 2 ? sizeof(r) : sizeof(r.inval);

	memset(&r, 0, sizeof(r));
	mdr_hdr_init(&r.inval.hdr, MDR_OP_INVALIDATE, true, len, req_id);
	r.inval.volume_id = cpu_to_le64(inval->volume_id);
	r.inval.first = cpu_to_le64(inval->first);
	r.inval.count = cpu_to_le64(inval->count);
	r.inval.generation = cpu_to_le64(inval->generation);
	r.inval.reason = cpu_to_le32(inval->reason);
	if (ack->flags & MDR_INVAL_ACK_F_TRACKED) {
		r.flags = cpu_to_le32(MDR_INVAL_ACK_F_TRACKED);
		r.dirty = cpu_to_le64(ack->dirty);
	}
	memcpy(buf, &r, len);
	return len;
}

void mdr_msg_set_req_id(void *buf, u64 req_id)
{
	__le64 id = cpu_to_le64(req_id);

	memcpy(buf + offsetof(struct mdr_wire_hdr, req_id), &id, sizeof(id));
}

/* ---- Reconnect backoff and leases ----------------------------------- */

/**
 * mdr_backoff_ms() - delay before reconnect attempt @attempt (0-based)
 * @attempt:	failed attempts so far
 * @base_ms:	delay of the first attempt
 * @max_ms:	cap of the exponential growth
 * @rnd:	a random number (the caller's prandom)
 *
 * Exponential with "equal jitter": the delay d = min(base * 2^attempt,
 * max) is drawn uniformly from [d/2, d], so hosts that lost the same
 * node do not come back in lock step.
 *
 * Return: milliseconds.
 */
u32 mdr_backoff_ms(unsigned int attempt, u32 base_ms, u32 max_ms, u32 rnd)
{
	u64 d = base_ms;

	if (!base_ms)
		return 0;
	if (attempt >= 32 || (d << attempt) > max_ms)
		d = max_ms;
	else
		d <<= attempt;
	return d / 2 + rnd % (d - d / 2 + 1);
}

u64 mdr_lease_margin_ms(u32 lease_ms)
{
	return MDR_LEASE_DRIFT_MS + lease_ms / 64;
}

/**
 * mdr_lease_deadline() - when a lease stops being trusted here
 * @sent_ns:	monotonic time the OPEN or RENEW was sent
 * @lease_ms:	the lease granted
 *
 * Return: monotonic ns; @sent_ns itself when the margin eats the lease.
 */
u64 mdr_lease_deadline(u64 sent_ns, u32 lease_ms)
{
	u64 margin = mdr_lease_margin_ms(lease_ms);

	if (margin >= lease_ms)
		return sent_ns;
	return sent_ns + (lease_ms - margin) * NSEC_PER_MSEC;
}

/* Renew a third of the way in: two more tries fit before the deadline. */
u64 mdr_lease_renew_at(u64 sent_ns, u32 lease_ms)
{
	return sent_ns + (u64)(lease_ms / 3) * NSEC_PER_MSEC;
}

bool mdr_lease_valid(u64 now_ns, u64 deadline_ns)
{
	return now_ns < deadline_ns;
}
