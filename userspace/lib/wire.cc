// SPDX-License-Identifier: GPL-2.0
//
// wire.cc - the metadata protocol's codec: entries, connection private
// data, messages, status. Pure: no verbs, no I/O, no locks.
#include "lib/wire.h"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <concepts>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <type_traits>
#include <utility>

#include "lib/crc32c.h"

namespace mdr::wire {

namespace {

using Bytes = std::span<const std::byte>;

constexpr size_t kHdrSize = sizeof(mdr_wire_hdr);
constexpr uint64_t kSizeAlign = 4096;	// volume sizes are multiples of it

using DevExt = mdr_wire_dev_extents;
static_assert(offsetof(mdr_wire_vol_rep, devs) == sizeof(mdr_wire_vol_rep));
static_assert(offsetof(mdr_wire_vol_list_rep, vols) == sizeof(mdr_wire_vol_list_rep));
static_assert(offsetof(mdr_wire_dev_list_rep, devs) == sizeof(mdr_wire_dev_list_rep));
static_assert(offsetof(mdr_wire_alloc_rep, entry) == 40, "alloc_rep.entry");
static_assert(offsetof(mdr_wire_move_rep, extents) == sizeof(mdr_wire_move_rep));
// NODE_STATS replies of this build: version 1's counters, then migration's,
// then the push counters, then the copy counters.
constexpr size_t kStatsMigLen = sizeof(mdr_wire_node_stats_rep) +
				sizeof(mdr_wire_node_stats_mig);
constexpr size_t kStatsPushLen = kStatsMigLen + sizeof(mdr_wire_node_stats_push);
constexpr size_t kStatsLen = kStatsPushLen + sizeof(mdr_wire_node_stats_copy);

// ---- Messages of errors ---------------------------------------------------

struct Hex {
	uint64_t v;
};

void append(std::string &s, std::string_view v) { s += v; }

template <std::integral T>
void append(std::string &s, T v)
{
	s += std::to_string(v);
}

void append(std::string &s, Hex h)
{
	char buf[24];

	std::snprintf(buf, sizeof(buf), "0x%llx",
		      static_cast<unsigned long long>(h.v));
	s += buf;
}

// Error(-err, "what: args...")
template <typename... Args>
Error fail(int err, std::string_view what, const Args &...args)
{
	std::string m(what);

	m += ": ";
	(append(m, args), ...);
	return Error(-err, std::move(m));
}

template <typename T>
Error forward(const Result<T> &r)
{
	return Error(r.error(), r.message());
}

// ---- Raw bytes ------------------------------------------------------------

// Received bytes have no alignment: copy structs out, never cast.
template <typename T>
T read(Bytes b, size_t off = 0)
{
	static_assert(std::is_trivially_copyable_v<T>);
	T t;

	std::memcpy(&t, b.data() + off, sizeof(T));
	return t;
}

template <typename T>
void write(std::span<std::byte> b, size_t off, const T &t)
{
	static_assert(std::is_trivially_copyable_v<T>);
	std::memcpy(b.data() + off, &t, sizeof(T));
}

template <typename T>
T zeroed()
{
	static_assert(std::is_trivially_copyable_v<T>);
	T t;

	std::memset(&t, 0, sizeof(t));
	return t;
}

bool all_zero(const void *p, size_t n)
{
	const auto *b = static_cast<const unsigned char *>(p);

	return std::all_of(b, b + n, [](unsigned char c) { return c == 0; });
}

template <typename T>
bool all_zero(const T &field)
{
	return all_zero(&field, sizeof(field));
}

// ---- Strings --------------------------------------------------------------

bool name_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

// Why a NUL-padded field is no volume name (nullptr: it is one).
const char *name_problem(const char (&f)[MDR_WIRE_NAME_LEN], size_t *len)
{
	const void *nul = std::memchr(f, 0, sizeof(f));

	if (!nul)
		return "name not NUL-terminated";
	*len = static_cast<size_t>(static_cast<const char *>(nul) - f);
	if (*len == 0)
		return "name empty";
	if (!std::all_of(f, f + *len, name_char))
		return "name has a character outside [A-Za-z0-9._-]";
	if (!all_zero(f + *len, sizeof(f) - *len))
		return "name not NUL-padded";
	return nullptr;
}

std::optional<Error> get_name(std::string_view what,
			      const char (&f)[MDR_WIRE_NAME_LEN], std::string &out)
{
	size_t len = 0;

	if (const char *why = name_problem(f, &len))
		return fail(EINVAL, what, why);
	out.assign(f, len);
	return std::nullopt;
}

// Copies a string into a NUL-padded field; the rest is the receiver's rules
// (the encoders run them on what they wrote).
template <size_t N>
std::optional<Error> put_string(std::string_view what, const char *field_name,
				char (&f)[N], std::string_view s)
{
	if (s.size() >= N)
		return fail(EINVAL, what, field_name, " longer than ", N - 1,
			    " characters");
	std::memset(f, 0, N);
	std::memcpy(f, s.data(), s.size());
	return std::nullopt;
}

std::optional<Error> get_serial(std::string_view what,
				const char (&f)[MDR_WIRE_SERIAL_LEN],
				std::string &out)
{
	const void *nul = std::memchr(f, 0, sizeof(f));

	if (!nul)
		return fail(EINVAL, what, "serial not NUL-terminated");
	const auto len = static_cast<size_t>(static_cast<const char *>(nul) - f);
	if (!std::all_of(f, f + len, [](char c) { return c >= 0x20 && c < 0x7f; }))
		return fail(EINVAL, what, "serial has a non-printable character");
	if (!all_zero(f + len, sizeof(f) - len))
		return fail(EINVAL, what, "serial not NUL-padded");
	out.assign(f, len);
	return std::nullopt;
}

// ---- Numbers --------------------------------------------------------------

bool shift_in_range(uint32_t shift)
{
	return shift >= MDR_WIRE_EXTENT_SHIFT_MIN &&
	       shift <= MDR_WIRE_EXTENT_SHIFT_MAX;
}

// Extents of size bytes, the last one partial; shift within range.
uint64_t extents_of(uint64_t size, uint32_t shift)
{
	return (size >> shift) + ((size & ((uint64_t{1} << shift) - 1)) != 0);
}

std::optional<Error> check_volume_size(std::string_view what, uint64_t size)
{
	if (size == 0)
		return fail(EINVAL, what, "size zero");
	if (size % kSizeAlign)
		return fail(EINVAL, what, "size ", size,
			    " not a multiple of 4096");
	return std::nullopt;
}

// ---- Opcodes --------------------------------------------------------------

constexpr unsigned kOnHost = 1u << MDR_ROLE_HOST;
constexpr unsigned kOnAdmin = 1u << MDR_ROLE_ADMIN;

enum class Flow {
	rpc,	// requests to mdnode, replies to the client
	push,	// requests (pushes) to the client, replies (acks) to mdnode
	both,	// either way
};

struct Shape {
	size_t size;	// fixed part, header included
	size_t elem;	// 0: exactly size; else size + n * elem
};

struct OpInfo {
	uint16_t opcode;
	const char *cname;	// "MDR_OP_OPEN"
	const char *req;	// names in messages: "open_req"
	const char *rep;
	unsigned roles;		// kOnHost, kOnAdmin
	Flow flow;
	Shape req_shape;
	Shape rep_shape;	// of a reply with MDR_ST_OK
};

#define MDR_OP(op) op, #op
constexpr OpInfo kOps[] = {
	{MDR_OP(MDR_OP_OPEN), "open_req", "open_rep", kOnHost, Flow::rpc,
	 {sizeof(mdr_wire_open_req), 0}, {sizeof(mdr_wire_open_rep), 0}},
	{MDR_OP(MDR_OP_CLOSE), "close_req", "close_rep", kOnHost, Flow::rpc,
	 {sizeof(mdr_wire_vol_req), 0}, {kHdrSize, 0}},
	{MDR_OP(MDR_OP_RENEW), "renew_req", "renew_rep", kOnHost, Flow::rpc,
	 {sizeof(mdr_wire_vol_req), 0}, {sizeof(mdr_wire_renew_rep), 0}},
	{MDR_OP(MDR_OP_ALLOC), "alloc_req", "alloc_rep", kOnHost, Flow::rpc,
	 {sizeof(mdr_wire_alloc_req), 0}, {sizeof(mdr_wire_alloc_rep), 0}},
	{MDR_OP(MDR_OP_INVALIDATE), "inval", "inval_ack", kOnHost, Flow::push,
	 {sizeof(mdr_wire_inval), 0}, {sizeof(mdr_wire_inval), 0}},
	{MDR_OP(MDR_OP_AUTH), "auth_req", "auth_rep", kOnAdmin, Flow::rpc,
	 {sizeof(mdr_wire_auth_req), 0}, {kHdrSize, 0}},
	{MDR_OP(MDR_OP_VOL_CREATE), "vol_create_req", "vol_create_rep",
	 kOnAdmin, Flow::rpc, {sizeof(mdr_wire_vol_create_req), 0},
	 {sizeof(mdr_wire_vol_rep), sizeof(DevExt)}},
	{MDR_OP(MDR_OP_VOL_DELETE), "vol_delete_req", "vol_delete_rep",
	 kOnAdmin, Flow::rpc, {sizeof(mdr_wire_vol_name_req), 0}, {kHdrSize, 0}},
	{MDR_OP(MDR_OP_VOL_LIST), "vol_list_req", "vol_list_rep", kOnAdmin,
	 Flow::rpc, {sizeof(mdr_wire_list_req), 0},
	 {sizeof(mdr_wire_vol_list_rep), sizeof(mdr_wire_volume)}},
	{MDR_OP(MDR_OP_VOL_INFO), "vol_info_req", "vol_info_rep", kOnAdmin,
	 Flow::rpc, {sizeof(mdr_wire_vol_name_req), 0},
	 {sizeof(mdr_wire_vol_rep), sizeof(DevExt)}},
	{MDR_OP(MDR_OP_VOL_RESIZE), "vol_resize_req", "vol_resize_rep",
	 kOnAdmin, Flow::rpc, {sizeof(mdr_wire_vol_name_req), 0},
	 {sizeof(mdr_wire_vol_rep), sizeof(DevExt)}},
	{MDR_OP(MDR_OP_DEV_LIST), "dev_list_req", "dev_list_rep", kOnAdmin,
	 Flow::rpc, {sizeof(mdr_wire_list_req), 0},
	 {sizeof(mdr_wire_dev_list_rep), sizeof(mdr_wire_device)}},
	// Later versions append counters: a longer reply is read in part.
	{MDR_OP(MDR_OP_NODE_STATS), "node_stats_req", "node_stats_rep",
	 kOnAdmin, Flow::rpc, {kHdrSize, 0},
	 {sizeof(mdr_wire_node_stats_rep), sizeof(__le64)}},
	{MDR_OP(MDR_OP_MOVE), "move_req", "move_rep", kOnAdmin, Flow::rpc,
	 {sizeof(mdr_wire_move_req), 0},
	 {sizeof(mdr_wire_move_rep), sizeof(mdr_wire_move_extent)}},
	{MDR_OP(MDR_OP_DRAIN), "drain_req", "drain_rep", kOnAdmin, Flow::rpc,
	 {sizeof(mdr_wire_drain_req), 0}, {sizeof(mdr_wire_drain_rep), 0}},
	{MDR_OP(MDR_OP_PING), "ping_req", "ping_rep", kOnHost | kOnAdmin,
	 Flow::both, {kHdrSize, 0}, {kHdrSize, 0}},
};
#undef MDR_OP

const OpInfo *find_op(uint16_t opcode)
{
	for (const OpInfo &op : kOps)
		if (op.opcode == opcode)
			return &op;
	return nullptr;
}

const OpInfo &op_of(uint16_t opcode)
{
	const OpInfo *op = find_op(opcode);

	assert(op);	// only for opcodes of the message types
	return *op;
}

const char *msg_name(const OpInfo &op, bool reply)
{
	return reply ? op.rep : op.req;
}

const char *role_name(mdr_wire_role role)
{
	switch (role) {
	case MDR_ROLE_HOST:
		return "host";
	case MDR_ROLE_ADMIN:
		return "admin";
	}
	return "unknown";
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
	const char *name;	// of the message: "open_req"
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

	const char *name = msg_name(*op, h.reply());
	if (h.flags & ~MDR_WIRE_F_REPLY)
		return fail(EPROTO, name, "unknown header flags ", Hex{h.flags});
	if (h.status >= MDR_ST_MAX)
		return fail(EPROTO, name, "status ", h.status, " out of range");
	if (!h.reply() && h.status != MDR_ST_OK)
		return fail(EPROTO, name, "status ", h.status, " in a ",
			    op->flow == Flow::push ? "push" : "request");
	if (load(raw.reserved))
		return fail(EPROTO, name, "header reserved not zero");
	return Framed{h, op, name};
}

// Whether this receiver gets this message, on this kind of connection.
std::optional<Error> check_route(const Framed &f, Side receiver,
				 mdr_wire_role role)
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
		return fail(EPROTO, f.name, to_node ? "meant for mdnode"
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

		return fail(request ? EPERM : EPROTO, f.name, "not allowed on ",
			    role_name(role), " connections");
	}
	return std::nullopt;
}

// Length against what the opcode and direction (and status) call for.
std::optional<Error> check_size(const Framed &f)
{
	const size_t len = f.hdr.length;

	if (f.hdr.reply() && f.hdr.status != MDR_ST_OK) {
		if (len != kHdrSize)
			return fail(EPROTO, f.name, "error reply of ", len,
				    " bytes, expected ", kHdrSize);
		return std::nullopt;
	}

	// An ack of a push is version 1's (the push echoed) or version 2's
	// (struct mdr_wire_inval_ack); whether it is the connection's is for
	// the receiver to check, which knows the version.
	if (f.op->opcode == MDR_OP_INVALIDATE && f.hdr.reply() &&
	    len == sizeof(mdr_wire_inval_ack))
		return std::nullopt;
	const Shape &s = f.hdr.reply() ? f.op->rep_shape : f.op->req_shape;
	if (!s.elem) {
		if (len != s.size)
			return fail(EPROTO, f.name, "length ", len,
				    ", expected ", s.size);
		return std::nullopt;
	}
	if (len < s.size)
		return fail(EPROTO, f.name, "length ", len,
			    ", expected at least ", s.size);
	if ((len - s.size) % s.elem)
		return fail(EPROTO, f.name, "length ", len, " not ", s.size,
			    " + a multiple of ", s.elem);
	return std::nullopt;
}

// ---- Bodies ---------------------------------------------------------------
//
// Each decoder gets the message, exactly hdr.length bytes, of a size
// check_size() accepted.

using Decoder = Result<Body> (*)(std::string_view what, Bytes m);

template <typename T>
Result<Body> dec_header_only(std::string_view, Bytes)
{
	return Body{T{}};
}

Result<Body> dec_open_req(std::string_view w, Bytes m)
{
	const auto r = read<mdr_wire_open_req>(m);
	OpenReq o;

	o.volume_id = load(r.volume_id);
	o.flags = load(r.flags);
	if (o.flags & ~uint32_t{MDR_OPEN_F_BY_NAME})
		return fail(EINVAL, w, "unknown flags ", Hex{o.flags});
	if (load(r.reserved))
		return fail(EINVAL, w, "reserved not zero");
	if (o.flags & MDR_OPEN_F_BY_NAME) {
		if (o.volume_id)
			return fail(EINVAL, w, "volume_id set with MDR_OPEN_F_BY_NAME");
		if (auto e = get_name(w, r.name, o.name))
			return *e;
	} else {
		if (!all_zero(r.name))
			return fail(EINVAL, w, "name set without MDR_OPEN_F_BY_NAME");
		if (!o.volume_id)
			return fail(EINVAL, w, "volume_id zero");
	}
	return Body{std::move(o)};
}

Result<Body> dec_open_rep(std::string_view w, Bytes m)
{
	const auto r = read<mdr_wire_open_rep>(m);
	OpenRep o;

	o.volume_id = load(r.volume_id);
	o.size = load(r.size);
	o.table_addr = load(r.table_addr);
	o.table_len = load(r.table_len);
	o.table_rkey = load(r.table_rkey);
	o.extent_shift = load(r.extent_shift);
	o.lease_ms = load(r.lease_ms);
	o.generation = load(r.generation);
	if (load(r.flags))
		return fail(EINVAL, w, "flags not zero");
	if (auto e = get_name(w, r.name, o.name))
		return *e;
	if (!o.volume_id)
		return fail(EINVAL, w, "volume_id zero");
	if (auto e = check_volume_size(w, o.size))
		return *e;
	if (!shift_in_range(o.extent_shift))
		return fail(EINVAL, w, "extent_shift ", o.extent_shift,
			    " outside [", MDR_WIRE_EXTENT_SHIFT_MIN, ", ",
			    MDR_WIRE_EXTENT_SHIFT_MAX, "]");
	// at most 2^48 entries (shift >= 16): the product cannot overflow
	const uint64_t want = extents_of(o.size, o.extent_shift) *
			      sizeof(mdr_wire_entry);
	if (o.table_len != want)
		return fail(EINVAL, w, "table_len ", o.table_len,
			    " does not cover the size (", want, " expected)");
	if (o.table_addr > UINT64_MAX - o.table_len)
		return fail(EINVAL, w, "table wraps the address space");
	if (!o.lease_ms)
		return fail(EINVAL, w, "lease_ms zero");
	return Body{std::move(o)};
}

template <typename T, bool kNeedsVolume>
Result<Body> dec_vol_req(std::string_view w, Bytes m)
{
	const auto r = read<mdr_wire_vol_req>(m);
	T o;

	o.volume_id = load(r.volume_id);
	if (kNeedsVolume && !o.volume_id)
		return fail(EINVAL, w, "volume_id zero");
	return Body{o};
}

Result<Body> dec_renew_rep(std::string_view w, Bytes m)
{
	const auto r = read<mdr_wire_renew_rep>(m);
	RenewRep o;

	o.lease_ms = load(r.lease_ms);
	if (load(r.reserved))
		return fail(EINVAL, w, "reserved not zero");
	if (!o.lease_ms)
		return fail(EINVAL, w, "lease_ms zero");
	return Body{o};
}

Result<Body> dec_alloc_req(std::string_view w, Bytes m)
{
	const auto r = read<mdr_wire_alloc_req>(m);
	AllocReq o;

	o.volume_id = load(r.volume_id);
	o.index = load(r.index);
	if (!o.volume_id)
		return fail(EINVAL, w, "volume_id zero");
	return Body{o};
}

Result<Body> dec_alloc_rep(std::string_view w, Bytes m)
{
	const auto r = read<mdr_wire_alloc_rep>(m);
	AllocRep o;

	o.volume_id = load(r.volume_id);
	o.index = load(r.index);
	if (!o.volume_id)
		return fail(EINVAL, w, "volume_id zero");
	const EntryCheck c = verify_entry(r.entry, o.volume_id, o.index);
	if (c != EntryCheck::ok)
		return fail(EINVAL, w, "entry: ", entry_check_name(c));
	o.entry = decode_entry(r.entry);
	if (o.entry.state != MDR_EXT_MAPPED)
		return fail(EINVAL, w, "entry not mapped");
	return Body{o};
}

template <typename T>
Result<Body> dec_inval(std::string_view w, Bytes m)
{
	const auto r = read<mdr_wire_inval>(m);
	T o;

	o.volume_id = load(r.volume_id);
	o.first = load(r.first);
	o.count = load(r.count);
	o.generation = load(r.generation);
	o.reason = load(r.reason);
	if (load(r.reserved))
		return fail(EINVAL, w, "reserved not zero");
	if (!o.volume_id)
		return fail(EINVAL, w, "volume_id zero");
	if (!o.count)
		return fail(EINVAL, w, "count zero");
	if (o.count > UINT64_MAX - o.first)
		return fail(EINVAL, w, "first ", o.first, " + count ", o.count,
			    " overflows");
	if (!o.generation)
		return fail(EINVAL, w, "generation zero");
	if (o.reason < MDR_INVAL_ALLOC || o.reason > MDR_INVAL_TRACK)
		return fail(EINVAL, w, "unknown reason ", o.reason);
	if (o.reason == MDR_INVAL_TRACK && o.count != 1)
		return fail(EINVAL, w, "count ", o.count, " with MDR_INVAL_TRACK");
	if constexpr (std::is_same_v<T, InvalidateAck>) {
		if (m.size() == sizeof(mdr_wire_inval_ack)) {
			const auto a = read<mdr_wire_inval_ack>(m);

			o.extended = true;
			o.flags = load(a.flags);
			o.dirty = load(a.dirty);
			if (o.flags & ~MDR_INVAL_ACK_F_TRACKED)
				return fail(EINVAL, w, "unknown flags ", Hex{o.flags});
			if (load(a.reserved))
				return fail(EINVAL, w, "reserved not zero");
			if (o.dirty && !(o.flags & MDR_INVAL_ACK_F_TRACKED))
				return fail(EINVAL, w, "dirty without MDR_INVAL_ACK_F_TRACKED");
			if (o.dirty && o.reason != MDR_INVAL_MOVE)
				return fail(EINVAL, w, "dirty in the ack of reason ", o.reason);
		}
	}
	return Body{o};
}

Result<Body> dec_auth_req(std::string_view, Bytes m)
{
	const auto r = read<mdr_wire_auth_req>(m);
	AuthReq o;

	std::memcpy(o.mac.data(), r.mac, sizeof(r.mac));
	return Body{o};
}

Result<Body> dec_vol_create_req(std::string_view w, Bytes m)
{
	const auto r = read<mdr_wire_vol_create_req>(m);
	VolCreateReq o;

	o.size = load(r.size);
	o.extent_shift = load(r.extent_shift);
	o.tenant = load(r.tenant);
	if (auto e = get_name(w, r.name, o.name))
		return *e;
	if (auto e = check_volume_size(w, o.size))
		return *e;
	if (o.extent_shift && !shift_in_range(o.extent_shift))
		return fail(EINVAL, w, "extent_shift ", o.extent_shift,
			    " neither 0 nor within [", MDR_WIRE_EXTENT_SHIFT_MIN,
			    ", ", MDR_WIRE_EXTENT_SHIFT_MAX, "]");
	return Body{std::move(o)};
}

// VOL_DELETE and VOL_INFO: a name, size zero.
template <typename T>
Result<Body> dec_vol_name_req(std::string_view w, Bytes m)
{
	const auto r = read<mdr_wire_vol_name_req>(m);
	T o;

	if (load(r.size))
		return fail(EINVAL, w, "size not zero");
	if (auto e = get_name(w, r.name, o.name))
		return *e;
	return Body{std::move(o)};
}

Result<Body> dec_vol_resize_req(std::string_view w, Bytes m)
{
	const auto r = read<mdr_wire_vol_name_req>(m);
	VolResizeReq o;

	o.size = load(r.size);
	if (auto e = get_name(w, r.name, o.name))
		return *e;
	if (auto e = check_volume_size(w, o.size))
		return *e;
	return Body{std::move(o)};
}

template <typename T>
Result<Body> dec_list_req(std::string_view, Bytes m)
{
	const auto r = read<mdr_wire_list_req>(m);
	T o;

	o.cursor = load(r.cursor);
	return Body{o};
}

std::optional<Error> get_volume(std::string_view w, const mdr_wire_volume &v,
				Volume &o)
{
	o.volume_id = load(v.volume_id);
	o.size = load(v.size);
	o.allocated = load(v.allocated);
	o.extent_shift = load(v.extent_shift);
	o.tenant = load(v.tenant);
	o.open_count = load(v.open_count);
	if (load(v.reserved))
		return fail(EINVAL, w, "reserved not zero");
	if (auto e = get_name(w, v.name, o.name))
		return e;
	if (!o.volume_id)
		return fail(EINVAL, w, "volume_id zero");
	if (auto e = check_volume_size(w, o.size))
		return e;
	if (!shift_in_range(o.extent_shift))
		return fail(EINVAL, w, "extent_shift ", o.extent_shift,
			    " outside [", MDR_WIRE_EXTENT_SHIFT_MIN, ", ",
			    MDR_WIRE_EXTENT_SHIFT_MAX, "]");
	if (o.allocated > extents_of(o.size, o.extent_shift))
		return fail(EINVAL, w, "allocated ", o.allocated,
			    " exceeds the volume's extents");
	return std::nullopt;
}

std::optional<Error> put_volume(std::string_view w, mdr_wire_volume &v,
				const Volume &o)
{
	store(v.volume_id, o.volume_id);
	store(v.size, o.size);
	store(v.allocated, o.allocated);
	store(v.extent_shift, o.extent_shift);
	store(v.tenant, o.tenant);
	store(v.open_count, o.open_count);
	return put_string(w, "name", v.name, o.name);
}

std::optional<Error> get_device(std::string_view w, const mdr_wire_device &d,
				Device &o)
{
	o.dev_id = load(d.dev_id);
	o.size = load(d.size);
	o.used = load(d.used);
	if (load(d.reserved))
		return fail(EINVAL, w, "reserved not zero");
	if (auto e = get_serial(w, d.serial, o.serial))
		return e;
	if (!o.dev_id)
		return fail(EINVAL, w, "dev_id zero");
	if (o.used > o.size)
		return fail(EINVAL, w, "used ", o.used, " exceeds size ", o.size);
	return std::nullopt;
}

std::optional<Error> put_device(std::string_view w, mdr_wire_device &d,
				const Device &o)
{
	store(d.dev_id, o.dev_id);
	store(d.size, o.size);
	store(d.used, o.used);
	return put_string(w, "serial", d.serial, o.serial);
}

// The paged lists, replies to VOL_LIST and DEV_LIST: a cursor, a count and
// that many elements in ascending id order. What differs between them:
struct VolList {
	using Msg = VolListRep;
	using Wire = mdr_wire_vol_list_rep;
	using Elem = mdr_wire_volume;
	static constexpr const char *array = "vols", *noun = " volumes)";
	static constexpr const char *id_name = "volume_id ";
	static auto &items(auto &m) { return m.vols; }
	static uint64_t id(const Volume &v) { return v.volume_id; }
	static constexpr auto get = get_volume;
	static constexpr auto put = put_volume;
};

struct DevList {
	using Msg = DevListRep;
	using Wire = mdr_wire_dev_list_rep;
	using Elem = mdr_wire_device;
	static constexpr const char *array = "devs", *noun = " devices)";
	static constexpr const char *id_name = "dev_id ";
	static auto &items(auto &m) { return m.devs; }
	static uint64_t id(const Device &d) { return d.dev_id; }
	static constexpr auto get = get_device;
	static constexpr auto put = put_device;
};

std::string element(std::string_view w, const char *array, size_t i)
{
	std::string s(w);

	s += ": ";
	s += array;
	s += '[';
	s += std::to_string(i);
	s += ']';
	return s;
}

template <typename T>
Result<Body> dec_vol_rep(std::string_view w, Bytes m)
{
	const auto r = read<mdr_wire_vol_rep>(m);
	const size_t n = (m.size() - sizeof(r)) / sizeof(DevExt);
	T o;

	if (load(r.nr_devs) != n)
		return fail(EPROTO, w, "nr_devs ", load(r.nr_devs),
			    " disagrees with the length (", n, " entries)");
	if (load(r.reserved))
		return fail(EINVAL, w, "reserved not zero");
	if (auto e = get_volume(std::string(w) + ": vol", r.vol, o.vol))
		return *e;
	o.devs.reserve(n);
	for (size_t i = 0; i < n; i++) {
		const auto d = read<DevExt>(m, sizeof(r) + i * sizeof(DevExt));

		if (load(d.reserved))
			return fail(EINVAL, element(w, "devs", i), "reserved not zero");
		if (!load(d.dev_id))
			return fail(EINVAL, element(w, "devs", i), "dev_id zero");
		o.devs.push_back({load(d.dev_id), load(d.extents)});
	}
	return Body{std::move(o)};
}

template <typename L>
Result<Body> dec_list_rep(std::string_view w, Bytes m)
{
	using Elem = typename L::Elem;
	const auto r = read<typename L::Wire>(m);
	const size_t n = (m.size() - sizeof(r)) / sizeof(Elem);
	typename L::Msg o;
	auto &items = L::items(o);

	o.next = load(r.next);
	if (load(r.count) != n)
		return fail(EPROTO, w, "count ", load(r.count),
			    " disagrees with the length (", n, L::noun);
	if (load(r.reserved))
		return fail(EINVAL, w, "reserved not zero");
	items.resize(n);
	for (size_t i = 0; i < n; i++) {
		const auto el = read<Elem>(m, sizeof(r) + i * sizeof(Elem));
		const std::string at = element(w, L::array, i);

		if (auto e = L::get(at, el, items[i]))
			return *e;
		if (i && L::id(items[i]) <= L::id(items[i - 1]))
			return fail(EINVAL, at, L::id_name, L::id(items[i]),
				    " not in ascending order");
	}
	return Body{std::move(o)};
}

Result<Body> dec_node_stats_rep(std::string_view, Bytes m)
{
	const auto r = read<mdr_wire_node_stats_rep>(m);
	NodeStatsRep o;

	// A node without migration sends 120 bytes, one without the push
	// counters 168, one without the copy counters 176: what it lacks
	// stays zero.
	if (m.size() >= kStatsMigLen) {
		const auto g = read<mdr_wire_node_stats_mig>(m, sizeof(r));

		o.moves_active = load(g.moves_active);
		o.moves_done = load(g.moves_done);
		o.moves_failed = load(g.moves_failed);
		o.move_bytes = load(g.move_bytes);
		o.stall_max_us = load(g.stall_max_us);
		o.stall_total_us = load(g.stall_total_us);
	}
	if (m.size() >= kStatsPushLen)
		o.push_timeouts = load(read<mdr_wire_node_stats_push>(m, kStatsMigLen).push_timeouts);
	if (m.size() >= kStatsLen) {
		const auto c = read<mdr_wire_node_stats_copy>(m, kStatsPushLen);

		o.precopy_bytes = load(c.precopy_bytes);
		o.freeze_bytes = load(c.freeze_bytes);
	}

	o.boot_id = load(r.boot_id);
	o.uptime_ms = load(r.uptime_ms);
	o.connections = load(r.connections);
	o.volumes = load(r.volumes);
	o.requests = load(r.requests);
	o.errors = load(r.errors);
	o.bad_messages = load(r.bad_messages);
	o.journal_records = load(r.journal_records);
	o.journal_bytes = load(r.journal_bytes);
	o.journal_syncs = load(r.journal_syncs);
	o.invalidations = load(r.invalidations);
	o.lease_expiries = load(r.lease_expiries);
	return Body{o};
}

Result<Body> dec_move_req(std::string_view w, Bytes m)
{
	const auto r = read<mdr_wire_move_req>(m);
	MoveReq o;

	o.volume_id = load(r.volume_id);
	o.first = load(r.first);
	o.count = load(r.count);
	o.to_dev = load(r.to_dev);
	o.flags = load(r.flags);
	if (o.flags & ~uint32_t{MDR_MOVE_F_BY_NAME})
		return fail(EINVAL, w, "unknown flags ", Hex{o.flags});
	if (load(r.reserved))
		return fail(EINVAL, w, "reserved not zero");
	if (o.flags & MDR_MOVE_F_BY_NAME) {
		if (o.volume_id)
			return fail(EINVAL, w, "volume_id set with MDR_MOVE_F_BY_NAME");
		if (auto e = get_name(w, r.name, o.name))
			return *e;
	} else {
		if (!all_zero(r.name))
			return fail(EINVAL, w, "name set without MDR_MOVE_F_BY_NAME");
		if (!o.volume_id)
			return fail(EINVAL, w, "volume_id zero");
	}
	if (!o.count || o.count > MDR_WIRE_MOVE_MAX)
		return fail(EINVAL, w, "count ", o.count, " outside [1, ",
			    MDR_WIRE_MOVE_MAX, "]");
	if (o.first > UINT64_MAX - o.count)
		return fail(EINVAL, w, "first ", o.first, " + count ", o.count,
			    " overflows");
	if (!o.to_dev)
		return fail(EINVAL, w, "to_dev zero");
	return Body{std::move(o)};
}

std::optional<Error> check_stalls(std::string_view w, uint64_t max, uint64_t total)
{
	if (total < max)
		return fail(EINVAL, w, "stall_total_us ", total, " below stall_max_us ",
			    max);
	return std::nullopt;
}

Result<Body> dec_move_rep(std::string_view w, Bytes m)
{
	using Elem = mdr_wire_move_extent;
	const auto r = read<mdr_wire_move_rep>(m);
	const size_t n = (m.size() - sizeof(r)) / sizeof(Elem);
	MoveRep o;

	o.volume_id = load(r.volume_id);
	o.bytes = load(r.bytes);
	o.stall_max_us = load(r.stall_max_us);
	o.stall_total_us = load(r.stall_total_us);
	if (load(r.count) != n)
		return fail(EPROTO, w, "count ", load(r.count),
			    " disagrees with the length (", n, " extents)");
	if (load(r.reserved))
		return fail(EINVAL, w, "reserved not zero");
	if (!o.volume_id)
		return fail(EINVAL, w, "volume_id zero");
	if (!n || n > MDR_WIRE_MOVE_MAX)
		return fail(EINVAL, w, "count ", n, " outside [1, ",
			    MDR_WIRE_MOVE_MAX, "]");
	if (auto e = check_stalls(w, o.stall_max_us, o.stall_total_us))
		return *e;
	o.extents.resize(n);
	for (size_t i = 0; i < n; i++) {
		const auto el = read<Elem>(m, sizeof(r) + i * sizeof(Elem));
		const std::string at = element(w, "extents", i);
		MovedExtent &x = o.extents[i];

		x.index = load(el.index);
		x.old_pstart = load(el.old_pstart);
		x.new_pstart = load(el.new_pstart);
		x.old_dev = load(el.old_dev);
		x.new_dev = load(el.new_dev);
		x.generation = load(el.generation);
		x.stall_us = load(el.stall_us);
		if (load(el.reserved))
			return fail(EINVAL, at, "reserved not zero");
		if (!x.old_dev || !x.new_dev)
			return fail(EINVAL, at, "dev_id zero");
		if (x.old_dev == x.new_dev)
			return fail(EINVAL, at, "moved to its own device ", x.old_dev);
		// Allocated (2), frozen (3), published (4) at the least.
		if (x.generation < 4)
			return fail(EINVAL, at, "generation ", x.generation,
				    " too low for a moved extent");
		if (x.stall_us > o.stall_max_us)
			return fail(EINVAL, at, "stall_us ", x.stall_us,
				    " above stall_max_us");
		if (i && x.index <= o.extents[i - 1].index)
			return fail(EINVAL, at, "index ", x.index,
				    " not in ascending order");
	}
	return Body{std::move(o)};
}

Result<Body> dec_drain_req(std::string_view w, Bytes m)
{
	const auto r = read<mdr_wire_drain_req>(m);
	DrainReq o;

	o.dev_id = load(r.dev_id);
	o.to_dev = load(r.to_dev);
	if (!o.dev_id)
		return fail(EINVAL, w, "dev_id zero");
	if (o.to_dev == o.dev_id)
		return fail(EINVAL, w, "to_dev is the device drained");
	return Body{o};
}

Result<Body> dec_drain_rep(std::string_view w, Bytes m)
{
	const auto r = read<mdr_wire_drain_rep>(m);
	DrainRep o;
	const uint32_t status = load(r.status);

	o.dev_id = load(r.dev_id);
	o.moved = load(r.moved);
	o.remaining = load(r.remaining);
	o.bytes = load(r.bytes);
	o.stall_max_us = load(r.stall_max_us);
	o.stall_total_us = load(r.stall_total_us);
	if (!o.dev_id)
		return fail(EINVAL, w, "dev_id zero");
	if (status >= MDR_ST_MAX)
		return fail(EINVAL, w, "status ", status, " out of range");
	o.status = static_cast<uint16_t>(status);
	if (auto e = check_stalls(w, o.stall_max_us, o.stall_total_us))
		return *e;
	return Body{o};
}

struct Decoders {
	uint16_t opcode;
	Decoder req;
	Decoder rep;
};

constexpr Decoders kDecoders[] = {
	{MDR_OP_OPEN, dec_open_req, dec_open_rep},
	{MDR_OP_CLOSE, dec_vol_req<CloseReq, true>, dec_header_only<CloseRep>},
	{MDR_OP_RENEW, dec_vol_req<RenewReq, false>, dec_renew_rep},
	{MDR_OP_ALLOC, dec_alloc_req, dec_alloc_rep},
	{MDR_OP_INVALIDATE, dec_inval<Invalidate>, dec_inval<InvalidateAck>},
	{MDR_OP_AUTH, dec_auth_req, dec_header_only<AuthRep>},
	{MDR_OP_VOL_CREATE, dec_vol_create_req, dec_vol_rep<VolCreateRep>},
	{MDR_OP_VOL_DELETE, dec_vol_name_req<VolDeleteReq>,
	 dec_header_only<VolDeleteRep>},
	{MDR_OP_VOL_LIST, dec_list_req<VolListReq>, dec_list_rep<VolList>},
	{MDR_OP_VOL_INFO, dec_vol_name_req<VolInfoReq>, dec_vol_rep<VolInfoRep>},
	{MDR_OP_VOL_RESIZE, dec_vol_resize_req, dec_vol_rep<VolResizeRep>},
	{MDR_OP_DEV_LIST, dec_list_req<DevListReq>, dec_list_rep<DevList>},
	{MDR_OP_NODE_STATS, dec_header_only<NodeStatsReq>, dec_node_stats_rep},
	{MDR_OP_MOVE, dec_move_req, dec_move_rep},
	{MDR_OP_DRAIN, dec_drain_req, dec_drain_rep},
	{MDR_OP_PING, dec_header_only<PingReq>, dec_header_only<PingRep>},
};
static_assert(std::size(kDecoders) == std::size(kOps));

// Size, then the body's fields.
Result<Body> check_body(const Framed &f, Bytes msg)
{
	if (auto e = check_size(f))
		return *e;
	if (f.hdr.reply() && f.hdr.status != MDR_ST_OK)
		return Body{ErrorRep{f.hdr.opcode, f.hdr.status}};
	for (const Decoders &d : kDecoders)
		if (d.opcode == f.hdr.opcode)
			return (f.hdr.reply() ? d.rep : d.req)(f.name, msg);
	return fail(EPROTO, f.name, "no decoder");	// kOps and kDecoders differ
}

// ---- Encoding -------------------------------------------------------------

std::optional<Error> room(std::string_view what, std::span<std::byte> out,
			  size_t len)
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
const char *name_of()
{
	return msg_name(op_of(M::opcode), M::reply);
}

// A fixed-size message whose wire struct w has its body filled in.
template <typename M, typename W>
Result<size_t> emit(std::span<std::byte> out, uint64_t req_id, W &w)
{
	if (auto e = room(name_of<M>(), out, sizeof(W)))
		return *e;
	w.hdr = make_hdr(M::opcode, M::reply, MDR_ST_OK, sizeof(W), req_id);
	write(out, 0, w);
	return self_check(out, sizeof(W));
}

template <typename M>
Result<size_t> emit_header_only(std::span<std::byte> out, uint64_t req_id)
{
	if (auto e = room(name_of<M>(), out, kHdrSize))
		return *e;
	write(out, 0, make_hdr(M::opcode, M::reply, MDR_ST_OK, kHdrSize, req_id));
	return self_check(out, kHdrSize);
}

// Bytes of a message of fixed part size and n elements of elem bytes
// (more than MDR_WIRE_MSG_MAX when n is absurd, without overflowing).
size_t variable_len(size_t size, size_t elem, size_t n)
{
	if (n > MDR_WIRE_MSG_MAX / elem)
		return MDR_WIRE_MSG_MAX + 1;
	return size + n * elem;
}

template <typename L>
Result<size_t> encode_list_rep(std::span<std::byte> out, uint64_t req_id,
			       const typename L::Msg &m)
{
	using M = typename L::Msg;
	const char *w = name_of<M>();
	const auto &items = L::items(m);
	const size_t len = variable_len(sizeof(typename L::Wire),
					sizeof(typename L::Elem), items.size());

	if (auto e = room(w, out, len))
		return *e;
	auto r = zeroed<typename L::Wire>();
	r.hdr = make_hdr(M::opcode, M::reply, MDR_ST_OK, len, req_id);
	store(r.next, m.next);
	store(r.count, static_cast<uint32_t>(items.size()));
	write(out, 0, r);
	for (size_t i = 0; i < items.size(); i++) {
		auto el = zeroed<typename L::Elem>();

		if (auto e = L::put(element(w, L::array, i), el, items[i]))
			return *e;
		write(out, sizeof(r) + i * sizeof(el), el);
	}
	return self_check(out, len);
}

template <typename M>
Result<size_t> encode_vol_rep(std::span<std::byte> out, uint64_t req_id,
			      const M &m)
{
	const char *w = name_of<M>();
	const size_t len = variable_len(sizeof(mdr_wire_vol_rep), sizeof(DevExt),
					m.devs.size());

	if (auto e = room(w, out, len))
		return *e;
	auto r = zeroed<mdr_wire_vol_rep>();
	r.hdr = make_hdr(M::opcode, M::reply, MDR_ST_OK, len, req_id);
	if (auto e = put_volume(std::string(w) + ": vol", r.vol, m.vol))
		return *e;
	store(r.nr_devs, static_cast<uint32_t>(m.devs.size()));
	write(out, 0, r);
	for (size_t i = 0; i < m.devs.size(); i++) {
		auto d = zeroed<DevExt>();

		store(d.dev_id, m.devs[i].dev_id);
		store(d.extents, m.devs[i].extents);
		write(out, sizeof(r) + i * sizeof(d), d);
	}
	return self_check(out, len);
}

} // namespace

