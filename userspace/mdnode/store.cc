// SPDX-License-Identifier: GPL-2.0
//
// store.cc - see store.h.
#include "mdnode/store.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <utility>

#include <sys/mman.h>
#include <unistd.h>

namespace mdnode {

namespace {

constexpr unsigned kUnitShift = MDR_WIRE_EXTENT_SHIFT_MIN;	// 64 KiB
constexpr unsigned kSectorShift = 9;
constexpr unsigned kMaxOrder = MDR_WIRE_EXTENT_SHIFT_MAX - kUnitShift;
// The first 1 MiB of every device is kept for a future on-disk label.
constexpr uint64_t kLabelUnits = (uint64_t{1} << 20) >> kUnitShift;

constexpr uint16_t kRecordVersion = 1;
constexpr uint32_t kSnapshotMagic = 0x5352444d;	// "MDRS" as LE bytes
constexpr uint16_t kSnapshotVersion = 1;
constexpr size_t kSnapshotHeader = 24, kSnapshotVolume = 104, kSnapshotEntry = 32;

struct Format {
	uint16_t type;
	const char *name;
	size_t size;	// of the payload
};

constexpr Format kFormats[] = {
	{kVolumeCreate, "VOLUME_CREATE", 96},
	{kVolumeDelete, "VOLUME_DELETE", 16},
	{kVolumeResize, "VOLUME_RESIZE", 32},
	{kExtentAlloc, "EXTENT_ALLOC", 40},
	{kMoveBegin, "MOVE_BEGIN", 56},
	{kMoveDone, "MOVE_DONE", 40},
	{kMoveAbort, "MOVE_ABORT", 40},
};

const Format *format(uint16_t type)
{
	for (const Format &f : kFormats)
		if (f.type == type)
			return &f;
	return nullptr;
}

class Writer {
public:
	Writer &le16(uint16_t v) { return put(v, 2); }
	Writer &le32(uint32_t v) { return put(v, 4); }
	Writer &le64(uint64_t v) { return put(v, 8); }

	// NUL-padded to MDR_WIRE_NAME_LEN bytes.
	Writer &name(std::string_view name)
	{
		assert(name.size() < MDR_WIRE_NAME_LEN);
		bytes_.insert(bytes_.end(), name.begin(), name.end());
		bytes_.resize(bytes_.size() + MDR_WIRE_NAME_LEN - name.size());
		return *this;
	}

	std::vector<uint8_t> take() { return std::move(bytes_); }

private:
	Writer &put(uint64_t v, unsigned n)
	{
		for (unsigned i = 0; i < n; i++)
			bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
		return *this;
	}

	std::vector<uint8_t> bytes_;
};

// Reads what the caller has checked is there (left()).
class Reader {
public:
	explicit Reader(std::span<const uint8_t> in) : in_(in) {}

	uint16_t le16() { return static_cast<uint16_t>(get(2)); }
	uint32_t le32() { return static_cast<uint32_t>(get(4)); }
	uint64_t le64() { return get(8); }

	// A NUL-padded name field; none when it holds no NUL, or bytes other
	// than NUL after the first one.
	std::optional<std::string> name()
	{
		std::span<const uint8_t> field = in_.subspan(pos_, MDR_WIRE_NAME_LEN);
		auto nul = std::find(field.begin(), field.end(), 0);

		pos_ += MDR_WIRE_NAME_LEN;
		if (nul == field.end() ||
		    std::any_of(nul, field.end(), [](uint8_t c) { return c != 0; }))
			return std::nullopt;
		return std::string(field.begin(), nul);
	}

	size_t left() const { return in_.size() - pos_; }

private:
	uint64_t get(unsigned n)
	{
		uint64_t v = 0;

		assert(left() >= n);
		for (unsigned i = 0; i < n; i++)
			v |= uint64_t{in_[pos_ + i]} << (8 * i);
		pos_ += n;
		return v;
	}

	std::span<const uint8_t> in_;
	size_t pos_ = 0;
};

template <typename T>
mdr::Error fail(const mdr::Result<T> &r, const std::string &context)
{
	return mdr::Error(r.error(), context + ": " + r.message());
}

mdr::Status check_size(uint64_t size)
{
	if (size == 0 || size % 4096)
		return mdr::Error(-EINVAL, "size " + std::to_string(size) +
				  ": use a multiple of 4096 above 0");
	return {};
}

mdr::Status check_volume(std::string_view name, uint64_t size, uint32_t shift)
{
	if (!mdr::wire::valid_volume_name(name))
		return mdr::Error(-EINVAL, "volume name '" + std::string(name) +
				  "': use 1 to 63 of A-Z a-z 0-9 . _ -");
	if (shift < MDR_WIRE_EXTENT_SHIFT_MIN || shift > MDR_WIRE_EXTENT_SHIFT_MAX)
		return mdr::Error(-EINVAL, "extent shift " + std::to_string(shift) +
				  ": use 16 (64 KiB) to 30 (1 GiB)");
	return check_size(size);
}

uint64_t nr_extents(uint64_t size, unsigned shift)
{
	return (size >> shift) + ((size & ((uint64_t{1} << shift) - 1)) != 0);
}

mdr::wire::Entry entry_at(const Volume &v, uint64_t index)
{
	return mdr::wire::decode_entry(v.table.entries()[index]);
}

mdr_wire_entry unallocated(uint64_t volume_id, uint64_t index)
{
	return mdr::wire::make_entry({.generation = 1, .pstart = 0, .dev_id = 0,
				      .state = MDR_EXT_UNALLOCATED},
				     volume_id, index);
}

// The entries of a new table differ only in their CRC, which covers the
// volume id, the index and the same 28 bytes. Over messages of one length
// a CRC is affine: crc(a ^ b) = crc(a) ^ crc(b) ^ crc(0). So flipping bit b
// of the index changes the CRC by a constant of its own, whatever the
// volume, the other bits and the rest of the entry; and going from index
// i to i + 1 flips bits 0 to countr_zero(i + 1), which changes the CRC by
// flips[countr_zero(i + 1)], the XOR of those bits' constants. The
// constants come from the real CRC of entries that differ in one bit.
struct IndexFlips {
	std::array<uint32_t, 64> flips;

