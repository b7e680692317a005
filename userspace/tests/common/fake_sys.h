// SPDX-License-Identifier: GPL-2.0
//
// fake_sys.h - a Sys that stands in for the control device and the module.
#ifndef MDR_TESTS_FAKE_SYS_H
#define MDR_TESTS_FAKE_SYS_H

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "lib/client/control.h"

namespace mdr::test {

class FakeSys final : public Sys {
public:
	using IoctlHandler = std::function<int(unsigned long request, void *arg)>;

	// Set by the test.
	int open_error = 0;		// -errno for open() to fail with, or 0
	IoctlHandler on_ioctl;		// unset: every ioctl fails with -ENOTTY

	// Recorded calls.
	std::string opened_path;
	int open_flags = 0;
	std::vector<unsigned long> requests;
	std::vector<unsigned char> last_arg;	// as sent, _IOC_SIZE() bytes
	std::set<int> open_fds;
	int bad_fd_calls = 0;		// ioctl or close on a descriptor not open

	int open(const char *path, int flags) override;
	int ioctl(int fd, unsigned long request, void *arg) override;
	int close(int fd) override;

private:
	int next_fd_ = 3;
	// mdctl's batches (--jobs) call ioctl() from several threads: one at
	// a time records and is answered. Shared, so that a FakeSys copies.
	std::shared_ptr<std::mutex> ioctl_mu_ = std::make_shared<std::mutex>();
};

// Answers MDR_IOC_VERSION like a module of the given version; copies at
// most sizeof(release) bytes, so a 32-character release has no NUL. Bytes
// after the release field are set non-zero, to catch a reader that runs on.
FakeSys::IoctlHandler fake_module(uint32_t major, uint32_t minor, uint32_t patch,
				  uint32_t wire_version, std::string_view release);

} // namespace mdr::test

#endif // MDR_TESTS_FAKE_SYS_H