// ---------------------------------------------------------------------------
// Status and names.

namespace {

struct StatusInfo {
	uint16_t status;
	int err;		// positive errno
	const char *name;
};

#define MDR_ST(st, err) {st, err, #st}
constexpr StatusInfo kStatus[] = {
	MDR_ST(MDR_ST_OK, 0),
	MDR_ST(MDR_ST_INVAL, EINVAL),
	MDR_ST(MDR_ST_NOENT, ENOENT),
	MDR_ST(MDR_ST_EXIST, EEXIST),
	MDR_ST(MDR_ST_NOSPC, ENOSPC),
	MDR_ST(MDR_ST_PERM, EPERM),
	MDR_ST(MDR_ST_BUSY, EBUSY),
	MDR_ST(MDR_ST_PROTO, EPROTO),
	MDR_ST(MDR_ST_VERSION, EPROTONOSUPPORT),
	MDR_ST(MDR_ST_STALE, ESTALE),
	MDR_ST(MDR_ST_AGAIN, EAGAIN),
	MDR_ST(MDR_ST_IO, EIO),
	MDR_ST(MDR_ST_NOMEM, ENOMEM),
};
#undef MDR_ST

constexpr bool status_table_in_order()
{
	for (size_t i = 0; i < std::size(kStatus); i++)
		if (kStatus[i].status != i)
			return false;
	return std::size(kStatus) == MDR_ST_MAX;
}
static_assert(status_table_in_order(), "kStatus: one row per status, in order");

// Other errno values a status stands for (errno_to_status only).
constexpr std::pair<int, uint16_t> kErrnoAliases[] = {
	{EACCES, MDR_ST_PERM},
	{EDQUOT, MDR_ST_NOSPC},
	{ENOBUFS, MDR_ST_NOMEM},
	{EBADMSG, MDR_ST_PROTO},
	{EMSGSIZE, MDR_ST_PROTO},
	{ENAMETOOLONG, MDR_ST_INVAL},
	{ERANGE, MDR_ST_INVAL},
	{EOVERFLOW, MDR_ST_INVAL},
	{ENODEV, MDR_ST_NOENT},
	{ENXIO, MDR_ST_NOENT},
	{ENOTEMPTY, MDR_ST_BUSY},
	{EINTR, MDR_ST_AGAIN},
	{ETIMEDOUT, MDR_ST_AGAIN},
};

} // namespace

