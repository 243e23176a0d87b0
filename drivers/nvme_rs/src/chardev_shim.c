// SPDX-License-Identifier: GPL-2.0
/*
 * The controller device's sysfs attribute, which only the DEVICE_ATTR_WO macro defines; the
 * reset itself is chardev.rs's.
 */
#include <linux/device.h>

int nvme_rs_reset_controller(struct device *dev);
const struct device_attribute *nvme_rs_reset_controller_attr(void);

static ssize_t reset_controller_store(struct device *dev, struct device_attribute *attr,
				      const char *buf, size_t count)
{
	int ret = nvme_rs_reset_controller(dev);

	return ret ? ret : count;
}
static DEVICE_ATTR_WO(reset_controller);

const struct device_attribute *nvme_rs_reset_controller_attr(void)
{
	return &dev_attr_reset_controller;
}
