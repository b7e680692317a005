// SPDX-License-Identifier: GPL-2.0
//
// store_apply.cc - see store.h: applying records, the only code that
// changes volumes, the same way live (commit()) and at replay.
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

// The table of nr entries a change mapped ahead (live), or one mapped now
// (replay).
mdr::Status mapped(std::optional<Table> &table, uint64_t nr)
{
	if (!table) {
		mdr::Result<Table> t = Table::map(nr);

		if (!t.ok())
			return mdr::Error(t.error(), t.message());
		table = std::move(t).value();
	}
	assert(table->entries().size() == nr);
	return {};
}

} // namespace


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
		case kHostAdd:
			return apply_host_add(r);
		case kHostRemove:
			return apply_host_remove(r);
		case kDeviceRecord:
			return apply_device_record(r);
		case kDeviceForget:
			return apply_device_forget(r);
		case kHolderAdd:
		case kHolderDrop:
		case kHoldersComplete:
			return apply_holders(r);
		default:
			return apply_alloc(r);
		}
	}();

	if (!done.ok())
		return fail(done, describe_record(r));
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

	if (mdr::Status ok = mapped(table, nr); !ok.ok())
		return mdr::Error(ok.error(), ok.message());
	table->put_unallocated(r.volume_id, 0);
	names_.emplace(r.name, r.volume_id);
	volumes_.emplace(r.volume_id,
			 Volume{.id = r.volume_id, .name = r.name, .size = r.size,
				.extent_shift = r.extent_shift, .tenant = r.tenant,
				.generation = 1, .allocated = 0,
				.table = std::move(*table),
				.holders_known = (r.flags & kCreateHolders) != 0});
	if (!(r.flags & kCreateHolders))
		holders_unknown_++;
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

	allocated_ -= v.allocated;	// frozen extents refused the delete
	holders_unknown_ -= !v.holders_known;
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
	if (mdr::Status ok = follows(r.generation, v.generation, "the volume's"); !ok.ok())
		return mdr::Error(ok.error(), ok.message());

	const uint64_t nr = nr_extents(r.size, v.extent_shift);
	const uint64_t old_nr = v.table.entries().size();

	if (mdr::Status ok = mapped(table, nr); !ok.ok())
		return mdr::Error(ok.error(), ok.message());
	for (uint64_t i = 0; i < std::min(nr, old_nr); i++)
		table->put(i, v.table.entries()[i]);
	if (nr > old_nr)
		table->put_unallocated(v.id, old_nr);
	for (uint64_t i = nr; i < old_nr; i++)
		if (entry_at(v, i).state == MDR_EXT_MAPPED) {
			free_extent(v, i);
			v.allocated--;
			allocated_--;
		}

	Applied done{.volume_id = r.volume_id,
		     .old_table = std::exchange(v.table, std::move(*table))};

	v.size = r.size;
	v.generation = r.generation;
	return done;
}

// The volume of the record's extent, when it exists and has the extent.
mdr::Result<Volume *> Store::extent_volume(const Record &r)
{
	auto it = volumes_.find(r.volume_id);

	if (it == volumes_.end())
		return mdr::Error(-ENOENT, "no such volume");

	Volume &v = it->second;

	if (r.index >= v.table.entries().size())
		return mdr::Error(-ERANGE, "the volume has " +
				  std::to_string(v.table.entries().size()) + " extents");
	return &v;
}

mdr::Result<Applied> Store::apply_alloc(const Record &r)
{
	mdr::Result<Volume *> vol = extent_volume(r);

	if (!vol.ok())
		return mdr::Error(vol.error(), vol.message());

	Volume &v = *vol.value();

	const mdr::wire::Entry old = entry_at(v, r.index);

	if (old.state != MDR_EXT_UNALLOCATED)
		return mdr::Error(-EEXIST, "the extent is mapped already");
	if (mdr::Status ok = follows(r.generation, old.generation, "the entry's"); !ok.ok())
		return mdr::Error(ok.error(), ok.message());
	if (mdr::Status ok = map_extent(v, r.index, r.dev_id, r.pstart, r.generation);
	    !ok.ok())
		return mdr::Error(ok.error(), ok.message());
	return Applied{.volume_id = r.volume_id, .index = r.index,
		       .entry = v.table.entries()[r.index]};
}

