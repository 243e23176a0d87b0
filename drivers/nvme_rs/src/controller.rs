// SPDX-License-Identifier: GPL-2.0

//! The controller as a whole: its registers, the enable/disable handshake with `CC`/`CSTS`, the
//! admin queue, and the "dead" state that stops all I/O once the controller is disabled or gone.

use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering};

use kernel::{
    bindings,
    device::Bound,
    io::{poll::read_poll_timeout, Io},
    new_mutex, pci,
    prelude::*,
    sync::{Arc, Mutex},
    time::{delay::fsleep, Delta},
};

use crate::admin::AdminQueue;
use crate::blk;
use crate::command::{self, Cns, IdentifyController, IdentifyNvmController};
use crate::counters::ControllerCounters;
use crate::dma_local::{self, Coherent, Pool};
use crate::faults::FaultPoint;
use crate::regs::{self, Bar0, Cap};
use crate::shadow::ShadowDoorbells;

/// The most I/O queues (and their interrupt vectors) this driver sets up.
pub(crate) const MAX_IO_QUEUES: usize = 16;
/// Bytes of a list block from the pool, a page as in the C driver: a PRP list, an SGL with a
/// descriptor for each segment of the largest request, or Dataset Management ranges, as many as a
/// command can hold, since a controller may read that much whatever the command's count says.
pub(crate) const LIST_BLOCK_BYTES: usize = regs::PAGE_SIZE;
const _: () =
    assert!(command::DSM_MAX_RANGES as usize * command::DSM_RANGE_BYTES <= LIST_BLOCK_BYTES);

/// Ends every request of the I/O tag set that is still in flight, with "host aborted": the I/O
/// path's `cancel_all`, handed to [`Controller::new`] because the I/O path builds on the
/// controller, not the other way round.
///
/// # Safety
///
/// The set is the live tag set of this driver's I/O queues, the controller is disabled, no
/// interrupt handler runs, and the caller holds the controller's cancel lock.
pub(crate) type CancelAll = unsafe fn(*mut bindings::blk_mq_tag_set);

/// Resets the controller (`reset::reset`, handed to [`Controller::new`] as [`CancelAll`] is): for
/// the timeout handlers, which the reset builds on. With `Some(count)`, only if no reset began
/// since the controller's reset count was `count`.
pub(crate) type ResetController = fn(&Controller<'_>, Option<u32>) -> Result;

/// The controller configuration this driver enables with (`CC` without `EN`): the NVM command
/// set, 4 KiB pages, round robin, 64-byte submission and 16-byte completion entries. Written as
/// it is, as C writes its cached `ctrl_config`, never read back and modified.
const CC_CONFIG: u32 =
    regs::CC_CSS_NVM | regs::CC_MPS_4K | regs::CC_AMS_RR | regs::CC_IOSQES | regs::CC_IOCQES;

/// Reads a register. `fail_mmio_read` (fault injection) makes it read all ones afterwards, as a
/// device gone from the bus does. Always inlined: `read32` checks the offset at build time.
#[inline(always)]
fn read_register(bar: &Bar0<'_>, offset: usize) -> u32 {
    let value = bar.read32(offset);
    if FaultPoint::MmioRead.fails() {
        return regs::GONE;
    }
    value
}

/// A bound NVMe controller's shared state.
///
/// # Invariants
///
/// - Once `dead` is set, no new command reaches an I/O queue and no completion is processed.
/// - The first `nr_irqs` of `irqs` are requested IRQs of this device's I/O queues: an I/O queue is
///   freed (and its IRQ with it) only after [`Controller::forget_irqs`].
#[pin_data]
pub(crate) struct Controller<'a> {
    pub(crate) pdev: &'a pci::Device<Bound>,
    pub(crate) bar: Bar0<'a>,
    pub(crate) cap: Cap,
    /// What happens to it as a whole, also shown in debugfs.
    pub(crate) counters: Arc<ControllerCounters>,
    #[pin]
    pub(crate) admin: Mutex<AdminQueue<'a>>,
    /// Held by whatever ends requests outside their normal completion (the cancelling in `kill`,
    /// a timeout handler ending a request whose completion was lost) and by the pollers of
    /// completion queues, so that no request is ended twice (C's `shutdown_lock`).
    #[pin]
    pub(crate) cancel_lock: Mutex<()>,
    /// PRP lists, SGL segments and Dataset Management ranges, [`LIST_BLOCK_BYTES`] each.
    pub(crate) list_pool: Pool<'a, u64>,
    /// Shadow doorbells for up to `MAX_IO_QUEUES` I/O queues, used once the controller accepts
    /// them. Freed with the controller, after it was disabled: it may write the EventIdx buffer
    /// until then.
    shadow: ShadowDoorbells<'a>,
    dead: AtomicBool,
    /// A disable turned bus mastering off (the controller did not stop); the next enable turns it
    /// on again.
    bus_master_off: AtomicBool,
    /// Serialises resets, and their halves around system sleep.
    #[pin]
    pub(crate) reset_lock: Mutex<()>,
    /// A reset is taking the commands from the controller and setting it up again, or the
    /// controller sleeps.
    resetting: AtomicBool,
    /// The driver is letting go of the controller: timeouts no longer reset it.
    removing: AtomicBool,
    /// How a timeout handler resets the controller.
    reset: ResetController,
    /// How many resets began: a timeout handler that saw another number before cannot trust what
    /// it found.
    resets: AtomicU32,
    /// The I/O tag set, once it exists (for cancelling requests).
    tag_set: AtomicPtr<bindings::blk_mq_tag_set>,
    /// How `kill` ends the tag set's requests in flight.
    cancel_all: CancelAll,
    /// The Linux IRQ numbers of the I/O queues, once requested.
    irqs: [AtomicU32; MAX_IO_QUEUES],
    nr_irqs: AtomicUsize,
    /// Wakes the asynchronous event handler's thread, while there is one.
    #[pin]
    async_events_waker: Mutex<Option<AsyncEventsWaker>>,
    /// The handler is to tell the controller which events to report and send it a request.
    async_events_set_up: AtomicBool,
    /// The handler is to scan the namespaces.
    async_events_rescan: AtomicBool,
}

