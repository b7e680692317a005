// SPDX-License-Identifier: GPL-2.0
//
// parse.h - the values mdctl reads from its command line and its config
// file: numbers, ids, sizes, node addresses, device bindings and extent
// ranges. Each parser takes the whole text and accepts nothing around the
// value; a value it refuses is std::nullopt, and the caller says why.
#ifndef MDCTL_PARSE_H
#define MDCTL_PARSE_H

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/client/control.h"

namespace mdctl {

// A decimal number, or hexadecimal after "0x"; nothing else around it.
template <typename T>
std::optional<T> parse_number(std::string_view text)
{
	int base = 10;
	T n{};

	if (text.starts_with("0x") || text.starts_with("0X")) {
		text.remove_prefix(2);
		base = 16;
	}
	if (text.empty())
		return std::nullopt;
	auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n, base);
	if (ec != std::errc() || end != text.data() + text.size())
		return std::nullopt;
	return n;
}

// An id that the module and mdnode refuse when 0: a backing device, a
// volume, a host.
template <typename T>
std::optional<T> parse_id(std::string_view text)
{
	std::optional<T> id = parse_number<T>(text);

	return id && *id ? id : std::nullopt;
}

// A host id as mdctl prints it ('mdctl host id', 'host list'): exactly 16
// hexadecimal digits, or hexadecimal after "0x" ("0x93"); never 0. A bare
// shorter number is refused: it could be meant as decimal.
std::optional<uint64_t> parse_host_id(std::string_view text);
// What follows "bad host id 'X'" in every error about one.
inline constexpr std::string_view kHostIdForm =
	"': expected 16 hex digits as 'mdctl host id' prints them, or 0x and hex "
	"digits; not 0";

// A size in bytes: decimal digits and an optional binary suffix K, M, G or
// T (also k, m, g, t; an "iB" after it is allowed: "4MiB"). Refuses 0,
// fractions, signs, hexadecimal and anything that overflows 64 bits.
std::optional<uint64_t> parse_size(std::string_view text);

// "ADDR[:PORT]": IPv4 ("192.0.2.2:4791"), IPv6 in brackets with a port
// ("[2001:db8::2]:4791") or without one, bare IPv6 ("2001:db8::2"). No port
// is port 0, which the module reads as MDR_WIRE_PORT.
std::optional<mdr::Target> parse_node(std::string_view text);

// Adds the replica at @text, an ADDR[:PORT] as parse_node() reads it, to
// the replica set @set of an attach (--replica, 'replicas' of mdctl.conf):
// an error message if the address is bad, is in @set already, or @set is
// full (MDR_REPLICAS_MAX); else empty.
std::string add_replica(std::vector<mdr::Endpoint> &set, std::string_view text);

// "/dev/mdrN", "mdrN" or "N".
std::optional<uint32_t> parse_volume_device(std::string_view text);

struct BindSpec {
	uint32_t dev_id;
	std::string path;
};

// "ID=/dev/X": a device id and an absolute path.
std::optional<BindSpec> parse_bind_spec(std::string_view text);

// "N" or "N-M" (M >= N): extents N to M of a volume, both included.
struct ExtentRange {
	uint64_t first;
	uint64_t last;
};
std::optional<ExtentRange> parse_extent_range(std::string_view text);

// log2 of an extent size: a power of two from 64 KiB to 1 GiB, the range
// of the wire protocol.
std::optional<uint32_t> extent_shift_of(uint64_t bytes);

} // namespace mdctl

#endif // MDCTL_PARSE_H
