// SPDX-License-Identifier: GPL-2.0

//! Fault injection points, the kernel's way (`Documentation/fault-injection/`): values that a
//! hostile or dying controller could hand the driver and QEMU's cannot, each a `fault_attr` under
//! `/sys/kernel/debug/nvme_rs/` (`probability`, `interval`, `times`) made by `faults_shim.c`.
//! None fails until a test says so; without `CONFIG_FAULT_INJECTION_DEBUG_FS` none exists.

extern "C" {
    fn nvme_rs_faults_create();
    fn nvme_rs_faults_remove();
    fn nvme_rs_should_fail(point: u32) -> bool;
}

/// A fault injection point, in the order of `faults_shim.c`'s table.
#[derive(Clone, Copy)]
#[repr(u32)]
pub(crate) enum FaultPoint {
    /// `fail_mmio_read`: a register read returns all ones, as from a device gone from the bus
    /// (after the real read, so that read side effects happen).
    MmioRead = 0,
    /// `fail_csts_fatal`: `CSTS` reads with Controller Fatal Status set.
    CstsFatal = 1,
    /// `fail_mdts`: Identify Controller says MDTS 255, a transfer size no shift can express.
    Mdts = 2,
}

impl FaultPoint {
    /// Whether this point fails now.
    pub(crate) fn fails(self) -> bool {
        // SAFETY: Takes a number and reads the shim's static table; safe to call at any time.
        unsafe { nvme_rs_should_fail(self as u32) }
    }
}

/// The fault injection points' debugfs files, for as long as the module is loaded.
pub(crate) struct FaultPoints(());

impl FaultPoints {
    /// Creates the files (a debugfs failure leaves them out, as debugfs users do).
    pub(crate) fn create() -> Self {
        // SAFETY: Once, at module init, paired with the removal in `drop`.
        unsafe { nvme_rs_faults_create() };
        Self(())
    }
}

impl Drop for FaultPoints {
    fn drop(&mut self) {
        // SAFETY: Created by `create`; nothing reads the attributes any more (the driver is
        // unregistered first: the module's field order).
        unsafe { nvme_rs_faults_remove() };
    }
}
