// SPDX-License-Identifier: GPL-2.0
//
// test_wire.h - what test_wire_*.cc check the wire codec with: field
// writers for raw buffers, encode() that fails the test on an error, who
// receives each message and on which connection, one valid sample of every
// message kind, the check that a parsed message encodes back to the bytes
// received, the mutations rejection tables are made of, and sample connect
// requests.
#ifndef MDR_TESTS_TEST_WIRE_H
#define MDR_TESTS_TEST_WIRE_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include <endian.h>

#include "lib/wire/wire.h"

#include "tests/common/cmocka_cxx.h"

namespace mdr::test {

namespace w = mdr::wire;
using Buf = std::vector<std::byte>;
using w::Side;

inline constexpr uint64_t kReqId = 0x1122334455667788;
inline constexpr uint64_t kVol = 42;
inline constexpr uint64_t kIndex = 17;

// ---- Helpers --------------------------------------------------------------

inline void put8(Buf &b, size_t off, uint8_t v) { b.at(off) = std::byte{v}; }

inline void put16(Buf &b, size_t off, uint16_t v)
{
	v = htole16(v);
	assert_true(off + sizeof(v) <= b.size());
	std::memcpy(&b[off], &v, sizeof(v));
}

inline void put32(Buf &b, size_t off, uint32_t v)
{
	v = htole32(v);
	assert_true(off + sizeof(v) <= b.size());
	std::memcpy(&b[off], &v, sizeof(v));
}

inline void put64(Buf &b, size_t off, uint64_t v)
{
	v = htole64(v);
	assert_true(off + sizeof(v) <= b.size());
	std::memcpy(&b[off], &v, sizeof(v));
}

inline void put_bytes(Buf &b, size_t off, size_t field_len, std::string_view bytes)
{
	assert_true(off + field_len <= b.size());
	std::memset(&b[off], 0, field_len);
	std::memcpy(&b[off], bytes.data(), std::min(bytes.size(), field_len));
}

inline bool contains(const std::string &s, const char *part)
{
	return s.find(part) != std::string::npos;
}

inline constexpr size_t kLen = offsetof(mdr_wire_hdr, length);

inline Buf encode(const w::Body &body, uint64_t req_id = kReqId)
{
	Buf out(MDR_WIRE_MSG_MAX);
	auto n = w::encode(out, req_id, body);

	if (!n.ok())
		fail_msg("encode: %s", n.message().c_str());
	out.resize(n.value());
	return out;
}

inline uint16_t opcode_of(const w::Body &b)
{
	return std::visit([](const auto &m) -> uint16_t {
		using T = std::decay_t<decltype(m)>;
		if constexpr (std::is_same_v<T, w::ErrorRep>)
			return m.opcode;
		else
			return T::opcode;
	}, b);
}

inline bool reply_of(const w::Body &b)
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
inline Side receiver_of(const w::Body &b)
{
	const bool to_node = opcode_of(b) == MDR_OP_INVALIDATE ? reply_of(b)
							      : !reply_of(b);
	return to_node ? Side::node : Side::client;
}

inline mdr_wire_role role_of(const w::Body &b)
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

inline mdr::Result<w::Msg> parse_as(const Buf &b, const w::Body &like)
{
	return w::parse(b, receiver_of(like), role_of(like));
}

// ---- Samples: one valid message of every kind -----------------------------

inline w::Volume volume(uint64_t id, const char *name)
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

inline w::Invalidate inval()
{
	w::Invalidate m;

	m.volume_id = kVol;
	m.first = 16;
	m.count = 4;
	m.generation = 10;
	m.reason = MDR_INVAL_MOVE;
	return m;
}

inline w::InvalidateAck inval_ack()
{
	w::InvalidateAck m;

	static_cast<w::InvalRange &>(m) = inval();
	return m;
}

// Version 2's ack of a MOVE, with dirty granules.
inline w::InvalidateAck inval_ack_tracked()
{
	w::InvalidateAck m = inval_ack();

	m.count = 1;
	m.extended = true;
	m.flags = MDR_INVAL_ACK_F_TRACKED;
	m.dirty = 0x8000000000000021;
	return m;
}

inline w::Invalidate inval_track()
{
	w::Invalidate m = inval();

	m.count = 1;
	m.reason = MDR_INVAL_TRACK;
	return m;
}

inline w::OpenRep open_rep()
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

inline w::AllocRep alloc_rep()
{
	w::AllocRep m;

	m.volume_id = kVol;
	m.index = kIndex;
	m.entry = {9, 0x80000, 3, MDR_EXT_MAPPED};
	return m;
}

// Version 7: replica 1 serves group 7 at epoch 5, its epoch record here.
inline w::Serving serving()
{
	return {.epoch = 5, .record_addr = 0x7f0000200000, .record_rkey = 0xabcd};
}

inline w::OpenRep open_rep_v7()
{
	w::OpenRep m = open_rep();

	m.serving = serving();
	return m;
}

inline w::AllocRep alloc_rep_v7()
{
	w::AllocRep m = alloc_rep();

	m.serving = serving();
	return m;
}

template <typename T>
inline T vol_rep(std::vector<w::DevExtents> devs)
{
	T m;

	m.vol = volume(kVol, "vol.A_1-x");
	m.devs = std::move(devs);
	return m;
}

inline w::DevListRep dev_list_rep()
{
	w::DevListRep m;

	m.next = 0;
	m.devs = {{3, uint64_t{1} << 40, uint64_t{1} << 30, "S3EVNX0K123456 W"},
		  {5, uint64_t{1} << 39, 0, ""}};
	return m;
}

inline w::VolListRep vol_list_rep()
{
	w::VolListRep m;

	m.next = 99;
	m.vols = {volume(3, "a"), volume(7, "b.c"),
		  volume(98, std::string(63, 'z').c_str())};
	return m;
}

inline w::NodeStatsRep node_stats_rep()
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

inline w::MoveRep move_rep()
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

inline w::DrainRep drain_rep()
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

// Replica 1 of group 7 leads in epoch 5; replica 3 joins, a learner behind.
inline w::GroupStatusRep group_status_rep()
{
	return {.group = 7, .epoch = 5, .last_index = 90, .commit_index = 88, .self = 1,
		.leader = 1, .role = MDR_REPLICA_LEADER,
		.replicas = {{.durable = 90, .id = 1, .state = MDR_PEER_SELF, .port = 4800,
			      .family = MDR_FAMILY_IPV4, .addr = {192, 0, 2, 11}},
			     {.durable = 88, .id = 2, .state = MDR_PEER_STREAMING, .port = 4800,
			      .family = MDR_FAMILY_IPV4, .addr = {192, 0, 2, 12}},
			     {.durable = 0, .id = 3, .state = MDR_PEER_NEEDS_CHECKPOINT,
			      .port = 4800, .family = MDR_FAMILY_IPV6,
			      .membership = MDR_MEMBER_LEARNER,
			      .addr = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3}}}};
}

