// SPDX-License-Identifier: GPL-2.0
//
// core.h - what every room of the node shares (node.h has the map): its
// settings and counters, the store and the journal, the transport, the
// sessions and the leases, the copier; one way to reply, and the one path
// of a change.
//
// Every change follows that path: the store prepares it (validates and
// reserves), the journal makes it durable, the store commits it (the
// table that hosts READ changes only now), and then the caller goes on
// (tells lease holders, replies).
//
// On a replica of a group (replication.md) the path has one more step: the
// journal's record is also the group log's next, shipped to the followers
// (ReplicatedLog), and the store commits it and the caller goes on only
// once a majority has it durable; a replica that does not lead refuses
// the change before it is journaled.
//
// Leases (leases.h) are granted and extended by the host RPCs, and lapse
// or go in tick(); the rooms that must hear of it (moves, pushes) are
// LeaseEvents, told in the order they subscribed.
#ifndef MDNODE_CORE_H
#define MDNODE_CORE_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lib/util/result.h"
#include "lib/wire/wire.h"
#include "mdnode/copier.h"
#include "mdnode/epoch_record.h"
#include "mdnode/histogram.h"
#include "mdnode/journal.h"
#include "mdnode/lease_bounds.h"
#include "mdnode/leases.h"
#include "mdnode/net.h"
#include "mdnode/session.h"
#include "mdnode/store.h"

namespace mdnode {

struct NodeOptions {
	uint32_t lease_ms = 5000;
	uint32_t drift_margin_ms = 500;		// added to every lease we hold
	// The longest a host's backing device may hold an IO: once a lease
	// has run out, its holder sends no new IO, but what it sent before
	// may still reach the old places this long. A fan-out whose end lets
	// data move or places be reused (every reason but ALLOC and TRACK)
	// waits a lapsed holder out this much longer, and so does the restart
	// grace. Documentation/volumes.md, "Against lease expiry".
	uint32_t io_hold_ms = 20000;
	std::vector<uint8_t> admin_key;		// empty: admin connections refused
	uint64_t node_id = 0;			// as the accept tells it
	uint64_t boot_id = 0;
	// Hosts of wire version 1 and 2 (unauthenticated) are refused; false:
	// served as before authentication (the upgrade path). Version 3 hosts
	// authenticate either way.
	bool host_auth_required = true;
	// A version 3 host that has not authenticated this long after it
	// connected is cut off.
	uint32_t host_auth_timeout_ms = 5000;
	uint64_t checkpoint_records = 100000;	// checkpoint after this many
	// What a process before this one may have granted (lease_bounds.h):
	// the restart windows wait out these too, when they are longer.
	LeaseBounds prior{};
	CopierOptions copier{};
	// Device id -> path, for the copier; empty: the store's device paths.
	std::map<uint32_t, std::string> device_paths{};
	// Each extent is zeroed before its ALLOC is journaled: space freed by
	// one volume (another tenant's, perhaps) never shows its old data in
	// another, and a new extent reads zeros as it did while unallocated.
	// false only for the test rigs whose devices are never written.
	bool zero_extents = true;
	// TEST ONLY: fan-outs push nothing and wait for no lease holder, as if
	// each push were lost and acked: hosts keep stale entries (what the
	// kernel's revalidation must find). Breaks the consistency rule. Read
	// only in a build with MDR_TEST_HOOKS.
	bool test_drop_invalidations = false;
};

// A checkpoint that failed is tried again after kCheckpointRetryMinMs,
// then after twice as long each time it fails again, up to
// kCheckpointRetryMaxMs; a success starts over. A full or failing disk is
// not snapshotted again every tick.
inline constexpr int64_t kCheckpointRetryMinMs = 1000;
inline constexpr int64_t kCheckpointRetryMaxMs = 60000;

// What a node with these options grants by: lease + margin, io hold.
inline LeaseBounds own_bounds(const NodeOptions &o)
{
	return {o.lease_ms + o.drift_margin_ms, o.io_hold_ms};
}

// Requests by opcode and by tenant (metrics.h formats them). Opcodes index
// the arrays: every opcode the codec knows is below kOpcodeSlots, and
// parse() lets no other through.
inline constexpr size_t kOpcodeSlots = 0x40;
// Tenants with series of their own: the first kTenantSlots tenants whose
// hosts proved who they are (or, under --host-auth optional, hosts of
// version 1 and 2) get one each for the life of the process, and later
// ones add to "other". Whatever tenant ids connecting hosts claim, a
// scrape holds at most kTenantSlots + 3 tenant series.
inline constexpr size_t kTenantSlots = 64;

struct RequestStats {
	// The slots of TenantCounts::requests: three fixed, then the tenants.
	static constexpr int kUnproven = 0;	// hosts before their HOST_AUTH
	static constexpr int kAdmin = 1;	// admin connections, any tenant
	static constexpr int kOther = 2;	// tenants past kTenantSlots
	static constexpr int kFirstTenant = 3;

