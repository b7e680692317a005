// SPDX-License-Identifier: GPL-2.0
//
// moves.cc - see moves.h: the move of one extent, from the admin's request
// to the reply.
#include "mdnode/moves.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include "mdnode/log.h"

namespace mdnode {

namespace {

MDNODE_LOG_SUBSYSTEM("node");

namespace wire = mdr::wire;

} // namespace

Mover::Mover(NodeCore &core, Pushes &pushes) : core_(core), pushes_(pushes)
{
}

void Mover::tick()
{
	// Before the moves asked for during the grace: they may be of the
	// same extents.
	if (!left_moves_.empty() && !core_.in_restart_grace()) {
		std::set<MoveKey> still;

		for (const Move &m : core_.store.moves()) {
			const MoveKey key{m.volume_id, m.index};

			if (!left_moves_.contains(key))
				continue;
			still.insert(key);
			if (rolling_back_.contains(key))
				continue;
			// Before the call: its done may run within it.
			rolling_back_.insert(key);
			mdr::Status st = roll_back(m, [this, key](int err) {
				rolling_back_.erase(key);
				if (err)
					log_error("volume %llu extent %llu: rolling back the move the "
						  "leader before left: %s; trying again",
						  (unsigned long long)key.first,
						  (unsigned long long)key.second, strerror(-err));
			});
			if (!st.ok()) {
				rolling_back_.erase(key);
				log_error_rl("%s; trying again", st.message().c_str());
			}
		}
		// Rolled back (or gone with its volume): done with.
		std::erase_if(left_moves_, [&still](const MoveKey &k) { return !still.contains(k); });
	}
	if (!deferred_moves_.empty() && !core_.in_restart_grace()) {
		auto deferred = std::exchange(deferred_moves_, {});
		for (auto &start : deferred)
			start();
	}
	// Moves whose holders all acked during the restart grace go on now.
	std::vector<MoveKey> ready;
	for (const auto &[key, op] : moves_)
		if (op.state == MoveOp::State::draining && op.acked && !core_.in_restart_grace())
			ready.push_back(key);
	for (MoveKey key : ready)
		move_drained(key);
}

void Mover::host_disconnected(uint64_t host_id)
{
	for (auto &[key, op] : moves_)
		op.tracked.erase(host_id);
}

// ---------------------------------------------------------------------------
// Moves. The consistency rule: the data of an extent is copied only once
// every host that may send IO to its old place has acknowledged the
// invalidation (and drained) or lost its lease; the old place is freed
// only once the new one is durable, journaled and in the table.
//
// The pre-copy bends it for what is copied twice. Before the freeze, with
// every lease holder on version 2, the extent is copied while hosts still
// write it; under the freeze (the rule above holds there: every holder
// acked MOVE or lost its lease) only the granules the holders report are
// copied again. A granule not copied again was not written since the
// pre-copy read it:
//  - each holder acks TRACK only once its writes to the extent submitted
//    before the push have completed, and notes every write it submits
//    after the push; the pre-copy starts after the last TRACK ack (or
//    lease loss), so a write either completed before the pre-copy read its
//    granule, or is noted;
//  - a holder acks MOVE only once its writes have drained, with the
//    granules noted since its TRACK ack: every noted write is done and
//    reported before the copy under the freeze reads;
//  - a write by any other host would not be reported, so every granule is
//    copied again whenever one could have happened: a MOVE ack without
//    MDR_INVAL_ACK_F_TRACKED, or from a host that did not ack TRACK (a
//    lease expiry settled it) or lost its connection since; a holder of
//    the MOVE settled by its lease instead of an ack; any lease on the
//    volume granted or lost between the TRACK push and the MOVE push (a
//    new holder writes untracked; a lost one never reports its notes).
//    Once the MOVE push is out the extent is frozen: a new holder waits.
namespace {

uint64_t all_granules(unsigned granules)
{
	return granules >= 64 ? ~uint64_t{0} : (uint64_t{1} << granules) - 1;
}

} // namespace

bool Mover::can_precopy(uint64_t volume_id) const
{
	const int64_t now = core_.now();

	for (const auto &[key, lease] : core_.leases.on_volume(volume_id)) {
		if (lease.expires_ms <= now)
			continue;
		const Session *s = core_.session(lease.conn);
		if (!s || s->closing || s->peer.version < 2)
			return false;
	}
	return true;
}

// The pre-copy (Documentation/migration.md): when every holder can note
// its writes, the extent is copied to a place reserved for it while hosts
// keep using it, and under the freeze only the granules they wrote since
// are copied again. Otherwise, or when anything about the holders changes
// meanwhile, the whole extent is copied under the freeze.
void Mover::move_extent(uint64_t volume_id, uint64_t index, uint32_t to_dev,
		       std::function<void(int err, const wire::MovedExtent &)> done)
{
	if (core_.in_restart_grace()) {
		deferred_moves_.push_back([this, volume_id, index, to_dev,
					   done = std::move(done)]() mutable {
			move_extent(volume_id, index, to_dev, std::move(done));
		});
		return;
	}

	const MoveKey key{volume_id, index};
	const bool precopy = can_precopy(volume_id);
	std::optional<Change> begin;
	uint64_t place = 0;

	if (precopy) {
		// Not journaled: a crash before MOVE_BEGIN loses only the
		// reservation, and what the pre-copy wrote is in free space.
		auto r = core_.store.reserve_move(volume_id, index, to_dev);
		if (!r.ok()) {
			log_warn_rl("move refused: %s", r.message().c_str());
			return done(r.error(), {});
		}
		place = r.value();
	} else {
		auto prep = core_.store.prepare_move(volume_id, index, to_dev);
		if (!prep.ok()) {
			log_warn_rl("move refused: %s", prep.message().c_str());
			return done(prep.error(), {});
		}
		begin = std::move(prep.value());
	}

	MoveOp &op = moves_[key];
	const Volume *v = core_.store.volume(volume_id);

	op.done = std::move(done);
	op.to_dev = to_dev;
	op.extent_shift = v->extent_shift;
	op.granule_shift = wire::track_granule_shift(op.extent_shift);
	op.granules = wire::track_granules(op.extent_shift);
	op.dirty = all_granules(op.granules);
	op.t.start = mono_us();
	if (!precopy) {
		op.t.tracked = op.t.precopied = op.t.start;
		return move_begin(key, std::move(*begin));
	}

	const wire::Entry e = wire::decode_entry(v->table.entries()[index]);

	op.precopy = true;
	op.dirty = 0;
	op.state = MoveOp::State::tracking;
	op.where = Move{.volume_id = volume_id, .index = index,
			.old_dev = e.dev_id, .new_dev = to_dev,
			.old_pstart = e.pstart, .new_pstart = place,
			.generation = e.generation};
	pushes_.fan_out(volume_id, index, 1, e.generation, MDR_INVAL_TRACK, std::nullopt,
		[this, key] { move_tracked(key); },
		[this, key](uint64_t host, const Settled &how) {
		// Settled by its lease, the host notes nothing for this move.
		auto it = moves_.find(key);
		if (it != moves_.end() && how.acked)
			it->second.tracked.insert(host);
	});
}

// Every holder acked TRACK (each noting its writes from the push on, its
// writes from before it complete) or lost its lease: the pre-copy reads
// the extent from now on.
void Mover::move_tracked(MoveKey key)
{
	MoveOp &op = moves_.at(key);
	const CopyJob job{
		.src_dev = op.where.old_dev,
		.src_off = op.where.old_pstart << kSectorShift,
		.dst_dev = op.where.new_dev,
		.dst_off = op.where.new_pstart << kSectorShift,
		.len = uint64_t{1} << op.extent_shift,
		// The fdatasync under the freeze makes it durable too.
		.sync = false,
		// Copies under a freeze, which IO waits for, go first.
		.background = true,
	};

	op.t.tracked = mono_us();
	op.state = MoveOp::State::precopying;
	core_.copier.start(job, [this, key](int err, const CopyTimes &) {
		move_precopied(key, err);
	});
}

void Mover::move_precopied(MoveKey key, int err)
{
	MoveOp &op = moves_.at(key);

	op.t.precopied = mono_us();
	if (err) {
		// Nothing journaled: the reserved place is free again.
		core_.store.release_move(key.first, key.second);
		return move_finish(key, -EIO);
	}

	auto prep = core_.store.prepare_move(key.first, key.second, op.to_dev);

	if (!prep.ok()) {
		core_.store.release_move(key.first, key.second);
		log_warn_rl("move refused: %s", prep.message().c_str());
		return move_finish(key, prep.error());
	}
	move_begin(key, std::move(prep.value()));
}

void Mover::move_begin(MoveKey key, Change begin)
{
	MoveOp &op = moves_.at(key);

	op.state = MoveOp::State::freezing;
	op.t.asked = mono_us();
	core_.change(std::move(begin), [this, key](int err, const Applied *) {
		if (err)
			return move_finish(key, err);	// nothing changed
		move_frozen(key);
	});
}

// Until its MOVE push goes out, a move trusts no host's notes once a lease
// on the volume was granted (the new holder may write untracked) or lost
// (its holder's notes are never acked). Afterwards the extent is frozen
// and new holders wait; a host that opens again may have lost its notes.
void Mover::lease_changed(uint64_t volume_id, uint64_t host_id, bool opened)
{
	for (auto &[key, op] : moves_) {
		if (key.first != volume_id || !op.precopy)
			continue;
		switch (op.state) {
		case MoveOp::State::tracking:
		case MoveOp::State::precopying:
		case MoveOp::State::freezing:
			op.dirty = all_granules(op.granules);
			break;
		default:
			if (opened)
				op.tracked.erase(host_id);
			break;
		}
	}
}

// MOVE_BEGIN is durable and the table holds the extent FROZEN at g1: hosts
// that READ it now wait. Those that cached it are told, and drain. After a
// pre-copy, each ack says what its host wrote since its TRACK ack.
void Mover::move_frozen(MoveKey key)
{
	MoveOp &op = moves_.at(key);
	const Move &m = *core_.store.move(key.first, key.second);

	// MOVE_BEGIN took the place the pre-copy wrote (prepare_move() on a
	// reserved place): were it another, all of it would be copied.
	if (op.precopy && (m.new_dev != op.where.new_dev || m.new_pstart != op.where.new_pstart))
		op.dirty = all_granules(op.granules);
	op.where = m;
	op.state = MoveOp::State::draining;
	op.frozen_ms = core_.now();
	op.t.frozen = mono_us();
	pushes_.fan_out(key.first, key.second, 1, op.where.generation, MDR_INVAL_MOVE,
		std::nullopt, [this, key] {
		auto it = moves_.find(key);
		if (it == moves_.end())
			return;
		it->second.acked = true;
		it->second.t.acked = mono_us();
		move_drained(key);
	}, [this, key](uint64_t host, const Settled &how) {
		auto it = moves_.find(key);
		if (it == moves_.end())
			return;
		MoveOp &o = it->second;
		// Only a host that acked TRACK, kept its lease and its
		// connection, and says it noted every write, is believed.
		if (o.precopy && how.acked && (how.flags & MDR_INVAL_ACK_F_TRACKED) &&
		    o.tracked.count(host))
			o.dirty |= how.dirty & all_granules(o.granules);
		else
			o.dirty = all_granules(o.granules);
	});
}

// Every holder acked or lost its lease: nothing is written to the old place
// any more. The copy runs on the copier's thread.
void Mover::move_drained(MoveKey key)
{
	auto it = moves_.find(key);

	if (it == moves_.end() || it->second.state != MoveOp::State::draining ||
	    !it->second.acked || core_.in_restart_grace())
		return;	// tick() tries again after the grace

	MoveOp &op = it->second;
	CopyJob job{
		.src_dev = op.where.old_dev,
		.src_off = op.where.old_pstart << kSectorShift,
		.dst_dev = op.where.new_dev,
		.dst_off = op.where.new_pstart << kSectorShift,
		.len = uint64_t{1} << op.extent_shift,
	};

	// After a pre-copy, the dirty granules, adjacent ones as one run (the
	// copier cuts runs into chunks); none: only the fdatasync, which makes
	// the pre-copy durable. All of them: the whole extent, as without.
	if (op.dirty != all_granules(op.granules)) {
		job.runs.emplace();
		for (unsigned i = 0; i < op.granules;) {
			if (!(op.dirty >> i & 1)) {
				i++;
				continue;
			}
			unsigned j = i;
			while (j < op.granules && (op.dirty >> j & 1))
				j++;
			job.runs->push_back({uint64_t{i} << op.granule_shift,
					     uint64_t{j - i} << op.granule_shift});
			i = j;
		}
	}
	op.freeze_bytes = copy_bytes(job);
	op.state = MoveOp::State::copying;
	core_.copier.start(job, [this, key](int err, const CopyTimes &times) {
		move_copied(key, err, times);
	});
}

// The new place holds the data durably (or the copy failed): journal the
// end of the move, MOVE_DONE or MOVE_ABORT.
void Mover::move_copied(MoveKey key, int err, const CopyTimes &times)
{
	MoveOp &op = moves_.at(key);

	op.t.copy = times;
	op.t.copied = mono_us();
	auto prep = err ? core_.store.prepare_move_abort(key.first, key.second)
			: core_.store.prepare_move_done(key.first, key.second);

	op.state = MoveOp::State::ending;
	// The copier logged what failed; the admin learns that the data could
	// not be moved.
	op.err = err ? -EIO : 0;
	if (!prep.ok()) {
		// Only this request ends a move: a bug. The extent stays frozen
		// until a restart rolls the move back.
		log_error("volume %llu extent %llu: cannot end the move: %s",
			  (unsigned long long)key.first, (unsigned long long)key.second,
			  prep.message().c_str());
		return move_finish(key, prep.error());
	}
	core_.change(std::move(prep.value()), [this, key](int jerr, const Applied *applied) {
		move_ended(key, jerr, applied);
	});
}

// The table holds the extent MAPPED at g1 + 1, at its new place (or at the
// old one after a failed copy). Hosts waiting on the frozen entry READ it
// again on this invalidation; no drain is needed.
void Mover::move_ended(MoveKey key, int jerr, const Applied *applied)
{
	MoveOp &op = moves_.at(key);

	if (jerr) {
		log_error("volume %llu extent %llu: the end of the move could not be "
			  "journaled: the extent stays frozen until a restart rolls the "
			  "move back", (unsigned long long)key.first,
			  (unsigned long long)key.second);
		return move_finish(key, jerr);
	}

	const wire::Entry e = wire::decode_entry(applied->entry);

	op.t.ended = mono_us();
	if (!op.err) {
		const int64_t stall_ms = core_.now() - op.frozen_ms;

		op.result = wire::MovedExtent{
			.index = key.second,
			.old_pstart = op.where.old_pstart,
			.new_pstart = op.where.new_pstart,
			.old_dev = op.where.old_dev,
			.new_dev = op.where.new_dev,
			.generation = e.generation,
			.stall_us = uint32_t(std::min<int64_t>(stall_ms * 1000, UINT32_MAX)),
		};
	}
	op.state = MoveOp::State::announcing;
	pushes_.fan_out(key.first, key.second, 1, e.generation, MDR_INVAL_ALLOC, std::nullopt,
		[this, key] {
		MoveOp &o = moves_.at(key);
		o.t.published = mono_us();
		move_finish(key, o.err);
	});
}

void Mover::move_finish(MoveKey key, int err)
{
	auto node = moves_.extract(key);
	MoveOp &op = node.mapped();

	if (err) {
		core_.stats.moves_failed++;
		log_warn("volume %llu extent %llu: move to device %u failed: %s",
			 (unsigned long long)key.first, (unsigned long long)key.second,
			 op.to_dev, strerror(-err));
	} else {
		core_.stats.moves_done++;
		core_.stats.move_bytes += uint64_t{1} << op.extent_shift;
		core_.stats.precopy_bytes += op.precopy ? uint64_t{1} << op.extent_shift : 0;
		core_.stats.freeze_bytes += op.freeze_bytes;
		core_.stats.stall_max_us = std::max<uint64_t>(core_.stats.stall_max_us, op.result.stall_us);
		core_.stats.stall_total_us += op.result.stall_us;
		core_.stats.stall_us.observe(op.result.stall_us);
		const MoveOp::Times &t = op.t;

		// Stage times in µs, each from the end of the one before; the
		// stall is drain through end. tools/bench/migrate reads them.
		// Without a pre-copy, track and precopy are 0, and every granule
		// is dirty.
		log_info("volume %llu extent %llu moved from device %u sector %llu to "
			 "device %u sector %llu, generation %llu, dirty %d/%u, mask 0x%016llx, "
			 "stall %u us; "
			 "stages us: track %lld precopy %lld begin %lld drain %lld queue %lld "
			 "io %lld sync %lld loop %lld end %lld publish %lld",
			 (unsigned long long)key.first, (unsigned long long)key.second,
			 op.result.old_dev, (unsigned long long)op.result.old_pstart,
			 op.result.new_dev, (unsigned long long)op.result.new_pstart,
			 (unsigned long long)op.result.generation,
			 std::popcount(op.dirty), op.granules, (unsigned long long)op.dirty,
			 op.result.stall_us,
			 (long long)(t.tracked - t.start), (long long)(t.precopied - t.tracked),
			 (long long)(t.frozen - t.asked), (long long)(t.acked - t.frozen),
			 (long long)(t.copy.started - t.acked),
			 (long long)(t.copy.written - t.copy.started),
			 (long long)(t.copy.synced - t.copy.written),
			 (long long)(t.copied - t.copy.synced), (long long)(t.ended - t.copied),
			 (long long)(t.published - t.ended));
	}
	op.done(err, op.result);
}

mdr::Status Mover::roll_back(const Move &m, std::function<void(int err)> done)
{
	auto prep = core_.store.prepare_move_abort(m.volume_id, m.index);

	if (!prep.ok())
		return mdr::Error(prep.error(), prep.message());
	core_.change(std::move(prep.value()), [m, done = std::move(done)](int err, const Applied *) {
		if (!err)
			log_info("volume %llu extent %llu: the move to device %u did not finish: "
				 "rolled back to device %u, generation %llu",
				 (unsigned long long)m.volume_id, (unsigned long long)m.index,
				 m.new_dev, m.old_dev, (unsigned long long)(m.generation + 1));
		done(err);
	});
	return {};
}

void Mover::roll_back_after_grace()
{
	for (const Move &m : core_.store.moves())
		left_moves_.insert({m.volume_id, m.index});
}

mdr::Status Mover::recover_moves()
{
	for (const Move &m : core_.store.moves()) {
		int result = -EINPROGRESS;

		if (mdr::Status st = roll_back(m, [&result](int err) { result = err; }); !st.ok())
			return st;
		if (auto st = core_.journal.flush(); !st.ok())
			return st;
		if (result)
			return mdr::Error(result, "cannot roll back the move of extent " +
					  std::to_string(m.index) + " of volume " +
					  std::to_string(m.volume_id));
	}
	return {};
}

} // namespace mdnode
