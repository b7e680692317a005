// SPDX-License-Identifier: GPL-2.0
//
// migrate.cc - the commands that move extents while hosts use them:
// mdctl migrate (extents of one volume, MOVE) and mdctl dev drain (every
// extent of a device, DRAIN). They share the long --timeout of a move and
// its hints.
#include <algorithm>
#include <cerrno>
#include <optional>
#include <string>
#include <vector>

#include <linux/mdroute_wire.h>

#include "lib/util/errors.h"
#include "lib/util/json.h"
#include "lib/wire/wire.h"
#include "mdctl/cli.h"
#include "mdctl/parse.h"
#include "mdctl/session.h"

namespace mdctl {

namespace {

enum MoveOption { kOptExtent = kOptOwn, kOptToDev, kOptTimeout };

// A move waits for every lease holder to drain (up to a lease and its margin
// when one is silent) and copies extents of 4 MiB and more: far longer than
// the 5 s of one ordinary request, under emulation above all.
constexpr int kMoveTimeoutDefaultS = 600;

#define MDCTL_TIMEOUT_OPTION							\
	"      --timeout SECONDS\n"						\
	"                       how long one request to the node may take, 1 to\n"	\
	"                       86400 (default 600): a move waits for the hosts\n"	\
	"                       to drain and copies the data before it answers\n"

constexpr mdr::OptionSpec kTimeoutOption = {kOptTimeout, "timeout", 0, true};

// The hint for a failed MOVE or DRAIN.
std::string move_hint(int err, std::string_view name, uint32_t to_dev, const mdr::Target &target)
{
	switch (err) {
	case -ENOENT:
		return "see 'mdctl volume list' and 'mdctl dev list'";
	case -EINVAL:
		return "see 'mdctl volume info " + std::string(name) + "'";
	case -EBUSY:
		return "another move or an allocation holds an extent; try again";
	case -ENOSPC:
		return "device " + std::to_string(to_dev) +
		       " has too few free extents; see 'mdctl dev list'";
	case -EIO:
		return "the node could not copy or journal a move; see mdnode's log";
	case -ETIMEDOUT:
		return "the node may still be moving; raise --timeout, and see "
		       "'mdctl node stats'";
	default:
		return node_hint(err, target);
	}
}

// What moves cost, as both commands report it: the bytes copied and the
// stalls of IO to the extents while they moved.
void move_costs(mdr::JsonWriter &json, uint64_t bytes, uint64_t stall_max_us,
		uint64_t stall_total_us)
{
	json.key("bytes").value(bytes)
		.key("stall_max_us").value(stall_max_us)
		.key("stall_total_us").value(stall_total_us);
}

// "moved 3 extents (12 MiB)"
std::string moved_text(uint64_t moved, uint64_t bytes)
{
	return "moved " + std::to_string(moved) + " extent" + (moved == 1 ? "" : "s") + " (" +
	       format_size(bytes) + ")";
}

// "stall max 1.2 ms, total 3.4 ms"
std::string stalls_text(uint64_t stall_max_us, uint64_t stall_total_us)
{
	return "stall max " + format_ms(stall_max_us) + " ms, total " + format_ms(stall_total_us) +
	       " ms";
}

constexpr std::string_view kMigrateUsage =
	"Usage: mdctl migrate NAME --extent N[-M] --to-dev ID [--timeout SECONDS]\n"
	"                     [--node ADDR[:PORT]] [--key-file FILE] [-o json]\n"
	"\n"
	"Move extents N to M (both included) of volume NAME to backing device ID\n"
	"of the same storage node, while hosts keep using the volume: IO to an\n"
	"extent waits while it moves (its stall). The node takes up to 64 extents\n"
	"a request; a longer range is sent in batches, one after another.\n"
	"Extents with nothing to move (never written, or on device ID already)\n"
	"are skipped. Prints each extent: moved or skipped, from where to where,\n"
	"the bytes copied and its stall. If a batch fails, the extents before it\n"
	"stay moved, and those of the batch that moved before the failure too.\n"
	"\n"
	"Options:\n"
	"  -x, --extent N[-M]   the extents, first to last (both included)\n"
	"  -d, --to-dev ID      the device to move them to (non-zero)\n"
	MDCTL_TIMEOUT_OPTION
	MDCTL_NODE_OPTIONS
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

// What became of one extent of a migrate.
struct ExtentResult {
	uint64_t index;
	std::optional<mdr::wire::MovedExtent> moved;	// nullopt: skipped
};

struct MigrateReport {
	std::string name;
	uint64_t volume_id = 0;
	uint32_t to_dev = 0;
	uint64_t extent_bytes = 0;
	std::vector<ExtentResult> extents;
	uint64_t moved = 0, skipped = 0, bytes = 0, stall_max_us = 0, stall_total_us = 0;

