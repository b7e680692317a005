// SPDX-License-Identifier: GPL-2.0
//
// test_migrate_copier.cc - the copier of moves on its own, on sparse files
// under /var/tmp: whole extents with its default options, one after another
// on the same ring, also after a job that failed; only the runs of a job,
// cut into chunks, and runs that do not fit refused; nothing written once
// cancelled.
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "mdnode/copier.h"
#include "mdnode/log.h"

#include "tests/test_migrate.h"

#include "tests/common/cmocka_cxx.h"

namespace {

using namespace mdr::test;

// ---------------------------------------------------------------------------
// The copier

// The copier with its default options (a 4 MiB extent in flight at once)
// copies whole extents, one after another on the same ring, also after a
// job that failed; its stamps are in order.
void test_copier_copies_extents_with_its_defaults(void **)
{
	TempDir dir("mdr-migrate");
	const std::string a = dir.path + "/a", b = dir.path + "/b";
	constexpr uint64_t kBig = 4 * MiB;

	Rig::make_file(a, 3 * kBig);
	Rig::make_file(b, 3 * kBig);
	for (uint64_t i = 0; i < 3; i++) {
		std::vector<uint8_t> buf(kBig);
		stamp(buf, 500 + i);
		const int fd = ::open(a.c_str(), O_WRONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(pwrite(fd, buf.data(), buf.size(), off_t(i * kBig)),
				 ssize_t(buf.size()));
		close(fd);
	}

	mdnode::Copier c({{1, a}, {2, b}, {3, dir.path + "/no-such-device"}}, {});
	std::vector<std::pair<int, mdnode::CopyTimes>> got;
	auto done = [&got](int err, const mdnode::CopyTimes &t) { got.emplace_back(err, t); };

	// Extent 0 to the end of b, a failure, then extent 2 to the start.
	c.start({.src_dev = 1, .src_off = 0, .dst_dev = 2, .dst_off = 2 * kBig, .len = kBig},
		done);
	c.start({.src_dev = 1, .src_off = kBig, .dst_dev = 3, .dst_off = 0, .len = kBig}, done);
	c.start({.src_dev = 1, .src_off = 2 * kBig, .dst_dev = 2, .dst_off = 0, .len = kBig},
		done);
	c.wait_all();
	assert_int_equal(got.size(), 3);
	assert_int_equal(got[0].first, 0);
	assert_int_equal(got[1].first, -ENOENT);
	assert_int_equal(got[2].first, 0);
	assert_int_equal(c.bytes_copied(), 2 * kBig);
	for (const auto &[err, t] : got) {
		assert_true(t.queued > 0);
		assert_true(t.queued <= t.started);
		assert_true(t.started <= t.written);
		assert_true(t.written <= t.synced);
	}

	std::vector<uint8_t> want(kBig), have(kBig);
	const int fd = ::open(b.c_str(), O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	for (auto [seed, off] : {std::pair<uint64_t, uint64_t>{500, 2 * kBig}, {502, 0}}) {
		stamp(want, seed);
		assert_int_equal(pread(fd, have.data(), have.size(), off_t(off)),
				 ssize_t(have.size()));
		assert_true(want == have);
	}
	close(fd);
}

// Runs of a job: only those bytes are copied, each cut into chunks (of
// 128 KiB here: a run of 320 KiB is three IOs); no run: nothing but the
// fdatasync. Runs out of order, overlapping, unaligned, empty or beyond
// the job are refused.
void test_copier_copies_only_the_runs(void **)
{
	TempDir dir("mdr-migrate");
	const std::string a = dir.path + "/a", b = dir.path + "/b";
	constexpr uint64_t kLen = MiB;

	Rig::make_file(a, kLen);
	Rig::make_file(b, kLen);
	std::vector<uint8_t> src(kLen), old(kLen), got(kLen);
	stamp(src, 600);
	stamp(old, 601);
	int fd = ::open(a.c_str(), O_WRONLY | O_CLOEXEC);
	assert_int_equal(pwrite(fd, src.data(), kLen, 0), ssize_t(kLen));
	close(fd);
	fd = ::open(b.c_str(), O_WRONLY | O_CLOEXEC);
	assert_int_equal(pwrite(fd, old.data(), kLen, 0), ssize_t(kLen));
	close(fd);

	mdnode::Copier c({{1, a}, {2, b}}, {.chunk = 128 << 10, .depth = 2});
	std::vector<int> errs;
	auto done = [&errs](int err, const mdnode::CopyTimes &) { errs.push_back(err); };
	const std::vector<mdnode::CopyRun> runs{{4096, 4096}, {64 << 10, 320 << 10},
						{kLen - 8192, 8192}};
	const mdnode::CopyJob job{.src_dev = 1, .dst_dev = 2, .len = kLen, .runs = runs};

	assert_int_equal(mdnode::copy_bytes(job), 4096 + (320 << 10) + 8192);
	c.start(job, done);
	c.start({.src_dev = 1, .dst_dev = 2, .len = kLen, .runs = std::vector<mdnode::CopyRun>{},
		 .sync = false}, done);
	const std::vector<std::vector<mdnode::CopyRun>> bad{
		{{8192, 4096}, {4096, 4096}},	// out of order
		{{0, 8192}, {4096, 4096}},	// overlapping
		{{512, 4096}},			// unaligned
		{{0, 0}},			// empty
		{{kLen - 4096, 8192}},		// beyond
	};
	for (const auto &r : bad)
		c.start({.src_dev = 1, .dst_dev = 2, .len = kLen, .runs = r}, done);
	c.wait_all();
	assert_int_equal(errs.size(), 2 + bad.size());
	assert_int_equal(errs[0], 0);
	assert_int_equal(errs[1], 0);
	for (size_t i = 2; i < errs.size(); i++)
		assert_int_equal(errs[i], -EINVAL);
	assert_int_equal(c.bytes_copied(), mdnode::copy_bytes(job));

	fd = ::open(b.c_str(), O_RDONLY | O_CLOEXEC);
	assert_int_equal(pread(fd, got.data(), kLen, 0), ssize_t(kLen));
	close(fd);
	for (uint64_t off = 0; off < kLen; off += 4096) {
		const bool copied = std::any_of(runs.begin(), runs.end(), [&](const auto &r) {
			return off >= r.off && off < r.off + r.len;
		});
		const auto &want = copied ? src : old;
		if (std::memcmp(&got[off], &want[off], 4096))
			fail_msg("block at %llu: not the %s data", (unsigned long long)off,
				 copied ? "copied" : "old");
	}
}

// Cancelled (a leader that stops): no job queued or started later writes
// anything, copy or zeroing; each fails with ECANCELED.
void test_copier_cancelled_writes_nothing(void **)
{
	TempDir dir("mdr-migrate");
	const std::string a = dir.path + "/a", b = dir.path + "/b";
	constexpr uint64_t kLen = 1 * MiB;

	Rig::make_file(a, kLen);
	Rig::make_file(b, kLen);
	std::vector<uint8_t> buf(kLen);
	stamp(buf, 700);
	int fd = ::open(a.c_str(), O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, buf.data(), buf.size(), 0), ssize_t(buf.size()));
	close(fd);

	mdnode::Copier c({{1, a}, {2, b}}, {.chunk = 128 << 10, .depth = 2});
	std::vector<int> got;
	auto done = [&got](int err, const mdnode::CopyTimes &) { got.push_back(err); };

	c.cancel();
	c.start({.src_dev = 1, .dst_dev = 2, .len = kLen}, done);
	c.start({.src_dev = 1, .dst_dev = 1, .len = kLen, .zero = true}, done);
	c.wait_all();
	assert_int_equal(got.size(), 2);
	assert_int_equal(got[0], -ECANCELED);
	assert_int_equal(got[1], -ECANCELED);
	assert_int_equal(c.bytes_copied(), 0);
	assert_int_equal(c.bytes_zeroed(), 0);

	// b still holds zeros, a its data.
	std::vector<uint8_t> have(kLen);
	fd = ::open(b.c_str(), O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, have.data(), have.size(), 0), ssize_t(have.size()));
	close(fd);
	assert_true(std::all_of(have.begin(), have.end(), [](uint8_t x) { return x == 0; }));
	fd = ::open(a.c_str(), O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, have.data(), have.size(), 0), ssize_t(have.size()));
	close(fd);
	assert_true(have == buf);
}

} // namespace

int main()
{
	mdnode::set_log_level(mdnode::LogLevel::error);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copier_copies_extents_with_its_defaults),
		cmocka_unit_test(test_copier_copies_only_the_runs),
		cmocka_unit_test(test_copier_cancelled_writes_nothing),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
