/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C wrappers that dma_local.rs declares in its extern block; this header lets the compiler check
 * the definitions against one declaration. Vendored with dma_local.rs.
 */
#ifndef DMA_LOCAL_SHIM_H
#define DMA_LOCAL_SHIM_H

#include <linux/types.h>
#include <linux/dma-direction.h>

/*
 * Each wrapper's symbol carries the module's name, DMA_LOCAL_MODNAME (set by scripts/kernel-cfg.mk,
 * which every Kbuild file includes): dma_local_map_single is e1000_rs_dma_local_map_single in
 * e1000_rs, so that the copies in two drivers built into one kernel do not clash. dma_local.rs
 * links to the same names.
 */
#ifndef DMA_LOCAL_MODNAME
#error "dma_local needs DMA_LOCAL_MODNAME: include scripts/kernel-cfg.mk in the Kbuild file"
#endif
#define DMA_LOCAL_SYMBOL(name) __PASTE(DMA_LOCAL_MODNAME, __PASTE(_dma_local_, name))
#define dma_local_mapping_error DMA_LOCAL_SYMBOL(mapping_error)
#define dma_local_map_single DMA_LOCAL_SYMBOL(map_single)
#define dma_local_unmap_single DMA_LOCAL_SYMBOL(unmap_single)
#define dma_local_sync_single_range_for_cpu DMA_LOCAL_SYMBOL(sync_single_range_for_cpu)
#define dma_local_sync_single_range_for_device DMA_LOCAL_SYMBOL(sync_single_range_for_device)
#define dma_local_need_sync DMA_LOCAL_SYMBOL(need_sync)
#define dma_local_set_min_align_mask DMA_LOCAL_SYMBOL(set_min_align_mask)
#define dma_local_set_max_seg_size DMA_LOCAL_SYMBOL(set_max_seg_size)
#define dma_local_get_max_seg_size DMA_LOCAL_SYMBOL(get_max_seg_size)
#define dma_local_set_seg_boundary DMA_LOCAL_SYMBOL(set_seg_boundary)
#define dma_local_alloc_noncoherent DMA_LOCAL_SYMBOL(alloc_noncoherent)
#define dma_local_free_noncoherent DMA_LOCAL_SYMBOL(free_noncoherent)
#define dma_local_unmap_sgtable DMA_LOCAL_SYMBOL(unmap_sgtable)
#define dma_local_sync_sgtable_for_cpu DMA_LOCAL_SYMBOL(sync_sgtable_for_cpu)
#define dma_local_sync_sgtable_for_device DMA_LOCAL_SYMBOL(sync_sgtable_for_device)
#define dma_local_sg_next DMA_LOCAL_SYMBOL(sg_next)
#define dma_local_sg_dma_address DMA_LOCAL_SYMBOL(sg_dma_address)
#define dma_local_sg_dma_len DMA_LOCAL_SYMBOL(sg_dma_len)
#define dma_local_pool_create DMA_LOCAL_SYMBOL(pool_create)
#define dma_local_dma_rmb DMA_LOCAL_SYMBOL(dma_rmb)
#define dma_local_dma_wmb DMA_LOCAL_SYMBOL(dma_wmb)
#define dma_local_wmb DMA_LOCAL_SYMBOL(wmb)
#define dma_local_mb DMA_LOCAL_SYMBOL(mb)

struct device;
struct dma_pool;
struct scatterlist;
struct sg_table;

int dma_local_mapping_error(struct device *dev, dma_addr_t addr);
dma_addr_t dma_local_map_single(struct device *dev, void *ptr, size_t size,
				enum dma_data_direction dir, unsigned long attrs);
void dma_local_unmap_single(struct device *dev, dma_addr_t addr, size_t size,
			    enum dma_data_direction dir, unsigned long attrs);
void dma_local_sync_single_range_for_cpu(struct device *dev, dma_addr_t addr, size_t offset,
					 size_t size, enum dma_data_direction dir);
void dma_local_sync_single_range_for_device(struct device *dev, dma_addr_t addr, size_t offset,
					    size_t size, enum dma_data_direction dir);
bool dma_local_need_sync(struct device *dev, dma_addr_t addr);
void dma_local_set_min_align_mask(struct device *dev, unsigned int mask);
void dma_local_set_max_seg_size(struct device *dev, unsigned int size);
unsigned int dma_local_get_max_seg_size(struct device *dev);
void dma_local_set_seg_boundary(struct device *dev, unsigned long mask);
void *dma_local_alloc_noncoherent(struct device *dev, size_t size, dma_addr_t *handle,
				  enum dma_data_direction dir, gfp_t gfp);
void dma_local_free_noncoherent(struct device *dev, size_t size, void *cpu, dma_addr_t handle,
				enum dma_data_direction dir);
void dma_local_unmap_sgtable(struct device *dev, struct sg_table *table,
			     enum dma_data_direction dir, unsigned long attrs);
void dma_local_sync_sgtable_for_cpu(struct device *dev, struct sg_table *table,
				    enum dma_data_direction dir);
void dma_local_sync_sgtable_for_device(struct device *dev, struct sg_table *table,
				       enum dma_data_direction dir);
struct scatterlist *dma_local_sg_next(struct scatterlist *sg);
dma_addr_t dma_local_sg_dma_address(struct scatterlist *sg);
unsigned int dma_local_sg_dma_len(struct scatterlist *sg);
struct dma_pool *dma_local_pool_create(const char *name, struct device *dev, size_t size,
				       size_t align, size_t boundary);
void dma_local_dma_rmb(void);
void dma_local_dma_wmb(void);
void dma_local_wmb(void);
void dma_local_mb(void);

#endif /* DMA_LOCAL_SHIM_H */
