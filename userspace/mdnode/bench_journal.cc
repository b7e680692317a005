// SPDX-License-Identifier: GPL-2.0
//
// bench_journal.cc - mdnode-bench-journal: how many metadata updates per
// second the journal makes durable, how long each waits for its ack, and
// how long replaying the result takes.
//
// A closed loop of --clients clients, each appending one record, waiting
// for its callback and appending the next. The loop polls the journal's
// event fd and appends for the clients acknowledged, as mdnode's loop
// replies from the callbacks and receives the next requests afterwards.
//
// First, in the same directory, the disk's own price of durability: 4 KiB
// writes appended one at a time to a new file with O_DIRECT|O_DSYNC (as
// the journal's RWF_DSYNC batches, each also commits the new file size).
// The journal's figures are then given as ratios to it: the ack p99 over
// one durable write's p99, and updates/s over durable writes/s.
//
// Prints one line per figure, then the same as one JSON line.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "lib/util/args.h"
#include "lib/util/errors.h"
#include "lib/util/json.h"
#include "mdnode/journal.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint16_t kRecordType = 1;

struct Options {
	std::string dir;		// empty: a new directory under /var/tmp
	uint64_t records = 1000000;
	uint32_t clients = 4096;
	uint32_t payload = 48;
	unsigned queue_depth = 4;
	uint64_t segment_mib = 64;
	uint64_t baseline_writes = 4096;
	bool keep = false;
};

const char kUsage[] =
	"Usage: mdnode-bench-journal [OPTIONS]\n"
	"Appends records to a journal as fast as a closed loop of clients can,\n"
	"then replays the journal, and prints the figures.\n"
	"\n"
	"  -d, --dir DIR          an existing directory without a journal (default: a\n"
	"                         new one under /var/tmp, removed afterwards)\n"
	"  -n, --records N        records to append (default 1000000; 10000000 for\n"
	"                         the recovery target)\n"
	"  -c, --clients N        records outstanding at most (default 4096)\n"
	"  -p, --payload BYTES    payload of each record (default 48)\n"
	"  -q, --queue-depth N    batch writes in flight at most (default 4)\n"
	"  -s, --segment-mib N    segment size limit (default 64)\n"
	"  -b, --baseline-writes N  4 KiB O_DIRECT|O_DSYNC writes that measure the\n"
	"                         disk first (default 4096; 0: none)\n"
	"  -k, --keep             keep the journal directory\n"
	"  -h, --help             this text\n";

enum OptId {
	kDir, kRecords, kClients, kPayload, kQueueDepth, kSegment, kBaseline, kKeep, kHelp
};

bool parse_number(std::string_view s, uint64_t min, uint64_t max, uint64_t &out)
{
	char *end;
	const std::string str(s);

	errno = 0;
	unsigned long long v = std::strtoull(str.c_str(), &end, 10);
	if (str.empty() || *end || errno || v < min || v > max || str[0] == '-')
		return false;
	out = v;
	return true;
}

// 0 on success, else the exit status (2: usage, 0 for --help).
int parse_options(int argc, char **argv, Options &o, bool &help)
{
	static const mdr::OptionSpec specs[] = {
		{kDir, "dir", 'd', true},		{kRecords, "records", 'n', true},
		{kClients, "clients", 'c', true},	{kPayload, "payload", 'p', true},
		{kQueueDepth, "queue-depth", 'q', true}, {kSegment, "segment-mib", 's', true},
		{kBaseline, "baseline-writes", 'b', true},
		{kKeep, "keep", 'k', false},		{kHelp, "help", 'h', false},
	};
	std::vector<std::string_view> args(argv + 1, argv + argc);
	auto parsed = mdr::parse_args(args, specs);
	if (!parsed.ok()) {
		std::fprintf(stderr, "mdnode-bench-journal: %s\n%s", parsed.message().c_str(),
			     kUsage);
		return 2;
	}
	if (!parsed.value().operands.empty()) {
		std::fprintf(stderr, "mdnode-bench-journal: unexpected operand '%.*s'\n%s",
			     static_cast<int>(parsed.value().operands[0].size()),
			     parsed.value().operands[0].data(), kUsage);
		return 2;
	}
	for (const mdr::ParsedOption &opt : parsed.value().options) {
		uint64_t v = 0;
		bool ok = true;

		switch (opt.id) {
		case kDir:
			o.dir = opt.value;
			break;
		case kRecords:
			ok = parse_number(opt.value, 1, UINT32_MAX, o.records);
			break;
		case kClients:
			ok = parse_number(opt.value, 1, 1 << 20, v);
			o.clients = static_cast<uint32_t>(v);
			break;
		case kPayload:
			ok = parse_number(opt.value, 8, mdnode::Journal::kMaxPayload, v);
			o.payload = static_cast<uint32_t>(v);
			break;
		case kQueueDepth:
			ok = parse_number(opt.value, 1, 64, v);
			o.queue_depth = static_cast<unsigned>(v);
			break;
		case kSegment:
			ok = parse_number(opt.value, 1, 1 << 20, o.segment_mib);
			break;
		case kBaseline:
			ok = parse_number(opt.value, 0, 1 << 20, o.baseline_writes);
			break;
		case kKeep:
			o.keep = true;
			break;
		case kHelp:
			help = true;
			break;
		}
		if (!ok) {
			std::fprintf(stderr,
				     "mdnode-bench-journal: bad value '%.*s' for an option\n%s",
				     static_cast<int>(opt.value.size()), opt.value.data(), kUsage);
			return 2;
		}
	}
	return 0;
}

