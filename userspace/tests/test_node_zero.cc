// SPDX-License-Identifier: GPL-2.0
//
// test_node_zero.cc - an extent reads zeros once allocated: ALLOC zeroes
// its place on the copier's thread before the journal makes it the
// extent's, space one tenant freed shows none of its data to another, a
// zeroing that fails answers EIO and leaves the extent free; and the
// copier's zeroing jobs on their own. On sparse files (test_migrate.h)
// whose every block is stamped first, so that a place not zeroed shows.
#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "mdnode/copier.h"
#include "mdnode/log.h"

#include "tests/test_migrate.h"

#include "tests/common/cmocka_cxx.h"

namespace {

using namespace mdr::test;
namespace wire = mdr::wire;

// Every block of the file stamped (not zero), as a disk that held data.
void fill(const std::string &path, uint64_t size, uint64_t seed)
{
	std::vector<uint8_t> buf(MiB);
	const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	for (uint64_t at = 0; at < size; at += buf.size()) {
		stamp(buf, seed + at);
		assert_int_equal(pwrite(fd, buf.data(), buf.size(), off_t(at)),
				 ssize_t(buf.size()));
	}
	close(fd);
}

// Whether [off, off + len) of the file reads zeros.
bool zeros_at(const std::string &path, uint64_t off, uint64_t len)
{
	std::vector<uint8_t> got(len);
	const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, got.data(), len, off_t(off)), ssize_t(len));
	close(fd);
	for (uint8_t b : got)
		if (b)
			return false;
	return true;
}

bool place_zeroed(Rig &r, const wire::Entry &at)
{
	return zeros_at(r.dev_path.at(at.dev_id), at.pstart << 9, kExtent);
}

// A rig that zeroes, on devices full of old data.
struct ZeroRig : Rig {
	ZeroRig() : Rig(false, kIoHoldMs, true)
	{
		fill(dev_path[1], kDev1Size, 1);
		fill(dev_path[2], kDev2Size, 2);
		past_grace();
	}
};

// ALLOC is answered, and the table maps the extent, only once its place
// reads zeros; what lies beside the place keeps its data. A second ALLOC
// of the extent while it is zeroed waits for the same answer.
void test_alloc_zeroes_its_place_before_it_is_answered(void **)
{
	ZeroRig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * kExtent);
	const ConnId h = r.host(0x1111);

	r.open(h, vol);
	r.send(h, 5, wire::AllocReq{.volume_id = vol, .index = 1});
	r.send(h, 6, wire::AllocReq{.volume_id = vol, .index = 1});
	r.flush();
	assert_true(r.quiet(h));
	assert_int_not_equal(r.store->volume(vol)->table.entries()[1].state, MDR_EXT_MAPPED);

	r.node->wait_copies();
	r.flush();
	auto out = r.take(h);
	assert_int_equal(out.size(), 2);
	const auto *a = std::get_if<wire::AllocRep>(&out[0].body);
	const auto *b = std::get_if<wire::AllocRep>(&out[1].body);
	assert_non_null(a);
	assert_non_null(b);
	assert_true(a->entry == b->entry);
	assert_true(r.entry(vol, 1) == a->entry);
	assert_true(place_zeroed(r, a->entry));
	const uint64_t end = (a->entry.pstart << 9) + kExtent;
	const uint64_t size = a->entry.dev_id == 1 ? kDev1Size : kDev2Size;
	if (end < size)
		assert_false(zeros_at(r.dev_path.at(a->entry.dev_id), end, 4096));
	assert_false(zeros_at(r.dev_path.at(a->entry.dev_id), (a->entry.pstart << 9) - 4096,
			      4096));
	assert_int_equal(r.node->stats().extents_zeroed, 1);
	assert_int_equal(r.node->stats().zero_failures, 0);
	assert_int_equal(r.store->counts().in_flight, 0);
}

