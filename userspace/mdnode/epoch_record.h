// SPDX-License-Identifier: GPL-2.0
//
// epoch_record.h - the replica's epoch record (wire version 7): one
// struct mdr_wire_epoch_rec per process, registered for remote READ only
// in each tenant's protection domain (Transport::expose_epoch_record()),
// which a host READs in the same post as, and after, every window of a
// table (<linux/mdroute_wire.h>). It shows {self, group, epoch} while the
// replica serves as its group's leader, and epoch 0 otherwise; a node of
// its own keeps it at epoch 0 and hands it to nobody.
//
// Why a record that shows epoch E proves the window before it was read
// while the replica served at E: the responder runs the two READs of a
// post in order, so the window was read before the record. The replica
// writes epoch 0 into the record first whenever it stops serving
// (GroupReplica::step_down(), stop(), shut_down(), end(); and
// NodeCore::refuse_not_leading() when its etcd lease ran out on the
// loop's clock before tick() stopped it): before it answers a request as
// a replica that does not lead, and so before etcd can have another
// replica lead (that one waits for this one's key to go). A READ of the
// record that saw E therefore ran before the write of 0, and the window
// READ before it too, while the table held what this leader served. The
// write is one memcpy of a sealed record on the loop's thread followed by
// a release fence: no later store of the loop (a reply's buffer, a table
// change) is made visible to the HCA's DMA before it. A READ that races
// the write sees a record whose CRC fails (torn) and reads it again.
#ifndef MDNODE_EPOCH_RECORD_H
#define MDNODE_EPOCH_RECORD_H

#include <cstddef>
#include <cstdint>
#include <span>

#include <linux/mdroute_wire.h>

namespace mdnode {

class EpochRecord {
public:
	// Sealed at epoch 0 from the start: never all zero (a torn record
	// to a reader, which would read it again and again).
	EpochRecord() { write(0, 0, 0); }
	EpochRecord(const EpochRecord &) = delete;
	EpochRecord &operator=(const EpochRecord &) = delete;

	// Replica @self of @group serves at @epoch (non-zero).
	void serve(uint32_t self, uint64_t group, uint64_t epoch) { write(self, group, epoch); }
	// It does not serve (any more): epoch 0, a new CRC. Idempotent.
	void stop();
	// What it shows now: 0 when not serving.
	uint64_t epoch() const { return epoch_; }
	// The registered bytes: the record's address is stable for the
	// process's life.
	std::span<const std::byte> bytes() const
	{
		return std::as_bytes(std::span(&rec_, 1));
	}

private:
	void write(uint32_t self, uint64_t group, uint64_t epoch);

	alignas(64) mdr_wire_epoch_rec rec_;
	uint32_t self_ = 0;
	uint64_t group_ = 0;
	uint64_t epoch_ = 0;
};

} // namespace mdnode

#endif // MDNODE_EPOCH_RECORD_H
