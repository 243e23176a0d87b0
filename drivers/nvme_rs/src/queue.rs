// SPDX-License-Identifier: GPL-2.0

//! A submission queue and a completion queue in coherent memory, with their doorbells and the
//! completion queue's phase tag. Locking is the owner's business.

use kernel::{
    device::{Bound, Device},
    io::Io,
    prelude::*,
};

use crate::command::{Command, Completion};
use crate::dma_local::{self, Coherent, DmaAddress, Gfp};
use crate::dma_read;
use crate::regs::{self, Bar0};
use crate::shadow::ShadowDoorbells;

/// A submission queue.
///
/// # Invariants
///
/// `tail` and `rung` are below `entries.count()`, which fits in a `u16`.
pub(crate) struct SubmissionQueue<'a> {
    entries: Coherent<'a, Command>,
    tail: u16,
    /// The tail the controller was last told about.
    rung: u16,
    doorbell: usize,
}

impl<'a> SubmissionQueue<'a> {
    /// A zeroed queue of `depth` entries whose tail doorbell is at `doorbell`.
    pub(crate) fn new(dev: &'a Device<Bound>, depth: u16, doorbell: usize) -> Result<Self> {
        let entries = Coherent::alloc(dev, usize::from(depth), Gfp::KERNEL)?;
        // INVARIANT: both start at 0 < depth (the allocation rejects 0).
        Ok(Self {
            entries,
            tail: 0,
            rung: 0,
            doorbell,
        })
    }

    /// The bus address of the first entry.
    pub(crate) fn dma_handle(&self) -> DmaAddress {
        self.entries.dma_handle()
    }

    /// The number of entries.
    pub(crate) fn depth(&self) -> u16 {
        self.entries.count() as u16
    }

    /// Copies `command` into the tail slot, without telling the controller yet ([`Self::ring`]).
    /// The caller makes sure the queue has room (blk-mq's tags do, for I/O queues: there are fewer
    /// tags than entries).
    #[inline]
    pub(crate) fn push(&mut self, command: Command) -> Result {
        self.entries.write(usize::from(self.tail), command)?;
        let next = self.tail + 1;
        // INVARIANT: wraps at the depth.
        self.tail = if next == self.depth() { 0 } else { next };
        Ok(())
    }

    /// Rings the tail doorbell if commands were pushed since the last time: once for a whole batch,
    /// and with shadow doorbells only by MMIO when the controller asks for it.
    #[inline]
    pub(crate) fn ring(&mut self, bar: &Bar0<'_>, shadow: Option<&ShadowDoorbells<'_>>) -> Result {
        if self.rung == self.tail {
            return Ok(());
        }
        let old = core::mem::replace(&mut self.rung, self.tail);
        if let Some(shadow) = shadow {
            if !shadow.update(self.doorbell, old, self.tail)? {
                return Ok(());
            }
        }
        // The entries' stores are ordered before the doorbell's by `writel`'s barrier.
        bar.try_write32(u32::from(self.tail), self.doorbell)
    }

    /// Pushes `command` and rings the doorbell by MMIO (the admin queue has no shadow doorbell).
    pub(crate) fn submit(&mut self, bar: &Bar0<'_>, command: Command) -> Result {
        self.push(command)?;
        self.ring(bar, None)
    }
}

/// A completion queue.
///
/// # Invariants
///
/// `head` and `rung` are below `entries.count()`; `phase` is the phase tag that new entries carry
/// at `head`.
pub(crate) struct CompletionQueue<'a> {
    entries: Coherent<'a, Completion>,
    head: u16,
    /// The head the controller was last told about.
    rung: u16,
    phase: bool,
    doorbell: usize,
}

impl<'a> CompletionQueue<'a> {
    /// A zeroed queue of `depth` entries whose head doorbell is at `doorbell`.
    pub(crate) fn new(dev: &'a Device<Bound>, depth: u16, doorbell: usize) -> Result<Self> {
        let entries = Coherent::alloc(dev, usize::from(depth), Gfp::KERNEL)?;
        // INVARIANT: the controller posts phase 1 on its first pass over zeroed entries.
        Ok(Self {
            entries,
            head: 0,
            rung: 0,
            phase: true,
            doorbell,
        })
    }

    /// The bus address of the first entry.
    pub(crate) fn dma_handle(&self) -> DmaAddress {
        self.entries.dma_handle()
    }

    /// The number of entries.
    pub(crate) fn depth(&self) -> u16 {
        self.entries.count() as u16
    }

    /// Takes the entry at the head if the controller has posted it.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<Completion> {
        let head = usize::from(self.head);
        // The phase tag alone first: the rest of the entry is only valid once it matches, and a
        // whole-entry read could take the other half before the controller wrote it.
        let status = dma_read!(self.entries, head, status).ok()?;
        if (status & 1 != 0) != self.phase {
            return None;
        }
        // The entry's reads after the phase's.
        dma_local::dma_rmb();
        let entry = self.entries.read(head).ok()?;
        let next = self.head + 1;
        if next == self.depth() {
            self.head = 0;
            self.phase = !self.phase;
        } else {
            self.head = next;
        }
        Some(entry)
    }

    /// Tells the controller how far the driver has consumed; with shadow doorbells only by MMIO
    /// when the controller asks for it.
    #[inline]
    pub(crate) fn ring(&mut self, bar: &Bar0<'_>, shadow: Option<&ShadowDoorbells<'_>>) -> Result {
        let old = core::mem::replace(&mut self.rung, self.head);
        if let Some(shadow) = shadow {
            if !shadow.update(self.doorbell, old, self.head)? {
                return Ok(());
            }
        }
        bar.try_write32(u32::from(self.head), self.doorbell)
    }
}

/// The doorbell offsets of queue pair `qid` for a controller with doorbell stride `stride`.
pub(crate) fn doorbells(qid: u16, stride: usize) -> (usize, usize) {
    (
        regs::sq_tail_doorbell(qid, stride),
        regs::cq_head_doorbell(qid, stride),
    )
}
