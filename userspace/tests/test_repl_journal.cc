// SPDX-License-Identifier: GPL-2.0
//
// test_repl_journal.cc - the group's log in a replica's own journal
// (repl_journal.h): LOG_MARK and EPOCH records, byte for byte, and each
// refused shape; a recovery that applies the records its marks knew
// committed and holds the rest with their epochs, keeps local records
// apart, cuts a tail a later mark went over, takes a mark whose records a
// crash lost, and refuses a gap, a cut of committed records and an epoch
// that goes back.
#include <algorithm>
#include <cerrno>
#include <deque>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "mdnode/config.h"
#include "mdnode/records.h"
#include "mdnode/repl_journal.h"

#include "tests/common/cmocka_cxx.h"

using namespace mdnode::repl;
using Bytes = std::vector<std::byte>;

namespace {

void expect_error(const mdr::Status &st, int err, const char *words)
{
	assert_false(st.ok());
	assert_int_equal(st.error(), err);
	if (st.message().find(words) == std::string::npos)
		fail_msg("\"%s\" does not say \"%s\"", st.message().c_str(), words);
}

Bytes rec(uint8_t tag) { return Bytes(3, std::byte{tag}); }

// A journal read back: what went to the store, in order, and the log.
struct Reader {
	std::vector<std::pair<uint64_t, uint16_t>> applied;	// index, type
	std::vector<uint16_t> local;
	LogRecovery rx{[this](uint64_t index, uint16_t type, std::span<const std::byte>) {
			       applied.emplace_back(index, type);
			       return mdr::Status();
		       },
		       [this](uint16_t type, std::span<const std::byte>) {
			       local.push_back(type);
			       return mdr::Status();
		       }};

