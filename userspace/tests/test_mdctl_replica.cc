// SPDX-License-Identifier: GPL-2.0
//
// test_mdctl_replica.cc - mdctl replica add and remove against a fake
// mdnode whose group changes as it is asked: the change sent to the leader
// (followed from a replica that does not lead), then GROUP_STATUS every
// 200 ms until it is done, a line at each step; --no-wait; the failures
// of each status the node answers, a leader that changed before the change
// was done, a timeout; and the usage errors of the command line.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "lib/wire/wire.h"
#include "tests/test_mdctl_node.h"

#include "tests/common/cmocka_cxx.h"

using namespace mdr::test;
namespace wire = mdr::wire;

namespace {

struct Member {
	uint32_t id;
	uint8_t membership = MDR_MEMBER_VOTER;
	uint16_t state = MDR_PEER_STREAMING;
};

// Group 7 as its leader, replica 1, sees it in @epoch: the members given,
// replica N's log at 192.0.2.1N:4800.
wire::GroupStatusRep group(std::initializer_list<Member> members, uint64_t epoch = 5)
{
	wire::GroupStatusRep g{.group = 7, .epoch = epoch, .last_index = 90, .commit_index = 90,
			    .self = 1, .leader = 1, .role = MDR_REPLICA_LEADER};

	for (const Member &m : members)
		g.replicas.push_back({.durable = 90, .id = m.id,
				      .state = m.id == 1 ? uint16_t{MDR_PEER_SELF} : m.state,
				      .port = 4800, .family = MDR_FAMILY_IPV4,
				      .membership = m.membership,
				      .addr = {192, 0, 2, uint8_t(10 + m.id)}});
	return g;
}

const wire::GroupStatusRep kThree = group({{1}, {2}, {3}});

// A group of three that replica 4 joins, a step at each GROUP_STATUS.
struct Joining : World {
	Joining()
	{
		node.group_status = kThree;
		node.group_status_next = {
			group({{1}, {2}, {3}, {4, MDR_MEMBER_LEARNER, MDR_PEER_CONNECTING}}),
			group({{1}, {2}, {3}, {4, MDR_MEMBER_LEARNER}}),
			group({{1}, {2}, {3}, {4, MDR_MEMBER_JOINING}}),
			group({{1}, {2}, {3}, {4}}),
		};
	}
};

// ... and one that replica 2 leaves.
struct Leaving : World {
	Leaving()
	{
		node.group_status = kThree;
		node.group_status_next = {group({{1}, {2, MDR_MEMBER_LEAVING}, {3}}),
					  group({{1}, {3}})};
	}
};

// A run that succeeds with exactly @out and nothing on stderr.
void expect_ok(World &w, std::initializer_list<std::string> args, const std::string &out)
{
	Outcome o = w.run(args);

	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(), out.c_str());
	assert_true(o.err.empty());
}

// A run that fails with exactly @err, after @out (its steps).
void expect_failed(World &w, std::initializer_list<std::string> args, const std::string &out,
		   const std::string &err)
{
	Outcome o = w.run(args);

	assert_int_equal(o.status, 1);
	assert_string_equal(o.out.c_str(), out.c_str());
	assert_string_equal(o.err.c_str(), err.c_str());
}

// A run that fails: what it printed.
Outcome failed(World &w, std::initializer_list<std::string> args)
{
	Outcome o = w.run(args);

	assert_int_equal(o.status, 1);
	return o;
}

// Replica 1 leads at 192.0.2.11:4791 in epoch 5, as a follower names it.
const wire::Leader kLeader = {.epoch = 5, .replica = 1, .port = 4791, .family = MDR_FAMILY_IPV4,
			      .addr = {192, 0, 2, 11}};

const std::string kAdd4 = "replica 4: add begun, its log at 192.0.2.14:4800\n";

const std::vector<uint16_t> kAddAndFourPolls = {
	MDR_OP_GROUP_STATUS, MDR_OP_REPLICA_ADD, MDR_OP_GROUP_STATUS, MDR_OP_GROUP_STATUS,
	MDR_OP_GROUP_STATUS, MDR_OP_GROUP_STATUS};

} // namespace

