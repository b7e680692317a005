// SPDX-License-Identifier: GPL-2.0
//
// entry.cc - what hosts READ: extent entries of a volume's table, sealed
// with a CRC-32C that also covers where the entry belongs, and a group
// leader's epoch record (version 7), sealed the same way.
#include <iterator>

#include "lib/util/crc32c.h"
#include "lib/wire/fields.h"

namespace mdr::wire {

static_assert(offsetof(mdr_wire_entry, crc) == 28);
static_assert(offsetof(mdr_wire_epoch_rec, crc) == 28);

const char *entry_check_name(EntryCheck check)
{
	// in the order of enum class EntryCheck
	static constexpr const char *kNames[] = {
		"ok", "bad crc", "reserved not zero", "state out of range",
		"unallocated with a device or pstart", "generation zero",
		"placed without a device",
	};
	static_assert(std::size(kNames) == size_t(EntryCheck::no_device) + 1);
	const auto i = static_cast<size_t>(check);

	return i < std::size(kNames) ? kNames[i] : "unknown check";
}

uint32_t entry_crc(const mdr_wire_entry &e, uint64_t volume_id, uint64_t index)
{
	__le64 where[2];

	store(where[0], volume_id);
	store(where[1], index);
	uint32_t crc = crc32c_update(kCrc32cInit, where, sizeof(where));
	crc = crc32c_update(crc, &e, offsetof(mdr_wire_entry, crc));
	return crc32c_finish(crc);
}

void seal_entry(mdr_wire_entry &e, uint64_t volume_id, uint64_t index)
{
	store(e.crc, entry_crc(e, volume_id, index));
}

EntryCheck verify_entry(const mdr_wire_entry &e, uint64_t volume_id,
			uint64_t index)
{
	if (load(e.crc) != entry_crc(e, volume_id, index))
		return EntryCheck::bad_crc;
	if (!all_zero(e.reserved) || load(e.reserved2))
		return EntryCheck::reserved_nonzero;
	if (e.state >= MDR_EXT_STATE_MAX)
		return EntryCheck::bad_state;
	if (e.state == MDR_EXT_UNALLOCATED && (load(e.dev_id) || load(e.pstart)))
		return EntryCheck::unallocated_placed;
	if (!load(e.generation))
		return EntryCheck::zero_generation;
	if (e.state != MDR_EXT_UNALLOCATED && !load(e.dev_id))
		return EntryCheck::no_device;
	return EntryCheck::ok;
}

mdr_wire_entry make_entry(const Entry &entry, uint64_t volume_id, uint64_t index)
{
	auto e = zeroed<mdr_wire_entry>();

	store(e.generation, entry.generation);
	store(e.pstart, entry.pstart);
	store(e.dev_id, entry.dev_id);
	e.state = entry.state;
	seal_entry(e, volume_id, index);
	return e;
}

Entry decode_entry(const mdr_wire_entry &e)
{
	return Entry{load(e.generation), load(e.pstart), load(e.dev_id), e.state};
}

// ---- Epoch records ----------------------------------------------------------

uint32_t epoch_record_crc(const mdr_wire_epoch_rec &r)
{
	return crc32c(&r, offsetof(mdr_wire_epoch_rec, crc));
}

mdr_wire_epoch_rec make_epoch_record(const EpochRecord &r)
{
	auto w = zeroed<mdr_wire_epoch_rec>();

	store(w.magic, MDR_WIRE_EPOCH_MAGIC);
	store(w.replica, r.replica);
	store(w.group, r.group);
	store(w.epoch, r.epoch);
	store(w.crc, epoch_record_crc(w));
	return w;
}

EpochRecordCheck verify_epoch_record(const mdr_wire_epoch_rec &r)
{
	if (load(r.crc) != epoch_record_crc(r))
		return EpochRecordCheck::torn;
	if (load(r.magic) != MDR_WIRE_EPOCH_MAGIC || load(r.reserved))
		return EpochRecordCheck::bad;
	return EpochRecordCheck::ok;
}

EpochRecord decode_epoch_record(const mdr_wire_epoch_rec &r)
{
	return {.replica = load(r.replica), .group = load(r.group), .epoch = load(r.epoch)};
}

} // namespace mdr::wire
