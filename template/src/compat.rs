// SPDX-License-Identifier: GPL-2.0

//! The kernel crate's API where it differs between the kernels this driver builds for: each item
//! as 7.3 has it and, with `kernel_before_7_3` (set by `scripts/kernel-cfg.mk` for 7.2), the same
//! built from what 7.2 offers.

use kernel::{module_param::ModuleParamAccess, pci, prelude::*};

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

/// The value of an on/off module parameter.
#[cfg(not(kernel_before_7_3))]
pub(crate) fn flag(param: &ModuleParamAccess<bool>) -> bool {
    param.value()
}

/// The value of an on/off module parameter: before 7.3, `module!` has no `bool` parameters, and
/// the driver declares a `u8`, 0 or 1 (see `declare_module!`).
#[cfg(kernel_before_7_3)]
pub(crate) fn flag(param: &ModuleParamAccess<u8>) -> bool {
    *param.value() != 0
}

/// The interrupt vectors that `pci::Device::alloc_irq_vectors` allocated, freed when dropped.
#[cfg(not(kernel_before_7_3))]
pub(crate) type IrqVectors<'bound> = pci::IrqVectorRegistration<'bound>;

/// The interrupt vectors that `pci::Device::alloc_irq_vectors` allocated: before 7.3, the first
/// and the last, which devres frees at unbind, once the driver's data is dropped.
#[cfg(kernel_before_7_3)]
pub(crate) type IrqVectors<'bound> = core::ops::RangeInclusive<pci::IrqVector<'bound>>;

/// The IRQ number of the first of `vectors`.
#[cfg(not(kernel_before_7_3))]
pub(crate) fn first_irq(vectors: &IrqVectors<'_>) -> Result<u32> {
    Ok(kernel::irq::IrqRequest::from(vectors.index(0)?).irq())
}

/// The IRQ number of the first of `vectors`.
#[cfg(kernel_before_7_3)]
pub(crate) fn first_irq(vectors: &IrqVectors<'_>) -> Result<u32> {
    let request: kernel::irq::IrqRequest<'_> = (*vectors.start()).try_into()?;
    Ok(request.irq())
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