	IndexFlips()
	{
		const mdr_wire_entry e = unallocated(0, 0);
		const uint32_t zero = mdr::wire::entry_crc(e, 0, 0);
		uint32_t acc = 0;

		for (unsigned b = 0; b < 64; b++) {
			acc ^= mdr::wire::entry_crc(e, 0, uint64_t{1} << b) ^ zero;
			flips[b] = acc;
		}
	}
};

bool printable(std::string_view s)
{
	return std::all_of(s.begin(), s.end(),
			   [](char c) { return c >= 0x20 && c < 0x7f; });
}

} // namespace

struct Store::Record {
	uint16_t type;
	uint64_t volume_id = 0;
	uint64_t size = 0;		// CREATE, RESIZE: bytes
	uint32_t extent_shift = 0;	// CREATE
	uint32_t tenant = 0;		// CREATE
	std::string name{};		// CREATE
	uint64_t generation = 0;	// RESIZE: the volume's; else the entry's
	uint64_t index = 0;		// ALLOC, MOVE_*
	// ALLOC: the place; MOVE_BEGIN, MOVE_ABORT: the old place; MOVE_DONE:
	// the new place
	uint32_t dev_id = 0;
	uint64_t pstart = 0;		// 512-byte sectors
	uint32_t new_dev = 0;		// MOVE_BEGIN
	uint64_t new_pstart = 0;	// MOVE_BEGIN

	bool whole_volume() const
	{
		return type == kVolumeCreate || type == kVolumeDelete ||
		       type == kVolumeResize;
	}
	Key key() const { return {volume_id, whole_volume() ? kWholeVolume : index}; }
};

// ---------------------------------------------------------------------------
// Tables.

void seal_unallocated(std::span<mdr_wire_entry> out, uint64_t volume_id, uint64_t first)
{
	static const IndexFlips k;

	if (out.empty())
		return;

	mdr_wire_entry e = unallocated(volume_id, first);
	uint32_t crc = le32toh(e.crc);

	assert(out.size() - 1 <= UINT64_MAX - first);
	out[0] = e;
	for (size_t n = 1; n < out.size(); n++) {
		crc ^= k.flips[std::countr_zero(first + n)];
		e.crc = htole32(crc);
		out[n] = e;
	}
}

mdr::Result<Table> Table::map(uint64_t nr_entries)
{
	// nr_entries <= 2^64 / 64 KiB: the byte count cannot overflow.
	const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
	const size_t len = (nr_entries * sizeof(mdr_wire_entry) + page - 1) / page * page;

	assert(nr_entries > 0);
	// Populated here, in one pass of the kernel, rather than by a fault
	// per page when the entries are sealed: a creation takes its memory
	// when it is prepared, before its journal write, and not in its
	// commit, after the write and before the reply.
	void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED) {
		const int err = errno;

		return mdr::Error(-err, "cannot map a table of " +
				  std::to_string(nr_entries) + " entries");
	}
	return Table(static_cast<mdr_wire_entry *>(p), nr_entries, len);
}

Table::Table(Table &&other) noexcept
	: entries_(std::exchange(other.entries_, nullptr)),
	  nr_(std::exchange(other.nr_, 0)),
	  map_len_(std::exchange(other.map_len_, 0))
{
}

Table &Table::operator=(Table &&other) noexcept
{
	if (this != &other) {
		unmap();
		entries_ = std::exchange(other.entries_, nullptr);
		nr_ = std::exchange(other.nr_, 0);
		map_len_ = std::exchange(other.map_len_, 0);
	}
	return *this;
}

Table::~Table()
{
	unmap();
}

void Table::unmap()
{
	if (entries_)
		munmap(entries_, map_len_);
	entries_ = nullptr;
	nr_ = 0;
	map_len_ = 0;
}

bool Table::operator==(const Table &other) const
{
	return bytes() == other.bytes() &&
	       (bytes() == 0 || std::memcmp(data(), other.data(), bytes()) == 0);
}

// ---------------------------------------------------------------------------
// Records.

Change Store::encode(const Record &r)
{
	Writer out;

	out.le16(kRecordVersion).le16(0);
	switch (r.type) {
	case kVolumeCreate:
		out.le32(r.tenant).le64(r.volume_id).le64(r.size)
			.le32(r.extent_shift).le32(0).name(r.name);
		break;
	case kVolumeDelete:
		out.le32(0).le64(r.volume_id);
		break;
	case kVolumeResize:
		out.le32(0).le64(r.volume_id).le64(r.size).le64(r.generation);
		break;
	case kExtentAlloc:
	case kMoveDone:
	case kMoveAbort:
		out.le32(r.dev_id).le64(r.volume_id).le64(r.index).le64(r.pstart)
			.le64(r.generation);
		break;
	case kMoveBegin:
		out.le32(r.dev_id).le64(r.volume_id).le64(r.index).le64(r.pstart)
			.le32(r.new_dev).le32(0).le64(r.new_pstart).le64(r.generation);
		break;
	}
	Change c{r.type, out.take()};
	assert(c.payload.size() == format(r.type)->size);
	return c;
}

