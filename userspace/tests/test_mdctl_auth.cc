// SPDX-License-Identifier: GPL-2.0
//
// test_mdctl_auth.cc - host authentication in mdctl: the host group (host
// add, remove, list against a fake mdnode's registry; host id; host
// gen-key on real files) and attach with a host key (the fake host's
// keyring, the serial the fake module gets, the errors of the module).
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "lib/auth/auth.h"
#include "mdctl/config.h"
#include "mdctl/host_identity.h"
#include "mdctl/output.h"
#include "mdctl/parse.h"
#include "tests/test_mdctl.h"

#include "tests/common/cmocka_cxx.h"

using namespace mdr::test;

namespace {

constexpr char kDescription[] = "mdroute:host:98a75de7956b6183";

// A storage node at 192.0.2.2 with one device a local disk shows, and
// volume 'db' of tenant 4 that node and module both know; the admin key
// at its default path; a machine id; a scratch directory for key files
// (mdr::read_key_file() and gen-key use real files).
struct World : NodeWorld {
	std::string dir;

	World()
	{
		node.devices = {{1, 4ULL << 40, 0, "mdr-vblk0"}};
		host.files["/sys/block/vda/dev"] = "254:0\n";
		host.files["/sys/block/vda/serial"] = "mdr-vblk0\n";
		host.block_devices["/dev/vda"] = {254, 0};
		module.disks[{254, 0}] = 4ULL << 40;
		volume("db", 1ULL << 30, 4);

		char tmpl[] = "/tmp/mdctl-auth-XXXXXX";
		assert_non_null(mkdtemp(tmpl));
		dir = tmpl;
	}

	~World()
	{
		std::error_code ignored;
		std::filesystem::remove_all(dir, ignored);
	}

	// A file in the scratch directory with @text, mode 0600; its path.
	std::string file(const std::string &name, const std::string &text)
	{
		const std::string path = dir + '/' + name;
		std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
		assert_int_equal(chmod(path.c_str(), 0600), 0);
		return path;
	}
};

std::string read_all(const std::string &path)
{
	std::ifstream in(path, std::ios::binary);
	std::ostringstream text;
	text << in.rdbuf();
	return text.str();
}

std::vector<uint8_t> bytes(const std::string &s)
{
	return {s.begin(), s.end()};
}

const std::string kKey40(40, 'k');	// a secret of 40 bytes

} // namespace

// ---- host ids ----------------------------------------------------------------

static void test_parse_host_id(void **)
{
	const std::pair<const char *, uint64_t> good[] = {
		{"0x93", 0x93}, {"0X93", 0x93}, {"0000000000000093", 0x93},
		{"98A75DE7956B6183", kDerivedHostId}, {"0xffffffffffffffff", UINT64_MAX},
		{"0x0000000000000001", 1},
	};
	for (const auto &[text, want] : good) {
		std::optional<uint64_t> got = mdctl::parse_host_id(text);
		assert_true(got.has_value());
		assert_true(*got == want);
	}
	// decimal-looking short ones, zero, too long, not hex, signs, spaces
	for (const char *bad : {"", "93", "147", "0", "0x", "0x0", "0000000000000000",
				"0x10000000000000000", "00000000000000093", "000000000000009g",
				"-1", "0x-1", "+0x1", " 0x1", "0x1 ", "000000000000009 "})
		assert_false(mdctl::parse_host_id(bad).has_value());
	assert_string_equal(mdctl::format_host_id(0x93).c_str(), "0000000000000093");
	assert_true(*mdctl::parse_host_id(mdctl::format_host_id(kDerivedHostId)) ==
		    kDerivedHostId);
	assert_string_equal(mdctl::host_key_description(0x93).c_str(),
			    "mdroute:host:0000000000000093");
}

