// SPDX-License-Identifier: GPL-2.0

//! A one-shot kernel timer of jiffy resolution, pinned inside the structure it belongs to.
//!
//! The adapter arms it on its transmit path, where arming a timer that is already armed must cost
//! no more than a check. `kernel::time::hrtimer` offers no such check, and its handles cancel the
//! timer when dropped, so this wraps a `timer_list`; `netdev_shim.c` holds the one-line wrappers
//! of its macro and static inline.

use kernel::{bindings, prelude::*, time::msecs_to_jiffies, types::Opaque};

extern "C" {
    fn e1000_rs_timer_setup(
        timer: *mut bindings::timer_list,
        fired: unsafe extern "C" fn(*mut bindings::timer_list),
    );
    fn e1000_rs_timer_pending(timer: *const bindings::timer_list) -> bool;
}

/// A `timer_list` that calls a callback in softirq context when it fires.
///
/// # Invariants
///
/// `timer` is set up by `timer_setup`, and shut down before its memory goes (`PinnedDrop`).
#[repr(transparent)]
#[pin_data(PinnedDrop)]
pub(crate) struct Timer {
    #[pin]
    timer: Opaque<bindings::timer_list>,
}

// SAFETY: A `timer_list` may be armed, disarmed and freed from any thread.
unsafe impl Send for Timer {}

// SAFETY: The timer core serialises the operations on a `timer_list` with its own lock.
unsafe impl Sync for Timer {}

impl Timer {
    /// A timer that calls `fired` with a pointer to its `timer_list`, which [`Timer::from_raw`]
    /// turns back into the `Timer`.
    pub(crate) fn new(
        fired: unsafe extern "C" fn(*mut bindings::timer_list),
    ) -> impl PinInit<Self> {
        pin_init!(Self {
            // INVARIANT: `timer_setup` initialises the whole `timer_list`.
            timer <- Opaque::ffi_init(move |timer: *mut bindings::timer_list| {
                // SAFETY: `timer` is valid for writes and pinned.
                unsafe { e1000_rs_timer_setup(timer, fired) }
            }),
        })
    }

    /// The `Timer` whose `timer_list` a callback was given.
    ///
    /// # Safety
    ///
    /// `timer` is the `timer_list` of a `Timer`.
    pub(crate) unsafe fn from_raw(timer: *mut bindings::timer_list) -> *const Self {
        // `Timer` and `Opaque` are both `repr(transparent)`.
        Opaque::cast_from(timer).cast()
    }

    /// Arms the timer to fire in `delay_ms` milliseconds (rounded up to jiffies), unless it is
    /// armed already.
    #[inline]
    pub(crate) fn arm_unless_pending(&self, delay_ms: u32) {
        let timer = self.timer.get();
        // SAFETY: `timer` is set up (type invariant).
        if unsafe { e1000_rs_timer_pending(timer) } {
            return;
        }
        // SAFETY: `jiffies` is a counter the timer interrupt writes; a volatile load reads it as
        // `READ_ONCE` does.
        let now = unsafe { core::ptr::read_volatile(&raw const bindings::jiffies) };
        // SAFETY: `timer` is set up (type invariant). Two callers that both found it idle arm it
        // twice, which leaves it armed once.
        unsafe { bindings::mod_timer(timer, now.wrapping_add(msecs_to_jiffies(delay_ms))) };
    }

    /// Disarms the timer and waits for its callback if it runs. It may be armed again afterwards.
    pub(crate) fn disarm_sync(&self) {
        // SAFETY: `timer` is set up (type invariant).
        unsafe { bindings::timer_delete_sync(self.timer.get()) };
    }
}

#[pinned_drop]
impl PinnedDrop for Timer {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: `timer` is set up (type invariant); once shut down nothing can arm it again, and
        // a running callback has returned.
        unsafe { bindings::timer_shutdown_sync(self.timer.get()) };
    }
}
