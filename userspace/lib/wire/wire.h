// SPDX-License-Identifier: GPL-2.0
//
// wire.h - codec of the metadata protocol of <linux/mdroute_wire.h>, shared
// by mdnode (the responder) and the clients (mdctl, tests).
//
//	std::byte buf[MDR_WIRE_MSG_MIN];
//	auto len = wire::encode(buf, req_id, wire::OpenReq{.volume_id = 7});
//	...
//	auto msg = wire::parse(received, wire::Side::node, MDR_ROLE_HOST);
//	if (!msg.ok())
//		return count_and_log(msg.error(), msg.message());
//	std::visit(handler, msg.value().body);
//
// The receiver trusts nothing: parse() checks a received message in the
// order the protocol lists (framing, header, size for the opcode and the
// direction, then every field of the body) and returns a host-endian copy;
// it never reads beyond what was received and never keeps a pointer into
// it. Framing, header and size errors are -EPROTO, bad fields -EINVAL, and
// a request on a connection of the wrong role is -EPERM: errno_to_status()
// turns each into the status mdnode replies with. Encoders refuse to write
// what a receiver would refuse (-EINVAL), or what does not fit the buffer
// or MDR_WIRE_MSG_MAX (-EMSGSIZE).
//
// The codec comes from one description (lib/wire/): every wire struct is
// described once in layouts.h, field by field in the order the receiver
// checks it, and the opcode table in table.cc names, per opcode, the
// connections it is allowed on, its direction, whether it needs the admin
// key, and the layouts of its request and reply. Decoding, encoding, the
// size and role checks and the docs' message table all follow from them.
//
// Where the header is silent, this codec decides, and both sides use it:
//   - a reply whose status is not MDR_ST_OK is the header alone (ErrorRep),
//     but for MDR_ST_NOT_LEADER's, the header and struct mdr_wire_leader;
//   - messages without a body struct are the header alone: PING both ways,
//     NODE_STATS requests, and the replies to CLOSE, AUTH and VOL_DELETE;
//   - volume id 0 names no volume (RENEW uses it for "every lease"), device
//     id 0 no device (an unallocated entry has it);
//   - OPEN by id carries an all-zero name, OPEN by name a zero volume id;
//   - NODE_STATS replies may be longer than version 1's (later versions
//     append __le64 counters): the migration counters (struct
//     mdr_wire_node_stats_mig), then the push counters (struct
//     mdr_wire_node_stats_push), then the copy counters (struct
//     mdr_wire_node_stats_copy), are read when the length covers them
//     (zero otherwise), then the authentication counters (struct
//     mdr_wire_node_stats_auth), then the limits counters (struct
//     mdr_wire_node_stats_limits), and counters beyond them are ignored;
//     this build always sends them;
//   - the accept of a host connection carries a nonce from version 3 on,
//     and an all-zero one before; the OK replies to HOST_ADD,
//     HOST_REMOVE, REPLICA_ADD and REPLICA_REMOVE are the header alone;
//   - MOVE by id carries an all-zero name, MOVE by name a zero volume id;
//     its reply has exactly one element per extent asked for;
//   - the elements of a DEV_LIST reply are struct mdr_wire_device_ext from
//     version 4 on and struct mdr_wire_device before: parse() tells them
//     apart by the count and the length (DevListRep::extended), and reads
//     the short form as a long one with state online and no identity;
//   - likewise the OK replies to OPEN, RENEW and ALLOC end with struct
//     mdr_wire_serving from version 7 on (OpenRep::serving and the others
//     set, else none), and GROUP_STATUS replies have struct
//     mdr_wire_replica_ext elements (GroupStatusRep::extended): parse()
//     takes either form, the four-argument parse() the one of the
//     connection's version alone (check_version_form()).
#ifndef MDR_WIRE_H
#define MDR_WIRE_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <endian.h>

#include <linux/mdroute_wire.h>

#include "lib/util/result.h"

