// SPDX-License-Identifier: GPL-2.0

//! The I/O path: I/O queue pairs, the blk-mq callbacks that turn requests into NVM commands, the
//! interrupt handler that completes them, and the timeout handler.
//!
//! A request's data is mapped segment by segment with `dma_local::Mapping`, and described to the
//! controller with PRPs (`prp.rs`) or an SGL (`sgl.rs`), whose lists are blocks of the
//! controller's `dma_local` pool. The mappings and the list live in the request's per-request
//! data ([`Pdu`]) until the request completes.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU16, AtomicU64, AtomicU8, Ordering};

use kernel::{
    bindings,
    cpu::CpuId,
    cpumask::{Cpumask, CpumaskVar},
    device::{Bound, Device},
    ffi::{c_int, c_uint, c_void},
    new_mutex, new_spinlock,
    prelude::*,
    sync::{Arc, Mutex, SpinLock},
    time::msecs_to_jiffies,
};

use crate::blk::{self, Op, Piece, Request, Status, TagSet, TagSetConfig, TimeoutAction};
use crate::command::{
    self, dsm_range, Command, DatasetManagement, Flush, LbaRange, Read, Write, WriteZeroes,
};
use crate::compat::{self, irqreturn, param};
use crate::controller::{Controller, MAX_IO_QUEUES};
use crate::counters::{bump, bump_by, QueueCounters};
use crate::dma_local::{Attrs, Direction, DmaAddress, Gfp, Mapping, PoolBlock};
use crate::faults::FaultPoint;
use crate::namespace::Namespace;
use crate::prp::{self, MAX_SEGMENTS};
use crate::queue::{doorbells, CompletionQueue, SubmissionQueue};
use crate::regs;
use crate::sgl;

/// A command identifier is the request's tag in its low 12 bits (queues hold at most 4,095
/// entries) and the request's generation, counted up at every submission, in the high 4 (C's
/// `nvme_cid`): a stale or duplicated completion names a generation the request has left.
const CID_TAG_BITS: u32 = 12;
const CID_TAG_MASK: u16 = (1 << CID_TAG_BITS) - 1;
const GENERATION_MASK: u8 = 0xf;

/// The command identifier of a request's current submission.
fn command_id(tag: u16, generation: u8) -> u16 {
    (tag & CID_TAG_MASK) | (u16::from(generation & GENERATION_MASK) << CID_TAG_BITS)
}

/// The entries of each I/O queue: the `io_queue_depth` parameter (2 to 4095, as in the C driver;
/// blk-mq gets one tag fewer, so a queue can never overflow), as far as the controller goes.
pub(crate) fn queue_depth(ctrl: &Controller<'_>) -> Result<u16> {
    let depth = param(&crate::module_parameters::io_queue_depth);
    if !(2..4096).contains(&depth) {
        dev_err!(ctrl.pdev, "io_queue_depth={} is not 2 to 4095\n", depth);
        return Err(EINVAL);
    }
    Ok(depth.min(ctrl.cap.max_queue_entries()) as u16)
}

/// Asks for one I/O queue pair per CPU (Set Features, Number of Queues), takes interrupt vectors
/// into `vectors`, vector 0 for the admin queue and one for each pair granted, and creates as many
/// pairs as there are vectors for them, of `depth` entries each, into `queues`. `sgls`: whether
/// the controller takes SGLs. Returns the admin queue's IRQ, unless the device has a single vector,
/// which the first I/O queue then shares (the admin queue's interrupts are not used then).
pub(crate) fn create_queues<'a>(
    ctrl: &Arc<Controller<'a>>,
    depth: u16,
    sgls: bool,
    vectors: &mut Option<compat::IrqVectors<'a>>,
    queues: &mut KVec<Pin<KBox<IoQueue<'a>>>>,
) -> Result<Option<u32>> {
    let sgl_threshold = sgls.then_some(match param(&crate::module_parameters::sgl_threshold) {
        0 => usize::MAX,
        bytes => bytes as usize,
    });
    // One I/O queue pair per CPU, as far as the controller and the interrupt vectors go.
    let wanted = kernel::cpu::nr_cpu_ids().clamp(1, MAX_IO_QUEUES as u32) as u16;
    let granted = ctrl.admin_command(|admin, bar| admin.set_number_of_queues(bar, wanted))?;
    // The vector the controller was enabled with goes first: a device's vectors are allocated
    // at once.
    *vectors = None;
    let vectors = vectors.insert(compat::alloc_irq_vectors(
        ctrl.pdev,
        1,
        u32::from(granted) + 1,
    )?);
    // Vector 0 is the admin queue's (the specification's choice) and, with only one, everyone's.
    let first_io_vector = usize::from(vectors.len() > 1);
    let count = usize::from(granted).min(vectors.len() - first_io_vector);
    queues.reserve(count, GFP_KERNEL)?;
    for index in 0..count {
        let vector = index + first_io_vector;
        let irq = compat::vector_irq(vectors, vector)?;
        let queue = IoQueue::new(
            ctrl.clone(),
            index as u16 + 1,
            depth,
            vector as u16,
            irq,
            sgl_threshold,
        )?;
        queues.push(queue, GFP_KERNEL)?;
    }
    match first_io_vector {
        0 => Ok(None),
        _ => compat::vector_irq(vectors, 0).map(Some),
    }
}

