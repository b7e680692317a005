// SPDX-License-Identifier: GPL-2.0
//
// test_mdctl_host.cc - the host commands of mdctl (bind, unbind, devices,
// attach, detach, list, stats) against a fake module and a fake host.
#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <string>

#include <sys/socket.h>

#include "mdctl/parse.h"
#include "mdctl/host.h"
#include "tests/test_mdctl.h"

#include "tests/common/cmocka_cxx.h"

using namespace mdr::test;

namespace {

// A host with two NVMe namespaces and a machine id, a module with nothing
// bound or attached, and a storage node that knows volume 42.
struct World : MdctlWorld {
	World()
	{
		host.block_devices["/dev/nvme0n1"] = {259, 0};
		host.block_devices["/dev/nvme1n1"] = {259, 1};
		host.files["/dev/null"] = "";
		host.files["/sys/dev/block/259:0/uevent"] =
			"MAJOR=259\nMINOR=0\nDEVNAME=nvme0n1\nDEVTYPE=disk\n";
		module.disks[{259, 0}] = 100ULL << 30;
		module.disks[{259, 1}] = 3ULL << 39;
		module.node_volumes[42] = {1536ULL << 20, 22, "db"};
	}
};

void assert_usage(std::initializer_list<std::string> args, const std::string &message)
{
	World w;
	assert_usage(w, args, message);
}

} // namespace

// ---- bind, unbind, devices ---------------------------------------------------

static void test_bind(void **)
{
	World w;
	Outcome o = w.run({"bind", "7=/dev/nvme0n1"});

	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    "device 7 bound to /dev/nvme0n1: 100 GiB, 512-byte logical blocks\n");
	assert_true(o.err.empty());
	assert_int_equal(w.module.bound.at(7).minor, 0);

	o = w.run({"bind", "--output=json", "0x8=/dev/nvme1n1"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    "{\"dev_id\":8,\"path\":\"/dev/nvme1n1\",\"major\":259,\"minor\":1,"
			    "\"size\":1649267441664,\"logical_block_size\":512}\n");
}

static void test_bind_usage_errors(void **)
{
	const std::string expected = "': expected ID=/dev/X with ID a non-zero number";

	assert_usage({"bind"}, "bind needs ID=/dev/X");
	assert_usage({"bind", "7=/dev/a", "8=/dev/b"}, "unexpected argument '8=/dev/b'");
	for (const char *bad : {"7", "=/dev/nvme0n1", "0=/dev/nvme0n1", "x=/dev/nvme0n1",
				"-1=/dev/nvme0n1", "4294967296=/dev/nvme0n1", "7=nvme0n1",
				"7=", "7 =/dev/nvme0n1"})
		assert_usage({"bind", "--", bad}, "bad binding '" + std::string(bad) + expected);
	assert_usage({"bind", "-o", "yaml", "7=/dev/nvme0n1"}, "unknown output format 'yaml'");
}

static void test_bind_failures(void **)
{
	World w;

	assert_failure(w, {"bind", "7=/dev/nvme9n1"},
		       "mdctl: bind failed: /dev/nvme9n1: No such file or directory (ENOENT)\n");
	assert_failure(w, {"bind", "7=/dev/null"},
		       "mdctl: bind failed: /dev/null: Block device required (ENOTBLK)\n");
	assert_true(w.sys.requests.empty());	// nothing asked of the module

	assert_int_equal(w.run({"bind", "7=/dev/nvme0n1"}).status, 0);
	assert_failure(w, {"bind", "7=/dev/nvme1n1"},
		       "mdctl: bind failed: File exists (EEXIST)\n"
		       "hint: the id is bound already; see 'mdctl devices'\n");
	assert_failure(w, {"bind", "8=/dev/nvme0n1"},
		       "mdctl: bind failed: Device or resource busy (EBUSY)\n"
		       "hint: the block device is bound under another id or in use\n");

	w.sys.open_error = -ENOENT;
	assert_failure(w, {"bind", "9=/dev/nvme1n1"},
		       "mdctl: bind failed: /dev/mdroute-control: No such file or directory "
		       "(ENOENT)\nhint: is the mdroute module loaded? try 'modprobe mdroute'\n");
	w.sys.open_error = -EACCES;
	assert_failure(w, {"bind", "9=/dev/nvme1n1"},
		       "mdctl: bind failed: /dev/mdroute-control: Permission denied (EACCES)\n"
		       "hint: run as root\n");
}

