// SPDX-License-Identifier: GPL-2.0
//
// lease_bounds.cc - see lease_bounds.h.
#include "mdnode/lease_bounds.h"

#include <cerrno>
#include <charconv>

#include <linux/mdroute_wire.h>

#include "mdnode/config.h"

namespace mdnode {

namespace {

bool take_field(std::string_view &text, std::string_view name, uint32_t max, uint32_t &out)
{
	if (!text.starts_with(name) || text.size() == name.size() || text[name.size()] != '=')
		return false;
	text.remove_prefix(name.size() + 1);
	const char *end = text.data() + text.size();
	auto [p, ec] = std::from_chars(text.data(), end, out);
	if (ec != std::errc() || p == text.data() || out > max)
		return false;
	text.remove_prefix(size_t(p - text.data()));
	return true;
}

} // namespace

mdr::Status check_lease_bounds(LeaseBounds b)
{
	if (b.held_ms > kHeldMsMax)
		return mdr::Error(-EINVAL, "held_ms " + std::to_string(b.held_ms) +
					   " above " + std::to_string(kHeldMsMax));
	if (b.io_hold_ms > kIoHoldMsMax)
		return mdr::Error(-EINVAL, "io_hold_ms " + std::to_string(b.io_hold_ms) +
					   " above " + std::to_string(kIoHoldMsMax));
	return {};
}

std::string format_lease_bounds(LeaseBounds b)
{
	return "held_ms=" + std::to_string(b.held_ms) +
	       " io_hold_ms=" + std::to_string(b.io_hold_ms) + "\n";
}

mdr::Result<LeaseBounds> parse_lease_bounds(std::string_view text)
{
	LeaseBounds b;

	if (!take_field(text, "held_ms", kHeldMsMax, b.held_ms) || !text.starts_with(' '))
		return mdr::Error(-EINVAL, "want 'held_ms=N io_hold_ms=M', N at most " +
				  std::to_string(kHeldMsMax));
	text.remove_prefix(1);
	if (!take_field(text, "io_hold_ms", kIoHoldMsMax, b.io_hold_ms))
		return mdr::Error(-EINVAL, "want io_hold_ms=M after held_ms, M at most " +
				  std::to_string(kIoHoldMsMax));
	if (text != "\n" && !text.empty())
		return mdr::Error(-EINVAL, "unexpected text after io_hold_ms");
	return b;
}

} // namespace mdnode
