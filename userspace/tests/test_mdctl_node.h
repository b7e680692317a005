// SPDX-License-Identifier: GPL-2.0
//
// test_mdctl_node.h - the world of mdctl's storage-node tests
// (test_mdctl_{config,volume,dev_node,migrate,attach}.cc): a storage node
// with two devices whose serials two local disks show in sysfs (one as
// serial, one as device/serial), and a third device found nowhere here; a
// module that knows volumes 1 to 19; and a usage error in a world of its
// own.
#ifndef MDR_TESTS_TEST_MDCTL_NODE_H
#define MDR_TESTS_TEST_MDCTL_NODE_H

#include <cstdint>
#include <initializer_list>
#include <string>

#include "lib/client/control.h"
#include "tests/test_mdctl.h"

#include "tests/common/cmocka_cxx.h"

namespace mdr::test {

struct World : NodeWorld {
	World()
	{
		node.devices = {{1, 4ULL << 40, 1ULL << 40, "mdr-vblk0"},
				{2, 100ULL << 30, 0, "mdr-nvme0"},
				{3, 1ULL << 30, 0, "far-away"}};
		disk("vda", {254, 0}, "serial", "mdr-vblk0\n");
		disk("nvme0n1", {259, 0}, "device/serial", "  mdr-nvme0   \n");
		disk("sda", {8, 0}, "wwid", "naa.5000\n");
		host.files["/sys/block/mdr0/dev"] = "250:0\n";	// ours: never a backing disk
		host.files["/sys/block/mdr0/serial"] = "far-away\n";
		for (uint64_t id = 1; id < 20; id++)
			module.node_volumes[id] = {1ULL << 30, 22, "v" + std::to_string(id)};
	}

	void disk(const std::string &name, mdr::DevNum dev, const std::string &attr,
		  const std::string &serial)
	{
		host.files["/sys/block/" + name + "/dev"] =
			std::to_string(dev.major) + ':' + std::to_string(dev.minor) + '\n';
		host.files["/sys/block/" + name + '/' + attr] = serial;
		host.block_devices["/dev/" + name] = dev;
		module.disks[{dev.major, dev.minor}] = 1ULL << 40;
	}
};

inline void assert_usage(std::initializer_list<std::string> args, const std::string &message)
{
	World w;
	assert_usage(w, args, message);
}

} // namespace mdr::test

#endif // MDR_TESTS_TEST_MDCTL_NODE_H
