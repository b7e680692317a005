// SPDX-License-Identifier: GPL-2.0
//
// control.h - the mdroute control device, /dev/mdroute-control, and the
// ioctls of <linux/mdroute.h>.
#ifndef MDR_CONTROL_H
#define MDR_CONTROL_H

#include <cstdint>
#include <string>

#include <linux/mdroute.h>

#include "lib/result.h"

namespace mdr {

inline constexpr char kControlPath[] = "/dev/" MDR_CONTROL_NAME;

// The system calls Control makes, so tests can stand in for the module.
// Each returns what the call returns on success and -errno on failure.
class Sys {
public:
	virtual ~Sys() = default;
	virtual int open(const char *path, int flags) = 0;
	virtual int ioctl(int fd, unsigned long request, void *arg) = 0;
	virtual int close(int fd) = 0;
};

// The real system calls.
Sys &real_sys();

struct ModuleVersion {
	uint32_t major, minor, patch;	// ioctl interface version
	uint32_t wire_version;		// highest metadata wire protocol version
	std::string release;		// e.g. "0.1.0"
};

// Whether the module accepts the requests of this build: same major, and
// a minor at least ours (see the versioning rule in <linux/mdroute.h>).
bool interface_compatible(const ModuleVersion &module);

// An open control device. Movable, not copyable; closes on destruction.
class Control {
public:
	static Result<Control> open(Sys &sys = real_sys());

	Control(Control &&other) noexcept;
	Control &operator=(Control &&other) noexcept;
	Control(const Control &) = delete;
	Control &operator=(const Control &) = delete;
	~Control();

	// MDR_IOC_VERSION: accepted by a module of any interface version.
	Result<ModuleVersion> version();

private:
	Control(Sys &sys, int fd) : sys_(&sys), fd_(fd) {}
	void close();

	Sys *sys_;
	int fd_;	// -1 once moved from
};

} // namespace mdr

#endif // MDR_CONTROL_H