namespace mdr::wire {

// ---------------------------------------------------------------------------
// Little-endian fields: read and write them only through these.

inline uint16_t load(const __le16 &field) { return le16toh(field); }
inline uint32_t load(const __le32 &field) { return le32toh(field); }
inline uint64_t load(const __le64 &field) { return le64toh(field); }
inline void store(__le16 &field, uint16_t value) { field = htole16(value); }
inline void store(__le32 &field, uint32_t value) { field = htole32(value); }
inline void store(__le64 &field, uint64_t value) { field = htole64(value); }
// A byte has no order.
inline uint8_t load(const __u8 &field) { return field; }
inline void store(__u8 &field, uint8_t value) { field = value; }

// ---------------------------------------------------------------------------
// Status and errno: the only translation, each way.

// 0 for MDR_ST_OK, otherwise -errno (-EPROTO for a status out of range).
int status_to_errno(uint16_t status);
// err: 0 or -errno (a positive errno is read as its negation). An errno
// with no status of its own becomes MDR_ST_IO.
uint16_t errno_to_status(int err);
// "MDR_ST_NOSPC"; "MDR_ST_?<n>" for a value out of range.
std::string status_name(uint16_t status);
// "MDR_OP_OPEN"; "MDR_OP_?<n>" for an unknown opcode.
std::string opcode_name(uint16_t opcode);
// Whether a request of this opcode is served only on a connection that
// proved the admin key (MDR_OP_AUTH): every admin RPC but AUTH itself.
// False for an opcode this build does not know. The opcode table says it.
bool needs_auth(uint16_t opcode);
// Whether a message of this opcode (a request, or the ack of a push) is
// taken on a host connection of that negotiated version only once the
// host proved its key (MDR_OP_HOST_AUTH): from version 3 on, every host
// opcode but HOST_AUTH and PING. The opcode table says it.
bool needs_host_auth(uint16_t opcode, uint16_t version);
// The version from which host connections authenticate, and the accept
// of a host connection carries a nonce.
inline constexpr uint16_t kHostAuthVersion = 3;
// The version from which DEV_LIST replies carry each device's identity and
// state (struct mdr_wire_device_ext).
inline constexpr uint16_t kDeviceStateVersion = 4;

// The version from which a replica that does not lead answers
// MDR_ST_NOT_LEADER, naming the leader, where it answered MDR_ST_AGAIN,
// and MDR_OP_GROUP_STATUS is known.
inline constexpr uint16_t kGroupVersion = 5;
// The version from which MDR_OP_REPLICA_ADD and MDR_OP_REPLICA_REMOVE are
// known, and GROUP_STATUS replies carry each replica's membership (older
// peers get it zero: a voter).
inline constexpr uint16_t kMembershipVersion = 6;

// The version from which OK replies to OPEN, RENEW and ALLOC say who
// served them (struct mdr_wire_serving), a group's leader keeps the epoch
// record hosts READ after each window, and GROUP_STATUS replies carry
// where each replica serves hosts (struct mdr_wire_replica_ext).
inline constexpr uint16_t kEpochVersion = MDR_WIRE_VERSION_EPOCH;

// [A-Za-z0-9._-], 1 to MDR_WIRE_NAME_LEN - 1 characters.
bool valid_volume_name(std::string_view name);

// ---------------------------------------------------------------------------
// Extent entries.

struct Entry {
	uint64_t generation = 0;	// starts at 1, only grows
	uint64_t pstart = 0;		// 512-byte sectors
	uint32_t dev_id = 0;		// 0 when unallocated
	uint8_t state = MDR_EXT_UNALLOCATED;	// enum mdr_extent_state

	bool operator==(const Entry &) const = default;
};

// Which rule an entry breaks; verify_entry() checks them in this order.
enum class EntryCheck {
	ok,
	bad_crc,		// torn, misaddressed, foreign or corrupt
	reserved_nonzero,
	bad_state,		// >= MDR_EXT_STATE_MAX
	unallocated_placed,	// unallocated with a dev_id or a pstart
	zero_generation,
	no_device,		// mapped or frozen with dev_id 0
};

// "bad crc", ...
const char *entry_check_name(EntryCheck check);

// The CRC the entry should carry as entry index of that volume.
uint32_t entry_crc(const mdr_wire_entry &e, uint64_t volume_id, uint64_t index);
// Sets e.crc.
void seal_entry(mdr_wire_entry &e, uint64_t volume_id, uint64_t index);
EntryCheck verify_entry(const mdr_wire_entry &e, uint64_t volume_id,
			uint64_t index);
// Encodes and seals the entry as it is, reserved bytes zero: the caller
// (mdnode) keeps entries valid; verify_entry() tells whether they are.
mdr_wire_entry make_entry(const Entry &entry, uint64_t volume_id,
			  uint64_t index);
// Host-endian view of an entry; meaningful once verify_entry() said ok.
Entry decode_entry(const mdr_wire_entry &e);

// ---------------------------------------------------------------------------
// A group leader's epoch record (version 7): READ by hosts after each
// window of a table, in the same post.

struct EpochRecord {
	uint32_t replica = 0;	// the replica's id in its group
	uint64_t group = 0;
	uint64_t epoch = 0;	// 0: it does not serve (any more)

