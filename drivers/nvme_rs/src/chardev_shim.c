// SPDX-License-Identifier: GPL-2.0
/*
 * The controller device's sysfs attributes, which only the DEVICE_ATTR_* macros define, as C's
 * /sys/class/nvme/nvme<C> has them: reset_controller, model, serial, firmware_rev and cntlid. What
 * each does or shows is chardev.rs's.
 */
#include "chardev_shim.h"

static ssize_t reset_controller_store(struct device *dev, struct device_attribute *attr,
				      const char *buf, size_t count)
{
	int ret = nvme_rs_reset_controller(dev);

	return ret ? ret : count;
}
static DEVICE_ATTR_WO(reset_controller);

/* The field numbers are chardev.rs's IdentityField. */
static ssize_t model_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return nvme_rs_show_identity(dev, 0, buf);
}
static DEVICE_ATTR_RO(model);

static ssize_t serial_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return nvme_rs_show_identity(dev, 1, buf);
}
static DEVICE_ATTR_RO(serial);

static ssize_t firmware_rev_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return nvme_rs_show_identity(dev, 2, buf);
}
static DEVICE_ATTR_RO(firmware_rev);

static ssize_t cntlid_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return nvme_rs_show_identity(dev, 3, buf);
}
static DEVICE_ATTR_RO(cntlid);

static struct attribute *nvme_rs_controller_attrs[] = {
	&dev_attr_reset_controller.attr,
	&dev_attr_model.attr,
	&dev_attr_serial.attr,
	&dev_attr_firmware_rev.attr,
	&dev_attr_cntlid.attr,
	NULL,
};

ATTRIBUTE_GROUPS(nvme_rs_controller);

const struct attribute_group **nvme_rs_controller_attr_groups(void)
{
	return nvme_rs_controller_groups;
}
