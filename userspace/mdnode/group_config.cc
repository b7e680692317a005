// SPDX-License-Identifier: GPL-2.0
//
// group_config.cc - see group_config.h.
#include "mdnode/group_config.h"

#include <algorithm>
#include <cerrno>

namespace mdnode {

namespace {

void by_id(std::vector<ReplicaArg> &set)
{
	std::sort(set.begin(), set.end(),
		  [](const ReplicaArg &a, const ReplicaArg &b) { return a.id < b.id; });
}

std::string address_of(const ReplicaArg &r)
{
	const bool v6 = r.address.find(':') != std::string::npos;

	return (v6 ? "[" + r.address + "]" : r.address) + ":" + std::to_string(r.port);
}

} // namespace

const ReplicaArg *GroupConfig::find(uint32_t id) const
{
	for (const ReplicaArg &r : replicas)
		if (r.id == id)
			return &r;
	return nullptr;
}

std::string encode_group_config(std::vector<ReplicaArg> replicas)
{
	std::string s;

	by_id(replicas);
	for (const ReplicaArg &r : replicas)
		s += std::to_string(r.id) + "=" + address_of(r) + "\n";
	return s;
}

mdr::Result<std::vector<ReplicaArg>> parse_group_config(std::string_view text)
{
	std::vector<ReplicaArg> set;
	size_t line = 0;

	while (!text.empty()) {
		const size_t nl = text.find('\n');
		const std::string_view one = text.substr(0, nl);

		line++;
		if (mdr::Status st = parse_replica(one, "config line " + std::to_string(line),
						   set);
		    !st.ok())
			return mdr::Error(-EINVAL, st.message());
		text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
	}
	if (mdr::Status st = check_replica_set(set, "config", "the set has ", "");
	    !st.ok())
		return mdr::Error(-EINVAL, st.message());
	by_id(set);
	return set;
}

std::vector<ReplicaArg> with_change(const std::vector<ReplicaArg> &set, bool add,
				    const ReplicaArg &r)
{
	std::vector<ReplicaArg> next;

	for (const ReplicaArg &a : set)
		if (a.id != r.id)
			next.push_back(a);
	if (add)
		next.push_back(r);
	by_id(next);
	return next;
}

} // namespace mdnode
