// SPDX-License-Identifier: GPL-2.0
//! `dma_read!` on a type of the driver's own with an `element_ptr` method, which would hand the
//! macro's `unsafe` block any pointer. Must fail with E0308 (the macro takes only a `Coherent`).

#[path = "../../template/src/dma_local.rs"]
mod dma_local;

include!("common.rs");

use kernel::{device::Bound, device::Device, prelude::*};

struct Impostor;

impl Impostor {
    fn element_ptr(&self, index: usize) -> Result<*mut Descriptor> {
        Ok(core::ptr::without_provenance_mut(0x1000 * index))
    }
}

fn misuse(_dev: &Device<Bound>) -> Result {
    let impostor = Impostor;
    let _status: u32 = dma_read!(impostor, 1, status)?;
    Ok(())
}
