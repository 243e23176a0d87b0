// SPDX-License-Identifier: GPL-2.0

//! This driver's private wrapper of the kernel's C DMA API, and of the PCI bus mastering that lets
//! a PCI device do DMA.
//!
//! Every driver of the project carries a byte-identical copy of this file; it is edited only in
//! `template/src/dma_local.rs` and propagated with `scripts/sync-dma.sh`. It depends on nothing but
//! the kernel crate (its `bindings`, device, PCI and devres types) and the one-line C wrappers in
//! `dma_local_shim.c`; every C symbol and layout assumption it relies on is listed in
//! `dma_local.api`. The PCI part exists only in kernels with `CONFIG_PCI`.
//!
//! - [`Coherent`]: a typed coherent allocation with checked sizes and bounds and volatile access.
//! - [`Streaming`]: a buffer mapped for streaming DMA in one [`Direction`], with syncs; [`Mapping`]
//!   for memory owned elsewhere (socket buffers, a block request's pages).
//! - [`Pool`]: small coherent blocks from a `dma_pool` (descriptor lists).
//! - [`set_mask`], [`set_coherent_mask`], [`set_mask_and_coherent`]; [`set_min_align_mask`] and
//!   [`max_mapping_size`], the limits a bounce buffer (swiotlb) puts on streaming mappings.
//! - [`enable_bus_master`]: a PCI device is a bus master from probe, and no longer one once its
//!   driver has unbound.
//!
//! Every object that can reach the DMA API borrows the device as `&'a Device<Bound>`. The kernel
//! crate hands a driver that reference only for as long as the device is bound, so no DMA API call
//! can follow the unbind: the objects are dropped, and their memory released, before the device's
//! `remove` completes.

// A driver uses only part of its copy; the copies must stay identical all the same.
#![allow(dead_code)]

use core::marker::PhantomData;
use core::mem::{size_of, ManuallyDrop};
use core::ptr::NonNull;

use kernel::bindings;
#[cfg(CONFIG_PCI)]
use kernel::device::Core;
use kernel::device::{Bound, Device};
#[cfg(CONFIG_PCI)]
use kernel::devres;
use kernel::error::to_result;
use kernel::ffi::{c_char, c_int, c_uint, c_ulong, c_void};
#[cfg(CONFIG_PCI)]
use kernel::pci;
use kernel::prelude::*;
use kernel::str::CStr;
#[cfg(CONFIG_PCI)]
use kernel::sync::aref::ARef;
use kernel::transmute::{AsBytes, FromBytes};

/// A bus address as the device sees it (`dma_addr_t`).
pub(crate) type DmaAddress = bindings::dma_addr_t;

// One-line C wrappers of static inline functions (`dma_local_shim.c`).
extern "C" {
    fn dma_local_mapping_error(dev: *mut c_void, addr: DmaAddress) -> c_int;
    fn dma_local_map_single(
        dev: *mut c_void,
        ptr: *mut c_void,
        size: usize,
        dir: bindings::dma_data_direction,
        attrs: c_ulong,
    ) -> DmaAddress;
    fn dma_local_unmap_single(
        dev: *mut c_void,
        addr: DmaAddress,
        size: usize,
        dir: bindings::dma_data_direction,
        attrs: c_ulong,
    );
    fn dma_local_sync_single_for_cpu(
        dev: *mut c_void,
        addr: DmaAddress,
        size: usize,
        dir: bindings::dma_data_direction,
    );
    fn dma_local_sync_single_for_device(
        dev: *mut c_void,
        addr: DmaAddress,
        size: usize,
        dir: bindings::dma_data_direction,
    );
    fn dma_local_set_min_align_mask(dev: *mut c_void, mask: c_uint);
    fn dma_local_pool_create(
        name: *const c_char,
        dev: *mut c_void,
        size: usize,
        align: usize,
        boundary: usize,
    ) -> *mut bindings::dma_pool;
}

