// SPDX-License-Identifier: GPL-2.0
//
// allocator.cc - see allocator.h.
#include "mdnode/allocator.h"

#include <algorithm>
#include <cerrno>

namespace mdnode {

namespace {

constexpr unsigned kUnitShift = MDR_WIRE_EXTENT_SHIFT_MIN;	// 64 KiB
constexpr unsigned kSectorShift = 9;
constexpr unsigned kMaxOrder = MDR_WIRE_EXTENT_SHIFT_MAX - kUnitShift;
// The first 1 MiB of every device is kept for a future on-disk label.
constexpr uint64_t kLabelUnits = (uint64_t{1} << 20) >> kUnitShift;

bool printable(std::string_view s)
{
	return std::all_of(s.begin(), s.end(),
			   [](char c) { return c >= 0x20 && c < 0x7f; });
}

// Units of an extent and of a sector: the buddy's names for places.
unsigned order_of(uint32_t extent_shift) { return extent_shift - kUnitShift; }
uint64_t unit_of(uint64_t pstart) { return pstart >> (kUnitShift - kSectorShift); }
uint64_t sector_of(uint64_t unit) { return unit << (kUnitShift - kSectorShift); }

} // namespace

mdr::Result<Allocator> Allocator::create(std::vector<Device> devices)
{
	std::vector<Space> spaces;

	std::sort(devices.begin(), devices.end(),
		  [](const Device &a, const Device &b) { return a.id < b.id; });
	for (Device &d : devices) {
		const std::string what = "device " + std::to_string(d.id) +
					 " (" + d.path + ")";
		const uint64_t units = d.size >> kUnitShift;

		if (d.id == 0)
			return mdr::Error(-EINVAL, what + ": device ids start at 1");
		if (!spaces.empty() && spaces.back().device.id == d.id)
			return mdr::Error(-EINVAL, what + ": the id is given twice");
		if (d.serial.size() >= MDR_WIRE_SERIAL_LEN || !printable(d.serial))
			return mdr::Error(-EINVAL, what + ": the serial must be printable "
					  "ASCII of at most 39 characters");
		if (units <= kLabelUnits)
			return mdr::Error(-EINVAL, what + ": " + std::to_string(d.size) +
					  " bytes leave no 64 KiB after the 1 MiB label");
		spaces.push_back({std::move(d), Buddy(kLabelUnits, units, kMaxOrder)});
	}
	return Allocator(std::move(spaces));
}

Allocator Allocator::emptied() const
{
	std::vector<Space> spaces;

	for (const Space &s : spaces_)
		spaces.push_back({s.device, Buddy(kLabelUnits, s.device.size >> kUnitShift,
						  kMaxOrder)});
	return Allocator(std::move(spaces));
}

const Allocator::Space *Allocator::space(uint32_t dev_id) const
{
	return const_cast<Allocator *>(this)->space(dev_id);
}

Allocator::Space *Allocator::space(uint32_t dev_id)
{
	auto it = std::lower_bound(spaces_.begin(), spaces_.end(), dev_id,
				   [](const Space &s, uint32_t id) { return s.device.id < id; });

	return it != spaces_.end() && it->device.id == dev_id ? &*it : nullptr;
}

const Device *Allocator::device(uint32_t id) const
{
	const Space *s = space(id);

	return s ? &s->device : nullptr;
}

std::optional<Place> Allocator::alloc(uint32_t extent_shift)
{
	// The device with the most free space first; the lowest id on a tie.
	std::vector<Space *> by_free;

	for (Space &s : spaces_)
		by_free.push_back(&s);
	std::stable_sort(by_free.begin(), by_free.end(), [](Space *a, Space *b) {
		return a->buddy.free_units() > b->buddy.free_units();
	});
	for (Space *s : by_free)
		if (std::optional<uint64_t> unit = s->buddy.alloc(order_of(extent_shift)))
			return Place{s->device.id, sector_of(*unit)};
	return std::nullopt;
}

std::optional<uint64_t> Allocator::alloc_on(uint32_t dev_id, uint32_t extent_shift)
{
	std::optional<uint64_t> unit = space(dev_id)->buddy.alloc(order_of(extent_shift));

	return unit ? std::optional(sector_of(*unit)) : std::nullopt;
}

mdr::Status Allocator::take(uint32_t dev_id, uint64_t pstart, uint32_t extent_shift)
{
	Space *s = space(dev_id);
	const uint64_t sectors = uint64_t{1} << (extent_shift - kSectorShift);

	if (!s)
		return mdr::Error(-ENOENT, "device " + std::to_string(dev_id) +
				  " is not configured");
	if (pstart % sectors)
		return mdr::Error(-EINVAL, "sector " + std::to_string(pstart) +
				  " is not aligned to the extent size");

	mdr::Status used = s->buddy.mark_used(unit_of(pstart), order_of(extent_shift));

	if (!used.ok())
		return mdr::Error(used.error(), "device " + std::to_string(dev_id) + ": " +
				  used.message());
	return {};
}

void Allocator::free(uint32_t dev_id, uint64_t pstart, uint32_t extent_shift)
{
	space(dev_id)->buddy.free(unit_of(pstart), order_of(extent_shift));
}

uint32_t Allocator::roomiest_device(uint32_t except) const
{
	const Space *best = nullptr;

	for (const Space &s : spaces_)
		if (s.device.id != except &&
		    (!best || s.buddy.free_units() > best->buddy.free_units()))
			best = &s;
	return best ? best->device.id : 0;
}

uint64_t Allocator::free_extents(uint32_t dev_id, uint32_t extent_shift) const
{
	const Space *s = space(dev_id);

	return s ? s->buddy.free_units() >> order_of(extent_shift) : 0;
}

std::vector<mdr::wire::Device> Allocator::devices() const
{
	std::vector<mdr::wire::Device> out;

	for (const Space &s : spaces_)
		out.push_back({.dev_id = s.device.id, .size = s.device.size,
			       .used = s.buddy.used_units() << kUnitShift,
			       .serial = s.device.serial});
	return out;
}

} // namespace mdnode
