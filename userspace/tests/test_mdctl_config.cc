// SPDX-License-Identifier: GPL-2.0
//
// test_mdctl_config.cc - mdctl's value parsers, its config file, where it
// finds the storage node (options, environment, config) and what it says
// when it cannot reach or trust it; against a fake mdnode, module and host.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <sys/socket.h>

#include "mdctl/config.h"
#include "mdctl/parse.h"
#include "tests/test_mdctl_node.h"

#include "tests/common/cmocka_cxx.h"

using namespace mdr::test;

// ---- parsers -----------------------------------------------------------------

static void test_parse_size(void **)
{
	const std::pair<const char *, uint64_t> good[] = {
		{"1", 1}, {"4096", 4096}, {"4K", 4096}, {"4k", 4096}, {"4KiB", 4096},
		{"100G", 100ULL << 30}, {"3t", 3ULL << 40}, {"16M", 16ULL << 20},
		{"18446744073709551615", UINT64_MAX}, {"16777215T", 16777215ULL << 40},
	};
	for (const auto &[text, want] : good) {
		std::optional<uint64_t> got = mdctl::parse_size(text);
		assert_true(got.has_value());
		assert_true(*got == want);
	}
	for (const char *bad : {"", "0", "0K", "K", "-1", "+1", "1.5G", "1P", "1KB", "1Ki",
				"1 K", " 1", "1K ", "0x10", "1e3", "18446744073709551616",
				"16777216T", "4KiBB", "4iB"})
		assert_false(mdctl::parse_size(bad).has_value());
}

static void test_parse_extent_range(void **)
{
	auto r = mdctl::parse_extent_range("5");
	assert_true(r && r->first == 5 && r->last == 5);
	r = mdctl::parse_extent_range("0-18446744073709551615");
	assert_true(r && r->first == 0 && r->last == UINT64_MAX);
	r = mdctl::parse_extent_range("0x10-0x11");
	assert_true(r && r->first == 16 && r->last == 17);
	for (const char *bad : {"", "-", "-5", "5-", "6-5", "a", "1-2-3", "1 - 2", "1--2",
				"18446744073709551616"})
		assert_false(mdctl::parse_extent_range(bad).has_value());
}

static void test_extent_shift_of(void **)
{
	assert_int_equal(*mdctl::extent_shift_of(64 << 10), 16);
	assert_int_equal(*mdctl::extent_shift_of(4 << 20), 22);
	assert_int_equal(*mdctl::extent_shift_of(1 << 30), 30);
	for (uint64_t bad : {uint64_t{0}, uint64_t{32} << 10, uint64_t{3} << 20, uint64_t{2} << 30,
			     uint64_t{1} << 63})
		assert_false(mdctl::extent_shift_of(bad).has_value());
}

