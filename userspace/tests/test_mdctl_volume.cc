// SPDX-License-Identifier: GPL-2.0
//
// test_mdctl_volume.cc - mdctl volume: create, list (a page at a time, and
// a node that stops answering), info, resize, delete and delete --all-of;
// against a fake mdnode, module and host.
#include <cstdint>
#include <cstring>
#include <string>

#include "mdctl/config.h"
#include "mdctl/follow.h"
#include "tests/test_mdctl_node.h"

#include "tests/common/cmocka_cxx.h"

using namespace mdr::test;

// ---- volume ------------------------------------------------------------------

static void test_volume_create(void **)
{
	World w;
	Outcome o = w.run({"volume", "create", "db", "--size", "100G"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    "NAME  VOLUME_ID     SIZE  EXTENT  TENANT  ALLOCATED  OPEN\n"
			    "db            1  100 GiB   4 MiB       0        0 B     0\n");
	assert_true(o.err.empty());
	assert_int_equal(w.node.volumes.at("db").vol.size, 100ULL << 30);

	o = w.run({"volume", "create", "-s", "16T", "-e", "1G", "-t", "3", "big", "-o", "json"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    "{\"volume_id\":2,\"name\":\"big\",\"size\":17592186044416,"
			    "\"extent_size\":1073741824,\"tenant\":3,\"allocated_extents\":0,"
			    "\"allocated_bytes\":0,\"open_count\":0,\"devices\":[]}\n");
	assert_int_equal(w.node.volumes.at("big").vol.extent_shift, 30);

	// The config's tenant is the default.
	w.host.files[mdctl::kConfigPath] = "tenant = 5\n";
	assert_int_equal(w.run({"volume", "create", "t5", "-s", "1M"}).status, 0);
	assert_int_equal(w.node.volumes.at("t5").vol.tenant, 5);

	assert_failure(w, {"volume", "create", "db", "-s", "1G"},
		       "mdctl: volume create failed: volume 'db': File exists (EEXIST)\n"
		       "hint: the name is taken; see 'mdctl volume list'\n");
	w.node.errors[MDR_OP_VOL_CREATE] = -ENOSPC;
	assert_failure(w, {"volume", "create", "x", "-s", "1G"},
		       "mdctl: volume create failed: volume 'x': No space left on device "
		       "(ENOSPC)\nhint: the node's devices are full; see 'mdctl dev list'\n");
}

// A replica that does not lead: the change goes where it says the leader
// is (its key proved there too); reads stay at the replica named.
static void test_volume_follows_the_leader(void **)
{
	World w;
	const mdr::wire::Leader at{.epoch = 9, .replica = 2, .port = 4792,
				   .family = MDR_FAMILY_IPV4, .addr = {192, 0, 2, 12}};
	w.node.followers["192.0.2.2"] = at;

	Outcome o = w.run({"volume", "create", "db", "--size", "1G"});
	assert_int_equal(o.status, 0);
	assert_true(o.err.empty());
	assert_true(w.node.volumes.contains("db"));
	assert_int_equal(w.node.connections.size(), 2);
	assert_string_equal(w.node.connections[1].addr.c_str(), "192.0.2.12");
	assert_int_equal(w.node.connections[1].port, 4792);
	assert_int_equal(w.node.not_leader.size(), 1);

	w.node.connections.clear();
	assert_int_equal(w.run({"volume", "info", "db"}).status, 0);
	assert_int_equal(w.node.connections.size(), 1);

	// Two replicas that name each other: given up after a few.
	w.node.followers["192.0.2.12"] = {.epoch = 9, .replica = 1, .port = 4791,
					  .family = MDR_FAMILY_IPV4, .addr = {192, 0, 2, 2}};
	o = w.run({"volume", "delete", "db"});
	assert_int_equal(o.status, 1);
	assert_true(o.err.find("MDR_ST_NOT_LEADER: replica 1 leads at 192.0.2.2:4791 (epoch 9); "
			       "followed 3 leaders already") != std::string::npos);
	assert_true(w.node.volumes.contains("db"));

	// None known (an election): asked again within the timeout, then given up.
	w.node.followers["192.0.2.2"] = mdr::wire::Leader{};
	w.node.not_leader.clear();
	o = w.run({"volume", "delete", "db"});
	assert_int_equal(o.status, 1);
	assert_true(o.err.find("no replica is known to lead; no leader within the timeout") !=
		    std::string::npos);
	assert_int_equal(w.host.slept_ms.size(), 5000 / mdctl::kNoLeaderRetryMs);
	assert_int_equal(w.node.not_leader.size(), w.host.slept_ms.size() + 1);
	// And the election over.
	w.node.followers.erase("192.0.2.2");
	assert_int_equal(w.run({"volume", "delete", "db"}).status, 0);
	assert_false(w.node.volumes.contains("db"));
}

static void test_volume_usage_errors(void **)
{
	assert_usage({"volume"}, "volume needs a subcommand: create, delete, list, info, resize");
	assert_usage({"volume", "destroy"},
		     "unknown volume subcommand 'destroy': expected create, delete, list, info, "
		     "resize");
	assert_usage({"volume", "create", "-s", "1G"}, "volume create needs a NAME");
	assert_usage({"volume", "create", "db"}, "volume create needs --size SIZE");
	assert_usage({"volume", "create", "a", "b", "-s", "1G"}, "unexpected argument 'b'");
	const std::string long_name(64, 'x');
	for (const char *bad : {"a b", "a/b", "é", "", long_name.c_str()})
		assert_usage({"volume", "create", "-s", "1G", "--", bad},
			     "bad volume name '" + std::string(bad) +
			     "': use 1 to 63 of A-Z a-z 0-9 . _ -");
	for (const char *bad : {"0", "1.5G", "-1G", "1P", "G", "0x1000", "18446744073709551616"})
		assert_usage({"volume", "create", "db", "-s", bad},
			     "bad size '" + std::string(bad) +
			     "': expected a number with an optional K, M, G or T suffix, not 0");
	for (const char *bad : {"1", "4095", "6K"})
		assert_usage({"volume", "create", "db", "-s", bad},
			     "bad size '" + std::string(bad) + "': not a multiple of 4096 bytes");
	for (const char *bad : {"32K", "2G", "3M", "0", "x"})
		assert_usage({"volume", "create", "db", "-s", "1G", "-e", bad},
			     "bad extent size '" + std::string(bad) +
			     "': expected a power of two from 64K to 1G");
	assert_usage({"volume", "create", "db", "-s", "1G", "-t", "4294967296"},
		     "bad tenant '4294967296'");
	assert_usage({"volume", "create", "db", "-s", "1G", "-o", "xml"},
		     "unknown output format 'xml'");
	assert_usage({"volume", "resize", "db"}, "volume resize needs --size SIZE");
	assert_usage({"volume", "resize", "-s", "1G"}, "volume resize needs a NAME");
	assert_usage({"volume", "resize", "db", "-s", "1000"},
		     "bad size '1000': not a multiple of 4096 bytes");
	assert_usage({"volume", "info"}, "volume info needs a NAME");
	assert_usage({"volume", "delete"}, "volume delete needs a NAME");
	assert_usage({"volume", "list", "x"}, "unexpected argument 'x'");
	assert_usage({"volume", "list", "--size", "1G"}, "unknown option '--size'");
}

static void test_volume_list(void **)
{
	World w;
	for (uint32_t i = 0; i < 5; i++)	// three pages of two
		w.volume("v" + std::to_string(i), (uint64_t{i} + 1) << 30, i, {{1, i * 3ULL}});
	w.node.volumes.at("v4").vol.size = UINT64_MAX & ~4095ULL;
	Outcome o = w.run({"volume", "list"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    "NAME  VOLUME_ID      SIZE  EXTENT  TENANT  ALLOCATED  OPEN\n"
			    "v0            1     1 GiB   4 MiB       0        0 B     0\n"
			    "v1            2     2 GiB   4 MiB       1     12 MiB     0\n"
			    "v2            3     3 GiB   4 MiB       2     24 MiB     0\n"
			    "v3            4     4 GiB   4 MiB       3     36 MiB     0\n"
			    "v4            5  16.0 EiB   4 MiB       4     48 MiB     0\n");
	assert_int_equal(w.node.requests.size(), 3);

	o = w.run({"volume", "list", "-o", "json"});
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out.c_str(), "{\"volumes\":[{\"volume_id\":1,\"name\":\"v0\""));
	assert_non_null(strstr(o.out.c_str(), "\"size\":18446744073709547520,"));

	World empty;
	o = empty.run({"volume", "list", "-o", "json"});
	assert_string_equal(o.out.c_str(), "{\"volumes\":[]}\n");
}

// A node whose list does not advance is an error, not a loop.
static void test_volume_list_stuck_node(void **)
{
	World w;
	for (int i = 0; i < 3; i++)
		w.volume("v" + std::to_string(i), 1 << 30);
	w.node.page = 0;	// empty pages that point on
	w.node.volumes.at("v0").vol.volume_id = 1;
	Outcome o = w.run({"volume", "list"});
	assert_int_equal(o.status, 1);
	assert_string_equal(o.err.c_str(), "mdctl: volume list failed: mdnode's list does not "
					   "advance: Protocol error (EPROTO)\n");
}

static void test_volume_info_resize_delete(void **)
{
	World w;
	w.volume("db", 1ULL << 30, 2, {{1, 10}, {2, 6}});
	Outcome o = w.run({"volume", "info", "db"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    "NAME  VOLUME_ID   SIZE  EXTENT  TENANT  ALLOCATED  OPEN\n"
			    "db            1  1 GiB   4 MiB       2     64 MiB     0\n"
			    "\n"
			    "DEV_ID  EXTENTS  ALLOCATED\n"
			    "     1       10     40 MiB\n"
			    "     2        6     24 MiB\n");
	o = w.run({"volume", "info", "db", "-o", "json"});
	assert_string_equal(o.out.c_str(),
			    "{\"volume_id\":1,\"name\":\"db\",\"size\":1073741824,"
			    "\"extent_size\":4194304,\"tenant\":2,\"allocated_extents\":16,"
			    "\"allocated_bytes\":67108864,\"open_count\":0,\"devices\":["
			    "{\"dev_id\":1,\"extents\":10,\"bytes\":41943040},"
			    "{\"dev_id\":2,\"extents\":6,\"bytes\":25165824}]}\n");

	o = w.run({"volume", "resize", "db", "--size=2G", "-ojson"});
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out.c_str(), "\"size\":2147483648,"));
	assert_int_equal(w.node.volumes.at("db").vol.size, 2ULL << 30);

	w.node.volumes.at("db").vol.open_count = 1;
	assert_failure(w, {"volume", "delete", "db"},
		       "mdctl: volume delete failed: volume 'db': Device or resource busy "
		       "(EBUSY)\nhint: a host has the volume attached; detach it there first\n");
	w.node.volumes.at("db").vol.open_count = 0;
	o = w.run({"volume", "delete", "db"});
	assert_int_equal(o.status, 0);
	assert_true(o.out.empty() && o.err.empty());
	assert_true(w.node.volumes.empty());
	assert_failure(w, {"volume", "info", "db"},
		       "mdctl: volume info failed: volume 'db': No such file or directory "
		       "(ENOENT)\nhint: see 'mdctl volume list'\n");
}

static void test_volume_delete_all_of(void **)
{
	World w;
	w.volume("a", 1 << 30);
	w.volume("c", 1 << 30);
	w.host.files["/batch"] = "a 1G\n# b is gone already\nb\n  c  \n";
	Outcome o = w.run({"volume", "delete", "--all-of", "/batch"});
	assert_int_equal(o.status, 0);
	assert_true(w.node.volumes.empty());
	assert_int_equal(w.node.connections.size(), 1);
	World w2;
	assert_usage(w2, {"volume", "delete", "-a", "/batch", "x"}, "unexpected argument 'x'");
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_volume_create),
		cmocka_unit_test(test_volume_follows_the_leader),
		cmocka_unit_test(test_volume_usage_errors),
		cmocka_unit_test(test_volume_list),
		cmocka_unit_test(test_volume_list_stuck_node),
		cmocka_unit_test(test_volume_info_resize_delete),
		cmocka_unit_test(test_volume_delete_all_of),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
