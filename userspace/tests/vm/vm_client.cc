// SPDX-License-Identifier: GPL-2.0
//
// vm_client.cc - see vm_client.h.
#include "tests/vm/vm_client.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "lib/util/errors.h"

namespace mdr::test {

bool parse_u64(std::string_view s, uint64_t &v)
{
	uint64_t mult = 1;
	int base = 10;

	if (!s.empty() && strchr("KMGT", s.back())) {
		mult = 1ull << (10 * (strchr("KMGT", s.back()) - "KMGT" + 1));
		s.remove_suffix(1);
	}
	if (s.starts_with("0x")) {
		s.remove_prefix(2);
		base = 16;
	}
	auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
	if (ec != std::errc() || p != s.data() + s.size() || s.empty())
		return false;
	v *= mult;
	return true;
}

std::vector<std::string> split(std::string_view s, char sep)
{
	std::vector<std::string> out;
	size_t pos;

	while ((pos = s.find(sep)) != std::string_view::npos) {
		out.emplace_back(s.substr(0, pos));
		s.remove_prefix(pos + 1);
	}
	out.emplace_back(s);
	return out;
}

LatencySummary summarize_latencies(std::vector<uint64_t> values)
{
	LatencySummary s{.count = values.size()};

	if (values.empty())
		return s;
	std::sort(values.begin(), values.end());
	// Nearest rank: the value at ceil(p * n / 100), counted from 1.
	auto rank = [&](uint64_t p) { return values[(p * values.size() + 99) / 100 - 1]; };
	s.p50 = rank(50);
	s.p99 = rank(99);
	s.max = values.back();
	s.mean = std::accumulate(values.begin(), values.end(), uint64_t{0}) / values.size();
	return s;
}

bool address_option(std::string_view name, std::string_view value, std::string &node,
		    uint16_t &port)
{
	uint64_t v;

	if (name == "--node")
		node = value;
	else if (name == "--port" && parse_u64(value, v))
		port = uint16_t(v);
	else
		return false;
	return true;
}

bool connect_option(std::string_view name, const std::string &value, ClientOptions &opts,
		    std::string &key_file)
{
	uint64_t v;

	if (address_option(name, value, opts.node, opts.port))
		return true;
	if (name == "--timeout" && parse_u64(value, v)) {
		opts.timeout_ms = int(v);
		return true;
	}
	if (name == "--admin-key") {
		key_file = value;
		opts.role = MDR_ROLE_ADMIN;
		return true;
	}
	return false;
}

std::pair<std::string, uint16_t> Replicas::next(const std::optional<wire::Leader> &leader,
						 uint16_t port)
{
	if (leader && leader->known()) {
		std::string host = wire::leader_host(*leader);
		auto it = std::find(nodes.begin(), nodes.end(), host);
		if (it != nodes.end())
			at = size_t(it - nodes.begin());
		return {std::move(host), leader->port};
	}
	if (nodes.empty())
		return {"", port};
	at = (at + 1) % nodes.size();
	return {nodes[at], port};
}

std::unique_ptr<RdmaClient> connect_or_say(const ClientOptions &opts)
{
	auto c = RdmaClient::connect(opts);

	if (!c.ok()) {
		printf("connect: error: %s (%s)\n", c.message().c_str(),
		       errno_name(-c.error()).c_str());
		return nullptr;
	}
	return std::move(c).value();
}

bool prove_admin_key(RdmaClient &cl, const std::string &key_file)
{
	FILE *f = fopen(key_file.c_str(), "re");
	char buf[256];
	size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;

	if (f)
		fclose(f);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;

	auto st = cl.authenticate({reinterpret_cast<uint8_t *>(buf), n});

	if (!st.ok()) {
		printf("auth: error: %s (%s)\n", st.message().c_str(),
		       errno_name(-st.error()).c_str());
		return false;
	}
	return true;
}

} // namespace mdr::test
