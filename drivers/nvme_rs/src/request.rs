// SPDX-License-Identifier: GPL-2.0

//! A request's driver data ([`Pdu`]): its command identifier, its data's mappings and list until
//! it completes, and how a request ends (sent again, or ended with its status).

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, AtomicU8, Ordering};

use kernel::{
    bindings,
    ffi::{c_int, c_uint, c_void},
    prelude::*,
};

use crate::blk::{self, Op, Request, Status};
use crate::command::{self, Command};
use crate::dma_local::{Mapping, PoolBlock};
use crate::prp::MAX_SEGMENTS;

/// A command identifier is the request's tag in its low 12 bits (queues hold at most 4,095
/// entries) and the request's generation, counted up at every submission, in the high 4 (C's
/// `nvme_cid`): a stale or duplicated completion names a generation the request has left.
pub(crate) const CID_TAG_BITS: u32 = 12;
pub(crate) const CID_TAG_MASK: u16 = (1 << CID_TAG_BITS) - 1;
pub(crate) const GENERATION_MASK: u8 = 0xf;

/// The command identifier of a request's current submission.
pub(crate) fn command_id(tag: u16, generation: u8) -> u16 {
    (tag & CID_TAG_MASK) | (u16::from(generation & GENERATION_MASK) << CID_TAG_BITS)
}

/// The driver's data in every request.
///
/// It is kept small, so that the data blk-mq allocates next to each request stays compact: the
/// mappings of a second segment and later ones live out of line, allocated the first time the
/// request has them, and most requests have only one.
///
/// Threads share it: the submitter, the completion path and the timeout handler each hold a
/// `&Pdu` and use the atomics, and whichever owns the request at a time (the submitter until the
/// command is queued, then whoever ends the request) reaches the mappings through `data`. No
/// `&mut Pdu` is ever made, as one would assert that no other thread reads the atomics meanwhile.
pub(crate) struct Pdu<'a> {
    /// The request's DMA state; see [`PduData`] for who may touch it and when.
    data: UnsafeCell<PduData<'a>>,
    /// The completion's status field.
    pub(crate) status: AtomicU16,
    /// The completion's command specific result, DW0 and DW1 (for passthrough).
    pub(crate) result: AtomicU64,
    /// The controller posted the completion.
    pub(crate) device_done: AtomicBool,
    /// The completion was taken but deliberately not completed (fault injection's lost
    /// completion): only the timeout handler or the cancelling ends the request now.
    pub(crate) completion_lost: AtomicBool,
    /// The timeout handler asked the controller to abort the command.
    pub(crate) aborted: AtomicBool,
    /// A reset took the command from the controller: the completion path gives the request back
    /// to blk-mq, to be sent again, unless it has been [`MAX_RETRIES`] times.
    pub(crate) requeue: AtomicBool,
    /// How many times a reset sent the request again; 0 again when it ends.
    pub(crate) retries: AtomicU8,
    /// The generation of the command identifier (see [`command_id`]); written at submission,
    /// read by the completion path, which may see a stale completion at any time.
    pub(crate) generation: AtomicU8,
}

/// The mappings and the list block of a request: reached through [`Pdu::data`] only by the one that
/// owns the request's data at the time (the submitter while it prepares the command, or whoever
/// ends the request once the controller is done with the data or never saw it).
///
/// # Invariants
///
/// - The mappings of the request's data are `first` and then the leading `Some` entries of `more`,
///   and `list` is its PRP list, SGL or DSM range, from submission to completion; all are empty
///   otherwise.
/// - `more` has no entries or `MAX_SEGMENTS - 1`.
pub(crate) struct PduData<'a> {
    pub(crate) first: Option<Mapping<'a>>,
    more: KVec<Option<Mapping<'a>>>,
    pub(crate) list: Option<PoolBlock<'a, 'a, u64>>,
    /// A passthrough request's command, data pointer included, which its submitter keeps alive
    /// until the request ends (`submit::execute_user_command`); null for other requests.
    pub(crate) user_command: *const Command,
}

impl<'a> Pdu<'a> {
    /// Per-request data with room for one mapping.
    fn new() -> Self {
        Self {
            data: UnsafeCell::new(PduData {
                first: None,
                more: KVec::new(),
                list: None,
                user_command: core::ptr::null(),
            }),
            status: AtomicU16::new(0),
            result: AtomicU64::new(0),
            device_done: AtomicBool::new(false),
            completion_lost: AtomicBool::new(false),
            aborted: AtomicBool::new(false),
            requeue: AtomicBool::new(false),
            retries: AtomicU8::new(0),
            generation: AtomicU8::new(0),
        }
    }

    /// The command identifier of `rq`'s current submission.
    pub(crate) fn command_id(&self, rq: &Request<Pdu<'_>>) -> u16 {
        command_id(rq.tag(), self.generation.load(Ordering::Relaxed))
    }

    /// The request's DMA state.
    ///
    /// # Safety
    ///
    /// The caller owns the request's data (see [`PduData`]): nothing else reaches it until the
    /// returned reference is gone.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn data(&self) -> &mut PduData<'a> {
        // SAFETY: Exclusive by the function's safety requirement; the cell holds valid data.
        unsafe { &mut *self.data.get() }
    }

    /// The status to end the request with.
    fn blk_status(&self) -> Status {
        match self.status.load(Ordering::Relaxed) {
            command::SC_SUCCESS => Status::OK,
            _ => Status::IOERR,
        }
    }
}