// An add goes to the leader as given and is waited for: a line at each
// step, a poll every 200 ms.
static void test_add_waits_until_voter(void **)
{
	Joining w;
	expect_ok(w, {"replica", "add", "4", "--addr", "192.0.2.14:4800"},
		  kAdd4 + "replica 4: learner\nreplica 4: joining\nreplica 4: voter\n");
	assert_true(w.node.requests == kAddAndFourPolls);
	assert_true(w.host.slept_ms == (std::vector<int>{200, 200, 200}));
	assert_int_equal(w.node.replica_changes.size(), 1);
	assert_true(std::get<wire::ReplicaAddReq>(w.node.replica_changes[0]) ==
		    (wire::ReplicaAddReq{.id = 4, .port = 4800, .family = MDR_FAMILY_IPV4,
				      .addr = {192, 0, 2, 14}}));

	Joining j;
	expect_ok(j, {"replica", "add", "4", "--addr", "192.0.2.14:4800", "-o", "json"},
		  "{\"node\":\"192.0.2.2:4791\",\"replica\":4,\"change\":\"add\","
		  "\"address\":\"192.0.2.14:4800\",\"done\":true,\"epoch\":5}\n");
}

static void test_remove_waits_until_gone(void **)
{
	Leaving w;
	expect_ok(w, {"replica", "remove", "2"},
		  "replica 2: removal begun\nreplica 2: leaving\nreplica 2: removed\n");
	assert_true(std::get<wire::ReplicaRemoveReq>(w.node.replica_changes.at(0)) ==
		    (wire::ReplicaRemoveReq{.id = 2}));
	assert_true(w.host.slept_ms == (std::vector<int>{200}));

	Leaving j;
	expect_ok(j, {"replica", "remove", "2", "-o", "json"},
		  "{\"node\":\"192.0.2.2:4791\",\"replica\":2,\"change\":\"remove\","
		  "\"done\":true,\"epoch\":5}\n");
}

// Any replica may be named: the change goes to the leader it names, and
// the leader is asked how it goes.
static void test_change_follows_the_leader(void **)
{
	Joining w;
	w.node.followers["192.0.2.2"] = kLeader;
	Outcome o = w.run({"replica", "add", "4", "--addr", "[fd00::4]:4800"});
	assert_int_equal(o.status, 0);
	assert_true(o.out.starts_with("replica 4: add begun, its log at [fd00::4]:4800\n"));
	assert_true(w.node.not_leader == (std::vector<std::string>{"192.0.2.2"}));
	assert_int_equal(w.node.connections.size(), 2);
	assert_string_equal(w.node.connections[1].addr.c_str(), "192.0.2.11");
	const auto &add = std::get<wire::ReplicaAddReq>(w.node.replica_changes.at(0));
	assert_int_equal(add.family, MDR_FAMILY_IPV6);
	assert_int_equal(add.addr[0], 0xfd);
	assert_int_equal(add.addr[15], 4);
}

// --no-wait: once begun, nothing more asked.
static void test_no_wait(void **)
{
	Joining w;
	expect_ok(w, {"replica", "add", "4", "--addr", "192.0.2.14:4800", "--no-wait"}, kAdd4);
	assert_true(w.node.requests ==
		    (std::vector<uint16_t>{MDR_OP_GROUP_STATUS, MDR_OP_REPLICA_ADD}));
	assert_true(w.host.slept_ms.empty());

	Leaving j;
	expect_ok(j, {"replica", "remove", "2", "--no-wait", "-o", "json"},
		  "{\"node\":\"192.0.2.2:4791\",\"replica\":2,\"change\":\"remove\","
		  "\"done\":false,\"epoch\":5}\n");
}

