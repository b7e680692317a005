// SPDX-License-Identifier: GPL-2.0
//
// test_repl_conn.cc - what a replication connection carries besides the
// ring (repl_conn.h), without RDMA: the private data of a request, an
// accept and a reject round-trip, and every field a parser checks is
// refused alone with its own error; a leader takes an accept only for the
// epoch and ring it asked; a follower admits by group, fenced epoch, ring
// bounds and a settled log; a receive is a notify or a control message
// only as the protocol shapes them. A probe is told from a request.
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "mdnode/repl_conn.h"

#include "tests/common/cmocka_cxx.h"

using namespace mdnode::repl;

namespace {

using Bytes = std::vector<std::byte>;

constexpr uint64_t kRing = 1 << 20;

const ConnReq kReq{.group = 9, .epoch = 5, .leader_id = 1, .max_batch_bytes = kMinBatchBytes,
		   .ring_bytes = kRing};
const ConnAcc kAcc{.ring_addr = 0x7f0000001000, .ring_rkey = 0x1234, .follower_id = 2,
		   .ring_bytes = kRing,
		   .log = {.epoch = 5, .last = {4, 30}, .durable_index = 30, .fenced_epoch = 5},
		   .features = kFeatureEntryNotify};

// bytes with the little-endian value v of size n at offset at.
Bytes patched(Bytes b, size_t at, size_t n, uint64_t v)
{
	for (size_t i = 0; i < n; i++)
		b[at + i] = static_cast<std::byte>(v >> (8 * i));
	return b;
}

template <typename T>
void expect(const mdr::Result<T> &r, int err, const char *words)
{
	assert_false(r.ok());
	if (r.error() != err || r.message().find(words) == std::string::npos)
		fail_msg("want %d \"%s\", got %d \"%s\"", err, words, r.error(),
			 r.message().c_str());
}

// One field of a good message changed: the field's offset and size, its
// new value, and the refusal it must get.
struct Field {
	size_t at, n;
	uint64_t v;
	int err;
	const char *words;
};

const Field kRequestRefused[] = {
	{0, 4, 0x5052444e, -EINVAL, "request: magic"},
	{4, 2, 2, -EPROTONOSUPPORT, "format version 2"},
	{6, 2, 2, -EINVAL, "kind 2"},
	{16, 8, 0, -EINVAL, "epoch 0"},
	{24, 4, 0, -EINVAL, "leader id 0"},
	{28, 4, kMinBatchBytes - 8, -EINVAL, "max_batch"},
	{32, 8, kRing + 4, -EINVAL, "ring"},
	{32, 8, uint64_t{1} << 33, -EINVAL, "ring"},
	{40, 8, 1, -EINVAL, "reserved bytes not 0"},
};

// The follower's answers, accept (a) and reject (j).
const std::pair<char, Field> kAnswerRefused[] = {
	{'a', {6, 2, 1, -EINVAL, "accept: kind 1"}},
	{'a', {8, 8, 0, -EINVAL, "epoch 0"}},
	{'a', {28, 4, 0, -EINVAL, "follower id 0"}},
	{'a', {40, 8, 6, -EINVAL, "last_epoch 6 above fenced_epoch 5"}},
	{'a', {40, 8, 0, -EINVAL, "0 only both"}},
	{'a', {56, 8, 31, -EINVAL, "durable_index 31 above last_index 30"}},
	{'a', {64, 8, 4, -EINVAL, "fenced_epoch 4 below epoch 5"}},
	{'j', {8, 2, 0, -EINVAL, "reason 0"}},
	{'j', {8, 2, 99, -EINVAL, "reason 99"}},
	{'j', {10, 2, 1, -EINVAL, "reserved"}},
	{'j', {12, 4, 1, -EINVAL, "reserved"}},
};

void test_round_trip(void **)
{
	const Bytes q = encode_conn_req(kReq);
	const Bytes a = encode_conn_acc(kAcc);
	const ConnRej j{kRejStale, 7};

	assert_int_equal(q.size(), kConnReqBytes);
	assert_int_equal(a.size(), kConnAccFeaturesBytes);
	assert_int_equal(encode_conn_rej(j).size(), kConnRejBytes);
	assert_true(parse_conn_req(q).value() == kReq);
	assert_true(parse_conn_acc(a).value() == kAcc);
	assert_true(parse_conn_rej(encode_conn_rej(j)).value() == j);
	// rdma_cm pads private data with zeros: read no further than ours.
	Bytes padded = q;
	padded.resize(56);
	assert_true(parse_conn_req(padded).value() == kReq);
	padded = a;
	padded.resize(196);
	assert_true(parse_conn_acc(padded).value() == kAcc);
	// An accept of a release before features: 72 bytes, or padded with
	// zeros by rdma_cm; either reads as none.
	ConnAcc before = kAcc;
	before.features = 0;
	assert_true(parse_conn_acc(Bytes(a.begin(), a.begin() + kConnAccBytes)).value() == before);
	padded.assign(a.begin(), a.begin() + kConnAccBytes);
	padded.resize(196);
	assert_true(parse_conn_acc(padded).value() == before);
	// Bits it does not know are a newer follower's: read, not refused.
	ConnAcc newer = kAcc;
	newer.features = kFeatureEntryNotify | (uint64_t{1} << 40);
	assert_true(parse_conn_acc(encode_conn_acc(newer)).value() == newer);
	// "MDRP" in a dump, then version 1.
	assert_int_equal(std::to_integer<int>(q[0]), 'M');
	assert_int_equal(std::to_integer<int>(q[3]), 'P');
	assert_int_equal(std::to_integer<int>(q[4]), 1);
}

void test_each_field_refused(void **)
{
	const Bytes q = encode_conn_req(kReq), a = encode_conn_acc(kAcc);
	const Bytes j = encode_conn_rej({kRejBusy, 3});

	for (const Field &f : kRequestRefused)
		expect(parse_conn_req(patched(q, f.at, f.n, f.v)), f.err, f.words);
	for (const auto &[which, f] : kAnswerRefused) {
		if (which == 'a')
			expect(parse_conn_acc(patched(a, f.at, f.n, f.v)), f.err, f.words);
		else
			expect(parse_conn_rej(patched(j, f.at, f.n, f.v)), f.err, f.words);
	}
	// Short ones, and an accept where a request belongs.
	expect(parse_conn_req(Bytes(q.begin(), q.end() - 1)), -EMSGSIZE, "47 bytes");
	expect(parse_conn_req({}), -EMSGSIZE, "0 bytes");
	expect(parse_conn_req(a), -EINVAL, "kind 2");
	expect(parse_conn_acc(Bytes(a.begin(), a.begin() + 48)), -EMSGSIZE, "48 bytes");
	// Stale, fenced to nothing: no follower says that.
	expect(parse_conn_rej(encode_conn_rej({kRejStale, 0})), -EINVAL, "fenced to epoch 0");
	for (uint16_t r = kRejStale; r <= kRejProbe; r++)
		assert_string_not_equal(reject_name(r), "unknown");
}

void test_accept_against_request(void **)
{
	assert_true(check_accept(kReq, kAcc).ok());

	auto differs = [](ConnAcc a, const char *words) {
		mdr::Status st = check_accept(kReq, a);

		assert_false(st.ok());
		assert_int_equal(st.error(), -EPROTO);
		if (st.message().find(words) == std::string::npos)
			fail_msg("want \"%s\", got \"%s\"", words, st.message().c_str());
	};
	ConnAcc a = kAcc;

	a.log.epoch = a.log.fenced_epoch = 6;
	differs(a, "epoch 6, asked 5");
	a = kAcc;
	a.log.fenced_epoch = 6;
	differs(a, "fenced to epoch 6");
	a = kAcc;
	a.ring_bytes = kRing / 2;
	differs(a, "asked 1048576");
	a = kAcc;
	a.ring_addr = 0;
	differs(a, "a ring at 0");
	a = kAcc;
	a.ring_addr = ~uint64_t{0} - 4096;
	differs(a, "a ring at");
	a = kAcc;
	a.log.last = {6, 1};
	differs(a, "a log of epoch 6");
}

void test_admission(void **)
{
	const FollowerBounds b{.group = 9, .max_ring_bytes = kRing};
	ConnReq r = kReq;

	// A new epoch is admitted and fences what is below; the same again.
	Admission a = admit(r, b, 4, true);
	assert_int_equal(a.reject, 0);
	assert_true(a.raises_fence);
	a = admit(r, b, 5, true);
	assert_int_equal(a.reject, 0);
	assert_false(a.raises_fence);
	// Below the fence: stale, whatever else holds.
	assert_int_equal(admit(r, b, 6, true).reject, kRejStale);
	assert_int_equal(admit(r, b, 6, false).reject, kRejStale);
	// Another group's leader; a ring past the bounds; a log in flight.
	r.group = 8;
	assert_int_equal(admit(r, b, 4, true).reject, kRejGroup);
	r = kReq;
	r.ring_bytes = 2 * kRing;
	assert_int_equal(admit(r, b, 4, true).reject, kRejRing);
	r = kReq;
	r.max_batch_bytes = kMinBatchBytes - 8;
	assert_int_equal(admit(r, b, 4, true).reject, kRejRing);
	assert_int_equal(admit(kReq, b, 4, false).reject, kRejBusy);
}

void test_receives(void **)
{
	constexpr uint32_t kSlot = 64;

	// A notify: WRITE with immediate, no bytes, an aligned offset inside.
	assert_true(std::get<Notify>(classify_receive(true, true, 0, 0, kRing, kSlot).value()) ==
		    Notify{0});
	assert_true(std::get<Notify>(classify_receive(true, true, kRing - 8, 0, kRing, kSlot)
					     .value()) == Notify{kRing - 8});
	expect(classify_receive(true, false, 0, 0, kRing, kSlot), -EPROTO, "without immediate");
	// With the entry's bytes (kFeatureEntryNotify): inside the ring.
	assert_true(std::get<Notify>(classify_receive(true, true, 64, kRing - 64, kRing, kSlot)
					     .value()) == Notify{64});
	expect(classify_receive(true, true, 64, kRing - 56, kRing, kSlot), -EPROTO,
	       "carrying 1048520 bytes");
	expect(classify_receive(true, true, kRing - 8, 16, kRing, kSlot), -EPROTO, "carrying 16");
	expect(classify_receive(true, true, 12, 0, kRing, kSlot), -EPROTO, "at 12");
	expect(classify_receive(true, true, kRing, 0, kRing, kSlot), -EPROTO, "at 1048576");
	// The leader's side has no ring: no notify is ever right there.
	expect(classify_receive(true, true, 0, 0, 0, kSlot), -EPROTO, "ring of 0 bytes");
	// A control message: a SEND of 16 to the slot's bytes.
	assert_true(std::get<ControlBytes>(classify_receive(false, false, 0, 32, kRing, kSlot)
						   .value()) == ControlBytes{32});
	expect(classify_receive(false, true, 7, 32, kRing, kSlot), -EPROTO, "SEND with immediate");
	expect(classify_receive(false, false, 0, 15, kRing, kSlot), -EPROTO, "of 15 bytes");
	expect(classify_receive(false, false, 0, 65, kRing, kSlot), -EPROTO, "of 65 bytes");
}

} // namespace