	// Requests received (not acks of pushes), replies that were errors,
	// and the time from a request's arrival to its reply's send.
	std::array<uint64_t, kOpcodeSlots> requests{}, errors{};
	std::array<LatencyHistogram, kOpcodeSlots> latency{};
	// Requests answered but not timed: more outstanding on a connection
	// than its queue depth (a client beyond what it was granted), or of
	// a req_id the connection has in flight already.
	uint64_t untimed = 0;
	// Requests by slot; tenant_ids[i] is slot kFirstTenant + i's.
	std::array<uint64_t, kFirstTenant + kTenantSlots> by_tenant{};
	std::array<uint32_t, kTenantSlots> tenant_ids{};
	uint32_t tenants = 0;	// tenant slots taken

	// The slot of a tenant (taken on first use while there are free ones).
	int tenant_slot(uint32_t tenant);
};

struct NodeStats {
	uint64_t requests = 0, errors = 0, bad_messages = 0;
	uint64_t invalidations = 0, lease_expiries = 0;
	// Proofs refused or missing: admin AUTH, host HOST_AUTH, host
	// requests before HOST_AUTH, hosts silent past the auth timeout.
	uint64_t auth_failures = 0;
	// Extents zeroed for an ALLOC, and zeroings that failed (that ALLOC
	// was answered EIO; the extent stays free).
	uint64_t extents_zeroed = 0, zero_failures = 0;
	// Moves of one extent each.
	uint64_t moves_done = 0, moves_failed = 0, move_bytes = 0;
	uint64_t stall_max_us = 0, stall_total_us = 0;
	// Pushes not sent under test_drop_invalidations.
	uint64_t invalidations_dropped = 0;
	// Connections cut because a push to them stayed unacked (or could not
	// be sent) for lease_ms + margin while the host held its lease.
	uint64_t push_timeouts = 0;
	// Of the moves published: bytes pre-copied while hosts used the
	// extent, and bytes copied under the freeze (all of each extent
	// without a pre-copy, its dirty granules after one).
	uint64_t precopy_bytes = 0, freeze_bytes = 0;
	// Connect requests the transport refused: bad private data (a max_msg
	// out of range among them), no common version, a connection cap.
	uint64_t conn_refused = 0;
	// Hosts fenced for owing an ack a lease + margin (Pushes::fence()).
	uint64_t fences = 0;
	// Leases granted by OPEN and extended by RENEW (one per volume).
	uint64_t leases_granted = 0, lease_renewals = 0;
	// Pushes acked, and the time from each one's send to its ack.
	uint64_t push_acks = 0;
	LatencyHistogram push_ack_us{};
	// How long hosts waited on the frozen extent, per move published.
	Histogram<kStallUs> stall_us{};
	// Connections established since the start; those open now, by role.
	uint64_t connections = 0, connected_hosts = 0, connected_admins = 0;
	RequestStats req{};
};

// One replica in or out of the group (ReplicatedLog::change_membership()).
struct MembershipChange {
	bool add = false;
	uint32_t id = 0;		// non-zero
	std::string address;		// add: its log listener, numeric
	uint16_t port = 0;		// add: non-zero
};

// The group's log under the change path, on a replica of a group; none on a
// single node. repl_answer.h has the rule it keeps and why it loses no
// acknowledged change.
class ReplicatedLog {
public:
	virtual ~ReplicatedLog() = default;
	// Whether changes are answered here now: a leader that may serve (its
	// etcd lease holds, a majority's logs were heard, a record of its
	// epoch committed). Otherwise a change is refused, -EAGAIN, before it
	// is journaled, and so are host requests (a follower grants no lease).
	virtual bool accepting() const = 0;
	// Journals the change's record as the log's next (with its mark,
	// repl_journal.h) and ships it (with the other records of the loop's
	// round, at its end); calls committed(0) once the commit
	// index covers it, or committed(err < 0) if this replica stops
	// leading first; never from ship() itself. Its log index, or an
	// error with nothing journaled: -EAGAIN when not leading, the
	// journal's refusal otherwise.
	virtual mdr::Result<uint64_t> ship(uint16_t type, std::span<const std::byte> payload,
					   std::function<void(int err)> committed) = 0;
	// A checkpoint of this replica: the store's snapshot behind the
	// log's position (repl_journal.h, "A replica's checkpoint"), when
	// every record its log holds is applied to the store; none when some
	// wait for their commit, or the store cannot be snapshotted (not
	// now).
	virtual std::optional<std::vector<uint8_t>> checkpoint() const = 0;
	// Whom a client refused because this replica does not accept is sent
	// to: the leader as last known (all zero: none known now), or nullopt
	// when this replica leads or is about to (the client asks again here).
	virtual std::optional<mdr::wire::Leader> redirect() const = 0;
	// What MDR_OP_GROUP_STATUS answers: this replica's view of its group.
	virtual mdr::wire::GroupStatusRep group_status() const = 0;
	// MDR_OP_REPLICA_ADD and MDR_OP_REPLICA_REMOVE at the leader
	// (replication.md, "Membership"): begins the change and returns; its
	// progress shows in group_status(). -EAGAIN when not accepting,
	// -EBUSY while another change runs, -EEXIST for an add of a member,
	// -ENOENT for a remove of none, -EINVAL for the leader's own removal,
	// an address no replica could listen on or a group left below three,
	// -ENOSPC past the largest group.
	virtual mdr::Status change_membership(const MembershipChange &c) = 0;
};

// Told when a lease is granted (OPEN), lapses (its host sends no new IO)
// or goes (closed, dropped, or lapsed for io_hold_ms: no IO of its host is
// left).
class LeaseEvents {
public:
	virtual ~LeaseEvents() = default;
	virtual void lease_granted(uint64_t volume_id, Session &s) = 0;
	virtual void lease_lapsed(uint64_t volume_id, uint64_t host_id) = 0;
	virtual void lease_gone(uint64_t volume_id, uint64_t host_id) = 0;
};

struct NodeCore {
	NodeCore(const NodeOptions &opts, Store &store, Journal &journal,
		 std::function<int64_t()> now_ms);

