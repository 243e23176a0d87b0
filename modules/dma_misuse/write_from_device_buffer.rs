// SPDX-License-Identifier: GPL-2.0
//! A CPU write into a buffer the device writes: a bounce buffer would lose it. Must fail with E0594
//! (a `FromDevice` view only reads).

#[path = "../../template/src/dma_local.rs"]
mod dma_local;

include!("common.rs");

use dma_local::{dir, Attrs, Streaming};
use kernel::{device::Bound, device::Device, prelude::*};

fn misuse(dev: &Device<Bound>) -> Result {
    let buf = KVec::from_elem(0u8, 64, GFP_KERNEL)?;
    let mut mapped = Streaming::map(dev, buf, dir::FromDevice, Attrs::NONE).map_err(|(e, _)| e)?;
    // SAFETY: The device was never told of this buffer.
    let mut view = unsafe { mapped.sync_for_cpu() };
    view[0] = 1;
    Ok(())
}
