// SPDX-License-Identifier: GPL-2.0
//
// test_mdctl_node.cc - mdctl's storage-node commands (volume, dev, node),
// its config file, attach by name and in batches, detach by name, migrate,
// and the value parsers, against a fake mdnode, module and host.
#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <sys/socket.h>

#include "mdctl/config.h"
#include "mdctl/mdctl.h"
#include "mdctl/parse.h"
#include "tests/common/fake_host.h"
#include "tests/common/fake_module.h"
#include "tests/common/fake_node.h"
#include "tests/common/fake_sys.h"

#include "tests/common/cmocka_cxx.h"

using mdr::test::FakeHost;
using mdr::test::FakeModule;
using mdr::test::FakeNode;
using mdr::test::FakeSys;

namespace {

struct Outcome {
	int status;
	std::string out;
	std::string err;
};

constexpr char kKeyPath[] = "/etc/mdroute/admin.key";
constexpr char kTryHelp[] = "\nTry 'mdctl --help'.\n";

// A storage node at 192.0.2.2 with two devices whose serials two local
// disks show in sysfs (one as serial, one as device/serial), and a third
// device found nowhere here; a module with nothing bound; the admin key at
// its default path; MDCTL_NODE set.
struct World {
	FakeNode node;
	FakeModule module;
	FakeSys sys;
	FakeHost host;

	World()
	{
		sys.on_ioctl = module.handler();
		host.node = &node;
		host.env["MDCTL_NODE"] = "192.0.2.2";
		host.files[kKeyPath] = node.key + "\n";
		host.files[mdctl::kMachineIdPath] = "0123456789abcdef0123456789abcdef\n";
		node.devices = {{1, 4ULL << 40, 1ULL << 40, "mdr-vblk0"},
				{2, 100ULL << 30, 0, "mdr-nvme0"},
				{3, 1ULL << 30, 0, "far-away"}};
		disk("vda", {254, 0}, "serial", "mdr-vblk0\n");
		disk("nvme0n1", {259, 0}, "device/serial", "  mdr-nvme0   \n");
		disk("sda", {8, 0}, "wwid", "naa.5000\n");
		host.files["/sys/block/mdr0/dev"] = "250:0\n";	// ours: never a backing disk
		host.files["/sys/block/mdr0/serial"] = "far-away\n";
		for (uint64_t id = 1; id < 20; id++)
			module.node_volumes[id] = {1ULL << 30, 22, "v" + std::to_string(id)};
	}

	void disk(const std::string &name, mdr::DevNum dev, const std::string &attr,
		  const std::string &serial)
	{
		host.files["/sys/block/" + name + "/dev"] =
			std::to_string(dev.major) + ':' + std::to_string(dev.minor) + '\n';
		host.files["/sys/block/" + name + '/' + attr] = serial;
		host.block_devices["/dev/" + name] = dev;
		module.disks[{dev.major, dev.minor}] = 1ULL << 40;
	}

	// A volume the node and the module both know.
	void volume(const std::string &name, uint64_t size, uint32_t tenant = 0,
		    std::vector<mdr::wire::DevExtents> devs = {})
	{
		node.add_volume(name, size, tenant, std::move(devs));
		module.node_volumes[node.volumes[name].vol.volume_id] = {size, 22, name};
	}

	Outcome run(std::initializer_list<const char *> args)
	{
		std::vector<const char *> argv = {"mdctl"};
		argv.insert(argv.end(), args);
		argv.push_back(nullptr);
		std::ostringstream out, err;

		int status = mdctl::run(static_cast<int>(argv.size() - 1), argv.data(),
					{out, err, sys, host});
		return {status, out.str(), err.str()};
	}
};

void assert_usage(World &w, std::initializer_list<const char *> args, const std::string &message)
{
	Outcome o = w.run(args);

	assert_int_equal(o.status, 2);
	assert_string_equal(o.err.c_str(), ("mdctl: " + message + kTryHelp).c_str());
	assert_true(o.out.empty());
	assert_true(w.node.connections.empty());
	assert_true(w.sys.requests.empty());
}

void assert_usage(std::initializer_list<const char *> args, const std::string &message)
{
	World w;
	assert_usage(w, args, message);
}

void assert_failure(World &w, std::initializer_list<const char *> args, const std::string &err)
{
	Outcome o = w.run(args);

	assert_int_equal(o.status, 1);
	assert_string_equal(o.err.c_str(), err.c_str());
	assert_true(o.out.empty());
}

} // namespace

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