mdr::Result<Store::Record> Store::decode(uint16_t type, std::span<const uint8_t> payload)
{
	const Format *f = format(type);

	if (!f)
		return mdr::Error(-EINVAL, "record of unknown type " + std::to_string(type));

	const std::string what = std::string("record ") + f->name;
	Reader in(payload);
	Record r{.type = type};

	if (payload.size() != f->size)
		return mdr::Error(-EINVAL, what + ": " + std::to_string(payload.size()) +
				  " bytes, not " + std::to_string(f->size));
	if (const uint16_t version = in.le16(); version != kRecordVersion)
		return mdr::Error(-EINVAL, what + ": unknown version " + std::to_string(version));

	bool reserved = in.le16() != 0;

	switch (type) {
	case kVolumeCreate: {
		r.tenant = in.le32();
		r.volume_id = in.le64();
		r.size = in.le64();
		r.extent_shift = in.le32();
		reserved |= in.le32() != 0;
		std::optional<std::string> name = in.name();
		if (!name)
			return mdr::Error(-EINVAL, what + ": the name is not NUL-padded");
		r.name = std::move(*name);
		break;
	}
	case kVolumeDelete:
		reserved |= in.le32() != 0;
		r.volume_id = in.le64();
		break;
	case kVolumeResize:
		reserved |= in.le32() != 0;
		r.volume_id = in.le64();
		r.size = in.le64();
		r.generation = in.le64();
		break;
	case kExtentAlloc:
	case kMoveDone:
	case kMoveAbort:
		r.dev_id = in.le32();
		r.volume_id = in.le64();
		r.index = in.le64();
		r.pstart = in.le64();
		r.generation = in.le64();
		break;
	case kMoveBegin:
		r.dev_id = in.le32();
		r.volume_id = in.le64();
		r.index = in.le64();
		r.pstart = in.le64();
		r.new_dev = in.le32();
		reserved |= in.le32() != 0;
		r.new_pstart = in.le64();
		r.generation = in.le64();
		break;
	}
	if (reserved)
		return mdr::Error(-EINVAL, what + ": a reserved field is not zero");
	return r;
}

std::string Store::describe(const Record &r)
{
	std::string s = std::string("record ") + format(r.type)->name +
			" (volume " + std::to_string(r.volume_id);

	if (!r.whole_volume())
		s += ", extent " + std::to_string(r.index);
	return s + ")";
}

// ---------------------------------------------------------------------------
// Devices and the state of changes in flight.

mdr::Result<Store> Store::create(std::vector<Device> devices)
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
	return Store(std::move(spaces));
}

const Store::Space *Store::space(uint32_t dev_id) const
{
	return const_cast<Store *>(this)->space(dev_id);
}

Store::Space *Store::space(uint32_t dev_id)
{
	auto it = std::lower_bound(spaces_.begin(), spaces_.end(), dev_id,
				   [](const Space &s, uint32_t id) { return s.device.id < id; });

	return it != spaces_.end() && it->device.id == dev_id ? &*it : nullptr;
}

bool Store::name_taken(std::string_view name) const
{
	return names_.contains(name) || reserved_names_.contains(name);
}

bool Store::busy(uint64_t volume_id) const
{
	auto it = pending_.lower_bound({volume_id, 0});
	auto mv = moves_.lower_bound({volume_id, 0});

	auto pl = move_places_.lower_bound({volume_id, 0});

	return (it != pending_.end() && it->first.first == volume_id) ||
	       (mv != moves_.end() && mv->first.first == volume_id) ||
	       (pl != move_places_.end() && pl->first.first == volume_id);
}

Change Store::reserve(const Record &r, std::optional<Table> table)
{
	Change c = encode(r);

	pending_.emplace(r.key(), Pending{c.type, c.payload, std::move(table)});
	if (r.type == kVolumeCreate)
		reserved_names_.insert(r.name);
	return c;
}

mdr::Result<Store::Pending> Store::take_pending(const Record &r, const Change &change)
{
	auto it = pending_.find(r.key());

	if (it == pending_.end() || it->second.type != change.type ||
	    it->second.payload != change.payload)
		return mdr::Error(-ENOENT, describe(r) + " is not in flight");

	Pending p = std::move(it->second);

	pending_.erase(it);
	if (r.type == kVolumeCreate) {
		reserved_names_.erase(r.name);
	} else if (r.type == kExtentAlloc || r.type == kMoveBegin) {
		// Volumes with allocations or moves in flight are not deleted.
		// The reservation is given back; commit takes the place again.
		const Volume &v = volumes_.at(r.volume_id);
		const uint32_t dev = r.type == kExtentAlloc ? r.dev_id : r.new_dev;
		const uint64_t pstart = r.type == kExtentAlloc ? r.pstart : r.new_pstart;

		space(dev)->buddy.free(pstart >> (kUnitShift - kSectorShift),
				       v.extent_shift - kUnitShift);
	}
	return p;
}

// ---------------------------------------------------------------------------
// Prepare, commit, abort.

mdr::Result<Change> Store::prepare_create(std::string_view name, uint64_t size,
					  uint32_t extent_shift, uint32_t tenant)
{
	Record r{.type = kVolumeCreate, .size = size,
		 .extent_shift = extent_shift ? extent_shift : MDR_WIRE_EXTENT_SHIFT_DEFAULT,
		 .tenant = tenant, .name = std::string(name)};

	if (mdr::Status ok = check_volume(r.name, r.size, r.extent_shift); !ok.ok())
		return mdr::Error(ok.error(), ok.message());
	if (name_taken(r.name))
		return mdr::Error(-EEXIST, "volume name '" + r.name + "' is taken");

	mdr::Result<Table> table = Table::map(nr_extents(r.size, r.extent_shift));

	if (!table.ok())
		return mdr::Error(table.error(), table.message());
	r.volume_id = next_id_++;
	return reserve(r, std::move(table).value());
}

mdr::Result<Change> Store::prepare_delete(uint64_t volume_id)
{
	if (!volumes_.contains(volume_id))
		return mdr::Error(-ENOENT, "no volume " + std::to_string(volume_id));
	if (busy(volume_id))
		return mdr::Error(-EBUSY, "volume " + std::to_string(volume_id) +
				  " has changes in flight");
	return reserve(Record{.type = kVolumeDelete, .volume_id = volume_id},
		       std::nullopt);
}

