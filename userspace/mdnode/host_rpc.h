// SPDX-License-Identifier: GPL-2.0
//
// host_rpc.h - what a host asks of the node: OPEN a volume (a lease and a
// window on its table), RENEW its leases, ALLOC an extent, CLOSE, and its
// acks of the node's pushes.
//
// Leases belong to (host, volume), not to a connection: a host that
// disconnects keeps its lease until it expires, because it may still have
// IO in flight to the locations it cached. mdnode counts a lease from when
// it received the request, plus a margin for clock drift; the host counts
// from when it sent it, minus the same margin.
#ifndef MDNODE_HOST_RPC_H
#define MDNODE_HOST_RPC_H

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "lib/wire/wire.h"
#include "mdnode/core.h"
#include "mdnode/pushes.h"

namespace mdnode {

class HostRpc {
public:
	HostRpc(NodeCore &core, Pushes &pushes) : core_(core), pushes_(pushes) {}

	void do_open(Session &s, uint64_t req_id, const mdr::wire::OpenReq &r);
	void do_close(Session &s, uint64_t req_id, const mdr::wire::CloseReq &r);
	void do_renew(Session &s, uint64_t req_id, const mdr::wire::RenewReq &r);
	void do_alloc(Session &s, uint64_t req_id, const mdr::wire::AllocReq &r);
	void do_ack(Session &s, uint64_t req_id, const mdr::wire::InvalidateAck &r);

private:
	using AllocKey = std::pair<uint64_t, uint64_t>;	// (volume, index)

	// ALLOC's steps after the zeroing of the place: journal, fan-out to
	// the other holders, then the answer to every request waiting.
	void alloc_journal(AllocKey key, uint64_t host, Change c);
	void alloc_answer(AllocKey key, int err, const mdr_wire_entry &entry);

	NodeCore &core_;
	Pushes &pushes_;
	// Requests waiting for an allocation in flight: (volume, index) ->
	// (conn, req_id).
	std::map<AllocKey, std::vector<std::pair<ConnId, uint64_t>>> alloc_waiters_;
};

} // namespace mdnode

#endif // MDNODE_HOST_RPC_H