// A probe is told from a request by its kind alone, padded as rdma_cm
// pads; a request is no probe, nor is a probe a request, and a probe cut
// short or of another version is none.
static void test_probe(void **)
{
	const Bytes p = encode_conn_probe(9);

	assert_int_equal(p.size(), kConnProbeBytes);
	assert_true(is_conn_probe(p));
	Bytes padded = p;
	padded.resize(56);
	assert_true(is_conn_probe(padded));
	assert_false(is_conn_probe(encode_conn_req(kReq)));
	expect(parse_conn_req(padded), -EINVAL, "kind 4");
	assert_false(is_conn_probe(Bytes(p.begin(), p.end() - 1)));
	assert_false(is_conn_probe(patched(p, 4, 2, 2)));
	assert_false(is_conn_probe(patched(p, 0, 4, 0)));
	assert_string_equal(reject_name(kRejProbe), "probe answered");
	// Its answer, as the prober reads it.
	auto j = parse_conn_rej(encode_conn_rej({kRejProbe, 3}));
	assert_true(j.ok());
	assert_int_equal(j.value().reason, kRejProbe);
	expect(parse_conn_rej(encode_conn_rej({kRejProbe + 1, 3})), -EINVAL, "reason 9");
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_each_field_refused),
		cmocka_unit_test(test_accept_against_request),
		cmocka_unit_test(test_admission),
		cmocka_unit_test(test_receives),
		cmocka_unit_test(test_probe),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
