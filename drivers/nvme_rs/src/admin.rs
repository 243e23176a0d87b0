// SPDX-License-Identifier: GPL-2.0

//! The admin queue and the admin commands this driver sends. Admin commands are few and rare
//! (bring-up, teardown, aborts), so they are executed one at a time and their completion is polled.
//! The one exception is the Asynchronous Event Request, which stays with the controller until it
//! has an event to report: its completion is kept for [`AdminQueue::take_async_event`], whoever
//! finds it (the interrupt of the admin queue's vector wakes the driver's event handler).

use kernel::{
    device::{Bound, Device},
    io::poll::read_poll_timeout,
    prelude::*,
    time::Delta,
};

use crate::command::{
    self, Abort, AsyncEventRequest, Cns, Command, Completion, CreateIoCompletionQueue,
    CreateIoSubmissionQueue, DeleteIoCompletionQueue, DeleteIoSubmissionQueue,
    DoorbellBufferConfig, GetLogPage, Identify, LogPage, SetFeatures,
};
use crate::dma_local::{Coherent, DmaAddress};
use crate::faults::FaultPoint;
use crate::queue::{doorbells, CompletionQueue, SubmissionQueue};
use crate::regs::Bar0;

/// Entries of each admin queue.
pub(crate) const ADMIN_DEPTH: u16 = 32;
/// The longest a command from user space may take, in milliseconds.
pub(crate) const MAX_USER_TIMEOUT_MS: i64 = 10 * 60 * 1000;
/// The size of every Identify data structure, and of the log pages this driver reads.
pub(crate) const IDENTIFY_SIZE: usize = 4096;

/// The admin submission and completion queues.
pub(crate) struct AdminQueue<'a> {
    /// For messages.
    dev: &'a Device<Bound>,
    sq: SubmissionQueue<'a>,
    cq: CompletionQueue<'a>,
    next_cid: u16,
    /// The command identifier of the Asynchronous Event Request the controller holds, if any.
    async_event_cid: Option<u16>,
    /// Its completion, once found and until taken.
    async_event: Option<Completion>,
    /// How long a command may take, in milliseconds.
    timeout_ms: i64,
    /// The command identifier whose completion is not looked for (fault injection).
    lost_cid: Option<u16>,
}

impl<'a> AdminQueue<'a> {
    /// Allocates both queues for a controller with doorbell stride `stride`, whose commands may
    /// take `timeout_s` seconds (at least 1).
    pub(crate) fn new(dev: &'a Device<Bound>, stride: usize, timeout_s: u32) -> Result<Self> {
        let (sq_doorbell, cq_doorbell) = doorbells(0, stride);
        Ok(Self {
            dev,
            sq: SubmissionQueue::new(dev, ADMIN_DEPTH, sq_doorbell)?,
            cq: CompletionQueue::new(dev, ADMIN_DEPTH, cq_doorbell)?,
            next_cid: 0,
            async_event_cid: None,
            async_event: None,
            timeout_ms: i64::from(timeout_s.max(1)) * 1000,
            lost_cid: None,
        })
    }

    /// Empties both queues for a controller that forgot them (a reset), and with them its
    /// Asynchronous Event Request.
    pub(crate) fn reset(&mut self) -> Result {
        self.async_event_cid = None;
        self.async_event = None;
        self.sq.reset()?;
        self.cq.reset()
    }

    /// What `AQA`, `ASQ` and `ACQ` are programmed with.
    pub(crate) fn registers(&self) -> (u32, DmaAddress, DmaAddress) {
        let sizes =
            (u32::from(self.cq.ring().depth() - 1) << 16) | u32::from(self.sq.ring().depth() - 1);
        (
            sizes,
            self.sq.ring().dma_handle(),
            self.cq.ring().dma_handle(),
        )
    }

    /// Submits `command` and waits for its completion. A command that fails returns `EIO`, one that
    /// does not complete in time `ETIMEDOUT`. Returns the completion's result (DW0).
    pub(crate) fn execute(&mut self, bar: &Bar0<'_>, command: impl Into<Command>) -> Result<u32> {
        let mut command = command.into();
        let done = self.submit_and_wait(bar, &mut command, self.timeout_ms, &|| false)?;
        self.check(&command, &done)
    }

