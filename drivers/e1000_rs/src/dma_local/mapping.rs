// SPDX-License-Identifier: GPL-2.0

//! Streaming mappings of memory owned elsewhere ([`Mapping`]).

use kernel::bindings;
use kernel::device::{Bound, Device};
use kernel::prelude::*;

use super::{
    check_range, dma_local_map_single, dma_local_mapping_error, dma_local_need_sync,
    dma_local_unmap_single, raw_device, sync_range_for_cpu, sync_range_for_device, Attrs,
    Direction, DmaAddress,
};

/// A streaming mapping of memory that is owned elsewhere, such as a socket buffer's data. The owner
/// keeps the memory alive and leaves it to the device until the mapping is dropped, which unmaps
/// it; the CPU reaches it only between [`Mapping::sync_for_cpu`] and [`Mapping::sync_for_device`].
///
/// # Invariants
///
/// `handle` is the mapping, by `dma_map_single_attrs(dev, .., len, dir, attrs)` or
/// `dma_map_page_attrs(dev, .., len, dir, attrs)`, of `len > 0` bytes, not yet unmapped.
///
/// # Examples
///
/// A frame owned elsewhere, mapped for as long as the device sends it:
///
/// ```
/// # use kernel::device::{Bound, Device};
/// use crate::dma_local::{Attrs, Direction, Mapping};
///
/// # fn example(dev: &Device<Bound>) -> Result {
/// let mut frame = KVec::from_elem(0xffu8, 1514, GFP_KERNEL)?;
/// // SAFETY: `frame` is slab memory that outlives the mapping (dropped first, below), and the CPU
/// // leaves it alone while it is mapped.
/// let mapping = unsafe {
///     Mapping::new(dev, frame.as_mut_ptr(), frame.len(), Direction::ToDevice, Attrs::NONE)
/// }?;
/// assert_eq!(mapping.len(), 1514);
/// let _for_the_device = mapping.dma_handle();
/// // ... the device sends the frame, and says it is done ...
/// drop(mapping);
/// frame[0] = 0;
/// # Ok(()) }
/// ```
pub(crate) struct Mapping<'a> {
    pub(super) dev: &'a Device<Bound>,
    pub(super) handle: DmaAddress,
    len: usize,
    dir: Direction,
    attrs: Attrs,
}

impl<'a> Mapping<'a> {
    /// Maps `len` bytes at `ptr` for `dev` in direction `dir`. Every mapping is checked with
    /// `dma_mapping_error`; a failed one is `ENOMEM`. `EINVAL` for zero bytes, for [`Attrs::MMIO`]
    /// (this maps memory, never MMIO) and for [`Attrs::CC_SHARED`] (the memory was not made shared
    /// with the host).
    ///
    /// # Safety
    ///
    /// `ptr` points to `len` bytes from the page or slab allocator (not the stack, not vmalloc)
    /// that stay valid until the mapping is dropped, and that the CPU does not access meanwhile
    /// except between `sync_for_cpu` and `sync_for_device`.
    pub(crate) unsafe fn new(
        dev: &'a Device<Bound>,
        ptr: *mut u8,
        len: usize,
        dir: Direction,
        attrs: Attrs,
    ) -> Result<Self> {
        if len == 0 || attrs.intersects(Attrs::REFUSED_BY_MAPPINGS) {
            return Err(EINVAL);
        }
        // SAFETY: By the safety requirements, `ptr..ptr + len` is mappable memory that outlives the
        // mapping; `raw_device` gives a bound device.
        let handle = unsafe {
            dma_local_map_single(
                raw_device(dev).cast(),
                ptr.cast(),
                len,
                dir.raw(),
                attrs.bits(),
            )
        };
        // SAFETY: Just returned by `dma_map_single_attrs` with these arguments.
        unsafe { Self::checked(dev, handle, len, dir, attrs) }
    }

