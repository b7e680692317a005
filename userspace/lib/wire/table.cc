// SPDX-License-Identifier: GPL-2.0
//
// table.cc - the opcode table (see table.h), the questions asked of it, and
// the docs' message table made from it.
#include "lib/wire/table.h"

#include <concepts>
#include <cstdio>
#include <variant>

#include "lib/wire/message.h"

namespace mdr::wire {

namespace {

// Whether a request needs a connection that proved the admin key (key),
// or, from version 3 on, one whose host proved its key (host).
enum class Auth { none, key, host };

// What an opcode is: the connections it is allowed on, which way it
// travels, and the proof it needs.
struct Kind {
	unsigned roles;
	Flow flow;
	Auth auth;
};

constexpr Kind kHostRpc{kOnHost, Flow::rpc, Auth::host};
constexpr Kind kHostPush{kOnHost, Flow::push, Auth::host};
constexpr Kind kHostProof{kOnHost, Flow::rpc, Auth::none};	// HOST_AUTH
constexpr Kind kAdminProof{kOnAdmin, Flow::rpc, Auth::none};	// AUTH
constexpr Kind kAdminRpc{kOnAdmin, Flow::rpc, Auth::key};
constexpr Kind kEitherWay{kOnHost | kOnAdmin, Flow::both, Auth::none};

template <typename T>
concept Message = requires {
	{ T::opcode } -> std::convertible_to<uint16_t>;
	{ T::reply } -> std::convertible_to<bool>;
};

template <typename T, uint16_t Op, bool Reply>
constexpr bool kIsMsg = [] {
	if constexpr (Message<T>)
		return T::opcode == Op && T::reply == Reply;
	else
		return false;
}();

// The index in Body of the one message of an opcode and direction. A
// throw in a consteval function is a compile error where it is reached.
template <uint16_t Op, bool Reply, typename... A>
consteval size_t index_of_msg(const std::variant<A...> *)
{
	constexpr bool match[] = {kIsMsg<A, Op, Reply>...};
	size_t found = sizeof...(A);

	for (size_t i = 0; i < sizeof...(A); i++) {
		if (match[i] && found != sizeof...(A))
			throw "two messages of Body have the row's opcode and direction";
		if (match[i])
			found = i;
	}
	if (found == sizeof...(A))
		throw "no message of Body has the row's opcode and direction";
	return found;
}

template <uint16_t Op, bool Reply>
consteval MsgInfo msg(const char *name)
{
	constexpr size_t i = index_of_msg<Op, Reply>(static_cast<const Body *>(nullptr));
	using M = std::variant_alternative_t<i, Body>;

	return {name, shape_of<M>(), &decode_msg<M>, &doc_of<M>, i};
}

// The messages of Body with the row's opcode are its request and reply.
template <uint16_t Op>
consteval OpInfo row(const char *cname, const char *req, const char *rep, Kind kind)
{
	if (kind.auth == Auth::key && kind.roles != kOnAdmin)
		throw "only admin RPCs need the key";
	if (kind.auth == Auth::host && kind.roles != kOnHost)
		throw "only host messages need the host's proof";
	return {Op, cname, kind.roles, kind.flow, kind.auth == Auth::key,
		kind.auth == Auth::host, msg<Op, false>(req), msg<Op, true>(rep)};
}

// A row: the opcode, the names of its request and reply in error
// messages, its kind.
#define MDR_ROW(op, ...) row<op>(#op, __VA_ARGS__)
constexpr OpInfo kOps[] = {
	MDR_ROW(MDR_OP_OPEN, "open_req", "open_rep", kHostRpc),
	MDR_ROW(MDR_OP_CLOSE, "close_req", "close_rep", kHostRpc),
	MDR_ROW(MDR_OP_RENEW, "renew_req", "renew_rep", kHostRpc),
	MDR_ROW(MDR_OP_ALLOC, "alloc_req", "alloc_rep", kHostRpc),
	MDR_ROW(MDR_OP_HOST_AUTH, "host_auth_req", "host_auth_rep", kHostProof),
	MDR_ROW(MDR_OP_INVALIDATE, "inval", "inval_ack", kHostPush),
	MDR_ROW(MDR_OP_AUTH, "auth_req", "auth_rep", kAdminProof),
	MDR_ROW(MDR_OP_VOL_CREATE, "vol_create_req", "vol_create_rep", kAdminRpc),
	MDR_ROW(MDR_OP_VOL_DELETE, "vol_delete_req", "vol_delete_rep", kAdminRpc),
	MDR_ROW(MDR_OP_VOL_LIST, "vol_list_req", "vol_list_rep", kAdminRpc),
	MDR_ROW(MDR_OP_VOL_INFO, "vol_info_req", "vol_info_rep", kAdminRpc),
	MDR_ROW(MDR_OP_VOL_RESIZE, "vol_resize_req", "vol_resize_rep", kAdminRpc),
	MDR_ROW(MDR_OP_DEV_LIST, "dev_list_req", "dev_list_rep", kAdminRpc),
	MDR_ROW(MDR_OP_NODE_STATS, "node_stats_req", "node_stats_rep", kAdminRpc),
	MDR_ROW(MDR_OP_MOVE, "move_req", "move_rep", kAdminRpc),
	MDR_ROW(MDR_OP_DRAIN, "drain_req", "drain_rep", kAdminRpc),
	MDR_ROW(MDR_OP_HOST_ADD, "host_add_req", "host_add_rep", kAdminRpc),
	MDR_ROW(MDR_OP_HOST_REMOVE, "host_remove_req", "host_remove_rep", kAdminRpc),
	MDR_ROW(MDR_OP_HOST_LIST, "host_list_req", "host_list_rep", kAdminRpc),
	MDR_ROW(MDR_OP_GROUP_STATUS, "group_status_req", "group_status_rep", kAdminRpc),
	MDR_ROW(MDR_OP_REPLICA_ADD, "replica_add_req", "replica_add_rep", kAdminRpc),
	MDR_ROW(MDR_OP_REPLICA_REMOVE, "replica_remove_req", "replica_remove_rep", kAdminRpc),
	MDR_ROW(MDR_OP_PING, "ping_req", "ping_rep", kEitherWay),
};
#undef MDR_ROW

template <typename T, typename... A>
consteval size_t index_in(const std::variant<A...> *)
{
	constexpr bool same[] = {std::is_same_v<T, A>...};

	for (size_t i = 0; i < sizeof...(A); i++)
		if (same[i])
			return i;
	return sizeof...(A);
}

// Every type of Body but ErrorRep is the request or the reply of exactly
// one row, and no opcode has two.
consteval bool table_covers_body()
{
	const size_t error_rep = index_in<ErrorRep>(static_cast<const Body *>(nullptr));

	for (size_t i = 0; i < std::variant_size_v<Body>; i++) {
		int rows = 0;

		for (const OpInfo &op : kOps)
			rows += (op.req.alternative == i) + (op.rep.alternative == i);
		if (rows != (i == error_rep ? 0 : 1))
			return false;
	}
	for (const OpInfo &a : kOps)
		for (const OpInfo &b : kOps)
			if (&a != &b && a.opcode == b.opcode)
				return false;
	return true;
}
static_assert(table_covers_body(), "kOps: one row per opcode, one place per message");

} // namespace

const char *roles_name(unsigned roles)
{
	switch (roles) {
	case kOnHost:
		return "host";
	case kOnAdmin:
		return "admin";
	case kOnHost | kOnAdmin:
		return "both";
	}
	return "unknown";
}

std::span<const OpInfo> opcode_table()
{
	return kOps;
}

const OpInfo *find_op(uint16_t opcode)
{
	for (const OpInfo &op : kOps)
		if (op.opcode == opcode)
			return &op;
	return nullptr;
}

bool needs_auth(uint16_t opcode)
{
	const OpInfo *op = find_op(opcode);

	return op && op->needs_key;
}

bool needs_host_auth(uint16_t opcode, uint16_t version)
{
	const OpInfo *op = find_op(opcode);

	return op && op->needs_host_key && version >= kHostAuthVersion;
}

std::string opcode_name(uint16_t opcode)
{
	if (const OpInfo *op = find_op(opcode))
		return op->cname;
	return "MDR_OP_?" + std::to_string(opcode);
}

const char kTableBegin[] =
	"<!-- message table: made by mdr-wire-table from the codec's opcode table "
	"(userspace/lib/wire/table.cc); do not edit here -->";
const char kTableEnd[] = "<!-- end of the message table -->";

std::string message_table()
{
	std::string t = "| opcode | value | role | needs | request (size) | reply (size) |\n"
			"|---|---|---|---|---|---|\n";

	for (const OpInfo &op : kOps) {
		char value[8];
		std::string req = op.req.doc(), rep = op.rep.doc();

		std::snprintf(value, sizeof(value), "0x%02x", op.opcode);
		switch (op.flow) {
		case Flow::rpc:
			req = "C->N " + req;
			rep = "N->C " + rep;
			break;
		case Flow::push:
			req = "push N->C " + req;
			rep = "ack C->N " + rep;
			break;
		case Flow::both:
			req += ", either way";
			break;
		}
		t += std::string("| `") + op.cname + "` | " + value + " | " +
		     roles_name(op.roles) + " | " +
		     (op.needs_key ? "`AUTH`" : op.needs_host_key ? "`HOST_AUTH` (v3)" : "-") +
		     " | " + req + " | " + rep + " |\n";
	}
	return t;
}

} // namespace mdr::wire
