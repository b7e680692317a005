// SPDX-License-Identifier: GPL-2.0
//
// test_wire_messages.cc - every message of the wire codec: a round trip of
// each (the bytes parse() reads back encode to the same), the header's bytes,
// trailing bytes, the largest lists, NODE_STATS replies of every version's
// length, and the encoders refusing what receivers refuse.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <variant>
#include <vector>

#include "lib/wire/wire.h"

#include "tests/test_wire.h"

#include "tests/common/cmocka_cxx.h"

namespace {

using namespace mdr::test;

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

// REPLICA_ADD's bytes; REPLICA_REMOVE's the same layout, the id alone. A
// replica's membership is the byte after its family.
void test_replica_change_bytes(void **)
{
	Buf b = encode(replica_add(), 0x11);
	const unsigned char want[] = {
		0x6d, 0x4d, 0x2e, 0x00, 0x00, 0x00, 0x00, 0x00,	// mM, REPLICA_ADD
		0x30, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	// length 48
		0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	// req_id
		0x04, 0x00, 0x00, 0x00, 0xc0, 0x12, 0x04, 0x00,	// id 4, port 4800, IPv4
		0xc0, 0x00, 0x02, 0x0e, 0x00, 0x00, 0x00, 0x00,	// 192.0.2.14
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	assert_int_equal(b.size(), sizeof(want));
	assert_memory_equal(b.data(), want, sizeof(want));

	b = encode(w::ReplicaRemoveReq{.id = 4}, 0x11);
	assert_int_equal(b.size(), sizeof(want));
	assert_int_equal(std::to_integer<int>(b[2]), MDR_OP_REPLICA_REMOVE);
	for (size_t i = 28; i < sizeof(want); i++)
		assert_int_equal(std::to_integer<int>(b[i]), 0);

	b = encode(group_status_rep());
	const size_t third = sizeof(mdr_wire_group_status_rep) + 2 * sizeof(mdr_wire_replica);
	assert_int_equal(std::to_integer<int>(b[third + 16]), MDR_FAMILY_IPV6);
	assert_int_equal(std::to_integer<int>(b[third + 17]), MDR_MEMBER_LEARNER);
}

// Version 7: a RENEW reply ends with who served it; the other OK replies
// to OPEN and ALLOC likewise, after version 6's.
void test_serving_bytes(void **)
{
	const Buf b = encode(w::RenewRep{.lease_ms = 3000, .serving = serving()}, 0x22);
	const unsigned char want[] = {
		0x6d, 0x4d, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00,	// mM, RENEW, reply
		0x38, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	// length 56
		0x22, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	// req_id
		0xb8, 0x0b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	// lease 3000 ms
		0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	// epoch 5
		0x00, 0x00, 0x20, 0x00, 0x00, 0x7f, 0x00, 0x00,	// record_addr
		0xcd, 0xab, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	// record_rkey, reserved
	};
	assert_int_equal(b.size(), sizeof(want));
	assert_memory_equal(b.data(), want, sizeof(want));

	assert_int_equal(encode(open_rep_v7()).size(), sizeof(mdr_wire_open_rep_v7));
	assert_int_equal(encode(alloc_rep_v7()).size(), sizeof(mdr_wire_alloc_rep_v7));
	assert_int_equal(encode(open_rep()).size(), sizeof(mdr_wire_open_rep));
	// A node of its own serves at epoch 0: all zero, and still there.
	const Buf own = encode(w::RenewRep{.lease_ms = 1, .serving = w::Serving{}});
	assert_int_equal(own.size(), sizeof(mdr_wire_renew_rep_v7));
	for (size_t i = sizeof(mdr_wire_renew_rep); i < own.size(); i++)
		assert_int_equal(std::to_integer<int>(own[i]), 0);
}

// Version 7's GROUP_STATUS: 64-byte replicas, each ending with where it
// serves hosts.
void test_group_status_v7_bytes(void **)
{
	const Buf b = encode(group_status_rep_v7());
	const size_t first = sizeof(mdr_wire_group_status_rep);
	const size_t third = first + 2 * sizeof(mdr_wire_replica_ext);

	assert_int_equal(b.size(), first + 3 * 64);
	assert_int_equal(std::to_integer<int>(b[first + 40]), 0xb7);	// port 4791
	assert_int_equal(std::to_integer<int>(b[first + 41]), 0x12);
	assert_int_equal(std::to_integer<int>(b[first + 42]), MDR_FAMILY_IPV4);
	assert_int_equal(std::to_integer<int>(b[first + 48]), 192);
	assert_int_equal(std::to_integer<int>(b[first + 51]), 1);
	for (size_t i = first + 64 + 40; i < first + 128; i++)	// 2's: not known
		assert_int_equal(std::to_integer<int>(b[i]), 0);
	assert_int_equal(std::to_integer<int>(b[third + 16]), MDR_FAMILY_IPV6);	// log
	assert_int_equal(std::to_integer<int>(b[third + 42]), MDR_FAMILY_IPV6);	// hosts
	assert_int_equal(std::to_integer<int>(b[third + 63]), 0x13);
}

// The four-argument parse() takes the form of the connection's version
// alone; the others are the same on every version.
void test_forms_by_version(void **)
{
	struct Row {
		w::Body body;
		bool v6, v7;	// accepted on a connection of version 6, of 7
	} rows[] = {
		{open_rep(), true, false},
		{open_rep_v7(), false, true},
		{w::RenewRep{.lease_ms = 1}, true, false},
		{w::RenewRep{.lease_ms = 1, .serving = w::Serving{}}, false, true},
		{alloc_rep(), true, false},
		{alloc_rep_v7(), false, true},
		{group_status_rep(), true, false},
		{group_status_rep_v7(), false, true},
		{w::GroupStatusRep{}, true, true},	// no replicas: either
		{vol_list_rep(), true, true},
		{w::ErrorRep{.opcode = MDR_OP_OPEN, .status = MDR_ST_NOSPC}, true, true},
	};
	for (const Row &r : rows) {
		const Buf b = encode(r.body);
		for (uint16_t v : {uint16_t{6}, w::kEpochVersion}) {
			const bool want = v == 6 ? r.v6 : r.v7;
			auto m = w::parse(b, receiver_of(r.body), role_of(r.body), v);
			assert_int_equal(m.ok(), want);
			assert_int_equal(w::check_version_form(r.body, v).ok(), want);
			if (!want) {
				assert_int_equal(m.error(), -EPROTO);
				assert_true(contains(m.message(), "version 7"));
			}
		}
		// Before 6 as on 6.
		assert_int_equal(w::check_version_form(r.body, 1).ok(), r.v6);
	}
	auto m = w::parse(encode(open_rep()), Side::client, MDR_ROLE_HOST, 7);
	assert_string_equal(m.message().c_str(),
			    "open_rep: no struct mdr_wire_serving on version 7 or later");
	m = w::parse(encode(alloc_rep_v7()), Side::client, MDR_ROLE_HOST, 6);
	assert_string_equal(m.message().c_str(),
			    "alloc_rep: struct mdr_wire_serving before version 7");
	m = w::parse(encode(group_status_rep()), Side::client, MDR_ROLE_ADMIN, 7);
	assert_string_equal(m.message().c_str(),
			    "group_status_rep: replicas of 40 bytes on version 7 or later");
}

// The leader's epoch record: its bytes, its CRC-32C (computed apart from
// the code), and what a reader makes of a torn or foreign one.
void test_epoch_record(void **)
{
	const w::EpochRecord r{.replica = 2, .group = 7, .epoch = 0x1122334455667788};
	const mdr_wire_epoch_rec e = w::make_epoch_record(r);
	const unsigned char want[] = {
		0x4d, 0x52, 0x50, 0x45, 0x02, 0x00, 0x00, 0x00,	// "MRPE", replica 2
		0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	// group 7
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,	// epoch
		0x00, 0x00, 0x00, 0x00, 0x75, 0xb6, 0x63, 0xfc,	// reserved, crc
	};
	static_assert(sizeof(want) == sizeof(mdr_wire_epoch_rec));
	assert_memory_equal(&e, want, sizeof(want));
	assert_int_equal(w::epoch_record_crc(e), 0xfc63b675);
	assert_true(w::verify_epoch_record(e) == w::EpochRecordCheck::ok);
	assert_true(w::decode_epoch_record(e) == r);

	// It stopped serving: epoch 0, a new crc.
	const mdr_wire_epoch_rec off = w::make_epoch_record({.replica = 2, .group = 7});
	assert_int_equal(w::load(off.crc), 0x12ff6145);
	assert_true(w::verify_epoch_record(off) == w::EpochRecordCheck::ok);
	assert_int_equal(w::decode_epoch_record(off).epoch, 0);

	// Half old, half new (a READ that a write raced): torn.
	mdr_wire_epoch_rec torn = e;
	std::memcpy(&torn.epoch, &off.epoch, sizeof(torn.epoch));
	assert_true(w::verify_epoch_record(torn) == w::EpochRecordCheck::torn);
	for (size_t i = 0; i < sizeof(e); i++) {
		mdr_wire_epoch_rec flip = e;
		reinterpret_cast<unsigned char *>(&flip)[i] ^= 0x10;
		assert_true(w::verify_epoch_record(flip) == w::EpochRecordCheck::torn);
	}
	// Sealed, but not a record: bad.
	mdr_wire_epoch_rec bad = e;
	w::store(bad.magic, MDR_WIRE_MSG_MAGIC);
	w::store(bad.crc, w::epoch_record_crc(bad));
	assert_true(w::verify_epoch_record(bad) == w::EpochRecordCheck::bad);
	bad = e;
	w::store(bad.reserved, 1);
	w::store(bad.crc, w::epoch_record_crc(bad));
	assert_true(w::verify_epoch_record(bad) == w::EpochRecordCheck::bad);
	// All zero (never written): torn, not a record at epoch 0.
	assert_true(w::verify_epoch_record(mdr_wire_epoch_rec{}) == w::EpochRecordCheck::torn);
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
		{w::ErrorRep{.opcode = MDR_OP_OPEN, .status = MDR_ST_NOT_LEADER}, -EINVAL,
		 "open_rep: no leader with status 13"},
		{w::ErrorRep{.opcode = MDR_OP_OPEN, .status = MDR_ST_AGAIN, .leader = w::Leader{}},
		 -EINVAL, "open_rep: a leader with status 10"},
		{w::ErrorRep{.opcode = MDR_OP_OPEN, .status = MDR_ST_NOT_LEADER,
			     .leader = w::Leader{.epoch = 1, .replica = 1, .port = 1, .family = 5}},
		 -EINVAL, "open_rep: leader: unknown family 5"},
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
		{w::ReplicaAddReq{.id = 4, .family = MDR_FAMILY_IPV4, .addr = {192, 0, 2, 14}},
		 -EINVAL, "replica_add_req: port zero"},
		{w::ReplicaAddReq{.id = 4, .port = 4800}, -EINVAL, "replica_add_req: family 0 unknown"},
		{w::ReplicaRemoveReq{.id = 4, .port = 4800}, -EINVAL,
		 "replica_remove_req: port, family or address with a removal"},
		{[] {
			 w::GroupStatusRep g = group_status_rep_v7();
			 g.extended = false;
			 return g;
		 }(),
		 -EINVAL, "group_status_rep: a host address in the replicas of version 6"},
		{w::RenewRep{.lease_ms = 1, .serving = w::Serving{.epoch = 3}}, -EINVAL,
		 "renew_rep: serving: epoch 3 without its record's rkey"},
		{w::RenewRep{.lease_ms = 1, .serving = w::Serving{.record_rkey = 3}}, -EINVAL,
		 "renew_rep: serving: an epoch record without an epoch"},
		{w::GroupStatusRep{.group = 7, .self = 1, .role = MDR_REPLICA_FOLLOWER,
				   .replicas = {{.id = 1, .state = MDR_PEER_SELF, .port = 4800,
						 .family = MDR_FAMILY_IPV4, .membership = MDR_MEMBER_MAX,
						 .addr = {192, 0, 2, 11}}}},
		 -EINVAL, "group_status_rep: replicas[0]: membership 4 out of range"},
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

// The leader's record in etcd, "ADDR:PORT", as a NOT_LEADER reply names
// it, and back; what no client can be sent to is none. An endpoint alone
// the same way.
void test_leader_at(void **)
{
	auto l = w::leader_at(9, 2, "192.0.2.12:4791");
	assert_true(l.has_value());
	assert_true(*l == (w::Leader{.epoch = 9, .replica = 2, .port = 4791,
				     .family = MDR_FAMILY_IPV4, .addr = {192, 0, 2, 12}}));
	assert_string_equal(w::leader_host(*l).c_str(), "192.0.2.12");
	assert_true(encode(w::ErrorRep{.opcode = MDR_OP_ALLOC, .status = MDR_ST_NOT_LEADER,
				       .leader = *l}).size() == 56);

	l = w::leader_at(9, 3, "[fd00::5]:4800");
	assert_true(l.has_value());
	assert_int_equal(l->family, MDR_FAMILY_IPV6);
	assert_int_equal(l->port, 4800);
	assert_string_equal(w::leader_host(*l).c_str(), "fd00::5");

	for (const char *bad : {"192.0.2.12", "192.0.2.12:", "192.0.2.12:0", "192.0.2.12:65536",
				"192.0.2.12:47x", "0.0.0.0:4791", "[::]:4791", "fd00::5:4791",
				"[fd00::5:4791", "host.example:4791", ""})
		if (w::leader_at(9, 2, bad).has_value())
			fail_msg("leader_at accepted \"%s\"", bad);
	assert_false(w::leader_at(0, 2, "192.0.2.12:4791").has_value());
	assert_false(w::leader_at(9, 0, "192.0.2.12:4791").has_value());
	assert_string_equal(w::leader_host(w::Leader{}).c_str(), "");

	// The endpoint alone (mdctl's --addr), and any address back as text.
	auto e = w::endpoint_at("[fd00::5]:4800");
	assert_true(e.has_value());
	assert_int_equal(e->address.family, MDR_FAMILY_IPV6);
	assert_int_equal(e->port, 4800);
	assert_string_equal(w::host_text(e->address.family, e->address.addr).c_str(), "fd00::5");
	e = w::endpoint_at("192.0.2.12:4791");
	assert_true(e.has_value());
	assert_string_equal(w::host_text(e->address.family, e->address.addr).c_str(),
			    "192.0.2.12");
	assert_false(w::endpoint_at("192.0.2.12:0").has_value());
	assert_false(w::endpoint_at("[::]:4791").has_value());
	assert_string_equal(w::host_text(MDR_FAMILY_NONE, {}).c_str(), "");
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serving_bytes),
		cmocka_unit_test(test_group_status_v7_bytes),
		cmocka_unit_test(test_forms_by_version),
		cmocka_unit_test(test_epoch_record),
		cmocka_unit_test(test_round_trip_every_message),
		cmocka_unit_test(test_header_bytes),
		cmocka_unit_test(test_replica_change_bytes),
		cmocka_unit_test(test_ping_both_ways),
		cmocka_unit_test(test_trailing_bytes_ignored),
		cmocka_unit_test(test_largest_lists_fit),
		cmocka_unit_test(test_node_stats_lengths),
		cmocka_unit_test(test_encoders_refuse_what_receivers_refuse),
		cmocka_unit_test(test_leader_at),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
