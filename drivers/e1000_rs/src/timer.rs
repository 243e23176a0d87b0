// SPDX-License-Identifier: GPL-2.0

//! A one-shot kernel timer of jiffy resolution, pinned inside the structure it belongs to.
//!
//! The adapter arms it on its transmit path, where arming a timer that is already armed must cost
//! no more than a check. `kernel::time::hrtimer` offers no such check, and its handles cancel the
//! timer when dropped, so this wraps a `timer_list`; `netdev_shim.c` holds the one-line wrappers
//! of its macro and static inlines.

use kernel::{bindings, ffi::c_uint, prelude::*, types::Opaque};

extern "C" {
    fn e1000_rs_timer_setup(
        timer: *mut bindings::timer_list,
        fired: unsafe extern "C" fn(*mut bindings::timer_list),
    );
    fn e1000_rs_timer_pending(timer: *const bindings::timer_list) -> bool;
    fn e1000_rs_timer_arm(timer: *mut bindings::timer_list, ms: c_uint);
}

/// A `timer_list` that calls a callback in softirq context when it fires.
///
/// # Invariants
///
/// `timer` is a valid timer (`timer_setup`), shut down before its memory goes (`PinnedDrop`).
#[repr(transparent)]
#[pin_data(PinnedDrop)]
pub(crate) struct Timer {
    #[pin]
    timer: Opaque<bindings::timer_list>,
}

// SAFETY: A `timer_list` may be armed, disarmed and freed from any thread (but not disarmed and
// waited for from its own callback, which `disarm_sync` and `shut_down` say).
unsafe impl Send for Timer {}

// SAFETY: The timer core serialises the operations on a `timer_list` with its own lock.
unsafe impl Sync for Timer {}

impl Timer {
    /// A timer that calls `fired` with a pointer to its `timer_list`, which [`Timer::from_raw`]
    /// turns back into the `Timer`.
    ///
    /// # Safety
    ///
    /// `fired` may be called, in softirq context, with this timer's `timer_list` whenever the
    /// timer fires, until it is shut down.
    pub(crate) unsafe fn new(
        fired: unsafe extern "C" fn(*mut bindings::timer_list),
    ) -> impl PinInit<Self> {
        pin_init!(Self {
            // INVARIANT: `timer_setup` makes it a valid, idle timer.
            timer <- Opaque::ffi_init(move |timer: *mut bindings::timer_list| {
                // SAFETY: `timer` is valid for writes and pinned; `fired` may be called with it
                // (the function's safety requirement).
                unsafe { e1000_rs_timer_setup(timer, fired) }
            }),
        })
    }

    /// The `Timer` around `timer`, for a callback given the `timer_list` of a `Timer`: both types
    /// are `repr(transparent)`.
    pub(crate) fn from_raw(timer: *mut bindings::timer_list) -> *const Self {
        Opaque::cast_from(timer).cast()
    }

    /// Arms the timer to fire in `delay_ms` milliseconds (rounded up to jiffies), unless it is
    /// armed already.
    #[inline]
    pub(crate) fn arm_unless_pending(&self, delay_ms: u32) {
        let timer = self.timer.get();
        // SAFETY: `timer` is valid (type invariant).
        if unsafe { e1000_rs_timer_pending(timer) } {
            return;
        }
        // SAFETY: `timer` is valid (type invariant). Two callers that both found it idle arm it
        // twice, which leaves it armed once.
        unsafe { e1000_rs_timer_arm(timer, delay_ms) };
    }

    /// Disarms the timer and waits for its callback if it runs; not from the callback. It may be
    /// armed again afterwards.
    pub(crate) fn disarm_sync(&self) {
        // SAFETY: `timer` is valid (type invariant).
        unsafe { bindings::timer_delete_sync(self.timer.get()) };
    }

    /// Disarms the timer for good and waits for its callback if it runs; not from the callback.
    pub(crate) fn shut_down(&self) {
        // SAFETY: `timer` is valid (type invariant); a shut down timer stays valid, and arming it
        // does nothing.
        unsafe { bindings::timer_shutdown_sync(self.timer.get()) };
    }
}

#[pinned_drop]
impl PinnedDrop for Timer {
    fn drop(self: Pin<&mut Self>) {
        // Nothing may fire into the memory once it goes.
        self.shut_down();
    }
}
