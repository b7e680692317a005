// SPDX-License-Identifier: GPL-2.0
//
// fields.h - what the wire's description is written in: field kinds, the
// checks a field can carry, and three walks over a description. Internal
// to lib/wire/.
//
// A layout (layouts.h) describes one struct of <linux/mdroute_wire.h> by a
// function that names each field once, in the order a receiver checks them:
//
//	static void fields(auto &v, auto &m, auto &w)
//	{
//		v.zero("reserved", w.reserved);
//		v.num("volume_id", m.volume_id, w.volume_id, nonzero);
//		v.rule([&](What at) { return range_fits(at, m.first, m.count); });
//	}
//
// with m the host-endian struct of wire.h and w the wire struct. Each walk
// gives the same lines its own meaning:
//   - Get reads w into m and runs the checks and rules in order; the first
//     that fails is its fault, and what follows is skipped;
//   - Put writes m into w, and elements into the message; it checks only
//     what does not fit (a string longer than its field): the encoders run
//     Get on what Put wrote, so the receiver's rules are written once;
//   - Measure adds up the length of the message m makes.
// Fields no rule needs may stand anywhere; a rule comes after the fields it
// reads.
#ifndef MDR_WIRE_FIELDS_H
#define MDR_WIRE_FIELDS_H

#include <algorithm>
#include <array>
#include <cerrno>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "lib/wire/wire.h"

