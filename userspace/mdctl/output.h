// SPDX-License-Identifier: GPL-2.0
//
// output.h - how mdctl prints: a table by default, or with -o json one JSON
// object whose snake_case keys are stable (lib/util/json.h writes it); and the
// units and names both forms share.
#ifndef MDCTL_OUTPUT_H
#define MDCTL_OUTPUT_H

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/client/control.h"
#include "lib/util/json.h"

namespace mdctl {

enum class Format { table, json };

// "table" or "json"; nullopt for anything else.
std::optional<Format> parse_format(std::string_view name);

// Columns padded to their widest cell, two spaces apart; numbers right-aligned.
class Table {
public:
	struct Column {
		std::string_view title;
		bool right;
	};

	explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

	void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

	void print(std::ostream &out) const;

private:
	std::vector<Column> columns_;
	std::vector<std::vector<std::string>> rows_;
};

// Binary units: "512 B", "4 MiB", "1.5 GiB" (one decimal when not exact).
std::string format_size(uint64_t bytes);

// Microseconds as milliseconds with three decimals: "1.234".
std::string format_ms(uint64_t us);

// "259:0".
std::string format_devnum(mdr::DevNum dev);

// A host id as 16 lowercase hexadecimal digits, as the module and mdnode
// log it and parse_host_id() reads it back: "0000000000000093".
std::string format_host_id(uint64_t host_id);

// "/dev/mdrN".
std::string device_path(uint32_t index);

// A node's address without its port, its port (0 read as MDR_WIRE_PORT),
// and both: "192.0.2.2:4791", "[2001:db8::2]:4791".
std::string node_address(const mdr::Target &t);
uint16_t node_port(const mdr::Target &t);
std::string format_node(const mdr::Target &t);

// The keys that say which volume is attached where, first in the objects
// of list and attach: device, index, volume_id, name, size, extent_size.
void attached_volume_json(mdr::JsonWriter &json, const mdr::VolumeInfo &v);

// "KEY": the number, or null.
void json_optional(mdr::JsonWriter &json, std::string_view key, std::optional<uint64_t> v);

} // namespace mdctl

#endif // MDCTL_OUTPUT_H
