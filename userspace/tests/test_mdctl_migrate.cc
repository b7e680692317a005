// SPDX-License-Identifier: GPL-2.0
//
// test_mdctl_migrate.cc - mdctl migrate (its usage, batches of MOVE, the
// extents it skips, its failures) and dev drain, against a fake mdnode.
#include <cstdint>
#include <cstring>
#include <string>

#include "tests/test_mdctl_node.h"

#include "tests/common/cmocka_cxx.h"

using namespace mdr::test;

// ---- migrate -------------------------------------------------------------------

// A volume "db" of 1 GiB in 4 MiB extents (256), extents 0..n-1 on device 1.
void migrate_world(World &w, uint64_t n)
{
	w.volume("db", 1ULL << 30);
	for (uint64_t i = 0; i < n; i++)
		w.node.volumes.at("db").placement[i] = 1;
}

static void test_migrate_usage(void **)
{
	assert_usage({"migrate", "-x", "1", "-d", "2"}, "migrate needs a volume NAME");
	assert_usage({"migrate", "db", "-d", "2"}, "migrate needs --extent N[-M]");
	assert_usage({"migrate", "db", "-x", "2"}, "migrate needs --to-dev ID");
	assert_usage({"migrate", "db", "x", "-x", "2", "-d", "2"}, "unexpected argument 'x'");
	for (const char *bad : {"9-3", "-1", "x", "1-", "1-x", "0x", "18446744073709551616",
				"0-18446744073709551616", "18446744073709551615",
				"0-18446744073709551615"})
		assert_usage({"migrate", "db", "-x", bad, "-d", "2"},
			     "bad extent range '" + std::string(bad) +
			     "': expected N or N-M with M >= N");
	for (const char *bad : {"0", "4294967296", "x", "-1"})
		assert_usage({"migrate", "db", "-x", "1", "-d", bad},
			     "bad device id '" + std::string(bad) + "'");
	for (const char *bad : {"0", "86401", "x", "1.5"})
		assert_usage({"migrate", "db", "-x", "1", "-d", "2", "--timeout", bad},
			     "bad timeout '" + std::string(bad) +
			     "': expected 1 to 86400 seconds");
	assert_usage({"migrate", "db", "-x", "1", "-d", "2", "-o", "yaml"},
		     "unknown output format 'yaml'");
}

// 200 extents go as 64 + 64 + 64 + 8, each MOVE with the long timeout.
static void test_migrate_batches(void **)
{
	World w;
	migrate_world(w, 200);
	Outcome o = w.run({"migrate", "db", "--extent", "0-199", "--to-dev", "2"});
	assert_int_equal(o.status, 0);
	assert_true(o.err.empty());
	assert_int_equal(w.node.moves.size(), 4);
	const uint32_t counts[] = {64, 64, 64, 8};
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(w.node.moves[i].first, 64 * i);
		assert_int_equal(w.node.moves[i].count, counts[i]);
		assert_int_equal(w.node.moves[i].to_dev, 2);
		assert_int_equal(w.node.moves[i].volume_id, w.node.volumes.at("db").vol.volume_id);
	}
	// VOL_INFO with the session's timeout, every MOVE with 600 s
	assert_int_equal(w.node.timeouts.size(), 5);
	assert_int_equal(w.node.timeouts[0], 0);
	for (size_t i = 1; i < 5; i++)
		assert_int_equal(w.node.timeouts[i], 600000);
	for (const auto &[index, dev] : w.node.volumes.at("db").placement)
		assert_int_equal(dev, 2);
	assert_true(o.out.starts_with("EXTENT  RESULT  FROM  TO  BYTES  STALL_MS\n"
				      "     0  moved      1   2  4 MiB     1.000\n"
				      "     1  moved      1   2  4 MiB     1.001\n"));
	assert_true(o.out.ends_with("   199  moved      1   2  4 MiB     1.199\n"
				    "moved 200 extents (800 MiB) of volume 'db' to device 2, "
				    "skipped 0; stall max 1.199 ms, total 219.900 ms\n"));

	// back, one extent, JSON, a timeout of its own
	o = w.run({"migrate", "db", "-x", "7", "-d", "1", "-o", "json", "--timeout", "30"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    "{\"volume\":\"db\",\"volume_id\":1,\"to_dev\":1,\"moved\":1,"
			    "\"skipped\":0,\"bytes\":4194304,\"stall_max_us\":1007,"
			    "\"stall_total_us\":1007,\"extents\":[{\"index\":7,\"result\":\"moved\","
			    "\"old_dev\":2,\"old_pstart\":57344,\"new_dev\":1,\"new_pstart\":8249344,"
			    "\"generation\":4,\"bytes\":4194304,\"stall_us\":1007}]}\n");
	assert_int_equal(w.node.timeouts.back(), 30000);
	assert_int_equal(w.node.volumes.at("db").placement[7], 1);
}

// A batch refused as invalid is retried extent by extent: the unallocated
// extent and the one on the target already are skipped.
static void test_migrate_skips(void **)
{
	World w;
	migrate_world(w, 4);
	FakeNode::Vol &v = w.node.volumes.at("db");
	v.placement.erase(1);
	v.placement[2] = 2;
	Outcome o = w.run({"migrate", "db", "-x", "0-3", "-d", "2"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    "EXTENT  RESULT   FROM  TO  BYTES  STALL_MS\n"
			    "     0  moved       1   2  4 MiB     1.000\n"
			    "     1  skipped     -   -      -         -\n"
			    "     2  skipped     -   -      -         -\n"
			    "     3  moved       1   2  4 MiB     1.003\n"
			    "moved 2 extents (8 MiB) of volume 'db' to device 2, skipped 2; "
			    "stall max 1.003 ms, total 2.003 ms\n");
	assert_int_equal(w.node.moves.size(), 5);	// the batch, then one by one
	o = w.run({"migrate", "db", "-x", "0-3", "-d", "2", "-o", "json"});
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out.c_str(), "\"moved\":0,\"skipped\":4,\"bytes\":0,"));
}

