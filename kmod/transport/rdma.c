// SPDX-License-Identifier: GPL-2.0
/*
 * rdma.c - the kernel-verbs metadata client behind mdr_rdma_transport.
 *
 * One connection (struct mdr_conn) per (mdnode address, tenant), shared by
 * every volume of that tenant on that node. A connection lives as long as
 * one of its volumes is open; its RDMA resources (struct mdr_queue: cm_id,
 * PD, CQ, QP, buffers) are built at connect and torn down at every
 * failure, then built again by the reconnect work with exponential
 * backoff and jitter.
 *
 * On a queue:
 *   - lookups are one-sided RDMA READs of entries from a volume's table
 *     into pre-mapped buffers (one READ slot each), checked entry by entry;
 *   - OPEN, CLOSE and RENEW are synchronous RPCs (process context), ALLOC
 *     is asynchronous (asked from submit_bio); each RPC slot has a timer
 *     that re-sends with a new req_id up to MDR_RPC_RETRIES times, each
 *     attempt waiting twice as long as the one before, then
 *     declares the connection broken;
 *   - invalidation pushes run the volume's invalidate callback from a work
 *     item (it sleeps), then are acked.
 *
 * Completions are polled in softirq context (IB_POLL_SOFTIRQ) and never
 * sleep. Requests the connection cannot serve now wait on conn->pending
 * and fail with -EIO fast_io_fail_tmo seconds after they were queued.
 *
 * Locks, outermost first: mdr_conns_mutex (the connection list),
 * conn->mutex (queue build and teardown), conn->vols_mutex (the volume
 * list; never held across an RPC), tvol->rpc_mutex (the lease work's RPCs
 * of one volume vs its close), tvol->cb_mutex (sleeping callbacks vs
 * close), conn->lock (spinlock, irqsave: queue pointer, slots, pending,
 * pools), tvol->cb_lock (spinlock: non-sleeping callbacks vs close).
 * vols_mutex and rpc_mutex are never held together. No callback into the
 * volume runs under conn->lock.
 *
 * Far over 800 lines because the transport-neutral core (connections'
 * life, requests and their retries, leases, pushes) and the RDMA provider
 * still share it; they part when a second provider (TCP) needs the core.
 */
#include <crypto/algapi.h>
#include <crypto/hash.h>
#include <linux/bitmap.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/error-injection.h>
#include <linux/jiffies.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/random.h>
#include <linux/sched/mm.h>
#include <linux/sched/clock.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/timer.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "core/inject.h"
#include "core/key.h"
#include "core/params.h"
#include "proto/proto.h"
#include "transport/follow.h"
#include "transport/rdma.h"
#include "transport/transport.h"

#define CREATE_TRACE_POINTS
#include "transport/trace.h"

#define MDR_RPC_DEPTH		16	/* RPC slots asked for */
#define MDR_PUSH_MAX		16	/* push credits we can hold */
#define MDR_RECV_DEPTH		(MDR_RPC_DEPTH + MDR_PUSH_MAX)
#define MDR_PUSH_POOL		(2 * MDR_PUSH_MAX) /* + acks of old queues */
#define MDR_READ_SLOTS		16	/* READs in flight per connection */
#define MDR_REQ_POOL		128	/* fetch/alloc contexts kept ready */
#define MDR_RECV_MSG		MDR_WIRE_MSG_MIN /* our max_msg: >= open_rep */
#define MDR_SEND_MSG		128	/* our largest request: open_req */
#define MDR_RPC_RETRIES		5	/* io_timeout_ms x (1 + 2 + ... + 32) */
#define MDR_TORN_RETRIES	3	/* re-READs of a torn window */
#define MDR_CM_TIMEOUT_MS	3000	/* resolve and connect steps */
#define MDR_BACKOFF_BASE_MS	1000
#define MDR_BACKOFF_MAX_MS	30000
#define MDR_LEASE_TICK_MS	1000	/* lease work runs at least this often */
#define MDR_AGAIN_MS		250	/* an OPEN answered AGAIN: ask again */
#define MDR_AGAIN_SOON_MS	50	/* ... by a replica not leading yet */
#define MDR_AGAIN_SOON		40	/* ... the first so many times (2 s) */
#define MDR_FREE_HOPS		3	/* hops to a named leader without backoff */
#define MDR_HIST_BUCKETS	12	/* lookup latency: <16 us ... >=16 ms */

/* req_id: the queue's sequence number above the RPC slot's index */
#define MDR_SLOT_BITS		8

static_assert(MDR_RPC_DEPTH <= (1 << MDR_SLOT_BITS));
static_assert(sizeof(struct mdr_wire_open_req) <= MDR_SEND_MSG);
static_assert(sizeof(struct mdr_wire_open_rep) <= MDR_RECV_MSG);
static_assert(MDR_READ_MAX_ENTRIES * sizeof(struct mdr_wire_entry) ==
	      MDR_WIRE_READ_MAX);

enum mdr_conn_state {
	MDR_CONN_CONNECTING,	/* first connect or a reconnect under way */
	MDR_CONN_LIVE,		/* queue up, requests flow */
	MDR_CONN_BROKEN,	/* failed: teardown, then reconnect later */
	MDR_CONN_DEAD,		/* last volume closed: no more reconnects */
};

static const char * const mdr_conn_state_names[] = {
	[MDR_CONN_CONNECTING] = "connecting",
	[MDR_CONN_LIVE] = "live",
	[MDR_CONN_BROKEN] = "broken",
	[MDR_CONN_DEAD] = "dead",
};

enum mdr_req_op {
	MDR_REQ_READ,		/* async lookup */
	MDR_REQ_ALLOC,		/* async allocation */
	MDR_REQ_RPC,		/* sync OPEN, CLOSE, RENEW */
};

/**
 * struct mdr_req - a lookup, an allocation or a synchronous RPC
 * @list:	in conn->pending or conn->free_reqs
 * @tv:		the volume (a reference is held by async requests)
 * @op:		enum mdr_req_op
 * @pooled:	from conn->req_pool (else kmalloc'ed, or on a stack)
 * @first:	READ: first entry asked; ALLOC: the extent
 * @count:	READ: entries asked
 * @deadline:	jiffies after which a queued request fails (0: not set)
 * @start:	local_clock() when the volume asked (for mdr_req_age())
 * @rpc_op:	RPC: the opcode
 * @rpc_inc:	RPC: incarnation of the queue it was sent on
 * @done:	RPC: completed when the reply (or the failure) is in
 * @result:	RPC: 0 or -errno
 * @reply:	RPC: where the checked reply goes
 */
struct mdr_req {
	struct list_head list;
	struct mdr_tvol *tv;
	u8 op;
	bool pooled;
	u64 first;
	u32 count;
	unsigned long deadline;
	u64 start;
	u16 rpc_op;
	u32 rpc_inc;
	struct completion *done;
	int result;
	struct mdr_msg *reply;
};

struct mdr_queue;

/* A receive buffer, posted while the queue lives. */
struct mdr_recv {
	struct ib_cqe cqe;
	struct mdr_queue *q;
	void *buf;
	u64 dma;
};

/* An RPC in flight: the send buffer, the req_id, the retry timer. */
struct mdr_rpc_slot {
	struct ib_cqe cqe;
	struct mdr_queue *q;
	unsigned int idx;	/* in q->rpc */
	struct mdr_req *req;	/* NULL once answered or abandoned */
	void *buf;
	u64 dma;
	u32 len;
	u64 req_id;
	unsigned int attempts;
	unsigned long tmo;	/* jiffies of the first attempt, doubling */
	unsigned long extra;	/* jiffies the first attempt waits more */
	bool send_busy;		/* SEND not completed yet */
	bool wait_reply;	/* reply (or timeout) not in yet */
	struct timer_list timer;
};

/*
 * A READ in flight into its own mapped buffer; of a group's leader, with
 * a READ of its epoch record after it (version 7).
 */
struct mdr_rd_slot {
	struct ib_cqe cqe;
	struct mdr_queue *q;
	unsigned int idx;	/* in q->rd */
	struct mdr_req *req;
	void *buf;
	u64 dma;
	struct mdr_wire_epoch_rec *rec;
	u64 rec_dma;
	bool with_rec;		/* the last post read the record too */
	u32 window;		/* entries read: asked plus prefetch */
	unsigned int tries;
	unsigned long posted;	/* jiffies of the last post: the watchdog */
};

/**
 * struct mdr_queue - one incarnation of a connection's RDMA resources
 * @conn:	owner
 * @cm_id:	rdma_cm id (its context is this queue)
 * @dev:	the RDMA device it resolved to
 * @pd:		protection domain (local_dma_lkey for all buffers)
 * @cq:		one CQ for sends, READs and receives, polled in softirq
 * @qp:		the RC QP
 * @inc:	incarnation number: volumes reopened on it carry it
 * @acc:	mdnode's accept
 * @cm_done:	a connect step finished, with @cm_error
 * @established: the CM reported ESTABLISHED and the accept was good
 * @prelive:	not live yet (until mdr_queue_connect() publishes it): a
 *		push now breaks the protocol, mdnode pushes only after OPEN,
 *		and a keyed host is not proven yet
 * @failed:	while @conn->connecting: a completion error, a lost
 *		connection or a malformed message ended it before it was live
 * @next_seq:	next RPC sequence number (req_id >> MDR_SLOT_BITS)
 * @pushes:	pushes received and not yet acked
 * @error:	why it failed, for the RPCs it ends (0: -ENOTCONN)
 * @addr:	the replica (or node) it connects to
 * @served:	(conn->lock) an OK reply of version 7 said who serves on it
 * @serving:	(conn->lock) that: every such reply on the queue says the
 *		same, and READs of a group's tables read its epoch record
 */
struct mdr_queue {
	struct mdr_conn *conn;
	struct rdma_cm_id *cm_id;
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	u32 inc;
	struct mdr_conn_params params;
	struct mdr_conn_accept acc;
	struct completion cm_done;
	int cm_error;
	bool established;
	bool prelive;
	bool failed;
	u64 next_seq;
	unsigned int pushes;
	int error;
	struct sockaddr_storage addr;
	bool served;
	struct mdr_serving_info serving;

	struct mdr_recv recv[MDR_RECV_DEPTH];
	void *recv_buf;
	u64 recv_dma;

	unsigned int nr_rpc;
	struct mdr_rpc_slot rpc[MDR_RPC_DEPTH];
	DECLARE_BITMAP(rpc_busy, MDR_RPC_DEPTH);
	void *rpc_buf;
	u64 rpc_dma;

	struct mdr_rd_slot rd[MDR_READ_SLOTS];
	DECLARE_BITMAP(rd_busy, MDR_READ_SLOTS);
	void *rd_buf;
	u64 rd_dma;
	void *rec_buf;
	u64 rec_dma;
};

/* An invalidation push, from its receipt to its ack's completion. */
struct mdr_push {
	struct work_struct work;
	struct ib_cqe cqe;
	struct mdr_conn *conn;
	unsigned int idx;	/* in conn->push_pool */
	struct ib_device *dev;	/* the ack's mapping */
	u32 inc;		/* queue it arrived on */
	u16 version;		/* of that queue: the ack's format */
	u64 req_id;
	struct mdr_inval_info inval;
	struct mdr_inval_ack_info ack;
	u8 buf[sizeof(struct mdr_wire_inval_ack)];
	u64 dma;
};

struct mdr_conn_stats {
	atomic64_t reads;		/* READs completed */
	atomic64_t read_entries;	/* entries delivered */
	atomic64_t torn;		/* windows re-read */
	atomic64_t bad_entries;		/* entries refused */
	atomic64_t rpcs;		/* RPCs answered */
	atomic64_t rpc_errors;		/* answered with a non-OK status */
	atomic64_t retries;		/* RPCs re-sent */
	atomic64_t timeouts;		/* RPC timer expiries */
	atomic64_t read_timeouts;	/* READs the watchdog gave up on */
	atomic64_t late;		/* replies to re-sent or abandoned RPCs */
	atomic64_t reconnects;		/* successful reconnects */
	atomic64_t connect_failures;
	atomic64_t invalidations;	/* pushes handled */
	atomic64_t bad_messages;	/* malformed: connection ended */
	atomic64_t failed_fast;		/* requests failed by fast_io_fail */
	atomic64_t lease_expiries;
	atomic64_t batch_renewals;	/* RENEWs of every lease at once */
	atomic64_t auth_failures;	/* proofs refused, either way */
	atomic64_t stale_epochs;	/* replies or windows of a replaced leader */
	atomic64_t allocated;		/* ALLOCs answered with an entry */
	atomic64_t hist[MDR_HIST_BUCKETS];
};

/**
 * struct mdr_conn - the connection to one (mdnode, tenant)
 * @node:	in mdr_conns
 * @ref:	memory; held by the list (while users), volumes, pushes
 * @users:	open volumes (under mdr_conns_mutex)
 * @target:	address, tenant, host id and key (@target.key: read under
 *		@mutex, replaced under it and mdr_conns_mutex)
 * @key_serial:	@target.key's serial, for debugfs (0: none)
 * @auth_tfm:	hmac(sha256) for the proofs, used under @mutex (with a key)
 * @mutex:	queue build and teardown
 * @vols_mutex:	@vols
 * @vols:	struct mdr_tvol on this connection
 * @lock:	@state, @q, @pending, @fail_at, @free_reqs, @push_busy, slots
 * @state:	enum mdr_conn_state
 * @q:		the live queue, or NULL
 * @connecting:	the queue mdr_queue_connect() builds, until it is live or
 *		freed: its failures are noted in it (mdr_conn_error())
 * @inc:	incarnation counter of queues
 * @attempts:	failed reconnects in a row (backoff)
 * @boot_id:	mdnode's boot id on the last queue (0: never connected)
 * @pending:	requests waiting for a slot, a queue or a reopen
 * @fail_at:	jiffies the fail work is queued for, while it is pending
 * @follow:	(@lock) which replica of the group the next queue goes to,
 *		and the highest epoch seen (transport/follow.h)
 */
struct mdr_conn {
	struct list_head node;
	struct kref ref;
	unsigned int users;
	struct mdr_target target;
	s32 key_serial;
	struct crypto_shash *auth_tfm;
	struct mutex mutex;		/* queue build and teardown */
	struct mutex vols_mutex;	/* @vols */
	struct list_head vols;
	spinlock_t lock;		/* IO path state, see above */
	enum mdr_conn_state state;
	struct mdr_queue *q;
	struct mdr_queue *connecting;
	u32 inc;
	unsigned int attempts;
	u64 boot_id;
	u64 node_id;
	struct list_head pending;
	unsigned long fail_at;
	struct mdr_follow follow;
	struct list_head free_reqs;
	struct mdr_req *req_pool;
	struct mdr_push push_pool[MDR_PUSH_POOL];
	DECLARE_BITMAP(push_busy, MDR_PUSH_POOL);

	struct work_struct err_work;
	struct delayed_work reconnect_work;
	struct delayed_work lease_work;
	struct delayed_work fail_work;

	struct dentry *debugfs;
	struct mdr_conn_stats stats;
};

/* tvol->flags */
enum {
	MDR_TV_CLOSED,		/* close has begun: no more callbacks */
	MDR_TV_REOPEN,		/* RENEW or ALLOC said STALE: OPEN again */
	MDR_TV_UNLISTED,	/* off conn->vols: no more lease RPCs */
};

/**
 * struct mdr_tvol - a volume opened through a connection
 * @node:	in conn->vols
 * @lease_node:	in the lease work's list of one pass (that work only)
 * @ref:	held by the opener until close, async requests, the lease work
 * @conn:	the connection (holds a reference)
 * @owner:	the volume's cookie for @ops
 * @ops:	callbacks into the volume
 * @volume_id:	the volume
 * @rpc_mutex:	the lease work's RPCs vs close
 * @cb_mutex:	sleeping callbacks (invalidate) vs close
 * @cb_lock:	other callbacks vs close; lease fields
 * @flags:	MDR_TV_* bits
 * @lease_valid: (cb_lock) what the volume was last told
 * @opened_once: geometry below comes from an OPEN
 * @open_inc:	queue incarnation the volume is open on (conn->lock)
 * @open_boot:	(conn->lock) boot id of the process that opened it last
 * @table_addr:	(conn->lock) remote address of entry 0
 * @rkey:	(conn->lock) rkey of the table
 * @nr_extents:	(conn->lock) entries in the table
 * @generation:	volume generation at the last OPEN
 * @extent_shift: log2 of the extent size, fixed by the first OPEN
 * @lease_ms:	last lease granted
 * @deadline:	(cb_lock) monotonic ns when the lease stops being trusted
 * @renew_at:	(cb_lock) monotonic ns of the next RENEW
 * @lease_timer: fires at @deadline
 */
