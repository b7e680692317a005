// SPDX-License-Identifier: GPL-2.0
//
// test_mdctl_attach.cc - mdctl attach by name (the node's volume, its
// devices found by serial, the module loaded on demand), attach --all-of
// and batches (in order, in parallel, rolled back on a failure) and detach
// by name; against a fake mdnode, module and host.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <sys/socket.h>

#include "mdctl/config.h"
#include "tests/test_mdctl_node.h"

#include "tests/common/cmocka_cxx.h"

using namespace mdr::test;

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

// ---- replica groups ------------------------------------------------------------

namespace {

// The node at 192.0.2.2 is replica 2 of group 7. Its GROUP_STATUS says
// where the replicas' logs are, not where they serve hosts (the tests that
// need a node of version 6, which cannot say it, set its accept's version).
struct GroupWorld : World {
	GroupWorld()
	{
		node.group_status = {.group = 7, .epoch = 3, .last_index = 9, .commit_index = 9,
				     .self = 2, .leader = 1, .role = MDR_REPLICA_FOLLOWER};
		for (uint32_t id = 1; id <= 3; id++)
			node.group_status.replicas.push_back(
				{.id = id, .state = uint16_t(id == 2 ? MDR_PEER_SELF : MDR_PEER_UNKNOWN),
				 .port = 4800, .family = MDR_FAMILY_IPV4,
				 .addr = {192, 0, 2, uint8_t(10 + id)}});
		volume("db", 1ULL << 30, 4);
	}

	// The group of the last attach, as the module read it.
	const struct mdr_ioctl_group &sent() const { return module.last_attach.group; }

	bool asked_group() const
	{
		return std::ranges::count(node.requests, uint16_t{MDR_OP_GROUP_STATUS}) > 0;
	}
};

void assert_replica(const struct mdr_ioctl_replica &r, uint8_t last, uint16_t port)
{
	const uint8_t addr[16] = {192, 0, 2, last};

	assert_int_equal(r.family, AF_INET);
	assert_int_equal(r.port, port);
	assert_int_equal(r.scope_id, 0);
	assert_memory_equal(r.addr, addr, sizeof(addr));
}

constexpr char kReplicasHint[] =
	"hint: pass --replica ADDR[:PORT] for each replica, as it serves hosts (its "
	"--listen), or set 'replicas' in mdctl.conf\n";

} // namespace

// By name: the node says its group; --replica says where the replicas
// serve hosts, the node's address added last; the attach of minor 3.
static void test_attach_group_by_name(void **)
{
	GroupWorld w;
	Outcome o = w.run({"attach", "db", "--key-serial", "77", "-R", "192.0.2.3",
			   "--replica=192.0.2.4:4800", "-o", "json"});
	assert_int_equal(o.status, 0);
	assert_true(w.asked_group());
	assert_int_equal(w.module.last_attach_size, sizeof(struct mdr_ioctl_attach));
	assert_int_equal(w.module.last_attach.hdr.version[1], MDR_IOCTL_VERSION_MINOR);
	assert_int_equal(w.sent().group, 7);
	assert_int_equal(w.sent().count, 3);
	assert_replica(w.sent().replicas[0], 3, 0);
	assert_replica(w.sent().replicas[1], 4, 4800);
	assert_replica(w.sent().replicas[2], 2, 0);
	assert_int_equal(w.module.attached.at(0).group, 7);
	assert_non_null(strstr(o.out.c_str(), "\"group\":7,\"replicas\":[\"192.0.2.3:4791\","
					      "\"192.0.2.4:4800\",\"192.0.2.2:4791\"]}"));
	o = w.run({"list"});
	assert_non_null(strstr(o.out.c_str(), "  GROUP  EPOCH\n"));
	// no leader has served it yet: epoch 0
	assert_non_null(strstr(o.out.c_str(), "      7      0\n"));

	// The node among the --replica (port 0 is 4791): not twice.
	w.volume("logs", 1ULL << 30, 4);
	o = w.run({"attach", "logs", "-S", "77", "-R", "192.0.2.2:4791", "-R", "192.0.2.3"});
	assert_int_equal(o.status, 0);
	assert_int_equal(w.sent().count, 2);
	assert_replica(w.sent().replicas[0], 2, 4791);

	// --group and --replica win: the node is not asked.
	w.volume("tmp", 1ULL << 30, 4);
	w.node.requests.clear();
	o = w.run({"attach", "tmp", "-S", "77", "-g", "9", "-R", "192.0.2.3"});
	assert_int_equal(o.status, 0);
	assert_false(w.asked_group());
	assert_int_equal(w.sent().group, 9);

	// --group 0 with no --replica: a node of its own, whatever the node says.
	w.volume("own", 1ULL << 30, 4);
	o = w.run({"attach", "own", "-g", "0"});
	assert_int_equal(o.status, 0);
	assert_int_equal(w.module.last_attach_size, 264);
	assert_int_equal(w.module.last_attach.hdr.version[1], 2);
}

