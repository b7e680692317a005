// SPDX-License-Identifier: GPL-2.0
//
// control.cc - control device access.
#include "lib/client/control.h"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <utility>

#include <sys/socket.h>

#include <fcntl.h>
#include <linux/mdroute_wire.h>
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

// Every request carries this build's major and patch, and the minor its
// argument needs (kMinorBeforeGroups but for an attach to a group).
void init_hdr(struct mdr_ioctl_hdr &hdr, uint32_t data_size, uint32_t flags = 0,
	      uint32_t minor = kMinorBeforeGroups)
{
	hdr.version[0] = MDR_IOCTL_VERSION_MAJOR;
	hdr.version[1] = minor;
	hdr.version[2] = MDR_IOCTL_VERSION_PATCH;
	hdr.data_size = data_size;
	hdr.flags = flags;
}

std::string abi_string(uint32_t major, uint32_t minor, uint32_t patch)
{
	return std::to_string(major) + '.' + std::to_string(minor) + '.' + std::to_string(patch);
}

// EINVAL from a module of @v, to a request that needed @minor: what the
// versions say, when they are the reason.
Error version_refusal(const uint32_t v[3], uint32_t minor)
{
	if (v[0] == MDR_IOCTL_VERSION_MAJOR && v[1] >= minor)
		return Error(-EINVAL);
	return Error(-EINVAL, "the module speaks ioctl ABI " + abi_string(v[0], v[1], v[2]) +
				      ", this build " +
				      abi_string(MDR_IOCTL_VERSION_MAJOR, MDR_IOCTL_VERSION_MINOR,
						 MDR_IOCTL_VERSION_PATCH));
}

Error protocol_error(std::string message)
{
	return Error(-EPROTO, "the module answered " + std::move(message));
}

// The attach of minor 2: struct mdr_ioctl_attach up to its group, with a
// command number of that size.
constexpr size_t kAttachSizeBeforeGroups = offsetof(struct mdr_ioctl_attach, group);
constexpr unsigned long kIocAttachBeforeGroups =
	_IOWR(MDR_IOCTL_TYPE, MDR_CMD_ATTACH, unsigned char[kAttachSizeBeforeGroups]);
static_assert(kAttachSizeBeforeGroups == 264, "the attach of minor 2");

// Elements asked for per LIST or DEV_LIST call (the module's MDR_LIST_MAX
// bounds it too).
constexpr size_t kListPage = 256;

Result<Target> target_from_ioctl(const struct mdr_ioctl_target &in)
{
	if (in.family != AF_INET && in.family != AF_INET6)
		return protocol_error("address family " + std::to_string(in.family));
	Target t;
	t.family = in.family;
	t.port = in.port;
	t.tenant = in.tenant;
	std::copy(std::begin(in.addr), std::end(in.addr), t.addr.begin());
	t.host_id = in.host_id;
	t.scope_id = in.scope_id;
	t.key = in.key;
	return t;
}

struct mdr_ioctl_target target_to_ioctl(const Target &t)
{
	struct mdr_ioctl_target out = {};

	out.family = t.family;
	out.port = t.port;
	out.tenant = t.tenant;
	std::copy(t.addr.begin(), t.addr.end(), out.addr);
	out.host_id = t.host_id;
	out.scope_id = t.scope_id;
	out.key = t.key;
	return out;
}

Result<VolumeInfo> volume_from_ioctl(const struct mdr_ioctl_vol_info &in)
{
	// 1 << extent_shift must be a size in bytes that fits 64 bits.
	if (in.extent_shift >= 64)
		return protocol_error("extent shift " + std::to_string(in.extent_shift));
	auto target = target_from_ioctl(in.target);
	if (!target.ok())
		return Error(target.error(), target.message());

	// The module NUL-terminates the name; do not rely on it.
	return VolumeInfo{
		.index = in.index,
		.extent_shift = in.extent_shift,
		.volume_id = in.volume_id,
		.size = in.size,
		.target = target.value(),
		.flags = in.flags,
		.open_count = in.open_count,
		.cached = in.cached,
		.inflight = in.inflight,
		.name = std::string(in.name, strnlen(in.name, sizeof(in.name))),
		.group = in.group,
		.epoch = in.epoch,
	};
}

