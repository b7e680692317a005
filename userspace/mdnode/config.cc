// SPDX-License-Identifier: GPL-2.0
//
// config.cc - see config.h.
#include "mdnode/config.h"

#include <cerrno>
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <linux/mdroute_wire.h>

#include "lib/util/args.h"
#include "lib/wire/wire.h"

namespace mdnode {

const char kUsage[] =
	"Usage: mdnode --listen ADDR[:PORT] --data-dir DIR --device ID=PATH [--device ...]\n"
	"              [--config FILE] [--admin-key FILE] [--lease-ms N]\n"
	"              [--io-hold-ms N] [--max-connections N] [--log-level LEVEL]\n"
	"              [--log-time off|utc]\n"
	"              [--max-connections-per-tenant N] [--admin-connections N]\n"
	"              [--host-auth required|optional] [--host-auth-timeout-ms N]\n"
	"              [--forget-device ID] [--metrics ADDR:PORT] [--checkpoint-records N]\n"
	"              [--group G --replica-id ID --etcd URL[,URL...]\n"
	"               --replica ID=ADDR:PORT --replica ... [--group-ttl-s N]]\n"
	"\n"
	"The storage-node metadata responder of mdroute: serves the extent tables\n"
	"of its volumes to hosts over RDMA, and journals every change in DIR.\n"
	"\n"
	"Options:\n"
	"  -l, --listen ADDR[:PORT]  RDMA address to listen on (port 4791)\n"
	"  -d, --data-dir DIR        journal, checkpoints and node identity\n"
	"  -D, --device ID=PATH      a backing device this node owns (repeat)\n"
	"  -c, --config FILE         read settings from FILE first\n"
	"      --admin-key FILE      key of admin clients (/etc/mdroute/admin.key)\n"
	"      --lease-ms N          lease granted to hosts, 1000..60000 (5000)\n"
	"      --io-hold-ms N        longest a host's backing device may hold an IO,\n"
	"                            0..600000 (20000): data a host whose lease ran\n"
	"                            out may still write moves only this much later\n"
	"      --max-connections N   refuse connections beyond N (1024)\n"
	"      --max-connections-per-tenant N\n"
	"                            refuse host connections of a tenant beyond N,\n"
	"                            1..65536 (256)\n"
	"      --admin-connections N of --max-connections, N only admins may take\n"
	"                            (hosts keep at least one), 0..1024 (16)\n"
	"      --host-auth POLICY    required (default): hosts prove their key (wire\n"
	"                            version 3), older hosts are refused; optional:\n"
	"                            hosts of version 1 and 2 are served unproven\n"
	"                            (while upgrading; version 3 hosts still prove)\n"
	"      --host-auth-timeout-ms N\n"
	"                            cut a host that has not proven its key N ms\n"
	"                            after connecting, 100..60000 (5000)\n"
	"      --checkpoint-records N\n"
	"                            write a checkpoint once N records were journaled\n"
	"                            since the last, 1..1000000000 (100000): a start\n"
	"                            replays at most about N records\n"
	"      --log-level LEVEL     error, warn, info (default) or debug\n"
	"      --log-time MODE       utc: each line starts with the UTC time it was\n"
	"                            logged, to the microsecond, when stderr is not\n"
	"                            the journal (which keeps its own); off (default)\n"
	"      --metrics ADDR:PORT   serve Prometheus metrics at http://ADDR:PORT/metrics\n"
	"                            (numeric address, IPv6 as [ADDR]:PORT; off unless\n"
	"                            given): bind it to loopback or a management network\n"
	"      --group G             member of replica group G, 1..2^63-1: the four\n"
	"                            group options go together, or none (a single node)\n"
	"      --replica-id ID       this replica's id in the set, 1..4294967295\n"
	"      --etcd URL[,URL...]   etcd's endpoints, http://HOST:PORT each\n"
	"      --replica ID=ADDR:PORT\n"
	"                            a member of the replica set and the numeric\n"
	"                            address its log listener takes (repeat: 3 to 7\n"
	"                            members, this one among them)\n"
	"      --group-ttl-s N       etcd lease of the leader key, 1..60 s (1): a leader\n"
	"                            that died holds the group this long\n"
	"      --forget-device ID    drop the disk the journal recorded for device ID\n"
	"                            and record the one configured now (repeat; command\n"
	"                            line only): after replacing or re-creating a disk\n"
#ifdef MDR_TEST_HOOKS
	"      --test-drop-invalidations\n"
	"                            TEST ONLY, breaks the consistency rule: push no\n"
	"                            invalidation and wait for no lease holder, as if\n"
	"                            every push were lost and acked (command line only;\n"
	"                            a build with MDR_TEST_HOOKS only)\n"
#endif
	"  -h, --help                this text\n"
	"  -V, --version             print the release and exit\n"
	"\n"
	"Exit status: 0 stopped cleanly, 1 failed, 2 usage error, 3 the journal\n"
	"failed (start it again: it recovers every acknowledged change).\n";

namespace {

enum Opt {
	kListen, kDataDir, kDevice, kConfig, kAdminKey, kLeaseMs, kIoHoldMs, kMaxConn,
	kLogLevel, kHelp, kVersion, kTestDropInval, kHostAuth, kHostAuthTimeout,
	kMaxConnTenant, kAdminConn, kForgetDevice, kMetrics, kGroup, kReplicaId, kEtcd,
	kReplica, kGroupTtl, kCheckpointRecords, kLogTime,
};

constexpr mdr::OptionSpec kSpecs[] = {
	{kListen, "listen", 'l', true},
	{kDataDir, "data-dir", 'd', true},
	{kDevice, "device", 'D', true},
	{kConfig, "config", 'c', true},
	{kAdminKey, "admin-key", 0, true},
	{kLeaseMs, "lease-ms", 0, true},
	{kIoHoldMs, "io-hold-ms", 0, true},
	{kMaxConn, "max-connections", 0, true},
	{kLogLevel, "log-level", 0, true},
	{kHelp, "help", 'h', false},
	{kVersion, "version", 'V', false},
#ifdef MDR_TEST_HOOKS
	{kTestDropInval, "test-drop-invalidations", 0, false},
#endif
	{kHostAuth, "host-auth", 0, true},
	{kHostAuthTimeout, "host-auth-timeout-ms", 0, true},
	{kMaxConnTenant, "max-connections-per-tenant", 0, true},
	{kAdminConn, "admin-connections", 0, true},
	{kForgetDevice, "forget-device", 0, true},
	{kMetrics, "metrics", 0, true},
	{kGroup, "group", 0, true},
	{kReplicaId, "replica-id", 0, true},
	{kEtcd, "etcd", 0, true},
	{kReplica, "replica", 0, true},
	{kGroupTtl, "group-ttl-s", 0, true},
	{kCheckpointRecords, "checkpoint-records", 0, true},
	{kLogTime, "log-time", 0, true},
};

// By id: without MDR_TEST_HOOKS an entry is missing, so ids are not
// indices.
std::string spec_name(int id)
{
	for (const auto &s : kSpecs)
		if (s.id == id)
			return std::string(s.name);
	return "?";
}

mdr::Error bad(std::string_view where, std::string_view what)
{
	return mdr::Error(-EINVAL, std::string(where) + ": " + std::string(what));
}

template <typename T>
bool parse_uint(std::string_view s, T &out, T min, T max)
{
	T v;
	auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);