int status_to_errno(uint16_t status)
{
	if (status >= MDR_ST_MAX)
		return -EPROTO;
	return -kStatus[status].err;
}

uint16_t errno_to_status(int err)
{
	const int e = err < 0 ? -err : err;

	for (const StatusInfo &s : kStatus)
		if (s.err == e)
			return s.status;
	for (const auto &[alias, status] : kErrnoAliases)
		if (alias == e)
			return status;
	return MDR_ST_IO;
}

std::string status_name(uint16_t status)
{
	if (status >= MDR_ST_MAX)
		return "MDR_ST_?" + std::to_string(status);
	return kStatus[status].name;
}

std::string opcode_name(uint16_t opcode)
{
	if (const OpInfo *op = find_op(opcode))
		return op->cname;
	return "MDR_OP_?" + std::to_string(opcode);
}

bool valid_volume_name(std::string_view name)
{
	return !name.empty() && name.size() < MDR_WIRE_NAME_LEN &&
	       std::all_of(name.begin(), name.end(), name_char);
}

// ---------------------------------------------------------------------------
// Extent entries.

static_assert(offsetof(mdr_wire_entry, crc) == 28);

const char *entry_check_name(EntryCheck check)
{
	switch (check) {
	case EntryCheck::ok:
		return "ok";
	case EntryCheck::bad_crc:
		return "bad crc";
	case EntryCheck::reserved_nonzero:
		return "reserved not zero";
	case EntryCheck::bad_state:
		return "state out of range";
	case EntryCheck::unallocated_placed:
		return "unallocated with a device or pstart";
	case EntryCheck::zero_generation:
		return "generation zero";
	case EntryCheck::no_device:
		return "placed without a device";
	}
	return "unknown check";
}

