// SPDX-License-Identifier: GPL-2.0

//! This driver's private wrapper of the kernel's C DMA API, and of the PCI bus mastering that lets
//! a PCI device do DMA.
//!
//! Every driver of the project carries a byte-identical copy of this file; it is edited only in
//! `template/src/dma_local.rs` and propagated with `scripts/sync-dma.sh`. It depends on nothing but
//! the kernel crate (its `bindings`, device, page, PCI and devres types) and the one-line C
//! wrappers in `dma_local_shim.c`; every C symbol and layout assumption it relies on is listed in
//! `dma_local.api`. The PCI part exists only in kernels with `CONFIG_PCI`. The crate that includes
//! it declares it at its root, as `mod dma_local;`: the field macros name it by that path, and the
//! file does not compile anywhere else.
//!
//! - [`Coherent`]: a typed coherent allocation with checked sizes and bounds and volatile access;
//!   [`Pool`] for small coherent blocks (descriptor lists).
//! - [`Streaming`]: a buffer mapped for streaming DMA in a direction fixed by its type;
//!   [`NonCoherent`], memory allocated for the device that needs syncs as streaming mappings do;
//!   [`SgTable`], pages the device reaches through a scatter-gather list. While the device may
//!   use them, the CPU reaches them only through a [`CpuView`], or by unmapping them; both are
//!   `unsafe`, their caller stating that the device is done.
//! - [`Mapping`]: a streaming mapping of memory owned elsewhere (socket buffers, a block request's
//!   pages).
//! - Probe-time set-up: [`set_mask`], [`set_coherent_mask`], [`set_mask_and_coherent`],
//!   [`set_min_align_mask`], [`set_max_seg_size`], [`set_seg_boundary`] (all `unsafe`: see
//!   [`set_mask`]); the limits [`max_mapping_size`], [`opt_mapping_size`], [`max_seg_size`].
//! - Ordering with the device: [`dma_rmb`], [`dma_wmb`], [`wmb`], [`mb`].
//! - [`enable_bus_master`]: a PCI device is a bus master from probe, and no longer one once its
//!   driver has unbound; [`stop_bus_master`] stops its DMA earlier, before its memory goes.
//!
//! Every object that can reach the DMA API borrows the device as `&'a Device<Bound>`. The kernel
//! crate hands a driver that reference only for as long as the device is bound, so no DMA API call
//! can follow the unbind: the objects are dropped, and their memory released, before the device's
//! `remove` completes.
//!
//! What no type here can know is when the device is done with memory: a driver stops the device
//! (or sees the transfer complete) before it frees, unmaps or reads what the device used. Freeing
//! coherent memory ([`Coherent`], [`Pool`], [`NonCoherent`]) may unmap it from the kernel's address
//! space, so their owners are dropped in process context, with interrupts enabled; the C API warns
//! otherwise.

// A driver uses only part of its copy; the copies must stay identical all the same.
#![allow(dead_code)]

use core::marker::PhantomData;
use core::mem::size_of;
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;

use kernel::bindings;
#[cfg(CONFIG_PCI)]
use kernel::device::Core;
use kernel::device::{Bound, Device};
#[cfg(CONFIG_PCI)]
use kernel::devres;
use kernel::error::to_result;
use kernel::ffi::{c_char, c_int, c_uint, c_ulong, c_void};
use kernel::page::{Page, PAGE_SIZE};
#[cfg(CONFIG_PCI)]
use kernel::pci;
use kernel::prelude::*;
use kernel::str::CStr;
#[cfg(CONFIG_PCI)]
use kernel::sync::aref::ARef;
use kernel::transmute::{AsBytes, FromBytes};

/// Whether `path`, a `module_path!()`, names a module `dma_local` at a crate's root.
const fn is_crate_root_dma_local(path: &str) -> bool {
    let path = path.as_bytes();
    let name = b"::dma_local";
    if path.len() <= name.len() {
        return false;
    }
    let crate_len = path.len() - name.len();
    let mut i = 0;
    while i < path.len() {
        let fits = if i < crate_len {
            path[i] != b':'
        } else {
            path[i] == name[i - crate_len]
        };
        if !fits {
            return false;
        }
        i += 1;
    }
    true
}