int fail(const char *what, const mdr::Status &st)
{
	std::fprintf(stderr, "mdnode-bench-journal: %s: %s\n", what,
		     st.message().empty() ? mdr::describe_errno(-st.error()).c_str()
					  : st.message().c_str());
	return 1;
}

uint64_t percentile(const std::vector<uint32_t> &sorted, double p)
{
	return sorted[std::min(sorted.size() - 1, static_cast<size_t>(p * sorted.size()))];
}

// The closed loop. Latencies in ns, indexed by record.
class Load {
public:
	Load(mdnode::Journal &j, const Options &o)
		: j_(j), o_(o), start_(o.clients), latency_(o.records), payload_(o.payload)
	{
	}

	mdr::Status run()
	{
		for (uint32_t c = 0; c < o_.clients && c < o_.records; c++)
			ready_.push_back(c);
		while (acked_ < o_.records && error_.ok()) {
			for (uint32_t c : ready_) {
				mdr::Status st = issue(c);
				if (!st.ok())
					return st;
			}
			ready_.clear();

			struct pollfd p = {j_.event_fd(), POLLIN, 0};
			if (poll(&p, 1, -1) < 0 && errno != EINTR)
				return mdr::Error(-errno, "poll");
			j_.process_completions();
		}
		if (!error_.ok())
			return error_;
		return j_.flush();
	}

	std::vector<uint32_t> &latency() { return latency_; }

private:
	mdr::Status issue(uint32_t client)
	{
		const uint64_t n = issued_++;

		std::memcpy(payload_.data(), &n, sizeof(n));
		start_[client] = Clock::now();
		// 16 bytes of capture fit in std::function without allocating:
		// n < 2^32 and client < 2^20 share one word.
		const uint64_t tag = n << 32 | client;
		return j_.append(kRecordType, payload_,
				 [this, tag](const mdr::Status &st) { done(tag, st); });
	}

	void done(uint64_t tag, const mdr::Status &st)
	{
		const uint64_t n = tag >> 32;
		const auto client = static_cast<uint32_t>(tag);

		if (!st.ok()) {
			if (error_.ok())
				error_ = st;
			return;
		}
		latency_[n] = static_cast<uint32_t>(std::min<int64_t>(
			UINT32_MAX, std::chrono::duration_cast<std::chrono::nanoseconds>(
					    Clock::now() - start_[client]).count()));
		acked_++;
		if (issued_ + ready_.size() < o_.records)
			ready_.push_back(client);
	}

	mdnode::Journal &j_;
	const Options &o_;
	std::vector<Clock::time_point> start_;	// of each client's record
	std::vector<uint32_t> latency_;
	std::vector<std::byte> payload_;
	std::vector<uint32_t> ready_;	// clients to append for
	uint64_t issued_ = 0, acked_ = 0;
	mdr::Status error_;
};

double seconds(Clock::duration d)
{
	return std::chrono::duration<double>(d).count();
}

uint64_t pct(double ratio)
{
	return static_cast<uint64_t>(ratio * 100 + 0.5);
}

// The disk's durable-write latency, one write at a time.
struct Baseline {
	uint64_t writes = 0;
	bool direct = false;
	uint64_t p50 = 0, p99 = 0;	// ns
	uint64_t per_s = 0;		// writes/s
};