namespace mdr::wire {

using Bytes = std::span<const std::byte>;
// The message or element a check speaks of: "vol_list_rep: vols[2]".
using What = std::string_view;
// What a check found wrong, if anything.
using Fault = std::optional<Error>;

constexpr size_t kHdrSize = sizeof(mdr_wire_hdr);
constexpr uint64_t kSizeAlign = 4096;	// volume sizes are multiples of it

// One description per struct: specialised in layouts.h.
template <typename T>
struct Layout;

// Bytes a message of a layout may have, header included.
struct Shape {
	size_t size;	// the fixed part, or the least a later version extends
	size_t elem;	// 0: exactly size (or alt); else size + n * elem
	size_t alt = 0;	// another exact length that is accepted, if not 0
	// Elements a later version made longer: size + n * long_elem too.
	size_t long_elem = 0;
};

// ---- Messages of errors ---------------------------------------------------

struct Hex {
	uint64_t v;
};

inline void append(std::string &s, std::string_view v) { s += v; }

template <std::integral T>
void append(std::string &s, T v)
{
	s += std::to_string(v);
}

inline void append(std::string &s, Hex h)
{
	char buf[24];

	std::snprintf(buf, sizeof(buf), "0x%llx",
		      static_cast<unsigned long long>(h.v));
	s += buf;
}

// Error(-err, "what: args...")
template <typename... Args>
Error fail(int err, std::string_view what, const Args &...args)
{
	std::string m(what);

	m += ": ";
	(append(m, args), ...);
	return Error(-err, std::move(m));
}

// fail(EINVAL, ...) when bad.
template <typename... Args>
Fault fail_if(bool bad, std::string_view what, const Args &...args)
{
	if (bad)
		return fail(EINVAL, what, args...);
	return std::nullopt;
}

template <typename T>
Error forward(const Result<T> &r)
{
	return Error(r.error(), r.message());
}

// "what: array[i]"
inline std::string element(What w, const char *array, size_t i)
{
	std::string s(w);

	s += ": ";
	s += array;
	s += '[';
	s += std::to_string(i);
	s += ']';
	return s;
}

// ---- Raw bytes ------------------------------------------------------------

// Received bytes have no alignment: copy structs out, never cast.
template <typename T>
T read(Bytes b, size_t off = 0)
{
	static_assert(std::is_trivially_copyable_v<T>);
	T t;

	std::memcpy(&t, b.data() + off, sizeof(T));
	return t;
}

template <typename T>
void write(std::span<std::byte> b, size_t off, const T &t)
{
	static_assert(std::is_trivially_copyable_v<T>);
	std::memcpy(b.data() + off, &t, sizeof(T));
}

template <typename T>
T zeroed()
{
	static_assert(std::is_trivially_copyable_v<T>);
	T t;

	std::memset(&t, 0, sizeof(t));
	return t;
}

// What b holds of a T, the rest zero: a shorter message of an older
// version reads as one whose later fields are zero.
template <typename T>
T read_padded(Bytes b)
{
	T t = zeroed<T>();

	std::memcpy(&t, b.data(), std::min(b.size(), sizeof(T)));
	return t;
}

template <typename T>
Bytes bytes_of(const T &t)
{
	return Bytes(reinterpret_cast<const std::byte *>(&t), sizeof(t));
}

inline bool all_zero(const void *p, size_t n)
{
	const auto *b = static_cast<const unsigned char *>(p);

	return std::all_of(b, b + n, [](unsigned char c) { return c == 0; });
}

template <typename T>
bool all_zero(const T &field)
{
	return all_zero(&field, sizeof(field));
}

// Bytes of a message of fixed part size and n elements of elem bytes
// (more than MDR_WIRE_MSG_MAX when n is absurd, without overflowing).
inline size_t variable_len(size_t size, size_t elem, size_t n)
{
	if (n > MDR_WIRE_MSG_MAX / elem)
		return MDR_WIRE_MSG_MAX + 1;
	return size + n * elem;
}

// ---- Strings --------------------------------------------------------------

inline bool name_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

// A NUL-terminated, NUL-padded field whose characters pass ok: its
// length, or what is wrong (a problem of its own or what bad_char says).
template <size_t N>
Fault get_padded(What at, const char *label, const char (&f)[N], std::string &out,
		 bool (*ok)(char), const char *bad_char)
{
	const void *nul = std::memchr(f, 0, N);

	if (!nul)
		return fail(EINVAL, at, label, " not NUL-terminated");
	const auto len = static_cast<size_t>(static_cast<const char *>(nul) - f);
	if (!std::all_of(f, f + len, ok))
		return fail(EINVAL, at, label, bad_char);
	if (!all_zero(f + len, N - len))
		return fail(EINVAL, at, label, " not NUL-padded");
	out.assign(f, len);
	return std::nullopt;
}

inline Fault get_name(What at, const char (&f)[MDR_WIRE_NAME_LEN], std::string &out)
{
	if (f[0] == 0)
		return fail(EINVAL, at, "name empty");
	return get_padded(at, "name", f, out, name_char,
			  " has a character outside [A-Za-z0-9._-]");
}

// Printable ASCII, may be empty: a serial, an identity.
template <size_t N>
Fault get_printable(What at, const char *label, const char (&f)[N], std::string &out)
{
	return get_padded(at, label, f, out, [](char c) { return c >= 0x20 && c < 0x7f; },
			  " has a non-printable character");
}

// Copies a string into a NUL-padded field; the rest is the receiver's rules.
template <size_t N>
Fault put_string(What at, const char *label, char (&f)[N], std::string_view s)
{
	if (s.size() >= N)
		return fail(EINVAL, at, label, " longer than ", N - 1, " characters");
	std::memset(f, 0, N);
	std::memcpy(f, s.data(), s.size());
	return std::nullopt;
}

// ---- Checks a number can carry --------------------------------------------
//
// Each is called with the message, the field's name and its value as
// received, before the value is narrowed to the host field.

inline Fault nonzero(What at, const char *label, uint64_t v)
{
	return fail_if(!v, at, label, " zero");
}

// lo ..= hi
struct within {
	uint64_t lo, hi;

	Fault operator()(What at, const char *label, uint64_t v) const
	{
		return fail_if(v < lo || v > hi, at, label, " ", v, " outside [", lo,
			       ", ", hi, "]");
	}
};

// An enum whose values are lo ..= hi.
struct known {
	uint64_t lo, hi;

	Fault operator()(What at, const char *label, uint64_t v) const
	{
		return fail_if(v < lo || v > hi, at, "unknown ", label, " ", v);
	}
};

// Flags: no bit beyond mask.
struct flags_in {
	uint64_t mask;

	Fault operator()(What at, const char *label, uint64_t v) const
	{
		return fail_if(v & ~mask, at, "unknown ", label, " ", Hex{v});
	}
};

// An enum of max values (status).
struct below {
	uint64_t max;