mdr::Result<Applied> Store::apply_move_begin(const Record &r)
{
	mdr::Result<Volume *> vol = extent_volume(r);

	if (!vol.ok())
		return mdr::Error(vol.error(), vol.message());

	Volume &v = *vol.value();
	if (moves_.contains(r.key()))
		return mdr::Error(-EEXIST, "the extent is moving already");

	const mdr::wire::Entry old = entry_at(v, r.index);

	if (old.state != MDR_EXT_MAPPED || old.dev_id != r.dev_id || old.pstart != r.pstart)
		return mdr::Error(-EINVAL, "the extent is not mapped at the old place");
	if (mdr::Status ok = follows(r.generation, old.generation, "the entry's"); !ok.ok())
		return mdr::Error(ok.error(), ok.message());

	if (!alloc_.device(r.new_dev) || r.new_dev == r.dev_id)
		return mdr::Error(-ENOENT, "device " + std::to_string(r.new_dev) +
				  " is not configured, or is the old one");
	if (mdr::Status used = alloc_.take(r.new_dev, r.new_pstart, v.extent_shift);
	    !used.ok())
		return mdr::Error(used.error(), used.message());
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
	if (mdr::Status ok = follows(r.generation, m.generation, "the frozen entry's"); !ok.ok())
		return mdr::Error(ok.error(), ok.message());

	const uint32_t free_dev = done ? m.old_dev : m.new_dev;
	const uint64_t free_pstart = done ? m.old_pstart : m.new_pstart;

	alloc_.free(free_dev, free_pstart, v.extent_shift);
	v.table.put(r.index, mdr::wire::make_entry({.generation = r.generation,
						    .pstart = r.pstart,
						    .dev_id = r.dev_id,
						    .state = MDR_EXT_MAPPED},
						   v.id, r.index));
	moves_.erase(mv);
	return Applied{.volume_id = r.volume_id, .index = r.index,
		       .entry = v.table.entries()[r.index]};
}

// What prepare_host_add() and apply_host_add() both ask.
mdr::Status Store::check_host_add(const Record &r) const
{
	const RegisteredHost *known = host(r.host_id);

	if (!r.host_id || !r.tenant)
		return mdr::Error(-EINVAL, "host id and tenant must not be 0");
	if (r.secret.size() < MDR_HOST_KEY_MIN || r.secret.size() > MDR_HOST_KEY_MAX)
		return mdr::Error(-EINVAL, "a host key has " + std::to_string(MDR_HOST_KEY_MIN) +
				  " to " + std::to_string(MDR_HOST_KEY_MAX) + " bytes");
	if (!(r.flags & kHostAddReplace)) {
		if (known)
			return mdr::Error(-EEXIST, "the host is registered already");
		return {};
	}
	if (!known)
		return mdr::Error(-ENOENT, "no such host to replace the key of");
	if (known->tenant != r.tenant)
		return mdr::Error(-EINVAL, "the host is registered for tenant " +
				  std::to_string(known->tenant) + ", not " +
				  std::to_string(r.tenant) + ": remove it first");
	return {};
}

mdr::Result<Applied> Store::apply_host_add(const Record &r)
{
	if (mdr::Status ok = check_host_add(r); !ok.ok())
		return mdr::Error(ok.error(), ok.message());

	RegisteredHost &h = hosts_[r.host_id];

	mdr::wipe(h.key);
	h = RegisteredHost{.id = r.host_id, .tenant = r.tenant, .key = r.secret};
	return Applied{};
}

mdr::Result<Applied> Store::apply_host_remove(const Record &r)
{
	auto it = hosts_.find(r.host_id);

	if (it == hosts_.end())
		return mdr::Error(-ENOENT, "no such host");
	mdr::wipe(it->second.key);
	hosts_.erase(it);
	return Applied{};
}

mdr::Result<Applied> Store::apply_device_record(const Record &r)
{
	if (mdr::Status ok = check_recorded_device(r.dev_id, r.size, r.identity); !ok.ok())
		return mdr::Error(ok.error(), ok.message());
	recorded_[r.dev_id] = RecordedDevice{.id = r.dev_id, .size = r.size,
					     .identity = r.identity};
	return Applied{};
}

mdr::Result<Applied> Store::apply_device_forget(const Record &r)
{
	if (!recorded_.erase(r.dev_id))
		return mdr::Error(-ENOENT, "no disk is recorded for the device");
	return Applied{};
}

// Store.h, "Holders": of a volume deleted since, nothing to change. Any
// host id: a host of wire version 1 or 2 names its own, 0 included, and a
// record the state refused would stop the node (commit_journaled()).
mdr::Result<Applied> Store::apply_holders(const Record &r)
{
	if (r.type == kHoldersComplete) {
		for (auto &[id, v] : volumes_)
			v.holders_known = true;
		holders_unknown_ = 0;
		return Applied{};
	}

	auto it = volumes_.find(r.volume_id);

	if (it != volumes_.end()) {
		if (r.type == kHolderAdd)
			it->second.holders.insert(r.host_id);
		else
			it->second.holders.erase(r.host_id);
	}
	return Applied{.volume_id = r.volume_id};
}

mdr::Status Store::map_extent(Volume &v, uint64_t index, uint32_t dev_id,
			      uint64_t pstart, uint64_t generation)
{
	if (mdr::Status used = alloc_.take(dev_id, pstart, v.extent_shift); !used.ok())
		return used;
	v.table.put(index, mdr::wire::make_entry({.generation = generation,
						  .pstart = pstart,
						  .dev_id = dev_id,
						  .state = MDR_EXT_MAPPED},
						 v.id, index));
	v.allocated++;
	allocated_++;
	return {};
}

void Store::free_extent(const Volume &v, uint64_t index)
{
	const mdr::wire::Entry e = entry_at(v, index);

	alloc_.free(e.dev_id, e.pstart, v.extent_shift);
}

} // namespace mdnode
