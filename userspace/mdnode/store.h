// SPDX-License-Identifier: GPL-2.0
//
// store.h - the state of mdnode: its backing devices, its volumes and their
// extent tables. Pure logic: no I/O, no verbs; callers own locking.
//
// State changes only by applying journal records, the same way live and at
// replay, so a restarted mdnode has exactly the state it had:
//
//	auto c = store.prepare_create("db1", 64 << 30, 0, tenant);
//	if (!c.ok())
//		return reply_error(c.error(), c.message());
//	journal.append(c.value().type, c.value().payload) ... durable:
//	auto done = store.commit(c.value());	// or abort() if it failed
//
//	// at start, with no change in flight:
//	store.load_snapshot(checkpoint);	// if there is one
//	for each later record: store.replay(type, payload);
//
// prepare_*() checks a request against the state and the changes in flight
// and reserves what the change needs (a name, an id, physical space, the
// memory of a new table), so that commit() cannot fail on a good change;
// abort() gives the reservations back. Changes on one volume exclude each
// other: while a volume is being deleted or resized nothing else is
// prepared on it (-EBUSY), and while it has allocations in flight it is
// neither deleted nor resized (-EBUSY).
//
// Records (Change::type, then the payload; all little-endian). Every payload
// starts with __le16 version (1) and __le16 reserved; replay() refuses a
// record of an unknown type or version, of another length, or with a
// reserved field that is not zero.
//
//   1 VOLUME_CREATE, 96 bytes
//	 0 __le16 version, reserved   4 __le32 tenant   8 __le64 volume_id
//	16 __le64 size (bytes)       24 __le32 extent_shift, 28 reserved
//	32 char name[64], NUL-padded
//   2 VOLUME_DELETE, 16 bytes
//	 0 __le16 version, reserved   4 __le32 reserved   8 __le64 volume_id
//   3 VOLUME_RESIZE, 32 bytes
//	 0 __le16 version, reserved   4 __le32 reserved   8 __le64 volume_id
//	16 __le64 size (bytes)       24 __le64 generation (the volume's, new)
//   4 EXTENT_ALLOC, 40 bytes
//	 0 __le16 version, reserved   4 __le32 dev_id     8 __le64 volume_id
//	16 __le64 index              24 __le64 pstart (512-byte sectors)
//	32 __le64 generation (the entry's, new)
//   5 MOVE_BEGIN, 56 bytes: the extent is frozen at its old place, and the
//     new place is taken
//	 0 __le16 version, reserved   4 __le32 old_dev    8 __le64 volume_id
//	16 __le64 index              24 __le64 old_pstart
//	32 __le32 new_dev, 36 reserved                    40 __le64 new_pstart
//	48 __le64 generation (the entry's, frozen: g1)
//   6 MOVE_DONE, 40 bytes: the extent is mapped at its new place, the old
//     one is free
//	 0 __le16 version, reserved   4 __le32 new_dev    8 __le64 volume_id
//	16 __le64 index              24 __le64 new_pstart
//	32 __le64 generation (g1 + 1)
//   7 MOVE_ABORT, 40 bytes: the extent is mapped at its old place again,
//     the new one is free
//	 0 __le16 version, reserved   4 __le32 old_dev    8 __le64 volume_id
//	16 __le64 index              24 __le64 old_pstart
//	32 __le64 generation (g1 + 1)
// A MOVE_BEGIN without its MOVE_DONE or MOVE_ABORT is a move in progress
// (moves()): the server finishes it or, after a restart, aborts it. While
// an extent moves, it is FROZEN at its old place: nothing else is prepared
// on it (-EBUSY; an allocation: -EAGAIN), its volume is neither deleted
// nor resized, and no snapshot is taken (snapshots hold mapped entries
// only: counts().moving must be 0).
//
// Snapshot, version 1 (little-endian):
//	header, 24 bytes: 0 __le32 magic "MDRS", 4 __le16 version (1),
//		6 __le16 reserved, 8 __le64 next_volume_id, 16 __le64 nr_volumes
//	then per volume, by ascending id, 104 bytes: 0 __le64 volume_id,
//		8 __le64 size, 16 __le64 generation, 24 __le32 extent_shift,
//		28 __le32 tenant, 32 __le64 nr_mapped, 40 char name[64]
//	then its nr_mapped mapped entries, by ascending index, 32 bytes each:
//		0 __le64 index, 8 __le64 generation, 16 __le64 pstart,
//		24 __le32 dev_id, 28 __le32 reserved
// Every other entry is unallocated with generation 1: no record of this
// version unmaps an extent and keeps its index. The allocators are rebuilt
// from the mapped entries.
#ifndef MDNODE_STORE_H
#define MDNODE_STORE_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <linux/mdroute_wire.h>

