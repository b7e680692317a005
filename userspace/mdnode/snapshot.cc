// SPDX-License-Identifier: GPL-2.0
//
// snapshot.cc - see store.h: the committed state as one checkpoint, and
// back.
//
// Snapshot, version 4 (little-endian):
//	header, 24 bytes: 0 __le32 magic "MDRS", 4 __le16 version (4),
//		6 __le16 reserved, 8 __le64 next_volume_id, 16 __le64 nr_volumes
//	then per volume, by ascending id, 104 bytes: 0 __le64 volume_id,
//		8 __le64 size, 16 __le64 generation, 24 __le32 extent_shift,
//		28 __le32 tenant, 32 __le64 nr_mapped, 40 char name[64]
//	then its nr_mapped mapped entries, by ascending index, 32 bytes each:
//		0 __le64 index, 8 __le64 generation, 16 __le64 pstart,
//		24 __le32 dev_id, 28 __le32 reserved
//	then the host registry: __le64 nr_hosts, and per host, by ascending
//		id, 80 bytes: 0 __le64 host_id, 8 __le32 tenant, 12 __le16
//		key_len, 14 __le16 reserved, 16 __u8 key[64], zero-padded
//	then the recorded devices: __le64 nr_devices, and per device, by
//		ascending id, 144 bytes: 0 __le32 dev_id, 4 __le32 reserved,
//		8 __le64 size, 16 char identity[128], NUL-padded
//	then the holders (store.h, "Holders"): __le64 nr_unknown, and the
//		ids of the volumes whose holders are not known, ascending,
//		8 bytes each; then __le64 nr_holders, and per holder, by
//		ascending volume then host, 16 bytes: 0 __le64 volume_id,
//		8 __le64 host_id
// Version 3 is version 4 without the holders: read as one with none, of
// no volume known (a node from before holders were journaled, whose
// hosts it cannot know). Version 2 is version 3 without the recorded devices: read as one with
// none (a node from before devices were recorded; the start-up check
// records them). Version 1 is version 2 without the host registry: read
// as one with no host (a node from before hosts authenticate).
// Every other entry is unallocated with generation 1: no record of this
// version unmaps an extent and keeps its index. The allocators are rebuilt
// from the mapped entries.
#include "mdnode/store.h"

#include <algorithm>
#include <cerrno>
#include <utility>

#include "lib/auth/auth.h"
#include "mdnode/store_checks.h"

namespace mdnode {

using namespace store_checks;

namespace {

constexpr uint32_t kSnapshotMagic = 0x5352444d;	// "MDRS" as LE bytes
constexpr uint16_t kSnapshotVersion = 4, kSnapshotNoHolders = 3, kSnapshotNoDevices = 2,
		   kSnapshotNoHosts = 1;
constexpr size_t kSnapshotHeader = 24, kSnapshotVolume = 104, kSnapshotEntry = 32;
constexpr size_t kSnapshotHost = 80, kSnapshotDevice = 16 + kDeviceIdentityLen;
constexpr size_t kSnapshotHolder = 16;

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
	out.le64(hosts_.size());
	for (const auto &[id, h] : hosts_)
		out.le64(id).le32(h.tenant).le16(uint16_t(h.key.size())).le16(0)
			.padded(h.key, MDR_HOST_KEY_MAX);
	out.le64(recorded_.size());
	for (const auto &[id, d] : recorded_)
		out.le32(id).le32(0).le64(d.size).name(d.identity, kDeviceIdentityLen);

	uint64_t nr_holders = 0;

