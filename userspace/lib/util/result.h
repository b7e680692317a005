// SPDX-License-Identifier: GPL-2.0
//
// result.h - return type of the control path: a value, or a negative errno
// with an optional message for the reader.
#ifndef MDR_RESULT_H
#define MDR_RESULT_H

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace mdr {

struct Error {
	explicit Error(int code, std::string message = {})
		: code(code), message(std::move(message))
	{
		assert(code < 0);
	}

	int code;		// -errno
	std::string message;	// empty when the errno says it all
};

// Accessing the alternative that is not held throws std::bad_variant_access
// (or std::bad_optional_access for Status): a bug, never a control flow.
template <typename T>
class [[nodiscard]] Result {
public:
	Result(T value) : v_(std::move(value)) {}
	Result(Error error) : v_(std::move(error)) {}

	bool ok() const { return std::holds_alternative<T>(v_); }

	T &value() & { return std::get<T>(v_); }
	const T &value() const & { return std::get<T>(v_); }
	T &&value() && { return std::get<T>(std::move(v_)); }

	int error() const { return std::get<Error>(v_).code; }
	const std::string &message() const { return std::get<Error>(v_).message; }

private:
	std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
public:
	Result() = default;
	Result(Error error) : error_(std::move(error)) {}

	bool ok() const { return !error_; }

	int error() const { return error_.value().code; }
	const std::string &message() const { return error_.value().message; }

private:
	std::optional<Error> error_;
};

using Status = Result<void>;

} // namespace mdr

#endif // MDR_RESULT_H