	Fault operator()(What at, const char *label, uint64_t v) const
	{
		return fail_if(v >= max, at, label, " ", v, " out of range");
	}
};

inline Fault volume_size(What at, const char *label, uint64_t v)
{
	if (v == 0)
		return fail(EINVAL, at, label, " zero");
	if (v % kSizeAlign)
		return fail(EINVAL, at, label, " ", v, " not a multiple of ", kSizeAlign);
	return std::nullopt;
}

constexpr within kExtentShift{MDR_WIRE_EXTENT_SHIFT_MIN, MDR_WIRE_EXTENT_SHIFT_MAX};

// 0 (the default) or an extent shift.
inline Fault shift_or_default(What at, const char *label, uint64_t v)
{
	return fail_if(v && (v < kExtentShift.lo || v > kExtentShift.hi), at, label, " ",
		       v, " neither 0 nor within [", kExtentShift.lo, ", ",
		       kExtentShift.hi, "]");
}

// ---- The walks ------------------------------------------------------------

// What a walk does not do: each leaves out the kinds of lines that mean
// nothing to it.
#define MDR_SKIP(kind) template <typename... A> void kind(A &&...) {}
struct Skip {
	MDR_SKIP(num) MDR_SKIP(zero) MDR_SKIP(name) MDR_SKIP(printable) MDR_SKIP(bytes)
	MDR_SKIP(rule) MDR_SKIP(nested) MDR_SKIP(count) MDR_SKIP(elements)
	MDR_SKIP(volume_ref) MDR_SKIP(mapped_entry) MDR_SKIP(magic) MDR_SKIP(long_form)
	MDR_SKIP(elem_form) MDR_SKIP(optional_part)
};
#undef MDR_SKIP

// Walks V over a struct of its own layout, the part at of a message.
template <typename V, typename H, typename W>
Fault walk_part(const std::string &at, H &host, W &wire)
{
	V sub(at);

	Layout<std::remove_const_t<H>>::fields(sub, host, wire);
	return sub.take_fault();
}

class Get {
public:
	// msg: the whole message, whose elements start at elems.
	explicit Get(What what, Bytes msg = {}, size_t elems = 0)
		: what_(what), msg_(msg), elems_(elems) {}

	Fault fault;

	// As Put::take_fault(), which says why it is out of line.
	[[gnu::noinline]] Fault take_fault() { return std::move(fault); }

	// A number; checks see it as received.
	template <typename H, typename L, typename... C>
	void num([[maybe_unused]] const char *label, H &host, const L &wire,
		 const C &...checks)
	{
		if (fault)
			return;
		const uint64_t v = load(wire);
		if ((... || (fault = checks(what_, label, v))))
			return;
		host = static_cast<H>(v);
	}

	// A field the host does not see: zero.
	template <typename L>
	void zero(const char *label, const L &wire)
	{
		if (!fault && !all_zero(wire))
			fault = fail(EINVAL, what_, label, " not zero");
	}

	void name(std::string &host, const char (&wire)[MDR_WIRE_NAME_LEN])
	{
		if (!fault)
			fault = get_name(what_, wire, host);
	}

	template <size_t N>
	void printable(const char *label, std::string &host, const char (&wire)[N])
	{
		if (!fault)
			fault = get_printable(what_, label, wire, host);
	}

	template <size_t N>
	void bytes(std::array<uint8_t, N> &host, const __u8 (&wire)[N])
	{
		std::memcpy(host.data(), wire, N);
	}

	// A check of several fields, or of one against the message.
	template <typename R>
	void rule(const R &r)
	{
		if (!fault)
			fault = r(what_);
	}

	// A struct of its own layout in this one: "what: label: ...".
	template <typename H, typename W>
	void nested(const char *label, H &host, const W &wire)
	{
		if (!fault)
			fault = walk_part<Get>(std::string(what_) + ": " + label, host, wire);
	}

