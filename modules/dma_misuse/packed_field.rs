// SPDX-License-Identifier: GPL-2.0
//! `dma_read!` of a field of a `#[repr(packed)]` type: a volatile access to an unaligned field is
//! undefined. Must fail with E0793.

#[path = "../../template/src/dma_local.rs"]
mod dma_local;

include!("common.rs");

use kernel::{device::Bound, device::Device, prelude::*};

#[repr(C, packed)]
#[derive(Clone, Copy)]
struct Packed {
    flag: u8,
    value: u32,
}

// SAFETY: Packed integers: no padding.
unsafe impl kernel::transmute::AsBytes for Packed {}
// SAFETY: Any bit pattern is valid.
unsafe impl kernel::transmute::FromBytes for Packed {}

fn misuse(dev: &Device<Bound>) -> Result {
    let table = dma_local::Coherent::<Packed>::alloc(dev, 4, dma_local::Gfp::KERNEL)?;
    let _value: u32 = dma_read!(table, 1, value)?;
    Ok(())
}
