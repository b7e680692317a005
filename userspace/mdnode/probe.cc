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
#include <fstream>

#include <linux/mdroute_wire.h>

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

} // namespace

mdr::Result<DeviceProbe> probe_device(const std::string &path)
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
		std::string sys = "/sys/dev/block/" + std::to_string(major(st.st_rdev)) +
				  ":" + std::to_string(minor(st.st_rdev)) + "/";
		for (const char *attr : {"serial", "device/serial", "wwid", "device/wwid"}) {
			p.serial = read_sysfs_line(sys + attr);
			if (!p.serial.empty())
				break;
		}
		if (p.serial.empty()) {
			close(fd);
			return mdr::Error(-ENODATA, path + " has no serial or WWID in sysfs");
		}
	} else if (S_ISREG(st.st_mode)) {
		p.size = static_cast<uint64_t>(st.st_size);
		p.serial = "file:" + path;
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