// The field macros' `unsafe` blocks trust what `$crate::dma_local` names to hand them in-bounds
// pointers. Were this file mounted elsewhere (`#[path = "dma_local.rs"] mod other;`), a module of
// the driver's own could stand at that path and hand them any pointer, with no `unsafe` of its
// own; this refuses to compile instead (E0080).
const _: () = assert!(
    is_crate_root_dma_local(module_path!()),
    "dma_local.rs must be the module `dma_local` at the crate root: `mod dma_local;`"
);

/// A bus address as the device sees it (`dma_addr_t`).
pub(crate) type DmaAddress = bindings::dma_addr_t;

/// The symbol of the C wrapper `dma_local_<name>` in this module: `dma_local_shim.h` prefixes each
/// with the module's name, `DMA_LOCAL_MODNAME` (set by `scripts/kernel-cfg.mk`, which every Kbuild
/// file includes), so that the copies in two drivers built into one kernel do not clash.
macro_rules! shim_symbol {
    ($name:literal) => {
        concat!(
            env!(
                "DMA_LOCAL_MODNAME",
                "dma_local needs DMA_LOCAL_MODNAME: include scripts/kernel-cfg.mk in the Kbuild file"
            ),
            "_dma_local_",
            $name
        )
    };
}

// One-line C wrappers of static inline functions and macros (`dma_local_shim.c`).
extern "C" {
    #[link_name = shim_symbol!("mapping_error")]
    fn dma_local_mapping_error(dev: *mut c_void, addr: DmaAddress) -> c_int;
    #[link_name = shim_symbol!("map_single")]
    fn dma_local_map_single(
        dev: *mut c_void,
        ptr: *mut c_void,
        size: usize,
        dir: bindings::dma_data_direction,
        attrs: c_ulong,
    ) -> DmaAddress;
    #[link_name = shim_symbol!("unmap_single")]
    fn dma_local_unmap_single(
        dev: *mut c_void,
        addr: DmaAddress,
        size: usize,
        dir: bindings::dma_data_direction,
        attrs: c_ulong,
    );
    #[link_name = shim_symbol!("sync_single_range_for_cpu")]
    fn dma_local_sync_single_range_for_cpu(
        dev: *mut c_void,
        addr: DmaAddress,
        offset: usize,
        size: usize,
        dir: bindings::dma_data_direction,
    );
    #[link_name = shim_symbol!("sync_single_range_for_device")]
    fn dma_local_sync_single_range_for_device(
        dev: *mut c_void,
        addr: DmaAddress,
        offset: usize,
        size: usize,
        dir: bindings::dma_data_direction,
    );
    #[link_name = shim_symbol!("need_sync")]
    fn dma_local_need_sync(dev: *mut c_void, addr: DmaAddress) -> bool;
    #[link_name = shim_symbol!("set_min_align_mask")]
    fn dma_local_set_min_align_mask(dev: *mut c_void, mask: c_uint);
    #[link_name = shim_symbol!("set_max_seg_size")]
    fn dma_local_set_max_seg_size(dev: *mut c_void, size: c_uint);
    #[link_name = shim_symbol!("get_max_seg_size")]
    fn dma_local_get_max_seg_size(dev: *mut c_void) -> c_uint;
    #[link_name = shim_symbol!("set_seg_boundary")]
    fn dma_local_set_seg_boundary(dev: *mut c_void, mask: c_ulong);
    #[link_name = shim_symbol!("alloc_noncoherent")]
    fn dma_local_alloc_noncoherent(
        dev: *mut c_void,
        size: usize,
        handle: *mut DmaAddress,
        dir: bindings::dma_data_direction,
        gfp: bindings::gfp_t,
    ) -> *mut c_void;
    #[link_name = shim_symbol!("free_noncoherent")]
    fn dma_local_free_noncoherent(
        dev: *mut c_void,
        size: usize,
        cpu: *mut c_void,
        handle: DmaAddress,
        dir: bindings::dma_data_direction,
    );
    #[link_name = shim_symbol!("unmap_sgtable")]
    fn dma_local_unmap_sgtable(
        dev: *mut c_void,
        table: *mut bindings::sg_table,
        dir: bindings::dma_data_direction,
        attrs: c_ulong,
    );
    #[link_name = shim_symbol!("sync_sgtable_for_cpu")]
    fn dma_local_sync_sgtable_for_cpu(
        dev: *mut c_void,
        table: *mut bindings::sg_table,
        dir: bindings::dma_data_direction,
    );
    #[link_name = shim_symbol!("sync_sgtable_for_device")]
    fn dma_local_sync_sgtable_for_device(
        dev: *mut c_void,
        table: *mut bindings::sg_table,
        dir: bindings::dma_data_direction,
    );
    #[link_name = shim_symbol!("sg_next")]
    fn dma_local_sg_next(sg: *mut bindings::scatterlist) -> *mut bindings::scatterlist;
    #[link_name = shim_symbol!("sg_dma_address")]
    fn dma_local_sg_dma_address(sg: *mut bindings::scatterlist) -> DmaAddress;
    #[link_name = shim_symbol!("sg_dma_len")]
    fn dma_local_sg_dma_len(sg: *mut bindings::scatterlist) -> c_uint;
    #[link_name = shim_symbol!("pool_create")]
    fn dma_local_pool_create(
        name: *const c_char,
        dev: *mut c_void,
        size: usize,
        align: usize,
        boundary: usize,
    ) -> *mut bindings::dma_pool;
    #[link_name = shim_symbol!("dma_rmb")]
    fn dma_local_dma_rmb();
    #[link_name = shim_symbol!("dma_wmb")]
    fn dma_local_dma_wmb();
    #[link_name = shim_symbol!("wmb")]
    fn dma_local_wmb();
    #[link_name = shim_symbol!("mb")]
    fn dma_local_mb();
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

    /// Whether any attribute of `other` is in `self`.
    pub(crate) const fn intersects(self, other: Attrs) -> bool {
        self.0 & other.0 != 0
    }

    /// What [`Mapping`], [`Streaming`] and [`SgTable::map`] refuse: [`Attrs::MMIO`], as they map
    /// memory, and [`Attrs::CC_SHARED`], which the DMA API allows only for memory made shared with
    /// `set_memory_decrypted()` first, and nothing here does that.
    const REFUSED_BY_MAPPINGS: Attrs = Attrs(Attrs::MMIO.0 | Attrs::CC_SHARED.0);
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

/// Stops the device's DMA: clears its Bus Master Enable (`pci_clear_master`). A configuration
/// write is not posted, so once this returns the device issues no new memory request. A driver
/// calls it before it frees, unmaps or reuses memory it gave a device that did not stop as told
/// (a controller whose ready bit stays set), and in its unbind before its DMA memory goes: the
/// backstop of [`enable_bus_master`] runs only after that memory is freed.
#[cfg(CONFIG_PCI)]
pub(crate) fn stop_bus_master(pdev: &pci::Device<Bound>) {
    // SAFETY: A bound device's `pci_dev` is valid; `pci_clear_master` takes the config lock.
    unsafe { bindings::pci_clear_master(raw_pci_device(pdev)) };
}

/// Lets the device master the bus again after [`stop_bus_master`] (`pci_set_master`), once the
/// driver has set it up afresh (a controller reset).
#[cfg(CONFIG_PCI)]
pub(crate) fn resume_bus_master(pdev: &pci::Device<Bound>) {
    // SAFETY: A bound device's `pci_dev` is valid and enabled (by `enable_bus_master`, whose
    // devres action runs only after the driver's data, which calls this, is gone).
    unsafe { bindings::pci_set_master(raw_pci_device(pdev)) };
}

/// The C `struct pci_dev` of `pdev`: `pci::Device` is transparent over `Opaque<pci_dev>`, itself
/// transparent over the C struct (layout assumptions `pci-device-transparent`,
/// `opaque-transparent` in `dma_local.api`). `Opaque` lets C write to it behind `&`.
#[cfg(CONFIG_PCI)]
fn raw_pci_device<Ctx: kernel::device::DeviceContext>(
    pdev: &pci::Device<Ctx>,
) -> *mut bindings::pci_dev {
    core::ptr::from_ref(pdev).cast_mut().cast()
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
        // SAFETY: The reference keeps the `pci_dev` alive, and it was enabled for this value (type
        // invariant), which is dropped once.
        unsafe { bindings::pci_disable_device(raw_pci_device(&self.0)) };
    }
}