static void test_config(void **)
{
	auto c = mdctl::parse_config("/c", "# comment\n\n  node = [2001:db8::2]:4800 \n"
					   "admin-key=/k\ntenant = 0x7\nhost-id = 0x9\n"
					   "timeout-ms = 250\r\n");
	assert_true(c.ok());
	assert_string_equal(c.value().node->c_str(), "[2001:db8::2]:4800");
	assert_string_equal(c.value().admin_key->c_str(), "/k");
	assert_int_equal(*c.value().tenant, 7);
	assert_int_equal(*c.value().host_id, 9);
	assert_int_equal(*c.value().timeout_ms, 250);
	assert_true(mdctl::parse_config("/c", "").ok());

	// A replica group: commas, blanks or both between the replicas.
	c = mdctl::parse_config("/c", "group = 7\nreplicas = 192.0.2.3,192.0.2.4:4800 "
				      "[2001:db8::5]:4791 , 2001:db8::6\n");
	assert_true(c.ok());
	assert_int_equal(*c.value().group, 7);
	const std::vector<mdr::Endpoint> &r = *c.value().replicas;
	assert_int_equal(r.size(), 4);
	assert_int_equal(r[0].family, AF_INET);
	assert_int_equal(r[0].port, 0);
	assert_int_equal(r[0].addr[3], 3);
	assert_int_equal(r[1].port, 4800);
	assert_int_equal(r[2].family, AF_INET6);
	assert_int_equal(r[2].port, 4791);
	assert_int_equal(r[3].addr[15], 6);
	assert_int_equal(r[3].port, 0);
	assert_true(mdctl::parse_config("/c", "group = 7\n").ok());	// by name, the node says where

	const std::pair<const char *, const char *> bad[] = {
		{"nodes = 192.0.2.2", "/c:1: unknown setting 'nodes'"},
		{"\n\nnode", "/c:3: want 'key = value'"},
		{"node = 192.0.2.2\nnode = 192.0.2.3", "/c:2: 'node' given twice"},
		{"node = storage", "/c:1: bad node address 'storage': expected IPv4[:PORT], "
				   "IPv6 or [IPv6]:PORT"},
		{"node =", "/c:1: bad node address '': expected IPv4[:PORT], IPv6 or "
			   "[IPv6]:PORT"},
		{"admin-key = key", "/c:1: admin-key 'key': the path must be absolute"},
		{"tenant = -1", "/c:1: bad tenant '-1'"},
		{"host-id = 0", "/c:1: bad host id '0': expected 16 hex digits as 'mdctl host "
				"id' prints them, or 0x and hex digits; not 0"},
		{"host-id = 66", "/c:1: bad host id '66': expected 16 hex digits as 'mdctl "
				 "host id' prints them, or 0x and hex digits; not 0"},
		{"timeout-ms = 600001", "/c:1: timeout-ms '600001': want 1..600000"},
		{"= 5", "/c:1: unknown setting ''"},
		{"group = 0", "/c:1: bad group '0': expected a non-zero number"},
		{"group = 1\ngroup = 2", "/c:2: 'group' given twice"},
		{"group = 1\nreplicas = 192.0.2.3\nreplicas = 192.0.2.4",
		 "/c:3: 'replicas' given twice"},
		{"group = 1\nreplicas = , ", "/c:2: replicas: no address"},
		{"group = 1\nreplicas = 192.0.2.3 storage",
		 "/c:2: bad replica address 'storage': expected IPv4[:PORT], IPv6 or [IPv6]:PORT"},
		{"group = 1\nreplicas = 192.0.2.3:4791 192.0.2.3",
		 "/c:2: replica '192.0.2.3' given twice"},
		{"group = 1\nreplicas = 192.0.2.1 192.0.2.2 192.0.2.3 192.0.2.4 192.0.2.5 "
		 "192.0.2.6 192.0.2.7 192.0.2.8 192.0.2.9", "/c:2: more than 8 replicas"},
		{"replicas = 192.0.2.3", "/c: 'replicas' without 'group'"},
	};
	for (const auto &[text, message] : bad) {
		auto r = mdctl::parse_config("/c", text);
		assert_false(r.ok());
		assert_int_equal(r.error(), -EINVAL);
		assert_string_equal(r.message().c_str(), message);
	}
}

// ---- where the node is -------------------------------------------------------

static void test_node_precedence(void **)
{
	World w;
	w.host.env.erase("MDCTL_NODE");
	w.host.files[mdctl::kConfigPath] = "node = 198.51.100.1:4000\nadmin-key = /k2\n";
	w.host.files["/k2"] = w.node.key;

	assert_int_equal(w.run({"volume", "list"}).status, 0);
	assert_string_equal(w.node.connections.back().addr.c_str(), "198.51.100.1");
	assert_int_equal(w.node.connections.back().port, 4000);

	w.host.env["MDCTL_NODE"] = "[2001:db8::5]";
	assert_int_equal(w.run({"volume", "list"}).status, 0);
	assert_string_equal(w.node.connections.back().addr.c_str(), "2001:db8::5");
	assert_int_equal(w.node.connections.back().port, 4791);

	assert_int_equal(w.run({"volume", "list", "-n", "192.0.2.9:1"}).status, 0);
	assert_string_equal(w.node.connections.back().addr.c_str(), "192.0.2.9");
	assert_int_equal(w.node.connections.back().port, 1);

	// --key-file wins over the config's key
	w.host.files["/k2"] = "wrong key, 16+ bytes";
	w.host.files["/k3"] = w.node.key;
	assert_int_equal(w.run({"volume", "list", "-k", "/k3"}).status, 0);
	assert_int_equal(w.node.connections.size(), 4);
}