static void test_unbind(void **)
{
	World w;
	assert_int_equal(w.run({"bind", "7=/dev/nvme0n1"}).status, 0);

	w.module.bound[7].users = 1;
	assert_failure(w, {"unbind", "7"},
		       "mdctl: unbind failed: device 7: Device or resource busy (EBUSY)\n"
		       "hint: an attached volume uses it; detach the volume first\n");
	w.module.bound[7].users = 0;

	Outcome o = w.run({"unbind", "7"});
	assert_int_equal(o.status, 0);
	assert_true(o.out.empty() && o.err.empty());
	assert_true(w.module.bound.empty());

	assert_failure(w, {"unbind", "7"},
		       "mdctl: unbind failed: device 7: No such file or directory (ENOENT)\n"
		       "hint: the id is not bound; see 'mdctl devices'\n");

	assert_usage({"unbind"}, "unbind needs a device id");
	assert_usage({"unbind", "0"}, "bad device id '0'");
	assert_usage({"unbind", "seven"}, "bad device id 'seven'");
	assert_usage({"unbind", "7", "8"}, "unexpected argument '8'");
}

static void test_devices(void **)
{
	World w;
	assert_int_equal(w.run({"bind", "7=/dev/nvme0n1"}).status, 0);
	assert_int_equal(w.run({"bind", "12=/dev/nvme1n1"}).status, 0);
	w.module.bound[12].users = 3;
	w.module.bound[12].errors = 18446744073709551615ULL;

	// nvme1n1 has no uevent here: its path is not known
	Outcome o = w.run({"devices"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    "ID  DEVICE        MAJ:MIN     SIZE  USERS                ERRORS\n"
			    " 7  /dev/nvme0n1  259:0    100 GiB      0                     0\n"
			    "12  -             259:1    1.5 TiB      3  18446744073709551615\n");

	o = w.run({"devices", "-o", "json"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    "{\"devices\":["
			    "{\"dev_id\":7,\"major\":259,\"minor\":0,\"path\":\"/dev/nvme0n1\","
			    "\"size\":107374182400,\"users\":0,\"errors\":0},"
			    "{\"dev_id\":12,\"major\":259,\"minor\":1,\"path\":null,"
			    "\"size\":1649267441664,\"users\":3,\"errors\":18446744073709551615}"
			    "]}\n");

	FakeModule none;
	w.sys.on_ioctl = none.handler();
	o = w.run({"devices", "-ojson"});
	assert_string_equal(o.out.c_str(), "{\"devices\":[]}\n");
	o = w.run({"devices"});
	assert_string_equal(o.out.c_str(), "ID  DEVICE  MAJ:MIN  SIZE  USERS  ERRORS\n");
}

// ---- attach ------------------------------------------------------------------

static void test_attach(void **)
{
	World w;
	Outcome o = w.run({"attach", "--volume-id", "42", "--node", "192.0.2.2"});

	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(), "/dev/mdr0\n");
	assert_true(o.err.empty());

	const auto &v = w.module.attached.at(0);
	assert_int_equal(v.volume_id, 42);
	assert_int_equal(v.target.family, AF_INET);
	assert_int_equal(v.target.port, 4791);		// 0 went in: the default
	assert_int_equal(v.target.tenant, 0);
	assert_int_equal(v.target.host_id, kDerivedHostId);
	assert_false(v.flags & MDR_VOL_READONLY);
}

static void test_attach_options_and_json(void **)
{
	World w;
	Outcome o = w.run({"attach", "-i", "42", "-n", "[2001:db8::2]:4800", "-t", "9",
			   "-H", "0x10", "-r", "-b", "7=/dev/nvme0n1",
			   "--bind=8=/dev/nvme1n1", "-o", "json"});

	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    "{\"device\":\"/dev/mdr0\",\"index\":0,\"volume_id\":42,"
			    "\"name\":\"db\",\"size\":1610612736,\"extent_size\":4194304,"
			    "\"read_only\":true,\"host_id\":16,\"key_serial\":0,"
			    "\"bound\":[7,8],\"group\":0,\"replicas\":[]}\n");
	const auto &v = w.module.attached.at(0);
	assert_int_equal(v.target.family, AF_INET6);
	assert_int_equal(v.target.port, 4800);
	assert_int_equal(v.target.tenant, 9);
	assert_int_equal(v.target.addr[0], 0x20);
	assert_int_equal(v.target.addr[15], 2);
	assert_true(v.flags & MDR_VOL_READONLY);
	assert_int_equal(w.module.bound.size(), 2);
}

