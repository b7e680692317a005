// SPDX-License-Identifier: GPL-2.0
//
// test_vm_client.cc - what the VM test programs share and can be checked
// without RDMA (tests/vm/vm_client.h): the latency summary of a load
// (mdr-test-node-client's allocbench), whose p99 the replication
// benchmark compares between two runs, and where a client that follows a
// group's leader (--follow) connects next.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tests/vm/vm_client.h"

#include "tests/common/cmocka_cxx.h"

using mdr::test::LatencySummary;
using mdr::test::Replicas;
using mdr::test::summarize_latencies;

// Nearest rank: of 1..100 in any order, p50 is the 50th value and p99
// the 99th, not an interpolation.
static void test_vm_client_latency_ranks(void **)
{
	std::vector<uint64_t> v;

	for (uint64_t k = 100; k >= 1; k--)
		v.push_back(k);
	const LatencySummary s = summarize_latencies(v);
	assert_int_equal(s.count, 100);
	assert_int_equal(s.p50, 50);
	assert_int_equal(s.p99, 99);
	assert_int_equal(s.max, 100);
	assert_int_equal(s.mean, 50);	// 50.5, rounded down
}

// Few values: the ranks round up, so p99 of 10 is the largest and p50 of
// 3 the middle one; one value is every figure.
static void test_vm_client_latency_few(void **)
{
	const LatencySummary ten = summarize_latencies({9, 1, 8, 2, 7, 3, 6, 4, 5, 10});
	assert_int_equal(ten.p50, 5);
	assert_int_equal(ten.p99, 10);

	const LatencySummary three = summarize_latencies({30, 10, 20});
	assert_int_equal(three.p50, 20);
	assert_int_equal(three.p99, 30);

	const LatencySummary one = summarize_latencies({7});
	assert_int_equal(one.count, 1);
	assert_int_equal(one.p50, 7);
	assert_int_equal(one.p99, 7);
	assert_int_equal(one.max, 7);
	assert_int_equal(one.mean, 7);
}

// No values (every ALLOC failed): all 0, nothing read out of range.
static void test_vm_client_latency_none(void **)
{
	const LatencySummary s = summarize_latencies({});
	assert_int_equal(s.count, 0);
	assert_int_equal(s.p50, 0);
	assert_int_equal(s.p99, 0);
	assert_int_equal(s.max, 0);
	assert_int_equal(s.mean, 0);
}

// No leader named (a lost connection, a replica that knows none): the
// next replica of the list after the one connected to, round the list.
static void test_vm_client_replicas_round(void **)
{
	Replicas g{.nodes = {"192.0.2.11", "192.0.2.12", "192.0.2.13"}};

	auto n = g.next(std::nullopt, 4791);
	assert_string_equal(n.first.c_str(), "192.0.2.12");
	assert_int_equal(n.second, 4791);
	assert_string_equal(g.next(std::nullopt, 4791).first.c_str(), "192.0.2.13");
	assert_string_equal(g.next(std::nullopt, 4791).first.c_str(), "192.0.2.11");
	assert_int_equal(g.at, 0);
	// All zero (a NOT_LEADER that names no one) is no name either.
	assert_string_equal(g.next(mdr::wire::Leader{}, 4791).first.c_str(), "192.0.2.12");
}

// A leader named: its address and port, and the round goes on after it
// when it is listed (a named leader that refuses is passed over next).
static void test_vm_client_replicas_named(void **)
{
	Replicas g{.nodes = {"192.0.2.11", "192.0.2.12", "192.0.2.13"}};
	auto to = mdr::wire::leader_at(9, 3, "192.0.2.13:4791");
	assert_true(to.has_value());

	auto n = g.next(to, 4000);
	assert_string_equal(n.first.c_str(), "192.0.2.13");
	assert_int_equal(n.second, 4791);
	assert_int_equal(g.at, 2);
	assert_string_equal(g.next(std::nullopt, 4791).first.c_str(), "192.0.2.11");

	// One not listed is gone to all the same; the round stays where it was.
	auto other = mdr::wire::leader_at(10, 4, "192.0.2.14:4791");
	assert_string_equal(g.next(other, 4791).first.c_str(), "192.0.2.14");
	assert_int_equal(g.at, 0);
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vm_client_latency_ranks),
		cmocka_unit_test(test_vm_client_latency_few),
		cmocka_unit_test(test_vm_client_latency_none),
		cmocka_unit_test(test_vm_client_replicas_round),
		cmocka_unit_test(test_vm_client_replicas_named),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
