// SPDX-License-Identifier: GPL-2.0
/*
 * The controller device's sysfs attributes, which only the DEVICE_ATTR_* macros define, as C's
 * /sys/class/nvme/nvme<C> has them: reset_controller, model, serial, firmware_rev and cntlid. What
 * each does or shows is chardev.rs's. And FMODE_WRITE, a macro bindgen cannot read.
 */
#include "chardev_shim.h"

bool nvme_rs_open_for_write(struct file *file)
{
	return file->f_mode & FMODE_WRITE;
}

static ssize_t reset_controller_store(struct device *dev, struct device_attribute *attr,
				      const char *buf, size_t count)
{
	int ret = nvme_rs_reset_controller(dev);

	return ret ? ret : count;
}
static DEVICE_ATTR_WO(reset_controller);

/* The Identify Controller fields, one show for all: chardev.rs tells them by name. */
static ssize_t identity_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return nvme_rs_show_identity(dev, attr->attr.name, buf);
}
static struct device_attribute dev_attr_model = __ATTR(model, 0444, identity_show, NULL);
static struct device_attribute dev_attr_serial = __ATTR(serial, 0444, identity_show, NULL);
static struct device_attribute dev_attr_firmware_rev =
	__ATTR(firmware_rev, 0444, identity_show, NULL);
static struct device_attribute dev_attr_cntlid = __ATTR(cntlid, 0444, identity_show, NULL);

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
