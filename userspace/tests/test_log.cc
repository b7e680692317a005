// SPDX-License-Identifier: GPL-2.0
//
// test_log.cc - mdnode's log lines as stderr gets them: the plain form,
// and with --log-time utc the UTC time each was logged, to the
// microsecond. stderr is a real temporary file here.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "mdnode/log.h"

#include "tests/common/cmocka_cxx.h"

namespace {

MDNODE_LOG_SUBSYSTEM("test");

// stderr goes to a temporary file while one lives; text() reads what the
// log wrote there.
class CapturedStderr {
public:
	CapturedStderr()
	{
		const char *dir = std::getenv("TMPDIR");
		std::string tmpl = std::string(dir && *dir ? dir : "/tmp") + "/mdr-log.XXXXXX";

		fd_ = mkstemp(tmpl.data());
		assert_true(fd_ >= 0);
		unlink(tmpl.c_str());
		saved_ = dup(2);
		assert_true(saved_ >= 0);
		assert_int_equal(dup2(fd_, 2), 2);
	}

	~CapturedStderr()
	{
		dup2(saved_, 2);
		close(saved_);
		close(fd_);
	}

	std::string text()
	{
		mdnode::log_flush();
		std::string out;
		char buf[4096];
		ssize_t n;
		off_t off = 0;

		while ((n = pread(fd_, buf, sizeof(buf), off)) > 0) {
			out.append(buf, size_t(n));
			off += n;
		}
		return out;
	}

private:
	int fd_ = -1;
	int saved_ = -1;
};

void test_plain_line(void **)
{
	CapturedStderr err;

	mdnode::set_log_time(false);
	log_info("volume %d opened", 7);
	assert_string_equal(err.text().c_str(), "mdnode: info: test: volume 7 opened\n");
}

void test_utc_stamp(void **)
{
	CapturedStderr err;
	const time_t before = time(nullptr);

	mdnode::set_log_time(true);
	log_warn("lease of host %s ran out", "0x42");
	mdnode::set_log_time(false);
	const time_t after = time(nullptr);
	const std::string line = err.text();
	const std::string rest = "Z mdnode: warn: test: lease of host 0x42 ran out\n";
	tm t = {};
	int usec_at = 0, usec_end = 0;

	// 2026-12-06T14:05:01.123456Z, then the plain line
	assert_int_equal(sscanf(line.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%n%*6d%n", &t.tm_year,
				&t.tm_mon, &t.tm_mday, &t.tm_hour, &t.tm_min, &t.tm_sec, &usec_at,
				&usec_end),
			 6);
	assert_int_equal(usec_at, 20);
	assert_int_equal(usec_end, 26);
	assert_string_equal(line.substr(26).c_str(), rest.c_str());
	// The stamp is when it was logged: between the two clock reads.
	t.tm_year -= 1900;
	t.tm_mon -= 1;
	const time_t logged = timegm(&t);
	assert_true(logged >= before && logged <= after);
}

} // namespace

int main()
{
	// The journal's form has no stamp: make sure this is not it.
	unsetenv("JOURNAL_STREAM");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_line),
		cmocka_unit_test(test_utc_stamp),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
