// SPDX-License-Identifier: GPL-2.0
//
// fake_module.h - a FakeSys handler that answers the control ioctls the way
// kmod/admin/ioctl.c and kmod/volume/ do: the same header checks, the same
// errno per case, state kept between calls.
#ifndef MDR_TESTS_FAKE_MODULE_H
#define MDR_TESTS_FAKE_MODULE_H

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <linux/mdroute.h>

#include "tests/common/fake_sys.h"

namespace mdr::test {

class FakeModule {
public:
	struct Volume {		// what the storage node knows
		uint64_t size;
		uint32_t extent_shift;
		std::string name;
	};

	// Set by the test.
	std::map<std::pair<uint32_t, uint32_t>, uint64_t> disks;	// major:minor -> bytes
	std::map<uint64_t, Volume> node_volumes;	// volume id -> volume
	int attach_error = 0;		// -errno the transport's open fails with
	uint32_t list_max = 4096;	// MDR_LIST_MAX
	uint32_t version[3] = {MDR_IOCTL_VERSION_MAJOR, MDR_IOCTL_VERSION_MINOR,
			       MDR_IOCTL_VERSION_PATCH};

	// State, readable and settable by the test.
	std::map<uint32_t, struct mdr_ioctl_dev_info> bound;	// dev id ->
	std::map<uint32_t, struct mdr_ioctl_vol_info> attached;	// index ->
	std::vector<unsigned> calls;	// _IOC_NR of every request
	// The last attach as the module read it (zero past what was sent),
	// and its size: 264 bytes of minor 2, or 488 of minor 3.
	struct mdr_ioctl_attach last_attach = {};
	size_t last_attach_size = 0;

	// The handler for FakeSys::on_ioctl; the module must outlive it.
	FakeSys::IoctlHandler handler();

	// Attaches a volume directly, as if an attach had run.
	struct mdr_ioctl_vol_info &add_volume(uint64_t volume_id, uint64_t size,
					      const std::string &name);

	int ioctl(unsigned long request, void *arg);

private:
	int bind(struct mdr_ioctl_bind &b);
	int unbind(struct mdr_ioctl_bind &b);
	int attach(struct mdr_ioctl_attach &a);
	int detach(struct mdr_ioctl_detach &d);
	int status(struct mdr_ioctl_status &s);
	template <typename Elem, typename Map>
	int list(struct mdr_ioctl_list &l, const Map &map);
};

} // namespace mdr::test

#endif // MDR_TESTS_FAKE_MODULE_H