// Each refusal of the leader, with what to do about it; nothing waited for.
static void test_refusals(void **)
{
	const std::string add = "mdctl: replica add failed: replica 4: ";
	const std::string remove = "mdctl: replica remove failed: replica 2: ";
	const struct {
		uint16_t opcode;
		int err;
		std::string want;
	} cases[] = {
		{MDR_OP_REPLICA_ADD, -EBUSY,
		 add + "Device or resource busy (EBUSY)\nhint: another change of the replica set "
		       "runs: see 'mdctl node replicas', and try again once it is done\n"},
		{MDR_OP_REPLICA_ADD, -EEXIST,
		 add + "File exists (EEXIST)\nhint: replica 4 is in the set already: see "
		       "'mdctl node replicas'\n"},
		{MDR_OP_REPLICA_ADD, -EINVAL,
		 add + "Invalid argument (EINVAL)\nhint: the address must be one the new replica "
		       "can listen on\n"},
		{MDR_OP_REPLICA_ADD, -ENOSPC,
		 add + "No space left on device (ENOSPC)\nhint: the group holds as many replicas "
		       "as it can: remove one first\n"},
		{MDR_OP_REPLICA_ADD, -EIO,
		 add + "Input/output error (EIO)\nhint: see the leader's mdnode log\n"},
		{MDR_OP_REPLICA_REMOVE, -ENOENT,
		 remove + "No such file or directory (ENOENT)\nhint: replica 2 is not in the set: "
			  "see 'mdctl node replicas'\n"},
		{MDR_OP_REPLICA_REMOVE, -EINVAL,
		 remove + "Invalid argument (EINVAL)\nhint: the leader cannot remove itself, and a "
			  "group keeps three replicas\n"},
		{MDR_OP_REPLICA_REMOVE, -EPERM,
		 remove + "Operation not permitted (EPERM)\nhint: is the admin key (--key-file, or "
			  "admin-key in mdctl.conf) the one mdnode's admin-key names?\n"},
	};

	for (const auto &c : cases) {
		World w;
		w.node.group_status = kThree;
		w.node.errors[c.opcode] = c.err;
		if (c.opcode == MDR_OP_REPLICA_ADD)
			assert_failure(w, {"replica", "add", "4", "--addr", "192.0.2.14:4800"}, c.want);
		else
			assert_failure(w, {"replica", "remove", "2"}, c.want);
		assert_true(w.host.slept_ms.empty());
	}

	// A follower that cannot reach the leader it names: what it said.
	World f;
	f.node.group_status = kThree;
	f.node.followers["192.0.2.2"] = kLeader;
	f.node.followers["192.0.2.11"] = kLeader;
	assert_true(failed(f, {"replica", "remove", "2"}).err.starts_with("mdctl: replica remove failed: replica 2: MDR_ST_NOT_LEADER: "
				      "replica 1 leads at 192.0.2.11:4791 (epoch 5)"));
	assert_true(f.node.replica_changes.empty());
}

// What the node cannot do at all: no group, or a version before changes.
static void test_node_without_changes(void **)
{
	World w;
	assert_failure(w, {"replica", "add", "4", "--addr", "192.0.2.14:4800"},
		       "mdctl: replica add failed: mdnode at 192.0.2.2:4791 is a node of its own, "
		       "no replica group: Invalid argument (EINVAL)\n");
	assert_true(w.node.replica_changes.empty());

	World old;
	old.node.group_status = kThree;
	old.node.accept.version = wire::kMembershipVersion - 1;
	assert_failure(old, {"replica", "remove", "2"},
		       "mdctl: replica remove failed: mdnode at 192.0.2.2:4791 speaks wire version "
		       "5, which cannot change a replica set: Protocol not supported "
		       "(EPROTONOSUPPORT)\nhint: changes of a replica set came with version 6: "
		       "upgrade mdnode\n");
	assert_true(old.node.requests.empty());
}

// A new leader before the change was done: told, to be run again. Done
// before the leader changed: done.
static void test_leader_changed(void **)
{
	World w;
	w.node.group_status = kThree;
	w.node.group_status_next = {group({{1}, {2}, {3}, {4, MDR_MEMBER_LEARNER}}),
				    group({{1}, {2}, {3}, {4, MDR_MEMBER_LEARNER}}, 6)};
	expect_failed(w, {"replica", "add", "4", "--addr", "192.0.2.14:4800"},
		      kAdd4 + "replica 4: learner\n",
		      "mdctl: replica add failed: the leader changed (epoch 5 -> 6) before "
		      "replica 4 joined: Resource temporarily unavailable (EAGAIN)\n"
		      "hint: run the add again\n");

	World r;
	r.node.group_status = kThree;
	r.node.group_status_next = {group({{1}, {2, MDR_MEMBER_LEAVING}, {3}}, 6)};
	expect_failed(r, {"replica", "remove", "2"}, "replica 2: removal begun\nreplica 2: leaving\n",
		      "mdctl: replica remove failed: the leader changed (epoch 5 -> 6) before "
		      "replica 2 left: Resource temporarily unavailable (EAGAIN)\n"
		      "hint: run the remove again\n");

	World d;
	d.node.group_status = kThree;
	d.node.group_status_next = {group({{1}, {3}}, 6)};
	expect_ok(d, {"replica", "remove", "2"}, "replica 2: removal begun\nreplica 2: removed\n");
}