	if (ec != std::errc() || p != s.data() + s.size() || v < min || v > max)
		return false;
	out = v;
	return true;
}

std::string trim(std::string_view s)
{
	size_t b = s.find_first_not_of(" \t\r");
	size_t e = s.find_last_not_of(" \t\r");

	return b == std::string_view::npos ? "" : std::string(s.substr(b, e - b + 1));
}

struct HostPort {
	std::string address;
	std::optional<uint16_t> port;
};

// ADDR, ADDR:PORT, [V6] or [V6]:PORT; what names the option in errors.
mdr::Result<HostPort> split_address(std::string_view value, std::string_view where,
				    const std::string &what)
{
	std::string_view addr = value, port;
	bool has_port = false;
	size_t colon = value.rfind(':');
	HostPort hp;

	if (value.starts_with('[')) {	// [v6]:port
		size_t close = value.find(']');
		if (close == std::string_view::npos)
			return bad(where, what + " address '" + std::string(value) + "' lacks ']'");
		addr = value.substr(1, close - 1);
		if (close + 1 < value.size()) {
			if (value[close + 1] != ':')
				return bad(where, "bad " + what + " address '" + std::string(value) + "'");
			port = value.substr(close + 2);
			has_port = true;
		}
	} else if (colon != std::string_view::npos) {
		// "fe80::1:4791" would lose its last group to the port.
		if (value.find(':') != colon)
			return bad(where, what + " address '" + std::string(value) +
					  "': an IPv6 address goes in brackets, [ADDR]:PORT");
		addr = value.substr(0, colon);
		port = value.substr(colon + 1);
		has_port = true;
	}
	if (addr.empty())
		return bad(where, what + " address is empty");
	if (has_port) {
		uint16_t p;
		if (!parse_uint<uint16_t>(port, p, 1, 65535))
			return bad(where, "bad port '" + std::string(port) + "'");
		hp.port = p;
	}
	hp.address = std::string(addr);
	return hp;
}

// The repeated settings of one source (the file, or the command line):
// the caller decides whether they add to or replace the file's.
struct Lists {
	std::vector<DeviceArg> devices;
	std::vector<ReplicaArg> replicas;
};

bool numeric_address(const std::string &a)
{
	in6_addr any;

	return inet_pton(AF_INET, a.c_str(), &any) == 1 ||
	       inet_pton(AF_INET6, a.c_str(), &any) == 1;
}

} // namespace

