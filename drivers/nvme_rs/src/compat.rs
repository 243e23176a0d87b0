// SPDX-License-Identifier: GPL-2.0

//! The kernel crate's API where it differs between the kernels this driver builds for: each item
//! as 7.3 has it and, with `kernel_before_7_3` (set by `scripts/kernel-cfg.mk` for 7.2), the same
//! built from what 7.2 offers.

use kernel::{device::Bound, module_param::ModuleParamAccess, pci, prelude::*};

#[cfg(kernel_before_7_3)]
use kernel::{bindings, error::to_result};

/// `kernel::pci_device_table!`.
#[cfg(not(kernel_before_7_3))]
pub(crate) use kernel::pci_device_table;

/// `kernel::pci_device_table!`, which before 7.3 also takes a name for the table's modpost alias.
#[cfg(kernel_before_7_3)]
macro_rules! pci_device_table {
    ($table:ident, $($rest:tt)*) => {
        kernel::pci_device_table!($table, MODULE_PCI_TABLE, $($rest)*);
    };
}
#[cfg(kernel_before_7_3)]
pub(crate) use pci_device_table;

/// The value of a module parameter.
#[cfg(not(kernel_before_7_3))]
pub(crate) fn param(param: &ModuleParamAccess<u32>) -> u32 {
    param.value()
}

/// The value of a module parameter, which `ModuleParamAccess::value` returned by reference before
/// 7.3.
#[cfg(kernel_before_7_3)]
pub(crate) fn param(param: &ModuleParamAccess<u32>) -> u32 {
    *param.value()
}

/// The interrupt vectors of a device, freed when dropped.
#[cfg(not(kernel_before_7_3))]
pub(crate) type IrqVectors<'bound> = pci::IrqVectorRegistration<'bound>;

/// Allocates `min` to `max` interrupt vectors of any type (MSI-X, MSI, INTx) for `pdev`.
#[cfg(not(kernel_before_7_3))]
pub(crate) fn alloc_irq_vectors(
    pdev: &pci::Device<Bound>,
    min: u32,
    max: u32,
) -> Result<IrqVectors<'_>> {
    pdev.alloc_irq_vectors(min, max, pci::IrqTypes::all())
}

/// The IRQ number of interrupt vector `index`.
#[cfg(not(kernel_before_7_3))]
pub(crate) fn vector_irq(vectors: &IrqVectors<'_>, index: usize) -> Result<u32> {
    Ok(kernel::irq::IrqRequest::from(vectors.index(index)?).irq())
}

/// The interrupt vectors of a device, freed when dropped, as 7.3's `pci::IrqVectorRegistration`.
/// Before 7.3, `pci::Device::alloc_irq_vectors` told neither how many vectors it allocated nor the
/// IRQ of any vector but the first and the last: the C functions allocate them here.
///
/// # Invariants
///
/// `pdev` has `len` interrupt vectors allocated, which only `drop` frees.
#[cfg(kernel_before_7_3)]
pub(crate) struct IrqVectors<'bound> {
    pdev: &'bound pci::Device<Bound>,
    len: usize,
}

#[cfg(kernel_before_7_3)]
impl IrqVectors<'_> {
    /// How many vectors are allocated: at least the `min` asked for.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(kernel_before_7_3)]
impl Drop for IrqVectors<'_> {
    fn drop(&mut self) {
        // SAFETY: `pdev` is a valid PCI device with vectors allocated (type invariant); they are
        // freed once, here.
        unsafe { bindings::pci_free_irq_vectors(raw_pci_dev(self.pdev)) };
    }
}

/// Allocates `min` to `max` interrupt vectors of any type (MSI-X, MSI, INTx) for `pdev`.
#[cfg(kernel_before_7_3)]
pub(crate) fn alloc_irq_vectors(
    pdev: &pci::Device<Bound>,
    min: u32,
    max: u32,
) -> Result<IrqVectors<'_>> {
    // SAFETY: `pdev` is a valid, bound PCI device; the C function checks the other arguments.
    let ret = unsafe {
        bindings::pci_alloc_irq_vectors(raw_pci_dev(pdev), min, max, bindings::PCI_IRQ_ALL_TYPES)
    };
    to_result(ret)?;
    // INVARIANT: `pci_alloc_irq_vectors` allocated `ret` vectors.
    Ok(IrqVectors {
        pdev,
        len: ret as usize,
    })
}

/// The IRQ number of interrupt vector `index`.
#[cfg(kernel_before_7_3)]
pub(crate) fn vector_irq(vectors: &IrqVectors<'_>, index: usize) -> Result<u32> {
    let index = u32::try_from(index)?;
    // SAFETY: `pdev` is a valid PCI device; the C function checks `index`.
    let irq = unsafe { bindings::pci_irq_vector(raw_pci_dev(vectors.pdev), index) };
    if irq < 0 {
        return Err(Error::from_errno(irq));
    }
    Ok(irq as u32)
}

/// The C `struct pci_dev` of `pdev`: `pci::Device::as_raw` is not public. `pci::Device` is
/// transparent over `Opaque<pci_dev>`, itself transparent over the C struct (as `dma_local`
/// relies on too).
#[cfg(kernel_before_7_3)]
fn raw_pci_dev(pdev: &pci::Device<Bound>) -> *mut bindings::pci_dev {
    core::ptr::from_ref(pdev).cast_mut().cast()
}

/// The values of C's `enum irqreturn` (`irqreturn_t`).
#[cfg(not(kernel_before_7_3))]
pub(crate) use kernel::bindings::irqreturn;

/// The values of C's `enum irqreturn` (`irqreturn_t`), which bindgen made plain constants before
/// 7.3.
#[cfg(kernel_before_7_3)]
pub(crate) mod irqreturn {
    pub(crate) use kernel::bindings::{
        irqreturn_IRQ_HANDLED as IRQ_HANDLED, irqreturn_IRQ_NONE as IRQ_NONE,
    };
}

/// The field of a `bvec_iter` that says how far into its current vector it is.
#[cfg(not(kernel_before_7_3))]
macro_rules! bi_offset {
    ($iter:expr) => {
        $iter.bi_offset
    };
}

/// The field of a `bvec_iter` that says how far into its current vector it is: `bi_bvec_done`
/// before 7.3.
#[cfg(kernel_before_7_3)]
macro_rules! bi_offset {
    ($iter:expr) => {
        $iter.bi_bvec_done
    };
}
pub(crate) use bi_offset;
