// SPDX-License-Identifier: GPL-2.0
//
// store.cc - see store.h: changes prepared, committed and aborted, the
// state of changes in flight, and the queries.
#include "mdnode/store.h"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <utility>

#include "lib/auth/auth.h"
#include "mdnode/store_checks.h"

namespace mdnode {

using namespace store_checks;

namespace {

// "extent 3 of volume 7"
std::string extent_name(uint64_t volume_id, uint64_t index)
{
	return "extent " + std::to_string(index) + " of volume " + std::to_string(volume_id);
}

// The value of key in map, or nullptr.
template <typename Map, typename K>
auto *find_in(const Map &map, const K &key)
{
	auto it = map.find(key);

	return it == map.end() ? nullptr : &it->second;
}

// The values of map from the key cursor on, at most max, and the key of
// the next page (0: none).
template <typename Map>
auto page_of(const Map &map, uint64_t cursor, size_t max)
{
	std::pair<std::vector<const typename Map::mapped_type *>, uint64_t> page{{}, 0};

	for (auto it = map.lower_bound(cursor); it != map.end(); ++it) {
		if (page.first.size() == max) {
			page.second = it->first;
			break;
		}
		page.first.push_back(&it->second);
	}
	return page;
}

} // namespace

mdr::Result<Store> Store::create(std::vector<Device> devices)
{
	mdr::Result<Allocator> alloc = Allocator::create(std::move(devices));

	if (!alloc.ok())
		return mdr::Error(alloc.error(), alloc.message());
	return Store(std::move(alloc).value());
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
	Change c = encode_record(r);

	pending_.emplace(r.key(), Pending{c.type, c.payload, std::move(table)});
	if (r.type == kVolumeCreate)
		reserved_names_.insert(r.name);
	return c;
}

std::optional<mdr::Error> Store::in_flight(const Record &r, const char *what) const
{
	if (pending_.contains(r.key()))
		return mdr::Error(-EBUSY, describe_record(r) + ": " + what + " is in flight");
	return std::nullopt;
}

mdr::Result<Change> Store::prepare_removal(const Record &r, bool exists, const char *missing,
					   const char *what)
{
	if (!exists)
		return mdr::Error(-ENOENT, describe_record(r) + ": " + missing);
	if (std::optional<mdr::Error> busy = in_flight(r, what))
		return std::move(*busy);
	return reserve(r, std::nullopt);
}

mdr::Result<Store::Taken> Store::take_change(const Change &change)
{
	mdr::Result<Record> decoded = decode_record(change.type, change.payload);

	if (!decoded.ok())
		return mdr::Error(-ENOENT, decoded.message() + ": not a change in flight");

	const Record &r = decoded.value();

	if (r.of_holders()) {
		// Not in pending_ (store.h, "Holders"): counted only.
		auto drop = holder_drops_.find({r.volume_id, r.host_id});

		if (!holder_changes_ || (r.type == kHolderDrop && drop == holder_drops_.end()))
			return mdr::Error(-ENOENT, describe_record(r) + " is not in flight");
		holder_changes_--;
		if (r.type == kHolderDrop)
			holder_drops_.erase(drop);
		return Taken{std::move(decoded).value(),
			     Pending{change.type, change.payload, std::nullopt}};
	}

	auto it = pending_.find(r.key());

	if (it == pending_.end() || it->second.type != change.type ||
	    it->second.payload != change.payload)
		return mdr::Error(-ENOENT, describe_record(r) + " is not in flight");

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

		alloc_.free(dev, pstart, v.extent_shift);
	}
	return Taken{std::move(decoded).value(), std::move(p)};
}

// ---------------------------------------------------------------------------
// Prepare, commit, abort.

