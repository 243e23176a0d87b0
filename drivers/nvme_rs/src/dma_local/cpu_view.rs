// SPDX-License-Identifier: GPL-2.0

//! The CPU's turn with a buffer the device shares ([`CpuView`]).

use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;

use kernel::device::{Bound, Device};

use super::dir::{CpuWrites, DataDirection};
use super::{sync_range_for_cpu, sync_range_for_device, DmaAddress};

/// The CPU's turn with bytes of a [`Streaming`] or [`NonCoherent`] buffer: made by their `unsafe`
/// `sync_for_cpu` (which syncs the bytes for the CPU and states that the device is done with
/// them), it dereferences to the bytes, mutably in the directions where the CPU writes, and hands
/// them back to the device when dropped (`dma_sync_single_range_for_device`).
///
/// # Invariants
///
/// `cpu` points to `len` bytes at `offset` into the device memory at `handle`, of `dev`, which
/// were synced for the CPU in direction `D` and which the device does not access while this
/// exists; this borrows their owner mutably for `'v`.
pub(crate) struct CpuView<'v, D: DataDirection> {
    dev: &'v Device<Bound>,
    handle: DmaAddress,
    offset: usize,
    cpu: NonNull<u8>,
    len: usize,
    _owner: PhantomData<(&'v mut [u8], D)>,
}

impl<'v, D: DataDirection> CpuView<'v, D> {
    /// Syncs `len` bytes at `offset` into the device memory at `handle` for the CPU, and lends
    /// them to it.
    ///
    /// # Safety
    ///
    /// `cpu` points to those bytes, which are mapped (or allocated) for `dev` in direction `D`,
    /// stay valid and are accessed by nothing else, the device included, for `'v`.
    pub(super) unsafe fn new(
        dev: &'v Device<Bound>,
        handle: DmaAddress,
        offset: usize,
        cpu: NonNull<u8>,
        len: usize,
    ) -> Self {
        // SAFETY: A live mapping of this bound device, in its own direction, of which the bytes
        // are part (safety requirements).
        unsafe { sync_range_for_cpu(dev, handle, offset, len, D::DIRECTION) };
        // INVARIANT: synced for the CPU above; exclusive by the safety requirements.
        Self {
            dev,
            handle,
            offset,
            cpu,
            len,
            _owner: PhantomData,
        }
    }
}

impl<D: DataDirection> Deref for CpuView<'_, D> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: `len` valid bytes that nothing else accesses while this exists (type
        // invariant).
        unsafe { core::slice::from_raw_parts(self.cpu.as_ptr(), self.len) }
    }
}

impl<D: CpuWrites> DerefMut for CpuView<'_, D> {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: As in `deref`; `&mut self` makes the slice unique.
        unsafe { core::slice::from_raw_parts_mut(self.cpu.as_ptr(), self.len) }
    }
}

impl<D: DataDirection> Drop for CpuView<'_, D> {
    fn drop(&mut self) {
        // SAFETY: The bytes are a live mapping of this bound device in direction `D` (type
        // invariant); the slices lent out borrowed `self`, so none is left.
        unsafe {
            sync_range_for_device(self.dev, self.handle, self.offset, self.len, D::DIRECTION)
        };
    }
}