mdr::Result<Change> Store::prepare_resize(uint64_t volume_id, uint64_t size)
{
	const Volume *v = volume(volume_id);

	if (!v)
		return mdr::Error(-ENOENT, "no volume " + std::to_string(volume_id));
	if (mdr::Status ok = check_size(size); !ok.ok())
		return mdr::Error(ok.error(), ok.message());
	if (size == v->size)
		return mdr::Error(-EINVAL, "volume " + std::to_string(volume_id) +
				  " has " + std::to_string(size) + " bytes already");
	if (busy(volume_id))
		return mdr::Error(-EBUSY, "volume " + std::to_string(volume_id) +
				  " has changes in flight");

	mdr::Result<Table> table = Table::map(nr_extents(size, v->extent_shift));

	if (!table.ok())
		return mdr::Error(table.error(), table.message());
	return reserve(Record{.type = kVolumeResize, .volume_id = volume_id,
			      .size = size, .generation = v->generation + 1},
		       std::move(table).value());
}

mdr::Result<Allocation> Store::prepare_alloc(uint64_t volume_id, uint64_t index)
{
	const Volume *v = volume(volume_id);
	const std::string what = "extent " + std::to_string(index) +
				 " of volume " + std::to_string(volume_id);

	if (!v)
		return mdr::Error(-ENOENT, "no volume " + std::to_string(volume_id));
	if (index >= v->table.entries().size())
		return mdr::Error(-ERANGE, what + ": the volume has " +
				  std::to_string(v->table.entries().size()) + " extents");

	const mdr::wire::Entry old = entry_at(*v, index);

	if (old.state == MDR_EXT_MAPPED)
		return Allocation(v->table.entries()[index]);
	// Hosts wait on a frozen entry; one that asks anyway retries later.
	if (old.state == MDR_EXT_FROZEN)
		return mdr::Error(-EAGAIN, what + " is moving");
	if (pending_.contains({volume_id, index}))
		return mdr::Error(-EINPROGRESS, what + " is being allocated");
	if (pending_.contains({volume_id, kWholeVolume}))
		return mdr::Error(-EBUSY, "volume " + std::to_string(volume_id) +
				  " is being deleted or resized");

	// The device with the most free space first; the lowest id on a tie.
	std::vector<Space *> by_free;

	for (Space &s : spaces_)
		by_free.push_back(&s);
	std::stable_sort(by_free.begin(), by_free.end(), [](Space *a, Space *b) {
		return a->buddy.free_units() > b->buddy.free_units();
	});
	for (Space *s : by_free) {
		std::optional<uint64_t> unit = s->buddy.alloc(v->extent_shift - kUnitShift);

		if (unit)
			return Allocation(reserve(
				Record{.type = kExtentAlloc, .volume_id = volume_id,
				       .generation = old.generation + 1, .index = index,
				       .dev_id = s->device.id,
				       .pstart = *unit << (kUnitShift - kSectorShift)},
				std::nullopt));
	}
	return mdr::Error(-ENOSPC, what + ": no device has a free extent of 2^" +
			  std::to_string(v->extent_shift) + " bytes");
}

mdr::Result<const Volume *> Store::check_move(uint64_t volume_id, uint64_t index,
					      uint32_t to_dev) const
{
	const Volume *v = volume(volume_id);
	const std::string what = "extent " + std::to_string(index) +
				 " of volume " + std::to_string(volume_id);

	if (!v)
		return mdr::Error(-ENOENT, "no volume " + std::to_string(volume_id));
	if (index >= v->table.entries().size())
		return mdr::Error(-ERANGE, what + ": the volume has " +
				  std::to_string(v->table.entries().size()) + " extents");
	if (!space(to_dev))
		return mdr::Error(-ENOENT, "no device " + std::to_string(to_dev));
	if (pending_.contains({volume_id, index}) || moves_.contains({volume_id, index}))
		return mdr::Error(-EBUSY, what + " is being allocated or moved");
	if (pending_.contains({volume_id, kWholeVolume}))
		return mdr::Error(-EBUSY, "volume " + std::to_string(volume_id) +
				  " is being deleted or resized");

	const mdr::wire::Entry old = entry_at(*v, index);

	if (old.state != MDR_EXT_MAPPED)
		return mdr::Error(-EINVAL, what + " is not allocated: nothing to move");
	if (old.dev_id == to_dev)
		return mdr::Error(-EINVAL, what + " is on device " +
				  std::to_string(to_dev) + " already");
	return v;
}

mdr::Result<uint64_t> Store::reserve_move(uint64_t volume_id, uint64_t index,
					  uint32_t to_dev)
{
	auto v = check_move(volume_id, index, to_dev);

	if (!v.ok())
		return mdr::Error(v.error(), v.message());
	if (move_places_.contains({volume_id, index}))
		return mdr::Error(-EBUSY, "extent " + std::to_string(index) + " of volume " +
				  std::to_string(volume_id) + " has a place reserved");

	const unsigned order = v.value()->extent_shift - kUnitShift;
	std::optional<uint64_t> unit = space(to_dev)->buddy.alloc(order);

	if (!unit)
		return mdr::Error(-ENOSPC, "device " + std::to_string(to_dev) +
				  " has no free extent of 2^" +
				  std::to_string(v.value()->extent_shift) + " bytes");

	const uint64_t pstart = *unit << (kUnitShift - kSectorShift);

	move_places_.emplace(Key{volume_id, index}, std::make_pair(to_dev, pstart));
	return pstart;
}

