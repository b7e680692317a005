// SPDX-License-Identifier: GPL-2.0
//
// probe.h - what mdnode learns about a backing device at start: its size
// and the serial number or WWID by which hosts find it.
#ifndef MDNODE_PROBE_H
#define MDNODE_PROBE_H

#include <cstdint>
#include <string>

#include "lib/result.h"

namespace mdnode {

struct DeviceProbe {
	uint64_t size;		// bytes
	std::string serial;	// serial or WWID; "file:<path>" for a file
};

// A block device (size from BLKGETSIZE64, serial from sysfs: serial,
// device/serial, wwid, device/wwid) or a regular file (for tests). The
// device is opened read-only and closed again: hosts do the IO, and a
// host may hold it open exclusively on this very machine.
mdr::Result<DeviceProbe> probe_device(const std::string &path);

} // namespace mdnode

#endif // MDNODE_PROBE_H
