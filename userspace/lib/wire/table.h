// SPDX-License-Identifier: GPL-2.0
//
// table.h - the opcode table: for every opcode, the connections it is
// allowed on, which way it travels, whether it needs the admin key, and
// the layout of its request and of its OK reply. The parser's checks of
// route, role and size, the decoders, the encoders' names, mdnode's
// questions "does this request need the admin key?" (wire::needs_auth())
// and "does it need the host's proof?" (wire::needs_host_auth()) and the
// docs' message table all come from it. Internal to lib/wire/.
//
// Adding a message: its struct in <linux/mdroute_wire.h>, its host struct
// in wire.h (and in Body), its layout in layouts.h, and a row in table.cc.
#ifndef MDR_WIRE_TABLE_H
#define MDR_WIRE_TABLE_H

#include <cstdint>
#include <span>
#include <string>

#include "lib/wire/fields.h"

namespace mdr::wire {

// Connections an opcode is allowed on.
constexpr unsigned kOnHost = 1u << MDR_ROLE_HOST;
constexpr unsigned kOnAdmin = 1u << MDR_ROLE_ADMIN;

enum class Flow {
	rpc,	// requests to mdnode, replies to the client
	push,	// requests (pushes) to the client, replies (acks) to mdnode
	both,	// either way
};

using Decoder = Result<Body> (*)(What what, Bytes msg);

// One direction of an opcode: its request (or push), or its OK reply (or
// ack).
struct MsgInfo {
	const char *name;	// in error messages: "open_req"
	Shape shape;		// the lengths it may have, header included
	Decoder decode;		// of exactly a length shape allows
	std::string (*doc)();	// its struct and size, for the message table
	size_t alternative;	// the index of its type in Body
};

struct OpInfo {
	uint16_t opcode;
	const char *cname;	// "MDR_OP_OPEN"
	unsigned roles;		// kOnHost, kOnAdmin
	Flow flow;
	bool needs_key;		// requests only after MDR_OP_AUTH proved the key
	// From version 3 on: taken (requests and acks) only after
	// MDR_OP_HOST_AUTH proved the host's key
	bool needs_host_key;
	MsgInfo req;
	MsgInfo rep;
};

// "host", "admin", "both"; "unknown" for no role.
const char *roles_name(unsigned roles);

std::span<const OpInfo> opcode_table();
// nullptr for an opcode this build does not know.
const OpInfo *find_op(uint16_t opcode);

// The message table of Documentation/wire-protocol.md, in Markdown, with
// the lines that mark it there.
extern const char kTableBegin[];
extern const char kTableEnd[];
std::string message_table();

} // namespace mdr::wire

#endif // MDR_WIRE_TABLE_H
