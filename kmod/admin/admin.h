/* SPDX-License-Identifier: GPL-2.0 */
/* admin.h - the control device /dev/mdroute-control */
#ifndef MDR_ADMIN_H
#define MDR_ADMIN_H

int mdr_ctl_init(void);
void mdr_ctl_exit(void);

#endif /* MDR_ADMIN_H */
