// SPDX-License-Identifier: GPL-2.0

//! The kernel crate's API where it differs between the kernels the drivers build for: each item
//! as 7.3 has it and, with `kernel_before_7_3` (set by `scripts/kernel-cfg.mk` for 7.2), the same
//! built from what 7.2 offers.
//!
//! This file is vendored: `template/src/compat.rs` is its one source, and every driver carries a
//! byte-identical copy that `scripts/sync-dma.sh` keeps in step (as it does `dma_local.rs`). It
//! holds what all the drivers need, so a driver uses only part of it, and declares the module with
//! `#[allow(dead_code, unused_imports, unused_macros)]`. Change it in the template, then run
//! `scripts/sync-dma.sh update`.

#[cfg(kernel_before_7_3)]
use kernel::{bindings, device::Device, error::to_result, irq::IrqReturn};
use kernel::{device::Bound, irq, module_param::ModuleParamAccess, pci, prelude::*};

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

/// The type of `pci::Driver::probe`'s `info` argument, the matching entry's `IdInfo` `T`.
#[cfg(not(kernel_before_7_3))]
pub(crate) type ProbeInfo<'a, T> = Option<&'a T>;

/// The type of `pci::Driver::probe`'s `info` argument, the matching entry's `IdInfo` `T`: before
/// 7.3, a reference that is always there.
#[cfg(kernel_before_7_3)]
pub(crate) type ProbeInfo<'a, T> = &'a T;

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
    Ok(irq::IrqRequest::from(vectors.index(index)?).irq())
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

/// The vectors that `pci::Device::alloc_irq_vectors` allocates for an [`Irq`], freed when dropped.
#[cfg(not(kernel_before_7_3))]
type KernelIrqVectors<'a> = pci::IrqVectorRegistration<'a>;

/// The vectors that `pci::Device::alloc_irq_vectors` allocates for an [`Irq`]: before 7.3, the
/// first and the last, which devres frees at unbind.
#[cfg(kernel_before_7_3)]
type KernelIrqVectors<'a> = core::ops::RangeInclusive<pci::IrqVector<'a>>;

/// The request for the IRQ of the first of `vectors`.
#[cfg(not(kernel_before_7_3))]
fn first_irq_request<'a>(vectors: &'a KernelIrqVectors<'a>) -> Result<irq::IrqRequest<'a>> {
    Ok(vectors.index(0)?.into())
}

/// The request for the IRQ of the first of `vectors`.
#[cfg(kernel_before_7_3)]
fn first_irq_request<'a>(vectors: &'a KernelIrqVectors<'a>) -> Result<irq::IrqRequest<'a>> {
    (*vectors.start()).try_into()
}

/// The registration of an IRQ's handler: `kernel::irq::Registration`.
#[cfg(not(kernel_before_7_3))]
use kernel::irq::Registration;

/// The registration of an IRQ's handler of type `H`, as `kernel::irq::Registration<'a, H>` is
/// from 7.3. Before 7.3 the kernel's registration takes a `'static` handler: a [`Forward`] to
/// `handler`.
///
/// # Invariants
///
/// `registration`'s handler forwards to `handler`; `registration` is declared first, so that it
/// is dropped (and the IRQ freed) before `handler`.
#[cfg(kernel_before_7_3)]
#[pin_data]
struct Registration<'a, H: Handler> {
    #[pin]
    registration: irq::Registration<Forward>,
    #[pin]
    handler: H,
    _request: core::marker::PhantomData<irq::IrqRequest<'a>>,
}

