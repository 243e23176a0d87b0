// SPDX-License-Identifier: GPL-2.0

//! From a request to a command on a submission queue: the NVM command built, the request's data
//! mapped segment by segment with `dma_local::Mapping` and described to the controller with PRPs
//! (`prp.rs`) or an SGL (`sgl.rs`), whose lists are blocks of the controller's `dma_local` pool;
//! and passthrough I/O commands sent as driver-private requests.

use core::sync::atomic::Ordering;

use kernel::prelude::*;

use crate::blk::{self, Op, Piece, Request, Status};
use crate::command::{
    self, dsm_range, Command, DatasetManagement, Flush, LbaRange, Read, Write, WriteZeroes,
};
use crate::dma_local::{Attrs, Direction, Gfp, Mapping};
use crate::io::{DataPointer, IoQueue};
use crate::namespace::Namespace;
use crate::prp;
use crate::request::{command_id, Pdu, PduData, GENERATION_MASK};
use crate::sgl;

/// Builds the command for `rq`, starts it and queues it; the doorbell rings at the end of a batch
/// (`last`, or `commit_rqs`).
pub(crate) fn submit<'a>(
    queue: &'a IoQueue<'a>,
    ns: &Namespace,
    rq: &Request<Pdu<'a>>,
    last: bool,
) -> Result<(), Status> {
    // A namespace formatted to what the driver does not serve gets nothing: the controller would
    // move a block size or metadata that no mapping describes.
    if queue.ctrl.is_dead() || !ns.is_usable() {
        return Err(Status::IOERR);
    }
    let (command, data_pointer) = {
        // SAFETY: The pdu was initialised by `init_request`.
        let pdu = unsafe { &*rq.pdu() };
        pdu.status.store(0, Ordering::Relaxed);
        pdu.device_done.store(false, Ordering::Relaxed);
        pdu.completion_lost.store(false, Ordering::Relaxed);
        pdu.aborted.store(false, Ordering::Relaxed);
        let generation = pdu.generation.load(Ordering::Relaxed).wrapping_add(1) & GENERATION_MASK;
        pdu.generation.store(generation, Ordering::Relaxed);
        // SAFETY: blk-mq gave the request to the driver, and the controller has not seen it: the
        // data is the submitter's.
        let data = unsafe { pdu.data() };
        match prepare(queue, ns, rq, data) {
            Ok((mut command, pointer)) => {
                command.set_cid(command_id(rq.tag(), generation));
                (command, pointer)
            }
            Err(status) => {
                data.release();
                return Err(status);
            }
        }
    };
    // `Controller::kill` waits for this call before it cancels what is in flight: the request is
    // started by then, and the controller still enabled.
    rq.start();
    let mut sq = queue.sq.lock();
    if sq.push(command).is_err() {
        // Not queued: the request is still the driver's to fail, with its data released. What
        // earlier calls of the batch queued still goes to the controller.
        let _ = sq.ring_doorbell(&queue.ctrl.bar, queue.ctrl.shadow_doorbells());
        drop(sq);
        // SAFETY: Not on the queue, so the controller never saw it: the data is still the
        // submitter's. The pdu was initialised by `init_request`.
        unsafe { (*rq.pdu()).data() }.release();
        return Err(Status::IOERR);
    }
    queue.count_queued(&command, data_pointer);
    if last
        && sq
            .ring_doorbell(&queue.ctrl.bar, queue.ctrl.shadow_doorbells())
            .is_err()
    {
        // The command is on the queue, so the request must not be failed here: the controller
        // fetches it at the next doorbell, or the timeout handler finishes it.
        dev_warn!(queue.ctrl.pdev, "QID {} doorbell write failed\n", queue.qid);
    }
    Ok(())
}

/// `rq`'s logical blocks, which a command holds (the disk's limits keep requests within its 16
/// bits of block count).
#[inline]
fn lba_range(ns: &Namespace, rq: &Request<Pdu<'_>>) -> Result<LbaRange, Status> {
    LbaRange::new(ns.nsid, ns.first_block(rq), ns.block_count(rq)).ok_or(Status::IOERR)
}

/// Whether atomic write `rq` lies within the disk's atomic write limits. NVMe has no atomic write
/// command: the controller keeps any write that does whole, and silently splits one that does not.
/// The block layer sends only writes that fit; this is the C driver's check that it did.
fn fits_atomic_write(rq: &Request<Pdu<'_>>) -> bool {
    let (unit_max, boundary) = rq.atomic_write_limits();
    let bytes = rq.bytes();
    let start = rq.sector() << 9;
    let last = start + u64::from(bytes.max(1)) - 1;
    bytes <= unit_max
        && (boundary == 0
            || (bytes <= boundary && start / u64::from(boundary) == last / u64::from(boundary)))
}

