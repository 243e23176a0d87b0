// SPDX-License-Identifier: GPL-2.0
/*
 * One-line wrappers of the static inline DMA API functions that dma_local.rs calls: Rust cannot call a
 * static inline function. Vendored with dma_local.rs, byte-identical in every driver.
 */
#include <linux/dma-mapping.h>
#include <linux/dmapool.h>

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

void dma_local_sync_single_for_cpu(struct device *dev, dma_addr_t addr, size_t size,
				   enum dma_data_direction dir)
{
	dma_sync_single_for_cpu(dev, addr, size, dir);
}

void dma_local_sync_single_for_device(struct device *dev, dma_addr_t addr, size_t size,
				      enum dma_data_direction dir)
{
	dma_sync_single_for_device(dev, addr, size, dir);
}

void dma_local_set_min_align_mask(struct device *dev, unsigned int mask)
{
	dma_set_min_align_mask(dev, mask);
}

struct dma_pool *dma_local_pool_create(const char *name, struct device *dev, size_t size,
				       size_t align, size_t boundary)
{
	return dma_pool_create(name, dev, size, align, boundary);
}