/// Creates I/O queue pair `qid` of `depth` entries on the controller, the CQ at `cq` first, its
/// completions interrupting on `vector`, then the SQ at `sq`. A timed-out creation resets or kills
/// the controller (`admin_command`), which disables it, before the queues' memory can go; a failed
/// SQ creation deletes the CQ again, or kills the controller if that fails.
fn create_pair(
    ctrl: &Controller<'_>,
    qid: u16,
    depth: u16,
    vector: u16,
    (sq, cq): (DmaAddress, DmaAddress),
) -> Result {
    ctrl.admin_command(|admin, bar| admin.create_io_cq(bar, qid, depth, cq, vector))?;
    if let Err(e) = ctrl.admin_command(|admin, bar| admin.create_io_sq(bar, qid, depth, sq)) {
        // There is no SQ, but the CQ lives on memory that goes with this error: delete it, or
        // stop the controller if that fails (C's `adapter_delete_cq` on this path).
        if ctrl
            .admin_command(|admin, bar| admin.delete_io_cq(bar, qid))
            .is_err()
        {
            ctrl.kill();
        }
        return Err(e);
    }
    Ok(())
}

/// The tag set of the I/O queues `queues` (at least one): a hardware queue for each, with one tag
/// fewer than its entries, and the `io_timeout` parameter.
/// The I/O timeout in jiffies (`io_timeout`, 0 being blk-mq's default of 30 s): how long a
/// request may take, and so how long waiting for the requests in flight may take.
pub(crate) fn timeout_jiffies() -> kernel::ffi::c_ulong {
    let seconds = match param(&crate::module_parameters::io_timeout) {
        0 => 30,
        seconds => seconds,
    };
    msecs_to_jiffies(seconds.saturating_mul(1000))
}

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

/// Steers each queue's interrupt to the CPUs that `tag_set` maps to its hardware queue.
pub(crate) fn steer_interrupts(tag_set: &TagSet, queues: &KVec<Pin<KBox<IoQueue<'_>>>>) -> Result {
    for (index, queue) in queues.iter().enumerate() {
        let mut cpus = CpumaskVar::new_zero(GFP_KERNEL)?;
        for cpu in 0..kernel::cpu::nr_cpu_ids() {
            if tag_set.hw_queue_of_cpu(cpu) == Some(index as u32) {
                cpus.set(CpuId::from_u32(cpu).ok_or(EINVAL)?);
            }
        }
        if cpus.weight() > 0 {
            queue.set_affinity(&cpus);
        }
    }
    Ok(())
}

/// An I/O submission and completion queue pair with its interrupt.
///
/// # Invariants
///
/// - `tags` is null or the tags of the blk-mq hardware queue served by this pair.
/// - While `irq_requested`, IRQ `irq` is requested with this pinned object as its cookie.
/// - `cq` is used only by the interrupt handler of IRQ `irq`, which the IRQ core never runs twice
///   at once, or by a holder of `poll_lock` while that IRQ is disabled
///   ([`Self::poll_completions`]), and only while `irq_requested`.
#[pin_data(PinnedDrop)]
pub(crate) struct IoQueue<'a> {
    ctrl: Arc<Controller<'a>>,
    /// `ctrl.pdev` as a `Device`, kept because the conversion is an out-of-line kernel-crate call
    /// that every mapping would otherwise make.
    dev: &'a Device<Bound>,
    qid: u16,
    #[pin]
    sq: SpinLock<SubmissionQueue<'a>>,
    /// No lock, as in the C driver: the interrupt handler owns it (see the invariants).
    cq: UnsafeCell<CompletionQueue<'a>>,
    /// Serialises the callers of [`Self::poll_completions`].
    #[pin]
    poll_lock: Mutex<()>,
    tags: AtomicPtr<bindings::blk_mq_tags>,
    /// Requests whose segments average at least this many bytes go to the controller as an SGL,
    /// which costs it less than a PRP per page (`usize::MAX`: only those that PRPs cannot
    /// describe); `None` when the controller has no SGLs.
    sgl_threshold: Option<usize>,
    /// What it sent and ignored, also shown in debugfs.
    counts: Arc<QueueCounters>,
    /// The MSI-X/MSI vector its completions interrupt on, and its Linux IRQ.
    vector: u16,
    irq: u32,
    irq_requested: AtomicBool,
}

