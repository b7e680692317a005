// SPDX-License-Identifier: GPL-2.0
/*
 * follow.c - which replica of a group a host's connection goes to next;
 * the policy is in follow.h.
 */
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/string.h>

#include "proto/proto.h"
#include "transport/follow.h"

static size_t mdr_addr_len(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					  sizeof(struct sockaddr_in);
}

/* The same family, address, port (and IPv6 scope). */
bool mdr_addr_same(const struct sockaddr_storage *a,
		   const struct sockaddr_storage *b)
{
	return a->ss_family == b->ss_family &&
	       !memcmp(a, b, mdr_addr_len(a));
}

/**
 * mdr_follow_init() - a connection's replicas
 * @f:		state to set up
 * @first:	the address to connect to first
 * @set:	the group's replicas (@first among them), or NULL
 * @nr:		addresses in @set; 0 for a node of its own, which is @first
 */
void mdr_follow_init(struct mdr_follow *f, const struct sockaddr_storage *first,
		     const struct sockaddr_storage *set, unsigned int nr)
{
	unsigned int i;

	memset(f, 0, sizeof(*f));
	if (!nr || nr > MDR_REPLICAS_MAX) {
		f->set[0] = *first;
		f->nr = 1;
	} else {
		memcpy(f->set, set, nr * sizeof(*set));
		f->nr = nr;
	}
	f->now = *first;
	for (i = 0; i < f->nr; i++)
		if (mdr_addr_same(&f->set[i], first))
			f->next = (i + 1) % f->nr;
}

/**
 * mdr_follow_pick() - where the next connection goes
 * @f:		the state
 *
 * The hint, once; else the next replica of the set, round robin, passing
 * over the one that failed last. Counts a hop (mdr_follow_served() clears
 * them).
 *
 * Return: the address, which stays valid in @f until the next call.
 */
const struct sockaddr_storage *mdr_follow_pick(struct mdr_follow *f)
{
	f->now_hinted = f->hinted;
	f->waits = 0;
	if (f->hinted) {
		f->hinted = false;
		f->now = f->hint;
	} else {
		f->now = f->set[f->next];
		f->next = (f->next + 1) % f->nr;
		/* not straight back to the one that just failed us */
		if (f->lost && f->nr > 1 &&
		    mdr_addr_same(&f->now, &f->lost_addr)) {
			f->now = f->set[f->next];
			f->next = (f->next + 1) % f->nr;
		}
	}
	f->hops++;
	return &f->now;
}

/* The connection to @f->now failed, or never came up. */
void mdr_follow_lost(struct mdr_follow *f)
{
	f->lost = true;
	f->lost_addr = f->now;
	f->lost_epoch = f->epoch;
}

/**
 * mdr_leader_addr() - the socket address of a named leader
 * @l:		a checked leader (proto/proto.h)
 * @ss:		the address, port set
 *
 * Return: 0, or -ENOENT when @l names none, or names the unspecified
 * address (a replica's misconfiguration: nothing to connect to).
 */
int mdr_leader_addr(const struct mdr_leader_info *l,
		    struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	/* none named, or the unspecified address: nowhere to go */
	if (!l->replica || !memchr_inv(l->addr, 0, sizeof(l->addr)))
		return -ENOENT;
	if (l->family == MDR_FAMILY_IPV4) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(l->port);
		memcpy(&sin->sin_addr, l->addr, 4);
		return 0;
	}
	if (l->family == MDR_FAMILY_IPV6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(l->port);
		memcpy(&sin6->sin6_addr, l->addr, 16);
		return 0;
	}
	return -ENOENT;
}

/**
 * mdr_follow_refused() - the replica at @f->now does not lead
 * @f:		the state
 * @l:		the leader it named (a checked struct mdr_wire_leader)
 *
 * Return: MDR_FOLLOW_GO when the next connection should go to the leader
 * named (set as the hint); MDR_FOLLOW_WAIT when the host should ask this
 * replica again: it names none, itself (it is taking over), or the
 * replica just lost at an epoch the host had seen already; after
 * MDR_FOLLOW_WAITS such answers on one connection, MDR_FOLLOW_NEXT (it
 * may never learn a leader: cut from the others or from etcd), or
 * MDR_FOLLOW_GO back to the one lost (it was out of reach for a while
 * only, and still leads).
 */
enum mdr_follow_verdict mdr_follow_refused(struct mdr_follow *f,
					   const struct mdr_leader_info *l)
{
	struct sockaddr_storage named;
	bool known = !mdr_leader_addr(l, &named);

	if (known && l->epoch > f->epoch)
		f->epoch = l->epoch;
	if (!known || mdr_addr_same(&named, &f->now))
		return ++f->waits < MDR_FOLLOW_WAITS ? MDR_FOLLOW_WAIT :
						       MDR_FOLLOW_NEXT;
	if (f->lost && mdr_addr_same(&named, &f->lost_addr) &&
	    l->epoch <= f->lost_epoch && ++f->waits < MDR_FOLLOW_WAITS)
		return MDR_FOLLOW_WAIT;
	f->hint = named;
	f->hinted = true;
	return MDR_FOLLOW_GO;
}

/**
 * mdr_follow_merge() - another attach's replicas join the connection's
 * @f:		the state
 * @set:	the replicas that attach named
 * @nr:		addresses in @set
 *
 * Volumes of one group share a connection, so a second attach whose set
 * differs (a replica added to the group since the first) must not have
 * its replicas ignored: each address not in @f's set yet is added, while
 * there is room. One the group dropped since stays, and only costs a
 * refused connect when its turn comes. The round robin goes on where it
 * was.
 *
 * Return: how many addresses of @set found no room (0: all are in).
 */
unsigned int mdr_follow_merge(struct mdr_follow *f,
			      const struct sockaddr_storage *set,
			      unsigned int nr)
{
	unsigned int i, j, left = 0;

	for (i = 0; i < nr && i < MDR_REPLICAS_MAX; i++) {
		for (j = 0; j < f->nr; j++)
			if (mdr_addr_same(&f->set[j], &set[i]))
				break;
		if (j < f->nr)
			continue;
		if (f->nr == MDR_REPLICAS_MAX) {
			left++;
			continue;
		}
		f->set[f->nr++] = set[i];
	}
	return left;
}

/* A leader served on the connection: the hops are over. */
void mdr_follow_served(struct mdr_follow *f)
{
	f->hops = 0;
	f->waits = 0;
	f->lost = false;
}

/**
 * mdr_follow_epoch_ok() - may a reply served at @epoch be used?
 * @f:		the state
 * @epoch:	the epoch the reply was served at (0: a node of its own)
 *
 * Epochs never go back: one below the highest seen comes from a replica
 * that was replaced. A higher one becomes the highest.
 *
 * Return: true to use it.
 */
bool mdr_follow_epoch_ok(struct mdr_follow *f, u64 epoch)
{
	if (epoch < f->epoch)
		return false;
	f->epoch = epoch;
	return true;
}
