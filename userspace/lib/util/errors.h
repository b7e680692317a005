// SPDX-License-Identifier: GPL-2.0
//
// errors.h - errno values as people read them, and as Errors. errno_name()
// and describe_errno() take a positive errno (negate a Result's error());
// all are thread-safe.
#ifndef MDR_ERRORS_H
#define MDR_ERRORS_H

#include <string>
#include <string_view>

#include "lib/util/result.h"

namespace mdr {

// "EBUSY"; "E?<n>" for a value missing from the table.
std::string errno_name(int err);

// "Device or resource busy (EBUSY)".
std::string describe_errno(int err);

// The failure of a call that reports it in errno (EIO if it left none), with
// what was being done as the message: call it right after the failed call.
Error errno_error(std::string_view what);

} // namespace mdr

#endif // MDR_ERRORS_H