// ---- attach by name --------------------------------------------------------------

// Binds every node device present here by serial, attaches with the
// volume's tenant, prints the device; a device found nowhere gets a note.
static void test_attach_by_name(void **)
{
	World w;
	w.volume("db", 1ULL << 30, 4, {{1, 2}});
	Outcome o = w.run({"attach", "db"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(), "/dev/mdr0\n");
	assert_string_equal(o.err.c_str(),
			    "mdctl: attach: note: device 3 (serial 'far-away') is on no disk of "
			    "this host; IO to extents the node allocates there will fail\n");
	assert_int_equal(w.module.bound.size(), 2);
	assert_int_equal(w.module.bound.at(1).major, 254);
	assert_int_equal(w.module.bound.at(2).major, 259);
	const auto &v = w.module.attached.at(0);
	assert_int_equal(v.volume_id, 1);
	assert_int_equal(v.target.tenant, 4);
	assert_int_equal(v.target.port, 4791);
	assert_int_equal(w.node.connections.size(), 1);

	// A second volume uses the bindings as they are.
	w.volume("logs", 1ULL << 30, 4);
	o = w.run({"attach", "logs", "-o", "json", "-H", "0x7"});
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out.c_str(), "\"device\":\"/dev/mdr1\""));
	assert_non_null(strstr(o.out.c_str(), "\"host_id\":7,\"key_serial\":0,\"bound\":[]"));

	// A device the node has recorded but is not configured with gets
	// nothing allocated: no note.
	w.node.devices[2].state = MDR_DEV_MISSING;
	w.volume("tmp", 1ULL << 30, 4);
	o = w.run({"attach", "tmp"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.err.c_str(), "");
}

static void test_attach_by_name_failures(void **)
{
	World w;
	w.volume("db", 1ULL << 30, 4, {{1, 2}, {3, 1}});
	// extents on a device this host lacks: nothing changes
	assert_failure(w, {"attach", "db"},
		       "mdctl: attach failed: volume 'db': device 3 (serial 'far-away') holds 1 "
		       "of its extents but is on no disk of this host: No such device (ENODEV)\n"
		       "hint: bind it with --bind 3=/dev/X\n");
	assert_true(w.sys.requests.empty());

	// unless --bind says where it is
	Outcome o = w.run({"attach", "db", "-b", "3=/dev/sda"});
	assert_int_equal(o.status, 0);
	assert_true(o.err.empty());
	assert_int_equal(w.module.bound.at(3).major, 8);

	World w2;
	assert_failure(w2, {"attach", "nope"},
		       "mdctl: attach failed: volume 'nope': No such file or directory (ENOENT)\n"
		       "hint: see 'mdctl volume list'\n");
	w2.volume("db", 1ULL << 30, 4);
	assert_failure(w2, {"attach", "db", "-b", "9=/dev/sda"},
		       "mdctl: attach failed: --bind 9=/dev/sda: mdnode at 192.0.2.2:4791 has no "
		       "device 9: No such device (ENODEV)\nhint: see 'mdctl dev list'\n");
	assert_failure(w2, {"attach", "db", "-t", "5"},
		       "mdctl: attach failed: volume 'db' is of tenant 4, not 5: Operation not "
		       "permitted (EPERM)\nhint: leave --tenant out: the volume's own is used\n");
	assert_true(w2.sys.requests.empty());

	// the attach fails: the bindings it made are undone
	w2.module.attach_error = -ECONNREFUSED;
	o = w2.run({"attach", "db"});
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err.c_str(),
			       "mdctl: attach failed: Connection refused (ECONNREFUSED)\n"
			       "hint: is mdnode running on 192.0.2.2:4791?\n"));
	assert_true(w2.module.bound.empty());
	assert_true(w2.module.attached.empty());
}