struct mdr_tvol {
	struct list_head node;
	struct list_head lease_node;
	struct kref ref;
	struct mdr_conn *conn;
	void *owner;
	const struct mdr_tvol_ops *ops;
	u64 volume_id;
	struct mutex rpc_mutex;		/* lease RPCs vs close */
	struct mutex cb_mutex;		/* invalidate vs close */
	spinlock_t cb_lock;		/* other callbacks vs close */
	unsigned long flags;
	bool lease_valid;
	bool opened_once;
	u32 open_inc;
	u64 open_boot;
	u64 table_addr;
	u32 rkey;
	u64 nr_extents;
	u64 generation;
	u32 extent_shift;
	u32 lease_ms;
	u64 deadline;
	u64 renew_at;
	struct timer_list lease_timer;
};

static LIST_HEAD(mdr_conns);
static DEFINE_MUTEX(mdr_conns_mutex);
static struct workqueue_struct *mdr_wq;
static struct dentry *mdr_debugfs;
static struct dentry *mdr_debugfs_conns;
static bool mdr_debugfs_owned;

#define mdr_conn_warn_rl(c, fmt, ...)					\
	pr_warn_ratelimited("conn %pISpc tenant %u: " fmt,		\
			    &(c)->target.addr, (c)->target.tenant,	\
			    ##__VA_ARGS__)
#define mdr_conn_info(c, fmt, ...)					\
	pr_info("conn %pISpc tenant %u: " fmt, &(c)->target.addr,	\
		(c)->target.tenant, ##__VA_ARGS__)

static void mdr_kick(struct mdr_conn *c);

/* ---- References ----------------------------------------------------- */

static void mdr_conn_release(struct kref *ref)
{
	struct mdr_conn *c = container_of(ref, struct mdr_conn, ref);

	mdr_key_put(c->target.key);
	if (c->auth_tfm)
		crypto_free_shash(c->auth_tfm);
	kfree(c->req_pool);
	kfree(c);
}

static void mdr_conn_put(struct mdr_conn *c)
{
	kref_put(&c->ref, mdr_conn_release);
}

/* Context: any. The last put may come from a completion. */
static void mdr_tv_release(struct kref *ref)
{
	struct mdr_tvol *tv = container_of(ref, struct mdr_tvol, ref);
	struct mdr_conn *c = tv->conn;

	kfree(tv);
	mdr_conn_put(c);
}

static void mdr_tv_put(struct mdr_tvol *tv)
{
	kref_put(&tv->ref, mdr_tv_release);
}

/* ---- Callbacks into the volume --------------------------------------- */

static void mdr_cb_entries(struct mdr_tvol *tv, u64 first,
			   const struct mdr_wire_entry *e, unsigned int n)
{
	spin_lock_bh(&tv->cb_lock);
	if (!test_bit(MDR_TV_CLOSED, &tv->flags))
		tv->ops->entries(tv->owner, first, e, n);
	spin_unlock_bh(&tv->cb_lock);
}

static void mdr_cb_failed(struct mdr_tvol *tv, u64 first, unsigned int n,
			  int err)
{
	spin_lock_bh(&tv->cb_lock);
	if (!test_bit(MDR_TV_CLOSED, &tv->flags))
		tv->ops->failed(tv->owner, first, n, err);
	spin_unlock_bh(&tv->cb_lock);
}

/* Context: process; may sleep for as long as the volume drains. */
static void mdr_cb_invalidate(struct mdr_tvol *tv, u64 first, u64 count,
			      u64 generation, u32 reason,
			      struct mdr_inval_ack_info *ack)
{
	ktime_t start = ktime_get();

	mutex_lock(&tv->cb_mutex);
	if (!test_bit(MDR_TV_CLOSED, &tv->flags))
		tv->ops->invalidate(tv->owner, first, count, generation,
				    reason, ack);
	mutex_unlock(&tv->cb_mutex);
	trace_mdr_invalidate(tv->volume_id, first, count, generation, reason,
			     ktime_to_ns(ktime_sub(ktime_get(), start)));
}

/*
 * A reopen's drop. Not under @cb_mutex, which a push's drain of this
 * volume holds for as long as a slow device takes: the lease work of every
 * volume on the connection would wait for it. Close cannot interleave: it
 * sets UNLISTED under @rpc_mutex, which the caller holds, before it sets
 * CLOSED.
 * Context: process; does not sleep.
 */
static void mdr_cb_drop(struct mdr_tvol *tv, u64 count, u64 generation)
{
	lockdep_assert_held(&tv->rpc_mutex);
	if (!test_bit(MDR_TV_CLOSED, &tv->flags))
		tv->ops->drop(tv->owner, 0, count, generation);
}

/* ---- Requests -------------------------------------------------------- */

static struct mdr_req *mdr_req_get(struct mdr_conn *c, struct mdr_tvol *tv,
				   u8 op)
{
	struct mdr_req *req;
	unsigned long flags;

	spin_lock_irqsave(&c->lock, flags);
	req = list_first_entry_or_null(&c->free_reqs, struct mdr_req, list);
	if (req)
		list_del(&req->list);
	spin_unlock_irqrestore(&c->lock, flags);
	if (!req) {
		/* submit_bio context: no reclaim */
		req = kmalloc(sizeof(*req), GFP_NOWAIT | __GFP_NOWARN);
		if (!req)
			return NULL;
		req->pooled = false;
	}
	INIT_LIST_HEAD(&req->list);
	req->op = op;
	req->tv = tv;
	req->deadline = 0;
	req->start = local_clock();
	kref_get(&tv->ref);
	return req;
}

/* Context: any; the request is on no list. */
static void mdr_req_free(struct mdr_conn *c, struct mdr_req *req)
{
	struct mdr_tvol *tv = req->tv;
	unsigned long flags;

	if (req->pooled) {
		spin_lock_irqsave(&c->lock, flags);
		list_add(&req->list, &c->free_reqs);
		spin_unlock_irqrestore(&c->lock, flags);
	} else {
		kfree(req);
	}
	mdr_tv_put(tv);
}

static void mdr_req_fail(struct mdr_conn *c, struct mdr_req *req, int err)
{
	if (req->op == MDR_REQ_READ)
		mdr_cb_failed(req->tv, req->first, req->count, err);
	else
		mdr_cb_failed(req->tv, req->first, 1, err);
	mdr_req_free(c, req);
}

/*
 * Runs the fail work at @when at the latest. Every request on
 * conn->pending is covered: the work re-arms itself for the earliest
 * deadline it finds. conn->lock held (it guards @fail_at).
 */
static void __mdr_fail_at(struct mdr_conn *c, unsigned long when)
{
	unsigned long now = jiffies;

	if (delayed_work_pending(&c->fail_work) &&
	    !time_before(when, c->fail_at))
		return;
	c->fail_at = when;
	mod_delayed_work(mdr_wq, &c->fail_work,
			 time_after(when, now) ? when - now : 0);
}

/*
 * Queue for later. The fast_io_fail clock starts at the first park and
 * keeps running while the request is dispatched and parked again: one
 * back from a failed queue may be due already, or due before the next
 * run of the fail work (which did not see it while it was in a slot).
 * conn->lock held.
 */
static void __mdr_park(struct mdr_conn *c, struct mdr_req *req, bool head)
{
	if (!req->deadline)
		req->deadline = jiffies + g_fast_io_fail_tmo * HZ;
	__mdr_fail_at(c, req->deadline + 1);
	if (head)
		list_add(&req->list, &c->pending);
	else
		list_add_tail(&req->list, &c->pending);
}

/* ---- Connection failure ---------------------------------------------- */

/*
 * Marks the live queue @q broken and lets err_work tear it down; a no-op
 * when @q is no longer the live queue. @lost: it failed (the replica is
 * passed over for a while, transport/follow.h), rather than being left
 * for the leader a replica named. conn->lock held.
 * Return: true when @q was the live queue.
 */
static bool __mdr_conn_break(struct mdr_conn *c, struct mdr_queue *q,
			     bool lost)
{
	/* not live yet: the connect (or its proof) ends on it */
	if (c->connecting == q)
		WRITE_ONCE(q->failed, true);
	if (c->q != q || c->state != MDR_CONN_LIVE)
		return false;
	c->state = MDR_CONN_BROKEN;
	if (lost)
		mdr_follow_lost(&c->follow);
	queue_work(mdr_wq, &c->err_work);
	return true;
}

/* Context: any. __mdr_conn_break() of a queue that failed, logged. */
static void mdr_conn_error(struct mdr_conn *c, struct mdr_queue *q,
			   const char *why)
{
	unsigned long flags;
	bool first;

	spin_lock_irqsave(&c->lock, flags);
	first = __mdr_conn_break(c, q, true);
	spin_unlock_irqrestore(&c->lock, flags);
	if (first)
		mdr_conn_warn_rl(c, "connection to %pISpc lost: %s\n",
				 &q->addr, why);
}

/* A message from mdnode broke a rule: count, log, end the connection. */
static void mdr_bad_msg(struct mdr_conn *c, struct mdr_queue *q,
			const char *why)
{
	atomic64_inc(&c->stats.bad_messages);
	mdr_conn_warn_rl(c, "malformed message from mdnode: %s\n", why);
	/* read by the teardown, which err_work runs after this */
	WRITE_ONCE(q->error, -EPROTO);
	mdr_conn_error(c, q, "malformed message");
}

static void mdr_wc_error(struct mdr_queue *q, struct ib_wc *wc,
			 const char *what)
{
	struct mdr_conn *c = q->conn;

	/* a flush is the QP going down: the first real error said why */
	if (wc->status != IB_WC_WR_FLUSH_ERR)
		mdr_conn_warn_rl(c, "%s completion: %s (%d)\n", what,
				 ib_wc_status_msg(wc->status), wc->status);
	mdr_conn_error(c, q, "completion error");
}

/* ---- Lookups: RDMA READ --------------------------------------------- */

/*
 * Posts the window's READ and, on a queue a group's leader serves, the
 * READ of its epoch record after it, unsignaled then signaled: one
 * completion for both (an error in the first completes it with an error,
 * and flushes the second to the same handler). The responder executes
 * the two in order, so a record that shows the queue's epoch proves the
 * window was read while the leader served at it (mdr_read_done()).
 * conn->lock held (q->serving).
 */
static int mdr_post_read(struct mdr_queue *q, struct mdr_rd_slot *s)
{
	struct mdr_tvol *tv = s->req->tv;
	struct ib_rdma_wr wr[2] = {};
	struct ib_sge sge[2];

	s->posted = jiffies;
	s->with_rec = q->served && q->serving.epoch;
	sge[0].addr = s->dma;
	sge[0].length = s->window * sizeof(struct mdr_wire_entry);
	sge[0].lkey = q->pd->local_dma_lkey;
	ib_dma_sync_single_for_device(q->dev, s->dma, sge[0].length,
				      DMA_FROM_DEVICE);
	wr[0].wr.wr_cqe = &s->cqe;
	wr[0].wr.sg_list = &sge[0];
	wr[0].wr.num_sge = 1;
	wr[0].wr.opcode = IB_WR_RDMA_READ;
	wr[0].wr.send_flags = IB_SEND_SIGNALED;
	wr[0].remote_addr = tv->table_addr +
			    s->req->first * sizeof(struct mdr_wire_entry);
	wr[0].rkey = tv->rkey;
	if (s->with_rec) {
		sge[1].addr = s->rec_dma;
		sge[1].length = sizeof(*s->rec);
		sge[1].lkey = q->pd->local_dma_lkey;
		ib_dma_sync_single_for_device(q->dev, s->rec_dma,
					      sizeof(*s->rec), DMA_FROM_DEVICE);
		wr[1].wr.wr_cqe = &s->cqe;
		wr[1].wr.sg_list = &sge[1];
		wr[1].wr.num_sge = 1;
		wr[1].wr.opcode = IB_WR_RDMA_READ;
		wr[1].wr.send_flags = IB_SEND_SIGNALED;
		wr[1].remote_addr = q->serving.record_addr;
		wr[1].rkey = q->serving.record_rkey;
		wr[0].wr.send_flags = 0;
		wr[0].wr.next = &wr[1].wr;
	}
	return ib_post_send(q->qp, &wr[0].wr, NULL);
}

/*
 * How long @req has been out, in ns, for the histogram and tracepoints
 * only. local_clock() reads the TSC, where ktime_get() reads the
 * clocksource, which on some hosts (HPET, as in emulated guests) is a
 * device access on every call: in a profile of cold reads in such a
 * guest, the two reads of a lookup took about twice the samples of all of
 * this module's own functions. Two CPUs' clocks may differ by a little: a
 * request answered on another CPU can come out short, never negative.
 */
static u64 mdr_req_age(const struct mdr_req *req)
{
	u64 now = local_clock();

	return now > req->start ? now - req->start : 0;
}

static void mdr_hist_add(struct mdr_conn *c, u64 ns)
{
	u64 us = div_u64(ns, NSEC_PER_USEC);
	int b = 0;

	if (us >= 16)
		b = min_t(int, ilog2(us) - 3, MDR_HIST_BUCKETS - 1);
	atomic64_inc(&c->stats.hist[b]);
}

/*
 * Hands the checked window to the volume: runs of good entries through
 * entries(), entries the volume asked for that did not verify through
 * failed(-EIO). @verdict holds mdr_entry_check() of each. Context: softirq.
 */
static void mdr_read_deliver(struct mdr_conn *c, struct mdr_rd_slot *s,
			     const u8 *verdict)
{
	const struct mdr_wire_entry *e = s->buf;
	struct mdr_req *req = s->req;
	struct mdr_tvol *tv = req->tv;
	u32 i, run = 0;

	for (i = 0; i <= s->window; i++) {
		enum mdr_entry_verdict v = MDR_ENTRY_BAD_CRC;

		if (i < s->window)
			v = verdict[i];
		if (i < s->window && v == MDR_ENTRY_OK) {
			run++;
			continue;
		}
		if (run) {
			mdr_cb_entries(tv, req->first + i - run,
				       &e[i - run], run);
			atomic64_add(run, &c->stats.read_entries);
			run = 0;
		}
		if (i == s->window)
			break;
		atomic64_inc(&c->stats.bad_entries);
		mdr_conn_warn_rl(c, "volume %llu entry %llu refused: %s\n",
				 tv->volume_id, req->first + i,
				 mdr_entry_verdict_name(v));
		if (i < req->count)
			mdr_cb_failed(tv, req->first + i, 1, -EIO);
	}
}

static void mdr_read_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct mdr_rd_slot *s = container_of(wc->wr_cqe, struct mdr_rd_slot,
					     cqe);
	struct mdr_queue *q = s->q;
	struct mdr_conn *c = q->conn;
	const struct mdr_wire_entry *e = s->buf;
	struct mdr_req *req = s->req;
	u8 verdict[MDR_READ_MAX_ENTRIES];
	unsigned long flags;
	bool torn = false;
	u64 ns;
	u32 i;

	if (unlikely(wc->status != IB_WC_SUCCESS)) {
		/* the slot keeps its request: teardown parks it again */
		mdr_wc_error(q, wc, "READ");
		return;
	}
	ib_dma_sync_single_for_cpu(q->dev, s->dma,
				   s->window * sizeof(*e), DMA_FROM_DEVICE);
	atomic64_inc(&c->stats.reads);
	if (s->with_rec) {
		enum mdr_epoch_verdict ev;
		u64 seen;

		ib_dma_sync_single_for_cpu(q->dev, s->rec_dma, sizeof(*s->rec),
					   DMA_FROM_DEVICE);
		/* q->serving is set once, before the post (__mdr_check_serving()) */
		ev = mdr_epoch_rec_check(s->rec, q->serving.epoch, &seen);
		torn = ev == MDR_EPOCH_TORN;
		if (ev == MDR_EPOCH_OTHER || ev == MDR_EPOCH_BAD ||
		    (torn && s->tries >= MDR_TORN_RETRIES)) {
			/*
			 * Not read while it served at the queue's epoch: none
			 * of the window is used. The slot keeps its request,
			 * which the teardown parks for the next leader.
			 */
			atomic64_inc(&c->stats.stale_epochs);
			mdr_conn_warn_rl(c, "%pISpc no longer serves at epoch %llu (its record %s %llu): its tables are not used\n",
					 &q->addr, q->serving.epoch,
					 ev == MDR_EPOCH_OTHER ? "shows" :
					 "does not verify, epoch",
					 seen);
			mdr_conn_error(c, q, "a replaced leader's table");
			return;
		}
	}

	/*
	 * Each entry is checked once, here, every one of the window: what
	 * mdr_read_deliver() hands on is what was judged. A READ that raced
	 * an update sees a mix: read the window again.
	 */
	for (i = 0; i < s->window; i++) {
		verdict[i] = mdr_entry_check(&e[i], req->tv->volume_id,
					     req->first + i, 0);
		torn |= verdict[i] == MDR_ENTRY_BAD_CRC;
	}
	/* a torn record: the window is read again with it */
	if (torn && s->tries < MDR_TORN_RETRIES) {
		int ret = -ENOTCONN;

		s->tries++;
		atomic64_inc(&c->stats.torn);
		spin_lock_irqsave(&c->lock, flags);
		if (c->q == q && c->state == MDR_CONN_LIVE)
			ret = mdr_post_read(q, s);
		spin_unlock_irqrestore(&c->lock, flags);
		if (ret)
			mdr_conn_error(c, q, "cannot post a READ");
		return;
	}

	mdr_read_deliver(c, s, verdict);
	ns = mdr_req_age(req);
	mdr_hist_add(c, ns);
	trace_mdr_lookup(req->tv->volume_id, req->first, s->window, s->tries,
			 ns);

	spin_lock_irqsave(&c->lock, flags);
	s->req = NULL;
	clear_bit(s->idx, q->rd_busy);
	spin_unlock_irqrestore(&c->lock, flags);
	mdr_req_free(c, req);
	mdr_kick(c);
}

/* ---- RPCs ------------------------------------------------------------ */

/*
 * How long attempt s->attempts waits for its reply: twice as long as the
 * one before, so that a leader that stalls for a while (a takeover, its
 * journal under load) is not taken for a dead one, while a lost message
 * is still sent again within io_timeout_ms. The first also waits
 * s->extra: what mdnode may hold the answer for.
 */
static unsigned long mdr_rpc_attempt_tmo(const struct mdr_rpc_slot *s)
{
	return (s->tmo << s->attempts) + (s->attempts ? 0 : s->extra);
}

/* All the attempts of @s together. */
static unsigned long mdr_rpc_total_tmo(const struct mdr_rpc_slot *s)
{
	return s->tmo * ((2UL << MDR_RPC_RETRIES) - 1) + s->extra;
}

/* conn->lock held; the slot's request and message are in place. */
static int mdr_rpc_post(struct mdr_queue *q, struct mdr_rpc_slot *s)
{
	struct ib_send_wr wr = {};
	struct ib_sge sge;
	int ret;

	s->req_id = (q->next_seq++ << MDR_SLOT_BITS) | s->idx;
	mdr_msg_set_req_id(s->buf, s->req_id);
	ib_dma_sync_single_for_device(q->dev, s->dma, s->len, DMA_TO_DEVICE);
	sge.addr = s->dma;
	sge.length = s->len;
	sge.lkey = q->pd->local_dma_lkey;
	wr.wr_cqe = &s->cqe;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED;
	ret = ib_post_send(q->qp, &wr, NULL);
	if (ret)
		return ret;
	s->send_busy = true;
	s->wait_reply = true;
	mod_timer(&s->timer, jiffies + mdr_rpc_attempt_tmo(s));
	return 0;
}

/* conn->lock held: the slot is free once both halves are done. */
static void __mdr_rpc_slot_put(struct mdr_queue *q, struct mdr_rpc_slot *s)
{
	if (!s->send_busy && !s->wait_reply) {
		s->req = NULL;
		clear_bit(s->idx, q->rpc_busy);
	}
}

/* conn->lock held. Return: a free slot with @req in it, or NULL. */
static struct mdr_rpc_slot *__mdr_rpc_slot_get(struct mdr_queue *q,
					       struct mdr_req *req)
{
	unsigned int i = find_first_zero_bit(q->rpc_busy, q->nr_rpc);
	struct mdr_rpc_slot *s;

	if (i >= q->nr_rpc)
		return NULL;
	set_bit(i, q->rpc_busy);
	s = &q->rpc[i];
	s->req = req;
	s->attempts = 0;
	s->tmo = msecs_to_jiffies(max(g_io_timeout_ms, 1U));
	s->extra = 0;
	return s;
}

static void mdr_rpc_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct mdr_rpc_slot *s = container_of(wc->wr_cqe, struct mdr_rpc_slot,
					      cqe);
	struct mdr_queue *q = s->q;
	struct mdr_conn *c = q->conn;
	unsigned long flags;

	if (unlikely(wc->status != IB_WC_SUCCESS)) {
		mdr_wc_error(q, wc, "SEND");
		return;
	}
	spin_lock_irqsave(&c->lock, flags);
	s->send_busy = false;
	__mdr_rpc_slot_put(q, s);
	spin_unlock_irqrestore(&c->lock, flags);
	mdr_kick(c);
}