mdr::Result<Change> Store::prepare_create(std::string_view name, uint64_t size,
					  uint32_t extent_shift, uint32_t tenant)
{
	Record r{.type = kVolumeCreate, .size = size,
		 .extent_shift = extent_shift ? extent_shift : MDR_WIRE_EXTENT_SHIFT_DEFAULT,
		 .tenant = tenant, .name = std::string(name), .flags = kCreateHolders};

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

mdr::Result<const Volume *> Store::volume_with_extent(uint64_t volume_id,
						    uint64_t index) const
{
	const Volume *v = volume(volume_id);

	if (!v)
		return mdr::Error(-ENOENT, "no volume " + std::to_string(volume_id));
	if (index >= v->table.entries().size())
		return mdr::Error(-ERANGE, extent_name(volume_id, index) + ": the volume has " +
				  std::to_string(v->table.entries().size()) + " extents");
	return v;
}

mdr::Result<Allocation> Store::prepare_alloc(uint64_t volume_id, uint64_t index)
{
	mdr::Result<const Volume *> found = volume_with_extent(volume_id, index);

	if (!found.ok())
		return mdr::Error(found.error(), found.message());

	const Volume *v = found.value();
	const std::string what = extent_name(volume_id, index);
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

	if (std::optional<Place> place = alloc_.alloc(v->extent_shift))
		return Allocation(reserve(Record{.type = kExtentAlloc, .volume_id = volume_id,
						 .generation = old.generation + 1,
						 .index = index, .dev_id = place->first,
						 .pstart = place->second},
					  std::nullopt));
	return mdr::Error(-ENOSPC, what + ": no device has a free extent of 2^" +
			  std::to_string(v->extent_shift) + " bytes");
}

mdr::Result<const Volume *> Store::check_move(uint64_t volume_id, uint64_t index,
					      uint32_t to_dev) const
{
	mdr::Result<const Volume *> found = volume_with_extent(volume_id, index);

	if (!found.ok())
		return found;

	const Volume *v = found.value();
	const std::string what = extent_name(volume_id, index);

	if (!alloc_.device(to_dev))
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
		return mdr::Error(-EBUSY, extent_name(volume_id, index) + " has a place reserved");

	std::optional<uint64_t> pstart = alloc_.alloc_on(to_dev, v.value()->extent_shift);

	if (!pstart)
		return mdr::Error(-ENOSPC, "device " + std::to_string(to_dev) +
				  " has no free extent of 2^" +
				  std::to_string(v.value()->extent_shift) + " bytes");

	move_places_.emplace(Key{volume_id, index}, Place{to_dev, *pstart});
	return *pstart;
}

void Store::release_move(uint64_t volume_id, uint64_t index)
{
	auto it = move_places_.find({volume_id, index});

	if (it == move_places_.end())
		return;

	const auto [dev, pstart] = it->second;

	// Reserved places keep their volume alive.
	alloc_.free(dev, pstart, volumes_.at(volume_id).extent_shift);
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
	std::optional<uint64_t> pstart;

	// A place reserved on another device is given back: the move goes
	// where it is asked to.
	if (auto it = move_places_.find({volume_id, index});
	    it != move_places_.end() && it->second.first == to_dev) {
		pstart = it->second.second;
		move_places_.erase(it);
	} else {
		release_move(volume_id, index);
		pstart = alloc_.alloc_on(to_dev, shift);
	}
	if (!pstart)
		return mdr::Error(-ENOSPC, extent_name(volume_id, index) + ": device " +
				  std::to_string(to_dev) + " has no free extent of 2^" +
				  std::to_string(shift) + " bytes");
	// The place is the pending change's now: commit() or abort() gives
	// it back.
	return reserve(Record{.type = kMoveBegin, .volume_id = volume_id,
			      .generation = old.generation + 1, .index = index,
			      .dev_id = old.dev_id, .pstart = old.pstart,
			      .new_dev = to_dev,
			      .new_pstart = *pstart},
		       std::nullopt);
}

// The end of a move: done publishes the new place, abort the old one;
// either way one generation above the frozen entry.
mdr::Result<Change> Store::prepare_move_end(uint64_t volume_id, uint64_t index, bool done)
{
	auto it = moves_.find({volume_id, index});

	if (it == moves_.end())
		return mdr::Error(-ENOENT, extent_name(volume_id, index) + " is not moving");
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

// ---------------------------------------------------------------------------
// The host registry.

mdr::Result<Change> Store::prepare_host_add(uint64_t host_id, uint32_t tenant,
					    std::span<const uint8_t> key, bool replace)
{
	Record r{.type = kHostAdd, .tenant = tenant, .host_id = host_id,
		 .flags = uint16_t(replace ? kHostAddReplace : 0),
		 .secret = std::vector<uint8_t>(key.begin(), key.end())};

	if (std::optional<mdr::Error> busy = in_flight(r, "a change of the host")) {
		mdr::wipe(r.secret);
		return std::move(*busy);
	}
	mdr::Status ok = check_host_add(r);
	std::optional<Change> c;

	if (ok.ok())
		c = reserve(r, std::nullopt);
	mdr::wipe(r.secret);
	if (!ok.ok())
		return mdr::Error(ok.error(), ok.message());
	return std::move(*c);
}

mdr::Result<Change> Store::prepare_host_remove(uint64_t host_id)
{
	return prepare_removal({.type = kHostRemove, .host_id = host_id},
			       hosts_.contains(host_id), "no such host", "a change of the host");
}

const RegisteredHost *Store::host(uint64_t id) const
{
	return find_in(hosts_, id);
}

HostPage Store::list_hosts(uint64_t cursor, size_t max) const
{
	auto [hosts, next] = page_of(hosts_, cursor, max);

	return {std::move(hosts), next};
}

// ---------------------------------------------------------------------------
// Holders.

Change Store::reserve_holders(const Record &r)
{
	holder_changes_++;
	if (r.type == kHolderDrop)
		holder_drops_.insert({r.volume_id, r.host_id});
	return encode_record(r);
}

Change Store::prepare_holder_add(uint64_t volume_id, uint64_t host_id)
{
	return reserve_holders({.type = kHolderAdd, .volume_id = volume_id, .host_id = host_id});
}

Change Store::prepare_holder_drop(uint64_t volume_id, uint64_t host_id)
{
	return reserve_holders({.type = kHolderDrop, .volume_id = volume_id, .host_id = host_id});
}

Change Store::prepare_holders_complete()
{
	return reserve_holders({.type = kHoldersComplete});
}

bool Store::holder(uint64_t volume_id, uint64_t host_id) const
{
	const Volume *v = volume(volume_id);

	return v && v->holders.contains(host_id) &&
	       !holder_drops_.contains({volume_id, host_id});
}

// ---------------------------------------------------------------------------
// The recorded devices.

mdr::Result<Change> Store::prepare_device_record(const RecordedDevice &d)
{
	const Record r{.type = kDeviceRecord, .size = d.size, .dev_id = d.id,
		       .identity = d.identity};

	if (mdr::Status ok = check_recorded_device(d.id, d.size, d.identity); !ok.ok())
		return fail(ok, describe_record(r));
	if (std::optional<mdr::Error> busy = in_flight(r, "a record of the device"))
		return std::move(*busy);
	return reserve(r, std::nullopt);
}

mdr::Result<Change> Store::prepare_device_forget(uint32_t dev_id)
{
	return prepare_removal({.type = kDeviceForget, .dev_id = dev_id},
			       recorded_.contains(dev_id), "no disk is recorded for it",
			       "a record of the device");
}

const RecordedDevice *Store::recorded_device(uint32_t id) const
{
	return find_in(recorded_, id);
}

mdr::Result<Applied> Store::commit(const Change &change)
{
	mdr::Result<Taken> t = take_change(change);

	if (!t.ok())
		return mdr::Error(t.error(), t.message());

	Taken &c = t.value();
	mdr::Result<Applied> done = apply(c.record, std::move(c.pending.table));

	mdr::wipe(c.record.secret);
	mdr::wipe(c.pending.payload);
	return done;
}

mdr::Status Store::abort(const Change &change)
{
	mdr::Result<Taken> t = take_change(change);

	if (!t.ok())
		return mdr::Error(t.error(), t.message());
	// A HOST_ADD's key goes as on a commit.
	mdr::wipe(t.value().record.secret);
	mdr::wipe(t.value().pending.payload);
	return {};
}

mdr::Status Store::replay(uint16_t type, std::span<const uint8_t> payload)
{
	if (!pending_.empty() || holder_changes_)
		return mdr::Error(-EBUSY, "replay with changes in flight");

	mdr::Result<Record> r = decode_record(type, payload);

	if (!r.ok())
		return mdr::Error(r.error(), r.message());

	mdr::Result<Applied> done = apply(r.value(), std::nullopt);

	mdr::wipe(r.value().secret);
	if (!done.ok())
		return mdr::Error(done.error(), done.message());
	return {};
}

// ---------------------------------------------------------------------------
// Queries.

const Volume *Store::volume(uint64_t id) const
{
	return find_in(volumes_, id);
}

const Volume *Store::volume(std::string_view name) const
{
	const uint64_t *id = find_in(names_, name);

	return id ? volume(*id) : nullptr;
}

VolumePage Store::list_volumes(uint64_t cursor, size_t max) const
{
	auto [volumes, next] = page_of(volumes_, cursor, max);

	return {std::move(volumes), next};
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

std::vector<Move> Store::moves() const
{
	std::vector<Move> out;

	for (const auto &[key, m] : moves_)
		out.push_back(m);
	return out;
}

const Move *Store::move(uint64_t volume_id, uint64_t index) const
{
	return find_in(moves_, Key{volume_id, index});
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

std::vector<mdr::wire::Device> Store::listed_devices() const
{
	std::vector<mdr::wire::Device> out = alloc_.devices();

	for (mdr::wire::Device &d : out)
		d.identity = alloc_.device(d.dev_id)->identity;
	for (const auto &[id, r] : recorded_)
		if (!alloc_.device(id))
			out.push_back({.dev_id = id, .size = r.size, .identity = r.identity,
				       .state = MDR_DEV_MISSING});
	std::ranges::sort(out, {}, &mdr::wire::Device::dev_id);
	return out;
}

Counts Store::counts() const
{
	return Counts{.volumes = volumes_.size(), .extents = allocated_,
		      .in_flight = pending_.size() + holder_changes_, .moving = moves_.size(),
		      .hosts = hosts_.size()};
}

} // namespace mdnode
