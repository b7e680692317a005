// SPDX-License-Identifier: GPL-2.0
//
// test_control.cc - Control against a fake control device.
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include <fcntl.h>
#include <sys/socket.h>

#include "lib/client/control.h"
#include "tests/common/fake_module.h"
#include "tests/common/fake_sys.h"

#include "tests/common/cmocka_cxx.h"

using mdr::Control;
using mdr::ModuleVersion;
using mdr::test::FakeModule;
using mdr::test::FakeSys;
using mdr::test::fake_module;

static void test_open_path_and_flags(void **)
{
	FakeSys sys;
	auto control = Control::open(sys);

	assert_true(control.ok());
	assert_string_equal(sys.opened_path.c_str(), "/dev/mdroute-control");
	assert_int_equal(sys.open_flags, O_RDWR | O_CLOEXEC);
	assert_int_equal(sys.open_fds.size(), 1);
}

static void test_version_request(void **)
{
	FakeSys sys;
	sys.on_ioctl = fake_module(0, 1, 0, 1, "0.1.0");
	auto control = Control::open(sys);

	assert_true(control.ok());
	assert_true(control.value().version().ok());

	// Our version triple, the size of the whole argument, all else zero.
	struct mdr_ioctl_version want;
	std::memset(&want, 0, sizeof(want));
	want.hdr.version[0] = MDR_IOCTL_VERSION_MAJOR;
	want.hdr.version[1] = MDR_IOCTL_VERSION_MINOR;
	want.hdr.version[2] = MDR_IOCTL_VERSION_PATCH;
	want.hdr.data_size = sizeof(want);

	assert_int_equal(sys.requests.size(), 1);
	assert_int_equal(sys.requests[0], MDR_IOC_VERSION);
	assert_int_equal(sys.last_arg.size(), sizeof(want));
	assert_memory_equal(sys.last_arg.data(), &want, sizeof(want));
}

static void test_version_reply(void **)
{
	FakeSys sys;
	sys.on_ioctl = fake_module(3, 14, 15, 9, "3.14.15-rc2");
	auto control = Control::open(sys);
	assert_true(control.ok());

	auto version = control.value().version();
	assert_true(version.ok());
	const ModuleVersion &v = version.value();
	assert_int_equal(v.major, 3);
	assert_int_equal(v.minor, 14);
	assert_int_equal(v.patch, 15);
	assert_int_equal(v.wire_version, 9);
	assert_string_equal(v.release.c_str(), "3.14.15-rc2");
}

// The module's release buffer is not trusted to hold a NUL.
static void test_version_release_without_nul(void **)
{
	const std::string release(sizeof(mdr_ioctl_version::release), 'x');
	FakeSys sys;
	sys.on_ioctl = fake_module(0, 1, 0, 1, release);
	auto control = Control::open(sys);
	assert_true(control.ok());

	auto version = control.value().version();
	assert_true(version.ok());
	assert_int_equal(version.value().release.size(), 32);
	assert_string_equal(version.value().release.c_str(), release.c_str());
}

static void test_open_errors(void **)
{
	for (int err : {-ENOENT, -EACCES}) {
		FakeSys sys;
		sys.open_error = err;
		auto control = Control::open(sys);

		assert_false(control.ok());
		assert_int_equal(control.error(), err);
		assert_true(sys.open_fds.empty());
	}
}

static void test_version_ioctl_error(void **)
{
	FakeSys sys;
	sys.on_ioctl = [](unsigned long, void *) { return -EINVAL; };
	auto control = Control::open(sys);
	assert_true(control.ok());

	auto version = control.value().version();
	assert_false(version.ok());
	assert_int_equal(version.error(), -EINVAL);
}

static void test_closes_once(void **)
{
	FakeSys sys;
	{
		auto control = Control::open(sys);
		assert_true(control.ok());
		Control moved = std::move(control).value();
		assert_int_equal(sys.open_fds.size(), 1);
	}
	assert_true(sys.open_fds.empty());
	assert_int_equal(sys.bad_fd_calls, 0);
}

static void test_move_assignment_closes_target(void **)
{
	FakeSys sys;
	{
		Control a = Control::open(sys).value();
		Control b = Control::open(sys).value();
		assert_int_equal(sys.open_fds.size(), 2);

		a = std::move(b);
		assert_int_equal(sys.open_fds.size(), 1);
		assert_int_equal(*sys.open_fds.begin(), 4);	// b's descriptor
	}
	assert_true(sys.open_fds.empty());
	assert_int_equal(sys.bad_fd_calls, 0);
}

