// SPDX-License-Identifier: GPL-2.0
//! `dma_write!` on an element type that implements `DerefMut`: field access would go through
//! `deref_mut`, making a `&mut` to the element in device memory. Must fail with E0283.

#[path = "../../template/src/dma_local.rs"]
mod dma_local;

include!("common.rs");

use kernel::{device::Bound, device::Device, prelude::*};

/// A descriptor behind a wrapper that dereferences to it.
#[repr(transparent)]
#[derive(Clone, Copy)]
struct Wrapped(Descriptor);

// SAFETY: Transparent over `Descriptor`, which is `AsBytes`.
unsafe impl kernel::transmute::AsBytes for Wrapped {}
// SAFETY: Transparent over `Descriptor`, which is `FromBytes`.
unsafe impl kernel::transmute::FromBytes for Wrapped {}

impl core::ops::Deref for Wrapped {
    type Target = Descriptor;
    fn deref(&self) -> &Descriptor {
        &self.0
    }
}

impl core::ops::DerefMut for Wrapped {
    fn deref_mut(&mut self) -> &mut Descriptor {
        &mut self.0
    }
}

fn misuse(dev: &Device<Bound>) -> Result {
    let mut ring = dma_local::Coherent::<Wrapped>::alloc(dev, 4, dma_local::Gfp::KERNEL)?;
    dma_write!(ring, 0, status, 1)
}