// ID=ADDR:PORT, the address numeric: the listener binds it, and a
// leader dials it as given.
mdr::Status parse_replica(std::string_view value, std::string_view where,
			  std::vector<ReplicaArg> &out)
{
	const size_t eq = value.find('=');
	ReplicaArg r{};

	if (eq == std::string_view::npos ||
	    !parse_uint<uint32_t>(value.substr(0, eq), r.id, 1, UINT32_MAX))
		return bad(where, "replica '" + std::string(value) +
				  "': want ID=ADDR:PORT with ID from 1 to 4294967295");
	auto hp = split_address(value.substr(eq + 1), where, "replica");
	if (!hp.ok())
		return mdr::Error(hp.error(), hp.message());
	// The leader dials it, and GROUP_STATUS names it: not a wildcard.
	if (!mdr::wire::wire_address(hp.value().address))
		return bad(where, "replica " + std::to_string(r.id) + " address '" +
				  hp.value().address + "': want a numeric IPv4 address or an "
				  "IPv6 one in brackets, not 0.0.0.0 or ::");
	if (!hp.value().port)
		return bad(where, "replica " + std::to_string(r.id) + " address '" +
				  std::string(value.substr(eq + 1)) +
				  "' lacks its port: ADDR:PORT or [ADDR]:PORT");
	r.address = std::move(hp.value().address);
	r.port = *hp.value().port;
	out.push_back(std::move(r));
	return {};
}

