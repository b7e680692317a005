// SPDX-License-Identifier: GPL-2.0
//
// node.h - what mdnode does with the messages it receives: sessions,
// leases, the host and admin RPCs, and invalidation fan-out.
//
// Every change follows one path: the store prepares it (validates and
// reserves), the journal makes it durable, the store commits it (the
// table that hosts READ changes only now), lease holders are told and
// acknowledge, and only then does the requester get its reply.
//
// Leases belong to (host, volume), not to a connection: a host that
// disconnects keeps its lease until it expires, because it may still have
// IO in flight to the locations it cached. mdnode counts a lease from when
// it received the request, plus a margin for clock drift; the host counts
// from when it sent it, minus the same margin.
//
// Moves (MDR_OP_MOVE, MDR_OP_DRAIN; Documentation/migration.md) run one
// extent at a time through the states of MoveOp::State, and never block
// the loop: the copies run on the Copier's thread and complete back into
// the loop through its event fd (copier_fd(), process_copies()). When
// every lease holder speaks version 2, a move pre-copies the extent before
// it freezes it (MDR_INVAL_TRACK), and copies under the freeze only what
// the holders wrote since. A session's negotiated version is its
// PeerInfo's, kept in the Session.
#ifndef MDNODE_NODE_H
#define MDNODE_NODE_H

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "lib/wire.h"
#include "mdnode/copier.h"
#include "mdnode/journal.h"
#include "mdnode/rdma_server.h"
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
	uint64_t boot_id = 0;
	uint64_t checkpoint_records = 100000;	// checkpoint after this many
	CopierOptions copier{};
	// Device id -> path, for the copier; empty: the store's device paths.
	std::map<uint32_t, std::string> device_paths{};
	// TEST ONLY: fan-outs push nothing and wait for no lease holder, as if
	// each push were lost and acked: hosts keep stale entries (what the
	// kernel's revalidation must find). Breaks the consistency rule.
	bool test_drop_invalidations = false;
};

struct NodeStats {
	uint64_t requests = 0, errors = 0, bad_messages = 0;
	uint64_t invalidations = 0, lease_expiries = 0, auth_failures = 0;
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
};

class Node : public ServerHandler {
public:
	Node(const NodeOptions &opts, Store &store, Journal &journal,
	     std::function<int64_t()> now_ms);

	void attach(Net &net) { net_ = &net; }

	uint16_t on_connect(const PeerInfo &peer) override;
	void on_established(const PeerInfo &peer) override;
	void on_message(ConnId conn, std::span<const std::byte> msg) override;
	void on_bad_receive(ConnId) override { stats_.bad_messages++; }
	void on_disconnected(ConnId conn) override;

	// Expires leases and finishes fan-outs that waited for them. Call
	// every few tens of milliseconds.
	void tick();

	// At start, before serving: every move the journal holds begun but
	// neither done nor aborted is aborted (journaled, then applied): the
	// extent is mapped at its old place again with a newer generation,
	// the new place is freed. Blocks on the journal.
	mdr::Status recover_moves();

	// The copier's event fd, readable when a copy finished; then call
	// process_copies(). wait_copies() blocks until every copy started has
	// finished and processes them (tests).
	int copier_fd() const { return copier_.event_fd(); }
	void process_copies() { copier_.process_completions(); }
	void wait_copies() { copier_.wait_all(); }
	size_t moves_active() const { return moves_.size(); }

