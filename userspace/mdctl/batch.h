// SPDX-License-Identifier: GPL-2.0
//
// batch.h - what the --all-of commands share (volume delete, attach,
// detach): the batch file, the jobs that run N at a time, and --timing.
#ifndef MDCTL_BATCH_H
#define MDCTL_BATCH_H

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "mdctl/env.h"

namespace mdctl {

struct BatchLine {
	std::string name;
	std::optional<uint64_t> size;		// create it if missing
	uint32_t extent_shift = 0;		// 0: the default
};

// The lines of a batch file: "NAME [SIZE [EXTENT_SIZE]]", blank lines and
// '#' comments ignored. Fails with a usage error naming FILE:LINE.
std::optional<int> read_batch(const Env &env, std::string_view command, const std::string &path,
			      std::vector<BatchLine> &lines);

inline constexpr unsigned kDefaultJobs = 4;
inline constexpr unsigned kMaxJobs = 64;

// --jobs N: 1 to kMaxJobs, decimal.
std::optional<int> parse_jobs(const Env &env, std::string_view text, unsigned &jobs);

// Calls fn(i) for every i below @n from @jobs threads, and hands out no
// more once one returns false. Attaches and detaches overlap in the
// module: it holds its volume lock neither while it opens a volume at the
// node and adds the disk, nor while it removes the disk and closes it.
template <typename Fn>
void run_jobs(size_t n, unsigned jobs, Fn fn)
{
	std::atomic<size_t> next = 0;
	std::atomic<bool> failed = false;
	auto worker = [&] {
		for (size_t i; !failed && (i = next++) < n;)
			if (!fn(i))
				failed = true;
	};
	std::vector<std::thread> threads;

	for (size_t t = 1; t < std::min<size_t>(jobs, n); t++)
		threads.emplace_back(worker);
	worker();
	for (std::thread &t : threads)
		t.join();
}

// Seconds since @start, for --timing.
double since(std::chrono::steady_clock::time_point start);

// --timing: "name: 1000 in 12.345 s (12.345 ms each)".
void print_timing(const Env &env, std::string_view command, std::string_view step, size_t n,
		  double secs);

// --timing of one call per volume (an ioctl), from a clock around each:
// "attach ioctl: min 1.2 ms, median 3.4 ms, p90 .., p99 .., max ..; sum
// 12.3 s". The sum over the wall time of the step is how much the jobs
// overlapped.
void print_latencies(const Env &env, std::string_view command, std::string_view step,
		     std::vector<double> secs);

} // namespace mdctl

#endif // MDCTL_BATCH_H