/// The command for `rq` (without its command identifier), with its data mapped into `pdu`.
fn prepare<'a>(
    queue: &'a IoQueue<'a>,
    ns: &Namespace,
    rq: &Request<Pdu<'a>>,
    pdu: &mut PduData<'a>,
) -> Result<(Command, DataPointer), Status> {
    Ok(match rq.op() {
        Op::Flush => (Flush { nsid: ns.nsid }.into(), DataPointer::None),
        Op::WriteZeroes => (
            WriteZeroes {
                range: lba_range(ns, rq)?,
            }
            .into(),
            DataPointer::None,
        ),
        Op::Discard => {
            let mut ranges = queue
                .ctrl
                .list_pool
                .alloc(Gfp::ATOMIC | Gfp::NOWARN)
                .map_err(|_| Status::RESOURCE)?;
            // Each range: context attributes (none) and length in logical blocks, then the
            // starting LBA. The rest of the block stays zero.
            let mut write_range = |index: usize, first_block: u64, blocks: u32| {
                let [first, second] = dsm_range(first_block, blocks);
                ranges
                    .write(2 * index, first)
                    .and_then(|()| ranges.write(2 * index + 1, second))
                    .map_err(|_| Status::IOERR)
            };
            // The block layer counts a discard's bios as its segments (one where the disk takes
            // one range: then adjacent discards merge into it).
            let count = rq.discard_segments();
            let mut written = 0usize;
            if rq.multi_range_discards() {
                for (sector, bytes) in rq.bio_ranges() {
                    if written < usize::from(count) {
                        write_range(
                            written,
                            sector >> (ns.lba_shift() - 9),
                            bytes >> ns.lba_shift(),
                        )?;
                    }
                    written += 1;
                }
            } else {
                write_range(0, ns.first_block(rq), ns.block_count(rq))?;
                written = 1;
            }
            if written != usize::from(count) {
                return Err(Status::IOERR);
            }
            let command = DatasetManagement {
                nsid: ns.nsid,
                prp1: ranges.dma_handle(),
                nr: count,
                ad: true,
            }
            .into();
            pdu.list = Some(ranges);
            (command, DataPointer::None)
        }
        op @ (Op::Read | Op::Write) => {
            let bytes = rq.bytes();
            let range = lba_range(ns, rq)?;
            if rq.is_atomic() && !fits_atomic_write(rq) {
                return Err(Status::INVAL);
            }
            let fua = rq.is_fua();
            let (mut command, dir): (Command, _) = if op == Op::Read {
                (Read { range, fua }.into(), Direction::FromDevice)
            } else {
                (Write { range, fua }.into(), Direction::ToDevice)
            };
            let segments = map_data(queue, rq, pdu, dir)?;
            // Like the C driver: PRPs describe every page, an SGL every segment, which costs the
            // controller less when segments are large, and describes segments that start or end
            // inside a page, which the disk allows when the controller has SGLs.
            let average = bytes as usize / segments;
            let sgl_first = queue
                .sgl_threshold
                .is_some_and(|threshold| average >= threshold);
            let pool = &queue.ctrl.list_pool;
            let prps = if sgl_first {
                None
            } else {
                prp::build(pool, pdu.single_mapping(), pdu.mappings())?
            };
            let pointer = if let Some(prps) = prps {
                command.set_prps(prps.prp1, prps.prp2);
                pdu.list = prps.list;
                DataPointer::Prps
            } else if queue.sgl_threshold.is_some() {
                let sgl = sgl::build(pool, pdu.single_mapping(), pdu.mappings())?;
                command.set_sgl(sgl.sgl1);
                pdu.list = sgl.list;
                DataPointer::Sgl
            } else {
                // Not reached: without SGLs the disk's virtual boundary keeps such data apart.
                return Err(Status::IOERR);
            };
            (command, pointer)
        }
        Op::Driver => {
            // SAFETY: Set by `execute_user_command`, whose command outlives the request.
            let command = unsafe { pdu.user_command.as_ref() }.ok_or(Status::IOERR)?;
            (*command, DataPointer::None)
        }
        Op::Other(_) => return Err(Status::NOTSUPP),
    })
}

