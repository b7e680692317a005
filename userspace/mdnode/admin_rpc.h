// SPDX-License-Identifier: GPL-2.0
//
// admin_rpc.h - what an admin (mdctl) asks of the node: AUTH with the
// admin key, then volumes (create, delete, resize, info, list), devices,
// the node's statistics, and a replica group's status and changes of its
// set. MOVE and DRAIN are the mover's (moves.h).
// The dispatch (node.cc) refuses every admin request but AUTH until the
// session has proven the key.
#ifndef MDNODE_ADMIN_RPC_H
#define MDNODE_ADMIN_RPC_H

#include <cstdint>
#include <functional>
#include <string>

#include "lib/wire/wire.h"
#include "mdnode/core.h"
#include "mdnode/moves.h"

namespace mdnode {

class AdminRpc {
public:
	AdminRpc(NodeCore &core, const Mover &mover) : core_(core), mover_(mover) {}

	void do_auth(Session &s, uint64_t req_id, const mdr::wire::AuthReq &r);
	void do_create(Session &s, uint64_t req_id, const mdr::wire::VolCreateReq &r);
	void do_delete(Session &s, uint64_t req_id, const mdr::wire::VolDeleteReq &r);
	void do_resize(Session &s, uint64_t req_id, const mdr::wire::VolResizeReq &r);
	void do_info(Session &s, uint64_t req_id, const mdr::wire::VolInfoReq &r);
	void do_vol_list(Session &s, uint64_t req_id, const mdr::wire::VolListReq &r);
	void do_dev_list(Session &s, uint64_t req_id, const mdr::wire::DevListReq &r);
	void do_stats(Session &s, uint64_t req_id);
	// GROUP_STATUS: the replica's view of its group (a node of its own:
	// group 0), answered by leader and follower alike.
	void do_group_status(Session &s, uint64_t req_id);
	// REPLICA_ADD and REPLICA_REMOVE, at the leader (the dispatch answers
	// them NOT_LEADER elsewhere): the change begun by the group's log,
	// its progress in GROUP_STATUS. A node of its own has no set to
	// change: MDR_ST_INVAL.
	void do_replica_add(Session &s, uint64_t req_id, const mdr::wire::ReplicaAddReq &r);
	void do_replica_remove(Session &s, uint64_t req_id, const mdr::wire::ReplicaRemoveReq &r);

private:
	void change_membership(Session &s, uint64_t req_id, uint16_t opcode,
			       const MembershipChange &c);
	// Looks a volume up by name and changes it as a whole (delete, resize)
	// if no host holds a lease on it; replies to errors itself.
	void change_unopened(ConnId conn, uint64_t req_id, uint16_t opcode,
			     const std::string &name,
			     const std::function<mdr::Result<Change>(uint64_t id)> &prepare,
			     std::function<void(uint64_t id)> done);
	void drop_leases(uint64_t volume_id);
	mdr::wire::Volume describe(const Volume &v) const;
	mdr::wire::VolumeReply volume_reply(const Volume &v) const;

	NodeCore &core_;
	const Mover &mover_;
};

} // namespace mdnode

#endif // MDNODE_ADMIN_RPC_H
