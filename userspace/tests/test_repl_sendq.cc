// SPDX-License-Identifier: GPL-2.0
//
// test_repl_sendq.cc - the leader's send queue of a replication connection
// (repl_sendq.h), without RDMA: a full send queue holds operations back in
// order until a completion frees it (back-pressure, not an error), only
// notifies, entries with their notify and SENDs are signalled and a
// completion retires the WRITEs before it, a WRITE or an entry over mirror
// bytes one in flight reads waits for it, and too many waiting operations
// end the connection; a follower's DURABLEs, signalled one in half an SQ,
// never overrun it nor wait for a completion that does not come.
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <vector>

#include "mdnode/repl_sendq.h"

#include "tests/common/cmocka_cxx.h"

using namespace mdnode::repl;

namespace {

SendQueue::Op w(uint32_t offset, size_t len)
{
	return {SendQueue::write, offset, std::vector<std::byte>(len)};
}

SendQueue::Op n(uint32_t offset) { return {SendQueue::notify, offset, {}}; }

// Posts what next() gives; the kinds posted, in order.
std::vector<SendQueue::Kind> post_all(SendQueue &q, std::vector<uint64_t> *signalled = nullptr)
{
	std::vector<SendQueue::Kind> out;

	while (const SendQueue::Op *op = q.next()) {
		if (signalled && SendQueue::signalled(*op))
			signalled->push_back(q.next_seq());
		out.push_back(op->kind);
		q.pop();
	}
	return out;
}

void test_full_queue_waits_in_order(void **)
{
	SendQueue q(4, 100);
	std::vector<uint64_t> sig;

	// Three batches: WRITE, notify each; a heartbeat between.
	for (uint32_t b = 0; b < 3; b++) {
		assert_true(q.push(w(b * 64, 64)).ok());
		assert_true(q.push(n(b * 64)).ok());
	}
	assert_true(q.push({SendQueue::send, 0, std::vector<std::byte>(24)}).ok());
	// Four fit; the rest wait, and the wait is counted.
	assert_int_equal(post_all(q, &sig).size(), 4);
	assert_int_equal(q.in_flight(), 4);
	assert_int_equal(q.queued(), 3);
	assert_int_equal(q.waits(), 1);
	// Only the notifies are signalled: WRs 2 and 4.
	assert_int_equal(sig.size(), 2);
	assert_int_equal(sig[0], 2);
	assert_int_equal(sig[1], 4);
	// The first notify's completion retires WRs 1 and 2.
	q.completed(2);
	assert_int_equal(q.in_flight(), 2);
	const std::vector<SendQueue::Kind> next = post_all(q, &sig);
	assert_int_equal(next.size(), 2);
	assert_int_equal(next[0], SendQueue::write);
	assert_int_equal(next[1], SendQueue::notify);
	q.completed(6);
	assert_int_equal(post_all(q, &sig).size(), 1);	// the SEND, signalled
	assert_int_equal(sig.back(), 7);
	q.completed(7);
	assert_int_equal(q.in_flight(), 0);
	assert_int_equal(q.queued(), 0);
}

void test_write_waits_for_bytes_in_flight(void **)
{
	SendQueue q(16, 100);

	assert_true(q.push(w(0, 128)).ok());
	assert_true(q.push(n(0)).ok());
	assert_int_equal(post_all(q).size(), 2);
	// The ring wrapped: the shipper writes at 64 again (the follower
	// consumed it), while the WRITE that reads those mirror bytes is
	// not known complete here.
	assert_true(q.push(w(64, 32)).ok());
	assert_true(q.push(n(64)).ok());
	assert_null(q.next());
	// Nothing passes the waiting WRITE: order is kept.
	assert_int_equal(q.queued(), 2);
	q.completed(2);
	assert_int_equal(post_all(q).size(), 2);
	// A completion never goes back, nor past what was posted.
	q.completed(1);
	assert_int_equal(q.in_flight(), 2);
	q.completed(99);
	assert_int_equal(q.in_flight(), 0);
}

// An entry's WRITE with immediate (write_notify) is signalled and reads
// the mirror as a WRITE does: one over bytes a WRITE or write_notify in
// flight reads waits for its completion, and one in flight holds back a
// WRITE over its bytes.
void test_write_notify(void **)
{
	SendQueue q(16, 100);
	std::vector<uint64_t> sig;
	auto wn = [](uint32_t offset, size_t len) {
		return SendQueue::Op{SendQueue::write_notify, offset, std::vector<std::byte>(len)};
	};

	assert_true(q.push(wn(0, 128)).ok());
	assert_int_equal(post_all(q, &sig).size(), 1);
	assert_int_equal(sig.size(), 1);
	assert_int_equal(sig[0], 1);
	// A wrap marker over its bytes, then an entry at 0 again.
	assert_true(q.push(w(96, 8)).ok());
	assert_true(q.push(wn(0, 64)).ok());
	assert_null(q.next());
	q.completed(1);
	const std::vector<SendQueue::Kind> next = post_all(q, &sig);
	assert_int_equal(next.size(), 2);
	assert_int_equal(next[0], SendQueue::write);
	assert_int_equal(next[1], SendQueue::write_notify);
	// The WRITE not signalled; the entry is, and retires it.
	assert_int_equal(sig.size(), 2);
	assert_int_equal(sig[1], 3);
	assert_true(q.push(wn(96, 32)).ok());
	assert_null(q.next());
	q.completed(3);
	assert_int_equal(post_all(q).size(), 1);
}

void test_too_many_waiting(void **)
{
	SendQueue q(2, 3);

	for (int i = 0; i < 3; i++)
		assert_true(q.push(n(0)).ok());
	mdr::Status st = q.push(n(0));
	assert_false(st.ok());
	assert_int_equal(st.error(), -ENOBUFS);
	// A new connection starts empty.
	q.clear();
	assert_int_equal(q.queued(), 0);
	assert_int_equal(q.next_seq(), 1);
	assert_true(q.push(n(0)).ok());
}

// The follower's SQ simulated for every depth up to 40: DURABLEs posted
// while there is room, the completions of the signalled ones coming late
// and in order, each retiring what was posted up to it. The SQ never holds
// more than depth; whenever it is full, a signalled one is in it (its
// completion will free it); at least every depth / 2 is signalled.
void test_durables_signalled(void **)
{
	for (uint32_t depth = 1; depth <= 40; depth++) {
		std::vector<uint64_t> awaited;	// signalled, not completed
		uint64_t seq = 0, retired = 0, since = 0;

		for (int step = 0; step < 2000; step++) {
			const uint32_t in_sq = uint32_t(seq - retired);

			if (in_sq < depth && step % 3 != 2) {
				const bool sig = durable_signalled(seq + 1, in_sq, depth);

				seq++;
				if (sig) {
					awaited.push_back(seq);
					since = 0;
				} else {
					assert_true(++since < std::max<uint32_t>(depth / 2, 1));
				}
				assert_true(seq - retired <= depth);
				continue;
			}
			if (in_sq == depth)
				assert_false(awaited.empty());
			if (!awaited.empty()) {
				retired = awaited.front();
				awaited.erase(awaited.begin());
			}
		}
		assert_true(seq > 600);
	}
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_queue_waits_in_order),
		cmocka_unit_test(test_write_waits_for_bytes_in_flight),
		cmocka_unit_test(test_write_notify),
		cmocka_unit_test(test_too_many_waiting),
		cmocka_unit_test(test_durables_signalled),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