// A tenant writes an extent and deletes its volume; another tenant then
// takes every extent the devices have, that place among them: each reads
// zeros.
void test_space_one_tenant_freed_reads_zeros_in_another(void **)
{
	ZeroRig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "old", 2 * kExtent);
	const ConnId h = r.host(0x1111);

	r.open(h, vol);
	const wire::Entry old = r.alloc(h, vol, 0);
	r.write_extent(old, 42);
	r.send(h, 6, wire::CloseReq{.volume_id = vol});
	assert_int_equal(status_of(r.one(h)), MDR_ST_OK);
	assert_int_equal(r.call(adm, 7, wire::VolDeleteReq{.name = "old"}), MDR_ST_OK);

	// Device 1 has room for 31 extents after its label, device 2 for 3.
	constexpr uint64_t kAll = 34;
	const uint64_t other = r.NodeRig::create(adm, {.size = kAll * kExtent, .extent_shift = kShift,
						     .tenant = 8, .name = "new"});
	const ConnId g = r.establish(r.peer(MDR_ROLE_HOST, 8, 0x2222));
	r.open(g, other);
	bool reused = false;
	for (uint64_t i = 0; i < kAll; i++) {
		const wire::Entry at = r.alloc(g, other, i);
		reused |= at.dev_id == old.dev_id && at.pstart == old.pstart;
		if (!place_zeroed(r, at))
			fail_msg("extent %llu (device %u, sector %llu) shows old data",
				 (unsigned long long)i, at.dev_id, (unsigned long long)at.pstart);
	}
	assert_true(reused);
	// Mapped already: answered at once, not zeroed again.
	r.send(g, 99, wire::AllocReq{.volume_id = other, .index = kAll - 1});
	assert_int_equal(status_of(r.one(g)), MDR_ST_OK);
	assert_int_equal(r.node->stats().extents_zeroed, kAll + 1);
}

// A place that cannot be zeroed is not handed out: ALLOC answers EIO, the
// extent stays unallocated with nothing in flight, and asked again it
// fails again rather than hang.
void test_a_failed_zeroing_answers_eio_and_keeps_the_extent_free(void **)
{
	ZeroRig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * kExtent);
	const ConnId h = r.host(0x1111);

	// The devices' files go away: the copier opens them at first use.
	unlink(r.dev_path[1].c_str());
	unlink(r.dev_path[2].c_str());
	r.open(h, vol);
	for (uint64_t id = 5; id < 7; id++) {
		r.send(h, id, wire::AllocReq{.volume_id = vol, .index = 0});
		r.node->wait_copies();
		r.flush();
		const wire::Msg m = r.one(h);
		assert_int_equal(m.hdr.req_id, id);
		assert_int_equal(status_of(m), MDR_ST_IO);
		assert_int_not_equal(r.store->volume(vol)->table.entries()[0].state,
				     MDR_EXT_MAPPED);
		assert_int_equal(r.store->counts().in_flight, 0);
		assert_int_equal(r.store->counts().extents, 0);
	}
	assert_int_equal(r.node->stats().zero_failures, 2);
	assert_int_equal(r.node->stats().extents_zeroed, 0);
}

// The copier's zeroing job alone: only its range reads zeros, through
// files that cannot zero a range themselves too (written zeros), and a
// range that is not 4 KiB aligned is refused.
void test_copier_zeroes_only_its_range(void **)
{
	TempDir dir("mdr-zero");
	const std::string a = dir.path + "/a";

	Rig::make_file(a, 8 * MiB);
	fill(a, 8 * MiB, 9);
	mdnode::Copier c({{1, a}}, {});
	std::vector<int> got;
	auto done = [&got](int err, const mdnode::CopyTimes &) { got.push_back(err); };

	c.start({.dst_dev = 1, .dst_off = MiB, .len = 2 * MiB, .zero = true}, done);
	c.start({.dst_dev = 1, .dst_off = 100, .len = MiB, .zero = true}, done);
	c.wait_all();
	assert_int_equal(got.size(), 2);
	assert_int_equal(got[0], 0);
	assert_int_equal(got[1], -EINVAL);
	assert_true(zeros_at(a, MiB, 2 * MiB));
	assert_false(zeros_at(a, MiB - 4096, 4096));
	assert_false(zeros_at(a, 3 * MiB, 4096));
	assert_int_equal(c.bytes_zeroed(), 2 * MiB);
	assert_int_equal(c.bytes_copied(), 0);
}

} // namespace

int main()
{
	mdnode::set_log_level(mdnode::LogLevel::error);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_zeroes_its_place_before_it_is_answered),
		cmocka_unit_test(test_space_one_tenant_freed_reads_zeros_in_another),
		cmocka_unit_test(test_a_failed_zeroing_answers_eio_and_keeps_the_extent_free),
		cmocka_unit_test(test_copier_zeroes_only_its_range),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