	// The count of the elements that follow the fixed part: the length
	// says how many there are; a count that disagrees is a framing error.
	template <typename L, typename E>
	void count(const char *label, const L &wire, std::vector<E> &host)
	{
		if (fault)
			return;
		const size_t n = elements_in<E>();
		// Elements of two sizes: a length that is a multiple of the
		// other size passed the size check, and must be of this one.
		if ((msg_.size() - elems_) % elem_size<E>()) {
			fault = fail(EPROTO, what_, label, " ", load(wire), ": the length ",
				     msg_.size(), " is not ", elems_, " + a multiple of ",
				     elem_size<E>());
			return;
		}
		if (load(wire) != n) {
			fault = fail(EPROTO, what_, label, " ", load(wire),
				     " disagrees with the length (", n, " ",
				     Layout<E>::noun, ")");
			return;
		}
		host.resize(n);
	}

	// The elements, each checked by its own layout, then by the rules
	// (What at, const std::vector<E> &, size_t i) of the message.
	template <typename E, typename... R>
	void elements(const char *label, std::vector<E> &host, const R &...rules)
	{
		using EW = typename Layout<E>::Wire;

		const size_t size = elem_size<E>();

		host.resize(elements_in<E>());
		for (size_t i = 0; !fault && i < host.size(); i++) {
			const std::string at = element(what_, label, i);
			// A short element reads as a long one whose later fields are zero.
			const auto el = read_padded<EW>(msg_.subspan(elems_ + i * size, size));

			fault = walk_part<Get>(at, host[i], el);
			if (!fault)
				(void)(... || (fault = rules(at, host, i)));
		}
	}

	// A volume named by id or, with the flag by_name stands for, by name
	// (the other all zero).
	void volume_ref(uint64_t &id, const __le64 &wire_id, std::string &name,
			const char (&wire_name)[MDR_WIRE_NAME_LEN], bool by_name,
			const char *flag)
	{
		if (fault)
			return;
		id = load(wire_id);
		if (by_name) {
			if (id)
				fault = fail(EINVAL, what_, "volume_id set with ", flag);
			else
				fault = get_name(what_, wire_name, name);
		} else if (!all_zero(wire_name)) {
			fault = fail(EINVAL, what_, "name set without ", flag);
		} else if (!id) {
			fault = fail(EINVAL, what_, "volume_id zero");
		}
	}

	// An extent entry of (volume_id, index), valid and mapped.
	void mapped_entry(Entry &host, const mdr_wire_entry &wire,
			  uint64_t volume_id, uint64_t index)
	{
		if (fault)
			return;
		const EntryCheck c = verify_entry(wire, volume_id, index);
		if (c != EntryCheck::ok) {
			fault = fail(EINVAL, what_, "entry: ", entry_check_name(c));
			return;
		}
		host = decode_entry(wire);
		if (host.state != MDR_EXT_MAPPED)
			fault = fail(EINVAL, what_, "entry not mapped");
	}

	void magic(const __le32 &wire, uint32_t want)
	{
		if (!fault && load(wire) != want)
			fault = fail(EPROTO, what_, "bad magic ", Hex{load(wire)});
	}

	// A message whose later version is longer: host tells which one came.
	void long_form(bool &host, size_t, size_t long_size)
	{
		host = msg_.size() == long_size;
	}

	// A part a later version appends to a message of short_size bytes,
	// long_size with it: there (host set, checked by its own layout) when
	// the length is the long one, else none.
	template <typename H, typename W>
	void optional_part(const char *label, std::optional<H> &host, const W &wire,
			   size_t, size_t long_size)
	{
		host.reset();
		if (fault || msg_.size() != long_size)
			return;
		fault = walk_part<Get>(std::string(what_) + ": " + label, host.emplace(), wire);
	}

	// Elements whose later version is longer, the short form their first
	// bytes: the count and the length tell which came, host says (no
	// element: the short one). Before count() and elements().
	template <typename L>
	void elem_form(bool &host, size_t short_size, size_t long_size, const L &count)
	{
		const size_t n = load(count);

		host = n && msg_.size() - elems_ == n * long_size;
		elem_ = host ? long_size : short_size;
	}

private:
	template <typename E>
	size_t elem_size() const
	{
		return elem_ ? elem_ : sizeof(typename Layout<E>::Wire);
	}
	template <typename E>
	size_t elements_in() const
	{
		return (msg_.size() - elems_) / elem_size<E>();
	}

