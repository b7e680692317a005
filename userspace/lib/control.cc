// SPDX-License-Identifier: GPL-2.0
//
// control.cc - control device access.
#include "lib/control.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

namespace mdr {

namespace {

class RealSys final : public Sys {
public:
	int open(const char *path, int flags) override
	{
		int fd = ::open(path, flags);

		return fd < 0 ? -errno : fd;
	}

	int ioctl(int fd, unsigned long request, void *arg) override
	{
		int ret = ::ioctl(fd, request, arg);

		return ret < 0 ? -errno : ret;
	}

	int close(int fd) override
	{
		return ::close(fd) < 0 ? -errno : 0;
	}
};

// Every request carries the interface version this build was compiled with.
void init_hdr(struct mdr_ioctl_hdr &hdr, uint32_t data_size)
{
	hdr.version[0] = MDR_IOCTL_VERSION_MAJOR;
	hdr.version[1] = MDR_IOCTL_VERSION_MINOR;
	hdr.version[2] = MDR_IOCTL_VERSION_PATCH;
	hdr.data_size = data_size;
}

} // namespace

Sys &real_sys()
{
	static RealSys sys;

	return sys;
}

bool interface_compatible(const ModuleVersion &module)
{
	return module.major == MDR_IOCTL_VERSION_MAJOR &&
	       module.minor >= MDR_IOCTL_VERSION_MINOR;
}

Result<Control> Control::open(Sys &sys)
{
	int fd = sys.open(kControlPath, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return Error(fd);
	return Control(sys, fd);
}

Control::Control(Control &&other) noexcept
	: sys_(other.sys_), fd_(std::exchange(other.fd_, -1))
{
}

Control &Control::operator=(Control &&other) noexcept
{
	if (this != &other) {
		close();
		sys_ = other.sys_;
		fd_ = std::exchange(other.fd_, -1);
	}
	return *this;
}

Control::~Control()
{
	close();
}

void Control::close()
{
	// Nothing to do about a failed close() of a control device: the
	// descriptor is released either way.
	if (fd_ >= 0)
		sys_->close(std::exchange(fd_, -1));
}

Result<ModuleVersion> Control::version()
{
	struct mdr_ioctl_version v = {};

	init_hdr(v.hdr, sizeof(v));
	int ret = sys_->ioctl(fd_, MDR_IOC_VERSION, &v);
	if (ret < 0)
		return Error(ret);

	// The module NUL-terminates the release; do not rely on it.
	return ModuleVersion{
		.major = v.hdr.version[0],
		.minor = v.hdr.version[1],
		.patch = v.hdr.version[2],
		.wire_version = v.wire_version,
		.release = std::string(v.release, strnlen(v.release, sizeof(v.release))),
	};
}

} // namespace mdr
