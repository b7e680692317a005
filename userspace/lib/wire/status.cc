// SPDX-License-Identifier: GPL-2.0
//
// status.cc - status and errno, each way, in one place; volume names.
#include <algorithm>
#include <cerrno>
#include <utility>

#include "lib/wire/fields.h"

namespace mdr::wire {

namespace {

struct StatusInfo {
	uint16_t status;
	int err;		// positive errno
	const char *name;
};

#define MDR_ST(st, err) {st, err, #st}
constexpr StatusInfo kStatus[] = {
	MDR_ST(MDR_ST_OK, 0),
	MDR_ST(MDR_ST_INVAL, EINVAL),
	MDR_ST(MDR_ST_NOENT, ENOENT),
	MDR_ST(MDR_ST_EXIST, EEXIST),
	MDR_ST(MDR_ST_NOSPC, ENOSPC),
	MDR_ST(MDR_ST_PERM, EPERM),
	MDR_ST(MDR_ST_BUSY, EBUSY),
	MDR_ST(MDR_ST_PROTO, EPROTO),
	MDR_ST(MDR_ST_VERSION, EPROTONOSUPPORT),
	MDR_ST(MDR_ST_STALE, ESTALE),
	MDR_ST(MDR_ST_AGAIN, EAGAIN),
	MDR_ST(MDR_ST_IO, EIO),
	MDR_ST(MDR_ST_NOMEM, ENOMEM),
	// Try again, at the leader the reply names: what a peer before
	// version 5 is told as AGAIN. EAGAIN stays AGAIN's (the first row).
	MDR_ST(MDR_ST_NOT_LEADER, EAGAIN),
};
#undef MDR_ST

constexpr bool status_table_in_order()
{
	for (size_t i = 0; i < std::size(kStatus); i++)
		if (kStatus[i].status != i)
			return false;
	return std::size(kStatus) == MDR_ST_MAX;
}
static_assert(status_table_in_order(), "kStatus: one row per status, in order");

// Other errno values a status stands for (errno_to_status only).
constexpr std::pair<int, uint16_t> kErrnoAliases[] = {
	{EACCES, MDR_ST_PERM},
	{EDQUOT, MDR_ST_NOSPC},
	{ENOBUFS, MDR_ST_NOMEM},
	{EBADMSG, MDR_ST_PROTO},
	{EMSGSIZE, MDR_ST_PROTO},
	{ENAMETOOLONG, MDR_ST_INVAL},
	{ERANGE, MDR_ST_INVAL},
	{EOVERFLOW, MDR_ST_INVAL},
	{ENODEV, MDR_ST_NOENT},
	{ENXIO, MDR_ST_NOENT},
	{ENOTEMPTY, MDR_ST_BUSY},
	{EINTR, MDR_ST_AGAIN},
	{ETIMEDOUT, MDR_ST_AGAIN},
};

} // namespace

int status_to_errno(uint16_t status)
{
	if (status >= MDR_ST_MAX)
		return -EPROTO;
	return -kStatus[status].err;
}

uint16_t errno_to_status(int err)
{
	const int e = err < 0 ? -err : err;

	for (const StatusInfo &s : kStatus)
		if (s.err == e)
			return s.status;
	for (const auto &[alias, status] : kErrnoAliases)
		if (alias == e)
			return status;
	return MDR_ST_IO;
}

std::string status_name(uint16_t status)
{
	if (status >= MDR_ST_MAX)
		return "MDR_ST_?" + std::to_string(status);
	return kStatus[status].name;
}

bool valid_volume_name(std::string_view name)
{
	return !name.empty() && name.size() < MDR_WIRE_NAME_LEN &&
	       std::all_of(name.begin(), name.end(), name_char);
}

} // namespace mdr::wire
