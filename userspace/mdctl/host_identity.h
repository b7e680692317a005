// SPDX-License-Identifier: GPL-2.0
//
// host_identity.h - who this host is at the storage nodes: its id (what
// attach names in mdr_ioctl_target.host_id, and 'mdctl host id' prints)
// and its key (a file put into the kernel's keyring as a "logon" key, or
// the serial of one, for mdr_ioctl_target.key). attach and the host group
// (hosts.cc) both use them.
#ifndef MDCTL_HOST_IDENTITY_H
#define MDCTL_HOST_IDENTITY_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mdctl/config.h"
#include "mdctl/env.h"

namespace mdctl {

// @given (--host-id), else 'host-id' in mdctl.conf, else derived from
// /etc/machine-id (host_id_from_machine_id()); nullopt once the failure
// is told.
std::optional<uint64_t> resolve_host_id(const Env &env, std::string_view command,
					std::optional<uint64_t> given, const Config &config);

// The secret in a host key file: its bytes, trailing newlines stripped,
// MDR_HOST_KEY_MIN to MDR_HOST_KEY_MAX of them (what 'mdctl host gen-key'
// writes). nullopt once the failure is told, naming the file. The caller
// wipes it (mdr::wipe) once used.
std::optional<std::vector<uint8_t>> read_host_key(const Env &env, std::string_view command,
						  const std::string &path);

// The description of this host's logon key for @host_id:
// "mdroute:host:0000000000000093".
std::string host_key_description(uint64_t host_id);

// How attach names this host's key: at most one of the two.
struct HostKeyArgs {
	std::optional<std::string> file;	// --host-key-file
	std::optional<int32_t> serial;		// --key-serial, > 0
};

// The serial for mdr_ioctl_target.key: --key-serial as given; else the
// key in --host-key-file, else in 'host-key' of mdctl.conf, added to the
// keyring as host_key_description(@host_id) (Host::add_logon_key()) and
// its copy wiped; 0 when there is none. nullopt once the failure is told.
std::optional<int32_t> host_key_serial(const Env &env, std::string_view command,
				       const HostKeyArgs &args, const Config &config,
				       uint64_t host_id);

} // namespace mdctl

#endif // MDCTL_HOST_IDENTITY_H
