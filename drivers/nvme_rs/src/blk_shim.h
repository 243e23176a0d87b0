/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One-line wrappers of the blk-mq static inline functions and macros that nvme_rs's Rust code
 * (src/blk.rs) cannot call. No driver logic lives here.
 */
#ifndef NVME_RS_BLK_SHIM_H
#define NVME_RS_BLK_SHIM_H

#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>

struct gendisk *nvme_rs_alloc_disk(struct blk_mq_tag_set *set, struct queue_limits *lim,
				   void *queuedata);
const struct block_device_operations *nvme_rs_fops(void);
struct queue_limits nvme_rs_limits_start_update(struct request_queue *q);
unsigned int nvme_rs_noio_save(void);
void nvme_rs_noio_restore(unsigned int flags);
bool nvme_rs_should_fake_timeout(struct request_queue *q);
struct request *nvme_rs_tag_to_rq(struct blk_mq_tags *tags, unsigned int tag);
void *nvme_rs_page_address(struct page *page);
bool nvme_rs_add_to_batch(struct request *rq, struct io_comp_batch *iob, bool is_error,
			  void (*complete)(struct io_comp_batch *iob));
const struct attribute_group **nvme_rs_disk_attr_groups(void);
/* namespace.rs */
ssize_t nvme_rs_show_namespace(void *namespace, const char *name, char *buf);
/* nsdev.rs */
int nvme_rs_namespace_open(const void *handle);
void nvme_rs_namespace_release(const void *handle);
int nvme_rs_namespace_ioctl(const void *handle, unsigned int cmd, unsigned long arg,
			    bool open_for_write, bool partition);

#endif /* NVME_RS_BLK_SHIM_H */
