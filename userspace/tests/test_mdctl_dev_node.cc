// SPDX-License-Identifier: GPL-2.0
//
// test_mdctl_dev_node.cc - mdctl dev list and node stats against a fake
// mdnode, and the help text of the storage-node commands.
#include <cstring>
#include <string>

#include "tests/test_mdctl_node.h"

#include "tests/common/cmocka_cxx.h"

using namespace mdr::test;

// ---- dev, node -----------------------------------------------------------------

static void test_dev_list(void **)
{
	World w;
	w.node.devices[0].identity = "mdr-vblk0";
	w.node.devices[1].identity = "nvme.1b36-6d64722d6e766d6530";
	w.node.devices[2] = {3, 1ULL << 30, 0, "", "far-away", MDR_DEV_MISSING};
	Outcome o = w.run({"dev", "list"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    "DEV_ID  SERIAL     IDENTITY                      STATE       SIZE   USED  USE%\n"
			    "     1  mdr-vblk0  mdr-vblk0                     online     4 TiB  1 TiB   25%\n"
			    "     2  mdr-nvme0  nvme.1b36-6d64722d6e766d6530  online   100 GiB    0 B    0%\n"
			    "     3  -          far-away                      missing    1 GiB    0 B    0%\n");
	o = w.run({"dev", "list", "-o", "json"});
	assert_string_equal(o.out.c_str(),
			    "{\"devices\":[{\"dev_id\":1,\"serial\":\"mdr-vblk0\",\"identity\":\"mdr-vblk0\","
			    "\"state\":\"online\",\"size\":4398046511104,\"used\":1099511627776},"
			    "{\"dev_id\":2,\"serial\":\"mdr-nvme0\",\"identity\":"
			    "\"nvme.1b36-6d64722d6e766d6530\",\"state\":\"online\",\"size\":107374182400,"
			    "\"used\":0},{\"dev_id\":3,\"serial\":\"\",\"identity\":\"far-away\","
			    "\"state\":\"missing\",\"size\":1073741824,\"used\":0}]}\n");
	// A node of version 3 sends neither (and no missing device).
	w.node.accept.version = 3;
	w.node.devices.pop_back();
	o = w.run({"dev", "list"});
	assert_string_equal(o.out.c_str(),
			    "DEV_ID  SERIAL     IDENTITY  STATE     SIZE   USED  USE%\n"
			    "     1  mdr-vblk0  -         -        4 TiB  1 TiB   25%\n"
			    "     2  mdr-nvme0  -         -      100 GiB    0 B    0%\n");
	o = w.run({"dev", "list", "-o", "json"});
	assert_string_equal(o.out.c_str(),
			    "{\"devices\":[{\"dev_id\":1,\"serial\":\"mdr-vblk0\","
			    "\"size\":4398046511104,\"used\":1099511627776},"
			    "{\"dev_id\":2,\"serial\":\"mdr-nvme0\",\"size\":107374182400,\"used\":0}]}\n");
	assert_usage({"dev"}, "dev needs a subcommand: list, drain");
}

static void test_node_stats(void **)
{
	World w;
	w.node.stats.moves_active = 1;
	w.node.stats.moves_done = 2;
	w.node.stats.moves_failed = 3;
	w.node.stats.move_bytes = UINT64_MAX - 1;
	w.node.stats.stall_max_us = 5;
	w.node.stats.stall_total_us = 6;
	w.node.stats.auth_failures = 14;
	w.node.stats.hosts = 15;
	w.node.stats.conn_refused = 16;
	w.node.stats.fences = 17;
	Outcome o = w.run({"node", "stats", "-o", "json"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    "{\"node\":\"192.0.2.2:4791\",\"boot_id\":45063,\"uptime_ms\":1,"
			    "\"connections\":2,\"volumes\":0,\"requests\":3,\"errors\":4,"
			    "\"bad_messages\":5,\"journal_records\":6,"
			    "\"journal_bytes\":18446744073709551615,\"journal_syncs\":8,"
			    "\"invalidations\":9,\"lease_expiries\":10,\"moves_active\":1,"
			    "\"moves_done\":2,\"moves_failed\":3,"
			    "\"move_bytes\":18446744073709551614,\"move_stall_max_us\":5,"
			    "\"move_stall_total_us\":6,\"push_timeouts\":11,"
			    "\"precopy_bytes\":12,\"freeze_bytes\":13,\"auth_failures\":14,"
			    "\"hosts\":15,\"conn_refused\":16,\"fences\":17}\n");
	o = w.run({"node", "stats"});
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out.c_str(), "boot_id                0x000000000000b007\n"));
	assert_non_null(strstr(o.out.c_str(), "journal_bytes        18446744073709551615\n"));
	assert_non_null(strstr(o.out.c_str(), "moves_done                              2\n"));
	assert_non_null(strstr(o.out.c_str(), "move_stall_total_us                     6\n"));
	assert_non_null(strstr(o.out.c_str(), "push_timeouts                          11\n"));
	assert_non_null(strstr(o.out.c_str(), "precopy_bytes                          12\n"));
	assert_non_null(strstr(o.out.c_str(), "freeze_bytes                           13\n"));
	assert_non_null(strstr(o.out.c_str(), "auth_failures                          14\n"));
	assert_non_null(strstr(o.out.c_str(), "hosts                                  15\n"));
	assert_non_null(strstr(o.out.c_str(), "conn_refused                           16\n"));
	assert_non_null(strstr(o.out.c_str(), "fences                                 17\n"));
}