static bool compatible(uint32_t major, uint32_t minor, uint32_t patch)
{
	return mdr::interface_compatible({major, minor, patch, 1, "x"});
}

static void test_interface_compatible(void **)
{
	const uint32_t major = MDR_IOCTL_VERSION_MAJOR;
	const uint32_t minor = MDR_IOCTL_VERSION_MINOR;
	const uint32_t patch = MDR_IOCTL_VERSION_PATCH;

	assert_true(compatible(major, minor, patch));
	assert_true(compatible(major, minor, patch + 1));	// patch is informative
	assert_true(compatible(major, minor, 0));
	assert_true(compatible(major, minor + 1, 0));		// a newer module
	if (minor > 0)
		assert_false(compatible(major, minor - 1, patch));	// an older one
	assert_false(compatible(major + 1, minor, patch));
	assert_false(compatible(major - 1, minor, patch));	// wraps at 0: still another major
}


// ---- the commands of issue 4: bind ... dev_list ----------------------------

namespace {

// A FakeSys answered by @module, and a Control open on it.
struct Rig {
	FakeModule module;
	FakeSys sys;
	Control control;

	Rig() : control(open_on(sys))
	{
		sys.on_ioctl = module.handler();
	}

	static Control open_on(FakeSys &sys)
	{
		return Control::open(sys).value();
	}
};

// What every request's header holds: our major and patch, the minor its
// argument needs (minor 3 only for an attach to a group), its size, @flags.
void assert_hdr(const std::vector<unsigned char> &arg, uint32_t flags,
		uint32_t minor = mdr::kMinorBeforeGroups)
{
	struct mdr_ioctl_hdr hdr;

	assert_true(arg.size() >= sizeof(hdr));
	std::memcpy(&hdr, arg.data(), sizeof(hdr));
	assert_int_equal(hdr.version[0], MDR_IOCTL_VERSION_MAJOR);
	assert_int_equal(hdr.version[1], minor);
	assert_int_equal(hdr.version[2], MDR_IOCTL_VERSION_PATCH);
	assert_int_equal(hdr.data_size, arg.size());
	assert_int_equal(hdr.flags, flags);
	assert_int_equal(hdr.reserved[0] | hdr.reserved[1] | hdr.reserved[2], 0);
}

// The last argument sent, @size bytes of a T (all of it by default), the
// rest zero.
template <typename T>
T sent_as(const FakeSys &sys, size_t size = sizeof(T))
{
	T arg;

	std::memset(&arg, 0, sizeof(arg));
	assert_int_equal(sys.last_arg.size(), size);
	std::memcpy(&arg, sys.last_arg.data(), size);
	return arg;
}

// The attach of minor 2: 264 bytes, a command number of that size.
constexpr size_t kAttachSizeV2 = offsetof(struct mdr_ioctl_attach, group);
const unsigned long kIocAttachV2 = _IOC(_IOC_READ | _IOC_WRITE, MDR_IOCTL_TYPE,
					MDR_CMD_ATTACH, kAttachSizeV2);

mdr::Target ipv4_target()
{
	mdr::Target t;

	t.family = AF_INET;
	t.port = 4792;
	t.tenant = 17;
	t.addr = {192, 0, 2, 2};
	t.host_id = 0x1122334455667788;
	return t;
}

} // namespace

static void test_bind_request_and_reply(void **)
{
	Rig rig;
	rig.module.disks[{259, 3}] = 1ULL << 40;

	auto b = rig.control.bind(7, {259, 3});
	assert_true(b.ok());
	assert_int_equal(b.value().size, 1ULL << 40);
	assert_int_equal(b.value().lbs, 512);

	assert_int_equal(rig.sys.requests.back(), MDR_IOC_BIND);
	assert_hdr(rig.sys.last_arg, 0);
	auto sent = sent_as<struct mdr_ioctl_bind>(rig.sys);
	assert_int_equal(sent.dev_id, 7);
	assert_int_equal(sent.major, 259);
	assert_int_equal(sent.minor, 3);
	assert_int_equal(sent.lbs, 0);
	assert_int_equal(sent.size, 0);
	for (uint64_t r : sent.reserved)
		assert_int_equal(r, 0);
}

