// SPDX-License-Identifier: GPL-2.0
//
// json.cc - JSON writer.
#include "lib/util/json.h"

#include <stdexcept>
#include <cstdio>
#include <utility>

namespace mdr {

namespace {

// Length of the well-formed UTF-8 sequence that starts s (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF), or 0.
size_t utf8_sequence_length(std::string_view s)
{
	auto byte = [s](size_t i) { return static_cast<unsigned char>(s[i]); };
	unsigned char lead = byte(0);
	unsigned char lo = 0x80, hi = 0xbf;	// range of the second byte
	size_t len;

	if (lead < 0x80)
		return 1;
	if (lead >= 0xc2 && lead <= 0xdf) {
		len = 2;
	} else if (lead >= 0xe0 && lead <= 0xef) {
		len = 3;
		if (lead == 0xe0)
			lo = 0xa0;
		else if (lead == 0xed)
			hi = 0x9f;
	} else if (lead >= 0xf0 && lead <= 0xf4) {
		len = 4;
		if (lead == 0xf0)
			lo = 0x90;
		else if (lead == 0xf4)
			hi = 0x8f;
	} else {
		return 0;
	}
	if (s.size() < len || byte(1) < lo || byte(1) > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((byte(i) & 0xc0) != 0x80)
			return 0;
	return len;
}

void append_escaped(std::string &out, std::string_view s)
{
	out += '"';
	while (!s.empty()) {
		unsigned char c = s.front();
		size_t len = 1;

		switch (c) {
		case '"':  out += "\\\""; break;
		case '\\': out += "\\\\"; break;
		case '\b': out += "\\b"; break;
		case '\f': out += "\\f"; break;
		case '\n': out += "\\n"; break;
		case '\r': out += "\\r"; break;
		case '\t': out += "\\t"; break;
		default:
			if (c < 0x20) {
				char esc[sizeof("\\u00XX")];

				snprintf(esc, sizeof(esc), "\\u%04x", c);
				out += esc;
			} else if ((len = utf8_sequence_length(s)) != 0) {
				out += s.substr(0, len);
			} else {
				out += "\\ufffd";
				len = 1;
			}
		}
		s.remove_prefix(len);
	}
	out += '"';
}

// Misuse is a bug in the caller: fail loudly in every build type.
void misuse_if(bool bad, const char *what)
{
	if (bad)
		throw std::logic_error(std::string("JsonWriter: ") + what);
}

} // namespace

void JsonWriter::before_value()
{
	if (after_key_) {
		after_key_ = false;
		return;
	}
	misuse_if(open_.empty() ? !out_.empty() : open_.back().object,
		  "value where a key is due, or a second top-level value");
	if (!open_.empty() && !std::exchange(open_.back().empty, false))
		out_ += ',';
}

JsonWriter &JsonWriter::scalar(std::string_view text)
{
	before_value();
	out_ += text;
	return *this;
}

JsonWriter &JsonWriter::open(char bracket, bool object)
{
	before_value();
	out_ += bracket;
	open_.push_back({.object = object, .empty = true});
	return *this;
}

JsonWriter &JsonWriter::close(char bracket, bool object)
{
	misuse_if(open_.empty() || open_.back().object != object || after_key_,
		  "unbalanced end of object or array");
	open_.pop_back();
	out_ += bracket;
	return *this;
}

JsonWriter &JsonWriter::begin_object() { return open('{', true); }
JsonWriter &JsonWriter::end_object() { return close('}', true); }
JsonWriter &JsonWriter::begin_array() { return open('[', false); }
JsonWriter &JsonWriter::end_array() { return close(']', false); }

JsonWriter &JsonWriter::key(std::string_view name)
{
	misuse_if(open_.empty() || !open_.back().object || after_key_,
		  "key outside an object, or two keys in a row");
	if (!std::exchange(open_.back().empty, false))
		out_ += ',';
	append_escaped(out_, name);
	out_ += ':';
	after_key_ = true;
	return *this;
}

JsonWriter &JsonWriter::value(std::string_view s)
{
	before_value();
	append_escaped(out_, s);
	return *this;
}

} // namespace mdr
