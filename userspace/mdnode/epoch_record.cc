// SPDX-License-Identifier: GPL-2.0
//
// epoch_record.cc - see epoch_record.h.
#include "mdnode/epoch_record.h"

#include <atomic>
#include <cstring>

#include "lib/wire/wire.h"

namespace mdnode {

void EpochRecord::stop()
{
	if (epoch_)
		write(self_, group_, 0);
}

void EpochRecord::write(uint32_t self, uint64_t group, uint64_t epoch)
{
	const mdr_wire_epoch_rec r =
		mdr::wire::make_epoch_record({.replica = self, .group = group, .epoch = epoch});

	std::memcpy(&rec_, &r, sizeof(r));
	// pairs with the host's ordered READs: nothing the loop stores after
	// this (a reply, a table's entry) is seen before the record
	std::atomic_thread_fence(std::memory_order_release);
	self_ = self;
	group_ = group;
	epoch_ = epoch;
}

} // namespace mdnode