impl<'a> IoQueue<'a> {
    /// Allocates queue pair `qid` of `depth` entries, creates it on the controller with
    /// completions interrupting on MSI-X/MSI `vector` (Linux IRQ `irq`), and requests the IRQ.
    pub(crate) fn new(
        ctrl: Arc<Controller<'a>>,
        qid: u16,
        depth: u16,
        vector: u16,
        irq: u32,
        sgl_threshold: Option<usize>,
    ) -> Result<Pin<KBox<Self>>> {
        let dev: &'a Device<Bound> = ctrl.pdev.as_ref();
        let (sq_doorbell, cq_doorbell) = doorbells(qid, ctrl.stride());
        let sq = SubmissionQueue::new(dev, depth, sq_doorbell)?;
        let cq = CompletionQueue::new(dev, depth, cq_doorbell)?;
        create_pair(
            &ctrl,
            qid,
            depth,
            vector,
            (sq.ring().dma_handle(), cq.ring().dma_handle()),
        )?;
        let queue = KBox::pin_init(
            try_pin_init!(Self {
                ctrl,
                dev,
                qid,
                sq <- new_spinlock!(sq, "nvme_rs:sq"),
                cq: UnsafeCell::new(cq),
                poll_lock <- new_mutex!((), "nvme_rs:poll"),
                tags: AtomicPtr::new(core::ptr::null_mut()),
                sgl_threshold,
                counts: QueueCounters::new()?,
                vector,
                irq,
                irq_requested: AtomicBool::new(false),
            }),
            GFP_KERNEL,
        )?;
        // SAFETY: `nvme_rs_irq` matches `irq_handler_t`; the cookie is the pinned queue, which
        // frees the IRQ in `PinnedDrop` before it goes.
        kernel::error::to_result(unsafe {
            bindings::request_threaded_irq(
                irq,
                Some(nvme_rs_irq),
                None,
                bindings::IRQF_SHARED as usize,
                c"nvme_rs".as_char_ptr(),
                core::ptr::from_ref(&*queue).cast_mut().cast(),
            )
        })?;
        // INVARIANT: requested above with this cookie.
        queue.irq_requested.store(true, Ordering::Release);
        queue.ctrl.add_irq(irq);
        Ok(queue)
    }

    /// The number of entries; blk-mq's queue depth is one less.
    pub(crate) fn depth(&self) -> u16 {
        self.sq.lock().ring().depth()
    }

    /// Steers the queue's interrupt to the CPUs that submit to it, so that completions need no
    /// inter-processor interrupt.
    pub(crate) fn set_affinity(&self, cpus: &Cpumask) {
        // SAFETY: A requested IRQ (type invariant) and a valid mask; the kernel copies it.
        let ret = unsafe { bindings::irq_set_affinity(self.irq, cpus.as_raw()) };
        if ret != 0 {
            dev_info!(
                self.ctrl.pdev,
                "queue {} keeps its IRQ affinity ({})\n",
                self.qid,
                ret
            );
        }
    }

    /// Counts `queued`, a command queued with `pointer`. Called under the `sq` lock: the
    /// counters' one writer.
    fn count_queued(&self, queued: &Command, pointer: DataPointer) {
        let counts = &*self.counts;
        match pointer {
            DataPointer::Prps => bump(&counts.prp_commands),
            DataPointer::Sgl => bump(&counts.sgl_commands),
            DataPointer::None => {
                if let Some(ranges) = queued.dsm_ranges() {
                    bump(&counts.dsm_commands);
                    bump_by(&counts.dsm_ranges, u64::from(ranges));
                }
                return;
            }
        }
        if queued.is_fua() {
            bump(&counts.fua_commands);
        }
    }