void Store::release_move(uint64_t volume_id, uint64_t index)
{
	auto it = move_places_.find({volume_id, index});

	if (it == move_places_.end())
		return;

	const auto [dev, pstart] = it->second;

	// Reserved places keep their volume alive.
	space(dev)->buddy.free(pstart >> (kUnitShift - kSectorShift),
			       volumes_.at(volume_id).extent_shift - kUnitShift);
	move_places_.erase(it);
}

mdr::Result<Change> Store::prepare_move(uint64_t volume_id, uint64_t index,
					uint32_t to_dev)
{
	auto v = check_move(volume_id, index, to_dev);

	if (!v.ok())
		return mdr::Error(v.error(), v.message());

	const mdr::wire::Entry old = entry_at(*v.value(), index);
	const uint32_t shift = v.value()->extent_shift;
	std::optional<uint64_t> unit;

	// A place reserved on another device is given back: the move goes
	// where it is asked to.
	if (auto it = move_places_.find({volume_id, index});
	    it != move_places_.end() && it->second.first == to_dev) {
		unit = it->second.second >> (kUnitShift - kSectorShift);
		move_places_.erase(it);
	} else {
		release_move(volume_id, index);
		unit = space(to_dev)->buddy.alloc(shift - kUnitShift);
	}
	if (!unit)
		return mdr::Error(-ENOSPC, "extent " + std::to_string(index) + " of volume " +
				  std::to_string(volume_id) + ": device " +
				  std::to_string(to_dev) + " has no free extent of 2^" +
				  std::to_string(shift) + " bytes");
	// The place is the pending change's now: commit() or abort() gives
	// it back.
	return reserve(Record{.type = kMoveBegin, .volume_id = volume_id,
			      .generation = old.generation + 1, .index = index,
			      .dev_id = old.dev_id, .pstart = old.pstart,
			      .new_dev = to_dev,
			      .new_pstart = *unit << (kUnitShift - kSectorShift)},
		       std::nullopt);
}

// The end of a move: done publishes the new place, abort the old one;
// either way one generation above the frozen entry.
mdr::Result<Change> Store::prepare_move_end(uint64_t volume_id, uint64_t index, bool done)
{
	auto it = moves_.find({volume_id, index});

	if (it == moves_.end())
		return mdr::Error(-ENOENT, "extent " + std::to_string(index) + " of volume " +
				  std::to_string(volume_id) + " is not moving");
	if (pending_.contains({volume_id, index}))
		return mdr::Error(-EBUSY, "the end of the move is in flight");

	const Move &m = it->second;

	return reserve(Record{.type = done ? kMoveDone : kMoveAbort, .volume_id = volume_id,
			      .generation = m.generation + 1, .index = index,
			      .dev_id = done ? m.new_dev : m.old_dev,
			      .pstart = done ? m.new_pstart : m.old_pstart},
		       std::nullopt);
}

mdr::Result<Change> Store::prepare_move_done(uint64_t volume_id, uint64_t index)
{
	return prepare_move_end(volume_id, index, true);
}

mdr::Result<Change> Store::prepare_move_abort(uint64_t volume_id, uint64_t index)
{
	return prepare_move_end(volume_id, index, false);
}

mdr::Result<Applied> Store::commit(const Change &change)
{
	mdr::Result<Record> r = decode(change.type, change.payload);

	if (!r.ok())
		return mdr::Error(-ENOENT, r.message() + ": not a change in flight");

	mdr::Result<Pending> p = take_pending(r.value(), change);

	if (!p.ok())
		return mdr::Error(p.error(), p.message());
	return apply(r.value(), std::move(p.value().table));
}

mdr::Status Store::abort(const Change &change)
{
	mdr::Result<Record> r = decode(change.type, change.payload);

	if (!r.ok())
		return mdr::Error(-ENOENT, r.message() + ": not a change in flight");

	mdr::Result<Pending> p = take_pending(r.value(), change);

	if (!p.ok())
		return mdr::Error(p.error(), p.message());
	return {};
}

mdr::Status Store::replay(uint16_t type, std::span<const uint8_t> payload)
{
	if (!pending_.empty())
		return mdr::Error(-EBUSY, "replay with changes in flight");

	mdr::Result<Record> r = decode(type, payload);

	if (!r.ok())
		return mdr::Error(r.error(), r.message());

	mdr::Result<Applied> done = apply(r.value(), std::nullopt);

	if (!done.ok())
		return mdr::Error(done.error(), done.message());
	return {};
}

// ---------------------------------------------------------------------------
// Applying records: the only code that changes volumes. Each checks all it
// needs before it changes anything.

mdr::Result<Applied> Store::apply(const Record &r, std::optional<Table> table)
{
	mdr::Result<Applied> done = [&]() {
		switch (r.type) {
		case kVolumeCreate:
			return apply_create(r, std::move(table));
		case kVolumeDelete:
			return apply_delete(r);
		case kVolumeResize:
			return apply_resize(r, std::move(table));
		case kMoveBegin:
			return apply_move_begin(r);
		case kMoveDone:
		case kMoveAbort:
			return apply_move_end(r);
		default:
			return apply_alloc(r);
		}
	}();

	if (!done.ok())
		return fail(done, describe(r));
	return done;
}

mdr::Result<Applied> Store::apply_create(const Record &r, std::optional<Table> table)
{
	if (mdr::Status ok = check_volume(r.name, r.size, r.extent_shift); !ok.ok())
		return mdr::Error(ok.error(), ok.message());
	if (r.volume_id == 0 || r.volume_id == UINT64_MAX)
		return mdr::Error(-EINVAL, "volume id out of range");
	if (volumes_.contains(r.volume_id))
		return mdr::Error(-EEXIST, "the volume exists");
	if (name_taken(r.name))
		return mdr::Error(-EEXIST, "volume name '" + r.name + "' is taken");

	const uint64_t nr = nr_extents(r.size, r.extent_shift);

	if (!table) {
		mdr::Result<Table> mapped = Table::map(nr);

		if (!mapped.ok())
			return mdr::Error(mapped.error(), mapped.message());
		table = std::move(mapped).value();
	}
	assert(table->entries().size() == nr);
	table->put_unallocated(r.volume_id, 0);
	names_.emplace(r.name, r.volume_id);
	volumes_.emplace(r.volume_id,
			 Volume{.id = r.volume_id, .name = r.name, .size = r.size,
				.extent_shift = r.extent_shift, .tenant = r.tenant,
				.generation = 1, .allocated = 0,
				.table = std::move(*table)});
	next_id_ = std::max(next_id_, r.volume_id + 1);
	return Applied{.volume_id = r.volume_id};
}

