// SPDX-License-Identifier: GPL-2.0
//
// fake_module.cc - the control ioctls of the module, in user space.
#include "tests/common/fake_module.h"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include <linux/mdroute_wire.h>
#include <sys/socket.h>

namespace mdr::test {

namespace {

template <typename T>
bool all_zero(const T &field)
{
	const auto *bytes = reinterpret_cast<const unsigned char *>(&field);

	return std::all_of(bytes, bytes + sizeof(field), [](unsigned char b) { return !b; });
}

// The sizes a command takes: from min_size (0: the one size of its
// request) to the size of its request, the module's struct.
struct Spec {
	unsigned long request;
	uint32_t valid_flags;
	bool any_version;
	size_t min_size = 0;
};

// ATTACH before minor 3: no group (zero-filled, as the module does).
constexpr size_t kAttachSizeBeforeGroups = offsetof(struct mdr_ioctl_attach, group);

constexpr Spec kSpecs[] = {
	{MDR_IOC_VERSION, 0, true},
	{MDR_IOC_BIND, 0, false},
	{MDR_IOC_UNBIND, 0, false},
	{MDR_IOC_ATTACH, MDR_ATTACH_F_READONLY, false, kAttachSizeBeforeGroups},
	{MDR_IOC_DETACH, MDR_DETACH_F_FORCE, false},
	{MDR_IOC_LIST, 0, false},
	{MDR_IOC_STATUS, 0, false},
	{MDR_IOC_DEV_LIST, 0, false},
};

// An address of the ABI as mdr_addr_from_ioctl() takes it, port 0 read as
// MDR_WIRE_PORT (4791), for comparing; family 0 when it is refused.
struct Addr {
	uint16_t family = 0, port = 0;
	uint32_t scope_id = 0;
	unsigned char addr[16] = {};