    /// Submits a command from user space (passthrough) and waits for its completion, for
    /// `timeout_ms` (at most ten minutes) and at least the driver's own admin timeout: a shorter wait would leave the
    /// command, and the memory it points to, in the controller's hands. Returns the completion
    /// whatever its status; `ETIMEDOUT` if there was none in time; `EINTR` as soon as `give_up`
    /// says so (the driver lets go of the controller, which it disables before that memory goes).
    pub(crate) fn execute_user(
        &mut self,
        bar: &Bar0<'_>,
        mut command: Command,
        timeout_ms: u32,
        give_up: &dyn Fn() -> bool,
    ) -> Result<Completion> {
        // At most ten minutes: the admin queue, and the controller's resets, wait for it.
        let timeout_ms = self
            .timeout_ms
            .max(i64::from(timeout_ms).min(MAX_USER_TIMEOUT_MS));
        self.submit_and_wait(bar, &mut command, timeout_ms, give_up)
    }

    /// Gives `command` the next command identifier, submits it and polls for its completion for
    /// `timeout_ms` milliseconds, or until `give_up` (`EINTR`).
    fn submit_and_wait(
        &mut self,
        bar: &Bar0<'_>,
        command: &mut Command,
        timeout_ms: i64,
        give_up: &dyn Fn() -> bool,
    ) -> Result<Completion> {
        self.submit(bar, command)?;
        let cid = command.cid();
        let lost = self.lost_cid == Some(cid);
        // Every completion that arrives is consumed; only this command's ends the wait.
        let take_ours = || -> Result<Option<Completion>> {
            while let Some(done) = self.pop(bar)? {
                if done.cid == cid && !lost {
                    return Ok(Some(done));
                }
            }
            Ok(None)
        };
        let timeout = Delta::from_millis(timeout_ms);
        let ended = |done: &Option<Completion>| done.is_some() || give_up();
        match read_poll_timeout(take_ours, ended, Delta::from_micros(50), timeout) {
            Ok(Some(done)) => Ok(done),
            Ok(None) => Err(EINTR),
            Err(e) if e != ETIMEDOUT => Err(e),
            // Timed out.
            _ => {
                dev_warn!(self.dev, "admin opcode {:#x} timed out\n", command.opcode());
                Err(ETIMEDOUT)
            }
        }
    }

    /// Gives `command` the next command identifier and submits it.
    fn submit(&mut self, bar: &Bar0<'_>, command: &mut Command) -> Result {
        // Command identifiers only need to be unique among outstanding commands: the one waited
        // for, the Asynchronous Event Request, and stale ones of commands that timed out.
        if Some(self.next_cid) == self.async_event_cid {
            self.next_cid = self.next_cid.wrapping_add(1);
        }
        command.set_cid(self.next_cid);
        self.lost_cid = FaultPoint::AdminCompletion.fails().then_some(self.next_cid);
        self.next_cid = self.next_cid.wrapping_add(1);
        self.sq.submit(bar, *command)
    }

    /// The next completion, consumed; the Asynchronous Event Request's is kept for
    /// [`Self::take_async_event`] and not returned.
    fn pop(&mut self, bar: &Bar0<'_>) -> Result<Option<Completion>> {
        while let Some(done) = self.cq.pop() {
            self.cq.ring_doorbell(bar, None)?;
            if Some(done.cid) == self.async_event_cid {
                self.async_event_cid = None;
                self.async_event = Some(done);
                continue;
            }
            return Ok(Some(done));
        }
        Ok(None)
    }

    /// Hands the controller an Asynchronous Event Request, unless it holds one.
    pub(crate) fn request_async_event(&mut self, bar: &Bar0<'_>) -> Result {
        if self.async_event_cid.is_some() || self.async_event.is_some() {
            return Ok(());
        }
        let mut command = Command::from(AsyncEventRequest);
        self.submit(bar, &mut command)?;
        self.async_event_cid = Some(command.cid());
        Ok(())
    }

    /// The completion of the Asynchronous Event Request, if the controller posted it: its status
    /// field and result (DW0). Consumes the completions that arrived (no command is waited for
    /// while this runs: the queue is locked).
    pub(crate) fn take_async_event(&mut self, bar: &Bar0<'_>) -> Result<Option<(u16, u32)>> {
        while self.pop(bar)?.is_some() {}
        Ok(self
            .async_event
            .take()
            .map(|done| (done.status_field(), done.result)))
    }

    /// Tells the controller which asynchronous `events` to report (the `AEC_*` bits).
    pub(crate) fn configure_async_events(&mut self, bar: &Bar0<'_>, events: u32) -> Result {
        self.execute(bar, SetFeatures::AsyncEventConfiguration { events })
            .map(|_| ())
    }

    /// Identify with `cns` through `buf` (4 KiB); `nsid` for namespace data structures. The data
    /// comes back on the heap: 4 KiB is a quarter of the kernel stack.
    pub(crate) fn identify(
        &mut self,
        bar: &Bar0<'_>,
        cns: Cns,
        nsid: u32,
        buf: &Coherent<'_, u8>,
    ) -> Result<KVec<u8>> {
        self.execute(
            bar,
            Identify {
                cns,
                nsid,
                prp1: buf.dma_handle(),
            },
        )?;
        let mut data = KVec::from_elem(0u8, IDENTIFY_SIZE, GFP_KERNEL)?;
        buf.read_into(0, &mut data)?;
        Ok(data)
    }

