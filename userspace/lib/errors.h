// SPDX-License-Identifier: GPL-2.0
//
// errors.h - errno values as people read them. Both functions take a
// positive errno (negate a Result's error()) and are thread-safe.
#ifndef MDR_ERRORS_H
#define MDR_ERRORS_H

#include <string>

namespace mdr {

// "EBUSY"; "E?<n>" for a value missing from the table.
std::string errno_name(int err);

// "Device or resource busy (EBUSY)".
std::string describe_errno(int err);

} // namespace mdr

#endif // MDR_ERRORS_H