static void test_help_of_node_commands(void **)
{
	for (auto args : {std::initializer_list<const char *>{"volume", "create", "-h"},
			  {"volume", "delete", "--help"}, {"volume", "list", "-h"},
			  {"volume", "info", "-h"}, {"volume", "resize", "-h"},
			  {"dev", "list", "-h"}, {"dev", "drain", "-h"}, {"node", "stats", "-h"},
			  {"node", "replicas", "-h"}, {"replica", "add", "-h"},
			  {"replica", "remove", "--help"}, {"migrate", "-h"}}) {
		World w;
		Outcome o = w.run(args);
		std::string want = "Usage: mdctl";
		for (const char *a : args)
			if (a[0] != '-')
				want += ' ' + std::string(a);
		assert_int_equal(o.status, 0);
		assert_true(o.out.starts_with(want));
		assert_true(o.err.empty());
		assert_true(w.node.connections.empty());
	}
	for (const char *group : {"volume", "dev", "node", "replica"}) {
		World w;
		Outcome o = w.run({group, "--help"});
		assert_int_equal(o.status, 0);
		assert_true(o.out.starts_with("Usage: mdctl " + std::string(group) +
					      " <subcommand>"));
	}
}

// node replicas: the group as the replica named sees it, each replica's
// membership among it; a node of its own.
static void test_node_replicas(void **)
{
	World w;
	Outcome o = w.run({"node", "replicas"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(), "192.0.2.2:4791: a node of its own, no replica group\n");

	w.node.group_status = {
		.group = 7, .epoch = 5, .last_index = 90, .commit_index = 88, .self = 1, .leader = 1,
		.role = MDR_REPLICA_LEADER,
		.replicas = {{.durable = 90, .id = 1, .state = MDR_PEER_SELF, .port = 4800,
			      .family = MDR_FAMILY_IPV4, .addr = {192, 0, 2, 11}},
			     {.durable = 88, .id = 2, .state = MDR_PEER_STREAMING, .port = 4800,
			      .family = MDR_FAMILY_IPV4, .addr = {192, 0, 2, 12}},
			     {.id = 3, .state = MDR_PEER_NEEDS_CHECKPOINT, .port = 4800,
			      .family = MDR_FAMILY_IPV6, .membership = MDR_MEMBER_LEARNER,
			      .addr = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3}}}};
	o = w.run({"node", "replicas"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    "group 7, replica 1 (leader), leader 1 in epoch 5, log at 90, "
			    "committed 88\n"
			    "ID  ADDRESS          MEMBER   STATE             DURABLE  LEADER\n"
			    " 1  192.0.2.11:4800  voter    self                   90  *\n"
			    " 2  192.0.2.12:4800  voter    streaming              88\n"
			    " 3  [fd00::3]:4800   learner  needs-checkpoint        -\n");
	o = w.run({"node", "replicas", "-o", "json"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    "{\"node\":\"192.0.2.2:4791\",\"group\":7,\"self\":1,\"role\":\"leader\","
			    "\"leader\":1,\"epoch\":5,\"last_index\":90,\"commit_index\":88,"
			    "\"replicas\":[{\"id\":1,\"address\":\"192.0.2.11:4800\",\"membership\":"
			    "\"voter\",\"state\":\"self\",\"durable\":90,\"leader\":true},{\"id\":2,"
			    "\"address\":\"192.0.2.12:4800\",\"membership\":\"voter\",\"state\":"
			    "\"streaming\",\"durable\":88,\"leader\":false},{\"id\":3,\"address\":"
			    "\"[fd00::3]:4800\",\"membership\":\"learner\",\"state\":"
			    "\"needs-checkpoint\",\"durable\":0,\"leader\":false}]}\n");
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dev_list),
		cmocka_unit_test(test_node_stats),
		cmocka_unit_test(test_node_replicas),
		cmocka_unit_test(test_help_of_node_commands),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
