// SPDX-License-Identifier: GPL-2.0
//
// allocator.h - the physical space of the node: its backing devices, each
// with a buddy allocator (buddy.h) of 64 KiB units, handing out naturally
// aligned extents of 2^extent_shift bytes. Places are named as the tables
// name them: a device id and a first 512-byte sector. Pure logic; callers
// own locking. The store (store.h) reserves and frees through it; nothing
// else changes it.
#ifndef MDNODE_ALLOCATOR_H
#define MDNODE_ALLOCATOR_H

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/util/result.h"
#include "lib/wire/wire.h"
#include "mdnode/buddy.h"

namespace mdnode {

// A backing device this node owns, as configured and probed at start.
struct Device {
	uint32_t id;		// cluster-wide, >= 1
	std::string path;
	std::string serial;	// serial number or WWID, as hosts find it
	uint64_t size;		// bytes
	// The WWID, else the serial: what the journal records of the disk
	// (DEVICE_RECORD) and every later start holds it to.
	std::string identity{};

	bool operator==(const Device &) const = default;
};

// A place of one extent: (device id, first 512-byte sector).
using Place = std::pair<uint32_t, uint64_t>;

class Allocator {
public:
	// The first 1 MiB of every device stays unused: it is kept for an
	// on-disk label. -EINVAL naming the device when one has id 0 or an id
	// given twice, a serial that is not printable ASCII shorter than
	// MDR_WIRE_SERIAL_LEN, or no room for one 64 KiB unit after the label.
	static mdr::Result<Allocator> create(std::vector<Device> devices);

	// The configured device, or nullptr.
	const Device *device(uint32_t id) const;
	// A free extent of 2^extent_shift bytes on the device with the most
	// free space that has one (ties: the lowest id); none when no device
	// has one.
	std::optional<Place> alloc(uint32_t extent_shift);
	// A free extent on dev_id (configured); none when it has none.
	std::optional<uint64_t> alloc_on(uint32_t dev_id, uint32_t extent_shift);
	// Takes the extent at (dev_id, pstart), as a record names it:
	// -ENOENT for a device not configured, -EINVAL for a sector not
	// aligned to the extent size, the buddy's error (naming the device)
	// for space already used or beyond the device.
	mdr::Status take(uint32_t dev_id, uint64_t pstart, uint32_t extent_shift);
	// Gives back an extent taken or handed out.
	void free(uint32_t dev_id, uint64_t pstart, uint32_t extent_shift);

	// The device other than except with the most free space (ties: the
	// lowest id); 0 when there is no other device.
	uint32_t roomiest_device(uint32_t except) const;
	// Free extents of 2^extent_shift bytes on the device, at the most
	// (the buddy may be fragmented): free units over the extent's units.
	uint64_t free_extents(uint32_t dev_id, uint32_t extent_shift) const;
	// By device id; used counts every place handed out or taken.
	std::vector<mdr::wire::Device> devices() const;
	// The same devices with all their space free.
	Allocator emptied() const;

	bool operator==(const Allocator &) const = default;

private:
	struct Space {
		Device device;
		Buddy buddy;	// in 64 KiB units

		bool operator==(const Space &) const = default;
	};

	explicit Allocator(std::vector<Space> spaces) : spaces_(std::move(spaces)) {}
	Space *space(uint32_t dev_id);
	const Space *space(uint32_t dev_id) const;

	std::vector<Space> spaces_;	// by device id
};

} // namespace mdnode

#endif // MDNODE_ALLOCATOR_H
