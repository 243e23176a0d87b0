// SPDX-License-Identifier: GPL-2.0

//! DMA pools of small coherent blocks ([`Pool`], [`PoolBlock`]).

use core::marker::PhantomData;
use core::ptr::NonNull;

use kernel::bindings;
use kernel::device::{Bound, Device};
use kernel::page::PAGE_SIZE;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::transmute::{AsBytes, FromBytes};

use super::{byte_len, check_range, dma_local_pool_create, raw_device, Coherent, DmaAddress, Gfp};

/// A `dma_pool` of coherent blocks of `count` elements of `T`, for small descriptor lists.
///
/// Dropping it destroys the pool, freeing its coherent memory: in process context, with interrupts
/// enabled.
///
/// # Invariants
///
/// `raw` is a pool created by `dma_pool_create` for `dev` with blocks of `count * size_of::<T>()`
/// bytes, not destroyed yet; `count > 0`.
///
/// # Examples
///
/// Lists of 32 bus addresses, each 256-byte aligned and within a 4 KiB page:
///
/// ```
/// # use kernel::device::{Bound, Device};
/// use crate::dma_local::{Gfp, Pool};
///
/// # fn example(dev: &Device<Bound>) -> Result {
/// let pool = Pool::<u64>::new(dev, c"example lists", 32, 256, 4096)?;
/// let mut list = pool.alloc(Gfp::KERNEL)?;
/// list.write(0, 0x10_0000)?;
/// assert_eq!(list.read(0)?, 0x10_0000);
/// assert_eq!(list.read(32), Err(EINVAL));
/// assert_eq!(list.dma_handle() % 256, 0);
/// # Ok(()) }
/// ```
pub(crate) struct Pool<'a, T: AsBytes + FromBytes> {
    _dev: PhantomData<&'a Device<Bound>>,
    raw: NonNull<bindings::dma_pool>,
    count: usize,
    _elements: PhantomData<T>,
}

// SAFETY: `dma_pool_alloc`/`dma_pool_free` lock the pool internally and may be called from any
// thread.
unsafe impl<T: AsBytes + FromBytes + Send> Send for Pool<'_, T> {}
// SAFETY: As for `Send`: every operation through `&Pool` is internally synchronised by the C pool.
unsafe impl<T: AsBytes + FromBytes + Send> Sync for Pool<'_, T> {}

impl<'a, T: AsBytes + FromBytes> Pool<'a, T> {
    /// A pool called `name` of blocks of `count` elements, aligned to `align` bytes (a power of
    /// two, at least `T`'s alignment, at most a page), never crossing a `boundary` (a power of two
    /// no smaller than a block, or 0 for none). `EINVAL` for anything else; `ENOMEM` when the pool
    /// cannot be made, which includes a boundary smaller than the block once `dma_pool` has
    /// rounded its size up to the alignment.
    pub(crate) fn new(
        dev: &'a Device<Bound>,
        name: &'static CStr,
        count: usize,
        align: usize,
        boundary: usize,
    ) -> Result<Self> {
        let () = Coherent::<T>::NOT_ZERO_SIZED;
        let () = Coherent::<T>::ALIGN_FITS;
        // Blocks come from page-aligned coherent memory: no more alignment than a page.
        if count == 0
            || !align.is_power_of_two()
            || align < core::mem::align_of::<T>()
            || align > PAGE_SIZE
        {
            return Err(EINVAL);
        }
        let size = byte_len::<T>(count)?;
        if boundary != 0 && (!boundary.is_power_of_two() || boundary < size) {
            return Err(EINVAL);
        }
        // SAFETY: `name` is a NUL-terminated string that outlives the pool ('static); `dev` is
        // bound.
        let raw = unsafe {
            dma_local_pool_create(
                name.as_char_ptr(),
                raw_device(dev).cast(),
                size,
                align,
                boundary,
            )
        };
        let raw = NonNull::new(raw).ok_or(ENOMEM)?;
        // INVARIANT: created above with blocks of `size` bytes, `count > 0`.
        Ok(Self {
            _dev: PhantomData,
            raw,
            count,
            _elements: PhantomData,
        })
    }

    /// Takes a block from the pool, zeroed.
    pub(crate) fn alloc(&self, gfp: Gfp) -> Result<PoolBlock<'_, 'a, T>> {
        self.take(gfp | Gfp::ZERO)
    }