// No control device: modprobe mdroute, then attach.
static void test_attach_loads_module(void **)
{
	World w;
	w.volume("db", 1ULL << 30);
	w.sys.open_error = -ENOENT;
	w.host.on_run = [&w](const std::vector<std::string> &) -> mdr::Result<int> {
		w.sys.open_error = 0;
		return 0;
	};
	Outcome o = w.run({"attach", "db"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(), "/dev/mdr0\n");
	const std::vector<std::vector<std::string>> modprobe = {{"modprobe", "mdroute"}};
	assert_true(w.host.programs == modprobe);

	// Loaded: no modprobe.
	w.volume("logs", 1ULL << 30);
	assert_int_equal(w.run({"attach", "logs"}).status, 0);
	assert_int_equal(w.host.programs.size(), 1);

	World w2;
	w2.volume("db", 1ULL << 30);
	w2.sys.open_error = -ENOENT;
	w2.host.on_run = [](const std::vector<std::string> &) -> mdr::Result<int> { return 1; };
	o = w2.run({"attach", "db"});
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err.c_str(), "mdctl: attach failed: modprobe mdroute exited "
					      "with 1\nhint: is the mdroute module installed "
					      "(make install)?\n"));

	World w3;	// no modprobe at all
	w3.volume("db", 1ULL << 30);
	w3.sys.open_error = -ENOENT;
	o = w3.run({"attach", "db"});
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err.c_str(), "mdctl: attach failed: modprobe mdroute: No such "
					      "file or directory (ENOENT)\n"));
}

// ---- batches -------------------------------------------------------------------

// The creations go pipelined, then the lookups; the deletes too. A
// creation that fails in the middle undoes those before and after it.
static void test_batches_pipeline(void **)
{
	World w;
	w.volume("old", 1ULL << 30);
	w.module.node_volumes[2] = {1ULL << 30, 22, "a"};
	w.module.node_volumes[3] = {1ULL << 30, 22, "b"};
	w.host.files["/batch"] = "a 1G\nold 1G\nb 1G\n";
	Outcome o = w.run({"attach", "--all-of", "/batch"});
	assert_int_equal(o.status, 0);
	// 3 creations in one pipeline (one EEXIST), then the one lookup
	assert_true((w.node.pipelined == std::vector<size_t>{3, 1}));
	assert_int_equal(w.run({"detach", "--all-of", "/batch"}).status, 0);
	w.node.pipelined.clear();
	o = w.run({"volume", "delete", "--all-of", "/batch"});
	assert_int_equal(o.status, 0);
	assert_true((w.node.pipelined == std::vector<size_t>{3}));
	assert_true(w.node.volumes.empty());

	World f;
	f.host.files["/batch"] = "a 1G\nb 1G\nc 1G\nd 1G\n";
	f.node.create_errors["b"] = -ENOSPC;
	o = f.run({"attach", "--all-of", "/batch"});
	assert_int_equal(o.status, 1);
	assert_string_equal(o.err.c_str(),
			    "mdctl: attach failed: volume 'b': No space left on device (ENOSPC)\n"
			    "hint: the node's devices are full; see 'mdctl dev list'\n");
	assert_true(f.node.volumes.empty());	// a, c and d deleted again
	assert_true((f.node.pipelined == std::vector<size_t>{4, 3}));	// creates, undo
	assert_true(f.sys.requests.empty());
}