// A node of wire version 7 says where its replicas serve hosts: those it
// knows are the set (the node itself among them, once).
static void test_attach_group_from_node(void **)
{
	GroupWorld w;
	w.node.accept.version = mdr::wire::kEpochVersion;
	w.node.group_status.extended = true;
	auto &r = w.node.group_status.replicas;
	r[0].host_family = MDR_FAMILY_IPV4;
	r[0].host_port = 4791;
	r[0].host_addr = {192, 0, 2, 21};
	r[1].host_family = MDR_FAMILY_IPV4;
	r[1].host_port = 4791;
	r[1].host_addr = {192, 0, 2, 2};
	r[2].host_family = MDR_FAMILY_IPV6;
	r[2].host_port = 4800;
	r[2].host_addr = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3};
	Outcome o = w.run({"attach", "db", "-S", "77", "-o", "json"});
	assert_int_equal(o.status, 0);
	assert_int_equal(w.sent().group, 7);
	assert_int_equal(w.sent().count, 3);
	assert_replica(w.sent().replicas[0], 21, 4791);
	assert_replica(w.sent().replicas[1], 2, 4791);
	assert_int_equal(w.sent().replicas[2].family, AF_INET6);
	assert_int_equal(w.sent().replicas[2].port, 4800);
	assert_non_null(strstr(o.out.c_str(), "\"replicas\":[\"192.0.2.21:4791\","
					      "\"192.0.2.2:4791\",\"[fd00::3]:4800\"]"));

	// --replica wins over the node.
	w.volume("logs", 1ULL << 30, 4);
	o = w.run({"attach", "logs", "-S", "77", "-R", "192.0.2.9"});
	assert_int_equal(o.status, 0);
	assert_int_equal(w.sent().count, 2);
	assert_replica(w.sent().replicas[0], 9, 0);

	// A node that knows none of them: mdctl.conf's, else nothing known.
	for (auto &x : r)
		x.host_family = MDR_FAMILY_NONE, x.host_port = 0, x.host_addr = {};
	w.volume("tmp", 1ULL << 30, 4);
	assert_failure(w, {"attach", "tmp", "-S", "77"},
		       std::string("mdctl: attach failed: mdnode at 192.0.2.2:4791 is replica 2 of "
				   "replica group 7, and where the group's replicas serve hosts is "
				   "not known: Invalid argument (EINVAL)\n") + kReplicasHint);
	w.host.files[mdctl::kConfigPath] = "group = 7\nreplicas = 192.0.2.5\n";
	assert_int_equal(w.run({"attach", "tmp", "-S", "77"}).status, 0);
	assert_replica(w.sent().replicas[0], 5, 0);
}

