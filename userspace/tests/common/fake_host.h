// SPDX-License-Identifier: GPL-2.0
//
// fake_host.h - a Host of files and block devices the test sets up.
#ifndef MDR_TESTS_FAKE_HOST_H
#define MDR_TESTS_FAKE_HOST_H

#include <algorithm>
#include <cerrno>
#include <map>
#include <string>

#include "mdctl/host.h"

namespace mdr::test {

class FakeHost final : public mdctl::Host {
public:
	std::map<std::string, std::string> files;	// path -> contents
	std::map<std::string, mdr::DevNum> block_devices;	// path -> major:minor
	std::map<std::string, std::string> env;

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

	// Every file whose path is @path + "/" + a name without further '/'.
	mdr::Result<std::vector<std::string>> list_dir(const std::string &path) override
	{
		std::vector<std::string> names;
		const std::string prefix = path + '/';

		for (const auto &[name, contents] : files)
			if (name.starts_with(prefix) &&
			    name.find('/', prefix.size()) == std::string::npos)
				names.push_back(name.substr(prefix.size()));
		if (names.empty())
			return mdr::Error(-ENOENT);
		std::reverse(names.begin(), names.end());	// readdir() does not sort
		return names;
	}

	std::optional<std::string> getenv(const char *name) override
	{
		auto e = env.find(name);

		return e == env.end() ? std::nullopt : std::optional<std::string>(e->second);
	}
};

} // namespace mdr::test

#endif // MDR_TESTS_FAKE_HOST_H
