// SPDX-License-Identifier: GPL-2.0
//
// probe.h - what mdnode learns about a backing device at start: its size,
// the serial number or WWID by which hosts find it, and the identity by
// which the journal knows it (startup_devices.cc).
#ifndef MDNODE_PROBE_H
#define MDNODE_PROBE_H

#include <cstdint>
#include <string>

#include "lib/util/result.h"

namespace mdnode {

struct DeviceProbe {
	uint64_t size;		// bytes
	std::string serial;	// serial or WWID; "file:<path>" for a file
	// The WWID, else the serial (a WWID names the disk's namespace and
	// outlives a move to another controller); "file:<path>" for a file.
	std::string identity{};
};

// The serial and the identity from a block device's sysfs directory
// (sysfs_root/dev/block/MAJ:MIN/): serial from serial, device/serial,
// wwid, device/wwid; identity from wwid, device/wwid, serial,
// device/serial (the first that is there and not blank; an identity that
// would not fit the journal's record is passed over). -ENODATA when it
// has neither.
mdr::Result<DeviceProbe> probe_sysfs(const std::string &dir);

// A block device (size from BLKGETSIZE64, serial and identity from
// probe_sysfs() under sysfs_root) or a regular file (for tests). The
// device is opened read-only and closed again: hosts do the IO, and a
// host may hold it open exclusively on this very machine.
mdr::Result<DeviceProbe> probe_device(const std::string &path,
				      const std::string &sysfs_root = "/sys");

} // namespace mdnode

#endif // MDNODE_PROBE_H