static void test_attach_all_of(void **)
{
	World w;
	w.volume("old", 1ULL << 30);
	w.module.node_volumes[2] = {1ULL << 30, 22, "new1"};	// the ids they will get
	w.module.node_volumes[3] = {2ULL << 30, 16, "new2"};
	w.host.files["/batch"] = "# boot storm\nnew1 1G\nold\nnew2 2G 64K   # a comment\n";
	Outcome o = w.run({"attach", "--all-of", "/batch", "-j", "1"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    "NAME  DEVICE     VOLUME_ID   SIZE  CREATED\n"
			    "new1  /dev/mdr0          2  1 GiB  yes\n"
			    "old   /dev/mdr1          1  1 GiB  no\n"
			    "new2  /dev/mdr2          3  2 GiB  yes\n");
	assert_int_equal(w.node.connections.size(), 1);		// one admin connection
	assert_int_equal(w.node.volumes.at("new2").vol.extent_shift, 16);
	assert_int_equal(w.module.attached.size(), 3);
	assert_int_equal(w.module.bound.size(), 2);

	// Run again: everything exists, so nothing is created; attached already fails
	// and undoes nothing it did not do.
	o = w.run({"attach", "-a", "/batch", "-o", "json", "-j1"});
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err.c_str(), "volume 'new1': File exists (EEXIST)"));
	assert_int_equal(w.node.volumes.size(), 3);
	assert_int_equal(w.module.attached.size(), 3);
	assert_int_equal(w.module.bound.size(), 2);

	// detach them all, then JSON
	assert_int_equal(w.run({"detach", "--all-of", "/batch", "--jobs=1"}).status, 0);
	assert_true(w.module.attached.empty());
	o = w.run({"attach", "-a", "/batch", "-o", "json", "-j", "1"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    "{\"volumes\":[{\"name\":\"new1\",\"volume_id\":2,\"device\":\"/dev/mdr0\","
			    "\"index\":0,\"size\":1073741824,\"created\":false},"
			    "{\"name\":\"old\",\"volume_id\":1,\"device\":\"/dev/mdr1\",\"index\":1,"
			    "\"size\":1073741824,\"created\":false},"
			    "{\"name\":\"new2\",\"volume_id\":3,\"device\":\"/dev/mdr2\",\"index\":2,"
			    "\"size\":2147483648,\"created\":false}],\"bound\":[]}\n");
}

// A failure halfway undoes everything: detaches, unbinds, deletes.
static void test_attach_all_of_rolls_back(void **)
{
	World w;
	w.host.files["/batch"] = "a 1G\nb 1G\nc 1G\n";
	w.module.node_volumes.erase(3);		// "c" will be id 3: its attach fails
	Outcome o = w.run({"attach", "-a", "/batch", "-j", "1"});
	assert_int_equal(o.status, 1);
	assert_string_equal(o.err.c_str(),
			    "mdctl: attach: note: device 3 (serial 'far-away') is on no disk of "
			    "this host; IO to extents the node allocates there will fail\n"
			    "mdctl: attach failed: volume 'c': No such file or directory (ENOENT)\n"
			    "hint: does the volume exist on 192.0.2.2:4791?\n");
	assert_true(w.module.attached.empty());
	assert_true(w.module.bound.empty());
	assert_true(w.node.volumes.empty());

	// A size that disagrees with the volume there: nothing is left behind.
	World w2;
	w2.volume("b", 2ULL << 30);
	w2.host.files["/batch"] = "a 1G\nb 1G\n";
	o = w2.run({"attach", "-a", "/batch", "-j", "1"});
	assert_int_equal(o.status, 1);
	assert_string_equal(o.err.c_str(),
			    "mdctl: attach failed: volume 'b' exists with size 2147483648 and "
			    "extent size 4194304, not as /batch says\n");
	assert_int_equal(w2.node.volumes.size(), 1);
	assert_true(w2.sys.requests.empty());
}