mdr::Result<Applied> Store::apply_delete(const Record &r)
{
	auto it = volumes_.find(r.volume_id);

	if (it == volumes_.end())
		return mdr::Error(-ENOENT, "no such volume");

	Volume &v = it->second;

	// allocated counts the mapped extents (and frozen ones, which keep a
	// volume from being deleted): none, no space to give back.
	for (uint64_t i = 0; v.allocated && i < v.table.entries().size(); i++)
		if (entry_at(v, i).state == MDR_EXT_MAPPED)
			free_extent(v, i);

	Applied done{.volume_id = r.volume_id, .old_table = std::move(v.table)};

	names_.erase(v.name);
	volumes_.erase(it);
	return done;
}

mdr::Result<Applied> Store::apply_resize(const Record &r, std::optional<Table> table)
{
	auto it = volumes_.find(r.volume_id);

	if (it == volumes_.end())
		return mdr::Error(-ENOENT, "no such volume");

	Volume &v = it->second;

	if (mdr::Status ok = check_size(r.size); !ok.ok())
		return mdr::Error(ok.error(), ok.message());
	if (r.generation != v.generation + 1)
		return mdr::Error(-EINVAL, "generation " + std::to_string(r.generation) +
				  " does not follow the volume's " +
				  std::to_string(v.generation));

	const uint64_t nr = nr_extents(r.size, v.extent_shift);
	const uint64_t old_nr = v.table.entries().size();

	if (!table) {
		mdr::Result<Table> mapped = Table::map(nr);

		if (!mapped.ok())
			return mdr::Error(mapped.error(), mapped.message());
		table = std::move(mapped).value();
	}
	assert(table->entries().size() == nr);
	for (uint64_t i = 0; i < std::min(nr, old_nr); i++)
		table->put(i, v.table.entries()[i]);
	if (nr > old_nr)
		table->put_unallocated(v.id, old_nr);
	for (uint64_t i = nr; i < old_nr; i++)
		if (entry_at(v, i).state == MDR_EXT_MAPPED) {
			free_extent(v, i);
			v.allocated--;
		}

	Applied done{.volume_id = r.volume_id,
		     .old_table = std::exchange(v.table, std::move(*table))};

	v.size = r.size;
	v.generation = r.generation;
	return done;
}

mdr::Result<Applied> Store::apply_alloc(const Record &r)
{
	auto it = volumes_.find(r.volume_id);

	if (it == volumes_.end())
		return mdr::Error(-ENOENT, "no such volume");

	Volume &v = it->second;

	if (r.index >= v.table.entries().size())
		return mdr::Error(-ERANGE, "the volume has " +
				  std::to_string(v.table.entries().size()) + " extents");

	const mdr::wire::Entry old = entry_at(v, r.index);

	if (old.state != MDR_EXT_UNALLOCATED)
		return mdr::Error(-EEXIST, "the extent is mapped already");
	if (r.generation != old.generation + 1)
		return mdr::Error(-EINVAL, "generation " + std::to_string(r.generation) +
				  " does not follow the entry's " +
				  std::to_string(old.generation));
	if (mdr::Status ok = map_extent(v, r.index, r.dev_id, r.pstart, r.generation);
	    !ok.ok())
		return mdr::Error(ok.error(), ok.message());
	return Applied{.volume_id = r.volume_id, .index = r.index,
		       .entry = v.table.entries()[r.index]};
}

mdr::Result<Applied> Store::apply_move_begin(const Record &r)
{
	auto it = volumes_.find(r.volume_id);

	if (it == volumes_.end())
		return mdr::Error(-ENOENT, "no such volume");

	Volume &v = it->second;

	if (r.index >= v.table.entries().size())
		return mdr::Error(-ERANGE, "the volume has " +
				  std::to_string(v.table.entries().size()) + " extents");
	if (moves_.contains(r.key()))
		return mdr::Error(-EEXIST, "the extent is moving already");

	const mdr::wire::Entry old = entry_at(v, r.index);

	if (old.state != MDR_EXT_MAPPED || old.dev_id != r.dev_id || old.pstart != r.pstart)
		return mdr::Error(-EINVAL, "the extent is not mapped at the old place");
	if (r.generation != old.generation + 1)
		return mdr::Error(-EINVAL, "generation " + std::to_string(r.generation) +
				  " does not follow the entry's " +
				  std::to_string(old.generation));

	Space *to = space(r.new_dev);
	const uint64_t sectors = uint64_t{1} << (v.extent_shift - kSectorShift);

	if (!to || r.new_dev == r.dev_id)
		return mdr::Error(-ENOENT, "device " + std::to_string(r.new_dev) +
				  " is not configured, or is the old one");
	if (r.new_pstart % sectors)
		return mdr::Error(-EINVAL, "sector " + std::to_string(r.new_pstart) +
				  " is not aligned to the extent size");

	mdr::Status used = to->buddy.mark_used(r.new_pstart >> (kUnitShift - kSectorShift),
					       v.extent_shift - kUnitShift);

	if (!used.ok())
		return fail(used, "device " + std::to_string(r.new_dev));
	v.table.put(r.index, mdr::wire::make_entry({.generation = r.generation,
						    .pstart = r.pstart,
						    .dev_id = r.dev_id,
						    .state = MDR_EXT_FROZEN},
						   v.id, r.index));
	moves_.emplace(r.key(), Move{.volume_id = r.volume_id, .index = r.index,
				     .old_dev = r.dev_id, .new_dev = r.new_dev,
				     .old_pstart = r.pstart, .new_pstart = r.new_pstart,
				     .generation = r.generation});
	return Applied{.volume_id = r.volume_id, .index = r.index,
		       .entry = v.table.entries()[r.index]};
}