namespace {

// URL[,URL...], each http://HOST:PORT (lib/etcd speaks plain HTTP to
// etcd's JSON gateway).
mdr::Status parse_etcd(std::string_view value, std::string_view where,
		       std::vector<std::string> &out)
{
	std::vector<std::string> eps;

	while (true) {
		const size_t comma = value.find(',');
		std::string ep = trim(value.substr(0, comma));
		const std::string_view rest = std::string_view(ep).substr(
			std::min<size_t>(ep.size(), 7));

		if (!ep.starts_with("http://") || rest.empty() ||
		    rest.find_first_of("/?#") != std::string_view::npos)
			return bad(where, "etcd endpoint '" + ep + "': want http://HOST:PORT");
		auto hp = split_address(rest, where, "etcd");
		if (!hp.ok())
			return mdr::Error(hp.error(), hp.message());
		if (!hp.value().port)
			return bad(where, "etcd endpoint '" + ep + "' lacks its port");
		eps.push_back(std::move(ep));
		if (comma == std::string_view::npos)
			break;
		value.remove_prefix(comma + 1);
	}
	out = std::move(eps);
	return {};
}

// Applies one setting.
mdr::Status apply(Config &c, Lists &lists, int opt, std::string_view value,
		  std::string_view where)
{
	switch (opt) {
	case kListen: {
		auto hp = split_address(value, where, "listen");
		if (!hp.ok())
			return mdr::Error(hp.error(), hp.message());
		if (hp.value().port)
			c.port = *hp.value().port;
		c.listen_address = std::move(hp.value().address);
		return {};
	}
	case kMetrics: {
		auto hp = split_address(value, where, "metrics");
		if (!hp.ok())
			return mdr::Error(hp.error(), hp.message());
		const std::string &a = hp.value().address;
		// Numeric only: the endpoint binds one address, and a name
		// could resolve to another one at each start.
		if (!numeric_address(a))
			return bad(where, "metrics address '" + a +
					  "': want a numeric IPv4 address or an IPv6 one in brackets");
		if (!hp.value().port)
			return bad(where, "metrics address '" + std::string(value) +
					  "' lacks its port: ADDR:PORT or [ADDR]:PORT");
		c.metrics_address = a;
		c.metrics_port = *hp.value().port;
		return {};
	}
	case kDataDir:
		if (value.empty())
			return bad(where, "data directory is empty");
		c.data_dir = std::string(value);
		return {};
	case kDevice: {
		size_t eq = value.find('=');
		DeviceArg d;

		if (eq == std::string_view::npos ||
		    !parse_uint<uint32_t>(value.substr(0, eq), d.id, 1, UINT32_MAX))
			return bad(where, "device '" + std::string(value) +
					  "': want ID=PATH with ID from 1 to 4294967295");
		d.path = std::string(value.substr(eq + 1));
		if (d.path.empty() || d.path[0] != '/')
			return bad(where, "device " + std::to_string(d.id) +
					  ": path must be absolute");
		lists.devices.push_back(std::move(d));
		return {};
	}
	case kGroup:
		// A number: the replication connection carries it as one, and
		// etcd's keys name it in decimal.
		if (!parse_uint<uint64_t>(value, c.group, 1, INT64_MAX))
			return bad(where, "group '" + std::string(value) +
					  "': want a number from 1 to " + std::to_string(INT64_MAX));
		return {};
	case kReplicaId:
		if (!parse_uint<uint32_t>(value, c.replica_id, 1, UINT32_MAX))
			return bad(where, "replica-id '" + std::string(value) +
					  "': want 1..4294967295");
		return {};
	case kEtcd:
		return parse_etcd(value, where, c.etcd_endpoints);
	case kReplica:
		return parse_replica(value, where, lists.replicas);
	case kGroupTtl:
		if (!parse_uint<uint32_t>(value, c.group_ttl_s, 1, kGroupTtlMaxS))
			return bad(where, "group-ttl-s '" + std::string(value) + "': want 1.." +
					  std::to_string(kGroupTtlMaxS));
		return {};
	case kAdminKey:
		c.admin_key_file = std::string(value);
		return {};
	case kLeaseMs:
		if (!parse_uint<uint32_t>(value, c.lease_ms, MDR_WIRE_LEASE_MS_MIN,
					  MDR_WIRE_LEASE_MS_MAX))
			return bad(where, "lease-ms '" + std::string(value) +
					  "': want 1000..60000");
		return {};
	case kIoHoldMs:
		if (!parse_uint<uint32_t>(value, c.io_hold_ms, 0, kIoHoldMsMax))
			return bad(where, "io-hold-ms '" + std::string(value) +
					  "': want 0.." + std::to_string(kIoHoldMsMax));
		return {};
	case kCheckpointRecords:
		if (!parse_uint<uint64_t>(value, c.checkpoint_records, 1, kCheckpointRecordsMax))
			return bad(where, "checkpoint-records '" + std::string(value) +
					  "': want 1.." + std::to_string(kCheckpointRecordsMax));
		return {};
	case kMaxConn:
		if (!parse_uint<uint32_t>(value, c.max_connections, 1, 65536))
			return bad(where, "max-connections '" + std::string(value) +
					  "': want 1..65536");
		return {};
	case kMaxConnTenant:
		if (!parse_uint<uint32_t>(value, c.max_connections_per_tenant, 1, 65536))
			return bad(where, "max-connections-per-tenant '" + std::string(value) +
					  "': want 1..65536");
		return {};
	case kAdminConn:
		if (!parse_uint<uint32_t>(value, c.admin_connections, 0, 1024))
			return bad(where, "admin-connections '" + std::string(value) +
					  "': want 0..1024");
		return {};
	case kHostAuth:
		if (value != "required" && value != "optional")
			return bad(where, "host-auth '" + std::string(value) +
					  "': want required or optional");
		c.host_auth_required = value == "required";
		return {};
	case kHostAuthTimeout:
		if (!parse_uint<uint32_t>(value, c.host_auth_timeout_ms, 100, 60000))
			return bad(where, "host-auth-timeout-ms '" + std::string(value) +
					  "': want 100..60000");
		return {};
	case kLogLevel: {
		std::string v(value);
		if (!parse_log_level(v.c_str(), c.log_level))
			return bad(where, "log-level '" + v + "': want error, warn, info or debug");
		return {};
	}
	case kLogTime:
		if (value != "off" && value != "utc")
			return bad(where, "log-time '" + std::string(value) + "': want off or utc");
		c.log_time = value == "utc";
		return {};
	}
	return bad(where, "not allowed here");
}

mdr::Status apply_file(Config &c, Lists &lists, const std::string &path,
		       const std::string &text)
{
	std::istringstream in(text);
	std::string line;
	unsigned n = 0;

	while (std::getline(in, line)) {
		std::string where = path + ":" + std::to_string(++n);
		std::string l = trim(line);

		if (l.empty() || l[0] == '#')
			continue;
		size_t eq = l.find('=');
		if (eq == std::string::npos)
			return bad(where, "want 'key = value'");
		std::string key = trim(std::string_view(l).substr(0, eq));
		std::string value = trim(std::string_view(l).substr(eq + 1));
		const mdr::OptionSpec *spec = nullptr;
		for (const auto &s : kSpecs)
			if (s.name == key && s.takes_value && s.id != kConfig &&
			    s.id != kForgetDevice)
				spec = &s;
		if (!spec)
			return bad(where, "unknown setting '" + key + "'");
		auto st = apply(c, lists, spec->id, value, where);
		if (!st.ok())
			return st;
	}
	return {};
}

// All four group settings or none; the set distinct, this replica in it,
// its log listener not on the hosts' address and port.
mdr::Status check_group(const Config &c)
{
	const bool any = c.group || c.replica_id || !c.etcd_endpoints.empty() ||
			 !c.replicas.empty();

	if (!any)
		return {};
	if (!c.group)
		return bad("settings", "replica group settings without --group");
	if (!c.replica_id)
		return bad("settings", "group " + std::to_string(c.group) +
				       " without this replica's id (--replica-id)");
	if (c.etcd_endpoints.empty())
		return bad("settings", "group " + std::to_string(c.group) +
				       " without etcd's endpoints (--etcd)");
	if (mdr::Status st = check_replica_set(c.replicas, "settings",
					       "group " + std::to_string(c.group) + " has ",
					       " (--replica)");
	    !st.ok())
		return st;
	// Replicas that do not lead send clients to the leader's --listen.
	if (!mdr::wire::wire_address(c.listen_address))
		return bad("settings", "group " + std::to_string(c.group) + ": --listen '" +
				       c.listen_address + "' is where the other replicas send "
				       "clients while this one leads: give its own address, not "
				       "a wildcard");
	const ReplicaArg *self = self_replica(c);
	if (!self)
		return bad("settings", "replica-id " + std::to_string(c.replica_id) +
				       " is not in the replica set (--replica)");
	if (self->address == c.listen_address && self->port == c.port)
		return bad("settings", "replica " + std::to_string(self->id) + "'s address " +
				       self->address + ":" + std::to_string(self->port) +
				       " is the hosts' (--listen): give the log listener "
				       "another port");
	return {};
}

} // namespace