/// `count` elements of `T`, in bytes; `EOVERFLOW` when that does not fit in `usize`.
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

/// Syncs `len` bytes from `offset` into the mapping at `handle` for the CPU; nothing for zero bytes.
/// An architecture's cache maintenance of an empty range may still touch the line it starts in
/// (arm64 invalidates it), which can hold another object's dirty data: a ranged sync of nothing
/// must not reach the DMA API.
///
/// # Safety
///
/// `handle` is a live mapping (or allocation) of `dev` in direction `dir`, with `offset + len`
/// bytes at least.
unsafe fn sync_range_for_cpu(
    dev: &Device<Bound>,
    handle: DmaAddress,
    offset: usize,
    len: usize,
    dir: Direction,
) {
    if len == 0 {
        return;
    }
    // SAFETY: By the function's safety requirements; `raw_device` gives a bound device.
    unsafe {
        dma_local_sync_single_range_for_cpu(raw_device(dev).cast(), handle, offset, len, dir.raw())
    };
}

/// As [`sync_range_for_cpu`], for the device.
///
/// # Safety
///
/// As for [`sync_range_for_cpu`].
unsafe fn sync_range_for_device(
    dev: &Device<Bound>,
    handle: DmaAddress,
    offset: usize,
    len: usize,
    dir: Direction,
) {
    if len == 0 {
        return;
    }
    // SAFETY: By the function's safety requirements; `raw_device` gives a bound device.
    unsafe {
        dma_local_sync_single_range_for_device(
            raw_device(dev).cast(),
            handle,
            offset,
            len,
            dir.raw(),
        )
    };
}

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
    const NOT_ZERO_SIZED: () = assert!(size_of::<T>() != 0, "DMA of a zero-sized type");

    /// Evaluated at compile time for every `T` that is allocated: allocations are page-aligned
    /// (an IOMMU's or a remap's `vmap` address is no more), so elements may need no more.
    const ALIGN_FITS: () = assert!(
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

/// The direction of a streaming mapping, chosen at run time (for [`Mapping`]).
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
            Direction::ToDevice => dma_data_direction::DMA_TO_DEVICE,
            Direction::FromDevice => dma_data_direction::DMA_FROM_DEVICE,
            Direction::Bidirectional => dma_data_direction::DMA_BIDIRECTIONAL,
        }
    }
}