static void test_attach_node_from_env(void **)
{
	World w;
	w.host.env["MDCTL_NODE"] = "198.51.100.7:5000";
	assert_int_equal(w.run({"attach", "-i", "42"}).status, 0);
	assert_int_equal(w.module.attached.at(0).target.port, 5000);
	assert_int_equal(w.module.attached.at(0).target.addr[0], 198);

	// --node wins over the environment
	World w2;
	w2.host.env["MDCTL_NODE"] = "not an address";
	assert_int_equal(w2.run({"attach", "-i", "42", "-n", "::1"}).status, 0);
	assert_int_equal(w2.module.attached.at(0).target.family, AF_INET6);
}

static void test_attach_usage_errors(void **)
{
	assert_usage({"attach", "-n", "192.0.2.2"},
		     "attach needs a volume NAME, --all-of FILE or --volume-id ID");
	assert_usage({"attach", "-i", "42"},
		     "no storage node: use --node ADDR[:PORT], set MDCTL_NODE or 'node =' in "
		     "/etc/mdroute/mdctl.conf");
	assert_usage({"attach", "db", "-i", "42", "-n", "192.0.2.2"},
		     "attach takes one of NAME, --all-of FILE and --volume-id ID");
	assert_usage({"attach", "db", "-a", "/f", "-n", "192.0.2.2"},
		     "attach takes one of NAME, --all-of FILE and --volume-id ID");
	assert_usage({"attach", "db", "-T", "-n", "192.0.2.2"}, "--timing goes with --all-of");
	assert_usage({"attach", "db/1", "-n", "192.0.2.2"},
		     "bad volume name 'db/1': use 1 to 63 of A-Z a-z 0-9 . _ -");
	for (const char *bad : {"0", "-1", "x", "18446744073709551616", "42x", "0x"})
		assert_usage({"attach", "-n", "192.0.2.2", "-i", bad},
			     "bad volume id '" + std::string(bad) + "'");
	for (const char *bad : {"0", "-3", "0x", "66"})
		assert_usage({"attach", "-n", "192.0.2.2", "-i", "42", "-H", bad},
			     "bad host id '" + std::string(bad) + std::string(mdctl::kHostIdForm));
	assert_usage({"attach", "-n", "192.0.2.2", "-i", "42", "-t", "4294967296"},
		     "bad tenant '4294967296'");
	assert_usage({"attach", "-n", "192.0.2.2", "-i", "42", "-b", "7=/dev/a", "-b",
		      "7=/dev/b"},
		     "device 7 is bound twice");
	assert_usage({"attach", "-n", "192.0.2.2", "-i", "42", "-b", "7:/dev/a"},
		     "bad binding '7:/dev/a': expected ID=/dev/X with ID a non-zero number");
	assert_usage({"attach", "-n"}, "option '-n' needs a value");
	assert_usage({"attach", "--read-only=yes"}, "option '--read-only' takes no value");
}

static void test_attach_bad_node(void **)
{
	for (const char *bad : {"", "192.0.2", "192.0.2.256", "192.0.2.2:0", "192.0.2.2:65536",
				"192.0.2.2:", "192.0.2.2:x", "192.0.2.2:0x10", "[::1", "[::1]x",
				"[::1]:", "[192.0.2.2]:1", "fe80::1%eth0", "[fe80::1%eth0]:1",
				"storage.example", "2001:db8::g"}) {
		assert_usage({"attach", "-i", "42", "-n", bad},
			     "bad node address '" + std::string(bad) +
			     "': expected IPv4[:PORT], IPv6 or [IPv6]:PORT");
	}
}

static void test_attach_host_id(void **)
{
	// Test vector: printf mdroute-host-id | openssl dgst -sha256 -mac HMAC
	//   -macopt hexkey:0123456789abcdef0123456789abcdef
	auto id = mdctl::host_id_from_machine_id(kMachineId);
	assert_true(id.ok());
	assert_int_equal(id.value(), kDerivedHostId);
	assert_true(mdctl::host_id_from_machine_id("0123456789ABCDEF0123456789ABCDEF").ok());

	for (const char *bad : {"", "\n", "0123456789abcdef", "0123456789abcdef0123456789abcdeg",
				"0123456789abcdef0123456789abcdef0", "uninitialized\n"})
		assert_int_equal(mdctl::host_id_from_machine_id(bad).error(), -EINVAL);

	World w;
	w.host.files.erase(mdctl::kMachineIdPath);
	assert_failure(w, {"attach", "-i", "42", "-n", "192.0.2.2"},
		       "mdctl: attach failed: /etc/machine-id: No such file or directory "
		       "(ENOENT)\nhint: pass --host-id ID\n");
	w.host.files[mdctl::kMachineIdPath] = "uninitialized\n";
	assert_failure(w, {"attach", "-i", "42", "-n", "192.0.2.2"},
		       "mdctl: attach failed: /etc/machine-id: not a machine id: Invalid "
		       "argument (EINVAL)\nhint: pass --host-id ID\n");
	assert_true(w.sys.requests.empty());
	assert_int_equal(w.run({"attach", "-i", "42", "-n", "192.0.2.2", "-H", "0x5"}).status, 0);
	// Host ids are hex everywhere, as 'mdctl host id' prints them: a bare
	// short number could be meant as decimal.
	assert_int_equal(w.run({"attach", "-i", "43", "-n", "192.0.2.2", "-H", "5"}).status, 2);
	assert_true(mdctl::parse_host_id("0000000000000005") == 5u);
}

