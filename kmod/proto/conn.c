// SPDX-License-Identifier: GPL-2.0
/*
 * conn.c - the private data of a host's connection to mdnode: the request
 * it sends, the accept and the reject it parses, and the protocol version
 * both speak.
 *
 * Pure, as proto.h says: it runs in any context, the RDMA transport's CQ
 * softirq included, and copies received bytes into wire structs before it
 * reads their fields.
 */
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/minmax.h>
#include <linux/string.h>

#include "proto/proto.h"

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
