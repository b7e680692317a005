// SPDX-License-Identifier: GPL-2.0
//
// config.h - mdnode's settings, from a config file and the command line.
//
// The config file holds the long options without "--", one per line:
//	# /etc/mdroute/mdnode.conf
//	listen = 192.0.2.2:4791
//	data-dir = /var/lib/mdnode
//	device = 1=/dev/nvme0n1
//	device = 2=/dev/vda
//	metrics = 127.0.0.1:9464
//	group = 7
//	replica-id = 1
//	etcd = http://192.0.2.9:2379
//	replica = 1=192.0.2.11:4800
//	replica = 2=192.0.2.12:4800
//	replica = 3=192.0.2.13:4800
// Blank lines and lines starting with '#' are ignored. The command line
// overrides the file; --device on the command line replaces the file's
// devices rather than adding to them, and --replica the file's replicas.
//
// A replica group (Documentation/replication.md) takes all four of group,
// replica-id, etcd and replica, or none of them: none is a single node.
#ifndef MDNODE_CONFIG_H
#define MDNODE_CONFIG_H

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/util/result.h"
#include "mdnode/log.h"

namespace mdnode {

struct DeviceArg {
	uint32_t id;		// cluster-wide device id, >= 1
	std::string path;
};

// A member of the replica set: its replica id and the address its
// replication listener takes (the leader's log connections come there).
struct ReplicaArg {
	uint32_t id;		// >= 1
	std::string address;	// numeric IPv4, or IPv6
	uint16_t port;
	bool operator==(const ReplicaArg &) const = default;
};

// Members a replica set may have: three in the design, up to seven.
inline constexpr size_t kMinReplicas = 3;
inline constexpr size_t kMaxReplicas = 7;
// The longest --group-ttl-s: a leader that died holds the group this long.
inline constexpr uint32_t kGroupTtlMaxS = 60;

// The most --checkpoint-records takes.
inline constexpr uint64_t kCheckpointRecordsMax = 1000000000;

// The most --io-hold-ms takes: 10 minutes, far beyond any device's timeout.
inline constexpr uint32_t kIoHoldMsMax = 600000;

struct Config {
	std::string listen_address;
	uint16_t port = 4791;
	std::string data_dir;
	std::vector<DeviceArg> devices;
	std::string admin_key_file = "/etc/mdroute/admin.key";
	uint32_t lease_ms = 5000;
	// NodeOptions::io_hold_ms.
	uint32_t io_hold_ms = 20000;
	// NodeOptions::checkpoint_records.
	uint64_t checkpoint_records = 100000;
	uint32_t max_connections = 1024;
	// ServerOptions::max_per_tenant, ServerOptions::admin_reserved.
	uint32_t max_connections_per_tenant = 256;
	uint32_t admin_connections = 16;
	// --host-auth required|optional: NodeOptions::host_auth_required.
	bool host_auth_required = true;
	// --host-auth-timeout-ms: NodeOptions::host_auth_timeout_ms.
	uint32_t host_auth_timeout_ms = 5000;
	LogLevel log_level = LogLevel::info;
	// --log-time utc: set_log_time().
	bool log_time = false;
	// --metrics ADDR:PORT (metrics_http.h); empty address: no endpoint.
	std::string metrics_address;
	uint16_t metrics_port = 0;
	// Test only (--test-drop-invalidations, never from a file, and only in
	// a build with MDR_TEST_HOOKS): see NodeOptions::test_drop_invalidations.
	bool test_drop_invalidations = false;
	// --forget-device (repeatable, never from a file): device ids whose
	// recorded disk the start-up check drops (startup_devices.h).
	std::vector<uint32_t> forget_devices;
	// The replica group; group 0: a single node, the rest empty.
	uint64_t group = 0;
	uint32_t replica_id = 0;
	std::vector<std::string> etcd_endpoints;	// http://HOST:PORT
	std::vector<ReplicaArg> replicas;		// this one among them
	// --group-ttl-s: the etcd lease of the leader key and of the member
	// record (GroupOptions::ttl_s).
	uint32_t group_ttl_s = 1;
	bool help = false;
	bool version = false;
};

// Reads a whole file; -errno on failure. A seam for tests.
using FileReader = std::function<mdr::Result<std::string>(const std::string &path)>;
mdr::Result<std::string> read_file(const std::string &path);

// Parses the arguments after the program name. Errors are usage errors:
// -EINVAL with a message naming the option (or file:line) and the value.
mdr::Result<Config> parse_config(std::span<const std::string_view> args,
				 const FileReader &reader = read_file);

// This replica's entry of the replica set; nullptr for a single node.
const ReplicaArg *self_replica(const Config &c);

// One ID=ADDR:PORT of a replica set, appended to out; errors name where.
mdr::Status parse_replica(std::string_view value, std::string_view where,
			  std::vector<ReplicaArg> &out);
// A replica set's size (kMinReplicas..kMaxReplicas; the message reads
// what, the count, "replicas", from) and its ids and addresses distinct.
mdr::Status check_replica_set(const std::vector<ReplicaArg> &set, std::string_view where,
			      const std::string &what, const std::string &from);

extern const char kUsage[];

} // namespace mdnode

#endif // MDNODE_CONFIG_H
