// SPDX-License-Identifier: GPL-2.0
//
// test_wire.cc - the wire codec: a round trip of every message, every
// rejection a receiver owes (one table row per malformed field), truncation
// at every length, oversize lengths, extent entries (seal and verify, every
// single-bit flip, misaddressed and torn reads, a known-answer vector),
// connection private data, status translation, and a seeded fuzz loop
// through parse().
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <endian.h>

#include "lib/wire.h"

#include "tests/common/cmocka_cxx.h"

namespace {

namespace w = mdr::wire;
using Buf = std::vector<std::byte>;
using w::Side;

constexpr uint64_t kReqId = 0x1122334455667788;
constexpr uint64_t kVol = 42;
constexpr uint64_t kIndex = 17;

// ---- Helpers --------------------------------------------------------------

void put8(Buf &b, size_t off, uint8_t v) { b.at(off) = std::byte{v}; }

void put16(Buf &b, size_t off, uint16_t v)
{
	v = htole16(v);
	assert_true(off + sizeof(v) <= b.size());
	std::memcpy(&b[off], &v, sizeof(v));
}

void put32(Buf &b, size_t off, uint32_t v)
{
	v = htole32(v);
	assert_true(off + sizeof(v) <= b.size());
	std::memcpy(&b[off], &v, sizeof(v));
}

void put64(Buf &b, size_t off, uint64_t v)
{
	v = htole64(v);
	assert_true(off + sizeof(v) <= b.size());
	std::memcpy(&b[off], &v, sizeof(v));
}

void put_bytes(Buf &b, size_t off, size_t field_len, std::string_view bytes)
{
	assert_true(off + field_len <= b.size());
	std::memset(&b[off], 0, field_len);
	std::memcpy(&b[off], bytes.data(), std::min(bytes.size(), field_len));
}

bool contains(const std::string &s, const char *part)
{
	return s.find(part) != std::string::npos;
}

constexpr size_t kLen = offsetof(mdr_wire_hdr, length);

Buf encode(const w::Body &body, uint64_t req_id = kReqId)
{
	Buf out(MDR_WIRE_MSG_MAX);
	auto n = w::encode(out, req_id, body);

	if (!n.ok())
		fail_msg("encode: %s", n.message().c_str());
	out.resize(n.value());
	return out;
}

uint16_t opcode_of(const w::Body &b)
{
	return std::visit([](const auto &m) -> uint16_t {
		using T = std::decay_t<decltype(m)>;
		if constexpr (std::is_same_v<T, w::ErrorRep>)
			return m.opcode;
		else
			return T::opcode;
	}, b);
}

bool reply_of(const w::Body &b)
{
	return std::visit([](const auto &m) -> bool {
		using T = std::decay_t<decltype(m)>;
		if constexpr (std::is_same_v<T, w::ErrorRep>)
			return true;
		else
			return T::reply;
	}, b);
}

// Who receives the message: replies go to clients, requests to mdnode;
// invalidations the other way round.
Side receiver_of(const w::Body &b)
{
	const bool to_node = opcode_of(b) == MDR_OP_INVALIDATE ? reply_of(b)
							      : !reply_of(b);
	return to_node ? Side::node : Side::client;
}

mdr_wire_role role_of(const w::Body &b)
{
	switch (opcode_of(b)) {
	case MDR_OP_OPEN:
	case MDR_OP_CLOSE:
	case MDR_OP_RENEW:
	case MDR_OP_ALLOC:
	case MDR_OP_INVALIDATE:
	case MDR_OP_HOST_AUTH:
	case MDR_OP_PING:
		return MDR_ROLE_HOST;
	default:
		return MDR_ROLE_ADMIN;
	}
}

mdr::Result<w::Msg> parse_as(const Buf &b, const w::Body &like)
{
	return w::parse(b, receiver_of(like), role_of(like));
}

// ---- Samples: one valid message of every kind -----------------------------

w::Volume volume(uint64_t id, const char *name)
{
	w::Volume v;

	v.volume_id = id;
	v.size = (uint64_t{16} << 30) + 4096;	// 4097 extents of 4 MiB
	v.allocated = 100;
	v.extent_shift = 22;
	v.tenant = 7;
	v.open_count = 2;
	v.name = name;
	return v;
}

w::Invalidate inval()
{
	w::Invalidate m;

	m.volume_id = kVol;
	m.first = 16;
	m.count = 4;
	m.generation = 10;
	m.reason = MDR_INVAL_MOVE;
	return m;
}

w::InvalidateAck inval_ack()
{
	w::InvalidateAck m;

	static_cast<w::InvalRange &>(m) = inval();
	return m;
}

// Version 2's ack of a MOVE, with dirty granules.
w::InvalidateAck inval_ack_tracked()
{
	w::InvalidateAck m = inval_ack();

	m.count = 1;
	m.extended = true;
	m.flags = MDR_INVAL_ACK_F_TRACKED;
	m.dirty = 0x8000000000000021;
	return m;
}

w::Invalidate inval_track()
{
	w::Invalidate m = inval();

	m.count = 1;
	m.reason = MDR_INVAL_TRACK;
	return m;
}

w::OpenRep open_rep()
{
	w::OpenRep m;

	m.volume_id = kVol;
	m.size = uint64_t{1} << 30;
	m.table_addr = 0x7f0000001000;
	m.table_len = 256 * sizeof(mdr_wire_entry);
	m.table_rkey = 0x1234;
	m.extent_shift = 22;
	m.lease_ms = 5000;
	m.generation = 3;
	m.name = "db-01";
	return m;
}

w::AllocRep alloc_rep()
{
	w::AllocRep m;

	m.volume_id = kVol;
	m.index = kIndex;
	m.entry = {9, 0x80000, 3, MDR_EXT_MAPPED};
	return m;
}

template <typename T>
T vol_rep(std::vector<w::DevExtents> devs)
{
	T m;

	m.vol = volume(kVol, "vol.A_1-x");
	m.devs = std::move(devs);
	return m;
}

w::DevListRep dev_list_rep()
{
	w::DevListRep m;

	m.next = 0;
	m.devs = {{3, uint64_t{1} << 40, uint64_t{1} << 30, "S3EVNX0K123456 W"},
		  {5, uint64_t{1} << 39, 0, ""}};
	return m;
}

w::VolListRep vol_list_rep()
{
	w::VolListRep m;

	m.next = 99;
	m.vols = {volume(3, "a"), volume(7, "b.c"),
		  volume(98, std::string(63, 'z').c_str())};
	return m;
}

w::NodeStatsRep node_stats_rep()
{
	w::NodeStatsRep m;

	m.boot_id = 1;
	m.uptime_ms = 2;
	m.connections = 3;
	m.volumes = 4;
	m.requests = 5;
	m.errors = 6;
	m.bad_messages = 7;
	m.journal_records = 8;
	m.journal_bytes = 9;
	m.journal_syncs = 10;
	m.invalidations = 11;
	m.lease_expiries = 12;
	m.moves_active = 13;
	m.moves_done = 14;
	m.moves_failed = 15;
	m.move_bytes = 16;
	m.stall_max_us = 17;
	m.stall_total_us = 18;
	m.push_timeouts = 19;
	m.precopy_bytes = 20;
	m.freeze_bytes = 21;
	m.auth_failures = 22;
	m.hosts = 23;
	m.conn_refused = 24;
	m.fences = 25;
	return m;
}

w::MoveRep move_rep()
{
	w::MoveRep m;

	m.volume_id = kVol;
	m.bytes = 8 << 20;
	m.stall_max_us = 30000;
	m.stall_total_us = 50000;
	m.extents = {{.index = 4, .old_pstart = 2048, .new_pstart = 8192, .old_dev = 1,
		      .new_dev = 2, .generation = 4, .stall_us = 20000},
		     {.index = 5, .old_pstart = 16384, .new_pstart = 0x1000000,
		      .old_dev = 3, .new_dev = 2, .generation = 9, .stall_us = 30000}};
	return m;
}

w::DrainRep drain_rep()
{
	w::DrainRep m;

	m.dev_id = 1;
	m.status = MDR_ST_NOSPC;
	m.moved = 10;
	m.remaining = 2;
	m.bytes = 40 << 20;
	m.stall_max_us = 7;
	m.stall_total_us = 70;
	return m;
}

w::HostListRep host_list_rep()
{
	w::HostListRep m;
	m.next = 0x200;
	m.hosts = {{.host_id = 0x93, .tenant = 1, .connections = 2, .leases = 3},
		   {.host_id = 0x100, .tenant = 7, .connections = 0, .leases = 0}};
	return m;
}

std::vector<w::Body> samples()
{
	w::AuthReq auth;
	for (size_t i = 0; i < auth.mac.size(); i++)
		auth.mac[i] = static_cast<uint8_t>(i * 7);
	w::HostAuthReq host_auth;
	w::HostAuthRep host_auth_rep;
	for (size_t i = 0; i < 16; i++)
		host_auth.nonce[i] = static_cast<uint8_t>(0x10 + i);
	for (size_t i = 0; i < 32; i++) {
		host_auth.mac[i] = static_cast<uint8_t>(i * 3);
		host_auth_rep.mac[i] = static_cast<uint8_t>(0xff - i);
	}
	w::HostAddReq host_add{.host_id = 0x93, .tenant = 1, .flags = MDR_HOST_ADD_F_REPLACE,
			       .key_len = 32};
	for (size_t i = 0; i < host_add.wrapped.size(); i++)
		host_add.wrapped[i] = static_cast<uint8_t>(i * 5 + 1);

	return {
		w::OpenReq{.volume_id = kVol},
		w::OpenReq{.flags = MDR_OPEN_F_BY_NAME, .name = "db-01"},
		open_rep(),
		w::CloseReq{.volume_id = kVol},
		w::CloseRep{},
		w::RenewReq{.volume_id = 0},
		w::RenewRep{.lease_ms = 3000},
		w::AllocReq{.volume_id = kVol, .index = kIndex},
		alloc_rep(),
		inval(),
		inval_ack(),
		inval_track(),
		inval_ack_tracked(),
		w::InvalidateAck{{.volume_id = kVol, .first = 3, .count = 1, .generation = 4,
				  .reason = MDR_INVAL_TRACK}, true},
		auth,
		w::AuthRep{},
		w::VolCreateReq{.size = uint64_t{1} << 30, .extent_shift = 0,
				.tenant = 7, .name = "vol.A_1-x"},
		vol_rep<w::VolCreateRep>({{3, 60}, {5, 40}}),
		w::VolDeleteReq{.name = "vol.A_1-x"},
		w::VolDeleteRep{},
		w::VolListReq{.cursor = 0},
		vol_list_rep(),
		w::VolInfoReq{.name = "vol.A_1-x"},
		vol_rep<w::VolInfoRep>({}),
		w::VolResizeReq{.size = uint64_t{2} << 30, .name = "vol.A_1-x"},
		vol_rep<w::VolResizeRep>({{3, 100}}),
		w::DevListReq{.cursor = 5},
		dev_list_rep(),
		w::NodeStatsReq{},
		node_stats_rep(),
		w::PingReq{},
		w::PingRep{},
		w::MoveReq{.volume_id = kVol, .first = 3, .count = 2, .to_dev = 2},
		w::MoveReq{.first = 0, .count = MDR_WIRE_MOVE_MAX, .to_dev = 9,
			   .flags = MDR_MOVE_F_BY_NAME, .name = "db-01"},
		move_rep(),
		w::DrainReq{.dev_id = 1, .to_dev = 0},
		w::DrainReq{.dev_id = 1, .to_dev = 2},
		drain_rep(),
		host_auth,
		host_auth_rep,
		host_add,
		w::HostAddReq{.host_id = 1, .tenant = UINT32_MAX, .key_len = MDR_HOST_KEY_MAX},
		w::HostAddRep{},
		w::HostRemoveReq{.host_id = 0x93},
		w::HostRemoveRep{},
		w::HostListReq{.cursor = 0x93},
		host_list_rep(),
		w::HostListRep{},
		w::ErrorRep{.opcode = MDR_OP_HOST_AUTH, .status = MDR_ST_PERM},
		w::ErrorRep{.opcode = MDR_OP_OPEN, .status = MDR_ST_NOSPC},
		w::ErrorRep{.opcode = MDR_OP_MOVE, .status = MDR_ST_BUSY},
		w::ErrorRep{.opcode = MDR_OP_VOL_CREATE, .status = MDR_ST_EXIST},
		w::ErrorRep{.opcode = MDR_OP_INVALIDATE, .status = MDR_ST_NOENT},
	};
}

// A message parse() accepted encodes back to the same bytes: nothing the
// receiver does not see survives a successful parse (NODE_STATS replies
// of later versions excepted: their extra counters are dropped).
void check_canonical(std::span<const std::byte> received, const w::Msg &m)
{
	static Buf again(MDR_WIRE_MSG_MAX);
	auto n = w::encode(again, m.hdr.req_id, m.body);

	if (!n.ok())
		fail_msg("re-encode of a parsed %s: %s",
			 w::opcode_name(m.hdr.opcode).c_str(), n.message().c_str());
	if (std::holds_alternative<w::NodeStatsRep>(m.body)) {
		// Version 1's counters, then the migration ones, the push ones,
		// the copy ones, the authentication ones and the limits ones
		// when the received length covered them (else they are zero).
		const size_t v1 = sizeof(mdr_wire_node_stats_rep);
		const size_t mig = v1 + sizeof(mdr_wire_node_stats_mig);
		const size_t push = mig + sizeof(mdr_wire_node_stats_push);
		const size_t copy = push + sizeof(mdr_wire_node_stats_copy);
		const size_t auth = copy + sizeof(mdr_wire_node_stats_auth);
		const size_t full = auth + sizeof(mdr_wire_node_stats_limits);
		const size_t same = m.hdr.length >= full   ? full
				    : m.hdr.length >= auth ? auth
				    : m.hdr.length >= copy ? copy
				    : m.hdr.length >= push ? push
				    : m.hdr.length >= mig  ? mig
							   : v1;

		assert_int_equal(n.value(), full);
		assert_memory_equal(again.data(), received.data(), kLen);
		assert_memory_equal(again.data() + kLen + 4,
				    received.data() + kLen + 4, same - kLen - 4);
		for (size_t i = same; i < full; i++)
			assert_int_equal(std::to_integer<int>(again[i]), 0);
		return;
	}
	assert_int_equal(n.value(), m.hdr.length);
	assert_memory_equal(again.data(), received.data(), n.value());
}

// ---- Round trips ----------------------------------------------------------

void test_round_trip_every_message(void **)
{
	std::set<size_t> kinds;

	for (const w::Body &body : samples()) {
		const Buf b = encode(body);

		assert_int_equal(b.size(), w::encoded_size(body));
		auto m = parse_as(b, body);
		if (!m.ok())
			fail_msg("%s: %s", w::opcode_name(opcode_of(body)).c_str(),
				 m.message().c_str());
		const w::Msg &msg = m.value();
		assert_int_equal(msg.hdr.opcode, opcode_of(body));
		assert_int_equal(msg.hdr.reply(), reply_of(body));
		assert_int_equal(msg.hdr.req_id, kReqId);
		assert_int_equal(msg.hdr.length, b.size());
		assert_true(msg.body == body);
		if (const auto *e = std::get_if<w::ErrorRep>(&body))
			assert_int_equal(msg.hdr.status, e->status);
		else
			assert_int_equal(msg.hdr.status, MDR_ST_OK);
		check_canonical(b, msg);
		kinds.insert(body.index());
	}
	assert_int_equal(kinds.size(), std::variant_size_v<w::Body>);
}

void test_header_bytes(void **)
{
	const Buf b = encode(w::CloseReq{.volume_id = 0x0102030405060708},
			     0xa1a2a3a4a5a6a7a8);
	const unsigned char want[] = {
		0x6d, 0x4d, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,	// mM, CLOSE
		0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	// length 32
		0xa8, 0xa7, 0xa6, 0xa5, 0xa4, 0xa3, 0xa2, 0xa1,	// req_id
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,	// volume_id
	};

	assert_int_equal(b.size(), sizeof(want));
	assert_memory_equal(b.data(), want, sizeof(want));

	__le32 field;
	w::store(field, 0x01020304);
	assert_memory_equal(&field, "\x04\x03\x02\x01", 4);
	assert_int_equal(w::load(field), 0x01020304);
}

void test_ping_both_ways(void **)
{
	for (const w::Body &body : {w::Body{w::PingReq{}}, w::Body{w::PingRep{}}})
		for (Side side : {Side::node, Side::client})
			for (mdr_wire_role role : {MDR_ROLE_HOST, MDR_ROLE_ADMIN})
				assert_true(w::parse(encode(body), side, role).ok());
}

void test_trailing_bytes_ignored(void **)
{
	for (const w::Body &body : samples()) {
		Buf b = encode(body);
		const size_t len = b.size();

		b.resize(len + 17, std::byte{0xa5});
		auto m = parse_as(b, body);
		assert_true(m.ok());
		assert_true(m.value().body == body);
		assert_int_equal(m.value().hdr.length, len);
	}
}

void test_largest_lists_fit(void **)
{
	w::VolListRep vols;
	for (uint64_t i = 0; i < (MDR_WIRE_MSG_MAX - 40) / 104; i++)
		vols.vols.push_back(volume(i + 1, "v"));
	w::DevListRep devs;
	for (uint32_t i = 0; i < (MDR_WIRE_MSG_MAX - 40) / 64; i++)
		devs.devs.push_back({i + 1, 4096, 0, "sn"});
	w::VolInfoRep info = vol_rep<w::VolInfoRep>({});
	for (uint32_t i = 0; i < (MDR_WIRE_MSG_MAX - 136) / 16; i++)
		info.devs.push_back({i + 1, 1});

	for (const w::Body &body : {w::Body{vols}, w::Body{devs}, w::Body{info}}) {
		const Buf b = encode(body);
		assert_true(b.size() <= MDR_WIRE_MSG_MAX);
		auto m = parse_as(b, body);
		assert_true(m.ok());
		assert_true(m.value().body == body);
	}

	// One more does not fit any message.
	vols.vols.push_back(volume(100000, "v"));
	Buf out(MDR_WIRE_MSG_MAX + 4096);
	auto n = w::encode(out, 1, vols);
	assert_false(n.ok());
	assert_int_equal(n.error(), -EMSGSIZE);
	assert_true(contains(n.message(), "MDR_WIRE_MSG_MAX"));
}

// ---- Rejections -----------------------------------------------------------

using Mutation = std::function<void(Buf &)>;

struct Row {
	const char *what;
	w::Body base;
	Mutation mutate;
	int err;			// the -errno parse() returns
	const char *part;		// of its message
	std::optional<Side> receiver{};	// default: the base's
	std::optional<mdr_wire_role> role{};
};

Mutation set16(size_t off, uint16_t v) { return [=](Buf &b) { put16(b, off, v); }; }
Mutation set32(size_t off, uint32_t v) { return [=](Buf &b) { put32(b, off, v); }; }
Mutation set64(size_t off, uint64_t v) { return [=](Buf &b) { put64(b, off, v); }; }
Mutation set8(size_t off, uint8_t v) { return [=](Buf &b) { put8(b, off, v); }; }
Mutation flip8(size_t off) { return [=](Buf &b) { b.at(off) ^= std::byte{0x01}; }; }

Mutation set_str(size_t off, size_t len, std::string bytes)
{
	return [=](Buf &b) { put_bytes(b, off, len, bytes); };
}

Mutation set_name(size_t off, std::string bytes)
{
	return set_str(off, MDR_WIRE_NAME_LEN, std::move(bytes));
}

// Changes the message's length, and says so in the header.
Mutation resize_to(size_t len)
{
	return [=](Buf &b) {
		b.resize(len);
		put32(b, kLen, static_cast<uint32_t>(len));
	};
}

Mutation grow(size_t n)
{
	return [=](Buf &b) {
		b.resize(b.size() + n);
		put32(b, kLen, static_cast<uint32_t>(b.size()));
	};
}

// Edits alloc_rep's entry; then seals it again (to reach the rules after
// the crc) or not.
Mutation edit_entry(std::function<void(mdr_wire_entry &)> edit, bool reseal)
{
	return [=](Buf &b) {
		const size_t off = offsetof(mdr_wire_alloc_rep, entry);
		mdr_wire_entry e;

		std::memcpy(&e, &b[off], sizeof(e));
		edit(e);
		if (reseal)
			w::seal_entry(e, kVol, kIndex);
		std::memcpy(&b[off], &e, sizeof(e));
	};
}

// A volume of a vol_rep / the i-th of a vol_list_rep, and the i-th device.
constexpr size_t kRepVol = offsetof(mdr_wire_vol_rep, vol);
size_t list_vol(size_t i) { return sizeof(mdr_wire_vol_list_rep) + i * sizeof(mdr_wire_volume); }
size_t list_dev(size_t i) { return sizeof(mdr_wire_dev_list_rep) + i * sizeof(mdr_wire_device); }
size_t rep_dev(size_t i) { return sizeof(mdr_wire_vol_rep) + i * 16; }
#define VOFF(field) offsetof(mdr_wire_volume, field)
#define DOFF(field) offsetof(mdr_wire_device, field)

std::vector<Row> reject_rows()
{
	const w::Body open_id = w::OpenReq{.volume_id = kVol};
	const w::Body open_name = w::OpenReq{.flags = MDR_OPEN_F_BY_NAME, .name = "db-01"};
	const w::Body orep = open_rep();
	const w::Body close = w::CloseReq{.volume_id = kVol};
	const w::Body renew_rep = w::RenewRep{.lease_ms = 3000};
	const w::Body alloc = w::AllocReq{.volume_id = kVol, .index = kIndex};
	const w::Body arep = alloc_rep();
	const w::Body inv = inval();
	const w::Body ack = inval_ack();
	const w::Body ack2 = inval_ack_tracked();
	const w::Body track = inval_track();
	const w::Body create = w::VolCreateReq{.size = uint64_t{1} << 30,
					       .tenant = 7, .name = "vol"};
	const w::Body del = w::VolDeleteReq{.name = "vol"};
	const w::Body info = w::VolInfoReq{.name = "vol"};
	const w::Body resize = w::VolResizeReq{.size = 8192, .name = "vol"};
	const w::Body vrep = vol_rep<w::VolInfoRep>({{3, 60}, {5, 40}});
	const w::Body vlist = vol_list_rep();
	const w::Body dlist = dev_list_rep();
	const w::Body stats = node_stats_rep();
	const w::Body ping = w::PingReq{};
	const w::Body move = w::MoveReq{.volume_id = kVol, .first = 3, .count = 2,
					.to_dev = 2};
	const w::Body move_name = w::MoveReq{.count = 1, .to_dev = 2,
					     .flags = MDR_MOVE_F_BY_NAME, .name = "db"};
	const w::Body mrep = move_rep();
	const w::Body drain = w::DrainReq{.dev_id = 1, .to_dev = 2};
	const w::Body drep = drain_rep();
	constexpr size_t kMoveName = offsetof(mdr_wire_move_req, name);
	const auto mx = [](size_t i, size_t field) {
		return sizeof(mdr_wire_move_rep) + i * sizeof(mdr_wire_move_extent) + field;
	};
#define MOFF(field) offsetof(mdr_wire_move_req, field)
#define MXOFF(field) offsetof(mdr_wire_move_extent, field)
#define MROFF(field) offsetof(mdr_wire_move_rep, field)
#define DROFF(field) offsetof(mdr_wire_drain_rep, field)

	constexpr size_t kOpenName = offsetof(mdr_wire_open_req, name);
	constexpr size_t kRepName = offsetof(mdr_wire_open_rep, name);
	constexpr size_t kCreateName = offsetof(mdr_wire_vol_create_req, name);
	constexpr size_t kVnName = offsetof(mdr_wire_vol_name_req, name);
	constexpr size_t kEntry = offsetof(mdr_wire_alloc_rep, entry);
	const size_t kSerial = list_dev(0) + DOFF(serial);

	return {
		// Framing and header, in the order parse() checks them.
		{"short header", ping, resize_to(23), -EPROTO, "shorter than a header"},
		{"magic", open_id, set16(0, 0x6d4d), -EPROTO, "hdr: bad magic 0x6d4d"},
		{"magic zero", open_id, set16(0, 0), -EPROTO, "bad magic"},
		{"length > received", open_id, set32(kLen, 105), -EPROTO,
		 "hdr: length 105 exceeds the 104 bytes received"},
		{"length < header", open_id, set32(kLen, 23), -EPROTO,
		 "length 23 shorter than a header"},
		{"length zero", open_id, set32(kLen, 0), -EPROTO, "shorter than a header"},
		{"opcode unknown", open_id, set16(2, 0x06), -EPROTO, "hdr: unknown opcode 0x6"},
		{"opcode zero", open_id, set16(2, 0), -EPROTO, "unknown opcode 0x0"},
		{"opcode high byte", open_id, set16(2, 0x0101), -EPROTO, "unknown opcode"},
		{"flags unknown", open_id, set16(4, 0x0002), -EPROTO,
		 "open_req: unknown header flags 0x2"},
		{"flags high", orep, set16(4, 0x8001), -EPROTO, "open_rep: unknown header flags"},
		{"status in request", open_id, set16(6, MDR_ST_INVAL), -EPROTO,
		 "open_req: status 1 in a request"},
		{"status in push", inv, set16(6, MDR_ST_OK + 2), -EPROTO, "inval: status 2 in a push"},
		{"status out of range", orep, set16(6, MDR_ST_MAX), -EPROTO,
		 "open_rep: status 13 out of range"},
		{"status huge", ping, set16(6, 0xffff), -EPROTO, "out of range"},
		{"header reserved", open_id, set32(12, 1), -EPROTO,
		 "open_req: header reserved not zero"},
		{"header reserved high", orep, set32(12, 0x80000000), -EPROTO, "header reserved"},

		// Direction and connection role.
		{"reply to mdnode", orep, nullptr, -EPROTO, "open_rep: meant for a client",
		 Side::node},
		{"request to client", open_id, nullptr, -EPROTO, "open_req: meant for mdnode",
		 Side::client},
		{"push to mdnode", inv, nullptr, -EPROTO, "inval: meant for a client", Side::node},
		{"ack to client", ack, nullptr, -EPROTO, "inval_ack: meant for mdnode",
		 Side::client},
		{"admin op on host conn", create, nullptr, -EPERM,
		 "vol_create_req: not allowed on host connections", Side::node, MDR_ROLE_HOST},
		{"host op on admin conn", open_id, nullptr, -EPERM,
		 "open_req: not allowed on admin connections", Side::node, MDR_ROLE_ADMIN},
		{"push on admin conn", inv, nullptr, -EPROTO, "inval: not allowed on admin",
		 Side::client, MDR_ROLE_ADMIN},
		{"admin reply on host conn", vrep, nullptr, -EPROTO,
		 "vol_info_rep: not allowed on host", Side::client, MDR_ROLE_HOST},

		// Size for the opcode and direction.
		{"fixed too short", open_id, resize_to(96), -EPROTO,
		 "open_req: length 96, expected 104"},
		{"fixed too long", open_id, grow(8), -EPROTO, "open_req: length 112, expected 104"},
		{"header-only too long", ping, grow(8), -EPROTO, "ping_req: length 32, expected 24"},
		{"close_rep with a body", w::CloseRep{}, grow(8), -EPROTO, "close_rep: length 32"},
		{"node_stats_req with a body", w::NodeStatsReq{}, grow(8), -EPROTO,
		 "node_stats_req: length 32, expected 24"},
		{"error reply with a body", orep, set16(6, MDR_ST_NOSPC), -EPROTO,
		 "open_rep: error reply of 144 bytes, expected 24"},
		{"vol_rep too short", vrep, resize_to(128), -EPROTO,
		 "vol_info_rep: length 128, expected at least 136"},
		{"vol_rep partial element", vrep, grow(8), -EPROTO,
		 "vol_info_rep: length 176 not 136 + a multiple of 16"},
		{"vol_rep nr_devs", vrep, set32(offsetof(mdr_wire_vol_rep, nr_devs), 3), -EPROTO,
		 "vol_info_rep: nr_devs 3 disagrees with the length (2 entries)"},
		{"vol_rep nr_devs huge", vrep,
		 set32(offsetof(mdr_wire_vol_rep, nr_devs), 0xffffffff), -EPROTO, "disagrees"},
		{"vol_list_rep partial", vlist, grow(100), -EPROTO, "not 40 + a multiple of 104"},
		{"vol_list_rep count", vlist, set32(offsetof(mdr_wire_vol_list_rep, count), 2),
		 -EPROTO, "vol_list_rep: count 2 disagrees with the length (3 volumes)"},
		{"vol_list_rep short", vlist, resize_to(32), -EPROTO, "expected at least 40"},
		{"dev_list_rep partial", dlist, grow(8), -EPROTO, "not 40 + a multiple of 64"},
		{"dev_list_rep count", dlist, set32(offsetof(mdr_wire_dev_list_rep, count), 0),
		 -EPROTO, "dev_list_rep: count 0 disagrees"},
		{"node_stats_rep short", stats, resize_to(112), -EPROTO,
		 "node_stats_rep: length 112, expected at least 120"},
		{"node_stats_rep partial counter", stats, grow(4), -EPROTO,
		 "not 120 + a multiple of 8"},

		// move_req, move_rep, drain_req, drain_rep
		{"move admin only", move, nullptr, -EPERM,
		 "move_req: not allowed on host connections", Side::node, MDR_ROLE_HOST},
		{"drain admin only", drain, nullptr, -EPERM,
		 "drain_req: not allowed on host connections", Side::node, MDR_ROLE_HOST},
		{"move_req short", move, resize_to(112), -EPROTO,
		 "move_req: length 112, expected 120"},
		{"move flags", move, set32(MOFF(flags), 2), -EINVAL,
		 "move_req: unknown flags 0x2"},
		{"move reserved", move, set32(MOFF(reserved), 1), -EINVAL,
		 "move_req: reserved not zero"},
		{"move by name with id", move_name, set64(MOFF(volume_id), 5), -EINVAL,
		 "move_req: volume_id set with MDR_MOVE_F_BY_NAME"},
		{"move by name bad name", move_name, set_name(kMoveName, "a/b"), -EINVAL,
		 "move_req: name has a character outside"},
		{"move by id with name", move, set_name(kMoveName, "x"), -EINVAL,
		 "move_req: name set without MDR_MOVE_F_BY_NAME"},
		{"move by id zero", move, set64(MOFF(volume_id), 0), -EINVAL,
		 "move_req: volume_id zero"},
		{"move count zero", move, set32(MOFF(count), 0), -EINVAL,
		 "move_req: count 0 outside [1, 64]"},
		{"move count too many", move, set32(MOFF(count), MDR_WIRE_MOVE_MAX + 1), -EINVAL,
		 "move_req: count 65 outside"},
		{"move range overflows", move, set64(MOFF(first), UINT64_MAX), -EINVAL,
		 "move_req: first 18446744073709551615 + count 2 overflows"},
		{"move to_dev zero", move, set32(MOFF(to_dev), 0), -EINVAL,
		 "move_req: to_dev zero"},
		{"move_rep short", mrep, resize_to(56), -EPROTO,
		 "move_rep: length 56, expected at least 64"},
		{"move_rep partial element", mrep, grow(8), -EPROTO,
		 "not 64 + a multiple of 48"},
		{"move_rep count", mrep, set32(MROFF(count), 3), -EPROTO,
		 "move_rep: count 3 disagrees with the length (2 extents)"},
		{"move_rep no element", mrep, [](Buf &b) {
			b.resize(sizeof(mdr_wire_move_rep));
			put32(b, kLen, sizeof(mdr_wire_move_rep));
			put32(b, MROFF(count), 0);
		 }, -EINVAL, "move_rep: count 0 outside"},
		{"move_rep reserved", mrep, set32(MROFF(reserved), 1), -EINVAL,
		 "move_rep: reserved not zero"},
		{"move_rep volume zero", mrep, set64(MROFF(volume_id), 0), -EINVAL,
		 "move_rep: volume_id zero"},
		{"move_rep stalls", mrep, set64(MROFF(stall_total_us), 29999), -EINVAL,
		 "move_rep: stall_total_us 29999 below stall_max_us 30000"},
		{"move_rep element reserved", mrep, set32(mx(1, MXOFF(reserved)), 1), -EINVAL,
		 "move_rep: extents[1]: reserved not zero"},
		{"move_rep old dev zero", mrep, set32(mx(0, MXOFF(old_dev)), 0), -EINVAL,
		 "move_rep: extents[0]: dev_id zero"},
		{"move_rep new dev zero", mrep, set32(mx(0, MXOFF(new_dev)), 0), -EINVAL,
		 "dev_id zero"},
		{"move_rep same dev", mrep, set32(mx(1, MXOFF(new_dev)), 3), -EINVAL,
		 "move_rep: extents[1]: moved to its own device 3"},
		{"move_rep generation", mrep, set64(mx(0, MXOFF(generation)), 3), -EINVAL,
		 "move_rep: extents[0]: generation 3 too low for a moved extent"},
		{"move_rep element stall", mrep, set32(mx(0, MXOFF(stall_us)), 30001), -EINVAL,
		 "move_rep: extents[0]: stall_us 30001 above stall_max_us"},
		{"move_rep order", mrep, set64(mx(1, MXOFF(index)), 4), -EINVAL,
		 "move_rep: extents[1]: index 4 not in ascending order"},
		{"drain_req dev zero", drain, set32(offsetof(mdr_wire_drain_req, dev_id), 0),
		 -EINVAL, "drain_req: dev_id zero"},
		{"drain_req to itself", drain, set32(offsetof(mdr_wire_drain_req, to_dev), 1),
		 -EINVAL, "drain_req: to_dev is the device drained"},
		{"drain_req long", drain, grow(8), -EPROTO, "drain_req: length 40, expected 32"},
		{"drain_rep dev zero", drep, set32(DROFF(dev_id), 0), -EINVAL,
		 "drain_rep: dev_id zero"},
		{"drain_rep status", drep, set32(DROFF(status), MDR_ST_MAX), -EINVAL,
		 "drain_rep: status 13 out of range"},
		{"drain_rep stalls", drep, set64(DROFF(stall_max_us), 71), -EINVAL,
		 "drain_rep: stall_total_us 70 below stall_max_us 71"},

		// open_req
		{"open flags", open_id, set32(offsetof(mdr_wire_open_req, flags), 2), -EINVAL,
		 "open_req: unknown flags 0x2"},
		{"open reserved", open_id, set32(offsetof(mdr_wire_open_req, reserved), 1),
		 -EINVAL, "open_req: reserved not zero"},
		{"open name unterminated", open_name, set_name(kOpenName, std::string(64, 'a')),
		 -EINVAL, "open_req: name not NUL-terminated"},
		{"open name empty", open_name, set_name(kOpenName, ""), -EINVAL,
		 "open_req: name empty"},
		{"open name slash", open_name, set_name(kOpenName, "a/b"), -EINVAL,
		 "open_req: name has a character outside [A-Za-z0-9._-]"},
		{"open name space", open_name, set_name(kOpenName, "a b"), -EINVAL, "outside"},
		{"open name high bit", open_name, set_name(kOpenName, "caf\xc3\xa9"), -EINVAL,
		 "outside"},
		{"open name control", open_name, set_name(kOpenName, "a\nb"), -EINVAL, "outside"},
		{"open name padding", open_name, set_name(kOpenName, std::string("db\0x", 4)),
		 -EINVAL, "open_req: name not NUL-padded"},
		{"open name last byte", open_name, set8(kOpenName + 63, 'x'), -EINVAL,
		 "name not NUL-padded"},
		{"open by name with id", open_name, set64(offsetof(mdr_wire_open_req, volume_id), 1),
		 -EINVAL, "open_req: volume_id set with MDR_OPEN_F_BY_NAME"},
		{"open by id with name", open_id, set_name(kOpenName, "x"), -EINVAL,
		 "open_req: name set without MDR_OPEN_F_BY_NAME"},
		{"open by id zero", open_id, set64(offsetof(mdr_wire_open_req, volume_id), 0),
		 -EINVAL, "open_req: volume_id zero"},

		// open_rep
		{"open_rep flags", orep, set32(offsetof(mdr_wire_open_rep, flags), 1), -EINVAL,
		 "open_rep: flags not zero"},
		{"open_rep name", orep, set_name(kRepName, "bad name"), -EINVAL,
		 "open_rep: name has a character outside"},
		{"open_rep name unterminated", orep, set_name(kRepName, std::string(64, 'n')),
		 -EINVAL, "open_rep: name not NUL-terminated"},
		{"open_rep volume zero", orep, set64(offsetof(mdr_wire_open_rep, volume_id), 0),
		 -EINVAL, "open_rep: volume_id zero"},
		{"open_rep size zero", orep, set64(offsetof(mdr_wire_open_rep, size), 0), -EINVAL,
		 "open_rep: size zero"},
		{"open_rep size unaligned", orep,
		 set64(offsetof(mdr_wire_open_rep, size), (uint64_t{1} << 30) + 512), -EINVAL,
		 "open_rep: size 1073742336 not a multiple of 4096"},
		{"open_rep shift low", orep, set32(offsetof(mdr_wire_open_rep, extent_shift), 15),
		 -EINVAL, "open_rep: extent_shift 15 outside [16, 30]"},
		{"open_rep shift high", orep, set32(offsetof(mdr_wire_open_rep, extent_shift), 31),
		 -EINVAL, "extent_shift 31 outside"},
		{"open_rep shift zero", orep, set32(offsetof(mdr_wire_open_rep, extent_shift), 0),
		 -EINVAL, "extent_shift 0 outside"},
		{"open_rep table_len short", orep,
		 set64(offsetof(mdr_wire_open_rep, table_len), 255 * 32), -EINVAL,
		 "open_rep: table_len 8160 does not cover the size (8192 expected)"},
		{"open_rep table_len long", orep,
		 set64(offsetof(mdr_wire_open_rep, table_len), 257 * 32), -EINVAL, "table_len"},
		{"open_rep table wraps", orep,
		 set64(offsetof(mdr_wire_open_rep, table_addr), UINT64_MAX - 4096), -EINVAL,
		 "open_rep: table wraps the address space"},
		{"open_rep lease zero", orep, set32(offsetof(mdr_wire_open_rep, lease_ms), 0),
		 -EINVAL, "open_rep: lease_ms zero"},

		// close, renew, alloc
		{"close volume zero", close, set64(offsetof(mdr_wire_vol_req, volume_id), 0),
		 -EINVAL, "close_req: volume_id zero"},
		{"renew_rep reserved", renew_rep, set32(offsetof(mdr_wire_renew_rep, reserved), 1),
		 -EINVAL, "renew_rep: reserved not zero"},
		{"renew_rep lease zero", renew_rep, set32(offsetof(mdr_wire_renew_rep, lease_ms), 0),
		 -EINVAL, "renew_rep: lease_ms zero"},
		{"alloc volume zero", alloc, set64(offsetof(mdr_wire_alloc_req, volume_id), 0),
		 -EINVAL, "alloc_req: volume_id zero"},
		{"alloc_rep volume zero", arep, set64(offsetof(mdr_wire_alloc_rep, volume_id), 0),
		 -EINVAL, "alloc_rep: volume_id zero"},
		{"alloc_rep entry crc", arep, flip8(kEntry + 28), -EINVAL,
		 "alloc_rep: entry: bad crc"},
		{"alloc_rep entry of another index", arep,
		 set64(offsetof(mdr_wire_alloc_rep, index), kIndex + 1), -EINVAL, "entry: bad crc"},
		{"alloc_rep entry of another volume", arep,
		 set64(offsetof(mdr_wire_alloc_rep, volume_id), kVol + 1), -EINVAL,
		 "entry: bad crc"},
		{"alloc_rep entry reserved", arep,
		 edit_entry([](mdr_wire_entry &e) { e.reserved[1] = 1; }, true), -EINVAL,
		 "alloc_rep: entry: reserved not zero"},
		{"alloc_rep entry reserved2", arep,
		 edit_entry([](mdr_wire_entry &e) { w::store(e.reserved2, 1); }, true), -EINVAL,
		 "entry: reserved not zero"},
		{"alloc_rep entry state", arep,
		 edit_entry([](mdr_wire_entry &e) { e.state = MDR_EXT_STATE_MAX; }, true), -EINVAL,
		 "alloc_rep: entry: state out of range"},
		{"alloc_rep entry generation", arep,
		 edit_entry([](mdr_wire_entry &e) { w::store(e.generation, 0); }, true), -EINVAL,
		 "alloc_rep: entry: generation zero"},
		{"alloc_rep entry no device", arep,
		 edit_entry([](mdr_wire_entry &e) { w::store(e.dev_id, 0); }, true), -EINVAL,
		 "alloc_rep: entry: placed without a device"},
		{"alloc_rep entry unallocated placed", arep,
		 edit_entry([](mdr_wire_entry &e) { e.state = MDR_EXT_UNALLOCATED; }, true),
		 -EINVAL, "alloc_rep: entry: unallocated with a device or pstart"},
		{"alloc_rep entry unallocated", arep,
		 edit_entry([](mdr_wire_entry &e) {
			 e.state = MDR_EXT_UNALLOCATED;
			 w::store(e.dev_id, 0);
			 w::store(e.pstart, 0);
		 }, true), -EINVAL, "alloc_rep: entry not mapped"},
		{"alloc_rep entry frozen", arep,
		 edit_entry([](mdr_wire_entry &e) { e.state = MDR_EXT_FROZEN; }, true), -EINVAL,
		 "entry not mapped"},

		// invalidations, both ways
		{"inval reserved", inv, set32(offsetof(mdr_wire_inval, reserved), 1), -EINVAL,
		 "inval: reserved not zero"},
		{"inval volume zero", inv, set64(offsetof(mdr_wire_inval, volume_id), 0), -EINVAL,
		 "inval: volume_id zero"},
		{"inval count zero", inv, set64(offsetof(mdr_wire_inval, count), 0), -EINVAL,
		 "inval: count zero"},
		{"inval overflow", inv, set64(offsetof(mdr_wire_inval, count), UINT64_MAX - 15),
		 -EINVAL, "inval: first 16 + count 18446744073709551600 overflows"},
		{"inval overflow by one", inv, set64(offsetof(mdr_wire_inval, first), UINT64_MAX - 3),
		 -EINVAL, "overflows"},
		{"inval generation zero", inv, set64(offsetof(mdr_wire_inval, generation), 0),
		 -EINVAL, "inval: generation zero"},
		{"inval reason zero", inv, set32(offsetof(mdr_wire_inval, reason), 0), -EINVAL,
		 "inval: unknown reason 0"},
		{"inval reason high", inv, set32(offsetof(mdr_wire_inval, reason), 5), -EINVAL,
		 "inval: unknown reason 5"},
		{"track count 2", track, set64(offsetof(mdr_wire_inval, count), 2), -EINVAL,
		 "inval: count 2 with MDR_INVAL_TRACK"},
		{"ack length 72", ack, resize_to(72), -EPROTO,
		 "inval_ack: length 72, expected 64"},
		{"ack length 88", ack2, grow(8), -EPROTO, "inval_ack: length 88, expected 64"},
		{"ack flags unknown", ack2, set32(offsetof(mdr_wire_inval_ack, flags), 3),
		 -EINVAL, "inval_ack: unknown flags 0x3"},
		{"ack flags high", ack2, set32(offsetof(mdr_wire_inval_ack, flags), 0x80000001),
		 -EINVAL, "unknown flags"},
		{"ack2 reserved", ack2, set32(offsetof(mdr_wire_inval_ack, reserved), 1),
		 -EINVAL, "inval_ack: reserved not zero"},
		{"ack dirty untracked", ack2, set32(offsetof(mdr_wire_inval_ack, flags), 0),
		 -EINVAL, "inval_ack: dirty without MDR_INVAL_ACK_F_TRACKED"},
		{"ack dirty of track", ack2, set32(offsetof(mdr_wire_inval, reason),
						   MDR_INVAL_TRACK),
		 -EINVAL, "inval_ack: dirty in the ack of reason 4"},
		{"ack count zero", ack, set64(offsetof(mdr_wire_inval, count), 0), -EINVAL,
		 "inval_ack: count zero"},
		{"ack reserved", ack, set32(offsetof(mdr_wire_inval, reserved), 0x100), -EINVAL,
		 "inval_ack: reserved not zero"},

		// admin requests
		{"create size zero", create, set64(offsetof(mdr_wire_vol_create_req, size), 0),
		 -EINVAL, "vol_create_req: size zero"},
		{"create size unaligned", create,
		 set64(offsetof(mdr_wire_vol_create_req, size), 4095), -EINVAL,
		 "vol_create_req: size 4095 not a multiple of 4096"},
		{"create shift low", create,
		 set32(offsetof(mdr_wire_vol_create_req, extent_shift), 15), -EINVAL,
		 "vol_create_req: extent_shift 15 neither 0 nor within [16, 30]"},
		{"create shift high", create,
		 set32(offsetof(mdr_wire_vol_create_req, extent_shift), 31), -EINVAL,
		 "extent_shift 31 neither 0"},
		{"create name empty", create, set_name(kCreateName, ""), -EINVAL,
		 "vol_create_req: name empty"},
		{"create name unterminated", create, set_name(kCreateName, std::string(64, 'v')),
		 -EINVAL, "vol_create_req: name not NUL-terminated"},
		{"create name char", create, set_name(kCreateName, "v:1"), -EINVAL, "outside"},
		{"delete size", del, set64(offsetof(mdr_wire_vol_name_req, size), 4096), -EINVAL,
		 "vol_delete_req: size not zero"},
		{"delete name", del, set_name(kVnName, std::string("v\0\0w", 4)), -EINVAL,
		 "vol_delete_req: name not NUL-padded"},
		{"info size", info, set64(offsetof(mdr_wire_vol_name_req, size), 1), -EINVAL,
		 "vol_info_req: size not zero"},
		{"info name empty", info, set_name(kVnName, ""), -EINVAL, "vol_info_req: name empty"},
		{"resize size zero", resize, set64(offsetof(mdr_wire_vol_name_req, size), 0),
		 -EINVAL, "vol_resize_req: size zero"},
		{"resize size unaligned", resize,
		 set64(offsetof(mdr_wire_vol_name_req, size), 8192 + 2048), -EINVAL,
		 "vol_resize_req: size 10240 not a multiple of 4096"},
		{"resize name", resize, set_name(kVnName, "*"), -EINVAL, "vol_resize_req: name has"},

		// volume replies
		{"vol_rep reserved", vrep, set32(offsetof(mdr_wire_vol_rep, reserved), 1), -EINVAL,
		 "vol_info_rep: reserved not zero"},
		{"vol_rep vol reserved", vrep, set32(kRepVol + VOFF(reserved), 1), -EINVAL,
		 "vol_info_rep: vol: reserved not zero"},
		{"vol_rep vol name", vrep, set_name(kRepVol + VOFF(name), ""), -EINVAL,
		 "vol_info_rep: vol: name empty"},
		{"vol_rep vol id", vrep, set64(kRepVol + VOFF(volume_id), 0), -EINVAL,
		 "vol_info_rep: vol: volume_id zero"},
		{"vol_rep vol size", vrep, set64(kRepVol + VOFF(size), 100), -EINVAL,
		 "vol: size 100 not a multiple of 4096"},
		{"vol_rep vol shift", vrep, set32(kRepVol + VOFF(extent_shift), 0), -EINVAL,
		 "vol: extent_shift 0 outside [16, 30]"},
		{"vol_rep vol allocated", vrep, set64(kRepVol + VOFF(allocated), 4098), -EINVAL,
		 "vol: allocated 4098 exceeds the volume's extents"},
		{"vol_rep dev reserved", vrep, set32(rep_dev(1) + 4, 1), -EINVAL,
		 "vol_info_rep: devs[1]: reserved not zero"},
		{"vol_rep dev id", vrep, set32(rep_dev(0), 0), -EINVAL,
		 "vol_info_rep: devs[0]: dev_id zero"},
		{"vol_list_rep reserved", vlist,
		 set32(offsetof(mdr_wire_vol_list_rep, reserved), 1), -EINVAL,
		 "vol_list_rep: reserved not zero"},
		{"vol_list_rep order", vlist, set64(list_vol(2) + VOFF(volume_id), 7), -EINVAL,
		 "vol_list_rep: vols[2]: volume_id 7 not in ascending order"},
		{"vol_list_rep name", vlist, set_name(list_vol(1) + VOFF(name), "b c"), -EINVAL,
		 "vol_list_rep: vols[1]: name has a character outside"},
		{"vol_list_rep vol reserved", vlist, set32(list_vol(0) + VOFF(reserved), 2),
		 -EINVAL, "vol_list_rep: vols[0]: reserved not zero"},
		{"vol_list_rep vol shift", vlist, set32(list_vol(2) + VOFF(extent_shift), 40),
		 -EINVAL, "vols[2]: extent_shift 40 outside"},

		// device list
		{"dev_list_rep reserved", dlist,
		 set32(offsetof(mdr_wire_dev_list_rep, reserved), 1), -EINVAL,
		 "dev_list_rep: reserved not zero"},
		{"dev reserved", dlist, set32(list_dev(1) + DOFF(reserved), 1), -EINVAL,
		 "dev_list_rep: devs[1]: reserved not zero"},
		{"dev serial unterminated", dlist,
		 set_str(kSerial, MDR_WIRE_SERIAL_LEN, std::string(40, 's')), -EINVAL,
		 "dev_list_rep: devs[0]: serial not NUL-terminated"},
		{"dev serial control", dlist, set_str(kSerial, MDR_WIRE_SERIAL_LEN, "ab\x1b[2J"),
		 -EINVAL, "devs[0]: serial has a non-printable character"},
		{"dev serial high bit", dlist, set_str(kSerial, MDR_WIRE_SERIAL_LEN, "\xff"),
		 -EINVAL, "serial has a non-printable character"},
		{"dev serial padding", dlist,
		 set_str(kSerial, MDR_WIRE_SERIAL_LEN, std::string("ab\0c", 4)), -EINVAL,
		 "devs[0]: serial not NUL-padded"},
		{"dev id zero", dlist, set32(list_dev(0) + DOFF(dev_id), 0), -EINVAL,
		 "devs[0]: dev_id zero"},
		{"dev order", dlist, set32(list_dev(1) + DOFF(dev_id), 3), -EINVAL,
		 "devs[1]: dev_id 3 not in ascending order"},
		{"dev used > size", dlist, set64(list_dev(1) + DOFF(used), (uint64_t{1} << 39) + 1),
		 -EINVAL, "devs[1]: used 549755813889 exceeds size 549755813888"},
	};
}

#undef VOFF
#undef DOFF
#undef MOFF
#undef MXOFF
#undef MROFF
#undef DROFF

void test_rejections(void **)
{
	int failures = 0;

	for (const Row &r : reject_rows()) {
		Buf b = encode(r.base);

		if (!parse_as(b, r.base).ok()) {
			print_error("%s: the unmutated message does not parse\n", r.what);
			failures++;
			continue;
		}
		if (r.mutate)
			r.mutate(b);
		auto m = w::parse(b, r.receiver.value_or(receiver_of(r.base)),
				  r.role.value_or(role_of(r.base)));
		if (m.ok()) {
			print_error("%s: accepted\n", r.what);
			failures++;
		} else if (m.error() != r.err || !contains(m.message(), r.part)) {
			print_error("%s: got %d \"%s\", want %d \"...%s...\"\n", r.what,
				    m.error(), m.message().c_str(), r.err, r.part);
			failures++;
		}
	}
	assert_int_equal(failures, 0);
}

// mdnode answers a message parse() refused from its header, when it has one.
void test_peek_header_of_rejected(void **)
{
	Buf b = encode(w::OpenReq{.volume_id = kVol}, 77);

	put32(b, offsetof(mdr_wire_open_req, reserved), 1);
	auto m = w::parse(b, Side::node, MDR_ROLE_HOST);
	assert_false(m.ok());
	auto h = w::peek_header(b);
	assert_true(h.has_value());
	assert_int_equal(h->opcode, MDR_OP_OPEN);
	assert_int_equal(h->req_id, 77);

	// The reply it makes, for an opcode this build may not even know.
	const uint16_t st = w::errno_to_status(m.error());
	assert_int_equal(st, MDR_ST_INVAL);
	Buf out(64);
	auto n = w::encode(out, h->req_id, w::ErrorRep{.opcode = 0x7777, .status = st});
	assert_true(n.ok());
	assert_int_equal(n.value(), sizeof(mdr_wire_hdr));
	auto peer = w::peek_header(std::span(out).first(n.value()));
	assert_true(peer.has_value());
	assert_int_equal(peer->opcode, 0x7777);
	assert_int_equal(peer->status, MDR_ST_INVAL);
	assert_true(peer->reply());

	put16(b, 0, 0);
	assert_false(w::peek_header(b).has_value());
	assert_false(w::peek_header(std::span(b).first(23)).has_value());
}

void test_encoders_refuse_what_receivers_refuse(void **)
{
	Buf out(MDR_WIRE_MSG_MAX);
	struct {
		w::Body body;
		int err;
		const char *part;
	} cases[] = {
		{w::OpenReq{.flags = MDR_OPEN_F_BY_NAME, .name = std::string(64, 'a')},
		 -EINVAL, "open_req: name longer than 63 characters"},
		{w::OpenReq{.flags = MDR_OPEN_F_BY_NAME, .name = "a b"}, -EINVAL, "outside"},
		{w::OpenReq{.volume_id = 0}, -EINVAL, "open_req: volume_id zero"},
		{w::OpenReq{.volume_id = 1, .name = "x"}, -EINVAL, "name set without"},
		{w::VolCreateReq{.size = 4095, .name = "v"}, -EINVAL, "not a multiple of 4096"},
		{w::VolCreateReq{.size = 4096, .name = ""}, -EINVAL, "name empty"},
		{w::AllocRep{.volume_id = 1, .index = 2, .entry = {0, 0, 0, 0}}, -EINVAL,
		 "generation zero"},
		{w::RenewRep{.lease_ms = 0}, -EINVAL, "lease_ms zero"},
		{w::ErrorRep{.opcode = MDR_OP_OPEN, .status = MDR_ST_OK}, -EINVAL,
		 "status 0 is not an error reply's"},
		{w::ErrorRep{.opcode = MDR_OP_OPEN, .status = MDR_ST_MAX}, -EINVAL,
		 "is not an error reply's"},
		{w::DevListRep{.devs = {{1, 10, 0, std::string(40, 's')}}}, -EINVAL,
		 "dev_list_rep: devs[0]: serial longer than 39 characters"},
		{w::MoveReq{.volume_id = 1, .count = 0, .to_dev = 2}, -EINVAL,
		 "move_req: count 0 outside"},
		{w::MoveRep{.volume_id = 1}, -EINVAL, "move_rep: count 0 outside"},
		{w::DrainReq{.dev_id = 2, .to_dev = 2}, -EINVAL, "to_dev is the device"},
		{w::HostAuthReq{}, -EINVAL, "host_auth_req: nonce all zero"},
		{w::HostAddReq{.host_id = 0, .tenant = 1, .key_len = 32}, -EINVAL,
		 "host_add_req: host_id zero"},
		{w::HostAddReq{.host_id = 1, .tenant = 0, .key_len = 32}, -EINVAL,
		 "host_add_req: tenant zero"},
		{w::HostAddReq{.host_id = 1, .tenant = 1, .flags = 2, .key_len = 32}, -EINVAL,
		 "host_add_req: unknown flags 0x2"},
		{w::HostAddReq{.host_id = 1, .tenant = 1, .key_len = 15}, -EINVAL,
		 "host_add_req: key_len 15 outside [16, 64]"},
		{w::HostAddReq{.host_id = 1, .tenant = 1, .key_len = 65}, -EINVAL,
		 "key_len 65 outside"},
		{w::HostRemoveReq{.host_id = 0}, -EINVAL, "host_remove_req: host_id zero"},
		{w::HostListRep{.hosts = {{.host_id = 2, .tenant = 1}, {.host_id = 2, .tenant = 1}}},
		 -EINVAL, "host_list_rep: hosts[1]: host_id 2 not in ascending order"},
		{w::HostListRep{.hosts = {{.host_id = 2, .tenant = 0}}}, -EINVAL,
		 "host_list_rep: hosts[0]: tenant zero"},
		{w::InvalidateAck{{.volume_id = 1, .count = 1, .generation = 1,
				   .reason = MDR_INVAL_MOVE}, false, MDR_INVAL_ACK_F_TRACKED, 0},
		 -EINVAL, "flags or dirty in version 1's ack"},
		{w::InvalidateAck{{.volume_id = 1, .count = 1, .generation = 1,
				   .reason = MDR_INVAL_MOVE}, true, 0, 1},
		 -EINVAL, "dirty without MDR_INVAL_ACK_F_TRACKED"},
		{w::InvalidateAck{{.volume_id = 1, .count = 1, .generation = 1,
				   .reason = MDR_INVAL_MOVE}, true, 2, 0},
		 -EINVAL, "unknown flags 0x2"},
		{w::Invalidate{{.volume_id = 1, .count = 3, .generation = 1,
				.reason = MDR_INVAL_TRACK}},
		 -EINVAL, "count 3 with MDR_INVAL_TRACK"},
	};

	for (const auto &c : cases) {
		auto n = w::encode(out, 1, c.body);
		if (n.ok())
			fail_msg("encoded: %s", c.part);
		if (n.error() != c.err || !contains(n.message(), c.part))
			fail_msg("got %d \"%s\", want \"%s\"", n.error(),
				 n.message().c_str(), c.part);
	}

	// A buffer one byte short of each message.
	for (const w::Body &body : samples()) {
		const size_t len = w::encoded_size(body);
		Buf small(len - 1);
		auto n = w::encode(small, 1, body);
		assert_false(n.ok());
		assert_int_equal(n.error(), -EMSGSIZE);
		assert_true(contains(n.message(), "bytes, the buffer has"));
	}
}

// A node without migration answers NODE_STATS with version 1's 120 bytes:
// its counters are read, the migration, push and copy counters are zero. A
// node without the push counters answers with 168 bytes: push_timeouts and
// the copy counters are zero. A node without the copy counters answers
// with 176 bytes: precopy_bytes and freeze_bytes are zero. Counters beyond
// the copy ones (a later version's) are ignored.
void test_node_stats_lengths(void **)
{
	const w::NodeStatsRep full = node_stats_rep();
	Buf b = encode(full);

	assert_int_equal(b.size(), 224);
	auto m = w::parse(b, Side::client, MDR_ROLE_ADMIN);
	assert_true(m.ok());
	assert_true(std::get<w::NodeStatsRep>(m.value().body) == full);

	// A node from before connections were capped: 208 bytes.
	Buf auth(b.begin(), b.begin() + 208);
	put32(auth, kLen, 208);
	m = w::parse(auth, Side::client, MDR_ROLE_ADMIN);
	assert_true(m.ok());
	w::NodeStatsRep want = full;
	want.conn_refused = want.fences = 0;
	assert_true(std::get<w::NodeStatsRep>(m.value().body) == want);

	// A node from before hosts authenticate: 192 bytes.
	Buf copy(b.begin(), b.begin() + 192);
	put32(copy, kLen, 192);
	m = w::parse(copy, Side::client, MDR_ROLE_ADMIN);
	assert_true(m.ok());
	want.auth_failures = want.hosts = 0;
	assert_true(std::get<w::NodeStatsRep>(m.value().body) == want);

	Buf push(b.begin(), b.begin() + 176);
	put32(push, kLen, 176);
	m = w::parse(push, Side::client, MDR_ROLE_ADMIN);
	assert_true(m.ok());
	want.precopy_bytes = want.freeze_bytes = 0;
	assert_true(std::get<w::NodeStatsRep>(m.value().body) == want);

	Buf mig(b.begin(), b.begin() + 168);
	put32(mig, kLen, 168);
	m = w::parse(mig, Side::client, MDR_ROLE_ADMIN);
	assert_true(m.ok());
	want.push_timeouts = 0;
	assert_true(std::get<w::NodeStatsRep>(m.value().body) == want);

	Buf old(b.begin(), b.begin() + 120);
	put32(old, kLen, 120);
	m = w::parse(old, Side::client, MDR_ROLE_ADMIN);
	assert_true(m.ok());
	want.moves_active = want.moves_done = want.moves_failed = 0;
	want.move_bytes = want.stall_max_us = want.stall_total_us = 0;
	assert_true(std::get<w::NodeStatsRep>(m.value().body) == want);

	b.resize(224 + 16, std::byte{0x5a});
	put32(b, kLen, 224 + 16);
	m = w::parse(b, Side::client, MDR_ROLE_ADMIN);
	assert_true(m.ok());
	assert_true(std::get<w::NodeStatsRep>(m.value().body) == full);
}

// ---- Truncation and oversize ----------------------------------------------

void test_truncation_every_length(void **)
{
	for (const w::Body &body : samples()) {
		const Buf b = encode(body);

		// Cut short of what the header says.
		for (size_t n = 0; n < b.size(); n++) {
			auto m = w::parse(std::span(b).first(n), receiver_of(body),
					  role_of(body));
			assert_false(m.ok());
			assert_int_equal(m.error(), -EPROTO);
			assert_true(contains(m.message(), n < sizeof(mdr_wire_hdr)
						 ? "shorter than a header"
						 : "exceeds the"));
		}
		// Cut, with the header saying so: too short for the opcode.
		for (size_t n = sizeof(mdr_wire_hdr); n < b.size(); n++) {
			Buf t(b.begin(), b.begin() + n);
			put32(t, kLen, static_cast<uint32_t>(n));
			// Shorter NODE_STATS replies are older versions': valid.
			if (std::holds_alternative<w::NodeStatsRep>(body) &&
			    n >= sizeof(mdr_wire_node_stats_rep) &&
			    (n - sizeof(mdr_wire_node_stats_rep)) % 8 == 0) {
				assert_true(parse_as(t, body).ok());
				continue;
			}
			// Version 2's ack cut to version 1's is one.
			if (std::holds_alternative<w::InvalidateAck>(body) &&
			    n == sizeof(mdr_wire_inval)) {
				auto m = parse_as(t, body);
				assert_true(m.ok());
				assert_false(std::get<w::InvalidateAck>(m.value().body).extended);
				continue;
			}
			auto m = parse_as(t, body);
			assert_false(m.ok());
			assert_int_equal(m.error(), -EPROTO);
		}
	}
}

void test_oversize_length(void **)
{
	Buf b = encode(w::OpenReq{.volume_id = kVol});

	b.resize(MDR_WIRE_MSG_MAX + 1);
	put32(b, kLen, MDR_WIRE_MSG_MAX + 1);
	auto m = w::parse(b, Side::node, MDR_ROLE_HOST);
	assert_false(m.ok());
	assert_int_equal(m.error(), -EPROTO);
	assert_true(contains(m.message(), "hdr: length 65537 exceeds MDR_WIRE_MSG_MAX"));

	put32(b, kLen, UINT32_MAX);
	m = w::parse(b, Side::node, MDR_ROLE_HOST);
	assert_false(m.ok());
	assert_int_equal(m.error(), -EPROTO);
	assert_true(contains(m.message(), "length 4294967295 exceeds the 65537 bytes"));

	// A list reply of the largest length, count consistent, is still one
	// element too long to exist.
	w::VolListRep l;
	const size_t n = (MDR_WIRE_MSG_MAX - 40) / 104 + 1;
	l.vols.assign(1, volume(1, "v"));
	Buf big = encode(l);
	big.resize(40 + n * 104);
	put32(big, kLen, static_cast<uint32_t>(big.size()));
	put32(big, offsetof(mdr_wire_vol_list_rep, count), static_cast<uint32_t>(n));
	m = w::parse(big, Side::client, MDR_ROLE_ADMIN);
	assert_false(m.ok());
	assert_true(contains(m.message(), "exceeds MDR_WIRE_MSG_MAX"));
}

// ---- Extent entries -------------------------------------------------------

const w::Entry kEntries[] = {
	{1, 0, 0, MDR_EXT_UNALLOCATED},
	{2, 0x200000, 3, MDR_EXT_MAPPED},
	{UINT64_MAX, UINT64_MAX, UINT32_MAX, MDR_EXT_FROZEN},
};

void test_entry_round_trip(void **)
{
	for (const w::Entry &want : kEntries) {
		const mdr_wire_entry e = w::make_entry(want, kVol, kIndex);

		assert_int_equal(w::verify_entry(e, kVol, kIndex), w::EntryCheck::ok);
		assert_true(w::decode_entry(e) == want);
		assert_int_equal(w::load(e.crc), w::entry_crc(e, kVol, kIndex));
	}
}

void test_entry_every_bit_flip(void **)
{
	for (const w::Entry &want : kEntries) {
		const mdr_wire_entry good = w::make_entry(want, kVol, kIndex);

		for (size_t bit = 0; bit < sizeof(good) * 8; bit++) {
			mdr_wire_entry e = good;
			auto *p = reinterpret_cast<unsigned char *>(&e);

			p[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
			assert_int_equal(w::verify_entry(e, kVol, kIndex),
					 w::EntryCheck::bad_crc);
		}
	}
}

void test_entry_misaddressed(void **)
{
	const mdr_wire_entry e = w::make_entry(kEntries[1], kVol, kIndex);
	const std::pair<uint64_t, uint64_t> elsewhere[] = {
		{kVol + 1, kIndex}, {kVol, kIndex + 1}, {kVol, kIndex - 1},
		{kIndex, kVol}, {kVol ^ (uint64_t{1} << 63), kIndex}, {0, kIndex},
	};

	for (const auto &[vol, index] : elsewhere)
		assert_int_equal(w::verify_entry(e, vol, index), w::EntryCheck::bad_crc);
}

// A READ racing mdnode's write of the next generation: 16 bytes of each.
void test_entry_torn(void **)
{
	const mdr_wire_entry a = w::make_entry({5, 0x100000, 3, MDR_EXT_MAPPED}, kVol, kIndex);
	const mdr_wire_entry b = w::make_entry({6, 0x900000, 4, MDR_EXT_MAPPED}, kVol, kIndex);
	const mdr_wire_entry c = w::make_entry({6, 0x100000, 3, MDR_EXT_FROZEN}, kVol, kIndex);

	for (const auto &[old_e, new_e] : {std::pair{a, b}, std::pair{b, a},
					    std::pair{a, c}, std::pair{c, a}}) {
		mdr_wire_entry torn;

		std::memcpy(&torn, &old_e, 16);
		std::memcpy(reinterpret_cast<char *>(&torn) + 16,
			    reinterpret_cast<const char *>(&new_e) + 16, 16);
		assert_int_equal(w::verify_entry(torn, kVol, kIndex),
				 w::EntryCheck::bad_crc);
	}
}

void test_entry_rules(void **)
{
	struct {
		w::Entry entry;
		void (*edit)(mdr_wire_entry &);
		w::EntryCheck want;
	} cases[] = {
		{{1, 0, 0, MDR_EXT_UNALLOCATED}, [](mdr_wire_entry &e) { e.reserved[0] = 1; },
		 w::EntryCheck::reserved_nonzero},
		{{1, 0, 0, MDR_EXT_UNALLOCATED}, [](mdr_wire_entry &e) { e.reserved[2] = 0x80; },
		 w::EntryCheck::reserved_nonzero},
		{{1, 0, 0, MDR_EXT_UNALLOCATED},
		 [](mdr_wire_entry &e) { w::store(e.reserved2, 0x01000000); },
		 w::EntryCheck::reserved_nonzero},
		{{1, 8, 1, MDR_EXT_STATE_MAX}, nullptr, w::EntryCheck::bad_state},
		{{1, 8, 1, 0xff}, nullptr, w::EntryCheck::bad_state},
		{{1, 0, 1, MDR_EXT_UNALLOCATED}, nullptr, w::EntryCheck::unallocated_placed},
		{{1, 8, 0, MDR_EXT_UNALLOCATED}, nullptr, w::EntryCheck::unallocated_placed},
		{{0, 0, 0, MDR_EXT_UNALLOCATED}, nullptr, w::EntryCheck::zero_generation},
		{{0, 8, 1, MDR_EXT_MAPPED}, nullptr, w::EntryCheck::zero_generation},
		{{1, 8, 0, MDR_EXT_MAPPED}, nullptr, w::EntryCheck::no_device},
		{{1, 8, 0, MDR_EXT_FROZEN}, nullptr, w::EntryCheck::no_device},
	};

	for (const auto &c : cases) {
		mdr_wire_entry e = w::make_entry(c.entry, kVol, kIndex);

		if (c.edit) {
			c.edit(e);
			w::seal_entry(e, kVol, kIndex);
		}
		assert_int_equal(w::verify_entry(e, kVol, kIndex), c.want);
	}
	assert_string_equal(w::entry_check_name(w::EntryCheck::bad_crc), "bad crc");
}

// The known-answer vector, also for the kernel's implementation:
//   volume id 0x0123456789abcdef, index 42,
//   entry {generation 7, pstart 0x200000, dev_id 3, state MAPPED}
//   crc 0x1389d35d; the 32 bytes:
//   07 00 00 00 00 00 00 00  00 00 20 00 00 00 00 00
//   03 00 00 00 01 00 00 00  00 00 00 00 5d d3 89 13
void test_entry_known_answer(void **)
{
	const unsigned char want[32] = {
		0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x5d, 0xd3, 0x89, 0x13,
	};
	const uint64_t vol = 0x0123456789abcdef, index = 42;
	const mdr_wire_entry e = w::make_entry({7, 0x200000, 3, MDR_EXT_MAPPED}, vol, index);

	assert_memory_equal(&e, want, sizeof(want));
	assert_int_equal(w::entry_crc(e, vol, index), 0x1389d35du);

	mdr_wire_entry from_bytes;
	std::memcpy(&from_bytes, want, sizeof(want));
	assert_int_equal(w::verify_entry(from_bytes, vol, index), w::EntryCheck::ok);
}

// ---- Connection private data ----------------------------------------------

w::ConnReq host_req()
{
	return {.version_min = 1, .version_max = 1, .role = MDR_ROLE_HOST,
		.tenant = 9, .host_id = 0xfeedface, .queue_depth = 32,
		.recv_depth = 48, .max_msg = 4096};
}

w::ConnReq admin_req()
{
	return {.version_min = 1, .version_max = 3, .role = MDR_ROLE_ADMIN,
		.tenant = 0, .host_id = 0x1234, .queue_depth = 1,
		.recv_depth = 2, .max_msg = MDR_WIRE_MSG_MIN};
}

template <typename T>
Buf padded(const T &t, size_t len)
{
	Buf b(len);

	std::memcpy(b.data(), &t, sizeof(t));
	return b;
}

void test_conn_req(void **)
{
	for (const w::ConnReq &q : {host_req(), admin_req()}) {
		auto wire = w::encode_conn_req(q);
		assert_true(wire.ok());
		// rdma_cm hands a REQ's private data over as 56 bytes
		auto back = w::parse_conn_req(padded(wire.value(), 56));
		assert_true(back.ok());
		assert_true(back.value() == q);
		// every shorter length is malformed
		const Buf full = padded(wire.value(), 56);
		for (size_t n = 0; n < sizeof(mdr_wire_conn_req); n++) {
			auto r = w::parse_conn_req(std::span(full).first(n));
			assert_false(r.ok());
			assert_int_equal(r.error(), -EPROTO);
		}
	}

	struct {
		const char *what;
		Mutation mutate;
		int err;
		const char *part;
	} rows[] = {
		{"magic", set32(0, 0x4d445257), -EPROTO, "conn_req: bad magic 0x4d445257"},
		{"version min zero", set16(4, 0), -EINVAL, "version range 0..1 not sane"},
		{"versions reversed", set16(4, 2), -EINVAL, "version range 2..1 not sane"},
		{"role zero", set16(8, 0), -EINVAL, "conn_req: unknown role 0"},
		{"role three", set16(8, 3), -EINVAL, "unknown role 3"},
		{"flags", set16(10, 1), -EINVAL, "conn_req: flags not zero"},
		{"reserved first", set8(32, 1), -EINVAL, "conn_req: reserved not zero"},
		{"reserved last", set8(55, 1), -EINVAL, "reserved not zero"},
		{"queue_depth zero", set16(24, 0), -EINVAL, "conn_req: queue_depth zero"},
		{"recv_depth equal", set16(26, 32), -EINVAL,
		 "conn_req: recv_depth 32 not above queue_depth 32"},
		{"recv_depth below", set16(26, 1), -EINVAL, "recv_depth 1 not above"},
		{"max_msg small", set32(28, MDR_WIRE_MSG_MIN - 1), -EINVAL,
		 "conn_req: max_msg 255 outside [256, 65536]"},
		{"max_msg large", set32(28, MDR_WIRE_MSG_MAX + 1), -EINVAL, "max_msg 65537 outside"},
		{"admin with tenant", [](Buf &b) { put16(b, 8, MDR_ROLE_ADMIN); }, -EINVAL,
		 "conn_req: tenant 9 on an admin connection"},
	};
	static_assert(offsetof(mdr_wire_conn_req, queue_depth) == 24);
	static_assert(offsetof(mdr_wire_conn_req, reserved) == 32);

	for (const auto &r : rows) {
		Buf b = padded(w::encode_conn_req(host_req()).value(), 56);
		r.mutate(b);
		auto q = w::parse_conn_req(b);
		if (q.ok())
			fail_msg("%s: accepted", r.what);
		if (q.error() != r.err || !contains(q.message(), r.part))
			fail_msg("%s: got %d \"%s\"", r.what, q.error(), q.message().c_str());
	}

	// The encoder refuses the same.
	w::ConnReq bad = host_req();
	bad.recv_depth = bad.queue_depth;
	assert_int_equal(w::encode_conn_req(bad).error(), -EINVAL);
	bad = admin_req();
	bad.tenant = 1;
	assert_int_equal(w::encode_conn_req(bad).error(), -EINVAL);
}

void test_negotiate_version(void **)
{
	static_assert(MDR_WIRE_VERSION_MIN == 1 && MDR_WIRE_VERSION == 4,
		      "update the cases for a new version");
	assert_int_equal(w::negotiate_version(1, 1).value(), 1);
	assert_int_equal(w::negotiate_version(1, 2).value(), 2);
	assert_int_equal(w::negotiate_version(2, 2).value(), 2);
	assert_int_equal(w::negotiate_version(3, 3).value(), 3);
	assert_int_equal(w::negotiate_version(1, 3).value(), 3);
	assert_int_equal(w::negotiate_version(4, 4).value(), 4);
	assert_int_equal(w::negotiate_version(1, 9).value(), 4);
	assert_int_equal(w::negotiate_version(2, 9).value(), 4);
	assert_int_equal(w::negotiate_version(0, 1).value(), 1);

	const std::pair<uint16_t, uint16_t> none[] = {
		{5, 6}, {0, 0}, {3, 1}, {UINT16_MAX, UINT16_MAX}};

	for (const auto &[lo, hi] : none) {
		auto v = w::negotiate_version(lo, hi);
		assert_false(v.ok());
		assert_int_equal(v.error(), -EPROTONOSUPPORT);
		assert_int_equal(w::errno_to_status(v.error()), MDR_ST_VERSION);
	}
}

// A granule is 1/64th of the extent, but at least 4 KiB.
void test_track_granules(void **)
{
	const struct {
		uint32_t extent_shift;
		unsigned shift, granules;
	} cases[] = {
		{MDR_WIRE_EXTENT_SHIFT_MIN, 12, 16},
		{17, 12, 32},
		{18, 12, 64},
		{20, 14, 64},
		{MDR_WIRE_EXTENT_SHIFT_DEFAULT, 16, 64},
		{MDR_WIRE_EXTENT_SHIFT_MAX, 24, 64},
	};

	for (const auto &c : cases) {
		assert_int_equal(w::track_granule_shift(c.extent_shift), c.shift);
		assert_int_equal(w::track_granules(c.extent_shift), c.granules);
	}
}

w::ConnRep host_rep()
{
	return {.version = 1, .queue_depth = 16, .push_credits = 32,
		.max_msg = 8192, .node_id = 5, .boot_id = 0xb007};
}

w::ConnRep admin_rep()
{
	w::ConnRep a{.version = 1, .queue_depth = 1, .push_credits = 0,
		     .max_msg = MDR_WIRE_MSG_MAX, .node_id = 5, .boot_id = 0xb007};
	for (size_t i = 0; i < a.nonce.size(); i++)
		a.nonce[i] = static_cast<uint8_t>(0xa0 + i);
	return a;
}

void test_conn_rep(void **)
{
	const std::pair<w::ConnRep, w::ConnReq> pairs[] = {
		{host_rep(), host_req()}, {admin_rep(), admin_req()}};

	for (const auto &[rep, req] : pairs) {
		auto wire = w::encode_conn_rep(rep, req);
		assert_true(wire.ok());
		// an accept's private data arrives padded to 196 bytes
		auto back = w::parse_conn_rep(padded(wire.value(), 196), req);
		assert_true(back.ok());
		assert_true(back.value() == rep);
		const Buf full = padded(wire.value(), 196);
		for (size_t n = 0; n < sizeof(mdr_wire_conn_rep); n++)
			assert_int_equal(w::parse_conn_rep(std::span(full).first(n), req).error(),
					 -EPROTO);
	}

	// host_req: queue_depth 32, recv_depth 48; host_rep grants 16 + 32.
	struct {
		const char *what;
		Mutation mutate;
		int err;
		const char *part;
	} rows[] = {
		{"magic", set32(0, 0), -EPROTO, "conn_rep: bad magic 0x0"},
		{"version zero", set16(4, 0), -EPROTO, "conn_rep: version 0 outside the 1..1 asked"},
		{"version above", set16(4, 2), -EPROTO, "version 2 outside"},
		{"flags", set16(6, 4), -EINVAL, "conn_rep: flags not zero"},
		{"queue_depth zero", set16(8, 0), -EINVAL, "conn_rep: queue_depth 0 outside [1, 32]"},
		{"queue_depth above asked", set16(8, 33), -EINVAL, "queue_depth 33 outside [1, 32]"},
		{"push credits too many", set16(10, 33), -EINVAL,
		 "conn_rep: push_credits 33 exceed recv_depth 48 - queue_depth 16"},
		{"push credits none", set16(10, 0), -EINVAL,
		 "conn_rep: no push credits on a host connection"},
		{"max_msg small", set32(12, 100), -EINVAL, "conn_rep: max_msg 100 outside"},
		{"max_msg large", set32(12, 1u << 20), -EINVAL, "max_msg 1048576 outside"},
		{"nonce on host", set8(47, 1), -EINVAL, "conn_rep: nonce on a host connection"},
	};
	static_assert(offsetof(mdr_wire_conn_rep, nonce) == 32);

	for (const auto &r : rows) {
		Buf b = padded(w::encode_conn_rep(host_rep(), host_req()).value(), 196);
		r.mutate(b);
		auto a = w::parse_conn_rep(b, host_req());
		if (a.ok())
			fail_msg("%s: accepted", r.what);
		if (a.error() != r.err || !contains(a.message(), r.part))
			fail_msg("%s: got %d \"%s\"", r.what, a.error(), a.message().c_str());
	}

	// Exactly the credits the client's buffers hold.
	w::ConnRep edge = host_rep();
	edge.push_credits = 48 - 16;
	assert_true(w::encode_conn_rep(edge, host_req()).ok());

	w::ConnRep no_nonce = admin_rep();
	no_nonce.nonce.fill(0);
	auto r = w::encode_conn_rep(no_nonce, admin_req());
	assert_false(r.ok());
	assert_true(contains(r.message(), "conn_rep: no nonce on an admin connection"));
}

// Host accepts carry the challenge of MDR_OP_HOST_AUTH from version 3 on,
// and none before.
void test_conn_rep_host_nonce(void **)
{
	w::ConnReq req = host_req();
	req.version_max = 3;
	w::ConnRep rep = host_rep();
	for (size_t i = 0; i < rep.nonce.size(); i++)
		rep.nonce[i] = static_cast<uint8_t>(i);

	for (uint16_t v = 1; v <= 3; v++) {
		rep.version = v;
		auto wire = w::encode_conn_rep(rep, req);
		assert_int_equal(wire.ok(), v >= w::kHostAuthVersion);
		if (v < w::kHostAuthVersion)
			assert_true(contains(wire.message(), "nonce on a host connection of version"));
		w::ConnRep zero = rep;
		zero.nonce.fill(0);
		auto z = w::encode_conn_rep(zero, req);
		assert_true(z.ok());
		assert_true(w::parse_conn_rep(padded(z.value(), 196), req).value() == zero);
	}
	rep.version = 3;
	auto back = w::parse_conn_rep(padded(w::encode_conn_rep(rep, req).value(), 196), req);
	assert_true(back.ok());
	assert_true(back.value().nonce == rep.nonce);
}

// The opcode table says what needs which proof.
void test_needs_auth(void **)
{
	const uint16_t host_ops[] = {MDR_OP_OPEN, MDR_OP_CLOSE, MDR_OP_RENEW, MDR_OP_ALLOC,
				     MDR_OP_INVALIDATE};
	for (uint16_t op : host_ops) {
		assert_true(w::needs_host_auth(op, 3));
		assert_false(w::needs_host_auth(op, 2));
		assert_false(w::needs_host_auth(op, 1));
		assert_false(w::needs_auth(op));
	}
	assert_false(w::needs_host_auth(MDR_OP_HOST_AUTH, 3));
	assert_false(w::needs_host_auth(MDR_OP_PING, 3));
	assert_false(w::needs_auth(MDR_OP_HOST_AUTH));
	for (uint16_t op : {MDR_OP_HOST_ADD, MDR_OP_HOST_REMOVE, MDR_OP_HOST_LIST,
			    MDR_OP_VOL_CREATE}) {
		assert_true(w::needs_auth(op));
		assert_false(w::needs_host_auth(op, 3));
	}
	assert_false(w::needs_auth(MDR_OP_AUTH));
	assert_false(w::needs_host_auth(0x7777, 3));
	// Roles: HOST_AUTH on an admin connection, HOST_ADD on a host one.
	Buf b = encode(w::HostRemoveReq{.host_id = 1});
	assert_int_equal(w::parse(b, Side::node, MDR_ROLE_HOST).error(), -EPERM);
	w::HostAuthReq a;
	a.nonce[3] = 1;
	b = encode(a);
	assert_int_equal(w::parse(b, Side::node, MDR_ROLE_ADMIN).error(), -EPERM);
	assert_true(w::parse(b, Side::node, MDR_ROLE_HOST).ok());
}

void test_conn_rej(void **)
{
	for (uint16_t st = MDR_ST_INVAL; st < MDR_ST_MAX; st++) {
		auto wire = w::encode_conn_rej({.version = 1, .status = st});
		assert_true(wire.ok());
		// a reject's private data arrives padded to 148 bytes
		auto back = w::parse_conn_rej(padded(wire.value(), 148));
		assert_true(back.ok());
		assert_int_equal(back.value().status, st);
		assert_int_equal(back.value().version, 1);
	}
	const mdr_wire_conn_rej good = w::encode_conn_rej({}).value();
	const Buf full = padded(good, 148);
	for (size_t n = 0; n < sizeof(good); n++)
		assert_int_equal(w::parse_conn_rej(std::span(full).first(n)).error(), -EPROTO);

	Buf b = padded(good, 148);
	put32(b, 0, 0x12345678);
	assert_int_equal(w::parse_conn_rej(b).error(), -EPROTO);

	for (uint16_t st : {uint16_t{MDR_ST_OK}, uint16_t{MDR_ST_MAX}, uint16_t{0xffff}}) {
		b = padded(good, 148);
		put16(b, 6, st);
		auto r = w::parse_conn_rej(b);
		assert_int_equal(r.error(), -EINVAL);
		assert_true(contains(r.message(), "is no reason to reject"));
		assert_false(w::encode_conn_rej({.version = 1, .status = st}).ok());
	}
	b = padded(good, 148);
	put16(b, 4, 0);
	put16(b, 6, MDR_ST_VERSION);
	assert_int_equal(w::parse_conn_rej(b).error(), -EINVAL);
}

// ---- Status ---------------------------------------------------------------

void test_status_errno(void **)
{
	const struct {
		uint16_t status;
		int err;
		const char *name;
	} table[] = {
		{MDR_ST_OK, 0, "MDR_ST_OK"},
		{MDR_ST_INVAL, -EINVAL, "MDR_ST_INVAL"},
		{MDR_ST_NOENT, -ENOENT, "MDR_ST_NOENT"},
		{MDR_ST_EXIST, -EEXIST, "MDR_ST_EXIST"},
		{MDR_ST_NOSPC, -ENOSPC, "MDR_ST_NOSPC"},
		{MDR_ST_PERM, -EPERM, "MDR_ST_PERM"},
		{MDR_ST_BUSY, -EBUSY, "MDR_ST_BUSY"},
		{MDR_ST_PROTO, -EPROTO, "MDR_ST_PROTO"},
		{MDR_ST_VERSION, -EPROTONOSUPPORT, "MDR_ST_VERSION"},
		{MDR_ST_STALE, -ESTALE, "MDR_ST_STALE"},
		{MDR_ST_AGAIN, -EAGAIN, "MDR_ST_AGAIN"},
		{MDR_ST_IO, -EIO, "MDR_ST_IO"},
		{MDR_ST_NOMEM, -ENOMEM, "MDR_ST_NOMEM"},
	};
	static_assert(std::size(table) == MDR_ST_MAX);

	for (const auto &t : table) {
		assert_int_equal(w::status_to_errno(t.status), t.err);
		assert_int_equal(w::errno_to_status(t.err), t.status);
		assert_int_equal(w::errno_to_status(-t.err), t.status);	// positive
		assert_string_equal(w::status_name(t.status).c_str(), t.name);
	}
	assert_int_equal(w::status_to_errno(MDR_ST_MAX), -EPROTO);
	assert_int_equal(w::status_to_errno(0xffff), -EPROTO);
	assert_string_equal(w::status_name(MDR_ST_MAX).c_str(), "MDR_ST_?13");
	assert_int_equal(w::errno_to_status(-EACCES), MDR_ST_PERM);
	assert_int_equal(w::errno_to_status(-EDQUOT), MDR_ST_NOSPC);
	assert_int_equal(w::errno_to_status(-EMSGSIZE), MDR_ST_PROTO);
	assert_int_equal(w::errno_to_status(-EXDEV), MDR_ST_IO);	// no status of its own
	assert_int_equal(w::errno_to_status(-4095), MDR_ST_IO);

	assert_string_equal(w::opcode_name(MDR_OP_VOL_CREATE).c_str(), "MDR_OP_VOL_CREATE");
	assert_string_equal(w::opcode_name(0x99).c_str(), "MDR_OP_?153");
	assert_true(w::valid_volume_name("A-z_0.9"));
	assert_true(w::valid_volume_name(std::string(63, 'x')));
	assert_false(w::valid_volume_name(std::string(64, 'x')));
	assert_false(w::valid_volume_name(""));
	assert_false(w::valid_volume_name("a/b"));
	assert_false(w::valid_volume_name(std::string("a\0b", 3)));
}

// ---- Fuzz -----------------------------------------------------------------

constexpr uint16_t kOpcodes[] = {
	MDR_OP_OPEN, MDR_OP_CLOSE, MDR_OP_RENEW, MDR_OP_ALLOC, MDR_OP_INVALIDATE,
	MDR_OP_AUTH, MDR_OP_VOL_CREATE, MDR_OP_VOL_DELETE, MDR_OP_VOL_LIST,
	MDR_OP_VOL_INFO, MDR_OP_VOL_RESIZE, MDR_OP_DEV_LIST, MDR_OP_NODE_STATS,
	MDR_OP_PING,
};

struct Fuzzer {
	std::mt19937_64 rng{0x6d64726f75746521};	// fixed: runs are repeatable
	size_t accepted = 0;

	uint64_t below(uint64_t n) { return n ? rng() % n : 0; }

	Side side() { return below(2) ? Side::node : Side::client; }

	mdr_wire_role role()
	{
		// now and then a role that no connection has
		const uint64_t r = below(16);
		return r == 0 ? static_cast<mdr_wire_role>(0)
			      : r & 1 ? MDR_ROLE_HOST : MDR_ROLE_ADMIN;
	}

	void fill(Buf &b, size_t from = 0)
	{
		for (size_t i = from; i < b.size(); i += 8) {
			const uint64_t r = rng();

			std::memcpy(&b[i], &r, std::min<size_t>(8, b.size() - i));
		}
	}

	void run(const Buf &b, Side s, mdr_wire_role r)
	{
		auto m = w::parse(b, s, r);

		if (m.ok()) {
			accepted++;
			check_canonical(b, m.value());
		} else {
			assert_true(m.error() == -EPROTO || m.error() == -EINVAL ||
				    m.error() == -EPERM);
			assert_false(m.message().empty());
		}
		(void)w::peek_header(b);
	}

	void mutate(Buf &b)
	{
		switch (below(7)) {
		case 0:	// one bit
			if (!b.empty())
				b[below(b.size())] ^= std::byte(1u << below(8));
			break;
		case 1:	// one byte
			if (!b.empty())
				b[below(b.size())] = std::byte(static_cast<uint8_t>(
					below(3) == 0 ? 0 : below(3) == 1 ? 0xff : rng()));
			break;
		case 2:	// cut
			b.resize(below(b.size() + 1));
			break;
		case 3: {	// extend, header told or not
			const size_t old = b.size();
			b.resize(old + below(256));
			fill(b, old);
			if (below(2) && b.size() >= sizeof(mdr_wire_hdr))
				put32(b, kLen, static_cast<uint32_t>(b.size()));
			break;
		}
		case 4:	// the length field
			if (b.size() >= sizeof(mdr_wire_hdr))
				put32(b, kLen, static_cast<uint32_t>(
					below(4) ? below(b.size() + 64) : rng()));
			break;
		case 5:	// a small number in an aligned word: counts, states, enums
			if (b.size() >= 4)
				put32(b, below(b.size() / 4) * 4,
				      static_cast<uint32_t>(below(5)));
			break;
		case 6:	// the opcode or the flags
			if (b.size() >= sizeof(mdr_wire_hdr)) {
				if (below(2))
					put16(b, 2, kOpcodes[below(std::size(kOpcodes))]);
				else
					put16(b, 4, static_cast<uint16_t>(below(3)));
			}
			break;
		}
	}
};

void test_fuzz_random_buffers(void **)
{
	Fuzzer f;

	for (int i = 0; i < 100000; i++) {
		// mostly short, now and then up to beyond the largest message
		Buf b(f.below(32) ? f.below(320) : f.below(MDR_WIRE_MSG_MAX + 64));
		f.fill(b);
		// Most random bytes die at the magic: give half of them a
		// plausible header so that the size and body checks run too.
		if (i % 2 && b.size() >= sizeof(mdr_wire_hdr)) {
			put16(b, 0, MDR_WIRE_MSG_MAGIC);
			put16(b, 2, kOpcodes[f.below(std::size(kOpcodes))]);
			put16(b, 4, static_cast<uint16_t>(f.below(2)));
			put16(b, 6, static_cast<uint16_t>(f.below(4) ? 0 : f.below(16)));
			put32(b, kLen, static_cast<uint32_t>(f.below(8) ? b.size()
							     : f.below(b.size() + 8)));
			put32(b, 12, f.below(8) ? 0 : static_cast<uint32_t>(f.rng()));
		}
		f.run(b, f.side(), f.role());
	}

	// Connection private data and entries, likewise.
	for (int i = 0; i < 20000; i++) {
		Buf b(f.below(200));
		f.fill(b);
		if (i % 2 && b.size() >= 4)
			put32(b, 0, MDR_WIRE_CONN_MAGIC);
		(void)w::parse_conn_req(b);
		(void)w::parse_conn_rep(b, f.below(2) ? host_req() : admin_req());
		(void)w::parse_conn_rej(b);
		if (b.size() >= sizeof(mdr_wire_entry)) {
			mdr_wire_entry e;
			std::memcpy(&e, b.data(), sizeof(e));
			(void)w::verify_entry(e, f.rng(), f.rng());
		}
	}
}

void test_fuzz_mutated_messages(void **)
{
	Fuzzer f;
	const std::vector<w::Body> bodies = samples();
	std::vector<Buf> valid;

	for (const w::Body &body : bodies)
		valid.push_back(encode(body, 0x5eed));
	for (int i = 0; i < 100000; i++) {
		const size_t k = f.below(valid.size());
		Buf b = valid[k];

		for (uint64_t n = 1 + f.below(4); n; n--)
			f.mutate(b);
		if (f.below(4))
			f.run(b, receiver_of(bodies[k]), role_of(bodies[k]));
		else
			f.run(b, f.side(), f.role());
	}
	// The mutations reach the accepting paths, not only the first checks.
	assert_true(f.accepted > 5000);
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_every_message),
		cmocka_unit_test(test_header_bytes),
		cmocka_unit_test(test_ping_both_ways),
		cmocka_unit_test(test_trailing_bytes_ignored),
		cmocka_unit_test(test_largest_lists_fit),
		cmocka_unit_test(test_rejections),
		cmocka_unit_test(test_node_stats_lengths),
		cmocka_unit_test(test_peek_header_of_rejected),
		cmocka_unit_test(test_encoders_refuse_what_receivers_refuse),
		cmocka_unit_test(test_truncation_every_length),
		cmocka_unit_test(test_oversize_length),
		cmocka_unit_test(test_entry_round_trip),
		cmocka_unit_test(test_entry_every_bit_flip),
		cmocka_unit_test(test_entry_misaddressed),
		cmocka_unit_test(test_entry_torn),
		cmocka_unit_test(test_entry_rules),
		cmocka_unit_test(test_entry_known_answer),
		cmocka_unit_test(test_conn_req),
		cmocka_unit_test(test_negotiate_version),
		cmocka_unit_test(test_track_granules),
		cmocka_unit_test(test_conn_rep),
		cmocka_unit_test(test_conn_rep_host_nonce),
		cmocka_unit_test(test_needs_auth),
		cmocka_unit_test(test_conn_rej),
		cmocka_unit_test(test_status_errno),
		cmocka_unit_test(test_fuzz_random_buffers),
		cmocka_unit_test(test_fuzz_mutated_messages),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
