// SPDX-License-Identifier: GPL-2.0
//
// startup.h - the steps of mdnode's start and stop that main.cc wires
// together: the data directory and its lock, the node's identity, the
// devices and the state recovered from the journal, the node's settings,
// systemd's notifications, and the checkpoint at a clean stop. Each
// step logs what went wrong itself; false or an empty result: exit 1
// (kExitFailure).
#ifndef MDNODE_STARTUP_H
#define MDNODE_STARTUP_H

#include <csignal>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "mdnode/config.h"
#include "mdnode/journal.h"
#include "mdnode/node.h"
#include "mdnode/repl_journal.h"
#include "mdnode/store.h"

namespace mdnode {

// mdnode's exit statuses (Documentation/operations.md, "Exit status").
// mdnode.service restarts it after any but kExitOk and kExitUsage.
inline constexpr int kExitOk = 0;		// stopped cleanly (SIGTERM, SIGINT)
inline constexpr int kExitFailure = 1;		// could not start, or stopped by a fault
inline constexpr int kExitUsage = 2;		// the command line or config is wrong
// A journal write failed (EIO, ENOSPC, ...): nothing more could be
// acknowledged, so mdnode ends rather than answer EIO for ever. A new
// start recovers every acknowledged change, once the disk takes writes.
inline constexpr int kExitJournalFailed = 3;

int64_t steady_ms();

// The signals mdnode reads from its signalfd, blocked in every thread:
// SIGTERM, SIGINT and SIGHUP (which would otherwise end it without a
// checkpoint).
sigset_t handled_signals();
// What a signal read from the signalfd does: true for a clean stop
// (logged); SIGHUP is logged and ignored, since mdnode logs to stderr and
// keeps no file of its own to reopen.
bool signal_stops(uint32_t signo);

// Creates the data directory and takes its lock (held until exit).
bool lock_data_dir(const Config &cfg);
// The node's identity: data-dir/node-id, made once.
std::optional<uint64_t> load_node_id(const Config &cfg);
// Probes every configured device.
std::optional<Store> open_store(const Config &cfg);
// Exactly the acknowledged state, or a refusal to start. With log, a
// replica's: the store gets the committed records of the group's log, and
// *log the log itself (repl_journal.h); a data directory of the other kind
// is refused either way.
std::unique_ptr<Journal> recover(const Config &cfg, Store &store, repl::RecoveredLog *log);
// After recover(), before the node serves (startup_devices.cc): every
// configured device must be the disk the journal recorded for its id
// (identity and size), and no disk recorded for one id may be configured
// as another. (A recorded device that holds extents but is not configured
// never gets here: recover() cannot place its extents and refuses.) Then the disks of new ids, and those of the ids in forget (whose
// recorded disk is dropped first), are recorded, durably. An error names
// each device that does not match, what it is, what was recorded and the
// fix; the journal is then left as it was: exit 1.
mdr::Status check_devices(Store &store, Journal &journal, std::span<const uint32_t> forget);
// The node's settings from the configuration, a fresh boot id and the
// admin key (warned about when it cannot be had).
NodeOptions node_options(const Config &cfg);

// data-dir/lease-bounds (lease_bounds.h); {0, 0} when there is none (a
// first start, or the first since an mdnode that kept none).
mdr::Result<LeaseBounds> read_lease_bounds(const std::string &dir);
// Durable when it returns.
mdr::Status write_lease_bounds(const std::string &dir, LeaseBounds b);
// The bounds of the leases a process before this one may have granted
// (lease_bounds.h) into no.prior, and the widest of them and this
// process's own made durable, before any lease is granted.
bool carry_lease_bounds(const Config &cfg, NodeOptions &no);
// At a clean stop: once this process's grace is over every lease out there
// is its own, and its own bounds are the ones to keep.
void settle_lease_bounds(const Config &cfg, const NodeOptions &no, bool grace_over);

// systemd's notification protocol (Type=notify), through libsystemd:
// "READY=1", "STOPPING=1", "STATUS=..." lines (several may go at once,
// one per line). Nothing when mdnode does not run under systemd.
void notify_systemd(const char *state);

// Makes everything appended durable and writes a checkpoint (none while
// extents move: the journal alone recovers them). False: exit 1.
bool shut_down(Journal &journal, Store &store);

} // namespace mdnode

#endif // MDNODE_STARTUP_H
