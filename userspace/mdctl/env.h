// SPDX-License-Identifier: GPL-2.0
//
// env.h - where a run of mdctl writes and how it reaches the module and the
// host: what every command is given. Apart from mdctl.h (run()) so that the
// command table and the command files depend on it without depending on the
// dispatch that runs them.
#ifndef MDCTL_ENV_H
#define MDCTL_ENV_H

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

} // namespace mdctl

#endif // MDCTL_ENV_H