// MOVE_DONE maps the extent at the new place and frees the old one;
// MOVE_ABORT maps it at the old place and frees the new one.
mdr::Result<Applied> Store::apply_move_end(const Record &r)
{
	auto mv = moves_.find(r.key());

	if (mv == moves_.end())
		return mdr::Error(-ENOENT, "the extent is not moving");

	const Move m = mv->second;
	const bool done = r.type == kMoveDone;
	Volume &v = volumes_.at(r.volume_id);	// not deleted while moving

	if (r.dev_id != (done ? m.new_dev : m.old_dev) ||
	    r.pstart != (done ? m.new_pstart : m.old_pstart))
		return mdr::Error(-EINVAL, "the place is not the move's");
	if (r.generation != m.generation + 1)
		return mdr::Error(-EINVAL, "generation " + std::to_string(r.generation) +
				  " does not follow the frozen entry's " +
				  std::to_string(m.generation));

	const uint32_t free_dev = done ? m.old_dev : m.new_dev;
	const uint64_t free_pstart = done ? m.old_pstart : m.new_pstart;

	space(free_dev)->buddy.free(free_pstart >> (kUnitShift - kSectorShift),
				    v.extent_shift - kUnitShift);
	v.table.put(r.index, mdr::wire::make_entry({.generation = r.generation,
						    .pstart = r.pstart,
						    .dev_id = r.dev_id,
						    .state = MDR_EXT_MAPPED},
						   v.id, r.index));
	moves_.erase(mv);
	return Applied{.volume_id = r.volume_id, .index = r.index,
		       .entry = v.table.entries()[r.index]};
}

mdr::Status Store::map_extent(Volume &v, uint64_t index, uint32_t dev_id,
			      uint64_t pstart, uint64_t generation)
{
	Space *s = space(dev_id);
	const uint64_t sectors = uint64_t{1} << (v.extent_shift - kSectorShift);

	if (!s)
		return mdr::Error(-ENOENT, "device " + std::to_string(dev_id) +
				  " is not configured");
	if (pstart % sectors)
		return mdr::Error(-EINVAL, "sector " + std::to_string(pstart) +
				  " is not aligned to the extent size");

	mdr::Status used = s->buddy.mark_used(pstart >> (kUnitShift - kSectorShift),
					      v.extent_shift - kUnitShift);

	if (!used.ok())
		return fail(used, "device " + std::to_string(dev_id));
	v.table.put(index, mdr::wire::make_entry({.generation = generation,
						  .pstart = pstart,
						  .dev_id = dev_id,
						  .state = MDR_EXT_MAPPED},
						 v.id, index));
	v.allocated++;
	return {};
}

void Store::free_extent(const Volume &v, uint64_t index)
{
	const mdr::wire::Entry e = entry_at(v, index);

	space(e.dev_id)->buddy.free(e.pstart >> (kUnitShift - kSectorShift),
				    v.extent_shift - kUnitShift);
}

// ---------------------------------------------------------------------------
// Snapshots.

std::vector<uint8_t> Store::snapshot() const
{
	Writer out;

	out.le32(kSnapshotMagic).le16(kSnapshotVersion).le16(0)
		.le64(next_id_).le64(volumes_.size());
	for (const auto &[id, v] : volumes_) {
		out.le64(id).le64(v.size).le64(v.generation).le32(v.extent_shift)
			.le32(v.tenant).le64(v.allocated).name(v.name);
		for (uint64_t i = 0; v.allocated && i < v.table.entries().size(); i++) {
			const mdr::wire::Entry e = entry_at(v, i);

			if (e.state == MDR_EXT_MAPPED)
				out.le64(i).le64(e.generation).le64(e.pstart)
					.le32(e.dev_id).le32(0);
		}
	}
	return out.take();
}

