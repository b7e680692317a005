// SPDX-License-Identifier: GPL-2.0
//
// main.cc - mdctl, the mdroute admin command line.
#include <iostream>

#include "mdctl/mdctl.h"

int main(int argc, char **argv)
{
	return mdctl::run(argc, argv, {std::cout, std::cerr, mdr::real_sys(), mdctl::real_host()});
}
