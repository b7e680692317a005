// SPDX-License-Identifier: GPL-2.0
//
// test_mdctl.h - what test_mdctl_*.cc run mdctl in: a run in process with
// its exit status and output, a fake module behind a fake host with a
// machine id, a fake storage node at 192.0.2.2 with the admin key at its
// default path, and the checks of a usage error and of a failure.
#ifndef MDR_TESTS_TEST_MDCTL_H
#define MDR_TESTS_TEST_MDCTL_H

#include <cstdint>
#include <initializer_list>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "lib/client/control.h"
#include "lib/wire/wire.h"
#include "mdctl/host.h"
#include "mdctl/mdctl.h"
#include "tests/common/fake_host.h"
#include "tests/common/fake_module.h"
#include "tests/common/fake_node.h"
#include "tests/common/fake_sys.h"

#include "tests/common/cmocka_cxx.h"

namespace mdr::test {

struct Outcome {
	int status;
	std::string out;
	std::string err;
};

inline constexpr char kKeyPath[] = "/etc/mdroute/admin.key";
inline constexpr char kTryHelp[] = "\nTry 'mdctl --help'.\n";
inline constexpr char kMachineId[] = "0123456789abcdef0123456789abcdef\n";
inline constexpr uint64_t kDerivedHostId = 0x98a75de7956b6183;	// kMachineId's, HMAC-SHA256 by hand

// "mdctl" and @args run as its main() would, on @sys and @host.
inline Outcome run_mdctl(std::span<const char *const> args, mdr::Sys &sys, mdctl::Host &host)
{
	std::vector<const char *> argv = {"mdctl"};
	argv.insert(argv.end(), args.begin(), args.end());
	argv.push_back(nullptr);
	std::ostringstream out, err;

	int status = mdctl::run(static_cast<int>(argv.size() - 1), argv.data(),
				{out, err, sys, host});
	return {status, out.str(), err.str()};
}

// The same with arguments made at run time (a path, a number).
inline Outcome run_mdctl(std::initializer_list<std::string> args, mdr::Sys &sys,
			 mdctl::Host &host)
{
	std::vector<const char *> words;
	for (const std::string &a : args)
		words.push_back(a.c_str());
	return run_mdctl(words, sys, host);
}

// A module with nothing bound or attached, reached through the host's
// ioctls, and a machine id: where every mdctl test starts.
struct MdctlWorld {
	FakeModule module;
	FakeSys sys;
	FakeHost host;

	MdctlWorld()
	{
		sys.on_ioctl = module.handler();
		host.files[mdctl::kMachineIdPath] = kMachineId;
	}

	Outcome run(std::initializer_list<std::string> args) { return run_mdctl(args, sys, host); }
	Outcome run(std::span<const char *const> args) { return run_mdctl(args, sys, host); }
};

// ... and a storage node at 192.0.2.2 (MDCTL_NODE) with the admin key at
// its default path.
struct NodeWorld : MdctlWorld {
	FakeNode node;

	NodeWorld()
	{
		host.node = &node;
		host.env["MDCTL_NODE"] = "192.0.2.2";
		host.files[kKeyPath] = node.key + "\n";
	}

	// A volume the node and the module both know.
	void volume(const std::string &name, uint64_t size, uint32_t tenant = 0,
		    std::vector<mdr::wire::DevExtents> devs = {})
	{
		node.add_volume(name, size, tenant, std::move(devs));
		module.node_volumes[node.volumes[name].vol.volume_id] = {size, 22, name};
	}
};

// A usage error: status 2, the message and the hint on stderr, nothing on
// stdout, and nothing asked of the node, the module or the keyring.
inline void assert_usage(MdctlWorld &w, std::initializer_list<std::string> args,
			 const std::string &message)
{
	Outcome o = w.run(args);

	assert_int_equal(o.status, 2);
	assert_string_equal(o.err.c_str(), ("mdctl: " + message + kTryHelp).c_str());
	assert_true(o.out.empty());
	assert_true(!w.host.node || w.host.node->connections.empty());
	assert_true(w.sys.requests.empty());
	assert_true(w.host.keyring.empty());
}

// A failure: status 1, exactly @err on stderr, nothing on stdout.
inline void assert_failure(MdctlWorld &w, std::initializer_list<std::string> args,
			   const std::string &err)
{
	Outcome o = w.run(args);

	assert_int_equal(o.status, 1);
	assert_string_equal(o.err.c_str(), err.c_str());
	assert_true(o.out.empty());
}

} // namespace mdr::test

#endif // MDR_TESTS_TEST_MDCTL_H
