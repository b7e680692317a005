/* SPDX-License-Identifier: GPL-2.0 */
/*
 * follow.h - which replica of a group a host's connection goes to next.
 *
 * Pure: no locks, no allocation, no network. The transport holds a struct
 * mdr_follow per connection under the connection's spinlock and asks it
 * where to connect, tells it what happened there, and acts on what it
 * says (kmod/transport/rdma.c). KUnit: ktests/follow_test.c.
 *
 * The policy, as nvme multipath and krbd follow a path or a monitor:
 *   - a connection goes to the replica named by the last refusal that
 *     named a leader, else to the next replica of the set after the one
 *     tried last (round robin), passing over the one that failed last;
 *   - a refusal naming a leader is followed at once, except when it names
 *     the replica the connection just lost, at an epoch not above the one
 *     known then: that replica has not seen the election yet, and the
 *     host asks again where it is rather than go back to the dead one;
 *     after MDR_FOLLOW_WAITS such answers it goes anyway (the replica was
 *     only out of reach for a while, and still leads);
 *   - a replica that names no leader, or itself (taking over), is asked
 *     again shortly, up to MDR_FOLLOW_WAITS times on one connection: one
 *     cut from the others or from etcd may never learn a leader, and the
 *     host goes on to the next replica;
 *   - consecutive hops that reach no serving leader count as reconnect
 *     attempts, so two replicas naming each other cannot spin: the
 *     transport's backoff paces them;
 *   - epochs only grow: the highest one seen (served, or named by a
 *     replica) is kept, and the transport refuses what is served below it.
 */
#ifndef MDR_TRANSPORT_FOLLOW_H
#define MDR_TRANSPORT_FOLLOW_H

#include <linux/socket.h>
#include <linux/types.h>
#include <linux/mdroute.h>

struct mdr_leader_info;		/* proto/proto.h */

/**
 * struct mdr_follow - where a connection to a group goes
 * @nr:		addresses in @set (1 for a node of its own)
 * @set:	the replicas, as attached
 * @next:	index in @set of the replica to try after the current one
 * @now:	the address connected to, or being connected to
 * @now_hinted:	@now came from a hint, not from the set's round robin
 * @hinted:	@hint is where the next connection goes
 * @hint:	the leader a replica named
 * @lost:	@lost_addr failed us last (a connect, or a live connection)
 * @lost_addr:	that address
 * @lost_epoch:	@epoch when it did
 * @waits:	refusals the host waited on since its last connect
 * @epoch:	the highest epoch seen served or named
 * @hops:	connections since the last that served (for the backoff)
 */
struct mdr_follow {
	unsigned int nr;
	struct sockaddr_storage set[MDR_REPLICAS_MAX];
	unsigned int next;
	struct sockaddr_storage now;
	bool now_hinted;
	bool hinted;
	struct sockaddr_storage hint;
	bool lost;
	struct sockaddr_storage lost_addr;
	u64 lost_epoch;
	unsigned int waits;
	u64 epoch;
	unsigned int hops;
};

/*
 * Refusals waited on, on one connection, before the host moves on: about
 * 4 s, as the transport asks (40 at 50 ms, then every 250 ms).
 */
#define MDR_FOLLOW_WAITS	48

/* What the transport does about a refusal that named (or not) a leader. */
enum mdr_follow_verdict {
	MDR_FOLLOW_WAIT,	/* stay: ask this replica again shortly */
	MDR_FOLLOW_GO,		/* end this connection, connect to the hint */
	MDR_FOLLOW_NEXT,	/* end it, connect to the next replica */
};

void mdr_follow_init(struct mdr_follow *f, const struct sockaddr_storage *first,
		     const struct sockaddr_storage *set, unsigned int nr);
const struct sockaddr_storage *mdr_follow_pick(struct mdr_follow *f);
void mdr_follow_lost(struct mdr_follow *f);
enum mdr_follow_verdict mdr_follow_refused(struct mdr_follow *f,
					   const struct mdr_leader_info *l);
unsigned int mdr_follow_merge(struct mdr_follow *f,
			      const struct sockaddr_storage *set,
			      unsigned int nr);
void mdr_follow_served(struct mdr_follow *f);
bool mdr_follow_epoch_ok(struct mdr_follow *f, u64 epoch);
int mdr_leader_addr(const struct mdr_leader_info *l,
		    struct sockaddr_storage *ss);
bool mdr_addr_same(const struct sockaddr_storage *a,
		   const struct sockaddr_storage *b);

#endif /* MDR_TRANSPORT_FOLLOW_H */
