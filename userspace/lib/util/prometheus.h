// SPDX-License-Identifier: GPL-2.0
//
// prometheus.h - Prometheus' text exposition format, version 0.0.4, written:
// what mdnode's metrics endpoint serves and what `mdctl stats --prometheus`
// prints for node_exporter's textfile collector. Writing only; nothing here
// reads the format.
//
//	prom::Writer w;
//	w.family("mdnode_requests_total", "Requests received.", prom::Type::counter);
//	w.sample("mdnode_requests_total", {{"opcode", "open"}}, 42);
//	w.family("mdnode_request_duration_seconds", "...", prom::Type::histogram);
//	w.histogram("mdnode_request_duration_seconds", {{"opcode", "open"}},
//		    le, counts, sum);
//	reply(w.str());		// Content-Type: prom::kContentType
//
// The rules it keeps: each family has one HELP and one TYPE line before its
// samples (HELP escapes backslash and newline); label values escape
// backslash, double quote and newline, so a value read from a file or the
// network cannot end its label or its line; a histogram's buckets are
// cumulative, its le="+Inf" bucket equals its _count. Metric and label names
// are the caller's constants: a name that breaks the grammar is a bug and
// throws std::logic_error rather than write a line a scraper refuses.
#ifndef MDR_PROMETHEUS_H
#define MDR_PROMETHEUS_H

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>

namespace mdr::prom {

inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

enum class Type { counter, gauge, histogram, untyped };

struct Label {
	std::string_view name;
	std::string_view value;
};
using Labels = std::initializer_list<Label>;

// [a-zA-Z_:][a-zA-Z0-9_:]*; a label name the same without ':'. Names
// starting with "__" are Prometheus' own.
bool valid_metric_name(std::string_view name);
bool valid_label_name(std::string_view name);

// What goes between the quotes of a label value, and after "# HELP name ".
std::string escape_label_value(std::string_view value);
std::string escape_help(std::string_view text);
// A sample value or an le bound: "+Inf", "-Inf", "NaN", else the shortest
// digits that read back as the same double, written as Prometheus' own
// clients write them (Go's strconv 'g' with shortest precision: exponent
// form below 1e-4 and from 1e6 on: "0.0001", "2.5e-05", "3", "1e+06"), so
// that an le label names the same bucket series as other exporters' do.
std::string format_double(double v);

class Writer {
public:
	// The HELP and TYPE lines of a family; its samples follow.
	void family(std::string_view name, std::string_view help, Type type);
	void sample(std::string_view name, Labels labels, uint64_t value);
	void sample(std::string_view name, std::span<const Label> labels, uint64_t value);
	void sample_double(std::string_view name, Labels labels, double value);
	void sample_double(std::string_view name, std::span<const Label> labels, double value);
	// The samples of one histogram, from counts per bucket (not
	// cumulative): counts[i] observations in (le[i-1], le[i]], and
	// counts[le.size()] those above every bound; so counts has one more
	// element than le, and le ascends. Writes name_bucket for each bound
	// and +Inf (cumulative), then name_sum (when the sum is known: the
	// kernel keeps none for its lookups) and name_count.
	void histogram(std::string_view name, std::span<const Label> labels,
		       std::span<const double> le, std::span<const uint64_t> counts,
		       std::optional<double> sum);

	// Whether a family of this name could not be added beside the ones
	// written so far: one of that name, a name one of theirs takes with a
	// sample suffix (x_bucket, x_sum, x_count, x_total, x_created,
	// x_info of a family x), or the name of a counter family x_total
	// without its _total (the same family to OpenMetrics).
	bool taken(std::string_view name) const;

	const std::string &str() const { return out_; }
	std::string take() { return std::move(out_); }

private:
	void line(std::string_view name, std::string_view suffix,
		  std::span<const Label> labels, std::optional<Label> extra,
		  std::string_view value);

	std::string out_;
	std::set<std::string, std::less<>> families_;
};

} // namespace mdr::prom

#endif // MDR_PROMETHEUS_H