    /// Takes a block from the pool without zeroing it, for a caller that writes every element
    /// the device will read: a hot path need not pay for clearing a whole block. The block holds
    /// arbitrary bytes: what a previous user left, the pool's free-list link and the block's DMA
    /// address (which `dma_pool` keeps in free blocks), or poison when the pool is debugged. Any
    /// bytes are a valid `T` (`FromBytes`), so reading them is sound; they mean nothing.
    ///
    /// The caller's contract: the device is never pointed at a byte of the block the driver did
    /// not write since taking it. A descriptor list with a stale entry beyond the ones written
    /// hands the device a kernel pointer, or the address of memory freed since, which it would
    /// read or write; where the driver cannot bound what the device reads, use [`Pool::alloc`].
    pub(crate) fn alloc_unzeroed(&self, gfp: Gfp) -> Result<PoolBlock<'_, 'a, T>> {
        self.take(gfp)
    }

    fn take(&self, gfp: Gfp) -> Result<PoolBlock<'_, 'a, T>> {
        let mut handle: DmaAddress = 0;
        // SAFETY: `raw` is a live pool (type invariant); `handle` is a valid place for the address.
        let cpu = unsafe { bindings::dma_pool_alloc(self.raw.as_ptr(), gfp.bits(), &mut handle) };
        let cpu = NonNull::new(cpu.cast::<T>()).ok_or(ENOMEM)?;
        // INVARIANT: a block of this pool, allocated above.
        Ok(PoolBlock {
            pool: self,
            cpu,
            handle,
        })
    }
}

impl<T: AsBytes + FromBytes> Drop for Pool<'_, T> {
    fn drop(&mut self) {
        // SAFETY: `raw` is live (type invariant) and destroyed once. Every `PoolBlock` borrowed the
        // pool, so each was dropped (its block freed) or leaked with `mem::forget`. A leaked block
        // keeps the pool busy: `dma_pool_destroy` then reports it and frees none of the pool's
        // memory, so the leaked block's memory is never reused either.
        unsafe { bindings::dma_pool_destroy(self.raw.as_ptr()) };
    }
}

/// One block of a [`Pool`], returned to it on drop. Accessed like a [`Coherent`], by volatile
/// copies.
///
/// # Invariants
///
/// `cpu`/`handle` are a block of `pool`, allocated by `dma_pool_alloc` and not yet freed.
pub(crate) struct PoolBlock<'p, 'a, T: AsBytes + FromBytes> {
    pool: &'p Pool<'a, T>,
    cpu: NonNull<T>,
    handle: DmaAddress,
}

// SAFETY: As for `Coherent`: the block is owned memory of `T`s, and the pool is `Sync`.
unsafe impl<T: AsBytes + FromBytes + Send> Send for PoolBlock<'_, '_, T> {}
// SAFETY: As for `Coherent`: `&PoolBlock` only reads.
unsafe impl<T: AsBytes + FromBytes + Send + Sync> Sync for PoolBlock<'_, '_, T> {}

impl<T: AsBytes + FromBytes> PoolBlock<'_, '_, T> {
    /// The DMA address of the block.
    pub(crate) fn dma_handle(&self) -> DmaAddress {
        self.handle
    }

    /// The number of elements in the block.
    pub(crate) fn count(&self) -> usize {
        self.pool.count
    }

    /// Reads element `index` with a volatile load.
    pub(crate) fn read(&self, index: usize) -> Result<T> {
        check_range(index, 1, self.pool.count)?;
        // SAFETY: in bounds of the block; aligned (the pool's alignment is at least `T`'s);
        // `FromBytes`.
        Ok(unsafe { self.cpu.as_ptr().add(index).read_volatile() })
    }

    /// Writes element `index` with a volatile store.
    pub(crate) fn write(&mut self, index: usize, value: T) -> Result {
        check_range(index, 1, self.pool.count)?;
        // SAFETY: in bounds and aligned; `&mut self` excludes other CPU accesses.
        unsafe { self.cpu.as_ptr().add(index).write_volatile(value) };
        Ok(())
    }
}

impl<T: AsBytes + FromBytes> Drop for PoolBlock<'_, '_, T> {
    fn drop(&mut self) {
        // SAFETY: A live block of this live pool (type invariant), freed once.
        unsafe {
            bindings::dma_pool_free(
                self.pool.raw.as_ptr(),
                self.cpu.as_ptr().cast(),
                self.handle,
            )
        };
    }
}
