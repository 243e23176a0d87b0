// SPDX-License-Identifier: GPL-2.0

//! Coherent allocations ([`Coherent`]) and the volatile field access to them ([`dma_read!`],
//! [`dma_write!`]).

use core::mem::size_of;
use core::ptr::NonNull;

use kernel::bindings;
use kernel::device::{Bound, Device};
use kernel::page::PAGE_SIZE;
use kernel::prelude::*;
use kernel::transmute::{AsBytes, FromBytes};

use super::{byte_len, check_range, raw_device, Attrs, DmaAddress, Gfp};

/// A coherent DMA allocation of `count` elements of `T`, shared by the CPU and the device.
///
/// The device may read and write this memory at any time, so no Rust reference to it is ever
/// created: every access is a volatile copy. Reads take `&self`; writes take `&mut self`, so that
/// two CPU writers, or a CPU writer and a CPU reader, cannot race. The one exception,
/// [`Coherent::write_shared`], is `unsafe`: its caller orders the accesses to the element itself.
///
/// Dropping it frees the memory (`dma_free_attrs`): in process context, with interrupts enabled.
///
/// # Invariants
///
/// - `cpu` is the CPU address and `handle` the DMA address of `count * size_of::<T>()` bytes
///   returned by `dma_alloc_attrs(dev, .., attrs)` and not yet freed; the product does not
///   overflow.
/// - `count > 0` and `size_of::<T>() > 0`.
/// - `attrs` does not contain [`Attrs::NO_KERNEL_MAPPING`], so `cpu` is a kernel mapping.
///
/// # Examples
///
/// A ring of descriptors the device reads, written field by field, and whole:
///
/// ```
/// # use kernel::device::{Bound, Device};
/// # use kernel::transmute::{AsBytes, FromBytes};
/// use crate::dma_local::{self, Coherent, Gfp};
///
/// #[repr(C)]
/// #[derive(Clone, Copy)]
/// struct Descriptor {
///     address: u64,
///     length: u32,
///     status: u32,
/// }
/// // SAFETY: `repr(C)` of 16 bytes of integers, with no padding.
/// unsafe impl AsBytes for Descriptor {}
/// // SAFETY: Any bits are valid integers.
/// unsafe impl FromBytes for Descriptor {}
///
/// # fn example(dev: &Device<Bound>) -> Result {
/// let mut ring = Coherent::<Descriptor>::alloc(dev, 256, Gfp::KERNEL)?;
/// crate::dma_write!(ring, 0, address, 0x10_0000)?;
/// crate::dma_write!(ring, 0, length, 512)?;
/// // The descriptor is whole before the device may see that it is ready.
/// dma_local::dma_wmb();
/// crate::dma_write!(ring, 0, status, 1)?;
/// assert_eq!(crate::dma_read!(ring, 0, length)?, 512);
/// ring.write(1, Descriptor { address: 0x20_0000, length: 64, status: 1 })?;
/// assert_eq!(ring.read(1)?.address, 0x20_0000);
/// // Past the end is an error, never an access beyond the allocation.
/// assert_eq!(crate::dma_write!(ring, 256, status, 1), Err(EINVAL));
/// // What the device is told: the ring's bus address, or an element's.
/// assert_eq!(ring.dma_handle_at(1)?, ring.dma_handle() + 16);
/// # Ok(()) }
/// ```
pub(crate) struct Coherent<'a, T: AsBytes + FromBytes> {
    dev: &'a Device<Bound>,
    cpu: NonNull<T>,
    handle: DmaAddress,
    count: usize,
    attrs: Attrs,
}

// SAFETY: The allocation is owned memory of `T`s; moving its owner to another thread moves the
// `T`s. `dev` is `Sync`, so sharing it with the other thread is fine.
unsafe impl<T: AsBytes + FromBytes + Send> Send for Coherent<'_, T> {}

// SAFETY: Through `&Coherent`, safe code only reads the elements (writes, the field macro's
// included, need `&mut`), which is as sound as sharing `&T`; `write_shared` also writes through
// it, moving a `T` to the threads that read it later, hence `Send`, and its caller orders those
// accesses (its safety requirement).
unsafe impl<T: AsBytes + FromBytes + Send + Sync> Sync for Coherent<'_, T> {}

