// SPDX-License-Identifier: GPL-2.0

//! The I/O timeout handler (a lost interrupt, a lost completion, a stuck command: abort, then
//! reset), and what a reset or a dead controller does to every request in flight.

use core::sync::atomic::Ordering;

use kernel::{bindings, prelude::*};

use crate::blk::{self, Request, Status, TimeoutAction};
use crate::command;
use crate::controller::Controller;
use crate::io::IoQueue;
use crate::regs;
use crate::request::Pdu;

/// A request took too long: find out why and make sure it ends.
pub(crate) fn handle_timeout(queue: &IoQueue<'_>, rq: &Request<Pdu<'_>>) -> TimeoutAction {
    let ctrl = &queue.ctrl;
    if ctrl.is_dead() {
        // Once the controller is dead only the cancelling ends requests (as the C driver leaves
        // them to `nvme_dev_disable`): it has ended this one, or will. `kill` is done at once when
        // it ran before.
        dev_warn!(
            ctrl.pdev,
            "I/O {} QID {} timed out on a dead controller\n",
            rq.tag(),
            queue.qid
        );
        ctrl.counters.dead_timeouts.fetch_add(1, Ordering::Relaxed);
        ctrl.kill();
        return TimeoutAction::Done;
    }
    // A reset in progress sends the command again or ends it; one that starts while this handler
    // runs is seen by `reset_since`.
    if ctrl.is_resetting() {
        return TimeoutAction::ResetTimer;
    }
    let resets = ctrl.resets();
    let reset_since = || ctrl.is_resetting() || ctrl.resets() != resets;
    // As C's `nvme_timeout`, the controller's status first: gone from the bus, or in fatal
    // status, it completes nothing more.
    let csts = ctrl.status();
    if csts == regs::GONE {
        dev_warn!(
            ctrl.pdev,
            "I/O {} QID {} timed out; controller gone (CSTS reads all ones)\n",
            rq.tag(),
            queue.qid
        );
        ctrl.kill();
        return TimeoutAction::Done;
    }
    if csts & regs::CSTS_CFS != 0 {
        dev_warn!(
            ctrl.pdev,
            "I/O {} QID {} timed out; controller fatal status (CSTS {:#x}), resetting\n",
            rq.tag(),
            queue.qid,
            csts
        );
        return reset_after_timeout(ctrl, resets);
    }
    // SAFETY: Only the atomics are read while the request may still complete elsewhere.
    let pdu = unsafe { &*rq.pdu() };
    let posted_before = pdu.device_done.load(Ordering::Acquire);
    // A completion whose interrupt was lost.
    queue.poll_completions();
    // Ended by that poll, the interrupt handler or the cancelling (a batch completion goes straight
    // back to idle): only a request still in flight is this handler's to finish, as in C.
    if !rq.is_in_flight() {
        if !posted_before && pdu.device_done.load(Ordering::Acquire) {
            dev_warn!(
                ctrl.pdev,
                "I/O {} QID {} timed out, completion polled\n",
                rq.tag(),
                queue.qid
            );
            ctrl.counters
                .polled_timeouts
                .fetch_add(1, Ordering::Relaxed);
        }
        return TimeoutAction::Done;
    }
    // Not `device_done`: a request whose completion an interrupt handler is taking right now (it
    // stays in flight until its batch ends) has that set too, and is that handler's to end.
    if pdu.completion_lost.load(Ordering::Acquire) {
        // The controller is done with the data, but the completion was lost (fault injection):
        // nothing else ends the request but a cancelling, which this lock keeps out.
        let _cancelling = ctrl.cancel_lock.lock();
        if !rq.is_in_flight() {
            return TimeoutAction::Done;
        }
        if reset_since() {
            // A reset (under this lock) took it and sent it again: in flight, but another
            // submission, which the controller holds.
            return TimeoutAction::ResetTimer;
        }
        dev_warn!(
            ctrl.pdev,
            "I/O {} QID {} timed out after completion\n",
            rq.tag(),
            queue.qid
        );
        // SAFETY: Done on the controller, in flight, and the cancel lock keeps everything else
        // that ends requests away: the data is this handler's.
        unsafe { pdu.data() }.release();
        pdu.retries.store(0, Ordering::Relaxed);
        rq.end(Status::TIMEOUT);
        return TimeoutAction::Done;
    }
    if !pdu.aborted.swap(true, Ordering::AcqRel) {
        dev_warn!(
            ctrl.pdev,
            "I/O {} QID {} timed out, aborting\n",
            rq.tag(),
            queue.qid
        );
        let cid = pdu.command_id(rq);
        // Not to a controller that a reset took the command from (the reset marks itself under
        // the admin lock).
        let aborting = ctrl.admin_command(|admin, bar| {
            if reset_since() {
                return Err(EBUSY);
            }
            admin.abort(bar, queue.qid, cid)
        });
        if !matches!(aborting, Ok(true)) {
            dev_warn!(
                ctrl.pdev,
                "I/O {} QID {} not aborted\n",
                rq.tag(),
                queue.qid
            );
        }
        // As in C, the command gets another timeout period whatever the answer: it completes
        // (as "Command Abort Requested", or at last), or times out again.
        return TimeoutAction::ResetTimer;
    }
    if reset_since() {
        // A reset took the command from the controller, and sends it again or ends it.
        return TimeoutAction::ResetTimer;
    }
    // Timed out again after the abort: reset the controller, which takes this command and every
    // other from it and sends them again (C's "I/O timeout, reset controller").
    dev_warn!(
        ctrl.pdev,
        "I/O {} QID {} timed out again, resetting the controller\n",
        rq.tag(),
        queue.qid
    );
    ctrl.counters.timeout_resets.fetch_add(1, Ordering::Relaxed);
    reset_after_timeout(ctrl, resets)
}

