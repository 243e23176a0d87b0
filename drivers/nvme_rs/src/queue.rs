// SPDX-License-Identifier: GPL-2.0

//! A submission queue and a completion queue in coherent memory, with their doorbells and the
//! completion queue's phase tag. Locking is the owner's business.

use kernel::{
    device::{Bound, Device},
    io::Io,
    prelude::*,
    transmute::{AsBytes, FromBytes},
};

use crate::command::{Command, Completion};
use crate::dma_local::{self, Coherent, DmaAddress, Gfp};
use crate::dma_read;
use crate::regs::{self, Bar0};
use crate::shadow::ShadowDoorbells;

/// A queue's entries in coherent memory and its doorbell: what a submission queue and a completion
/// queue both have.
///
/// # Invariants
///
/// `entries.count()` fits in a `u16`; `rung` is below it.
pub(crate) struct Ring<'a, T: AsBytes + FromBytes + Default> {
    entries: Coherent<'a, T>,
    /// The position (tail or head) the controller was last told about.
    rung: u16,
    doorbell: usize,
}

impl<'a, T: AsBytes + FromBytes + Default> Ring<'a, T> {
    /// `depth` zeroed entries, with the doorbell at `doorbell`.
    fn new(dev: &'a Device<Bound>, depth: u16, doorbell: usize) -> Result<Self> {
        // INVARIANT: `depth` entries; `rung` 0 < depth (the allocation rejects 0).
        Ok(Self {
            entries: Coherent::alloc(dev, usize::from(depth), Gfp::KERNEL)?,
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

    /// Back to the state of a new queue for a controller that forgot the old one (a reset):
    /// position 0, and the entries zeroed.
    fn reset(&mut self) -> Result {
        for index in 0..self.entries.count() {
            self.entries.write(index, T::default())?;
        }
        // INVARIANT: 0 is below the depth.
        self.rung = 0;
        Ok(())
    }

    /// Tells the controller `position`, a tail or a head, which must be below the depth; with
    /// shadow doorbells only by MMIO when the controller asks for it.
    #[inline]
    fn write_doorbell(
        &mut self,
        bar: &Bar0<'_>,
        shadow: Option<&ShadowDoorbells<'_>>,
        position: u16,
    ) -> Result {
        // INVARIANT: `position` is below the depth (precondition).
        let old = core::mem::replace(&mut self.rung, position);
        if let Some(shadow) = shadow {
            if !shadow.update(self.doorbell, old, position)? {
                return Ok(());
            }
        }
        // An SQ's entries are ordered before the doorbell's store by `writel`'s barrier.
        bar.try_write32(u32::from(position), self.doorbell)
    }
}

/// A submission queue.
///
/// # Invariants
///
/// `tail` is below the ring's depth.
pub(crate) struct SubmissionQueue<'a> {
    ring: Ring<'a, Command>,
    tail: u16,
}

impl<'a> SubmissionQueue<'a> {
    /// A zeroed queue of `depth` entries whose tail doorbell is at `doorbell`.
    pub(crate) fn new(dev: &'a Device<Bound>, depth: u16, doorbell: usize) -> Result<Self> {
        // INVARIANT: 0 is below any depth the allocation accepts.
        Ok(Self {
            ring: Ring::new(dev, depth, doorbell)?,
            tail: 0,
        })
    }

    /// Its entries and doorbell.
    pub(crate) fn ring(&self) -> &Ring<'a, Command> {
        &self.ring
    }

    /// Copies `command` into the tail slot, without telling the controller yet
    /// ([`Self::ring_doorbell`]).
    /// The caller makes sure the queue has room (blk-mq's tags do, for I/O queues: there are fewer
    /// tags than entries).
    #[inline]
    pub(crate) fn push(&mut self, command: Command) -> Result {
        self.ring.entries.write(usize::from(self.tail), command)?;
        let next = self.tail + 1;
        // INVARIANT: wraps at the depth.
        self.tail = if next == self.ring.depth() { 0 } else { next };
        Ok(())
    }

    /// Rings the tail doorbell if commands were pushed since the last time: once for a whole batch,
    /// and with shadow doorbells only by MMIO when the controller asks for it.
    #[inline]
    pub(crate) fn ring_doorbell(
        &mut self,
        bar: &Bar0<'_>,
        shadow: Option<&ShadowDoorbells<'_>>,
    ) -> Result {
        if self.ring.rung == self.tail {
            return Ok(());
        }
        self.ring.write_doorbell(bar, shadow, self.tail)
    }

    /// Empties the queue for a controller that forgot it (a reset): tail 0, entries zeroed.
    pub(crate) fn reset(&mut self) -> Result {
        self.ring.reset()?;
        // INVARIANT: 0 is below the depth.
        self.tail = 0;
        Ok(())
    }

    /// Pushes `command` and rings the doorbell by MMIO (the admin queue has no shadow doorbell).
    pub(crate) fn submit(&mut self, bar: &Bar0<'_>, command: Command) -> Result {
        self.push(command)?;
        self.ring_doorbell(bar, None)
    }
}

/// A completion queue.
///
/// # Invariants
///
/// `head` is below the ring's depth; `phase` is the phase tag that new entries carry at `head`.
pub(crate) struct CompletionQueue<'a> {
    ring: Ring<'a, Completion>,
    head: u16,
    phase: bool,
}

impl<'a> CompletionQueue<'a> {
    /// A zeroed queue of `depth` entries whose head doorbell is at `doorbell`.
    pub(crate) fn new(dev: &'a Device<Bound>, depth: u16, doorbell: usize) -> Result<Self> {
        // INVARIANT: the controller posts phase 1 on its first pass over zeroed entries.
        Ok(Self {
            ring: Ring::new(dev, depth, doorbell)?,
            head: 0,
            phase: true,
        })
    }

    /// Its entries and doorbell.
    pub(crate) fn ring(&self) -> &Ring<'a, Completion> {
        &self.ring
    }

    /// Takes the entry at the head if the controller has posted it.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<Completion> {
        let head = usize::from(self.head);
        // The phase tag alone first: the rest of the entry is only valid once it matches, and a
        // whole-entry read could take the other half before the controller wrote it.
        let status = dma_read!(self.ring.entries, head, status).ok()?;
        if (status & 1 != 0) != self.phase {
            return None;
        }
        // The entry's reads after the phase's.
        dma_local::dma_rmb();
        let entry = self.ring.entries.read(head).ok()?;
        let next = self.head + 1;
        if next == self.ring.depth() {
            self.head = 0;
            self.phase = !self.phase;
        } else {
            self.head = next;
        }
        Some(entry)
    }

    /// Empties the queue for a controller that forgot it (a reset): head 0, entries zeroed, so
    /// that the controller's first pass posts phase 1 again.
    pub(crate) fn reset(&mut self) -> Result {
        self.ring.reset()?;
        // INVARIANT: the state of a new queue.
        self.head = 0;
        self.phase = true;
        Ok(())
    }

    /// Tells the controller how far the driver has consumed; with shadow doorbells only by MMIO
    /// when the controller asks for it.
    #[inline]
    pub(crate) fn ring_doorbell(
        &mut self,
        bar: &Bar0<'_>,
        shadow: Option<&ShadowDoorbells<'_>>,
    ) -> Result {
        self.ring.write_doorbell(bar, shadow, self.head)
    }
}

/// The doorbell offsets of queue pair `qid` for a controller with doorbell stride `stride`.
pub(crate) fn doorbells(qid: u16, stride: usize) -> (usize, usize) {
    (
        regs::sq_tail_doorbell(qid, stride),
        regs::cq_head_doorbell(qid, stride),
    )
}
