// SPDX-License-Identifier: GPL-2.0
//
// fake_host.h - a Host of files, block devices, a storage node and
// programs the test sets up.
#ifndef MDR_TESTS_FAKE_HOST_H
#define MDR_TESTS_FAKE_HOST_H

#include <algorithm>
#include <cerrno>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "mdctl/host.h"
#include "tests/common/fake_node.h"

namespace mdr::test {

class FakeHost final : public mdctl::Host {
public:
	std::map<std::string, std::string> files;	// path -> contents
	std::map<std::string, mdr::DevNum> block_devices;	// path -> major:minor
	std::map<std::string, std::string> env;
	FakeNode *node = nullptr;			// none: nobody listens
	std::vector<std::vector<std::string>> programs;	// run_program() calls
	// The user keyring of add_logon_key(): description -> key. A key
	// added again keeps its serial and gets the new payload, as add_key(2)
	// updates a key in place.
	struct LogonKey {
		std::vector<uint8_t> payload;
		int32_t serial;
	};
	std::map<std::string, LogonKey> keyring;
	int add_key_error = 0;				// -errno add_key fails with
	std::vector<int> slept_ms;			// sleep_ms() calls
	int32_t next_serial = 1000;
	// What a program does; by default it fails to run (ENOENT).
	std::function<mdr::Result<int>(const std::vector<std::string> &)> on_run;

	mdr::Result<mdctl::FileInfo> stat(const std::string &path) override
	{
		if (auto b = block_devices.find(path); b != block_devices.end())
			return mdctl::FileInfo{true, b->second};
		if (files.contains(path))
			return mdctl::FileInfo{};
		return mdr::Error(-ENOENT);
	}

	mdr::Result<std::string> read_file(const std::string &path) override
	{
		auto f = files.find(path);

		if (f == files.end())
			return mdr::Error(-ENOENT);
		return f->second;
	}

	// The names under @path + "/" of files, and of directories that hold
	// files (the first component of what follows).
	mdr::Result<std::vector<std::string>> list_dir(const std::string &path) override
	{
		std::vector<std::string> names;
		const std::string prefix = path + '/';

		for (const auto &[name, contents] : files) {
			if (!name.starts_with(prefix))
				continue;
			std::string first = name.substr(prefix.size(),
							name.find('/', prefix.size()) - prefix.size());
			if (std::find(names.begin(), names.end(), first) == names.end())
				names.push_back(first);
		}
		if (names.empty())
			return mdr::Error(-ENOENT);
		std::reverse(names.begin(), names.end());	// readdir() does not sort
		return names;
	}

	void sleep_ms(int ms) override { slept_ms.push_back(ms); }

	std::optional<std::string> getenv(const char *name) override
	{
		auto e = env.find(name);

		return e == env.end() ? std::nullopt : std::optional<std::string>(e->second);
	}

	mdr::Result<std::unique_ptr<mdctl::NodeSession>>
	connect_node(const mdctl::NodeOptions &opts, std::span<const uint8_t> key) override
	{
		if (!node)
			return mdr::Error(-ECONNREFUSED, "connection refused");
		return node->connect(opts, key);
	}

	mdr::Result<int> run_program(const std::vector<std::string> &argv) override
	{
		programs.push_back(argv);
		if (!on_run)
			return mdr::Error(-ENOENT, argv.at(0));
		return on_run(argv);
	}

	mdr::Result<int32_t> add_logon_key(const std::string &description,
					   std::span<const uint8_t> payload) override
	{
		if (add_key_error)
			return mdr::Error(add_key_error, "add_key into the user keyring");
		auto [key, added] = keyring.try_emplace(description, LogonKey{{}, next_serial});
		if (added)
			next_serial++;
		key->second.payload.assign(payload.begin(), payload.end());
		return key->second.serial;
	}
};

} // namespace mdr::test

#endif // MDR_TESTS_FAKE_HOST_H
