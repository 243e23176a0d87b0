// SPDX-License-Identifier: GPL-2.0

//! Controller reset, as the C driver's `nvme_reset_ctrl` does it while I/O runs, in two halves
//! that system sleep also uses (`stop` before, `start` after): dispatch stops,
//! the controller is disabled (it forgets every queue and every command), what it completed
//! before is completed, every other request in flight goes back to blk-mq to be sent again
//! ([`io::requeue_all`]), then the controller is enabled with an empty admin queue, the I/O queues
//! are created again (and the shadow doorbells offered again), and dispatch resumes. A reset that
//! fails leaves the controller dead, every request ended with an error.

use core::ptr::NonNull;

use kernel::{bindings, prelude::*, sync::Arc};

use crate::controller::Controller;
use crate::io::{self, IoQueue};

/// What a reset works on: the controller and its I/O queues.
///
/// # Invariants
///
/// `queues` points to the controller's I/O queues, which outlive `self` and do not change.
pub(crate) struct Reset<'a> {
    ctrl: Arc<Controller<'a>>,
    queues: NonNull<[Pin<KBox<IoQueue<'a>>>]>,
}

// SAFETY: The queues are `Sync` (shared with blk-mq and interrupt handlers) and outlive `self`.
unsafe impl Send for Reset<'_> {}

impl<'a> Reset<'a> {
    /// Resets of `ctrl`, whose I/O queues are `queues`.
    ///
    /// # Safety
    ///
    /// `queues` outlive the returned value and do not change meanwhile.
    pub(crate) unsafe fn new(ctrl: Arc<Controller<'a>>, queues: &[Pin<KBox<IoQueue<'a>>>]) -> Self {
        // INVARIANT: by the function's safety requirement.
        Self {
            ctrl,
            queues: NonNull::from(queues),
        }
    }

    /// The I/O queues.
    fn queues(&self) -> &[Pin<KBox<IoQueue<'a>>>] {
        // SAFETY: Live and unchanged while `self` is (type invariant).
        unsafe { self.queues.as_ref() }
    }

    /// Resets the controller; callers serialise. Requests in flight are sent again afterwards.
    /// Sleeps for as long as the controller takes to stop and start (`CAP.TO`) and the admin
    /// commands take.
    pub(crate) fn reset(&self) -> Result {
        dev_warn!(self.ctrl.pdev, "resetting controller\n");
        self.stop(Stop::Disable)?;
        self.start()
    }

    /// The first half of a reset, and system sleep: stops dispatch (until [`Self::start`]),
    /// disables or shuts the controller down (`how`), completes what it posted and takes the other
    /// requests in flight from it, to be sent again once it starts. Every queue's interrupt is
    /// disabled. Fails only if there is nothing to stop (no I/O queues yet, or a dead controller);
    /// a controller that does not stop in time is stopped all the same.
    pub(crate) fn stop(&self, how: Stop) -> Result {
        let ctrl = &*self.ctrl;
        let set = ctrl.tag_set().ok_or(ENODEV)?;
        if ctrl.is_dead() {
            return Err(ENODEV);
        }
        ctrl.set_resetting(true);
        // SAFETY: The tag set lives as long as the controller's queues, and so as `self`.
        // `queue_rq` calls running now finish first; later ones wait for `start`'s unquiesce.
        unsafe { bindings::blk_mq_quiesce_tagset(set) };
        // Timeout handlers that end requests and pollers keep out meanwhile.
        let _cancelling = ctrl.cancel_lock.lock();
        match how {
            Stop::Disable => {
                // Gone or slow, the controller no longer has the commands once `CC.EN` is 0.
                let _ = ctrl.disable();
            }
            Stop::Shutdown => ctrl.shutdown(),
        }
        for queue in self.queues() {
            queue.stop_for_reset();
        }
        // SAFETY: The tag set is live; the controller and the interrupts are disabled, what was
        // posted is completed, and the cancel lock is held.
        let requeued = unsafe { io::requeue_all(set) };
        dev_info!(
            ctrl.pdev,
            "reset: {} commands in flight sent again\n",
            requeued
        );
        Ok(())
    }

    /// The second half of a reset, and the wake from system sleep, after [`Self::stop`]: enables
    /// the controller with an empty admin queue, creates the I/O queues again (and offers the
    /// shadow doorbells again), and resumes dispatch, which sends the requests that `stop` took
    /// again. If the controller does not come back, it is killed: every request ends with an
    /// error. Does nothing if `stop` did not stop it.
    pub(crate) fn start(&self) -> Result {
        let ctrl = &*self.ctrl;
        let set = ctrl.tag_set().ok_or(ENODEV)?;
        if !ctrl.is_resetting() {
            // Not stopped (it was dead already): nothing to start.
            return Ok(());
        }
        let result = self.start_queues();
        if let Err(e) = result {
            dev_err!(ctrl.pdev, "controller did not restart ({:?})\n", e);
            ctrl.kill();
        }
        for queue in self.queues() {
            queue.resume_interrupts();
        }
        ctrl.set_resetting(false);
        // SAFETY: Quiesced by `stop`. The requests given back are dispatched from here on.
        unsafe { bindings::blk_mq_unquiesce_tagset(set) };
        result
    }

    /// Enables the controller and creates its I/O queues again.
    fn start_queues(&self) -> Result {
        let ctrl = &*self.ctrl;
        // SAFETY: Dispatch is stopped and the interrupts disabled (`stop`): no doorbell rings.
        let shadow_doorbells = unsafe { ctrl.forget_shadow_doorbells() }?;
        ctrl.restart()?;
        let count = self.queues().len() as u16;
        let granted = ctrl.admin_command(|admin, bar| admin.set_number_of_queues(bar, count))?;
        if granted < count {
            dev_err!(
                ctrl.pdev,
                "the controller now grants {} I/O queues, not {}\n",
                granted,
                count
            );
            return Err(EIO);
        }
        for queue in self.queues() {
            queue.recreate()?;
        }
        if shadow_doorbells {
            ctrl.offer_shadow_doorbells();
        }
        Ok(())
    }
}

/// How [`Reset::stop`] stops the controller.
pub(crate) enum Stop {
    /// Clears `CC.EN`: a reset.
    Disable,
    /// A normal shutdown (`CC.SHN`) first, as before system sleep or power off.
    Shutdown,
}
