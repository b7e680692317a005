// SPDX-License-Identifier: GPL-2.0
//
// repl_checkpoint.h - a replica's checkpoint whole (replication.md, "A
// follower the log cannot bring back"): taken from its store behind its
// log's position, for its own journal (NodeCore::maybe_checkpoint()) and
// for a follower its leader ships it to; and installed by that follower.
// The bytes are repl_journal.h's (header, recent records, then the store's
// snapshot); the ring carries them in chunks (repl_format.h).
//
//	leader:		auto c = take_checkpoint(position, store);
//			shipper.offer_checkpoint(position.last, c);
//	follower:	auto log = install_checkpoint(journal, store, last, bytes);
//
// What installing takes on trust: nothing. The bytes are decoded
// (decode_checkpoint()), their position must be the one the chunks
// announced, and the snapshot is loaded into a store of its own
// (Store::with_snapshot(), the snapshot's own checks) before anything is
// written. Then the journal's checkpoint is written the way a replica
// writes its own (Journal::checkpoint(): under a temporary name, fsynced,
// renamed over, the directory fsynced, and only then the segments it
// covers deleted), so a crash at any moment leaves either the old journal
// or the new checkpoint, never a mix: the log the follower held before is
// dropped with the segments, and a start loads the checkpoint
// (LogRecovery::checkpoint()). Only once it is durable does the store
// take its state.
//
// The journal's checkpoint is the installed store's own snapshot behind
// the checkpoint's header, not the bytes received: the same state but for
// the recorded devices, which stay the replica's own (they are local
// records, never shipped: repl_journal.h).
#ifndef MDNODE_REPL_CHECKPOINT_H
#define MDNODE_REPL_CHECKPOINT_H

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "lib/util/result.h"
#include "mdnode/journal.h"
#include "mdnode/repl_journal.h"
#include "mdnode/store.h"

namespace mdnode::repl {

// log's header (encode_checkpoint_header()) and the store's snapshot after
// it. None while the store has a change in flight or an extent moving: a
// snapshot holds committed state and mapped entries only (store.h), and a
// checkpoint must hold exactly the log up to its position.
std::optional<std::vector<uint8_t>> take_checkpoint(const LogCheckpoint &log, const Store &store);

// A checkpoint of the leader's whose log ends at last, installed (above):
// the log it begins with (position, recent records, bounds). Errors,
// nothing changed (the journal, the store and the log stand): -EINVAL
// naming what does not hold (decode_checkpoint()'s, another position,
// the snapshot's), the journal's when it cannot write the checkpoint
// (Journal::checkpoint(); failed() says whether it failed for good).
// Blocks for the write: not from a journal callback.
mdr::Result<LogCheckpoint> install_checkpoint(Journal &journal, Store &store,
					      const LogPosition &last,
					      std::span<const uint8_t> bytes);

} // namespace mdnode::repl

#endif // MDNODE_REPL_CHECKPOINT_H
