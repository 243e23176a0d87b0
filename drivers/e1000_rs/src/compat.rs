// SPDX-License-Identifier: GPL-2.0

//! The kernel crate's API where it differs between the kernels the drivers build for: each item
//! as 7.3 has it and, with `kernel_before_7_3` (set by `scripts/kernel-cfg.mk` for 7.2), the same
//! built from what 7.2 offers.
//!
//! This file is vendored: `template/src/compat.rs` is its one source, and every driver carries a
//! byte-identical copy that `scripts/sync-dma.sh` keeps in step (as it does `dma_local.rs`). It
//! holds what all the drivers need, so a driver uses only part of it (and [`pm`], what the kernel
//! crate lacks on both kernels: PCI power management), and declares the module with
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

/// Power management for PCI drivers: system sleep (`dev_pm_ops`) and `shutdown`, which the kernel
/// crate's `pci::Driver` does not offer (7.2 and 7.3). [`pm::Adapter`] registers the PCI driver
/// through the kernel crate's own `pci::Adapter`, which fills in the probe, remove and ID table,
/// after setting the two fields that adapter leaves alone: `driver.pm` and `shutdown`. A module
/// declares it with `kernel::module_driver!` in place of `module_pci_driver!`:
/// `kernel::module_driver! { <T>, compat::pm::Adapter<T>, { type: MyDriver, ... } }`, and its
/// driver implements [`pm::PowerManaged`].
pub(crate) mod pm {
    use core::marker::PhantomData;

    use kernel::{
        bindings,
        driver::{DriverLayout, RegistrationOps},
        ffi::c_int,
        pci,
        prelude::*,
        types::Opaque,
        ThisModule,
    };

    /// A PCI driver whose bound devices sleep and shut down.
    pub(crate) trait PowerManaged: pci::Driver + 'static {
        /// Quiesces the device for system sleep: no interrupt, no DMA.
        fn suspend(data: &Self::Data<'_>) -> Result;
        /// Brings the device back after system sleep.
        fn resume(data: &Self::Data<'_>) -> Result;
        /// Quiesces the device for good: the system halts, powers off, or boots another kernel.
        fn shutdown(data: &Self::Data<'_>);
    }

    /// Registers `T` as `pci::Adapter<T>` does, with `T`'s sleep and shutdown callbacks.
    pub(crate) struct Adapter<T>(PhantomData<T>);

    // SAFETY: The layout of `pci::Adapter<T>`, whose registration this one is.
    unsafe impl<T: PowerManaged> DriverLayout for Adapter<T> {
        type DriverType = <pci::Adapter<T> as DriverLayout>::DriverType;
        type DriverData<'bound> = <pci::Adapter<T> as DriverLayout>::DriverData<'bound>;
        const DEVICE_DRIVER_OFFSET: usize = <pci::Adapter<T> as DriverLayout>::DEVICE_DRIVER_OFFSET;
    }

    // SAFETY: `unregister` is `pci::Adapter<T>`'s, after its `register` succeeded.
    unsafe impl<T: PowerManaged> RegistrationOps for Adapter<T> {
        unsafe fn register(
            pdrv: &Opaque<Self::DriverType>,
            name: &'static CStr,
            module: &'static ThisModule,
        ) -> Result {
            // SAFETY: The driver is not registered yet: its fields are ours to set. `PM_OPS` is a
            // `'static` table.
            unsafe {
                (*pdrv.get()).driver.pm = &Callbacks::<T>::PM_OPS;
                (*pdrv.get()).shutdown = Some(shutdown::<T>);
            }
            // SAFETY: By this function's safety requirements, which are the same.
            unsafe { <pci::Adapter<T> as RegistrationOps>::register(pdrv, name, module) }
        }

        unsafe fn unregister(pdrv: &Opaque<Self::DriverType>) {
            // SAFETY: By this function's safety requirements: `register` registered it as
            // `pci::Adapter<T>` does.
            unsafe { <pci::Adapter<T> as RegistrationOps>::unregister(pdrv) }
        }
    }

    /// `T`'s `dev_pm_ops`.
    struct Callbacks<T>(PhantomData<T>);

    impl<T: PowerManaged> Callbacks<T> {
        /// The same callbacks for suspend and hibernation, as `SET_SYSTEM_SLEEP_PM_OPS` sets them.
        const PM_OPS: bindings::dev_pm_ops = bindings::dev_pm_ops {
            suspend: Some(suspend::<T>),
            resume: Some(resume::<T>),
            freeze: Some(suspend::<T>),
            thaw: Some(resume::<T>),
            poweroff: Some(suspend::<T>),
            restore: Some(resume::<T>),
            // SAFETY: The rest are function pointers, for which all zeroes is `None`.
            ..unsafe { core::mem::zeroed() }
        };
    }

    /// The driver data of `dev`, a device bound to `T`.
    ///
    /// # Safety
    ///
    /// `dev` is a PCI device bound to `T`, and stays bound while the result is used: the driver
    /// core holds the device lock around the sleep callbacks and `shutdown`, as around remove.
    unsafe fn data<'a, T: PowerManaged>(dev: *mut bindings::device) -> Option<&'a T::Data<'a>> {
        // SAFETY: `dev` is valid (safety requirement).
        let data = unsafe { bindings::dev_get_drvdata(dev) };
        // SAFETY: A bound device's driver data is its `Pin<KBox<T::Data>>`, stored by the PCI
        // adapter's probe (`Device::set_drvdata`, `into_foreign`: the pointer to the data), alive
        // while it is bound (safety requirement). Null if probe failed.
        unsafe { data.cast::<T::Data<'a>>().as_ref() }
    }

    /// Sleep callback: suspend, freeze and power off.
    ///
    /// # Safety
    ///
    /// Called by the PM core with a device bound to `T`.
    unsafe extern "C" fn suspend<T: PowerManaged>(dev: *mut bindings::device) -> c_int {
        // SAFETY: By the function's safety requirement.
        match unsafe { data::<T>(dev) }.map(T::suspend) {
            Some(Err(e)) => e.to_errno(),
            _ => 0,
        }
    }

    /// Sleep callback: resume, thaw and restore.
    ///
    /// # Safety
    ///
    /// Called by the PM core with a device bound to `T`.
    unsafe extern "C" fn resume<T: PowerManaged>(dev: *mut bindings::device) -> c_int {
        // SAFETY: By the function's safety requirement.
        match unsafe { data::<T>(dev) }.map(T::resume) {
            Some(Err(e)) => e.to_errno(),
            _ => 0,
        }
    }

    /// `shutdown` of the `pci_driver`.
    ///
    /// # Safety
    ///
    /// Called by the PCI core with a device bound to `T`.
    unsafe extern "C" fn shutdown<T: PowerManaged>(pdev: *mut bindings::pci_dev) {
        // SAFETY: `pdev` is a valid PCI device, bound to `T` (safety requirement).
        if let Some(data) = unsafe { data::<T>(&raw mut (*pdev).dev) } {
            T::shutdown(data);
        }
    }
}
