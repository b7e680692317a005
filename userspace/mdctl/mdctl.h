// SPDX-License-Identifier: GPL-2.0
//
// mdctl.h - the mdroute admin command line, runnable without a process.
#ifndef MDCTL_MDCTL_H
#define MDCTL_MDCTL_H

#include "mdctl/env.h"

namespace mdctl {

// Runs "mdctl argv[1]...": 0 ok, 1 failure, 2 usage error.
int run(int argc, const char *const argv[], const Env &env);

} // namespace mdctl

#endif // MDCTL_MDCTL_H