mdr::Status check_replica_set(const std::vector<ReplicaArg> &set, std::string_view where,
			      const std::string &what, const std::string &from)
{
	if (set.size() < kMinReplicas || set.size() > kMaxReplicas)
		return bad(where, what + std::to_string(set.size()) + " replicas" + from +
				  ": want " + std::to_string(kMinReplicas) + " to " +
				  std::to_string(kMaxReplicas));
	std::set<uint32_t> ids;
	std::set<std::pair<std::string, uint16_t>> at;
	for (const ReplicaArg &r : set) {
		if (!ids.insert(r.id).second)
			return bad(where, "replica id " + std::to_string(r.id) + " given twice");
		if (!at.insert({r.address, r.port}).second)
			return bad(where, "replicas " + std::to_string(r.id) +
					  " and another share address " + r.address + " port " +
					  std::to_string(r.port));
	}
	return {};
}

const ReplicaArg *self_replica(const Config &c)
{
	for (const ReplicaArg &r : c.replicas)
		if (c.group && r.id == c.replica_id)
			return &r;
	return nullptr;
}

mdr::Result<std::string> read_file(const std::string &path)
{
	std::ifstream f(path, std::ios::binary);
	std::ostringstream s;

	if (!f)
		return mdr::Error(errno ? -errno : -EIO, path);
	s << f.rdbuf();
	if (f.bad())
		return mdr::Error(-EIO, path);
	return s.str();
}

