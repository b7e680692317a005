// SPDX-License-Identifier: GPL-2.0
//
// real_host.cc - the real host of host.h: files, sysfs, the environment,
// programs, the keyrings, and the storage node over lib/client/rdma_client.
// The one file of mdctl that knows the RDMA class: it is linked into the
// mdctl program alone, so mdctl_core (every command) and the tests that run
// it see NodeSession and link no verbs.
#include "mdctl/host.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include <dirent.h>
#include <linux/keyctl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/auth/auth.h"
#include "lib/client/rdma_client.h"
#include "lib/util/errors.h"

namespace mdctl {

extern "C" char **environ;

namespace {

class RdmaSession final : public NodeSession {
public:
	RdmaSession(std::unique_ptr<mdr::RdmaClient> client, std::span<const uint8_t> key)
		: client_(std::move(client)), key_(key.begin(), key.end())
	{
	}

	~RdmaSession() override { mdr::wipe(key_); }

	mdr::Result<mdr::wire::Msg> call(const mdr::wire::Body &request, int timeout_ms) override
	{
		return client_->call(request, timeout_ms);
	}

	std::vector<mdr::Result<mdr::wire::Msg>>
	call_many(std::span<const mdr::wire::Body> requests, int timeout_ms) override
	{
		return client_->call_many(requests, timeout_ms);
	}

	const mdr::wire::ConnRep &accepted() const override { return client_->accepted(); }

	std::optional<mdr::wire::Leader> take_redirect() override
	{
		return client_->take_redirect();
	}

	std::span<const uint8_t> admin_key() const override { return key_; }

private:
	std::unique_ptr<mdr::RdmaClient> client_;
	std::vector<uint8_t> key_;	// the admin key, for HOST_ADD's wrap
};

class RealHost final : public Host {
public:
	mdr::Result<FileInfo> stat(const std::string &path) override
	{
		struct stat st;

		if (::stat(path.c_str(), &st) < 0)
			return mdr::Error(-errno);
		FileInfo info;
		info.block_device = S_ISBLK(st.st_mode);
		if (info.block_device)
			info.rdev = {major(st.st_rdev), minor(st.st_rdev)};
		return info;
	}

	mdr::Result<std::string> read_file(const std::string &path) override
	{
		std::ifstream in(path, std::ios::binary);

		if (!in)
			return mdr::Error(errno ? -errno : -EIO);
		std::ostringstream text;
		text << in.rdbuf();
		if (in.bad())
			return mdr::Error(-EIO);
		return text.str();
	}

	mdr::Result<std::vector<std::string>> list_dir(const std::string &path) override
	{
		DIR *dir = opendir(path.c_str());

		if (!dir)
			return mdr::Error(-errno);
		std::vector<std::string> names;
		while (const struct dirent *d = readdir(dir)) {
			std::string_view name = d->d_name;
			if (name != "." && name != "..")
				names.emplace_back(name);
		}
		closedir(dir);
		return names;
	}

	std::optional<std::string> getenv(const char *name) override
	{
		const char *value = std::getenv(name);

		return value ? std::optional<std::string>(value) : std::nullopt;
	}

	void sleep_ms(int ms) override
	{
		std::this_thread::sleep_for(std::chrono::milliseconds(ms));
	}

	mdr::Result<std::unique_ptr<NodeSession>>
	connect_node(const NodeOptions &opts, std::span<const uint8_t> key) override
	{
		mdr::ClientOptions o;
		o.node = opts.addr;
		o.port = opts.port;
		o.role = MDR_ROLE_ADMIN;
		o.timeout_ms = opts.timeout_ms;
		auto client = mdr::RdmaClient::connect(o);
		if (!client.ok())
			return mdr::Error(client.error(), client.message());
		if (auto st = client.value()->authenticate(key); !st.ok())
			return mdr::Error(st.error(), st.message());
		return std::unique_ptr<NodeSession>(
			std::make_unique<RdmaSession>(std::move(client).value(), key));
	}

	mdr::Result<int> run_program(const std::vector<std::string> &argv) override
	{
		std::vector<char *> args;
		pid_t pid;
		int status;

		for (const std::string &a : argv)
			args.push_back(const_cast<char *>(a.c_str()));
		args.push_back(nullptr);
		if (int err = posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ))
			return mdr::Error(-err, argv[0]);
		while (waitpid(pid, &status, 0) < 0)
			if (errno != EINTR)
				return mdr::errno_error("waitpid");
		if (!WIFEXITED(status))
			return mdr::Error(-EINTR, argv[0] + " died of signal " +
						  std::to_string(WTERMSIG(status)));
		return WEXITSTATUS(status);
	}

	// The raw system calls: no libkeyutils for two of them.
	mdr::Result<int32_t> add_logon_key(const std::string &description,
					   std::span<const uint8_t> payload) override
	{
		long serial = syscall(SYS_add_key, "logon", description.c_str(), payload.data(),
				      payload.size(), KEY_SPEC_USER_KEYRING);

		if (serial < 0)
			return mdr::Error(-errno, "add_key into the user keyring");
		if (syscall(SYS_keyctl, KEYCTL_LINK, serial, KEY_SPEC_PROCESS_KEYRING) < 0)
			return mdr::Error(-errno, "KEYCTL_LINK into the process keyring");
		return static_cast<int32_t>(serial);
	}
};

} // namespace

Host &real_host()
{
	static RealHost host;

	return host;
}

} // namespace mdctl