	bool operator==(const EpochRecord &) const = default;
};

// What a READ of a record shows; verify_epoch_record() checks in this order.
enum class EpochRecordCheck {
	ok,
	torn,		// bad crc: a write raced the READ; read it again
	bad,		// another magic, or reserved not zero
};

// The CRC the record should carry: CRC-32C of the 28 bytes before it, the
// entries' convention (~crc32c(~0, ...)).
uint32_t epoch_record_crc(const mdr_wire_epoch_rec &r);
// The record, magic and reserved set, sealed.
mdr_wire_epoch_rec make_epoch_record(const EpochRecord &r);
EpochRecordCheck verify_epoch_record(const mdr_wire_epoch_rec &r);
// Host-endian view; meaningful once verify_epoch_record() said ok.
EpochRecord decode_epoch_record(const mdr_wire_epoch_rec &r);

// ---------------------------------------------------------------------------
// Connection private data.

struct ConnReq {
	uint16_t version_min = MDR_WIRE_VERSION_MIN;
	uint16_t version_max = MDR_WIRE_VERSION;
	mdr_wire_role role = MDR_ROLE_HOST;
	uint32_t tenant = 0;		// 0 on admin connections
	uint64_t host_id = 0;
	uint16_t queue_depth = 0;	// >= 1
	uint16_t recv_depth = 0;	// > queue_depth
	uint32_t max_msg = MDR_WIRE_MSG_MIN;

	bool operator==(const ConnReq &) const = default;
};

struct ConnRep {
	uint16_t version = MDR_WIRE_VERSION;
	uint16_t queue_depth = 0;	// 1 ..= the request's
	uint16_t push_credits = 0;	// <= recv_depth - queue_depth (granted);
					// >= 1 on host connections
	uint32_t max_msg = MDR_WIRE_MSG_MIN;
	uint64_t node_id = 0;
	uint64_t boot_id = 0;
	std::array<uint8_t, 16> nonce{};	// zero on host connections < v3

	bool operator==(const ConnRep &) const = default;
};

struct ConnRej {
	uint16_t version = MDR_WIRE_VERSION;	// mdnode's highest
	uint16_t status = MDR_ST_INVAL;		// never MDR_ST_OK

	bool operator==(const ConnRej &) const = default;
};

// rdma_cm may deliver more private data than was sent (it pads to the
// transport's size): every parse_conn_*() accepts any length from the
// struct's size up, and refuses a shorter one (-EPROTO).
Result<mdr_wire_conn_req> encode_conn_req(const ConnReq &req);
Result<ConnReq> parse_conn_req(std::span<const std::byte> private_data);

// The version both this build and a peer speaking [peer_min, peer_max]
// speak: the highest common one. -EPROTONOSUPPORT (MDR_ST_VERSION) when
// there is none.
Result<uint16_t> negotiate_version(uint16_t peer_min, uint16_t peer_max);

// The accept of the connect request req: checked against it.
Result<mdr_wire_conn_rep> encode_conn_rep(const ConnRep &rep, const ConnReq &req);
Result<ConnRep> parse_conn_rep(std::span<const std::byte> private_data,
			       const ConnReq &sent);

Result<mdr_wire_conn_rej> encode_conn_rej(const ConnRej &rej);
Result<ConnRej> parse_conn_rej(std::span<const std::byte> private_data);

// ---------------------------------------------------------------------------
// Messages: one struct per message and direction. opcode and reply say
// which; encode() fills the header from them.

#define MDR_WIRE_MSG(T, op, is_reply)				\
	static constexpr uint16_t opcode = (op);		\
	static constexpr bool reply = (is_reply);		\
	bool operator==(const T &) const = default

// The messages that are the header alone: PING both ways, NODE_STATS and
// GROUP_STATUS requests, and the OK replies to CLOSE, AUTH, VOL_DELETE,
// HOST_ADD, HOST_REMOVE, REPLICA_ADD and REPLICA_REMOVE.
template <uint16_t Op, bool Reply>
struct HeaderAlone {
	MDR_WIRE_MSG(HeaderAlone, Op, Reply);
};

// The requests of the paged lists (VOL_LIST, DEV_LIST, HOST_LIST).
template <uint16_t Op>
struct ListReq {
	MDR_WIRE_MSG(ListReq, Op, false);
	uint64_t cursor = 0;		// the id the page starts at
};

// A request naming a volume and nothing else (VOL_DELETE, VOL_INFO).
template <uint16_t Op>
struct VolNameReq {
	MDR_WIRE_MSG(VolNameReq, Op, false);
	std::string name{};
};

// A volume as admin RPCs describe it (struct mdr_wire_volume).
struct Volume {
	uint64_t volume_id = 0;
	uint64_t size = 0;		// bytes, a multiple of 4096
	uint64_t allocated = 0;		// extents with physical space
	uint32_t extent_shift = MDR_WIRE_EXTENT_SHIFT_DEFAULT;
	uint32_t tenant = 0;
	uint32_t open_count = 0;
	std::string name{};