	const NodeStats &stats() const { return stats_; }
	size_t sessions() const { return sessions_.size(); }

private:
	struct Session {
		PeerInfo peer;
		bool authenticated = false;
		// Cut by us (a push timed out): what it still sends is ignored,
		// as the transport does once the connection is closing.
		bool closing = false;
		std::set<uint64_t> opened;	// volume ids
		// Push ids sent and not yet acked: at most peer.push_credits.
		std::set<uint64_t> pushes;
		// Push ids waiting for a credit or for a send that failed, in the
		// order they are to be sent.
		std::deque<uint64_t> queued;
	};
	// One push to one host on one connection, queued or sent.
	struct Push {
		uint64_t fan_out_id, host_id;
		int64_t since_ms;	// queued at
	};
	// How one host stopped being waited for by a fan-out.
	struct Settled {
		bool acked = false;	// by its ack; else its lease went, or
					// it was dropped (test)
		uint32_t flags = 0;	// the ack's (version 2)
		uint64_t dirty = 0;
	};
	// A change waiting for lease holders to acknowledge an invalidation.
	struct FanOut {
		uint64_t volume_id;
		std::set<uint64_t> hosts;	// not yet acked nor expired
		std::function<void()> done;
		mdr::wire::Invalidate inv;	// what each host is told
		// Called for each host of hosts as it is settled, before done.
		std::function<void(uint64_t host_id, const Settled &)> settled;
	};
	struct LeaseKey {
		uint64_t volume_id, host_id;
		auto operator<=>(const LeaseKey &) const = default;
	};
	// Valid until expires_ms. Then lapsed (tick()): the host may send no
	// IO any more, but until expires_ms + io_hold_ms its IO sent before
	// may still be at its devices, and the lease stays here.
	struct Lease {
		int64_t expires_ms;
		ConnId conn;	// 0 while the host is not connected
		bool lapsed = false;
	};
	// The move of one extent, from the admin's request to the reply.
	struct MoveOp {
		enum class State {
			tracking,	// INVALIDATE(TRACK) out: waiting for acks
			precopying,	// the pre-copy, on the copier's thread
			freezing,	// MOVE_BEGIN being journaled
			draining,	// INVALIDATE(MOVE) out: waiting for acks or
					// expiries, and for the restart grace
			copying,	// on the copier's thread
			ending,		// MOVE_DONE or MOVE_ABORT being journaled
			announcing,	// INVALIDATE(ALLOC) out: waiting for acks
		};
		State state = State::freezing;
		Move where{};		// from the applied MOVE_BEGIN
		uint32_t to_dev = 0;
		uint32_t extent_shift = 0;
		// Pre-copied to a place reserved on to_dev (Store::reserve_move())
		// while the holders noted their writes.
		bool precopy = false;
		// Hosts whose TRACK ack came in, and which kept their lease and
		// connection since: only their MOVE acks' dirty masks count.
		std::set<uint64_t> tracked;
		// Granules to copy under the freeze: bit i is bytes
		// [i << granule_shift, (i + 1) << granule_shift) of the extent.
		uint64_t dirty = 0;
		unsigned granule_shift = 0, granules = 0;
		uint64_t freeze_bytes = 0;	// the copy under the freeze copies
		int64_t frozen_ms = 0;	// when hosts started to wait
		bool acked = false;	// every holder acked or lost its lease
		int err = 0;		// why it aborts
		// When each stage ended, on the steady clock (mono_us()): the
		// stage times of the move's log line.
		struct Times {
			int64_t start = 0;	// the move began (after the grace)
			int64_t tracked = 0;	// every holder acked TRACK (pre-copy)
			int64_t precopied = 0;	// the loop took the pre-copy's end
			int64_t asked = 0;	// MOVE_BEGIN appended
			int64_t frozen = 0;	// MOVE_BEGIN applied, pushes sent
			int64_t acked = 0;	// every holder acked or lost its lease
			CopyTimes copy{};	// the copier's (queued: after the grace)
			int64_t copied = 0;	// the loop took the copy's completion
			int64_t ended = 0;	// MOVE_DONE or MOVE_ABORT applied
			int64_t published = 0;	// every holder acked INVALIDATE(ALLOC)
		} t;
		mdr::wire::MovedExtent result{};
		std::function<void(int err, const mdr::wire::MovedExtent &)> done;
	};
	// Totals of a MOVE or DRAIN request, for its reply.
	struct MoveTotals {
		uint64_t moved = 0, bytes = 0, stall_max_us = 0, stall_total_us = 0;
		void add(const mdr::wire::MovedExtent &x, uint64_t extent_bytes);
	};
	// A DRAIN under way: its totals and where its scan of the tables is.
	struct Drain {
		MoveTotals totals;
		uint64_t volume_id = 0, index = 0;	// the scan goes on here
		bool pass_moved = false;		// this pass moved an extent
	};
	using MoveKey = std::pair<uint64_t, uint64_t>;	// (volume, index)

