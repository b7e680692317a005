// SPDX-License-Identifier: GPL-2.0
/*
 * key.c - a host's secret, the way dm-crypt and NVMe in-band
 * authentication keep theirs: out of ioctl arguments, /proc and shell
 * history, in a "logon" key the attaching process possesses.
 *
 * The attach looks the key up by serial in the caller's context (only
 * there do the caller's keyrings and permissions mean anything) and the
 * volume and its connection each keep a reference. The secret is read
 * under the key's semaphore at every connect, once for both proofs, and
 * copied nowhere but into the HMAC transform's key schedule, so "keyctl
 * update" rotates it for the next connection and "keyctl revoke" ends the
 * next connect with -EKEYREVOKED (-ENOKEY once invalidated).
 */
#include <keys/user-type.h>
#include <linux/cred.h>
#include <linux/err.h>
#include <linux/key.h>
#include "core/key.h"
#include "proto/proto.h"

/**
 * mdr_key_get() - the logon key @serial of the calling process
 * @serial:	a key serial the caller may search for: one it possesses
 *		(linked into its thread, process or session keyring, as mdctl
 *		links it into its process keyring), or whose permissions grant
 *		it search
 *
 * Context: process, the caller's (the attach ioctl).
 * Return: a reference, or ERR_PTR(-ENOKEY / -EKEYREVOKED / -EKEYEXPIRED /
 * -EACCES) for a key the caller cannot use, -EINVAL for a key that is not
 * a logon key or whose payload is not MDR_HOST_KEY_MIN..MAX bytes.
 */
struct key *mdr_key_get(s32 serial)
{
	const struct user_key_payload *p;
	key_ref_t ref;
	struct key *key;
	int ret;

	if (serial <= 0)
		return ERR_PTR(-EINVAL);
	ref = lookup_user_key(serial, 0, KEY_NEED_SEARCH);
	if (IS_ERR(ref))
		return ERR_CAST(ref);
	key = key_ref_to_ptr(ref);
	ret = -EINVAL;
	if (key->type != &key_type_logon)
		goto out_put;
	down_read(&key->sem);
	ret = key_validate(key);
	p = user_key_payload_locked(key);
	if (!ret && (!p || p->datalen < MDR_HOST_KEY_MIN ||
		     p->datalen > MDR_HOST_KEY_MAX))
		ret = -EINVAL;
	up_read(&key->sem);
	if (!ret)
		return key;
out_put:
	key_put(key);
	return ERR_PTR(ret);
}

void mdr_key_put(struct key *key)
{
	if (key)
		key_put(key);
}

/**
 * mdr_key_macs() - HMAC-SHA256 of each of @t keyed with the secret in @key
 * @key:	from mdr_key_get()
 * @tfm:	from mdr_auth_tfm_alloc(), used by this caller alone
 * @t:		@n transcripts
 * @macs:	@n MACs of 32 bytes, one after the other, filled in
 * @n:		how many
 *
 * All of them under one hold of the key's semaphore: an update between the
 * host's proof and the check of the node's cannot make them disagree.
 * Context: process; allocates nothing (reconnects call it with IO waiting).
 * Return: 0, or -errno: the key was revoked, expired, invalidated, or
 * updated with a payload of the wrong size since the attach.
 */
int mdr_key_macs(struct key *key, struct crypto_shash *tfm,
		 const struct mdr_wire_auth_transcript *t, u8 *macs,
		 unsigned int n)
{
	const struct user_key_payload *p;
	unsigned int i;
	int ret;

	down_read(&key->sem);
	ret = key_validate(key);
	p = user_key_payload_locked(key);
	if (!ret && !p)
		ret = -EKEYREVOKED;
	for (i = 0; !ret && i < n; i++)
		ret = mdr_auth_hmac(tfm, p->data, p->datalen, &t[i],
				    macs + 32 * i);
	up_read(&key->sem);
	return ret;
}
