// SPDX-License-Identifier: GPL-2.0
//! The real wrapper mounted under another name, and a module of the driver's own at
//! `crate::dma_local`, the path the field macros name: its "allocation" hands `dma_write!` any
//! pointer, which the macro's `unsafe` block would store to, with no `unsafe` in the driver.
//! Must fail with E0080 (the wrapper compiles only as `mod dma_local;` at the crate root).

#[path = "../../template/src/dma_local.rs"]
mod real;

include!("common.rs");

mod dma_local {
    use kernel::prelude::*;

    pub(crate) struct Coherent<T>(pub(crate) core::marker::PhantomData<T>);

    impl<T> Coherent<T> {
        pub(crate) fn __dma_write_ptr(_this: &mut Self, index: usize) -> Result<*mut T> {
            Ok(core::ptr::without_provenance_mut(0x1000 * index))
        }
    }

    pub(crate) mod __field_access {
        pub(crate) fn no_deref<T>(_: *const T) {}
    }
}

use kernel::{device::Bound, device::Device, prelude::*};

fn misuse(_dev: &Device<Bound>) -> Result {
    let mut impostor = dma_local::Coherent::<Descriptor>(core::marker::PhantomData);
    dma_write!(impostor, 1, status, 0xdead)
}