impl<'a, T: AsBytes + FromBytes> Coherent<'a, T> {
    /// Evaluated at compile time for every `T` that is allocated: zero-sized types have no DMA
    /// meaning.
    pub(super) const NOT_ZERO_SIZED: () = assert!(size_of::<T>() != 0, "DMA of a zero-sized type");

    /// Evaluated at compile time for every `T` that is allocated: allocations are page-aligned
    /// (an IOMMU's or a remap's `vmap` address is no more), so elements may need no more.
    pub(super) const ALIGN_FITS: () = assert!(
        core::mem::align_of::<T>() <= PAGE_SIZE,
        "DMA elements aligned beyond a page"
    );

    /// Allocates `count` elements for `dev`, zeroed.
    pub(crate) fn alloc(dev: &'a Device<Bound>, count: usize, gfp: Gfp) -> Result<Self> {
        Self::alloc_attrs(dev, count, gfp, Attrs::NONE)
    }

    /// Allocates `count` elements for `dev` with DMA attributes, zeroed.
    ///
    /// Fails with `EINVAL` for zero elements, for [`Attrs::NO_KERNEL_MAPPING`] (the CPU could not
    /// reach the memory) and for [`Attrs::CC_SHARED`] (a mapping attribute, which
    /// `dma_alloc_attrs` refuses); with `EOVERFLOW` when the size does not fit in `usize`; and with
    /// `ENOMEM` when the kernel has no such memory.
    pub(crate) fn alloc_attrs(
        dev: &'a Device<Bound>,
        count: usize,
        gfp: Gfp,
        attrs: Attrs,
    ) -> Result<Self> {
        let () = Self::NOT_ZERO_SIZED;
        let () = Self::ALIGN_FITS;
        if count == 0
            || attrs.contains(Attrs::NO_KERNEL_MAPPING)
            || attrs.contains(Attrs::CC_SHARED)
        {
            return Err(EINVAL);
        }
        let size = byte_len::<T>(count)?;
        let mut handle: DmaAddress = 0;
        // SAFETY: `raw_device` gives a valid bound device; `handle` is a valid place for the DMA
        // address.
        let cpu = unsafe {
            bindings::dma_alloc_attrs(
                raw_device(dev),
                size,
                &mut handle,
                (gfp | Gfp::ZERO).bits(),
                attrs.bits(),
            )
        };
        let cpu = NonNull::new(cpu.cast::<T>()).ok_or(ENOMEM)?;
        // INVARIANT: allocated above with `size = count * size_of::<T>()`, `count > 0`, no
        // `NO_KERNEL_MAPPING`, and `T` is not zero-sized.
        Ok(Self {
            dev,
            cpu,
            handle,
            count,
            attrs,
        })
    }

    /// The number of elements.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// The size in bytes.
    pub(crate) fn size(&self) -> usize {
        // No overflow: checked at allocation (type invariant).
        self.count * size_of::<T>()
    }

    /// The attributes it was allocated with.
    pub(crate) fn attrs(&self) -> Attrs {
        self.attrs
    }

    /// The DMA address of the first element, for the device.
    pub(crate) fn dma_handle(&self) -> DmaAddress {
        self.handle
    }

    /// The DMA address of element `index`.
    pub(crate) fn dma_handle_at(&self, index: usize) -> Result<DmaAddress> {
        check_range(index, 1, self.count)?;
        // `index * size_of::<T>()` is below `size()`, which fits (type invariant).
        Ok(self.handle + (index * size_of::<T>()) as DmaAddress)
    }

    /// A pointer to element `index`, bounds-checked.
    fn element(&self, index: usize) -> Result<*mut T> {
        check_range(index, 1, self.count)?;
        // SAFETY: `index < count`, so the offset stays within the allocation (type invariant).
        Ok(unsafe { self.cpu.as_ptr().add(index) })
    }