    /// Reads the first 4 KiB of log page `lid` through `buf` (4 KiB), onto the heap as
    /// [`Self::identify`].
    pub(crate) fn get_log_page(
        &mut self,
        bar: &Bar0<'_>,
        lid: LogPage,
        buf: &Coherent<'_, u8>,
    ) -> Result<KVec<u8>> {
        self.execute(
            bar,
            GetLogPage {
                lid,
                prp1: buf.dma_handle(),
            },
        )?;
        let mut data = KVec::from_elem(0u8, IDENTIFY_SIZE, GFP_KERNEL)?;
        buf.read_into(0, &mut data)?;
        Ok(data)
    }

    /// Asks for `wanted` I/O queue pairs; returns how many the controller granted.
    pub(crate) fn set_number_of_queues(&mut self, bar: &Bar0<'_>, wanted: u16) -> Result<u16> {
        let result = self.execute(
            bar,
            SetFeatures::NumberOfQueues {
                nsqr: wanted,
                ncqr: wanted,
            },
        )?;
        // Both counts come back 0's based: submission queues low, completion queues high.
        let granted = (result & 0xffff).min(result >> 16) + 1;
        Ok(granted.min(u32::from(wanted)) as u16)
    }

    /// Creates I/O completion queue `qid` at `addr` with `depth` entries, interrupting on `vector`.
    pub(crate) fn create_io_cq(
        &mut self,
        bar: &Bar0<'_>,
        qid: u16,
        depth: u16,
        addr: DmaAddress,
        vector: u16,
    ) -> Result {
        self.execute(
            bar,
            CreateIoCompletionQueue {
                qid,
                qsize: depth,
                prp1: addr,
                iv: vector,
            },
        )
        .map(|_| ())
    }

    /// Creates I/O submission queue `qid` at `addr` with `depth` entries, completing on CQ `qid`.
    pub(crate) fn create_io_sq(
        &mut self,
        bar: &Bar0<'_>,
        qid: u16,
        depth: u16,
        addr: DmaAddress,
    ) -> Result {
        self.execute(
            bar,
            CreateIoSubmissionQueue {
                qid,
                qsize: depth,
                prp1: addr,
                cqid: qid,
            },
        )
        .map(|_| ())
    }

    /// Deletes I/O submission queue `qid` and then its completion queue, the latter even when the
    /// former fails. Returns the first error.
    pub(crate) fn delete_io_queue_pair(&mut self, bar: &Bar0<'_>, qid: u16) -> Result {
        let sq = self
            .execute(bar, DeleteIoSubmissionQueue { qid })
            .map(|_| ());
        let cq = self.delete_io_cq(bar, qid);
        sq.and(cq)
    }

    /// Deletes I/O completion queue `qid` (whose submission queue is gone, or was never made).
    pub(crate) fn delete_io_cq(&mut self, bar: &Bar0<'_>, qid: u16) -> Result {
        self.execute(bar, DeleteIoCompletionQueue { qid })
            .map(|_| ())
    }

    /// Asks the controller to abort command `cid` of submission queue `qid`. Returns whether it
    /// will: then the command completes with "Command Abort Requested".
    pub(crate) fn abort(&mut self, bar: &Bar0<'_>, qid: u16, cid: u16) -> Result<bool> {
        let result = self.execute(bar, Abort { sqid: qid, cid })?;
        // DW0 bit 0 set means "command not aborted".
        Ok(result & 1 == 0)
    }

    /// Doorbell Buffer Config: hands the controller the Shadow Doorbell buffer and the EventIdx
    /// buffer, both page aligned.
    pub(crate) fn doorbell_buffer_config(
        &mut self,
        bar: &Bar0<'_>,
        shadow: DmaAddress,
        event_indexes: DmaAddress,
    ) -> Result {
        self.execute(
            bar,
            DoorbellBufferConfig {
                shadow_doorbells: shadow,
                event_indexes,
            },
        )
        .map(|_| ())
    }

    /// The result of a completed admin command.
    fn check(&self, command: &Command, done: &Completion) -> Result<u32> {
        if done.status_field() != command::SC_SUCCESS {
            dev_warn!(
                self.dev,
                "admin opcode {:#x} failed with status {:#x}\n",
                command.opcode(),
                done.status_field()
            );
            return Err(EIO);
        }
        Ok(done.result)
    }
}
