// SPDX-License-Identifier: GPL-2.0
//
// message.h - a message from its layout: the decoder the opcode table
// points at, the body an encoder writes, the length, and the words of the
// docs' message table. Internal to lib/wire/.
#ifndef MDR_WIRE_MESSAGE_H
#define MDR_WIRE_MESSAGE_H

#include <string>

#include "lib/wire/layouts.h"

namespace mdr::wire {

template <typename M>
using WireOf = typename Layout<M>::Wire;

// The lengths a message of type M may have.
template <typename M>
constexpr Shape shape_of()
{
	using L = Layout<M>;

	if constexpr (requires { L::shape; })
		return L::shape;
	else if constexpr (requires { typename L::Elem; })
		return {sizeof(WireOf<M>), sizeof(WireOf<typename L::Elem>)};
	else
		return {sizeof(WireOf<M>), 0};
}

// What of msg the fields are read from: a layout made of parts appended
// by later versions reads only the parts the length covers whole.
template <typename M>
Bytes covered(Bytes msg)
{
	if constexpr (requires { Layout<M>::part_ends; }) {
		size_t n = 0;

		for (size_t end : Layout<M>::part_ends)
			if (end <= msg.size())
				n = end;
		return msg.first(n);
	} else {
		return msg;
	}
}

// The body of a message of a length shape_of<M>() allows, exactly that
// many bytes: every field checked.
template <typename M>
Result<Body> decode_msg(What what, Bytes msg)
{
	const auto w = read_padded<WireOf<M>>(covered<M>(msg));
	Get v(what, msg, sizeof(w));
	M m;

	Layout<M>::fields(v, m, w);
	if (auto f = v.take_fault())
		return std::move(*f);
	return Body{std::move(m)};
}

// Bytes of the message m makes (more than MDR_WIRE_MSG_MAX for one with
// too many elements).
template <typename M>
size_t length_of(const M &m)
{
	auto w = zeroed<WireOf<M>>();
	Measure v(sizeof(w));

	Layout<M>::fields(v, m, w);
	return v.len;
}

// Writes m's len bytes into out, which has room for them, the header
// zero: the caller fills it in.
template <typename M>
Fault put_msg(What what, std::span<std::byte> out, size_t len, const M &m)
{
	auto w = zeroed<WireOf<M>>();
	Put v(what, out, sizeof(w));

	Layout<M>::fields(v, m, w);
	if (auto f = v.take_fault())
		return f;
	std::memcpy(out.data(), &w, std::min(len, sizeof(w)));
	return std::nullopt;
}

// "`mdr_wire_vol_rep` (136 + 16 n)", "hdr (24)": the message table's words.
template <typename M>
std::string doc_of()
{
	using L = Layout<M>;
	constexpr Shape s = shape_of<M>();

	if constexpr (requires { L::doc(); }) {
		return L::doc();
	} else if constexpr (std::is_same_v<WireOf<M>, mdr_wire_hdr>) {
		return "hdr (" + std::to_string(s.size) + ")";
	} else {
		std::string d = std::string("`") + L::wire_name + "` (" +
				std::to_string(s.size);

		if (s.elem)
			d += " + " + std::to_string(s.elem) + " n";
		d += ")";
		if constexpr (requires { L::note; })
			d += std::string(", ") + L::note;
		return d;
	}
}

} // namespace mdr::wire

#endif // MDR_WIRE_MESSAGE_H
