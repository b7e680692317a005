// SPDX-License-Identifier: GPL-2.0
//
// repl_sendq.h - the send queues of a replication connection, without
// verbs: which of the operations the leader's shipper asked for may be
// posted now (repl_rdma.h says why the rules are these), and which of a
// follower's DURABLEs is signalled. Pure; the transport posts what next()
// gives and reports completions, and tests/test_repl_sendq.cc checks the
// rules with no RDMA.
//
//	q.push({SendQueue::write, offset, bytes});	// -ENOBUFS when too many wait
//	while (const SendQueue::Op *op = q.next()) {
//		post op with wr_id q.next_seq(), signalled if q.signalled(*op);
//		q.pop();
//	}
//	on a signalled completion:	q.completed(wc.wr_id);
//
// The rules: at most depth WRs are in the send queue, counting every WR
// up to the last signalled one completed as done; a WRITE is not
// signalled (the notify after it is, and retires it); a write_notify (an
// entry's WRITE with immediate: its bytes and its notify in one) is; a
// WRITE or write_notify that would copy into mirror bytes one not
// completed yet reads waits for it.
// What cannot go waits in order: back-pressure, never an error.
#ifndef MDNODE_REPL_SENDQ_H
#define MDNODE_REPL_SENDQ_H

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "lib/util/result.h"

namespace mdnode::repl {

class SendQueue {
public:
	enum Kind { write, notify, write_notify, send };
	struct Op {
		Kind kind;
		uint32_t offset;		// of the ring (write, notify, write_notify)
		std::vector<std::byte> bytes;	// write, write_notify, send
	};
	// It is written from the mirror: its bytes are copied there first.
	static bool reads_mirror(Kind k) { return k == write || k == write_notify; }

	SendQueue(uint32_t depth, size_t max_queued) : depth_(depth), max_queued_(max_queued) {}

	// -ENOBUFS when max_queued wait already (the peer took nothing for
	// that long: the connection is to be given up).
	mdr::Status push(Op op);
	// The operation to post now, or nullptr: none waits, the send queue
	// is full (counted in waits()), or a WRITE or an entry waits for one
	// under its mirror bytes.
	const Op *next();
	// The wr_id the next post takes, and whether it is signalled.
	uint64_t next_seq() const { return posted_ + 1; }
	static bool signalled(const Op &op) { return op.kind != write; }
	// The operation next() gave was posted.
	void pop();
	// The signalled WR seq completed, and with it every WR before it.
	void completed(uint64_t seq);
	void clear();

	size_t queued() const { return queue_.size(); }
	uint64_t in_flight() const { return posted_ - completed_; }
	uint64_t waits() const { return waits_; }

private:
	struct Inflight {
		uint64_t seq;
		uint64_t from, to;	// mirror bytes it reads
	};

	const uint32_t depth_;
	const size_t max_queued_;
	std::deque<Op> queue_;
	std::deque<Inflight> writes_;	// WRITEs and entries not known complete
	uint64_t posted_ = 0;
	uint64_t completed_ = 0;
	uint64_t waits_ = 0;
};

// A follower's DURABLE posted as seq (1, 2, ...), with in_sq before it in
// an SQ of depth WRs not retired yet: one in every depth / 2 is
// signalled, and always the one that fills the SQ, so that a full SQ
// always waits for a completion that comes (its completion retires it
// and every one before it).
inline bool durable_signalled(uint64_t seq, uint32_t in_sq, uint32_t depth)
{
	return seq % (depth / 2 ? depth / 2 : 1) == 0 || in_sq + 1 >= depth;
}

} // namespace mdnode::repl

#endif // MDNODE_REPL_SENDQ_H
