// SPDX-License-Identifier: GPL-2.0
//
// test_node_journal.cc - mdnode and its journal, through the Net seam with a
// fake transport: a journal that fails answers every change with EIO and
// stops changes (fail-stop); a creation is answered only once durable, with
// a table whose every entry verifies; pipelined requests share one journal
// write (group commit).
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>

#include "lib/wire/wire.h"
#include "mdnode/log.h"
#include "mdnode/node.h"
#include "mdnode/store.h"

#include "tests/test_node.h"

#include "tests/common/cmocka_cxx.h"

namespace fs = std::filesystem;
namespace wire = mdr::wire;
using mdnode::ConnId;

namespace {

using namespace mdr::test;

// ---------------------------------------------------------------------------
// Journal failure

// A journal that cannot write fails every change with IO, joined requests
// included, pushes nothing and leaves the state as it was; later changes
// are refused the same way (fail-stop), while what needs no change goes on.
void test_journal_failure_answers_eio(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId a = r.host(1, 0xa);
	const ConnId b = r.host(1, 0xb);

	r.open(a, vol);
	assert_int_equal(r.call(a, 1, wire::AllocReq{.volume_id = vol, .index = 0}), MDR_ST_OK);
	r.open(b, vol);
	const uint64_t segment_size = [&] {
		uint64_t size = 0;
		for (const auto &f : fs::directory_iterator(r.dir))
			if (f.path().extension() == ".log")
				size = std::max<uint64_t>(size, f.file_size());
		return size;
	}();
	assert_true(segment_size > 0);
	const auto *t = static_cast<const std::byte *>(r.store->volume(vol)->table.data());
	const Bytes before_table(t, t + r.store->volume(vol)->table.bytes());

	// The kernel's own failure of the write: EFBIG past RLIMIT_FSIZE.
	struct rlimit saved;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
	const struct rlimit limit = {segment_size, saved.rlim_max};
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &limit), 0);
	r.send(a, 2, wire::AllocReq{.volume_id = vol, .index = 1});
	r.send(a, 3, wire::AllocReq{.volume_id = vol, .index = 1});	// joins
	const mdr::Status st = r.journal->flush();
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &saved), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_false(st.ok());

	auto replies = r.take(a);
	assert_int_equal(replies.size(), 2);
	for (const wire::Msg &m : replies) {
		assert_int_equal(status_of(m), MDR_ST_IO);
		assert_int_equal(std::get<wire::ErrorRep>(m.body).opcode, MDR_OP_ALLOC);
	}
	assert_true(r.quiet(b));
	assert_int_equal(r.store->counts().in_flight, 0);
	assert_int_equal(r.store->volume(vol)->allocated, 1);

	// Fail-stop: every later change gets IO too.
	r.send(a, 4, wire::AllocReq{.volume_id = vol, .index = 2});
	r.send(adm, 5, wire::VolCreateReq{.size = MiB, .extent_shift = kShift, .tenant = 1,
					  .name = "late"});
	(void)r.journal->flush();
	assert_int_equal(status_of(r.one(a)), MDR_ST_IO);
	assert_int_equal(status_of(r.one(adm)), MDR_ST_IO);
	assert_null(r.store->volume("late"));
	assert_true(r.quiet(b));
	// (An aborted create uses up its volume id, so compare all but that.)
	assert_int_equal(r.store->counts().volumes, 1);
	assert_int_equal(r.store->counts().extents, 1);
	assert_int_equal(r.store->counts().in_flight, 0);
	const auto entries = r.store->volume(vol)->table.entries();
	assert_memory_equal(entries.data(), before_table.data(), before_table.size());

	// Reads and leases go on: the extent mapped before is answered.
	r.send(a, 6, wire::AllocReq{.volume_id = vol, .index = 0});
	expect_alloc(r, r.one(a), 6, vol, 0);
	r.send(a, 7, wire::RenewReq{});
	assert_true(std::holds_alternative<wire::RenewRep>(r.one(a).body));
}

// ---------------------------------------------------------------------------
// Durability and group commit

