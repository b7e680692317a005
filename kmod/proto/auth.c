// SPDX-License-Identifier: GPL-2.0
/*
 * auth.c - what the proofs of a host connection are computed over, and
 * the MAC itself (Documentation/wire-auth.md, "Host authentication").
 *
 * Pure apart from the crypto API: no keys, no verbs. The secret comes from
 * the caller (kmod/core/key.c reads it out of the keyring); what goes into
 * the transcript is exactly what this connection sent and received, so a
 * proof is good on this connection only:
 *  - the node nonce is mdnode's fresh challenge: an old proof of the host
 *    does not answer it (replay to mdnode);
 *  - the host nonce is ours: an old proof of mdnode does not answer it
 *    (a recorded node replayed to us);
 *  - the label tells the two directions apart, so neither side's proof
 *    can be reflected back as the other's;
 *  - both QP numbers are in it: a relay in the middle holds one
 *    connection to each end, and the QPs the host's proof names are not
 *    those of the relay's connection to the node. (Nothing after the
 *    proofs is authenticated: RDMA has no channel integrity. See
 *    Documentation/security.md.)
 */
#include <crypto/hash.h>
#include <linux/err.h>
#include <linux/string.h>
#include "proto/proto.h"

/**
 * mdr_auth_transcript() - fill the transcript of a host connection
 * @t:		filled in
 * @label:	MDR_AUTH_LABEL_HOST or MDR_AUTH_LABEL_NODE
 * @host_nonce:	the host's challenge, 16 bytes
 * @p:		what the host asked in its connect request
 * @a:		mdnode's checked accept
 */
void mdr_auth_transcript(struct mdr_wire_auth_transcript *t,
			 const char *label, const u8 *host_nonce,
			 const struct mdr_conn_params *p,
			 const struct mdr_conn_accept *a)
{
	memset(t, 0, sizeof(*t));
	strscpy_pad(t->label, label, sizeof(t->label));
	memcpy(t->node_nonce, a->nonce, sizeof(t->node_nonce));
	memcpy(t->host_nonce, host_nonce, sizeof(t->host_nonce));
	t->host_id = cpu_to_le64(p->host_id);
	t->node_id = cpu_to_le64(a->node_id);
	t->boot_id = cpu_to_le64(a->boot_id);
	t->tenant = cpu_to_le32(p->tenant);
	t->version = cpu_to_le16(a->version);
	t->role = cpu_to_le16(MDR_ROLE_HOST);
	t->host_qpn = cpu_to_le32(a->host_qpn);
	t->node_qpn = cpu_to_le32(a->node_qpn);
}

/**
 * mdr_auth_tfm_alloc() - an hmac(sha256) transform for mdr_auth_hmac()
 *
 * Allocated where allocation is free to reclaim (the attach), so that a
 * reconnect, which IO may be waiting for, allocates nothing.
 * Context: process. Return: the transform, or ERR_PTR() (-ENOENT: the
 * kernel has no hmac(sha256)). Free with crypto_free_shash().
 */
struct crypto_shash *mdr_auth_tfm_alloc(void)
{
	return crypto_alloc_shash("hmac(sha256)", 0, 0);
}

/**
 * mdr_auth_hmac() - HMAC-SHA256 of @t keyed with a host's secret
 * @tfm:	from mdr_auth_tfm_alloc(); the caller serialises its users
 * @secret:	the key's payload
 * @len:	its length, MDR_HOST_KEY_MIN..MDR_HOST_KEY_MAX
 * @t:		the transcript
 * @mac:	32 bytes, filled in on success
 *
 * Context: any that may sleep; allocates nothing.
 * Return: 0, -EINVAL for a secret of the wrong size, or the crypto API's
 * error.
 */
int mdr_auth_hmac(struct crypto_shash *tfm, const u8 *secret,
		  unsigned int len, const struct mdr_wire_auth_transcript *t,
		  u8 *mac)
{
	int ret;

	if (len < MDR_HOST_KEY_MIN || len > MDR_HOST_KEY_MAX)
		return -EINVAL;
	ret = crypto_shash_setkey(tfm, secret, len);
	if (!ret)
		ret = crypto_shash_tfm_digest(tfm, (const u8 *)t, sizeof(*t),
					      mac);
	return ret;
}