	void handle(Session &s, const mdr::wire::Msg &m);
	void reply(ConnId conn, uint64_t req_id, const mdr::wire::Body &body);
	void reply_error(ConnId conn, uint64_t req_id, uint16_t opcode, int err);

	void do_open(Session &s, uint64_t req_id, const mdr::wire::OpenReq &r);
	void do_close(Session &s, uint64_t req_id, const mdr::wire::CloseReq &r);
	void do_renew(Session &s, uint64_t req_id, const mdr::wire::RenewReq &r);
	void do_alloc(Session &s, uint64_t req_id, const mdr::wire::AllocReq &r);
	void do_ack(Session &s, uint64_t req_id, const mdr::wire::InvalidateAck &r);
	void do_auth(Session &s, uint64_t req_id, const mdr::wire::AuthReq &r);
	void do_create(Session &s, uint64_t req_id, const mdr::wire::VolCreateReq &r);
	void do_delete(Session &s, uint64_t req_id, const mdr::wire::VolDeleteReq &r);
	void do_resize(Session &s, uint64_t req_id, const mdr::wire::VolResizeReq &r);
	void do_info(Session &s, uint64_t req_id, const mdr::wire::VolInfoReq &r);
	void do_vol_list(Session &s, uint64_t req_id, const mdr::wire::VolListReq &r);
	void do_dev_list(Session &s, uint64_t req_id, const mdr::wire::DevListReq &r);
	void do_stats(Session &s, uint64_t req_id);
	void do_move(Session &s, uint64_t req_id, const mdr::wire::MoveReq &r);
	void do_drain(Session &s, uint64_t req_id, const mdr::wire::DrainReq &r);

	// Journals the change, commits it, then calls done(status).
	void change(Change c, std::function<void(int err, const Applied *applied)> done);
	// Looks a volume up by name and changes it as a whole (delete, resize)
	// if no host holds a lease on it; replies to errors itself.
	void change_unopened(ConnId conn, uint64_t req_id, uint16_t opcode,
			     const std::string &name,
			     const std::function<mdr::Result<Change>(uint64_t id)> &prepare,
			     std::function<void(uint64_t id)> done);
	// Pushes an invalidation of [first, first + count) of a volume to every
	// lease holder but except_host, then calls done once all have acked
	// or lost their lease.
	// settled, when given, hears how each host was settled.
	void fan_out(uint64_t volume_id, uint64_t first, uint64_t count,
		     uint64_t generation, uint32_t reason,
		     std::optional<uint64_t> except_host, std::function<void()> done,
		     std::function<void(uint64_t host_id, const Settled &)> settled = {});
	void settle(uint64_t fan_out_id, uint64_t host_id, const Settled &how);
	// Queues the fan-out's push to host_id on the session, unless one is
	// already queued or sent there, and sends what the credits allow.
	void push(uint64_t fan_out_id, uint64_t host_id, Session &s);
	// Sends queued pushes, oldest first, while the session has push
	// credits left and sending works; drops those no fan-out waits for.
	void send_pushes(Session &s);
	bool push_wanted(const Push &p) const;
	// Cuts the connections with a push waiting for lease_ms + margin, the
	// longest a lease is held without renewal.
	void expire_pushes();
	// host_id's lease on the volume ran out: its host sends no new IO,
	// so the fan-outs that do not wait for IO stop waiting for it.
	void lease_lapsed(uint64_t volume_id, uint64_t host_id);
	// host_id's lease on the volume is gone (closed, dropped, or lapsed
	// for io_hold_ms): no IO of that host is left; no fan-out waits for it.
	void lease_gone(uint64_t volume_id, uint64_t host_id);
	// Whether a lease (valid or lapsed) may still have IO of its host at
	// the devices, as fan-outs of the volume that wait for IO count it.
	bool io_possible(const Lease &l, int64_t now) const;
	bool lease_valid(uint64_t volume_id, uint64_t host_id) const;
	uint32_t open_count(uint64_t volume_id) const;
	void drop_leases(uint64_t volume_id);
	mdr::wire::Volume describe(const Volume &v) const;
	mdr::wire::VolumeReply volume_reply(const Volume &v) const;
	void maybe_checkpoint();