	bool operator==(const Volume &) const = default;
};

// Extents of a volume on one device (an element of mdr_wire_vol_rep).
struct DevExtents {
	uint32_t dev_id = 0;
	uint64_t extents = 0;

	bool operator==(const DevExtents &) const = default;
};

// A backing device (struct mdr_wire_device; from version 4 struct
// mdr_wire_device_ext).
struct Device {
	uint32_t dev_id = 0;
	uint64_t size = 0;		// bytes
	uint64_t used = 0;		// bytes, <= size
	std::string serial{};		// printable ASCII, may be empty
	// From version 4 (empty and online before):
	std::string identity{};		// printable ASCII, may be empty
	uint32_t state = MDR_DEV_ONLINE;	// enum mdr_dev_state

	bool operator==(const Device &) const = default;
};

// Who answered an OPEN, RENEW or ALLOC (struct mdr_wire_serving, version
// 7): a group's leader at an epoch, and where its epoch record is on this
// connection; all zero from a node of its own.
struct Serving {
	uint64_t epoch = 0;		// 0: a node of its own
	uint64_t record_addr = 0;	// 0 with epoch 0
	uint32_t record_rkey = 0;	// 0 with epoch 0, else not 0

	bool operator==(const Serving &) const = default;
};

struct OpenReq {
	MDR_WIRE_MSG(OpenReq, MDR_OP_OPEN, false);
	uint64_t volume_id = 0;		// 0 with MDR_OPEN_F_BY_NAME
	uint32_t flags = 0;		// MDR_OPEN_F_*
	std::string name{};		// empty unless MDR_OPEN_F_BY_NAME
};

struct OpenRep {
	MDR_WIRE_MSG(OpenRep, MDR_OP_OPEN, true);
	uint64_t volume_id = 0;
	uint64_t size = 0;
	uint64_t table_addr = 0;
	uint64_t table_len = 0;		// entries * 32, entries covering size
	uint32_t table_rkey = 0;
	uint32_t extent_shift = MDR_WIRE_EXTENT_SHIFT_DEFAULT;
	uint32_t lease_ms = 0;		// >= 1
	uint64_t generation = 0;
	std::string name{};
	std::optional<Serving> serving{};	// version 7 on
};

struct CloseReq {
	MDR_WIRE_MSG(CloseReq, MDR_OP_CLOSE, false);
	uint64_t volume_id = 0;
};

using CloseRep = HeaderAlone<MDR_OP_CLOSE, true>;

struct RenewReq {
	MDR_WIRE_MSG(RenewReq, MDR_OP_RENEW, false);
	uint64_t volume_id = 0;		// 0: every lease of the connection
};

struct RenewRep {
	MDR_WIRE_MSG(RenewRep, MDR_OP_RENEW, true);
	uint32_t lease_ms = 0;		// >= 1
	std::optional<Serving> serving{};	// version 7 on
};

struct AllocReq {
	MDR_WIRE_MSG(AllocReq, MDR_OP_ALLOC, false);
	uint64_t volume_id = 0;
	uint64_t index = 0;
};

// The entry is verified against (volume_id, index) and is mapped.
struct AllocRep {
	MDR_WIRE_MSG(AllocRep, MDR_OP_ALLOC, true);
	uint64_t volume_id = 0;
	uint64_t index = 0;
	Entry entry{};
	std::optional<Serving> serving{};	// version 7 on
};

struct InvalRange {
	uint64_t volume_id = 0;
	uint64_t first = 0;
	uint64_t count = 0;		// >= 1; first + count fits 64 bits
	uint64_t generation = 0;	// >= 1
	uint32_t reason = 0;		// enum mdr_inval_reason
	bool operator==(const InvalRange &) const = default;
};

// The push, from mdnode.
struct Invalidate : InvalRange {
	MDR_WIRE_MSG(Invalidate, MDR_OP_INVALIDATE, false);
};

// The host's ack: the push's range and req_id. On version 1 it is the push
// echoed (64 bytes); from version 2 struct mdr_wire_inval_ack (80 bytes),
// which adds flags and the dirty granules of a move. parse() takes either
// size: which one a connection must use is for the receiver, which knows
// the version, to check. flags and dirty are zero in the short form.
struct InvalidateAck : InvalRange {
	MDR_WIRE_MSG(InvalidateAck, MDR_OP_INVALIDATE, true);
	bool extended = false;		// struct mdr_wire_inval_ack
	uint32_t flags = 0;		// MDR_INVAL_ACK_F_*
	uint64_t dirty = 0;		// with MDR_INVAL_ACK_F_TRACKED, of a MOVE
};

// Granules of MDR_INVAL_TRACK and of a move's dirty mask in an extent of
// 2^extent_shift bytes: MDR_WIRE_TRACK_GRANULES, fewer when that would
// make them smaller than 2^MDR_WIRE_TRACK_MIN_SHIFT bytes.
unsigned track_granule_shift(uint32_t extent_shift);
unsigned track_granules(uint32_t extent_shift);

struct AuthReq {
	MDR_WIRE_MSG(AuthReq, MDR_OP_AUTH, false);
	std::array<uint8_t, 32> mac{};
};

using AuthRep = HeaderAlone<MDR_OP_AUTH, true>;

// A host's proof (version 3): its challenge to mdnode (not all zero) and
// HMAC-SHA256 over the transcript (lib/auth/auth.h).
struct HostAuthReq {
	MDR_WIRE_MSG(HostAuthReq, MDR_OP_HOST_AUTH, false);
	std::array<uint8_t, 16> nonce{};
	std::array<uint8_t, 32> mac{};
};

// mdnode's proof back.
struct HostAuthRep {
	MDR_WIRE_MSG(HostAuthRep, MDR_OP_HOST_AUTH, true);
	std::array<uint8_t, 32> mac{};
};

// A registered host (struct mdr_wire_host); never its key.
struct Host {
	uint64_t host_id = 0;		// non-zero
	uint32_t tenant = 0;		// non-zero
	uint32_t connections = 0;	// authenticated, now
	uint32_t leases = 0;		// held, now
	bool operator==(const Host &) const = default;
};

struct HostAddReq {
	MDR_WIRE_MSG(HostAddReq, MDR_OP_HOST_ADD, false);
	uint64_t host_id = 0;		// non-zero
	uint32_t tenant = 0;		// non-zero
	uint16_t flags = 0;		// MDR_HOST_ADD_F_*
	uint16_t key_len = 0;		// MDR_HOST_KEY_MIN ..= MDR_HOST_KEY_MAX
	std::array<uint8_t, 16> nonce{};			// lib/auth/auth.h:
	std::array<uint8_t, MDR_HOST_KEY_MAX> wrapped{};	// host_add_request()
	std::array<uint8_t, 32> mac{};
};

using HostAddRep = HeaderAlone<MDR_OP_HOST_ADD, true>;

struct HostRemoveReq {
	MDR_WIRE_MSG(HostRemoveReq, MDR_OP_HOST_REMOVE, false);
	uint64_t host_id = 0;		// non-zero
};

using HostRemoveRep = HeaderAlone<MDR_OP_HOST_REMOVE, true>;
using HostListReq = ListReq<MDR_OP_HOST_LIST>;

struct HostListRep {
	MDR_WIRE_MSG(HostListRep, MDR_OP_HOST_LIST, true);
	uint64_t next = 0;		// 0 on the last page
	std::vector<Host> hosts{};	// ascending host ids
};

struct VolCreateReq {
	MDR_WIRE_MSG(VolCreateReq, MDR_OP_VOL_CREATE, false);
	uint64_t size = 0;		// > 0, a multiple of 4096
	uint32_t extent_shift = 0;	// 0: MDR_WIRE_EXTENT_SHIFT_DEFAULT
	uint32_t tenant = 0;
	std::string name{};
};

// The body of replies to VOL_CREATE, VOL_INFO and VOL_RESIZE.
struct VolumeReply {
	Volume vol{};
	std::vector<DevExtents> devs{};
	bool operator==(const VolumeReply &) const = default;
};

// The replies to VOL_CREATE, VOL_INFO and VOL_RESIZE.
template <uint16_t Op>
struct VolumeRep : VolumeReply {
	MDR_WIRE_MSG(VolumeRep, Op, true);
};

using VolCreateRep = VolumeRep<MDR_OP_VOL_CREATE>;
using VolDeleteReq = VolNameReq<MDR_OP_VOL_DELETE>;
using VolDeleteRep = HeaderAlone<MDR_OP_VOL_DELETE, true>;
using VolListReq = ListReq<MDR_OP_VOL_LIST>;

struct VolListRep {
	MDR_WIRE_MSG(VolListRep, MDR_OP_VOL_LIST, true);
	uint64_t next = 0;		// 0 on the last page
	std::vector<Volume> vols{};	// ascending volume ids
};

using VolInfoReq = VolNameReq<MDR_OP_VOL_INFO>;
using VolInfoRep = VolumeRep<MDR_OP_VOL_INFO>;

struct VolResizeReq {
	MDR_WIRE_MSG(VolResizeReq, MDR_OP_VOL_RESIZE, false);
	uint64_t size = 0;		// > 0, a multiple of 4096
	std::string name{};
};

using VolResizeRep = VolumeRep<MDR_OP_VOL_RESIZE>;
using DevListReq = ListReq<MDR_OP_DEV_LIST>;

struct DevListRep {
	MDR_WIRE_MSG(DevListRep, MDR_OP_DEV_LIST, true);
	uint64_t next = 0;		// 0 on the last page
	std::vector<Device> devs{};	// ascending device ids
	// struct mdr_wire_device_ext elements (version 4 on); an empty list
	// parses as false.
	bool extended = false;
};

using NodeStatsReq = HeaderAlone<MDR_OP_NODE_STATS, false>;
using GroupStatusReq = HeaderAlone<MDR_OP_GROUP_STATUS, false>;

// struct mdr_wire_replica; from version 7 struct mdr_wire_replica_ext.
struct Replica {
	uint64_t durable = 0;		// 0: not known
	uint32_t id = 0;		// non-zero
	uint16_t state = MDR_PEER_UNKNOWN;	// enum mdr_replica_state
	uint16_t port = 0;		// its log listener's
	uint8_t family = MDR_FAMILY_NONE;
	uint8_t membership = MDR_MEMBER_VOTER;	// enum mdr_replica_membership
	std::array<uint8_t, 16> addr{};
	// Where it serves hosts and admins (version 7; none before): family
	// MDR_FAMILY_NONE, port 0 and address zero when not known.
	uint16_t host_port = 0;
	uint8_t host_family = MDR_FAMILY_NONE;
	std::array<uint8_t, 16> host_addr{};
	bool operator==(const Replica &) const = default;
};

struct GroupStatusRep {
	MDR_WIRE_MSG(GroupStatusRep, MDR_OP_GROUP_STATUS, true);
	uint64_t group = 0;		// 0: a node of its own
	uint64_t epoch = 0;
	uint64_t last_index = 0;
	uint64_t commit_index = 0;
	uint32_t self = 0;
	uint32_t leader = 0;		// 0: none known
	uint16_t role = MDR_REPLICA_NONE;	// enum mdr_replica_role
	std::vector<Replica> replicas{};	// ascending ids
	// struct mdr_wire_replica_ext elements (version 7 on); an empty list
	// parses as false.
	bool extended = false;
};

// REPLICA_ADD (the replica and its log listener) and REPLICA_REMOVE (the
// replica alone: port, family and address zero).
template <uint16_t Op>
struct ReplicaChangeReq {
	MDR_WIRE_MSG(ReplicaChangeReq, Op, false);
	uint32_t id = 0;		// non-zero
	uint16_t port = 0;
	uint8_t family = MDR_FAMILY_NONE;	// enum mdr_wire_family
	std::array<uint8_t, 16> addr{};	// network byte order; IPv4 in the first 4
};

using ReplicaAddReq = ReplicaChangeReq<MDR_OP_REPLICA_ADD>;
using ReplicaAddRep = HeaderAlone<MDR_OP_REPLICA_ADD, true>;
using ReplicaRemoveReq = ReplicaChangeReq<MDR_OP_REPLICA_REMOVE>;
using ReplicaRemoveRep = HeaderAlone<MDR_OP_REPLICA_REMOVE, true>;

// Counters since mdnode started (struct mdr_wire_node_stats_rep).
struct NodeStatsRep {
	MDR_WIRE_MSG(NodeStatsRep, MDR_OP_NODE_STATS, true);
	uint64_t boot_id = 0;
	uint64_t uptime_ms = 0;
	uint64_t connections = 0;
	uint64_t volumes = 0;
	uint64_t requests = 0;
	uint64_t errors = 0;
	uint64_t bad_messages = 0;
	uint64_t journal_records = 0;
	uint64_t journal_bytes = 0;
	uint64_t journal_syncs = 0;
	uint64_t invalidations = 0;
	uint64_t lease_expiries = 0;
	// struct mdr_wire_node_stats_mig: zero from a node that lacks it
	uint64_t moves_active = 0;
	uint64_t moves_done = 0;
	uint64_t moves_failed = 0;
	uint64_t move_bytes = 0;
	uint64_t stall_max_us = 0;
	uint64_t stall_total_us = 0;
	// struct mdr_wire_node_stats_push: zero from a node that lacks it
	uint64_t push_timeouts = 0;
	// struct mdr_wire_node_stats_copy: zero from a node that lacks it
	uint64_t precopy_bytes = 0;
	uint64_t freeze_bytes = 0;
	// struct mdr_wire_node_stats_auth: zero from a node that lacks it
	uint64_t auth_failures = 0;
	uint64_t hosts = 0;
	// struct mdr_wire_node_stats_limits: zero from a node that lacks it
	uint64_t conn_refused = 0;
	uint64_t fences = 0;
};

struct MoveReq {
	MDR_WIRE_MSG(MoveReq, MDR_OP_MOVE, false);
	uint64_t volume_id = 0;		// 0 with MDR_MOVE_F_BY_NAME
	uint64_t first = 0;
	uint32_t count = 0;		// 1 ..= MDR_WIRE_MOVE_MAX
	uint32_t to_dev = 0;		// non-zero
	uint32_t flags = 0;		// MDR_MOVE_F_*
	std::string name{};		// empty unless MDR_MOVE_F_BY_NAME
};

// One extent moved (struct mdr_wire_move_extent).
struct MovedExtent {
	uint64_t index = 0;
	uint64_t old_pstart = 0;	// 512-byte sectors
	uint64_t new_pstart = 0;
	uint32_t old_dev = 0;		// non-zero
	uint32_t new_dev = 0;		// non-zero, not old_dev
	uint64_t generation = 0;	// >= 4: allocated, frozen, published
	uint32_t stall_us = 0;
	bool operator==(const MovedExtent &) const = default;
};

struct MoveRep {
	MDR_WIRE_MSG(MoveRep, MDR_OP_MOVE, true);
	uint64_t volume_id = 0;
	uint64_t bytes = 0;
	uint64_t stall_max_us = 0;
	uint64_t stall_total_us = 0;	// >= stall_max_us
	std::vector<MovedExtent> extents{};	// ascending indexes
};

struct DrainReq {
	MDR_WIRE_MSG(DrainReq, MDR_OP_DRAIN, false);
	uint32_t dev_id = 0;		// non-zero
	uint32_t to_dev = 0;		// 0: any other; else not dev_id
};

struct DrainRep {
	MDR_WIRE_MSG(DrainRep, MDR_OP_DRAIN, true);
	uint32_t dev_id = 0;
	uint16_t status = MDR_ST_OK;	// of the move that stopped the drain
	uint64_t moved = 0;
	uint64_t remaining = 0;
	uint64_t bytes = 0;
	uint64_t stall_max_us = 0;
	uint64_t stall_total_us = 0;	// >= stall_max_us
};

using PingReq = HeaderAlone<MDR_OP_PING, false>;
using PingRep = HeaderAlone<MDR_OP_PING, true>;

// struct mdr_wire_leader: who leads a replica group, as a replica that
// does not lead knows it (version 5). All zero: it knows no leader now.
struct Leader {
	uint64_t epoch = 0;
	uint32_t replica = 0;		// 0: none known
	uint16_t port = 0;
	uint8_t family = MDR_FAMILY_NONE;	// enum mdr_wire_family
	std::array<uint8_t, 16> addr{};	// network byte order; IPv4 in the first 4

