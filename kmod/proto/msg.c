// SPDX-License-Identifier: GPL-2.0
/*
 * msg.c - the messages of the metadata protocol: every header and body a
 * host receives, parsed and checked before use; the requests it sends,
 * encoded; mdnode's statuses as errnos.
 *
 * Pure, as proto.h says: it runs in any context, the RDMA transport's CQ
 * softirq included, and copies received bytes into wire structs before it
 * reads their fields.
 */
#include <linux/ctype.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/string.h>

#include "proto/proto.h"

#define MDR_HDR_SIZE		sizeof(struct mdr_wire_hdr)
#define MDR_SIZE_ALIGN		4096	/* volume sizes are multiples of it */

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