// The same on version 7: where replicas 1 and 3 serve hosts; 2's is not
// known.
inline w::GroupStatusRep group_status_rep_v7()
{
	w::GroupStatusRep g = group_status_rep();

	g.extended = true;
	g.replicas[0].host_port = 4791;
	g.replicas[0].host_family = MDR_FAMILY_IPV4;
	g.replicas[0].host_addr = {192, 0, 2, 1};
	g.replicas[2].host_port = 4792;
	g.replicas[2].host_family = MDR_FAMILY_IPV6;
	g.replicas[2].host_addr = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x13};
	return g;
}

// Replica 4 joins with its log listener at 192.0.2.14:4800.
inline w::ReplicaAddReq replica_add()
{
	return {.id = 4, .port = 4800, .family = MDR_FAMILY_IPV4, .addr = {192, 0, 2, 14}};
}

// A follower's answer to an ALLOC: replica 2 leads at 192.0.2.12:4791.
inline w::ErrorRep not_leader()
{
	return {.opcode = MDR_OP_ALLOC, .status = MDR_ST_NOT_LEADER,
		.leader = w::Leader{.epoch = 0x1234, .replica = 2, .port = 4791,
				    .family = MDR_FAMILY_IPV4, .addr = {192, 0, 2, 12}}};
}

