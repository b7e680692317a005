// SPDX-License-Identifier: GPL-2.0
//
// store.h - the state of mdnode: its backing devices, its volumes and their
// extent tables. Pure logic: no I/O, no verbs; callers own locking.
//
// Its rooms: records.h (the journal's record formats, encoded and
// decoded), table.h (a volume's extent table in memory of its own),
// allocator.h (devices and their free space), snapshot.cc (the checkpoint
// format); store.cc prepares, commits and aborts changes and answers
// queries, store_apply.cc applies records, the only code that changes
// volumes.
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
// Each change is one journal record (records.h has their layouts); a
// checkpoint is a snapshot of the committed state (snapshot.cc has its
// layout).
//
// The host registry (HOST_ADD, HOST_REMOVE) is journaled and snapshotted
// like volumes: a host's changes exclude each other (-EBUSY). So are the
// disks recorded for device ids (DEVICE_RECORD, DEVICE_FORGET), which the
// start-up check (startup_devices.cc) holds the configured devices to.
//
// Holders (HOLDER_ADD, HOLDER_DROP, HOLDERS_COMPLETE): the hosts that may
// hold a lease on each volume, so that a process that starts to serve
// (a restart, a new leader of the group) knows whom the leases of the
// process before went to (NodeCore::holders_reached()). A host is added
// before an OPEN of it is granted, and dropped when it closes the volume
// or its lease lapses; dropping it late, or never, only makes the next
// process wait longer. A volume's set is whole (holders_known) from its
// VOLUME_CREATE on, which says so (kCreateHolders); a volume created by a
// node from before holders were journaled becomes so by HOLDERS_COMPLETE,
// journaled once a process has served past the leases of the process
// before it, every one of which it recorded. Holder changes reserve nothing and exclude no
// other change: a HOLDER_ADD whose volume was deleted while it was in
// flight changes nothing, and holder() counts a host whose drop is in
// flight as no holder, so its next OPEN journals a HOLDER_ADD after it.
// They count as changes in flight (counts()): no checkpoint is taken
// while one is.
//
// A MOVE_BEGIN without its MOVE_DONE or MOVE_ABORT is a move in progress
// (moves()): the server finishes it or, after a restart, aborts it. While
// an extent moves, it is FROZEN at its old place: nothing else is prepared
// on it (-EBUSY; an allocation: -EAGAIN), its volume is neither deleted
// nor resized, and no snapshot is taken (snapshots hold mapped entries
// only: counts().moving must be 0).
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

#include "lib/util/result.h"
#include "lib/wire/wire.h"
#include "mdnode/allocator.h"
#include "mdnode/records.h"
#include "mdnode/table.h"

namespace mdnode {

struct Volume {
	uint64_t id;		// from 1, never reused
	std::string name;
	uint64_t size;		// bytes, a multiple of 4096
	uint32_t extent_shift;	// log2 of the extent size in bytes
	uint32_t tenant;
	uint64_t generation;	// 1 at create, + 1 per resize
	uint64_t allocated;	// mapped extents
	Table table;		// ceil(size / extent size) entries
	// Hosts that may hold a lease on it: HOLDER_ADD, not yet HOLDER_DROP;
	// every one of them when holders_known (store.h, "Holders")
	std::set<uint64_t> holders{};
	bool holders_known = false;

	bool operator==(const Volume &) const = default;
};

// A host of the registry: who may connect as host_id, for which tenant,
// proving which key (MDR_HOST_KEY_MIN ..= MDR_HOST_KEY_MAX bytes).
struct RegisteredHost {
	uint64_t id;		// non-zero
	uint32_t tenant;	// non-zero
	std::vector<uint8_t> key;

	bool operator==(const RegisteredHost &) const = default;
};

// The disk the journal recorded for a device id.
struct RecordedDevice {
	uint32_t id;		// non-zero
	uint64_t size;		// bytes
	std::string identity;	// WWID or serial: printable, < kDeviceIdentityLen

