// SPDX-License-Identifier: GPL-2.0
//
// test_wire_reject.cc - every rejection a receiver of the wire codec owes:
// one table row per malformed field of every message, each a valid sample
// with one mutation and the errno and message parse() must answer; and the
// header mdnode still reads from a message parse() refused.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lib/wire/wire.h"

#include "tests/test_wire.h"

#include "tests/common/cmocka_cxx.h"

namespace {

using namespace mdr::test;

// ---- Rejections -----------------------------------------------------------

struct Row {
	const char *what;
	w::Body base;
	Mutation mutate;
	int err;			// the -errno parse() returns
	const char *part;		// of its message
	std::optional<Side> receiver{};	// default: the base's
	std::optional<mdr_wire_role> role{};
};

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

	const w::Body nl = not_leader();
	const w::Body gs = group_status_rep();
	const auto gr = [](size_t i, size_t field) {
		return sizeof(mdr_wire_group_status_rep) + i * sizeof(mdr_wire_replica) + field;
	};
#define GOFF(field) offsetof(mdr_wire_group_status_rep, field)
#define ROFF(field) offsetof(mdr_wire_replica, field)
	const w::Body gs7 = group_status_rep_v7();
	const auto gx = [](size_t i, size_t field) {
		return sizeof(mdr_wire_group_status_rep) + i * sizeof(mdr_wire_replica_ext) + field;
	};
#define XOFF(field) offsetof(mdr_wire_replica_ext, field)
	const w::Body rrep7 = w::RenewRep{.lease_ms = 3000, .serving = serving()};
	const w::Body own7 = w::RenewRep{.lease_ms = 3000, .serving = w::Serving{}};
	const w::Body orep7 = open_rep_v7();
	const w::Body arep7 = alloc_rep_v7();
	constexpr size_t kServing = sizeof(mdr_wire_renew_rep);
#define SOFF(field) offsetof(mdr_wire_serving, field)
	const w::Body add = replica_add();
	const w::Body remove = w::ReplicaRemoveReq{.id = 2};
#define COFF(field) offsetof(mdr_wire_replica_change_req, field)
	constexpr size_t kLeader = sizeof(mdr_wire_hdr);
#define LOFF(field) offsetof(mdr_wire_leader, field)
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
		 "open_rep: status 14 out of range"},
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
		{"not-leader without its leader", nl, resize_to(24), -EPROTO,
		 "alloc_rep: error reply of 24 bytes, expected 56"},
		{"leader with another status", nl, set16(6, MDR_ST_AGAIN), -EPROTO,
		 "alloc_rep: error reply of 56 bytes, expected 24"},
		{"leader family", nl, set8(kLeader + LOFF(family), 5), -EINVAL,
		 "alloc_rep: leader: unknown family 5"},
		{"leader reserved", nl, set8(kLeader + LOFF(reserved), 1), -EINVAL,
		 "alloc_rep: leader: reserved not zero"},
		{"leader IPv4 long", nl, set8(kLeader + LOFF(addr) + 4, 1), -EINVAL,
		 "IPv4 address with more than 4 bytes"},
		{"leader port zero", nl, set16(kLeader + LOFF(port), 0), -EINVAL,
		 "leader 2 without an epoch, port or family"},
		{"leader epoch zero", nl, set64(kLeader + LOFF(epoch), 0), -EINVAL,
		 "without an epoch"},
		{"address without leader", nl, set32(kLeader + LOFF(replica), 0), -EINVAL,
		 "an address or epoch without a leader"},
		{"group_status partial", gs, grow(9), -EPROTO, "not 72 + a multiple of 40 or 64"},
		{"group_status of two sizes", gs, grow(8), -EPROTO,
		 "group_status_rep: count 3: the length 200 is not 72 + a multiple of 40"},
		{"group_status v7 partial", gs7, grow(24), -EPROTO,
		 "not 72 + a multiple of 40 or 64"},
		{"group_status v7 count", gs7, set16(GOFF(count), 2), -EPROTO,
		 "group_status_rep: count 2: the length 264 is not 72 + a multiple of 40"},
		{"replica host family", gs7, set8(gx(0, XOFF(host_family)), 3), -EINVAL,
		 "group_status_rep: replicas[0]: host_family 3 unknown"},
		{"replica host port zero", gs7, set16(gx(0, XOFF(host_port)), 0), -EINVAL,
		 "group_status_rep: replicas[0]: host_port zero"},
		{"replica host port unknown", gs7, set16(gx(1, XOFF(host_port)), 4791), -EINVAL,
		 "replicas[1]: a host port or address without a family"},
		{"replica host address unknown", gs7, set8(gx(1, XOFF(host_addr) + 15), 1),
		 -EINVAL, "replicas[1]: a host port or address without a family"},
		{"replica host IPv4 long", gs7, set8(gx(0, XOFF(host_addr) + 4), 1), -EINVAL,
		 "replicas[0]: IPv4 host address with more than 4 bytes"},
		{"replica host reserved", gs7, set8(gx(2, XOFF(reserved) + 4), 1), -EINVAL,
		 "group_status_rep: replicas[2]: reserved not zero"},
		{"replica v7 log family", gs7, set8(gx(1, ROFF(family)), 0), -EINVAL,
		 "replicas[1]: family 0 unknown"},
		{"serving reserved", rrep7, set32(kServing + SOFF(reserved), 1), -EINVAL,
		 "renew_rep: serving: reserved not zero"},
		{"serving record without epoch", rrep7, set64(kServing + SOFF(epoch), 0), -EINVAL,
		 "renew_rep: serving: an epoch record without an epoch"},
		{"serving rkey without epoch", own7, set32(kServing + SOFF(record_rkey), 9),
		 -EINVAL, "renew_rep: serving: an epoch record without an epoch"},
		{"serving address without epoch", own7, set64(kServing + SOFF(record_addr), 9),
		 -EINVAL, "renew_rep: serving: an epoch record without an epoch"},
		{"serving epoch without rkey", rrep7, set32(kServing + SOFF(record_rkey), 0),
		 -EINVAL, "renew_rep: serving: epoch 5 without its record's rkey"},
		{"open_rep serving reserved", orep7,
		 set32(sizeof(mdr_wire_open_rep) + SOFF(reserved), 0x100), -EINVAL,
		 "open_rep: serving: reserved not zero"},
		{"alloc_rep serving no rkey", arep7,
		 set32(sizeof(mdr_wire_alloc_rep) + SOFF(record_rkey), 0), -EINVAL,
		 "alloc_rep: serving: epoch 5 without its record's rkey"},
		{"alloc_rep v7 entry", arep7, set8(offsetof(mdr_wire_alloc_rep, entry) + 3, 0x40),
		 -EINVAL, "alloc_rep: entry: bad crc"},
		{"renew_rep between forms", rrep7, grow(8), -EPROTO,
		 "renew_rep: length 64, expected 32 or 56"},
		{"open_rep between forms", orep7, grow(8), -EPROTO,
		 "open_rep: length 176, expected 144 or 168"},
		{"group_status count", gs, set16(GOFF(count), 2), -EPROTO,
		 "group_status_rep: count 2 disagrees with the length (3 replicas)"},
		{"group_status role", gs, set16(GOFF(role), MDR_REPLICA_ROLE_MAX), -EINVAL,
		 "group_status_rep: role 5 out of range"},
		{"group_status commit past last", gs, set64(GOFF(commit_index), 91), -EINVAL,
		 "commit_index 91 past last_index 90"},
		{"group_status leader without epoch", gs, set64(GOFF(epoch), 0), -EINVAL,
		 "leader 1 with epoch 0"},
		{"group_status self elsewhere", gs, set32(GOFF(self), 2), -EINVAL,
		 "replicas[0]: replica 1 state 1 with self 2"},
		{"group_status own node", gs, set64(GOFF(group), 0), -EINVAL,
		 "a node of its own with a replica's fields"},
		{"replica order", gs, set32(gr(1, ROFF(id)), 1), -EINVAL,
		 "replicas[1]: id 1 not in ascending order"},
		{"replica state", gs, set16(gr(1, ROFF(state)), MDR_PEER_STATE_MAX), -EINVAL,
		 "replicas[1]: state 7 out of range"},
		{"replica family", gs, set8(gr(1, ROFF(family)), 5), -EINVAL,
		 "replicas[1]: family 5 unknown"},
		{"replica IPv4 long", gs, set8(gr(1, ROFF(addr)) + 4, 1), -EINVAL,
		 "replicas[1]: IPv4 address with more than 4 bytes"},
		{"replica port", gs, set16(gr(1, ROFF(port)), 0), -EINVAL,
		 "replicas[1]: port zero"},
		{"replica reserved", gs, set8(gr(2, ROFF(reserved)) + 5, 1), -EINVAL,
		 "replicas[2]: reserved not zero"},
		{"replica membership", gs, set8(gr(1, ROFF(membership)), MDR_MEMBER_MAX), -EINVAL,
		 "replicas[1]: membership 4 out of range"},
		{"replica_add admin only", add, nullptr, -EPERM,
		 "replica_add_req: not allowed on host connections", Side::node, MDR_ROLE_HOST},
		{"replica_add short", add, resize_to(40), -EPROTO,
		 "replica_add_req: length 40, expected 48"},
		{"replica_add id", add, set32(COFF(id), 0), -EINVAL, "replica_add_req: id zero"},
		{"replica_add reserved", add, set8(COFF(reserved), 1), -EINVAL,
		 "replica_add_req: reserved not zero"},
		{"replica_add port", add, set16(COFF(port), 0), -EINVAL,
		 "replica_add_req: port zero"},
		{"replica_add no family", add, set8(COFF(family), MDR_FAMILY_NONE), -EINVAL,
		 "replica_add_req: family 0 unknown"},
		{"replica_add family", add, set8(COFF(family), 5), -EINVAL,
		 "replica_add_req: family 5 unknown"},
		{"replica_add IPv4 long", add, set8(COFF(addr) + 15, 1), -EINVAL,
		 "replica_add_req: IPv4 address with more than 4 bytes"},
		// A removal names the replica alone: any part of an address is refused.
		{"replica_remove id", remove, set32(COFF(id), 0), -EINVAL, "replica_remove_req: id zero"},
		{"replica_remove listener", remove,
		 [](Buf &b) {
			 put16(b, COFF(port), 4800);
			 put8(b, COFF(family), MDR_FAMILY_IPV4);
			 put8(b, COFF(addr), 192);
		 },
		 -EINVAL, "replica_remove_req: port, family or address with a removal"},
		{"replica_remove port", remove, set16(COFF(port), 4800), -EINVAL, "address with a removal"},
		{"replica_remove family", remove, set8(COFF(family), 4), -EINVAL, "address with a removal"},
		{"replica_remove address", remove, set8(COFF(addr) + 3, 14), -EINVAL, "with a removal"},
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
		 "drain_rep: status 14 out of range"},
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
		 "inval_ack: length 72, expected 64 or 80"},
		{"ack length 88", ack2, grow(8), -EPROTO, "inval_ack: length 88, expected 64 or 80"},
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

#undef LOFF
#undef GOFF
#undef ROFF
#undef COFF
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

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rejections),
		cmocka_unit_test(test_peek_header_of_rejected),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
