// SPDX-License-Identifier: GPL-2.0
//
// pipeline.h - the bookkeeping of requests pipelined on one connection:
// which request goes out next, under which req_id, and whose reply an
// arriving req_id is. Pure (no verbs), so RdmaClient::call_many's window
// is tested without RDMA.
//
//	Pipeline p(requests.size(), granted_queue_depth, next_req_id);
//	while (!p.done()) {
//		while (auto s = p.next())	// within the credits
//			send(requests[s->index], s->req_id);
//		if (auto i = p.complete(reply.req_id))	// nullopt: not ours
//			results[*i] = reply;
//	}
//
// The wire protocol (wire-protocol.md, "Credits") lets a client keep up to
// the queue_depth mdnode granted outstanding, each with a req_id unique
// among them; replies may come in any order.
#ifndef MDR_PIPELINE_H
#define MDR_PIPELINE_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace mdr {

class Pipeline {
public:
	struct Send {
		size_t index;		// of the request
		uint64_t req_id;
	};

	// @count requests, at most @depth (>= 1) outstanding, req_ids from
	// @first_id on (never 0).
	Pipeline(size_t count, unsigned depth, uint64_t first_id)
		: count_(count), depth_(depth ? depth : 1), next_id_(first_id ? first_id : 1)
	{
	}

	// The next request to send, or nullopt when all are sent or @depth
	// are outstanding.
	std::optional<Send> next()
	{
		if (next_index_ == count_ || outstanding_.size() >= depth_)
			return std::nullopt;
		const Send s{next_index_++, next_id_++};
		if (next_id_ == 0)
			next_id_ = 1;
		outstanding_.emplace(s.req_id, s.index);
		return s;
	}

	// The reply with @req_id arrived: the index of its request, or nullopt
	// for a req_id that is not outstanding (a reply after its request was
	// given up, a duplicate, a forgery), which the caller drops.
	std::optional<size_t> complete(uint64_t req_id)
	{
		auto it = outstanding_.find(req_id);
		if (it == outstanding_.end())
			return std::nullopt;
		const size_t index = it->second;
		outstanding_.erase(it);
		completed_++;
		return index;
	}

	// Gives up every outstanding and unsent request (a timeout, a lost
	// connection): their indexes, outstanding first. Replies to them
	// arriving later are not ours any more.
	std::vector<size_t> abandon()
	{
		std::vector<size_t> left;
		for (const auto &[id, index] : outstanding_)
			left.push_back(index);
		outstanding_.clear();
		for (; next_index_ < count_; next_index_++)
			left.push_back(next_index_);
		completed_ += left.size();
		return left;
	}

	bool done() const { return completed_ == count_; }
	size_t outstanding() const { return outstanding_.size(); }
	// The req_id the next request would get: where a later Pipeline on
	// the same connection starts.
	uint64_t next_id() const { return next_id_; }

private:
	size_t count_;
	unsigned depth_;
	uint64_t next_id_;
	size_t next_index_ = 0;
	size_t completed_ = 0;
	std::map<uint64_t, size_t> outstanding_;	// req_id -> index
};

} // namespace mdr

#endif // MDR_PIPELINE_H