	bool operator==(const RecordedDevice &) const = default;
};

struct HostPage {
	std::vector<const RegisteredHost *> hosts;	// ascending ids
	uint64_t next;					// 0: none
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
	uint64_t hosts = 0;	// in the registry
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
	// The host registry. -EINVAL for host id or tenant 0 or a key outside
	// MDR_HOST_KEY_MIN ..= MDR_HOST_KEY_MAX bytes, -EEXIST for a known host
	// without replace, -ENOENT for an unknown one with replace, -EINVAL
	// for a replace that changes the tenant, -EBUSY while a change of the
	// host is in flight.
	mdr::Result<Change> prepare_host_add(uint64_t host_id, uint32_t tenant,
					     std::span<const uint8_t> key, bool replace);
	// -ENOENT, -EBUSY.
	mdr::Result<Change> prepare_host_remove(uint64_t host_id);
	const RegisteredHost *host(uint64_t id) const;
	// Up to max hosts from id cursor up.
	HostPage list_hosts(uint64_t cursor, size_t max) const;
	// The disks recorded for device ids. A record replaces the one the id
	// had. -EINVAL for device id 0, size 0 or an identity that is empty,
	// not printable ASCII or of kDeviceIdentityLen characters or more;
	// -ENOENT for forgetting an id with no record; -EBUSY while a record
	// of the id is in flight.
	mdr::Result<Change> prepare_device_record(const RecordedDevice &d);
	mdr::Result<Change> prepare_device_forget(uint32_t dev_id);
	const RecordedDevice *recorded_device(uint32_t id) const;
	// By device id.
	const std::map<uint32_t, RecordedDevice> &recorded_devices() const
	{
		return recorded_;
	}

	// Holders (above). None of these fails: a volume that does not exist
	// is the caller's to refuse first.
	Change prepare_holder_add(uint64_t volume_id, uint64_t host_id);
	Change prepare_holder_drop(uint64_t volume_id, uint64_t host_id);
	Change prepare_holders_complete();
	// The host is a committed holder of the volume, with no drop of it
	// in flight.
	bool holder(uint64_t volume_id, uint64_t host_id) const;
	// Volumes whose holders are not known (created by a node from
	// before holders were journaled, until HOLDERS_COMPLETE).
	uint64_t holders_unknown() const { return holders_unknown_; }

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
	uint32_t roomiest_device(uint32_t except) const
	{
		return alloc_.roomiest_device(except);
	}
	// The configured device, or nullptr.
	const Device *device(uint32_t id) const { return alloc_.device(id); }
	// Free extents of 2^extent_shift bytes on the device, at the most
	// (the buddy may be fragmented): free units over the extent's units.
	uint64_t free_extents(uint32_t dev_id, uint32_t extent_shift) const
	{
		return alloc_.free_extents(dev_id, extent_shift);
	}

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
	// What a replica installs from its leader's checkpoint
	// (repl_checkpoint.h): a store of the same devices holding a
	// snapshot's state, but with this store's recorded devices (a
	// replica's own disks, journaled outside the group's log and never
	// shipped). load_snapshot()'s errors; this store is left as it is.
	mdr::Result<Store> with_snapshot(std::span<const uint8_t> bytes) const;

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
	std::vector<mdr::wire::Device> devices() const { return alloc_.devices(); }
	// What DEV_LIST shows from version 4 on, by device id: the configured
	// devices (online, with their identity) and the recorded ones that are
	// not configured (missing: the size recorded, nothing used, no serial).
	std::vector<mdr::wire::Device> listed_devices() const;
	Counts counts() const;

	// Same devices and free space, next id, volumes (tables byte for byte)
	// and changes in flight.
	bool operator==(const Store &) const = default;

private:
	mdr::Result<Change> prepare_move_end(uint64_t volume_id, uint64_t index, bool done);
	// The volume, when it exists and has the extent (-ENOENT, -ERANGE).
	mdr::Result<const Volume *> volume_with_extent(uint64_t volume_id,
						       uint64_t index) const;
	// prepare_move()'s checks; the volume when they pass.
	mdr::Result<const Volume *> check_move(uint64_t volume_id, uint64_t index,
					       uint32_t to_dev) const;

