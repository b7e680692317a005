// SPDX-License-Identifier: GPL-2.0
//
// attach.cc - mdctl attach by NAME (the node says where the volume's
// devices are; they are bound to the local disks of the same serial) or
// by --volume-id (no node asked). attach --all-of is in attach_all.cc.
#include "mdctl/attach.h"

#include <algorithm>
#include <cerrno>
#include <memory>
#include <set>

#include "lib/util/errors.h"
#include "lib/util/json.h"
#include "mdctl/batch.h"

namespace mdctl {

namespace {

std::string trim_sysfs(std::string_view s)
{
	size_t b = s.find_first_not_of(" \t\r\n");
	size_t e = s.find_last_not_of(" \t\r\n");

	return b == s.npos ? std::string() : std::string(s.substr(b, e - b + 1));
}

// serial or WWID -> the whole disk that shows it: of /sys/block/NAME/
// serial, device/serial, wwid and device/wwid, the first that is not
// empty, which is what mdnode reports for its devices (mdnode/probe.cc).
// mdroute's own disks are left out.
std::map<std::string, Binding> local_disks(const Env &env)
{
	std::map<std::string, Binding> disks;
	auto names = env.host.list_dir("/sys/block");

	if (!names.ok())
		return disks;
	std::ranges::sort(names.value());	// the first of two same serials wins
	for (const std::string &name : names.value()) {
		if (name.starts_with("mdr"))
			continue;
		const std::string dir = "/sys/block/" + name + '/';
		auto dev = env.host.read_file(dir + "dev");
		if (!dev.ok())
			continue;
		std::string text = trim_sysfs(dev.value());
		size_t colon = text.find(':');
		std::optional<uint32_t> major = parse_number<uint32_t>(text.substr(0, colon));
		std::optional<uint32_t> minor =
			colon == text.npos ? std::nullopt
					   : parse_number<uint32_t>(text.substr(colon + 1));
		if (!major || !minor)
			continue;
		for (const char *attr : {"serial", "device/serial", "wwid", "device/wwid"}) {
			auto serial = env.host.read_file(dir + attr);
			std::string s = serial.ok() ? trim_sysfs(serial.value()) : std::string();
			if (s.empty())
				continue;
			disks.emplace(s, Binding{0, "/dev/" + name, {*major, *minor}});
			break;
		}
	}
	return disks;
}

} // namespace

// The module's errors for a host key (kmod/core/key.c, the host's proof
// in kmod/transport/rdma.c): EPERM, the node refused a host without one;
// EACCES, the node refused the proof, or the key is not the caller's to
// use; EKEYREJECTED, the node's proof back was wrong.
std::string attach_hint(int err, const mdr::Target &target)
{
	const std::string host = format_host_id(target.host_id);
	const std::string key = std::to_string(target.key);

	switch (err) {
	case -EEXIST:
		return "the volume is attached already; see 'mdctl list'";
	case -ENOENT:
		return "does the volume exist on " + format_node(target) + "?";
	case -EPERM:
		if (target.key)
			return "run as root";
		return "the node requires hosts to authenticate: pass --host-key-file FILE "
		       "(or --key-serial N, or set host-key in mdctl.conf)";
	case -EACCES:
		if (!target.key)
			return "run as root";
		return "the node refused host " + host + "'s key: is the host registered there "
		       "for tenant " + std::to_string(target.tenant) + " with this key ('mdctl "
		       "host list' on the node)? A --key-serial key must be one this process "
		       "possesses";
	case -EKEYREJECTED:
		return "the node did not prove the key: is it the right node?";
	case -EKEYREVOKED:
	case -EKEYEXPIRED:
	case -ENOKEY:
		return "key " + key + " cannot be used (revoked, expired or gone): pass "
		       "--host-key-file FILE, or --key-serial of a key that can";
	case -EINVAL:
		if (target.key)
			return "key " + key + " must be a logon key of 16 to 64 bytes, and the "
			       "host's connection to " + format_node(target) + " may use another "
			       "one already (key_serial in 'mdctl list -o json')";
		return {};
	default:
		return node_hint(err, target);
	}
}

std::string attach_failure_hint(const mdr::Result<mdr::VolumeInfo> &r, const mdr::Target &target)
{
	// Control's only message for EINVAL: the module's version is not ours
	if (r.error() == -EINVAL && !r.message().empty())
		return "install mdctl and the module from the same release (replica groups "
		       "need ioctl ABI " + std::to_string(MDR_IOCTL_VERSION_MAJOR) + '.' +
		       std::to_string(MDR_IOCTL_VERSION_MINOR) + ')';
	return attach_hint(r.error(), target);
}

// Undoes the bindings an attach made, newest first; says what it cannot undo.
void unbind_all(const Env &env, mdr::Control &control, const std::vector<uint32_t> &ids)
{
	for (auto id = ids.rbegin(); id != ids.rend(); ++id) {
		auto unbound = control.unbind(*id);
		if (!unbound.ok())
			env.err << "mdctl: attach: could not undo binding of device " << *id
				<< ": " << mdr::describe_errno(-unbound.error()) << '\n';
	}
}

// Binds each of @binds; one bound to that same block device already
// (another volume's attach did it) is used and left bound. The ids it
// bound are appended to @bound. False once the failure is told.
bool bind_devices(const Env &env, std::string_view command, mdr::Control &control,
		  const std::vector<Binding> &binds, std::vector<uint32_t> &bound)
{
	for (const Binding &b : binds) {
		auto r = control.bind(b.dev_id, b.dev);
		if (r.ok()) {
			bound.push_back(b.dev_id);
			continue;
		}
		auto same = [&](const mdr::DeviceInfo &d) {
			return d.dev_id == b.dev_id && d.dev.major == b.dev.major &&
			       d.dev.minor == b.dev.minor;
		};
		if (r.error() == -EEXIST) {
			auto all = control.dev_list();
			if (all.ok() && std::ranges::any_of(all.value(), same))
				continue;
		}
		std::string context = "bind " + std::to_string(b.dev_id) + '=' + b.path;
		if (!r.message().empty())
			context += ": " + r.message();
		failure(env, command, r.error(), context,
			r.error() == -EEXIST ? "the id is bound to another block device; "
					       "see 'mdctl devices'"
					     : std::string_view());
		return false;
	}
	return true;
}

namespace {

std::optional<int> plan_devices(const Env &env, std::string_view command,
				const std::vector<mdr::wire::Device> &devs,
				const std::vector<BindSpec> &overrides, const mdr::Target &target,
				BindPlan &plan)
{
	std::set<uint32_t> overridden;

	for (const BindSpec &o : overrides) {
		if (std::ranges::none_of(devs, [&](const auto &d) { return d.dev_id == o.dev_id; })) {
			failure(env, command, -ENODEV,
				"--bind " + std::to_string(o.dev_id) + '=' + o.path + ": mdnode at " +
					format_node(target) + " has no device " +
					std::to_string(o.dev_id),
				"see 'mdctl dev list'");
			return kExitFailure;
		}
		std::optional<mdr::DevNum> dev = block_device(env, command, o.path);
		if (!dev)
			return kExitFailure;
		plan.binds.push_back({o.dev_id, o.path, *dev});
		overridden.insert(o.dev_id);
	}
	std::map<std::string, Binding> disks = local_disks(env);
	for (const mdr::wire::Device &d : devs) {
		// A missing device holds no extent and gets none: nothing to bind.
		if (overridden.contains(d.dev_id) || d.state != MDR_DEV_ONLINE)
			continue;
		auto disk = d.serial.empty() ? disks.end() : disks.find(d.serial);
		if (disk == disks.end()) {
			plan.missing[d.dev_id] = d.serial;
			continue;
		}
		plan.binds.push_back({d.dev_id, disk->second.path, disk->second.dev});
	}
	return std::nullopt;
}

} // namespace

std::optional<int> plan_bindings(const Env &env, NodeSession &node, const AttachArgs &a,
				 const NodeSettings &ns, BindPlan &plan)
{
	auto devs = list_devices(node);

	if (!devs.ok())
		return rpc_failure(env, "attach", devs, "device list", ns.target);
	return plan_devices(env, "attach", devs.value(), a.binds, ns.target, plan);
}

// A volume whose extents are on a device this host cannot reach would
// read and write garbage or fail: refused before anything changes.
std::optional<int> check_reachable(const Env &env, std::string_view command,
				   const mdr::wire::VolumeReply &v, const BindPlan &plan)
{
	for (const mdr::wire::DevExtents &d : v.devs) {
		auto m = plan.missing.find(d.dev_id);
		if (m == plan.missing.end() || d.extents == 0)
			continue;
		return failure(env, command, -ENODEV,
			       "volume '" + v.vol.name + "': device " + std::to_string(d.dev_id) +
				       " (serial '" + m->second + "') holds " +
				       std::to_string(d.extents) +
				       " of its extents but is on no disk of this host",
			       "bind it with --bind " + std::to_string(d.dev_id) + "=/dev/X");
	}
	return std::nullopt;
}

void note_missing(const Env &env, std::string_view command, const BindPlan &plan)
{
	for (const auto &[id, serial] : plan.missing)
		env.err << "mdctl: " << command << ": note: device " << id << " (serial '"
			<< serial << "') is on no disk of this host; IO to extents the node "
			   "allocates there will fail\n";
}

namespace {

enum AttachOption {
	kOptVolumeId = kOptOwn, kOptAllOf, kOptTenant, kOptHostId, kOptBind, kOptReadOnly,
	kOptTiming, kOptJobs, kOptHostKeyFile, kOptKeySerial, kOptGroup, kOptReplica,
};

constexpr std::string_view kAttachUsage =
	"Usage: mdctl attach NAME [--node ADDR[:PORT]] [--key-file FILE]\n"
	"                    [--host-id ID] [--bind ID=/dev/X]... [--read-only]\n"
	"                    [--host-key-file FILE | --key-serial N]\n"
	"                    [--group ID] [--replica ADDR[:PORT]]...\n"
	"       mdctl attach --all-of FILE [--timing] [same options]\n"
	"       mdctl attach --volume-id ID [--node ADDR[:PORT]] [--tenant T]\n"
	"                    [--host-id ID] [--bind ID=/dev/X]... [--read-only]\n"
	"                    [--host-key-file FILE | --key-serial N]\n"
	"                    [--group ID --replica ADDR[:PORT]...]\n"
	"\n"
	"Attach a volume of a storage node as a new block device and print its\n"
	"path (/dev/mdrN). Loads the mdroute module (modprobe) if it is not.\n"
	"\n"
	"By NAME: looks the volume up on the node, then binds every backing device\n"
	"of the node to the local disk whose serial or WWID (sysfs serial,\n"
	"device/serial, wwid, device/wwid) is the one the node reports, unless a\n"
	"--bind names the disk. A device of the node found on no local disk is\n"
	"left unbound, with a note: IO to extents the node puts there fails with\n"
	"EIO. If it already holds extents of the volume, the attach fails before\n"
	"anything changes. A device bound to that same disk already is used as it\n"
	"is. If the attach fails, the bindings it made are undone.\n"
	"\n"
	"With --all-of FILE: attaches every volume FILE lists, over one admin\n"
	"connection, attaches --jobs of them at a time, and prints a line per\n"
	"volume. Each line of FILE is\n"
	"  NAME [SIZE [EXTENT_SIZE]]\n"
	"and with a SIZE the volume is created first if the node lacks it ('#'\n"
	"starts a comment). If any step fails, everything done is undone: the\n"
	"volumes it attached are detached, those it created are deleted, the\n"
	"devices it bound are unbound.\n"
	"\n"
	"By --volume-id: attaches volume ID without asking the node (no admin key\n"
	"needed); only the --bind devices are bound.\n"
	"\n"
	"With a host key the module proves it to the node on every connection, and\n"
	"the node proves it back: a node that requires hosts to authenticate admits\n"
	"no other. The key of --host-key-file (else 'host-key' in mdctl.conf) is\n"
	"put into the user keyring as the logon key mdroute:host:<host id in hex>\n"
	"(a key of that name there gets the new secret: a rotation) and the\n"
	"module gets its serial; --key-serial names a logon key this process\n"
	"possesses instead.\n"
	"\n"
	"A volume of a replica group is attached with the group: the module then\n"
	"follows the group's leader, and goes to another replica when the one it\n"
	"uses fails. By NAME (and --all-of) the node says whether it is a replica\n"
	"of a group, and which; where the replicas serve hosts (each one's\n"
	"--listen, not its log listener) comes from --replica, else from the node\n"
	"(wire version 7), else from 'replicas' in mdctl.conf when its 'group' is\n"
	"that group. By --volume-id: --group and --replica, else 'group' and\n"
	"'replicas' in mdctl.conf. --group and --replica win over what the node\n"
	"says; the --node address is one of the replicas, added when missing. A\n"
	"group needs the host's key.\n"
	"\n"
	"Options:\n"
	"  -a, --all-of FILE    attach (and create) the volumes listed in FILE\n"
	"  -i, --volume-id ID   the volume by id (non-zero)\n"
	MDCTL_NODE_OPTIONS
	"  -t, --tenant T       tenant of the volume, with --volume-id (default:\n"
	"                       'tenant' in mdctl.conf, else 0); by NAME, the\n"
	"                       volume's own, which it must match if given\n"
	"  -H, --host-id ID     this host's id at the storage node, in hex as\n"
	"                       'mdctl host id' prints it (16 digits, or 0x...).\n"
	"                       Default: 'host-id' in mdctl.conf, else derived from\n"
	"                       /etc/machine-id: the first 8 bytes, big-endian, of\n"
	"                       HMAC-SHA256 keyed with the machine id over\n"
	"                       \"mdroute-host-id\"\n"
	"  -K, --host-key-file FILE\n"
	"                       this host's key at the node: 16 to 64 bytes and\n"
	"                       maybe a newline ('mdctl host gen-key' writes one).\n"
	"                       Default: 'host-key' in mdctl.conf, else none\n"
	"  -S, --key-serial N   the serial of a logon key holding it instead\n"
	"  -g, --group ID       the volume's replica group (0: a node of its own)\n"
	"  -R, --replica ADDR[:PORT]\n"
	"                       a replica of the group, where it serves hosts\n"
	"                       (repeatable, 8 at the most)\n"
	"  -b, --bind ID=/dev/X bind backing device ID to /dev/X (repeatable)\n"
	"  -r, --read-only      attach read-only\n"
	"  -T, --timing         print where the time went to stderr (--all-of)\n"
	"  -j, --jobs N         attach N volumes at a time (--all-of; default 4)\n"
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

std::optional<int> parse_attach(const Env &env, const Common &c, AttachArgs &a)
{
	for (const mdr::ParsedOption &opt : c.options) {
		std::string value(opt.value);
		switch (opt.id) {
		case kOptVolumeId:
			a.volume_id = parse_id<uint64_t>(value);
			if (!a.volume_id)
				return usage_error(env, "bad volume id '" + value + "'");
			break;
		case kOptAllOf:
			a.all_of = value;
			break;
		case kOptTenant:
			a.tenant = parse_number<uint32_t>(value);
			if (!a.tenant)
				return usage_error(env, "bad tenant '" + value + "'");
			break;
		case kOptHostId:
			a.host_id = parse_host_id(value);
			if (!a.host_id)
				return usage_error(env, "bad host id '" + value +
							std::string(kHostIdForm));
			break;
		case kOptBind: {
			std::optional<BindSpec> spec = parse_bind_spec(value);
			if (!spec)
				return bad_binding(env, value);
			for (const BindSpec &other : a.binds)
				if (other.dev_id == spec->dev_id)
					return usage_error(env, "device " +
								std::to_string(spec->dev_id) +
								" is bound twice");
			a.binds.push_back(std::move(*spec));
			break;
		}
		case kOptHostKeyFile:
			if (value.empty())
				return usage_error(env, "--host-key-file needs a path");
			a.key.file = value;
			break;
		case kOptKeySerial:
			a.key.serial = parse_id<int32_t>(value);
			if (!a.key.serial || *a.key.serial < 0)
				return usage_error(env, "bad key serial '" + value +
							"': expected a positive number");
			break;
		case kOptGroup:
			a.group = parse_number<uint64_t>(value);
			if (!a.group)
				return usage_error(env, "bad group '" + value + "'");
			break;
		case kOptReplica:
			if (auto e = add_replica(a.replicas, value); !e.empty())
				return usage_error(env, "--replica: " + e);
			break;
		case kOptReadOnly:
			a.readonly = true;
			break;
		case kOptTiming:
			a.timing = true;
			break;
		case kOptJobs: {
			unsigned n = 0;
			if (auto done = parse_jobs(env, opt.value, n))
				return done;
			a.jobs = n;
			break;
		}
		}
	}
	if (c.operands.size() > 1)
		return unexpected_argument(env, c.operands[1]);
	if (!c.operands.empty()) {
		if (auto done = check_volume_name(env, c.operands[0]))
			return done;
		a.name = std::string(c.operands[0]);
	}
	const int ways = a.name.has_value() + a.all_of.has_value() + a.volume_id.has_value();
	if (ways == 0)
		return usage_error(env, "attach needs a volume NAME, --all-of FILE or "
					"--volume-id ID");
	if (ways > 1)
		return usage_error(env, "attach takes one of NAME, --all-of FILE and "
					"--volume-id ID");
	if (a.key.file && a.key.serial)
		return usage_error(env, "attach takes one of --host-key-file and --key-serial");
	if (a.group == 0u && !a.replicas.empty())
		return usage_error(env, "--group 0 names no replica group: --replica goes with "
					"a group's id");
	if ((a.timing || a.jobs) && !a.all_of)
		return usage_error(env, std::string(a.timing ? "--timing" : "--jobs") +
					" goes with --all-of");
	return std::nullopt;
}

void print_attached(const Env &env, Format format, const mdr::VolumeInfo &v,
		    const std::vector<uint32_t> &bound, const mdr::Group &group)
{
	if (format == Format::table) {
		env.out << device_path(v.index) << '\n';
		return;
	}
	mdr::JsonWriter json;
	json.begin_object();
	attached_volume_json(json, v);
	json.key("read_only").value((v.flags & MDR_VOL_READONLY) != 0)
		.key("host_id").value(v.target.host_id)
		.key("key_serial").value(v.target.key)
		.key("bound").begin_array();
	for (uint32_t id : bound)
		json.value(id);
	json.end_array().key("group").value(v.group).key("replicas").begin_array();
	for (const mdr::Endpoint &r : group.replicas)
		json.value(endpoint_text(r));
	json.end_array().end_object();
	env.out << json.str() << '\n';
}

// The last step of every attach: bind, attach, or undo the bindings.
int bind_and_attach(const Env &env, const std::vector<Binding> &binds, uint64_t volume_id,
		    const mdr::Target &target, const mdr::Group &group, bool readonly,
		    Format format)
{
	auto control = open_control_loading(env, "attach");
	if (!control)
		return kExitFailure;
	std::vector<uint32_t> bound;	// what to undo if the attach fails
	if (!bind_devices(env, "attach", *control, binds, bound)) {
		unbind_all(env, *control, bound);
		return kExitFailure;
	}
	auto attached = control->attach(volume_id, target, readonly, group);
	if (!attached.ok()) {
		failure(env, "attach", attached, attach_failure_hint(attached, target));
		unbind_all(env, *control, bound);
		return kExitFailure;
	}
	print_attached(env, format, attached.value(), bound, group);
	return kExitOk;
}

int cmd_attach(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {
		{kOptVolumeId, "volume-id", 'i', true},
		{kOptAllOf, "all-of", 'a', true},
		kNodeOption,
		kKeyFileOption,
		{kOptTenant, "tenant", 't', true},
		{kOptHostId, "host-id", 'H', true},
		{kOptHostKeyFile, "host-key-file", 'K', true},
		{kOptKeySerial, "key-serial", 'S', true},
		{kOptGroup, "group", 'g', true},
		{kOptReplica, "replica", 'R', true},
		{kOptBind, "bind", 'b', true},
		{kOptReadOnly, "read-only", 'r', false},
		{kOptTiming, "timing", 'T', false},
		{kOptJobs, "jobs", 'j', true},
		kOutputOption,
		kHelpOption,
	};
	AttachArgs a;
	Common c;
	NodeSettings ns;

	if (auto done = parse_common(args, specs, kAttachUsage, env, c))
		return *done;
	if (auto done = parse_attach(env, c, a))
		return *done;
	if (auto done = node_settings(env, "attach", c, ns))
		return *done;
	std::optional<uint64_t> host_id = resolve_host_id(env, "attach", a.host_id, ns.config);
	if (!host_id)
		return kExitFailure;
	mdr::Target target = ns.target;
	target.host_id = *host_id;
	// Into the keyring before the node is asked: a key file that cannot
	// be used fails the attach before anything is looked up or created.
	std::optional<int32_t> key = host_key_serial(env, "attach", a.key, ns.config, *host_id);
	if (!key)
		return kExitFailure;
	target.key = *key;

	if (a.all_of)
		return attach_all_of(env, c, a, ns, target);

	if (a.volume_id) {
		// Every block device is looked up before anything changes.
		std::vector<Binding> binds;
		for (const BindSpec &b : a.binds) {
			std::optional<mdr::DevNum> dev = block_device(env, "attach", b.path);
			if (!dev)
				return kExitFailure;
			binds.push_back({b.dev_id, b.path, *dev});
		}
		target.tenant = a.tenant.value_or(ns.config.tenant.value_or(0));
		mdr::Group group;
		if (auto done = resolve_group(env, a, ns, nullptr, target, group))
			return *done;
		return bind_and_attach(env, binds, *a.volume_id, target, group, a.readonly,
				       c.format);
	}

	// By name: what the node says first, nothing changed until it is known.
	std::unique_ptr<NodeSession> node = open_node(env, "attach", ns);
	if (!node)
		return kExitFailure;
	auto info = rpc<mdr::wire::VolInfoRep>(*node, mdr::wire::VolInfoReq{*a.name});
	if (!info.ok())
		return rpc_failure(env, "attach", info, "volume '" + *a.name + "'", ns.target);
	const mdr::wire::Volume &vol = info.value().vol;
	if (a.tenant && *a.tenant != vol.tenant)
		return failure(env, "attach", -EPERM,
			       "volume '" + vol.name + "' is of tenant " + std::to_string(vol.tenant) +
				       ", not " + std::to_string(*a.tenant),
			       "leave --tenant out: the volume's own is used");
	BindPlan plan;
	if (auto done = plan_bindings(env, *node, a, ns, plan))
		return *done;
	if (auto done = check_reachable(env, "attach", info.value(), plan))
		return *done;
	mdr::Group group;
	if (auto done = resolve_group(env, a, ns, node.get(), target, group))
		return *done;
	node.reset();	// the admin connection is not needed any more
	note_missing(env, "attach", plan);
	target.tenant = vol.tenant;
	return bind_and_attach(env, plan.binds, vol.volume_id, target, group, a.readonly,
			       c.format);
}

const Registration kRegistered[] = {
	{top(Place::attach, "attach", "attach a volume as /dev/mdrN", cmd_attach)},
};

} // namespace

} // namespace mdctl
