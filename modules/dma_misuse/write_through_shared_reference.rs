// SPDX-License-Identifier: GPL-2.0
//! `dma_write!` through `&Coherent`: `Coherent` is `Sync`, so two threads holding `&` could race
//! their stores. Must fail with E0308 (the macro wants `&mut Coherent`).

#[path = "../../template/src/dma_local.rs"]
mod dma_local;

include!("common.rs");

use kernel::{device::Bound, device::Device, prelude::*};

fn misuse(dev: &Device<Bound>) -> Result {
    let ring = dma_local::Coherent::<Descriptor>::alloc(dev, 4, dma_local::Gfp::KERNEL)?;
    let shared = &ring;
    dma_write!({ shared }, 0, status, 1)
}