// The module serialized: what the kernel's locks do for parallel ioctls.
class LockedSys final : public mdr::Sys {
public:
	explicit LockedSys(mdr::Sys &inner) : inner_(inner) {}
	int open(const char *path, int flags) override
	{
		std::lock_guard lock(m_);
		return inner_.open(path, flags);
	}
	int ioctl(int fd, unsigned long request, void *arg) override
	{
		std::lock_guard lock(m_);
		return inner_.ioctl(fd, request, arg);
	}
	int close(int fd) override
	{
		std::lock_guard lock(m_);
		return inner_.close(fd);
	}

private:
	mdr::Sys &inner_;
	std::mutex m_;
};

Outcome run_locked(World &w, std::initializer_list<const char *> args)
{
	std::vector<const char *> argv = {"mdctl"};
	argv.insert(argv.end(), args);
	argv.push_back(nullptr);
	std::ostringstream out, err;
	LockedSys sys(w.sys);

	int status = mdctl::run(static_cast<int>(argv.size() - 1), argv.data(),
				{out, err, sys, w.host});
	return {status, out.str(), err.str()};
}

// Eight at a time: every volume attached once, printed in the file's
// order; a failure among them still undoes everything.
static void test_batch_jobs(void **)
{
	World w;
	std::string batch;
	for (int i = 0; i < 40; i++) {
		batch += "vol" + std::to_string(i) + " 1G\n";
		w.module.node_volumes[i + 1] = {1ULL << 30, 22, "vol" + std::to_string(i)};
	}
	w.host.files["/batch"] = batch;
	Outcome o = run_locked(w, {"attach", "-a", "/batch", "-j", "8", "-o", "json"});
	assert_int_equal(o.status, 0);
	assert_int_equal(w.module.attached.size(), 40);
	size_t at = 0;
	for (int i = 0; i < 40; i++) {
		at = o.out.find("\"name\":\"vol" + std::to_string(i) + "\"", at);
		assert_true(at != std::string::npos);
	}
	std::set<uint64_t> ids;
	for (const auto &[index, v] : w.module.attached)
		ids.insert(v.volume_id);
	assert_int_equal(ids.size(), 40);
	o = run_locked(w, {"detach", "-a", "/batch", "-j", "8"});
	assert_int_equal(o.status, 0);
	assert_true(w.module.attached.empty());

	World w2;
	w2.host.files["/batch"] = batch;
	w2.module.node_volumes = w.module.node_volumes;
	w2.module.node_volumes.erase(17);
	o = run_locked(w2, {"attach", "-a", "/batch", "-j", "8"});
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err.c_str(), "mdctl: attach failed: volume 'vol16': No such file "
					      "or directory (ENOENT)\n"));
	assert_true(w2.module.attached.empty());
	assert_true(w2.module.bound.empty());
	assert_true(w2.node.volumes.empty());

	for (const char *bad : {"0", "65", "x", "0x4", "-1"}) {
		assert_usage({"attach", "-a", "/batch", "-j", bad},
			     "bad number of jobs '" + std::string(bad) + "': expected 1 to 64");
		assert_usage({"detach", "-a", "/batch", "-j", bad},
			     "bad number of jobs '" + std::string(bad) + "': expected 1 to 64");
	}
	assert_usage({"attach", "db", "-j", "2"}, "--jobs goes with --all-of");
	assert_usage({"detach", "db", "-j", "2"}, "--jobs goes with --all-of");
}

