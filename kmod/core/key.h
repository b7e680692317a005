/* SPDX-License-Identifier: GPL-2.0 */
/*
 * key.h - a host's secret for a storage node, kept in the kernel keyring
 * as a "logon" key (user space can put it there and update or revoke it,
 * never read it back): see kmod/core/key.c.
 */
#ifndef MDR_KEY_H
#define MDR_KEY_H

#include <linux/key.h>
#include <linux/mdroute_wire.h>

struct key *mdr_key_get(s32 serial);
void mdr_key_put(struct key *key);
struct crypto_shash;
int mdr_key_macs(struct key *key, struct crypto_shash *tfm,
		 const struct mdr_wire_auth_transcript *t, u8 *macs,
		 unsigned int n);

#endif /* MDR_KEY_H */
