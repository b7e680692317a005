// SPDX-License-Identifier: GPL-2.0
//
// test_wire_lengths.cc - lengths the wire codec refuses: every message cut
// at every length, with and without the header saying so, and lengths
// beyond MDR_WIRE_MSG_MAX.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <variant>

#include "lib/wire/wire.h"

#include "tests/test_wire.h"

#include "tests/common/cmocka_cxx.h"

namespace {

using namespace mdr::test;

// ---- Truncation and oversize ----------------------------------------------

// The length of version 6's form of a version 7 OK reply (serving set), or 0.
size_t short_form(const w::Body &body)
{
	return std::visit([](const auto &m) -> size_t {
		if constexpr (requires { m.serving; })
			if (m.serving)
				return w::encoded_size(w::Body{std::decay_t<decltype(m)>{m}}) -
				       sizeof(mdr_wire_serving);
		return 0;
	}, body);
}

void test_truncation_every_length(void **)
{
	for (const w::Body &body : samples()) {
		const Buf b = encode(body);

		// Cut short of what the header says.
		for (size_t n = 0; n < b.size(); n++) {
			auto m = w::parse(std::span(b).first(n), receiver_of(body),
					  role_of(body));
			assert_false(m.ok());
			assert_int_equal(m.error(), -EPROTO);
			assert_true(contains(m.message(), n < sizeof(mdr_wire_hdr)
						 ? "shorter than a header"
						 : "exceeds the"));
		}
		// Cut, with the header saying so: too short for the opcode.
		for (size_t n = sizeof(mdr_wire_hdr); n < b.size(); n++) {
			Buf t(b.begin(), b.begin() + n);
			put32(t, kLen, static_cast<uint32_t>(n));
			// Shorter NODE_STATS replies are older versions': valid.
			if (std::holds_alternative<w::NodeStatsRep>(body) &&
			    n >= sizeof(mdr_wire_node_stats_rep) &&
			    (n - sizeof(mdr_wire_node_stats_rep)) % 8 == 0) {
				assert_true(parse_as(t, body).ok());
				continue;
			}
			// Version 2's ack cut to version 1's is one.
			if (std::holds_alternative<w::InvalidateAck>(body) &&
			    n == sizeof(mdr_wire_inval)) {
				auto m = parse_as(t, body);
				assert_true(m.ok());
				assert_false(std::get<w::InvalidateAck>(m.value().body).extended);
				continue;
			}
			// Version 7's OK reply cut to version 6's is one, which
			// a connection of version 7 refuses.
			if (const size_t v6 = short_form(body); v6 && n == v6) {
				auto m = parse_as(t, body);
				assert_true(m.ok());
				assert_true(w::check_version_form(m.value().body, 6).ok());
				assert_false(w::parse(t, receiver_of(body), role_of(body),
						      w::kEpochVersion).ok());
				continue;
			}
			// Version 7's GROUP_STATUS cut to version 6's length:
			// its elements read as the short ones, which fail on
			// their fields or parse.
			if (const auto *g = std::get_if<w::GroupStatusRep>(&body);
			    g && g->extended &&
			    n == sizeof(mdr_wire_group_status_rep) +
					 g->replicas.size() * sizeof(mdr_wire_replica)) {
				auto m = parse_as(t, body);
				assert_true(!m.ok() || !std::get<w::GroupStatusRep>(
								m.value().body).extended);
				continue;
			}
			auto m = parse_as(t, body);
			assert_false(m.ok());
			assert_int_equal(m.error(), -EPROTO);
		}
	}
}

void test_oversize_length(void **)
{
	Buf b = encode(w::OpenReq{.volume_id = kVol});

	b.resize(MDR_WIRE_MSG_MAX + 1);
	put32(b, kLen, MDR_WIRE_MSG_MAX + 1);
	auto m = w::parse(b, Side::node, MDR_ROLE_HOST);
	assert_false(m.ok());
	assert_int_equal(m.error(), -EPROTO);
	assert_true(contains(m.message(), "hdr: length 65537 exceeds MDR_WIRE_MSG_MAX"));

	put32(b, kLen, UINT32_MAX);
	m = w::parse(b, Side::node, MDR_ROLE_HOST);
	assert_false(m.ok());
	assert_int_equal(m.error(), -EPROTO);
	assert_true(contains(m.message(), "length 4294967295 exceeds the 65537 bytes"));

	// A list reply of the largest length, count consistent, is still one
	// element too long to exist.
	w::VolListRep l;
	const size_t n = (MDR_WIRE_MSG_MAX - 40) / 104 + 1;
	l.vols.assign(1, volume(1, "v"));
	Buf big = encode(l);
	big.resize(40 + n * 104);
	put32(big, kLen, static_cast<uint32_t>(big.size()));
	put32(big, offsetof(mdr_wire_vol_list_rep, count), static_cast<uint32_t>(n));
	m = w::parse(big, Side::client, MDR_ROLE_ADMIN);
	assert_false(m.ok());
	assert_true(contains(m.message(), "exceeds MDR_WIRE_MSG_MAX"));
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_truncation_every_length),
		cmocka_unit_test(test_oversize_length),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