	bool operator==(const Addr &) const = default;
};

Addr addr_of(uint16_t family, uint16_t port, uint32_t scope_id, const unsigned char *addr)
{
	Addr a;

	if (family != AF_INET && family != AF_INET6)
		return a;
	if (family == AF_INET &&
	    (scope_id || std::any_of(addr + 4, addr + 16, [](unsigned char b) { return b; })))
		return a;
	a.family = family;
	a.port = port ? port : 4791;
	a.scope_id = scope_id;
	std::memcpy(a.addr, addr, sizeof(a.addr));
	return a;
}

Addr addr_of(const struct mdr_ioctl_target &t)
{
	return addr_of(t.family, t.port, t.scope_id, t.addr);
}

// mdr_group_from_ioctl(): a node of its own, or a set well formed, no
// address twice, the target's among them, and a key.
int check_group(const struct mdr_ioctl_attach &a)
{
	const struct mdr_ioctl_group &g = a.group;

	if (g.reserved0 || !all_zero(g.reserved))
		return -EINVAL;
	if (!g.count)
		return g.group || !all_zero(g.replicas) ? -EINVAL : 0;
	if (!g.group || g.count > MDR_REPLICAS_MAX)
		return -EINVAL;
	for (uint32_t i = g.count; i < MDR_REPLICAS_MAX; i++)
		if (!all_zero(g.replicas[i]))
			return -EINVAL;
	if (!a.target.key)
		return -EINVAL;
	std::vector<Addr> set;
	for (uint32_t i = 0; i < g.count; i++) {
		const struct mdr_ioctl_replica &r = g.replicas[i];
		Addr at = addr_of(r.family, r.port, r.scope_id, r.addr);
		if (!at.family)
			return -EINVAL;
		if (std::find(set.begin(), set.end(), at) != set.end())
			return -EINVAL;
		set.push_back(at);
	}
	return std::find(set.begin(), set.end(), addr_of(a.target)) == set.end() ? -EINVAL : 0;
}

} // namespace

FakeSys::IoctlHandler FakeModule::handler()
{
	return [this](unsigned long request, void *arg) { return ioctl(request, arg); };
}

struct mdr_ioctl_vol_info &FakeModule::add_volume(uint64_t volume_id, uint64_t size,
						  const std::string &name)
{
	uint32_t index = 0;

	while (attached.contains(index))
		index++;
	struct mdr_ioctl_vol_info &v = attached[index];
	std::memset(&v, 0, sizeof(v));
	v.index = index;
	v.extent_shift = 22;
	v.volume_id = volume_id;
	v.size = size;
	v.target.family = AF_INET;
	v.target.port = 4791;
	v.target.addr[0] = 192;
	v.target.addr[2] = 2;
	v.target.addr[3] = 2;
	v.target.host_id = 1;
	v.flags = MDR_VOL_LEASE_VALID;
	std::strncpy(v.name, name.c_str(), sizeof(v.name) - 1);
	return v;
}

// The pipeline of mdr_ctl_ioctl(): command, size, header, command, version.
int FakeModule::ioctl(unsigned long request, void *arg)
{
	calls.push_back(_IOC_NR(request));
	const Spec *spec = nullptr;
	for (const Spec &s : kSpecs)
		if (_IOC_NR(s.request) == _IOC_NR(request))
			spec = &s;
	if (!spec || _IOC_TYPE(request) != MDR_IOCTL_TYPE ||
	    _IOC_DIR(request) != (_IOC_READ | _IOC_WRITE))
		return -ENOTTY;
	const size_t size = _IOC_SIZE(request);
	// A module of minor 2 knew the attach of 264 bytes alone.
	const size_t max = _IOC_NR(request) == MDR_CMD_ATTACH && version[1] < 3
				   ? kAttachSizeBeforeGroups
				   : _IOC_SIZE(spec->request);
	if (size < (spec->min_size ? spec->min_size : max) || size > max)
		return -EINVAL;

	auto *hdr = static_cast<struct mdr_ioctl_hdr *>(arg);
	int ret = 0;
	if (hdr->data_size != _IOC_SIZE(request) ||
	    (!spec->any_version &&
	     (hdr->version[0] != version[0] || hdr->version[1] > version[1])) ||
	    (hdr->flags & ~spec->valid_flags) || !all_zero(hdr->reserved))
		ret = -EINVAL;

	if (!ret) {
		switch (_IOC_NR(request)) {
		case MDR_CMD_VERSION: {
			auto *v = static_cast<struct mdr_ioctl_version *>(arg);
			v->wire_version = MDR_WIRE_VERSION;
			std::strncpy(v->release, "0.0.0-fake", sizeof(v->release) - 1);
			break;
		}
		case MDR_CMD_BIND:
			ret = bind(*static_cast<struct mdr_ioctl_bind *>(arg));
			break;
		case MDR_CMD_UNBIND:
			ret = unbind(*static_cast<struct mdr_ioctl_bind *>(arg));
			break;
		case MDR_CMD_ATTACH: {
			// the module's copy: the caller's bytes, zero past them
			struct mdr_ioctl_attach a = {};
			std::memcpy(&a, arg, size);
			last_attach = a;
			last_attach_size = size;
			ret = attach(a);
			std::memcpy(arg, &a, size);
			break;
		}
		case MDR_CMD_DETACH:
			ret = detach(*static_cast<struct mdr_ioctl_detach *>(arg));
			break;
		case MDR_CMD_LIST:
			ret = list<struct mdr_ioctl_vol_info>(
				*static_cast<struct mdr_ioctl_list *>(arg), attached);
			break;
		case MDR_CMD_STATUS:
			ret = status(*static_cast<struct mdr_ioctl_status *>(arg));
			break;
		case MDR_CMD_DEV_LIST:
			ret = list<struct mdr_ioctl_dev_info>(
				*static_cast<struct mdr_ioctl_list *>(arg), bound);
			break;
		default:
			ret = -ENOTTY;
		}
	}
	std::copy(std::begin(version), std::end(version), hdr->version);
	return ret;
}

int FakeModule::bind(struct mdr_ioctl_bind &b)
{
	if (!all_zero(b.reserved) || !b.dev_id)
		return -EINVAL;
	if (bound.contains(b.dev_id))
		return -EEXIST;
	for (const auto &[id, d] : bound)
		if (d.major == b.major && d.minor == b.minor)
			return -EBUSY;
	auto disk = disks.find({b.major, b.minor});
	if (disk == disks.end())
		return -ENXIO;
	bound[b.dev_id] = {.dev_id = b.dev_id, .major = b.major, .minor = b.minor,
			   .users = 0, .size = disk->second, .errors = 0, .reserved = {}};
	b.size = disk->second;
	b.lbs = 512;
	return 0;
}

int FakeModule::unbind(struct mdr_ioctl_bind &b)
{
	if (!all_zero(b.reserved) || !b.dev_id)
		return -EINVAL;
	auto d = bound.find(b.dev_id);
	if (d == bound.end())
		return -ENOENT;
	if (d->second.users)
		return -EBUSY;
	b.major = d->second.major;
	b.minor = d->second.minor;
	bound.erase(d);
	return 0;
}

int FakeModule::attach(struct mdr_ioctl_attach &a)
{
	if (!all_zero(a.info) || !a.volume_id || !a.target.host_id || a.target.key < 0)
		return -EINVAL;
	if (a.target.family != AF_INET && a.target.family != AF_INET6)
		return -EAFNOSUPPORT;
	if (int ret = check_group(a))
		return ret;
	// mdr_target_equal(): the same group, or the same node
	for (const auto &[index, v] : attached)
		if (v.volume_id == a.volume_id && v.target.tenant == a.target.tenant &&
		    v.group == a.group.group &&
		    (v.group || (v.target.family == a.target.family &&
				 !std::memcmp(v.target.addr, a.target.addr, sizeof(v.target.addr)))))
			return -EEXIST;
	if (attach_error)
		return attach_error;
	auto vol = node_volumes.find(a.volume_id);
	if (vol == node_volumes.end())
		return -ENOENT;

	struct mdr_ioctl_vol_info &v = add_volume(a.volume_id, vol->second.size,
						  vol->second.name);
	v.extent_shift = vol->second.extent_shift;
	v.target = a.target;
	if (!v.target.port)
		v.target.port = 4791;
	v.group = a.group.group;
	if (a.hdr.flags & MDR_ATTACH_F_READONLY)
		v.flags |= MDR_VOL_READONLY;
	a.info = v;
	return 0;
}

int FakeModule::detach(struct mdr_ioctl_detach &d)
{
	if (d.reserved0 || !all_zero(d.reserved))
		return -EINVAL;
	auto v = attached.find(d.index);
	if (v == attached.end())
		return -ENXIO;
	if (d.volume_id && v->second.volume_id != d.volume_id)
		return -EINVAL;
	if (v->second.open_count && !(d.hdr.flags & MDR_DETACH_F_FORCE))
		return -EBUSY;
	attached.erase(v);
	return 0;
}

int FakeModule::status(struct mdr_ioctl_status &s)
{
	uint32_t index = s.info.index;

	s.info.index = 0;
	if (!all_zero(s.info))
		return -EINVAL;
	auto v = attached.find(index);
	if (v == attached.end())
		return -ENXIO;
	s.info = v->second;
	return 0;
}

template <typename Elem, typename Map>
int FakeModule::list(struct mdr_ioctl_list &l, const Map &map)
{
	uint32_t count = std::min(l.count, list_max), n = 0;

	if (l.reserved || (l.elem_size && l.elem_size != sizeof(Elem)))
		return -EINVAL;
	if (count && !l.array)
		return -EFAULT;
	auto *out = reinterpret_cast<Elem *>(static_cast<uintptr_t>(l.array));
	for (const auto &[key, elem] : map)
		if (key >= l.start && n < count)
			out[n++] = elem;
	l.count = n;
	l.total = static_cast<uint32_t>(map.size());
	l.elem_size = sizeof(Elem);
	return 0;
}

} // namespace mdr::test
