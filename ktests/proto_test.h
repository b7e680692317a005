/* SPDX-License-Identifier: GPL-2.0 */
/*
 * proto_test.h - what the KUnit suites of kmod/proto/ build their input
 * from: a volume, a sealed entry of it, a message header.
 */
#ifndef MDR_PROTO_TEST_H
#define MDR_PROTO_TEST_H

#include <linux/compiler.h>
#include <linux/string.h>

#include "proto/proto.h"

#define VOL	0x0123456789abcdefULL

/* the version messages speak unless a case says: before replies said who served */
#define VNOW	(MDR_WIRE_VERSION_EPOCH - 1)

/* What the host of these cases asks for in its connect request. */
static const struct mdr_conn_params sent __maybe_unused = {
	.version_min = MDR_WIRE_VERSION_MIN,
	.version_max = MDR_WIRE_VERSION,
	.tenant = 5,
	.host_id = 0x1122334455667788ULL,
	.queue_depth = 16,
	.recv_depth = 32,
	.max_msg = 256,
};

static inline struct mdr_wire_entry make_entry(u64 gen, u64 pstart, u32 dev,
					u8 state, u64 vol, u64 index)
{
	struct mdr_wire_entry e;

	memset(&e, 0, sizeof(e));
	e.generation = cpu_to_le64(gen);
	e.pstart = cpu_to_le64(pstart);
	e.dev_id = cpu_to_le32(dev);
	e.state = state;
	mdr_entry_seal(&e, vol, index);
	return e;
}

static inline void put_hdr(void *buf, u16 op, u16 flags, u16 status,
			   u32 len, u64 req_id)
{
	struct mdr_wire_hdr h = {
		.magic = cpu_to_le16(MDR_WIRE_MSG_MAGIC),
		.opcode = cpu_to_le16(op),
		.flags = cpu_to_le16(flags),
		.status = cpu_to_le16(status),
		.length = cpu_to_le32(len),
		.req_id = cpu_to_le64(req_id),
	};

	memcpy(buf, &h, sizeof(h));
}

#endif /* MDR_PROTO_TEST_H */