	int64_t now() const { return now_ms_(); }
	int64_t start_ms() const { return start_ms_; }
	Session *session(ConnId conn);

	// A request arrived on s (Node::handle()): counted, and its clock
	// started. request_end() after it was handled: a request not
	// answered yet waits in s.in_flight for its reply.
	void request_begin(Session &s, const mdr::wire::Header &h);
	void request_end(Session &s);

	// An OK reply to OPEN, RENEW or ALLOC on a connection of version 7
	// ends with who serves (serving_for()).
	void reply(ConnId conn, uint64_t req_id, const mdr::wire::Body &body);
	// Version 7's struct mdr_wire_serving for conn: this replica at the
	// epoch its record shows, and where the record is on conn; all zero
	// on a node of its own. None before version 7.
	std::optional<mdr::wire::Serving> serving_for(ConnId conn);
	void reply_error(ConnId conn, uint64_t req_id, uint16_t opcode, int err);
	void reply_error(ConnId conn, uint64_t req_id, const mdr::wire::ErrorRep &e);
	// A request only a leader serves, on a replica that does not accept
	// (accepting()): MDR_ST_NOT_LEADER with the leader from version 5 on
	// (ReplicatedLog::redirect()), MDR_ST_AGAIN before or when it leads.
	void refuse_not_leading(const Session &s, uint64_t req_id, uint16_t opcode);
	// The error answer to a message that did not parse: counted as a bad
	// message by the caller, not as a request of its opcode, and it stops
	// no request's clock. Its req_id is the peer's word only: a request
	// of that id still in flight keeps its clock for its real reply.
	void reply_unparsed(ConnId conn, uint64_t req_id, uint16_t opcode, int err);