	struct Pending {
		uint16_t type;
		std::vector<uint8_t> payload;	// what to match commit() with
		std::optional<Table> table;	// create, resize: mapped ahead

		bool operator==(const Pending &) const = default;
	};
	// Pending changes, moves and reserved places by (volume id, extent
	// index); changes of a whole volume use kWholeVolume.
	using Key = ExtentKey;

	explicit Store(Allocator alloc) : alloc_(std::move(alloc)) {}

	bool name_taken(std::string_view name) const;
	bool busy(uint64_t volume_id) const;

	Change reserve(const Record &r, std::optional<Table> table);
	// -EBUSY when a change of r's key is in flight (what: "a change of
	// the host", ...).
	std::optional<mdr::Error> in_flight(const Record &r, const char *what) const;
	// A record that removes what its key names: -ENOENT (missing) unless
	// it exists, -EBUSY (in_flight()'s what) while a change of it is in
	// flight.
	mdr::Result<Change> prepare_removal(const Record &r, bool exists, const char *missing,
					    const char *what);
	// The record of a change in flight and what it held, taken out of
	// pending_ (-ENOENT: not in flight).
	struct Taken {
		Record record;
		Pending pending;
	};
	mdr::Result<Taken> take_change(const Change &change);

	// store_apply.cc: the only code that changes volumes.
	mdr::Result<Applied> apply(const Record &r, std::optional<Table> table);
	mdr::Result<Applied> apply_create(const Record &r, std::optional<Table> table);
	mdr::Result<Applied> apply_delete(const Record &r);
	mdr::Result<Applied> apply_resize(const Record &r, std::optional<Table> table);
	mdr::Result<Applied> apply_alloc(const Record &r);
	mdr::Result<Applied> apply_move_begin(const Record &r);
	mdr::Result<Applied> apply_move_end(const Record &r);
	mdr::Status check_host_add(const Record &r) const;
	mdr::Result<Applied> apply_host_add(const Record &r);
	mdr::Result<Applied> apply_host_remove(const Record &r);
	mdr::Result<Applied> apply_device_record(const Record &r);
	mdr::Result<Applied> apply_device_forget(const Record &r);
	// snapshot.cc: the host registry and the recorded devices of a
	// snapshot, into this Store.
	mdr::Status load_hosts(Reader &in);
	mdr::Status load_devices(Reader &in);
	mdr::Status load_holders(Reader &in);
	mdr::Result<Applied> apply_holders(const Record &r);
	Change reserve_holders(const Record &r);
	mdr::Result<Volume *> extent_volume(const Record &r);
	mdr::Status map_extent(Volume &v, uint64_t index, uint32_t dev_id,
			       uint64_t pstart, uint64_t generation);
	void free_extent(const Volume &v, uint64_t index);

	Allocator alloc_;
	std::map<uint64_t, Volume> volumes_;
	// The sum of every volume's allocated, kept as they change, so that
	// counts() (each tick of the metrics snapshot) never walks volumes_.
	uint64_t allocated_ = 0;
	std::map<std::string, uint64_t, std::less<>> names_;
	std::set<std::string, std::less<>> reserved_names_;	// being created
	std::map<Key, Pending> pending_;
	std::map<Key, Move> moves_;
	// Places reserved by reserve_move().
	std::map<Key, Place> move_places_;
	std::map<uint64_t, RegisteredHost> hosts_;
	std::map<uint32_t, RecordedDevice> recorded_;
	uint64_t next_id_ = 1;
	// Holders (above): changes in flight, the drops among them, and
	// the volumes without holders_known, counted as they change.
	uint64_t holder_changes_ = 0;
	std::multiset<std::pair<uint64_t, uint64_t>> holder_drops_;
	uint64_t holders_unknown_ = 0;
};

} // namespace mdnode

#endif // MDNODE_STORE_H
