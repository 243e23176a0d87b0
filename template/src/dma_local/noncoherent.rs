// SPDX-License-Identifier: GPL-2.0

//! Memory allocated for the device that needs syncs as streaming mappings do ([`NonCoherent`]).

use core::marker::PhantomData;
use core::ptr::NonNull;

use kernel::device::{Bound, Device};
use kernel::prelude::*;

use super::dir::DataDirection;
use super::{
    check_range, dma_local_alloc_noncoherent, dma_local_free_noncoherent,
    dma_local_sync_single_range_for_device, raw_device, CpuView, DmaAddress, Gfp,
};

/// `len` bytes allocated for `dev` to access in direction `D` (`dma_alloc_noncoherent`): plain
/// cached memory on any platform, which the CPU reaches through a [`CpuView`] as it does a
/// [`Streaming`] buffer, and the device between views. For buffers the device fills and the CPU
/// reads in bulk, where uncached coherent memory would make every CPU read slow.
///
/// Dropping it frees the memory (`dma_free_noncoherent`): in process context.
///
/// # Invariants
///
/// `cpu`/`handle` are `len > 0` bytes from `dma_alloc_noncoherent(dev, len, .., D, ..)`, not yet
/// freed. (Outside a `CpuView` they are synced for the device, unless a view was leaked with
/// `mem::forget`; soundness does not rest on that, only coherence.)
///
/// # Examples
///
/// An area the CPU and the device take turns with:
///
/// ```
/// # use kernel::device::{Bound, Device};
/// use crate::dma_local::{dir, Gfp, NonCoherent};
///
/// # fn example(dev: &Device<Bound>) -> Result {
/// let mut area = NonCoherent::alloc(dev, 8192, dir::Bidirectional, Gfp::KERNEL)?;
/// {
///     // SAFETY: The device has not been given the area yet.
///     let mut view = unsafe { area.sync_for_cpu() };
///     view[..4].copy_from_slice(b"ping");
/// } // Dropping the view syncs the bytes for the device.
/// let _for_the_device = area.dma_handle();
/// // ... the device reads and writes, and says it is done ...
/// // SAFETY: The device is done with the area.
/// let view = unsafe { area.sync_for_cpu() };
/// assert_eq!(&view[..4], b"ping");
/// # Ok(()) }
/// ```
pub(crate) struct NonCoherent<'a, D: DataDirection> {
    dev: &'a Device<Bound>,
    cpu: NonNull<u8>,
    handle: DmaAddress,
    len: usize,
    _dir: PhantomData<D>,
}

// SAFETY: Owned bytes, reached only through `&mut self`; `dev` is `Sync`.
unsafe impl<D: DataDirection> Send for NonCoherent<'_, D> {}
// SAFETY: Nothing reaches the bytes through `&self`.
unsafe impl<D: DataDirection> Sync for NonCoherent<'_, D> {}

impl<'a, D: DataDirection> NonCoherent<'a, D> {
    /// Allocates `len` bytes for `dev` in direction `D`, zeroed, and hands them to the device.
    /// `EINVAL` for zero bytes, `ENOMEM` when the kernel has no such memory. (Where handing a
    /// `FromDevice` buffer to the device invalidates the CPU's cache, as on MIPS or 32-bit Arm,
    /// the zeroes may not reach memory: such a buffer holds what the device writes, and until then
    /// any bytes, which are all valid `u8`s.)
    pub(crate) fn alloc(dev: &'a Device<Bound>, len: usize, _dir: D, gfp: Gfp) -> Result<Self> {
        if len == 0 {
            return Err(EINVAL);
        }
        let mut handle: DmaAddress = 0;
        // SAFETY: `raw_device` gives a valid bound device; `handle` is a valid place for the
        // address.
        let cpu = unsafe {
            dma_local_alloc_noncoherent(
                raw_device(dev).cast(),
                len,
                &mut handle,
                D::DIRECTION.raw(),
                (gfp | Gfp::ZERO).bits(),
            )
        };
        let cpu = NonNull::new(cpu.cast::<u8>()).ok_or(ENOMEM)?;
        // SAFETY: Just allocated in direction `D`; the device has not been told of it.
        unsafe {
            dma_local_sync_single_range_for_device(
                raw_device(dev).cast(),
                handle,
                0,
                len,
                D::DIRECTION.raw(),
            )
        };
        // INVARIANT: allocated and synced for the device above.
        Ok(Self {
            dev,
            cpu,
            handle,
            len,
            _dir: PhantomData,
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

    /// Always false: empty buffers are not allocated.
    pub(crate) fn is_empty(&self) -> bool {
        false
    }

    /// Syncs the whole buffer for the CPU and lends it to the CPU until the view is dropped, which
    /// syncs it back for the device.
    ///
    /// # Safety
    ///
    /// As for [`Streaming::sync_for_cpu`].
    pub(crate) unsafe fn sync_for_cpu(&mut self) -> CpuView<'_, D> {
        // SAFETY: The whole buffer; the device is done with it (safety requirement).
        unsafe { self.view(0, self.len) }
    }

    /// As [`NonCoherent::sync_for_cpu`], for `len` bytes from `offset`. `EINVAL` outside the
    /// buffer.
    ///
    /// # Safety
    ///
    /// As for [`Streaming::sync_range_for_cpu`].
    pub(crate) unsafe fn sync_range_for_cpu(
        &mut self,
        offset: usize,
        len: usize,
    ) -> Result<CpuView<'_, D>> {
        check_range(offset, len, self.len)?;
        // SAFETY: In range, checked above; the device is done with the bytes (safety requirement).
        Ok(unsafe { self.view(offset, len) })
    }

    /// The view of `len` bytes from `offset`.
    ///
    /// # Safety
    ///
    /// `offset + len <= self.len()`, and the device is done with those bytes until the view goes.
    unsafe fn view(&mut self, offset: usize, len: usize) -> CpuView<'_, D> {
        // SAFETY: `offset + len <= self.len`, so the pointer stays in the allocation.
        let cpu = unsafe { NonNull::new_unchecked(self.cpu.as_ptr().add(offset)) };
        // SAFETY: Allocated in direction `D` (type invariant); `&mut self` keeps the bytes alive
        // and unreachable otherwise for the view's life; the device is done with them (safety
        // requirement).
        unsafe { CpuView::new(self.dev, self.handle, offset, cpu, len) }
    }
}

impl<D: DataDirection> Drop for NonCoherent<'_, D> {
    fn drop(&mut self) {
        // SAFETY: The allocation's own arguments, not freed yet (type invariant); freed once.
        unsafe {
            dma_local_free_noncoherent(
                raw_device(self.dev).cast(),
                self.len,
                self.cpu.as_ptr().cast(),
                self.handle,
                D::DIRECTION.raw(),
            )
        };
    }
}
