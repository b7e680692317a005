// SPDX-License-Identifier: GPL-2.0
//
// fake_module.cc - the control ioctls of the module, in user space.
#include "tests/common/fake_module.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <sys/socket.h>

namespace mdr::test {

namespace {

template <typename T>
bool all_zero(const T &field)
{
	const auto *bytes = reinterpret_cast<const unsigned char *>(&field);

	return std::all_of(bytes, bytes + sizeof(field), [](unsigned char b) { return !b; });
}

struct Spec {
	unsigned long request;
	uint32_t valid_flags;
	bool any_version;
};

constexpr Spec kSpecs[] = {
	{MDR_IOC_VERSION, 0, true},
	{MDR_IOC_BIND, 0, false},
	{MDR_IOC_UNBIND, 0, false},
	{MDR_IOC_ATTACH, MDR_ATTACH_F_READONLY, false},
	{MDR_IOC_DETACH, MDR_DETACH_F_FORCE, false},
	{MDR_IOC_LIST, 0, false},
	{MDR_IOC_STATUS, 0, false},
	{MDR_IOC_DEV_LIST, 0, false},
};

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
	if (_IOC_SIZE(request) != _IOC_SIZE(spec->request))
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
		case MDR_CMD_BIND:
			ret = bind(*static_cast<struct mdr_ioctl_bind *>(arg));
			break;
		case MDR_CMD_UNBIND:
			ret = unbind(*static_cast<struct mdr_ioctl_bind *>(arg));
			break;
		case MDR_CMD_ATTACH:
			ret = attach(*static_cast<struct mdr_ioctl_attach *>(arg));
			break;
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
	if (!all_zero(a.info) || !a.volume_id || !a.target.host_id)
		return -EINVAL;
	if (a.target.family != AF_INET && a.target.family != AF_INET6)
		return -EAFNOSUPPORT;
	for (const auto &[index, v] : attached)
		if (v.volume_id == a.volume_id && v.target.tenant == a.target.tenant &&
		    v.target.family == a.target.family &&
		    !std::memcmp(v.target.addr, a.target.addr, sizeof(v.target.addr)))
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