uint32_t entry_crc(const mdr_wire_entry &e, uint64_t volume_id, uint64_t index)
{
	__le64 where[2];

	store(where[0], volume_id);
	store(where[1], index);
	uint32_t crc = crc32c_update(kCrc32cInit, where, sizeof(where));
	crc = crc32c_update(crc, &e, offsetof(mdr_wire_entry, crc));
	return crc32c_finish(crc);
}

void seal_entry(mdr_wire_entry &e, uint64_t volume_id, uint64_t index)
{
	store(e.crc, entry_crc(e, volume_id, index));
}

EntryCheck verify_entry(const mdr_wire_entry &e, uint64_t volume_id,
			uint64_t index)
{
	if (load(e.crc) != entry_crc(e, volume_id, index))
		return EntryCheck::bad_crc;
	if (!all_zero(e.reserved) || load(e.reserved2))
		return EntryCheck::reserved_nonzero;
	if (e.state >= MDR_EXT_STATE_MAX)
		return EntryCheck::bad_state;
	if (e.state == MDR_EXT_UNALLOCATED && (load(e.dev_id) || load(e.pstart)))
		return EntryCheck::unallocated_placed;
	if (!load(e.generation))
		return EntryCheck::zero_generation;
	if (e.state != MDR_EXT_UNALLOCATED && !load(e.dev_id))
		return EntryCheck::no_device;
	return EntryCheck::ok;
}