	bool known() const { return replica != 0; }
	bool operator==(const Leader &) const = default;
};

// A numeric IPv4 or IPv6 address (no brackets, no port) as the wire holds
// it; nullopt for anything else, or for the unspecified address.
struct WireAddress {
	uint8_t family = MDR_FAMILY_NONE;	// enum mdr_wire_family
	std::array<uint8_t, 16> addr{};
};
std::optional<WireAddress> wire_address(std::string_view host);

// "ADDR:PORT" or "[ADDR]:PORT": a numeric address and its port, as a
// replica's record in etcd and mdctl's --addr give them; nullopt for
// anything else, or an address no peer can reach (unspecified, port 0).
struct WireEndpoint {
	WireAddress address;
	uint16_t port = 0;
};
std::optional<WireEndpoint> endpoint_at(std::string_view text);

// The leader at such an endpoint; nullopt as endpoint_at(), or with epoch
// or replica 0. leader_host() is the address part back, as text
// ("192.0.2.11", "fd00::1"), as host_text() is of any address of the wire.
std::optional<Leader> leader_at(uint64_t epoch, uint32_t replica, std::string_view address);
std::string leader_host(const Leader &l);
std::string host_text(uint8_t family, const std::array<uint8_t, 16> &addr);
// "192.0.2.11:4800", "[fd00::3]:4800": an address of the wire with its port.
std::string address_text(uint8_t family, const std::array<uint8_t, 16> &addr, uint16_t port);
// "replica 2 leads at 192.0.2.12:4791 (epoch 9)", "no replica is known to
// lead": what a client tells of a NOT_LEADER reply.
std::string leader_text(const Leader &l);

// A reply with a status other than MDR_ST_OK, to a request of any opcode
// (echoed as received, known to this build or not): the header alone,
// but for MDR_ST_NOT_LEADER, which names the leader (and has @leader;
// no other status has).
struct ErrorRep {
	uint16_t opcode = 0;
	uint16_t status = MDR_ST_INVAL;
	std::optional<Leader> leader{};
	bool operator==(const ErrorRep &) const = default;
};

#undef MDR_WIRE_MSG

using Body = std::variant<
	OpenReq, OpenRep, CloseReq, CloseRep, RenewReq, RenewRep,
	AllocReq, AllocRep, Invalidate, InvalidateAck,
	AuthReq, AuthRep, VolCreateReq, VolCreateRep, VolDeleteReq, VolDeleteRep,
	VolListReq, VolListRep, VolInfoReq, VolInfoRep,
	VolResizeReq, VolResizeRep, DevListReq, DevListRep,
	NodeStatsReq, NodeStatsRep, PingReq, PingRep, ErrorRep,
	MoveReq, MoveRep, DrainReq, DrainRep, HostAuthReq, HostAuthRep,
	HostAddReq, HostAddRep, HostRemoveReq, HostRemoveRep, HostListReq, HostListRep,
	GroupStatusReq, GroupStatusRep, ReplicaAddReq, ReplicaAddRep,
	ReplicaRemoveReq, ReplicaRemoveRep>;

// struct mdr_wire_hdr, host-endian.
struct Header {
	uint16_t opcode = 0;	// enum mdr_wire_opcode
	uint16_t flags = 0;	// MDR_WIRE_F_*
	uint16_t status = 0;	// enum mdr_wire_status
	uint32_t length = 0;	// of the whole message
	uint64_t req_id = 0;

