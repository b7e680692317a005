// SPDX-License-Identifier: GPL-2.0
//
// test_wire_fuzz.cc - a seeded fuzz loop through parse(): random buffers
// (half of them with a plausible header), connection private data and
// entries, and valid messages mutated; whatever parse() accepts must
// encode back to the bytes received.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "lib/wire/wire.h"

#include "tests/test_wire.h"

#include "tests/common/cmocka_cxx.h"

namespace {

using namespace mdr::test;

// ---- Fuzz -----------------------------------------------------------------

constexpr uint16_t kOpcodes[] = {
	MDR_OP_OPEN, MDR_OP_CLOSE, MDR_OP_RENEW, MDR_OP_ALLOC, MDR_OP_INVALIDATE,
	MDR_OP_AUTH, MDR_OP_VOL_CREATE, MDR_OP_VOL_DELETE, MDR_OP_VOL_LIST,
	MDR_OP_VOL_INFO, MDR_OP_VOL_RESIZE, MDR_OP_DEV_LIST, MDR_OP_NODE_STATS,
	MDR_OP_PING,
};

struct Fuzzer {
	std::mt19937_64 rng{0x6d64726f75746521};	// fixed: runs are repeatable
	size_t accepted = 0;

	uint64_t below(uint64_t n) { return n ? rng() % n : 0; }

	Side side() { return below(2) ? Side::node : Side::client; }

	mdr_wire_role role()
	{
		// now and then a role that no connection has
		const uint64_t r = below(16);
		return r == 0 ? static_cast<mdr_wire_role>(0)
			      : r & 1 ? MDR_ROLE_HOST : MDR_ROLE_ADMIN;
	}

	void fill(Buf &b, size_t from = 0)
	{
		for (size_t i = from; i < b.size(); i += 8) {
			const uint64_t r = rng();

			std::memcpy(&b[i], &r, std::min<size_t>(8, b.size() - i));
		}
	}

	void run(const Buf &b, Side s, mdr_wire_role r)
	{
		auto m = w::parse(b, s, r);

		if (m.ok()) {
			accepted++;
			check_canonical(b, m.value());
			// by a version: what it accepts, it accepted without one
			const auto v = static_cast<uint16_t>(1 + below(w::kEpochVersion));
			auto by = w::parse(b, s, r, v);
			assert_true(by.ok() == w::check_version_form(m.value().body, v).ok());
			assert_true(by.ok() || by.error() == -EPROTO);
		} else {
			assert_true(m.error() == -EPROTO || m.error() == -EINVAL ||
				    m.error() == -EPERM);
			assert_false(m.message().empty());
		}
		(void)w::peek_header(b);
	}

	void mutate(Buf &b)
	{
		switch (below(7)) {
		case 0:	// one bit
			if (!b.empty())
				b[below(b.size())] ^= std::byte(1u << below(8));
			break;
		case 1:	// one byte
			if (!b.empty())
				b[below(b.size())] = std::byte(static_cast<uint8_t>(
					below(3) == 0 ? 0 : below(3) == 1 ? 0xff : rng()));
			break;
		case 2:	// cut
			b.resize(below(b.size() + 1));
			break;
		case 3: {	// extend, header told or not
			const size_t old = b.size();
			b.resize(old + below(256));
			fill(b, old);
			if (below(2) && b.size() >= sizeof(mdr_wire_hdr))
				put32(b, kLen, static_cast<uint32_t>(b.size()));
			break;
		}
		case 4:	// the length field
			if (b.size() >= sizeof(mdr_wire_hdr))
				put32(b, kLen, static_cast<uint32_t>(
					below(4) ? below(b.size() + 64) : rng()));
			break;
		case 5:	// a small number in an aligned word: counts, states, enums
			if (b.size() >= 4)
				put32(b, below(b.size() / 4) * 4,
				      static_cast<uint32_t>(below(5)));
			break;
		case 6:	// the opcode or the flags
			if (b.size() >= sizeof(mdr_wire_hdr)) {
				if (below(2))
					put16(b, 2, kOpcodes[below(std::size(kOpcodes))]);
				else
					put16(b, 4, static_cast<uint16_t>(below(3)));
			}
			break;
		}
	}
};

void test_fuzz_random_buffers(void **)
{
	Fuzzer f;

	for (int i = 0; i < 100000; i++) {
		// mostly short, now and then up to beyond the largest message
		Buf b(f.below(32) ? f.below(320) : f.below(MDR_WIRE_MSG_MAX + 64));
		f.fill(b);
		// Most random bytes die at the magic: give half of them a
		// plausible header so that the size and body checks run too.
		if (i % 2 && b.size() >= sizeof(mdr_wire_hdr)) {
			put16(b, 0, MDR_WIRE_MSG_MAGIC);
			put16(b, 2, kOpcodes[f.below(std::size(kOpcodes))]);
			put16(b, 4, static_cast<uint16_t>(f.below(2)));
			put16(b, 6, static_cast<uint16_t>(f.below(4) ? 0 : f.below(16)));
			put32(b, kLen, static_cast<uint32_t>(f.below(8) ? b.size()
							     : f.below(b.size() + 8)));
			put32(b, 12, f.below(8) ? 0 : static_cast<uint32_t>(f.rng()));
		}
		f.run(b, f.side(), f.role());
	}

	// Connection private data and entries, likewise.
	for (int i = 0; i < 20000; i++) {
		Buf b(f.below(200));
		f.fill(b);
		if (i % 2 && b.size() >= 4)
			put32(b, 0, MDR_WIRE_CONN_MAGIC);
		(void)w::parse_conn_req(b);
		(void)w::parse_conn_rep(b, f.below(2) ? host_req() : admin_req());
		(void)w::parse_conn_rej(b);
		if (b.size() >= sizeof(mdr_wire_entry)) {
			mdr_wire_entry e;
			std::memcpy(&e, b.data(), sizeof(e));
			(void)w::verify_entry(e, f.rng(), f.rng());
		}
		if (b.size() >= sizeof(mdr_wire_epoch_rec)) {
			mdr_wire_epoch_rec e;
			std::memcpy(&e, b.data(), sizeof(e));
			if (i % 3 == 0)		// sealed: magic and reserved decide
				w::store(e.crc, w::epoch_record_crc(e));
			const w::EpochRecordCheck c = w::verify_epoch_record(e);
			assert_true(c != w::EpochRecordCheck::torn || i % 3);
			if (c == w::EpochRecordCheck::ok) {
				const auto again = w::make_epoch_record(w::decode_epoch_record(e));
				assert_memory_equal(&again, &e, sizeof(e));
			}
		}
	}
}

void test_fuzz_mutated_messages(void **)
{
	Fuzzer f;
	const std::vector<w::Body> bodies = samples();
	std::vector<Buf> valid;

	for (const w::Body &body : bodies)
		valid.push_back(encode(body, 0x5eed));
	for (int i = 0; i < 100000; i++) {
		const size_t k = f.below(valid.size());
		Buf b = valid[k];

		for (uint64_t n = 1 + f.below(4); n; n--)
			f.mutate(b);
		if (f.below(4))
			f.run(b, receiver_of(bodies[k]), role_of(bodies[k]));
		else
			f.run(b, f.side(), f.role());
	}
	// The mutations reach the accepting paths, not only the first checks.
	assert_true(f.accepted > 5000);
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fuzz_random_buffers),
		cmocka_unit_test(test_fuzz_mutated_messages),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
