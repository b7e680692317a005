// SPDX-License-Identifier: GPL-2.0
//
// histogram.h - the fixed-bucket histograms of mdnode's metrics, and the
// steady clock in microseconds their durations are read on. Pure: no I/O,
// no lock, no allocation; the owner observes on its own thread, and a copy
// is what the metrics endpoint formats (metrics.h).
//
// Why fixed buckets chosen here and not per deployment: the Prometheus
// histograms of one metric must share their bounds across every mdnode so
// that histogram_quantile() over a fleet adds like with like. An
// observation costs one binary search over at most 16 bounds and two adds.
//
//	Histogram<kLatencyUs> h;
//	const int64_t t0 = mono_us();
//	...
//	h.observe(uint64_t(mono_us() - t0));
#ifndef MDNODE_HISTOGRAM_H
#define MDNODE_HISTOGRAM_H

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace mdnode {

// Microseconds on the steady clock (CopyTimes and the histograms of
// durations use it).
inline int64_t mono_us()
{
	return std::chrono::duration_cast<std::chrono::microseconds>(
		       std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

inline constexpr size_t kHistogramBounds = 16;

// Upper bounds, inclusive (Prometheus' le), ascending, in the unit observed;
// divisor turns that unit into the one exposed (1e6: microseconds to
// seconds; 1: counts). A division, not a product with 1e-6: 1e-6 has no
// exact double, so 25 * 1e-6 prints as 2.4999999999999998e-05, while a
// division is rounded once to the double nearest 2.5e-05 and prints as
// that. The le labels name the bucket series; they must be the decimals.
struct HistogramBounds {
	std::array<uint64_t, kHistogramBounds> le;
	double divisor;
};

// RPCs and acks: RDMA round trips take tens of microseconds, an ALLOC
// journals and zeroes an extent (milliseconds), a MOVE copies one.
inline constexpr HistogramBounds kLatencyUs = {
	{25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000,
	 500000, 1000000, 5000000},
	1e6};
// The time hosts wait on a frozen extent: milliseconds for a pre-copied
// move, up to lease + margin + io hold (25 s by default) for a silent host.
inline constexpr HistogramBounds kStallUs = {
	{1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000,
	 5000000, 10000000, 30000000, 60000000, 120000000},
	1e6};
// Records in one journal batch: 1 when idle, up to what a full batch of
// small records holds (max_batch_bytes 1 MiB).
inline constexpr HistogramBounds kBatchRecords = {
	{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768}, 1};

template <const HistogramBounds &B>
struct Histogram {
	static constexpr const HistogramBounds &bounds = B;

	// counts[i]: observations in (le[i - 1], le[i]]; the last, those
	// above every bound. Not cumulative: the formatter adds them up.
	std::array<uint64_t, kHistogramBounds + 1> counts{};
	uint64_t sum = 0;	// in the unit observed

	void observe(uint64_t v)
	{
		const auto at = std::lower_bound(B.le.begin(), B.le.end(), v);

		counts[size_t(at - B.le.begin())]++;
		sum += v;
	}
	uint64_t count() const
	{
		uint64_t n = 0;

		for (uint64_t c : counts)
			n += c;
		return n;
	}
};

using LatencyHistogram = Histogram<kLatencyUs>;

} // namespace mdnode

#endif // MDNODE_HISTOGRAM_H
