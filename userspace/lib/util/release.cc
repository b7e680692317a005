// SPDX-License-Identifier: GPL-2.0
//
// release.cc - the only file built with MDR_RELEASE defined.
#include "lib/util/release.h"

namespace mdr {

std::string_view release()
{
	return MDR_RELEASE;
}

} // namespace mdr
