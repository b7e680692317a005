// SPDX-License-Identifier: GPL-2.0
/*
 * lease.c - the arithmetic of a host connection's time: the backoff of its
 * reconnects, and the deadline and renewal of its leases.
 *
 * Pure, as proto.h says.
 */
#include <linux/minmax.h>
#include <linux/time64.h>

#include "proto/proto.h"

/**
 * mdr_backoff_ms() - delay before reconnect attempt @attempt (0-based)
 * @attempt:	failed attempts so far
 * @base_ms:	delay of the first attempt
 * @max_ms:	cap of the exponential growth
 * @rnd:	a random number (the caller's prandom)
 *
 * Exponential with "equal jitter": the delay d = min(base * 2^attempt,
 * max) is drawn uniformly from [d/2, d], so hosts that lost the same
 * node do not come back in lock step.
 *
 * Return: milliseconds.
 */
u32 mdr_backoff_ms(unsigned int attempt, u32 base_ms, u32 max_ms, u32 rnd)
{
	u64 d = base_ms;

	if (!base_ms)
		return 0;
	if (attempt >= 32 || (d << attempt) > max_ms)
		d = max_ms;
	else
		d <<= attempt;
	return d / 2 + rnd % (d - d / 2 + 1);
}

u64 mdr_lease_margin_ms(u32 lease_ms)
{
	return MDR_LEASE_DRIFT_MS + lease_ms / 64;
}

/**
 * mdr_lease_deadline() - when a lease stops being trusted here
 * @sent_ns:	monotonic time the OPEN or RENEW was sent
 * @lease_ms:	the lease granted
 *
 * Return: monotonic ns; @sent_ns itself when the margin eats the lease.
 */
u64 mdr_lease_deadline(u64 sent_ns, u32 lease_ms)
{
	u64 margin = mdr_lease_margin_ms(lease_ms);

	if (margin >= lease_ms)
		return sent_ns;
	return sent_ns + (lease_ms - margin) * NSEC_PER_MSEC;
}

/* Renew a third of the way in: two more tries fit before the deadline. */
u64 mdr_lease_renew_at(u64 sent_ns, u32 lease_ms)
{
	return sent_ns + (u64)(lease_ms / 3) * NSEC_PER_MSEC;
}

bool mdr_lease_valid(u64 now_ns, u64 deadline_ns)
{
	return now_ns < deadline_ns;
}
