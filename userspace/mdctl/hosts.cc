// SPDX-License-Identifier: GPL-2.0
//
// hosts.cc - the 'mdctl host' group: the host registry of a storage node
// (host add, remove, list: MDR_OP_HOST_*), and what an operator needs to
// fill it: this host's id (host id) and a new random key (host gen-key).
// Not to be confused with real_host.cc, the real Host of the seam.
#include <cerrno>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/mdroute_wire.h>

#include "lib/auth/auth.h"
#include "lib/util/json.h"
#include "lib/wire/wire.h"
#include "mdctl/cli.h"
#include "mdctl/follow.h"
#include "mdctl/host_identity.h"
#include "mdctl/parse.h"
#include "mdctl/session.h"

namespace mdctl {

namespace {

enum HostOption { kOptTenant = kOptOwn, kOptHostKeyFile, kOptReplace };

// A host key's copy, wiped however the command ends.
struct WipedKey {
	std::vector<uint8_t> bytes;
	~WipedKey() { mdr::wipe(bytes); }
};

// The HOST_ID operand, or a usage error.
std::optional<int> host_id_operand(const Env &env, const Common &c, std::string_view command,
				   uint64_t &host_id)
{
	if (auto done = operands(env, c, 1, std::string(command) + " needs a HOST_ID"))
		return done;
	std::optional<uint64_t> id = parse_host_id(c.operands[0]);
	if (!id)
		return usage_error(env, "bad host id '" + std::string(c.operands[0]) +
					std::string(kHostIdForm));
	host_id = *id;
	return std::nullopt;
}

// A node without a host registry would not understand the request.
std::optional<int> check_registry(const Env &env, std::string_view command, NodeSession &node,
				  const NodeSettings &ns)
{
	return require_version(env, command, node, ns, mdr::wire::kHostAuthVersion,
			       "has no host registry", "the host registry");
}

// The failure of a HOST_* request; the hints of rpc_failure() are a
// volume's.
int host_rpc_failure(const Env &env, std::string_view command, int err, const std::string &message,
		     uint64_t host_id, bool replace, const mdr::Target &target)
{
	const std::string host = format_host_id(host_id);
	std::string context = "host " + host;
	std::string hint;

	if (!message.empty() && !message.starts_with("MDR_ST_"))
		context += ": " + message;
	switch (err) {
	case -EEXIST:
		hint = "the host is registered already; --replace gives it this key";
		break;
	case -ENOENT:
		hint = replace ? "the host is not registered: add it without --replace"
			       : "see 'mdctl host list'";
		break;
	case -EINVAL:
		if (replace)
			hint = "a replace keeps the host's tenant (see 'mdctl host list'); "
			       "to change it, remove the host and add it again";
		break;
	case -EBUSY:
		hint = "another change of the host is in flight: try again";
		break;
	default:
		hint = node_hint(err, target);
	}
	return failure(env, command, err, context, hint);
}

constexpr std::string_view kHostAddUsage =
	"Usage: mdctl host add HOST_ID --tenant T --host-key-file FILE [--replace]\n"
	"                      [--node ADDR[:PORT]] [--key-file FILE]\n"
	"\n"
	"Register host HOST_ID at the storage node, for the volumes of tenant T,\n"
	"with the key in FILE: the node then admits the host's connections once\n"
	"it proved that key (attach --host-key-file on the host), and proves it\n"
	"back. HOST_ID is what 'mdctl host id' prints on the host (16 hex digits),\n"
	"or 0x and hex digits. The key travels wrapped for this admin connection\n"
	"alone (by the admin key and the connection's nonce).\n"
	"\n"
	"With --replace the host, registered already, gets the new key: the\n"
	"connections it has stay, new ones need the new key. Its tenant stays.\n"
	"\n"
	"Options:\n"
	"  -t, --tenant T       the one tenant the host may reach (non-zero)\n"
	"  -K, --host-key-file FILE\n"
	"                       the host's key: 16 to 64 bytes and maybe a newline\n"
	"                       ('mdctl host gen-key FILE' writes one)\n"
	"  -r, --replace        replace the key of a registered host\n"
	MDCTL_NODE_OPTIONS
	"  -h, --help           show this help\n";

int cmd_host_add(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {
		{kOptTenant, "tenant", 't', true},
		{kOptHostKeyFile, "host-key-file", 'K', true},
		{kOptReplace, "replace", 'r', false},
		kNodeOption, kKeyFileOption, kHelpOption,
	};
	constexpr std::string_view command = "host add";
	uint64_t host_id = 0;
	std::optional<uint32_t> tenant;
	std::optional<std::string> key_path;
	bool replace = false;
	WipedKey key;
	Common c;
	NodeSettings ns;
	std::unique_ptr<NodeSession> node;

	// The key is read before the node is reached: a bad file costs no
	// connection.
	auto check = [&]() -> std::optional<int> {
		if (auto done = host_id_operand(env, c, command, host_id))
			return done;
		for (const mdr::ParsedOption &opt : c.options) {
			const std::string value(opt.value);
			if (opt.id == kOptTenant) {
				tenant = parse_id<uint32_t>(value);
				if (!tenant)
					return usage_error(env, "bad tenant '" + value +
								"': a host's tenant is non-zero");
			} else if (opt.id == kOptHostKeyFile) {
				if (value.empty())
					return usage_error(env, "--host-key-file needs a path");
				key_path = value;
			} else if (opt.id == kOptReplace) {
				replace = true;
			}
		}
		if (!tenant)
			return usage_error(env, "host add needs --tenant T");
		if (!key_path)
			return usage_error(env, "host add needs --host-key-file FILE");
		auto bytes = read_host_key(env, command, *key_path);
		if (!bytes)
			return kExitFailure;
		key.bytes = std::move(*bytes);
		return std::nullopt;
	};
	if (auto done = node_command(args, specs, kHostAddUsage, command, env, c, ns, node, check))
		return *done;
	if (auto done = check_registry(env, command, *node, ns))
		return *done;

	// The wrap is bound to the accept of the connection: a session that
	// followed its group's leader (follow.h) answers AGAIN, and the
	// request is made again for the leader's connection.
	mdr::Result<mdr::wire::HostAddRep> rep = mdr::Error(-EAGAIN);
	for (int attempt = 0; attempt <= kMaxLeaderHops; attempt++) {
		auto req = mdr::host_add_request(node->admin_key(), node->accepted().nonce, host_id,
						 *tenant, replace ? MDR_HOST_ADD_F_REPLACE : 0,
						 key.bytes);
		if (!req.ok()) {
			mdr::wipe(key.bytes);
			return failure(env, command, req.error(), "host " + format_host_id(host_id) +
								 ": " + req.message());
		}
		rep = rpc<mdr::wire::HostAddRep>(*node, req.value());
		mdr::wipe(req.value().wrapped);
		if (rep.ok() || rep.error() != -EAGAIN)
			break;
	}
	mdr::wipe(key.bytes);
	if (!rep.ok())
		return host_rpc_failure(env, command, rep.error(), rep.message(), host_id, replace,
					ns.target);
	return kExitOk;
}

constexpr std::string_view kHostRemoveUsage =
	"Usage: mdctl host remove HOST_ID [--node ADDR[:PORT]] [--key-file FILE]\n"
	"\n"
	"Forget host HOST_ID at the storage node: its connections close at once\n"
	"and it can no longer authenticate; the leases it holds run out as a\n"
	"silent host's do.\n"
	"\n"
	"Options:\n"
	MDCTL_NODE_OPTIONS
	"  -h, --help           show this help\n";

int cmd_host_remove(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {kNodeOption, kKeyFileOption, kHelpOption};
	constexpr std::string_view command = "host remove";
	uint64_t host_id = 0;
	Common c;
	NodeSettings ns;
	std::unique_ptr<NodeSession> node;

	auto check = [&] { return host_id_operand(env, c, command, host_id); };
	if (auto done = node_command(args, specs, kHostRemoveUsage, command, env, c, ns, node,
				     check))
		return *done;
	if (auto done = check_registry(env, command, *node, ns))
		return *done;
	auto rep = rpc<mdr::wire::HostRemoveRep>(*node, mdr::wire::HostRemoveReq{host_id});
	if (!rep.ok())
		return host_rpc_failure(env, command, rep.error(), rep.message(), host_id, false,
					ns.target);
	return kExitOk;
}

constexpr std::string_view kHostListUsage =
	"Usage: mdctl host list [--node ADDR[:PORT]] [--key-file FILE] [-o json]\n"
	"\n"
	"List the hosts registered at the storage node: host id, tenant, the\n"
	"connections it has authenticated now and the leases it holds. Never a key.\n"
	"\n"
	"Options:\n"
	MDCTL_NODE_OPTIONS
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

int cmd_host_list(Args args, const Env &env)
{
	constexpr std::string_view command = "host list";
	Common c;
	NodeSettings ns;
	std::unique_ptr<NodeSession> node;

	if (auto done = node_command(args, kNodeCommandOptions, kHostListUsage, command, env, c,
				     ns, node))
		return *done;
	if (auto done = check_registry(env, command, *node, ns))
		return *done;
	auto hosts = list_hosts(*node);
	if (!hosts.ok())
		return rpc_failure(env, command, hosts, {}, ns.target);

	if (c.format == Format::json) {
		mdr::JsonWriter json;
		json.begin_object().key("hosts").begin_array();
		for (const mdr::wire::Host &h : hosts.value())
			json.begin_object()
				.key("host_id").value(h.host_id)
				.key("tenant").value(h.tenant)
				.key("connections").value(h.connections)
				.key("leases").value(h.leases)
				.end_object();
		json.end_array().end_object();
		env.out << json.str() << '\n';
		return kExitOk;
	}
	Table table({{"HOST_ID", false}, {"TENANT", true}, {"CONNECTIONS", true},
		     {"LEASES", true}});
	for (const mdr::wire::Host &h : hosts.value())
		table.add({format_host_id(h.host_id), std::to_string(h.tenant),
			   std::to_string(h.connections), std::to_string(h.leases)});
	table.print(env.out);
	return kExitOk;
}

constexpr std::string_view kHostIdUsage =
	"Usage: mdctl host id [-o json]\n"
	"\n"
	"Print the id this host attaches with, as 16 hex digits: 'host-id' in\n"
	"mdctl.conf, else the one derived from /etc/machine-id (see 'mdctl attach\n"
	"--help'). What 'mdctl host add' on a storage node takes:\n"
	"  mdctl host add $(ssh HOST mdctl host id) --tenant T --host-key-file FILE\n"
	"\n"
	"Options:\n"
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

int cmd_host_id(Args args, const Env &env)
{
	constexpr std::string_view command = "host id";
	Common c;

	if (auto done = parse_exactly(args, kOutputOptions, kHostIdUsage, env, c, 0))
		return *done;
	std::optional<Config> config = load_config(env, command);
	if (!config)
		return kExitFailure;
	std::optional<uint64_t> id = resolve_host_id(env, command, std::nullopt, *config);
	if (!id)
		return kExitFailure;
	if (c.format == Format::json) {
		mdr::JsonWriter json;
		json.begin_object()
			.key("host_id").value(*id)
			.key("source").value(config->host_id ? "config" : "machine-id")
			.end_object();
		env.out << json.str() << '\n';
		return kExitOk;
	}
	env.out << format_host_id(*id) << '\n';
	return kExitOk;
}

constexpr size_t kGenKeyBytes = 32;	// random bytes; the file holds their hex

constexpr std::string_view kHostGenKeyUsage =
	"Usage: mdctl host gen-key FILE\n"
	"\n"
	"Write a new host key to FILE: 32 random bytes as 64 hex digits and a\n"
	"newline, the form --host-key-file takes (the 64 bytes of the text are the\n"
	"key). FILE is created with mode 0600; one that exists is never\n"
	"overwritten. Copy it to the host over a secure channel.\n"
	"\n"
	"Options:\n"
	"  -h, --help           show this help\n";

// The text of a new key; the caller wipes it.
mdr::Status new_key_text(std::string &text)
{
	static constexpr char kHex[] = "0123456789abcdef";
	uint8_t bytes[kGenKeyBytes];

	if (auto st = mdr::random_bytes(bytes); !st.ok())
		return st;
	text.assign(2 * kGenKeyBytes + 1, '\n');
	for (size_t i = 0; i < kGenKeyBytes; i++) {
		text[2 * i] = kHex[bytes[i] >> 4];
		text[2 * i + 1] = kHex[bytes[i] & 0xf];
	}
	mdr::wipe(bytes);
	return {};
}

int cmd_host_gen_key(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {kHelpOption};
	constexpr std::string_view command = "host gen-key";
	Common c;

	if (auto done = parse_exactly(args, specs, kHostGenKeyUsage, env, c, 1,
				      "host gen-key needs a FILE"))
		return *done;
	const std::string path(c.operands[0]);
	if (path.empty())
		return usage_error(env, "host gen-key needs a FILE");

	std::string text;
	if (auto st = new_key_text(text); !st.ok())
		return failure(env, command, st.error(), "random bytes");
	auto wipe_text = [&] {
		mdr::wipe(std::span(reinterpret_cast<uint8_t *>(text.data()), text.size()));
	};
	// O_EXCL: never another's file, nor through a symbolic link.
	int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		const int err = errno;
		wipe_text();
		return failure(env, command, -err, path,
			       err == EEXIST ? "a key file is never overwritten: remove it, "
					       "or name another"
					     : std::string_view());
	}
	// The mode whatever the umask; then the text, durable before success.
	int err = fchmod(fd, 0600) < 0 ? errno : 0;
	for (size_t done = 0; !err && done < text.size();) {
		ssize_t n = write(fd, text.data() + done, text.size() - done);
		if (n < 0 && errno != EINTR)
			err = errno;
		else if (n > 0)
			done += static_cast<size_t>(n);
	}
	if (!err && fsync(fd) < 0)
		err = errno;
	if (close(fd) < 0 && !err)
		err = errno;
	wipe_text();
	if (err) {
		unlink(path.c_str());
		return failure(env, command, -err, path);
	}
	return kExitOk;
}

const Registration kRegistered[] = {
	{group(Place::host, "host",
	       "register hosts at a storage node; this host's id; new host keys")},
	{sub("host", 1, "add", "register a host and its key, or --replace its key", cmd_host_add)},
	{sub("host", 2, "remove", "forget a host: its connections close", cmd_host_remove)},
	{sub("host", 3, "list", "list the registered hosts", cmd_host_list)},
	{sub("host", 4, "id", "print this host's id", cmd_host_id)},
	{sub("host", 5, "gen-key", "write a new random host key to a file", cmd_host_gen_key)},
};

} // namespace

} // namespace mdctl
