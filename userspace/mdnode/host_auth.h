// SPDX-License-Identifier: GPL-2.0
//
// host_auth.h - who a host is: its proof (MDR_OP_HOST_AUTH) against the
// host registry, the refusal of what an unproven host sends, the timeout
// of a host that never proves, and the registry's admin RPCs
// (MDR_OP_HOST_ADD, MDR_OP_HOST_REMOVE, MDR_OP_HOST_LIST).
//
// A host connection of wire version 3 starts unauthenticated; HOST_AUTH
// proves the key the registry holds for the connect request's host id,
// whose tenant must be the connect request's, over a transcript of this
// connection (lib/auth/auth.h), and mdnode proves it back. Until then every
// host message the opcode table marks (wire::needs_host_auth()) is
// refused with MDR_ST_PERM and the connection is cut; so is a failed
// proof. At the connect (admit()), before the connection gets a QP in the
// tenant's protection domain: a version 3 host whose id the registry does
// not hold, or holds for another tenant, is refused; hosts of version 1
// and 2 cannot authenticate, and are refused when the node requires it
// and, under optional, when their id is in the registry.
// Documentation/wire-auth.md, "Host authentication".
#ifndef MDNODE_HOST_AUTH_H
#define MDNODE_HOST_AUTH_H

#include <cstdint>

#include "lib/wire/wire.h"
#include "mdnode/core.h"

namespace mdnode {

class HostAuth {
public:
	explicit HostAuth(NodeCore &core) : core_(core) {}

	// MDR_ST_OK, or MDR_ST_PERM for a host refused before any proof (see
	// above); counted and logged.
	uint16_t admit(const PeerInfo &peer);
	// Whether s may send m now; if not, m is refused, counted and the
	// connection cut.
	bool allowed(Session &s, const mdr::wire::Header &hdr);
	void do_host_auth(Session &s, uint64_t req_id, const mdr::wire::HostAuthReq &r);
	// Cuts version 3 hosts and admins that did not authenticate within
	// --host-auth-timeout-ms. From tick().
	void expire();

	void do_add(Session &s, uint64_t req_id, const mdr::wire::HostAddReq &r);
	void do_remove(Session &s, uint64_t req_id, const mdr::wire::HostRemoveReq &r);
	void do_list(Session &s, uint64_t req_id, const mdr::wire::HostListReq &r);

private:
	// Counts, logs (rate-limited) and cuts an unproven or failed peer.
	void refuse(Session &s, const char *why);

	NodeCore &core_;
};

} // namespace mdnode

#endif // MDNODE_HOST_AUTH_H
