// SPDX-License-Identifier: GPL-2.0
//
// lease_bounds.cc - see lease_bounds.h.
#include "mdnode/lease_bounds.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include <linux/mdroute_wire.h>

#include "mdnode/config.h"

namespace mdnode {

namespace {

// A lease of the longest --lease-ms, with a margin far beyond any drift.
constexpr uint32_t kHeldMsMax = MDR_WIRE_LEASE_MS_MAX + 60000;

bool take_field(std::string_view &text, std::string_view name, uint32_t max, uint32_t &out)
{
	if (!text.starts_with(name) || text.size() == name.size() || text[name.size()] != '=')
		return false;
	text.remove_prefix(name.size() + 1);
	const char *end = text.data() + text.size();
	auto [p, ec] = std::from_chars(text.data(), end, out);
	if (ec != std::errc() || p == text.data() || out > max)
		return false;
	text.remove_prefix(size_t(p - text.data()));
	return true;
}

int sync_close(int fd)
{
	int err = fsync(fd) ? -errno : 0;

	if (close(fd) && !err)
		err = -errno;
	return err;
}

} // namespace

std::string format_lease_bounds(LeaseBounds b)
{
	return "held_ms=" + std::to_string(b.held_ms) +
	       " io_hold_ms=" + std::to_string(b.io_hold_ms) + "\n";
}

mdr::Result<LeaseBounds> parse_lease_bounds(std::string_view text)
{
	LeaseBounds b;

	if (!take_field(text, "held_ms", kHeldMsMax, b.held_ms) || !text.starts_with(' '))
		return mdr::Error(-EINVAL, "want 'held_ms=N io_hold_ms=M', N at most " +
				  std::to_string(kHeldMsMax));
	text.remove_prefix(1);
	if (!take_field(text, "io_hold_ms", kIoHoldMsMax, b.io_hold_ms))
		return mdr::Error(-EINVAL, "want io_hold_ms=M after held_ms, M at most " +
				  std::to_string(kIoHoldMsMax));
	if (text != "\n" && !text.empty())
		return mdr::Error(-EINVAL, "unexpected text after io_hold_ms");
	return b;
}

mdr::Result<LeaseBounds> read_lease_bounds(const std::string &dir)
{
	const std::string path = dir + "/lease-bounds";
	auto text = read_file(path);

	if (!text.ok())
		return text.error() == -ENOENT ? mdr::Result<LeaseBounds>(LeaseBounds{})
					       : mdr::Error(text.error(), "cannot read " + path);
	if (text.value().size() > 64)
		return mdr::Error(-EINVAL, path + ": longer than one line");
	auto b = parse_lease_bounds(text.value());
	if (!b.ok())
		return mdr::Error(b.error(), path + ": " + b.message());
	return b;
}

mdr::Status write_lease_bounds(const std::string &dir, LeaseBounds b)
{
	const std::string path = dir + "/lease-bounds", tmp = path + ".tmp";
	const std::string text = format_lease_bounds(b);
	int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return mdr::Error(-errno, "cannot create " + tmp);
	const ssize_t n = write(fd, text.data(), text.size());
	int err = n < 0 ? -errno : size_t(n) != text.size() ? -EIO : 0;
	if (int e = sync_close(fd); !err)
		err = e;
	if (!err && rename(tmp.c_str(), path.c_str()))
		err = -errno;
	if (err) {
		unlink(tmp.c_str());
		return mdr::Error(err, "cannot write " + path);
	}
	int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return mdr::Error(-errno, "cannot open " + dir);
	if (int e = sync_close(dfd))
		return mdr::Error(e, "cannot fsync " + dir);
	return {};
}

} // namespace mdnode
