/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C wrappers that dma_local.rs declares in its extern block; this header lets the compiler check
 * the definitions against one declaration. Vendored with dma_local.rs.
 */
#ifndef DMA_LOCAL_SHIM_H
#define DMA_LOCAL_SHIM_H

#include <linux/types.h>
#include <linux/dma-direction.h>

struct device;
struct dma_pool;

int dma_local_mapping_error(struct device *dev, dma_addr_t addr);
dma_addr_t dma_local_map_single(struct device *dev, void *ptr, size_t size,
				enum dma_data_direction dir, unsigned long attrs);
void dma_local_unmap_single(struct device *dev, dma_addr_t addr, size_t size,
			    enum dma_data_direction dir, unsigned long attrs);
void dma_local_sync_single_for_cpu(struct device *dev, dma_addr_t addr, size_t size,
				   enum dma_data_direction dir);
void dma_local_sync_single_for_device(struct device *dev, dma_addr_t addr, size_t size,
				      enum dma_data_direction dir);
void dma_local_set_min_align_mask(struct device *dev, unsigned int mask);
struct dma_pool *dma_local_pool_create(const char *name, struct device *dev, size_t size,
				       size_t align, size_t boundary);

#endif /* DMA_LOCAL_SHIM_H */
