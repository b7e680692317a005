// SPDX-License-Identifier: GPL-2.0
//
// log.cc - see log.h.
#include "mdnode/log.h"

#include <sys/stat.h>

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <initializer_list>

namespace mdnode {

namespace {

LogLevel g_level = LogLevel::info;

constexpr unsigned kBurst = 10;
constexpr int64_t kWindowMs = 5000;

int64_t now_ms()
{
	timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
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

} // namespace

void set_log_level(LogLevel level) { g_level = level; }
LogLevel log_level() { return g_level; }

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
	static const bool journal = stderr_is_journal();
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

	// One fprintf per line, so concurrent writers never interleave.
	if (journal)
		fprintf(stderr, "<%d>%s: %s%s%s%s\n", int(level), subsystem,
			tag ? func : "", tag ? ": " : "", msg, suffix);
	else
		fprintf(stderr, "mdnode: %s: %s: %s%s%s%s\n", level_name(level), subsystem,
			tag ? func : "", tag ? ": " : "", msg, suffix);
}

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