/// The values of C's `enum dma_data_direction`: the newtype's constants.
#[cfg(not(kernel_before_7_3))]
use bindings::dma_data_direction;

/// The values of C's `enum dma_data_direction`, which bindgen made plain constants before 7.3 (the
/// cfg comes from `scripts/kernel-cfg.mk`, which a driver's Kbuild includes).
#[cfg(kernel_before_7_3)]
mod dma_data_direction {
    pub(super) use kernel::bindings::{
        dma_data_direction_DMA_BIDIRECTIONAL as DMA_BIDIRECTIONAL,
        dma_data_direction_DMA_FROM_DEVICE as DMA_FROM_DEVICE,
        dma_data_direction_DMA_TO_DEVICE as DMA_TO_DEVICE,
    };
}

/// Directions as types, for the buffers this module owns ([`Streaming`], [`NonCoherent`]): what
/// the CPU may do with the buffer between the device's turns follows from the type.
pub(crate) mod dir {
    use super::Direction;

    /// The device reads the buffer; the CPU writes it.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct ToDevice;
    /// The device writes the buffer; the CPU only reads it. A bounce buffer (swiotlb) copies
    /// nothing towards the device in this direction, and copies the device's data over the CPU's
    /// buffer at unmap: a CPU write would be lost, so none compiles.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct FromDevice;
    /// The device and the CPU both read and write the buffer, in turns.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Bidirectional;

