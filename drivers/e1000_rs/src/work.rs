// SPDX-License-Identifier: GPL-2.0

//! A work item on the system workqueue, pinned inside the structure it belongs to: the adapter's
//! reset, which `ndo_tx_timeout` (a timer, which cannot sleep) asks for and which must take the RTNL
//! lock.
//!
//! `kernel::workqueue` queues work items that an `Arc` or a `Pin<KBox>` owns; the adapter is
//! neither (the driver core owns it), so this wraps a `work_struct`, as `timer.rs` wraps a
//! `timer_list`. `netdev_shim.c` holds the one-line wrappers of its macro and static inline.

use kernel::{bindings, prelude::*, types::Opaque};

extern "C" {
    fn e1000_rs_work_init(
        work: *mut bindings::work_struct,
        run: unsafe extern "C" fn(*mut bindings::work_struct),
    );
    fn e1000_rs_work_schedule(work: *mut bindings::work_struct) -> bool;
}

/// A `work_struct` that runs a function in process context when scheduled.
///
/// # Invariants
///
/// `work` is an initialised work item (`INIT_WORK`), cancelled before its memory goes
/// (`PinnedDrop`).
#[repr(transparent)]
#[pin_data(PinnedDrop)]
pub(crate) struct Work {
    #[pin]
    work: Opaque<bindings::work_struct>,
}

// SAFETY: A `work_struct` may be scheduled and cancelled from any thread.
unsafe impl Send for Work {}

// SAFETY: The workqueue core serialises the operations on a `work_struct` itself.
unsafe impl Sync for Work {}

impl Work {
    /// A work item that runs `run` with a pointer to its `work_struct`, which [`Work::from_raw`]
    /// turns back into the `Work`.
    ///
    /// # Safety
    ///
    /// `run` may be called, in process context, with this item's `work_struct` whenever it was
    /// scheduled, until it is cancelled.
    pub(crate) unsafe fn new(
        run: unsafe extern "C" fn(*mut bindings::work_struct),
    ) -> impl PinInit<Self> {
        pin_init!(Self {
            // INVARIANT: `INIT_WORK` makes it an idle work item.
            work <- Opaque::ffi_init(move |work: *mut bindings::work_struct| {
                // SAFETY: `work` is valid for writes and pinned; `run` may be called with it (the
                // function's safety requirement).
                unsafe { e1000_rs_work_init(work, run) }
            }),
        })
    }

    /// The `Work` around `work`, for a function given the `work_struct` of a `Work`: both types
    /// are `repr(transparent)`.
    pub(crate) fn from_raw(work: *mut bindings::work_struct) -> *const Self {
        Opaque::cast_from(work).cast()
    }

    /// Schedules the work on the system's unbound workqueue unless it is already pending; from
    /// any context.
    pub(crate) fn schedule(&self) {
        // SAFETY: `work` is valid (type invariant).
        unsafe { e1000_rs_work_schedule(self.work.get()) };
    }

    /// Cancels the work and waits for it if it runs; not from the work itself.
    pub(crate) fn cancel_sync(&self) {
        // SAFETY: `work` is valid (type invariant).
        unsafe { bindings::cancel_work_sync(self.work.get()) };
    }
}

#[pinned_drop]
impl PinnedDrop for Work {
    fn drop(self: Pin<&mut Self>) {
        // Nothing may run on the memory once it goes.
        self.cancel_sync();
    }
}