// A failed attach undoes the bindings it made, newest first, and only those.
static void test_attach_rolls_back_binds(void **)
{
	World w;
	w.module.attach_error = -ECONNREFUSED;

	assert_failure(w, {"attach", "-i", "42", "-n", "192.0.2.2", "-b", "7=/dev/nvme0n1",
			   "-b", "8=/dev/nvme1n1"},
		       "mdctl: attach failed: Connection refused (ECONNREFUSED)\n"
		       "hint: is mdnode running on 192.0.2.2:4791?\n");
	assert_true(w.module.bound.empty());
	assert_true(w.module.attached.empty());
	const std::vector<unsigned> calls = {MDR_CMD_BIND, MDR_CMD_BIND, MDR_CMD_ATTACH,
					     MDR_CMD_UNBIND, MDR_CMD_UNBIND};
	assert_true(w.module.calls == calls);
	// newest first
	struct mdr_ioctl_bind last;
	std::memcpy(&last, w.sys.last_arg.data(), sizeof(last));
	assert_int_equal(last.dev_id, 7);
}

static void test_attach_rolls_back_on_bind_failure(void **)
{
	World w;
	w.host.block_devices["/dev/sdz"] = {8, 0};	// no such disk in the module

	assert_failure(w, {"attach", "-i", "42", "-n", "[2001:db8::2]", "-b", "7=/dev/nvme0n1",
			   "-b", "8=/dev/sdz"},
		       "mdctl: attach failed: bind 8=/dev/sdz: No such device or address "
		       "(ENXIO)\n");
	assert_true(w.module.bound.empty());
	const std::vector<unsigned> calls = {MDR_CMD_BIND, MDR_CMD_BIND, MDR_CMD_UNBIND};
	assert_true(w.module.calls == calls);
}

// A path that is not a block device stops the attach before anything is bound.
static void test_attach_checks_paths_first(void **)
{
	World w;

	assert_failure(w, {"attach", "-i", "42", "-n", "192.0.2.2", "-b", "7=/dev/nvme0n1",
			   "-b", "8=/dev/null"},
		       "mdctl: attach failed: /dev/null: Block device required (ENOTBLK)\n");
	assert_true(w.sys.requests.empty());
}

// An id bound to the same block device already (another volume's attach) is
// used and left bound; one bound elsewhere is an error.
static void test_attach_shares_bindings(void **)
{
	World w;
	w.module.node_volumes[43] = {1 << 30, 22, "logs"};
	assert_int_equal(w.run({"bind", "7=/dev/nvme0n1"}).status, 0);

	w.module.attach_error = -ETIMEDOUT;
	assert_failure(w, {"attach", "-i", "42", "-n", "192.0.2.2:4800", "-b", "7=/dev/nvme0n1",
			   "-b", "8=/dev/nvme1n1"},
		       "mdctl: attach failed: Connection timed out (ETIMEDOUT)\n"
		       "hint: is mdnode running on 192.0.2.2:4800?\n");
	assert_int_equal(w.module.bound.size(), 1);		// 7 stays, 8 went
	assert_true(w.module.bound.contains(7));

	w.module.attach_error = 0;
	Outcome o = w.run({"attach", "-i", "42", "-n", "192.0.2.2", "-b", "7=/dev/nvme0n1",
			   "-o", "json"});
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out.c_str(), "\"bound\":[]"));

	assert_failure(w, {"attach", "-i", "43", "-n", "192.0.2.2", "-b", "7=/dev/nvme1n1"},
		       "mdctl: attach failed: bind 7=/dev/nvme1n1: File exists (EEXIST)\n"
		       "hint: the id is bound to another block device; see 'mdctl devices'\n");
	assert_failure(w, {"attach", "-i", "42", "-n", "192.0.2.2"},
		       "mdctl: attach failed: File exists (EEXIST)\n"
		       "hint: the volume is attached already; see 'mdctl list'\n");
}

