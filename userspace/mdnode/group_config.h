// SPDX-License-Identifier: GPL-2.0
//
// group_config.h - the replica set of a group as etcd holds it
// (replication.md, "Membership"): the key /mdroute/groups/G/config, one
// line "ID=ADDR:PORT" per replica (its log listener), in id order.
//
// The first replica to start a group puts the set of its --replica
// settings there if the key is absent; from then on etcd's set is the
// group's, whatever a replica's settings say, and only a leader changes it,
// one replica at a time, by a swap guarded by its own epoch (GroupMember).
// A replica trusts nothing it reads there: a set that parse_group_config()
// refuses is not used.
#ifndef MDNODE_GROUP_CONFIG_H
#define MDNODE_GROUP_CONFIG_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/util/result.h"
#include "mdnode/config.h"

namespace mdnode {

struct GroupConfig {
	std::vector<ReplicaArg> replicas;	// in id order
	int64_t revision = 0;			// etcd's mod_revision of the key

	const ReplicaArg *find(uint32_t id) const;
	bool operator==(const GroupConfig &) const = default;
};

// The key's value for a set (sorted by id here).
std::string encode_group_config(std::vector<ReplicaArg> replicas);
// -EINVAL naming the line: a line not ID=ADDR:PORT, a set of a size
// check_replica_set() refuses, ids or addresses repeated.
mdr::Result<std::vector<ReplicaArg>> parse_group_config(std::string_view text);

// set with c applied: add (c's id absent before) or remove (present).
std::vector<ReplicaArg> with_change(const std::vector<ReplicaArg> &set, bool add,
				    const ReplicaArg &r);

} // namespace mdnode

#endif // MDNODE_GROUP_CONFIG_H