	// One extent: freeze, drain, copy, publish (or roll back), then done.
	// Errors before the freeze call done at once.
	void move_extent(uint64_t volume_id, uint64_t index, uint32_t to_dev,
			 std::function<void(int err, const mdr::wire::MovedExtent &)> done);
	// Whether every holder of a lease on the volume can note its writes
	// (connected, version >= 2): then the move pre-copies.
	bool can_precopy(uint64_t volume_id) const;
	void move_tracked(MoveKey key);
	void move_precopied(MoveKey key, int err);
	// Journals MOVE_BEGIN (on the reserved place after a pre-copy).
	void move_begin(MoveKey key, Change begin);
	// A lease on the volume was granted or lost while one of its moves
	// pre-copies: whoever it was may have written what no ack reports.
	void moves_lease_changed(uint64_t volume_id, uint64_t host_id, bool opened);
	void move_frozen(MoveKey key);
	void move_drained(MoveKey key);
	void move_copied(MoveKey key, int err, const CopyTimes &times);
	void move_ended(MoveKey key, int err, const Applied *applied);
	void move_finish(MoveKey key, int err);
	// MOVE: extents of one request, one after another.
	void move_next(ConnId conn, uint64_t req_id, uint64_t volume_id, uint64_t index,
		       uint64_t last, uint32_t to_dev,
		       std::shared_ptr<mdr::wire::MoveRep> rep);
	// DRAIN: the next extent on the device, until none is left.
	void drain_next(ConnId conn, uint64_t req_id, uint32_t dev_id, uint32_t to_dev,
			std::shared_ptr<Drain> d);
	bool in_restart_grace() const;

	NodeOptions opts_;
	Store &store_;
	Journal &journal_;
	Net *net_ = nullptr;
	std::function<int64_t()> now_ms_;
	int64_t start_ms_;
	// Volumes with smaller ids existed before the start: hosts may hold
	// leases on them this process never granted (in_restart_grace()).
	uint64_t first_new_volume_;
	std::map<ConnId, Session> sessions_;
	std::map<LeaseKey, Lease> leases_;
	std::map<uint64_t, FanOut> fan_outs_;	// by id
	// Push req_id -> the push, from when it is queued until it is acked
	// or its session is gone.
	std::map<uint64_t, Push> pushes_;
	uint64_t next_push_ = 1;
	uint64_t next_fan_out_ = 1;
	// Requests waiting for an allocation in flight: (volume, index) ->
	// (conn, req_id).
	std::map<std::pair<uint64_t, uint64_t>, std::vector<std::pair<ConnId, uint64_t>>>
		alloc_waiters_;
	uint64_t records_since_checkpoint_ = 0;
	NodeStats stats_;
	std::map<MoveKey, MoveOp> moves_;
	// Moves asked for during the grace after the start, started by tick()
	// once it is over: freezing earlier would only make IO wait longer.
	std::vector<std::function<void()>> deferred_moves_;
	Copier copier_;
};

} // namespace mdnode

#endif // MDNODE_NODE_H
