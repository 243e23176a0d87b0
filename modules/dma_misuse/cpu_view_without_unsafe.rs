// SPDX-License-Identifier: GPL-2.0
//! The CPU takes a streaming buffer while nothing says the device is done with it. Must fail with
//! E0133 (taking the CPU's turn is `unsafe`).

#[path = "../../template/src/dma_local.rs"]
mod dma_local;

include!("common.rs");

use dma_local::{dir, Attrs, Streaming};
use kernel::{device::Bound, device::Device, prelude::*};

fn misuse(dev: &Device<Bound>) -> Result {
    let buf = KVec::from_elem(0u8, 64, GFP_KERNEL)?;
    let mut mapped = Streaming::map(dev, buf, dir::ToDevice, Attrs::NONE).map_err(|(e, _)| e)?;
    let mut view = mapped.sync_for_cpu();
    view[0] = 1;
    Ok(())
}