// mdctl.conf's replicas are its group's: used by name when the node is of
// that group, and with --volume-id (with its group).
static void test_attach_group_from_config(void **)
{
	GroupWorld w;
	w.host.files[mdctl::kConfigPath] = "group = 7\nreplicas = 192.0.2.5, 192.0.2.6:4800\n";
	Outcome o = w.run({"attach", "db", "-S", "77"});
	assert_int_equal(o.status, 0);
	assert_int_equal(w.sent().group, 7);
	assert_int_equal(w.sent().count, 3);
	assert_replica(w.sent().replicas[0], 5, 0);
	assert_replica(w.sent().replicas[1], 6, 4800);
	assert_replica(w.sent().replicas[2], 2, 0);

	o = w.run({"attach", "-i", "3", "-S", "77"});
	assert_int_equal(o.status, 0);
	assert_int_equal(w.sent().group, 7);
	assert_int_equal(w.sent().count, 3);

	// Another group's: not used (and a node of version 6 does not say).
	GroupWorld w2;
	w2.node.accept.version = 6;
	w2.host.files[mdctl::kConfigPath] = "group = 8\nreplicas = 192.0.2.5\n";
	assert_failure(w2, {"attach", "db", "-S", "77"},
		       std::string("mdctl: attach failed: mdnode at 192.0.2.2:4791 is replica 2 of "
				   "replica group 7, and where the group's replicas serve hosts is "
				   "not known (wire version 6 does not say it): Invalid argument "
				   "(EINVAL)\n") + kReplicasHint);
	assert_true(w2.sys.requests.empty());

	// A node of its own: mdctl.conf's group is not its group.
	World w3;
	w3.volume("db", 1ULL << 30, 4);
	w3.host.files[mdctl::kConfigPath] = "group = 7\nreplicas = 192.0.2.5\n";
	o = w3.run({"attach", "db"});
	assert_int_equal(o.status, 0);
	assert_int_equal(w3.module.last_attach_size, 264);
}

// What a group's attach refuses before anything changes.
static void test_attach_group_failures(void **)
{
	GroupWorld w;
	// where the replicas serve hosts is not known: version 6 does not say
	w.node.accept.version = 6;
	assert_failure(w, {"attach", "db", "-S", "77"},
		       std::string("mdctl: attach failed: mdnode at 192.0.2.2:4791 is replica 2 of "
				   "replica group 7, and where the group's replicas serve hosts is "
				   "not known (wire version 6 does not say it): Invalid argument "
				   "(EINVAL)\n") + kReplicasHint);
	assert_failure(w, {"attach", "db", "-S", "77", "-g", "8"},
		       std::string("mdctl: attach failed: replica group 8: where its replicas "
				   "serve hosts is not known: Invalid argument (EINVAL)\n") +
			       kReplicasHint);
	// no host key
	assert_failure(w, {"attach", "db", "-R", "192.0.2.3"},
		       "mdctl: attach failed: replica group 7: Required key not available "
		       "(ENOKEY)\nhint: a group's replicas name their leader only to a host that "
		       "proved its key: pass --host-key-file FILE (or --key-serial N, or set "
		       "host-key in mdctl.conf)\n");
	// eight and the node's address
	std::vector<std::string> eight = {"attach", "db", "-S", "77"};
	for (int i = 3; i <= 10; i++)
		eight.insert(eight.end(), {"-R", "192.0.2." + std::to_string(i)});
	std::vector<const char *> argv;
	for (const std::string &a : eight)
		argv.push_back(a.c_str());
	Outcome o = w.run(argv);
	assert_int_equal(o.status, 1);
	assert_string_equal(o.err.c_str(),
			    "mdctl: attach failed: replica group 7: with the node's address "
			    "192.0.2.2:4791, 9 replicas, more than 8: Invalid argument (EINVAL)\n"
			    "hint: leave a --replica out, or name the node among them\n");
	assert_true(w.sys.requests.empty());
	assert_true(w.module.attached.empty());

	// --replica to a node of its own
	World own;
	own.volume("db", 1ULL << 30, 4);
	assert_failure(own, {"attach", "db", "-S", "77", "-R", "192.0.2.3"},
		       "mdctl: attach failed: --replica given, but mdnode at 192.0.2.2:4791 is a "
		       "node of its own, in no replica group: Invalid argument (EINVAL)\n"
		       "hint: name the group with --group ID\n");
	// with --volume-id, the options are all there is
	assert_failure(own, {"attach", "-i", "3", "-S", "77", "-R", "192.0.2.3"},
		       "mdctl: attach failed: --replica given without a replica group: Invalid "
		       "argument (EINVAL)\nhint: name it with --group ID, or set 'group' in "
		       "mdctl.conf\n");
	assert_failure(own, {"attach", "-i", "3", "-S", "77", "-g", "5"},
		       std::string("mdctl: attach failed: replica group 5: where its replicas "
				   "serve hosts is not known: Invalid argument (EINVAL)\n") +
			       kReplicasHint);
	assert_true(own.sys.requests.empty());
	assert_true(own.node.connections.size() == 1);	// only the attach by name asked

	// A module from before groups: the attach fails, the bindings are undone.
	GroupWorld old;
	old.module.version[1] = 2;
	o = old.run({"attach", "db", "-S", "77", "-R", "192.0.2.3"});
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err.c_str(), "mdctl: attach failed: the module speaks ioctl ABI "));
	assert_non_null(strstr(o.err.c_str(), "\nhint: install mdctl and the module from the "
					      "same release (replica groups need ioctl ABI "));
	assert_true(old.module.bound.empty());
	assert_true(old.module.attached.empty());
	// ... which attaches to a node of its own as ever
	World old_own;
	old_own.module.version[1] = 2;
	old_own.volume("db", 1ULL << 30, 4);
	assert_int_equal(old_own.run({"attach", "db"}).status, 0);
}

