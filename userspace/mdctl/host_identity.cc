// SPDX-License-Identifier: GPL-2.0
//
// host_identity.cc - see host_identity.h; also host_id_from_machine_id() of
// host.h, the derivation both name.
#include "mdctl/host_identity.h"

#include <cerrno>

#include <linux/mdroute_wire.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "lib/auth/auth.h"
#include "mdctl/cli.h"

namespace mdctl {

namespace {

int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

} // namespace

mdr::Result<uint64_t> host_id_from_machine_id(std::string_view machine_id)
{
	static constexpr std::string_view kAppKey = "mdroute-host-id";
	unsigned char key[16];

	if (machine_id.ends_with('\n'))
		machine_id.remove_suffix(1);
	if (machine_id.size() != 2 * sizeof(key))
		return mdr::Error(-EINVAL, "not a machine id");
	for (size_t i = 0; i < sizeof(key); i++) {
		int hi = hex_digit(machine_id[2 * i]), lo = hex_digit(machine_id[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return mdr::Error(-EINVAL, "not a machine id");
		key[i] = static_cast<unsigned char>(hi << 4 | lo);
	}

	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int mac_len = 0;
	if (!HMAC(EVP_sha256(), key, sizeof(key),
		  reinterpret_cast<const unsigned char *>(kAppKey.data()), kAppKey.size(),
		  mac, &mac_len) || mac_len < 8)
		return mdr::Error(-EIO, "HMAC-SHA256 failed");

	uint64_t id = 0;
	for (int i = 0; i < 8; i++)
		id = id << 8 | mac[i];
	if (id == 0)
		return mdr::Error(-EINVAL, "the host id derived from it is 0");
	return id;
}

std::optional<uint64_t> resolve_host_id(const Env &env, std::string_view command,
					std::optional<uint64_t> given, const Config &config)
{
	// Only attach takes --host-id.
	const std::string hint = command == "attach" ? "pass --host-id ID"
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

std::string host_key_description(uint64_t host_id)
{
	return "mdroute:host:" + format_host_id(host_id);
}

namespace {

std::string add_key_hint(int err, const std::string &description)
{
	switch (err) {
	case -EDQUOT:
		return "this user's keys fill its quota (see /proc/key-users): unlink "
		       "those it does not need";
	case -ENOSYS:
	case -EOPNOTSUPP:
		return "this kernel has no keyrings (CONFIG_KEYS)";
	default:
		return "add the key yourself, 'tr -d \"\\n\" < FILE | keyctl padd logon " +
		       description + " @s', and pass --key-serial with the number it prints";
	}
}

} // namespace

std::optional<int32_t> host_key_serial(const Env &env, std::string_view command,
				       const HostKeyArgs &args, const Config &config,
				       uint64_t host_id)
{
	if (args.serial)
		return args.serial;
	const std::optional<std::string> &path = args.file ? args.file : config.host_key;
	if (!path)
		return 0;
	std::optional<std::vector<uint8_t>> key = read_host_key(env, command, *path);
	if (!key)
		return std::nullopt;

	const std::string description = host_key_description(host_id);
	auto serial = env.host.add_logon_key(description, *key);
	mdr::wipe(*key);
	if (!serial.ok()) {
		failure(env, command, serial.error(),
			"logon key " + description + ": " + serial.message(),
			add_key_hint(serial.error(), description));
		return std::nullopt;
	}
	return serial.value();
}

} // namespace mdctl
