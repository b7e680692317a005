// SPDX-License-Identifier: GPL-2.0
//
// test_node.h - the rig of test_node_*.cc: mdnode on two devices that are
// never read or written (the node only allocates), 64 KiB extents, hosts
// of wire version 2 (unauthenticated under --host-auth optional;
// test_host_auth.cc has hosts that prove their key), and what an ALLOC
// reply must hold.
//
// The store and the journal are the real ones, on a directory under
// /var/tmp; time is the Node's clock function, moved by hand.
#ifndef MDR_TESTS_TEST_NODE_H
#define MDR_TESTS_TEST_NODE_H

#include <cstdint>
#include <string>
#include <variant>

#include "lib/wire/wire.h"
#include "mdnode/node.h"
#include "mdnode/store.h"

#include "tests/common/node_rig.h"

#include "tests/common/cmocka_cxx.h"

namespace mdr::test {

// What mdnode believes in after an OPEN or a RENEW is kHeldMs; then what
// the host sent before may still land this much longer.
inline constexpr uint32_t kIoHoldMs = 300;
inline constexpr int64_t kWaitedOutMs = kHeldMs + kIoHoldMs;
inline constexpr uint32_t kShift = 16;	// 64 KiB extents: plenty on a small device

struct Rig : NodeRig {
	explicit Rig(mdnode::NodeOptions o = options()) : NodeRig("mdr-node", 2)
	{
		start(devices(), o, dir);
	}

	static std::vector<mdnode::Device> devices()
	{
		return {{1, "/dev/fake-a", "SER-A", 64 * MiB}, {2, "/dev/fake-b", "SER-B", 32 * MiB}};
	}

	// mdnode started again on its journal, as after a crash.
	void restart() { start(devices(), NodeRig::options, dir); }

	static mdnode::NodeOptions options()
	{
		mdnode::NodeOptions o = rig_options();
		o.io_hold_ms = kIoHoldMs;
		o.boot_id = 0xb007;
		return o;
	}

	ConnId host(uint32_t tenant, uint64_t host_id, uint16_t push_credits = 16)
	{
		mdnode::PeerInfo p = peer(MDR_ROLE_HOST, tenant, host_id);

		p.push_credits = push_credits;
		return establish(p);
	}

	uint64_t create(ConnId admin_conn, const std::string &name, uint64_t size,
			uint32_t tenant)
	{
		return NodeRig::create(admin_conn, {.size = size, .extent_shift = kShift,
						    .tenant = tenant, .name = name});
	}

	wire::VolInfoRep info(ConnId admin_conn, const std::string &name)
	{
		send(admin_conn, 4, wire::VolInfoReq{.name = name});
		wire::Msg m = one(admin_conn);
		auto *rep = std::get_if<wire::VolInfoRep>(&m.body);
		if (!rep)
			fail_msg("info %s: status %u", name.c_str(), status_of(m));
		return *rep;
	}
};

// An ALLOC reply for (volume, index) with a mapped entry that matches what
// the table now holds.
inline wire::Entry expect_alloc(Rig &r, const wire::Msg &m, uint64_t req_id,
				uint64_t volume_id, uint64_t index)
{
	assert_int_equal(m.hdr.req_id, req_id);
	auto *rep = std::get_if<wire::AllocRep>(&m.body);
	if (!rep)
		fail_msg("alloc %llu: status %u", (unsigned long long)req_id, status_of(m));
	assert_int_equal(rep->volume_id, volume_id);
	assert_int_equal(rep->index, index);
	assert_int_equal(rep->entry.state, MDR_EXT_MAPPED);
	assert_true(rep->entry.dev_id == 1 || rep->entry.dev_id == 2);
	const mdr_wire_entry &e = r.store->volume(volume_id)->table.entries()[index];
	assert_int_equal(wire::verify_entry(e, volume_id, index), wire::EntryCheck::ok);
	assert_true(wire::decode_entry(e) == rep->entry);
	return rep->entry;
}

} // namespace mdr::test

#endif // MDR_TESTS_TEST_NODE_H
