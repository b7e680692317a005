// SPDX-License-Identifier: GPL-2.0
//
// json.h - a small streaming JSON writer for machine-readable output.
//
//	JsonWriter w;
//	w.begin_object().key("loaded").value(true).end_object();
//	std::cout << w.str() << '\n';	// {"loaded":true}
//
// Strings are written as UTF-8: control characters, quotes and backslashes
// are escaped, valid UTF-8 passes through, and each byte of an invalid
// sequence becomes U+FFFD so the document stays valid JSON. Integers are
// exact over the whole int64_t and uint64_t ranges. Misuse (a value where a
// key is due, unbalanced ends) is a bug and throws std::logic_error
// in every build type rather than write malformed JSON.
#ifndef MDR_JSON_H
#define MDR_JSON_H

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace mdr {

class JsonWriter {
public:
	JsonWriter &begin_object();
	JsonWriter &end_object();
	JsonWriter &begin_array();
	JsonWriter &end_array();
	JsonWriter &key(std::string_view name);

	JsonWriter &value(std::string_view s);
	JsonWriter &value(const char *s) { return value(std::string_view(s)); }
	JsonWriter &value(bool b) { return scalar(b ? "true" : "false"); }
	JsonWriter &null() { return scalar("null"); }	// a value not known
	template <std::integral T>
	JsonWriter &value(T n)
	{
		if constexpr (std::is_signed_v<T>)
			return scalar(std::to_string(static_cast<int64_t>(n)));
		else
			return scalar(std::to_string(static_cast<uint64_t>(n)));
	}

	// The document written so far; complete once every begin is ended.
	const std::string &str() const { return out_; }

private:
	struct Frame {
		bool object;
		bool empty;
	};

	void before_value();
	JsonWriter &scalar(std::string_view text);
	JsonWriter &open(char bracket, bool object);
	JsonWriter &close(char bracket, bool object);

	std::string out_;
	std::vector<Frame> open_;	// containers not yet ended
	bool after_key_ = false;	// a key waits for its value
};

} // namespace mdr

#endif // MDR_JSON_H
