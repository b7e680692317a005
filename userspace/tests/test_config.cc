// SPDX-License-Identifier: GPL-2.0
//
// test_config.cc - mdnode's settings: the config file, the command line,
// and every error they can hold. Config files are real temporary files,
// read by the real read_file().
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <linux/mdroute_wire.h>

#include "mdnode/config.h"

#include "tests/common/cmocka_cxx.h"

using mdnode::Config;
using mdnode::parse_config;
using mdr::Result;

namespace {

// A file with the given text, removed when the test is done with it.
class TempFile {
public:
	explicit TempFile(std::string_view text)
	{
		const char *dir = std::getenv("TMPDIR");
		std::string tmpl = std::string(dir && *dir ? dir : "/tmp") +
				   "/mdr-config.XXXXXX";
		int fd = mkstemp(tmpl.data());

		assert_true(fd >= 0);
		path = tmpl;
		assert_int_equal(write(fd, text.data(), text.size()),
				 static_cast<ssize_t>(text.size()));
		assert_int_equal(close(fd), 0);
	}
	~TempFile() { unlink(path.c_str()); }
	TempFile(const TempFile &) = delete;
	TempFile &operator=(const TempFile &) = delete;

	std::string path;
};

Result<Config> parse(std::initializer_list<std::string_view> args)
{
	const std::vector<std::string_view> v(args);

	return parse_config(v);
}

void assert_fails(const Result<Config> &r, const std::string &message)
{
	assert_false(r.ok());
	assert_int_equal(r.error(), -EINVAL);
	assert_string_equal(r.message().c_str(), message.c_str());
}

// The required settings, for tests about the others.
constexpr std::string_view kRequired =
	"listen = 192.0.2.2\n"
	"data-dir = /var/lib/mdnode\n"
	"device = 1=/dev/vda\n";

Result<Config> parse_file(const TempFile &f)
{
	return parse({"--config", f.path});
}

void test_config_valid_file(void **)
{
	TempFile f("# mdnode settings\n"
		   "\n"
		   "listen = 192.0.2.2:5000\n"
		   "   data-dir=/srv/mdnode   \n"
		   "\t# indented comment\n"
		   "device = 1=/dev/nvme0n1\n"
		   "device = 7=/dev/vda\r\n"
		   "admin-key = /etc/mdroute/other.key\n"
		   "lease-ms = 60000\n"
		   "io-hold-ms = 45000\n"
		   "max-connections = 8\n"
		   "max-connections-per-tenant = 3\n"
		   "admin-connections = 2\n"
		   "log-level = debug\n"
		   "log-time = utc\n");
	Result<Config> r = parse_file(f);

	assert_true(r.ok());
	const Config &c = r.value();
	assert_string_equal(c.listen_address.c_str(), "192.0.2.2");
	assert_int_equal(c.port, 5000);
	assert_string_equal(c.data_dir.c_str(), "/srv/mdnode");
	assert_int_equal(c.devices.size(), 2);
	assert_int_equal(c.devices[0].id, 1);
	assert_string_equal(c.devices[0].path.c_str(), "/dev/nvme0n1");
	assert_int_equal(c.devices[1].id, 7);
	assert_string_equal(c.devices[1].path.c_str(), "/dev/vda");
	assert_string_equal(c.admin_key_file.c_str(), "/etc/mdroute/other.key");
	assert_int_equal(c.lease_ms, 60000);
	assert_int_equal(c.io_hold_ms, 45000);
	assert_int_equal(c.max_connections, 8);
	assert_int_equal(c.max_connections_per_tenant, 3);
	assert_int_equal(c.admin_connections, 2);
	assert_int_equal(c.log_level, mdnode::LogLevel::debug);
	assert_true(c.log_time);
	assert_false(c.help);
	assert_false(c.version);
}

void test_config_defaults(void **)
{
	TempFile f(kRequired);
	Result<Config> r = parse_file(f);

	assert_true(r.ok());
	assert_int_equal(r.value().port, MDR_WIRE_PORT);
	assert_string_equal(r.value().admin_key_file.c_str(), "/etc/mdroute/admin.key");
	assert_int_equal(r.value().lease_ms, 5000);
	assert_int_equal(r.value().io_hold_ms, 20000);
	assert_int_equal(r.value().max_connections, 1024);
	assert_int_equal(r.value().max_connections_per_tenant, 256);
	assert_int_equal(r.value().admin_connections, 16);
	assert_int_equal(r.value().log_level, mdnode::LogLevel::info);
	assert_false(r.value().log_time);
	assert_false(r.value().test_drop_invalidations);
}

// The test switch that breaks the consistency rule: command line only,
// and only in a build with MDR_TEST_HOOKS (the tests' sanitizer build); a
// release build does not know it.
void test_config_test_drop_invalidations(void **)
{
	TempFile f(kRequired);
	Result<Config> r = parse({"--config", f.path.c_str(), "--test-drop-invalidations"});

#ifdef MDR_TEST_HOOKS
	assert_true(r.ok());
	assert_true(r.value().test_drop_invalidations);
#else
	assert_fails(r, "unknown option '--test-drop-invalidations'");
#endif
	TempFile g(std::string(kRequired) + "test-drop-invalidations = 1\n");
	assert_fails(parse_file(g), g.path + ":4: unknown setting 'test-drop-invalidations'");
}

// Forgetting a device's recorded disk is for one start: command line only.
void test_config_forget_device(void **)
{
	TempFile f(kRequired);
	Result<Config> r = parse({"--config", f.path.c_str(), "--forget-device", "3",
				  "--forget-device=7"});

	assert_true(r.ok());
	assert_true(r.value().forget_devices == std::vector<uint32_t>({3, 7}));
	assert_true(parse({"--config", f.path.c_str()}).value().forget_devices.empty());
	assert_fails(parse({"--config", f.path.c_str(), "--forget-device", "0"}),
		     "--forget-device: '0': want an ID from 1 to 4294967295");
	TempFile g(std::string(kRequired) + "forget-device = 1\n");
	assert_fails(parse_file(g), g.path + ":4: unknown setting 'forget-device'");
}

// The example shipped with the systemd unit parses as it is.
void test_config_example_file(void **)
{
	Result<Config> r = parse({"--config", MDR_EXAMPLE_CONF});

	assert_true(r.ok());
	assert_string_equal(r.value().listen_address.c_str(), "192.0.2.2");
	assert_int_equal(r.value().port, 4791);
	assert_string_equal(r.value().data_dir.c_str(), "/var/lib/mdnode");
	assert_int_equal(r.value().devices.size(), 2);
}

void test_config_listen_forms(void **)
{
	struct {
		const char *value;
		const char *address;
		uint16_t port;
	} cases[] = {
		{"192.0.2.2", "192.0.2.2", 4791},
		{"192.0.2.2:1", "192.0.2.2", 1},
		{"192.0.2.2:65535", "192.0.2.2", 65535},
		{"[fe80::1]", "fe80::1", 4791},
		{"[fe80::1]:5000", "fe80::1", 5000},
		{"node-a:4000", "node-a", 4000},
	};

	for (const auto &c : cases) {
		Result<Config> r = parse({"--listen", c.value, "-d", "/d", "-D", "1=/dev/a"});

		assert_true(r.ok());
		assert_string_equal(r.value().listen_address.c_str(), c.address);
		assert_int_equal(r.value().port, c.port);
	}
}

void test_config_bad_listen(void **)
{
	struct {
		const char *value;
		const char *message;
	} cases[] = {
		{"[fe80::1", "--listen: listen address '[fe80::1' lacks ']'"},
		{"[fe80::1]5000", "--listen: bad listen address '[fe80::1]5000'"},
		{"fe80::1", "--listen: listen address 'fe80::1': an IPv6 address goes "
			    "in brackets, [ADDR]:PORT"},
		{":4791", "--listen: listen address is empty"},
		{"", "--listen: listen address is empty"},
		{"[]:4791", "--listen: listen address is empty"},
		{"192.0.2.2:", "--listen: bad port ''"},
		{"[fe80::1]:", "--listen: bad port ''"},
		{"192.0.2.2:0", "--listen: bad port '0'"},
		{"192.0.2.2:65536", "--listen: bad port '65536'"},
		{"192.0.2.2:47x", "--listen: bad port '47x'"},
		{"192.0.2.2:-1", "--listen: bad port '-1'"},
	};

	for (const auto &c : cases)
		assert_fails(parse({"--listen", c.value, "-d", "/d", "-D", "1=/dev/a"}),
			     c.message);
}

// --metrics: off by default; ADDR:PORT or [V6]:PORT, numeric, with its
// port; from the file too.
void test_config_metrics(void **)
{
	TempFile f(std::string(kRequired) + "metrics = 127.0.0.1:9464\n");
	Result<Config> r = parse_file(f);

	assert_true(r.ok());
	assert_string_equal(r.value().metrics_address.c_str(), "127.0.0.1");
	assert_int_equal(r.value().metrics_port, 9464);
	r = parse({"-l", "192.0.2.2", "-d", "/d", "-D", "1=/dev/a", "--metrics", "[::1]:9100"});
	assert_true(r.ok());
	assert_string_equal(r.value().metrics_address.c_str(), "::1");
	assert_int_equal(r.value().metrics_port, 9100);
	r = parse({"-l", "192.0.2.2", "-d", "/d", "-D", "1=/dev/a"});
	assert_true(r.ok());
	assert_true(r.value().metrics_address.empty());

	struct {
		const char *value;
		const char *message;
	} cases[] = {
		{"127.0.0.1", "--metrics: metrics address '127.0.0.1' lacks its port: "
			      "ADDR:PORT or [ADDR]:PORT"},
		{"localhost:9464", "--metrics: metrics address 'localhost': want a numeric "
				   "IPv4 address or an IPv6 one in brackets"},
		{"::1:9464", "--metrics: metrics address '::1:9464': an IPv6 address goes "
			     "in brackets, [ADDR]:PORT"},
		{"127.0.0.1:0", "--metrics: bad port '0'"},
		{"127.0.0.1:http", "--metrics: bad port 'http'"},
		{":9464", "--metrics: metrics address is empty"},
	};
	for (const auto &c : cases)
		assert_fails(parse({"-l", "192.0.2.2", "-d", "/d", "-D", "1=/dev/a", "--metrics",
				    c.value}),
			     c.message);
}

void test_config_bad_listen_in_file(void **)
{
	TempFile f("data-dir = /d\nlisten = 192.0.2.2:99999\n");

	assert_fails(parse_file(f), f.path + ":2: bad port '99999'");
}

void test_config_duplicate_device_id(void **)
{
	TempFile f("listen = a\ndata-dir = /d\ndevice = 3=/dev/a\ndevice = 3=/dev/b\n");

	assert_fails(parse_file(f), "settings: device id 3 given twice");
}

void test_config_duplicate_device_path(void **)
{
	assert_fails(parse({"-l", "a", "-d", "/d", "-D", "1=/dev/a", "-D", "2=/dev/a"}),
		     "settings: device /dev/a given twice");
}

void test_config_bad_device(void **)
{
	const char *want = "': want ID=PATH with ID from 1 to 4294967295";

	for (const char *v : {"/dev/a", "0=/dev/a", "x=/dev/a", "=/dev/a",
			      "4294967296=/dev/a", "-1=/dev/a"})
		assert_fails(parse({"-l", "a", "-d", "/d", "-D", v}),
			     std::string("--device: device '") + v + want);
	assert_fails(parse({"-l", "a", "-d", "/d", "-D", "2=dev/a"}),
		     "--device: device 2: path must be absolute");
	assert_fails(parse({"-l", "a", "-d", "/d", "-D", "2="}),
		     "--device: device 2: path must be absolute");
}

void test_config_unknown_key_names_file_line(void **)
{
	TempFile f("# comment\n"
		   "\n"
		   "listen = a\n"
		   "lease_ms = 3000\n");

	assert_fails(parse_file(f), f.path + ":4: unknown setting 'lease_ms'");
}

// Only settings with a value belong in a file; --config does not nest.
void test_config_file_refuses_flags_and_config(void **)
{
	for (const char *line : {"help = 1\n", "version = yes\n", "config = /x\n"}) {
		TempFile f(line);
		const std::string key(line, std::string_view(line).find(' '));

		assert_fails(parse_file(f), f.path + ":1: unknown setting '" + key + "'");
	}
}

void test_config_line_without_equals(void **)
{
	TempFile f("listen = a\nlisten 192.0.2.2\n");

	assert_fails(parse_file(f), f.path + ":2: want 'key = value'");
}

void test_config_lease_ms_range(void **)
{
	for (const char *v : {"999", "60001", "0", "abc", "", "5000ms", "-5000"}) {
		TempFile f(std::string(kRequired) + "lease-ms = " + v + "\n");

		assert_fails(parse_file(f), f.path + ":4: lease-ms '" + v +
						    "': want 1000..60000");
	}
	for (const char *v : {"1000", "60000"}) {
		Result<Config> r = parse({"-l", "a", "-d", "/d", "-D", "1=/a", "--lease-ms", v});

		assert_true(r.ok());
		assert_int_equal(r.value().lease_ms, std::stoul(v));
	}
}

void test_config_io_hold_ms_range(void **)
{
	for (const char *v : {"600001", "-1", "abc", "", "30s", "4294967296"}) {
		TempFile f(std::string(kRequired) + "io-hold-ms = " + v + "\n");

		assert_fails(parse_file(f), f.path + ":4: io-hold-ms '" + v +
						    "': want 0..600000");
	}
	for (const char *v : {"0", "600000"}) {
		Result<Config> r = parse({"-l", "a", "-d", "/d", "-D", "1=/a", "--io-hold-ms", v});

		assert_true(r.ok());
		assert_int_equal(r.value().io_hold_ms, std::stoul(v));
	}
	// Given twice, the last one counts (the VM tests' helper gives one).
	Result<Config> r = parse({"-l", "a", "-d", "/d", "-D", "1=/a", "--io-hold-ms", "2000",
				  "--io-hold-ms", "9000"});
	assert_true(r.ok());
	assert_int_equal(r.value().io_hold_ms, 9000);
}

void test_config_checkpoint_records(void **)
{
	Result<Config> d = parse({"-l", "a", "-d", "/d", "-D", "1=/a"});
	assert_true(d.ok());
	assert_int_equal(d.value().checkpoint_records, 100000);
	for (const char *v : {"0", "1000000001", "-1", "abc", ""}) {
		TempFile f(std::string(kRequired) + "checkpoint-records = " + v + "\n");

		assert_fails(parse_file(f), f.path + ":4: checkpoint-records '" + v +
						    "': want 1..1000000000");
	}
	Result<Config> r = parse({"-l", "a", "-d", "/d", "-D", "1=/a", "--checkpoint-records",
				  "20"});
	assert_true(r.ok());
	assert_int_equal(r.value().checkpoint_records, 20);
}

// --host-auth: required by default, optional on request, nothing else;
// from the file too; and its timeout's range.
void test_config_host_auth(void **)
{
	Result<Config> r = parse({"-l", "a", "-d", "/d", "-D", "1=/a"});
	assert_true(r.ok());
	assert_true(r.value().host_auth_required);
	assert_int_equal(r.value().host_auth_timeout_ms, 5000);

	r = parse({"-l", "a", "-d", "/d", "-D", "1=/a", "--host-auth", "optional",
		   "--host-auth-timeout-ms", "100"});
	assert_true(r.ok());
	assert_false(r.value().host_auth_required);
	assert_int_equal(r.value().host_auth_timeout_ms, 100);

	TempFile f(std::string(kRequired) + "host-auth = optional\nhost-auth-timeout-ms = 60000\n");
	r = parse_file(f);
	assert_true(r.ok());
	assert_false(r.value().host_auth_required);
	assert_int_equal(r.value().host_auth_timeout_ms, 60000);

	for (const char *v : {"", "yes", "Required", "off"})
		assert_fails(parse({"-l", "a", "-d", "/d", "-D", "1=/a", "--host-auth", v}),
			     std::string("--host-auth: host-auth '") + v +
				     "': want required or optional");
	for (const char *v : {"99", "60001", "5s"})
		assert_fails(parse({"-l", "a", "-d", "/d", "-D", "1=/a", "--host-auth-timeout-ms",
				    v}),
			     std::string("--host-auth-timeout-ms: host-auth-timeout-ms '") + v +
				     "': want 100..60000");
}

void test_config_other_bad_values(void **)
{
	assert_fails(parse({"-l", "a", "-d", "/d", "-D", "1=/a", "--max-connections", "0"}),
		     "--max-connections: max-connections '0': want 1..65536");
	assert_fails(parse({"-l", "a", "-d", "/d", "-D", "1=/a", "--max-connections",
			    "65537"}),
		     "--max-connections: max-connections '65537': want 1..65536");
	assert_fails(parse({"-l", "a", "-d", "/d", "-D", "1=/a", "--max-connections-per-tenant",
			    "0"}),
		     "--max-connections-per-tenant: max-connections-per-tenant '0': want 1..65536");
	assert_fails(parse({"-l", "a", "-d", "/d", "-D", "1=/a", "--admin-connections", "1025"}),
		     "--admin-connections: admin-connections '1025': want 0..1024");
	assert_fails(parse({"-l", "a", "-d", "/d", "-D", "1=/a", "--log-level", "trace"}),
		     "--log-level: log-level 'trace': want error, warn, info or debug");
	assert_fails(parse({"-l", "a", "-d", "/d", "-D", "1=/a", "--log-time", "local"}),
		     "--log-time: log-time 'local': want off or utc");
	assert_fails(parse({"-l", "a", "-d", "", "-D", "1=/a"}),
		     "--data-dir: data directory is empty");
}

void test_config_missing_required(void **)
{
	assert_fails(parse({"-d", "/d", "-D", "1=/a"}),
		     "settings: no listen address (--listen)");
	assert_fails(parse({"-l", "a", "-D", "1=/a"}),
		     "settings: no data directory (--data-dir)");
	assert_fails(parse({"-l", "a", "-d", "/d"}),
		     "settings: no device (--device ID=PATH)");
	assert_fails(parse({}), "settings: no listen address (--listen)");

	TempFile empty("# nothing set\n\n");
	assert_fails(parse_file(empty), "settings: no listen address (--listen)");
}

void test_config_missing_file(void **)
{
	TempFile f("");
	const std::string gone = f.path + ".gone";
	Result<Config> r = parse({"--config", gone});

	assert_false(r.ok());
	assert_int_equal(r.error(), -ENOENT);
	assert_string_equal(r.message().c_str(), ("cannot read config file " + gone).c_str());
}

// The file is read first wherever --config stands; the command line wins.
void test_config_cli_overrides_file(void **)
{
	TempFile f("listen = 192.0.2.2:5000\n"
		   "data-dir = /file\n"
		   "device = 1=/dev/a\n"
		   "device = 2=/dev/b\n"
		   "lease-ms = 2000\n"
		   "log-level = warn\n");
	Result<Config> r = parse({"--lease-ms", "3000", "--config", f.path, "-l",
				  "[fe80::2]:6000", "--log-level=error"});

	assert_true(r.ok());
	assert_string_equal(r.value().listen_address.c_str(), "fe80::2");
	assert_int_equal(r.value().port, 6000);
	assert_int_equal(r.value().lease_ms, 3000);
	assert_int_equal(r.value().log_level, mdnode::LogLevel::error);
	// Untouched by the command line: the file's.
	assert_string_equal(r.value().data_dir.c_str(), "/file");
	assert_int_equal(r.value().devices.size(), 2);
}

// --device on the command line replaces the file's devices, and
// duplicates are checked on the devices in effect.
void test_config_cli_devices_replace_file(void **)
{
	TempFile f("listen = a\ndata-dir = /d\ndevice = 1=/dev/a\ndevice = 2=/dev/b\n");
	Result<Config> r = parse({"-c", f.path, "-D", "2=/dev/a"});

	assert_true(r.ok());
	assert_int_equal(r.value().devices.size(), 1);
	assert_int_equal(r.value().devices[0].id, 2);
	assert_string_equal(r.value().devices[0].path.c_str(), "/dev/a");
}

// A listen address without a port keeps the port the file set.
void test_config_cli_address_keeps_file_port(void **)
{
	TempFile f(std::string(kRequired) + "listen = 192.0.2.2:5000\n");
	Result<Config> r = parse({"-c", f.path, "-l", "192.0.2.9"});

	assert_true(r.ok());
	assert_string_equal(r.value().listen_address.c_str(), "192.0.2.9");
	assert_int_equal(r.value().port, 5000);
}

void test_config_help_skips_the_rest(void **)
{
	Result<Config> r = parse({"--config", "/nonexistent", "--help"});

	assert_true(r.ok());
	assert_true(r.value().help);
	assert_fails(parse({"stray"}), "command line: unexpected argument 'stray'");
}


// The replica group's settings: from a file, all four together.
constexpr std::string_view kGroup =
	"group = 7\n"
	"replica-id = 2\n"
	"etcd = http://192.0.2.9:2379, http://etcd-b:2379\n"
	"replica = 1=192.0.2.11:4800\n"
	"replica = 2=192.0.2.12:4800\n"
	"replica = 3=[fd00::13]:4801\n";

void test_config_group(void **)
{
	TempFile f(std::string(kRequired) + std::string(kGroup));
	Result<Config> r = parse_file(f);

	assert_true(r.ok());
	const Config c = r.value();
	assert_int_equal(c.group, 7);
	assert_int_equal(c.replica_id, 2);
	assert_int_equal(c.etcd_endpoints.size(), 2);
	assert_string_equal(c.etcd_endpoints[0].c_str(), "http://192.0.2.9:2379");
	assert_string_equal(c.etcd_endpoints[1].c_str(), "http://etcd-b:2379");
	assert_int_equal(c.replicas.size(), 3);
	assert_int_equal(c.replicas[2].id, 3);
	assert_string_equal(c.replicas[2].address.c_str(), "fd00::13");
	assert_int_equal(c.replicas[2].port, 4801);
	const mdnode::ReplicaArg *self = mdnode::self_replica(c);
	assert_non_null(self);
	assert_int_equal(self->id, 2);
	assert_string_equal(self->address.c_str(), "192.0.2.12");
	assert_int_equal(c.group_ttl_s, 1);
	r = parse({"--config", f.path.c_str(), "--group-ttl-s", "5"});
	assert_true(r.ok());
	assert_int_equal(r.value().group_ttl_s, 5);

	// None of them: a single node, no replica of its own.
	TempFile single(kRequired);
	r = parse_file(single);
	assert_true(r.ok());
	assert_int_equal(r.value().group, 0);
	assert_true(r.value().replicas.empty());
	assert_null(mdnode::self_replica(r.value()));

	// The command line's replicas replace the file's; its other group
	// settings override the file's one by one.
	r = parse({"--config", f.path.c_str(), "--replica-id", "4", "--replica",
		   "4=192.0.2.14:4800", "--replica", "5=192.0.2.15:4800", "--replica",
		   "6=192.0.2.16:4800"});
	assert_true(r.ok());
	assert_int_equal(r.value().replicas.size(), 3);
	assert_int_equal(r.value().replicas[0].id, 4);
	assert_int_equal(mdnode::self_replica(r.value())->id, 4);
	assert_int_equal(r.value().group, 7);
}

// Each group setting's bad values, and a set that cannot work.
void test_config_group_errors(void **)
{
	const std::string base = std::string(kRequired);
	struct {
		const char *text;
		const char *message;	// after "FILE:" or as is for "settings:"
	} cases[] = {
		{"group = 0\n", ":4: group '0': want a number from 1 to 9223372036854775807"},
		{"group = g1\n", ":4: group 'g1': want a number from 1 to 9223372036854775807"},
		{"group = 9223372036854775808\n",
		 ":4: group '9223372036854775808': want a number from 1 to 9223372036854775807"},
		{"replica-id = 0\n", ":4: replica-id '0': want 1..4294967295"},
		{"group-ttl-s = 0\n", ":4: group-ttl-s '0': want 1..60"},
		{"group-ttl-s = 61\n", ":4: group-ttl-s '61': want 1..60"},
		{"etcd = 192.0.2.9:2379\n",
		 ":4: etcd endpoint '192.0.2.9:2379': want http://HOST:PORT"},
		{"etcd = https://192.0.2.9:2379\n",
		 ":4: etcd endpoint 'https://192.0.2.9:2379': want http://HOST:PORT"},
		{"etcd = http://192.0.2.9:2379/v3\n",
		 ":4: etcd endpoint 'http://192.0.2.9:2379/v3': want http://HOST:PORT"},
		{"etcd = http://192.0.2.9\n", ":4: etcd endpoint 'http://192.0.2.9' lacks its port"},
		{"etcd = http://192.0.2.9:2379,\n", ":4: etcd endpoint '': want http://HOST:PORT"},
		{"replica = 192.0.2.11:4800\n",
		 ":4: replica '192.0.2.11:4800': want ID=ADDR:PORT with ID from 1 to 4294967295"},
		{"replica = 1=node-a:4800\n",
		 ":4: replica 1 address 'node-a': want a numeric IPv4 address or an IPv6 one "
		 "in brackets, not 0.0.0.0 or ::"},
		{"replica = 1=0.0.0.0:4800\n",
		 ":4: replica 1 address '0.0.0.0': want a numeric IPv4 address or an IPv6 one "
		 "in brackets, not 0.0.0.0 or ::"},
		{"replica = 1=192.0.2.11\n",
		 ":4: replica 1 address '192.0.2.11' lacks its port: ADDR:PORT or [ADDR]:PORT"},
		{"replica = 1=192.0.2.11:0\n", ":4: bad port '0'"},
		{"replica-id = 1\n", "settings: replica group settings without --group"},
		{"group = 7\netcd = http://e:2379\n",
		 "settings: group 7 without this replica's id (--replica-id)"},
		{"group = 7\nreplica-id = 1\n",
		 "settings: group 7 without etcd's endpoints (--etcd)"},
		{"group = 7\nreplica-id = 1\netcd = http://e:2379\nreplica = 1=192.0.2.11:4800\n"
		 "replica = 2=192.0.2.12:4800\n",
		 "settings: group 7 has 2 replicas (--replica): want 3 to 7"},
		{"group = 7\nreplica-id = 1\netcd = http://e:2379\nreplica = 1=192.0.2.11:4800\n"
		 "replica = 1=192.0.2.12:4800\nreplica = 3=192.0.2.13:4800\n",
		 "settings: replica id 1 given twice"},
		{"group = 7\nreplica-id = 1\netcd = http://e:2379\nreplica = 1=192.0.2.11:4800\n"
		 "replica = 2=192.0.2.11:4800\nreplica = 3=192.0.2.13:4800\n",
		 "settings: replicas 2 and another share address 192.0.2.11 port 4800"},
		{"group = 7\nreplica-id = 4\netcd = http://e:2379\nreplica = 1=192.0.2.11:4800\n"
		 "replica = 2=192.0.2.12:4800\nreplica = 3=192.0.2.13:4800\n",
		 "settings: replica-id 4 is not in the replica set (--replica)"},
		{"group = 7\nreplica-id = 1\netcd = http://e:2379\nreplica = 1=192.0.2.2:4791\n"
		 "replica = 2=192.0.2.12:4800\nreplica = 3=192.0.2.13:4800\n",
		 "settings: replica 1's address 192.0.2.2:4791 is the hosts' (--listen): give "
		 "the log listener another port"},
	};
	for (const auto &c : cases) {
		TempFile f(base + c.text);
		const std::string m = c.message;

		assert_fails(parse_file(f), m.starts_with(":") ? f.path + m : m);
	}
	// The followers send clients to a leader's --listen: not a wildcard.
	TempFile any("listen = 0.0.0.0\ndata-dir = /var/lib/mdnode\ndevice = 1=/dev/vda\n"
		     "group = 7\nreplica-id = 1\netcd = http://e:2379\n"
		     "replica = 1=192.0.2.11:4800\nreplica = 2=192.0.2.12:4800\n"
		     "replica = 3=192.0.2.13:4800\n");
	assert_fails(parse_file(any), "settings: group 7: --listen '0.0.0.0' is where the other "
				      "replicas send clients while this one leads: give its "
				      "own address, not a wildcard");
	// On the command line, the option names the error.
	assert_fails(parse({"-l", "192.0.2.2", "-d", "/d", "-D", "1=/dev/a", "--group", "0x7"}),
		     "--group: group '0x7': want a number from 1 to 9223372036854775807");
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_valid_file),
		cmocka_unit_test(test_config_defaults),
		cmocka_unit_test(test_config_test_drop_invalidations),
		cmocka_unit_test(test_config_forget_device),
		cmocka_unit_test(test_config_example_file),
		cmocka_unit_test(test_config_listen_forms),
		cmocka_unit_test(test_config_bad_listen),
		cmocka_unit_test(test_config_bad_listen_in_file),
		cmocka_unit_test(test_config_duplicate_device_id),
		cmocka_unit_test(test_config_duplicate_device_path),
		cmocka_unit_test(test_config_bad_device),
		cmocka_unit_test(test_config_unknown_key_names_file_line),
		cmocka_unit_test(test_config_file_refuses_flags_and_config),
		cmocka_unit_test(test_config_line_without_equals),
		cmocka_unit_test(test_config_lease_ms_range),
		cmocka_unit_test(test_config_io_hold_ms_range),
		cmocka_unit_test(test_config_checkpoint_records),
		cmocka_unit_test(test_config_host_auth),
		cmocka_unit_test(test_config_other_bad_values),
		cmocka_unit_test(test_config_missing_required),
		cmocka_unit_test(test_config_missing_file),
		cmocka_unit_test(test_config_cli_overrides_file),
		cmocka_unit_test(test_config_cli_devices_replace_file),
		cmocka_unit_test(test_config_cli_address_keeps_file_port),
		cmocka_unit_test(test_config_help_skips_the_rest),
		cmocka_unit_test(test_config_metrics),
		cmocka_unit_test(test_config_group),
		cmocka_unit_test(test_config_group_errors),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
