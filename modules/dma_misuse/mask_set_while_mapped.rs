// SPDX-License-Identifier: GPL-2.0
//! A mask changed while a mapping is live, from safe code: the DMA layer reads the mask again at
//! unmap. Must fail with E0133 (the setters are `unsafe`).

#[path = "../../template/src/dma_local.rs"]
mod dma_local;

include!("common.rs");

use kernel::{device::Bound, device::Device, prelude::*};

fn misuse(dev: &Device<Bound>) -> Result {
    let ring = dma_local::Coherent::<Descriptor>::alloc(dev, 4, dma_local::Gfp::KERNEL)?;
    dma_local::set_mask(dev, dma_local::Mask::bits(32)?)?;
    drop(ring);
    Ok(())
}