    /// Maps `len` bytes from `offset` into `page` (and the pages after it, physically contiguous)
    /// for `dev` in direction `dir`, as [`Mapping::new`] does for a CPU address. For memory that is
    /// described by pages, such as a block request's bio vectors: it costs no lookup of the CPU
    /// address and none of the page back.
    ///
    /// # Safety
    ///
    /// `page` is a page from the page allocator, and the `len` bytes from `offset` on lie in memory
    /// that stays valid until the mapping is dropped and that the CPU does not access meanwhile
    /// except between `sync_for_cpu` and `sync_for_device`.
    pub(crate) unsafe fn from_page(
        dev: &'a Device<Bound>,
        page: *mut bindings::page,
        offset: usize,
        len: usize,
        dir: Direction,
        attrs: Attrs,
    ) -> Result<Self> {
        if len == 0 || attrs.intersects(Attrs::REFUSED_BY_MAPPINGS) {
            return Err(EINVAL);
        }
        // SAFETY: By the safety requirements, the bytes are mappable memory that outlives the
        // mapping; `raw_device` gives a bound device.
        let handle = unsafe {
            bindings::dma_map_page_attrs(
                raw_device(dev),
                page,
                offset,
                len,
                dir.raw(),
                attrs.bits(),
            )
        };
        // SAFETY: Just returned by `dma_map_page_attrs` with these arguments.
        unsafe { Self::checked(dev, handle, len, dir, attrs) }
    }

    /// The mapping `handle` of `len` bytes, or `ENOMEM` if the mapping failed.
    ///
    /// # Safety
    ///
    /// `handle` was just returned by `dma_map_single_attrs` or `dma_map_page_attrs` for `dev`,
    /// `len > 0`, `dir` and `attrs`, and nothing else unmaps it.
    #[inline]
    unsafe fn checked(
        dev: &'a Device<Bound>,
        handle: DmaAddress,
        len: usize,
        dir: Direction,
        attrs: Attrs,
    ) -> Result<Self> {
        // SAFETY: `handle` was just returned by the DMA API for this device.
        if unsafe { dma_local_mapping_error(raw_device(dev).cast(), handle) } != 0 {
            return Err(ENOMEM);
        }
        // INVARIANT: mapped (`dma_unmap_single_attrs`, which `drop` calls, is
        // `dma_unmap_page_attrs`), `len > 0`.
        Ok(Self {
            dev,
            handle,
            len,
            dir,
            attrs,
        })
    }

    /// The DMA address, for the device.
    pub(crate) fn dma_handle(&self) -> DmaAddress {
        self.handle
    }

    /// The length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Always false: empty buffers are not mapped.
    pub(crate) fn is_empty(&self) -> bool {
        false
    }

    /// Whether the syncs do anything for this mapping (`dma_need_sync`): not on a coherent
    /// platform without a bounce buffer, so a hot path may skip them.
    pub(crate) fn need_sync(&self) -> bool {
        // SAFETY: A live mapping of this bound device (type invariant).
        unsafe { dma_local_need_sync(raw_device(self.dev).cast(), self.handle) }
    }

    /// Syncs the memory for the CPU (`dma_sync_single_for_cpu`).
    pub(crate) fn sync_for_cpu(&mut self) {
        // The whole mapping: in range by construction.
        let _ = self.sync_range_for_cpu(0, self.len);
    }

    /// Syncs the memory for the device (`dma_sync_single_for_device`).
    pub(crate) fn sync_for_device(&mut self) {
        // The whole mapping: in range by construction.
        let _ = self.sync_range_for_device(0, self.len);
    }

    /// Syncs `len` bytes from `offset` for the CPU (`dma_sync_single_range_for_cpu`): a received
    /// frame's bytes, not the whole buffer it landed in. `EINVAL` outside the mapping; zero bytes
    /// sync nothing.
    pub(crate) fn sync_range_for_cpu(&mut self, offset: usize, len: usize) -> Result {
        check_range(offset, len, self.len)?;
        // SAFETY: In range of a live mapping of this bound device, in its own direction (type
        // invariant).
        unsafe { sync_range_for_cpu(self.dev, self.handle, offset, len, self.dir) };
        Ok(())
    }

    /// Syncs `len` bytes from `offset` for the device (`dma_sync_single_range_for_device`), as
    /// [`Mapping::sync_range_for_cpu`] does for the CPU.
    pub(crate) fn sync_range_for_device(&mut self, offset: usize, len: usize) -> Result {
        check_range(offset, len, self.len)?;
        // SAFETY: As in `sync_range_for_cpu`.
        unsafe { sync_range_for_device(self.dev, self.handle, offset, len, self.dir) };
        Ok(())
    }
}

impl Drop for Mapping<'_> {
    fn drop(&mut self) {
        // SAFETY: The mapping is live (type invariant) and is unmapped once, here.
        unsafe {
            dma_local_unmap_single(
                raw_device(self.dev).cast(),
                self.handle,
                self.len,
                self.dir.raw(),
                self.attrs.bits(),
            )
        };
    }
}
