// SPDX-License-Identifier: GPL-2.0

//! Controller reset, as the C driver's `nvme_reset_ctrl` does it while I/O runs, in two halves
//! that system sleep also uses ([`stop`] before, [`start`] after): dispatch stops, the controller
//! is disabled (it forgets every queue and every command), what it completed before is completed,
//! every other request in flight goes back to blk-mq to be sent again ([`timeout::requeue_all`]), then
//! the controller is enabled with an empty admin queue, the I/O queues are created again (and the
//! shadow doorbells offered again), and dispatch resumes. A controller that does not come back is
//! killed: every request ends with an error. Resets come from the controller's device (ioctl,
//! sysfs), from a timeout handler (through [`Controller::reset`]) and from system sleep; the
//! controller's reset lock serialises them.

use core::sync::atomic::Ordering;

use kernel::{bindings, prelude::*};

use crate::controller::Controller;
use crate::io::IoQueue;
use crate::tagset;
use crate::timeout;

/// How [`stop`] stops the controller.
pub(crate) enum Stop {
    /// Clears `CC.EN`: a reset.
    Disable,
    /// A normal shutdown (`CC.SHN`) first, as before system sleep or power off.
    Shutdown,
}

/// Resets the controller: requests in flight are sent again afterwards. With `Some(count)`, only
/// if no reset began since the reset count was `count` (a timeout handler's, which does not want
/// a second reset for what the first cured). `EBUSY` while it sleeps, `ENODEV` without I/O queues
/// or once dead, or being let go of. Sleeps for as long as the controller takes to stop
/// and start (`CAP.TO`) and the admin commands take.
pub(crate) fn reset(ctrl: &Controller<'_>, unless_since: Option<u32>) -> Result {
    let _one = ctrl.reset_lock.lock();
    if unless_since.is_some_and(|seen| seen != ctrl.resets()) {
        // Another reset (whose end this waited for) did it: what the caller saw is gone.
        return Ok(());
    }
    if ctrl.is_resetting() {
        return Err(EBUSY);
    }
    dev_warn!(ctrl.pdev, "resetting controller\n");
    ctrl.counters.resets.fetch_add(1, Ordering::Relaxed);
    stop_locked(ctrl, Stop::Disable)?;
    start_locked(ctrl)
}

/// The first half of a reset, and system sleep: stops dispatch (until [`start`]), disables or
/// shuts the controller down (`how`), completes what it posted and takes the other requests in
/// flight from it, to be sent again once it starts. Fails only if there is nothing to stop (no I/O
/// queues yet, or a dead controller); a controller that does not stop in time is stopped all the
/// same.
pub(crate) fn stop(ctrl: &Controller<'_>, how: Stop) -> Result {
    let _one = ctrl.reset_lock.lock();
    stop_locked(ctrl, how)
}

/// The second half of a reset, and the wake from system sleep, after [`stop`]: enables the
/// controller, creates the I/O queues again and resumes dispatch, which sends the requests that
/// `stop` took again. Does nothing if `stop` did not stop it.
pub(crate) fn start(ctrl: &Controller<'_>) -> Result {
    let _one = ctrl.reset_lock.lock();
    start_locked(ctrl)
}

/// The controller's tag set and I/O queues, once they exist.
fn io_queues<'c, 'a>(
    ctrl: &'c Controller<'a>,
) -> Result<(*mut bindings::blk_mq_tag_set, &'c [Pin<KBox<IoQueue<'a>>>])> {
    let set = ctrl.tag_set().ok_or(ENODEV)?;
    // SAFETY: The driver's tag set, made by `tagset::alloc_tag_set`; it and its queues outlive the
    // controller's use (the driver drops them after it stopped resetting: `set_removing`).
    Ok((set, unsafe { tagset::queues_of(set) }))
}

fn stop_locked(ctrl: &Controller<'_>, how: Stop) -> Result {
    let (set, queues) = io_queues(ctrl)?;
    if ctrl.is_dead() || ctrl.is_removing() {
        return Err(ENODEV);
    }
    {
        // Under the admin lock: whoever sends an admin command after this sees the reset (and
        // does not send one to a disabled controller); one in progress finishes first.
        let _admin = ctrl.admin.lock();
        ctrl.set_resetting(true);
    }
    // SAFETY: A live tag set. `queue_rq` calls running now finish first; later ones wait for
    // `start`'s unquiesce.
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
    for queue in queues {
        // SAFETY: Once per queue, with the cancel lock held and the controller disabled;
        // `start_locked` resumes them (a stop is always followed by a start: `reset`, or the wake
        // from sleep).
        unsafe { queue.stop_for_reset() };
    }
    // SAFETY: The tag set is live; the controller and the interrupts are disabled, what was
    // posted is completed, and the cancel lock is held.
    let requeued = unsafe { timeout::requeue_all(set) };
    dev_info!(
        ctrl.pdev,
        "reset: {} commands in flight sent again\n",
        requeued
    );
    ctrl.counters
        .requeued_commands
        .fetch_add(requeued as u64, Ordering::Relaxed);
    Ok(())
}

fn start_locked(ctrl: &Controller<'_>) -> Result {
    let (set, queues) = io_queues(ctrl)?;
    if !ctrl.is_resetting() {
        return Ok(());
    }
    let result = start_queues(ctrl, queues);
    if let Err(e) = result {
        dev_err!(ctrl.pdev, "controller did not restart ({:?})\n", e);
        ctrl.kill();
    }
    for queue in queues {
        // SAFETY: Stopped by `stop_locked` (`resetting`, checked above, says it ran).
        unsafe { queue.resume_interrupts() };
    }
    ctrl.set_resetting(false);
    // SAFETY: Quiesced by `stop`. The requests given back are dispatched from here on.
    unsafe { bindings::blk_mq_unquiesce_tagset(set) };
    if result.is_ok() {
        // The controller forgot its asynchronous event setup; its namespaces may have changed.
        ctrl.wake_async_events(true);
    }
    result
}

/// Enables the controller and creates its I/O queues again.
fn start_queues(ctrl: &Controller<'_>, queues: &[Pin<KBox<IoQueue<'_>>>]) -> Result {
    if ctrl.is_dead() {
        // Killed meanwhile (an admin command that timed out): it stays disabled.
        return Err(ENODEV);
    }
    // SAFETY: Dispatch is stopped and the interrupts disabled (`stop`): no doorbell rings.
    let shadow_doorbells = unsafe { ctrl.forget_shadow_doorbells() }?;
    ctrl.restart()?;
    let count = queues.len() as u16;
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
    for queue in queues {
        // SAFETY: Between `stop_for_reset` and `resume_interrupts`.
        unsafe { queue.recreate() }?;
    }
    if shadow_doorbells {
        ctrl.offer_shadow_doorbells();
    }
    // An offer that timed out killed it.
    if ctrl.is_dead() {
        return Err(ENODEV);
    }
    Ok(())
}