mdr::Status Store::load_snapshot(std::span<const uint8_t> bytes)
{
	auto bad = [](const std::string &what) {
		return mdr::Error(-EINVAL, "snapshot: " + what);
	};

	if (!volumes_.empty() || !pending_.empty())
		return mdr::Error(-EBUSY, "snapshot: the store is not empty");
	if (bytes.size() < kSnapshotHeader)
		return bad(std::to_string(bytes.size()) + " bytes, shorter than a header");

	Store loaded(spaces_);
	Reader in(bytes);

	if (in.le32() != kSnapshotMagic)
		return bad("bad magic");
	if (const uint16_t version = in.le16(); version != kSnapshotVersion)
		return bad("unknown version " + std::to_string(version));
	if (in.le16() != 0)
		return bad("a reserved field is not zero");
	loaded.next_id_ = in.le64();

	const uint64_t nr_volumes = in.le64();
	uint64_t last_id = 0;

	for (uint64_t n = 0; n < nr_volumes; n++) {
		if (in.left() < kSnapshotVolume)
			return bad("ends within volume " + std::to_string(n + 1) + " of " +
				   std::to_string(nr_volumes));

		Record r{.type = kVolumeCreate};

		r.volume_id = in.le64();
		r.size = in.le64();

		const uint64_t generation = in.le64();

		r.extent_shift = in.le32();
		r.tenant = in.le32();

		const uint64_t nr_mapped = in.le64();
		std::optional<std::string> name = in.name();
		const std::string what = "volume " + std::to_string(r.volume_id);

		if (!name)
			return bad(what + ": the name is not NUL-padded");
		r.name = std::move(*name);
		if (r.volume_id <= last_id || r.volume_id >= loaded.next_id_)
			return bad(what + ": ids must ascend and stay below the next id " +
				   std::to_string(loaded.next_id_));
		if (generation == 0)
			return bad(what + ": generation 0");
		if (mdr::Result<Applied> c = loaded.apply_create(r, std::nullopt); !c.ok())
			return fail(c, "snapshot: " + what);
		last_id = r.volume_id;

		Volume &v = loaded.volumes_.at(r.volume_id);
		uint64_t next_index = 0;

		v.generation = generation;
		if (in.left() / kSnapshotEntry < nr_mapped)
			return bad(what + ": ends within its " + std::to_string(nr_mapped) +
				   " mapped extents");
		for (uint64_t m = 0; m < nr_mapped; m++) {
			const uint64_t index = in.le64();
			const uint64_t gen = in.le64();
			const uint64_t pstart = in.le64();
			const uint32_t dev_id = in.le32();
			const std::string extent = what + ", extent " + std::to_string(index);

			if (in.le32() != 0)
				return bad(extent + ": a reserved field is not zero");
			if (index < next_index || index >= v.table.entries().size())
				return bad(extent + ": out of order or beyond the volume");
			// Mapping is a change: the generation left 1 behind.
			if (gen < 2)
				return bad(extent + ": mapped at generation " + std::to_string(gen));
			if (mdr::Status ok = loaded.map_extent(v, index, dev_id, pstart, gen);
			    !ok.ok())
				return fail(ok, "snapshot: " + extent);
			next_index = index + 1;
		}
	}
	if (in.left() != 0)
		return bad(std::to_string(in.left()) + " bytes after the last volume");
	*this = std::move(loaded);
	return {};
}

// ---------------------------------------------------------------------------
// Queries.

const Volume *Store::volume(uint64_t id) const
{
	auto it = volumes_.find(id);

	return it == volumes_.end() ? nullptr : &it->second;
}

const Volume *Store::volume(std::string_view name) const
{
	auto it = names_.find(name);

	return it == names_.end() ? nullptr : volume(it->second);
}

VolumePage Store::list_volumes(uint64_t cursor, size_t max) const
{
	VolumePage page{{}, 0};

	for (auto it = volumes_.lower_bound(cursor); it != volumes_.end(); ++it) {
		if (page.volumes.size() == max) {
			page.next = it->first;
			break;
		}
		page.volumes.push_back(&it->second);
	}
	return page;
}

std::vector<mdr::wire::DevExtents> Store::extents_by_device(const Volume &volume) const
{
	std::map<uint32_t, uint64_t> count;
	std::vector<mdr::wire::DevExtents> out;

	// allocated counts mapped and frozen extents: none, nothing to find.
	for (uint64_t i = 0; volume.allocated && i < volume.table.entries().size(); i++) {
		const mdr::wire::Entry e = entry_at(volume, i);

		// A frozen extent is still at its old place.
		if (e.state != MDR_EXT_UNALLOCATED)
			count[e.dev_id]++;
	}
	for (const auto &[dev_id, extents] : count)
		out.push_back({.dev_id = dev_id, .extents = extents});
	return out;
}

std::vector<mdr::wire::Device> Store::devices() const
{
	std::vector<mdr::wire::Device> out;

	for (const Space &s : spaces_)
		out.push_back({.dev_id = s.device.id, .size = s.device.size,
			       .used = s.buddy.used_units() << kUnitShift,
			       .serial = s.device.serial});
	return out;
}

std::vector<Move> Store::moves() const
{
	std::vector<Move> out;

	for (const auto &[key, m] : moves_)
		out.push_back(m);
	return out;
}

const Move *Store::move(uint64_t volume_id, uint64_t index) const
{
	auto it = moves_.find({volume_id, index});

	return it == moves_.end() ? nullptr : &it->second;
}

std::optional<std::pair<uint64_t, uint64_t>>
Store::next_on_device(uint32_t dev_id, uint64_t volume_id, uint64_t index) const
{
	for (auto it = volumes_.lower_bound(volume_id); it != volumes_.end(); ++it) {
		const Volume &v = it->second;

		for (uint64_t i = it->first == volume_id ? index : 0;
		     i < v.table.entries().size(); i++) {
			const mdr::wire::Entry e = entry_at(v, i);

			if (e.state == MDR_EXT_MAPPED && e.dev_id == dev_id)
				return std::make_pair(v.id, i);
		}
	}
	return std::nullopt;
}

uint64_t Store::extents_on_device(uint32_t dev_id) const
{
	uint64_t n = 0;

	for (const auto &[id, v] : volumes_)
		for (uint64_t i = 0; i < v.table.entries().size(); i++) {
			const mdr::wire::Entry e = entry_at(v, i);

			n += e.state != MDR_EXT_UNALLOCATED && e.dev_id == dev_id;
		}
	return n;
}

uint32_t Store::roomiest_device(uint32_t except) const
{
	const Space *best = nullptr;

	for (const Space &s : spaces_)
		if (s.device.id != except &&
		    (!best || s.buddy.free_units() > best->buddy.free_units()))
			best = &s;
	return best ? best->device.id : 0;
}

const Device *Store::device(uint32_t id) const
{
	const Space *s = space(id);

	return s ? &s->device : nullptr;
}

uint64_t Store::free_extents(uint32_t dev_id, uint32_t extent_shift) const
{
	const Space *s = space(dev_id);

	return s ? s->buddy.free_units() >> (extent_shift - kUnitShift) : 0;
}

Counts Store::counts() const
{
	Counts c{.volumes = volumes_.size(), .extents = 0, .in_flight = pending_.size(),
		 .moving = moves_.size()};

	for (const auto &[id, v] : volumes_)
		c.extents += v.allocated;
	return c;
}

} // namespace mdnode
