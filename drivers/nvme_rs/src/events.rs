// SPDX-License-Identifier: GPL-2.0

//! Asynchronous events, as C's `nvme_aen`, `async_event_work` and `scan_work`: the controller
//! reports that namespaces changed (attached, detached, resized, formatted through another
//! controller) by completing an Asynchronous Event Request that the driver keeps with it, and the
//! driver scans the namespaces ([`NamespaceSet::rescan`]), so that disks come and go without a
//! reload.
//!
//! The admin queue's completions interrupt on vector 0, whose handler runs in a thread (it sends
//! admin commands and adds disks, which sleep). It takes the event, whoever consumed its completion
//! ([`AdminQueue::take_async_event`](crate::admin::AdminQueue::take_async_event)), reads the
//! Changed Namespace List (which lets the controller report the next change), hands the controller
//! a new request, and scans. At probe and after each reset, [`Controller::wake_async_events`] wakes
//! the thread to tell the controller again which events to report and send the request again (a
//! reset forgets both), and after a reset to scan, as C's `nvme_start_ctrl` does.

use core::{
    ffi::{c_int, c_void},
    sync::atomic::{AtomicBool, Ordering},
};

use kernel::{bindings, prelude::*, sync::Arc};

use crate::admin::IDENTIFY_SIZE;
use crate::command::{self, LogPage, AEC_NAMESPACE_ATTRIBUTE, OAES_NAMESPACE_ATTRIBUTE};
use crate::compat::irqreturn;
use crate::controller::{AsyncEventsWaker, Controller};
use crate::dma_local::{Coherent, Gfp};
use crate::scan::NamespaceSet;

/// Asynchronous Event Type: Notice.
const EVENT_TYPE_NOTICE: u32 = 0x2;
/// Notice: Namespace Attribute Changed.
const NOTICE_NAMESPACE_ATTRIBUTE_CHANGED: u32 = 0x00;

/// A controller's asynchronous event handler.
///
/// # Invariants
///
/// While `irq_requested`, `irq` is requested with this pinned value as its cookie.
#[pin_data(PinnedDrop)]
pub(crate) struct AsyncEvents<'a> {
    ctrl: Arc<Controller<'a>>,
    namespaces: Arc<NamespaceSet<'a>>,
    /// The events the controller is told to report (`AEC_*`).
    events: u32,
    /// The admin queue's IRQ.
    irq: u32,
    irq_requested: AtomicBool,
    #[pin]
    _pinned: core::marker::PhantomPinned,
}

impl<'a> AsyncEvents<'a> {
    /// Handles the events of `ctrl`, which may report those Identify Controller's `oaes` says,
    /// on the admin queue's IRQ `irq`, scanning `namespaces`; then wakes the handler to ask for
    /// the first event.
    pub(crate) fn start(
        ctrl: Arc<Controller<'a>>,
        namespaces: Arc<NamespaceSet<'a>>,
        oaes: u32,
        irq: u32,
    ) -> Result<Pin<KBox<Self>>> {
        let events = if oaes & OAES_NAMESPACE_ATTRIBUTE != 0 {
            AEC_NAMESPACE_ATTRIBUTE
        } else {
            0
        };
        let handler = KBox::pin_init(
            try_pin_init!(Self {
                ctrl,
                namespaces,
                events,
                irq,
                irq_requested: AtomicBool::new(false),
                _pinned: core::marker::PhantomPinned,
            }),
            GFP_KERNEL,
        )?;
        let cookie = core::ptr::from_ref::<Self>(&handler)
            .cast_mut()
            .cast::<c_void>();
        // SAFETY: `handle_async_events` matches `irq_handler_t`; the cookie is the pinned handler,
        // which frees the IRQ in `PinnedDrop` before it goes. The default primary handler wakes
        // the thread, with the vector masked until it has run (`IRQF_ONESHOT`).
        kernel::error::to_result(unsafe {
            bindings::request_threaded_irq(
                irq,
                None,
                Some(handle_async_events),
                bindings::IRQF_ONESHOT as usize,
                c"nvme_rs admin".as_char_ptr(),
                cookie,
            )
        })?;
        // INVARIANT: requested above with this cookie.
        handler.irq_requested.store(true, Ordering::Release);
        // SAFETY: The IRQ is requested with `cookie`; `PinnedDrop` withdraws the waker before
        // it frees the IRQ.
        let waker = unsafe { AsyncEventsWaker::new(irq, cookie) };
        handler.ctrl.set_async_events_waker(Some(waker));
        handler.ctrl.wake_async_events(false);
        Ok(handler)
    }