/// Wakes the thread of the IRQ requested with a cookie (`irq_wake_thread`).
///
/// # Invariants
///
/// `irq` is requested with `cookie` while the value exists.
pub(crate) struct AsyncEventsWaker {
    irq: u32,
    cookie: *mut core::ffi::c_void,
}

// SAFETY: The cookie is only compared by `irq_wake_thread`, from any thread.
unsafe impl Send for AsyncEventsWaker {}

impl AsyncEventsWaker {
    /// # Safety
    ///
    /// `irq` is requested with `cookie` and stays so while the returned value exists.
    pub(crate) unsafe fn new(irq: u32, cookie: *mut core::ffi::c_void) -> Self {
        // INVARIANT: by the function's safety requirement.
        Self { irq, cookie }
    }
}

impl<'a> Controller<'a> {
    /// Maps the registers, resets the controller, sets up the admin queue and enables it. `kill`
    /// ends the requests in flight with `cancel_all`; a timeout handler resets the controller with
    /// `reset`.
    pub(crate) fn new(
        dev: &'a pci::Device<Bound>,
        cancel_all: CancelAll,
        reset: ResetController,
    ) -> impl PinInit<Self, Error> + 'a {
        try_pin_init!(Self {
            pdev: dev,
            bar: dev.iomap_region_sized::<{ regs::BAR0_SIZE }>(0, c"nvme_rs")?,
            cap: {
                // The kernel's I/O regions allow 32-bit accesses; NVMe allows them on 64-bit
                // registers.
                let cap = Cap(u64::from(read_register(bar, regs::CAP))
                    | (u64::from(read_register(bar, regs::CAP + 4)) << 32));
                if read_register(bar, regs::CSTS) == regs::GONE {
                    return Err(ENODEV);
                }
                if !cap.nvm_command_set() || cap.min_page_size() > regs::PAGE_SIZE {
                    dev_err!(dev, "no NVM command set with 4 KiB pages (CAP {:#x})\n", cap.0);
                    return Err(ENODEV);
                }
                cap
            },
            counters: ControllerCounters::new()?,
            admin <- new_mutex!(AdminQueue::new(
                dev.as_ref(),
                cap.doorbell_stride(),
                crate::compat::param(&crate::module_parameters::admin_timeout),
            )?),
            cancel_lock <- new_mutex!((), "nvme_rs:cancel"),
            list_pool: Pool::new(
                dev.as_ref(),
                c"nvme_rs lists",
                LIST_BLOCK_BYTES / 8,
                LIST_BLOCK_BYTES,
                regs::PAGE_SIZE,
            )?,
            shadow: ShadowDoorbells::new(
                dev.as_ref(),
                MAX_IO_QUEUES as u16,
                cap.doorbell_stride(),
            )?,
            dead: AtomicBool::new(false),
            bus_master_off: AtomicBool::new(false),
            reset_lock <- new_mutex!((), "nvme_rs:reset"),
            resetting: AtomicBool::new(false),
            removing: AtomicBool::new(false),
            reset,
            resets: AtomicU32::new(0),
            tag_set: AtomicPtr::new(core::ptr::null_mut()),
            cancel_all,
            irqs: [const { AtomicU32::new(0) }; MAX_IO_QUEUES],
            nr_irqs: AtomicUsize::new(0),
            async_events_waker <- new_mutex!(None, "nvme_rs:async_events"),
            async_events_set_up: AtomicBool::new(false),
            async_events_rescan: AtomicBool::new(false),
        })
        .pin_chain(|ctrl| ctrl.restart())
    }

    /// Disables the controller, which forgets every queue, and enables it again with an empty
    /// admin queue: what probe does first, and a reset before it creates the I/O queues again.
    pub(crate) fn restart(&self) -> Result {
        self.disable()?;
        let mut admin = self.admin.lock();
        admin.reset()?;
        let (aqa, asq, acq) = admin.registers();
        self.bar.write32(aqa, regs::AQA);
        self.bar.write32(asq as u32, regs::ASQ);
        self.bar.write32((asq >> 32) as u32, regs::ASQ + 4);
        self.bar.write32(acq as u32, regs::ACQ);
        self.bar.write32((acq >> 32) as u32, regs::ACQ + 4);
        self.enable()
    }

    /// The doorbell stride in bytes.
    pub(crate) fn stride(&self) -> usize {
        self.cap.doorbell_stride()
    }

    /// Identify Controller, and the NVM command set's Identify Controller, through `buf`.
    pub(crate) fn identify(
        &self,
        buf: &Coherent<'_, u8>,
    ) -> Result<(IdentifyController, IdentifyNvmController)> {
        // A timed-out Identify resets or kills the controller (`admin_command`), which disables it,
        // before `buf` can go.
        let mut id = IdentifyController::parse(
            &self.admin_command(|admin, bar| admin.identify(bar, Cns::Controller, 0, buf))?,
        )?;
        if FaultPoint::Mdts.fails() {
            id.mdts = u8::MAX;
        }
        // Older controllers do not have this structure: no limits then. Before 1.2 the CNS field
        // had two bits or one, and CNS 06h would be read as another.
        let nvm_id = if self.version() >= regs::VS_1_2 {
            self.admin_command(|admin, bar| admin.identify(bar, Cns::NvmController, 0, buf))
                .and_then(|data| IdentifyNvmController::parse(&data))
                .unwrap_or_default()
        } else {
            IdentifyNvmController::default()
        };
        Ok((id, nvm_id))
    }

    /// Hands the controller the shadow doorbells (Doorbell Buffer Config) if it offers them (`id`,
    /// OACS), as the C driver does, so that ringing an I/O queue's doorbell is mostly a memory
    /// write instead of a trap into the emulator. Without them, every doorbell stays an MMIO
    /// write. Like the C driver, once the I/O queues exist, before any I/O.
    pub(crate) fn enable_shadow_doorbells(&self, id: &IdentifyController) {
        if id.oacs & command::OACS_DOORBELL_BUFFER_CONFIG != 0 {
            self.offer_shadow_doorbells();
        }
    }

    /// Stops using the shadow doorbells and zeroes them, for a reset: the controller forgets them
    /// when it is disabled. Returns whether they were in use, to offer them again
    /// ([`Controller::offer_shadow_doorbells`]) once the I/O queues exist again.
    ///
    /// # Safety
    ///
    /// No I/O queue rings a doorbell meanwhile (the queues are stopped, their interrupts disabled).
    pub(crate) unsafe fn forget_shadow_doorbells(&self) -> Result<bool> {
        let used = self.shadow.is_enabled();
        // SAFETY: By the function's safety requirement.
        unsafe { self.shadow.reset() }?;
        Ok(used)
    }

    /// Doorbell Buffer Config with the shadow doorbells, which the controller offers; they are
    /// used if it accepts them.
    pub(crate) fn offer_shadow_doorbells(&self) {
        let (doorbells, event_indexes) = self.shadow.dma_handles();
        // The controller owns the buffers from the command on, even if it times out; they live as
        // long as the controller.
        let result = self.admin_command(|admin, bar| {
            admin.doorbell_buffer_config(bar, doorbells, event_indexes)
        });
        match result {
            Ok(()) => self.shadow.enable(),
            Err(e) => dev_warn!(self.pdev, "no shadow doorbells ({:?})\n", e),
        }
    }

    /// The shadow doorbells, once the controller uses them.
    pub(crate) fn shadow_doorbells(&self) -> Option<&ShadowDoorbells<'a>> {
        self.shadow.is_enabled().then_some(&self.shadow)
    }

    /// Controller Status (`CSTS`); all ones once the device is gone from the bus.
    pub(crate) fn status(&self) -> u32 {
        let csts = read_register(&self.bar, regs::CSTS);
        if FaultPoint::CstsFatal.fails() {
            return csts | regs::CSTS_CFS;
        }
        csts
    }

    /// Whether the device still answers on the bus.
    pub(crate) fn is_present(&self) -> bool {
        self.status() != regs::GONE
    }

    /// The specification version the controller implements (`VS`).
    pub(crate) fn version(&self) -> u32 {
        read_register(&self.bar, regs::VS)
    }

    /// Runs admin commands (`f`, with the admin queue locked). A command that timed out may still
    /// be in the controller's hands, and with it the memory it points to (an Identify buffer, a
    /// queue being created): the controller is then reset, or killed, either of which disables it
    /// before the caller can free any of it, as the C driver does on an admin timeout. A dead
    /// controller takes no admin command (`ENODEV`): its admin queue is disabled.
    pub(crate) fn admin_command<R>(
        &self,
        f: impl FnOnce(&mut AdminQueue<'a>, &Bar0<'a>) -> Result<R>,
    ) -> Result<R> {
        if self.is_dead() {
            return Err(ENODEV);
        }
        // Whether the command is a reset's own, and which reset it follows: read under the admin
        // lock, under which a reset marks itself (`reset::stop`), so that a reset waiting for the
        // lock is not taken for the command's own.
        let mut admin = self.admin.lock();
        let (resets, in_reset) = (self.resets(), self.is_resetting());
        let result = f(&mut admin, &self.bar);
        drop(admin);
        if matches!(result, Err(e) if e == ETIMEDOUT) {
            // As C, reset the controller, which disables it first (one that began since the
            // command was sent did); before it has I/O queues (in probe), during a reset or while
            // it is let go of, or if the reset fails, disable it for good.
            if in_reset || self.reset_unless_since(resets).is_err() {
                self.kill();
            }
        }
        result
    }

    /// As [`Self::admin_command`], but `EBUSY` while a reset is under way (or the controller
    /// sleeps), for a caller that is not the reset and will try again after it: a command the
    /// disabled controller cannot answer would time out, and a timeout during a reset kills the
    /// controller.
    pub(crate) fn admin_command_unless_resetting<R>(
        &self,
        f: impl FnOnce(&mut AdminQueue<'a>, &Bar0<'a>) -> Result<R>,
    ) -> Result<R> {
        self.admin_command(|admin, bar| {
            // Under the admin lock, under which a reset marks itself.
            if self.is_resetting() {
                return Err(EBUSY);
            }
            f(admin, bar)
        })
    }

    /// Whether I/O has been stopped for good.
    pub(crate) fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Acquire)
    }

    /// How long the controller may take to become ready, to stop or to shut down: `CAP.TO`, and
    /// no less than half a second.
    fn ready_timeout(&self) -> Delta {
        Delta::from_millis(i64::from(self.cap.timeout_ms().max(500)))
    }

    /// Waits until `CSTS.RDY` is `ready`, for at most `CAP.TO`.
    fn wait_ready(&self, ready: bool) -> Result {
        let is_ready = |csts: &u32| csts & regs::CSTS_RDY != 0;
        let read_csts = || {
            let csts = self.status();
            if csts == regs::GONE {
                return Err(ENODEV);
            }
            if ready && !is_ready(&csts) && csts & regs::CSTS_CFS != 0 {
                dev_err!(self.pdev, "controller fatal status while enabling\n");
                return Err(EIO);
            }
            Ok(csts)
        };
        let polled = read_poll_timeout(
            read_csts,
            |csts| is_ready(csts) == ready,
            Delta::from_millis(1),
            self.ready_timeout(),
        );
        if matches!(polled, Err(e) if e == ETIMEDOUT) {
            dev_err!(self.pdev, "CSTS.RDY did not become {}\n", u8::from(ready));
        }
        polled.map(drop)
    }

    /// Clears `CC.EN` and waits for the controller to stop: it does no DMA afterwards. One that
    /// does not stop in time (`CSTS.RDY` stays 1) or no longer answers may still hold commands
    /// whose memory its caller is about to free or reuse: its bus mastering is turned off then,
    /// as C's `nvme_dev_disable` disables the PCI device, until the next [`Controller::restart`].
    pub(crate) fn disable(&self) -> Result {
        // This driver's configuration without EN, not what `CC` reads: a device that does not
        // answer reads all ones, which written back would set reserved bits and a shutdown.
        self.bar.write32(CC_CONFIG, regs::CC);
        let stopped = self.wait_ready(false);
        if let Err(e) = stopped {
            dma_local::stop_bus_master(self.pdev);
            if !self.bus_master_off.swap(true, Ordering::Relaxed) {
                dev_err!(
                    self.pdev,
                    "controller did not stop ({:?}): bus mastering off\n",
                    e
                );
            }
        }
        stopped
    }

    /// Sets `CC.EN` with this driver's configuration and waits until the controller is ready.
    /// Bus mastering is on again first, if a [`Controller::disable`] turned it off.
    fn enable(&self) -> Result {
        if self.bus_master_off.swap(false, Ordering::Relaxed) {
            dma_local::resume_bus_master(self.pdev);
        }
        self.bar.write32(CC_CONFIG | regs::CC_EN, regs::CC);
        self.wait_ready(true)
    }

    /// A normal shutdown (`CC.SHN`), waited for at most `CAP.TO`, then a disable.
    pub(crate) fn shutdown(&self) {
        // As in `disable`: the configuration the driver enabled, not what `CC` reads.
        self.bar
            .write32(CC_CONFIG | regs::CC_EN | regs::CC_SHN_NORMAL, regs::CC);
        let shut_down = |csts: &u32| {
            *csts == regs::GONE || csts & regs::CSTS_SHST_MASK == regs::CSTS_SHST_COMPLETE
        };
        let read_csts = || Ok(self.status());
        let polled = read_poll_timeout(
            read_csts,
            shut_down,
            Delta::from_millis(1),
            self.ready_timeout(),
        );
        if polled.is_err() {
            dev_warn!(self.pdev, "shutdown did not complete\n");
        }
        let _ = self.disable();
    }

    /// Resets the controller, unless a reset began since [`Controller::resets`] was `seen`:
    /// requests in flight are sent again. `EBUSY` while it sleeps.
    pub(crate) fn reset_unless_since(&self, seen: u32) -> Result {
        (self.reset)(self, Some(seen))
    }

    /// From now on timeouts do not reset the controller, and a reset in progress has finished:
    /// the driver lets go of it.
    pub(crate) fn set_removing(&self) {
        self.removing.store(true, Ordering::Release);
        drop(self.reset_lock.lock());
    }

    /// Installs, or withdraws (`None`), how to wake the asynchronous event handler.
    pub(crate) fn set_async_events_waker(&self, waker: Option<AsyncEventsWaker>) {
        *self.async_events_waker.lock() = waker;
    }

    /// Wakes the asynchronous event handler, if there is one, to tell the controller which events
    /// to report and send it a request (both forgotten by a reset), and to scan the namespaces if
    /// `rescan` (a reset may hide a change).
    pub(crate) fn wake_async_events(&self, rescan: bool) {
        self.async_events_set_up.store(true, Ordering::Release);
        if rescan {
            self.async_events_rescan.store(true, Ordering::Release);
        }
        if let Some(waker) = &*self.async_events_waker.lock() {
            // SAFETY: The IRQ is requested with the cookie while the waker exists (type
            // invariant).
            unsafe { bindings::irq_wake_thread(waker.irq, waker.cookie) };
        }
    }

    /// What [`Self::wake_async_events`] asked of the handler since it last looked: set the events
    /// up, and scan.
    pub(crate) fn take_async_events_work(&self) -> (bool, bool) {
        (
            self.async_events_set_up.swap(false, Ordering::AcqRel),
            self.async_events_rescan.swap(false, Ordering::AcqRel),
        )
    }

    /// Whether the driver is letting go of the controller.
    pub(crate) fn is_removing(&self) -> bool {
        self.removing.load(Ordering::Acquire)
    }

    /// Whether a reset is in progress, or the controller sleeps.
    pub(crate) fn is_resetting(&self) -> bool {
        self.resetting.load(Ordering::Acquire)
    }

    /// How many resets began.
    pub(crate) fn resets(&self) -> u32 {
        self.resets.load(Ordering::Acquire)
    }

    /// Marks a reset as begun (`true`) or finished (`false`).
    pub(crate) fn set_resetting(&self, resetting: bool) {
        if resetting {
            self.resets.fetch_add(1, Ordering::AcqRel);
        }
        self.resetting.store(resetting, Ordering::Release);
    }

    /// The tag set, once it exists.
    pub(crate) fn tag_set(&self) -> Option<*mut bindings::blk_mq_tag_set> {
        let set = self.tag_set.load(Ordering::Acquire);
        (!set.is_null()).then_some(set)
    }

    /// Remembers the tag set, so that `kill` can cancel its requests.
    pub(crate) fn set_tag_set(&self, set: *mut bindings::blk_mq_tag_set) {
        self.tag_set.store(set, Ordering::Release);
    }

    /// Remembers an I/O queue's IRQ, requested and not freed before [`Controller::forget_irqs`],
    /// so that `kill` can wait for its handler.
    pub(crate) fn add_irq(&self, irq: u32) {
        let index = self.nr_irqs.load(Ordering::Relaxed);
        if let Some(slot) = self.irqs.get(index) {
            slot.store(irq, Ordering::Relaxed);
            // INVARIANT: requested by the caller, which frees it only after `forget_irqs`.
            self.nr_irqs.store(index + 1, Ordering::Release);
        }
    }

    /// Waits for the I/O queues' interrupt handlers that are running, and forgets the IRQs: the
    /// driver is about to free them. Called once nothing can call `kill` any more (no disk, no
    /// timeout).
    pub(crate) fn forget_irqs(&self) {
        self.synchronize_irqs();
        // INVARIANT: no IRQ is recorded any more.
        self.nr_irqs.store(0, Ordering::Release);
    }

    /// Waits for the I/O queues' interrupt handlers that are running.
    fn synchronize_irqs(&self) {
        for irq in self.irqs[..self.nr_irqs.load(Ordering::Acquire)].iter() {
            // SAFETY: A requested IRQ of this device: recorded IRQs stay requested until
            // `forget_irqs` (type invariant).
            unsafe { bindings::synchronize_irq(irq.load(Ordering::Relaxed)) };
        }
    }

    /// Marks the controller dead after an orderly teardown, when nothing is in flight any more.
    pub(crate) fn stop(&self) {
        self.dead.store(true, Ordering::SeqCst);
    }

    /// Stops all I/O for good: marks the controller dead, disables it (no DMA afterwards), waits
    /// for running interrupt handlers, and ends every request still in flight with an error. Used
    /// when the device is gone and when a timed-out command cannot be aborted. Sleeps.
    pub(crate) fn kill(&self) {
        if self.dead.swap(true, Ordering::AcqRel) {
            return;
        }
        dev_warn!(self.pdev, "controller disabled; failing outstanding I/O\n");
        if FaultPoint::PromptCancel.fails() {
            // Other timeout handlers find the controller dead before the cancelling.
            fsleep(Delta::from_secs(4));
        }
        let set = self.tag_set.load(Ordering::Acquire);
        let stop_and_cancel = || {
            let _ = self.disable();
            // Handlers that saw the controller alive finish first; later ones see it dead.
            self.synchronize_irqs();
            if !set.is_null() {
                // Pollers and a timeout handler ending a request hold this too: whichever runs
                // first, the other sees the request no longer in flight.
                let _cancelling = self.cancel_lock.lock();
                // SAFETY: The tag set is live: `kill` runs from a timeout handler (whose request
                // keeps the set alive) or from the driver's teardown before it frees the set. The
                // controller is disabled, the handlers have finished, the cancel lock is held.
                unsafe { (self.cancel_all)(set) };
            }
        };
        if set.is_null() {
            // No tag set, no `queue_rq`.
            stop_and_cancel();
        } else {
            // A `queue_rq` running now may still queue a command: it finishes before the
            // controller is disabled, and the cancelling finds its request. The ones after see
            // `dead` (the grace period orders the store before them) and fail at once.
            // SAFETY: The tag set is live while `self` is.
            unsafe { blk::with_dispatch_stopped(set, stop_and_cancel) };
        }
    }
}