inline w::HostListRep host_list_rep()
{
	w::HostListRep m;
	m.next = 0x200;
	m.hosts = {{.host_id = 0x93, .tenant = 1, .connections = 2, .leases = 3},
		   {.host_id = 0x100, .tenant = 7, .connections = 0, .leases = 0}};
	return m;
}

inline std::vector<w::Body> samples()
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
		open_rep_v7(),
		w::RenewRep{.lease_ms = 3000, .serving = serving()},
		w::RenewRep{.lease_ms = 1, .serving = w::Serving{}},	// a node of its own
		alloc_rep_v7(),
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
		not_leader(),
		w::GroupStatusReq{},
		group_status_rep(),
		group_status_rep_v7(),
		w::GroupStatusRep{},
		replica_add(),
		w::ReplicaAddReq{.id = UINT32_MAX, .port = 1, .family = MDR_FAMILY_IPV6,
				 .addr = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4}},
		w::ReplicaAddRep{},
		w::ReplicaRemoveReq{.id = 2},
		w::ReplicaRemoveRep{},
		w::ErrorRep{.opcode = MDR_OP_REPLICA_ADD, .status = MDR_ST_BUSY},
		w::ErrorRep{.opcode = MDR_OP_VOL_CREATE, .status = MDR_ST_NOT_LEADER,
			    .leader = w::Leader{}},
		w::ErrorRep{.opcode = MDR_OP_OPEN, .status = MDR_ST_NOT_LEADER,
			    .leader = w::Leader{.epoch = 3, .replica = 7, .port = 4791,
						.family = MDR_FAMILY_IPV6,
						.addr = {0xfd, 0, 0, 0, 0, 0, 0, 0,
							 0, 0, 0, 0, 0, 0, 0, 1}}},
	};
}

// A message parse() accepted encodes back to the same bytes: nothing the
// receiver does not see survives a successful parse (NODE_STATS replies
// of later versions excepted: their extra counters are dropped).
inline void check_canonical(std::span<const std::byte> received, const w::Msg &m)
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

// ---- Mutations of an encoded message --------------------------------------

using Mutation = std::function<void(Buf &)>;

inline Mutation set16(size_t off, uint16_t v) { return [=](Buf &b) { put16(b, off, v); }; }
inline Mutation set32(size_t off, uint32_t v) { return [=](Buf &b) { put32(b, off, v); }; }
inline Mutation set64(size_t off, uint64_t v) { return [=](Buf &b) { put64(b, off, v); }; }
inline Mutation set8(size_t off, uint8_t v) { return [=](Buf &b) { put8(b, off, v); }; }
inline Mutation flip8(size_t off) { return [=](Buf &b) { b.at(off) ^= std::byte{0x01}; }; }

// ---- Connect requests -----------------------------------------------------

inline w::ConnReq host_req()
{
	return {.version_min = 1, .version_max = 1, .role = MDR_ROLE_HOST,
		.tenant = 9, .host_id = 0xfeedface, .queue_depth = 32,
		.recv_depth = 48, .max_msg = 4096};
}

inline w::ConnReq admin_req()
{
	return {.version_min = 1, .version_max = 3, .role = MDR_ROLE_ADMIN,
		.tenant = 0, .host_id = 0x1234, .queue_depth = 1,
		.recv_depth = 2, .max_msg = MDR_WIRE_MSG_MIN};
}

} // namespace mdr::test

#endif // MDR_TESTS_TEST_WIRE_H