/*
 * An RPC attempt timed out: send it again under a new req_id (the late
 * reply to the old one is then recognised and dropped), or give up on
 * the connection after MDR_RPC_RETRIES. Context: timer (softirq).
 */
static void mdr_rpc_timeout(struct timer_list *t)
{
	struct mdr_rpc_slot *s = from_timer(s, t, timer);
	struct mdr_queue *q = s->q;
	struct mdr_conn *c = q->conn;
	const char *fail = NULL;
	unsigned long flags;

	spin_lock_irqsave(&c->lock, flags);
	if (!s->wait_reply || c->q != q || c->state != MDR_CONN_LIVE)
		goto out;
	if (!s->req) {
		/* abandoned by its waiter: nothing to retry */
		s->wait_reply = false;
		__mdr_rpc_slot_put(q, s);
		goto out;
	}
	if (s->send_busy) {
		/*
		 * Its buffer is still the HCA's: wait on. A SEND that never
		 * completes ends in a completion error (transport retries).
		 */
		mod_timer(&s->timer, jiffies + s->tmo);
		goto out;
	}
	atomic64_inc(&c->stats.timeouts);
	if (s->attempts >= MDR_RPC_RETRIES) {
		fail = "RPC timed out";
		goto out;
	}
	s->attempts++;
	atomic64_inc(&c->stats.retries);
	if (mdr_rpc_post(q, s))
		fail = "cannot post an RPC";
out:
	spin_unlock_irqrestore(&c->lock, flags);
	if (fail)
		mdr_conn_error(c, q, fail);
}

static void mdr_alloc_answered(struct mdr_conn *c, struct mdr_req *req,
			       const struct mdr_msg *m)
{
	struct mdr_tvol *tv = req->tv;
	unsigned long flags;
	int err;

	err = mdr_status_to_errno(m->status);
	if (!err) {
		atomic64_inc(&c->stats.allocated);
		mdr_cb_entries(tv, req->first, &m->alloc.entry, 1);
		mdr_req_free(c, req);
		return;
	}
	atomic64_inc(&c->stats.rpc_errors);
	if (err == -ESTALE) {
		/* lease lost: open again, then allocate */
		set_bit(MDR_TV_REOPEN, &tv->flags);
		spin_lock_irqsave(&c->lock, flags);
		__mdr_park(c, req, true);
		spin_unlock_irqrestore(&c->lock, flags);
		mod_delayed_work(mdr_wq, &c->lease_work, 0);
		return;
	}
	mdr_req_fail(c, req, err);
}

/*
 * Who served an OK reply of version 7 (m->serving): the first such reply
 * on a queue sets it, the others must say the same, and an epoch below
 * the highest the connection has seen (from any replica) is a replaced
 * leader's: its answer is not used. conn->lock held.
 * Return: NULL, or why the reply is refused.
 */
static const char *__mdr_check_serving(struct mdr_conn *c,
				       struct mdr_queue *q,
				       const struct mdr_msg *m)
{
	const struct mdr_serving_info *sv = &m->serving;

	if (m->status || q->acc.version < MDR_WIRE_VERSION_EPOCH ||
	    (m->opcode != MDR_OP_OPEN && m->opcode != MDR_OP_RENEW &&
	     m->opcode != MDR_OP_ALLOC))
		return NULL;
	/* field by field: the struct's padding is not the message's */
	if (q->served && (sv->epoch != q->serving.epoch ||
			  sv->record_addr != q->serving.record_addr ||
			  sv->record_rkey != q->serving.record_rkey))
		return "the epoch it serves at changed on the connection";
	if (!mdr_follow_epoch_ok(&c->follow, sv->epoch))
		return "it serves at an epoch below one seen";
	/*
	 * Set once, never changed: mdr_read_done() reads it without the lock,
	 * for a READ that mdr_post_read() posted under it after this.
	 */
	if (!q->served) {
		q->serving = *sv;
		q->served = true;
	}
	return NULL;
}

/*
 * A refusal of a replica that does not lead: NOT_LEADER; or, from a
 * replica of a group that has not served since the host came to it
 * (hops), AGAIN to an OPEN, which is how mdnode answers while it takes
 * over (it names no leader then, itself included). Both are refusals
 * that name none to mdr_follow_refused(): waited on, then passed.
 * Context: conn->lock held.
 */
static bool mdr_not_leading(struct mdr_conn *c, const struct mdr_msg *m)
{
	return m->status == MDR_ST_NOT_LEADER ||
	       (c->target.group && c->follow.hops &&
		m->opcode == MDR_OP_OPEN && m->status == MDR_ST_AGAIN);
}

/* A reply arrived: match it to its RPC. Context: softirq. */
static int mdr_reply(struct mdr_queue *q, const struct mdr_msg *m,
		     const char **why)
{
	struct mdr_conn *c = q->conn;
	u32 idx = m->req_id & ((1 << MDR_SLOT_BITS) - 1);
	u64 seq = m->req_id >> MDR_SLOT_BITS;
	struct sockaddr_storage hint;
	enum mdr_follow_verdict verdict = MDR_FOLLOW_WAIT;
	const char *stale = NULL;
	struct mdr_rpc_slot *s;
	struct mdr_req *req;
	unsigned long flags;
	bool follow = false;
	int err;

	if (m->opcode == MDR_OP_PING) {
		*why = "ping reply: no ping was sent";
		return -EPROTO;
	}
	spin_lock_irqsave(&c->lock, flags);
	if (idx >= q->nr_rpc) {
		*why = "reply to an unknown req_id";
		goto bad;
	}
	s = &q->rpc[idx];
	if (!s->wait_reply || s->req_id != m->req_id || !s->req) {
		if (seq < q->next_seq) {
			/* to an attempt re-sent since, or abandoned */
			atomic64_inc(&c->stats.late);
			if (s->wait_reply && s->req_id == m->req_id) {
				s->wait_reply = false;
				del_timer(&s->timer);
				__mdr_rpc_slot_put(q, s);
			}
			spin_unlock_irqrestore(&c->lock, flags);
			return 0;
		}
		*why = "reply to an unknown req_id";
		goto bad;
	}
	req = s->req;
	if (m->opcode != (req->op == MDR_REQ_ALLOC ? MDR_OP_ALLOC :
			  req->rpc_op)) {
		*why = "reply opcode differs from the request's";
		goto bad;
	}
	if (m->opcode == MDR_OP_ALLOC && !m->status &&
	    (m->alloc.volume_id != req->tv->volume_id ||
	     m->alloc.index != req->first)) {
		*why = "alloc_rep for another extent";
		goto bad;
	}
	if (m->opcode == MDR_OP_OPEN && !m->status &&
	    m->open.volume_id != req->tv->volume_id) {
		*why = "open_rep for another volume";
		goto bad;
	}
	s->wait_reply = false;
	del_timer(&s->timer);
	s->req = NULL;
	__mdr_rpc_slot_put(q, s);
	atomic64_inc(&c->stats.rpcs);
	/*
	 * Before the waiter learns of it: a waiter that asks again must not
	 * find this queue live and ask the same replica.
	 */
	if (mdr_not_leading(c, m)) {
		static const struct mdr_leader_info none;

		verdict = mdr_follow_refused(&c->follow,
					     m->status == MDR_ST_NOT_LEADER ?
					     &m->leader : &none);
		/* NEXT: passed over for a while, as one that failed */
		if (verdict != MDR_FOLLOW_WAIT &&
		    __mdr_conn_break(c, q, verdict == MDR_FOLLOW_NEXT)) {
			hint = c->follow.hint;
			follow = true;
		}
	}
	/* an answer of a replaced leader: asked again at the next replica */
	stale = __mdr_check_serving(c, q, m);
	if (stale)
		__mdr_conn_break(c, q, true);
	err = stale ? -EAGAIN : mdr_status_to_errno(m->status);
	trace_mdr_rpc(req->tv ? req->tv->volume_id : 0, m->opcode, req->first,
		      err, mdr_req_age(req));
	if (req->op == MDR_REQ_RPC) {
		/* the waiter owns req: finish it under the lock it checks */
		req->result = err;
		if (req->result)
			atomic64_inc(&c->stats.rpc_errors);
		if (!stale)
			*req->reply = *m;
		complete(req->done);
		req = NULL;
	}
	spin_unlock_irqrestore(&c->lock, flags);
	if (follow && verdict == MDR_FOLLOW_GO)
		mdr_conn_info(c, "%pISpc does not lead: following replica %u at %pISpc (epoch %llu)\n",
			      &q->addr, m->leader.replica, &hint,
			      m->leader.epoch);
	else if (follow)
		mdr_conn_info(c, "%pISpc has named no other leader %u times: trying the next replica\n",
			      &q->addr, MDR_FOLLOW_WAITS);
	if (stale) {
		atomic64_inc(&c->stats.stale_epochs);
		mdr_conn_warn_rl(c, "%pISpc answered at epoch %llu: %s; not used\n",
				 &q->addr, m->serving.epoch, stale);
		if (req)
			mdr_req_fail(c, req, -EAGAIN);
	} else if (req) {
		mdr_alloc_answered(c, req, m);
	}
	mdr_kick(c);
	return 0;
bad:
	spin_unlock_irqrestore(&c->lock, flags);
	return -EPROTO;
}

/**
 * mdr_rpc() - a synchronous RPC about @tv
 * @c:		the connection
 * @tv:		the volume
 * @op:		MDR_OP_OPEN, MDR_OP_CLOSE or MDR_OP_RENEW
 * @reply:	the checked reply (status MDR_ST_OK) on success
 * @inc:	the queue incarnation it was answered on (may be NULL)
 *
 * Context: process, sleeps at most for the retries and a second more.
 * Return: 0, -errno of the reply's status, -ENOTCONN when the connection
 * is not live or failed meanwhile, -EPROTO when it failed on a malformed
 * message from mdnode, -ETIMEDOUT.
 */
static int mdr_rpc_vol(struct mdr_conn *c, struct mdr_tvol *tv, u16 op,
		       u64 volume_id, struct mdr_msg *reply, u32 *inc);

static int mdr_rpc(struct mdr_conn *c, struct mdr_tvol *tv, u16 op,
		   struct mdr_msg *reply, u32 *inc)
{
	return mdr_rpc_vol(c, tv, op, tv->volume_id, reply, inc);
}

/*
 * Posts @s, holding @req and its message, on @q and waits for the reply.
 * Called with conn->lock held (@flags from its irqsave); returns with it
 * released. A reply that does not come in time is abandoned in its slot:
 * one that comes later is recognised as late and dropped.
 *
 * On the live queue, a failure of the queue ends the wait through its
 * teardown, which completes @req. The queue being connected has no
 * teardown until its builder (the caller) frees it: then the wait ends
 * when the queue failed (@q->failed) or the connection died, checked in
 * slices; @q lives as long as this caller does.
 */
