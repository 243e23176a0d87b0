// SPDX-License-Identifier: GPL-2.0
/*
 * One-line wrappers of the static inline DMA API functions and macros that dma_local.rs calls: Rust
 * cannot call either. Vendored with dma_local.rs, byte-identical in every driver.
 */
#include <asm/barrier.h>
#include <linux/dma-mapping.h>
#include <linux/dmapool.h>
#include <linux/scatterlist.h>

#include "dma_local_shim.h"

int dma_local_mapping_error(struct device *dev, dma_addr_t addr)
{
	return dma_mapping_error(dev, addr);
}

dma_addr_t dma_local_map_single(struct device *dev, void *ptr, size_t size,
				enum dma_data_direction dir, unsigned long attrs)
{
	return dma_map_single_attrs(dev, ptr, size, dir, attrs);
}

void dma_local_unmap_single(struct device *dev, dma_addr_t addr, size_t size,
			    enum dma_data_direction dir, unsigned long attrs)
{
	dma_unmap_single_attrs(dev, addr, size, dir, attrs);
}

void dma_local_sync_single_range_for_cpu(struct device *dev, dma_addr_t addr, size_t offset,
					 size_t size, enum dma_data_direction dir)
{
	dma_sync_single_range_for_cpu(dev, addr, offset, size, dir);
}

void dma_local_sync_single_range_for_device(struct device *dev, dma_addr_t addr, size_t offset,
					    size_t size, enum dma_data_direction dir)
{
	dma_sync_single_range_for_device(dev, addr, offset, size, dir);
}

bool dma_local_need_sync(struct device *dev, dma_addr_t addr)
{
	return dma_need_sync(dev, addr);
}

void dma_local_set_min_align_mask(struct device *dev, unsigned int mask)
{
	dma_set_min_align_mask(dev, mask);
}

void dma_local_set_max_seg_size(struct device *dev, unsigned int size)
{
	dma_set_max_seg_size(dev, size);
}

unsigned int dma_local_get_max_seg_size(struct device *dev)
{
	return dma_get_max_seg_size(dev);
}

void dma_local_set_seg_boundary(struct device *dev, unsigned long mask)
{
	dma_set_seg_boundary(dev, mask);
}

void *dma_local_alloc_noncoherent(struct device *dev, size_t size, dma_addr_t *handle,
				  enum dma_data_direction dir, gfp_t gfp)
{
	return dma_alloc_noncoherent(dev, size, handle, dir, gfp);
}

void dma_local_free_noncoherent(struct device *dev, size_t size, void *cpu, dma_addr_t handle,
				enum dma_data_direction dir)
{
	dma_free_noncoherent(dev, size, cpu, handle, dir);
}

void dma_local_unmap_sgtable(struct device *dev, struct sg_table *table,
			     enum dma_data_direction dir, unsigned long attrs)
{
	dma_unmap_sgtable(dev, table, dir, attrs);
}

void dma_local_sync_sgtable_for_cpu(struct device *dev, struct sg_table *table,
				    enum dma_data_direction dir)
{
	dma_sync_sgtable_for_cpu(dev, table, dir);
}

void dma_local_sync_sgtable_for_device(struct device *dev, struct sg_table *table,
				       enum dma_data_direction dir)
{
	dma_sync_sgtable_for_device(dev, table, dir);
}

struct scatterlist *dma_local_sg_next(struct scatterlist *sg)
{
	return sg_next(sg);
}

dma_addr_t dma_local_sg_dma_address(struct scatterlist *sg)
{
	return sg_dma_address(sg);
}

unsigned int dma_local_sg_dma_len(struct scatterlist *sg)
{
	return sg_dma_len(sg);
}

struct dma_pool *dma_local_pool_create(const char *name, struct device *dev, size_t size,
				       size_t align, size_t boundary)
{
	return dma_pool_create(name, dev, size, align, boundary);
}

void dma_local_dma_rmb(void)
{
	dma_rmb();
}

void dma_local_dma_wmb(void)
{
	dma_wmb();
}

void dma_local_wmb(void)
{
	/* What the barrier orders is the Rust caller's to say, at its call of dma_local::wmb(). */
	wmb();
}

void dma_local_mb(void)
{
	/* As above, for dma_local::mb(). */
	mb();
}