// A rollback that fails says so; the attach's own error comes first.
static void test_attach_rollback_failure_reported(void **)
{
	World w;
	w.module.attach_error = -EIO;
	auto inner = w.module.handler();
	w.sys.on_ioctl = [&w, inner](unsigned long request, void *arg) {
		if (request == MDR_IOC_UNBIND) {
			w.module.calls.push_back(MDR_CMD_UNBIND);
			return -EBUSY;
		}
		return inner(request, arg);
	};

	assert_failure(w, {"attach", "-i", "42", "-n", "192.0.2.2", "-b", "7=/dev/nvme0n1"},
		       "mdctl: attach failed: Input/output error (EIO)\n"
		       "mdctl: attach: could not undo binding of device 7: Device or "
		       "resource busy (EBUSY)\n");
}

// ---- detach ------------------------------------------------------------------

static void test_detach(void **)
{
	for (const char *dev : {"/dev/mdr3", "mdr3", "3"}) {
		World w;
		for (int i = 0; i < 4; i++)
			w.module.add_volume(100 + i, 1 << 30, "");

		Outcome o = w.run({"detach", dev});
		assert_int_equal(o.status, 0);
		assert_true(o.out.empty() && o.err.empty());
		assert_false(w.module.attached.contains(3));
		assert_int_equal(w.module.attached.size(), 3);
	}
}

static void test_detach_busy_and_force(void **)
{
	World w;
	w.module.add_volume(100, 1 << 30, "").open_count = 2;

	assert_failure(w, {"detach", "/dev/mdr0"},
		       "mdctl: detach failed: /dev/mdr0: Device or resource busy (EBUSY)\n"
		       "hint: the device is open; close it, or use --force\n");
	assert_int_equal(w.run({"detach", "-f", "mdr0"}).status, 0);
	assert_true(w.module.attached.empty());

	assert_failure(w, {"detach", "--force", "0"},
		       "mdctl: detach failed: /dev/mdr0: No such device or address (ENXIO)\n"
		       "hint: no volume is attached there; see 'mdctl list'\n");
}

static void test_detach_usage_errors(void **)
{
	assert_usage({"detach"}, "detach needs a device (/dev/mdrN, mdrN or N) or a volume name");
	for (const char *bad : {"", "/dev/mdr", "/dev/sda", "/dev/mdr3p1", "mdr 3", "db/1"})
		assert_usage({"detach", "--", bad},
			     "bad device or volume name '" + std::string(bad) +
			     "': expected /dev/mdrN, mdrN, N or a name");
	// Not a device, so a name: of no attached volume.
	for (const char *name : {"mdr", "-1", "03", "mdrx", "0x3", "4294967296"}) {
		World w;
		assert_failure(w, {"detach", "--", name},
			       "mdctl: detach failed: volume '" + std::string(name) +
			       "': No such device or address (ENXIO)\n"
			       "hint: it is not attached here; see 'mdctl list'\n");
	}
	assert_usage({"detach", "-a", "/f", "mdr0"}, "unexpected argument 'mdr0'");
	assert_usage({"detach", "-T", "mdr0"}, "--timing goes with --all-of");
	assert_usage({"detach", "1", "2"}, "unexpected argument '2'");
	assert_usage({"detach", "--volume-id=3", "1"}, "unknown option '--volume-id'");
}

// ---- list, stats -------------------------------------------------------------