    mod sealed {
        pub(crate) trait Sealed {}
    }

    /// A direction type. Sealed: only the three above.
    pub(crate) trait DataDirection: sealed::Sealed + Copy {
        /// The direction's value.
        const DIRECTION: Direction;
    }

    /// The directions in which the CPU writes the buffer between the device's turns.
    pub(crate) trait CpuWrites: DataDirection {}

    impl sealed::Sealed for ToDevice {}
    impl sealed::Sealed for FromDevice {}
    impl sealed::Sealed for Bidirectional {}
    impl DataDirection for ToDevice {
        const DIRECTION: Direction = Direction::ToDevice;
    }
    impl DataDirection for FromDevice {
        const DIRECTION: Direction = Direction::FromDevice;
    }
    impl DataDirection for Bidirectional {
        const DIRECTION: Direction = Direction::Bidirectional;
    }
    impl CpuWrites for ToDevice {}
    impl CpuWrites for Bidirectional {}
}

use dir::{CpuWrites, DataDirection};

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
    unsafe fn new(
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
                (gfp | Gfp(bindings::__GFP_ZERO)).bits(),
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

/// Pages owned by the driver and described by a scatter-gather table (`struct sg_table`), for a
/// device that takes a list of segments. Physically contiguous pages share one entry. The CPU
/// reads and writes the pages through it; [`SgTable::map`] hands them to a device.
///
/// # Invariants
///
/// `table` was set up by `sg_alloc_table_from_pages_segment` over the pages of `pages`, in order,
/// all of each, and is freed (`sg_free_table`) only in `drop`.
pub(crate) struct SgTable {
    table: bindings::sg_table,
    pages: KVec<Page>,
}

// SAFETY: The table and the pages are owned; the entries point only to those pages.
unsafe impl Send for SgTable {}
// SAFETY: `&SgTable` only reads the pages, and only while nothing writes them (`write` takes
// `&mut`).
unsafe impl Sync for SgTable {}

impl SgTable {
    /// Describes `pages` by a table whose segments are at most `max_segment` bytes (at least a
    /// page; for a device, [`max_seg_size`]). May sleep. `EINVAL` for no pages or a smaller
    /// segment size, `ENOMEM` when the table cannot be allocated; either way the pages come back.
    pub(crate) fn new(
        pages: KVec<Page>,
        max_segment: u32,
    ) -> core::result::Result<Self, (Error, KVec<Page>)> {
        let n_pages = match c_uint::try_from(pages.len()) {
            Ok(0) | Err(_) => return Err((EINVAL, pages)),
            Ok(n) => n,
        };
        if (max_segment as usize) < PAGE_SIZE {
            return Err((EINVAL, pages));
        }
        let mut raw: KVec<*mut bindings::page> = match KVec::with_capacity(pages.len(), GFP_KERNEL)
        {
            Ok(raw) => raw,
            Err(e) => return Err((e.into(), pages)),
        };
        for page in pages.iter() {
            // Cannot fail: the capacity is there.
            let _ = raw.push(page.as_ptr(), GFP_KERNEL);
        }
        let mut table = bindings::sg_table::default();
        // SAFETY: `table` is a zeroed table to set up; `raw` holds `n_pages` valid page pointers;
        // the size is all of them; `max_segment` is at least a page.
        let ret = unsafe {
            bindings::sg_alloc_table_from_pages_segment(
                &mut table,
                raw.as_mut_ptr(),
                n_pages,
                0,
                pages.len() * PAGE_SIZE,
                max_segment,
                Gfp::KERNEL.bits(),
            )
        };
        match to_result(ret) {
            // INVARIANT: set up above over `pages`.
            Ok(()) => Ok(Self { table, pages }),
            Err(e) => Err((e, pages)),
        }
    }

    /// The size in bytes: all of every page.
    pub(crate) fn size(&self) -> usize {
        self.pages.len() * PAGE_SIZE
    }

    /// The number of entries (physically contiguous runs of pages).
    pub(crate) fn entries(&self) -> u32 {
        self.table.orig_nents
    }

    /// Copies `dst.len()` bytes from byte `offset` on into `dst`. `EINVAL` outside the pages.
    pub(crate) fn read(&self, offset: usize, dst: &mut [u8]) -> Result {
        check_range(offset, dst.len(), self.size())?;
        let mut done = 0;
        while done < dst.len() {
            let at = offset + done;
            let chunk = (PAGE_SIZE - at % PAGE_SIZE).min(dst.len() - done);
            // SAFETY: `dst[done..done + chunk]` is valid for writes; `&self` excludes writers of
            // the pages, which this table owns.
            unsafe {
                self.pages[at / PAGE_SIZE].read_raw(
                    dst.as_mut_ptr().add(done),
                    at % PAGE_SIZE,
                    chunk,
                )
            }?;
            done += chunk;
        }
        Ok(())
    }

    /// Copies `src` into the pages from byte `offset` on. `EINVAL` outside the pages.
    pub(crate) fn write(&mut self, offset: usize, src: &[u8]) -> Result {
        check_range(offset, src.len(), self.size())?;
        let mut done = 0;
        while done < src.len() {
            let at = offset + done;
            let chunk = (PAGE_SIZE - at % PAGE_SIZE).min(src.len() - done);
            // SAFETY: `src[done..done + chunk]` is valid for reads; `&mut self` excludes every
            // other access to the pages.
            unsafe {
                self.pages[at / PAGE_SIZE].write_raw(src.as_ptr().add(done), at % PAGE_SIZE, chunk)
            }?;
            done += chunk;
        }
        Ok(())
    }

    /// Maps the table for `dev` in direction `dir` (`dma_map_sgtable`): the device may then access
    /// every page, the CPU none until [`MappedSgTable::unmap`] gives the table back. On failure the
    /// table comes back with the error (`EINVAL`, `ENOMEM`, `EIO` or `EREMOTEIO`, as the DMA API
    /// says); `EINVAL` also for [`Attrs::MMIO`] and [`Attrs::CC_SHARED`], as for [`Mapping::new`].
    pub(crate) fn map<'a>(
        mut self,
        dev: &'a Device<Bound>,
        dir: Direction,
        attrs: Attrs,
    ) -> core::result::Result<MappedSgTable<'a>, (Error, SgTable)> {
        if attrs.intersects(Attrs::REFUSED_BY_MAPPINGS) {
            return Err((EINVAL, self));
        }
        // SAFETY: `table` is set up over pages this owns, which stay alive and untouched by the
        // CPU while `MappedSgTable` holds them; `raw_device` gives a bound device.
        let ret = unsafe {
            bindings::dma_map_sgtable(raw_device(dev), &mut self.table, dir.raw(), attrs.bits())
        };
        match to_result(ret) {
            // INVARIANT: mapped above with these arguments.
            Ok(()) => Ok(MappedSgTable {
                dev,
                table: self,
                dir,
                attrs,
            }),
            Err(e) => Err((e, self)),
        }
    }

    /// Frees the table and gives the pages back.
    pub(crate) fn into_pages(self) -> KVec<Page> {
        let mut this = core::mem::ManuallyDrop::new(self);
        // SAFETY: Set up and not freed (type invariant); `this` is never used or dropped again.
        unsafe { bindings::sg_free_table(&mut this.table) };
        // SAFETY: Read once out of a value that is never dropped.
        unsafe { core::ptr::read(&this.pages) }
    }
}

