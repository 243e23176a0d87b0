// SPDX-License-Identifier: GPL-2.0
/*
 * The driver's debugfs directory, /sys/kernel/debug/<module>/: the counter debugfs.rs keeps, and
 * the fault injection point fail_coherent_alloc (Documentation/fault-injection/), which needs C:
 * DECLARE_FAULT_ATTR is a macro. Without CONFIG_FAULT_INJECTION_DEBUG_FS the point does not exist
 * and never fails.
 */
#include <linux/debugfs.h>
#include <linux/fault-inject.h>

#include "debugfs_shim.h"

static struct dentry *edu_debugfs_dir;

#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
static DECLARE_FAULT_ATTR(fail_coherent_alloc);

bool edu_should_fail_coherent_alloc(void)
{
	/* Off unless a test turned it on: should_fail() alone also obeys a task's fail-nth. */
	return READ_ONCE(fail_coherent_alloc.probability) && should_fail(&fail_coherent_alloc, 1);
}
#else
bool edu_should_fail_coherent_alloc(void) { return false; }
#endif

void edu_debugfs_create(u64 *verified_round_trips)
{
	/* As every debugfs user, carry on without it. */
	edu_debugfs_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_u64("verified_round_trips", 0444, edu_debugfs_dir, verified_round_trips);
#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
	fault_create_debugfs_attr("fail_coherent_alloc", edu_debugfs_dir, &fail_coherent_alloc);
#endif
}

void edu_debugfs_remove(void)
{
	debugfs_remove_recursive(edu_debugfs_dir);
}