    /// For [`dma_read!`] only: a pointer to element `index` that the macro reads through. An
    /// associated function the macro names by its path, so that no other type's method of the
    /// same name can stand in for it.
    #[doc(hidden)]
    #[inline]
    pub(crate) fn __dma_read_ptr(this: &Self, index: usize) -> Result<*const T> {
        this.element(index).map(|p| p.cast_const())
    }

    /// For [`dma_write!`] only: as [`Coherent::__dma_read_ptr`], from `&mut`, so that the macro's
    /// store cannot race another CPU access.
    #[doc(hidden)]
    #[inline]
    pub(crate) fn __dma_write_ptr(this: &mut Self, index: usize) -> Result<*mut T> {
        this.element(index)
    }

    /// Reads element `index` with a volatile load.
    pub(crate) fn read(&self, index: usize) -> Result<T> {
        let ptr = self.element(index)?;
        // SAFETY: `ptr` is in bounds and aligned (allocations are page-aligned, elements are
        // `T`-sized); any bytes are a valid `T` (`FromBytes`); volatile, because the device may
        // write it.
        Ok(unsafe { ptr.read_volatile() })
    }

    /// Writes element `index` with a volatile store.
    pub(crate) fn write(&mut self, index: usize, value: T) -> Result {
        let ptr = self.element(index)?;
        // SAFETY: `ptr` is in bounds and aligned; `&mut self` excludes every other CPU access to
        // the allocation; volatile, because the device may read it.
        unsafe { ptr.write_volatile(value) };
        Ok(())
    }

    /// Writes element `index` with a volatile store through a shared reference: for allocations
    /// whose elements different CPUs own at a time, such as a descriptor ring that a producer fills
    /// while a consumer reads the descriptors the device is done with.
    ///
    /// # Safety
    ///
    /// Every other CPU access to element `index`, from any thread or context, happens before or
    /// after this write (for example, the element is handed over with a release store and an
    /// acquire load): none races with it.
    pub(crate) unsafe fn write_shared(&self, index: usize, value: T) -> Result {
        let ptr = self.element(index)?;
        // SAFETY: `ptr` is in bounds and aligned; no CPU access races with the store (safety
        // requirement); volatile, because the device may read it.
        unsafe { ptr.write_volatile(value) };
        Ok(())
    }

    /// Copies `dst.len()` elements, from element `offset` on, into `dst`.
    pub(crate) fn read_into(&self, offset: usize, dst: &mut [T]) -> Result {
        check_range(offset, dst.len(), self.count)?;
        for (i, slot) in dst.iter_mut().enumerate() {
            // SAFETY: `offset + i < count` by the range check; as in `read`.
            *slot = unsafe { self.cpu.as_ptr().add(offset + i).read_volatile() };
        }
        Ok(())
    }

    /// Copies `src` into the allocation from element `offset` on.
    pub(crate) fn write_from(&mut self, offset: usize, src: &[T]) -> Result
    where
        T: Copy,
    {
        check_range(offset, src.len(), self.count)?;
        for (i, value) in src.iter().enumerate() {
            // SAFETY: `offset + i < count` by the range check; as in `write`.
            unsafe { self.cpu.as_ptr().add(offset + i).write_volatile(*value) };
        }
        Ok(())
    }
}

impl<T: AsBytes + FromBytes> Drop for Coherent<'_, T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant, these are the arguments of the allocation, not freed yet;
        // `dev` is bound (it is borrowed as `Device<Bound>`).
        unsafe {
            bindings::dma_free_attrs(
                raw_device(self.dev),
                self.size(),
                self.cpu.as_ptr().cast(),
                self.handle,
                self.attrs.bits(),
            )
        };
    }
}

/// What the field macros [`dma_read!`] and [`dma_write!`] call; not for drivers.
#[doc(hidden)]
pub(crate) mod __field_access {
    use kernel::transmute::FromBytes;

