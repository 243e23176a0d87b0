// SPDX-License-Identifier: GPL-2.0

//! This driver's private wrapper of the kernel's C DMA API, and of the PCI bus mastering that lets
//! a PCI device do DMA.
//!
//! Every driver of the project carries a byte-identical copy of this file and of its parts, one
//! concern each, in `dma_local/`; they are edited only in `template/src/` and propagated with
//! `scripts/sync-dma.sh`, which checks them as one unit. The wrapper depends on nothing but the
//! kernel crate (its `bindings`, device, page, PCI and devres types) and the one-line C wrappers in
//! `dma_local_shim.c`; every C symbol and layout assumption it relies on is listed in
//! `dma_local.api`. The PCI part exists only in kernels with `CONFIG_PCI`. The crate that includes
//! it declares it at its root, as `mod dma_local;`: the field macros name it by that path, and the
//! file does not compile anywhere else. Drivers name every item by its path here
//! (`dma_local::Coherent`), whichever part defines it.
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
//! The documentation of each type has an example, written as rust/kernel/dma.rs's are: a function of
//! a bound device. The project's self-test compiles every example from these comments and runs it
//! against a real device.
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

use core::mem::size_of;

use kernel::bindings;
use kernel::device::{Bound, Device};
use kernel::ffi::{c_char, c_int, c_uint, c_ulong, c_void};
use kernel::prelude::*;

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

// The parts, one concern each. Each is named by its path from this file, so that they are found
// wherever this file is mounted (the self-tests mount the template's with `#[path]`); drivers name
// their items through this module, as re-exported below.
#[path = "dma_local/barrier.rs"]
mod barrier;
#[cfg(CONFIG_PCI)]
#[path = "dma_local/bus_master.rs"]
mod bus_master;
#[path = "dma_local/coherent.rs"]
mod coherent;
#[path = "dma_local/cpu_view.rs"]
mod cpu_view;
#[path = "dma_local/direction.rs"]
mod direction;
#[path = "dma_local/flags.rs"]
mod flags;
#[path = "dma_local/mapping.rs"]
mod mapping;
#[path = "dma_local/mask.rs"]
mod mask;
#[path = "dma_local/noncoherent.rs"]
mod noncoherent;
#[path = "dma_local/pool.rs"]
mod pool;
#[path = "dma_local/sg.rs"]
mod sg;
#[path = "dma_local/streaming.rs"]
mod streaming;

#[allow(unused_imports, reason = "a driver names only what it uses")]
pub(crate) use self::{
    barrier::{dma_rmb, dma_wmb, mb, wmb},
    coherent::Coherent,
    cpu_view::CpuView,
    direction::{dir, Direction},
    flags::{Attrs, Gfp},
    mapping::Mapping,
    mask::{
        max_mapping_size, max_seg_size, opt_mapping_size, set_coherent_mask, set_mask,
        set_mask_and_coherent, set_max_seg_size, set_min_align_mask, set_seg_boundary, Mask,
    },
    noncoherent::NonCoherent,
    pool::{Pool, PoolBlock},
    sg::{MappedSgTable, SgSegments, SgTable},
    streaming::Streaming,
};
#[cfg(CONFIG_PCI)]
#[allow(unused_imports, reason = "a driver names only what it uses")]
pub(crate) use bus_master::{enable_bus_master, resume_bus_master, stop_bus_master};
#[doc(hidden)]
#[allow(unused_imports, reason = "the field macros' path to it")]
pub(crate) use coherent::__field_access;

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
