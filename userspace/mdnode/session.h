// SPDX-License-Identifier: GPL-2.0
//
// session.h - one connected client as the node sees it: who it is, what
// it proved, which volumes it opened, and its pushes (pushes.h) sent and
// held back. Made at on_established(), gone at on_disconnected().
#ifndef MDNODE_SESSION_H
#define MDNODE_SESSION_H

#include <cstdint>
#include <deque>
#include <set>
#include <vector>

#include "mdnode/net.h"

namespace mdnode {

struct Session {
	PeerInfo peer;
	// Admin: proved the admin key (MDR_OP_AUTH). Host: proved its key
	// (MDR_OP_HOST_AUTH) as a host of the registry, whose host id and
	// tenant are the peer's.
	bool authenticated = false;
	int64_t since_ms = 0;		// established, by the node's clock
	// Cut by us (a push timed out): what it still sends is ignored,
	// as the transport does once the connection is closing.
	bool closing = false;
	std::set<uint64_t> opened;	// volume ids
	// Push ids sent and not yet acked: at most peer.push_credits.
	std::set<uint64_t> pushes;
	// Push ids waiting for a credit or for a send that failed, in the
	// order they are to be sent.
	std::deque<uint64_t> queued;
	// Requests handled and not answered yet, and when each arrived
	// (NodeCore::request_end()): as many slots as the queue depth
	// granted, made once at on_established(), so no request allocates.
	struct InFlight {
		uint64_t req_id;
		int64_t start_us;	// mono_us()
		uint16_t opcode;
		bool used;
	};
	std::vector<InFlight> in_flight;
	// Its slot in RequestStats::by_tenant; -1 until the host proved
	// who it is.
	int tenant_slot = -1;
};

} // namespace mdnode

#endif // MDNODE_SESSION_H