    /// What the thread does when woken: set the events up again if a reset (or probe) asks,
    /// take an event, and scan the namespaces where one changed or a reset may have changed them.
    fn handle(&self) {
        let ctrl = &*self.ctrl;
        // A reset (or sleep) under way wakes the thread again when it is over; so does one that
        // begins meanwhile, whose `EBUSY`s are not worth a word.
        if ctrl.is_removing() || ctrl.is_resetting() {
            return;
        }
        let warn = |what: &str, result: Result| match result {
            Err(e) if e != EBUSY => dev_warn!(ctrl.pdev, "{} ({:?})\n", what, e),
            _ => {}
        };
        let (set_up, mut rescan) = ctrl.take_async_events_work();
        if set_up && self.events != 0 {
            let configured = ctrl.admin_command_unless_resetting(|admin, bar| {
                admin.configure_async_events(bar, self.events)
            });
            warn("asynchronous events not configured", configured);
        }
        let event = ctrl.admin_command_unless_resetting(|admin, bar| admin.take_async_event(bar));
        let mut request_again = set_up;
        if let Ok(Some((status, result))) = event {
            // A request that failed (aborted by a reset, say) is sent again after the reset.
            if status == command::SC_SUCCESS {
                request_again = true;
                rescan |= self.on_event(result);
            }
        }
        if request_again {
            let requested =
                ctrl.admin_command_unless_resetting(|admin, bar| admin.request_async_event(bar));
            warn("no asynchronous event request", requested);
        }
        if rescan {
            warn("namespaces not rescanned", self.namespaces.rescan());
        }
    }

    /// Acts on event `result` (the request's DW0); returns whether the namespaces are to be
    /// scanned.
    fn on_event(&self, result: u32) -> bool {
        let (kind, info) = (result & 0x7, (result >> 8) & 0xff);
        if kind != EVENT_TYPE_NOTICE || info != NOTICE_NAMESPACE_ATTRIBUTE_CHANGED {
            dev_warn!(self.ctrl.pdev, "async event result {:08x}\n", result);
            return false;
        }
        // Reading the log lets the controller report the next change; the scan finds what
        // changed itself (the list may overflow).
        let read = Coherent::<u8>::alloc(self.ctrl.pdev.as_ref(), IDENTIFY_SIZE, Gfp::KERNEL)
            .and_then(|buf| {
                // A timed-out read resets or kills the controller (`admin_command`), which
                // disables it, before `buf` can go.
                self.ctrl.admin_command_unless_resetting(|admin, bar| {
                    admin.get_log_page(bar, LogPage::ChangedNamespaces, &buf)
                })
            });
        if let Err(e) = read {
            dev_warn!(
                self.ctrl.pdev,
                "changed namespace list not read ({:?})\n",
                e
            );
        }
        true
    }
}

#[pinned_drop]
impl PinnedDrop for AsyncEvents<'_> {
    fn drop(self: Pin<&mut Self>) {
        // No reset wakes the thread from here on.
        self.ctrl.set_async_events_waker(None);
        if self.irq_requested.load(Ordering::Acquire) {
            // SAFETY: Requested with this cookie (type invariant); freed once, here. Waits for
            // the thread.
            unsafe { bindings::free_irq(self.irq, core::ptr::from_ref(&*self).cast_mut().cast()) };
        }
    }
}

/// The thread of the admin queue's interrupt: [`AsyncEvents::handle`].
///
/// # Safety
///
/// `cookie` is the pinned [`AsyncEvents`] the IRQ was requested with.
unsafe extern "C" fn handle_async_events(
    _irq: c_int,
    cookie: *mut c_void,
) -> bindings::irqreturn_t {
    // SAFETY: By the function's safety requirement.
    unsafe { &*cookie.cast::<AsyncEvents<'_>>() }.handle();
    irqreturn::IRQ_HANDLED
}
