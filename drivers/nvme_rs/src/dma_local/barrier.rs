// SPDX-License-Identifier: GPL-2.0

//! Ordering of the CPU's accesses with the device's.

use super::{dma_local_dma_rmb, dma_local_dma_wmb, dma_local_mb, dma_local_wmb};

/// Orders the CPU's earlier reads of memory the device writes (coherent or synced) before its
/// later ones: read a descriptor's "done" flag, `dma_rmb()`, then the rest of the descriptor.
#[inline]
pub(crate) fn dma_rmb() {
    // SAFETY: A barrier; no preconditions.
    unsafe { dma_local_dma_rmb() }
}

/// Orders the CPU's earlier writes to memory the device reads before its later ones: fill a
/// descriptor, `dma_wmb()`, then hand it over by writing its "owned by the device" flag.
#[inline]
pub(crate) fn dma_wmb() {
    // SAFETY: A barrier; no preconditions.
    unsafe { dma_local_dma_wmb() }
}

/// Orders the CPU's earlier writes to memory before its later writes to memory or MMIO (`wmb`):
/// for a device that learns of new descriptors through a doorbell, or a doorbell value in memory.
#[inline]
pub(crate) fn wmb() {
    // SAFETY: A barrier; no preconditions.
    unsafe { dma_local_wmb() }
}

/// Orders every earlier memory access of the CPU before every later one (`mb`), writes before
/// reads included: for a CPU and a device that each write a value and then read the other's.
#[inline]
pub(crate) fn mb() {
    // SAFETY: A barrier; no preconditions.
    unsafe { dma_local_mb() }
}