    /// What it sent and ignored.
    pub(crate) fn counts(&self) -> &Arc<QueueCounters> {
        &self.counts
    }

    /// The request completion `cid` names, if the controller may complete it now: a request of
    /// this queue, of that generation, in flight, whose completion was not seen yet. Anything else
    /// (a stale completion of an earlier submission, a duplicate, a command id the driver never
    /// sent) is counted, reported and ignored: completing it would end a request twice or end the
    /// wrong one.
    ///
    /// # Safety
    ///
    /// `tags` are this queue's blk-mq tags, and the caller owns the completion queue.
    #[inline]
    unsafe fn valid_request<'r>(
        &self,
        tags: *mut bindings::blk_mq_tags,
        cid: u16,
    ) -> Option<&'r Request<Pdu<'a>>> {
        // SAFETY: By the function's safety requirement; the requests carry a `Pdu`.
        let rq = unsafe { blk::tag_to_rq::<Pdu<'a>>(tags, cid & CID_TAG_MASK) };
        let valid = rq.filter(|rq| {
            // SAFETY: The pdu was initialised by `init_request`; only its atomics are read.
            let pdu = unsafe { &*rq.pdu() };
            pdu.command_id(rq) == cid
                && rq.is_in_flight()
                && !pdu.device_done.load(Ordering::Acquire)
        });
        if valid.is_none() {
            let ignored = self
                .counts
                .ignored_completions
                .fetch_add(1, Ordering::Relaxed);
            // A device that floods them gets a few lines, then only the count at removal.
            if ignored < 8 {
                dev_warn!(
                    self.ctrl.pdev,
                    "QID {}: ignored completion {:#x}: no request of that generation in flight\n",
                    self.qid,
                    cid
                );
            }
        }
        valid
    }

    /// For a reset, once the controller is disabled: disables the queue's interrupt (until
    /// [`Self::resume_interrupts`]), completes what the controller posted before it stopped, and
    /// ends or requeues what is still in flight ([`requeue_all`], which the caller runs after this
    /// on every queue).
    ///
    /// # Safety
    ///
    /// Called once per [`Self::resume_interrupts`], before it, by a reset that holds the cancel
    /// lock with the controller disabled.
    pub(crate) unsafe fn stop_for_reset(&self) {
        let _poller = self.poll_lock.lock();
        // SAFETY: A requested IRQ (`IoQueue::new` returns only a queue with its IRQ requested);
        // enabled again by `resume_interrupts`.
        unsafe { bindings::disable_irq(self.irq) };
        // SAFETY: The IRQ is disabled, which waited for a running handler, and the poll lock is
        // held, as `process_completions` requires.
        unsafe { self.process_completions() };
    }

    /// For a reset, once every request was requeued or ended: empties both queues and creates
    /// them again on the controller, which forgot them.
    ///
    /// # Safety
    ///
    /// Between [`Self::stop_for_reset`] and [`Self::resume_interrupts`]: the interrupt is
    /// disabled, dispatch stopped.
    pub(crate) unsafe fn recreate(&self) -> Result {
        let cq = {
            let _poller = self.poll_lock.lock();
            // SAFETY: The IRQ is disabled (`stop_for_reset`) and the poll lock held: the
            // completion queue is this caller's alone (type invariants).
            let cq = unsafe { &mut *self.cq.get() };
            cq.reset()?;
            cq.ring().dma_handle()
        };
        let (sq, depth) = {
            let mut sq = self.sq.lock();
            sq.reset()?;
            (sq.ring().dma_handle(), sq.ring().depth())
        };
        create_pair(&self.ctrl, self.qid, depth, self.vector, (sq, cq))
    }

    /// Enables the interrupt that [`Self::stop_for_reset`] disabled.
    ///
    /// # Safety
    ///
    /// Once per [`Self::stop_for_reset`], after it.
    pub(crate) unsafe fn resume_interrupts(&self) {
        // SAFETY: Disabled by `stop_for_reset` (safety requirement).
        unsafe { bindings::enable_irq(self.irq) };
    }

    /// Deletes the queue pair on the controller (orderly teardown only).
    pub(crate) fn delete(&self) -> Result {
        self.ctrl
            .admin_command(|admin, bar| admin.delete_io_queue_pair(bar, self.qid))
    }

    /// Completes what the controller has posted, from outside the interrupt handler (a completion
    /// whose interrupt was lost): with the IRQ disabled, as the handler cannot run meanwhile.
    /// Returns how many. Sleeps.
    fn poll_completions(&self) -> usize {
        // The cancelling must not end what this poll is completing, nor this poll what the
        // cancelling ended: each sees the other's requests no longer in flight.
        let _cancelling = self.ctrl.cancel_lock.lock();
        let _poller = self.poll_lock.lock();
        // SAFETY: A requested IRQ (`IoQueue::new` returns only a queue with its IRQ requested, and
        // it stays requested until the queue is dropped); enabled again below.
        unsafe { bindings::disable_irq(self.irq) };
        // SAFETY: The IRQ is disabled, which waited for a running handler, and this caller holds
        // the poll lock, as `process_completions` requires.
        let count = unsafe { self.process_completions() };
        // SAFETY: Disabled above.
        unsafe { bindings::enable_irq(self.irq) };
        count
    }

    /// Completes every request whose completion the controller has posted. Returns how many.
    ///
    /// # Safety
    ///
    /// Called by the queue's interrupt handler, or with its IRQ disabled and `poll_lock` held: the
    /// completion queue is the caller's alone (see the type invariants).
    unsafe fn process_completions(&self) -> usize {
        if self.ctrl.is_dead() {
            return 0;
        }
        let tags = self.tags.load(Ordering::Acquire);
        let mut batch = blk::CompletionBatch::new();
        let mut count = 0;
        {
            // SAFETY: By the function's safety requirement, nothing else uses the queue.
            let cq = unsafe { &mut *self.cq.get() };
            while let Some(done) = cq.pop() {
                count += 1;
                if tags.is_null() {
                    continue;
                }
                let duplicates = FaultPoint::UniqueCompletion.fails();
                // SAFETY: `tags` are this queue's blk-mq tags (type invariant).
                let Some(rq) = (unsafe { self.valid_request(tags, done.cid) }) else {
                    continue;
                };
                // SAFETY: The pdu was initialised by `init_request`; only its atomics are shared.
                let pdu = unsafe { &*rq.pdu() };
                let status = done.status_field();
                pdu.status.store(status, Ordering::Relaxed);
                pdu.result.store(done.result64(), Ordering::Relaxed);
                // The completion path alone sets it while the request is in flight: a poller and
                // the handler never run at once, and the cancelling only after both stopped.
                pdu.device_done.store(true, Ordering::Release);
                if duplicates {
                    // Injected: the same completion again, and once with another generation.
                    for cid in [done.cid, done.cid ^ (1 << CID_TAG_BITS)] {
                        // SAFETY: As above.
                        if unsafe { self.valid_request(tags, cid) }.is_some() {
                            dev_err!(self.ctrl.pdev, "injected bad completion {:#x} taken\n", cid);
                        }
                    }
                }
                // A lost completion (fault injection) is left to the timeout handler.
                if rq.should_fake_timeout() {
                    pdu.completion_lost.store(true, Ordering::Release);
                    continue;
                }
                // SAFETY: `complete_batch` releases every request's data and ends the batch.
                if !unsafe { batch.add(rq, status != command::SC_SUCCESS, complete_batch) } {
                    rq.complete();
                }
            }
            if count > 0 {
                let _ = cq.ring_doorbell(&self.ctrl.bar, self.ctrl.shadow_doorbells());
            }
        }
        batch.complete();
        count
    }
}