impl Drop for SgTable {
    fn drop(&mut self) {
        // SAFETY: Set up and not freed (type invariant); freed once. The pages go after it.
        unsafe { bindings::sg_free_table(&mut self.table) };
    }
}

/// An [`SgTable`] mapped for a device (`dma_map_sgtable`). The device sees the segments of
/// [`MappedSgTable::segments`], which may be fewer than the table's entries (an IOMMU merges
/// them). Dropping it unmaps the table and frees it with its pages; [`MappedSgTable::unmap`] gives
/// the table back instead.
///
/// # Invariants
///
/// `table` is mapped for `dev` in `dir` with `attrs`, not yet unmapped.
pub(crate) struct MappedSgTable<'a> {
    dev: &'a Device<Bound>,
    table: SgTable,
    dir: Direction,
    attrs: Attrs,
}

impl MappedSgTable<'_> {
    /// The segments as the device sees them: `(DMA address, length in bytes)`.
    pub(crate) fn segments(&self) -> SgSegments<'_> {
        SgSegments {
            next: self.table.table.sgl,
            left: self.table.table.nents,
            _table: PhantomData,
        }
    }

    /// Syncs every page for the CPU (`dma_sync_sgtable_for_cpu`), for a device that keeps the
    /// mapping across transfers; the CPU still reaches the pages only after [`MappedSgTable::unmap`].
    pub(crate) fn sync_for_cpu(&mut self) {
        // SAFETY: Mapped for this bound device in `dir` (type invariant).
        unsafe {
            dma_local_sync_sgtable_for_cpu(
                raw_device(self.dev).cast(),
                &mut self.table.table,
                self.dir.raw(),
            )
        };
    }

    /// Syncs every page for the device (`dma_sync_sgtable_for_device`).
    pub(crate) fn sync_for_device(&mut self) {
        // SAFETY: As in `sync_for_cpu`.
        unsafe {
            dma_local_sync_sgtable_for_device(
                raw_device(self.dev).cast(),
                &mut self.table.table,
                self.dir.raw(),
            )
        };
    }

    /// Unmaps the table and gives it back, with whatever the device wrote into its pages.
    ///
    /// # Safety
    ///
    /// The device has finished every access to the pages, and is given none of them any more (as
    /// for [`Streaming::unmap`]).
    pub(crate) unsafe fn unmap(self) -> SgTable {
        let mut this = core::mem::ManuallyDrop::new(self);
        this.unmap_in_place();
        // SAFETY: Read once out of a value that is never dropped.
        unsafe { core::ptr::read(&this.table) }
    }

    fn unmap_in_place(&mut self) {
        // SAFETY: Mapped with these arguments and not unmapped (type invariant); every caller
        // unmaps once, then drops or forgets `self`.
        unsafe {
            dma_local_unmap_sgtable(
                raw_device(self.dev).cast(),
                &mut self.table.table,
                self.dir.raw(),
                self.attrs.bits(),
            )
        };
    }
}