mdr::Result<Baseline> measure_baseline(const std::string &dir, uint64_t writes)
{
	constexpr size_t kWrite = 4096;
	const std::string path = dir + "/dsync-baseline";
	Baseline b{.writes = writes};

	int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_DIRECT | O_DSYNC | O_CLOEXEC,
		      0600);
	if (fd >= 0) {
		b.direct = true;
	} else if (errno == EINVAL) {	// no O_DIRECT here: as the journal, go without
		fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_DSYNC | O_CLOEXEC, 0600);
	}
	if (fd < 0)
		return mdr::Error(-errno, "cannot create " + path);

	void *buf = nullptr;
	if (posix_memalign(&buf, kWrite, kWrite)) {
		close(fd);
		unlink(path.c_str());
		return mdr::Error(-ENOMEM, "buffer");
	}
	std::memset(buf, 0x5a, kWrite);

	std::vector<uint32_t> lat(writes);
	mdr::Status st;
	const Clock::time_point t0 = Clock::now();
	for (uint64_t i = 0; i < writes && st.ok(); i++) {
		const Clock::time_point w0 = Clock::now();

		if (pwrite(fd, buf, kWrite, static_cast<off_t>(i * kWrite)) !=
		    static_cast<ssize_t>(kWrite))
			st = mdr::Error(errno ? -errno : -EIO, "pwrite to " + path);
		lat[i] = static_cast<uint32_t>(std::min<int64_t>(
			UINT32_MAX, std::chrono::duration_cast<std::chrono::nanoseconds>(
					    Clock::now() - w0).count()));
	}
	const double total_s = seconds(Clock::now() - t0);
	std::free(buf);
	close(fd);
	unlink(path.c_str());
	if (!st.ok())
		return mdr::Error(st.error(), st.message());

	std::sort(lat.begin(), lat.end());
	b.p50 = percentile(lat, 0.50);
	b.p99 = percentile(lat, 0.99);
	b.per_s = static_cast<uint64_t>(static_cast<double>(writes) / total_s);
	return b;
}

