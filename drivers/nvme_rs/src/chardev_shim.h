/* SPDX-License-Identifier: GPL-2.0 */
/* The controller device's sysfs attributes (chardev_shim.c) and what chardev.rs gives them. */
#ifndef NVME_RS_CHARDEV_SHIM_H
#define NVME_RS_CHARDEV_SHIM_H

#include <linux/device.h>
#include <linux/fs.h>

bool nvme_rs_open_for_write(struct file *file);
int nvme_rs_reset_controller(struct device *dev);
ssize_t nvme_rs_show_identity(struct device *dev, const char *name, char *buf);
const struct attribute_group **nvme_rs_controller_attr_groups(void);

#endif
