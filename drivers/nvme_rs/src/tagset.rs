// SPDX-License-Identifier: GPL-2.0

//! The I/O tag set and the blk-mq callbacks that drive it: a hardware queue per I/O queue pair,
//! requests turned into commands ([`crate::submit`]), timeouts ([`crate::timeout`]).

use core::sync::atomic::Ordering;

use kernel::{
    bindings,
    ffi::{c_int, c_uint, c_void},
    prelude::*,
    time::msecs_to_jiffies,
};

use crate::blk::{Request, Status, TagSet, TagSetConfig};
use crate::compat::param;
use crate::io::IoQueue;
use crate::namespace::Namespace;
use crate::request::{complete, exit_request, init_request, Pdu, PDU_SIZE};
use crate::submit::submit;
use crate::timeout::handle_timeout;

/// The I/O timeout in jiffies (`io_timeout`, 0 being blk-mq's default of 30 s): how long a
/// request may take, and so how long waiting for the requests in flight may take.
pub(crate) fn timeout_jiffies() -> kernel::ffi::c_ulong {
    let seconds = match param(&crate::module_parameters::io_timeout) {
        0 => 30,
        seconds => seconds,
    };
    msecs_to_jiffies(seconds.saturating_mul(1000))
}

/// The tag set of the I/O queues `queues` (at least one): a hardware queue for each, with one tag
/// fewer than its entries, and the `io_timeout` parameter.
pub(crate) fn alloc_tag_set(queues: &KVec<Pin<KBox<IoQueue<'_>>>>) -> Result<TagSet> {
    let depth = queues[0].depth();
    TagSet::new(TagSetConfig {
        ops: &MQ_OPS,
        nr_hw_queues: queues.len() as u32,
        queue_depth: u32::from(depth - 1),
        cmd_size: PDU_SIZE as u32,
        // `init_hctx` indexes this array, which does not change until the tag set is gone.
        driver_data: queues.as_ptr().cast_mut().cast::<c_void>(),
        timeout: u32::try_from(msecs_to_jiffies(
            param(&crate::module_parameters::io_timeout).saturating_mul(1000),
        ))
        .unwrap_or(u32::MAX),
    })
}

/// The I/O queues of `set`, a tag set made by [`alloc_tag_set`]: its driver data is their array.
///
/// # Safety
///
/// `set` is such a tag set, live, and the queues it was made with outlive `'s` unchanged (the
/// driver drops the set before them, and changes neither meanwhile).
pub(crate) unsafe fn queues_of<'s, 'a>(
    set: *mut bindings::blk_mq_tag_set,
) -> &'s [Pin<KBox<IoQueue<'a>>>] {
    // SAFETY: By the function's safety requirement, `driver_data` is the first of `nr_hw_queues`
    // queues (`alloc_tag_set`), live for `'s`.
    unsafe {
        core::slice::from_raw_parts(
            (*set).driver_data.cast::<Pin<KBox<IoQueue<'a>>>>(),
            (*set).nr_hw_queues as usize,
        )
    }
}

/// The blk-mq operations of every nvme_rs disk.
pub(crate) static MQ_OPS: bindings::blk_mq_ops = bindings::blk_mq_ops {
    queue_rq: Some(queue_rq),
    commit_rqs: Some(commit_rqs),
    complete: Some(complete),
    timeout: Some(timeout),
    init_hctx: Some(init_hctx),
    init_request: Some(init_request),
    exit_request: Some(exit_request),
    // SAFETY: All-zeroes is "no callback" for every other field.
    ..unsafe { core::mem::zeroed() }
};

/// # Safety
///
/// Called by blk-mq for hardware queue `index` of a tag set whose `driver_data` is the first of
/// `nr_hw_queues` live `Pin<KBox<IoQueue>>`, one per hardware queue.
unsafe extern "C" fn init_hctx(
    hctx: *mut bindings::blk_mq_hw_ctx,
    data: *mut c_void,
    index: c_uint,
) -> c_int {
    // SAFETY: By the function's safety requirement, and `index < nr_hw_queues`.
    let queue: &IoQueue<'_> =
        unsafe { &*data.cast::<Pin<KBox<IoQueue<'_>>>>().add(index as usize) };
    // SAFETY: `hctx` is live; its tags are set before `init_hctx`.
    unsafe {
        queue.tags.store((*hctx).tags, Ordering::Release);
        (*hctx).driver_data = core::ptr::from_ref::<IoQueue<'_>>(queue).cast_mut().cast();
    }
    0
}

/// # Safety
///
/// Called by blk-mq with a live hardware context set up by `init_hctx` and a request of a disk
/// whose `queuedata` is a live [`Namespace`].
unsafe extern "C" fn queue_rq(
    hctx: *mut bindings::blk_mq_hw_ctx,
    bd: *const bindings::blk_mq_queue_data,
) -> bindings::blk_status_t {
    // SAFETY: By the function's safety requirement.
    let (queue, rq) = unsafe {
        (
            &*(*hctx).driver_data.cast::<IoQueue<'_>>(),
            Request::<Pdu<'_>>::from_raw((*bd).rq),
        )
    };
    // SAFETY: As above.
    let ns = unsafe { &*rq.queue_data().cast::<Namespace>() };
    // SAFETY: As above.
    let last = unsafe { (*bd).last };
    match submit(queue, ns, rq, last) {
        Ok(()) => Status::OK.raw(),
        Err(status) => status.raw(),
    }
}

/// # Safety
///
/// Called by blk-mq with a live hardware context set up by `init_hctx`.
unsafe extern "C" fn commit_rqs(hctx: *mut bindings::blk_mq_hw_ctx) {
    // SAFETY: By the function's safety requirement.
    let queue = unsafe { &*(*hctx).driver_data.cast::<IoQueue<'_>>() };
    // blk-mq ends a batch here when it could not say "last" on the final `queue_rq`.
    let _ = queue
        .sq
        .lock()
        .ring_doorbell(&queue.ctrl.bar, queue.ctrl.shadow_doorbells());
}

/// # Safety
///
/// Called by blk-mq's timeout work (which may sleep) for a started request of an `init_hctx`-ed
/// hardware queue.
unsafe extern "C" fn timeout(rq: *mut bindings::request) -> bindings::blk_eh_timer_return {
    // SAFETY: By the function's safety requirement.
    let (queue, rq) = unsafe {
        (
            &*(*(*rq).mq_hctx).driver_data.cast::<IoQueue<'_>>(),
            Request::<Pdu<'_>>::from_raw(rq),
        )
    };
    handle_timeout(queue, rq).raw()
}
