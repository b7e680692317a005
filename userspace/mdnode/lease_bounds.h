// SPDX-License-Identifier: GPL-2.0
//
// lease_bounds.h - the longest lease a process of this node may have
// granted, and the IO hold that went with it, kept across restarts in
// data-dir/lease-bounds.
//
// After a start, the leases the process before granted are waited out
// (NodeCore::in_restart_lease(), in_restart_grace()): they were granted
// with that process's --lease-ms and --io-hold-ms, not this one's. A
// restart that lowers either would otherwise wait too short a time. So a
// start waits out the larger of the file's bounds and its own, and writes
// that larger pair before it grants a lease; only once its own grace is
// over, when every lease still out there is its own, may a clean stop
// write its own values (settle). A crash at any moment leaves bounds no
// smaller than any lease granted.
//
// The file is one line, "held_ms=N io_hold_ms=M": held_ms is lease_ms plus
// the drift margin, what mdnode holds a lease for after its request. This
// file has its form; startup.h reads and writes it.
#ifndef MDNODE_LEASE_BOUNDS_H
#define MDNODE_LEASE_BOUNDS_H

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include <linux/mdroute_wire.h>

#include "lib/util/result.h"

namespace mdnode {

struct LeaseBounds {
	uint32_t held_ms = 0;
	uint32_t io_hold_ms = 0;

	bool operator==(const LeaseBounds &) const = default;
};

// Each bound the larger of the two.
inline LeaseBounds widest(LeaseBounds a, LeaseBounds b)
{
	return {std::max(a.held_ms, b.held_ms), std::max(a.io_hold_ms, b.io_hold_ms)};
}

// The longest held_ms a bound may name: a lease of the longest --lease-ms,
// with a margin far beyond any drift.
inline constexpr uint32_t kHeldMsMax = MDR_WIRE_LEASE_MS_MAX + 60000;

// -EINVAL naming the bound: held_ms above kHeldMsMax, io_hold_ms above
// kIoHoldMsMax (config.h).
mdr::Status check_lease_bounds(LeaseBounds b);

// The file's text, and back. -EINVAL naming what is wrong: anything but
// the one line with both numbers, in range.
std::string format_lease_bounds(LeaseBounds b);
mdr::Result<LeaseBounds> parse_lease_bounds(std::string_view text);

} // namespace mdnode

#endif // MDNODE_LEASE_BOUNDS_H
