// SPDX-License-Identifier: GPL-2.0
//
// fake_sys.cc - the fake control device.
#include "tests/common/fake_sys.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace mdr::test {

int FakeSys::open(const char *path, int flags)
{
	opened_path = path;
	open_flags = flags;
	if (open_error)
		return open_error;
	open_fds.insert(next_fd_);
	return next_fd_++;
}

int FakeSys::ioctl(int fd, unsigned long request, void *arg)
{
	std::lock_guard lock(*ioctl_mu_);

	if (!open_fds.contains(fd)) {
		bad_fd_calls++;
		return -EBADF;
	}
	requests.push_back(request);
	const auto *bytes = static_cast<const unsigned char *>(arg);
	last_arg.assign(bytes, bytes + _IOC_SIZE(request));
	return on_ioctl ? on_ioctl(request, arg) : -ENOTTY;
}

int FakeSys::close(int fd)
{
	if (open_fds.erase(fd) == 0) {
		bad_fd_calls++;
		return -EBADF;
	}
	return 0;
}

FakeSys::IoctlHandler fake_module(uint32_t major, uint32_t minor, uint32_t patch,
				  uint32_t wire_version, std::string_view release)
{
	return [=](unsigned long request, void *arg) {
		if (request != MDR_IOC_VERSION)
			return -ENOTTY;
		auto *v = static_cast<struct mdr_ioctl_version *>(arg);
		v->hdr.version[0] = major;
		v->hdr.version[1] = minor;
		v->hdr.version[2] = patch;
		v->wire_version = wire_version;
		std::memset(v->release, 0, sizeof(v->release));
		std::memcpy(v->release, release.data(),
			    std::min(release.size(), sizeof(v->release)));
		std::memset(v->reserved, 'Y', sizeof(v->reserved));
		return 0;
	};
}

} // namespace mdr::test