static void test_bind_errors(void **)
{
	Rig rig;
	rig.module.disks[{8, 0}] = 1 << 30;
	rig.module.disks[{8, 16}] = 1 << 30;

	assert_int_equal(rig.control.bind(0, {8, 0}).error(), -EINVAL);
	assert_int_equal(rig.control.bind(1, {9, 9}).error(), -ENXIO);
	assert_true(rig.control.bind(1, {8, 0}).ok());
	assert_int_equal(rig.control.bind(1, {8, 16}).error(), -EEXIST);
	assert_int_equal(rig.control.bind(2, {8, 0}).error(), -EBUSY);
}

// A logical block size that is not a power of two >= 512 is not believed.
static void test_bind_bad_reply(void **)
{
	for (uint32_t lbs : {0u, 256u, 520u, 4097u}) {
		FakeSys sys;
		sys.on_ioctl = [lbs](unsigned long, void *arg) {
			static_cast<struct mdr_ioctl_bind *>(arg)->lbs = lbs;
			return 0;
		};
		Control control = Control::open(sys).value();

		auto b = control.bind(1, {8, 0});
		assert_int_equal(b.error(), -EPROTO);
		assert_false(b.message().empty());
	}
}

static void test_unbind(void **)
{
	Rig rig;
	rig.module.disks[{259, 1}] = 4096;
	assert_true(rig.control.bind(9, {259, 1}).ok());

	rig.module.bound[9].users = 1;
	assert_int_equal(rig.control.unbind(9).error(), -EBUSY);
	rig.module.bound[9].users = 0;

	auto u = rig.control.unbind(9);
	assert_true(u.ok());
	assert_int_equal(u.value().major, 259);
	assert_int_equal(u.value().minor, 1);
	assert_int_equal(rig.sys.requests.back(), MDR_IOC_UNBIND);
	assert_hdr(rig.sys.last_arg, 0);
	assert_int_equal(sent_as<struct mdr_ioctl_bind>(rig.sys).dev_id, 9);

	assert_int_equal(rig.control.unbind(9).error(), -ENOENT);
}

static void test_attach_request_and_reply(void **)
{
	Rig rig;
	rig.module.node_volumes[42] = {10ULL << 30, 20, "db"};

	auto v = rig.control.attach(42, ipv4_target(), true);
	assert_true(v.ok());

	// No group: the attach of minor 2, which a module of minor 2 takes.
	static_assert(kAttachSizeV2 == 264 && sizeof(struct mdr_ioctl_attach) == 488);
	assert_int_equal(rig.sys.requests.back(), kIocAttachV2);
	assert_int_equal(_IOC_SIZE(rig.sys.requests.back()), 264);
	assert_hdr(rig.sys.last_arg, MDR_ATTACH_F_READONLY);
	assert_int_equal(rig.module.last_attach_size, 264);
	auto sent = sent_as<struct mdr_ioctl_attach>(rig.sys, kAttachSizeV2);
	assert_int_equal(sent.volume_id, 42);
	assert_int_equal(sent.target.family, AF_INET);
	assert_int_equal(sent.target.port, 4792);
	assert_int_equal(sent.target.tenant, 17);
	assert_int_equal(sent.target.host_id, 0x1122334455667788);
	const unsigned char addr[16] = {192, 0, 2, 2};
	assert_memory_equal(sent.target.addr, addr, sizeof(addr));
	struct mdr_ioctl_vol_info zero;
	std::memset(&zero, 0, sizeof(zero));
	assert_memory_equal(&sent.info, &zero, sizeof(zero));	// output only

	const mdr::VolumeInfo &info = v.value();
	assert_int_equal(info.index, 0);
	assert_int_equal(info.volume_id, 42);
	assert_int_equal(info.size, 10ULL << 30);
	assert_int_equal(info.extent_shift, 20);
	assert_string_equal(info.name.c_str(), "db");
	assert_true(info.flags & MDR_VOL_READONLY);
	assert_int_equal(info.target.tenant, 17);
	assert_int_equal(info.group, 0);
	assert_int_equal(info.epoch, 0);
}

