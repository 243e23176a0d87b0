// SPDX-License-Identifier: GPL-2.0
/*
 * nvme_rs's fault injection points (Documentation/fault-injection/): what a hostile or dying
 * controller could do to the driver and QEMU's does not, each a fault_attr under
 * /sys/kernel/debug/nvme_rs/. DECLARE_FAULT_ATTR is a macro; faults.rs decides what fails.
 * Without CONFIG_FAULT_INJECTION_DEBUG_FS nothing is created and nothing fails.
 */
#include <linux/debugfs.h>
#include <linux/fault-inject.h>

#include "faults_shim.h"

#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
/* In the order of faults.rs's FaultPoint. */
static DECLARE_FAULT_ATTR(fail_mmio_read);
static DECLARE_FAULT_ATTR(fail_csts_fatal);
static DECLARE_FAULT_ATTR(fail_mdts);
static DECLARE_FAULT_ATTR(fail_unique_completion);
static DECLARE_FAULT_ATTR(fail_io_interrupt);
static DECLARE_FAULT_ATTR(fail_prompt_cancel);
static DECLARE_FAULT_ATTR(fail_admin_completion);

static struct {
	const char *name;
	struct fault_attr *attr;
} nvme_rs_fault_points[] = {
	{ "fail_mmio_read", &fail_mmio_read },
	{ "fail_csts_fatal", &fail_csts_fatal },
	{ "fail_mdts", &fail_mdts },
	{ "fail_unique_completion", &fail_unique_completion },
	{ "fail_io_interrupt", &fail_io_interrupt },
	{ "fail_prompt_cancel", &fail_prompt_cancel },
	{ "fail_admin_completion", &fail_admin_completion },
};

static struct dentry *nvme_rs_fault_dir;

void nvme_rs_faults_create(void)
{
	unsigned int i;

	/* As every debugfs user, carry on without it. */
	nvme_rs_fault_dir = debugfs_create_dir("nvme_rs", NULL);
	for (i = 0; i < ARRAY_SIZE(nvme_rs_fault_points); i++)
		fault_create_debugfs_attr(nvme_rs_fault_points[i].name, nvme_rs_fault_dir,
					  nvme_rs_fault_points[i].attr);
}

void nvme_rs_faults_remove(void)
{
	debugfs_remove_recursive(nvme_rs_fault_dir);
}

bool nvme_rs_should_fail(unsigned int point)
{
	struct fault_attr *attr;

	if (point >= ARRAY_SIZE(nvme_rs_fault_points))
		return false;
	attr = nvme_rs_fault_points[point].attr;
	/* Off unless a test turned it on: should_fail() alone also obeys a task's fail-nth. */
	return READ_ONCE(attr->probability) && should_fail(attr, 1);
}
#else
void nvme_rs_faults_create(void) { }
void nvme_rs_faults_remove(void) { }
bool nvme_rs_should_fail(unsigned int point) { return false; }
#endif
