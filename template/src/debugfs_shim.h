/* SPDX-License-Identifier: GPL-2.0 */
/* The driver's debugfs directory, made by debugfs_shim.c for debugfs.rs. */
#ifndef EDU_DEBUGFS_SHIM_H
#define EDU_DEBUGFS_SHIM_H

#include <linux/types.h>

void edu_debugfs_create(u64 *verified_round_trips);
void edu_debugfs_remove(void);
bool edu_should_fail_coherent_alloc(void);

#endif