namespace {

mdr::Endpoint endpoint(std::array<uint8_t, 16> addr, uint16_t port, uint16_t family = AF_INET)
{
	return {.family = family, .port = port, .scope_id = 0, .addr = addr};
}

// The target (192.0.2.2:4792) and two more, one of them IPv6.
mdr::Group three_replicas()
{
	return {7, {endpoint({192, 0, 2, 3}, 0), endpoint({192, 0, 2, 2}, 4792),
		    endpoint({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4}, 4800,
			     AF_INET6)}};
}

mdr::Target keyed_target()
{
	mdr::Target t = ipv4_target();

	t.key = 99;
	return t;
}

} // namespace

// A group: the whole attach of minor 3, each replica as given, the rest
// of the array zero; the module reports the group back.
static void test_attach_group_request(void **)
{
	Rig rig;
	rig.module.node_volumes[42] = {1ULL << 30, 22, "db"};
	const mdr::Group g = three_replicas();

	auto v = rig.control.attach(42, keyed_target(), false, g);
	assert_true(v.ok());
	assert_int_equal(v.value().group, 7);
	assert_int_equal(rig.sys.requests.back(), MDR_IOC_ATTACH);
	assert_int_equal(_IOC_SIZE(MDR_IOC_ATTACH), 488);
	assert_hdr(rig.sys.last_arg, 0, MDR_IOCTL_VERSION_MINOR);
	assert_int_equal(rig.module.last_attach_size, 488);
	auto sent = sent_as<struct mdr_ioctl_attach>(rig.sys);
	assert_int_equal(sent.target.key, 99);
	assert_int_equal(sent.group.group, 7);
	assert_int_equal(sent.group.count, 3);
	assert_int_equal(sent.group.reserved0, 0);
	for (size_t i = 0; i < 3; i++) {
		const struct mdr_ioctl_replica &r = sent.group.replicas[i];
		assert_int_equal(r.family, g.replicas[i].family);
		assert_int_equal(r.port, g.replicas[i].port);
		assert_int_equal(r.scope_id, 0);
		assert_memory_equal(r.addr, g.replicas[i].addr.data(), 16);
	}
	struct mdr_ioctl_replica zero[MDR_REPLICAS_MAX - 3];
	std::memset(zero, 0, sizeof(zero));
	assert_memory_equal(&sent.group.replicas[3], zero, sizeof(zero));
	assert_int_equal(sent.group.reserved[0] | sent.group.reserved[1], 0);

	// status and list read the group and the epoch the module reports
	rig.module.attached.at(0).epoch = 12;
	auto st = rig.control.status(0);
	assert_true(st.ok());
	assert_int_equal(st.value().group, 7);
	assert_int_equal(st.value().epoch, 12);
	auto l = rig.control.list();
	assert_true(l.ok());
	assert_int_equal(l.value().at(0).group, 7);
	assert_int_equal(l.value().at(0).epoch, 12);

	// The same volume of the same group, through another replica: EEXIST.
	mdr::Target other = keyed_target();
	other.addr = {192, 0, 2, 3};
	other.port = 4791;
	assert_int_equal(rig.control.attach(42, other, false, g).error(), -EEXIST);
}

// What the module refuses of a group (kmod/volume/device.c), each EINVAL;
// and more replicas than the ABI holds are not sent at all.
static void test_attach_group_errors(void **)
{
	Rig rig;
	rig.module.node_volumes[42] = {1ULL << 30, 22, "db"};

	mdr::Group no_id = three_replicas();
	no_id.id = 0;
	mdr::Group without_target = three_replicas();
	without_target.replicas.erase(without_target.replicas.begin() + 1);
	mdr::Group twice = three_replicas();
	twice.replicas.push_back(endpoint({192, 0, 2, 3}, 4791));	// port 0 is 4791
	mdr::Group bad_family = three_replicas();
	bad_family.replicas[0].family = 99;
	mdr::Group long_ipv4 = three_replicas();
	long_ipv4.replicas[0].addr[5] = 1;
	for (const mdr::Group &g : {no_id, without_target, twice, bad_family, long_ipv4}) {
		auto r = rig.control.attach(42, keyed_target(), false, g);
		assert_int_equal(r.error(), -EINVAL);
		assert_true(r.message().empty());	// the module is of our version
	}
	// a group needs the host's key
	assert_int_equal(rig.control.attach(42, ipv4_target(), false, three_replicas()).error(),
			 -EINVAL);
	assert_true(rig.module.attached.empty());

	const size_t sent = rig.sys.requests.size();
	mdr::Group nine{7, {}};
	for (uint8_t i = 1; i <= 9; i++)
		nine.replicas.push_back(endpoint({192, 0, 2, i}, 0));
	auto r = rig.control.attach(42, keyed_target(), false, nine);
	assert_int_equal(r.error(), -EINVAL);
	assert_string_equal(r.message().c_str(), "9 replicas, 8 at the most");
	assert_int_equal(rig.sys.requests.size(), sent);

	// Eight is the most, and fine.
	nine.replicas.pop_back();
	nine.replicas[1].port = 4792;	// the target
	assert_true(rig.control.attach(42, keyed_target(), false, nine).ok());
}

