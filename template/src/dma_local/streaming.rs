// SPDX-License-Identifier: GPL-2.0

//! Buffers mapped for streaming DMA in a direction fixed by their type ([`Streaming`]).

use core::marker::PhantomData;
use core::ptr::NonNull;

use kernel::device::{Bound, Device};
use kernel::prelude::*;

use super::dir::DataDirection;
use super::{check_range, Attrs, CpuView, DmaAddress, Mapping};

/// A CPU buffer mapped for streaming DMA in direction `D` (a type of [`dir`]). It owns the buffer;
/// [`Streaming::unmap`] gives it back.
///
/// While mapped the buffer belongs to the device. The CPU reaches it only through a [`CpuView`]
/// from [`Streaming::sync_for_cpu`], or by [`Streaming::unmap`]; the caller of either states that
/// the device is done with it.
///
/// # Invariants
///
/// `mapping` maps all of `buf`'s heap memory in direction `D`.
///
/// # Examples
///
/// A buffer the device fills, handed to it and taken back:
///
/// ```
/// # use kernel::device::{Bound, Device};
/// use crate::dma_local::{dir, Attrs, Streaming};
///
/// # fn example(dev: &Device<Bound>) -> Result {
/// let buffer = KVec::from_elem(0u8, 4096, GFP_KERNEL)?;
/// let mut incoming =
///     Streaming::map(dev, buffer, dir::FromDevice, Attrs::NONE).map_err(|(e, _buffer)| e)?;
/// let _for_the_device = incoming.dma_handle();
/// // ... the device writes, and says it is done (an interrupt) ...
/// {
///     // SAFETY: The device is done with the buffer.
///     let view = unsafe { incoming.sync_for_cpu() };
///     assert_eq!(view.len(), 4096);
/// } // Dropping the view hands the buffer back to the device.
/// // SAFETY: The device is done with the buffer and is not given it again.
/// let buffer = unsafe { incoming.unmap() };
/// assert_eq!(buffer.len(), 4096);
/// # Ok(()) }
/// ```
pub(crate) struct Streaming<'a, D: DataDirection> {
    // Declared before `buf`, so that it is dropped (unmapped) before the buffer is freed.
    mapping: Mapping<'a>,
    buf: KVec<u8>,
    _dir: PhantomData<D>,
}

impl<'a, D: DataDirection> Streaming<'a, D> {
    /// Maps `buf` for `dev` in direction `D`: `Streaming::map(dev, buf, dir::ToDevice, attrs)`.
    /// On failure the buffer comes back with the error, so that nothing is lost.
    pub(crate) fn map(
        dev: &'a Device<Bound>,
        buf: KVec<u8>,
        _dir: D,
        attrs: Attrs,
    ) -> core::result::Result<Self, (Error, KVec<u8>)> {
        let mut buf = buf;
        // SAFETY: `buf`'s heap memory (kmalloc) is owned by the returned `Streaming`, which unmaps
        // it before freeing it, and lends it to the CPU only through a `CpuView`.
        match unsafe { Mapping::new(dev, buf.as_mut_ptr(), buf.len(), D::DIRECTION, attrs) } {
            // INVARIANT: all of `buf`, in direction `D`.
            Ok(mapping) => Ok(Self {
                mapping,
                buf,
                _dir: PhantomData,
            }),
            Err(e) => Err((e, buf)),
        }
    }

    /// The DMA address of the buffer, for the device.
    pub(crate) fn dma_handle(&self) -> DmaAddress {
        self.mapping.dma_handle()
    }

    /// The length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    /// Always false: empty buffers are not mapped.
    pub(crate) fn is_empty(&self) -> bool {
        false
    }

    /// Whether syncs do anything for this buffer (see [`Mapping::need_sync`]).
    pub(crate) fn need_sync(&self) -> bool {
        self.mapping.need_sync()
    }

    /// Syncs the whole buffer for the CPU and lends it to the CPU until the view is dropped, which
    /// syncs it back for the device.
    ///
    /// # Safety
    ///
    /// The device has finished every access to the buffer it was given (its completion was seen),
    /// and is given none until the view is dropped.
    pub(crate) unsafe fn sync_for_cpu(&mut self) -> CpuView<'_, D> {
        let len = self.buf.len();
        // SAFETY: The whole buffer; the device is done with it (safety requirement).
        unsafe { self.view(0, len) }
    }

    /// As [`Streaming::sync_for_cpu`], for `len` bytes from `offset`: a received frame, not the
    /// whole buffer. `EINVAL` outside the buffer; zero bytes make an empty view that syncs
    /// nothing.
    ///
    /// # Safety
    ///
    /// As for [`Streaming::sync_for_cpu`], for every cache line those bytes touch: on a platform
    /// without coherent DMA, the syncs write back and invalidate whole lines.
    pub(crate) unsafe fn sync_range_for_cpu(
        &mut self,
        offset: usize,
        len: usize,
    ) -> Result<CpuView<'_, D>> {
        check_range(offset, len, self.buf.len())?;
        // SAFETY: In range, checked above; the device is done with the bytes (safety requirement).
        Ok(unsafe { self.view(offset, len) })
    }

    /// The view of `len` bytes from `offset`.
    ///
    /// # Safety
    ///
    /// `offset + len <= self.len()`, and the device is done with those bytes until the view goes.
    unsafe fn view(&mut self, offset: usize, len: usize) -> CpuView<'_, D> {
        // SAFETY: `offset + len <= buf.len()`, so the pointer stays in the buffer.
        let cpu = unsafe { NonNull::new_unchecked(self.buf.as_mut_ptr().add(offset)) };
        // SAFETY: The bytes are mapped in direction `D` (type invariant); `&mut self` keeps them
        // alive and unreachable otherwise for the view's life; the device is done with them
        // (safety requirement).
        unsafe { CpuView::new(self.mapping.dev, self.mapping.handle, offset, cpu, len) }
    }

    /// Unmaps the buffer and gives it back, with whatever the device wrote into it.
    ///
    /// # Safety
    ///
    /// As for [`Streaming::sync_for_cpu`]: the device has finished every access to the buffer, and
    /// is given none of it any more. (Dropping the `Streaming` instead needs no promise: the CPU
    /// never sees the bytes; that the device is stopped before memory it uses is freed is the
    /// driver's duty with any DMA API.)
    pub(crate) unsafe fn unmap(self) -> KVec<u8> {
        drop(self.mapping);
        self.buf
    }
}
