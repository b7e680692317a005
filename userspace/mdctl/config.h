// SPDX-License-Identifier: GPL-2.0
//
// config.h - mdctl's settings file, /etc/mdroute/mdctl.conf:
//	# which storage node and key the storage-node commands use
//	node = 192.0.2.2:4791
//	admin-key = /etc/mdroute/admin.key
//	tenant = 1
//	host-key = /etc/mdroute/host.key
//	# the node's replica group, for attach (see its help)
//	group = 7
//	replicas = 192.0.2.2, 192.0.2.3, 192.0.2.4:4800
// One "key = value" a line, the syntax of mdnode.conf: blank lines and lines
// starting with '#' are ignored; an unknown key, a key given twice or a bad
// value is an error naming file:line. The command line wins over
// $MDCTL_NODE, which wins over the file.
#ifndef MDCTL_CONFIG_H
#define MDCTL_CONFIG_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/client/control.h"
#include "lib/util/result.h"

namespace mdctl {

inline constexpr char kConfigPath[] = "/etc/mdroute/mdctl.conf";
inline constexpr char kConfigEnv[] = "MDCTL_CONFIG";	// another path, for tests
inline constexpr char kDefaultKeyPath[] = "/etc/mdroute/admin.key";

struct Config {
	std::optional<std::string> node;	// ADDR[:PORT], checked
	std::optional<std::string> admin_key;	// path of the admin key
	std::optional<uint32_t> tenant;		// default --tenant
	std::optional<uint64_t> host_id;	// default --host-id, non-zero
	std::optional<std::string> host_key;	// default --host-key-file of attach
	std::optional<uint32_t> timeout_ms;	// per RPC to mdnode, 1..600000
	std::optional<uint64_t> group;		// default --group of attach, non-zero
	// default --replica of attach: 1 to MDR_REPLICAS_MAX, each once;
	// separated by commas or blanks
	std::optional<std::vector<mdr::Endpoint>> replicas;
};

// Parses the text of the file at @path (named in messages). Fails with
// -EINVAL and "PATH:LINE: what is wrong".
mdr::Result<Config> parse_config(std::string_view path, std::string_view text);

} // namespace mdctl

#endif // MDCTL_CONFIG_H
