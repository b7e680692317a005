// SPDX-License-Identifier: GPL-2.0
//
// rdma_client.h - a blocking client of mdnode for user space: mdctl's admin
// commands and the test programs. One RC connection. call() sends one
// request and waits for its reply; call_many() pipelines several, keeping
// up to the queue depth mdnode granted outstanding (kQueueDepth asked).
// Invalidations pushed meanwhile are acknowledged at once and counted (a
// user-space client caches nothing, so it has nothing to drain).
//
//	auto c = RdmaClient::connect({.node = "192.0.2.2", .role = MDR_ROLE_ADMIN});
//	auto st = c.value()->authenticate(key);
//	auto rep = c.value()->call(wire::VolListReq{});
#ifndef MDR_RDMA_CLIENT_H
#define MDR_RDMA_CLIENT_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lib/auth/auth.h"
#include "lib/client/pipeline.h"
#include "lib/util/result.h"
#include "lib/verbs/verbs.h"
#include "lib/wire/wire.h"

namespace mdr {

struct ClientOptions {
	std::string node;		// address of mdnode
	uint16_t port = MDR_WIRE_PORT;
	mdr_wire_role role = MDR_ROLE_HOST;
	uint32_t tenant = 0;
	uint64_t host_id = 0;		// 0: a random one
	int timeout_ms = 5000;		// per step: connect, each call (unless the
				// call names its own), each READ
	uint16_t version_max = MDR_WIRE_VERSION;	// highest wire version asked
	// false: pushes are counted and shown, never acknowledged (a test's
	// host that does not do its part).
	bool ack_pushes = true;
};

class RdmaClient {
public:
	static Result<std::unique_ptr<RdmaClient>> connect(const ClientOptions &opts);
	~RdmaClient();
	RdmaClient(const RdmaClient &) = delete;
	RdmaClient &operator=(const RdmaClient &) = delete;

	// Proves the admin key (HMAC-SHA256 over the accept's nonce and our
	// host id).
	Status authenticate(std::span<const uint8_t> key);

	// What the proofs of this host connection cover, with host_nonce as
	// ours (lib/auth/auth.h).
	HostTranscript host_transcript(const Nonce &host_nonce) const;
	// MDR_OP_HOST_AUTH of a host connection of version 3: a fresh nonce
	// and the proof of key, then mdnode's proof checked. -EPERM with
	// "authentication: MDR_ST_PERM" when mdnode refused ours, -EACCES
	// when mdnode's proof is wrong (the connection is not to be used: it
	// is not the node that holds our key). Returns the request it sent.
	Result<wire::HostAuthReq> authenticate_host(std::span<const uint8_t> key);

	// Sends one request and waits for its reply, at most @timeout_ms
	// (0: the connection's timeout_ms). A reply with a status other than
	// OK comes back as an Error with the status's errno. A reply that
	// comes after its call timed out is dropped.
	Result<wire::Msg> call(const wire::Body &request, int timeout_ms = 0);

	// What call_many() tells its caller of each request as it goes, and
	// how deep it pipelines: a load generator times each request from
	// its send to its reply without a window of its own.
	struct Watch {
		unsigned depth = 0;	// at most this many outstanding (0, or
					// above queue_depth(): queue_depth())
		// Request @index was posted to the send queue.
		std::function<void(size_t index)> sent;
		// The reply to request @index arrived (OK or not); not called
		// for a request failed by a timeout or a lost connection.
		std::function<void(size_t index)> answered;
	};

	// Sends @requests pipelined, at most the granted queue depth
	// outstanding, and returns their replies in the order of @requests
	// (each as call() would). Requests are sent in order; mdnode may
	// answer them in any order. A timeout (no reply for @timeout_ms, 0:
	// the connection's) or a lost connection fails every request not
	// answered yet, sent or not. @watch, if given, limits the depth and
	// hears of each send and reply.
	std::vector<Result<wire::Msg>> call_many(std::span<const wire::Body> requests,
						 int timeout_ms = 0, const Watch *watch = nullptr);

	// Requests call_many() keeps outstanding: what mdnode granted.
	unsigned queue_depth() const;

	// One-sided READ of len bytes at a remote address with an rkey. A
	// remote access error (a foreign rkey) is -EACCES.
	Result<std::vector<std::byte>> read(uint64_t addr, uint32_t rkey, uint32_t len);

	// Acknowledges pushes as they come, for ms milliseconds.
	Status serve_pushes(int ms);

	// Called with every invalidation pushed (and its push id), just before
	// it is acknowledged: what a test prints to show it was received.
	void on_push(std::function<void(uint64_t push_id, const wire::Invalidate &)> fn)
	{
		on_push_ = std::move(fn);
	}

	// The leader the last MDR_ST_NOT_LEADER reply named (its call failed
	// with -EAGAIN, nothing done), once: the caller may go there.
	std::optional<wire::Leader> take_redirect() { return std::exchange(redirect_, {}); }

	const wire::ConnRep &accepted() const { return rep_; }
	uint64_t host_id() const { return opts_.host_id; }
	uint64_t invalidations() const { return invalidations_; }

private:
	explicit RdmaClient(const ClientOptions &opts) : opts_(opts) {}
	Status setup();
	Result<int> wait_cm(int expected);
	Status post_recv(uint32_t slot);
	Status post_send(uint32_t slot, std::span<const std::byte> msg);
	// Polls completions until pred() or the timeout; handles receives.
	template <typename Pred> Status poll_until(Pred pred, int timeout_ms);
	void on_recv(uint32_t slot, uint32_t len);

	ClientOptions opts_;
	// Freed in reverse, after the destructor disconnects and destroys the
	// QP: the CQ, its channel, the buffers, the PD, the id, the channel of
	// its events.
	verbs::EventChannelPtr ec_;
	verbs::IdPtr id_;
	verbs::PdPtr pd_;
	verbs::Region buf_;		// recv slots, send slots, READ area
	verbs::CompChannelPtr ch_;
	verbs::CqPtr cq_;
	wire::ConnRep rep_;
	wire::ConnReq req_;
	uint32_t node_qpn_ = 0;		// mdnode's QP, from ESTABLISHED
	uint64_t next_req_ = 1;
	uint64_t invalidations_ = 0;
	std::function<void(uint64_t, const wire::Invalidate &)> on_push_;
	// The requests of the call_many() running: their window, and where
	// their replies go.
	Pipeline *pipeline_ = nullptr;
	std::vector<std::optional<Result<wire::Msg>>> *replies_ = nullptr;
	const Watch *watch_ = nullptr;
	std::optional<Error> bad_message_;	// from mdnode: fails the call
	std::optional<wire::Leader> redirect_;
	uint64_t progress_ = 0;			// replies and freed send slots
	std::vector<uint32_t> free_send_;	// send slots not owned by the HCA
	bool read_done_ = false;
	bool broken_ = false;		// the QP went to error
	std::string broken_why_;
	int read_status_ = 0;
};

} // namespace mdr

#endif // MDR_RDMA_CLIENT_H