mdr::Result<Config> parse_config(std::span<const std::string_view> args,
				 const FileReader &reader)
{
	auto parsed = mdr::parse_args(args, kSpecs);
	Config c;
	Lists file, cli;

	if (!parsed.ok())
		return mdr::Error(parsed.error(), parsed.message());
	if (!parsed.value().operands.empty())
		return bad("command line", "unexpected argument '" +
				       std::string(parsed.value().operands[0]) + "'");
	for (const auto &o : parsed.value().options) {
		if (o.id == kHelp)
			c.help = true;
		else if (o.id == kVersion)
			c.version = true;
	}
	if (c.help || c.version)
		return c;

	// The file first, wherever --config stands, so the command line wins.
	for (const auto &o : parsed.value().options) {
		if (o.id != kConfig)
			continue;
		std::string path(o.value);
		auto text = reader(path);
		if (!text.ok())
			return mdr::Error(text.error(), "cannot read config file " + path);
		auto st = apply_file(c, file, path, text.value());
		if (!st.ok())
			return mdr::Error(st.error(), st.message());
	}
	for (const auto &o : parsed.value().options) {
		if (o.id == kConfig || o.id == kHelp || o.id == kVersion)
			continue;
		// Never from a file: a test switch must be given by hand.
		if (o.id == kTestDropInval) {
			c.test_drop_invalidations = true;
			continue;
		}
		// Never from a file either: it is meant for one start.
		if (o.id == kForgetDevice) {
			uint32_t id;
			if (!parse_uint<uint32_t>(o.value, id, 1, UINT32_MAX))
				return bad("--forget-device", "'" + std::string(o.value) +
							      "': want an ID from 1 to 4294967295");
			c.forget_devices.push_back(id);
			continue;
		}
		std::string where = "--" + spec_name(o.id);
		auto st = apply(c, cli, o.id, o.value, where);
		if (!st.ok())
			return mdr::Error(st.error(), st.message());
	}
	c.devices = cli.devices.empty() ? file.devices : cli.devices;
	c.replicas = cli.replicas.empty() ? file.replicas : cli.replicas;

	if (c.listen_address.empty())
		return bad("settings", "no listen address (--listen)");
	if (c.data_dir.empty())
		return bad("settings", "no data directory (--data-dir)");
	if (c.devices.empty())
		return bad("settings", "no device (--device ID=PATH)");
	std::set<uint32_t> ids;
	std::set<std::string> paths;
	for (const auto &d : c.devices) {
		if (!ids.insert(d.id).second)
			return bad("settings", "device id " + std::to_string(d.id) +
					       " given twice");
		if (!paths.insert(d.path).second)
			return bad("settings", "device " + d.path + " given twice");
	}
	if (auto st = check_group(c); !st.ok())
		return mdr::Error(st.error(), st.message());
	return c;
}

} // namespace mdnode
