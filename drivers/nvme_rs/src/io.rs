// SPDX-License-Identifier: GPL-2.0

//! I/O queue pairs: how many and how deep, their creation on the controller and their interrupts,
//! each pair's submission queue and the completion processing that ends its requests.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use kernel::{
    bindings,
    cpu::CpuId,
    cpumask::{Cpumask, CpumaskVar},
    device::{Bound, Device},
    ffi::{c_int, c_void},
    new_mutex, new_spinlock,
    prelude::*,
    sync::{Arc, Mutex, SpinLock},
};

use crate::blk::{self, Request, TagSet};
use crate::command::{self, Command};
use crate::compat::{self, irqreturn, param};
use crate::controller::{Controller, MAX_IO_QUEUES};
use crate::counters::{bump, bump_by, QueueCounters};
use crate::dma_local::DmaAddress;
use crate::faults::FaultPoint;
use crate::queue::{doorbells, CompletionQueue, SubmissionQueue};
use crate::request::{complete_batch, Pdu, CID_TAG_BITS, CID_TAG_MASK};

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

/// How a command points the controller at its data.
#[derive(Clone, Copy)]
pub(crate) enum DataPointer {
    /// No data, or a controller structure (a DSM range).
    None,
    Prps,
    Sgl,
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
    pub(crate) ctrl: Arc<Controller<'a>>,
    /// `ctrl.pdev` as a `Device`, kept because the conversion is an out-of-line kernel-crate call
    /// that every mapping would otherwise make.
    pub(crate) dev: &'a Device<Bound>,
    pub(crate) qid: u16,
    #[pin]
    pub(crate) sq: SpinLock<SubmissionQueue<'a>>,
    /// No lock, as in the C driver: the interrupt handler owns it (see the invariants).
    cq: UnsafeCell<CompletionQueue<'a>>,
    /// Serialises the callers of [`Self::poll_completions`].
    #[pin]
    poll_lock: Mutex<()>,
    pub(crate) tags: AtomicPtr<bindings::blk_mq_tags>,
    /// Requests whose segments average at least this many bytes go to the controller as an SGL,
    /// which costs it less than a PRP per page (`usize::MAX`: only those that PRPs cannot
    /// describe); `None` when the controller has no SGLs.
    pub(crate) sgl_threshold: Option<usize>,
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
    pub(crate) fn count_queued(&self, queued: &Command, pointer: DataPointer) {
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
    /// ends or requeues what is still in flight (`timeout::requeue_all`, which the caller runs
    /// after this on every queue).
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
    pub(crate) fn poll_completions(&self) -> usize {
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
                // SAFETY: `tags` are this queue's blk-mq tags (type invariant).
                let Some(rq) = (unsafe { self.valid_request(tags, done.cid) }) else {
                    continue;
                };
                // Only a completion that is taken comes again.
                let duplicates = FaultPoint::UniqueCompletion.fails();
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
    // As if this interrupt had been lost: only on a vector of its own (MSI-X or MSI, vector 0
    // being the only one with INTx), since a level-triggered line would fire again at once.
    if queue.vector != 0 && FaultPoint::IoInterrupt.fails() {
        return irqreturn::IRQ_HANDLED;
    }
    // SAFETY: The queue's interrupt handler.
    if unsafe { queue.process_completions() } > 0 {
        irqreturn::IRQ_HANDLED
    } else {
        irqreturn::IRQ_NONE
    }
}
