// SPDX-License-Identifier: GPL-2.0
//
// probe.cc - see probe.h.
#include "mdnode/probe.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <fstream>
#include <initializer_list>

#include <linux/mdroute_wire.h>

#include "mdnode/records.h"

namespace mdnode {

namespace {

std::string read_sysfs_line(const std::string &path)
{
	std::ifstream f(path);
	std::string s;

	if (!f || !std::getline(f, s))
		return {};
	size_t b = s.find_first_not_of(" \t");
	size_t e = s.find_last_not_of(" \t\r\n");
	return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// The first of the attributes of dir that is not blank and shorter than max.
std::string first_of(const std::string &dir, std::initializer_list<const char *> attrs,
		     size_t max)
{
	for (const char *attr : attrs)
		if (std::string s = read_sysfs_line(dir + attr); !s.empty() && s.size() < max)
			return s;
	return {};
}

} // namespace

mdr::Result<DeviceProbe> probe_sysfs(const std::string &dir)
{
	DeviceProbe p{};

	// Hosts find the disk by the serial: the order is theirs (attach.cc).
	p.serial = first_of(dir, {"serial", "device/serial", "wwid", "device/wwid"},
			    SIZE_MAX);
	p.identity = first_of(dir, {"wwid", "device/wwid", "serial", "device/serial"},
			      kDeviceIdentityLen);
	if (p.serial.empty() || p.identity.empty())
		return mdr::Error(-ENODATA, "no serial or WWID in " + dir);
	return p;
}

mdr::Result<DeviceProbe> probe_device(const std::string &path, const std::string &sysfs_root)
{
	int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
	struct stat st;
	DeviceProbe p{};

	if (fd < 0)
		return mdr::Error(-errno, "cannot open " + path);
	if (fstat(fd, &st)) {
		int err = -errno;
		close(fd);
		return mdr::Error(err, "cannot stat " + path);
	}
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &p.size)) {
			int err = -errno;
			close(fd);
			return mdr::Error(err, "BLKGETSIZE64 on " + path);
		}
		const uint64_t size = p.size;
		auto ids = probe_sysfs(sysfs_root + "/dev/block/" +
				       std::to_string(major(st.st_rdev)) + ":" +
				       std::to_string(minor(st.st_rdev)) + "/");
		if (!ids.ok()) {
			close(fd);
			return mdr::Error(ids.error(), path + ": " + ids.message());
		}
		p = std::move(ids).value();
		p.size = size;
	} else if (S_ISREG(st.st_mode)) {
		p.size = static_cast<uint64_t>(st.st_size);
		p.serial = "file:" + path;
		p.identity = p.serial;
	} else {
		close(fd);
		return mdr::Error(-ENOTBLK, path + " is neither a block device nor a file");
	}
	close(fd);
	if (p.serial.size() >= MDR_WIRE_SERIAL_LEN)
		return mdr::Error(-ENAMETOOLONG, path + ": serial '" + p.serial +
						   "' does not fit the protocol");
	return p;
}

} // namespace mdnode