static void test_attach_group_usage(void **)
{
	assert_usage({"attach", "db", "-R", "storage"},
		     "--replica: bad replica address 'storage': expected IPv4[:PORT], IPv6 or "
		     "[IPv6]:PORT");
	assert_usage({"attach", "db", "-R", "192.0.2.3", "-R", "192.0.2.3:4791"},
		     "--replica: replica '192.0.2.3:4791' given twice");
	assert_usage({"attach", "db", "-R", "1.0.0.1", "-R", "1.0.0.2", "-R", "1.0.0.3", "-R",
		      "1.0.0.4", "-R", "1.0.0.5", "-R", "1.0.0.6", "-R", "1.0.0.7", "-R", "1.0.0.8",
		      "-R", "1.0.0.9"},
		     "--replica: more than 8 replicas");
	assert_usage({"attach", "db", "-g", "x"}, "bad group 'x'");
	assert_usage({"attach", "db", "-g", "0", "-R", "192.0.2.3"},
		     "--group 0 names no replica group: --replica goes with a group's id");
}

// --all-of: one GROUP_STATUS, every volume attached with the group.
static void test_attach_all_of_group(void **)
{
	GroupWorld w;
	w.module.node_volumes[2] = {1ULL << 30, 22, "a"};
	w.module.node_volumes[3] = {1ULL << 30, 22, "b"};
	w.host.files["/batch"] = "a 1G\nb 1G\n";
	Outcome o = w.run({"attach", "-a", "/batch", "-j", "1", "-S", "77", "-R", "192.0.2.3"});
	assert_int_equal(o.status, 0);
	assert_int_equal(std::ranges::count(w.node.requests, uint16_t{MDR_OP_GROUP_STATUS}), 1);
	assert_int_equal(w.module.attached.size(), 2);
	for (const auto &[index, v] : w.module.attached)
		assert_int_equal(v.group, 7);

	GroupWorld f;
	f.host.files["/batch"] = "a 1G\n";
	o = f.run({"attach", "-a", "/batch", "-R", "192.0.2.3"});
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err.c_str(), "replica group 7: Required key not available"));
	assert_true(f.sys.requests.empty());
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

Outcome run_locked(World &w, std::initializer_list<std::string> args)
{
	LockedSys sys(w.sys);

	return run_mdctl(args, sys, w.host);
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

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attach_by_name),
		cmocka_unit_test(test_attach_by_name_failures),
		cmocka_unit_test(test_attach_loads_module),
		cmocka_unit_test(test_attach_group_by_name),
		cmocka_unit_test(test_attach_group_from_node),
		cmocka_unit_test(test_attach_group_from_config),
		cmocka_unit_test(test_attach_group_failures),
		cmocka_unit_test(test_attach_group_usage),
		cmocka_unit_test(test_attach_all_of_group),
		cmocka_unit_test(test_attach_all_of),
		cmocka_unit_test(test_batches_pipeline),
		cmocka_unit_test(test_attach_all_of_rolls_back),
		cmocka_unit_test(test_batch_jobs),
		cmocka_unit_test(test_batch_file_errors),
		cmocka_unit_test(test_detach_by_name),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
