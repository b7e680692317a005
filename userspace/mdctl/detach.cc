// SPDX-License-Identifier: GPL-2.0
//
// detach.cc - mdctl detach: a volume by device or by name, or every volume
// of a batch file --jobs at a time.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "lib/client/control.h"
#include "lib/wire/wire.h"
#include "mdctl/batch.h"
#include "mdctl/cli.h"
#include "mdctl/parse.h"

namespace mdctl {

namespace {

enum DetachOption { kOptForce = kOptOwn, kOptAllOf, kOptTiming, kOptJobs };

constexpr std::string_view kDetachUsage =
	"Usage: mdctl detach DEV|NAME [--force]\n"
	"       mdctl detach --all-of FILE [--force] [--timing]\n"
	"\n"
	"Detach the volume at DEV (/dev/mdrN, mdrN or N), or the attached volume\n"
	"called NAME (an operand that reads as a device is one). Refused while\n"
	"the device is open, unless --force: then IO waiting for metadata and new\n"
	"IO fail with EIO, IO already at a backing device completes, and the\n"
	"device goes away. Bound backing devices stay bound (see 'mdctl unbind').\n"
	"\n"
	"With --all-of FILE, detaches every volume named in FILE (the first word\n"
	"of each line, as for 'mdctl attach --all-of'); every name must be\n"
	"attached, which is checked before anything is detached. It detaches\n"
	"--jobs at a time and starts no more after a failure; the volumes\n"
	"detached stay detached.\n"
	"\n"
	"Options:\n"
	"  -a, --all-of FILE    the volumes named in FILE\n"
	"  -f, --force          detach even if the device is open\n"
	"  -T, --timing         print where the time went to stderr (--all-of)\n"
	"  -j, --jobs N         detach N volumes at a time (--all-of; default 4)\n"
	"  -h, --help           show this help\n";

int detach_failed(const Env &env, uint32_t index, const mdr::Status &st)
{
	std::string hint;
	if (st.error() == -EBUSY)
		hint = "the device is open; close it, or use --force";
	else if (st.error() == -ENXIO)
		hint = "no volume is attached there; see 'mdctl list'";
	return failure(env, "detach", st.error(),
		       st.message().empty() ? device_path(index) : st.message(), hint);
}

int detach_one(const Env &env, mdr::Control &control, uint32_t index, bool force)
{
	mdr::Status st = control.detach(index, 0, force);

	return st.ok() ? kExitOk : detach_failed(env, index, st);
}

// The index of the attached volume called @name: one of them.
std::optional<uint32_t> find_attached(const Env &env, const std::vector<mdr::VolumeInfo> &vols,
				      const std::string &name)
{
	std::optional<uint32_t> index;

	for (const mdr::VolumeInfo &v : vols) {
		if (v.name != name)
			continue;
		if (index) {
			failure(env, "detach", -EINVAL,
				"volume '" + name + "' is attached from more than one node",
				"name it by device: " + device_path(*index) + " or " +
					device_path(v.index));
			return std::nullopt;
		}
		index = v.index;
	}
	if (!index)
		failure(env, "detach", -ENXIO, "volume '" + name + "'",
			"it is not attached here; see 'mdctl list'");
	return index;
}

int cmd_detach(Args args, const Env &env)
{
	static constexpr mdr::OptionSpec specs[] = {
		{kOptForce, "force", 'f', false}, {kOptAllOf, "all-of", 'a', true},
		{kOptTiming, "timing", 'T', false}, {kOptJobs, "jobs", 'j', true}, kHelpOption,
	};
	bool force = false, timing = false;
	std::optional<unsigned> jobs;
	std::optional<std::string> all_of;
	Common c;

	if (auto done = parse_common(args, specs, kDetachUsage, env, c))
		return *done;
	for (const mdr::ParsedOption &opt : c.options) {
		if (opt.id == kOptForce)
			force = true;
		else if (opt.id == kOptTiming)
			timing = true;
		else if (opt.id == kOptJobs) {
			unsigned n = 0;
			if (auto done = parse_jobs(env, opt.value, n))
				return *done;
			jobs = n;
		} else
			all_of = std::string(opt.value);
	}
	if (all_of && !c.operands.empty())
		return unexpected_argument(env, c.operands[0]);
	if ((timing || jobs) && !all_of)
		return usage_error(env, std::string(timing ? "--timing" : "--jobs") +
					" goes with --all-of");
	if (!all_of && c.operands.empty())
		return usage_error(env, "detach needs a device (/dev/mdrN, mdrN or N) or a "
					"volume name");
	if (c.operands.size() > 1)
		return unexpected_argument(env, c.operands[1]);

	std::vector<BatchLine> lines;
	std::optional<uint32_t> index;
	if (all_of) {
		if (auto done = read_batch(env, "detach", *all_of, lines))
			return *done;
	} else {
		index = parse_volume_device(c.operands[0]);
		if (!index && !mdr::wire::valid_volume_name(c.operands[0]))
			return usage_error(env, "bad device or volume name '" +
						std::string(c.operands[0]) +
						"': expected /dev/mdrN, mdrN, N or a name");
		if (!index)
			lines.push_back({std::string(c.operands[0]), {}, 0});
	}

	auto control = open_control(env, "detach");
	if (!control)
		return kExitFailure;
	if (index)
		return detach_one(env, *control, *index, force);

	auto vols = control->list();
	if (!vols.ok())
		return failure(env, "detach", vols);
	std::vector<uint32_t> indexes;
	for (const BatchLine &b : lines) {
		std::optional<uint32_t> i = find_attached(env, vols.value(), b.name);
		if (!i)
			return kExitFailure;
		indexes.push_back(*i);
	}
	auto t0 = std::chrono::steady_clock::now();
	std::vector<std::optional<mdr::Status>> results(indexes.size());
	std::vector<double> ioctl_s(indexes.size());
	run_jobs(indexes.size(), jobs.value_or(kDefaultJobs), [&](size_t i) {
		auto t = std::chrono::steady_clock::now();
		results[i] = control->detach(indexes[i], 0, force);
		ioctl_s[i] = since(t);
		return results[i]->ok();
	});
	for (size_t i = 0; i < results.size(); i++)
		if (results[i] && !results[i]->ok())
			return detach_failed(env, indexes[i], *results[i]);
	if (timing) {
		print_timing(env, "detach", "detach", indexes.size(), since(t0));
		print_latencies(env, "detach", "detach ioctl", std::move(ioctl_s));
	}
	return kExitOk;
}

const Registration kRegistered[] = {
	{top(Place::detach, "detach", "detach /dev/mdrN", cmd_detach)},
};

} // namespace

} // namespace mdctl