	out.le64(holders_unknown_);
	for (const auto &[id, v] : volumes_) {
		nr_holders += v.holders.size();
		if (!v.holders_known)
			out.le64(id);
	}
	out.le64(nr_holders);
	for (const auto &[id, v] : volumes_)
		for (uint64_t host : v.holders)
			out.le64(id).le64(host);
	return out.take();
}

mdr::Status Store::load_snapshot(std::span<const uint8_t> bytes)
{
	auto bad = [](const std::string &what) {
		return mdr::Error(-EINVAL, "snapshot: " + what);
	};

	if (!volumes_.empty() || !pending_.empty() || holder_changes_ || !hosts_.empty() ||
	    !recorded_.empty())
		return mdr::Error(-EBUSY, "snapshot: the store is not empty");
	if (bytes.size() < kSnapshotHeader)
		return bad(std::to_string(bytes.size()) + " bytes, shorter than a header");

	Store loaded(alloc_);
	Reader in(bytes);

	if (in.le32() != kSnapshotMagic)
		return bad("bad magic");
	const uint16_t version = in.le16();
	if (version < kSnapshotNoHosts || version > kSnapshotVersion)
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
	if (version >= kSnapshotNoDevices)
		if (mdr::Status ok = loaded.load_hosts(in); !ok.ok())
			return ok;
	if (version >= kSnapshotNoHolders)
		if (mdr::Status ok = loaded.load_devices(in); !ok.ok())
			return ok;
	if (version == kSnapshotVersion)
		if (mdr::Status ok = loaded.load_holders(in); !ok.ok())
			return ok;
	if (in.left() != 0)
		return bad(std::to_string(in.left()) + " bytes after the last " +
			   (version == kSnapshotNoHosts	   ? "volume"
			    : version == kSnapshotNoDevices ? "host"
			    : version == kSnapshotNoHolders ? "device"
							    : "holder"));
	*this = std::move(loaded);
	return {};
}

mdr::Result<Store> Store::with_snapshot(std::span<const uint8_t> bytes) const
{
	Store s(alloc_.emptied());

	if (mdr::Status st = s.load_snapshot(bytes); !st.ok())
		return mdr::Error(st.error(), st.message());
	s.recorded_ = recorded_;
	return s;
}

// The registry of a snapshot, each host checked as its HOST_ADD is.
mdr::Status Store::load_hosts(Reader &in)
{
	auto bad = [](const std::string &what) {
		return mdr::Error(-EINVAL, "snapshot: " + what);
	};

	if (in.left() < 8)
		return bad("ends before the host registry");

	const uint64_t nr_hosts = in.le64();
	uint64_t last_id = 0;

	for (uint64_t n = 0; n < nr_hosts; n++) {
		if (in.left() < kSnapshotHost)
			return bad("ends within host " + std::to_string(n + 1) + " of " +
				   std::to_string(nr_hosts));

		Record r{.type = kHostAdd};

		r.host_id = in.le64();
		r.tenant = in.le32();

		const uint16_t key_len = in.le16();
		const bool reserved = in.le16() != 0;
		std::span<const uint8_t> key = in.bytes(MDR_HOST_KEY_MAX);
		const std::string what = "host " + std::to_string(r.host_id);

		if (reserved)
			return bad(what + ": a reserved field is not zero");
		if (r.host_id <= last_id)
			return bad(what + ": ids must ascend");
		if (key_len > MDR_HOST_KEY_MAX ||
		    std::any_of(key.begin() + key_len, key.end(), [](uint8_t c) { return c; }))
			return bad(what + ": the key is not zero-padded");
		r.secret.assign(key.begin(), key.begin() + key_len);
		mdr::Result<Applied> added = apply_host_add(r);
		mdr::wipe(r.secret);
		if (!added.ok())
			return fail(added, "snapshot: " + what);
		last_id = r.host_id;
	}
	return {};
}

// The recorded devices of a snapshot, each checked as its DEVICE_RECORD is.
mdr::Status Store::load_devices(Reader &in)
{
	auto bad = [](const std::string &what) {
		return mdr::Error(-EINVAL, "snapshot: " + what);
	};

	if (in.left() < 8)
		return bad("ends before the recorded devices");

	const uint64_t nr_devices = in.le64();
	uint32_t last_id = 0;

	for (uint64_t n = 0; n < nr_devices; n++) {
		if (in.left() < kSnapshotDevice)
			return bad("ends within device " + std::to_string(n + 1) + " of " +
				   std::to_string(nr_devices));

		Record r{.type = kDeviceRecord};

		r.dev_id = in.le32();

		const bool reserved = in.le32() != 0;

		r.size = in.le64();

		std::optional<std::string> identity = in.name(kDeviceIdentityLen);
		const std::string what = "device " + std::to_string(r.dev_id);

		if (reserved)
			return bad(what + ": a reserved field is not zero");
		if (!identity)
			return bad(what + ": the identity is not NUL-padded");
		if (r.dev_id <= last_id)
			return bad(what + ": ids must ascend");
		r.identity = std::move(*identity);
		if (mdr::Result<Applied> done = apply_device_record(r); !done.ok())
			return fail(done, "snapshot: " + what);
		last_id = r.dev_id;
	}
	return {};
}

// The holders of a snapshot: of volumes it holds, none twice.
mdr::Status Store::load_holders(Reader &in)
{
	auto bad = [](const std::string &what) {
		return mdr::Error(-EINVAL, "snapshot: " + what);
	};

	if (in.left() < 8)
		return bad("ends before the holders");

	// Loaded as a node from before holders created them: none known.
	const uint64_t nr_unknown = in.le64();
	uint64_t last_id = 0;

	for (auto &[id, v] : volumes_)
		v.holders_known = true;
	holders_unknown_ = 0;
	for (uint64_t n = 0; n < nr_unknown; n++) {
		if (in.left() < 8)
			return bad("ends within volume " + std::to_string(n + 1) + " of " +
				   std::to_string(nr_unknown) + " of unknown holders");

		const uint64_t id = in.le64();
		auto v = volumes_.find(id);

		if (id <= last_id || v == volumes_.end())
			return bad("volume " + std::to_string(id) +
				   " of unknown holders: out of order, or no such volume");
		v->second.holders_known = false;
		holders_unknown_++;
		last_id = id;
	}
	if (in.left() < 8)
		return bad("ends before the holders");

	const uint64_t nr_holders = in.le64();
	std::optional<std::pair<uint64_t, uint64_t>> last;

	for (uint64_t n = 0; n < nr_holders; n++) {
		if (in.left() < kSnapshotHolder)
			return bad("ends within holder " + std::to_string(n + 1) + " of " +
				   std::to_string(nr_holders));

		const std::pair<uint64_t, uint64_t> h{in.le64(), in.le64()};
		auto v = volumes_.find(h.first);
		const std::string what = "holder " + std::to_string(n + 1) + " (volume " +
					 std::to_string(h.first) + ")";

		if (last && h <= *last)
			return bad(what + ": out of order or twice");
		if (v == volumes_.end())
			return bad(what + ": no such volume");
		v->second.holders.insert(h.second);
		last = h;
	}
	return {};
}

} // namespace mdnode