// Requests that arrive together (an admin client's pipeline) are journaled
// in one write, one sync for all (group commit); none is answered before
// that write is durable; a name taken by a creation in flight is refused.
// A creation is answered only once its record is durable, and not seen
// before: no reply, no VOL_INFO, no OPEN. Then every entry of the table a
// host is told to READ verifies for its place, and the reply counts no
// extents on any device.
void test_create_is_answered_once_durable_with_a_valid_table(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const ConnId h = r.host(1, 0x1);
	const uint64_t size = 4096 * (uint64_t{1} << kShift) + 4096;	// 4097 extents
	const uint64_t records = r.journal->stats().records;
	const uint64_t syncs = r.journal->stats().syncs;

	r.send(adm, 10, wire::VolCreateReq{.size = size, .extent_shift = kShift, .tenant = 1,
					   .name = "fresh"});
	assert_true(r.quiet(adm));
	assert_int_equal(r.journal->stats().syncs, syncs);
	r.send(adm, 11, wire::VolInfoReq{.name = "fresh"});
	assert_int_equal(status_of(r.one(adm)), MDR_ST_NOENT);
	r.send(h, 12, wire::OpenReq{.flags = MDR_OPEN_F_BY_NAME, .name = "fresh"});
	assert_int_equal(status_of(r.one(h)), MDR_ST_NOENT);

	r.flush();
	assert_int_equal(r.journal->stats().records, records + 1);
	assert_true(r.journal->stats().syncs > syncs);
	wire::Msg m = r.one(adm);
	assert_int_equal(m.hdr.req_id, 10);
	auto *rep = std::get_if<wire::VolCreateRep>(&m.body);
	assert_non_null(rep);
	assert_int_equal(rep->vol.size, size);
	assert_int_equal(rep->vol.allocated, 0);
	assert_true(rep->devs.empty());

	const uint64_t vol = rep->vol.volume_id;
	const wire::OpenRep o = r.open(h, vol);
	const auto *entries = reinterpret_cast<const mdr_wire_entry *>(uintptr_t(o.table_addr));

	assert_int_equal(o.table_len, 4097 * sizeof(mdr_wire_entry));
	for (uint64_t i = 0; i < 4097; i++) {
		assert_int_equal(wire::verify_entry(entries[i], vol, i), wire::EntryCheck::ok);
		const wire::Entry e = wire::decode_entry(entries[i]);
		assert_int_equal(e.state, MDR_EXT_UNALLOCATED);
		assert_int_equal(e.generation, 1);
	}
}

void test_pipelined_creates_and_deletes_share_one_journal_write(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	auto stats = [&] {
		r.send(adm, 900, wire::NodeStatsReq{});
		wire::Msg m = r.one(adm);
		assert_true(std::holds_alternative<wire::NodeStatsRep>(m.body));
		return std::get<wire::NodeStatsRep>(m.body);
	};
	// Delivers the journal's writes as the event loop does, until @n
	// replies came; returns them by req_id.
	auto run_loop = [&](size_t n) {
		std::map<uint64_t, wire::Msg> got;
		while (got.size() < n) {
			struct pollfd p = {r.journal->event_fd(), POLLIN, 0};
			assert_int_equal(poll(&p, 1, 10000), 1);
			r.journal->process_completions();
			for (wire::Msg &m : r.take(adm))
				got.emplace(m.hdr.req_id, std::move(m));
		}
		return got;
	};
	const int kCount = 32;

	const wire::NodeStatsRep before = stats();
	for (int i = 0; i < kCount; i++)
		r.send(adm, 100 + i, wire::VolCreateReq{.size = MiB, .extent_shift = kShift,
							.tenant = 1,
							.name = "v" + std::to_string(i)});
	r.send(adm, 200, wire::VolCreateReq{.size = MiB, .extent_shift = kShift, .tenant = 1,
					    .name = "v7"});
	// Nothing durable yet: only the refusal of the name taken in flight.
	wire::Msg refused = r.one(adm);
	assert_int_equal(refused.hdr.req_id, 200);
	assert_int_equal(status_of(refused), MDR_ST_EXIST);
	std::map<uint64_t, wire::Msg> got = run_loop(kCount);
	std::set<uint64_t> ids;
	for (int i = 0; i < kCount; i++) {
		auto *rep = std::get_if<wire::VolCreateRep>(&got.at(100 + i).body);
		assert_non_null(rep);
		assert_string_equal(rep->vol.name.c_str(), ("v" + std::to_string(i)).c_str());
		ids.insert(rep->vol.volume_id);
	}
	assert_int_equal(ids.size(), kCount);
	const wire::NodeStatsRep created = stats();
	assert_int_equal(created.journal_records - before.journal_records, kCount);
	assert_int_equal(created.journal_syncs - before.journal_syncs, 1);

	// The same for deletes, with one of a name that is not there.
	for (int i = 0; i < kCount; i++)
		r.send(adm, 300 + i, wire::VolDeleteReq{.name = "v" + std::to_string(i)});
	r.send(adm, 400, wire::VolDeleteReq{.name = "nope"});
	refused = r.one(adm);
	assert_int_equal(refused.hdr.req_id, 400);
	assert_int_equal(status_of(refused), MDR_ST_NOENT);
	got = run_loop(kCount);
	for (int i = 0; i < kCount; i++)
		assert_int_equal(status_of(got.at(300 + i)), MDR_ST_OK);
	const wire::NodeStatsRep deleted = stats();
	assert_int_equal(deleted.journal_records - created.journal_records, kCount);
	assert_int_equal(deleted.journal_syncs - created.journal_syncs, 1);
	assert_int_equal(deleted.volumes, 0);
}

} // namespace

int main()
{
	mdnode::set_log_level(mdnode::LogLevel::error);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_journal_failure_answers_eio),
		cmocka_unit_test(test_pipelined_creates_and_deletes_share_one_journal_write),
		cmocka_unit_test(test_create_is_answered_once_durable_with_a_valid_table),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