static int mdr_rpc_post_wait(struct mdr_conn *c, struct mdr_queue *q,
			     struct mdr_rpc_slot *s, struct mdr_req *req,
			     unsigned long flags)
	__releases(&c->lock)
{
	bool own = c->connecting == q;
	unsigned long tmo, left, end;
	int ret;

	req->rpc_inc = q->inc;
	ret = mdr_rpc_post(q, s);
	if (ret) {
		s->req = NULL;
		clear_bit(s->idx, q->rpc_busy);
	}
	tmo = mdr_rpc_total_tmo(s) + msecs_to_jiffies(1000);
	spin_unlock_irqrestore(&c->lock, flags);
	if (ret) {
		mdr_conn_error(c, q, "cannot post an RPC");
		return -ENOTCONN;
	}

	if (!own) {
		left = wait_for_completion_timeout(req->done, tmo);
	} else {
		end = jiffies + tmo;
		while (!(left = wait_for_completion_timeout(req->done,
						msecs_to_jiffies(50)))) {
			if (READ_ONCE(q->failed) ||
			    READ_ONCE(c->state) == MDR_CONN_DEAD ||
			    time_after(jiffies, end))
				break;
		}
	}
	spin_lock_irqsave(&c->lock, flags);
	/* complete() runs under c->lock: this check cannot race it */
	if (!left && !try_wait_for_completion(req->done)) {
		/* still in its slot on the queue: abandon it there */
		s->req = NULL;
		ret = own && q->failed ? (READ_ONCE(q->error) ?: -ENOTCONN) :
		      own && c->state == MDR_CONN_DEAD ? -ESHUTDOWN :
		      -ETIMEDOUT;
	} else {
		ret = req->result;
	}
	spin_unlock_irqrestore(&c->lock, flags);
	return ret;
}

/* mdr_rpc() naming @volume_id in the request: 0 is RENEW of every lease. */
static int mdr_rpc_vol(struct mdr_conn *c, struct mdr_tvol *tv, u16 op,
		       u64 volume_id, struct mdr_msg *reply, u32 *inc)
{
	DECLARE_COMPLETION_ONSTACK(done);
	struct mdr_req req = {
		.tv = tv, .op = MDR_REQ_RPC, .rpc_op = op, .done = &done,
		.reply = reply, .result = -ETIMEDOUT, .start = local_clock(),
	};
	unsigned long deadline = jiffies + msecs_to_jiffies(1000);
	struct mdr_rpc_slot *s;
	struct mdr_queue *q;
	unsigned long flags;
	int ret;

	for (;;) {
		spin_lock_irqsave(&c->lock, flags);
		q = c->q;
		if (!q || c->state != MDR_CONN_LIVE) {
			spin_unlock_irqrestore(&c->lock, flags);
			return -ENOTCONN;
		}
		s = __mdr_rpc_slot_get(q, &req);
		if (s)
			break;
		spin_unlock_irqrestore(&c->lock, flags);
		if (time_after(jiffies, deadline))
			return -EBUSY;
		usleep_range(500, 1000);
	}
	if (op == MDR_OP_OPEN)
		s->len = mdr_msg_open_req(s->buf, 0, volume_id);
	else
		s->len = mdr_msg_vol_req(s->buf, op, 0, volume_id);
	ret = mdr_rpc_post_wait(c, q, s, &req, flags);
	if (inc)
		*inc = req.rpc_inc;
	return ret;
}

/*
 * The host's proof of its key, and mdnode's back, on the queue just
 * connected, before it is live (Documentation/wire-protocol.md, "Host
 * authentication"): no OPEN, ALLOC or READ goes to a node that has not
 * proved it holds the same secret, and mdnode serves none before ours.
 * Context: process, conn->mutex held; bounded by the RPC timeout, ended
 * early by a failure of the queue or the last detach.
 * Return: 0; -EACCES when mdnode refused the proof (unknown host, another
 * tenant, another key), -EKEYREJECTED when mdnode's proof is wrong, the
 * key's error (revoked, expired, invalidated), or the RPC's.
 */
static int mdr_queue_auth(struct mdr_conn *c, struct mdr_queue *q)
{
	DECLARE_COMPLETION_ONSTACK(done);
	struct mdr_wire_auth_transcript t[2];
	struct mdr_msg reply;
	struct mdr_req req = {
		.op = MDR_REQ_RPC, .rpc_op = MDR_OP_HOST_AUTH, .done = &done,
		.reply = &reply, .result = -ETIMEDOUT, .start = local_clock(),
	};
	u8 nonce[16], mac[2][32];
	struct mdr_rpc_slot *s;
	unsigned long flags;
	int ret;

	if (q->acc.version < MDR_WIRE_VERSION_AUTH)
		return -EPROTO;	/* the connect offered no less */
	get_random_bytes(nonce, sizeof(nonce));
	mdr_auth_transcript(&t[0], MDR_AUTH_LABEL_HOST, nonce, &q->params,
			    &q->acc);
	mdr_auth_transcript(&t[1], MDR_AUTH_LABEL_NODE, nonce, &q->params,
			    &q->acc);
	/* both now: the node's proof is checked against the same secret */
	ret = mdr_key_macs(c->target.key, c->auth_tfm, t, &mac[0][0], 2);
	if (ret) {
		atomic64_inc(&c->stats.auth_failures);
		mdr_conn_warn_rl(c, "key %d cannot be used: %d\n",
				 c->key_serial, ret);
		return ret;
	}
	spin_lock_irqsave(&c->lock, flags);
	s = __mdr_rpc_slot_get(q, &req);	/* a new queue: all are free */
	if (!s) {
		spin_unlock_irqrestore(&c->lock, flags);
		return -EBUSY;
	}
	s->len = mdr_msg_host_auth_req(s->buf, 0, nonce, mac[0]);
	ret = mdr_rpc_post_wait(c, q, s, &req, flags);
	if (ret == -EPERM) {
		atomic64_inc(&c->stats.auth_failures);
		mdr_conn_warn_rl(c, "mdnode refused this host's proof: host %016llx is unknown there, of another tenant, or has another key\n",
				 c->target.host_id);
		return -EACCES;
	}
	if (ret)
		return ret;
	if (crypto_memneq(mac[1], reply.auth_mac, sizeof(mac[1]))) {
		atomic64_inc(&c->stats.auth_failures);
		mdr_conn_warn_rl(c, "the node did not prove it holds this host's key: not the storage node the key is for\n");
		return -EKEYREJECTED;
	}
	return 0;
}

/* ---- Asynchronous requests: dispatch, park, fail --------------------- */

/*
 * conn->lock held. Return: true when posted (or its queue failed: the
 * slot keeps it for the teardown), false to leave it parked.
 */
static bool __mdr_dispatch(struct mdr_conn *c, struct mdr_queue *q,
			   struct mdr_req *req)
{
	struct mdr_tvol *tv = req->tv;
	unsigned int i;
	int ret;

	if (tv->open_inc != q->inc || test_bit(MDR_TV_REOPEN, &tv->flags))
		return false;
	if (req->op == MDR_REQ_READ) {
		struct mdr_rd_slot *s;

		if (req->first >= tv->nr_extents ||
		    req->count > tv->nr_extents - req->first) {
			/* the table shrank under it: fail it, from the work */
			req->deadline = jiffies;
			__mdr_fail_at(c, jiffies);
			return false;
		}
		i = find_first_zero_bit(q->rd_busy, MDR_READ_SLOTS);
		if (i >= MDR_READ_SLOTS)
			return false;
		s = &q->rd[i];
		/* the volume chose the window (its prefetch); split to fit */
		s->window = req->count;
		s->tries = 0;
		s->req = req;
		set_bit(i, q->rd_busy);
		ret = mdr_post_read(q, s);
	} else {
		struct mdr_rpc_slot *s = __mdr_rpc_slot_get(q, req);

		if (!s)
			return false;
		/* mdnode answers once other holders acked: up to a lease */
		s->extra = msecs_to_jiffies(tv->lease_ms);
		s->len = mdr_msg_alloc_req(s->buf, 0, tv->volume_id,
					   req->first);
		ret = mdr_rpc_post(q, s);
	}
	if (ret)	/* the slot keeps the request: teardown parks it */
		__mdr_conn_break(c, q, true);
	return true;
}

static void mdr_fail_list(struct mdr_conn *c, struct list_head *fail)
{
	struct mdr_req *req, *tmp;

	list_for_each_entry_safe(req, tmp, fail, list) {
		list_del_init(&req->list);
		mdr_req_fail(c, req, req->result);
	}
}

/* Start what waits, as far as slots allow. Context: any. */
static void mdr_kick(struct mdr_conn *c)
{
	struct mdr_req *req, *tmp;
	unsigned long flags;

	spin_lock_irqsave(&c->lock, flags);
	if (c->q && c->state == MDR_CONN_LIVE) {
		list_for_each_entry_safe(req, tmp, &c->pending, list) {
			list_del_init(&req->list);
			if (!__mdr_dispatch(c, c->q, req))
				list_add_tail(&req->list, &tmp->list);
			if (c->state != MDR_CONN_LIVE)
				break;
		}
	}
	spin_unlock_irqrestore(&c->lock, flags);
}

/* Fails what waited fast_io_fail_tmo seconds. Context: workqueue. */
static void mdr_fail_work(struct work_struct *w)
{
	struct mdr_conn *c = container_of(to_delayed_work(w), struct mdr_conn,
					  fail_work);
	unsigned long flags, now = jiffies, next = 0;
	struct mdr_req *req, *tmp;
	unsigned int n = 0;
	LIST_HEAD(fail);

	spin_lock_irqsave(&c->lock, flags);
	list_for_each_entry_safe(req, tmp, &c->pending, list) {
		if (time_after_eq(now, req->deadline)) {
			req->result = -EIO;
			list_move_tail(&req->list, &fail);
			atomic64_inc(&c->stats.failed_fast);
			n++;
		} else if (!next || time_before(req->deadline, next)) {
			next = req->deadline;
		}
	}
	if (next)
		__mdr_fail_at(c, next + 1);
	spin_unlock_irqrestore(&c->lock, flags);
	/* the volumes' words for their own waits (volume/wait.c) */
	if (n)
		mdr_conn_warn_rl(c, "%u requests waited %us for an answer of the metadata service: failing them\n",
				 n, g_fast_io_fail_tmo);
	mdr_fail_list(c, &fail);
}

/* ---- Invalidation pushes --------------------------------------------- */

static void mdr_push_free(struct mdr_push *p)
{
	struct mdr_conn *c = p->conn;
	unsigned long flags;

	spin_lock_irqsave(&c->lock, flags);
	clear_bit(p->idx, c->push_busy);
	spin_unlock_irqrestore(&c->lock, flags);
	mdr_conn_put(c);
}

static void mdr_ack_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct mdr_push *p = container_of(wc->wr_cqe, struct mdr_push, cqe);
	struct mdr_queue *q = cq->cq_context;

	ib_dma_unmap_single(p->dev, p->dma, sizeof(p->buf), DMA_TO_DEVICE);
	if (unlikely(wc->status != IB_WC_SUCCESS))
		mdr_wc_error(q, wc, "ack SEND");
	mdr_push_free(p);
}

/* Ack on the queue the push came in on, if it still lives. */
static void mdr_push_ack(struct mdr_conn *c, struct mdr_push *p)
{
	struct ib_send_wr wr = {};
	struct mdr_queue *q;
	struct ib_sge sge;
	unsigned long flags;
	size_t len;
	int ret;

	len = mdr_msg_inval_ack(p->buf, p->req_id, &p->inval, p->version,
				&p->ack);
	spin_lock_irqsave(&c->lock, flags);
	q = c->q;
	if (!q || q->inc != p->inc || c->state != MDR_CONN_LIVE) {
		/* mdnode forgot the push with the connection */
		spin_unlock_irqrestore(&c->lock, flags);
		mdr_push_free(p);
		return;
	}
	p->dev = q->dev;
	p->dma = ib_dma_map_single(q->dev, p->buf, sizeof(p->buf),
				   DMA_TO_DEVICE);
	if (ib_dma_mapping_error(q->dev, p->dma)) {
		spin_unlock_irqrestore(&c->lock, flags);
		mdr_push_free(p);
		mdr_conn_error(c, q, "cannot map an ack");
		return;
	}
	/* before the post: mdnode may push again as soon as it has the ack */
	q->pushes--;
	sge.addr = p->dma;
	sge.length = len;
	sge.lkey = q->pd->local_dma_lkey;
	p->cqe.done = mdr_ack_done;
	wr.wr_cqe = &p->cqe;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED;
	ret = ib_post_send(q->qp, &wr, NULL);
	spin_unlock_irqrestore(&c->lock, flags);
	if (ret) {
		ib_dma_unmap_single(p->dev, p->dma, sizeof(p->buf),
				    DMA_TO_DEVICE);
		mdr_push_free(p);
		mdr_conn_error(c, q, "cannot post an ack");
	}
}

static struct mdr_tvol *mdr_tv_find(struct mdr_conn *c, u64 volume_id)
{
	struct mdr_tvol *tv;

	mutex_lock(&c->vols_mutex);
	list_for_each_entry(tv, &c->vols, node) {
		if (tv->volume_id == volume_id) {
			kref_get(&tv->ref);
			mutex_unlock(&c->vols_mutex);
			return tv;
		}
	}
	mutex_unlock(&c->vols_mutex);
	return NULL;
}

/*
 * Context: workqueue; sleeps while the volume drains. Like the lease,
 * reconnect and error works, it runs with memalloc_noio: IO of the volumes
 * waits for it, so nothing it allocates may wait for their IO.
 */
static void mdr_push_work(struct work_struct *w)
{
	struct mdr_push *p = container_of(w, struct mdr_push, work);
	unsigned int noio = memalloc_noio_save();
	struct mdr_conn *c = p->conn;
	struct mdr_inval_info *inv = &p->inval;
	struct mdr_tvol *tv = mdr_tv_find(c, inv->volume_id);

	if (tv) {
		u64 nr = READ_ONCE(tv->nr_extents);

		/* only what the table holds: a shrink may name more */
		if (inv->first < nr)
			mdr_cb_invalidate(tv, inv->first,
					  min(inv->count, nr - inv->first),
					  inv->generation, inv->reason,
					  &p->ack);
		mdr_tv_put(tv);
	}
	atomic64_inc(&c->stats.invalidations);
	mdr_inject_delay(MDR_WIN_ACK);
	mdr_push_ack(c, p);
	memalloc_noio_restore(noio);
}

/* A push arrived. Context: softirq. */
static int mdr_push_recv(struct mdr_queue *q, const struct mdr_msg *m,
			 const char **why)
{
	struct mdr_conn *c = q->conn;
	struct mdr_push *p;
	unsigned long flags;
	unsigned int i;

	if (m->opcode != MDR_OP_INVALIDATE)
		return 0;	/* PING from mdnode: nothing asked of us */
	if (READ_ONCE(q->prelive)) {
		*why = "push before the connection was live";
		return -EPROTO;
	}
	if (m->inval.reason == MDR_INVAL_TRACK && q->acc.version < 2) {
		*why = "track push on a version 1 connection";
		return -EPROTO;
	}
	spin_lock_irqsave(&c->lock, flags);
	i = find_first_zero_bit(c->push_busy, MDR_PUSH_POOL);
	if (q->pushes >= q->acc.push_credits || i >= MDR_PUSH_POOL) {
		spin_unlock_irqrestore(&c->lock, flags);
		*why = "push beyond the push credits";
		return -EPROTO;
	}
	set_bit(i, c->push_busy);
	q->pushes++;
	spin_unlock_irqrestore(&c->lock, flags);

	p = &c->push_pool[i];
	p->conn = c;
	p->idx = i;
	p->inc = q->inc;
	p->version = q->acc.version;
	p->req_id = m->req_id;
	p->inval = m->inval;
	p->ack = (struct mdr_inval_ack_info){};
	kref_get(&c->ref);
	INIT_WORK(&p->work, mdr_push_work);
	queue_work(mdr_wq, &p->work);
	return 0;
}

