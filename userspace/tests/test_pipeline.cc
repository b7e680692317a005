// SPDX-License-Identifier: GPL-2.0
//
// test_pipeline.cc - the window of requests pipelined on one connection
// (lib/client/pipeline.h, RdmaClient::call_many): credits, req_ids, replies in any
// order, replies that are not ours, giving up.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <set>
#include <vector>

#include "lib/client/pipeline.h"

#include "tests/common/cmocka_cxx.h"

using mdr::Pipeline;

// Never more than the depth outstanding; sent in order, ids unique and
// growing; the window refills as replies come.
static void test_pipeline_respects_credits(void **)
{
	Pipeline p(10, 4, 100);
	std::vector<Pipeline::Send> sent;

	while (auto s = p.next())
		sent.push_back(*s);
	assert_int_equal(sent.size(), 4);
	assert_int_equal(p.outstanding(), 4);
	for (size_t i = 0; i < sent.size(); i++) {
		assert_int_equal(sent[i].index, i);
		assert_int_equal(sent[i].req_id, 100 + i);
	}
	assert_false(p.next().has_value());	// no credit left
	assert_int_equal(*p.complete(102), 2);	// out of order
	auto s = p.next();
	assert_true(s && s->index == 4 && s->req_id == 104);
	assert_false(p.next().has_value());
	assert_false(p.done());
}

// Replies that are not outstanding (duplicates, late, forged, never
// sent) are not ours, and change nothing.
static void test_pipeline_drops_unknown_replies(void **)
{
	Pipeline p(3, 8, 1);
	while (p.next())
		;
	assert_false(p.complete(0).has_value());
	assert_false(p.complete(4).has_value());	// not sent
	assert_int_equal(*p.complete(2), 1);
	assert_false(p.complete(2).has_value());	// twice
	assert_int_equal(p.outstanding(), 2);
	assert_int_equal(*p.complete(3), 2);
	assert_int_equal(*p.complete(1), 0);
	assert_true(p.done());
	assert_int_equal(p.next_id(), 4);
}

// A depth of 1 is one request at a time; 0 counts as 1.
static void test_pipeline_depth_one(void **)
{
	for (unsigned depth : {0u, 1u}) {
		Pipeline p(3, depth, 7);
		for (uint64_t i = 0; i < 3; i++) {
			auto s = p.next();
			assert_true(s && s->index == i && s->req_id == 7 + i);
			assert_false(p.next().has_value());
			assert_int_equal(*p.complete(s->req_id), i);
		}
		assert_true(p.done());
		assert_false(p.next().has_value());
	}
}

// Giving up returns what is outstanding and what was never sent; a reply
// to one of them afterwards is not ours.
static void test_pipeline_abandon(void **)
{
	Pipeline p(6, 2, 50);
	p.next();
	p.next();
	assert_int_equal(*p.complete(50), 0);
	p.next();					// index 2, id 52
	std::vector<size_t> left = p.abandon();
	std::sort(left.begin(), left.end());
	assert_true((left == std::vector<size_t>{1, 2, 3, 4, 5}));
	assert_true(p.done());
	assert_false(p.complete(51).has_value());
	assert_false(p.next().has_value());
	assert_int_equal(p.next_id(), 53);		// ids are never reused
}

// Many requests, replies in random order with strays mixed in: every
// request completes exactly once, the window is never exceeded, req_ids
// never repeat, and a later pipeline on the connection continues the ids.
static void test_pipeline_random_order(void **)
{
	std::mt19937_64 rng(42);
	for (unsigned depth : {1u, 3u, 32u}) {
		const size_t n = 1000;
		Pipeline p(n, depth, 1);
		std::vector<uint64_t> in_flight;
		std::vector<int> done(n, 0);
		std::set<uint64_t> ids;
		while (!p.done()) {
			while (auto s = p.next()) {
				assert_true(ids.insert(s->req_id).second);
				in_flight.push_back(s->req_id);
			}
			assert_true(p.outstanding() <= depth);
			assert_false(p.complete(rng() | (1ull << 63)).has_value());
			std::uniform_int_distribution<size_t> pick(0, in_flight.size() - 1);
			const size_t k = pick(rng);
			std::optional<size_t> i = p.complete(in_flight[k]);
			assert_true(i.has_value());
			done[*i]++;
			in_flight.erase(in_flight.begin() + long(k));
		}
		assert_true(std::all_of(done.begin(), done.end(), [](int d) { return d == 1; }));
		Pipeline q(1, depth, p.next_id());
		assert_false(ids.contains(q.next()->req_id));
	}
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pipeline_respects_credits),
		cmocka_unit_test(test_pipeline_drops_unknown_replies),
		cmocka_unit_test(test_pipeline_depth_one),
		cmocka_unit_test(test_pipeline_abandon),
		cmocka_unit_test(test_pipeline_random_order),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
