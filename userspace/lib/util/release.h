// SPDX-License-Identifier: GPL-2.0
//
// release.h - the release of this user space build.
#ifndef MDR_RELEASE_H
#define MDR_RELEASE_H

#include <string_view>

namespace mdr {

// As configured with the CMake cache variable MDR_RELEASE, e.g. "0.1.0".
std::string_view release();

} // namespace mdr

#endif // MDR_RELEASE_H
