// SPDX-License-Identifier: GPL-2.0
//
// control_tests.h - the main() of the CMocka programs that run in a VM
// against /dev/mdroute-control (ioctl_abi.cc, ioctl_attach.cc). Include it
// last, in place of cmocka_cxx.h.
#ifndef MDR_TESTS_VM_CONTROL_TESTS_H
#define MDR_TESTS_VM_CONTROL_TESTS_H

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

#include "lib/client/control.h"

#include "tests/common/cmocka_cxx.h"

// Opens the control device into @fd, runs @tests after @setup, closes it.
// Returns the exit status: 0 pass, 1 fail, 77 skip (no control device:
// the module is not loaded).
template <size_t N>
int run_control_tests(const char *prog, int &fd, const struct CMUnitTest (&tests)[N],
		      CMFixtureFunction setup = nullptr)
{
	fd = open(mdr::kControlPath, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;

		printf("%s: cannot open %s: %s\n", prog, mdr::kControlPath, strerror(err));
		return err == ENOENT ? 77 : 1;
	}
	int failed = cmocka_run_group_tests(tests, setup, nullptr);
	close(fd);
	fd = -1;
	return failed ? 1 : 0;
}

#endif // MDR_TESTS_VM_CONTROL_TESTS_H
