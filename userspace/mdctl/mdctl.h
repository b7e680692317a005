// SPDX-License-Identifier: GPL-2.0
//
// mdctl.h - the mdroute admin command line, runnable without a process.
#ifndef MDCTL_MDCTL_H
#define MDCTL_MDCTL_H

#include <ostream>

#include "lib/client/control.h"
#include "mdctl/host.h"

namespace mdctl {

// Where a run writes and how it reaches the module.
struct Env {
	std::ostream &out;
	std::ostream &err;
	mdr::Sys &sys;
	Host &host;
};

// Runs "mdctl argv[1]...": 0 ok, 1 failure, 2 usage error.
int run(int argc, const char *const argv[], const Env &env);

} // namespace mdctl

#endif // MDCTL_MDCTL_H