/* ---- Receives -------------------------------------------------------- */

static int mdr_post_recv(struct mdr_queue *q, struct mdr_recv *r)
{
	struct ib_recv_wr wr = {};
	struct ib_sge sge;

	ib_dma_sync_single_for_device(q->dev, r->dma, MDR_RECV_MSG,
				      DMA_FROM_DEVICE);
	sge.addr = r->dma;
	sge.length = MDR_RECV_MSG;
	sge.lkey = q->pd->local_dma_lkey;
	wr.wr_cqe = &r->cqe;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ib_post_recv(q->qp, &wr, NULL);
}

static void mdr_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct mdr_recv *r = container_of(wc->wr_cqe, struct mdr_recv, cqe);
	struct mdr_queue *q = r->q;
	struct mdr_conn *c = q->conn;
	const char *why = NULL;
	struct mdr_msg m;
	int ret;

	if (unlikely(wc->status != IB_WC_SUCCESS)) {
		mdr_wc_error(q, wc, "RECV");
		return;
	}
	ib_dma_sync_single_for_cpu(q->dev, r->dma, MDR_RECV_MSG,
				   DMA_FROM_DEVICE);
	ret = mdr_msg_parse(r->buf, min_t(u32, wc->byte_len, MDR_RECV_MSG),
			    q->acc.version, &m, &why);
	if (!ret)
		ret = mdr_msg_is_reply(&m) ? mdr_reply(q, &m, &why) :
					     mdr_push_recv(q, &m, &why);
	if (ret) {
		mdr_bad_msg(c, q, why);
		return;
	}
	if (mdr_post_recv(q, r))
		mdr_conn_error(c, q, "cannot post a receive");
}

/* ---- Queue build and teardown ---------------------------------------- */

static void mdr_qp_event(struct ib_event *ev, void *ctx)
{
	struct mdr_queue *q = ctx;

	if (ev->event == IB_EVENT_QP_FATAL ||
	    ev->event == IB_EVENT_QP_ACCESS_ERR ||
	    ev->event == IB_EVENT_QP_REQ_ERR)
		mdr_conn_error(q->conn, q, ib_event_msg(ev->event));
}

static int mdr_cm_addr_resolved(struct mdr_queue *q)
{
	return rdma_resolve_route(q->cm_id, MDR_CM_TIMEOUT_MS);
}

static int mdr_cm_established(struct mdr_queue *q, struct rdma_cm_event *ev)
{
	const char *why = NULL;
	int ret;

	ret = mdr_conn_rep_parse(ev->param.conn.private_data,
				 ev->param.conn.private_data_len, &q->params,
				 &q->acc, &why);
	if (ret) {
		atomic64_inc(&q->conn->stats.bad_messages);
		mdr_conn_warn_rl(q->conn, "bad accept from mdnode: %s\n", why);
		return ret;
	}
	q->acc.host_qpn = q->qp->qp_num;
	q->acc.node_qpn = ev->param.conn.qp_num;
	q->established = true;
	return 0;
}

static int mdr_cm_rejected(struct mdr_queue *q, struct rdma_cm_event *ev)
{
	const char *why = NULL;
	const void *pd;
	u16 status, version;
	u8 len = 0;

	pd = rdma_consumer_reject_data(q->cm_id, ev, &len);
	if (!pd || mdr_conn_rej_parse(pd, len, &status, &version, &why)) {
		mdr_conn_warn_rl(q->conn, "connection refused (%s)\n",
				 rdma_reject_msg(q->cm_id, ev->status));
		return -ECONNREFUSED;
	}
	if (status == MDR_ST_PERM && q->conn->target.key) {
		/* a keyed host: refused before any proof, by the registry */
		atomic64_inc(&q->conn->stats.auth_failures);
		mdr_conn_warn_rl(q->conn, "mdnode refused this host at the connect: host %016llx is not registered there for tenant %u\n",
				 q->conn->target.host_id, q->conn->target.tenant);
		return -EACCES;
	}
	if (status == MDR_ST_PERM)
		mdr_conn_warn_rl(q->conn, "mdnode refused the connection: it requires hosts to authenticate (attach with a key)\n");
	else
		mdr_conn_warn_rl(q->conn, "mdnode refused the connection: status %u (version %u)\n",
				 status, version);
	return mdr_status_to_errno(status);
}

/* After the connect: the connection goes down. */
static void mdr_cm_lost(struct mdr_queue *q, struct rdma_cm_event *ev)
{
	mdr_conn_error(q->conn, q, rdma_event_msg(ev->event));
}

/*
 * One handler for every event of a queue's cm_id; each event has its
 * helper, and the connect steps end in q->cm_done. Context: rdma_cm's
 * work; never destroys the id (returns 0 always).
 */
static int mdr_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct mdr_queue *q = id->context;
	int err = 0;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		err = mdr_cm_addr_resolved(q);
		if (!err)
			return 0;	/* ROUTE_RESOLVED ends the step */
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		err = mdr_cm_established(q, ev);
		break;
	case RDMA_CM_EVENT_REJECTED:
		err = mdr_cm_rejected(q, ev);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		err = -EHOSTUNREACH;
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
		err = -ECONNRESET;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_ADDR_CHANGE:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		if (q->established) {
			mdr_cm_lost(q, ev);
			return 0;
		}
		err = -ECONNRESET;
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/* handled through the ib_client remove callback */
		if (q->established)
			return 0;
		err = -ENODEV;
		break;
	default:
		return 0;
	}
	q->cm_error = err;
	complete(&q->cm_done);
	return 0;
}

static int mdr_cm_wait(struct mdr_queue *q)
{
	unsigned long end = jiffies + msecs_to_jiffies(MDR_CM_TIMEOUT_MS * 2);

	/* in slices: the last user's detach must not wait for a connect */
	while (!wait_for_completion_timeout(&q->cm_done,
					    msecs_to_jiffies(50))) {
		if (READ_ONCE(q->conn->state) == MDR_CONN_DEAD)
			return -ESHUTDOWN;
		if (time_after(jiffies, end))
			return -ETIMEDOUT;
	}
	reinit_completion(&q->cm_done);
	return q->cm_error;
}

static void mdr_queue_free_bufs(struct mdr_queue *q)
{
	if (q->recv_buf) {
		if (q->recv_dma)
			ib_dma_unmap_single(q->dev, q->recv_dma,
					    MDR_RECV_DEPTH * MDR_RECV_MSG,
					    DMA_FROM_DEVICE);
		kfree(q->recv_buf);
	}
	if (q->rpc_buf) {
		if (q->rpc_dma)
			ib_dma_unmap_single(q->dev, q->rpc_dma,
					    MDR_RPC_DEPTH * MDR_SEND_MSG,
					    DMA_TO_DEVICE);
		kfree(q->rpc_buf);
	}
	if (q->rd_buf) {
		if (q->rd_dma)
			ib_dma_unmap_single(q->dev, q->rd_dma,
					    MDR_READ_SLOTS * MDR_WIRE_READ_MAX,
					    DMA_FROM_DEVICE);
		kfree(q->rd_buf);
	}
	if (q->rec_buf) {
		if (q->rec_dma)
			ib_dma_unmap_single(q->dev, q->rec_dma,
					    MDR_READ_SLOTS *
					    sizeof(struct mdr_wire_epoch_rec),
					    DMA_FROM_DEVICE);
		kfree(q->rec_buf);
	}
}

static int mdr_map(struct mdr_queue *q, void **buf, u64 *dma, size_t len,
		   enum dma_data_direction dir)
{
	u64 addr;

	*buf = kzalloc(len, GFP_KERNEL);
	if (!*buf)
		return -ENOMEM;
	addr = ib_dma_map_single(q->dev, *buf, len, dir);
	if (ib_dma_mapping_error(q->dev, addr))
		return -ENOMEM;
	*dma = addr;
	return 0;
}

static int mdr_queue_alloc_bufs(struct mdr_queue *q)
{
	unsigned int i;
	int ret;

	ret = mdr_map(q, &q->recv_buf, &q->recv_dma,
		      MDR_RECV_DEPTH * MDR_RECV_MSG, DMA_FROM_DEVICE);
	if (!ret)
		ret = mdr_map(q, &q->rpc_buf, &q->rpc_dma,
			      MDR_RPC_DEPTH * MDR_SEND_MSG, DMA_TO_DEVICE);
	if (!ret)
		ret = mdr_map(q, &q->rd_buf, &q->rd_dma,
			      MDR_READ_SLOTS * MDR_WIRE_READ_MAX,
			      DMA_FROM_DEVICE);
	if (!ret)
		ret = mdr_map(q, &q->rec_buf, &q->rec_dma,
			      MDR_READ_SLOTS *
			      sizeof(struct mdr_wire_epoch_rec),
			      DMA_FROM_DEVICE);
	if (ret)
		return ret;
	for (i = 0; i < MDR_RECV_DEPTH; i++) {
		q->recv[i].q = q;
		q->recv[i].cqe.done = mdr_recv_done;
		q->recv[i].buf = q->recv_buf + i * MDR_RECV_MSG;
		q->recv[i].dma = q->recv_dma + i * MDR_RECV_MSG;
	}
	for (i = 0; i < MDR_RPC_DEPTH; i++) {
		q->rpc[i].q = q;
		q->rpc[i].idx = i;
		q->rpc[i].cqe.done = mdr_rpc_send_done;
		q->rpc[i].buf = q->rpc_buf + i * MDR_SEND_MSG;
		q->rpc[i].dma = q->rpc_dma + i * MDR_SEND_MSG;
		timer_setup(&q->rpc[i].timer, mdr_rpc_timeout, 0);
	}
	for (i = 0; i < MDR_READ_SLOTS; i++) {
		q->rd[i].q = q;
		q->rd[i].idx = i;
		q->rd[i].cqe.done = mdr_read_done;
		q->rd[i].buf = q->rd_buf + i * MDR_WIRE_READ_MAX;
		q->rd[i].dma = q->rd_dma + i * MDR_WIRE_READ_MAX;
		q->rd[i].rec = (struct mdr_wire_epoch_rec *)q->rec_buf + i;
		q->rd[i].rec_dma = q->rec_dma +
				   i * sizeof(struct mdr_wire_epoch_rec);
	}
	return 0;
}

