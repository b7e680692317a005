// SPDX-License-Identifier: GPL-2.0
//
// host_identity.cc - see host_identity.h.
#include "mdctl/host_identity.h"

#include <cerrno>

#include <linux/mdroute_wire.h>

#include "lib/auth.h"
#include "mdctl/cli.h"

namespace mdctl {

std::optional<uint64_t> resolve_host_id(const Env &env, std::string_view command,
					std::optional<uint64_t> given, const Config &config)
{
	// Only attach takes --host-id.
	const std::string hint = command == "attach" ? "pass --host-id N"
						     : "set host-id in " + std::string(kConfigPath);

	if (given)
		return given;
	if (config.host_id)
		return config.host_id;
	auto machine_id = env.host.read_file(kMachineIdPath);
	if (!machine_id.ok()) {
		failure(env, command, machine_id.error(), kMachineIdPath, hint);
		return std::nullopt;
	}
	auto derived = host_id_from_machine_id(machine_id.value());
	if (!derived.ok()) {
		failure(env, command, derived.error(),
			std::string(kMachineIdPath) + ": " + derived.message(), hint);
		return std::nullopt;
	}
	return derived.value();
}

std::optional<std::vector<uint8_t>> read_host_key(const Env &env, std::string_view command,
						  const std::string &path)
{
	auto key = mdr::read_key_file(path, MDR_HOST_KEY_MIN, MDR_HOST_KEY_MAX);

	if (key.ok())
		return std::move(key).value();
	// The library's message names the file, and its size when that is wrong.
	failure(env, command, key.error(), key.message(),
		key.error() == -EINVAL ? "a host key file holds 16 to 64 bytes and maybe a "
					 "newline; 'mdctl host gen-key FILE' writes one"
				       : std::string_view());
	return std::nullopt;
}

} // namespace mdctl
