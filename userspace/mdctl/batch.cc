// SPDX-License-Identifier: GPL-2.0
//
// batch.cc - batch files, jobs and --timing of the --all-of commands.
#include "mdctl/batch.h"

#include <cstdio>
#include <set>

#include "lib/wire/wire.h"
#include "mdctl/cli.h"
#include "mdctl/parse.h"

namespace mdctl {

std::optional<int> read_batch(const Env &env, std::string_view command, const std::string &path,
			      std::vector<BatchLine> &lines)
{
	auto text = env.host.read_file(path);

	if (!text.ok())
		return failure(env, command, text.error(), path);
	std::string_view rest = text.value();
	std::set<std::string> names;
	for (unsigned n = 1; !rest.empty(); n++) {
		size_t nl = rest.find('\n');
		std::string_view line = rest.substr(0, nl);
		rest = nl == rest.npos ? std::string_view() : rest.substr(nl + 1);
		const std::string where = path + ':' + std::to_string(n) + ": ";

		std::vector<std::string_view> words;
		while (!line.empty() && !line.starts_with('#')) {
			size_t b = line.find_first_not_of(" \t\r");
			if (b == line.npos || line[b] == '#')
				break;
			line.remove_prefix(b);
			size_t e = line.find_first_of(" \t\r");
			words.push_back(line.substr(0, e));
			line = e == line.npos ? std::string_view() : line.substr(e);
		}
		if (words.empty())
			continue;
		if (words.size() > 3)
			return usage_error(env, where + "expected NAME [SIZE [EXTENT_SIZE]]");
		BatchLine b;
		b.name = std::string(words[0]);
		if (!mdr::wire::valid_volume_name(b.name))
			return usage_error(env, where + "bad volume name '" + b.name + "'");
		if (!names.insert(b.name).second)
			return usage_error(env, where + "volume '" + b.name + "' named twice");
		if (words.size() > 1) {
			b.size = parse_size(words[1]);
			if (!b.size || *b.size % 4096)
				return usage_error(env, where + "bad size '" + std::string(words[1]) +
							"': expected a multiple of 4096 with an "
							"optional K, M, G or T suffix");
		}
		if (words.size() > 2) {
			std::optional<uint64_t> bytes = parse_size(words[2]);
			std::optional<uint32_t> shift = bytes ? extent_shift_of(*bytes) : std::nullopt;
			if (!shift)
				return usage_error(env, where + "bad extent size '" +
							std::string(words[2]) +
							"': expected a power of two from 64K to 1G");
			b.extent_shift = *shift;
		}
		lines.push_back(std::move(b));
	}
	if (lines.empty())
		return usage_error(env, path + ": names no volume");
	return std::nullopt;
}

std::optional<int> parse_jobs(const Env &env, std::string_view text, unsigned &jobs)
{
	std::optional<unsigned> n = parse_id<unsigned>(text);

	if (!n || *n > kMaxJobs || text.starts_with("0x"))
		return usage_error(env, "bad number of jobs '" + std::string(text) +
					"': expected 1 to " + std::to_string(kMaxJobs));
	jobs = *n;
	return std::nullopt;
}

double since(std::chrono::steady_clock::time_point start)
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void print_timing(const Env &env, std::string_view command, std::string_view step, size_t n,
		  double secs)
{
	char line[160];

	if (n > 1)
		std::snprintf(line, sizeof(line), "%.*s: %zu in %.3f s (%.3f ms each)",
			      static_cast<int>(step.size()), step.data(), n, secs,
			      secs * 1000 / static_cast<double>(n));
	else
		std::snprintf(line, sizeof(line), "%.*s: %.3f s", static_cast<int>(step.size()),
			      step.data(), secs);
	env.err << "mdctl: " << command << ": timing: " << line << '\n';
}

void print_latencies(const Env &env, std::string_view command, std::string_view step,
		     std::vector<double> secs)
{
	if (secs.empty())
		return;
	std::sort(secs.begin(), secs.end());
	auto at = [&](double q) {
		return secs[std::min(secs.size() - 1,
				     static_cast<size_t>(q * static_cast<double>(secs.size())))] *
		       1000;
	};
	double sum = 0;
	for (double x : secs)
		sum += x;
	char line[200];
	std::snprintf(line, sizeof(line),
		      "%.*s: min %.1f ms, median %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms; "
		      "sum %.3f s",
		      static_cast<int>(step.size()), step.data(), secs.front() * 1000, at(0.5),
		      at(0.9), at(0.99), secs.back() * 1000, sum);
	env.err << "mdctl: " << command << ": timing: " << line << '\n';
}

} // namespace mdctl