static void test_list(void **)
{
	World w;
	auto &a = w.module.add_volume(42, 1536ULL << 20, "db");
	a.open_count = 1;
	a.cached = 300;
	a.inflight = 4;
	auto &b = w.module.add_volume(18446744073709551615ULL, 512, "");
	b.flags = MDR_VOL_READONLY;		// lease expired
	b.extent_shift = 30;
	b.target.family = AF_INET6;
	b.target.port = 4800;
	b.target.tenant = 7;
	std::memset(b.target.addr, 0, sizeof(b.target.addr));
	b.target.addr[15] = 1;
	b.group = 9;		// of a replica group: the replica it is connected to
	b.epoch = 4;
	w.module.add_volume(5, 1ULL << 40, "x").flags = MDR_VOL_DYING | MDR_VOL_LEASE_VALID;
	w.host.files["/sys/block/mdr0/mdroute/cache_hits"] = "975\n";
	w.host.files["/sys/block/mdr0/mdroute/cache_misses"] = "25\n";
	w.host.files["/sys/block/mdr1/mdroute/cache_hits"] = "0\n";
	w.host.files["/sys/block/mdr1/mdroute/cache_misses"] = "0\n";

	Outcome o = w.run({"list"});
	assert_int_equal(o.status, 0);
	assert_true(o.err.empty());
	assert_string_equal(o.out.c_str(),
		"DEVICE                VOLUME_ID  NAME     SIZE  EXTENT  NODE            TENANT"
		"  STATE             OPEN  CACHED  INFLIGHT  HIT_RATE  GROUP  EPOCH\n"
		"/dev/mdr0                    42  db    1.5 GiB   4 MiB  192.0.2.2:4791       0"
		"  active               1     300         4     97.5%      -      -\n"
		"/dev/mdr1  18446744073709551615  -       512 B   1 GiB  [::1]:4800           7"
		"  lease-expired,ro     0       0         0         -      9      4\n"
		"/dev/mdr2                     5  x       1 TiB   4 MiB  192.0.2.2:4791       0"
		"  dying                0       0         0         -      -      -\n");

	o = w.run({"list", "-o", "json"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
		"{\"volumes\":["
		"{\"device\":\"/dev/mdr0\",\"index\":0,\"volume_id\":42,\"name\":\"db\","
		"\"size\":1610612736,\"extent_size\":4194304,\"node_address\":\"192.0.2.2\","
		"\"node_port\":4791,\"tenant\":0,\"host_id\":1,\"key_serial\":0,"
		"\"group\":0,\"epoch\":0,\"state\":\"active\","
		"\"lease_valid\":true,\"dying\":false,\"read_only\":false,\"open_count\":1,"
		"\"cached_extents\":300,\"in_flight\":4,\"cache_hits\":975,\"cache_misses\":25},"
		"{\"device\":\"/dev/mdr1\",\"index\":1,\"volume_id\":18446744073709551615,"
		"\"name\":\"\",\"size\":512,\"extent_size\":1073741824,\"node_address\":\"::1\","
		"\"node_port\":4800,\"tenant\":7,\"host_id\":1,\"key_serial\":0,"
		"\"group\":9,\"epoch\":4,\"state\":\"lease-expired\","
		"\"lease_valid\":false,\"dying\":false,\"read_only\":true,\"open_count\":0,"
		"\"cached_extents\":0,\"in_flight\":0,\"cache_hits\":0,\"cache_misses\":0},"
		"{\"device\":\"/dev/mdr2\",\"index\":2,\"volume_id\":5,\"name\":\"x\","
		"\"size\":1099511627776,\"extent_size\":4194304,\"node_address\":\"192.0.2.2\","
		"\"node_port\":4791,\"tenant\":0,\"host_id\":1,\"key_serial\":0,"
		"\"group\":0,\"epoch\":0,\"state\":\"dying\","
		"\"lease_valid\":true,\"dying\":true,\"read_only\":false,\"open_count\":0,"
		"\"cached_extents\":0,\"in_flight\":0,\"cache_hits\":null,\"cache_misses\":null}"
		"]}\n");
}

static void test_list_empty_and_errors(void **)
{
	World w;
	Outcome o = w.run({"list", "--output", "json"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(), "{\"volumes\":[]}\n");

	w.module.list_max = 1;
	w.module.add_volume(1, 1 << 30, "");
	w.module.add_volume(2, 1 << 30, "");
	// one per call: mdctl pages through them
	o = w.run({"list", "-o", "json"});
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out.c_str(), "\"volume_id\":1,"));
	assert_non_null(strstr(o.out.c_str(), "\"volume_id\":2,"));

	w.module.version[0] = MDR_IOCTL_VERSION_MAJOR + 1;
	o = w.run({"list"});
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err.c_str(), "mdctl: list failed: the module speaks ioctl ABI "));

	assert_usage({"list", "extra"}, "unexpected argument 'extra'");
}