mdr_wire_entry make_entry(const Entry &entry, uint64_t volume_id, uint64_t index)
{
	auto e = zeroed<mdr_wire_entry>();

	store(e.generation, entry.generation);
	store(e.pstart, entry.pstart);
	store(e.dev_id, entry.dev_id);
	e.state = entry.state;
	seal_entry(e, volume_id, index);
	return e;
}

Entry decode_entry(const mdr_wire_entry &e)
{
	return Entry{load(e.generation), load(e.pstart), load(e.dev_id), e.state};
}

// ---------------------------------------------------------------------------
// Connection private data.

namespace {

template <typename T>
std::optional<Error> check_private_data(std::string_view w, Bytes pd)
{
	if (pd.size() < sizeof(T))
		return fail(EPROTO, w, pd.size(),
			    " bytes of private data, expected at least ",
			    sizeof(T));
	if (load(read<T>(pd).magic) != MDR_WIRE_CONN_MAGIC)
		return fail(EPROTO, w, "bad magic ", Hex{load(read<T>(pd).magic)});
	return std::nullopt;
}

template <typename T>
Bytes bytes_of(const T &t)
{
	return Bytes(reinterpret_cast<const std::byte *>(&t), sizeof(t));
}

std::optional<Error> check_max_msg(std::string_view w, uint32_t max_msg)
{
	if (max_msg < MDR_WIRE_MSG_MIN || max_msg > MDR_WIRE_MSG_MAX)
		return fail(EINVAL, w, "max_msg ", max_msg, " outside [",
			    MDR_WIRE_MSG_MIN, ", ", MDR_WIRE_MSG_MAX, "]");
	return std::nullopt;
}

} // namespace