	mdr::Status mark(uint64_t epoch, uint64_t first, uint32_t count, uint64_t commit)
	{
		return rx.record(mdnode::kLogMark, encode_mark({epoch, first, count, commit}));
	}
	mdr::Status record(uint16_t type = mdnode::kExtentAlloc)
	{
		return rx.record(type, rec(uint8_t(type)));
	}
	void ok(const mdr::Status &st)
	{
		if (!st.ok())
			fail_msg("%s", st.message().c_str());
	}
};

void test_mark_bytes(void **)
{
	const LogMark m{.epoch = 7, .first_index = 0x0102030405060708, .count = 3,
			.commit_index = 9};
	const Bytes b = encode_mark(m);

	assert_int_equal(b.size(), kLogMarkBytes);
	assert_int_equal(uint8_t(b[0]), 7);
	assert_int_equal(uint8_t(b[8]), 0x08);
	assert_int_equal(uint8_t(b[15]), 0x01);
	assert_int_equal(uint8_t(b[16]), 3);
	assert_int_equal(uint8_t(b[24]), 9);
	assert_true(decode_mark(b).value() == m);

	struct Case {
		const char *what;
		Bytes bytes;
		const char *words;
	};
	Bytes reserved = b;
	reserved[20] = std::byte{1};
	const Case cases[] = {
		{"short", Bytes(b.begin(), b.end() - 1), "31 bytes"},
		{"epoch 0", encode_mark({0, 5, 1, 0}), "epoch 0"},
		{"index 0", encode_mark({1, 0, 1, 0}), "first index 0"},
		{"count 0", encode_mark({1, 5, 0, 0}), "count 0"},
		{"reserved", reserved, "reserved"},
		{"commit at first", encode_mark({1, 5, 1, 5}), "not below its first index"},
	};
	for (const Case &c : cases) {
		print_message("%s\n", c.what);
		auto d = decode_mark(c.bytes);
		assert_false(d.ok());
		assert_int_equal(d.error(), -EINVAL);
		assert_non_null(strstr(d.message().c_str(), c.words));
	}

	const EpochRecord er{12, {5200, 20000}};
	assert_true(decode_epoch_record(encode_epoch_record(er)).value() == er);
	assert_int_equal(encode_epoch_record(er).size(), 16);
	assert_false(decode_epoch_record(encode_epoch_record(EpochRecord{0, {5200, 20000}})).ok());
	assert_false(decode_epoch_record(Bytes(8)).ok());
	// Bounds a lease could never have: refused, not waited out.
	auto far = decode_epoch_record(encode_epoch_record(EpochRecord{12, {mdnode::kHeldMsMax + 1, 0}}));
	assert_int_equal(far.error(), -EINVAL);
	assert_non_null(strstr(far.message().c_str(), "held_ms"));
	far = decode_epoch_record(encode_epoch_record(EpochRecord{12, {1000, mdnode::kIoHoldMsMax + 1}}));
	assert_non_null(strstr(far.message().c_str(), "io_hold_ms"));
	assert_false(changes_store(mdnode::kEpochRecord));
	assert_true(changes_store(mdnode::kExtentAlloc));
	assert_true(is_local(mdnode::kDeviceRecord));
	assert_false(is_local(mdnode::kExtentAlloc));
}

// Records up to the highest commit index a mark carried are applied, in
// log order, as later marks raise it; the rest are held with their
// epochs; local records stand apart wherever they come.
void test_recovery_applies_committed(void **)
{
	Reader r;

	r.ok(r.record(mdnode::kDeviceRecord));		// the start's check of its disks
	r.ok(r.mark(2, 1, 2, 0));
	r.ok(r.rx.record(mdnode::kEpochRecord, encode_epoch_record({2, {5200, 20000}})));
	assert_int_equal(r.applied.size(), 0);
	r.ok(r.record(mdnode::kVolumeCreate));
	r.ok(r.mark(2, 3, 1, 2));			// 1 and 2 committed
	assert_int_equal(r.applied.size(), 2);
	r.ok(r.record());
	r.ok(r.record(mdnode::kDeviceRecord));		// a later start's
	r.ok(r.mark(3, 4, 1, 3));
	r.ok(r.rx.record(mdnode::kEpochRecord, encode_epoch_record({3, {3000, 1000}})));
	r.ok(r.mark(3, 5, 2, 3));
	r.ok(r.record());
	r.ok(r.record());

	RecoveredLog log = r.rx.finish();

	assert_true(log.last == (LogPosition{3, 6}));
	assert_int_equal(log.applied, 3);
	assert_int_equal(log.applied_epoch, 2);
	assert_int_equal(r.applied.size(), 3);
	assert_int_equal(r.applied[2].first, 3);
	assert_int_equal(log.held.size(), 3);
	assert_int_equal(log.held[0].index, 4);
	assert_int_equal(log.held[0].epoch, 3);
	assert_int_equal(log.held[0].type, mdnode::kEpochRecord);
	assert_int_equal(log.held[2].index, 6);
	assert_int_equal(log.log_records, 6);
	assert_int_equal(log.local_records, 2);
	assert_int_equal(r.local.size(), 2);
	assert_int_equal(log.cut, 0);
	// The last EPOCH record's bounds, held or not.
	assert_true(log.epoch_bounds == (mdnode::LeaseBounds{3000, 1000}));
}

// A mark at or below the log's end: the tail from its first index goes.
void test_recovery_cuts_tail(void **)
{
	Reader r;

	r.ok(r.mark(1, 1, 2, 0));
	r.ok(r.record());
	r.ok(r.record());
	r.ok(r.mark(1, 3, 2, 1));	// 1 committed; 3, 4 of epoch 1 after
	r.ok(r.record());
	r.ok(r.record());
	r.ok(r.mark(4, 3, 1, 2));	// epoch 4 goes over 3 and 4
	r.ok(r.record(mdnode::kVolumeDelete));

	RecoveredLog log = r.rx.finish();

	assert_true(log.last == (LogPosition{4, 3}));
	assert_int_equal(log.applied, 2);
	assert_int_equal(log.cut, 2);
	assert_int_equal(log.held.size(), 1);
	assert_int_equal(log.held[0].type, mdnode::kVolumeDelete);
	assert_int_equal(log.held[0].epoch, 4);
}

// A crash lost a mark's last records; the next process went on with a
// mark of its own, after its local records.
void test_recovery_after_torn_mark(void **)
{
	Reader r;

	r.ok(r.mark(1, 1, 3, 0));
	r.ok(r.record());
	r.ok(r.record(mdnode::kDeviceForget));	// local, not the mark's second
	r.ok(r.mark(2, 2, 1, 1));
	r.ok(r.record());

	RecoveredLog log = r.rx.finish();

	assert_true(log.last == (LogPosition{2, 2}));
	assert_int_equal(log.applied, 1);
	assert_int_equal(log.local_records, 1);
}

void test_recovery_refusals(void **)
{
	{
		Reader r;

		r.ok(r.mark(1, 1, 1, 0));
		r.ok(r.record());
		expect_error(r.mark(1, 3, 1, 0), -EINVAL, "after a gap: the log ends at 1");
	}
	{
		Reader r;

		r.ok(r.mark(1, 1, 2, 0));
		r.ok(r.record());
		r.ok(r.record());
		r.ok(r.mark(1, 3, 1, 2));
		r.ok(r.record());
		expect_error(r.mark(2, 2, 1, 0), -EINVAL, "cuts records up to 2, known committed");
	}
	{
		Reader r;

		r.ok(r.mark(3, 1, 1, 0));
		r.ok(r.record());
		expect_error(r.mark(2, 2, 1, 0), -EINVAL, "epoch 2 after a record of epoch 3");
	}
	{
		Reader r;

		r.ok(r.mark(3, 1, 1, 0));
		expect_error(r.rx.record(mdnode::kEpochRecord, encode_epoch_record({2, {}})), -EINVAL,
			     "EPOCH record of epoch 2 under a mark of 3");
	}
	{
		Reader r;

		expect_error(r.rx.record(mdnode::kLogMark, Bytes(5)), -EINVAL, "5 bytes");
	}
	{
		// The callbacks' errors stop it.
		LogRecovery rx([](uint64_t, uint16_t, std::span<const std::byte>) {
			return mdr::Status(mdr::Error(-EIO, "store says no"));
		}, [](uint16_t, std::span<const std::byte>) { return mdr::Status(); });

		assert_true(rx.record(mdnode::kLogMark, encode_mark({1, 1, 1, 0})).ok());
		assert_true(rx.record(mdnode::kExtentAlloc, rec(1)).ok());
		expect_error(rx.record(mdnode::kLogMark, encode_mark({1, 2, 1, 1})), -EIO,
			     "store says no");
	}
}

HeldRecord held(uint64_t index, uint64_t epoch, size_t bytes)
{
	return {index, epoch, mdnode::kExtentAlloc, Bytes(bytes, std::byte(index))};
}

bool same(const std::deque<HeldRecord> &a, const std::deque<HeldRecord> &b)
{
	return std::equal(a.begin(), a.end(), b.begin(), b.end(),
			  [](const HeldRecord &x, const HeldRecord &y) {
		return x.index == y.index && x.epoch == y.epoch && x.type == y.type &&
		       x.payload == y.payload;
	});
}

// A replica's checkpoint: its header and recent records round-trip, and
// everything else is refused by name; the recovery starts at its
// position, all applied, with its recent records, and takes the marks
// that follow it, not one that would cut below it.
void test_checkpoint_header(void **)
{
	LogCheckpoint c{.last = {4, 90}, .epoch_bounds = mdnode::LeaseBounds{5200, 20000},
			.recent = {held(88, 3, 5), held(89, 4, 0), held(90, 4, 17)}};
	std::vector<uint8_t> bytes = encode_checkpoint_header(c);

	assert_int_equal(bytes.size(), kCheckpointHeaderBytes + 3 * 24 + 22);
	assert_true(is_replica_checkpoint(bytes));
	bytes.insert(bytes.end(), {1, 2, 3});
	auto d = decode_checkpoint(bytes);
	assert_true(d.ok());
	assert_true(d.value().log.last == c.last);
	assert_true(d.value().log.epoch_bounds == c.epoch_bounds);
	assert_true(same(d.value().log.recent, c.recent));
	assert_int_equal(d.value().snapshot.size(), 3);
	const LogCheckpoint empty{.last = {}, .epoch_bounds = std::nullopt, .recent = {}};
	auto e0 = decode_checkpoint(encode_checkpoint_header(empty));
	assert_true(e0.value().log.last == empty.last);
	assert_false(e0.value().log.epoch_bounds.has_value());
	assert_true(e0.value().log.recent.empty());

	struct {
		const char *what;
		size_t at;
		uint8_t value;
		const char *words;
	} bad[] = {
		{"magic", 0, 'X', "not a replica's checkpoint"},
		{"version", 4, 2, "version 2"},
		{"flags", 6, 3, "unknown flags"},
		{"epoch 0 with an index", 8, 0, "index 90 of epoch 0"},
		{"bounds past any lease", 27, 0xff, "held_ms"},
		{"recent records past the end", 33, 1, "past its end"},
		{"a gap in the recent records", 40 + 24 + 5, 90, "recent record 90 of epoch 4 after 88"},
		{"an epoch going back", 40 + 24 + 5 + 8, 2, "of epoch 2 after 88 of epoch 3"},
		{"an epoch past the log's", 40 + 8, 5, "recent record 88 of epoch 5"},
		{"a local record", 40 + 16, mdnode::kDeviceRecord, "type 10"},
		{"a mark", 40 + 16, mdnode::kLogMark, "type 12"},
		{"a reserved field", 40 + 18, 1, "reserved field not 0"},
		{"a payload past the section", 40 + 20, 200, "overruns its section"},
		{"not ending at the log's last", 16, 91, "not at the log's last (4, 91)"},
	};
	for (const auto &b : bad) {
		std::vector<uint8_t> x = encode_checkpoint_header(c);
		x[b.at] = b.value;
		print_message("%s\n", b.what);
		auto e = decode_checkpoint(x);
		assert_int_equal(e.error(), -EINVAL);
		if (!strstr(e.message().c_str(), b.words))
			fail_msg("%s: %s", b.what, e.message().c_str());
	}
	std::vector<uint8_t> nb = encode_checkpoint_header(empty);
	nb[24] = 1;
	assert_non_null(strstr(decode_checkpoint(nb).message().c_str(), "without their flag"));
	assert_false(decode_checkpoint(std::span(bytes).first(39)).ok());
	assert_false(is_replica_checkpoint(std::vector<uint8_t>{'M', 'D', 'R', 'S', 3, 0}));

	Reader r;
	int loaded = 0;
	assert_true(r.rx.checkpoint(bytes, [&loaded](std::span<const uint8_t> s) {
		loaded += int(s.size());
		return mdr::Status();
	}).ok());
	assert_int_equal(loaded, 3);
	expect_error(r.mark(4, 90, 1, 0), -EINVAL, "cuts records up to 90");
	r.ok(r.mark(5, 91, 1, 90));
	r.ok(r.record());
	RecoveredLog log = r.rx.finish();
	assert_true(log.last == (LogPosition{5, 91}));
	assert_int_equal(log.applied, 90);
	assert_int_equal(log.applied_epoch, 4);
	assert_int_equal(log.held.size(), 1);
	assert_true(log.epoch_bounds == (mdnode::LeaseBounds{5200, 20000}));
	// The recent records, then the one after them.
	assert_int_equal(log.recent.size(), 4);
	assert_true(same(std::deque<HeldRecord>(log.recent.begin(), log.recent.begin() + 3),
			 c.recent));
	assert_int_equal(log.recent.back().index, 91);

	// A load that fails fails the recovery.
	Reader f;
	auto st = f.rx.checkpoint(bytes, [](std::span<const uint8_t>) {
		return mdr::Status(mdr::Error(-EINVAL, "snapshot refused"));
	});
	assert_int_equal(st.error(), -EINVAL);
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mark_bytes),
		cmocka_unit_test(test_recovery_applies_committed),
		cmocka_unit_test(test_checkpoint_header),
		cmocka_unit_test(test_recovery_cuts_tail),
		cmocka_unit_test(test_recovery_after_torn_mark),
		cmocka_unit_test(test_recovery_refusals),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
