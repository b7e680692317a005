// SPDX-License-Identifier: GPL-2.0
//
// vm_client.h - what the VM test programs that talk to mdnode share
// (mdr-test-node-client, mdr-test-migrate, mdr-test-raw-client): numbers
// and steps of their command lines, the options of a connection, and the
// connection and admin proof with what they print when they fail.
#ifndef MDR_TESTS_VM_CLIENT_H
#define MDR_TESTS_VM_CLIENT_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/client/rdma_client.h"

namespace mdr::test {

// Decimal or 0x hex, with an optional K/M/G/T (binary) suffix.
bool parse_u64(std::string_view s, uint64_t &v);

// "open:db1" -> {"open", "db1"}
std::vector<std::string> split(std::string_view s, char sep = ':');

// Where mdnode listens: --node ADDR and --port N. False when name is
// neither or value is not good.
bool address_option(std::string_view name, std::string_view value, std::string &node,
		    uint16_t &port);

// The options of an RdmaClient's connection: address_option()'s, --timeout
// MS and --admin-key FILE (an admin connection, whose key is in FILE).
bool connect_option(std::string_view name, const std::string &value, ClientOptions &opts,
		    std::string &key_file);

// Latencies of a load (mdr-test-node-client's allocbench), in the unit
// they were given in: nearest-rank percentiles (the smallest value that
// p % of them do not exceed), so that p99 of 100 values is the 99th and
// not an interpolation between two requests; all 0 for none.
struct LatencySummary {
	uint64_t count = 0, p50 = 0, p99 = 0, max = 0, mean = 0;
};
LatencySummary summarize_latencies(std::vector<uint64_t> values);

// The replicas of a group a client follows the leader across
// (mdr-test-node-client --follow): where its next connection goes once
// the last was lost, or a replica named another leader.
struct Replicas {
	std::vector<std::string> nodes;	// addresses, the first one's first
	size_t at = 0;			// the one connected to

	// To @leader when a replica named one (its address and port; at
	// moves to it when it is listed), else to the next listed after at,
	// round the list, at @port.
	std::pair<std::string, uint16_t> next(const std::optional<wire::Leader> &leader,
					      uint16_t port);
};

// A connection, or nullptr once "connect: error: ..." is printed.
std::unique_ptr<RdmaClient> connect_or_say(const ClientOptions &opts);

// The admin key in key_file (trailing newlines stripped) proven; false
// once "auth: error: ..." is printed.
bool prove_admin_key(RdmaClient &cl, const std::string &key_file);

} // namespace mdr::test

#endif // MDR_TESTS_VM_CLIENT_H