Result<ConnReq> parse_conn_req(std::span<const std::byte> private_data)
{
	constexpr std::string_view w = "conn_req";

	if (auto e = check_private_data<mdr_wire_conn_req>(w, private_data))
		return *e;

	const auto r = read<mdr_wire_conn_req>(private_data);
	const uint16_t role = load(r.role);
	ConnReq q;

	q.version_min = load(r.version_min);
	q.version_max = load(r.version_max);
	q.tenant = load(r.tenant);
	q.host_id = load(r.host_id);
	q.queue_depth = load(r.queue_depth);
	q.recv_depth = load(r.recv_depth);
	q.max_msg = load(r.max_msg);
	if (!q.version_min || q.version_min > q.version_max)
		return fail(EINVAL, w, "version range ", q.version_min, "..",
			    q.version_max, " not sane");
	if (role != MDR_ROLE_HOST && role != MDR_ROLE_ADMIN)
		return fail(EINVAL, w, "unknown role ", role);
	q.role = static_cast<mdr_wire_role>(role);
	if (load(r.flags))
		return fail(EINVAL, w, "flags not zero");
	if (!all_zero(r.reserved))
		return fail(EINVAL, w, "reserved not zero");
	if (!q.queue_depth)
		return fail(EINVAL, w, "queue_depth zero");
	if (q.recv_depth <= q.queue_depth)
		return fail(EINVAL, w, "recv_depth ", q.recv_depth,
			    " not above queue_depth ", q.queue_depth);
	if (auto e = check_max_msg(w, q.max_msg))
		return *e;
	if (q.role == MDR_ROLE_ADMIN && q.tenant)
		return fail(EINVAL, w, "tenant ", q.tenant,
			    " on an admin connection");
	return q;
}

Result<mdr_wire_conn_req> encode_conn_req(const ConnReq &req)
{
	auto r = zeroed<mdr_wire_conn_req>();

	store(r.magic, MDR_WIRE_CONN_MAGIC);
	store(r.version_min, req.version_min);
	store(r.version_max, req.version_max);
	store(r.role, static_cast<uint16_t>(req.role));
	store(r.tenant, req.tenant);
	store(r.host_id, req.host_id);
	store(r.queue_depth, req.queue_depth);
	store(r.recv_depth, req.recv_depth);
	store(r.max_msg, req.max_msg);
	if (auto check = parse_conn_req(bytes_of(r)); !check.ok())
		return forward(check);
	return r;
}

unsigned track_granule_shift(uint32_t extent_shift)
{
	// log2(MDR_WIRE_TRACK_GRANULES) == 6
	static_assert(MDR_WIRE_TRACK_GRANULES == 64);
	return unsigned(std::max<int>(int(extent_shift) - 6, MDR_WIRE_TRACK_MIN_SHIFT));
}

unsigned track_granules(uint32_t extent_shift)
{
	return 1U << (extent_shift - track_granule_shift(extent_shift));
}

Result<uint16_t> negotiate_version(uint16_t peer_min, uint16_t peer_max)
{
	const uint16_t lo = std::max<uint16_t>(peer_min, MDR_WIRE_VERSION_MIN);
	const uint16_t hi = std::min<uint16_t>(peer_max, MDR_WIRE_VERSION);

	if (peer_min > peer_max || lo > hi)
		return fail(EPROTONOSUPPORT, "version", "peer speaks ", peer_min,
			    "..", peer_max, ", this build ", MDR_WIRE_VERSION_MIN,
			    "..", MDR_WIRE_VERSION);
	return hi;
}