/// What a passthrough I/O command ended with.
pub(crate) enum UserCompletion {
    /// The controller completed it: its status field (0 for success) and result (DW0, DW1).
    Completed { status: u16, result: u64 },
    /// The driver took it from the controller: a reset, a dead controller.
    Cancelled,
    /// It did not reach the controller (an unusable namespace, no resources), or a timeout ended
    /// it.
    Failed,
}

/// Sends `command` (its data pointer set) to namespace `disk` as a driver-private request, waiting
/// at most `timeout_ms` (0: the queue's timeout), and waits for it to end. The memory `command`
/// points to must stay until this returns.
pub(crate) fn execute_user_command(
    disk: &blk::Disk,
    command: &Command,
    to_device: bool,
    timeout_ms: u32,
) -> Result<UserCompletion> {
    let mut request = blk::DriverRequest::<Pdu<'_>>::new(disk, to_device)?;
    // At most as long as an admin command's wait.
    request.set_timeout_ms(timeout_ms.min(crate::admin::MAX_USER_TIMEOUT_MS as u32));
    {
        // SAFETY: Allocated and not executed: the request, and its data, are this caller's.
        let data = unsafe { (*request.request().pdu()).data() };
        data.user_command = command;
    }
    // The request's own status says less than its pdu: which NVMe status, or none at all.
    request.execute();
    // SAFETY: Ended: the pdu is this caller's again; only its atomics are read.
    let pdu = unsafe { &*request.request().pdu() };
    // SAFETY: As above.
    unsafe { pdu.data() }.user_command = core::ptr::null();
    let nvme_status = pdu.status.load(Ordering::Relaxed);
    Ok(if !pdu.device_done.load(Ordering::Acquire) {
        UserCompletion::Failed
    } else if nvme_status == command::SC_HOST_ABORTED {
        UserCompletion::Cancelled
    } else {
        UserCompletion::Completed {
            status: nvme_status,
            result: pdu.result.load(Ordering::Relaxed),
        }
    })
}

/// Maps the request's data for the device, one mapping for each run of pieces that follow each
/// other in memory (the segments `blk_rq_map_sg` would make, without its size limits, which are
/// the scatterlist's); returns how many mappings there are.
fn map_data<'a>(
    queue: &'a IoQueue<'a>,
    rq: &Request<Pdu<'a>>,
    pdu: &mut PduData<'a>,
    dir: Direction,
) -> Result<usize, Status> {
    let mut pieces = rq.data();
    let first = pieces.next().ok_or(Status::IOERR)?;
    let total = rq.bytes() as usize;
    if first.len == total {
        // Most small requests: one piece holds all of the data.
        // SAFETY: The request's data, as `map_run` requires.
        pdu.first = Some(unsafe { map_run(queue, first, dir) }?);
        return Ok(1);
    }
    pdu.make_room()?;
    let mut slots = pdu.slots();
    let mut mapped = 0;
    let mut map = |run: Piece| -> Result<(), Status> {
        let slot = slots.next().ok_or(Status::IOERR)?;
        // SAFETY: A run of the request's data, as `map_run` requires.
        *slot = Some(unsafe { map_run(queue, run, dir) }?);
        mapped += 1;
        Ok(())
    };
    let mut bytes = first.len;
    let mut run = first;
    let mut run_end = first.address().wrapping_add(first.len);
    for piece in pieces {
        bytes += piece.len;
        let start = piece.address();
        if start == run_end {
            run.len += piece.len;
        } else {
            map(core::mem::replace(&mut run, piece))?;
        }
        run_end = start.wrapping_add(piece.len);
    }
    map(run)?;
    if bytes != total {
        return Err(Status::IOERR);
    }
    Ok(mapped)
}

/// Maps `run` for the device: a piece of a request's data, or pieces that follow it in memory.
///
/// # Safety
///
/// `run` is data of a request that the driver holds: page-allocator memory that blk-mq keeps alive
/// and leaves to the driver until the request ends. The mapping must be dropped (by
/// `Pdu::release`) before that.
#[inline]
unsafe fn map_run<'a>(
    queue: &'a IoQueue<'a>,
    run: Piece,
    dir: Direction,
) -> Result<Mapping<'a>, Status> {
    // SAFETY: By the function's safety requirement.
    unsafe { Mapping::from_page(queue.dev, run.page, run.offset, run.len, dir, Attrs::NONE) }
        .map_err(|_| Status::RESOURCE)
}