#[cfg(kernel_before_7_3)]
impl<'a, H: Handler + 'a> Registration<'a, H> {
    /// Requests the IRQ of `request`, under `name`, for `handler`.
    ///
    /// # Safety
    ///
    /// The registration must be dropped, not leaked, before `'a` ends (before the device is
    /// unbound), as from 7.3.
    unsafe fn new(
        request: irq::IrqRequest<'a>,
        flags: irq::Flags,
        name: &'static CStr,
        handler: impl PinInit<H, Error> + 'a,
    ) -> impl PinInit<Self, Error> + 'a {
        // INVARIANT: `registration`, declared first, forwards to `handler`.
        try_pin_init!(Self {
            handler <- handler,
            registration <- {
                let handler: &(dyn Handler + 'a) = &*handler;
                // SAFETY: Only the lifetime changes. `handler` stays where it is, in this pinned
                // `Registration`, until it is dropped, which is after `registration`, whose drop
                // frees the IRQ and waits for a running handler: no use of the reference outlives
                // it.
                let handler = unsafe {
                    core::mem::transmute::<&(dyn Handler + 'a), &'static dyn Handler>(handler)
                };
                irq::Registration::new(request, flags, name, Ok::<_, Error>(Forward(handler)))
            },
            _request: core::marker::PhantomData,
        })
    }

    /// The handler, shared with the interrupt.
    fn handler(&self) -> &H {
        &self.handler
    }
}

/// The `'static` handler that 7.2's registration takes: it forwards to the handler of a
/// [`Registration`].
#[cfg(kernel_before_7_3)]
struct Forward(&'static dyn Handler);

#[cfg(kernel_before_7_3)]
impl irq::Handler for Forward {
    fn handle(&self, _device: &Device<Bound>) -> IrqReturn {
        self.0.handle()
    }
}

/// A PCI device's interrupt: one vector, of whichever type the device and kernel offer (MSI-X,
/// MSI, INTx), requested as a shared IRQ with a handler of type `H`. Dropping it frees the IRQ,
/// waiting for a running handler, before the handler and the vector go (before 7.3, devres frees
/// the vector at unbind).
///
/// # Invariants
///
/// `registration` holds the IRQ of the first of `vectors`, which it borrows; it is declared
/// first, so that it is dropped first.
#[pin_data]
pub(crate) struct Irq<'a, H: Handler + 'a> {
    #[pin]
    registration: Registration<'a, H>,
    vectors: KernelIrqVectors<'a>,
}

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
                // SAFETY: 7.3's rule for the vectors is that the IRQ handlers requested from them
                // are dropped before they are (7.2's vectors are `Copy` and ask nothing). They are: `registration` is declared before
                // `vectors`, so dropped first (`#[pin_data]` allows no `Drop` that could reorder
                // it), and an `Irq` that is leaked leaks both.
                let vectors: &'a KernelIrqVectors<'a> = unsafe { &*core::ptr::from_ref(vectors) };
                let request = first_irq_request(vectors)?;
                // SAFETY: By this function's safety requirement, the registration is dropped
                // before `'a` ends.
                unsafe { Registration::new(request, irq::Flags::SHARED, name, handler) }
            },
        })
    }

    /// The handler, shared with the interrupt.
    pub(crate) fn handler(&self) -> &H {
        self.registration.handler()
    }
}

/// A memory barrier between CPUs, `smp_mb(Full)`.
#[cfg(not(kernel_before_7_3))]
pub(crate) use kernel::sync::barrier::{smp_mb, Full};

/// The full ordering that `smp_mb` takes from 7.3.
#[cfg(kernel_before_7_3)]
pub(crate) use kernel::sync::atomic::Full;

/// A full memory barrier between CPUs: before 7.3, `smp_mb` took no ordering.
#[cfg(kernel_before_7_3)]
#[inline]
pub(crate) fn smp_mb(_: Full) {
    kernel::sync::barrier::smp_mb()
}

/// `EADDRNOTAVAIL`.
#[cfg(not(kernel_before_7_3))]
pub(crate) fn eaddrnotavail() -> Error {
    EADDRNOTAVAIL
}

/// `EADDRNOTAVAIL`, which `kernel::error::code` has from 7.3 on.
#[cfg(kernel_before_7_3)]
pub(crate) fn eaddrnotavail() -> Error {
    Error::from_errno(-(kernel::bindings::EADDRNOTAVAIL as i32))
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