Result<ConnRep> parse_conn_rep(std::span<const std::byte> private_data,
			       const ConnReq &sent)
{
	constexpr std::string_view w = "conn_rep";

	if (auto e = check_private_data<mdr_wire_conn_rep>(w, private_data))
		return *e;

	const auto r = read<mdr_wire_conn_rep>(private_data);
	ConnRep a;

	a.version = load(r.version);
	a.queue_depth = load(r.queue_depth);
	a.push_credits = load(r.push_credits);
	a.max_msg = load(r.max_msg);
	a.node_id = load(r.node_id);
	a.boot_id = load(r.boot_id);
	std::memcpy(a.nonce.data(), r.nonce, sizeof(r.nonce));
	if (a.version < std::max<uint16_t>(sent.version_min, MDR_WIRE_VERSION_MIN) ||
	    a.version > std::min<uint16_t>(sent.version_max, MDR_WIRE_VERSION))
		return fail(EPROTO, w, "version ", a.version, " outside the ",
			    sent.version_min, "..", sent.version_max, " asked");
	if (load(r.flags))
		return fail(EINVAL, w, "flags not zero");
	if (!a.queue_depth || a.queue_depth > sent.queue_depth)
		return fail(EINVAL, w, "queue_depth ", a.queue_depth,
			    " outside [1, ", sent.queue_depth, "]");
	// The client's buffers hold a reply per request and a push per
	// credit: recv_depth >= queue_depth + push_credits.
	if (a.push_credits > sent.recv_depth - a.queue_depth)
		return fail(EINVAL, w, "push_credits ", a.push_credits,
			    " exceed recv_depth ", sent.recv_depth,
			    " - queue_depth ", a.queue_depth);
	if (sent.role == MDR_ROLE_HOST && !a.push_credits)
		return fail(EINVAL, w, "no push credits on a host connection");
	if (auto e = check_max_msg(w, a.max_msg))
		return *e;
	const bool nonce_zero = all_zero(r.nonce);
	if (sent.role == MDR_ROLE_HOST && !nonce_zero)
		return fail(EINVAL, w, "nonce on a host connection");
	if (sent.role == MDR_ROLE_ADMIN && nonce_zero)
		return fail(EINVAL, w, "no nonce on an admin connection");
	return a;
}

Result<mdr_wire_conn_rep> encode_conn_rep(const ConnRep &rep, const ConnReq &req)
{
	auto r = zeroed<mdr_wire_conn_rep>();

	store(r.magic, MDR_WIRE_CONN_MAGIC);
	store(r.version, rep.version);
	store(r.queue_depth, rep.queue_depth);
	store(r.push_credits, rep.push_credits);
	store(r.max_msg, rep.max_msg);
	store(r.node_id, rep.node_id);
	store(r.boot_id, rep.boot_id);
	std::memcpy(r.nonce, rep.nonce.data(), sizeof(r.nonce));
	if (auto check = parse_conn_rep(bytes_of(r), req); !check.ok())
		return forward(check);
	return r;
}

Result<ConnRej> parse_conn_rej(std::span<const std::byte> private_data)
{
	constexpr std::string_view w = "conn_rej";

	if (auto e = check_private_data<mdr_wire_conn_rej>(w, private_data))
		return *e;

	const auto r = read<mdr_wire_conn_rej>(private_data);
	ConnRej j;

	j.version = load(r.version);
	j.status = load(r.status);
	if (j.status == MDR_ST_OK || j.status >= MDR_ST_MAX)
		return fail(EINVAL, w, "status ", j.status, " is no reason to reject");
	if (j.status == MDR_ST_VERSION && !j.version)
		return fail(EINVAL, w, "version zero with MDR_ST_VERSION");
	return j;
}

Result<mdr_wire_conn_rej> encode_conn_rej(const ConnRej &rej)
{
	auto r = zeroed<mdr_wire_conn_rej>();

	store(r.magic, MDR_WIRE_CONN_MAGIC);
	store(r.version, rej.version);
	store(r.status, rej.status);
	if (auto check = parse_conn_rej(bytes_of(r)); !check.ok())
		return forward(check);
	return r;
}

// ---------------------------------------------------------------------------
// Messages.

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

std::optional<Header> peek_header(std::span<const std::byte> received)
{
	if (received.size() < kHdrSize)
		return std::nullopt;

	const auto raw = read<mdr_wire_hdr>(received);
	if (load(raw.magic) != MDR_WIRE_MSG_MAGIC)
		return std::nullopt;
	return header_of(raw);
}

