// SPDX-License-Identifier: GPL-2.0
//
// test_node_faults.cc - mdnode when its checkpoints or its signals go
// wrong: a checkpoint in flight does not hold the loop (RENEW and ALLOC
// are answered meanwhile), a failed one is tried again after 1 s,
// doubling up to 60 s and starting over after a success; SIGHUP is read
// and ignored, SIGTERM stops.
#include <cstdint>
#include <cstring>

#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/wire/wire.h"
#include "mdnode/log.h"
#include "mdnode/node.h"
#include "mdnode/startup.h"

#include "tests/test_journal.h"
#include "tests/test_node.h"

#include "tests/common/cmocka_cxx.h"

namespace wire = mdr::wire;
using mdnode::ConnId;

namespace {

using namespace mdr::test;

// A checkpoint after every change.
mdnode::NodeOptions every_change()
{
	mdnode::NodeOptions o = Rig::options();
	o.checkpoint_records = 1;
	return o;
}

// The batch the next checkpoint covers: the last one written, on a
// journal that began empty and has never been reopened.
uint64_t last_batch(const Rig &r)
{
	return r.journal->stats().batches;
}

// While the checkpoint's file is held in its open, the node renews leases
// and allocates (journaled); it starts no second checkpoint; the failure
// of the held one is counted once it ends.
void test_checkpoint_does_not_hold_the_loop(void **)
{
	Rig r(every_change());
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 1);
	const ConnId h = r.host(1, 0xa);
	r.open(h, vol);

	journal_test::HeldCheckpoint held(r.dir, last_batch(r));
	r.node->tick();
	assert_true(r.journal->checkpoint_in_flight());
	assert_int_equal(r.call(h, 2, wire::RenewReq{}), MDR_ST_OK);
	assert_int_equal(r.call(h, 3, wire::AllocReq{.volume_id = vol, .index = 0}), MDR_ST_OK);
	r.node->tick();
	assert_true(r.journal->checkpoint_in_flight());

	held.release();
	r.journal->wait_checkpoint();
	assert_int_equal(r.journal->stats().checkpoint_failures, 1);
	assert_int_equal(r.journal->stats().checkpoints, 0);
	assert_int_equal(r.node->checkpoint_backoff_ms(), mdnode::kCheckpointRetryMinMs);
}

// Ticks until just before the next try (none begins), then at it (one
// begins, and fails while the refusal lasts).
void expect_retry_after(Rig &r, int64_t ms)
{
	assert_int_equal(r.node->checkpoint_backoff_ms(), ms);
	r.now += ms - 1;
	r.node->tick();
	assert_false(r.journal->checkpoint_in_flight());
	r.now += 1;
	r.node->tick();
	assert_true(r.journal->checkpoint_in_flight());
	r.journal->wait_checkpoint();
}

void test_failed_checkpoint_backs_off(void **)
{
	Rig r(every_change());
	const ConnId adm = r.admin();
	r.create(adm, "v", 4 * MiB, 1);
	journal_test::RefusedCheckpoint refused(r.dir, last_batch(r));

	r.node->tick();
	r.journal->wait_checkpoint();
	assert_int_equal(r.journal->stats().checkpoint_failures, 1);
	for (int64_t ms : {1000, 2000, 4000, 8000, 16000, 32000, 60000})
		expect_retry_after(r, ms);
	assert_int_equal(r.journal->stats().checkpoint_failures, 8);
	assert_int_equal(r.node->checkpoint_backoff_ms(), mdnode::kCheckpointRetryMaxMs);

	// Written once the disk takes it; a later failure starts over.
	refused.lift();
	expect_retry_after(r, 60000);
	assert_int_equal(r.journal->stats().checkpoints, 1);
	assert_int_equal(r.node->checkpoint_backoff_ms(), 0);
	r.node->tick();
	assert_false(r.journal->checkpoint_in_flight());

	r.create(adm, "w", 4 * MiB, 1);
	journal_test::RefusedCheckpoint again(r.dir, last_batch(r));
	r.node->tick();
	assert_true(r.journal->checkpoint_in_flight());
	r.journal->wait_checkpoint();
	assert_int_equal(r.journal->stats().checkpoint_failures, 9);
	assert_int_equal(r.node->checkpoint_backoff_ms(), mdnode::kCheckpointRetryMinMs);
}

// In a child, as mdnode's loop takes them: SIGHUP is blocked (it would
// end the process), read and ignored; SIGTERM is read and stops.
void test_sighup_is_ignored(void **)
{
	const pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		mdnode::set_log_level(mdnode::LogLevel::error);
		const sigset_t mask = mdnode::handled_signals();
		signalfd_siginfo si;
		sigprocmask(SIG_BLOCK, &mask, nullptr);
		const int fd = signalfd(-1, &mask, SFD_CLOEXEC);
		if (fd < 0 || kill(getpid(), SIGHUP) < 0 ||
		    read(fd, &si, sizeof(si)) != sizeof(si) || si.ssi_signo != SIGHUP)
			_exit(1);
		if (mdnode::signal_stops(si.ssi_signo))
			_exit(2);
		if (kill(getpid(), SIGTERM) < 0 || read(fd, &si, sizeof(si)) != sizeof(si) ||
		    !mdnode::signal_stops(si.ssi_signo))
			_exit(3);
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

} // namespace

int main()
{
	alarm(60);	// a checkpoint held for ever fails the run, not hangs it
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checkpoint_does_not_hold_the_loop),
		cmocka_unit_test(test_failed_checkpoint_backs_off),
		cmocka_unit_test(test_sighup_is_ignored),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
