// SPDX-License-Identifier: GPL-2.0

//! Shadow doorbells (the Doorbell Buffer Config command, NVM Express Base Specification 5.8), a
//! feature of emulated controllers: the driver writes each I/O queue's new tail or head to memory,
//! and the MMIO doorbell write, a trap into the emulator, is only needed when the controller's
//! EventIdx for that doorbell says it may have stopped looking.

use core::sync::atomic::{AtomicBool, Ordering};

use kernel::{
    device::{Bound, Device},
    prelude::*,
};

use crate::dma_local::{self, Coherent, DmaAddress, Gfp};
use crate::regs;

/// The Shadow Doorbell and EventIdx buffers. Both mirror the layout of the doorbell registers, so a
/// doorbell's register offset names its slot in either.
///
/// # Invariants
///
/// `doorbells` and `event_indexes` are page aligned and have the same number of slots.
pub(crate) struct ShadowDoorbells<'a> {
    doorbells: Coherent<'a, u32>,
    event_indexes: Coherent<'a, u32>,
    /// The controller accepted the buffers.
    enabled: AtomicBool,
}

impl<'a> ShadowDoorbells<'a> {
    /// Zeroed buffers (zero is every queue's initial tail and head) for the admin queue and
    /// `io_queues` I/O queue pairs at doorbell stride `stride` (bytes).
    pub(crate) fn new(dev: &'a Device<Bound>, io_queues: u16, stride: usize) -> Result<Self> {
        let slots = (usize::from(io_queues) + 1) * 2 * (stride / 4);
        let doorbells = Coherent::alloc(dev, slots, Gfp::KERNEL)?;
        let event_indexes = Coherent::alloc(dev, slots, Gfp::KERNEL)?;
        let page = regs::PAGE_SIZE as DmaAddress;
        if doorbells.dma_handle() % page != 0 || event_indexes.dma_handle() % page != 0 {
            return Err(EINVAL);
        }
        // INVARIANT: both checked page aligned, both `slots` long.
        Ok(Self {
            doorbells,
            event_indexes,
            enabled: AtomicBool::new(false),
        })
    }

    /// The bus addresses of the Shadow Doorbell and the EventIdx buffer, for Doorbell Buffer
    /// Config.
    pub(crate) fn dma_handles(&self) -> (DmaAddress, DmaAddress) {
        (self.doorbells.dma_handle(), self.event_indexes.dma_handle())
    }

    /// Called once the controller has accepted the buffers: doorbells go through them from now on.
    pub(crate) fn enable(&self) {
        self.enabled.store(true, Ordering::Release);
    }

    /// Stops using the buffers and zeroes them, for a controller that forgot them (a reset):
    /// doorbells go by MMIO until [`Self::enable`].
    ///
    /// # Safety
    ///
    /// No queue rings a doorbell meanwhile (its queue is stopped and its interrupt disabled).
    pub(crate) unsafe fn reset(&self) -> Result {
        self.enabled.store(false, Ordering::Release);
        for slot in 0..self.doorbells.count() {
            // SAFETY: Nothing else writes the buffers now (safety requirement), and the controller
            // no longer does.
            unsafe {
                self.doorbells.write_shared(slot, 0)?;
                self.event_indexes.write_shared(slot, 0)?;
            }
        }
        Ok(())
    }

    /// Whether the controller uses the buffers.
    pub(crate) fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// Moves the doorbell at register offset `doorbell` from `old` to `new` in the shadow buffer;
    /// returns whether the controller must also be told by MMIO.
    ///
    /// Each doorbell has a single writer at a time: its submission queue under the queue's lock, or
    /// its completion queue's owner (the interrupt handler, or a poller with the IRQ disabled).
    #[inline]
    pub(crate) fn update(&self, doorbell: usize, old: u16, new: u16) -> Result<bool> {
        let slot = doorbell.checked_sub(regs::SQ0TDBL).ok_or(EINVAL)? / 4;
        // The queue entries the new value hands over are written before it.
        dma_local::wmb();
        // SAFETY: The slot has one writer at a time (see above), and no CPU reads it.
        unsafe { self.doorbells.write_shared(slot, u32::from(new).to_le()) }?;
        // The doorbell is written before the EventIdx is read, as the controller publishes its
        // EventIdx before reading the doorbell; otherwise each side could miss the other's update
        // and the new entries would sit unnoticed.
        dma_local::mb();
        let event = u32::from_le(self.event_indexes.read(slot)?) as u16;
        Ok(passes(event, old, new))
    }
}

/// Whether a doorbell going from `old` to `new` passes `event`, the value after which the
/// controller asked to be told (all modulo 2^16).
fn passes(event: u16, old: u16, new: u16) -> bool {
    new.wrapping_sub(event).wrapping_sub(1) < new.wrapping_sub(old)
}