namespace {

// Messages with fields of their own have an encoder each; the others
// share one by the shape of their wire struct (see encode()).

Result<size_t> encode_one(std::span<std::byte> out, uint64_t req_id,
			  const OpenReq &m)
{
	auto w = zeroed<mdr_wire_open_req>();

	store(w.volume_id, m.volume_id);
	store(w.flags, m.flags);
	if (auto e = put_string(name_of<OpenReq>(), "name", w.name, m.name))
		return *e;
	return emit<OpenReq>(out, req_id, w);
}

Result<size_t> encode_one(std::span<std::byte> out, uint64_t req_id,
			  const OpenRep &m)
{
	auto w = zeroed<mdr_wire_open_rep>();

	store(w.volume_id, m.volume_id);
	store(w.size, m.size);
	store(w.table_addr, m.table_addr);
	store(w.table_len, m.table_len);
	store(w.table_rkey, m.table_rkey);
	store(w.extent_shift, m.extent_shift);
	store(w.lease_ms, m.lease_ms);
	store(w.generation, m.generation);
	if (auto e = put_string(name_of<OpenRep>(), "name", w.name, m.name))
		return *e;
	return emit<OpenRep>(out, req_id, w);
}

Result<size_t> encode_one(std::span<std::byte> out, uint64_t req_id,
			  const RenewRep &m)
{
	auto w = zeroed<mdr_wire_renew_rep>();

	store(w.lease_ms, m.lease_ms);
	return emit<RenewRep>(out, req_id, w);
}

Result<size_t> encode_one(std::span<std::byte> out, uint64_t req_id,
			  const AllocReq &m)
{
	auto w = zeroed<mdr_wire_alloc_req>();

	store(w.volume_id, m.volume_id);
	store(w.index, m.index);
	return emit<AllocReq>(out, req_id, w);
}

Result<size_t> encode_one(std::span<std::byte> out, uint64_t req_id,
			  const AllocRep &m)
{
	auto w = zeroed<mdr_wire_alloc_rep>();

	store(w.volume_id, m.volume_id);
	store(w.index, m.index);
	w.entry = make_entry(m.entry, m.volume_id, m.index);
	return emit<AllocRep>(out, req_id, w);
}

Result<size_t> encode_one(std::span<std::byte> out, uint64_t req_id,
			  const AuthReq &m)
{
	auto w = zeroed<mdr_wire_auth_req>();

	std::memcpy(w.mac, m.mac.data(), sizeof(w.mac));
	return emit<AuthReq>(out, req_id, w);
}

Result<size_t> encode_one(std::span<std::byte> out, uint64_t req_id,
			  const VolCreateReq &m)
{
	auto w = zeroed<mdr_wire_vol_create_req>();

	store(w.size, m.size);
	store(w.extent_shift, m.extent_shift);
	store(w.tenant, m.tenant);
	if (auto e = put_string(name_of<VolCreateReq>(), "name", w.name, m.name))
		return *e;
	return emit<VolCreateReq>(out, req_id, w);
}

Result<size_t> encode_one(std::span<std::byte> out, uint64_t req_id,
			  const NodeStatsRep &m)
{
	auto w = zeroed<mdr_wire_node_stats_rep>();

	store(w.boot_id, m.boot_id);
	store(w.uptime_ms, m.uptime_ms);
	store(w.connections, m.connections);
	store(w.volumes, m.volumes);
	store(w.requests, m.requests);
	store(w.errors, m.errors);
	store(w.bad_messages, m.bad_messages);
	store(w.journal_records, m.journal_records);
	store(w.journal_bytes, m.journal_bytes);
	store(w.journal_syncs, m.journal_syncs);
	store(w.invalidations, m.invalidations);
	store(w.lease_expiries, m.lease_expiries);

	auto g = zeroed<mdr_wire_node_stats_mig>();

	store(g.moves_active, m.moves_active);
	store(g.moves_done, m.moves_done);
	store(g.moves_failed, m.moves_failed);
	store(g.move_bytes, m.move_bytes);
	store(g.stall_max_us, m.stall_max_us);
	store(g.stall_total_us, m.stall_total_us);

	auto p = zeroed<mdr_wire_node_stats_push>();

	store(p.push_timeouts, m.push_timeouts);

	auto c = zeroed<mdr_wire_node_stats_copy>();

	store(c.precopy_bytes, m.precopy_bytes);
	store(c.freeze_bytes, m.freeze_bytes);
	if (auto e = room(name_of<NodeStatsRep>(), out, kStatsLen))
		return *e;
	w.hdr = make_hdr(NodeStatsRep::opcode, true, MDR_ST_OK, kStatsLen, req_id);
	write(out, 0, w);
	write(out, sizeof(w), g);
	write(out, kStatsMigLen, p);
	write(out, kStatsPushLen, c);
	return self_check(out, kStatsLen);
}

Result<size_t> encode_one(std::span<std::byte> out, uint64_t req_id,
			  const MoveReq &m)
{
	auto w = zeroed<mdr_wire_move_req>();

	store(w.volume_id, m.volume_id);
	store(w.first, m.first);
	store(w.count, m.count);
	store(w.to_dev, m.to_dev);
	store(w.flags, m.flags);
	if (auto e = put_string(name_of<MoveReq>(), "name", w.name, m.name))
		return *e;
	return emit<MoveReq>(out, req_id, w);
}

Result<size_t> encode_one(std::span<std::byte> out, uint64_t req_id,
			  const MoveRep &m)
{
	using Elem = mdr_wire_move_extent;
	const char *w = name_of<MoveRep>();
	const size_t len = variable_len(sizeof(mdr_wire_move_rep), sizeof(Elem),
					m.extents.size());

	if (auto e = room(w, out, len))
		return *e;
	auto r = zeroed<mdr_wire_move_rep>();
	r.hdr = make_hdr(MoveRep::opcode, true, MDR_ST_OK, len, req_id);
	store(r.volume_id, m.volume_id);
	store(r.bytes, m.bytes);
	store(r.stall_max_us, m.stall_max_us);
	store(r.stall_total_us, m.stall_total_us);
	store(r.count, static_cast<uint32_t>(m.extents.size()));
	write(out, 0, r);
	for (size_t i = 0; i < m.extents.size(); i++) {
		const MovedExtent &x = m.extents[i];
		auto el = zeroed<Elem>();

		store(el.index, x.index);
		store(el.old_pstart, x.old_pstart);
		store(el.new_pstart, x.new_pstart);
		store(el.old_dev, x.old_dev);
		store(el.new_dev, x.new_dev);
		store(el.generation, x.generation);
		store(el.stall_us, x.stall_us);
		write(out, sizeof(r) + i * sizeof(el), el);
	}
	return self_check(out, len);
}

Result<size_t> encode_one(std::span<std::byte> out, uint64_t req_id,
			  const DrainReq &m)
{
	auto w = zeroed<mdr_wire_drain_req>();

	store(w.dev_id, m.dev_id);
	store(w.to_dev, m.to_dev);
	return emit<DrainReq>(out, req_id, w);
}

Result<size_t> encode_one(std::span<std::byte> out, uint64_t req_id,
			  const DrainRep &m)
{
	auto w = zeroed<mdr_wire_drain_rep>();

	store(w.dev_id, m.dev_id);
	store(w.status, m.status);
	store(w.moved, m.moved);
	store(w.remaining, m.remaining);
	store(w.bytes, m.bytes);
	store(w.stall_max_us, m.stall_max_us);
	store(w.stall_total_us, m.stall_total_us);
	return emit<DrainRep>(out, req_id, w);
}

Result<size_t> encode_one(std::span<std::byte> out, uint64_t req_id,
			  const ErrorRep &m)
{
	// The opcode is echoed even when this build does not know it.
	const OpInfo *op = find_op(m.opcode);
	const std::string w = op ? op->rep : "error_rep";

	if (m.status == MDR_ST_OK || m.status >= MDR_ST_MAX)
		return fail(EINVAL, w, "status ", m.status,
			    " is not an error reply's");
	if (auto e = room(w, out, kHdrSize))
		return *e;
	write(out, 0, make_hdr(m.opcode, true, m.status, kHdrSize, req_id));
	return kHdrSize;
}

// CLOSE and RENEW.
template <typename M>
Result<size_t> encode_vol_req(std::span<std::byte> out, uint64_t req_id,
			      const M &m)
{
	auto w = zeroed<mdr_wire_vol_req>();

	store(w.volume_id, m.volume_id);
	return emit<M>(out, req_id, w);
}

template <typename M>
Result<size_t> encode_inval(std::span<std::byte> out, uint64_t req_id,
			    const M &m)
{
	auto w = zeroed<mdr_wire_inval>();

	store(w.volume_id, m.volume_id);
	store(w.first, m.first);
	store(w.count, m.count);
	store(w.generation, m.generation);
	store(w.reason, m.reason);
	return emit<M>(out, req_id, w);
}

// Version 2's ack: the push echoed in struct mdr_wire_inval_ack.
Result<size_t> encode_inval_ack(std::span<std::byte> out, uint64_t req_id,
				const InvalidateAck &m)
{
	constexpr const char *what = "inval_ack";
	auto w = zeroed<mdr_wire_inval_ack>();

	if (m.flags & ~MDR_INVAL_ACK_F_TRACKED)
		return fail(EINVAL, what, "unknown flags ", Hex{m.flags});
	if (m.dirty && !(m.flags & MDR_INVAL_ACK_F_TRACKED))
		return fail(EINVAL, what, "dirty without MDR_INVAL_ACK_F_TRACKED");
	if (auto e = room(what, out, sizeof(w)))
		return *e;
	store(w.inval.volume_id, m.volume_id);
	store(w.inval.first, m.first);
	store(w.inval.count, m.count);
	store(w.inval.generation, m.generation);
	store(w.inval.reason, m.reason);
	store(w.flags, m.flags);
	store(w.dirty, m.dirty);
	w.inval.hdr = make_hdr(MDR_OP_INVALIDATE, true, MDR_ST_OK, sizeof(w), req_id);
	write(out, 0, w);
	return self_check(out, sizeof(w));
}

template <typename M>
Result<size_t> encode_list_req(std::span<std::byte> out, uint64_t req_id,
			       const M &m)
{
	auto w = zeroed<mdr_wire_list_req>();

	store(w.cursor, m.cursor);
	return emit<M>(out, req_id, w);
}

// VOL_DELETE, VOL_INFO (size zero) and VOL_RESIZE.
template <typename M>
Result<size_t> encode_vol_name_req(std::span<std::byte> out, uint64_t req_id,
				   uint64_t size, const std::string &name)
{
	auto w = zeroed<mdr_wire_vol_name_req>();

	store(w.size, size);
	if (auto e = put_string(name_of<M>(), "name", w.name, name))
		return *e;
	return emit<M>(out, req_id, w);
}

} // namespace

Result<size_t> encode(std::span<std::byte> out, uint64_t req_id, const Body &body)
{
	return std::visit([&](const auto &m) -> Result<size_t> {
		using T = std::decay_t<decltype(m)>;

		// No fields: PING, NODE_STATS requests, OK replies to CLOSE,
		// AUTH and VOL_DELETE are the header alone.
		if constexpr (std::is_empty_v<T>)
			return emit_header_only<T>(out, req_id);
		else if constexpr (std::is_same_v<T, CloseReq> || std::is_same_v<T, RenewReq>)
			return encode_vol_req(out, req_id, m);
		else if constexpr (std::is_same_v<T, InvalidateAck>) {
			if (m.extended)
				return encode_inval_ack(out, req_id, m);
			if (m.flags || m.dirty)
				return fail(EINVAL, "inval_ack", "flags or dirty in "
					    "version 1's ack");
			return encode_inval(out, req_id, m);
		} else if constexpr (std::is_base_of_v<InvalRange, T>)
			return encode_inval(out, req_id, m);
		else if constexpr (std::is_same_v<T, VolDeleteReq> ||
				   std::is_same_v<T, VolInfoReq>)
			return encode_vol_name_req<T>(out, req_id, 0, m.name);
		else if constexpr (std::is_same_v<T, VolResizeReq>)
			return encode_vol_name_req<T>(out, req_id, m.size, m.name);
		else if constexpr (std::is_same_v<T, VolListReq> || std::is_same_v<T, DevListReq>)
			return encode_list_req(out, req_id, m);
		else if constexpr (std::is_base_of_v<VolumeReply, T>)
			return encode_vol_rep(out, req_id, m);
		else if constexpr (std::is_same_v<T, VolListRep>)
			return encode_list_rep<VolList>(out, req_id, m);
		else if constexpr (std::is_same_v<T, DevListRep>)
			return encode_list_rep<DevList>(out, req_id, m);
		else
			return encode_one(out, req_id, m);
	}, body);
}

size_t encoded_size(const Body &body)
{
	return std::visit([](const auto &m) -> size_t {
		using T = std::decay_t<decltype(m)>;

		if constexpr (std::is_same_v<T, ErrorRep>)
			return kHdrSize;
		else if constexpr (std::is_base_of_v<VolumeReply, T>)
			return variable_len(sizeof(mdr_wire_vol_rep),
					    sizeof(DevExt), m.devs.size());
		else if constexpr (std::is_same_v<T, VolListRep>)
			return variable_len(sizeof(mdr_wire_vol_list_rep),
					    sizeof(mdr_wire_volume), m.vols.size());
		else if constexpr (std::is_same_v<T, DevListRep>)
			return variable_len(sizeof(mdr_wire_dev_list_rep),
					    sizeof(mdr_wire_device), m.devs.size());
		else if constexpr (std::is_same_v<T, MoveRep>)
			return variable_len(sizeof(mdr_wire_move_rep),
					    sizeof(mdr_wire_move_extent), m.extents.size());
		else if constexpr (std::is_same_v<T, NodeStatsRep>)
			return kStatsLen;
		else if constexpr (std::is_same_v<T, InvalidateAck>)
			return m.extended ? sizeof(mdr_wire_inval_ack)
					  : sizeof(mdr_wire_inval);
		else if constexpr (T::reply)
			return op_of(T::opcode).rep_shape.size;
		else
			return op_of(T::opcode).req_shape.size;
	}, body);
}

} // namespace mdr::wire
