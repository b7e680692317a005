// SPDX-License-Identifier: GPL-2.0
//
// control.h - the mdroute control device, /dev/mdroute-control, and the
// ioctls of <linux/mdroute.h>.
#ifndef MDR_CONTROL_H
#define MDR_CONTROL_H

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <linux/mdroute.h>

#include "lib/util/result.h"

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

// The minor every request carries but an attach that names a replica
// group: minor 3 changed no other argument (vol_info's group and epoch
// were reserved, zero, before it), so a module of minor 2 serves them,
// and attaches to a node of its own, for this build too.
inline constexpr uint32_t kMinorBeforeGroups = 2;

// Where a volume's metadata lives: struct mdr_ioctl_target.
struct Target {
	uint16_t family = 0;		// AF_INET or AF_INET6
	uint16_t port = 0;		// host byte order; 0: MDR_WIRE_PORT
	uint32_t tenant = 0;
	std::array<uint8_t, 16> addr{};	// network byte order; IPv4 in the first 4
	uint64_t host_id = 0;		// non-zero
	uint32_t scope_id = 0;		// IPv6 link-local scope; else 0
	// Serial of a "logon" key the caller possesses holding this host's
	// secret: the host then speaks wire version 3 and authenticates.
	// 0: no key (version 2 at most, unauthenticated).
	int32_t key = 0;
};

// Where one replica of a group serves hosts: struct mdr_ioctl_replica.
struct Endpoint {
	uint16_t family = 0;		// AF_INET or AF_INET6
	uint16_t port = 0;		// host byte order; 0: MDR_WIRE_PORT
	uint32_t scope_id = 0;		// IPv6 link-local scope; else 0
	std::array<uint8_t, 16> addr{};	// network byte order; IPv4 in the first 4

	bool operator==(const Endpoint &) const = default;
};

// Where @target's node serves hosts.
Endpoint endpoint_of(const Target &target);

// The same place, as the module compares them: port 0 is MDR_WIRE_PORT.
bool same_endpoint(const Endpoint &a, const Endpoint &b);

// The replica group a volume's metadata lives in: struct mdr_ioctl_group.
// No id and no replicas: a node of its own.
struct Group {
	uint64_t id = 0;
	std::vector<Endpoint> replicas;	// at most MDR_REPLICAS_MAX, the target's among them

	bool empty() const { return !id && replicas.empty(); }
};

// An attached volume: struct mdr_ioctl_vol_info.
struct VolumeInfo {
	uint32_t index = 0;		// N of /dev/mdrN
	uint32_t extent_shift = 0;	// log2 of the extent size in bytes
	uint64_t volume_id = 0;
	uint64_t size = 0;		// bytes
	Target target;
	uint32_t flags = 0;		// MDR_VOL_*
	uint32_t open_count = 0;
	uint64_t cached = 0;		// extents in the location cache
	uint64_t inflight = 0;		// bios at backing devices
	std::string name;
	// Minor 3 (zero from a module before it):
	uint64_t group = 0;		// its replica group; 0: a node of its own
	uint64_t epoch = 0;		// the highest the module saw the group's leaders serve at
};

// What MDR_IOC_BIND found at the local block device.
struct BindInfo {
	uint64_t size = 0;		// bytes
	uint32_t lbs = 0;		// logical block size, bytes
};

// A local block device number.
struct DevNum {
	uint32_t major = 0, minor = 0;
};

// A bound backing device: struct mdr_ioctl_dev_info.
struct DeviceInfo {
	uint32_t dev_id = 0;
	DevNum dev;
	uint32_t users = 0;		// attached volumes routing IO to it
	uint64_t size = 0;		// bytes
	uint64_t errors = 0;		// IOs it failed
};

// An open control device. Movable, not copyable; closes on destruction.
//
// Every request carries this build's interface version. A module that
// refuses the version answers EINVAL; the Error then says which version the
// module speaks. A reply that breaks the ABI's promises fails with -EPROTO.
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

	// MDR_IOC_BIND: open the block device major:minor exclusively as
	// backing device @dev_id. EEXIST: @dev_id is bound; EBUSY: the block
	// device is bound under another id or held open exclusively.
	Result<BindInfo> bind(uint32_t dev_id, DevNum dev);

	// MDR_IOC_UNBIND: returns the block device it was bound to. ENOENT:
	// not bound; EBUSY: an attached volume uses it.
	Result<DevNum> unbind(uint32_t dev_id);

	// MDR_IOC_ATTACH: connects to the metadata service; EEXIST if the
	// volume is attached from the same node (or group) and tenant already.
	// With a @group, the argument of minor 3 (struct mdr_ioctl_attach
	// whole; EINVAL from the module if the set is not well formed, lacks
	// the target's address, or the target has no key); without one, the
	// shorter argument of minor 2, which a module of minor 2 takes too.
	// More replicas than the ABI holds: EINVAL, nothing sent.
	Result<VolumeInfo> attach(uint64_t volume_id, const Target &target, bool readonly,
				  const Group &group = {});

	// MDR_IOC_DETACH of /dev/mdr@index; @volume_id must match unless 0.
	// ENXIO: nothing there; EINVAL: another volume is; EBUSY: open (and
	// not @force).
	Status detach(uint32_t index, uint64_t volume_id, bool force);

	// MDR_IOC_LIST: every attached volume, in index order.
	Result<std::vector<VolumeInfo>> list();

	// MDR_IOC_STATUS of /dev/mdr@index; ENXIO if nothing is attached there.
	Result<VolumeInfo> status(uint32_t index);

	// MDR_IOC_DEV_LIST: every bound backing device, in id order.
	Result<std::vector<DeviceInfo>> dev_list();

private:
	Control(Sys &sys, int fd) : sys_(&sys), fd_(fd) {}
	void close();
	template <typename Arg>
	Status call(unsigned long request, Arg &arg);
	template <typename Info, typename Raw, typename Convert, typename Key>
	Result<std::vector<Info>> list_all(unsigned long request, Convert convert, Key key);

	Sys *sys_;
	int fd_;	// -1 once moved from
};

} // namespace mdr

#endif // MDR_CONTROL_H
