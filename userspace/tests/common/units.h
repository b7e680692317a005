// SPDX-License-Identifier: GPL-2.0
//
// units.h - the sizes tests speak in, in one place for every rig and
// helper header that names them (a test may include several).
#ifndef MDR_TESTS_UNITS_H
#define MDR_TESTS_UNITS_H

#include <cstdint>

namespace mdr::test {

inline constexpr uint64_t MiB = uint64_t{1} << 20;

} // namespace mdr::test

#endif // MDR_TESTS_UNITS_H
