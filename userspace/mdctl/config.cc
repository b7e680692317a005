// SPDX-License-Identifier: GPL-2.0
//
// config.cc - see config.h.
#include "mdctl/config.h"

#include <cerrno>

#include "mdctl/parse.h"

namespace mdctl {

namespace {

std::string_view trim(std::string_view s)
{
	size_t b = s.find_first_not_of(" \t\r");
	size_t e = s.find_last_not_of(" \t\r");

	return b == s.npos ? std::string_view() : s.substr(b, e - b + 1);
}

// Applies "key = value"; an error message, or empty.
std::string apply(Config &c, std::string_view key, std::string_view value)
{
	const std::string v(value);
	auto twice = [&](bool set) {
		return set ? "'" + std::string(key) + "' given twice" : std::string();
	};

	if (key == "node") {
		if (auto e = twice(c.node.has_value()); !e.empty())
			return e;
		if (!parse_node(value))
			return "bad node address '" + v +
			       "': expected IPv4[:PORT], IPv6 or [IPv6]:PORT";
		c.node = v;
	} else if (key == "admin-key") {
		if (auto e = twice(c.admin_key.has_value()); !e.empty())
			return e;
		if (!value.starts_with('/'))
			return "admin-key '" + v + "': the path must be absolute";
		c.admin_key = v;
	} else if (key == "tenant") {
		if (auto e = twice(c.tenant.has_value()); !e.empty())
			return e;
		c.tenant = parse_number<uint32_t>(value);
		if (!c.tenant)
			return "bad tenant '" + v + "'";
	} else if (key == "host-id") {
		if (auto e = twice(c.host_id.has_value()); !e.empty())
			return e;
		c.host_id = parse_host_id(value);
		if (!c.host_id)
			return "bad host id '" + v + std::string(kHostIdForm);
	} else if (key == "host-key") {
		if (auto e = twice(c.host_key.has_value()); !e.empty())
			return e;
		if (!value.starts_with('/'))
			return "host-key '" + v + "': the path must be absolute";
		c.host_key = v;
	} else if (key == "timeout-ms") {
		if (auto e = twice(c.timeout_ms.has_value()); !e.empty())
			return e;
		c.timeout_ms = parse_id<uint32_t>(value);
		if (!c.timeout_ms || *c.timeout_ms > 600000)
			return "timeout-ms '" + v + "': want 1..600000";
	} else if (key == "group") {
		if (auto e = twice(c.group.has_value()); !e.empty())
			return e;
		c.group = parse_id<uint64_t>(value);
		if (!c.group)
			return "bad group '" + v + "': expected a non-zero number";
	} else if (key == "replicas") {
		if (auto e = twice(c.replicas.has_value()); !e.empty())
			return e;
		std::vector<mdr::Endpoint> set;
		for (std::string_view rest = value; !rest.empty();) {
			size_t end = rest.find_first_of(", \t");
			if (end)
				if (auto e = add_replica(set, rest.substr(0, end)); !e.empty())
					return e;
			rest = end == rest.npos ? std::string_view() : rest.substr(end + 1);
		}
		if (set.empty())
			return "replicas: no address";
		c.replicas = std::move(set);
	} else {
		return "unknown setting '" + std::string(key) + "'";
	}
	return {};
}

} // namespace

mdr::Result<Config> parse_config(std::string_view path, std::string_view text)
{
	Config c;
	unsigned n = 0;

	while (!text.empty()) {
		size_t nl = text.find('\n');
		std::string_view line = trim(text.substr(0, nl));
		text = nl == text.npos ? std::string_view() : text.substr(nl + 1);
		const std::string where = std::string(path) + ':' + std::to_string(++n) + ": ";

		if (line.empty() || line.starts_with('#'))
			continue;
		size_t eq = line.find('=');
		if (eq == line.npos)
			return mdr::Error(-EINVAL, where + "want 'key = value'");
		std::string message = apply(c, trim(line.substr(0, eq)), trim(line.substr(eq + 1)));
		if (!message.empty())
			return mdr::Error(-EINVAL, where + message);
	}
	if (c.replicas && !c.group)
		return mdr::Error(-EINVAL, std::string(path) + ": 'replicas' without 'group'");
	return c;
}

} // namespace mdctl
