// SPDX-License-Identifier: GPL-2.0
//
// follow.h - an admin session that follows a replica group's leader. A
// replica that does not lead answers a change with MDR_ST_NOT_LEADER and
// the leader's address (wire version 5); nothing was done. The session
// then connects there, proves the key again, and sends the request again.
// Reads go to the replica named (each answers them from its own state,
// but a volume name it does not find, for which it names the leader too).
#ifndef MDCTL_FOLLOW_H
#define MDCTL_FOLLOW_H

#include <memory>
#include <span>

#include "mdctl/host.h"

namespace mdctl {

// Connections a call makes to follow a leader before it gives up: a leader
// that moved on once more while the client came is followed again.
inline constexpr int kMaxLeaderHops = 3;
// How often a replica that knows no leader (an election is on) is asked
// again, within the call's timeout.
inline constexpr int kNoLeaderRetryMs = 200;

// @first is the session to the replica the operator named, made with
// @opts and @key; the session returned starts there.
std::unique_ptr<NodeSession> follow_leader(Host &host, const NodeOptions &opts,
					   std::span<const uint8_t> key,
					   std::unique_ptr<NodeSession> first);

} // namespace mdctl

#endif // MDCTL_FOLLOW_H