// A module of minor 2 serves every request of this build but an attach to
// a group, which it refuses with EINVAL and its version written back.
static void test_module_before_groups(void **)
{
	Rig rig;
	rig.module.version[1] = 2;
	rig.module.node_volumes[42] = {1ULL << 30, 22, "db"};
	rig.module.disks[{8, 0}] = 1 << 30;

	assert_true(rig.control.bind(1, {8, 0}).ok());
	auto r = rig.control.attach(42, keyed_target(), false, three_replicas());
	assert_int_equal(r.error(), -EINVAL);
	assert_string_equal(r.message().c_str(), ("the module speaks ioctl ABI " +
						  std::to_string(MDR_IOCTL_VERSION_MAJOR) +
						  ".2.0, this build " +
						  std::to_string(MDR_IOCTL_VERSION_MAJOR) + '.' +
						  std::to_string(MDR_IOCTL_VERSION_MINOR) + ".0")
							 .c_str());
	assert_true(rig.control.attach(42, keyed_target(), false).ok());
	assert_true(rig.control.list().ok());
	assert_true(rig.control.status(0).ok());
	assert_true(rig.control.dev_list().ok());
	assert_true(rig.control.detach(0, 42, false).ok());
	assert_true(rig.control.unbind(1).ok());

	// A module of minor 1 refuses them all: they need minor 2.
	rig.module.version[1] = 1;
	assert_int_equal(rig.control.list().error(), -EINVAL);
	assert_non_null(strstr(rig.control.list().message().c_str(),
			       "the module speaks ioctl ABI"));
}

static void test_attach_errors(void **)
{
	Rig rig;
	rig.module.node_volumes[42] = {1 << 30, 22, "a"};

	mdr::Target no_host = ipv4_target();
	no_host.host_id = 0;
	assert_int_equal(rig.control.attach(42, no_host, false).error(), -EINVAL);
	assert_int_equal(rig.control.attach(43, ipv4_target(), false).error(), -ENOENT);
	assert_true(rig.control.attach(42, ipv4_target(), false).ok());
	assert_int_equal(rig.control.attach(42, ipv4_target(), false).error(), -EEXIST);
	assert_hdr(rig.sys.last_arg, 0);

	rig.module.attach_error = -ECONNREFUSED;
	rig.module.node_volumes[44] = {1 << 30, 22, "b"};
	assert_int_equal(rig.control.attach(44, ipv4_target(), false).error(), -ECONNREFUSED);
}

// The module names the volume it attached: a different one is a broken reply,
// and so is an extent size that does not fit 64 bits.
static void test_attach_bad_reply(void **)
{
	for (int broken = 0; broken < 3; broken++) {
		FakeSys sys;
		sys.on_ioctl = [broken](unsigned long, void *arg) {
			auto *a = static_cast<struct mdr_ioctl_attach *>(arg);
			a->info.volume_id = broken == 0 ? 41 : 42;
			a->info.extent_shift = broken == 1 ? 64 : 22;
			a->info.target.family = broken == 2 ? 99 : AF_INET;
			return 0;
		};
		Control control = Control::open(sys).value();

		assert_int_equal(control.attach(42, ipv4_target(), false).error(), -EPROTO);
	}
}

// The module's name buffer is not trusted to hold a NUL.
static void test_volume_name_without_nul(void **)
{
	Rig rig;
	auto &v = rig.module.add_volume(5, 1 << 30, "");
	std::memset(v.name, 'n', sizeof(v.name));

	auto st = rig.control.status(0);
	assert_true(st.ok());
	assert_int_equal(st.value().name.size(), 64);
}