static void test_batch_file_errors(void **)
{
	const std::pair<const char *, const char *> bad[] = {
		{"a 1G 4M x\n", "/b:1: expected NAME [SIZE [EXTENT_SIZE]]"},
		{"\na/b\n", "/b:2: bad volume name 'a/b'"},
		{"a\na\n", "/b:2: volume 'a' named twice"},
		{"a 1000\n", "/b:1: bad size '1000': expected a multiple of 4096 with an "
			     "optional K, M, G or T suffix"},
		{"a 0\n", "/b:1: bad size '0': expected a multiple of 4096 with an "
			  "optional K, M, G or T suffix"},
		{"a 1G 3M\n", "/b:1: bad extent size '3M': expected a power of two from 64K "
			      "to 1G"},
		{"# nothing\n\n", "/b: names no volume"},
	};
	for (const auto &[text, message] : bad) {
		World w;
		w.host.files["/b"] = text;
		assert_usage(w, {"attach", "-a", "/b"}, message);
		assert_usage(w, {"detach", "-a", "/b"}, message);
	}
	World w;
	assert_failure(w, {"attach", "-a", "/none"},
		       "mdctl: attach failed: /none: No such file or directory (ENOENT)\n");
}

// ---- detach by name --------------------------------------------------------------

static void test_detach_by_name(void **)
{
	World w;
	w.module.add_volume(7, 1 << 30, "db");
	w.module.add_volume(8, 1 << 30, "logs");
	assert_int_equal(w.run({"detach", "logs"}).status, 0);
	assert_int_equal(w.module.attached.size(), 1);
	assert_true(w.module.attached.contains(0));

	w.module.add_volume(9, 1 << 30, "db");	// same name from another node
	assert_failure(w, {"detach", "db"},
		       "mdctl: detach failed: volume 'db' is attached from more than one node: "
		       "Invalid argument (EINVAL)\nhint: name it by device: /dev/mdr0 or "
		       "/dev/mdr1\n");

	// --all-of checks every name before detaching any
	w.host.files["/b"] = "logs\n";
	assert_failure(w, {"detach", "-a", "/b"},
		       "mdctl: detach failed: volume 'logs': No such device or address (ENXIO)\n"
		       "hint: it is not attached here; see 'mdctl list'\n");
	assert_int_equal(w.module.attached.size(), 2);
}

static void test_help_of_node_commands(void **)
{
	for (auto args : {std::initializer_list<const char *>{"volume", "create", "-h"},
			  {"volume", "delete", "--help"}, {"volume", "list", "-h"},
			  {"volume", "info", "-h"}, {"volume", "resize", "-h"},
			  {"dev", "list", "-h"}, {"dev", "drain", "-h"}, {"node", "stats", "-h"},
			  {"migrate", "-h"}}) {
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
	for (const char *group : {"volume", "dev", "node"}) {
		World w;
		Outcome o = w.run({group, "--help"});
		assert_int_equal(o.status, 0);
		assert_true(o.out.starts_with("Usage: mdctl " + std::string(group) +
					      " <subcommand>"));
	}
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
		cmocka_unit_test(test_volume_create),
		cmocka_unit_test(test_volume_usage_errors),
		cmocka_unit_test(test_volume_list),
		cmocka_unit_test(test_volume_list_stuck_node),
		cmocka_unit_test(test_volume_info_resize_delete),
		cmocka_unit_test(test_volume_delete_all_of),
		cmocka_unit_test(test_dev_list),
		cmocka_unit_test(test_node_stats),
		cmocka_unit_test(test_migrate_usage),
		cmocka_unit_test(test_migrate_batches),
		cmocka_unit_test(test_migrate_skips),
		cmocka_unit_test(test_migrate_failures),
		cmocka_unit_test(test_dev_drain),
		cmocka_unit_test(test_attach_by_name),
		cmocka_unit_test(test_attach_by_name_failures),
		cmocka_unit_test(test_attach_loads_module),
		cmocka_unit_test(test_attach_all_of),
		cmocka_unit_test(test_batches_pipeline),
		cmocka_unit_test(test_attach_all_of_rolls_back),
		cmocka_unit_test(test_batch_jobs),
		cmocka_unit_test(test_batch_file_errors),
		cmocka_unit_test(test_detach_by_name),
		cmocka_unit_test(test_help_of_node_commands),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
