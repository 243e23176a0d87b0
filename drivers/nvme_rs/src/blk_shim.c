// SPDX-License-Identifier: GPL-2.0
/*
 * One-line wrappers of the blk-mq static inline functions and macros that Rust cannot call, the
 * block_device_operations (the namespace's ioctls, nsdev.rs's), which needs its owner, and the
 * disks' sysfs attributes, which only the attribute macros define. No driver logic lives here.
 */
#include <linux/module.h>

#include "blk_shim.h"

/* src/blk.rs mirrors these values. */
static_assert((__force u8)BLK_STS_OK == 0 && (__force u8)BLK_STS_NOTSUPP == 1);
static_assert((__force u8)BLK_STS_TIMEOUT == 2 && (__force u8)BLK_STS_RESOURCE == 9);
static_assert((__force u8)BLK_STS_IOERR == 10);
static_assert((__force u32)BLK_FEAT_WRITE_CACHE == 1 && (__force u32)BLK_FEAT_FUA == 2);
static_assert((__force u32)BLK_FEAT_ATOMIC_WRITES == 1 << 14 && (__force u8)BLK_STS_INVAL == 19);
/* Request::op in src/blk.rs reads the field behind this. */
static_assert((__force u32)REQ_OP_MASK == (1 << REQ_OP_BITS) - 1);

static int nvme_rs_disk_open(struct gendisk *disk, blk_mode_t mode)
{
	return nvme_rs_namespace_open(disk->private_data);
}

static void nvme_rs_disk_release(struct gendisk *disk)
{
	nvme_rs_namespace_release(disk->private_data);
}

static int nvme_rs_disk_ioctl(struct block_device *bdev, blk_mode_t mode, unsigned int cmd,
			      unsigned long arg)
{
	return nvme_rs_namespace_ioctl(bdev->bd_disk->private_data, cmd, arg,
				       mode & BLK_OPEN_WRITE, bdev_is_partition(bdev));
}

static const struct block_device_operations nvme_rs_block_ops = {
	.owner = THIS_MODULE,
	.open = nvme_rs_disk_open,
	.release = nvme_rs_disk_release,
	.ioctl = nvme_rs_disk_ioctl,
	.compat_ioctl = blkdev_compat_ptr_ioctl,
};

struct gendisk *nvme_rs_alloc_disk(struct blk_mq_tag_set *set, struct queue_limits *lim,
				   void *queuedata)
{
	return blk_mq_alloc_disk(set, lim, queuedata);
}

const struct block_device_operations *nvme_rs_fops(void)
{
	return &nvme_rs_block_ops;
}

bool nvme_rs_should_fake_timeout(struct request_queue *q)
{
	return blk_should_fake_timeout(q);
}

struct request *nvme_rs_tag_to_rq(struct blk_mq_tags *tags, unsigned int tag)
{
	return blk_mq_tag_to_rq(tags, tag);
}

void *nvme_rs_page_address(struct page *page)
{
	return page_address(page);
}

bool nvme_rs_add_to_batch(struct request *rq, struct io_comp_batch *iob, bool is_error,
			  void (*complete)(struct io_comp_batch *iob))
{
	return blk_mq_add_to_batch(rq, iob, is_error, complete);
}

struct queue_limits nvme_rs_limits_start_update(struct request_queue *q)
{
	return queue_limits_start_update(q);
}

unsigned int nvme_rs_noio_save(void)
{
	return memalloc_noio_save();
}

void nvme_rs_noio_restore(unsigned int flags)
{
	memalloc_noio_restore(flags);
}

/*
 * A disk's attributes, as C's namespaces have them: nsid and wwid. One show for both: namespace.rs
 * tells them by name, from the namespace that is the disk's queue data.
 */
static ssize_t namespace_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return nvme_rs_show_namespace(dev_to_disk(dev)->queue->queuedata, attr->attr.name, buf);
}
static struct device_attribute dev_attr_nsid = __ATTR(nsid, 0444, namespace_show, NULL);
static struct device_attribute dev_attr_wwid = __ATTR(wwid, 0444, namespace_show, NULL);

static struct attribute *nvme_rs_disk_attrs[] = {
	&dev_attr_nsid.attr,
	&dev_attr_wwid.attr,
	NULL,
};

ATTRIBUTE_GROUPS(nvme_rs_disk);

const struct attribute_group **nvme_rs_disk_attr_groups(void)
{
	return nvme_rs_disk_groups;
}