	void add(const mdr::wire::MovedExtent &x)
	{
		extents.push_back({x.index, x});
		moved++;
		bytes += extent_bytes;
		stall_max_us = std::max<uint64_t>(stall_max_us, x.stall_us);
		stall_total_us += x.stall_us;
	}
	void skip(uint64_t index)
	{
		extents.push_back({index, std::nullopt});
		skipped++;
	}
};

void print_migrate(const Env &env, Format format, const MigrateReport &r,
		   std::optional<int> error)
{
	if (format == Format::json) {
		mdr::JsonWriter json;
		json.begin_object()
			.key("volume").value(r.name)
			.key("volume_id").value(r.volume_id)
			.key("to_dev").value(r.to_dev)
			.key("moved").value(r.moved)
			.key("skipped").value(r.skipped);
		move_costs(json, r.bytes, r.stall_max_us, r.stall_total_us);
		if (error)
			json.key("error").value(mdr::errno_name(-*error));
		json.key("extents").begin_array();
		for (const ExtentResult &e : r.extents) {
			json.begin_object().key("index").value(e.index);
			if (!e.moved) {
				json.key("result").value("skipped").end_object();
				continue;
			}
			const mdr::wire::MovedExtent &x = *e.moved;
			json.key("result").value("moved")
				.key("old_dev").value(x.old_dev)
				.key("old_pstart").value(x.old_pstart)
				.key("new_dev").value(x.new_dev)
				.key("new_pstart").value(x.new_pstart)
				.key("generation").value(x.generation)
				.key("bytes").value(r.extent_bytes)
				.key("stall_us").value(x.stall_us)
				.end_object();
		}
		json.end_array().end_object();
		env.out << json.str() << '\n';
		return;
	}
	Table table({{"EXTENT", true}, {"RESULT", false}, {"FROM", true}, {"TO", true},
		     {"BYTES", true}, {"STALL_MS", true}});
	for (const ExtentResult &e : r.extents) {
		if (!e.moved) {
			table.add({std::to_string(e.index), "skipped", "-", "-", "-", "-"});
			continue;
		}
		table.add({std::to_string(e.index), "moved", std::to_string(e.moved->old_dev),
			   std::to_string(e.moved->new_dev), format_size(r.extent_bytes),
			   format_ms(e.moved->stall_us)});
	}
	if (!r.extents.empty())
		table.print(env.out);
	env.out << moved_text(r.moved, r.bytes) << " of volume '" << r.name << "' to device "
		<< r.to_dev << ", skipped " << r.skipped << "; "
		<< stalls_text(r.stall_max_us, r.stall_total_us) << '\n';
}

// One MOVE of extents [first, first + count); a refusal of the batch as
// invalid (an extent has nothing to move) is retried extent by extent, and
// the extents the node refuses alone as invalid are skipped.
mdr::Status move_batch(NodeSession &node, MigrateReport &r, uint64_t first, uint32_t count,
		       int timeout_ms)
{
	mdr::wire::MoveReq req;
	req.volume_id = r.volume_id;
	req.first = first;
	req.count = count;
	req.to_dev = r.to_dev;
	auto rep = rpc<mdr::wire::MoveRep>(node, req, timeout_ms);
	if (rep.ok()) {
		if (rep.value().extents.size() != count)
			return mdr::Error(-EPROTO, "mdnode's reply to MOVE lacks extents");
		for (const mdr::wire::MovedExtent &x : rep.value().extents) {
			if (x.index < first || x.index - first >= count)
				return mdr::Error(-EPROTO, "mdnode moved another extent");
			r.add(x);
		}
		return {};
	}
	if (rep.error() != -EINVAL)
		return mdr::Error(rep.error(), rep.message());
	if (count == 1) {
		r.skip(first);
		return {};
	}
	for (uint32_t i = 0; i < count; i++)
		if (auto st = move_batch(node, r, first + i, 1, timeout_ms); !st.ok())
			return st;
	return {};
}

int cmd_migrate(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {
		{kOptExtent, "extent", 'x', true}, {kOptToDev, "to-dev", 'd', true},
		kTimeoutOption, kNodeOption, kKeyFileOption, kOutputOption, kHelpOption,
	};
	constexpr std::string_view command = "migrate";
	std::optional<ExtentRange> range;
	std::optional<uint32_t> dev;
	int timeout_ms = kMoveTimeoutDefaultS * 1000;
	Common c;
	NodeSettings ns;
	std::unique_ptr<NodeSession> node;

	auto check = [&]() -> std::optional<int> {
		if (auto done = volume_operand(env, c, "migrate needs a volume NAME"))
			return done;
		for (const mdr::ParsedOption &opt : c.options) {
			int status = kExitUsage;
			if (opt.id == kOptExtent) {
				range = parse_extent_range(opt.value);
				// the last index + 1 is the end of the range: it must fit
				if (!range || range->last == UINT64_MAX)
					return usage_error(env, "bad extent range '" +
								std::string(opt.value) +
								"': expected N or N-M with M >= N");
			} else if (opt.id == kOptToDev) {
				dev = parse_id<uint32_t>(opt.value);
				if (!dev)
					return usage_error(env, "bad device id '" +
								std::string(opt.value) + "'");
			} else if (opt.id == kOptTimeout) {
				std::optional<int> t = parse_timeout(env, opt.value, status);
				if (!t)
					return status;
				timeout_ms = *t;
			}
		}
		if (!range)
			return usage_error(env, "migrate needs --extent N[-M]");
		if (!dev)
			return usage_error(env, "migrate needs --to-dev ID");
		return std::nullopt;
	};
	if (auto done = node_command(args, specs, kMigrateUsage, command, env, c, ns, node, check))
		return *done;

	MigrateReport r;
	r.name = std::string(c.operands[0]);
	r.to_dev = *dev;
	mdr::wire::VolInfoReq info;
	info.name = r.name;
	auto vol = rpc<mdr::wire::VolInfoRep>(*node, info);
	if (!vol.ok())
		return rpc_failure(env, command, vol, "volume '" + r.name + "'", ns.target);
	const mdr::wire::Volume &v = vol.value().vol;
	const uint64_t extents = ((v.size - 1) >> v.extent_shift) + 1;
	if (range->last >= extents) {
		env.err << "mdctl: " << command << " failed: volume '" << r.name << "' has extents 0-"
			<< extents - 1 << ", not " << range->first << '-' << range->last << '\n';
		return kExitFailure;
	}
	r.volume_id = v.volume_id;
	r.extent_bytes = extent_bytes(v.extent_shift);

	for (uint64_t first = range->first; first <= range->last;) {
		const auto count = static_cast<uint32_t>(
			std::min<uint64_t>(range->last - first + 1, MDR_WIRE_MOVE_MAX));
		auto st = move_batch(*node, r, first, count, timeout_ms);
		if (!st.ok()) {
			// What moved before the failure stays moved: it is told.
			if (c.format == Format::json || !r.extents.empty())
				print_migrate(env, c.format, r, st.error());
			std::string context = "extents " + std::to_string(first) + '-' +
					      std::to_string(first + count - 1) + " of volume '" +
					      r.name + "'";
			if (!st.message().empty() && !st.message().starts_with("MDR_ST_"))
				context += ": " + st.message();
			return failure(env, command, st.error(), context,
				       move_hint(st.error(), r.name, r.to_dev, ns.target));
		}
		first += count;
	}
	print_migrate(env, c.format, r, std::nullopt);
	return kExitOk;
}

constexpr std::string_view kDevDrainUsage =
	"Usage: mdctl dev drain ID [--to-dev ID] [--timeout SECONDS]\n"
	"                      [--node ADDR[:PORT]] [--key-file FILE] [-o json]\n"
	"\n"
	"Move every extent of every volume off backing device ID, while hosts\n"
	"keep using the volumes. Each goes to --to-dev, else to the other device\n"
	"with the most free space. The node moves them one after another and\n"
	"answers when done, with the extents moved and those still on the device\n"
	"(another request was moving them, or a move failed): then it fails.\n"
	"The device may take new extents again afterwards.\n"
	"\n"
	"Options:\n"
	"  -d, --to-dev ID      the device to move them to (default: any other)\n"
	MDCTL_TIMEOUT_OPTION
	MDCTL_NODE_OPTIONS
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

int cmd_dev_drain(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {
		{kOptToDev, "to-dev", 'd', true}, kTimeoutOption, kNodeOption, kKeyFileOption,
		kOutputOption, kHelpOption,
	};
	constexpr std::string_view command = "dev drain";
	mdr::wire::DrainReq req;
	int timeout_ms = kMoveTimeoutDefaultS * 1000;
	Common c;
	NodeSettings ns;
	std::unique_ptr<NodeSession> node;

	auto check = [&]() -> std::optional<int> {
		if (auto done = operands(env, c, 1, "dev drain needs a device ID"))
			return done;
		std::optional<uint32_t> id = parse_id<uint32_t>(c.operands[0]);
		if (!id)
			return usage_error(env, "bad device id '" + std::string(c.operands[0]) + "'");
		req.dev_id = *id;
		for (const mdr::ParsedOption &opt : c.options) {
			int status = kExitUsage;
			if (opt.id == kOptToDev) {
				std::optional<uint32_t> to = parse_id<uint32_t>(opt.value);
				if (!to || *to == req.dev_id)
					return usage_error(env, "bad device id '" +
								std::string(opt.value) +
								"': expected another device");
				req.to_dev = *to;
			} else if (opt.id == kOptTimeout) {
				std::optional<int> t = parse_timeout(env, opt.value, status);
				if (!t)
					return status;
				timeout_ms = *t;
			}
		}
		return std::nullopt;
	};
	if (auto done = node_command(args, specs, kDevDrainUsage, command, env, c, ns, node, check))
		return *done;
	auto rep = rpc<mdr::wire::DrainRep>(*node, req, timeout_ms);
	if (!rep.ok())
		return failure(env, command, rep.error(), "device " + std::to_string(req.dev_id),
			       move_hint(rep.error(), {}, req.to_dev, ns.target));
	const mdr::wire::DrainRep &r = rep.value();
	const int err = r.status != MDR_ST_OK ? mdr::wire::status_to_errno(r.status)
			: r.remaining ? -EBUSY : 0;
	if (c.format == Format::json) {
		mdr::JsonWriter json;
		json.begin_object()
			.key("dev_id").value(r.dev_id)
			.key("to_dev").value(req.to_dev)
			.key("moved").value(r.moved)
			.key("remaining").value(r.remaining);
		move_costs(json, r.bytes, r.stall_max_us, r.stall_total_us);
		json.key("status").value(mdr::wire::status_name(r.status)).end_object();
		env.out << json.str() << '\n';
	} else {
		env.out << "drained device " << r.dev_id << ": " << moved_text(r.moved, r.bytes)
			<< ", " << r.remaining << " remaining; "
			<< stalls_text(r.stall_max_us, r.stall_total_us) << '\n';
	}
	if (!err)
		return kExitOk;
	return failure(env, command, err,
		       "device " + std::to_string(r.dev_id) + ": " + std::to_string(r.remaining) +
			       " extent" + (r.remaining == 1 ? "" : "s") + " remain",
		       r.status != MDR_ST_OK ? move_hint(err, {}, req.to_dev, ns.target)
					     : "other requests were moving them; run it again");
}

const Registration kRegistered[] = {
	{top(Place::migrate, "migrate", "move extents of a volume to another device", cmd_migrate)},
	{sub("dev", 2, "drain", "move every extent off a device", cmd_dev_drain)},
};

} // namespace

} // namespace mdctl