// SAFETY: The queue is shared by blk-mq's CPUs and its interrupt handler. Every field but `cq` is
// `Sync`, and `cq` has one user at a time (type invariant).
unsafe impl Sync for IoQueue<'_> {}

#[pinned_drop]
impl PinnedDrop for IoQueue<'_> {
    fn drop(self: Pin<&mut Self>) {
        if self.irq_requested.load(Ordering::Acquire) {
            // SAFETY: Requested with this cookie (type invariant); freed once, here.
            unsafe { bindings::free_irq(self.irq, core::ptr::from_ref(&*self).cast_mut().cast()) };
        }
    }
}

/// The interrupt handler of an I/O queue.
///
/// # Safety
///
/// `cookie` is the pinned [`IoQueue`] the IRQ was requested with.
unsafe extern "C" fn nvme_rs_irq(_irq: c_int, cookie: *mut c_void) -> bindings::irqreturn_t {
    // SAFETY: By the function's safety requirement.
    let queue = unsafe { &*cookie.cast::<IoQueue<'_>>() };
    if FaultPoint::IoInterrupt.fails() {
        // As if this interrupt had been lost.
        return irqreturn::IRQ_HANDLED;
    }
    // SAFETY: The queue's interrupt handler.
    if unsafe { queue.process_completions() } > 0 {
        irqreturn::IRQ_HANDLED
    } else {
        irqreturn::IRQ_NONE
    }
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
    status: AtomicU16,
    /// The completion's command specific result, DW0 and DW1 (for passthrough).
    result: AtomicU64,
    /// The controller posted the completion.
    device_done: AtomicBool,
    /// The completion was taken but deliberately not completed (fault injection's lost
    /// completion): only the timeout handler or the cancelling ends the request now.
    completion_lost: AtomicBool,
    /// The timeout handler asked the controller to abort the command.
    aborted: AtomicBool,
    /// A reset took the command from the controller: the completion path gives the request back
    /// to blk-mq, to be sent again, unless it has been [`MAX_RETRIES`] times.
    requeue: AtomicBool,
    /// How many times a reset sent the request again; 0 again when it ends.
    retries: AtomicU8,
    /// The generation of the command identifier (see [`command_id`]); written at submission,
    /// read by the completion path, which may see a stale completion at any time.
    generation: AtomicU8,
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
    first: Option<Mapping<'a>>,
    more: KVec<Option<Mapping<'a>>>,
    list: Option<PoolBlock<'a, 'a, u64>>,
    /// A passthrough request's command, data pointer included, which its submitter keeps alive
    /// until the request ends ([`execute_user_command`]); null for other requests.
    user_command: *const Command,
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
    fn command_id(&self, rq: &Request<Pdu<'_>>) -> u16 {
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
    unsafe fn data(&self) -> &mut PduData<'a> {
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
    fn make_room(&mut self) -> Result<(), Status> {
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
    fn slots(&mut self) -> impl Iterator<Item = &mut Option<Mapping<'a>>> {
        Iterator::chain(core::iter::once(&mut self.first), self.more.iter_mut())
    }

    /// The mappings of the request's data, in segment order.
    fn mappings(&self) -> impl Iterator<Item = &Mapping<'a>> {
        Iterator::chain(core::iter::once(&self.first), self.more.iter()).map_while(Option::as_ref)
    }

    /// The request's only mapping, when it has exactly one.
    fn single_mapping(&self) -> Option<&Mapping<'a>> {
        match (&self.first, self.more.first()) {
            (Some(map), None | Some(None)) => Some(map),
            _ => None,
        }
    }

    /// Unmaps the data and returns the PRP list to the pool.
    #[inline]
    fn release(&mut self) {
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

/// The per-request data size for the tag set.
pub(crate) const PDU_SIZE: usize = core::mem::size_of::<Pdu<'static>>();
// The per-request data follows a `struct request` (see `init_request`).
const _: () = assert!(core::mem::align_of::<Pdu<'static>>() <= 8);

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
/// Called by blk-mq with a request whose data area is `PDU_SIZE` bytes.
unsafe extern "C" fn init_request(
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
unsafe extern "C" fn exit_request(
    _set: *mut bindings::blk_mq_tag_set,
    rq: *mut bindings::request,
    _hctx_index: c_uint,
) {
    // SAFETY: By the function's safety requirement.
    unsafe { core::ptr::drop_in_place(blk::pdu_of(rq).cast::<Pdu<'_>>()) };
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

/// Builds the command for `rq`, starts it and queues it; the doorbell rings at the end of a batch
/// (`last`, or `commit_rqs`).
fn submit<'a>(
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

/// How a command points the controller at its data.
#[derive(Clone, Copy)]
enum DataPointer {
    /// No data, or a controller structure (a DSM range).
    None,
    Prps,
    Sgl,
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

/// Ends a batch of successful requests (`CompletionBatch::complete`).
///
/// # Safety
///
/// `iob` is a batch of this driver's completed requests, which nothing else touches.
unsafe extern "C" fn complete_batch(iob: *mut c_void) {
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
unsafe extern "C" fn complete(rq: *mut bindings::request) {
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

/// A request took too long: find out why and make sure it ends.
fn handle_timeout(queue: &IoQueue<'_>, rq: &Request<Pdu<'_>>) -> TimeoutAction {
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