static void test_detach(void **)
{
	Rig rig;
	rig.module.add_volume(5, 1 << 30, "a").open_count = 1;

	assert_int_equal(rig.control.detach(1, 0, false).error(), -ENXIO);
	assert_int_equal(rig.control.detach(0, 6, false).error(), -EINVAL);
	assert_int_equal(rig.control.detach(0, 5, false).error(), -EBUSY);
	assert_int_equal(rig.sys.requests.back(), MDR_IOC_DETACH);
	assert_hdr(rig.sys.last_arg, 0);

	assert_true(rig.control.detach(0, 5, true).ok());
	assert_hdr(rig.sys.last_arg, MDR_DETACH_F_FORCE);
	auto sent = sent_as<struct mdr_ioctl_detach>(rig.sys);
	assert_int_equal(sent.index, 0);
	assert_int_equal(sent.volume_id, 5);
	assert_int_equal(sent.reserved0, 0);
	assert_true(rig.module.attached.empty());
}

static void test_status(void **)
{
	Rig rig;
	rig.module.add_volume(5, 1 << 30, "a");
	rig.module.add_volume(6, 2 << 30, "b").cached = 12;

	auto st = rig.control.status(1);
	assert_true(st.ok());
	assert_int_equal(st.value().volume_id, 6);
	assert_int_equal(st.value().cached, 12);
	assert_int_equal(rig.sys.requests.back(), MDR_IOC_STATUS);
	assert_hdr(rig.sys.last_arg, 0);
	assert_int_equal(sent_as<struct mdr_ioctl_status>(rig.sys).info.index, 1);

	assert_int_equal(rig.control.status(2).error(), -ENXIO);
}

static void test_list_empty(void **)
{
	Rig rig;
	auto l = rig.control.list();

	assert_true(l.ok());
	assert_true(l.value().empty());
	assert_int_equal(rig.sys.requests.size(), 1);
	assert_int_equal(rig.sys.requests[0], MDR_IOC_LIST);
	assert_hdr(rig.sys.last_arg, 0);
	auto sent = sent_as<struct mdr_ioctl_list>(rig.sys);
	assert_true(sent.count > 0);
	assert_true(sent.array != 0);
}

// More volumes than one page: the next call goes on from the last index.
static void test_list_pages(void **)
{
	Rig rig;
	for (uint64_t id = 1; id <= 300; id++)
		rig.module.add_volume(id, id << 30, "v" + std::to_string(id));

	auto l = rig.control.list();
	assert_true(l.ok());
	assert_int_equal(l.value().size(), 300);
	for (uint32_t i = 0; i < 300; i++) {
		assert_int_equal(l.value()[i].index, i);
		assert_int_equal(l.value()[i].volume_id, i + 1);
	}
	assert_int_equal(rig.sys.requests.size(), 2);
	auto sent = sent_as<struct mdr_ioctl_list>(rig.sys);
	assert_int_equal(sent.start, 256);
	assert_int_equal(sent.elem_size, sizeof(struct mdr_ioctl_vol_info));
}

// The module returns fewer per call than asked: pages follow until a
// short one.
static void test_list_over_module_limit(void **)
{
	Rig rig;
	rig.module.list_max = 40;
	for (uint64_t id = 1; id <= 100; id++)
		rig.module.add_volume(id, 1 << 30, "");

	auto l = rig.control.list();
	assert_true(l.ok());
	assert_int_equal(l.value().size(), 100);
	assert_int_equal(l.value().back().index, 99);
}

static void test_list_bad_reply(void **)
{
	FakeSys sys;
	sys.on_ioctl = [](unsigned long, void *arg) {
		auto *l = static_cast<struct mdr_ioctl_list *>(arg);
		l->count += 1;		// more than there was room for
		l->total = l->count;
		return 0;
	};
	Control control = Control::open(sys).value();

	assert_int_equal(control.list().error(), -EPROTO);
}

