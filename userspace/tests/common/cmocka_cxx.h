// SPDX-License-Identifier: GPL-2.0
//
// cmocka_cxx.h - CMocka for C++: <cmocka.h> needs these headers first and
// declares its functions without extern "C". Include it after every other
// header: its macros (fail, ...) clash with names in the C++ library.
#ifndef MDR_TESTS_CMOCKA_CXX_H
#define MDR_TESTS_CMOCKA_CXX_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {
#include <cmocka.h>
}

#endif // MDR_TESTS_CMOCKA_CXX_H
