// SPDX-License-Identifier: GPL-2.0
//
// snapshot.cc - see store.h: the committed state as one checkpoint, and
// back.
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
#include "mdnode/store.h"

#include <cerrno>
#include <utility>

#include "mdnode/store_checks.h"

namespace mdnode {

using namespace store_checks;

namespace {

constexpr uint32_t kSnapshotMagic = 0x5352444d;	// "MDRS" as LE bytes
constexpr uint16_t kSnapshotVersion = 1;
constexpr size_t kSnapshotHeader = 24, kSnapshotVolume = 104, kSnapshotEntry = 32;

} // namespace

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

	Store loaded(alloc_);
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

} // namespace mdnode