// A module that ignores the start index would make the list go round for
// ever: its second page goes backwards and is refused.
static void test_list_start_ignored(void **)
{
	FakeSys sys;
	sys.on_ioctl = [](unsigned long, void *arg) {
		auto *l = static_cast<struct mdr_ioctl_list *>(arg);
		auto *v = reinterpret_cast<struct mdr_ioctl_vol_info *>(
			static_cast<uintptr_t>(l->array));

		for (uint32_t i = 0; i < l->count; i++) {
			v[i] = {};
			v[i].index = i;
			v[i].extent_shift = 22;
			v[i].target.family = AF_INET;
		}
		l->total = l->count * 2;
		return 0;
	};
	Control control = Control::open(sys).value();

	assert_int_equal(control.list().error(), -EPROTO);
	assert_int_equal(sys.requests.size(), 2);
}

static void test_dev_list(void **)
{
	Rig rig;
	for (uint32_t i = 0; i < 40; i++) {
		rig.module.disks[{259, i}] = (i + 1) * 4096;
		assert_true(rig.control.bind(100 + i, {259, i}).ok());
	}
	rig.module.bound[103].errors = 5;

	auto l = rig.control.dev_list();
	assert_true(l.ok());
	assert_int_equal(l.value().size(), 40);
	assert_int_equal(rig.sys.requests.back(), MDR_IOC_DEV_LIST);
	assert_hdr(rig.sys.last_arg, 0);
	const mdr::DeviceInfo &d = l.value()[3];
	assert_int_equal(d.dev_id, 103);
	assert_int_equal(d.dev.major, 259);
	assert_int_equal(d.dev.minor, 3);
	assert_int_equal(d.size, 4 * 4096);
	assert_int_equal(d.errors, 5);
}

// A module of another interface version refuses with EINVAL and writes its
// version back: the error says so.
static void test_version_refused(void **)
{
	Rig rig;
	rig.module.version[0] = MDR_IOCTL_VERSION_MAJOR + 1;

	auto l = rig.control.list();
	assert_int_equal(l.error(), -EINVAL);
	assert_non_null(strstr(l.message().c_str(), "the module speaks ioctl ABI"));

	// A plain EINVAL from a module of our version says nothing more.
	Rig same;
	assert_int_equal(same.control.bind(0, {8, 0}).error(), -EINVAL);
	assert_true(same.control.bind(0, {8, 0}).message().empty());
}

// Whatever the module says, each wrapper passes on.
static void test_errno_passed_on(void **)
{
	for (int err : {-EPERM, -EFAULT, -ENOMEM, -ENOTTY}) {
		FakeSys sys;
		sys.on_ioctl = [err](unsigned long, void *) { return err; };
		Control control = Control::open(sys).value();

		assert_int_equal(control.bind(1, {8, 0}).error(), err);
		assert_int_equal(control.unbind(1).error(), err);
		assert_int_equal(control.attach(1, ipv4_target(), false).error(), err);
		assert_int_equal(control.detach(0, 0, false).error(), err);
		assert_int_equal(control.list().error(), err);
		assert_int_equal(control.status(0).error(), err);
		assert_int_equal(control.dev_list().error(), err);
	}
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_path_and_flags),
		cmocka_unit_test(test_version_request),
		cmocka_unit_test(test_version_reply),
		cmocka_unit_test(test_version_release_without_nul),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_version_ioctl_error),
		cmocka_unit_test(test_closes_once),
		cmocka_unit_test(test_move_assignment_closes_target),
		cmocka_unit_test(test_interface_compatible),
		cmocka_unit_test(test_bind_request_and_reply),
		cmocka_unit_test(test_bind_errors),
		cmocka_unit_test(test_bind_bad_reply),
		cmocka_unit_test(test_unbind),
		cmocka_unit_test(test_attach_request_and_reply),
		cmocka_unit_test(test_attach_errors),
		cmocka_unit_test(test_attach_bad_reply),
		cmocka_unit_test(test_attach_group_request),
		cmocka_unit_test(test_attach_group_errors),
		cmocka_unit_test(test_module_before_groups),
		cmocka_unit_test(test_volume_name_without_nul),
		cmocka_unit_test(test_detach),
		cmocka_unit_test(test_status),
		cmocka_unit_test(test_list_empty),
		cmocka_unit_test(test_list_pages),
		cmocka_unit_test(test_list_over_module_limit),
		cmocka_unit_test(test_list_bad_reply),
		cmocka_unit_test(test_list_start_ignored),
		cmocka_unit_test(test_dev_list),
		cmocka_unit_test(test_version_refused),
		cmocka_unit_test(test_errno_passed_on),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