/// The C `struct device` behind the kernel crate's `Device`.
///
/// `Device::as_raw()` is not public. `Device<Ctx>` is `#[repr(transparent)]` over
/// `Opaque<bindings::device>`, itself transparent over the C struct, so a pointer to one is a
/// pointer to the other (layout assumption `device-transparent` in `dma_local.api`).
fn raw_device(dev: &Device<Bound>) -> *mut bindings::device {
    core::ptr::from_ref(dev).cast_mut().cast()
}

/// Memory allocation flags for the DMA API (`gfp_t`), from the kernel's own constants.
///
/// The kernel crate's `Flags` does not expose its raw value to drivers, hence this type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Gfp(bindings::gfp_t);

impl Gfp {
    /// `GFP_KERNEL`: may sleep.
    pub(crate) const KERNEL: Gfp = Gfp(bindings::GFP_KERNEL);
    /// `GFP_ATOMIC`: may not sleep, may use reserves.
    pub(crate) const ATOMIC: Gfp = Gfp(bindings::GFP_ATOMIC);
    /// `GFP_NOWAIT`: may not sleep.
    pub(crate) const NOWAIT: Gfp = Gfp(bindings::GFP_NOWAIT);
    /// `__GFP_NOWARN`: an allocation failure is expected and handled; do not warn.
    pub(crate) const NOWARN: Gfp = Gfp(bindings::__GFP_NOWARN);

    /// The raw `gfp_t`.
    pub(crate) const fn bits(self) -> bindings::gfp_t {
        self.0
    }
}

impl core::ops::BitOr for Gfp {
    type Output = Gfp;
    fn bitor(self, rhs: Gfp) -> Gfp {
        Gfp(self.0 | rhs.0)
    }
}

/// A set of `DMA_ATTR_*` attributes, combined with `|`, `&` and `!`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Attrs(c_ulong);

