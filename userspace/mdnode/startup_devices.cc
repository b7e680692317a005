// SPDX-License-Identifier: GPL-2.0
//
// startup_devices.cc - see startup.h: the configured devices held to the
// disks the journal recorded for their ids, so that kernel names that
// moved between two boots (nvme0n1 and nvme1n1 swapped) never point an
// id, and the extents on it, at another disk.
#include <algorithm>
#include <cinttypes>
#include <memory>
#include <string>
#include <vector>

#include "mdnode/log.h"
#include "mdnode/startup.h"

namespace mdnode {

namespace {

MDNODE_LOG_SUBSYSTEM("main");

std::string disk(const std::string &identity, uint64_t size)
{
	return "disk '" + identity + "' of " + std::to_string(size) + " bytes";
}

// What the configured device d is compared with: the recorded disk of
// its id, unless the operator asked to forget it.
struct Check {
	const Store &store;
	std::span<const uint32_t> forget;
	std::vector<const Device *> configured;

	bool forgotten(uint32_t id) const { return std::ranges::count(forget, id) != 0; }
	const RecordedDevice *recorded(uint32_t id) const
	{
		return forgotten(id) ? nullptr : store.recorded_device(id);
	}
	// The configured device whose disk has this identity, or nullptr.
	const Device *holding(const std::string &identity) const
	{
		for (const Device *d : configured)
			if (d->identity == identity)
				return d;
		return nullptr;
	}

	// "" when d is the disk recorded for its id (or none is).
	std::string mismatch(const Device &d) const
	{
		const std::string what = "device " + std::to_string(d.id) + " (" + d.path + ")";
		const std::string id = std::to_string(d.id);
		const RecordedDevice *rec = recorded(d.id);

		if (!rec) {
			// A new id must not be a disk another id has.
			for (const auto &[other, r] : store.recorded_devices())
				if (other != d.id && !forgotten(other) && r.identity == d.identity)
					return what + " is " + disk(d.identity, d.size) +
					       ", which the journal recorded as device " +
					       std::to_string(other) + ": give --device " +
					       std::to_string(other) + "=" + d.path +
					       ", or --forget-device " + std::to_string(other) +
					       " if device " + std::to_string(other) + " is gone";
			return {};
		}
		if (rec->identity == d.identity && rec->size == d.size)
			return {};
		if (rec->identity == d.identity)
			return what + ": " + disk(d.identity, d.size) + " now, the journal "
			       "recorded " + std::to_string(rec->size) + " bytes: its extents may "
			       "no longer be where they were; if it changed size on purpose "
			       "and keeps them, start once with --forget-device " + id;
		std::string s = what + " is " + disk(d.identity, d.size) + ", but the "
				"journal recorded " + disk(rec->identity, rec->size) + " for it";
		if (const Device *other = holding(rec->identity))
			return s + "; that disk is at " + other->path + ", configured as "
			       "device " + std::to_string(other->id) + ": give --device " + id +
			       "=" + other->path + " (paths of kernel devices can change "
			       "between boots: use /dev/disk/by-id/)";
		return s + "; that disk is not configured: give --device " + id + "=PATH "
		       "of it, or, if device " + id + "'s disk was replaced on purpose, "
		       "start once with --forget-device " + id + " (its " +
		       std::to_string(store.extents_on_device(d.id)) +
		       " extents are then read from the disk at " + d.path + ")";
	}
};

// Journals each change, applies it once durable, and waits for all.
mdr::Status journal_all(Store &store, Journal &journal, std::vector<Change> changes)
{
	auto failed = std::make_shared<mdr::Status>();

	for (Change &c : changes) {
		auto shared = std::make_shared<Change>(std::move(c));
		auto queued = journal.append(
			shared->type, std::as_bytes(std::span(shared->payload)),
			[&store, shared, failed](const mdr::Status &st) {
				if (!st.ok()) {
					(void)store.abort(*shared);
					*failed = st;
				} else if (auto done = store.commit(*shared); !done.ok()) {
					*failed = mdr::Error(done.error(), done.message());
				}
			});
		if (!queued.ok()) {
			(void)store.abort(*shared);
			return queued;
		}
	}
	// Durable before the node serves: a host must never see an extent
	// on a disk the journal has not tied to its id.
	if (mdr::Status st = journal.flush(); !st.ok())
		return st;
	return *failed;
}

} // namespace

mdr::Status check_devices(Store &store, Journal &journal, std::span<const uint32_t> forget)
{
	Check check{store, forget, {}};
	std::vector<std::string> problems;
	std::vector<Change> changes;
	std::vector<const Device *> fresh;

	for (const mdr::wire::Device &w : store.devices())
		check.configured.push_back(store.device(w.dev_id));
	for (const Device *d : check.configured) {
		if (std::string m = check.mismatch(*d); !m.empty())
			problems.push_back(std::move(m));
		else if (!check.recorded(d->id))
			fresh.push_back(d);
	}
	if (!problems.empty()) {
		std::string s = "the configured devices are not the disks the journal "
				"recorded for their ids: ";
		for (size_t i = 0; i < problems.size(); i++)
			s += (i ? "; " : "") + problems[i];
		return mdr::Error(-EINVAL, s);
	}

	for (uint32_t id : forget) {
		const RecordedDevice *r = store.recorded_device(id);

		if (!r) {
			log_warn("--forget-device %u: no disk is recorded for device %u", id, id);
		} else if (!store.device(id)) {
			log_warn("--forget-device %u: forgetting %s", id,
				 disk(r->identity, r->size).c_str());
			auto c = store.prepare_device_forget(id);
			if (!c.ok())
				return mdr::Error(c.error(), c.message());
			changes.push_back(std::move(c).value());
		}
	}
	for (const Device *d : fresh) {
		if (const RecordedDevice *r = store.recorded_device(d->id))
			log_warn("--forget-device %u: %s replaces %s for device %u; leave the "
				 "option out of the next start", d->id,
				 disk(d->identity, d->size).c_str(),
				 disk(r->identity, r->size).c_str(), d->id);
		else
			log_info("device %u: recording %s", d->id,
				 disk(d->identity, d->size).c_str());
		auto c = store.prepare_device_record(
			{.id = d->id, .size = d->size, .identity = d->identity});
		if (!c.ok()) {
			for (const Change &done : changes)
				(void)store.abort(done);
			return mdr::Error(c.error(), c.message());
		}
		changes.push_back(std::move(c).value());
	}
	for (const auto &[id, r] : store.recorded_devices())
		if (!store.device(id) && !check.forgotten(id))
			log_info("device %u (%s) is recorded but not configured; it holds no "
				 "extent", id, disk(r.identity, r.size).c_str());
	return journal_all(store, journal, std::move(changes));
}

} // namespace mdnode