int bench(const Options &o)
{
	Baseline base;
	if (o.baseline_writes) {
		auto b = measure_baseline(o.dir, o.baseline_writes);
		if (!b.ok())
			return fail("baseline", mdr::Status(mdr::Error(b.error(), b.message())));
		base = b.value();
	}

	mdnode::JournalOptions jo;
	jo.dir = o.dir;
	jo.segment_bytes = o.segment_mib << 20;
	jo.queue_depth = o.queue_depth;
	jo.log = [](const std::string &line) { std::fprintf(stderr, "%s\n", line.c_str()); };

	auto opened = mdnode::Journal::open(
		jo,
		[](std::span<const std::byte>) {
			return mdr::Status(mdr::Error(-EEXIST, "the directory holds a journal"));
		},
		[](uint16_t, std::span<const std::byte>) {
			return mdr::Status(mdr::Error(-EEXIST, "the directory holds a journal"));
		});
	if (!opened.ok())
		return fail("open", mdr::Status(mdr::Error(opened.error(), opened.message())));
	std::unique_ptr<mdnode::Journal> j = std::move(opened).value();

	Load load(*j, o);
	const Clock::time_point t0 = Clock::now();
	mdr::Status st = load.run();
	const double append_s = seconds(Clock::now() - t0);
	if (!st.ok())
		return fail("append", st);
	const mdnode::Journal::Stats stats = j->stats();
	const bool direct = j->direct_io();
	j.reset();

	std::vector<uint32_t> &lat = load.latency();
	std::sort(lat.begin(), lat.end());

	// Replay, checking that every record comes back once, in order.
	uint64_t replayed = 0;
	const Clock::time_point t1 = Clock::now();
	opened = mdnode::Journal::open(
		jo, [](std::span<const std::byte>) { return mdr::Status(); },
		[&replayed](uint16_t type, std::span<const std::byte> payload) {
			uint64_t n;

			if (type != kRecordType || payload.size() < sizeof(n))
				return mdr::Status(mdr::Error(-EBADMSG, "unexpected record"));
			std::memcpy(&n, payload.data(), sizeof(n));
			if (n != replayed++)
				return mdr::Status(mdr::Error(-EBADMSG, "record out of order"));
			return mdr::Status();
		});
	const double replay_s = seconds(Clock::now() - t1);
	if (!opened.ok())
		return fail("reopen", mdr::Status(mdr::Error(opened.error(), opened.message())));
	if (replayed != o.records) {
		std::fprintf(stderr, "mdnode-bench-journal: replayed %llu records of %llu\n",
			     static_cast<unsigned long long>(replayed),
			     static_cast<unsigned long long>(o.records));
		return 1;
	}

	const auto rate = static_cast<uint64_t>(static_cast<double>(o.records) / append_s);
	const auto replay_rate = static_cast<uint64_t>(static_cast<double>(replayed) / replay_s);
	const uint64_t p50 = percentile(lat, 0.50), p99 = percentile(lat, 0.99),
		       p999 = percentile(lat, 0.999), max = lat.back();

	std::printf("dir: %s (%s)\n", o.dir.c_str(), direct ? "O_DIRECT" : "buffered");
	std::printf("records: %llu of %u bytes, %u clients, queue depth %u\n",
		    static_cast<unsigned long long>(o.records), o.payload, o.clients,
		    o.queue_depth);
	std::printf("updates/s: %llu\n", static_cast<unsigned long long>(rate));
	std::printf("ack latency p50: %.1f us\n", static_cast<double>(p50) / 1e3);
	std::printf("ack latency p99: %.1f us\n", static_cast<double>(p99) / 1e3);
	std::printf("ack latency p99.9: %.1f us\n", static_cast<double>(p999) / 1e3);
	std::printf("ack latency max: %.1f us\n", static_cast<double>(max) / 1e3);
	std::printf("batches: %llu (%.1f records each), %.1f MiB written, %llu syncs, "
		    "%llu segments\n",
		    static_cast<unsigned long long>(stats.batches),
		    static_cast<double>(stats.records) / static_cast<double>(stats.batches),
		    static_cast<double>(stats.bytes) / (1 << 20),
		    static_cast<unsigned long long>(stats.syncs),
		    static_cast<unsigned long long>(stats.segments));
	std::printf("recovery: %llu records in %.3f s (%llu records/s)\n",
		    static_cast<unsigned long long>(replayed), replay_s,
		    static_cast<unsigned long long>(replay_rate));
	// Ratios to the disk: how much group commit buys over durable writes
	// one at a time, and what an ack costs over one such write.
	double p99_ratio = 0, rate_ratio = 0;
	if (base.writes) {
		p99_ratio = static_cast<double>(p99) / static_cast<double>(base.p99);
		rate_ratio = static_cast<double>(rate) / static_cast<double>(base.per_s);
		std::printf("baseline: %llu x 4 KiB %s|O_DSYNC appending writes, one at a time: "
			    "p50 %.1f us, p99 %.1f us, %llu writes/s\n",
			    static_cast<unsigned long long>(base.writes),
			    base.direct ? "O_DIRECT" : "buffered",
			    static_cast<double>(base.p50) / 1e3,
			    static_cast<double>(base.p99) / 1e3,
			    static_cast<unsigned long long>(base.per_s));
		std::printf("ack p99 / write p99: %.2f\n", p99_ratio);
		std::printf("updates/s / writes/s: %.1f\n", rate_ratio);
	}

	mdr::JsonWriter w;
	w.begin_object()
		.key("records").value(o.records)
		.key("payload_bytes").value(o.payload)
		.key("clients").value(o.clients)
		.key("queue_depth").value(o.queue_depth)
		.key("direct_io").value(direct)
		.key("updates_per_s").value(rate)
		.key("ack_p50_ns").value(p50)
		.key("ack_p99_ns").value(p99)
		.key("ack_p999_ns").value(p999)
		.key("ack_max_ns").value(max)
		.key("batches").value(stats.batches)
		.key("bytes_written").value(stats.bytes)
		.key("syncs").value(stats.syncs)
		.key("segments").value(stats.segments)
		.key("recovery_ms").value(static_cast<uint64_t>(replay_s * 1e3))
		.key("recovery_records_per_s").value(replay_rate);
	if (base.writes)
		w.key("baseline_writes").value(base.writes)
			.key("baseline_direct_io").value(base.direct)
			.key("baseline_write_p50_ns").value(base.p50)
			.key("baseline_write_p99_ns").value(base.p99)
			.key("baseline_writes_per_s").value(base.per_s)
			// ratios in percent: the writer takes integers only
			.key("ack_p99_over_write_p99_pct").value(pct(p99_ratio))
			.key("updates_over_writes_per_s_pct").value(pct(rate_ratio));
	w.end_object();
	std::printf("%s\n", w.str().c_str());
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	Options o;
	bool help = false;

	if (int ret = parse_options(argc, argv, o, help))
		return ret;
	if (help) {
		std::fputs(kUsage, stdout);
		return 0;
	}

	const bool made_dir = o.dir.empty();
	if (made_dir) {
		char tmpl[] = "/var/tmp/mdnode-bench-journal.XXXXXX";

		if (!mkdtemp(tmpl)) {
			std::fprintf(stderr, "mdnode-bench-journal: mkdtemp: %s\n",
				     mdr::describe_errno(errno).c_str());
			return 1;
		}
		o.dir = tmpl;
	}
	const int ret = bench(o);
	if (made_dir && !o.keep) {
		std::error_code ec;

		std::filesystem::remove_all(o.dir, ec);
		if (ec)
			std::fprintf(stderr, "mdnode-bench-journal: removing %s: %s\n",
				     o.dir.c_str(), ec.message().c_str());
	}
	return ret;
}