struct mdr_ioctl_group group_to_ioctl(const Group &g)
{
	struct mdr_ioctl_group out = {};

	out.group = g.id;
	out.count = static_cast<uint32_t>(g.replicas.size());
	for (size_t i = 0; i < g.replicas.size(); i++) {
		struct mdr_ioctl_replica &r = out.replicas[i];

		r.family = g.replicas[i].family;
		r.port = g.replicas[i].port;
		r.scope_id = g.replicas[i].scope_id;
		std::copy(g.replicas[i].addr.begin(), g.replicas[i].addr.end(), r.addr);
	}
	return out;
}

Result<DeviceInfo> device_from_ioctl(const struct mdr_ioctl_dev_info &in)
{
	return DeviceInfo{
		.dev_id = in.dev_id,
		.dev = {in.major, in.minor},
		.users = in.users,
		.size = in.size,
		.errors = in.errors,
	};
}

} // namespace

Sys &real_sys()
{
	static RealSys sys;

	return sys;
}

Endpoint endpoint_of(const Target &target)
{
	return {target.family, target.port, target.scope_id, target.addr};
}

bool same_endpoint(const Endpoint &a, const Endpoint &b)
{
	auto port = [](uint16_t p) { return p ? p : uint16_t{MDR_WIRE_PORT}; };

	return a.family == b.family && port(a.port) == port(b.port) &&
	       a.scope_id == b.scope_id && a.addr == b.addr;
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

	init_hdr(v.hdr, sizeof(v), 0, MDR_IOCTL_VERSION_MINOR);
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

// One request. The module writes its version back even when it refuses: an
// EINVAL from a module of another major, or of a minor below the one the
// request carried, says so.
template <typename Arg>
Status Control::call(unsigned long request, Arg &arg)
{
	const uint32_t minor = arg.hdr.version[1];
	int ret = sys_->ioctl(fd_, request, &arg);

	if (ret >= 0)
		return {};
	if (ret == -EINVAL)
		return version_refusal(arg.hdr.version, minor);
	return Error(ret);
}

Result<BindInfo> Control::bind(uint32_t dev_id, DevNum dev)
{
	struct mdr_ioctl_bind b = {};

	init_hdr(b.hdr, sizeof(b));
	b.dev_id = dev_id;
	b.major = dev.major;
	b.minor = dev.minor;
	if (Status st = call(MDR_IOC_BIND, b); !st.ok())
		return Error(st.error(), st.message());

	if (b.lbs < 512 || (b.lbs & (b.lbs - 1)))
		return protocol_error("logical block size " + std::to_string(b.lbs));
	return BindInfo{.size = b.size, .lbs = b.lbs};
}

Result<DevNum> Control::unbind(uint32_t dev_id)
{
	struct mdr_ioctl_bind b = {};

	init_hdr(b.hdr, sizeof(b));
	b.dev_id = dev_id;
	if (Status st = call(MDR_IOC_UNBIND, b); !st.ok())
		return Error(st.error(), st.message());
	return DevNum{b.major, b.minor};
}

Result<VolumeInfo> Control::attach(uint64_t volume_id, const Target &target, bool readonly,
				   const Group &group)
{
	struct mdr_ioctl_attach a = {};
	const uint32_t flags = readonly ? MDR_ATTACH_F_READONLY : 0;

	if (group.replicas.size() > MDR_REPLICAS_MAX)
		return Error(-EINVAL, std::to_string(group.replicas.size()) + " replicas, " +
					      std::to_string(MDR_REPLICAS_MAX) + " at the most");
	a.volume_id = volume_id;
	a.target = target_to_ioctl(target);
	Status st;
	if (group.empty()) {
		// The module reads and writes back kAttachSizeBeforeGroups bytes.
		init_hdr(a.hdr, kAttachSizeBeforeGroups, flags);
		st = call(kIocAttachBeforeGroups, a);
	} else {
		init_hdr(a.hdr, sizeof(a), flags, MDR_IOCTL_VERSION_MINOR);
		a.group = group_to_ioctl(group);
		st = call(MDR_IOC_ATTACH, a);
		// A module before minor 3 refuses the size before it reads the
		// header, and writes no version back: asked for it here.
		if (!st.ok() && st.error() == -EINVAL && st.message().empty())
			if (auto v = version(); v.ok()) {
				const uint32_t mv[3] = {v.value().major, v.value().minor,
							v.value().patch};
				st = version_refusal(mv, MDR_IOCTL_VERSION_MINOR);
			}
	}
	if (!st.ok())
		return Error(st.error(), st.message());

	if (a.info.volume_id != volume_id)
		return protocol_error("volume " + std::to_string(a.info.volume_id) +
				      " to an attach of " + std::to_string(volume_id));
	return volume_from_ioctl(a.info);
}

Status Control::detach(uint32_t index, uint64_t volume_id, bool force)
{
	struct mdr_ioctl_detach d = {};

	init_hdr(d.hdr, sizeof(d), force ? MDR_DETACH_F_FORCE : 0);
	d.index = index;
	d.volume_id = volume_id;
	return call(MDR_IOC_DETACH, d);
}

Result<VolumeInfo> Control::status(uint32_t index)
{
	struct mdr_ioctl_status st = {};

	init_hdr(st.hdr, sizeof(st));
	st.info.index = index;
	if (Status ret = call(MDR_IOC_STATUS, st); !ret.ok())
		return Error(ret.error(), ret.message());

	if (st.info.index != index)
		return protocol_error("mdr" + std::to_string(st.info.index) +
				      " to a status of mdr" + std::to_string(index));
	return volume_from_ioctl(st.info);
}

// LIST and DEV_LIST: page through by volume index / device id, each call
// going on from the last element of the one before; elements are Raw-sized
// as this build knows them.
template <typename Info, typename Raw, typename Convert, typename Key>
Result<std::vector<Info>> Control::list_all(unsigned long request, Convert convert, Key key)
{
	std::vector<Raw> raw(kListPage);
	std::vector<Info> out;
	uint64_t start = 0;

	for (;;) {
		struct mdr_ioctl_list l = {};

		init_hdr(l.hdr, sizeof(l));
		l.count = static_cast<uint32_t>(raw.size());
		l.array = reinterpret_cast<uintptr_t>(raw.data());
		l.start = static_cast<uint32_t>(start);
		l.elem_size = sizeof(Raw);
		if (Status st = call(request, l); !st.ok())
			return Error(st.error(), st.message());
		if (l.count > raw.size() || l.count > l.total)
			return protocol_error(std::to_string(l.count) + " elements of " +
					      std::to_string(l.total) + " to room for " +
					      std::to_string(raw.size()));
		for (uint32_t i = 0; i < l.count; i++) {
			uint64_t k = key(raw[i]);

			if (k < start)
				return protocol_error("element " + std::to_string(k) +
						      " to a list from " + std::to_string(start));
			auto info = convert(raw[i]);
			if (!info.ok())
				return Error(info.error(), info.message());
			out.push_back(std::move(info).value());
			start = k + 1;
		}
		// Done at an empty page, at a short one once all are seen (the
		// module may return fewer than asked), at the id space's end.
		if (!l.count || (l.count < raw.size() && out.size() >= l.total) ||
		    start > UINT32_MAX)
			return out;
	}
}

Result<std::vector<VolumeInfo>> Control::list()
{
	return list_all<VolumeInfo, struct mdr_ioctl_vol_info>(
		MDR_IOC_LIST, volume_from_ioctl,
		[](const struct mdr_ioctl_vol_info &v) { return uint64_t{v.index}; });
}

Result<std::vector<DeviceInfo>> Control::dev_list()
{
	return list_all<DeviceInfo, struct mdr_ioctl_dev_info>(
		MDR_IOC_DEV_LIST, device_from_ioctl,
		[](const struct mdr_ioctl_dev_info &d) { return uint64_t{d.dev_id}; });
}

} // namespace mdr