	// Journals the change, commits it, then calls done(status). On a
	// replica of a group: also ships it, and commits it once committed.
	void change(Change c, std::function<void(int err, const Applied *applied)> done);
	// Whether this process answers host requests and changes now: a
	// single node always, a replica only while repl accepts them.
	bool accepting() const { return !repl || repl->accepting(); }
	// A checkpoint once enough records are journaled, with no change in
	// flight and no extent moving, none in flight and no retry pending
	// (kCheckpointRetryMinMs); on a replica of a group only when its log
	// gives a header (every record of it applied). The snapshot is taken
	// here; the journal writes it on its worker while the loop serves.
	// From tick() only.
	void maybe_checkpoint();
	// The delay before the next try of a failed checkpoint; 0 when the
	// last one did not fail.
	int64_t checkpoint_backoff_ms() const { return checkpoint_backoff_ms_; }

	bool lease_valid(uint64_t volume_id, uint64_t host_id) const;
	// Whether a lease (valid or lapsed) may still have IO of its host at
	// the devices, as fan-outs of the volume that wait for IO count it.
	bool io_possible(const Lease &l, int64_t now) const;
	// Valid leases on the volume.
	uint32_t open_count(uint64_t volume_id) const;
	// Leases granted before a restart are unknown to this process, but
	// their holders may still have IO in flight to the places they cached:
	// no data moves until every such lease has run out and its IO can no
	// longer land.
	bool in_restart_grace() const;
	// Until lease_ms + margin after the start, a host may still hold a
	// lease of the process before, on its own clock too, and cache
	// entries this process never pushed to it: no extent of a volume from
	// before the start is allocated (ALLOC is answered AGAIN), since the
	// fan-out could not reach a holder it does not know. Past it, every
	// such lease has run out on its host, and a host that opens again
	// drops its cache (a reopen after its lease lapsed).
	bool in_restart_lease() const;
	int64_t restart_lease_left() const;
	// The bounds its restart windows wait out: the larger of its own,
	// opts.prior and what begin_windows() was given.
	LeaseBounds restart_bounds() const
	{
		return widest(widest(own_bounds(opts), opts.prior), inherited_);
	}
	// A replica that starts to lead (group_replica.h): the windows above
	// start over now, as at a start, for every volume the store holds,
	// and wait out inherited too, the bounds the leaders before it
	// granted under (repl_journal.h, EPOCH). The leases of the leader
	// before were all granted before now: it stopped before etcd could
	// elect this one (replication.md, "Why no two leaders accept
	// changes").
	void begin_windows(LeaseBounds inherited);
	// Whether every host that may hold a lease on the volume from a
	// process before has opened it again here (on a connection of
	// version 7 or later, whose kernel drops what it cached when another
	// process opens it: transport.md, "Following the leader"), so that
	// each gets the pushes of this process, and none caches, once its
	// reopen is through, an entry this process does not push changes of.
	// False while the volume's holders are not known (store.h,
	// "Holders"), and when the leases of before may outlast those
	// granted here. What lets an ALLOC go ahead within the restart lease
	// (HostRpc::do_alloc(): each holder hears of the extent first).
	bool holders_reached(uint64_t volume_id) const;
	// A lease was granted here (HostRpc::do_open()): s opened the volume.
	void opened_here(uint64_t volume_id, const Session &s);
	// The host holds no lease on the volume any more (it closed it, or
	// the lease lapsed): HOLDER_DROP journaled, answered by no one. Not
	// journaled (the host stays a holder: a longer wait, never a
	// shorter one) when it is no holder, the change is refused, or a
	// lapse comes within the restart lease.
	void drop_holder(uint64_t volume_id, uint64_t host_id, bool lapsed);
	// From tick(): HOLDERS_COMPLETE when a volume's holders are not
	// known, once this process serves past the restart lease, every
	// lease that may be out there being its own, each journaled with its
	// HOLDER_ADD. A replica serves only from begin_windows() on
	// (Node::begin_leading(), in the step that makes it accept), so its
	// restart lease is that of its takeover.
	void maybe_complete_holders();
	// The volume existed before the start: hosts may hold leases on it
	// this process never granted.
	bool from_before_start(uint64_t volume_id) const
	{
		return volume_id < first_new_volume_;
	}