/// A timeout handler's reset, unless a reset began since the reset count was `resets`, or the
/// driver is letting go of the controller, whose requests then all end.
fn reset_after_timeout(ctrl: &Controller<'_>, resets: u32) -> TimeoutAction {
    if ctrl.is_removing() {
        // The driver is letting go of the controller: no reset, end everything.
        ctrl.kill();
        return TimeoutAction::Done;
    }
    match ctrl.reset_unless_since(resets) {
        // Asleep: the wake sends the command again.
        Err(e) if e == EBUSY => TimeoutAction::ResetTimer,
        // Nothing to reset: the controller died, or the driver began letting go of it since the
        // check above. The cancelling ends the command (at once if it ran already).
        Err(e) if e == ENODEV => {
            ctrl.kill();
            TimeoutAction::Done
        }
        // Sent again, or (a reset that failed kills the controller) ended.
        _ => TimeoutAction::Done,
    }
}

/// Hands every request of `set` still in flight to the completion path, which sends it again
/// ([`MAX_RETRIES`] times at most, then ends it with an error): a reset took the commands from the
/// controller. Returns how many.
///
/// # Safety
///
/// `set` is the live tag set of this driver's I/O queues; the controller is disabled, and every
/// queue's interrupt disabled with what it posted completed ([`IoQueue::stop_for_reset`]); the
/// caller holds the cancel lock. So nothing else ends these requests meanwhile.
pub(crate) unsafe fn requeue_all(set: *mut bindings::blk_mq_tag_set) -> usize {
    let mut count = 0;
    let requeue = |rq: &Request<Pdu<'_>>| {
        if !rq.is_in_flight() {
            return;
        }
        count += 1;
        // SAFETY: The pdu was initialised by `init_request`; only its atomics are shared.
        let pdu = unsafe { &*rq.pdu() };
        pdu.status
            .store(command::SC_HOST_ABORTED, Ordering::Relaxed);
        pdu.requeue.store(true, Ordering::Relaxed);
        pdu.device_done.store(true, Ordering::Release);
        rq.complete_now();
    };
    // SAFETY: By the function's safety requirement.
    unsafe { blk::for_each_busy_raw(set, requeue) };
    count
}

/// Ends every request of `set` that is still in flight with "host aborted". The controller is
/// disabled, no interrupt handler runs, and the caller holds the controller's cancel lock.
///
/// # Safety
///
/// `set` is the live tag set of this driver's I/O queues.
pub(crate) unsafe fn cancel_all(set: *mut bindings::blk_mq_tag_set) {
    let cancel = |rq: &Request<Pdu<'_>>| {
        // Completed or ended already (by the interrupt handler before it stopped, a poll or a
        // timeout handler, all of which finished before the caller took the cancel lock).
        if !rq.is_in_flight() {
            return;
        }
        // SAFETY: The pdu was initialised by `init_request`; only its atomics are shared.
        let pdu = unsafe { &*rq.pdu() };
        pdu.status
            .store(command::SC_HOST_ABORTED, Ordering::Relaxed);
        pdu.device_done.store(true, Ordering::Release);
        // Even a request whose completion fault injection would lose: nothing else ends it now.
        rq.complete_now();
    };
    // SAFETY: By the function's safety requirement.
    unsafe { blk::for_each_busy_raw(set, cancel) };
}
