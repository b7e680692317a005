// SPDX-License-Identifier: GPL-2.0
//
// stats.cc - mdctl stats: the kernel's counters on this host. One volume's
// attributes of /sys/block/mdrN/mdroute/ as a table or JSON; or, with
// --prometheus, those of every attached volume and the connections of
// /sys/kernel/debug/mdroute/connections/ in Prometheus' text format, for
// node_exporter's textfile collector (Documentation/mdctl.md says how).
//
// Everything read here is the kernel's text, and read as untrusted: a
// value that does not parse is left out (a name becomes a label value,
// escaped), a file that cannot be read is skipped, and an attribute this
// mdctl does not know yet is still shown, as an untyped sample named after
// it when its name fits the format.
#include <algorithm>
#include <cerrno>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lib/util/json.h"
#include "lib/util/prometheus.h"
#include "mdctl/cli.h"
#include "mdctl/parse.h"

namespace mdctl {

namespace {

namespace prom = mdr::prom;

constexpr std::string_view kSysBlock = "/sys/block";
constexpr std::string_view kDebugConns = "/sys/kernel/debug/mdroute/connections";

std::string sysfs_dir(uint32_t index)
{
	return std::string(kSysBlock) + "/mdr" + std::to_string(index) + "/mdroute";
}

constexpr std::string_view kStatsUsage =
	"Usage: mdctl stats DEV [-o|--output table|json]\n"
	"       mdctl stats --prometheus [DEV]\n"
	"\n"
	"Show every attribute of /sys/block/mdrN/mdroute/ for the volume at DEV\n"
	"(/dev/mdrN, mdrN or N): what it is (volume_id, name, extent_size, tenant,\n"
	"lease) and its counters. Reading them needs no privilege.\n"
	"\n"
	"With --prometheus, print them in Prometheus' text format for every\n"
	"attached volume (DEV: that one alone), with the counters of each\n"
	"connection to a storage node from /sys/kernel/debug/mdroute/ (root, with\n"
	"debugfs mounted), for node_exporter's textfile collector.\n"
	"\n"
	"Options:\n"
	"      --prometheus     Prometheus text format (version 0.0.4)\n"
	"  -o, --output FORMAT  table (default) or json\n"
	"  -h, --help           show this help\n";

enum StatsOption { kOptPrometheus = kOptOwn };

constexpr mdr::OptionSpec kStatsOptions[] = {
	kOutputOption, kHelpOption, {kOptPrometheus, "prometheus", 0, false},
};

using Attrs = std::vector<std::pair<std::string, std::string>>;

// name -> value as read, without the newline, sorted by name.
mdr::Result<Attrs> read_attrs(const Env &env, const std::string &dir)
{
	auto names = env.host.list_dir(dir);
	Attrs attrs;

	if (!names.ok())
		return mdr::Error(names.error(), dir);
	std::ranges::sort(names.value());
	for (const std::string &name : names.value()) {
		auto text = env.host.read_file(dir + '/' + name);
		if (!text.ok())
			return mdr::Error(text.error(), dir + '/' + name);
		std::string value = std::move(text).value();
		if (value.ends_with('\n'))
			value.pop_back();
		attrs.emplace_back(name, std::move(value));
	}
	return attrs;
}

// A decimal counter or gauge; nullopt for anything else ("0x..", text).
std::optional<uint64_t> number(std::string_view value)
{
	if (value.starts_with("0x"))
		return std::nullopt;
	return parse_number<uint64_t>(value);
}

// ---------------------------------------------------------------------------
// Prometheus: what each attribute is.

enum class Kind { counter, gauge, ms_gauge };

struct AttrMetric {
	std::string_view attr;		// the sysfs or debugfs name
	std::string_view metric;
	Kind kind;
	std::string_view help;
};

// /sys/block/mdrN/mdroute/ (Documentation/volumes.md, "Observability").
// volume_id, name, tenant and lease are mdroute_volume_info's labels and
// mdroute_volume_lease_valid.
constexpr AttrMetric kVolumeAttrs[] = {
	{"extent_size", "mdroute_volume_extent_size_bytes", Kind::gauge, "Size of the volume's extents."},
	{"cached", "mdroute_volume_cached_extents", Kind::gauge, "Locations (and tombstones) in the cache."},
	{"inflight", "mdroute_volume_inflight_ios", Kind::gauge, "IOs at the backing devices."},
	{"parked", "mdroute_volume_parked_bios", Kind::gauge, "Bios waiting for the storage node."},
	{"lease_lapse_io_ms", "mdroute_volume_lease_lapse_io_seconds", Kind::ms_gauge,
	 "Longest an IO of a lease that ran out completed after its deadline."},
	{"revalidate_period_ms", "mdroute_volume_revalidate_period_seconds", Kind::ms_gauge,
	 "Background revalidation period now (0: disabled)."},
	{"cache_hits", "mdroute_volume_cache_hits_total", Kind::counter, "Lookups the cache answered."},
	{"cache_misses", "mdroute_volume_cache_misses_total", Kind::counter, "Lookups that went to the storage node."},
	{"stale", "mdroute_volume_stale_total", Kind::counter, "Entries refused as older than one seen."},
	{"evictions", "mdroute_volume_evictions_total", Kind::counter, "Entries evicted from the cache."},
	{"zero_reads", "mdroute_volume_zero_reads_total", Kind::counter, "Reads of unallocated extents answered with zeros."},
	{"allocations", "mdroute_volume_allocations_total", Kind::counter, "Extents allocated by this host's writes."},
	{"deferred", "mdroute_volume_deferred_total", Kind::counter, "Bios deferred (frozen extent, invalidation, no lease)."},
	{"reads", "mdroute_volume_reads_total", Kind::counter, "Read bios."},
	{"writes", "mdroute_volume_writes_total", Kind::counter, "Write bios."},
	{"discards", "mdroute_volume_discards_total", Kind::counter, "Discard bios."},
	{"write_zeroes", "mdroute_volume_write_zeroes_total", Kind::counter, "Write-zeroes bios."},
	{"read_bytes", "mdroute_volume_read_bytes_total", Kind::counter, "Bytes read."},
	{"write_bytes", "mdroute_volume_write_bytes_total", Kind::counter, "Bytes written."},
	{"discard_bytes", "mdroute_volume_discard_bytes_total", Kind::counter, "Bytes discarded."},
	{"write_zeroes_bytes", "mdroute_volume_write_zeroes_bytes_total", Kind::counter, "Bytes zeroed."},
	{"flushes", "mdroute_volume_flushes_total", Kind::counter, "Flushes."},
	{"errors", "mdroute_volume_errors_total", Kind::counter, "Bios completed with an error."},
	{"unbound_device_errors", "mdroute_volume_unbound_device_errors_total", Kind::counter,
	 "Bios failed for a device id not bound on this host."},
	{"revalidations", "mdroute_volume_revalidations_total", Kind::counter, "Revalidation passes that issued READs."},
	{"revalidate_reads", "mdroute_volume_revalidate_reads_total", Kind::counter, "READs of revalidation passes."},
	{"revalidated_entries", "mdroute_volume_revalidated_entries_total", Kind::counter,
	 "Answers compared with a cached entry."},
	{"stale_found", "mdroute_volume_stale_found_total", Kind::counter, "Cached entries revalidation found stale."},
	{"stale_found_frozen", "mdroute_volume_stale_found_frozen_total", Kind::counter,
	 "Of those, answers that were FROZEN."},
};
constexpr std::string_view kVolumeLabels[] = {"volume_id", "name", "tenant", "lease"};

// A connection's file under debugfs (Documentation/transport.md).
constexpr AttrMetric kConnAttrs[] = {
	{"volumes", "mdroute_conn_volumes", Kind::gauge, "Volumes using the connection."},
	{"pending", "mdroute_conn_pending_requests", Kind::gauge, "Requests waiting for an answer or a slot."},
	{"queue_depth", "mdroute_conn_queue_depth", Kind::gauge, "Requests the node granted in flight."},
	{"push_credits", "mdroute_conn_push_credits", Kind::gauge, "Pushes the node may have unacked."},
	{"version", "mdroute_conn_wire_version", Kind::gauge, "Wire version negotiated."},
	{"reads", "mdroute_conn_reads_total", Kind::counter, "One-sided READs of entries completed."},
	{"read_entries", "mdroute_conn_read_entries_total", Kind::counter, "Entries delivered by READs."},
	{"torn", "mdroute_conn_torn_total", Kind::counter, "Windows read again, torn."},
	{"bad_entries", "mdroute_conn_bad_entries_total", Kind::counter, "Entries that failed verification."},
	{"rpcs", "mdroute_conn_rpcs_total", Kind::counter, "RPCs answered."},
	{"rpc_errors", "mdroute_conn_rpc_errors_total", Kind::counter, "RPCs answered with an error."},
	{"retries", "mdroute_conn_retries_total", Kind::counter, "RPCs sent again."},
	{"timeouts", "mdroute_conn_timeouts_total", Kind::counter, "RPCs that timed out."},
	{"read_timeouts", "mdroute_conn_read_timeouts_total", Kind::counter, "READs that timed out."},
	{"late", "mdroute_conn_late_total", Kind::counter, "Replies to RPCs re-sent or abandoned."},
	{"reconnects", "mdroute_conn_reconnects_total", Kind::counter, "Reconnections."},
	{"connect_failures", "mdroute_conn_connect_failures_total", Kind::counter, "Connection attempts that failed."},
	{"invalidations", "mdroute_conn_invalidations_total", Kind::counter, "Invalidations received."},
	{"bad_messages", "mdroute_conn_bad_messages_total", Kind::counter, "Messages refused."},
	{"failed_fast", "mdroute_conn_failed_fast_total", Kind::counter, "Requests failed by fast_io_fail_tmo."},
	{"lease_expiries", "mdroute_conn_lease_expiries_total", Kind::counter, "Leases that ran out."},
	{"batch_renewals", "mdroute_conn_batch_renewals_total", Kind::counter, "RENEWs of every lease at once."},
	{"auth_failures", "mdroute_conn_auth_failures_total", Kind::counter, "Proofs of the node refused or missing."},
};
// debugfs' lookup_us buckets: "<16" ... "<16384" (µs), then ">=16384".
constexpr uint64_t kLookupBoundsUs[] = {16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};

const AttrMetric *find_attr(std::span<const AttrMetric> table, std::string_view attr)
{
	for (const AttrMetric &a : table)
		if (a.attr == attr)
			return &a;
	return nullptr;
}

// One family of one attribute across every volume or connection: each
// source is its labels and its attributes.
struct Source {
	std::vector<std::pair<std::string, std::string>> labels;
	std::map<std::string, std::string, std::less<>> attrs;
};

std::vector<prom::Label> labels_of(const Source &s)
{
	std::vector<prom::Label> l;

	for (const auto &[k, v] : s.labels)
		l.push_back({k, v});
	return l;
}

void family(prom::Writer &w, const AttrMetric &a, const std::vector<Source> &sources)
{
	bool declared = false;

	for (const Source &s : sources) {
		auto it = s.attrs.find(a.attr);
		if (it == s.attrs.end())
			continue;
		std::optional<uint64_t> v = number(it->second);
		if (!v)
			continue;
		if (!std::exchange(declared, true))
			w.family(a.metric, a.help,
				 a.kind == Kind::counter ? prom::Type::counter : prom::Type::gauge);
		const std::vector<prom::Label> l = labels_of(s);
		if (a.kind == Kind::ms_gauge)
			w.sample_double(a.metric, l, double(*v) / 1000);
		else
			w.sample(a.metric, l, *v);
	}
}

// Numeric attributes no table knows (a newer kernel's), whose name makes
// a valid metric name: untyped samples, so that nothing the kernel shows
// is lost; skip names what the caller shows otherwise. A name that would
// clash with a family written already (node_exporter's textfile collector
// refuses a whole file over a family declared twice) is left out.
void unknown(prom::Writer &w, std::string_view prefix, std::span<const AttrMetric> table,
	     std::span<const std::string_view> skip, const std::vector<Source> &sources)
{
	std::set<std::string, std::less<>> names;

	for (const Source &s : sources)
		for (const auto &[name, value] : s.attrs)
			if (!find_attr(table, name) && !std::ranges::count(skip, name) &&
			    number(value) && prom::valid_metric_name(std::string(prefix) + name))
				names.insert(name);
	// In name order, so that of two unknown ones, x and x_total, the
	// second is found taken by the first.
	for (const std::string &name : names) {
		const std::string metric = std::string(prefix) + name;
		bool declared = false;

		if (w.taken(metric))
			continue;

		for (const Source &s : sources) {
			auto it = s.attrs.find(name);
			std::optional<uint64_t> v;
			if (it == s.attrs.end() || !(v = number(it->second)))
				continue;
			if (!std::exchange(declared, true))
				w.family(metric, "The kernel's attribute " + name +
							 ", not known to this mdctl.",
					 prom::Type::untyped);
			w.sample(metric, labels_of(s), *v);
		}
	}
}

// The indices of /sys/block/mdrN, ascending.
std::vector<uint32_t> attached(const Env &env)
{
	std::vector<uint32_t> out;
	auto names = env.host.list_dir(std::string(kSysBlock));

	if (!names.ok())
		return out;
	for (const std::string &n : names.value())
		if (n.starts_with("mdr"))
			if (auto i = parse_number<uint32_t>(std::string_view(n).substr(3)))
				out.push_back(*i);
	std::ranges::sort(out);
	return out;
}

std::optional<Source> volume_source(const Env &env, uint32_t index)
{
	auto attrs = read_attrs(env, sysfs_dir(index));

	if (!attrs.ok())
		return std::nullopt;	// detached meanwhile, or not ours
	Source s;
	s.labels.emplace_back("device", "mdr" + std::to_string(index));
	for (auto &[k, v] : attrs.value())
		s.attrs.emplace(k, std::move(v));
	auto id = s.attrs.find("volume_id");
	s.labels.emplace_back("volume_id", id != s.attrs.end() ? id->second : "");
	return s;
}

// "target: 192.0.2.2:4791 tenant 1 host 0000000000000091"
bool parse_target(std::string_view v, Source &s)
{
	const size_t t = v.find(" tenant "), h = v.find(" host ");

	if (t == std::string_view::npos || h == std::string_view::npos || h < t)
		return false;
	s.labels.emplace_back("node", std::string(v.substr(0, t)));
	s.labels.emplace_back("tenant", std::string(v.substr(t + 8, h - t - 8)));
	s.labels.emplace_back("host_id", std::string(v.substr(h + 6)));
	return true;
}

// "lookup_us: <16:3 <32:0 ... >=16384:0" into per-bucket counts;
// nullopt unless every bucket is there, in order.
std::optional<std::vector<uint64_t>> parse_lookups(std::string_view v)
{
	std::vector<uint64_t> counts;

	while (!v.empty()) {
		while (v.starts_with(' '))
			v.remove_prefix(1);
		const size_t end = std::min(v.find(' '), v.size());
		std::string_view item = v.substr(0, end);
		v.remove_prefix(end);
		if (item.empty())
			continue;
		const size_t colon = item.rfind(':');
		const std::string want = counts.size() < std::size(kLookupBoundsUs)
			? "<" + std::to_string(kLookupBoundsUs[counts.size()])
			: ">=" + std::to_string(kLookupBoundsUs[std::size(kLookupBoundsUs) - 1]);
		if (colon == std::string_view::npos || item.substr(0, colon) != want)
			return std::nullopt;
		auto n = number(item.substr(colon + 1));
		if (!n)
			return std::nullopt;
		counts.push_back(*n);
	}
	if (counts.size() != std::size(kLookupBoundsUs) + 1)
		return std::nullopt;
	return counts;
}

// A connection's debugfs file: "key: value" lines.
std::optional<Source> conn_source(const Env &env, const std::string &name)
{
	auto text = env.host.read_file(std::string(kDebugConns) + "/" + name);
	Source s;

	if (!text.ok())
		return std::nullopt;
	std::string_view rest = text.value();
	while (!rest.empty()) {
		const size_t nl = std::min(rest.find('\n'), rest.size());
		std::string_view line = rest.substr(0, nl);
		rest.remove_prefix(std::min(nl + 1, rest.size()));
		const size_t colon = line.find(": ");
		if (colon == std::string_view::npos)
			continue;
		s.attrs.emplace(std::string(line.substr(0, colon)),
				std::string(line.substr(colon + 2)));
	}
	auto target = s.attrs.find("target");
	if (target == s.attrs.end() || !parse_target(target->second, s))
		return std::nullopt;
	return s;
}

int print_prometheus(const Env &env, std::optional<uint32_t> only)
{
	prom::Writer w;
	std::vector<Source> vols, conns;

	for (uint32_t i : only ? std::vector<uint32_t>{*only} : attached(env))
		if (auto s = volume_source(env, i))
			vols.push_back(std::move(*s));
	if (only && vols.empty())
		return failure(env, "stats", -ENOENT, device_path(*only),
			       "no volume is attached there; see 'mdctl list'");

	w.family("mdroute_volumes_attached", "Volumes attached on this host.", prom::Type::gauge);
	w.sample("mdroute_volumes_attached", {}, vols.size());
	if (!vols.empty()) {
		w.family("mdroute_volume_info", "A volume attached here: its name and tenant.",
			 prom::Type::gauge);
		for (const Source &s : vols) {
			auto attr = [&](const char *k) {
				auto it = s.attrs.find(k);
				return it == s.attrs.end() ? std::string_view() : std::string_view(it->second);
			};
			w.sample("mdroute_volume_info",
				 {{"device", s.labels[0].second}, {"volume_id", s.labels[1].second},
				  {"name", attr("name")}, {"tenant", attr("tenant")}}, 1);
		}
		w.family("mdroute_volume_lease_valid", "1 while the host holds the volume's lease.",
			 prom::Type::gauge);
		for (const Source &s : vols) {
			auto it = s.attrs.find("lease");
			const std::vector<prom::Label> l = labels_of(s);
			w.sample("mdroute_volume_lease_valid", l,
				 it != s.attrs.end() && it->second == "valid");
		}
	}
	for (const AttrMetric &a : kVolumeAttrs)
		family(w, a, vols);
	unknown(w, "mdroute_volume_", kVolumeAttrs, kVolumeLabels, vols);

	if (!only) {
		auto names = env.host.list_dir(std::string(kDebugConns));
		w.family("mdroute_debugfs_readable",
			 "1 when the connections in debugfs could be read (root, debugfs "
			 "mounted, module loaded).", prom::Type::gauge);
		w.sample("mdroute_debugfs_readable", {}, names.ok());
		if (names.ok()) {
			std::ranges::sort(names.value());
			for (const std::string &n : names.value())
				if (auto s = conn_source(env, n))
					conns.push_back(std::move(*s));
		}
	}
	if (!conns.empty()) {
		w.family("mdroute_conn_live", "1 while the connection to the storage node is live.",
			 prom::Type::gauge);
		for (const Source &s : conns) {
			auto it = s.attrs.find("state");
			w.sample("mdroute_conn_live", labels_of(s),
				 it != s.attrs.end() && it->second == "live");
		}
	}
	for (const AttrMetric &a : kConnAttrs)
		family(w, a, conns);
	bool declared = false;
	for (const Source &s : conns) {
		auto it = s.attrs.find("lookup_us");
		std::optional<std::vector<uint64_t>> counts;
		if (it == s.attrs.end() || !(counts = parse_lookups(it->second)))
			continue;
		if (!std::exchange(declared, true))
			w.family("mdroute_conn_lookup_duration_seconds",
				 "Time from a READ's post to its entries' delivery; the kernel keeps "
				 "no sum.", prom::Type::histogram);
		std::vector<double> le;
		for (uint64_t b : kLookupBoundsUs)
			le.push_back(double(b) / 1e6);	// exact decimals: 1e-6 has no double
		w.histogram("mdroute_conn_lookup_duration_seconds", labels_of(s), le, *counts,
			    std::nullopt);
	}
	constexpr std::string_view kConnSkip[] = {"state", "target", "node_id", "boot_id", "key",
						  "lookup_us"};
	unknown(w, "mdroute_conn_", kConnAttrs, kConnSkip, conns);
	env.out << w.str();
	return kExitOk;
}

int cmd_stats(Args args, const Env &env)
{
	Common c;
	bool prometheus = false;

	if (auto done = parse_common(args, kStatsOptions, kStatsUsage, env, c))
		return *done;
	for (const auto &o : c.options)
		prometheus |= o.id == kOptPrometheus;
	if (prometheus && c.format == Format::json)
		return usage_error(env, "--prometheus and -o json exclude each other");
	if (c.operands.size() > 1 || (!prometheus && c.operands.empty()))
		if (auto done = operands(env, c, 1, "stats needs a device (/dev/mdrN, mdrN or N)"))
			return *done;
	std::optional<uint32_t> index;
	if (!c.operands.empty()) {
		index = parse_volume_device(c.operands[0]);
		if (!index)
			return usage_error(env, "bad device '" + std::string(c.operands[0]) +
						"': expected /dev/mdrN, mdrN or N");
	}
	if (prometheus)
		return print_prometheus(env, index);

	const std::string dir = sysfs_dir(*index);
	auto read = read_attrs(env, dir);
	if (!read.ok()) {
		// The directory itself: no such volume; else one attribute.
		const bool listing = read.message() == dir;
		return failure(env, "stats", read.error(),
			       listing ? device_path(*index) : read.message(),
			       listing && read.error() == -ENOENT
				       ? "no volume is attached there; see 'mdctl list'"
				       : std::string_view());
	}
	const Attrs &attrs = read.value();

	auto is_size = [](std::string_view name) {
		return name.ends_with("_bytes") || name == "extent_size";
	};
	if (c.format == Format::json) {
		mdr::JsonWriter json;
		json.begin_object()
			.key("device").value(device_path(*index))
			.key("index").value(*index)
			.key("stats").begin_object();
		for (const auto &[name, value] : attrs) {
			json.key(name);
			std::optional<uint64_t> n = parse_number<uint64_t>(value);
			if (n && name != "name" && !value.starts_with("0x"))
				json.value(*n);
			else
				json.value(value);
		}
		json.end_object().end_object();
		env.out << json.str() << '\n';
		return kExitOk;
	}

	Table table({{"ATTRIBUTE", false}, {"VALUE", true}});
	for (const auto &[name, value] : attrs) {
		std::optional<uint64_t> n = parse_number<uint64_t>(value);
		table.add({name, n && is_size(name) ? format_size(*n) : value});
	}
	table.print(env.out);
	return kExitOk;
}

const Registration kRegistered[] = {
	{top(Place::stats, "stats", "show the counters of /dev/mdrN", cmd_stats)},
};

} // namespace

} // namespace mdctl
