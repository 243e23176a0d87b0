// SPDX-License-Identifier: GPL-2.0

//! The driver's debugfs directory, `/sys/kernel/debug/{{crate_name}}/`, made by `debugfs_shim.c`:
//! what a test reads and the fault it injects, where the kernel log is for people.
//!
//! - `verified_round_trips`: the DMA round trips whose every byte came back since the module was
//!   loaded, over all its devices.
//! - `fail_coherent_alloc/`: a fault injection point (`Documentation/fault-injection/`; its
//!   `probability`, `interval` and `times`): while it fails, probe asks `dma_local` for a coherent
//!   buffer no device can have, and the probe fails. It exists only with
//!   `CONFIG_FAULT_INJECTION_DEBUG_FS`.

use core::sync::atomic::{AtomicU64, Ordering};

extern "C" {
    fn edu_debugfs_create(verified_round_trips: *mut u64);
    fn edu_debugfs_remove();
    fn edu_should_fail_coherent_alloc() -> bool;
}

/// What `verified_round_trips` shows.
static VERIFIED_ROUND_TRIPS: AtomicU64 = AtomicU64::new(0);

/// Counts a round trip whose every byte came back.
pub(crate) fn round_trip_verified() {
    VERIFIED_ROUND_TRIPS.fetch_add(1, Ordering::Relaxed);
}

/// Whether the next coherent allocation of a probe is to fail.
pub(crate) fn coherent_alloc_fails() -> bool {
    // SAFETY: Reads the shim's static fault attribute; safe to call at any time.
    unsafe { edu_should_fail_coherent_alloc() }
}

/// The debugfs directory, for as long as the module is loaded.
pub(crate) struct Files(());

impl Files {
    /// Creates the directory and its files (a debugfs failure leaves them out, as debugfs users
    /// do).
    pub(crate) fn create() -> Self {
        // SAFETY: Once, at module init, paired with the removal in `drop`. The counter is a static
        // `AtomicU64`, laid out as a `u64`, which debugfs reads with a plain aligned load.
        unsafe { edu_debugfs_create(VERIFIED_ROUND_TRIPS.as_ptr()) };
        Self(())
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        // SAFETY: Created by `create`; no device is bound any more (the driver is unregistered
        // first: the module's field order), so nothing counts or fails after.
        unsafe { edu_debugfs_remove() };
    }
}