#include "lib/result.h"
#include "lib/wire.h"
#include "mdnode/buddy.h"

namespace mdnode {

enum RecordType : uint16_t {
	kVolumeCreate = 1,
	kVolumeDelete = 2,
	kVolumeResize = 3,
	kExtentAlloc = 4,
	kMoveBegin = 5,
	kMoveDone = 6,
	kMoveAbort = 7,
};

// A backing device this node owns, as configured and probed at start.
struct Device {
	uint32_t id;		// cluster-wide, >= 1
	std::string path;
	std::string serial;	// serial number or WWID, as hosts find it
	uint64_t size;		// bytes

	bool operator==(const Device &) const = default;
};

// Fills out with the entries of a new table for extents first, first + 1,
// ... of volume_id: unallocated, generation 1, each sealed for its place
// exactly as mdr::wire::make_entry() seals it. One CRC-32C in all, then one
// XOR an entry (store.cc says why that is the same CRC).
void seal_unallocated(std::span<mdr_wire_entry> out, uint64_t volume_id, uint64_t first);

// A volume's extent table: its entries in page-aligned anonymous memory of
// its own, which the server registers for remote READ. Owns the mapping and
// unmaps it when destroyed.
class Table {
public:
	// nr_entries (>= 1) zeroed entries, in memory already; -ENOMEM when
	// they cannot be mapped.
	static mdr::Result<Table> map(uint64_t nr_entries);

	Table(Table &&other) noexcept;
	Table &operator=(Table &&other) noexcept;
	Table(const Table &) = delete;
	Table &operator=(const Table &) = delete;
	~Table();

	std::span<const mdr_wire_entry> entries() const { return {entries_, nr_}; }
	// What to register: entry i is at data() + i * 32.
	const void *data() const { return entries_; }
	size_t bytes() const { return nr_ * sizeof(mdr_wire_entry); }

	// Same entries, byte for byte.
	bool operator==(const Table &other) const;

private:
	friend class Store;

	Table(mdr_wire_entry *entries, uint64_t nr, size_t map_len)
		: entries_(entries), nr_(nr), map_len_(map_len) {}
	// One store of a whole sealed entry: hosts may READ at any time.
	void put(uint64_t index, const mdr_wire_entry &entry) { entries_[index] = entry; }
	// Entries [first, nr) unallocated: only before hosts can READ them.
	void put_unallocated(uint64_t volume_id, uint64_t first)
	{
		seal_unallocated({entries_ + first, nr_ - first}, volume_id, first);
	}
	void unmap();

	mdr_wire_entry *entries_;
	uint64_t nr_;
	size_t map_len_;	// bytes() rounded up to pages
};

struct Volume {
	uint64_t id;		// from 1, never reused
	std::string name;
	uint64_t size;		// bytes, a multiple of 4096
	uint32_t extent_shift;	// log2 of the extent size in bytes
	uint32_t tenant;
	uint64_t generation;	// 1 at create, + 1 per resize
	uint64_t allocated;	// mapped extents
	Table table;		// ceil(size / extent size) entries

	bool operator==(const Volume &) const = default;
};

// A record to journal, from prepare_*(). Once the journal has it durably,
// pass it to commit(); if the journal failed, to abort(). One of the two,
// once.
struct Change {
	uint16_t type;			// RecordType
	std::vector<uint8_t> payload;	// see the formats above
};

// What commit() changed, for the server to announce.
struct Applied {
	uint64_t volume_id = 0;
	// EXTENT_ALLOC: the extent and its entry, as the table now holds it.
	uint64_t index = 0;
	mdr_wire_entry entry{};
	// VOLUME_DELETE, VOLUME_RESIZE: the table the volume had. Hosts may
	// still READ it through its registration: the server deregisters it
	// first, then drops this, which unmaps it.
	std::optional<Table> old_table{};
};

// prepare_alloc()'s answer: a change to journal, or the entry of an extent
// that is mapped already.
using Allocation = std::variant<Change, mdr_wire_entry>;

struct VolumePage {
	std::vector<const Volume *> volumes;	// ascending ids
	uint64_t next;				// cursor of the next page; 0: none
};

struct Counts {
	uint64_t volumes;
	uint64_t extents;	// mapped
	uint64_t in_flight;	// changes prepared, not yet committed or aborted
	uint64_t moving = 0;	// moves begun, neither done nor aborted
};

// A move in progress: MOVE_BEGIN applied, MOVE_DONE or MOVE_ABORT not yet.
struct Move {
	uint64_t volume_id;
	uint64_t index;
	uint32_t old_dev;
	uint32_t new_dev;
	uint64_t old_pstart;	// 512-byte sectors
	uint64_t new_pstart;
	uint64_t generation;	// of the frozen entry (g1)

