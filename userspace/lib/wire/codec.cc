// SPDX-License-Identifier: GPL-2.0
//
// codec.cc - messages: parse() checks framing, header, route and size from
// the opcode table, then hands the body to the decoder its row names;
// encode() writes any message from its layout and runs the receiver's
// checks on what it wrote. Pure: no verbs, no I/O, no locks.
#include <cassert>
#include <variant>

#include "lib/wire/message.h"
#include "lib/wire/table.h"

namespace mdr::wire {

namespace {

const OpInfo &op_of(uint16_t opcode)
{
	const OpInfo *op = find_op(opcode);

	assert(op);	// only for opcodes of the message types
	return *op;
}

const MsgInfo &msg_info(const OpInfo &op, bool reply)
{
	return reply ? op.rep : op.req;
}

// ---- Header ---------------------------------------------------------------

Header header_of(const mdr_wire_hdr &h)
{
	Header hdr;

	hdr.opcode = load(h.opcode);
	hdr.flags = load(h.flags);
	hdr.status = load(h.status);
	hdr.length = load(h.length);
	hdr.req_id = load(h.req_id);
	return hdr;
}

mdr_wire_hdr make_hdr(uint16_t opcode, bool reply, uint16_t status,
		      size_t length, uint64_t req_id)
{
	auto h = zeroed<mdr_wire_hdr>();

	store(h.magic, MDR_WIRE_MSG_MAGIC);
	store(h.opcode, opcode);
	store(h.flags, reply ? MDR_WIRE_F_REPLY : 0);
	store(h.status, status);
	store(h.length, static_cast<uint32_t>(length));
	store(h.req_id, req_id);
	return h;
}

struct Framed {
	Header hdr;
	const OpInfo *op;
	const MsgInfo *msg;	// the direction the header says
};

// Framing and the header's own fields, in the order of parse().
Result<Framed> check_header(Bytes received)
{
	if (received.size() < kHdrSize)
		return fail(EPROTO, "hdr", received.size(),
			    " bytes received, shorter than a header (", kHdrSize,
			    ")");

	const auto raw = read<mdr_wire_hdr>(received);
	const Header h = header_of(raw);

	if (load(raw.magic) != MDR_WIRE_MSG_MAGIC)
		return fail(EPROTO, "hdr", "bad magic ", Hex{load(raw.magic)});
	if (h.length > received.size())
		return fail(EPROTO, "hdr", "length ", h.length, " exceeds the ",
			    received.size(), " bytes received");
	if (h.length < kHdrSize)
		return fail(EPROTO, "hdr", "length ", h.length,
			    " shorter than a header");
	if (h.length > MDR_WIRE_MSG_MAX)
		return fail(EPROTO, "hdr", "length ", h.length,
			    " exceeds MDR_WIRE_MSG_MAX");

	const OpInfo *op = find_op(h.opcode);
	if (!op)
		return fail(EPROTO, "hdr", "unknown opcode ", Hex{h.opcode});

	const MsgInfo &m = msg_info(*op, h.reply());
	if (h.flags & ~MDR_WIRE_F_REPLY)
		return fail(EPROTO, m.name, "unknown header flags ", Hex{h.flags});
	if (h.status >= MDR_ST_MAX)
		return fail(EPROTO, m.name, "status ", h.status, " out of range");
	if (!h.reply() && h.status != MDR_ST_OK)
		return fail(EPROTO, m.name, "status ", h.status, " in a ",
			    op->flow == Flow::push ? "push" : "request");
	if (load(raw.reserved))
		return fail(EPROTO, m.name, "header reserved not zero");
	return Framed{h, op, &m};
}

// Whether this receiver gets this message, on this kind of connection.
Fault check_route(const Framed &f, Side receiver, mdr_wire_role role)
{
	bool to_node = false;

	switch (f.op->flow) {
	case Flow::rpc:
		to_node = !f.hdr.reply();
		break;
	case Flow::push:
		to_node = f.hdr.reply();
		break;
	case Flow::both:
		to_node = receiver == Side::node;
		break;
	}
	if (to_node != (receiver == Side::node))
		return fail(EPROTO, f.msg->name, to_node ? "meant for mdnode"
							 : "meant for a client",
			    ", received by ",
			    receiver == Side::node ? "mdnode" : "a client");

	const unsigned bit = role == MDR_ROLE_HOST ? kOnHost
			   : role == MDR_ROLE_ADMIN ? kOnAdmin : 0;
	// The refusal of a request the role may not make (MDR_ST_PERM) comes
	// back with the request's opcode: an error reply passes.
	const bool refusal = receiver == Side::client && f.hdr.reply() &&
			     f.hdr.status != MDR_ST_OK;
	if (!(f.op->roles & bit) && !refusal) {
		// mdnode answers such a request with MDR_ST_PERM
		const bool request = receiver == Side::node && !f.hdr.reply();

		return fail(request ? EPERM : EPROTO, f.msg->name, "not allowed on ",
			    roles_name(bit), " connections");
	}
	return std::nullopt;
}

// An error reply's length: the header, and the leader's for NOT_LEADER.
constexpr size_t error_size(uint16_t status)
{
	return kHdrSize + (status == MDR_ST_NOT_LEADER ? sizeof(mdr_wire_leader) : 0);
}

Result<Body> decode_error(const Framed &f, Bytes msg)
{
	ErrorRep e{f.hdr.opcode, f.hdr.status, std::nullopt};

	if (f.hdr.status == MDR_ST_NOT_LEADER) {
		const std::string at = std::string(f.msg->name) + ": leader";
		const auto w = read<mdr_wire_leader>(msg, kHdrSize);

		e.leader.emplace();
		if (auto fault = walk_part<Get>(at, *e.leader, w))
			return std::move(*fault);
	}
	return Body{std::move(e)};
}

// Length against what the opcode and direction (and status) call for.
Fault check_size(const Framed &f)
{
	const size_t len = f.hdr.length;
	const char *name = f.msg->name;

	if (f.hdr.reply() && f.hdr.status != MDR_ST_OK) {
		if (len != error_size(f.hdr.status))
			return fail(EPROTO, name, "error reply of ", len,
				    " bytes, expected ", error_size(f.hdr.status));
		return std::nullopt;
	}

	const Shape &s = f.msg->shape;
	if (s.alt && len == s.alt)
		return std::nullopt;
	if (!s.elem) {
		if (len != s.size)
			return fail(EPROTO, name, "length ", len, ", expected ", s.size,
				    s.alt ? " or " + std::to_string(s.alt) : "");
		return std::nullopt;
	}
	if (len < s.size)
		return fail(EPROTO, name, "length ", len, ", expected at least ",
			    s.size);
	if ((len - s.size) % s.elem && (!s.long_elem || (len - s.size) % s.long_elem))
		return fail(EPROTO, name, "length ", len, " not ", s.size,
			    " + a multiple of ", s.elem,
			    s.long_elem ? " or " + std::to_string(s.long_elem) : "");
	return std::nullopt;
}

// Size, then the body's fields.
Result<Body> check_body(const Framed &f, Bytes msg)
{
	if (auto e = check_size(f))
		return *e;
	if (f.hdr.reply() && f.hdr.status != MDR_ST_OK)
		return decode_error(f, msg);
	return f.msg->decode(f.msg->name, msg);
}

// ---- Encoding -------------------------------------------------------------

Fault room(What what, std::span<std::byte> out, size_t len)
{
	if (len > MDR_WIRE_MSG_MAX)
		return fail(EMSGSIZE, what, len, " bytes exceed MDR_WIRE_MSG_MAX");
	if (len > out.size())
		return fail(EMSGSIZE, what, "needs ", len, " bytes, the buffer has ",
			    out.size());
	return std::nullopt;
}

// Runs the receiver's checks (all but the direction, which the type
// fixes) on what an encoder wrote.
Result<size_t> self_check(std::span<std::byte> out, size_t len)
{
	const Bytes msg(out.data(), len);
	const auto f = check_header(msg);

	if (!f.ok())
		return forward(f);
	const auto body = check_body(f.value(), msg);
	if (!body.ok())
		return forward(body);
	return len;
}

template <typename M>
Result<size_t> encode_msg(std::span<std::byte> out, uint64_t req_id, const M &m)
{
	const char *what = msg_info(op_of(M::opcode), M::reply).name;

	if constexpr (requires { Layout<M>::refuse(what, m); })
		if (auto e = Layout<M>::refuse(what, m))
			return *e;
	const size_t len = length_of(m);
	if (auto e = room(what, out, len))
		return *e;
	if (auto e = put_msg(what, out, len, m))
		return *e;
	write(out, 0, make_hdr(M::opcode, M::reply, MDR_ST_OK, len, req_id));
	return self_check(out, len);
}

Result<size_t> encode_error(std::span<std::byte> out, uint64_t req_id,
			    const ErrorRep &m)
{
	// The opcode is echoed even when this build does not know it.
	const OpInfo *op = find_op(m.opcode);
	const std::string w = op ? op->rep.name : "error_rep";

	if (m.status == MDR_ST_OK || m.status >= MDR_ST_MAX)
		return fail(EINVAL, w, "status ", m.status,
			    " is not an error reply's");
	if (m.leader.has_value() != (m.status == MDR_ST_NOT_LEADER))
		return fail(EINVAL, w, m.leader ? "a leader with status " : "no leader with status ",
			    m.status);
	const size_t len = error_size(m.status);
	if (auto e = room(w, out, len))
		return *e;
	write(out, 0, make_hdr(m.opcode, true, m.status, len, req_id));
	if (!m.leader)
		return len;
	auto lw = zeroed<mdr_wire_leader>();
	if (auto fault = walk_part<Put>(w + ": leader", *m.leader, lw))
		return std::move(*fault);
	write(out, kHdrSize, lw);
	// The receiver's checks of the leader; an unknown opcode has none of
	// the rest to run.
	auto back = read<mdr_wire_leader>(Bytes(out.data(), len), kHdrSize);
	Leader again;
	if (auto fault = walk_part<Get>(w + ": leader", again, back))
		return std::move(*fault);
	return len;
}

} // namespace

Result<Msg> parse(std::span<const std::byte> received, Side receiver,
		  mdr_wire_role conn_role)
{
	const auto f = check_header(received);

	if (!f.ok())
		return forward(f);
	if (auto e = check_route(f.value(), receiver, conn_role))
		return *e;

	const Bytes msg = received.first(f.value().hdr.length);
	auto body = check_body(f.value(), msg);
	if (!body.ok())
		return forward(body);
	return Msg{f.value().hdr, std::move(body).value()};
}

namespace {

// The forms of the replies whose length the version sets.
template <typename Rep>
Status served_form(const Rep &rep, bool v7, const char *name)
{
	if (rep.serving.has_value() == v7)
		return {};
	return fail(EPROTO, name, v7 ? "no struct mdr_wire_serving on version 7 or later"
				     : "struct mdr_wire_serving before version 7");
}

} // namespace

Status check_version_form(const Body &body, uint16_t version)
{
	const bool v7 = version >= kEpochVersion;

	if (const auto *r = std::get_if<OpenRep>(&body))
		return served_form(*r, v7, "open_rep");
	if (const auto *r = std::get_if<RenewRep>(&body))
		return served_form(*r, v7, "renew_rep");
	if (const auto *r = std::get_if<AllocRep>(&body))
		return served_form(*r, v7, "alloc_rep");
	if (const auto *r = std::get_if<GroupStatusRep>(&body);
	    r && !r->replicas.empty() && r->extended != v7)
		return fail(EPROTO, "group_status_rep",
			    v7 ? "replicas of 40 bytes on version 7 or later"
			       : "replicas of 64 bytes before version 7");
	return {};
}

Result<Msg> parse(std::span<const std::byte> received, Side receiver, mdr_wire_role conn_role,
		  uint16_t version)
{
	auto m = parse(received, receiver, conn_role);

	if (!m.ok())
		return m;
	if (Status st = check_version_form(m.value().body, version); !st.ok())
		return Error(st.error(), st.message());
	return m;
}

std::optional<Header> peek_header(std::span<const std::byte> received)
{
	if (received.size() < kHdrSize)
		return std::nullopt;

	const auto raw = read<mdr_wire_hdr>(received);
	if (load(raw.magic) != MDR_WIRE_MSG_MAGIC)
		return std::nullopt;
	return header_of(raw);
}

Result<size_t> encode(std::span<std::byte> out, uint64_t req_id, const Body &body)
{
	return std::visit([&](const auto &m) -> Result<size_t> {
		using T = std::decay_t<decltype(m)>;

		if constexpr (std::is_same_v<T, ErrorRep>)
			return encode_error(out, req_id, m);
		else
			return encode_msg(out, req_id, m);
	}, body);
}

size_t encoded_size(const Body &body)
{
	return std::visit([](const auto &m) -> size_t {
		using T = std::decay_t<decltype(m)>;

		if constexpr (std::is_same_v<T, ErrorRep>)
			return error_size(m.status);
		else
			return length_of(m);
	}, body);
}

} // namespace mdr::wire
