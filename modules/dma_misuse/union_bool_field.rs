// SPDX-License-Identifier: GPL-2.0
//! `dma_read!` of a `bool` field of a union: the device may have written any byte there, and a
//! `bool` of 2 is undefined. Must fail with E0277 (the field's type must be `FromBytes`).

#[path = "../../template/src/dma_local.rs"]
mod dma_local;

include!("common.rs");

use kernel::{device::Bound, device::Device, prelude::*};

#[repr(C)]
#[derive(Clone, Copy)]
union Flags {
    raw: u8,
    set: bool,
}

// SAFETY: One byte, no padding.
unsafe impl kernel::transmute::AsBytes for Flags {}
// SAFETY: The union as a whole takes any byte (through `raw`).
unsafe impl kernel::transmute::FromBytes for Flags {}

fn misuse(dev: &Device<Bound>) -> Result {
    let table = dma_local::Coherent::<Flags>::alloc(dev, 4, dma_local::Gfp::KERNEL)?;
    let _set: bool = dma_read!(table, 1, set)?;
    Ok(())
}