// The timeout: the waits add up to it, then the last membership and state
// seen are told.
static void test_timeout(void **)
{
	World w;
	w.node.group_status = kThree;
	w.node.group_status_next = {
		group({{1}, {2}, {3}, {4, MDR_MEMBER_LEARNER, MDR_PEER_NEEDS_CHECKPOINT}})};
	expect_failed(w, {"replica", "add", "4", "--addr", "192.0.2.14:4800", "--timeout", "1"},
		      kAdd4 + "replica 4: learner\n",
		      "mdctl: replica add failed: replica 4 is still a learner (needs-checkpoint) "
		      "after 1 s: Connection timed out (ETIMEDOUT)\n"
		      "hint: the change goes on at the leader: see 'mdctl node replicas', or "
		      "wait longer with --timeout\n");
	assert_true(w.host.slept_ms == (std::vector<int>{200, 200, 200, 200, 200}));

	World r;
	r.node.group_status = kThree;
	r.node.group_status_next = {group({{1}, {2, MDR_MEMBER_LEAVING}, {3}})};
	assert_true(failed(r, {"replica", "remove", "2", "--timeout", "2"})
			    .err.starts_with("mdctl: replica remove failed: replica 2 is still "
					     "leaving (streaming) after 2 s: "));
	assert_int_equal(r.host.slept_ms.size(), 10);

	// The default: 300 s.
	World d;
	d.node.group_status = kThree;
	assert_true(failed(d, {"replica", "add", "4", "--addr", "192.0.2.14:4800"})
			    .err.starts_with("mdctl: replica add failed: replica 4 is still not "
					     "listed after 300 s: "));
	assert_int_equal(d.host.slept_ms.size(), 1500);
}

static void test_usage_errors(void **)
{
	const std::string at = "192.0.2.14:4800";

	assert_usage({"replica"}, "replica needs a subcommand: add, remove");
	assert_usage({"replica", "add"}, "replica add needs a replica ID");
	assert_usage({"replica", "add", "0", "--addr", at},
		     "bad replica id '0': expected 1 to 4294967295");
	assert_usage({"replica", "add", "x4", "--addr", at},
		     "bad replica id 'x4': expected 1 to 4294967295");
	assert_usage({"replica", "add", "4"},
		     "replica add needs --addr ADDR:PORT, the new replica's log listener");
	for (const char *bad : {"192.0.2.14:0", "192.0.2.14", "host.example:4800", "fd00::4:4800",
				"0.0.0.0:4800", "192.0.2.14:65536"})
		assert_usage({"replica", "add", "4", "--addr", bad},
			     "bad address '" + std::string(bad) +
				     "': expected IPv4:PORT or [IPv6]:PORT, numeric, port 1 to 65535");
	assert_usage({"replica", "add", "4", "--addr", at, "--timeout", "0"},
		     "bad timeout '0': expected 1 to 86400 seconds");
	assert_usage({"replica", "add", "4", "5", "--addr", at}, "unexpected argument '5'");
	assert_usage({"replica", "remove"}, "replica remove needs a replica ID");
	assert_usage({"replica", "remove", "2", "--addr", at}, "unknown option '--addr'");
	assert_usage({"replica", "remove", "2", "--timeout", "86401"},
		     "bad timeout '86401': expected 1 to 86400 seconds");
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_waits_until_voter),
		cmocka_unit_test(test_remove_waits_until_gone),
		cmocka_unit_test(test_change_follows_the_leader),
		cmocka_unit_test(test_no_wait),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_node_without_changes),
		cmocka_unit_test(test_leader_changed),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_usage_errors),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