	bool reply() const { return flags & MDR_WIRE_F_REPLY; }
	bool operator==(const Header &) const = default;
};

struct Msg {
	Header hdr{};
	Body body{};
	bool operator==(const Msg &) const = default;
};

// Who parses: mdnode receives requests and acks, clients (hosts, mdctl)
// receive replies and pushes; PING goes both ways.
enum class Side { node, client };

// Checks, in order: received >= header; magic; length within received,
// header size and MDR_WIRE_MSG_MAX; opcode known; flags; status (< MAX,
// zero in requests and pushes); header reserved zero; direction towards
// receiver and opcode allowed on a conn_role (MDR_ROLE_HOST or
// MDR_ROLE_ADMIN) connection; size for the opcode and direction, element
// counts; then every field of the body. Bytes received beyond the length
// are ignored.
Result<Msg> parse(std::span<const std::byte> received, Side receiver,
		  mdr_wire_role conn_role);

// Whether @body has the form a connection of @version sends, where the
// forms of two versions differ in length: OK replies to OPEN, RENEW and
// ALLOC with Serving from kEpochVersion on and without before, and
// GROUP_STATUS replies with replicas extended from kEpochVersion on (an
// empty list may be either). -EPROTO and what is wrong, else ok. Senders
// pick the form by the version (mdnode), receivers check it.
Status check_version_form(const Body &body, uint16_t version);

// parse() on a connection of the negotiated @version, then
// check_version_form(): a message of another version's length is refused.
Result<Msg> parse(std::span<const std::byte> received, Side receiver,
		  mdr_wire_role conn_role, uint16_t version);

// The header of a message parse() refused, read only if the bytes hold a
// header with the right magic: what mdnode echoes in an ErrorRep.
std::optional<Header> peek_header(std::span<const std::byte> received);

// Writes the whole message at the start of out and returns its length; on
// error out holds no valid message. Any message converts to a Body:
// encode(out, req_id, wire::PingReq{}). An ErrorRep carries a status in
// 1 .. MDR_ST_MAX - 1 and the opcode as the request carried it.
Result<size_t> encode(std::span<std::byte> out, uint64_t req_id, const Body &body);

// Bytes encode() writes for body (whether or not it is valid); more than
// MDR_WIRE_MSG_MAX when it has too many elements to be encoded.
size_t encoded_size(const Body &body);

} // namespace mdr::wire

#endif // MDR_WIRE_H