static void test_host_id(void **)
{
	World w;
	Outcome o = w.run({"host", "id"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(), "98a75de7956b6183\n");
	o = w.run({"host", "id", "-o", "json"});
	assert_string_equal(o.out.c_str(),
			    "{\"host_id\":10999863864101396867,\"source\":\"machine-id\"}\n");

	// what attach uses: host-id in the config wins over the machine id
	w.host.files[mdctl::kConfigPath] = "host-id = 0x42\n";
	o = w.run({"host", "id"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(), "0000000000000042\n");
	o = w.run({"host", "id", "-o", "json"});
	assert_string_equal(o.out.c_str(), "{\"host_id\":66,\"source\":\"config\"}\n");
	o = w.run({"attach", "db", "-o", "json"});
	assert_int_equal(o.status, 0);
	assert_int_equal(w.module.attached.at(0).target.host_id, 0x42);

	w.host.files.erase(mdctl::kConfigPath);
	w.host.files[mdctl::kMachineIdPath] = "bogus\n";
	assert_failure(w, {"host", "id"},
		       "mdctl: host id failed: /etc/machine-id: not a machine id: Invalid "
		       "argument (EINVAL)\nhint: set host-id in /etc/mdroute/mdctl.conf\n");
	World w2;
	assert_usage(w2, {"host", "id", "x"}, "unexpected argument 'x'");
}

// ---- host add, remove, list ------------------------------------------------------

static void test_host_add_usage(void **)
{
	World w;
	const std::string key = w.file("k", kKey40 + "\n");
	const std::string bad_id = "': expected 16 hex digits as 'mdctl host id' prints them, "
				   "or 0x and hex digits; not 0";

	assert_usage(w, {"host", "add"}, "host add needs a HOST_ID");
	assert_usage(w, {"host", "add", "0x93", "-K", key}, "host add needs --tenant T");
	assert_usage(w, {"host", "add", "0x93", "--tenant", "1"},
		     "host add needs --host-key-file FILE");
	assert_usage(w, {"host", "add", "93", "--tenant", "1", "-K", key},
		     "bad host id '93" + bad_id);
	assert_usage(w, {"host", "add", "0x0", "--tenant", "1", "-K", key},
		     "bad host id '0x0" + bad_id);
	assert_usage(w, {"host", "add", "0000000000000000", "--tenant", "1", "-K", key},
		     "bad host id '0000000000000000" + bad_id);
	assert_usage(w, {"host", "add", "0x93", "--tenant", "0", "-K", key},
		     "bad tenant '0': a host's tenant is non-zero");
	assert_usage(w, {"host", "add", "0x93", "--tenant", "1", "--host-key-file="},
		     "--host-key-file needs a path");
	assert_usage(w, {"host", "add", "0x93", "0x94", "--tenant", "1", "-K", key},
		     "unexpected argument '0x94'");
	assert_usage(w, {"host", "remove"}, "host remove needs a HOST_ID");
	assert_usage(w, {"host", "remove", "0"}, "bad host id '0" + bad_id);
	assert_usage(w, {"host"}, "host needs a subcommand: add, remove, list, id, gen-key");
	assert_true(w.node.host_adds.empty());
}

static void test_host_add_key_file_errors(void **)
{
	World w;
	const std::string short_key = w.file("short", std::string(15, 'k') + "\n\n");
	const std::string long_key = w.file("long", std::string(65, 'k'));

	assert_failure(w, {"host", "add", "0x93", "-t", "1", "-K", short_key},
		       "mdctl: host add failed: key file " + short_key + " holds 15 bytes; a key "
		       "has 16 to 64: Invalid argument (EINVAL)\nhint: a host key file holds 16 "
		       "to 64 bytes and maybe a newline; 'mdctl host gen-key FILE' writes one\n");
	assert_failure(w, {"host", "add", "0x93", "-t", "1", "-K", long_key},
		       "mdctl: host add failed: key file " + long_key + " holds 65 bytes; a key "
		       "has 16 to 64: Invalid argument (EINVAL)\nhint: a host key file holds 16 "
		       "to 64 bytes and maybe a newline; 'mdctl host gen-key FILE' writes one\n");
	assert_failure(w, {"host", "add", "0x93", "-t", "1", "-K", w.dir + "/none"},
		       "mdctl: host add failed: cannot read key file " + w.dir + "/none: No "
		       "such file or directory (ENOENT)\n");
	// a bad key costs no connection
	assert_true(w.node.connections.empty());
}

static void test_host_add_request(void **)
{
	World w;
	const std::string key = w.file("k", kKey40 + "\n");

	Outcome o = w.run({"host", "add", "0x93", "--tenant", "7", "--host-key-file", key});
	assert_int_equal(o.status, 0);
	assert_true(o.out.empty());
	assert_true(o.err.empty());
	assert_int_equal(w.node.host_adds.size(), 1);
	const mdr::wire::HostAddReq &req = w.node.host_adds[0];
	assert_true(req.host_id == 0x93);
	assert_int_equal(req.tenant, 7);
	assert_int_equal(req.flags, 0);
	assert_int_equal(req.key_len, 40);
	// The key travels wrapped: not in the clear...
	assert_true(std::search(req.wrapped.begin(), req.wrapped.end(), kKey40.begin(),
				kKey40.begin() + 16) == req.wrapped.end());
	// ...and the node opens it with the admin key and this connection's
	// nonce (FakeNode does it as mdnode does): the file's bytes, no newline.
	assert_true(w.node.host_keys.at(0x93) == bytes(kKey40));
	assert_int_equal(w.node.hosts.at(0x93).tenant, 7);

	// As 'mdctl host id' prints it; known already without --replace.
	assert_failure(w, {"host", "add", "0000000000000093", "-t", "7", "-K", key},
		       "mdctl: host add failed: host 0000000000000093: File exists (EEXIST)\n"
		       "hint: the host is registered already; --replace gives it this key\n");

	// Rotation: a new key with --replace.
	const std::string rotated(64, 'n');
	const std::string key2 = w.file("k2", rotated + "\n");
	o = w.run({"host", "add", "0x93", "-t", "7", "-K", key2, "--replace"});
	assert_int_equal(o.status, 0);
	assert_int_equal(w.node.host_adds.back().flags, MDR_HOST_ADD_F_REPLACE);
	assert_int_equal(w.node.host_adds.back().key_len, 64);
	assert_true(w.node.host_keys.at(0x93) == bytes(rotated));

	// A replace keeps the tenant; it needs a registered host.
	assert_failure(w, {"host", "add", "0x93", "-t", "8", "-K", key2, "-r"},
		       "mdctl: host add failed: host 0000000000000093: Invalid argument (EINVAL)\n"
		       "hint: a replace keeps the host's tenant (see 'mdctl host list'); to "
		       "change it, remove the host and add it again\n");
	assert_failure(w, {"host", "add", "0x94", "-t", "7", "-K", key2, "-r"},
		       "mdctl: host add failed: host 0000000000000094: No such file or directory "
		       "(ENOENT)\nhint: the host is not registered: add it without --replace\n");
	assert_true(w.node.host_keys.at(0x93) == bytes(rotated));

	// The wrap is bound to the connection: a node whose accept carried
	// another nonce opens the same request to nothing.
	World w2;
	const std::string k = w2.file("k", kKey40);
	assert_int_equal(w2.run({"host", "add", "0x93", "-t", "7", "-K", k}).status, 0);
	mdr::wire::ConnRep other = w2.node.accept;
	other.nonce[0] ^= 1;
	assert_false(mdr::open_host_add(w2.node.key_bytes(), other.nonce,
					w2.node.host_adds[0]).ok());
}

static void test_host_add_old_node(void **)
{
	World w;
	const std::string key = w.file("k", kKey40);
	w.node.accept.version = 2;

	assert_failure(w, {"host", "add", "0x93", "-t", "7", "-K", key},
		       "mdctl: host add failed: mdnode at 192.0.2.2:4791 speaks wire version 2, "
		       "which has no host registry: Protocol not supported (EPROTONOSUPPORT)\n"
		       "hint: the host registry came with version 3: upgrade mdnode\n");
	assert_failure(w, {"host", "list"},
		       "mdctl: host list failed: mdnode at 192.0.2.2:4791 speaks wire version 2, "
		       "which has no host registry: Protocol not supported (EPROTONOSUPPORT)\n"
		       "hint: the host registry came with version 3: upgrade mdnode\n");
	assert_true(w.node.requests.empty());
}

static void test_host_remove(void **)
{
	World w;
	w.node.hosts[0x93] = {.host_id = 0x93, .tenant = 7};
	w.node.hosts[0x94] = {.host_id = 0x94, .tenant = 7};

	Outcome o = w.run({"host", "remove", "0x93"});
	assert_int_equal(o.status, 0);
	assert_true(o.out.empty() && o.err.empty());
	assert_false(w.node.hosts.contains(0x93));
	assert_true(w.node.hosts.contains(0x94));
	assert_failure(w, {"host", "remove", "0x93"},
		       "mdctl: host remove failed: host 0000000000000093: No such file or "
		       "directory (ENOENT)\nhint: see 'mdctl host list'\n");
	w.node.errors[MDR_OP_HOST_REMOVE] = -EBUSY;
	assert_failure(w, {"host", "remove", "0000000000000094"},
		       "mdctl: host remove failed: host 0000000000000094: Device or resource busy "
		       "(EBUSY)\nhint: another change of the host is in flight: try again\n");
}

static void test_host_list(void **)
{
	World w;
	w.node.hosts[0x93] = {.host_id = 0x93, .tenant = 7, .connections = 1, .leases = 12};
	w.node.hosts[kDerivedHostId] = {.host_id = kDerivedHostId, .tenant = 4294967295,
					.connections = 0, .leases = 0};
	w.node.hosts[0x5] = {.host_id = 0x5, .tenant = 1, .connections = 2, .leases = 3};

	// Pages of 2: the cursor follows the node's next.
	Outcome o = w.run({"host", "list"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    "HOST_ID               TENANT  CONNECTIONS  LEASES\n"
			    "0000000000000005           1            2       3\n"
			    "0000000000000093           7            1      12\n"
			    "98a75de7956b6183  4294967295            0       0\n");
	assert_int_equal(std::count(w.node.requests.begin(), w.node.requests.end(),
				    MDR_OP_HOST_LIST), 2);

	o = w.run({"host", "list", "-o", "json"});
	assert_int_equal(o.status, 0);
	assert_string_equal(o.out.c_str(),
			    "{\"hosts\":["
			    "{\"host_id\":5,\"tenant\":1,\"connections\":2,\"leases\":3},"
			    "{\"host_id\":147,\"tenant\":7,\"connections\":1,\"leases\":12},"
			    "{\"host_id\":10999863864101396867,\"tenant\":4294967295,"
			    "\"connections\":0,\"leases\":0}]}\n");

	World empty;
	o = empty.run({"host", "list", "-o", "json"});
	assert_string_equal(o.out.c_str(), "{\"hosts\":[]}\n");
	o = empty.run({"host", "list"});
	assert_string_equal(o.out.c_str(), "HOST_ID  TENANT  CONNECTIONS  LEASES\n");
}

// ---- host gen-key ----------------------------------------------------------------

static void test_host_gen_key(void **)
{
	World w;
	const std::string path = w.dir + "/host.key";
	// A umask that would leave the owner unable to write, or open to all.
	const mode_t old = umask(0277);
	Outcome o = w.run({"host", "gen-key", path});
	umask(0);
	Outcome o2 = w.run({"host", "gen-key", w.dir + "/other.key"});
	umask(old);

	assert_int_equal(o.status, 0);
	assert_true(o.out.empty() && o.err.empty());	// the key is never printed
	struct stat st;
	assert_int_equal(stat(path.c_str(), &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	const std::string text = read_all(path);
	assert_int_equal(text.size(), 65);
	assert_true(text.find_first_not_of("0123456789abcdef") == 64);
	assert_int_equal(text.back(), '\n');

	// What --host-key-file takes: the 64 bytes of the text.
	auto key = mdr::read_key_file(path, MDR_HOST_KEY_MIN, MDR_HOST_KEY_MAX);
	assert_true(key.ok());
	assert_true(key.value() == bytes(text.substr(0, 64)));

	assert_int_equal(o2.status, 0);
	assert_int_equal(stat((w.dir + "/other.key").c_str(), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_true(read_all(w.dir + "/other.key") != text);

	// Never overwritten, never through a symbolic link.
	assert_failure(w, {"host", "gen-key", path},
		       "mdctl: host gen-key failed: " + path + ": File exists (EEXIST)\n"
		       "hint: a key file is never overwritten: remove it, or name another\n");
	assert_true(read_all(path) == text);
	const std::string link = w.dir + "/link.key";
	assert_int_equal(symlink((w.dir + "/target").c_str(), link.c_str()), 0);
	assert_failure(w, {"host", "gen-key", link},
		       "mdctl: host gen-key failed: " + link + ": File exists (EEXIST)\n"
		       "hint: a key file is never overwritten: remove it, or name another\n");
	assert_false(std::filesystem::exists(w.dir + "/target"));

	assert_failure(w, {"host", "gen-key", w.dir + "/no/such"},
		       "mdctl: host gen-key failed: " + w.dir + "/no/such: No such file or "
		       "directory (ENOENT)\n");
	assert_usage(w, {"host", "gen-key"}, "host gen-key needs a FILE");
	assert_usage(w, {"host", "gen-key", "a", "b"}, "unexpected argument 'b'");
}

// ---- attach with a key -----------------------------------------------------------

static void test_attach_with_key_file(void **)
{
	World w;
	const std::string key = w.file("host.key", kKey40 + "\n");

	Outcome o = w.run({"attach", "db", "--host-key-file", key, "-o", "json"});
	assert_int_equal(o.status, 0);
	// logon key mdroute:host:<id>, the file's bytes without the newline
	assert_int_equal(w.host.keyring.size(), 1);
	const FakeHost::LogonKey &k = w.host.keyring.at(kDescription);
	assert_true(k.payload == bytes(kKey40));
	assert_int_equal(k.serial, 1000);
	const auto &v = w.module.attached.at(0);
	assert_int_equal(v.target.key, 1000);
	assert_true(v.target.host_id == kDerivedHostId);
	assert_non_null(strstr(o.out.c_str(), "\"key_serial\":1000,"));

	// Rotation: the same description gets the new secret, same serial.
	w.volume("logs", 1ULL << 30, 4);
	w.file("host.key", std::string(64, 'r'));
	o = w.run({"attach", "logs", "-K", key});
	assert_int_equal(o.status, 0);
	assert_int_equal(w.host.keyring.size(), 1);
	assert_true(w.host.keyring.at(kDescription).payload == bytes(std::string(64, 'r')));
	assert_int_equal(w.module.attached.at(1).target.key, 1000);

	// Another host id: another key.
	w.volume("tmp", 1ULL << 30, 4);
	o = w.run({"attach", "tmp", "-K", key, "-H", "0x93"});
	assert_int_equal(o.status, 0);
	assert_int_equal(w.host.keyring.at("mdroute:host:0000000000000093").serial, 1001);
	assert_int_equal(w.module.attached.at(2).target.key, 1001);

	// list shows each volume's serial
	o = w.run({"list", "-o", "json"});
	assert_non_null(strstr(o.out.c_str(), "\"host_id\":147,\"key_serial\":1001,"));
}

static void test_attach_with_key_serial(void **)
{
	World w;
	Outcome o = w.run({"attach", "--volume-id", "1", "--key-serial", "77", "-t", "4"});
	assert_int_equal(o.status, 0);
	assert_int_equal(w.module.attached.at(0).target.key, 77);
	assert_true(w.host.keyring.empty());

	// no key: 0, the module's "no key"
	w.volume("logs", 1ULL << 30, 4);
	assert_int_equal(w.run({"attach", "logs"}).status, 0);
	assert_int_equal(w.module.attached.at(1).target.key, 0);
}

static void test_attach_key_usage(void **)
{
	World w;
	const std::string key = w.file("k", kKey40);

	assert_usage(w, {"attach", "db", "--host-key-file", key, "--key-serial", "5"},
		     "attach takes one of --host-key-file and --key-serial");
	assert_usage(w, {"attach", "--all-of", key, "-S", "5", "-K", key},
		     "attach takes one of --host-key-file and --key-serial");
	for (const char *bad : {"0", "-1", "x", "2147483648", "0x"})
		assert_usage(w, {"attach", "db", "--key-serial", bad},
			     "bad key serial '" + std::string(bad) +
				     "': expected a positive number");
	assert_usage(w, {"attach", "db", "--host-key-file="}, "--host-key-file needs a path");
}

static void test_attach_key_file_errors(void **)
{
	World w;
	const std::string short_key = w.file("short", "0123456789\n");

	assert_failure(w, {"attach", "db", "-K", short_key},
		       "mdctl: attach failed: key file " + short_key + " holds 10 bytes; a key "
		       "has 16 to 64: Invalid argument (EINVAL)\nhint: a host key file holds 16 "
		       "to 64 bytes and maybe a newline; 'mdctl host gen-key FILE' writes one\n");
	// nothing asked, nothing changed
	assert_true(w.node.connections.empty());
	assert_true(w.sys.requests.empty());
	assert_true(w.host.keyring.empty());

	const std::string key = w.file("k", kKey40);
	w.host.add_key_error = -EDQUOT;
	assert_failure(w, {"attach", "db", "-K", key},
		       std::string("mdctl: attach failed: logon key ") + kDescription +
			       ": add_key into the user keyring: Disk quota exceeded (EDQUOT)\n"
			       "hint: this user's keys fill its quota (see /proc/key-users): "
			       "unlink those it does not need\n");
	w.host.add_key_error = -EACCES;
	assert_failure(w, {"attach", "db", "-K", key},
		       std::string("mdctl: attach failed: logon key ") + kDescription +
			       ": add_key into the user keyring: Permission denied (EACCES)\n"
			       "hint: add the key yourself, 'tr -d \"\\n\" < FILE | keyctl padd "
			       "logon " + kDescription + " @s', and pass --key-serial with the "
			       "number it prints\n");
	assert_true(w.sys.requests.empty());
}

static void test_attach_host_key_in_config(void **)
{
	World w;
	const std::string key = w.file("conf.key", kKey40 + "\n");
	w.host.files[mdctl::kConfigPath] = "host-key = " + key + "\n";

	assert_int_equal(w.run({"attach", "db"}).status, 0);
	assert_true(w.host.keyring.at(kDescription).payload == bytes(kKey40));
	assert_int_equal(w.module.attached.at(0).target.key, 1000);

	// --host-key-file wins over the config; --key-serial too
	w.volume("logs", 1ULL << 30, 4);
	const std::string other = w.file("other.key", std::string(20, 'o'));
	assert_int_equal(w.run({"attach", "logs", "-K", other}).status, 0);
	assert_true(w.host.keyring.at(kDescription).payload == bytes(std::string(20, 'o')));
	w.volume("tmp", 1ULL << 30, 4);
	assert_int_equal(w.run({"attach", "tmp", "-S", "9"}).status, 0);
	assert_int_equal(w.module.attached.at(2).target.key, 9);

	auto c = mdctl::parse_config("/c", "host-key = /etc/mdroute/host.key\n");
	assert_true(c.ok());
	assert_string_equal(c.value().host_key->c_str(), "/etc/mdroute/host.key");
	c = mdctl::parse_config("/c", "host-key = host.key\n");
	assert_false(c.ok());
	assert_string_equal(c.message().c_str(), "/c:1: host-key 'host.key': the path must be "
						 "absolute");
	c = mdctl::parse_config("/c", "host-key = /a\nhost-key = /b\n");
	assert_string_equal(c.message().c_str(), "/c:2: 'host-key' given twice");
}

static void test_attach_all_of_with_key(void **)
{
	World w;
	const std::string key = w.file("k", kKey40);
	w.volume("logs", 1ULL << 30, 4);
	w.host.files["/etc/mdroute/volumes"] = "db\nlogs\n";	// read through the host

	Outcome o = w.run({"attach", "--all-of", "/etc/mdroute/volumes", "-K", key});
	assert_int_equal(o.status, 0);
	assert_int_equal(w.module.attached.size(), 2);
	for (const auto &[index, v] : w.module.attached)
		assert_int_equal(v.target.key, 1000);
	assert_int_equal(w.host.keyring.size(), 1);
}

// The module's errors for keys, as the operator reads them.
static void test_attach_auth_errors(void **)
{
	struct Case {
		int err;
		bool key;
		std::string message;
	};
	const Case cases[] = {
		{-EPERM, false, "Operation not permitted (EPERM)\nhint: the node requires hosts "
				"to authenticate: pass --host-key-file FILE (or --key-serial N, or "
				"set host-key in mdctl.conf)\n"},
		{-EACCES, true, "Permission denied (EACCES)\nhint: the node refused host "
				"98a75de7956b6183's key: is the host registered there for tenant 4 "
				"with this key ('mdctl host list' on the node)? A --key-serial key "
				"must be one this process possesses\n"},
		{-EKEYREJECTED, true, "Key was rejected by service (EKEYREJECTED)\nhint: the node "
				      "did not prove the key: is it the right node?\n"},
		{-EKEYREVOKED, true, "Key has been revoked (EKEYREVOKED)\nhint: key 1000 cannot "
				     "be used (revoked, expired or gone): pass --host-key-file "
				     "FILE, or --key-serial of a key that can\n"},
		{-ENOKEY, true, "Required key not available (ENOKEY)\nhint: key 1000 cannot be "
				"used (revoked, expired or gone): pass --host-key-file FILE, or "
				"--key-serial of a key that can\n"},
		{-EKEYEXPIRED, true, "Key has expired (EKEYEXPIRED)\nhint: key 1000 cannot be used "
				     "(revoked, expired or gone): pass --host-key-file FILE, or "
				     "--key-serial of a key that can\n"},
	};
	for (const Case &c : cases) {
		World w;
		const std::string key = w.file("k", kKey40);
		w.module.attach_error = c.err;
		if (c.key)
			assert_failure(w, {"attach", "db", "-K", key},
				       "mdctl: attach failed: " + c.message);
		else
			assert_failure(w, {"attach", "db"}, "mdctl: attach failed: " + c.message);
		assert_true(w.module.bound.empty());	// undone
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_host_id),
		cmocka_unit_test(test_host_id),
		cmocka_unit_test(test_host_add_usage),
		cmocka_unit_test(test_host_add_key_file_errors),
		cmocka_unit_test(test_host_add_request),
		cmocka_unit_test(test_host_add_old_node),
		cmocka_unit_test(test_host_remove),
		cmocka_unit_test(test_host_list),
		cmocka_unit_test(test_host_gen_key),
		cmocka_unit_test(test_attach_with_key_file),
		cmocka_unit_test(test_attach_with_key_serial),
		cmocka_unit_test(test_attach_key_usage),
		cmocka_unit_test(test_attach_key_file_errors),
		cmocka_unit_test(test_attach_host_key_in_config),
		cmocka_unit_test(test_attach_all_of_with_key),
		cmocka_unit_test(test_attach_auth_errors),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
