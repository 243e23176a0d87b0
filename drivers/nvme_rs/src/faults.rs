// SPDX-License-Identifier: GPL-2.0

//! Fault injection points, the kernel's way (`Documentation/fault-injection/`): what a hostile or
//! dying controller, or a lost interrupt, could do to the driver and QEMU's controller does not,
//! each a `fault_attr` under `/sys/kernel/debug/nvme_rs/` (`probability`, `interval`, `times`)
//! made by `faults_shim.c`. None fails until a test says so; without
//! `CONFIG_FAULT_INJECTION_DEBUG_FS` none exists. A point costs a call and a load where it is not
//! enabled.

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
    /// `fail_unique_completion`: an I/O completion comes twice more, as a duplicate and with
    /// another command identifier generation; each copy must be ignored.
    UniqueCompletion = 3,
    /// `fail_io_interrupt`: an I/O queue's interrupt on a vector of its own (MSI-X, MSI) is
    /// ignored, as if lost; a timeout handler must find the completions with a poll of its own.
    IoInterrupt = 4,
    /// `fail_prompt_cancel`: a controller declared dead has its requests cancelled four seconds
    /// later, so that other timeout handlers find it dead with their requests still in flight.
    PromptCancel = 5,
    /// `fail_admin_completion`: a submitted admin command's completion is not looked for, so
    /// that the command times out (`interval` N and `times` 1: the Nth command).
    AdminCompletion = 6,
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
