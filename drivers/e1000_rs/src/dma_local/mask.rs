// SPDX-License-Identifier: GPL-2.0

//! What a driver sets up at probe, before it allocates or maps anything: the DMA masks and the
//! device's segment limits, and the mapping sizes the DMA layer allows.

use kernel::bindings;
use kernel::device::{Bound, Device};
use kernel::error::to_result;
use kernel::ffi::c_ulong;
use kernel::prelude::*;

use super::{
    dma_local_get_max_seg_size, dma_local_set_max_seg_size, dma_local_set_min_align_mask,
    dma_local_set_seg_boundary, raw_device,
};

/// A DMA address mask: the device drives `bits` address lines.
///
/// # Examples
///
/// At probe, before anything of the device is allocated or mapped:
///
/// ```
/// # use kernel::device::{Bound, Device};
/// use crate::dma_local::{self, Mask};
///
/// # fn example(dev: &Device<Bound>) -> Result {
/// let mask = Mask::bits(28)?;
/// assert_eq!(mask.value(), 0x0fff_ffff);
/// assert_eq!(Mask::bits(65), Err(EINVAL));
/// // SAFETY: Nothing of `dev` is allocated or mapped yet.
/// unsafe { dma_local::set_mask_and_coherent(dev, mask) }?;
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mask(u64);

impl Mask {
    /// The mask of a device with `bits` address bits, 1 to 64.
    pub(crate) const fn bits(bits: u32) -> Result<Mask> {
        match bits {
            64 => Ok(Mask(u64::MAX)),
            1..=63 => Ok(Mask((1u64 << bits) - 1)),
            _ => Err(EINVAL),
        }
    }

    /// The mask's value.
    pub(crate) const fn value(self) -> u64 {
        self.0
    }
}

/// Sets the mask of streaming mappings (`dma_set_mask`).
///
/// # Safety
///
/// The device has no streaming mapping, coherent allocation or pool, and none is made until this
/// returns: call it in probe, before anything else of this module. The DMA layer reads the masks
/// and the other parameters set by the `set_*` functions when it maps and again when it unmaps;
/// swiotlb, for one, finds a bounce slot's offset again from the current `min_align_mask` at
/// unmap, so a change in between corrupts its accounting.
pub(crate) unsafe fn set_mask(dev: &Device<Bound>, mask: Mask) -> Result {
    // SAFETY: `raw_device` gives a valid `struct device`, bound for the duration of the call; no
    // mapping exists or is made meanwhile (safety requirement).
    to_result(unsafe { bindings::dma_set_mask(raw_device(dev), mask.value()) })
}

/// Sets the mask of coherent allocations (`dma_set_coherent_mask`).
///
/// # Safety
///
/// As for [`set_mask`].
pub(crate) unsafe fn set_coherent_mask(dev: &Device<Bound>, mask: Mask) -> Result {
    // SAFETY: As in `set_mask`.
    to_result(unsafe { bindings::dma_set_coherent_mask(raw_device(dev), mask.value()) })
}

/// Sets both masks (`dma_set_mask_and_coherent`).
///
/// # Safety
///
/// As for [`set_mask`].
pub(crate) unsafe fn set_mask_and_coherent(dev: &Device<Bound>, mask: Mask) -> Result {
    // SAFETY: As in `set_mask`.
    to_result(unsafe { bindings::dma_set_mask_and_coherent(raw_device(dev), mask.value()) })
}

/// The device's DMA parameters, which the PCI core gives every PCI device; `EINVAL` without them
/// (the C setters would only warn).
fn dma_parms(dev: &Device<Bound>) -> Result<*mut bindings::device> {
    let raw = raw_device(dev);
    // SAFETY: `raw_device` gives a valid `struct device`, bound for the duration of the call.
    if unsafe { (*raw).dma_parms }.is_null() {
        return Err(EINVAL);
    }
    Ok(raw)
}

/// Keeps the low `mask` bits of a streaming mapping's address equal to the CPU address's when it
/// goes through a bounce buffer (`dma_set_min_align_mask`): for a device that reads an offset into
/// its pages, as NVMe PRPs do. `EINVAL` when the device has no DMA parameters to hold it.
///
/// # Safety
///
/// As for [`set_mask`].
pub(crate) unsafe fn set_min_align_mask(dev: &Device<Bound>, mask: u32) -> Result {
    let raw = dma_parms(dev)?;
    // SAFETY: A bound device with DMA parameters, so the call does not warn; nothing is mapped
    // meanwhile (safety requirement).
    unsafe { dma_local_set_min_align_mask(raw.cast(), mask) };
    Ok(())
}

/// The longest segment the device takes in one scatter-gather entry (`dma_set_max_seg_size`).
/// `EINVAL` for 0, or when the device has no DMA parameters.
///
/// # Safety
///
/// As for [`set_mask`].
pub(crate) unsafe fn set_max_seg_size(dev: &Device<Bound>, size: u32) -> Result {
    if size == 0 {
        return Err(EINVAL);
    }
    let raw = dma_parms(dev)?;
    // SAFETY: As in `set_min_align_mask`.
    unsafe { dma_local_set_max_seg_size(raw.cast(), size) };
    Ok(())
}

/// The longest segment the device takes in one scatter-gather entry (`dma_get_max_seg_size`):
/// 64 KiB unless the driver set it.
pub(crate) fn max_seg_size(dev: &Device<Bound>) -> u32 {
    // SAFETY: `raw_device` gives a valid bound device.
    unsafe { dma_local_get_max_seg_size(raw_device(dev).cast()) }
}

/// No segment of a scatter-gather mapping crosses an address boundary of `mask + 1` bytes
/// (`dma_set_seg_boundary`). `EINVAL` unless `mask + 1` is a power of two, or when the device has
/// no DMA parameters.
///
/// # Safety
///
/// As for [`set_mask`].
pub(crate) unsafe fn set_seg_boundary(dev: &Device<Bound>, mask: c_ulong) -> Result {
    if mask & mask.wrapping_add(1) != 0 {
        return Err(EINVAL);
    }
    let raw = dma_parms(dev)?;
    // SAFETY: As in `set_min_align_mask`.
    unsafe { dma_local_set_seg_boundary(raw.cast(), mask) };
    Ok(())
}

/// The largest streaming mapping the device can have (`dma_max_mapping_size`): a bounce buffer
/// limits it.
pub(crate) fn max_mapping_size(dev: &Device<Bound>) -> usize {
    // SAFETY: `raw_device` gives a valid bound device.
    unsafe { bindings::dma_max_mapping_size(raw_device(dev)) }
}

/// The largest streaming mapping that costs no more per byte than a smaller one
/// (`dma_opt_mapping_size`): an IOMMU's cached address range, or [`max_mapping_size`].
pub(crate) fn opt_mapping_size(dev: &Device<Bound>) -> usize {
    // SAFETY: `raw_device` gives a valid bound device.
    unsafe { bindings::dma_opt_mapping_size(raw_device(dev)) }
}
