// SPDX-License-Identifier: GPL-2.0
//
// log.cc - see log.h.
#include "mdnode/log.h"
#include "mdnode/thread.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <initializer_list>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

namespace mdnode {

namespace {

LogLevel g_level = LogLevel::info;
std::atomic<bool> g_time{false};	// read on any thread

constexpr unsigned kBurst = 10;
constexpr int64_t kWindowMs = 5000;
constexpr size_t kBufferBytes = 256 * 1024;
constexpr auto kFlushWait = std::chrono::seconds(2);

int64_t now_ms()
{
	timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// "2026-12-06T14:05:01.123456Z ", or nothing if the clock cannot say.
void utc_stamp(char *out, size_t size)
{
	timespec ts;
	tm t;

	if (clock_gettime(CLOCK_REALTIME, &ts) || !gmtime_r(&ts.tv_sec, &t) ||
	    !strftime(out, size, "%Y-%m-%dT%H:%M:%S", &t)) {
		out[0] = 0;
		return;
	}
	const size_t used = strlen(out);
	snprintf(out + used, size - used, ".%06ldZ ", ts.tv_nsec / 1000);
}

// journald sets JOURNAL_STREAM=<dev>:<ino> for the stream it reads.
bool stderr_is_journal()
{
	const char *js = getenv("JOURNAL_STREAM");
	struct stat st;
	unsigned long long dev, ino;

	if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(2, &st))
		return false;
	return st.st_dev == dev && st.st_ino == ino;
}

const char *level_name(LogLevel level)
{
	switch (level) {
	case LogLevel::error: return "error";
	case LogLevel::warn: return "warn";
	case LogLevel::info: return "info";
	case LogLevel::debug: return "debug";
	}
	return "?";
}

// Whole lines, or nothing: a write error (a full disk, a file size limit)
// loses the rest of the chunk, as fprintf() lost it before.
void write_all(std::string_view s)
{
	while (!s.empty()) {
		const ssize_t n = write(2, s.data(), s.size());

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		s.remove_prefix(size_t(n));
	}
}

// The bounded buffer and the thread that writes it to stderr.
class Sink {
public:
	Sink() = default;
	Sink(const Sink &) = delete;
	Sink &operator=(const Sink &) = delete;

	~Sink()
	{
		{
			std::lock_guard<std::mutex> l(mu_);
			stop_ = true;
		}
		work_.notify_one();
		if (thread_.joinable())
			thread_.join();
	}

	void put(std::string_view line)
	{
		{
			std::lock_guard<std::mutex> l(mu_);

			if (!thread_.joinable())
				thread_ = thread_without_signals([this] { run(); });
			if (buf_.size() + line.size() > kBufferBytes) {
				dropped_++;
				dropped_total_++;
				return;
			}
			buf_.append(line);
		}
		work_.notify_one();
	}

	void flush()
	{
		std::unique_lock<std::mutex> l(mu_);

		idle_.wait_for(l, kFlushWait,
			       [this] { return buf_.empty() && !dropped_ && !writing_; });
	}

	uint64_t dropped()
	{
		std::lock_guard<std::mutex> l(mu_);
		return dropped_total_;
	}

	bool journal = stderr_is_journal();

private:
	void run()
	{
		std::unique_lock<std::mutex> l(mu_);

		for (;;) {
			work_.wait(l, [this] { return stop_ || !buf_.empty() || dropped_; });
			if (buf_.empty() && !dropped_)
				break;	// stopping, and all is written
			std::string out = std::exchange(buf_, {});
			const uint64_t dropped = std::exchange(dropped_, 0);

			writing_ = true;
			l.unlock();
			// What was dropped came after what was buffered.
			if (dropped) {
				char note[128];
				snprintf(note, sizeof(note),
					 journal ? "<4>log: %" PRIu64 " lines dropped: stderr "
						   "was too slow\n"
						 : "mdnode: warn: log: %" PRIu64 " lines dropped: "
						   "stderr was too slow\n",
					 dropped);
				out += note;
			}
			write_all(out);
			l.lock();
			writing_ = false;
			idle_.notify_all();
		}
		idle_.notify_all();
	}

	std::mutex mu_;
	std::condition_variable work_, idle_;
	std::string buf_;
	uint64_t dropped_ = 0;		// since the last write
	uint64_t dropped_total_ = 0;
	bool writing_ = false;
	bool stop_ = false;
	std::thread thread_;
};

Sink &sink()
{
	static Sink s;
	return s;
}

} // namespace

void set_log_level(LogLevel level) { g_level = level; }
LogLevel log_level() { return g_level; }
void set_log_time(bool utc) { g_time.store(utc, std::memory_order_relaxed); }

bool parse_log_level(const char *name, LogLevel &level)
{
	for (LogLevel l : {LogLevel::error, LogLevel::warn, LogLevel::info, LogLevel::debug})
		if (strcmp(name, level_name(l)) == 0) {
			level = l;
			return true;
		}
	return false;
}

void log_write(LogLevel level, const char *subsystem, const char *func,
	       uint64_t dropped, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (level > g_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	char suffix[64] = "";
	if (dropped)
		snprintf(suffix, sizeof(suffix), " (%" PRIu64 " similar lines dropped)", dropped);
	const bool tag = level == LogLevel::debug;
	Sink &s = sink();
	char stamp[40] = "";
	char line[1240];
	int n;

	if (g_time.load(std::memory_order_relaxed) && !s.journal)
		utc_stamp(stamp, sizeof(stamp));
	if (s.journal)
		n = snprintf(line, sizeof(line), "<%d>%s: %s%s%s%s\n", int(level), subsystem,
			     tag ? func : "", tag ? ": " : "", msg, suffix);
	else
		n = snprintf(line, sizeof(line), "%smdnode: %s: %s: %s%s%s%s\n", stamp,
			     level_name(level), subsystem, tag ? func : "", tag ? ": " : "", msg,
			     suffix);
	if (n < 0)
		return;
	if (size_t(n) >= sizeof(line)) {
		// Cut, but still one line.
		n = int(sizeof(line) - 1);
		line[n - 1] = '\n';
	}
	s.put(std::string_view(line, size_t(n)));
}

void log_flush() { sink().flush(); }
uint64_t log_dropped() { return sink().dropped(); }

bool LogRatelimit::allow(uint64_t *dropped_out)
{
	const int64_t now = now_ms();

	if (now - window_start_ms >= kWindowMs) {
		window_start_ms = now;
		printed = 0;
	}
	if (printed >= kBurst) {
		dropped++;
		return false;
	}
	printed++;
	*dropped_out = dropped;
	dropped = 0;
	return true;
}

} // namespace mdnode
