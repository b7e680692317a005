// SPDX-License-Identifier: GPL-2.0
//
// output.cc - tables, units and names as mdctl prints them.
#include "mdctl/output.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include <arpa/inet.h>
#include <linux/mdroute_wire.h>
#include <sys/socket.h>

namespace mdctl {

std::optional<Format> parse_format(std::string_view name)
{
	if (name == "table")
		return Format::table;
	if (name == "json")
		return Format::json;
	return std::nullopt;
}

void Table::print(std::ostream &out) const
{
	std::vector<size_t> width;
	for (const Column &c : columns_)
		width.push_back(c.title.size());
	for (const auto &row : rows_)
		for (size_t i = 0; i < row.size(); i++)
			width[i] = std::max(width[i], row[i].size());

	auto line = [&](auto cell) {
		std::string text;
		for (size_t i = 0; i < columns_.size(); i++) {
			std::string value(cell(i));
			std::string pad(width[i] - value.size(), ' ');
			if (i)
				text += "  ";
			text += columns_[i].right ? pad + value : value + pad;
		}
		while (text.ends_with(' '))
			text.pop_back();
		out << text << '\n';
	};
	line([&](size_t i) { return columns_[i].title; });
	for (const auto &row : rows_)
		line([&](size_t i) { return std::string_view(row[i]); });
}

std::string format_size(uint64_t bytes)
{
	static constexpr const char *kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	size_t unit = 0;

	while (unit + 1 < std::size(kUnits) && bytes >> (10 * (unit + 1)))
		unit++;
	const uint64_t scale = uint64_t{1} << (10 * unit);
	if (bytes % scale == 0)
		return std::to_string(bytes / scale) + ' ' + kUnits[unit];
	// tenths, rounded to nearest; 128 bits so EiB do not overflow
	auto tenths = static_cast<uint64_t>(
		(static_cast<unsigned __int128>(bytes) * 10 + scale / 2) / scale);
	return std::to_string(tenths / 10) + '.' + std::to_string(tenths % 10) + ' ' +
	       kUnits[unit];
}

std::string format_ms(uint64_t us)
{
	char text[32];

	std::snprintf(text, sizeof(text), "%llu.%03llu", static_cast<unsigned long long>(us / 1000),
		      static_cast<unsigned long long>(us % 1000));
	return text;
}

std::string format_devnum(mdr::DevNum dev)
{
	return std::to_string(dev.major) + ':' + std::to_string(dev.minor);
}

std::string format_host_id(uint64_t host_id)
{
	char text[17];

	std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(host_id));
	return text;
}

std::string device_path(uint32_t index)
{
	return "/dev/mdr" + std::to_string(index);
}

std::string node_address(const mdr::Target &t)
{
	char text[INET6_ADDRSTRLEN] = "?";

	inet_ntop(t.family, t.addr.data(), text, sizeof(text));
	return text;
}

uint16_t node_port(const mdr::Target &t)
{
	return t.port ? t.port : MDR_WIRE_PORT;
}

std::string format_node(const mdr::Target &t)
{
	std::string addr = node_address(t);

	if (t.family == AF_INET6)
		addr = '[' + addr + ']';
	return addr + ':' + std::to_string(node_port(t));
}

void attached_volume_json(mdr::JsonWriter &json, const mdr::VolumeInfo &v)
{
	json.key("device").value(device_path(v.index))
		.key("index").value(v.index)
		.key("volume_id").value(v.volume_id)
		.key("name").value(v.name)
		.key("size").value(v.size)
		.key("extent_size").value(uint64_t{1} << v.extent_shift);
}

void json_optional(mdr::JsonWriter &json, std::string_view key, std::optional<uint64_t> v)
{
	json.key(key);
	if (v)
		json.value(*v);
	else
		json.null();
}

} // namespace mdctl