	bool operator==(const Move &) const = default;
};

class Store {
public:
	// The first 1 MiB of every device stays unused: it is kept for an
	// on-disk label. -EINVAL naming the device when one has id 0 or an id
	// given twice, a serial that is not printable ASCII shorter than
	// MDR_WIRE_SERIAL_LEN, or no room for one 64 KiB unit after the label.
	static mdr::Result<Store> create(std::vector<Device> devices);

	Store(Store &&) = default;
	Store &operator=(Store &&) = default;

	// -EINVAL for a bad name, size or extent_shift (0 means
	// MDR_WIRE_EXTENT_SHIFT_DEFAULT), -EEXIST when the name is taken or
	// being created, -ENOMEM when the table cannot be mapped.
	mdr::Result<Change> prepare_create(std::string_view name, uint64_t size,
					   uint32_t extent_shift, uint32_t tenant);
	// -ENOENT, -EBUSY.
	mdr::Result<Change> prepare_delete(uint64_t volume_id);
	// -ENOENT, -EINVAL for a bad size or the size the volume has, -EBUSY,
	// -ENOMEM.
	mdr::Result<Change> prepare_resize(uint64_t volume_id, uint64_t size);
	// The entry, when the extent is mapped already: nothing to journal.
	// Otherwise a change that maps it on the device with the most free space
	// that has a free extent. -ENOENT, -ERANGE for an index beyond the
	// volume, -EINPROGRESS when this extent's allocation is in flight (wait
	// for it), -EBUSY, -ENOSPC (nothing changed).
	mdr::Result<Allocation> prepare_alloc(uint64_t volume_id, uint64_t index);

	// A move of one mapped extent to another device: a MOVE_BEGIN that
	// takes a free extent there. -ENOENT (volume, device), -ERANGE,
	// -EINVAL (the extent is unallocated, or on to_dev already), -EBUSY
	// (the extent or its volume has a change in flight, or moves), -ENOSPC.
	// With a place reserved for the extent on to_dev (reserve_move()),
	// the MOVE_BEGIN takes that place, and the reservation is over.
	mdr::Result<Change> prepare_move(uint64_t volume_id, uint64_t index,
					 uint32_t to_dev);
	// Takes a free extent on to_dev for a move of the extent that has not
	// begun yet (its pre-copy writes there), with prepare_move()'s checks
	// and errors; nothing is journaled, so a restart forgets it. While
	// the place is reserved, the volume is neither deleted nor resized
	// (-EBUSY), and a second reservation of the extent is -EBUSY. Returns
	// the place's first 512-byte sector.
	mdr::Result<uint64_t> reserve_move(uint64_t volume_id, uint64_t index,
					   uint32_t to_dev);
	// Gives the reserved place back; nothing when there is none.
	void release_move(uint64_t volume_id, uint64_t index);
	// The end of a move in progress: MOVE_DONE (the new place) or
	// MOVE_ABORT (back to the old one). -ENOENT when the extent is not
	// moving, -EBUSY when its end is in flight already.
	mdr::Result<Change> prepare_move_done(uint64_t volume_id, uint64_t index);
	mdr::Result<Change> prepare_move_abort(uint64_t volume_id, uint64_t index);
	// Moves in progress, by (volume, index).
	std::vector<Move> moves() const;
	const Move *move(uint64_t volume_id, uint64_t index) const;
	// The first mapped extent on dev_id from (volume_id, index) on, in
	// (volume, index) order; none when there is no further one.
	std::optional<std::pair<uint64_t, uint64_t>>
	next_on_device(uint32_t dev_id, uint64_t volume_id, uint64_t index) const;
	// Mapped extents on dev_id, over every volume.
	uint64_t extents_on_device(uint32_t dev_id) const;
	// The device other than except with the most free space (ties: the
	// lowest id); 0 when there is no other device.
	uint32_t roomiest_device(uint32_t except) const;
	// The configured device, or nullptr.
	const Device *device(uint32_t id) const;
	// Free extents of 2^extent_shift bytes on the device, at the most
	// (the buddy may be fragmented): free units over the extent's units.
	uint64_t free_extents(uint32_t dev_id, uint32_t extent_shift) const;

	// Applies a change the journal holds durably. -ENOENT when it is not in
	// flight; any other error is a bug that left the journal ahead of the
	// state: stop.
	mdr::Result<Applied> commit(const Change &change);
	// Gives back what a change reserved; -ENOENT when it is not in flight.
	// The id of an aborted create is not used again by this Store.
	mdr::Status abort(const Change &change);

