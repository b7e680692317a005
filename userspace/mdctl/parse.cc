// SPDX-License-Identifier: GPL-2.0
//
// parse.cc - see parse.h.
#include "mdctl/parse.h"

#include <algorithm>
#include <bit>

#include <arpa/inet.h>
#include <linux/mdroute_wire.h>
#include <sys/socket.h>

namespace mdctl {

std::optional<uint64_t> parse_host_id(std::string_view text)
{
	const bool prefixed = text.starts_with("0x") || text.starts_with("0X");

	if (prefixed)
		text.remove_prefix(2);
	else if (text.size() != 16)
		return std::nullopt;
	if (text.empty() || text.size() > 16)
		return std::nullopt;
	uint64_t id = 0;
	auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id, 16);
	if (ec != std::errc() || end != text.data() + text.size() || id == 0)
		return std::nullopt;
	return id;
}

std::optional<uint64_t> parse_size(std::string_view text)
{
	size_t digits = 0;

	while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9')
		digits++;
	if (digits == 0)
		return std::nullopt;
	uint64_t n = 0;
	auto [end, ec] = std::from_chars(text.data(), text.data() + digits, n);
	if (ec != std::errc() || n == 0)
		return std::nullopt;

	std::string_view suffix = text.substr(digits);
	unsigned shift = 0;
	if (!suffix.empty()) {
		static constexpr std::string_view kUnits = "KMGT";
		size_t unit = kUnits.find(static_cast<char>(suffix[0] & ~0x20));
		if (unit == kUnits.npos)
			return std::nullopt;
		suffix.remove_prefix(1);
		if (!suffix.empty() && suffix != "iB")
			return std::nullopt;
		shift = 10 * static_cast<unsigned>(unit + 1);
	}
	if (shift && n > (UINT64_MAX >> shift))
		return std::nullopt;
	return n << shift;
}

std::optional<mdr::Target> parse_node(std::string_view text)
{
	mdr::Target t;
	std::string_view addr = text, port;

	if (text.starts_with('[')) {
		size_t close = text.find(']');
		if (close == text.npos)
			return std::nullopt;
		addr = text.substr(1, close - 1);
		std::string_view rest = text.substr(close + 1);
		if (!rest.empty()) {
			if (!rest.starts_with(':'))
				return std::nullopt;
			port = rest.substr(1);
			if (port.empty())
				return std::nullopt;
		}
		t.family = AF_INET6;
	} else if (std::count(text.begin(), text.end(), ':') > 1) {
		t.family = AF_INET6;
	} else {
		size_t colon = text.find(':');
		if (colon != text.npos) {
			addr = text.substr(0, colon);
			port = text.substr(colon + 1);
			if (port.empty())
				return std::nullopt;
		}
		t.family = AF_INET;
	}

	// inet_pton takes no scope ("%eth0"), which the ioctl could not carry.
	if (inet_pton(t.family, std::string(addr).c_str(), t.addr.data()) != 1)
		return std::nullopt;
	if (!port.empty()) {
		std::optional<uint16_t> p = parse_id<uint16_t>(port);
		if (!p || port.starts_with("0x"))
			return std::nullopt;
		t.port = *p;
	}
	return t;
}

std::string add_replica(std::vector<mdr::Endpoint> &set, std::string_view text)
{
	const std::string t(text);
	std::optional<mdr::Target> at = parse_node(text);

	if (!at)
		return "bad replica address '" + t + "': expected IPv4[:PORT], IPv6 or [IPv6]:PORT";
	const mdr::Endpoint e = mdr::endpoint_of(*at);
	if (std::ranges::any_of(set, [&](const auto &r) { return mdr::same_endpoint(r, e); }))
		return "replica '" + t + "' given twice";
	if (set.size() == MDR_REPLICAS_MAX)
		return "more than " + std::to_string(MDR_REPLICAS_MAX) + " replicas";
	set.push_back(e);
	return {};
}

std::optional<uint32_t> parse_volume_device(std::string_view text)
{
	if (text.starts_with("/dev/"))
		text.remove_prefix(5);
	if (text.starts_with("mdr"))
		text.remove_prefix(3);
	if (text.empty() || text.starts_with("0x") ||
	    (text.size() > 1 && text.starts_with('0')))
		return std::nullopt;
	return parse_number<uint32_t>(text);
}

std::optional<BindSpec> parse_bind_spec(std::string_view text)
{
	size_t eq = text.find('=');

	if (eq == text.npos)
		return std::nullopt;
	std::optional<uint32_t> id = parse_id<uint32_t>(text.substr(0, eq));
	std::string_view path = text.substr(eq + 1);
	if (!id || !path.starts_with('/'))
		return std::nullopt;
	return BindSpec{*id, std::string(path)};
}

std::optional<ExtentRange> parse_extent_range(std::string_view text)
{
	size_t dash = text.find('-');
	std::optional<uint64_t> first = parse_number<uint64_t>(text.substr(0, dash));

	if (!first)
		return std::nullopt;
	if (dash == text.npos)
		return ExtentRange{*first, *first};
	std::optional<uint64_t> last = parse_number<uint64_t>(text.substr(dash + 1));
	if (!last || *last < *first)
		return std::nullopt;
	return ExtentRange{*first, *last};
}

std::optional<uint32_t> extent_shift_of(uint64_t bytes)
{
	if (!std::has_single_bit(bytes))
		return std::nullopt;
	auto shift = static_cast<uint32_t>(std::countr_zero(bytes));
	if (shift < MDR_WIRE_EXTENT_SHIFT_MIN || shift > MDR_WIRE_EXTENT_SHIFT_MAX)
		return std::nullopt;
	return shift;
}

} // namespace mdctl