impl Drop for MappedSgTable<'_> {
    fn drop(&mut self) {
        self.unmap_in_place();
    }
}

/// The segments of a [`MappedSgTable`] (see [`MappedSgTable::segments`]).
///
/// # Invariants
///
/// `next` is the next of `left` mapped entries of a table that the borrow keeps mapped.
pub(crate) struct SgSegments<'t> {
    next: *mut bindings::scatterlist,
    left: c_uint,
    _table: PhantomData<&'t MappedSgTable<'t>>,
}

impl Iterator for SgSegments<'_> {
    type Item = (DmaAddress, u32);

    fn next(&mut self) -> Option<(DmaAddress, u32)> {
        if self.left == 0 {
            return None;
        }
        let sg = self.next;
        // SAFETY: A mapped entry of a live table (type invariant).
        let segment = unsafe { (dma_local_sg_dma_address(sg), dma_local_sg_dma_len(sg)) };
        self.left -= 1;
        if self.left > 0 {
            // SAFETY: As above; more mapped entries follow this one.
            self.next = unsafe { dma_local_sg_next(sg) };
        }
        Some(segment)
    }
}

/// A `dma_pool` of coherent blocks of `count` elements of `T`, for small descriptor lists.
///
/// Dropping it destroys the pool, freeing its coherent memory: in process context, with interrupts
/// enabled.
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
        self.take(gfp | Gfp(bindings::__GFP_ZERO))
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
