// SPDX-License-Identifier: GPL-2.0

//! The kernel crate's API where it differs between the kernels this driver builds for: each item
//! as 7.3 has it and, with `kernel_before_7_3` (set by `scripts/kernel-cfg.mk` for 7.2), the same
//! built from what 7.2 offers.

use kernel::{device::Bound, irq, module_param::ModuleParamAccess, pci, prelude::*};
#[cfg(kernel_before_7_3)]
use kernel::{device::Device, irq::IrqReturn};

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

/// An interrupt handler: `kernel::irq::Handler`.
#[cfg(not(kernel_before_7_3))]
pub(crate) use kernel::irq::Handler;

/// An interrupt handler, as `kernel::irq::Handler` is from 7.3. Before 7.3 the kernel's trait
/// wants a `'static` handler, which cannot borrow the device's resources (a BAR), and passes it the
/// device; [`Irq`] adapts a handler of this trait to it.
#[cfg(kernel_before_7_3)]
pub(crate) trait Handler: Sync {
    /// The hard IRQ handler, run in interrupt context.
    fn handle(&self) -> IrqReturn;
}

/// A PCI device's interrupt: one vector, of whichever type the device and kernel offer (MSI-X,
/// MSI, INTx), requested as a shared IRQ with a handler of type `H`. Dropping it frees the IRQ,
/// waiting for a running handler, before the handler and the vector go.
///
/// # Invariants
///
/// `registration` holds the IRQ of the first of `vectors`, which it borrows; it is declared
/// first, so that it is dropped first.
#[cfg(not(kernel_before_7_3))]
#[pin_data]
pub(crate) struct Irq<'a, H: Handler + 'a> {
    #[pin]
    registration: irq::Registration<'a, H>,
    vectors: pci::IrqVectorRegistration<'a>,
}

#[cfg(not(kernel_before_7_3))]
impl<'a, H: Handler + 'a> Irq<'a, H> {
    /// Allocates one interrupt vector of `pdev` and requests its IRQ, under `name`, for `handler`.
    ///
    /// # Safety
    ///
    /// The `Irq` must be dropped, not leaked, before `'a` ends (before the device is unbound).
    pub(crate) unsafe fn request(
        pdev: &'a pci::Device<Bound>,
        name: &'static CStr,
        handler: impl PinInit<H, Error> + 'a,
    ) -> impl PinInit<Self, Error> + 'a {
        // INVARIANT: `registration`, declared first, requests the first of `vectors`.
        try_pin_init!(Self {
            vectors: pdev.alloc_irq_vectors(1, 1, pci::IrqTypes::all())?,
            registration <- {
                // SAFETY: The request made from this reference keeps only its lifetime, which
                // says that the vectors outlive the registration: they do, dropped after it (type
                // invariant) from where they are, in this pinned `Irq`.
                let vectors: &'a pci::IrqVectorRegistration<'a> =
                    unsafe { &*core::ptr::from_ref(vectors) };
                let request = vectors.index(0)?.into();
                // SAFETY: By this function's safety requirement, the registration is dropped
                // before `'a` ends.
                unsafe { irq::Registration::new(request, irq::Flags::SHARED, name, handler) }
            },
        })
    }

    /// The handler, shared with the interrupt.
    pub(crate) fn handler(&self) -> &H {
        self.registration.handler()
    }
}

/// A PCI device's interrupt: one vector, of whichever type the device and kernel offer (MSI-X,
/// MSI, INTx), requested as a shared IRQ with a handler of type `H`. Dropping it frees the IRQ,
/// waiting for a running handler, before the handler goes; devres frees the vector at unbind.
///
/// Before 7.3 the kernel's registration takes a `'static` handler: a [`Forward`] to `handler`.
///
/// # Invariants
///
/// `registration`'s handler forwards to `handler`; `registration` is declared first, so that it
/// is dropped (and the IRQ freed) before `handler`.
#[cfg(kernel_before_7_3)]
#[pin_data]
pub(crate) struct Irq<'a, H: Handler + 'a> {
    #[pin]
    registration: irq::Registration<Forward>,
    #[pin]
    handler: H,
    _vectors: core::ops::RangeInclusive<pci::IrqVector<'a>>,
}

#[cfg(kernel_before_7_3)]
impl<'a, H: Handler + 'a> Irq<'a, H> {
    /// Allocates one interrupt vector of `pdev` and requests its IRQ, under `name`, for `handler`.
    ///
    /// # Safety
    ///
    /// The `Irq` must be dropped, not leaked, before `'a` ends (before the device is unbound), as
    /// from 7.3.
    pub(crate) unsafe fn request(
        pdev: &'a pci::Device<Bound>,
        name: &'static CStr,
        handler: impl PinInit<H, Error> + 'a,
    ) -> impl PinInit<Self, Error> + 'a {
        // INVARIANT: `registration`, declared first, forwards to `handler`.
        try_pin_init!(Self {
            _vectors: pdev.alloc_irq_vectors(1, 1, pci::IrqTypes::all())?,
            handler <- handler,
            registration <- {
                let handler: &(dyn Handler + 'a) = &*handler;
                // SAFETY: Only the lifetime changes. `handler` stays where it is, in this pinned
                // `Irq`, until it is dropped, which is after `registration`, whose drop frees the
                // IRQ and waits for a running handler: no use of the reference outlives it.
                let handler = unsafe {
                    core::mem::transmute::<&(dyn Handler + 'a), &'static dyn Handler>(handler)
                };
                pdev.request_irq(
                    *_vectors.start(),
                    irq::Flags::SHARED,
                    name,
                    Ok::<_, Error>(Forward(handler)),
                )
            },
        })
    }

    /// The handler, shared with the interrupt.
    pub(crate) fn handler(&self) -> &H {
        &self.handler
    }
}

/// The `'static` handler that 7.2's registration takes: it forwards to the handler of an [`Irq`].
#[cfg(kernel_before_7_3)]
struct Forward(&'static dyn Handler);

#[cfg(kernel_before_7_3)]
impl irq::Handler for Forward {
    fn handle(&self, _device: &Device<Bound>) -> IrqReturn {
        self.0.handle()
    }
}
