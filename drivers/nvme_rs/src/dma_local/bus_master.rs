// SPDX-License-Identifier: GPL-2.0

//! PCI bus mastering for as long as the driver is bound (in kernels with `CONFIG_PCI`, where the
//! root declares this module; each item says so too, for the API record of `scripts/sync-dma.sh`).

use kernel::bindings;
use kernel::device::{Bound, Core};
use kernel::devres;
use kernel::pci;
use kernel::prelude::*;
use kernel::sync::aref::ARef;

/// Lets a PCI device master the bus, that is do DMA, while its driver is bound: enables its memory
/// space and bus mastering, and has devres disable it at unbind, or when the probe fails.
///
/// The PCI core leaves a device enabled when its driver goes; a C driver calls `pci_disable_device`
/// at the end of `remove`, which clears Bus Master Enable. devres does that here once the driver's
/// data, and with it every DMA object of this module, is dropped: a backstop, so that the device
/// cannot reach memory later. Stopping the device before its buffers go is still the driver's job.
#[cfg(CONFIG_PCI)]
pub(crate) fn enable_bus_master(pdev: &pci::Device<Core<'_>>) -> Result {
    pdev.enable_device_mem()?;
    pdev.set_master();
    let bound: &pci::Device<Bound> = pdev;
    // INVARIANT: enabled just above. Dropped (the device disabled) if registering fails.
    devres::register(bound.as_ref(), DisableAtUnbind(bound.into()), GFP_KERNEL)
}

/// Stops the device's DMA: clears its Bus Master Enable (`pci_clear_master`). A configuration
/// write is not posted, so once this returns the device issues no new memory request. A driver
/// calls it before it frees, unmaps or reuses memory it gave a device that did not stop as told
/// (a controller whose ready bit stays set), and in its unbind before its DMA memory goes: the
/// backstop of [`enable_bus_master`] runs only after that memory is freed.
#[cfg(CONFIG_PCI)]
pub(crate) fn stop_bus_master(pdev: &pci::Device<Bound>) {
    // SAFETY: A bound device's `pci_dev` is valid; `pci_clear_master` takes the config lock.
    unsafe { bindings::pci_clear_master(raw_pci_device(pdev)) };
}

/// Lets the device master the bus again after [`stop_bus_master`] (`pci_set_master`), once the
/// driver has set it up afresh (a controller reset).
#[cfg(CONFIG_PCI)]
pub(crate) fn resume_bus_master(pdev: &pci::Device<Bound>) {
    // SAFETY: A bound device's `pci_dev` is valid and enabled (by `enable_bus_master`, whose
    // devres action runs only after the driver's data, which calls this, is gone).
    unsafe { bindings::pci_set_master(raw_pci_device(pdev)) };
}

/// The C `struct pci_dev` of `pdev`: `pci::Device` is transparent over `Opaque<pci_dev>`, itself
/// transparent over the C struct (layout assumptions `pci-device-transparent`,
/// `opaque-transparent` in `dma_local.api`). `Opaque` lets C write to it behind `&`.
#[cfg(CONFIG_PCI)]
fn raw_pci_device<Ctx: kernel::device::DeviceContext>(
    pdev: &pci::Device<Ctx>,
) -> *mut bindings::pci_dev {
    core::ptr::from_ref(pdev).cast_mut().cast()
}

/// Disables a PCI device when dropped (see [`enable_bus_master`]).
///
/// # Invariants
///
/// [`enable_bus_master`] enabled the device for this value, which is its only maker.
#[cfg(CONFIG_PCI)]
struct DisableAtUnbind(ARef<pci::Device>);

#[cfg(CONFIG_PCI)]
impl Drop for DisableAtUnbind {
    fn drop(&mut self) {
        // SAFETY: The reference keeps the `pci_dev` alive, and it was enabled for this value (type
        // invariant), which is dropped once.
        unsafe { bindings::pci_disable_device(raw_pci_device(&self.0)) };
    }
}