impl<'a> PduData<'a> {
    /// Makes room for `MAX_SEGMENTS` mappings, once per request: with up to 1,024 requests per
    /// queue, room for all of them in every request would take megabytes that most never use.
    pub(crate) fn make_room(&mut self) -> Result<(), Status> {
        if self.more.is_empty() {
            let mut more = KVec::with_capacity(MAX_SEGMENTS - 1, GFP_ATOMIC | __GFP_NOWARN)
                .map_err(|_| Status::RESOURCE)?;
            for _ in 1..MAX_SEGMENTS {
                more.push(None, GFP_ATOMIC).map_err(|_| Status::RESOURCE)?;
            }
            // INVARIANT: `MAX_SEGMENTS - 1` entries, all empty.
            self.more = more;
        }
        Ok(())
    }

    /// The `MAX_SEGMENTS` places for the request's mappings, in segment order; room for one
    /// until [`PduData::make_room`].
    pub(crate) fn slots(&mut self) -> impl Iterator<Item = &mut Option<Mapping<'a>>> {
        Iterator::chain(core::iter::once(&mut self.first), self.more.iter_mut())
    }

    /// The mappings of the request's data, in segment order.
    pub(crate) fn mappings(&self) -> impl Iterator<Item = &Mapping<'a>> {
        Iterator::chain(core::iter::once(&self.first), self.more.iter()).map_while(Option::as_ref)
    }

    /// The request's only mapping, when it has exactly one.
    pub(crate) fn single_mapping(&self) -> Option<&Mapping<'a>> {
        match (&self.first, self.more.first()) {
            (Some(map), None | Some(None)) => Some(map),
            _ => None,
        }
    }

    /// Unmaps the data and returns the PRP list to the pool.
    #[inline]
    pub(crate) fn release(&mut self) {
        if self.first.take().is_some() {
            for map in self.more.iter_mut() {
                if map.take().is_none() {
                    break;
                }
            }
        }
        self.list = None;
    }
}

/// The per-request data size for the tag set.
pub(crate) const PDU_SIZE: usize = core::mem::size_of::<Pdu<'static>>();

// The per-request data follows a `struct request` (see `init_request`).
const _: () = assert!(core::mem::align_of::<Pdu<'static>>() <= 8);

/// # Safety
///
/// Called by blk-mq with a request whose data area is `PDU_SIZE` bytes.
pub(crate) unsafe extern "C" fn init_request(
    _set: *mut bindings::blk_mq_tag_set,
    rq: *mut bindings::request,
    _hctx_index: c_uint,
    _numa_node: c_int,
) -> c_int {
    // SAFETY: The data area is ours, uninitialised and `PDU_SIZE` bytes long; it follows the
    // 8-byte aligned `struct request`, whose size is a multiple of 8, so it is aligned for a `Pdu`
    // (asserted at `PDU_SIZE`).
    unsafe { blk::pdu_of(rq).cast::<Pdu<'_>>().write(Pdu::new()) };
    0
}

/// # Safety
///
/// Called by blk-mq for a request initialised by `init_request`, no longer in use.
pub(crate) unsafe extern "C" fn exit_request(
    _set: *mut bindings::blk_mq_tag_set,
    rq: *mut bindings::request,
    _hctx_index: c_uint,
) {
    // SAFETY: By the function's safety requirement.
    unsafe { core::ptr::drop_in_place(blk::pdu_of(rq).cast::<Pdu<'_>>()) };
}

/// Ends a batch of successful requests (`CompletionBatch::complete`).
///
/// # Safety
///
/// `iob` is a batch of this driver's completed requests, which nothing else touches.
pub(crate) unsafe extern "C" fn complete_batch(iob: *mut c_void) {
    let release = |rq: &Request<Pdu<'_>>| {
        // SAFETY: The pdu was initialised by `init_request`.
        let pdu = unsafe { &*rq.pdu() };
        pdu.retries.store(0, Ordering::Relaxed);
        // SAFETY: Completed: the data is the completion's, nothing else touches it.
        unsafe { pdu.data() }.release()
    };
    // SAFETY: By the function's safety requirement.
    unsafe { blk::end_batch(iob, release) };
}

/// How many times a request is sent again after resets took it from the controller, as the C
/// driver's `nvme_core.max_retries`.
const MAX_RETRIES: u8 = 5;

/// # Safety
///
/// Called by blk-mq for a request that the driver handed to `blk_mq_complete_request`.
pub(crate) unsafe extern "C" fn complete(rq: *mut bindings::request) {
    // SAFETY: By the function's safety requirement; the request is the driver's again.
    let rq = unsafe { Request::<Pdu<'_>>::from_raw(rq) };
    // SAFETY: The pdu was initialised by `init_request`.
    let pdu = unsafe { &*rq.pdu() };
    // SAFETY: Completed: the data is the completion's, nothing else touches it.
    unsafe { pdu.data() }.release();
    // Sent again: a request a reset took from the controller, and, as C's
    // `nvme_decide_disposition`, one the controller failed without Do Not Retry (an Abort the
    // controller acted on, a transient error). Not a passthrough command, which C marks fail-fast:
    // its caller gets the status, or `EINTR` when a reset took it; nor one the host aborted.
    let status = pdu.status.load(Ordering::Relaxed);
    let passthrough = rq.op() == Op::Driver;
    let failed_transiently = status != command::SC_SUCCESS
        && status != command::SC_HOST_ABORTED
        && status & command::STATUS_DNR == 0;
    let reset_took_it = pdu.requeue.swap(false, Ordering::Relaxed);
    if !passthrough
        && (reset_took_it || failed_transiently)
        && pdu.retries.fetch_add(1, Ordering::Relaxed) < MAX_RETRIES
    {
        rq.requeue();
        return;
    }
    pdu.retries.store(0, Ordering::Relaxed);
    rq.end(pdu.blk_status());
}
