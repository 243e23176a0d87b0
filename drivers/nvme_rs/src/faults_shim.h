/* SPDX-License-Identifier: GPL-2.0 */
/* The fault injection points of faults_shim.c, for faults.rs. */
#ifndef NVME_RS_FAULTS_SHIM_H
#define NVME_RS_FAULTS_SHIM_H

#include <linux/types.h>

void nvme_rs_faults_create(void);
void nvme_rs_faults_remove(void);
bool nvme_rs_should_fail(unsigned int point);

#endif
