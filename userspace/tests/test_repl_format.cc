// SPDX-License-Identifier: GPL-2.0
//
// test_repl_format.cc - the log ring's batches and the replicas' control
// messages (repl_format.h), and the chunks of a checkpoint: what is encoded
// parses back to the same, every field the parser range-checks is refused
// one at a time with its own error, a batch or chunk is never read past its
// buffer, and logs compare as Raft compares them.
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "lib/util/crc32c.h"
#include "mdnode/repl_format.h"

#include "tests/common/cmocka_cxx.h"

using namespace mdnode::repl;

namespace {

using Bytes = std::vector<std::byte>;

constexpr uint32_t kMax = kMinBatchBytes;

Bytes payload_of(size_t n, uint8_t seed)
{
	Bytes b(n);

	for (size_t i = 0; i < n; i++)
		b[i] = static_cast<std::byte>(seed + i * 7);
	return b;
}

struct Sample {
	std::vector<Bytes> payloads{payload_of(40, 1), payload_of(0, 2), payload_of(300, 3)};
	std::vector<RecordRef> refs;
	BatchHeader h{.epoch = 7, .first_index = 12, .prev_epoch = 5, .commit_index = 9};
	Bytes bytes;

	Sample()
	{
		uint16_t type = 4;

		for (const Bytes &p : payloads)
			refs.push_back({type++, p});
		bytes = encode_batch(h, refs);
	}
};

void put32(Bytes &b, size_t at, uint32_t v) { std::memcpy(b.data() + at, &v, 4); }
void put64(Bytes &b, size_t at, uint64_t v) { std::memcpy(b.data() + at, &v, 8); }
void put16(Bytes &b, size_t at, uint16_t v) { std::memcpy(b.data() + at, &v, 2); }

// The CRC the encoder would have written over the bytes as they are now.
void reseal(Bytes &b)
{
	put32(b, 48, 0);

	const uint32_t c = mdr::crc32c(b.data(), b.size());

	put32(b, 48, c);
}

// parse (parse_batch() unless told) refuses b with err, naming words.
template <typename Parse = decltype(&parse_batch)>
void expect_refused(const Bytes &b, int err, const char *words, uint32_t max = kMax,
		    Parse parse = parse_batch)
{
	auto r = parse(b, max);

	assert_false(r.ok());
	if (r.error() != err || r.message().find(words) == std::string::npos)
		fail_msg("want %d \"%s\", got %d \"%s\"", err, words, r.error(),
			 r.message().c_str());
}

void test_batch_round_trip(void **)
{
	Sample s;

	// Header, records packed as the journal packs them.
	assert_int_equal(s.bytes.size(), kHeaderBytes + 3 * kRecordHeader + 40 + 0 + 300);

	mdr::Result<Batch> b = parse_batch(s.bytes, kMax);

	assert_true(b.ok());
	assert_int_equal(b.value().length, s.bytes.size());
	assert_int_equal(b.value().h.epoch, 7);
	assert_int_equal(b.value().h.first_index, 12);
	assert_int_equal(b.value().h.prev_epoch, 5);
	assert_int_equal(b.value().h.count, 3);
	assert_int_equal(b.value().h.payload_len, s.bytes.size() - kHeaderBytes);
	assert_int_equal(b.value().h.commit_index, 9);
	assert_int_equal(b.value().records.size(), 3);
	for (size_t i = 0; i < 3; i++) {
		const RecordRef &r = b.value().records[i];

		assert_int_equal(r.type, 4 + i);
		assert_int_equal(r.payload.size(), s.payloads[i].size());
		assert_memory_equal(r.payload.data(), s.payloads[i].data(), r.payload.size());
	}

	// Bytes after the batch (padding, the next entry) are not its.
	Bytes longer = s.bytes;
	longer.resize(longer.size() + 100, std::byte{0xee});
	mdr::Result<Batch> l = parse_batch(longer, kMax);
	assert_true(l.ok());
	assert_int_equal(l.value().length, s.bytes.size());

	// The largest record fits in the smallest batch.
	Bytes big = payload_of(kMaxRecordPayload, 9);
	RecordRef one{1, big};
	Bytes biggest = encode_batch({.epoch = 1, .first_index = 1}, std::span(&one, 1));
	assert_true(biggest.size() <= kMinBatchBytes);
	assert_true(parse_batch(biggest, kMinBatchBytes).ok());
}

// One edit of an entry's bytes, with the CRC made to match so that the
// field's own check is what refuses it.
struct FieldCase {
	const char *what;
	void (*edit)(Bytes &);
	int err;
	const char *words;
};

// Each case applied alone to good, refused by parse as it says.
template <typename Parse>
void expect_each_refused(const Bytes &good, std::span<const FieldCase> cases, Parse parse)
{
	for (const FieldCase &c : cases) {
		Bytes b = good;

		c.edit(b);
		reseal(b);
		print_message("%s\n", c.what);
		expect_refused(b, c.err, c.words, kMax, parse);
	}
}

// Each field the header range-checks, broken alone.
void test_batch_fields_refused(void **)
{
	const FieldCase cases[] = {
		{"magic", [](Bytes &b) { put32(b, 0, 0x12345678); }, -EBADMSG, "bad magic"},
		{"version", [](Bytes &b) { put16(b, 4, 2); }, -EPROTONOSUPPORT, "version 2"},
		{"reserved at 6", [](Bytes &b) { put16(b, 6, 1); }, -EINVAL, "reserved field at 6"},
		{"reserved at 52", [](Bytes &b) { put32(b, 52, 1); }, -EINVAL,
		 "reserved field at 52"},
		{"epoch 0", [](Bytes &b) { put64(b, 8, 0); }, -EINVAL, "epoch 0"},
		{"first_index 0", [](Bytes &b) { put64(b, 16, 0); }, -EINVAL, "first_index 0"},
		{"overflow", [](Bytes &b) { put64(b, 16, UINT64_MAX - 1); }, -EINVAL, "overflows"},
		{"prev_epoch above epoch", [](Bytes &b) { put64(b, 24, 8); }, -EINVAL,
		 "prev_epoch 8 above epoch"},
		{"prev_epoch 0 with a record before", [](Bytes &b) { put64(b, 24, 0); }, -EINVAL,
		 "0 exactly when"},
		{"prev_epoch at index 1", [](Bytes &b) {
			put64(b, 16, 1);
			put64(b, 40, 0);
		 }, -EINVAL, "0 exactly when"},
		{"no records", [](Bytes &b) { put32(b, 32, 0); }, -EINVAL, "no records"},
		{"commit not below first", [](Bytes &b) { put64(b, 40, 12); }, -EINVAL,
		 "commit_index 12 not below"},
		{"count past payload", [](Bytes &b) { put32(b, 32, 1000); }, -EINVAL,
		 "count 1000 in a payload"},
		{"count above records", [](Bytes &b) { put32(b, 32, 4); }, -EINVAL,
		 "record 3 of 4 past payload_len"},
		{"count below records", [](Bytes &b) { put32(b, 32, 2); }, -EINVAL,
		 "bytes after the 2 records"},
		{"record length past payload", [](Bytes &b) { put32(b, 56 + 2, 400); }, -EINVAL,
		 "record 0 of 400 bytes past payload_len"},
		{"record too long", [](Bytes &b) { put32(b, 56 + 2, kMaxRecordPayload + 1); },
		 -EINVAL, "at most 65536"},
	};

	expect_each_refused(Sample().bytes, cases, parse_batch);
}

void test_batch_crc_and_lengths_refused(void **)
{
	// A flipped byte anywhere is refused: in the CRC or the records by
	// the CRC, in another header field by its own check or the CRC.
	Sample s;
	for (size_t at = 0; at < s.bytes.size(); at++) {
		Bytes b = s.bytes;

		b[at] ^= std::byte{0x10};
		mdr::Result<Batch> r = parse_batch(b, kMax);
		assert_false(r.ok());
		if ((at >= 48 && at < 52) || at >= kHeaderBytes)
			assert_int_equal(r.error(), -EBADMSG);
	}

	// A payload_len that runs past the buffer, or past the batch limit.
	Sample t;
	put32(t.bytes, 36, static_cast<uint32_t>(t.bytes.size()));
	reseal(t.bytes);
	expect_refused(t.bytes, -EMSGSIZE, "bytes in");
	expect_refused(Sample().bytes, -EMSGSIZE, "at most 100", 100);

	// A buffer shorter than a header, and one cut inside the payload.
	expect_refused(Bytes(kHeaderBytes - 1), -EMSGSIZE, "less than a header");
	Sample c;
	Bytes cut(c.bytes.begin(), c.bytes.end() - 1);
	expect_refused(cut, -EMSGSIZE, "bytes in");
}

void test_peek_entry(void **)
{
	Sample s;

	mdr::Result<Entry> e = peek_entry(s.bytes, kMax);
	assert_true(e.ok());
	assert_false(e.value().wrap);
	assert_int_equal(e.value().length, s.bytes.size());

	Bytes w = encode_wrap();
	assert_int_equal(w.size(), kWrapBytes);
	mdr::Result<Entry> m = peek_entry(w, kMax);
	assert_true(m.ok());
	assert_true(m.value().wrap);

	// A marker with its reserved half set; cut short.
	Bytes bad = w;
	bad[5] = std::byte{1};
	assert_int_equal(peek_entry(bad, kMax).error(), -EINVAL);
	assert_int_equal(peek_entry(std::span(w).first(6), kMax).error(), -EMSGSIZE);
	assert_int_equal(peek_entry(std::span(w).first(3), kMax).error(), -EMSGSIZE);

	// Neither magic; a header cut by the ring's end; a batch past it or
	// past the limit: refused from the header alone.
	Bytes junk(64, std::byte{0x5a});
	assert_int_equal(peek_entry(junk, kMax).error(), -EBADMSG);
	assert_int_equal(peek_entry(std::span(s.bytes).first(kHeaderBytes - 1), kMax).error(),
			 -EMSGSIZE);
	assert_int_equal(peek_entry(std::span(s.bytes).first(s.bytes.size() - 1), kMax).error(),
			 -EMSGSIZE);
	assert_int_equal(peek_entry(s.bytes, 100).error(), -EMSGSIZE);
}

// A checkpoint chunk parses back to what was encoded; peek_entry() knows
// it from a batch by its magic alone, and bounds it the same way.
void test_chunk_round_trip(void **)
{
	const Bytes piece = payload_of(1000, 4);
	const ChunkHeader h{.epoch = 7, .last = {6, 40}, .total = 5000, .offset = 4000};
	const Bytes b = encode_chunk(h, piece);

	assert_int_equal(b.size(), kHeaderBytes + piece.size());
	mdr::Result<Chunk> c = parse_chunk(b, kMax);
	assert_true(c.ok());
	assert_true(c.value().h == h);
	assert_int_equal(c.value().length, b.size());
	assert_int_equal(c.value().bytes.size(), piece.size());
	assert_memory_equal(c.value().bytes.data(), piece.data(), piece.size());

	mdr::Result<Entry> e = peek_entry(b, kMax);
	assert_true(e.ok());
	assert_false(e.value().wrap);
	assert_true(e.value().chunk);
	assert_int_equal(e.value().length, b.size());
	assert_false(peek_entry(Sample().bytes, kMax).value().chunk);
	assert_int_equal(peek_entry(b, 100).error(), -EMSGSIZE);

	// A chunk is not a batch, nor a batch a chunk.
	assert_int_equal(parse_batch(b, kMax).error(), -EBADMSG);
	assert_int_equal(parse_chunk(Sample().bytes, kMax).error(), -EBADMSG);
	// The largest chunk a batch limit allows.
	const Bytes most = payload_of(chunk_room(kMax), 5);
	assert_true(parse_chunk(encode_chunk({.epoch = 1, .last = {1, 1}, .total = 1u << 20},
					     most), kMax).ok());
}

// Each field the chunk's header range-checks, broken alone with the CRC
// made to match; and a flipped byte anywhere.
void test_chunk_refused(void **)
{
	const FieldCase cases[] = {
		{"version", [](Bytes &b) { put16(b, 4, 2); }, -EPROTONOSUPPORT, "version 2"},
		{"reserved at 6", [](Bytes &b) { put16(b, 6, 1); }, -EINVAL, "reserved field at 6"},
		{"reserved at 52", [](Bytes &b) { put32(b, 52, 1); }, -EINVAL,
		 "reserved field at 52"},
		{"epoch 0", [](Bytes &b) { put64(b, 8, 0); }, -EINVAL, "epoch 0"},
		{"last epoch 0", [](Bytes &b) { put64(b, 16, 0); }, -EINVAL, "position"},
		{"last index 0", [](Bytes &b) { put64(b, 24, 0); }, -EINVAL, "position"},
		{"last epoch past epoch", [](Bytes &b) { put64(b, 16, 8); }, -EINVAL, "position"},
		{"total below a header", [](Bytes &b) { put32(b, 32, 39); }, -EINVAL,
		 "less than its header"},
		{"chunk_len 0", [](Bytes &b) {
			put32(b, 36, 0);
			b.resize(kHeaderBytes);
		 }, -EINVAL, "chunk_len 0"},
		{"past the total", [](Bytes &b) { put64(b, 40, 4001); }, -EINVAL, "past the"},
		{"offset past the total", [](Bytes &b) { put64(b, 40, UINT64_MAX); }, -EINVAL,
		 "past the"},
		{"length past the buffer", [](Bytes &b) { put32(b, 36, 1001); }, -EMSGSIZE,
		 "bytes in"},
	};
	const ChunkHeader h{.epoch = 7, .last = {6, 40}, .total = 5000, .offset = 4000};
	const Bytes good = encode_chunk(h, payload_of(1000, 4));

	expect_each_refused(good, cases, parse_chunk);
	for (size_t at = 0; at < good.size(); at++) {
		Bytes b = good;

		b[at] ^= std::byte{0x10};
		assert_false(parse_chunk(b, kMax).ok());
	}
	assert_int_equal(parse_chunk(std::span(good).first(kHeaderBytes - 1), kMax).error(),
			 -EMSGSIZE);
	assert_int_equal(parse_chunk(good, 1000).error(), -EMSGSIZE);
}

void test_check_ring(void **)
{
	assert_true(check_ring(16 << 20, 1 << 20).ok());
	assert_true(check_ring(kMinBatchBytes + kWrapBytes, kMinBatchBytes).ok());
	assert_true(check_ring(kMaxRingBytes, kMinBatchBytes).ok());
	assert_int_equal(check_ring(kMinBatchBytes + 4, kMinBatchBytes).error(), -EINVAL);
	assert_int_equal(check_ring(kMinBatchBytes, kMinBatchBytes).error(), -EINVAL);
	assert_int_equal(check_ring(1 << 20, kMinBatchBytes - 8).error(), -EINVAL);
	assert_int_equal(check_ring(1 << 20, kMinBatchBytes + 4).error(), -EINVAL);
	assert_int_equal(check_ring(kMaxRingBytes + 8, kMinBatchBytes).error(), -EINVAL);
}

void test_control_round_trip(void **)
{
	const Control msgs[] = {
		Durable{3, 17, 4096},
		Heartbeat{3, 15},
		LogStateReq{4},
		LogState{4, {3, 17}, 16, 4},
		LogState{4, {0, 0}, 0, 9},
	};
	const size_t lengths[] = {32, 24, 16, 48, 48};

	for (size_t i = 0; i < std::size(msgs); i++) {
		Bytes b = encode_control(msgs[i]);

		assert_int_equal(b.size(), lengths[i]);

		mdr::Result<Control> back = parse_control(b);

		assert_true(back.ok());
		assert_true(back.value() == msgs[i]);
	}
}

void test_control_refused(void **)
{
	auto expect = [](const Bytes &b, int err, const char *words) {
		mdr::Result<Control> r = parse_control(b);

		assert_false(r.ok());
		if (r.error() != err || r.message().find(words) == std::string::npos)
			fail_msg("want %d \"%s\", got %d \"%s\"", err, words, r.error(),
				 r.message().c_str());
	};
	const Bytes d = encode_control(Durable{3, 17, 4096});
	Bytes b;

	expect(Bytes(15), -EMSGSIZE, "less than a header");
	b = d, put16(b, 0, 9);
	expect(b, -EINVAL, "unknown type 9");
	b = d, put16(b, 0, 0);
	expect(b, -EINVAL, "unknown type 0");
	b = d, put16(b, 2, 2);
	expect(b, -EPROTONOSUPPORT, "DURABLE: format version 2");
	b = d, put32(b, 4, 40);
	expect(b, -EMSGSIZE, "length 40, not 32");
	b = d, b.push_back(std::byte{0});
	expect(b, -EMSGSIZE, "33 bytes, not 32");
	b = d, b.pop_back();
	expect(b, -EMSGSIZE, "31 bytes, not 32");
	b = d, put64(b, 8, 0);
	expect(b, -EINVAL, "epoch 0");
	// A HEARTBEAT's length in a DURABLE's header.
	b = encode_control(Heartbeat{3, 1}), put16(b, 0, kDurable);
	expect(b, -EMSGSIZE, "length 24, not 32");

	// LOG_STATE's own rules.
	expect(encode_control(LogState{4, {3, 17}, 16, 3}), -EINVAL, "fenced_epoch 3 below");
	expect(encode_control(LogState{4, {5, 17}, 16, 4}), -EINVAL, "last_epoch 5 above");
	expect(encode_control(LogState{4, {0, 17}, 0, 4}), -EINVAL, "0 only both");
	expect(encode_control(LogState{4, {3, 0}, 0, 4}), -EINVAL, "0 only both");
	expect(encode_control(LogState{4, {3, 17}, 18, 4}), -EINVAL, "durable_index 18 above");
}

void test_compare_logs(void **)
{
	// A higher last epoch wins whatever the index; then the higher index.
	assert_true(compare_logs({3, 5}, {2, 900}) > 0);
	assert_true(compare_logs({2, 900}, {3, 5}) < 0);
	assert_true(compare_logs({3, 6}, {3, 5}) > 0);
	assert_true(compare_logs({3, 5}, {3, 6}) < 0);
	assert_int_equal(compare_logs({3, 5}, {3, 5}), 0);
	assert_true(compare_logs({1, 1}, {0, 0}) > 0);
	assert_int_equal(compare_logs({0, 0}, {0, 0}), 0);
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch_round_trip),
		cmocka_unit_test(test_batch_fields_refused),
		cmocka_unit_test(test_batch_crc_and_lengths_refused),
		cmocka_unit_test(test_peek_entry),
		cmocka_unit_test(test_chunk_round_trip),
		cmocka_unit_test(test_chunk_refused),
		cmocka_unit_test(test_check_ring),
		cmocka_unit_test(test_control_round_trip),
		cmocka_unit_test(test_control_refused),
		cmocka_unit_test(test_compare_logs),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
