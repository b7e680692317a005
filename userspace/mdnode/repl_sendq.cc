// SPDX-License-Identifier: GPL-2.0
//
// repl_sendq.cc - see repl_sendq.h.
#include "mdnode/repl_sendq.h"

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>

namespace mdnode::repl {

mdr::Status SendQueue::push(Op op)
{
	if (queue_.size() >= max_queued_)
		return mdr::Error(-ENOBUFS, "the send queue stayed full for " +
						    std::to_string(queue_.size()) + " operations");
	queue_.push_back(std::move(op));
	return {};
}

const SendQueue::Op *SendQueue::next()
{
	if (queue_.empty())
		return nullptr;
	if (posted_ - completed_ >= depth_) {
		waits_++;
		return nullptr;
	}

	const Op &op = queue_.front();
	const uint64_t from = op.offset, to = from + op.bytes.size();

	if (reads_mirror(op.kind) && std::any_of(writes_.begin(), writes_.end(), [&](const Inflight &w) {
		    return from < w.to && w.from < to;
	    }))
		return nullptr;
	return &op;
}

void SendQueue::pop()
{
	const Op &op = queue_.front();

	posted_++;
	if (reads_mirror(op.kind))
		writes_.push_back({posted_, op.offset, op.offset + op.bytes.size()});
	queue_.pop_front();
}

void SendQueue::completed(uint64_t seq)
{
	completed_ = std::clamp(seq, completed_, posted_);
	while (!writes_.empty() && writes_.front().seq <= completed_)
		writes_.pop_front();
}

void SendQueue::clear()
{
	queue_.clear();
	writes_.clear();
	posted_ = completed_ = 0;
}

} // namespace mdnode::repl