static void test_config_errors(void **)
{
	World w;
	w.host.files[mdctl::kConfigPath] = "node = 192.0.2.2\ncolour = blue\n";
	assert_failure(w, {"volume", "list"},
		       "mdctl: volume list failed: /etc/mdroute/mdctl.conf:2: unknown setting "
		       "'colour'\n");
	assert_true(w.node.connections.empty());

	World w2;
	w2.host.env["MDCTL_CONFIG"] = "/tmp/none.conf";
	assert_failure(w2, {"dev", "list"},
		       "mdctl: dev list failed: config file /tmp/none.conf: No such file or "
		       "directory (ENOENT)\nhint: $MDCTL_CONFIG names it\n");

	World w3;
	w3.host.env["MDCTL_CONFIG"] = "/t.conf";
	w3.host.files["/t.conf"] = "node = 192.0.2.7\n";
	w3.host.env.erase("MDCTL_NODE");
	assert_int_equal(w3.run({"node", "stats"}).status, 0);
	assert_string_equal(w3.node.connections.back().addr.c_str(), "192.0.2.7");

	World w4;
	w4.host.env.erase("MDCTL_NODE");
	assert_usage(w4, {"volume", "list"},
		     "no storage node: use --node ADDR[:PORT], set MDCTL_NODE or 'node =' in "
		     "/etc/mdroute/mdctl.conf");
	w4.host.env["MDCTL_NODE"] = "192.0.2.2:0";
	assert_usage(w4, {"volume", "list"},
		     "bad node address '192.0.2.2:0': expected IPv4[:PORT], IPv6 or [IPv6]:PORT");
}

static void test_connection_errors(void **)
{
	World w;
	w.host.node = nullptr;
	assert_failure(w, {"volume", "list"},
		       "mdctl: volume list failed: mdnode at 192.0.2.2:4791: Connection refused "
		       "(ECONNREFUSED)\nhint: is mdnode running on 192.0.2.2:4791?\n");

	World w2;
	w2.node.connect_error = -ETIMEDOUT;
	assert_failure(w2, {"volume", "list", "-n", "[2001:db8::2]:4800"},
		       "mdctl: volume list failed: mdnode at [2001:db8::2]:4800: Connection timed "
		       "out (ETIMEDOUT)\nhint: is mdnode running on [2001:db8::2]:4800?\n");

	World w3;
	w3.host.files[kKeyPath] = "another key of 16 bytes";
	assert_failure(w3, {"volume", "list"},
		       "mdctl: volume list failed: mdnode at 192.0.2.2:4791: authentication: "
		       "MDR_ST_PERM: Operation not permitted (EPERM)\n"
		       "hint: is the admin key (--key-file, or admin-key in mdctl.conf) the one "
		       "mdnode's admin-key names?\n");

	World w4;
	w4.host.files.erase(kKeyPath);
	assert_failure(w4, {"volume", "list"},
		       "mdctl: volume list failed: admin key /etc/mdroute/admin.key: No such file "
		       "or directory (ENOENT)\nhint: pass --key-file FILE, or set admin-key in "
		       "/etc/mdroute/mdctl.conf\n");
	assert_true(w4.node.connections.empty());

	World w5;
	w5.host.files["/short"] = "0123456789abcde\n\n";
	assert_failure(w5, {"volume", "list", "--key-file=/short"},
		       "mdctl: volume list failed: admin key /short is shorter than 16 bytes\n");
	assert_usage(w5, {"volume", "list", "--key-file="}, "--key-file needs a path");

	// A request the node refuses: the status's errno, no status name.
	World w6;
	w6.node.errors[MDR_OP_VOL_LIST] = -EIO;
	assert_failure(w6, {"volume", "list"},
		       "mdctl: volume list failed: Input/output error (EIO)\n");
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_parse_extent_range),
		cmocka_unit_test(test_extent_shift_of),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_node_precedence),
		cmocka_unit_test(test_config_errors),
		cmocka_unit_test(test_connection_errors),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