	void watch_leases(LeaseEvents &w) { watchers_.push_back(&w); }
	void lease_granted(uint64_t volume_id, Session &s);
	void lease_lapsed(uint64_t volume_id, uint64_t host_id);
	void lease_gone(uint64_t volume_id, uint64_t host_id);

	const NodeOptions opts;
	Store &store;
	Journal &journal;
	Transport *net = nullptr;
	ReplicatedLog *repl = nullptr;		// a replica of a group's
	// Its epoch record: written by the group's replica (GroupReplica),
	// at epoch 0 on a node of its own.
	EpochRecord epoch_record;
	std::map<ConnId, Session> sessions;
	Leases leases;
	NodeStats stats;
	// Moves' copies and ALLOC's zeroing, off the loop (copier.h).
	Copier copier;

private:
	void change_replicated(Change c, std::function<void(int err, const Applied *applied)> done);
	// The journaled change c takes effect in the store: a failure is a bug.
	Applied commit_journaled(const Change &c);
	// before: checkpointed_records_ before the checkpoint that failed.
	void checkpoint_failed(const mdr::Status &st, uint64_t before);
	// reply()'s half of the request clock: stops the one of req_id.
	void request_replied(ConnId conn, uint64_t req_id);
	// Encodes and sends a reply; cuts the connection if it cannot.
	void send_reply(ConnId conn, uint64_t req_id, const mdr::wire::Body &body);

	// The request being handled, whose reply most often goes before
	// handle() returns: timed from here, without a look into the table.
	struct Current {
		ConnId conn = 0;
		uint64_t req_id = 0;
		int64_t start_us = 0;
		uint16_t opcode = 0;
		bool open = false;	// not replied yet
	} current_;

	std::function<int64_t()> now_ms_;
	int64_t start_ms_;
	// Where the restart windows start: the start, or the takeover
	// (begin_windows()).
	int64_t windows_ms_;
	LeaseBounds inherited_{};
	// Volumes with smaller ids existed before the start.
	uint64_t first_new_volume_;
	// (volume, host) opened here since windows_ms_ by a kernel that
	// drops its cache on it (holders_reached()).
	std::set<std::pair<uint64_t, uint64_t>> opened_here_;
	bool completing_holders_ = false;	// HOLDERS_COMPLETE in flight
	// journal.stats().records when the last checkpoint began: a
	// follower's records reach the journal outside change().
	uint64_t checkpointed_records_ = 0;
	int64_t checkpoint_backoff_ms_ = 0;
	int64_t checkpoint_retry_ms_ = 0;	// no checkpoint before this
	std::vector<LeaseEvents *> watchers_;
};

} // namespace mdnode

#endif // MDNODE_CORE_H
