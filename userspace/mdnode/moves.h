// SPDX-License-Identifier: GPL-2.0
//
// moves.h - live moves of extents (MDR_OP_MOVE, MDR_OP_DRAIN;
// Documentation/migration.md). Each extent runs through the states of
// MoveOp::State and never blocks the loop: the copies run on the Copier's
// thread and complete back into the loop through its event fd (copier_fd(),
// process_copies()). When every lease holder speaks version 2, a move
// pre-copies the extent before it freezes it (MDR_INVAL_TRACK), and copies
// under the freeze only what the holders wrote since.
//
// moves.cc holds the state machine of one extent; move_rpc.cc the admin
// requests, MOVE (extents of one request, one after another) and DRAIN
// (every extent of a device).
#ifndef MDNODE_MOVES_H
#define MDNODE_MOVES_H

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "lib/wire/wire.h"
#include "mdnode/copier.h"
#include "mdnode/core.h"
#include "mdnode/pushes.h"

namespace mdnode {

class Mover : public LeaseEvents {
public:
	Mover(NodeCore &core, Pushes &pushes);

	// move_rpc.cc: the admin requests. All-or-nothing checks first.
	void do_move(Session &s, uint64_t req_id, const mdr::wire::MoveReq &r);
	void do_drain(Session &s, uint64_t req_id, const mdr::wire::DrainReq &r);

	// At start, before serving: every move the journal holds begun but
	// neither done nor aborted is aborted (journaled, then applied): the
	// extent is mapped at its old place again with a newer generation,
	// the new place is freed. Blocks on the journal.
	mdr::Status recover_moves();
	// A replica that starts to lead (Node::begin_leading()): every move
	// its store holds begun was left half done by the leader before, and
	// is rolled back as above, through the group's log, once the windows
	// begun then are over (tick()): until then the deposed leader's
	// copier may still write the new places, which a roll back frees for
	// reuse. Hosts' IO to those extents waits until then. A roll back the
	// group does not commit is tried again at the next tick; only those
	// moves are rolled back, never one this leader began.
	void roll_back_after_grace();
	// Starts the moves asked for during the restart grace, and goes on
	// with those whose holders all acked during it. From tick().
	void tick();
	// What the host noted for a move may not outlive its connection: its
	// MOVE ack, on a new one, no longer counts as tracked.
	void host_disconnected(uint64_t host_id);

	size_t active() const { return moves_.size(); }

	void lease_granted(uint64_t volume_id, Session &s) override
	{
		lease_changed(volume_id, s.peer.host_id, true);
	}
	void lease_lapsed(uint64_t volume_id, uint64_t host_id) override
	{
		lease_changed(volume_id, host_id, false);
	}
	void lease_gone(uint64_t volume_id, uint64_t host_id) override
	{
		lease_changed(volume_id, host_id, false);
	}

private:
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

	// Journals the roll back of a move found begun (recover_moves(),
	// roll_back_after_grace()); done(err) once it is applied or not.
	mdr::Status roll_back(const Move &m, std::function<void(int err)> done);

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
	void lease_changed(uint64_t volume_id, uint64_t host_id, bool opened);
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

	NodeCore &core_;
	Pushes &pushes_;
	std::map<MoveKey, MoveOp> moves_;
	// Moves asked for during the grace after the start, started by tick()
	// once it is over: freezing earlier would only make IO wait longer.
	std::vector<std::function<void()>> deferred_moves_;
	// roll_back_after_grace(): the moves the leaders before left, until
	// rolled back; of them those in flight.
	std::set<MoveKey> left_moves_;
	std::set<MoveKey> rolling_back_;
};

} // namespace mdnode

#endif // MDNODE_MOVES_H
