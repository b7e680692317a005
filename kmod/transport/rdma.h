/* SPDX-License-Identifier: GPL-2.0 */
/* rdma.h - what the RDMA transport shares beyond the transport ops */
#ifndef MDR_TRANSPORT_RDMA_H
#define MDR_TRANSPORT_RDMA_H

struct dentry;

/*
 * /sys/kernel/debug/mdroute: looked up (or created) by mdr_rdma_init(),
 * which puts one read-only file per connection under its "connections"
 * directory. NULL before mdr_rdma_init() or without debugfs.
 */
struct dentry *mdr_debugfs_root(void);

#endif /* MDR_TRANSPORT_RDMA_H */
