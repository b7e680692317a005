// SPDX-License-Identifier: GPL-2.0
//
// prometheus.cc - see prometheus.h.
#include "lib/util/prometheus.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace mdr::prom {

namespace {

bool name_char(char c, bool first, bool colon)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')
		return true;
	if (c == ':')
		return colon;
	return !first && c >= '0' && c <= '9';
}

bool valid_name(std::string_view name, bool colon)
{
	if (name.empty())
		return false;
	for (size_t i = 0; i < name.size(); i++)
		if (!name_char(name[i], i == 0, colon))
			return false;
	return true;
}

std::string_view type_name(Type t)
{
	switch (t) {
	case Type::counter:
		return "counter";
	case Type::gauge:
		return "gauge";
	case Type::histogram:
		return "histogram";
	case Type::untyped:
		break;
	}
	return "untyped";
}

void check_metric(std::string_view name)
{
	if (!valid_metric_name(name))
		throw std::logic_error("prometheus: bad metric name '" + std::string(name) + "'");
}

// Backslash and newline always; the double quote inside a label value.
std::string escape(std::string_view text, bool quote)
{
	std::string out;

	out.reserve(text.size());
	for (char c : text) {
		if (c == '\\')
			out += "\\\\";
		else if (c == '\n')
			out += "\\n";
		else if (quote && c == '"')
			out += "\\\"";
		else
			out += c;
	}
	return out;
}

std::span<const Label> as_span(Labels l)
{
	return {l.begin(), l.size()};
}

} // namespace

bool valid_metric_name(std::string_view name)
{
	return valid_name(name, true);
}

bool valid_label_name(std::string_view name)
{
	return valid_name(name, false) && !name.starts_with("__");
}

std::string escape_label_value(std::string_view value)
{
	return escape(value, true);
}

std::string escape_help(std::string_view text)
{
	return escape(text, false);
}

std::string format_double(double v)
{
	if (std::isnan(v))
		return "NaN";
	if (std::isinf(v))
		return v > 0 ? "+Inf" : "-Inf";
	// The shortest digits in exponent form tell the decimal exponent;
	// then the form is chosen by it, not by which is shorter.
	char buf[64];
	auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
	if (ec != std::errc())
		return "NaN";	// cannot happen: 64 bytes hold any double
	const std::string sci(buf, end);
	const int exp = std::atoi(sci.c_str() + sci.find('e') + 1);
	if (exp < -4 || exp >= 6)
		return sci;	// "2.5e-05", "1e+06": two exponent digits at least
	const std::to_chars_result fixed =
		std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed);
	if (fixed.ec != std::errc())
		return "NaN";
	return std::string(buf, fixed.ptr);
}

void Writer::family(std::string_view name, std::string_view help, Type type)
{
	check_metric(name);
	out_ += "# HELP ";
	out_ += name;
	out_ += ' ';
	out_ += escape_help(help);
	out_ += "\n# TYPE ";
	out_ += name;
	out_ += ' ';
	out_ += type_name(type);
	out_ += '\n';
	families_.emplace(name);
}

bool Writer::taken(std::string_view name) const
{
	static constexpr std::string_view kSuffixes[] = {"_bucket", "_sum", "_count",
							 "_total", "_created", "_info"};

	if (families_.contains(name) || families_.contains(std::string(name) + "_total"))
		return true;
	for (std::string_view suffix : kSuffixes)
		if (name.ends_with(suffix) &&
		    families_.contains(name.substr(0, name.size() - suffix.size())))
			return true;
	return false;
}

void Writer::line(std::string_view name, std::string_view suffix,
		  std::span<const Label> labels, std::optional<Label> extra,
		  std::string_view value)
{
	check_metric(name);
	out_ += name;
	out_ += suffix;
	if (!labels.empty() || extra) {
		char sep = '{';
		auto put = [&](const Label &l) {
			if (!valid_label_name(l.name))
				throw std::logic_error("prometheus: bad label name '" +
						       std::string(l.name) + "'");
			out_ += sep;
			out_ += l.name;
			out_ += "=\"";
			out_ += escape_label_value(l.value);
			out_ += '"';
			sep = ',';
		};
		for (const Label &l : labels)
			put(l);
		if (extra)
			put(*extra);
		out_ += '}';
	}
	out_ += ' ';
	out_ += value;
	out_ += '\n';
}

void Writer::sample(std::string_view name, Labels labels, uint64_t value)
{
	sample(name, as_span(labels), value);
}

void Writer::sample(std::string_view name, std::span<const Label> labels, uint64_t value)
{
	line(name, "", labels, std::nullopt, std::to_string(value));
}

void Writer::sample_double(std::string_view name, Labels labels, double value)
{
	sample_double(name, as_span(labels), value);
}

void Writer::sample_double(std::string_view name, std::span<const Label> labels, double value)
{
	line(name, "", labels, std::nullopt, format_double(value));
}

void Writer::histogram(std::string_view name, std::span<const Label> labels,
		       std::span<const double> le, std::span<const uint64_t> counts,
		       std::optional<double> sum)
{
	if (counts.size() != le.size() + 1)
		throw std::logic_error("prometheus: histogram " + std::string(name) +
				       ": one count per bound and one above them");
	uint64_t cumulative = 0;

	for (size_t i = 0; i < le.size(); i++) {
		if (i && !(le[i] > le[i - 1]))
			throw std::logic_error("prometheus: histogram " + std::string(name) +
					       ": bounds must ascend");
		cumulative += counts[i];
		const std::string bound = format_double(le[i]);
		line(name, "_bucket", labels, Label{"le", bound}, std::to_string(cumulative));
	}
	cumulative += counts[le.size()];
	line(name, "_bucket", labels, Label{"le", "+Inf"}, std::to_string(cumulative));
	if (sum)
		line(name, "_sum", labels, std::nullopt, format_double(*sum));
	line(name, "_count", labels, std::nullopt, std::to_string(cumulative));
}

} // namespace mdr::prom
