/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * mdroute_wire.h - metadata protocol between mdroute hosts and mdnode.
 *
 * Shared verbatim by the kernel module, mdnode and mdctl. All multi-byte
 * fields on the wire are little-endian. Peers negotiate the version to
 * min(peer, own) when a connection is established.
 */
#ifndef _UAPI_LINUX_MDROUTE_WIRE_H
#define _UAPI_LINUX_MDROUTE_WIRE_H

#include <linux/types.h>

/* Highest wire protocol version this header describes. */
#define MDR_WIRE_VERSION	1

#endif /* _UAPI_LINUX_MDROUTE_WIRE_H */
