// SPDX-License-Identifier: GPL-2.0
//
// table.cc - the opcode table (see table.h), the questions asked of it, and
// the docs' message table made from it.
#include "lib/wire/table.h"

#include <cstdio>
#include <variant>

#include "lib/wire/message.h"

namespace mdr::wire {

namespace {

// Whether a request needs a connection that proved the admin key (key),
// or, from version 3 on, one whose host proved its key (host).
enum class Auth { none, key, host };

template <typename T, typename... A>
consteval size_t index_in(const std::variant<A...> *)
{
	constexpr bool same[] = {std::is_same_v<T, A>...};

	for (size_t i = 0; i < sizeof...(A); i++)
		if (same[i])
			return i;
	return sizeof...(A);
}

template <typename T>
constexpr size_t kAlternative = index_in<T>(static_cast<const Body *>(nullptr));

template <typename M>
consteval MsgInfo msg(const char *name)
{
	static_assert(kAlternative<M> < std::variant_size_v<Body>, "a message of Body");
	return {name, shape_of<M>(), &decode_msg<M>, &doc_of<M>, kAlternative<M>};
}

// A throw in a consteval function is a compile error where it is reached.
template <typename Req, typename Rep>
consteval OpInfo row(uint16_t opcode, const char *cname, const char *req,
		     const char *rep, unsigned roles, Flow flow, Auth auth)
{
	if (Req::opcode != opcode || Rep::opcode != opcode || Req::reply || !Rep::reply)
		throw "the row's types are not its opcode's request and reply";
	if (auth == Auth::key && roles != kOnAdmin)
		throw "only admin RPCs need the key";
	if (auth == Auth::host && roles != kOnHost)
		throw "only host messages need the host's proof";
	return {opcode, cname, roles, flow, auth == Auth::key, auth == Auth::host,
		msg<Req>(req), msg<Rep>(rep)};
}

#define MDR_OP(op) op, #op
constexpr OpInfo kOps[] = {
	row<OpenReq, OpenRep>(MDR_OP(MDR_OP_OPEN), "open_req", "open_rep",
			      kOnHost, Flow::rpc, Auth::host),
	row<CloseReq, CloseRep>(MDR_OP(MDR_OP_CLOSE), "close_req", "close_rep",
				kOnHost, Flow::rpc, Auth::host),
	row<RenewReq, RenewRep>(MDR_OP(MDR_OP_RENEW), "renew_req", "renew_rep",
				kOnHost, Flow::rpc, Auth::host),
	row<AllocReq, AllocRep>(MDR_OP(MDR_OP_ALLOC), "alloc_req", "alloc_rep",
				kOnHost, Flow::rpc, Auth::host),
	row<HostAuthReq, HostAuthRep>(MDR_OP(MDR_OP_HOST_AUTH), "host_auth_req",
				      "host_auth_rep", kOnHost, Flow::rpc, Auth::none),
	row<Invalidate, InvalidateAck>(MDR_OP(MDR_OP_INVALIDATE), "inval", "inval_ack",
				       kOnHost, Flow::push, Auth::host),
	row<AuthReq, AuthRep>(MDR_OP(MDR_OP_AUTH), "auth_req", "auth_rep",
			      kOnAdmin, Flow::rpc, Auth::none),
	row<VolCreateReq, VolCreateRep>(MDR_OP(MDR_OP_VOL_CREATE), "vol_create_req",
					"vol_create_rep", kOnAdmin, Flow::rpc, Auth::key),
	row<VolDeleteReq, VolDeleteRep>(MDR_OP(MDR_OP_VOL_DELETE), "vol_delete_req",
					"vol_delete_rep", kOnAdmin, Flow::rpc, Auth::key),
	row<VolListReq, VolListRep>(MDR_OP(MDR_OP_VOL_LIST), "vol_list_req",
				    "vol_list_rep", kOnAdmin, Flow::rpc, Auth::key),
	row<VolInfoReq, VolInfoRep>(MDR_OP(MDR_OP_VOL_INFO), "vol_info_req",
				    "vol_info_rep", kOnAdmin, Flow::rpc, Auth::key),
	row<VolResizeReq, VolResizeRep>(MDR_OP(MDR_OP_VOL_RESIZE), "vol_resize_req",
					"vol_resize_rep", kOnAdmin, Flow::rpc, Auth::key),
	row<DevListReq, DevListRep>(MDR_OP(MDR_OP_DEV_LIST), "dev_list_req",
				    "dev_list_rep", kOnAdmin, Flow::rpc, Auth::key),
	row<NodeStatsReq, NodeStatsRep>(MDR_OP(MDR_OP_NODE_STATS), "node_stats_req",
					"node_stats_rep", kOnAdmin, Flow::rpc, Auth::key),
	row<MoveReq, MoveRep>(MDR_OP(MDR_OP_MOVE), "move_req", "move_rep",
			      kOnAdmin, Flow::rpc, Auth::key),
	row<DrainReq, DrainRep>(MDR_OP(MDR_OP_DRAIN), "drain_req", "drain_rep",
				kOnAdmin, Flow::rpc, Auth::key),
	row<HostAddReq, HostAddRep>(MDR_OP(MDR_OP_HOST_ADD), "host_add_req",
				    "host_add_rep", kOnAdmin, Flow::rpc, Auth::key),
	row<HostRemoveReq, HostRemoveRep>(MDR_OP(MDR_OP_HOST_REMOVE), "host_remove_req",
					  "host_remove_rep", kOnAdmin, Flow::rpc, Auth::key),
	row<HostListReq, HostListRep>(MDR_OP(MDR_OP_HOST_LIST), "host_list_req",
				      "host_list_rep", kOnAdmin, Flow::rpc, Auth::key),
	row<PingReq, PingRep>(MDR_OP(MDR_OP_PING), "ping_req", "ping_rep",
			      kOnHost | kOnAdmin, Flow::both, Auth::none),
};
#undef MDR_OP

// Every type of Body but ErrorRep is the request or the reply of exactly
// one row, and no opcode has two.
consteval bool table_covers_body()
{
	for (size_t i = 0; i < std::variant_size_v<Body>; i++) {
		int rows = 0;

		for (const OpInfo &op : kOps)
			rows += (op.req.alternative == i) + (op.rep.alternative == i);
		if (rows != (i == kAlternative<ErrorRep> ? 0 : 1))
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
