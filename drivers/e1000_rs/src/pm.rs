// SPDX-License-Identifier: GPL-2.0

//! Power management: system sleep (`dev_pm_ops`) and `shutdown`, which the kernel crate's
//! `pci::Driver` does not offer (7.2 and 7.3). [`Adapter`] registers the PCI driver through the
//! kernel crate's own `pci::Adapter`, which fills in the probe, remove and ID table, after setting
//! the two fields that adapter leaves alone: `driver.pm` and `shutdown`. The module declares it
//! with `kernel::module_driver!` in place of `module_pci_driver!`.

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
/// `dev` is a PCI device bound to `T`, and stays bound while the result is used: the driver core
/// holds the device lock around the sleep callbacks and `shutdown`, as around remove.
unsafe fn data<'a, T: PowerManaged>(dev: *mut bindings::device) -> Option<&'a T::Data<'a>> {
    // SAFETY: `dev` is valid (safety requirement).
    let data = unsafe { bindings::dev_get_drvdata(dev) };
    // SAFETY: A bound device's driver data is its `Pin<KBox<T::Data>>`, stored by the PCI
    // adapter's probe (`Device::set_drvdata`, `into_foreign`: the pointer to the data), alive while
    // it is bound (safety requirement). Null if probe failed.
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