static void test_migrate_failures(void **)
{
	World w;
	migrate_world(w, 100);
	w.node.move_busy_at = 70;
	Outcome o = w.run({"migrate", "db", "-x", "0-99", "-d", "2"});
	assert_int_equal(o.status, 1);
	assert_string_equal(o.err.c_str(),
			    "mdctl: migrate failed: extents 64-99 of volume 'db': Device or "
			    "resource busy (EBUSY)\nhint: another move or an allocation holds "
			    "an extent; try again\n");
	// what moved before the failure is told
	assert_true(o.out.ends_with("moved 64 extents (256 MiB) of volume 'db' to device 2, "
				    "skipped 0; stall max 1.063 ms, total 66.016 ms\n"));
	assert_int_equal(w.node.volumes.at("db").placement[63], 2);
	assert_int_equal(w.node.volumes.at("db").placement[64], 1);
	o = w.run({"migrate", "db", "-x", "64-99", "-d", "2", "-o", "json"});
	assert_int_equal(o.status, 1);
	assert_string_equal(o.out.c_str(),
			    "{\"volume\":\"db\",\"volume_id\":1,\"to_dev\":2,\"moved\":0,"
			    "\"skipped\":0,\"bytes\":0,\"stall_max_us\":0,\"stall_total_us\":0,"
			    "\"error\":\"EBUSY\",\"extents\":[]}\n");

	w.node.move_busy_at.reset();
	assert_failure(w, {"migrate", "db", "-x", "250-256", "-d", "2"},
		       "mdctl: migrate failed: volume 'db' has extents 0-255, not 250-256\n");
	assert_failure(w, {"migrate", "db", "-x", "0", "-d", "9"},
		       "mdctl: migrate failed: extents 0-0 of volume 'db': No such file or "
		       "directory (ENOENT)\nhint: see 'mdctl volume list' and 'mdctl dev list'\n");
	assert_failure(w, {"migrate", "nope", "-x", "0", "-d", "2"},
		       "mdctl: migrate failed: volume 'nope': No such file or directory "
		       "(ENOENT)\nhint: see 'mdctl volume list'\n");
	w.node.errors[MDR_OP_MOVE] = -ETIMEDOUT;
	Outcome t = w.run({"migrate", "db", "-x", "90", "-d", "2"});
	assert_int_equal(t.status, 1);
	assert_non_null(strstr(t.err.c_str(), "(ETIMEDOUT)\nhint: the node may still be moving; "
					      "raise --timeout, and see 'mdctl node stats'\n"));
	w.node.errors[MDR_OP_MOVE] = -ENOSPC;
	t = w.run({"migrate", "db", "-x", "90", "-d", "2"});
	assert_non_null(strstr(t.err.c_str(), "(ENOSPC)\nhint: device 2 has too few free "
					      "extents; see 'mdctl dev list'\n"));
}

static void test_dev_drain(void **)
{
	World w;
	migrate_world(w, 5);
	Outcome o = w.run({"dev", "drain", "1"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    "drained device 1: moved 5 extents (20 MiB), 0 remaining; stall max "
			    "1.004 ms, total 5.010 ms\n");
	assert_int_equal(w.node.timeouts.back(), 600000);
	for (const auto &[index, dev] : w.node.volumes.at("db").placement)
		assert_int_equal(dev, 2);

	// one left behind: a failure, counts on stdout
	w.node.move_busy_at = 3;
	o = w.run({"dev", "drain", "2", "--to-dev", "3", "-o", "json", "--timeout", "60"});
	assert_int_equal(o.status, 1);
	assert_string_equal(o.out.c_str(),
			    "{\"dev_id\":2,\"to_dev\":3,\"moved\":4,\"remaining\":1,"
			    "\"bytes\":16777216,\"stall_max_us\":1004,\"stall_total_us\":4007,"
			    "\"status\":\"MDR_ST_OK\"}\n");
	assert_string_equal(o.err.c_str(),
			    "mdctl: dev drain failed: device 2: 1 extent remain: Device or "
			    "resource busy (EBUSY)\nhint: other requests were moving them; run "
			    "it again\n");
	assert_int_equal(w.node.timeouts.back(), 60000);

	assert_failure(w, {"dev", "drain", "7"},
		       "mdctl: dev drain failed: device 7: No such file or directory (ENOENT)\n"
		       "hint: see 'mdctl volume list' and 'mdctl dev list'\n");
	assert_usage({"dev", "drain"}, "dev drain needs a device ID");
	assert_usage({"dev", "drain", "0"}, "bad device id '0'");
	assert_usage({"dev", "drain", "1", "-d", "1"},
		     "bad device id '1': expected another device");
	assert_usage({"dev", "drain", "1", "--timeout", "0"},
		     "bad timeout '0': expected 1 to 86400 seconds");
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_migrate_usage),
		cmocka_unit_test(test_migrate_batches),
		cmocka_unit_test(test_migrate_skips),
		cmocka_unit_test(test_migrate_failures),
		cmocka_unit_test(test_dev_drain),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