macro_rules! dma_attrs {
    ($($(#[$doc:meta])* $name:ident = $c:ident;)*) => {
        impl Attrs {
            $($(#[$doc])* pub(crate) const $name: Attrs = Attrs(bindings::$c as c_ulong);)*
            /// Every attribute this wrapper knows.
            pub(crate) const ALL: Attrs = Attrs(0 $(| bindings::$c as c_ulong)*);
        }
    };
}

dma_attrs! {
    /// `DMA_ATTR_WEAK_ORDERING`: reads and writes to the mapping may be weakly ordered.
    WEAK_ORDERING = DMA_ATTR_WEAK_ORDERING;
    /// `DMA_ATTR_WRITE_COMBINE`: writes to the mapping may be buffered.
    WRITE_COMBINE = DMA_ATTR_WRITE_COMBINE;
    /// `DMA_ATTR_NO_KERNEL_MAPPING`: no kernel virtual mapping; not allowed for [`Coherent`].
    NO_KERNEL_MAPPING = DMA_ATTR_NO_KERNEL_MAPPING;
    /// `DMA_ATTR_SKIP_CPU_SYNC`: map or unmap without cache maintenance.
    SKIP_CPU_SYNC = DMA_ATTR_SKIP_CPU_SYNC;
    /// `DMA_ATTR_FORCE_CONTIGUOUS`: physically contiguous memory.
    FORCE_CONTIGUOUS = DMA_ATTR_FORCE_CONTIGUOUS;
    /// `DMA_ATTR_ALLOC_SINGLE_PAGES`: build the allocation from single pages.
    ALLOC_SINGLE_PAGES = DMA_ATTR_ALLOC_SINGLE_PAGES;
    /// `DMA_ATTR_NO_WARN`: no warning on allocation failure.
    NO_WARN = DMA_ATTR_NO_WARN;
    /// `DMA_ATTR_PRIVILEGED`: accessible to privileged device accesses only.
    PRIVILEGED = DMA_ATTR_PRIVILEGED;
    /// `DMA_ATTR_MMIO`: the physical address is MMIO, not memory.
    MMIO = DMA_ATTR_MMIO;
    /// `DMA_ATTR_DEBUGGING_IGNORE_CACHELINES`: DMA-API debugging ignores cache-line overlaps.
    DEBUGGING_IGNORE_CACHELINES = DMA_ATTR_DEBUGGING_IGNORE_CACHELINES;
    /// `DMA_ATTR_REQUIRE_COHERENT`: fail rather than bounce or sync.
    REQUIRE_COHERENT = DMA_ATTR_REQUIRE_COHERENT;
    /// `DMA_ATTR_CC_SHARED`: memory shared with the host in a confidential guest.
    CC_SHARED = DMA_ATTR_CC_SHARED;
}

impl Attrs {
    /// No attribute.
    pub(crate) const NONE: Attrs = Attrs(0);

    /// The raw bits, as the C API takes them.
    pub(crate) const fn bits(self) -> c_ulong {
        self.0
    }

    /// Whether every attribute of `other` is in `self`.
    pub(crate) const fn contains(self, other: Attrs) -> bool {
        self.0 & other.0 == other.0
    }
}

impl core::ops::BitOr for Attrs {
    type Output = Attrs;
    fn bitor(self, rhs: Attrs) -> Attrs {
        Attrs(self.0 | rhs.0)
    }
}

impl core::ops::BitAnd for Attrs {
    type Output = Attrs;
    fn bitand(self, rhs: Attrs) -> Attrs {
        Attrs(self.0 & rhs.0)
    }
}

impl core::ops::Not for Attrs {
    type Output = Attrs;
    /// The attributes this wrapper knows that are not in `self`.
    fn not(self) -> Attrs {
        Attrs(!self.0 & Attrs::ALL.0)
    }
}

/// A DMA address mask: the device drives `bits` address lines.
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
pub(crate) fn set_mask(dev: &Device<Bound>, mask: Mask) -> Result {
    // SAFETY: `raw_device` gives a valid `struct device` that is bound for the duration of the
    // call.
    to_result(unsafe { bindings::dma_set_mask(raw_device(dev), mask.value()) })
}

/// Sets the mask of coherent allocations (`dma_set_coherent_mask`).
pub(crate) fn set_coherent_mask(dev: &Device<Bound>, mask: Mask) -> Result {
    // SAFETY: As in `set_mask`.
    to_result(unsafe { bindings::dma_set_coherent_mask(raw_device(dev), mask.value()) })
}

/// Sets both masks (`dma_set_mask_and_coherent`).
pub(crate) fn set_mask_and_coherent(dev: &Device<Bound>, mask: Mask) -> Result {
    // SAFETY: As in `set_mask`.
    to_result(unsafe { bindings::dma_set_mask_and_coherent(raw_device(dev), mask.value()) })
}

/// Keeps the low `mask` bits of a streaming mapping's address equal to the CPU address's when it
/// goes through a bounce buffer (`dma_set_min_align_mask`): for a device that reads an offset into
/// its pages, as NVMe PRPs do. `EINVAL` when the device has no DMA parameters to hold it.
pub(crate) fn set_min_align_mask(dev: &Device<Bound>, mask: u32) -> Result {
    let raw = raw_device(dev);
    // SAFETY: `raw_device` gives a valid `struct device`, bound for the duration of the call.
    if unsafe { (*raw).dma_parms }.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: As above; the device has DMA parameters, so the call does not warn.
    unsafe { dma_local_set_min_align_mask(raw.cast(), mask) };
    Ok(())
}

/// The largest streaming mapping the device can have (`dma_max_mapping_size`): a bounce buffer
/// limits it.
pub(crate) fn max_mapping_size(dev: &Device<Bound>) -> usize {
    // SAFETY: As in `set_mask`.
    unsafe { bindings::dma_max_mapping_size(raw_device(dev)) }
}

/// Lets a PCI device master the bus, that is do DMA, while its driver is bound: enables its memory
/// space and bus mastering, and has devres disable it at unbind, or when the probe fails.
///
/// The PCI core leaves a device enabled when its driver goes; a C driver calls `pci_disable_device`
/// at the end of `remove`, which clears Bus Master Enable. devres does that here once the driver's
/// data, and with it every DMA object of this module, is dropped: a backstop, so that the device
/// cannot reach memory later. Stopping the device before its buffers go is still the driver's job.
#[cfg(CONFIG_PCI)]
pub(crate) fn enable_bus_master(pdev: &pci::Device<Core<'_>>) -> Result {
    pdev.enable_device_mem()?;
    pdev.set_master();
    let bound: &pci::Device<Bound> = pdev;
    // INVARIANT: enabled just above. Dropped (the device disabled) if registering fails.
    devres::register(bound.as_ref(), DisableAtUnbind(bound.into()), GFP_KERNEL)
}

/// Disables a PCI device when dropped (see [`enable_bus_master`]).
///
/// # Invariants
///
/// [`enable_bus_master`] enabled the device for this value, which is its only maker.
#[cfg(CONFIG_PCI)]
struct DisableAtUnbind(ARef<pci::Device>);

#[cfg(CONFIG_PCI)]
impl Drop for DisableAtUnbind {
    fn drop(&mut self) {
        // `pci::Device` is transparent over `Opaque<pci_dev>`, itself transparent over the C
        // struct (layout assumptions `pci-device-transparent`, `opaque-transparent` in
        // `dma_local.api`).
        let pdev = core::ptr::from_ref::<pci::Device>(&self.0)
            .cast_mut()
            .cast::<bindings::pci_dev>();
        // SAFETY: The reference keeps the `pci_dev` alive, and it was enabled for this value (type
        // invariant), which is dropped once. `Opaque` lets C write to the struct behind a shared
        // reference.
        unsafe { bindings::pci_disable_device(pdev) };
    }
}

/// `count` elements of `T` after `offset`, in bytes; `EOVERFLOW` when that does not fit in `usize`.
fn byte_len<T>(count: usize) -> Result<usize> {
    count.checked_mul(size_of::<T>()).ok_or(EOVERFLOW)
}

/// Checks that `count` elements from `offset` lie within `len` elements.
fn check_range(offset: usize, count: usize, len: usize) -> Result {
    let end = offset.checked_add(count).ok_or(EOVERFLOW)?;
    if end > len {
        return Err(EINVAL);
    }
    Ok(())
}

/// A coherent DMA allocation of `count` elements of `T`, shared by the CPU and the device.
///
/// The device may read and write this memory at any time, so no Rust reference to it is ever
/// created: every access is a volatile copy. Reads take `&self`; writes take `&mut self`, so that
/// two CPU writers, or a CPU writer and a CPU reader, cannot race. The one exception,
/// [`Coherent::write_shared`], is `unsafe`: its caller orders the accesses to the element itself.
///
/// # Invariants
///
/// - `cpu` is the CPU address and `handle` the DMA address of `count * size_of::<T>()` bytes
///   returned by `dma_alloc_attrs(dev, .., attrs)` and not yet freed; the product does not
///   overflow.
/// - `count > 0` and `size_of::<T>() > 0`.
/// - `attrs` does not contain [`Attrs::NO_KERNEL_MAPPING`], so `cpu` is a kernel mapping.
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

// SAFETY: Through `&Coherent`, safe code only reads the elements (writes need `&mut`), which is as
// sound as sharing `&T`; `write_shared` also writes through it, moving a `T` to the threads that
// read it later, hence `Send`, and its caller orders those accesses (its safety requirement).
unsafe impl<T: AsBytes + FromBytes + Send + Sync> Sync for Coherent<'_, T> {}

impl<'a, T: AsBytes + FromBytes> Coherent<'a, T> {
    /// Evaluated at compile time for every `T` that is allocated: zero-sized types have no DMA
    /// meaning.
    const NOT_ZERO_SIZED: () = assert!(size_of::<T>() != 0, "DMA of a zero-sized type");

    /// Allocates `count` elements for `dev`, zeroed.
    pub(crate) fn alloc(dev: &'a Device<Bound>, count: usize, gfp: Gfp) -> Result<Self> {
        Self::alloc_attrs(dev, count, gfp, Attrs::NONE)
    }

    /// Allocates `count` elements for `dev` with DMA attributes, zeroed.
    ///
    /// Fails with `EINVAL` for zero elements or [`Attrs::NO_KERNEL_MAPPING`], with `EOVERFLOW` when
    /// the size does not fit in `usize`, and with `ENOMEM` when the kernel has no such memory.
    pub(crate) fn alloc_attrs(
        dev: &'a Device<Bound>,
        count: usize,
        gfp: Gfp,
        attrs: Attrs,
    ) -> Result<Self> {
        let () = Self::NOT_ZERO_SIZED;
        if count == 0 || attrs.contains(Attrs::NO_KERNEL_MAPPING) {
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
                (gfp | Gfp(bindings::__GFP_ZERO)).bits(),
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

    /// The CPU address of the first element. It is a raw pointer on purpose: a reference to memory
    /// that the device writes would be unsound.
    pub(crate) fn cpu_addr(&self) -> *mut T {
        self.cpu.as_ptr()
    }

    /// A pointer to element `index`, bounds-checked; for the field macros [`dma_read!`] and
    /// [`dma_write!`].
    #[doc(hidden)]
    pub(crate) fn element_ptr(&self, index: usize) -> Result<*mut T> {
        check_range(index, 1, self.count)?;
        // SAFETY: `index < count`, so the offset stays within the allocation (type invariant).
        Ok(unsafe { self.cpu.as_ptr().add(index) })
    }

    /// Reads element `index` with a volatile load.
    pub(crate) fn read(&self, index: usize) -> Result<T> {
        let ptr = self.element_ptr(index)?;
        // SAFETY: `ptr` is in bounds and aligned (allocations are page-aligned, elements are
        // `T`-sized); any bytes are a valid `T` (`FromBytes`); volatile, because the device may
        // write it.
        Ok(unsafe { ptr.read_volatile() })
    }

    /// Writes element `index` with a volatile store.
    pub(crate) fn write(&mut self, index: usize, value: T) -> Result {
        let ptr = self.element_ptr(index)?;
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
        let ptr = self.element_ptr(index)?;
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

    /// Hands the allocation over to the caller without freeing it; [`Coherent::from_parts`] takes
    /// it back.
    pub(crate) fn into_parts(self) -> CoherentParts<T> {
        let this = ManuallyDrop::new(self);
        CoherentParts {
            cpu: this.cpu,
            handle: this.handle,
            count: this.count,
            attrs: this.attrs,
        }
    }

    /// Takes back an allocation given away by [`Coherent::into_parts`].
    ///
    /// # Safety
    ///
    /// `parts` must come from `into_parts` of a `Coherent<T>` of the same `dev`, and must not have
    /// been taken back before.
    pub(crate) unsafe fn from_parts(dev: &'a Device<Bound>, parts: CoherentParts<T>) -> Self {
        // INVARIANT: by the safety requirements, these are the parts of a valid `Coherent`.
        Self {
            dev,
            cpu: parts.cpu,
            handle: parts.handle,
            count: parts.count,
            attrs: parts.attrs,
        }
    }
}

/// The raw parts of a [`Coherent`] handed over by [`Coherent::into_parts`]: the memory stays
/// allocated until [`Coherent::from_parts`] takes it back, or until the caller frees it with
/// `dma_free_attrs`.
pub(crate) struct CoherentParts<T> {
    /// CPU address of the first element.
    pub(crate) cpu: NonNull<T>,
    /// DMA address of the first element.
    pub(crate) handle: DmaAddress,
    /// Number of elements.
    pub(crate) count: usize,
    /// Attributes of the allocation.
    pub(crate) attrs: Attrs,
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

/// Reads one field of one element of a [`Coherent`] with a volatile load, never making a reference:
/// `dma_read!(ring, index, status)` or `dma_read!(ring, index, addr.low)`. Evaluates to
/// `Result<F>`.
#[macro_export]
macro_rules! dma_read {
    ($alloc:expr, $index:expr, $($field:ident).+) => {
        match $alloc.element_ptr($index) {
            Ok(ptr) => {
                // SAFETY: `ptr` points to an element in bounds; `addr_of!` projects to a field
                // (only field names are accepted) without making a reference; the field is plain
                // data, read with a volatile load because the device may write it.
                let field = unsafe { ::core::ptr::addr_of!((*ptr).$($field).+) };
                // SAFETY: As above: in bounds, aligned, plain data.
                Ok(unsafe { ::core::ptr::read_volatile(field) })
            }
            Err(e) => Err(e),
        }
    };
}

/// Writes one field of one element of a [`Coherent`] with a volatile store:
/// `dma_write!(ring, index, status, 0)?`. Needs `&mut` access to the allocation.
#[macro_export]
macro_rules! dma_write {
    ($alloc:expr, $index:expr, $($field:ident).+, $value:expr) => {{
        let alloc: &mut _ = &mut $alloc;
        let value = $value;
        match alloc.element_ptr($index) {
            Ok(ptr) => {
                // SAFETY: As in `dma_read!`; the caller holds `&mut` of the allocation, so no other
                // CPU access races with the store.
                let field = unsafe { ::core::ptr::addr_of_mut!((*ptr).$($field).+) };
                // SAFETY: As above.
                unsafe { ::core::ptr::write_volatile(field, value) };
                Ok(())
            }
            Err(e) => Err::<(), ::kernel::error::Error>(e),
        }
    }};
}

/// The direction of a streaming mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    /// The device reads the buffer.
    ToDevice,
    /// The device writes the buffer.
    FromDevice,
    /// The device reads and writes the buffer.
    Bidirectional,
}

impl Direction {
    fn raw(self) -> bindings::dma_data_direction {
        match self {
            Direction::ToDevice => bindings::dma_data_direction::DMA_TO_DEVICE,
            Direction::FromDevice => bindings::dma_data_direction::DMA_FROM_DEVICE,
            Direction::Bidirectional => bindings::dma_data_direction::DMA_BIDIRECTIONAL,
        }
    }
}

/// A streaming mapping of memory that is owned elsewhere, such as a socket buffer's data. The owner
/// keeps the memory alive and leaves it to the device until the mapping is dropped, which unmaps
/// it; the CPU reaches it only between [`Mapping::sync_for_cpu`] and [`Mapping::sync_for_device`].
///
/// # Invariants
///
/// `handle` is the mapping, by `dma_map_single_attrs(dev, .., len, dir, attrs)` or
/// `dma_map_page_attrs(dev, .., len, dir, attrs)`, of `len > 0` bytes, not yet unmapped.
pub(crate) struct Mapping<'a> {
    dev: &'a Device<Bound>,
    handle: DmaAddress,
    len: usize,
    dir: Direction,
    attrs: Attrs,
}

impl<'a> Mapping<'a> {
    /// Maps `len` bytes at `ptr` for `dev` in direction `dir`. Every mapping is checked with
    /// `dma_mapping_error`; a failed one is `ENOMEM`.
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
        if len == 0 {
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
        if len == 0 {
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

    /// Syncs the memory for the CPU (`dma_sync_single_for_cpu`).
    pub(crate) fn sync_for_cpu(&mut self) {
        // SAFETY: `handle`/`len`/`dir` describe a live mapping of this device (type invariant).
        unsafe {
            dma_local_sync_single_for_cpu(
                raw_device(self.dev).cast(),
                self.handle,
                self.len,
                self.dir.raw(),
            )
        };
    }

    /// Syncs the memory for the device (`dma_sync_single_for_device`).
    pub(crate) fn sync_for_device(&mut self) {
        // SAFETY: As in `sync_for_cpu`.
        unsafe {
            dma_local_sync_single_for_device(
                raw_device(self.dev).cast(),
                self.handle,
                self.len,
                self.dir.raw(),
            )
        };
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

/// A CPU buffer mapped for streaming DMA in one direction. It owns the buffer; [`Streaming::unmap`]
/// gives it back.
///
/// While mapped the buffer belongs to the device. The CPU reaches it only through
/// [`Streaming::cpu_access`], which syncs it for the CPU and, when the access ends, back for the
/// device.
pub(crate) struct Streaming<'a> {
    // Declared before `buf`, so that it is dropped (unmapped) before the buffer is freed.
    mapping: Mapping<'a>,
    buf: KVec<u8>,
}

impl<'a> Streaming<'a> {
    /// Maps `buf` for `dev` in direction `dir`. On failure the buffer comes back with the error, so
    /// that nothing is lost.
    pub(crate) fn map(
        dev: &'a Device<Bound>,
        buf: KVec<u8>,
        dir: Direction,
        attrs: Attrs,
    ) -> core::result::Result<Self, (Error, KVec<u8>)> {
        let mut buf = buf;
        // SAFETY: `buf`'s heap memory (kmalloc) is owned by the returned `Streaming`, which unmaps
        // it before freeing it, and lends it to the CPU only through `cpu_access`.
        match unsafe { Mapping::new(dev, buf.as_mut_ptr(), buf.len(), dir, attrs) } {
            Ok(mapping) => Ok(Self { mapping, buf }),
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

    /// Syncs the buffer for the CPU (`dma_sync_single_for_cpu`).
    pub(crate) fn sync_for_cpu(&mut self) {
        self.mapping.sync_for_cpu();
    }

    /// Syncs the buffer for the device (`dma_sync_single_for_device`).
    pub(crate) fn sync_for_device(&mut self) {
        self.mapping.sync_for_device();
    }

    /// Lends the buffer to the CPU: syncs it for the CPU, runs `f` on it, then syncs it back for
    /// the device. The device must not access the buffer until this returns.
    pub(crate) fn cpu_access<R>(&mut self, f: impl FnOnce(&mut [u8]) -> R) -> R {
        self.mapping.sync_for_cpu();
        let r = f(&mut self.buf);
        self.mapping.sync_for_device();
        r
    }

    /// Unmaps the buffer and gives it back, with whatever the device wrote into it.
    pub(crate) fn unmap(self) -> KVec<u8> {
        drop(self.mapping);
        self.buf
    }
}

/// A `dma_pool` of coherent blocks of `count` elements of `T`, for small descriptor lists.
///
/// # Invariants
///
/// `raw` is a pool created by `dma_pool_create` for `dev` with blocks of `count * size_of::<T>()`
/// bytes, not destroyed yet; `count > 0`.
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
    /// two, at least `T`'s alignment), never crossing a `boundary` (a power of two, or 0 for none).
    pub(crate) fn new(
        dev: &'a Device<Bound>,
        name: &'static CStr,
        count: usize,
        align: usize,
        boundary: usize,
    ) -> Result<Self> {
        let () = Coherent::<T>::NOT_ZERO_SIZED;
        if count == 0 || !align.is_power_of_two() || align < core::mem::align_of::<T>() {
            return Err(EINVAL);
        }
        let size = byte_len::<T>(count)?;
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
        self.take(gfp | Gfp(bindings::__GFP_ZERO))
    }

    /// Takes a block from the pool without zeroing it, for a caller that writes every element
    /// the device will read: a hot path need not pay for clearing a whole block. The block holds
    /// whatever it last held, which are valid `T`s: pool memory comes from `dma_alloc_coherent`,
    /// which zeroes it, and is only ever written with `T`s after that.
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
        // SAFETY: `raw` is live (type invariant); every block borrowed the pool, so all were freed.
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