    /// Implemented twice for a type that implements `Deref`, so that [`no_deref`] cannot infer
    /// which impl it means for one, and does not compile (E0283).
    pub(crate) trait NotDeref<Which> {}
    impl<T: ?Sized> NotDeref<()> for T {}
    /// The marker of the second impl.
    pub(crate) struct ImplementsDeref;
    impl<T: ?Sized + core::ops::Deref> NotDeref<ImplementsDeref> for T {}

    /// Compiles only for an element type that does not implement `Deref`: `(*ptr).field` then
    /// names a field of the element itself, never one reached through `Deref::deref`, which
    /// would make a reference to the element in device memory (and skip the bounds check).
    #[inline(always)]
    pub(crate) fn no_deref<T: ?Sized + NotDeref<Which>, Which>(_: *const T) {}

    /// A volatile load of a field of a type that takes any bytes, so that no union field of a
    /// type with invalid values (a `bool`) is read.
    ///
    /// # Safety
    ///
    /// `field` is valid for reads and aligned.
    #[inline(always)]
    pub(crate) unsafe fn read<F: FromBytes>(field: *const F) -> F {
        // SAFETY: By the function's safety requirement; any bytes are a valid `F`.
        unsafe { field.read_volatile() }
    }
}

/// Reads one field of one element of a [`Coherent`] with a volatile load, never making a reference:
/// `dma_read!(ring, index, status)`. Evaluates to `Result<F>`. The allocation is a `Coherent` (or
/// a reference to one) and nothing else: the macro reaches it through `crate::dma_local::Coherent`
/// by path. It refuses at compile time an element type that implements `Deref` (E0283: the field
/// could be reached through a reference), a field of a `#[repr(packed)]` type (E0793: a volatile
/// access to an unaligned field is undefined), and a field whose type is not `FromBytes` (E0277).
/// One field deep: read a nested struct whole and take its part.
#[macro_export]
macro_rules! dma_read {
    ($alloc:expr, $index:expr, $field:ident) => {
        match $crate::dma_local::Coherent::__dma_read_ptr(&$alloc, $index) {
            Ok(ptr) => {
                $crate::dma_local::__field_access::no_deref(ptr);
                // Never called: only type-checked, so that a field of a packed type, which no
                // reference may point to, fails to compile (E0793).
                let _aligned = || {
                    // SAFETY: Not executed.
                    let _ = unsafe { &(*ptr).$field };
                };
                // SAFETY: `ptr` points to an element in bounds; `addr_of!` projects to a field of
                // the element itself (it has no `Deref`) without making a reference.
                let field = unsafe { ::core::ptr::addr_of!((*ptr).$field) };
                // SAFETY: In bounds, aligned (checked at compile time above); volatile, because
                // the device may write it.
                Ok(unsafe { $crate::dma_local::__field_access::read(field) })
            }
            Err(e) => Err::<_, ::kernel::error::Error>(e),
        }
    };
}

/// Writes one field of one element of a [`Coherent`] with a volatile store:
/// `dma_write!(ring, index, status, 0)?`. Needs `&mut` access to the allocation: the macro borrows
/// it as `&mut Coherent`, so a shared reference does not compile. As [`dma_read!`], it takes only a
/// `Coherent`, one field deep, and refuses element types with `Deref` and packed types.
#[macro_export]
macro_rules! dma_write {
    ($alloc:expr, $index:expr, $field:ident, $value:expr) => {{
        let value = $value;
        match $crate::dma_local::Coherent::__dma_write_ptr(&mut $alloc, $index) {
            Ok(ptr) => {
                $crate::dma_local::__field_access::no_deref(ptr);
                // Never called: only type-checked, to refuse packed types (see `dma_read!`).
                let _aligned = || {
                    // SAFETY: Not executed.
                    let _ = unsafe { &(*ptr).$field };
                };
                // SAFETY: As in `dma_read!`; the caller holds `&mut` of the allocation, so no other
                // CPU access races with the store.
                let field = unsafe { ::core::ptr::addr_of_mut!((*ptr).$field) };
                // SAFETY: As above.
                unsafe { ::core::ptr::write_volatile(field, value) };
                Ok(())
            }
            Err(e) => Err::<(), ::kernel::error::Error>(e),
        }
    }};
}
