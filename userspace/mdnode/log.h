// SPDX-License-Identifier: GPL-2.0
//
// log.h - mdnode's logging, the one facade every file logs through: one
// line per event on stderr, with a syslog priority prefix ("<4>") when
// stderr is the journal, so journald keeps the levels. One subsystem per
// file:
//
//	MDNODE_LOG_SUBSYSTEM("rdma");
//	log_info("conn %llu established", id);
//	log_warn_rl("bad message from %s", addr);	// anything a peer triggers
//
// With set_log_time(true) a line that does not go to the journal starts
// with the UTC time log_write() was called, to the microsecond
// ("2026-12-06T14:05:01.123456Z mdnode: info: ..."): when it happened,
// however late the log's thread writes it.
//
// The _rl variants allow a burst of 10 lines per 5 s per call site and
// then count what they drop, reported with the next line let through.
// log_debug costs one comparison when the level is above debug.
//
// No caller waits for stderr: a line goes into a bounded buffer (256 KiB)
// that a thread of the log's own writes out. When stderr is slower than
// the lines come, what does not fit is dropped and counted, and the count
// is reported once there is room again. log_flush() waits (a while at
// most) until what is buffered is written: before an abort, and at exit
// (the buffer is written out when the process ends normally).
//
// Why not spdlog: its format strings are fmt's, not printf's, so every
// call site would change, and its async queue (1.10 in Debian bookworm)
// either blocks the caller or overwrites the oldest lines when full,
// where this log drops the newest and says how many; rate limits and the
// journald prefix would still be ours.
#ifndef MDNODE_LOG_H
#define MDNODE_LOG_H

#include <cstdint>

namespace mdnode {

enum class LogLevel { error = 3, warn = 4, info = 6, debug = 7 };

void set_log_level(LogLevel level);
LogLevel log_level();
void set_log_time(bool utc);
// "error", "warn", "info", "debug"; false if name is none of them.
bool parse_log_level(const char *name, LogLevel &level);

void log_write(LogLevel level, const char *subsystem, const char *func,
	       uint64_t dropped, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

// Waits until every line logged so far is written (or 2 s have passed).
void log_flush();
// Lines dropped because the buffer was full, since the start.
uint64_t log_dropped();

struct LogRatelimit {
	int64_t window_start_ms = 0;
	unsigned printed = 0;
	uint64_t dropped = 0;
	// True if a line may be printed now; *dropped is what was held back.
	bool allow(uint64_t *dropped_out);
};

} // namespace mdnode

#define MDNODE_LOG_SUBSYSTEM(name) \
	[[maybe_unused]] constexpr const char *kLogSubsystem = name

#define MDNODE_LOG(level, ...) \
	::mdnode::log_write(level, kLogSubsystem, __func__, 0, __VA_ARGS__)

#define MDNODE_LOG_RL(level, ...)                                             \
	do {                                                                  \
		static ::mdnode::LogRatelimit rl_;                            \
		uint64_t dropped_;                                            \
		if (rl_.allow(&dropped_))                                     \
			::mdnode::log_write(level, kLogSubsystem, __func__,   \
					    dropped_, __VA_ARGS__);           \
	} while (0)

#define log_error(...) MDNODE_LOG(::mdnode::LogLevel::error, __VA_ARGS__)
#define log_warn(...) MDNODE_LOG(::mdnode::LogLevel::warn, __VA_ARGS__)
#define log_info(...) MDNODE_LOG(::mdnode::LogLevel::info, __VA_ARGS__)
#define log_debug(...)                                                        \
	do {                                                                  \
		if (::mdnode::log_level() >= ::mdnode::LogLevel::debug)      \
			MDNODE_LOG(::mdnode::LogLevel::debug, __VA_ARGS__);   \
	} while (0)
#define log_info_rl(...) MDNODE_LOG_RL(::mdnode::LogLevel::info, __VA_ARGS__)
#define log_warn_rl(...) MDNODE_LOG_RL(::mdnode::LogLevel::warn, __VA_ARGS__)
#define log_error_rl(...) MDNODE_LOG_RL(::mdnode::LogLevel::error, __VA_ARGS__)

#endif // MDNODE_LOG_H
