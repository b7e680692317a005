// SPDX-License-Identifier: GPL-2.0
/*
 * key.c - a host's secret, the way dm-crypt and NVMe in-band
 * authentication keep theirs: out of ioctl arguments, /proc and shell
 * history, in a "logon" key the attaching process possesses.
 *
 * The attach looks the key up by serial in the caller's context (only
 * there do the caller's keyrings and permissions mean anything) and the
 * volume and its connection each keep a reference. The secret is read
 * under the key's semaphore at every connect and copied nowhere else, so
 * "keyctl update" rotates it for the next connection and "keyctl revoke"
 * ends the next connect with -EKEYREVOKED.
 */
#include <keys/user-type.h>
#include <linux/cred.h>
#include <linux/err.h>
#include <linux/key.h>
#include "core/key.h"
#include "proto/proto.h"

/**
 * mdr_key_get() - the logon key @serial of the calling process
 * @serial:	a key serial the caller possesses (it must be able to search
 *		for it: a key in its session, process or thread keyrings)
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
 * mdr_key_mac() - HMAC-SHA256 of @t keyed with the secret in @key now
 * @key:	from mdr_key_get()
 * @t:		the transcript
 * @mac:	32 bytes
 *
 * Context: process; takes the key's semaphore for reading (an update of
 * the key waits for it, and this for the update).
 * Return: 0, or -errno: the key was revoked, expired, invalidated, or
 * updated with a payload of the wrong size since the attach.
 */
int mdr_key_mac(struct key *key, const struct mdr_wire_auth_transcript *t,
		u8 *mac)
{
	const struct user_key_payload *p;
	int ret;

	down_read(&key->sem);
	ret = key_validate(key);
	p = user_key_payload_locked(key);
	if (!ret && !p)
		ret = -EKEYREVOKED;
	if (!ret)
		ret = mdr_auth_hmac(p->data, p->datalen, t, mac);
	up_read(&key->sem);
	return ret;
}