	// Applies a journal record at start. A record that does not fit the
	// state is an error naming it (-EINVAL, -ENOENT, -EEXIST, -ERANGE,
	// -ENOMEM; -EBUSY with changes in flight); the state is then unchanged.
	mdr::Status replay(uint16_t type, std::span<const uint8_t> payload);

	// The committed state, with everything needed to rebuild it.
	std::vector<uint8_t> snapshot() const;
	// Replaces an empty state (no volume, nothing in flight: -EBUSY) with a
	// snapshot's; an error naming what does not fit (-EINVAL, -EEXIST,
	// -ENOENT, -ENOMEM) leaves it unchanged.
	mdr::Status load_snapshot(std::span<const uint8_t> bytes);

	// Committed volumes; pointers are valid until the next change.
	const Volume *volume(uint64_t id) const;
	// A delete or resize of the volume is reserved, not yet committed.
	bool changing(uint64_t volume_id) const
	{
		return pending_.contains({volume_id, kWholeVolume});
	}
	// The id the next volume created gets: ids only grow, across restarts
	// too, so every volume that exists now has a smaller one.
	uint64_t next_volume_id() const { return next_id_; }
	const Volume *volume(std::string_view name) const;
	// Up to max volumes from id cursor up.
	VolumePage list_volumes(uint64_t cursor, size_t max) const;
	// Mapped (and frozen: still at their old place) extents of the volume
	// per device, by device id.
	std::vector<mdr::wire::DevExtents> extents_by_device(const Volume &volume) const;
	// By device id; used counts the space of allocations in flight too.
	std::vector<mdr::wire::Device> devices() const;
	Counts counts() const;

	// Same devices and free space, next id, volumes (tables byte for byte)
	// and changes in flight.
	bool operator==(const Store &) const = default;

private:
	mdr::Result<Change> prepare_move_end(uint64_t volume_id, uint64_t index, bool done);
	// prepare_move()'s checks; the volume when they pass.
	mdr::Result<const Volume *> check_move(uint64_t volume_id, uint64_t index,
					       uint32_t to_dev) const;

	struct Space {
		Device device;
		Buddy buddy;	// in 64 KiB units

		bool operator==(const Space &) const = default;
	};
	struct Pending {
		uint16_t type;
		std::vector<uint8_t> payload;	// what to match commit() with
		std::optional<Table> table;	// create, resize: mapped ahead

		bool operator==(const Pending &) const = default;
	};
	struct Record;	// a record, decoded
	// Pending changes by (volume id, extent index); changes of a whole
	// volume use kWholeVolume, beyond every index.
	using Key = std::pair<uint64_t, uint64_t>;
	static constexpr uint64_t kWholeVolume = UINT64_MAX;

	explicit Store(std::vector<Space> spaces) : spaces_(std::move(spaces)) {}

	Space *space(uint32_t dev_id);
	bool name_taken(std::string_view name) const;
	bool busy(uint64_t volume_id) const;
	static Change encode(const Record &r);
	static mdr::Result<Record> decode(uint16_t type, std::span<const uint8_t> payload);
	static std::string describe(const Record &r);

	Change reserve(const Record &r, std::optional<Table> table);
	mdr::Result<Pending> take_pending(const Record &r, const Change &change);

	mdr::Result<Applied> apply(const Record &r, std::optional<Table> table);
	mdr::Result<Applied> apply_create(const Record &r, std::optional<Table> table);
	mdr::Result<Applied> apply_delete(const Record &r);
	mdr::Result<Applied> apply_resize(const Record &r, std::optional<Table> table);
	mdr::Result<Applied> apply_alloc(const Record &r);
	mdr::Result<Applied> apply_move_begin(const Record &r);
	mdr::Result<Applied> apply_move_end(const Record &r);
	const Space *space(uint32_t dev_id) const;
	mdr::Status map_extent(Volume &v, uint64_t index, uint32_t dev_id,
			       uint64_t pstart, uint64_t generation);
	void free_extent(const Volume &v, uint64_t index);

	std::vector<Space> spaces_;	// by device id
	std::map<uint64_t, Volume> volumes_;
	std::map<std::string, uint64_t, std::less<>> names_;
	std::set<std::string, std::less<>> reserved_names_;	// being created
	std::map<Key, Pending> pending_;
	std::map<Key, Move> moves_;
	// Places reserved by reserve_move(): (device, first sector).
	std::map<Key, std::pair<uint32_t, uint64_t>> move_places_;
	uint64_t next_id_ = 1;
};

} // namespace mdnode

#endif // MDNODE_STORE_H