static void test_stats(void **)
{
	World w;
	const std::string dir = "/sys/block/mdr2/mdroute/";
	w.host.files[dir + "volume_id"] = "42\n";
	w.host.files[dir + "name"] = "007\n";
	w.host.files[dir + "lease"] = "valid\n";
	w.host.files[dir + "extent_size"] = "4194304\n";
	w.host.files[dir + "cache_hits"] = "18446744073709551615\n";
	w.host.files[dir + "read_bytes"] = "1610612736\n";

	Outcome o = w.run({"stats", "/dev/mdr2"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    "ATTRIBUTE                   VALUE\n"
			    "cache_hits   18446744073709551615\n"
			    "extent_size                 4 MiB\n"
			    "lease                       valid\n"
			    "name                          007\n"
			    "read_bytes                1.5 GiB\n"
			    "volume_id                      42\n");
	assert_true(w.sys.requests.empty());		// sysfs only

	o = w.run({"stats", "mdr2", "-o", "json"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    "{\"device\":\"/dev/mdr2\",\"index\":2,\"stats\":{"
			    "\"cache_hits\":18446744073709551615,\"extent_size\":4194304,"
			    "\"lease\":\"valid\",\"name\":\"007\",\"read_bytes\":1610612736,"
			    "\"volume_id\":42}}\n");

	assert_failure(w, {"stats", "3"},
		       "mdctl: stats failed: /dev/mdr3: No such file or directory (ENOENT)\n"
		       "hint: no volume is attached there; see 'mdctl list'\n");
	assert_usage({"stats"}, "stats needs a device (/dev/mdrN, mdrN or N)");
	assert_usage({"stats", "sda"}, "bad device 'sda': expected /dev/mdrN, mdrN or N");
}

// --prometheus: every attached volume and every connection, in the text
// format a textfile collector reads: known attributes under their metric
// names, identity as labels (escaped: a name comes from the kernel), an
// attribute this mdctl does not know as an untyped sample, the lookup
// histogram cumulative; what does not parse is left out.
static void test_stats_prometheus(void **)
{
	World w;
	const std::string v0 = "/sys/block/mdr0/mdroute/", v3 = "/sys/block/mdr3/mdroute/";
	const std::string conns = "/sys/kernel/debug/mdroute/connections/";
	w.host.files[v0 + "volume_id"] = "42\n";
	w.host.files[v0 + "name"] = "db\"1\n";
	w.host.files[v0 + "tenant"] = "7\n";
	w.host.files[v0 + "lease"] = "valid\n";
	w.host.files[v0 + "cache_hits"] = "975\n";
	w.host.files[v0 + "cached"] = "300\n";
	w.host.files[v0 + "lease_lapse_io_ms"] = "1500\n";
	w.host.files[v0 + "new_counter"] = "5\n";
	w.host.files[v0 + "bad-name"] = "5\n";
	// A newer kernel's attributes whose metric names a family of this
	// mdctl has: left out, or the collector refuses the whole file.
	w.host.files[v0 + "info"] = "7001\n";
	w.host.files[v0 + "cache_hits_total"] = "7002\n";
	w.host.files[v0 + "new_counter_total"] = "7004\n";
	w.host.files[v3 + "volume_id"] = "9\n";
	w.host.files[v3 + "lease"] = "expired\n";
	w.host.files[v3 + "cache_hits"] = "garbage\n";
	w.host.files["/sys/block/sda/size"] = "1\n";
	w.host.files[conns + "192.0.2.2:4791-7"] =
		"state: live\ntarget: 192.0.2.2:4791 tenant 7 host 0000000000000091\n"
		"node_id: 00000000000000aa\nversion: 4\nqueue_depth: 64\nvolumes: 1\n"
		"reads: 10\nrpc_errors: 2\nlookup_duration_seconds_count: 7003\n"
		"lookup_us: <16:1 <32:2 <64:0 <128:0 <256:0 <512:0 <1024:0 <2048:0 <4096:0 "
		"<8192:0 <16384:0 >=16384:3\n";

	Outcome o = w.run({"stats", "--prometheus"});
	assert_int_equal(o.status, 0);
	assert_true(o.err.empty());
	const std::string &t = o.out;
	auto has = [&](const std::string &line) {
		if (t.find("\n" + line + "\n") == std::string::npos &&
		    !t.starts_with(line + "\n"))
			fail_msg("no line '%s' in:\n%s", line.c_str(), t.c_str());
	};
	has("mdroute_volumes_attached 2");
	has("# TYPE mdroute_volume_info gauge");
	has("mdroute_volume_info{device=\"mdr0\",volume_id=\"42\",name=\"db\\\"1\",tenant=\"7\"} 1");
	has("mdroute_volume_lease_valid{device=\"mdr0\",volume_id=\"42\"} 1");
	has("mdroute_volume_lease_valid{device=\"mdr3\",volume_id=\"9\"} 0");
	has("# TYPE mdroute_volume_cache_hits_total counter");
	has("mdroute_volume_cache_hits_total{device=\"mdr0\",volume_id=\"42\"} 975");
	assert_null(strstr(t.c_str(), "mdroute_volume_cache_hits_total{device=\"mdr3\""));
	has("mdroute_volume_cached_extents{device=\"mdr0\",volume_id=\"42\"} 300");
	has("mdroute_volume_lease_lapse_io_seconds{device=\"mdr0\",volume_id=\"42\"} 1.5");
	has("# TYPE mdroute_volume_new_counter untyped");
	has("mdroute_volume_new_counter{device=\"mdr0\",volume_id=\"42\"} 5");
	assert_null(strstr(t.c_str(), "bad-name"));
	for (const char *v : {"} 7001\n", "} 7002\n", "} 7003\n", "} 7004\n"})
		assert_null(strstr(t.c_str(), v));
	has("mdroute_debugfs_readable 1");
	const std::string c = "{node=\"192.0.2.2:4791\",tenant=\"7\",host_id=\"0000000000000091\"";
	has("mdroute_conn_live" + c + "} 1");
	has("mdroute_conn_reads_total" + c + "} 10");
	has("mdroute_conn_rpc_errors_total" + c + "} 2");
	has("mdroute_conn_wire_version" + c + "} 4");
	has("mdroute_conn_lookup_duration_seconds_bucket" + c + ",le=\"1.6e-05\"} 1");
	has("mdroute_conn_lookup_duration_seconds_bucket" + c + ",le=\"3.2e-05\"} 3");
	has("mdroute_conn_lookup_duration_seconds_bucket" + c + ",le=\"0.016384\"} 3");
	has("mdroute_conn_lookup_duration_seconds_bucket" + c + ",le=\"+Inf\"} 6");
	has("mdroute_conn_lookup_duration_seconds_count" + c + "} 6");
	assert_null(strstr(t.c_str(), "node_id"));
	// Every family once.
	for (size_t at = 0; (at = t.find("# TYPE ", at)) != std::string::npos; at++) {
		const std::string name = t.substr(at + 7, t.find(' ', at + 7) - at - 7);
		assert_int_equal(t.find("# TYPE " + name + " "), at);
	}

	// One volume alone; no connections.
	o = w.run({"stats", "--prometheus", "mdr3"});
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out.c_str(), "mdroute_volumes_attached 1\n"));
	assert_null(strstr(o.out.c_str(), "mdroute_conn_"));
	assert_failure(w, {"stats", "--prometheus", "5"},
		       "mdctl: stats failed: /dev/mdr5: No such file or directory (ENOENT)\n"
		       "hint: no volume is attached there; see 'mdctl list'\n");
	assert_usage({"stats", "--prometheus", "-o", "json"},
		     "--prometheus and -o json exclude each other");
	assert_usage({"stats", "--prometheus", "1", "2"}, "unexpected argument '2'");

	// Nothing attached, debugfs unreadable: still a valid exposition.
	World empty;
	o = empty.run({"stats", "--prometheus"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    "# HELP mdroute_volumes_attached Volumes attached on this host.\n"
			    "# TYPE mdroute_volumes_attached gauge\n"
			    "mdroute_volumes_attached 0\n"
			    "# HELP mdroute_debugfs_readable 1 when the connections in debugfs could "
			    "be read (root, debugfs mounted, module loaded).\n"
			    "# TYPE mdroute_debugfs_readable gauge\n"
			    "mdroute_debugfs_readable 0\n");
}

static void test_help_of_every_command(void **)
{
	for (const char *cmd : {"attach", "detach", "list", "stats", "bind", "unbind",
				"devices"}) {
		for (const char *opt : {"--help", "-h"}) {
			World w;
			Outcome o = w.run({cmd, opt});

			assert_int_equal(o.status, 0);
			assert_true(o.out.starts_with("Usage: mdctl " + std::string(cmd)));
			assert_true(o.err.empty());
			assert_true(w.sys.requests.empty());
		}
		World w;
		Outcome o = w.run({"help"});
		assert_non_null(strstr(o.out.c_str(), ("\n  " + std::string(cmd) + " ").c_str()));
	}
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bind),
		cmocka_unit_test(test_bind_usage_errors),
		cmocka_unit_test(test_bind_failures),
		cmocka_unit_test(test_unbind),
		cmocka_unit_test(test_devices),
		cmocka_unit_test(test_attach),
		cmocka_unit_test(test_attach_options_and_json),
		cmocka_unit_test(test_attach_node_from_env),
		cmocka_unit_test(test_attach_usage_errors),
		cmocka_unit_test(test_attach_bad_node),
		cmocka_unit_test(test_attach_host_id),
		cmocka_unit_test(test_attach_rolls_back_binds),
		cmocka_unit_test(test_attach_rolls_back_on_bind_failure),
		cmocka_unit_test(test_attach_checks_paths_first),
		cmocka_unit_test(test_attach_shares_bindings),
		cmocka_unit_test(test_attach_rollback_failure_reported),
		cmocka_unit_test(test_detach),
		cmocka_unit_test(test_detach_busy_and_force),
		cmocka_unit_test(test_detach_usage_errors),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_list_empty_and_errors),
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_stats_prometheus),
		cmocka_unit_test(test_help_of_every_command),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