static int mdr_queue_create_ib(struct mdr_queue *q)
{
	struct ib_qp_init_attr attr = {};
	unsigned int send_wr, recv_wr, i;
	int ret;

	q->dev = q->cm_id->device;
	q->pd = ib_alloc_pd(q->dev, 0);
	if (IS_ERR(q->pd)) {
		ret = PTR_ERR(q->pd);
		q->pd = NULL;
		return ret;
	}
	/* a READ slot posts two: the window, then the epoch record */
	send_wr = MDR_RPC_DEPTH + 2 * MDR_READ_SLOTS + MDR_PUSH_POOL +
		  1; /* +1 for drain */
	recv_wr = MDR_RECV_DEPTH + 1; /* +1 for drain */
	q->cq = ib_alloc_cq(q->dev, q, send_wr + recv_wr, 0, IB_POLL_SOFTIRQ);
	if (IS_ERR(q->cq)) {
		ret = PTR_ERR(q->cq);
		q->cq = NULL;
		return ret;
	}
	attr.event_handler = mdr_qp_event;
	attr.qp_context = q;
	attr.send_cq = q->cq;
	attr.recv_cq = q->cq;
	attr.qp_type = IB_QPT_RC;
	attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	attr.cap.max_send_wr = send_wr;
	attr.cap.max_recv_wr = recv_wr;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	ret = rdma_create_qp(q->cm_id, q->pd, &attr);
	if (ret)
		return ret;
	q->qp = q->cm_id->qp;

	ret = mdr_queue_alloc_bufs(q);
	if (ret)
		return ret;
	/* the QP is in INIT: receives may be posted before the connect */
	for (i = 0; i < MDR_RECV_DEPTH; i++) {
		ret = mdr_post_recv(q, &q->recv[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/* Frees what exists of a queue no completion can reach any more. */
static void mdr_queue_free(struct mdr_queue *q)
{
	if (q->qp)
		rdma_destroy_qp(q->cm_id);
	if (q->cq)
		ib_free_cq(q->cq);
	if (q->cm_id)
		rdma_destroy_id(q->cm_id);
	mdr_queue_free_bufs(q);
	if (q->pd)
		ib_dealloc_pd(q->pd);
	kfree(q);
}

/*
 * Stops a queue: no completion runs after the drain, so whatever its slots
 * hold goes back to conn->pending (async) or fails (sync RPCs). Then frees
 * it. Context: process, conn->mutex held; bounded (the drain of a QP in
 * the error state completes locally).
 */
static void mdr_queue_destroy(struct mdr_conn *c, struct mdr_queue *q)
{
	unsigned long flags;
	unsigned int i;

	spin_lock_irqsave(&c->lock, flags);
	if (c->q == q)
		c->q = NULL;
	spin_unlock_irqrestore(&c->lock, flags);

	if (q->qp) {
		rdma_disconnect(q->cm_id);
		ib_drain_qp(q->qp);
	}
	for (i = 0; i < MDR_RPC_DEPTH; i++)
		if (q->rpc[i].q)
			del_timer_sync(&q->rpc[i].timer);

	spin_lock_irqsave(&c->lock, flags);
	for (i = 0; i < MDR_READ_SLOTS; i++) {
		if (test_bit(i, q->rd_busy) && q->rd[i].req)
			__mdr_park(c, q->rd[i].req, true);
		q->rd[i].req = NULL;
	}
	for (i = 0; i < MDR_RPC_DEPTH; i++) {
		struct mdr_req *req = q->rpc[i].req;

		q->rpc[i].req = NULL;
		if (!test_bit(i, q->rpc_busy) || !req)
			continue;
		if (req->op == MDR_REQ_RPC) {
			req->result = READ_ONCE(q->error) ?: -ENOTCONN;
			complete(req->done);
		} else {
			__mdr_park(c, req, true);
		}
	}
	spin_unlock_irqrestore(&c->lock, flags);
	mdr_queue_free(q);
}

/*
 * Builds a queue and connects it. On success it is the live queue.
 * Context: process, conn->mutex held; bounded by the CM step timeouts.
 */
static int mdr_queue_connect(struct mdr_conn *c)
{
	struct rdma_conn_param param = {};
	struct mdr_wire_conn_req pdata;
	unsigned long flags;
	struct mdr_queue *q;
	int ret;

	q = kzalloc(sizeof(*q), GFP_KERNEL);
	if (!q)
		return -ENOMEM;
	q->conn = c;
	q->prelive = true;	/* before a receive is posted */
	init_completion(&q->cm_done);
	spin_lock_irqsave(&c->lock, flags);
	c->connecting = q;
	q->addr = c->follow.now;
	spin_unlock_irqrestore(&c->lock, flags);
	/*
	 * A host with a key speaks only versions that authenticate: a node
	 * (or an impostor) offering less is refused, never served without
	 * its proof.
	 */
	q->params = (struct mdr_conn_params) {
		.version_min = c->target.key ? MDR_WIRE_VERSION_AUTH :
					       MDR_WIRE_VERSION_MIN,
		.version_max = c->target.key ? MDR_WIRE_VERSION :
					       MDR_WIRE_VERSION_NOAUTH,
		.tenant = c->target.tenant,
		.host_id = c->target.host_id,
		.queue_depth = MDR_RPC_DEPTH,
		.recv_depth = MDR_RECV_DEPTH,
		.max_msg = MDR_RECV_MSG,
	};
	ret = mdr_conn_req_encode(&pdata, &q->params);
	if (ret)
		goto out_free;

	q->cm_id = rdma_create_id(&init_net, mdr_cm_handler, q, RDMA_PS_TCP,
				  IB_QPT_RC);
	if (IS_ERR(q->cm_id)) {
		ret = PTR_ERR(q->cm_id);
		q->cm_id = NULL;
		goto out_free;
	}
	ret = rdma_resolve_addr(q->cm_id, NULL, (struct sockaddr *)&q->addr,
				MDR_CM_TIMEOUT_MS);
	if (!ret)
		ret = mdr_cm_wait(q);	/* address, then route */
	if (ret)
		goto out_free;
	ret = mdr_queue_create_ib(q);
	if (ret)
		goto out_free;

	param.private_data = &pdata;
	param.private_data_len = sizeof(pdata);
	/* our READs of tables in flight; we answer none */
	param.initiator_depth = min_t(int, MDR_READ_SLOTS,
				      q->dev->attrs.max_qp_init_rd_atom);
	param.responder_resources = 0;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	ret = rdma_connect(q->cm_id, &param);
	if (!ret)
		ret = mdr_cm_wait(q);
	if (ret)
		goto out_free;

	q->nr_rpc = q->acc.queue_depth;
	q->next_seq = 1;
	/* before the queue is live: nothing else is sent until then */
	if (c->target.key)
		ret = mdr_queue_auth(c, q);
	spin_lock_irqsave(&c->lock, flags);
	if (!ret && q->failed)
		ret = READ_ONCE(q->error) ?: -ENOTCONN;
	if (!ret && c->state == MDR_CONN_DEAD)
		ret = -ESHUTDOWN;
	c->connecting = NULL;
	if (ret) {
		spin_unlock_irqrestore(&c->lock, flags);
		/* the proof may have armed a slot's timer: the full teardown */
		mdr_queue_destroy(c, q);
		return ret;
	}
	q->prelive = false;
	q->inc = ++c->inc;
	c->q = q;
	c->state = MDR_CONN_LIVE;
	spin_unlock_irqrestore(&c->lock, flags);
	if (c->node_id && c->node_id != q->acc.node_id)
		mdr_conn_info(c, "connected to %pISpc (node %016llx, was %016llx)\n",
			      &q->addr, q->acc.node_id, c->node_id);
	else if (c->boot_id && c->boot_id != q->acc.boot_id)
		mdr_conn_info(c, "mdnode restarted (boot id %llx -> %llx)\n",
			      c->boot_id, q->acc.boot_id);
	c->boot_id = q->acc.boot_id;
	c->node_id = q->acc.node_id;
	return 0;

out_free:
	spin_lock_irqsave(&c->lock, flags);
	c->connecting = NULL;
	spin_unlock_irqrestore(&c->lock, flags);
	if (q->qp) {
		rdma_disconnect(q->cm_id);
		ib_drain_qp(q->qp);
	}
	mdr_queue_free(q);
	return ret;
}

/* ---- Leases and (re)opening ------------------------------------------ */

/* Context: timer. The lease ran out before a renewal came in. */
static void mdr_lease_timer(struct timer_list *t)
{
	struct mdr_tvol *tv = from_timer(tv, t, lease_timer);
	u64 now = ktime_get_ns();

	spin_lock_bh(&tv->cb_lock);
	if (test_bit(MDR_TV_CLOSED, &tv->flags) || !tv->lease_valid) {
		spin_unlock_bh(&tv->cb_lock);
		return;
	}
	if (mdr_lease_valid(now, tv->deadline)) {
		/* renewed meanwhile: wait for the new deadline */
		mod_timer(&tv->lease_timer, jiffies +
			  nsecs_to_jiffies(tv->deadline - now) + 1);
	} else {
		tv->lease_valid = false;
		atomic64_inc(&tv->conn->stats.lease_expiries);
		tv->ops->lease(tv->owner, false, 0);
	}
	spin_unlock_bh(&tv->cb_lock);
}

/*
 * A lease was granted for @lease_ms from @sent (ns); tell the volume its
 * new deadline (every grant moves it).
 */
static void mdr_lease_granted(struct mdr_tvol *tv, u64 sent, u32 lease_ms)
{
	u64 deadline = mdr_lease_deadline(sent, lease_ms);
	u64 now = ktime_get_ns();
	bool valid = mdr_lease_valid(now, deadline);

	spin_lock_bh(&tv->cb_lock);
	tv->lease_ms = lease_ms;
	tv->deadline = deadline;
	tv->renew_at = mdr_lease_renew_at(sent, lease_ms);
	if (valid && !test_bit(MDR_TV_CLOSED, &tv->flags)) {
		tv->lease_valid = true;
		tv->ops->lease(tv->owner, true, deadline);
		mod_timer(&tv->lease_timer, jiffies +
			  nsecs_to_jiffies(deadline - now) + 1);
	}
	spin_unlock_bh(&tv->cb_lock);
}

/*
 * OPEN @tv on the live queue: geometry, lease, and from then on READs and
 * ALLOCs of it flow on that queue. @info gets the reply.
 * Context: process, sleeps (bounded by mdr_rpc()).
 */
static int mdr_tv_open(struct mdr_conn *c, struct mdr_tvol *tv,
		       struct mdr_msg *reply)
{
	struct mdr_open_info *o = &reply->open;
	u64 sent = ktime_get_ns();
	bool moved = false, lapsed, elsewhere;
	u64 cached;	/* extents the cache may hold: the larger table */
	unsigned long flags;
	u64 boot;
	u32 inc;
	int ret;

	ret = mdr_rpc(c, tv, MDR_OP_OPEN, reply, &inc);
	if (ret)
		return ret;
	/* 0 when that queue failed since: it is opened again on the next */
	spin_lock_irqsave(&c->lock, flags);
	boot = c->q && c->q->inc == inc ? c->q->acc.boot_id : 0;
	if (boot)
		mdr_follow_served(&c->follow);
	spin_unlock_irqrestore(&c->lock, flags);
	/*
	 * A reopen after the lease ran out, here or on mdnode (STALE). Judged
	 * when the answer is in, not when the OPEN left: mdnode granted the
	 * new lease at some time before now, and only if the old one was
	 * still valid here now was it valid there then (mdnode holds a lease
	 * longer than the host). An OPEN that a slow node took up after the
	 * old lease had run out there may come after moves that did not wait
	 * for this host: the cache is dropped.
	 */
	spin_lock_bh(&tv->cb_lock);
	lapsed = tv->opened_once &&
		 (!tv->lease_valid ||
		  !mdr_lease_valid(ktime_get_ns(), tv->deadline) ||
		  test_bit(MDR_TV_REOPEN, &tv->flags));
	spin_unlock_bh(&tv->cb_lock);
	/*
	 * The volume was attached with this extent size and no change of
	 * the volume alters it: a table cut otherwise would send IO where
	 * mdnode does not keep it. Stays unopened; IO fails after
	 * fast_io_fail_tmo.
	 */
	if (tv->opened_once && o->extent_shift != tv->extent_shift) {
		atomic64_inc(&c->stats.bad_messages);
		mdr_conn_warn_rl(c, "volume %llu: reopened with extent_shift %u, attached with %u: refused\n",
				 tv->volume_id, o->extent_shift,
				 tv->extent_shift);
		return -EPROTO;
	}
	spin_lock_irqsave(&c->lock, flags);
	if (tv->opened_once && (tv->generation != o->generation ||
				tv->nr_extents != o->table_len /
				sizeof(struct mdr_wire_entry)))
		moved = true;
	/*
	 * Opened by another process than last time: a restarted mdnode, or
	 * another replica of the group (a new leader). The one before may
	 * have changed an entry this host caches and died before its push
	 * reached us; the new one serves the change but pushes nothing for
	 * it, and waits only for leases of before it, which this OPEN just
	 * replaced. So nothing cached is trusted (the floors stay).
	 */
	elsewhere = tv->opened_once && boot != tv->open_boot;
	tv->open_boot = boot;
	cached = max_t(u64, tv->nr_extents,
		       o->table_len / sizeof(struct mdr_wire_entry));
	tv->table_addr = o->table_addr;
	tv->rkey = o->table_rkey;
	tv->nr_extents = o->table_len / sizeof(struct mdr_wire_entry);
	tv->generation = o->generation;
	tv->extent_shift = o->extent_shift;
	tv->open_inc = inc;
	tv->opened_once = true;
	clear_bit(MDR_TV_REOPEN, &tv->flags);
	spin_unlock_irqrestore(&c->lock, flags);

	/*
	 * Both drops come before the lease lets IO go again: a bio routed
	 * between the grant and a later drop would use a location the
	 * reopen just declared unknown. Neither drains (mdr_cb_drop()): IO
	 * sent before the drop went out under a lease that mdnode honoured
	 * (every move it made was acked by this host, after the ack's own
	 * drain) or waited out (io_hold_ms after the lapse, or the grace
	 * after its start when STALE came from a restart). A drain here
	 * would hold the lease work of every volume on the connection for
	 * as long as a slow device takes.
	 */
	if (moved) {
		/*
		 * The volume changed while we were away: nothing cached is
		 * known good. Generation 0: no floor beyond the cache's own.
		 */
		mdr_conn_info(c, "volume %llu changed (generation %llu): dropping its cache\n",
			      tv->volume_id, o->generation);
		mdr_cb_drop(tv, cached, 0);
	} else if (lapsed || elsewhere) {
		/*
		 * mdnode may have waited this lease out and moved extents
		 * this host still caches, or (elsewhere) the process before
		 * changed one and never told us: no push will say which.
		 * Drop every entry (each one's generation stays as its
		 * floor).
		 */
		mdr_conn_info(c, "volume %llu: reopened %s: dropping its cache\n",
			      tv->volume_id, lapsed ?
			      "after its lease lapsed" :
			      "on another mdnode process (a restart or a new leader)");
		mdr_cb_drop(tv, cached, 1);
	}
	mdr_lease_granted(tv, sent, o->lease_ms);
	mdr_kick(c);
	return 0;
}

/*
 * When a lease of @vols (the pass's volumes, by lease_node) is due, renew
 * every lease of the connection with one RENEW of volume 0: a host with
 * 1000 volumes sends one RPC a period, not 1000. Only volumes opened on
 * the live queue whose lease is still valid here when it is sent are
 * extended by its answer: mdnode counts a lease longer than the host, so
 * it still holds each of them. STALE (a lease lapsed on mdnode) or any
 * error leaves the due volumes to be renewed one by one, which finds the
 * lost ones.
 */
static void mdr_lease_renew_all(struct mdr_conn *c, struct list_head *vols,
				struct mdr_msg *reply)
{
	u64 now = ktime_get_ns(), sent;
	struct mdr_tvol *tv;
	unsigned long flags;
	bool due = false;
	u32 inc;

	/* one volume renews itself: its STALE names the lost lease */
	if (list_empty(vols) || list_is_singular(vols))
		return;
	list_for_each_entry(tv, vols, lease_node) {
		spin_lock_bh(&tv->cb_lock);
		due = now >= tv->renew_at;
		spin_unlock_bh(&tv->cb_lock);
		if (due)
			break;
	}
	if (!due)
		return;

	sent = ktime_get_ns();
	tv = list_first_entry(vols, struct mdr_tvol, lease_node);
	if (mdr_rpc_vol(c, tv, MDR_OP_RENEW, 0, reply, &inc))
		return;
	atomic64_inc(&c->stats.batch_renewals);
	list_for_each_entry(tv, vols, lease_node) {
		bool opened;

		spin_lock_irqsave(&c->lock, flags);
		opened = tv->opened_once && tv->open_inc == inc &&
			 !test_bit(MDR_TV_REOPEN, &tv->flags) &&
			 !test_bit(MDR_TV_UNLISTED, &tv->flags);
		spin_unlock_irqrestore(&c->lock, flags);
		spin_lock_bh(&tv->cb_lock);
		opened &= tv->lease_valid && mdr_lease_valid(sent, tv->deadline);
		spin_unlock_bh(&tv->cb_lock);
		if (opened)
			mdr_lease_granted(tv, sent, reply->lease_ms);
	}
}

/*
 * A READ is answered by the node's RDMA device, not by its CPU, and the
 * RC transport retries a lost packet on its own. One still unanswered
 * after as long as an RPC may take with its retries, and never less than
 * two ticks of the lease work that checks, is stuck on a path the
 * transport does not see broken: the connection is ended, and what
 * waited goes to the next one or fails after fast_io_fail_tmo.
 * Context: workqueue.
 */
static void mdr_read_watchdog(struct mdr_conn *c)
{
	unsigned long tmo = msecs_to_jiffies(max(g_io_timeout_ms *
						 ((2U << MDR_RPC_RETRIES) - 1),
						 2U * MDR_LEASE_TICK_MS));
	struct mdr_queue *q;
	unsigned long flags;
	bool stuck = false;
	unsigned int i;

	spin_lock_irqsave(&c->lock, flags);
	q = c->q;
	if (q && c->state == MDR_CONN_LIVE)
		for_each_set_bit(i, q->rd_busy, MDR_READ_SLOTS)
			if (time_after(jiffies, q->rd[i].posted + tmo))
				stuck = true;
	spin_unlock_irqrestore(&c->lock, flags);
	if (!stuck)
		return;
	atomic64_inc(&c->stats.read_timeouts);
	/* @q is only compared: a no-op if it is no longer the live queue */
	mdr_conn_error(c, q, "a READ went unanswered");
}

/*
 * Runs the lease pass within @delay (jiffies): sooner than planned, never
 * later. Every attach of a boot storm asks for one; moving the pass later
 * each time would starve every lease of the connection until they lapse.
 * A pass that starts meanwhile only makes this one run twice.
 */
static void mdr_lease_work_within(struct mdr_conn *c, unsigned long delay)
{
	struct delayed_work *dw = &c->lease_work;

	if (!delayed_work_pending(dw) ||
	    time_before(jiffies + delay, READ_ONCE(dw->timer.expires)))
		mod_delayed_work(mdr_wq, dw, delay);
}

/*
 * How soon to ask again after an OPEN answered AGAIN. A replica that does
 * not lead names the leader as soon as etcd tells it of the election
 * (which under TCG ends 1 to 3 s after the old leader died), and one that
 * won serves once it has taken over: the first MDR_AGAIN_SOON refusals of
 * mdr_not_leading() on a connection are asked again after
 * MDR_AGAIN_SOON_MS, so the host hears of either within 50 ms of the
 * replica, at one small RPC a connection every 50 ms; the later ones
 * (mdr_follow_refused() moves on after MDR_FOLLOW_WAITS) and other AGAINs
 * (a fenced host) after MDR_AGAIN_MS.
 * A pass sends one OPEN to a replica that does not lead, not one for
 * each volume (mdr_lease_one()).
 */
static u64 mdr_again_ns(struct mdr_conn *c)
{
	unsigned long flags;
	unsigned int waits;

	/* waits: refusals of mdr_not_leading() since a leader served */
	spin_lock_irqsave(&c->lock, flags);
	waits = c->follow.waits;
	spin_unlock_irqrestore(&c->lock, flags);
	return (waits && waits <= MDR_AGAIN_SOON ? MDR_AGAIN_SOON_MS :
						    MDR_AGAIN_MS) * NSEC_PER_MSEC;
}

/*
 * OPEN @tv in a lease pass. Return: false when the pass ends here: the
 * replica does not lead (it refused since a leader last served), so it
 * opens none of the other volumes either; *@next is lowered to when to
 * ask again.
 */
static bool mdr_lease_reopen(struct mdr_conn *c, struct mdr_tvol *tv,
			     struct mdr_msg *reply, u64 *next)
{
	unsigned long flags;
	bool refused;

	if (mdr_tv_open(c, tv, reply) != -EAGAIN)
		return true;
	*next = min(*next, ktime_get_ns() + mdr_again_ns(c));
	spin_lock_irqsave(&c->lock, flags);
	refused = c->follow.waits;
	spin_unlock_irqrestore(&c->lock, flags);
	return !refused;
}

/*
 * One volume's turn in a lease pass: OPEN it when the node forgot its
 * lease (STALE) or it is not open on the live queue yet, RENEW it when
 * due. Under its rpc_mutex, so that close waits for this volume's RPC
 * alone, and never sends CLOSE before it.
 * Return: false when the connection is not live (the pass ends); *@next
 * is lowered to when this volume wants the next pass (ns).
 */
static bool mdr_lease_one(struct mdr_conn *c, struct mdr_tvol *tv,
			  struct mdr_msg *reply, u64 *next)
{
	unsigned long flags;
	bool live, reopen;
	u64 renew_at;
	int ret;

	mutex_lock(&tv->rpc_mutex);
	if (test_bit(MDR_TV_UNLISTED, &tv->flags)) {
		mutex_unlock(&tv->rpc_mutex);
		return true;
	}
	spin_lock_irqsave(&c->lock, flags);
	live = c->q && c->state == MDR_CONN_LIVE;
	reopen = live && (tv->open_inc != c->q->inc ||
			  test_bit(MDR_TV_REOPEN, &tv->flags));
	spin_unlock_irqrestore(&c->lock, flags);
	if (!live || reopen) {
		/* a replica that is taking over, or knows no leader yet */
		if (reopen)
			live = mdr_lease_reopen(c, tv, reply, next);
		mutex_unlock(&tv->rpc_mutex);
		return live;
	}
	spin_lock_bh(&tv->cb_lock);
	renew_at = tv->renew_at;
	spin_unlock_bh(&tv->cb_lock);
	if (ktime_get_ns() >= renew_at) {
		u64 sent = ktime_get_ns();

		ret = mdr_rpc(c, tv, MDR_OP_RENEW, reply, NULL);
		if (!ret) {
			mdr_lease_granted(tv, sent, reply->lease_ms);
		} else if (ret == -ESTALE) {
			/* may already have let a move go ahead */
			set_bit(MDR_TV_REOPEN, &tv->flags);
			if (!mdr_lease_reopen(c, tv, reply, next)) {
				mutex_unlock(&tv->rpc_mutex);
				return false;
			}
		} else {
			/* try again soon, before the deadline */
			*next = min(*next, ktime_get_ns() +
				    tv->lease_ms / 16 * NSEC_PER_MSEC);
			mutex_unlock(&tv->rpc_mutex);
			return true;
		}
	}
	mutex_unlock(&tv->rpc_mutex);
	spin_lock_bh(&tv->cb_lock);
	*next = min(*next, tv->renew_at);
	spin_unlock_bh(&tv->cb_lock);
	return true;
}

/*
 * Renews leases before they run out and reopens volumes whose lease the
 * node forgot (STALE) or that are not open on the live queue yet; and
 * watches READs. The pass works on a referenced copy of the volume list:
 * vols_mutex is not held across its RPCs, so pushes, opens and closes of
 * other volumes go on meanwhile. Context: workqueue (one pass at a time);
 * re-arms itself for the earliest renewal.
 */
static void mdr_lease_work(struct work_struct *w)
{
	struct mdr_conn *c = container_of(to_delayed_work(w), struct mdr_conn,
					  lease_work);
	u64 now = ktime_get_ns();
	u64 next = now + MDR_LEASE_TICK_MS * NSEC_PER_MSEC;
	struct mdr_tvol *tv, *tmp;
	unsigned int noio = memalloc_noio_save();
	struct mdr_msg *reply;
	bool live = true;
	LIST_HEAD(vols);

	mdr_read_watchdog(c);
	reply = kmalloc(sizeof(*reply), GFP_KERNEL);
	if (!reply)
		goto out;
	mutex_lock(&c->vols_mutex);
	list_for_each_entry(tv, &c->vols, node) {
		kref_get(&tv->ref);
		list_add_tail(&tv->lease_node, &vols);
	}
	mutex_unlock(&c->vols_mutex);
	mdr_lease_renew_all(c, &vols, reply);
	list_for_each_entry_safe(tv, tmp, &vols, lease_node) {
		if (live)
			live = mdr_lease_one(c, tv, reply, &next);
		list_del(&tv->lease_node);
		/* may free a closed volume; @c outlives the pass */
		mdr_tv_put(tv);
	}
	kfree(reply);
out:
	now = ktime_get_ns();
	queue_delayed_work(mdr_wq, &c->lease_work,
			   next > now ? nsecs_to_jiffies(next - now) + 1 : 1);
	memalloc_noio_restore(noio);
}

/* ---- Reconnect ------------------------------------------------------- */

/*
 * After a failure the backoff of c->attempts (c->mutex); but the first
 * try after a queue of a group that served failed goes to the next
 * replica at once, as multipath goes to the next path (one that fails
 * again before a leader served waits the backoff: a group whose replicas
 * all accept and then fail cannot make the host spin). To a leader a replica named,
 * at once for the first MDR_FREE_HOPS hops since a leader last served,
 * then with the backoff of the hops beyond, so replicas that name each
 * other cannot make the host spin.
 */
static void mdr_schedule_reconnect(struct mdr_conn *c)
{
	unsigned int hops, nr, attempt = c->attempts;
	unsigned long flags;
	bool hinted;
	u32 ms;

	spin_lock_irqsave(&c->lock, flags);
	hinted = c->follow.hinted;
	hops = c->follow.hops;
	nr = c->follow.nr;
	spin_unlock_irqrestore(&c->lock, flags);
	/* hops 0: a leader served on the queue that failed */
	if ((hinted && hops < MDR_FREE_HOPS) || (!hinted && !hops && nr > 1)) {
		queue_delayed_work(mdr_wq, &c->reconnect_work, 0);
		return;
	}
	if (hinted)
		attempt = hops - MDR_FREE_HOPS;
	ms = mdr_backoff_ms(attempt, MDR_BACKOFF_BASE_MS, MDR_BACKOFF_MAX_MS,
			    get_random_u32());
	queue_delayed_work(mdr_wq, &c->reconnect_work, msecs_to_jiffies(ms));
}

/* Tears the broken queue down and plans the reconnect. */
static void mdr_err_work(struct work_struct *w)
{
	struct mdr_conn *c = container_of(w, struct mdr_conn, err_work);
	unsigned int noio = memalloc_noio_save();
	struct mdr_queue *q;
	unsigned long flags;

	mutex_lock(&c->mutex);
	spin_lock_irqsave(&c->lock, flags);
	q = c->state == MDR_CONN_LIVE ? NULL : c->q;
	spin_unlock_irqrestore(&c->lock, flags);
	if (q)
		mdr_queue_destroy(c, q);
	if (READ_ONCE(c->state) == MDR_CONN_BROKEN && !c->q)
		mdr_schedule_reconnect(c);
	mutex_unlock(&c->mutex);
	memalloc_noio_restore(noio);
}

static void mdr_reconnect_work(struct work_struct *w)
{
	struct mdr_conn *c = container_of(to_delayed_work(w), struct mdr_conn,
					  reconnect_work);
	unsigned int noio = memalloc_noio_save();
	unsigned long flags;
	bool hinted;
	int ret;

	mutex_lock(&c->mutex);
	spin_lock_irqsave(&c->lock, flags);
	if (c->state != MDR_CONN_BROKEN || c->q) {
		spin_unlock_irqrestore(&c->lock, flags);
		goto out_unlock;
	}
	c->state = MDR_CONN_CONNECTING;
	/* the leader named, else the next replica of the set */
	mdr_follow_pick(&c->follow);
	hinted = c->follow.now_hinted;
	spin_unlock_irqrestore(&c->lock, flags);

	ret = mdr_queue_connect(c);
	if (ret) {
		bool again;

		atomic64_inc(&c->stats.connect_failures);
		spin_lock_irqsave(&c->lock, flags);
		mdr_follow_lost(&c->follow);
		if (c->state == MDR_CONN_CONNECTING)
			c->state = MDR_CONN_BROKEN;
		again = c->state == MDR_CONN_BROKEN;
		spin_unlock_irqrestore(&c->lock, flags);
		/* a named leader that is gone: the next replica, as soon */
		if (!hinted)
			c->attempts++;
		if (again)
			mdr_schedule_reconnect(c);
		goto out_unlock;
	}
	c->attempts = 0;
	atomic64_inc(&c->stats.reconnects);
	mdr_conn_info(c, "reconnected to %pISpc\n", &c->q->addr);
	/* reopen every volume on the new queue, then release what waits */
	mod_delayed_work(mdr_wq, &c->lease_work, 0);
out_unlock:
	mutex_unlock(&c->mutex);
	memalloc_noio_restore(noio);
}

/* ---- Connections: find, create, shut down ----------------------------- */

/* One connection per (group or node, tenant, host). */
static bool mdr_same_target(const struct mdr_target *a,
			    const struct mdr_target *b)
{
	if (a->tenant != b->tenant || a->host_id != b->host_id ||
	    a->group != b->group)
		return false;
	return a->group || mdr_addr_same(&a->addr, &b->addr);
}

static int mdr_conn_show(struct seq_file *m, void *unused)
{
	struct mdr_conn *c = m->private;
	struct mdr_conn_stats *st = &c->stats;
	static const char * const hist[MDR_HIST_BUCKETS] = {
		"<16", "<32", "<64", "<128", "<256", "<512", "<1024", "<2048",
		"<4096", "<8192", "<16384", ">=16384",
	};
	struct mdr_queue *q;
	struct mdr_tvol *tv;
	unsigned long flags;
	unsigned int i, pending = 0, vols = 0;
	struct mdr_req *req;
	u16 qd = 0, credits = 0, version = 0;
	struct sockaddr_storage now;
	unsigned int replicas;
	u64 epoch;

	spin_lock_irqsave(&c->lock, flags);
	now = c->follow.now;
	epoch = c->follow.epoch;
	replicas = c->follow.nr;
	q = c->q;
	if (q) {
		qd = q->acc.queue_depth;
		credits = q->acc.push_credits;
		version = q->acc.version;
	}
	list_for_each_entry(req, &c->pending, list)
		pending++;
	seq_printf(m, "state: %s\n", mdr_conn_state_names[c->state]);
	spin_unlock_irqrestore(&c->lock, flags);
	mutex_lock(&c->vols_mutex);
	list_for_each_entry(tv, &c->vols, node)
		vols++;
	mutex_unlock(&c->vols_mutex);

	seq_printf(m, "target: %pISpc tenant %u host %016llx\n",
		   &c->target.addr, c->target.tenant, c->target.host_id);
	seq_printf(m, "group: %llu\nreplicas: %u\nreplica: %pISpc\nepoch: %llu\n",
		   c->target.group, replicas, &now, epoch);
	seq_printf(m, "node_id: %016llx\nboot_id: %016llx\n", c->node_id,
		   c->boot_id);
	seq_printf(m, "version: %u\nqueue_depth: %u\npush_credits: %u\n",
		   version, qd, credits);
	seq_printf(m, "key: %d\n", READ_ONCE(c->key_serial));
	seq_printf(m, "volumes: %u\npending: %u\n", vols, pending);
#define MDR_SHOW(f) seq_printf(m, #f ": %lld\n", atomic64_read(&st->f))
	MDR_SHOW(reads);
	MDR_SHOW(read_entries);
	MDR_SHOW(torn);
	MDR_SHOW(bad_entries);
	MDR_SHOW(rpcs);
	MDR_SHOW(rpc_errors);
	MDR_SHOW(retries);
	MDR_SHOW(timeouts);
	MDR_SHOW(read_timeouts);
	MDR_SHOW(late);
	MDR_SHOW(reconnects);
	MDR_SHOW(connect_failures);
	MDR_SHOW(invalidations);
	MDR_SHOW(bad_messages);
	MDR_SHOW(failed_fast);
	MDR_SHOW(lease_expiries);
	MDR_SHOW(batch_renewals);
	MDR_SHOW(auth_failures);
	MDR_SHOW(stale_epochs);
	MDR_SHOW(allocated);
#undef MDR_SHOW
	seq_puts(m, "lookup_us:");
	for (i = 0; i < MDR_HIST_BUCKETS; i++)
		seq_printf(m, " %s:%lld", hist[i], atomic64_read(&st->hist[i]));
	seq_putc(m, '\n');
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(mdr_conn);

static struct mdr_conn *mdr_conn_alloc(const struct mdr_target *t)
{
	struct mdr_conn *c;
	char name[80];
	unsigned int i;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return NULL;
	c->req_pool = kcalloc(MDR_REQ_POOL, sizeof(*c->req_pool),
			      GFP_KERNEL);
	if (!c->req_pool) {
		kfree(c);
		return NULL;
	}
	kref_init(&c->ref);
	c->target = *t;
	mdr_follow_init(&c->follow, &t->addr, t->replicas, t->nr_replicas);
	if (t->key) {
		c->auth_tfm = mdr_auth_tfm_alloc();
		if (IS_ERR(c->auth_tfm)) {
			c->auth_tfm = NULL;
			kfree(c->req_pool);
			kfree(c);
			return NULL;
		}
		key_get(t->key);	/* put by mdr_conn_release() */
		c->key_serial = t->key->serial;
	}
	mutex_init(&c->mutex);
	mutex_init(&c->vols_mutex);
	INIT_LIST_HEAD(&c->vols);
	spin_lock_init(&c->lock);
	c->state = MDR_CONN_CONNECTING;
	INIT_LIST_HEAD(&c->pending);
	INIT_LIST_HEAD(&c->free_reqs);
	for (i = 0; i < MDR_REQ_POOL; i++) {
		c->req_pool[i].pooled = true;
		list_add_tail(&c->req_pool[i].list, &c->free_reqs);
	}
	INIT_WORK(&c->err_work, mdr_err_work);
	INIT_DELAYED_WORK(&c->reconnect_work, mdr_reconnect_work);
	INIT_DELAYED_WORK(&c->lease_work, mdr_lease_work);
	INIT_DELAYED_WORK(&c->fail_work, mdr_fail_work);
	snprintf(name, sizeof(name), "%pISpc-%u", &t->addr, t->tenant);
	c->debugfs = debugfs_create_file(name, 0444, mdr_debugfs_conns, c,
					 &mdr_conn_fops);
	return c;
}

/*
 * The last volume left: no reconnect, no more work, queue down.
 * Context: process, mdr_conns_mutex held.
 */
static void mdr_conn_shutdown(struct mdr_conn *c)
{
	struct mdr_req *req, *tmp;
	struct mdr_queue *q;
	unsigned long flags;
	LIST_HEAD(drop);

	list_del(&c->node);
	debugfs_remove(c->debugfs);
	spin_lock_irqsave(&c->lock, flags);
	c->state = MDR_CONN_DEAD;
	spin_unlock_irqrestore(&c->lock, flags);
	/* queue first: after its drain no completion queues work again */
	mutex_lock(&c->mutex);
	q = c->q;
	if (q)
		mdr_queue_destroy(c, q);
	mutex_unlock(&c->mutex);
	cancel_work_sync(&c->err_work);
	cancel_delayed_work_sync(&c->reconnect_work);
	cancel_delayed_work_sync(&c->lease_work);
	cancel_delayed_work_sync(&c->fail_work);
	/* requests of closed volumes the teardown parked: no callbacks */
	spin_lock_irqsave(&c->lock, flags);
	list_splice_init(&c->pending, &drop);
	spin_unlock_irqrestore(&c->lock, flags);
	list_for_each_entry_safe(req, tmp, &drop, list) {
		list_del_init(&req->list);
		mdr_req_free(c, req);
	}
	mdr_conn_put(c);
}

/*
 * An attach names @key for a connection whose key can no longer be used
 * (revoked, expired, invalidated): @key replaces it, or every volume on
 * the connection would have to be detached to attach again. A connection
 * whose key still works keeps it.
 * Context: process, mdr_conns_mutex held. Return: 0 or -EINVAL.
 */
static int mdr_conn_rekey(struct mdr_conn *c, struct key *key)
{
	struct key *old;

	if (!c->target.key || !key || !key_validate(c->target.key) ||
	    key_validate(key))
		return -EINVAL;
	mutex_lock(&c->mutex);
	old = c->target.key;
	c->target.key = key_get(key);
	WRITE_ONCE(c->key_serial, key->serial);
	/*
	 * A connection in backoff for want of a usable key tries the new one
	 * now, not after up to MDR_BACKOFF_MAX_MS. attempts is the reconnect
	 * work's, under c->mutex; a state read racing a queue that breaks
	 * just now is fine: its err_work schedules with attempts 0.
	 */
	c->attempts = 0;
	if (READ_ONCE(c->state) == MDR_CONN_BROKEN)
		mod_delayed_work(mdr_wq, &c->reconnect_work, 0);
	mutex_unlock(&c->mutex);
	mdr_conn_info(c, "key %d replaces key %d, which can no longer be used\n",
		      key->serial, old->serial);
	key_put(old);
	return 0;
}

/*
 * A volume of the connection's group attached with its own replica set:
 * the replicas new to the connection join it (mdr_follow_merge()).
 * Context: process, mdr_conns_mutex held.
 */
static void mdr_conn_merge(struct mdr_conn *c, const struct mdr_target *t)
{
	unsigned int before, after, left;
	unsigned long flags;

	spin_lock_irqsave(&c->lock, flags);
	before = c->follow.nr;
	left = mdr_follow_merge(&c->follow, t->replicas, t->nr_replicas);
	after = c->follow.nr;
	spin_unlock_irqrestore(&c->lock, flags);
	if (after > before)
		mdr_conn_info(c, "an attach adds %u replicas to the group's %u\n",
			      after - before, before);
	if (left)
		mdr_conn_warn_rl(c, "an attach names %u replicas beyond the %u a connection keeps: they are not used\n",
				 left, MDR_REPLICAS_MAX);
}

/* A user of the connection to @t, connected; or ERR_PTR(). */
static struct mdr_conn *mdr_conn_get(const struct mdr_target *t)
{
	unsigned long flags;
	struct mdr_conn *c;
	unsigned int i;
	int ret;

	mutex_lock(&mdr_conns_mutex);
	list_for_each_entry(c, &mdr_conns, node) {
		if (mdr_same_target(&c->target, t)) {
			/* one host, one node, one tenant: one secret */
			if (c->target.key != t->key && mdr_conn_rekey(c, t->key)) {
				/* c lives while mdr_conns_mutex is held */
				mdr_conn_warn_rl(c, "an attach names key %d, the connection uses %d\n",
						 t->key ? t->key->serial : 0,
						 c->key_serial);
				mutex_unlock(&mdr_conns_mutex);
				return ERR_PTR(-EINVAL);
			}
			if (t->group)
				mdr_conn_merge(c, t);
			c->users++;
			mutex_unlock(&mdr_conns_mutex);
			return c;
		}
	}
	c = mdr_conn_alloc(t);
	if (!c) {
		mutex_unlock(&mdr_conns_mutex);
		return ERR_PTR(-ENOMEM);
	}
	mutex_lock(&c->mutex);
	ret = mdr_queue_connect(c);
	/* a group: any replica will do to begin with (it names the leader) */
	for (i = 1; ret && i < c->follow.nr; i++) {
		spin_lock_irqsave(&c->lock, flags);
		mdr_follow_lost(&c->follow);
		mdr_follow_pick(&c->follow);
		spin_unlock_irqrestore(&c->lock, flags);
		ret = mdr_queue_connect(c);
	}
	mutex_unlock(&c->mutex);
	if (ret) {
		mdr_conn_warn_rl(c, "cannot connect: %d\n", ret);
		mutex_unlock(&mdr_conns_mutex);
		debugfs_remove(c->debugfs);
		mdr_conn_put(c);
		return ERR_PTR(ret);
	}
	c->users = 1;
	list_add(&c->node, &mdr_conns);
	mutex_unlock(&mdr_conns_mutex);
	queue_delayed_work(mdr_wq, &c->lease_work,
			   msecs_to_jiffies(MDR_LEASE_TICK_MS));
	return c;
}

static void mdr_conn_unuse(struct mdr_conn *c)
{
	mutex_lock(&mdr_conns_mutex);
	if (!--c->users)
		mdr_conn_shutdown(c);
	mutex_unlock(&mdr_conns_mutex);
}

/* Waits (bounded by fast_io_fail_tmo) for a reconnect under way. */
/*
 * Waits until @c is live, up to @end (jiffies).
 * Return: 0, -ENOTCONN at @end, -EINTR on a fatal signal.
 */
static int mdr_conn_wait_live(struct mdr_conn *c, unsigned long end)
{
	for (;;) {
		if (READ_ONCE(c->state) == MDR_CONN_LIVE)
			return 0;
		if (time_after(jiffies, end))
			return -ENOTCONN;
		if (fatal_signal_pending(current))
			return -EINTR;
		msleep(50);
	}
}

/* ---- The transport ops ----------------------------------------------- */

static struct mdr_tvol *mdr_rdma_open(const struct mdr_target *t,
				      u64 volume_id, void *owner,
				      const struct mdr_tvol_ops *ops,
				      struct mdr_vol_geom *geom)
{
	struct mdr_msg *reply;
	unsigned long end;
	struct mdr_conn *c;
	struct mdr_tvol *tv;
	int ret;

	if (!volume_id || !ops || !ops->entries || !ops->failed ||
	    !ops->invalidate || !ops->drop || !ops->lease)
		return ERR_PTR(-EINVAL);
	if (t->addr.ss_family != AF_INET && t->addr.ss_family != AF_INET6)
		return ERR_PTR(-EAFNOSUPPORT);
	reply = kmalloc(sizeof(*reply), GFP_KERNEL);
	tv = kzalloc(sizeof(*tv), GFP_KERNEL);
	if (!reply || !tv) {
		ret = -ENOMEM;
		goto out_free;
	}
	c = mdr_conn_get(t);
	if (IS_ERR(c)) {
		ret = PTR_ERR(c);
		goto out_free;
	}
	kref_init(&tv->ref);
	kref_get(&c->ref);
	tv->conn = c;
	tv->owner = owner;
	tv->ops = ops;
	tv->volume_id = volume_id;
	mutex_init(&tv->rpc_mutex);
	mutex_init(&tv->cb_mutex);
	spin_lock_init(&tv->cb_lock);
	timer_setup(&tv->lease_timer, mdr_lease_timer, 0);
	INIT_LIST_HEAD(&tv->node);

	/*
	 * An OPEN lost with its connection (timeouts on a loaded host tear
	 * it down) is sent again once the connection is back, until
	 * fast_io_fail_tmo: the same grace that IO gets.
	 */
	end = jiffies + g_fast_io_fail_tmo * HZ;
	do {
		ret = mdr_conn_wait_live(c, end);
		if (!ret)
			ret = mdr_tv_open(c, tv, reply);
		/* a replica taking over, or that knows no leader yet */
		if (ret == -EAGAIN)
			msleep(mdr_again_ns(c) / NSEC_PER_MSEC);
	} while ((ret == -ENOTCONN || ret == -ETIMEDOUT || ret == -EAGAIN) &&
		 time_before(jiffies, end));
	if (ret) {
		mdr_conn_warn_rl(c, "volume %llu: open failed: %d\n",
				 volume_id, ret);
		goto out_unuse;
	}

	geom->volume_id = volume_id;
	geom->size = reply->open.size;
	geom->nr_extents = tv->nr_extents;
	geom->extent_shift = reply->open.extent_shift;
	geom->lease_ms = reply->open.lease_ms;
	geom->generation = reply->open.generation;
	memcpy(geom->name, reply->open.name, sizeof(geom->name));
	mutex_lock(&c->vols_mutex);
	list_add_tail(&tv->node, &c->vols);
	mutex_unlock(&c->vols_mutex);
	mdr_lease_work_within(c, msecs_to_jiffies(reply->open.lease_ms / 3));
	kfree(reply);
	return tv;

out_unuse:
	spin_lock_bh(&tv->cb_lock);
	set_bit(MDR_TV_CLOSED, &tv->flags);
	spin_unlock_bh(&tv->cb_lock);
	del_timer_sync(&tv->lease_timer);
	mdr_conn_unuse(c);
	mdr_tv_put(tv);
	kfree(reply);
	return ERR_PTR(ret);
out_free:
	kfree(tv);
	kfree(reply);
	return ERR_PTR(ret);
}

/*
 * Always completes: the CLOSE to mdnode is best effort and bounded; in
 * flight READs and ALLOCs finish later without calling back.
 */
static void mdr_rdma_close(struct mdr_tvol *tv)
{
	struct mdr_conn *c = tv->conn;
	struct mdr_req *req, *tmp;
	struct mdr_msg *reply;
	unsigned long flags;
	LIST_HEAD(drop);

	mutex_lock(&c->vols_mutex);
	list_del_init(&tv->node);
	mutex_unlock(&c->vols_mutex);
	/* waits for a lease RPC of this volume; no other one follows */
	mutex_lock(&tv->rpc_mutex);
	set_bit(MDR_TV_UNLISTED, &tv->flags);
	mutex_unlock(&tv->rpc_mutex);

	reply = kmalloc(sizeof(*reply), GFP_KERNEL);
	if (reply && READ_ONCE(c->state) == MDR_CONN_LIVE)
		mdr_rpc(c, tv, MDR_OP_CLOSE, reply, NULL);
	kfree(reply);

	mutex_lock(&tv->cb_mutex);
	spin_lock_bh(&tv->cb_lock);
	set_bit(MDR_TV_CLOSED, &tv->flags);
	spin_unlock_bh(&tv->cb_lock);
	mutex_unlock(&tv->cb_mutex);
	del_timer_sync(&tv->lease_timer);

	spin_lock_irqsave(&c->lock, flags);
	list_for_each_entry_safe(req, tmp, &c->pending, list)
		if (req->tv == tv)
			list_move_tail(&req->list, &drop);
	spin_unlock_irqrestore(&c->lock, flags);
	list_for_each_entry_safe(req, tmp, &drop, list) {
		list_del_init(&req->list);
		mdr_req_free(c, req);
	}
	mdr_conn_unuse(c);
	mdr_tv_put(tv);
}

static void mdr_rdma_where(struct mdr_tvol *tv, struct sockaddr_storage *addr,
			   u64 *epoch)
{
	struct mdr_conn *c = tv->conn;
	unsigned long flags;

	spin_lock_irqsave(&c->lock, flags);
	*addr = c->follow.now;
	*epoch = c->follow.epoch;
	spin_unlock_irqrestore(&c->lock, flags);
}

/* Dispatches or parks @req; never calls back from here. Context: any. */
static void mdr_submit(struct mdr_conn *c, struct mdr_req *req)
{
	unsigned long flags;

	spin_lock_irqsave(&c->lock, flags);
	if (!c->q || c->state != MDR_CONN_LIVE || !__mdr_dispatch(c, c->q, req))
		__mdr_park(c, req, false);
	spin_unlock_irqrestore(&c->lock, flags);
}

/*
 * Posts from a task run with bottom halves off. A software RDMA device
 * (rxe) moves a kernel QP's work on in tasklets, and a tasklet raised
 * from a task wakes ksoftirqd, which then competes for the CPU with the
 * thread that waits for the answer: on a loaded host that was most of
 * a miss's cost. Raised with bottom halves off, the tasklets run as they
 * come back on, on this CPU and at once, so a READ's answer may reach
 * the volume before fetch() returns. Hardware devices post the same.
 */
static bool mdr_post_begin(void)
{
	bool bh = in_task() && !irqs_disabled();

	if (bh)
		local_bh_disable();
	return bh;
}

static void mdr_post_end(bool bh)
{
	if (bh)
		local_bh_enable();
}

static int mdr_rdma_fetch(struct mdr_tvol *tv, u64 first, unsigned int count)
{
	struct mdr_conn *c = tv->conn;
	struct mdr_req *req, *tmp;
	u64 nr = READ_ONCE(tv->nr_extents);
	LIST_HEAD(reqs);
	bool bh;

	if (!count || first >= nr || count > nr - first)
		return -EINVAL;
	if (test_bit(MDR_TV_CLOSED, &tv->flags))
		return -ESHUTDOWN;
	/* one request per READ's worth; all or none */
	while (count) {
		u32 n = min_t(u32, count, MDR_READ_MAX_ENTRIES);

		req = mdr_req_get(c, tv, MDR_REQ_READ);
		if (!req) {
			list_for_each_entry_safe(req, tmp, &reqs, list) {
				list_del_init(&req->list);
				mdr_req_free(c, req);
			}
			return -ENOMEM;
		}
		req->first = first;
		req->count = n;
		list_add_tail(&req->list, &reqs);
		first += n;
		count -= n;
	}
	bh = mdr_post_begin();
	list_for_each_entry_safe(req, tmp, &reqs, list) {
		list_del_init(&req->list);
		mdr_submit(c, req);
	}
	mdr_post_end(bh);
	return 0;
}
/* fail_function may fail it with -errno: bios must fail cleanly or wait */
ALLOW_ERROR_INJECTION(mdr_rdma_fetch, ERRNO);

static int mdr_rdma_alloc(struct mdr_tvol *tv, u64 index)
{
	struct mdr_conn *c = tv->conn;
	struct mdr_req *req;
	bool bh;

	if (index >= READ_ONCE(tv->nr_extents))
		return -EINVAL;
	if (test_bit(MDR_TV_CLOSED, &tv->flags))
		return -ESHUTDOWN;
	req = mdr_req_get(c, tv, MDR_REQ_ALLOC);
	if (!req)
		return -ENOMEM;
	req->first = index;
	req->count = 1;
	bh = mdr_post_begin();
	mdr_submit(c, req);
	mdr_post_end(bh);
	return 0;
}
ALLOW_ERROR_INJECTION(mdr_rdma_alloc, ERRNO);
/* an injected -errno is returned as ERR_PTR(-errno): attach fails */
ALLOW_ERROR_INJECTION(mdr_rdma_open, ERRNO);

const struct mdr_transport_ops mdr_rdma_transport = {
	.name = "rdma",
	.open = mdr_rdma_open,
	.close = mdr_rdma_close,
	.fetch = mdr_rdma_fetch,
	.alloc = mdr_rdma_alloc,
	.where = mdr_rdma_where,
};

/* ---- RDMA device removal ---------------------------------------------- */

/*
 * The device goes away: every queue on it is torn down now (the device
 * waits for us), and its connection reconnects later, on whatever device
 * then reaches the node.
 */
static void mdr_ib_remove(struct ib_device *dev, void *client_data)
{
	struct mdr_conn *c;
	unsigned long flags;

	mutex_lock(&mdr_conns_mutex);
	list_for_each_entry(c, &mdr_conns, node) {
		struct mdr_queue *q;

		mutex_lock(&c->mutex);
		q = c->q;
		if (q && q->dev == dev) {
			spin_lock_irqsave(&c->lock, flags);
			if (c->state == MDR_CONN_LIVE)
				c->state = MDR_CONN_BROKEN;
			spin_unlock_irqrestore(&c->lock, flags);
			mdr_conn_info(c, "RDMA device %s removed\n",
				      dev_name(&dev->dev));
			mdr_queue_destroy(c, q);
			if (c->state == MDR_CONN_BROKEN)
				mdr_schedule_reconnect(c);
		}
		mutex_unlock(&c->mutex);
	}
	mutex_unlock(&mdr_conns_mutex);
}

static struct ib_client mdr_ib_client = {
	.name = "mdroute",
	.remove = mdr_ib_remove,
};

/* ---- Module ------------------------------------------------------------ */

struct dentry *mdr_debugfs_root(void)
{
	return mdr_debugfs;
}

int mdr_rdma_init(void)
{
	int ret;

	mdr_wq = alloc_workqueue("mdroute_rdma", WQ_MEM_RECLAIM | WQ_UNBOUND,
				 0);
	if (!mdr_wq)
		return -ENOMEM;
	mdr_debugfs = debugfs_lookup("mdroute", NULL);
	if (mdr_debugfs) {
		dput(mdr_debugfs);	/* the directory stays: its creator's */
	} else {
		mdr_debugfs = debugfs_create_dir("mdroute", NULL);
		mdr_debugfs_owned = true;
	}
	mdr_debugfs_conns = debugfs_create_dir("connections", mdr_debugfs);
	ret = ib_register_client(&mdr_ib_client);
	if (ret) {
		debugfs_remove_recursive(mdr_debugfs_conns);
		if (mdr_debugfs_owned)
			debugfs_remove_recursive(mdr_debugfs);
		destroy_workqueue(mdr_wq);
		return ret;
	}
	return 0;
}

void mdr_rdma_exit(void)
{
	ib_unregister_client(&mdr_ib_client);
	WARN_ON(!list_empty(&mdr_conns));
	destroy_workqueue(mdr_wq);
	debugfs_remove_recursive(mdr_debugfs_conns);
	if (mdr_debugfs_owned)
		debugfs_remove_recursive(mdr_debugfs);
	mdr_debugfs = NULL;
}