	What what_;
	Bytes msg_;
	size_t elems_;
	size_t elem_ = 0;	// bytes of an element, when elem_form() said
};

class Put : public Skip {
public:
	// out: the whole message (room checked), whose elements start at elems.
	explicit Put(What what, std::span<std::byte> out = {}, size_t elems = 0)
		: what_(what), out_(out), elems_(elems) {}

	Fault fault;

	// The fault, taken out of line: inlined into the encoder of a layout
	// whose fields cannot fail, GCC 12 at -O2 (ASan) calls the copy of the
	// never-engaged optional "maybe uninitialized", a false positive.
	[[gnu::noinline]] Fault take_fault() { return std::move(fault); }

	template <typename H, typename L, typename... C>
	void num(const char *, const H &host, L &wire, const C &...)
	{
		store(wire, host);
	}

	void name(const std::string &host, char (&wire)[MDR_WIRE_NAME_LEN])
	{
		if (!fault)
			fault = put_string(what_, "name", wire, host);
	}

	template <size_t N>
	void printable(const char *label, const std::string &host, char (&wire)[N])
	{
		if (!fault)
			fault = put_string(what_, label, wire, host);
	}

	template <size_t N>
	void bytes(const std::array<uint8_t, N> &host, __u8 (&wire)[N])
	{
		std::memcpy(wire, host.data(), N);
	}

	template <typename H, typename W>
	void nested(const char *label, const H &host, W &wire)
	{
		if (!fault)
			fault = walk_part<Put>(std::string(what_) + ": " + label, host, wire);
	}

	template <typename L, typename E>
	void count(const char *, L &wire, const std::vector<E> &host)
	{
		store(wire, static_cast<uint32_t>(host.size()));
	}

	template <typename E, typename... R>
	void elements(const char *label, const std::vector<E> &host, const R &...)
	{
		using EW = typename Layout<E>::Wire;
		const size_t size = elem_ ? elem_ : sizeof(EW);

		for (size_t i = 0; !fault && i < host.size(); i++) {
			const std::string at = element(what_, label, i);
			auto el = zeroed<EW>();

			fault = walk_part<Put>(at, host[i], el);
			std::memcpy(out_.data() + elems_ + i * size, &el, size);
		}
	}

	template <typename L>
	void elem_form(const bool &host, size_t short_size, size_t long_size, L &)
	{
		elem_ = host ? long_size : short_size;
	}

	template <typename H, typename W>
	void optional_part(const char *label, const std::optional<H> &host, W &wire, size_t,
			   size_t)
	{
		if (!fault && host)
			fault = walk_part<Put>(std::string(what_) + ": " + label, *host, wire);
	}

	void volume_ref(const uint64_t &id, __le64 &wire_id, const std::string &vol_name,
			char (&wire_name)[MDR_WIRE_NAME_LEN], bool, const char *)
	{
		store(wire_id, id);
		name(vol_name, wire_name);
	}

	// Sealed as it is: the caller (mdnode) keeps entries valid.
	void mapped_entry(const Entry &host, mdr_wire_entry &wire,
			  uint64_t volume_id, uint64_t index)
	{
		wire = make_entry(host, volume_id, index);
	}

	void magic(__le32 &wire, uint32_t want)
	{
		store(wire, want);
	}

private:
	What what_;
	std::span<std::byte> out_;
	size_t elems_;
	size_t elem_ = 0;	// bytes of an element, when elem_form() said
};

class Measure : public Skip {
public:
	explicit Measure(size_t fixed) : len(fixed) {}

	size_t len;

	template <typename E, typename... R>
	void elements(const char *, const std::vector<E> &host, const R &...)
	{
		len = variable_len(len, elem_ ? elem_ : sizeof(typename Layout<E>::Wire),
				   host.size());
	}

	void long_form(const bool &host, size_t short_size, size_t long_size)
	{
		len = host ? long_size : short_size;
	}

	template <typename L>
	void elem_form(const bool &host, size_t short_size, size_t long_size, const L &)
	{
		elem_ = host ? long_size : short_size;
	}

	template <typename H, typename W>
	void optional_part(const char *, const std::optional<H> &host, const W &,
			   size_t short_size, size_t long_size)
	{
		len = host ? long_size : short_size;
	}

private:
	size_t elem_ = 0;
};

} // namespace mdr::wire

#endif // MDR_WIRE_FIELDS_H
