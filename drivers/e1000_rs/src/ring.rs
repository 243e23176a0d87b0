// SPDX-License-Identifier: GPL-2.0

//! The transmit and receive descriptor rings: descriptors in `dma_local` coherent memory, packet data in
//! socket buffers mapped with `dma_local` streaming mappings (no copy, as the C e1000 does).

use kernel::{
    device::{Bound, Device},
    prelude::*,
    transmute::{AsBytes, FromBytes},
};

use crate::dma_local::{Attrs, Coherent, Direction, DmaAddress, Gfp, Mapping};
use crate::netdev::{NetDev, Skb};
use crate::regs;
use crate::{dma_read, dma_write};

/// Descriptors per ring (the C driver's default).
pub(crate) const RING_SIZE: usize = 256;
/// Receive buffer size; RCTL.BSIZE = 0 selects 2048 bytes.
pub(crate) const RX_BUFFER_SIZE: u32 = 2048;
/// The queue is stopped when fewer descriptors than this are free, and woken at [`TX_WAKE_THRESHOLD`].
const TX_STOP_THRESHOLD: usize = 2;
const TX_WAKE_THRESHOLD: usize = 32;
/// Shortest frame the stack can use: an Ethernet header.
const ETH_HLEN: u16 = 14;

/// Legacy receive descriptor.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct RxDesc {
    addr: u64,
    length: u16,
    checksum: u16,
    status: u8,
    errors: u8,
    special: u16,
}

/// Legacy transmit descriptor.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct TxDesc {
    addr: u64,
    length: u16,
    cso: u8,
    cmd: u8,
    status: u8,
    css: u8,
    special: u16,
}

// SAFETY: `repr(C)` integers adding up to 16 bytes with no padding.
unsafe impl AsBytes for RxDesc {}
// SAFETY: Any bytes are valid integers.
unsafe impl FromBytes for RxDesc {}
// SAFETY: `repr(C)` integers adding up to 16 bytes with no padding.
unsafe impl AsBytes for TxDesc {}
// SAFETY: Any bytes are valid integers.
unsafe impl FromBytes for TxDesc {}

fn next(i: usize) -> usize {
    (i + 1) % RING_SIZE
}

/// A buffer lent to the device; the mapping is declared first so that it is unmapped before the skb
/// is freed.
struct Slot<'a> {
    mapping: Mapping<'a>,
    skb: Skb,
    len: u32,
}

/// Packets and bytes a clean-up finished.
#[derive(Default, Clone, Copy)]
pub(crate) struct Done {
    pub(crate) packets: u64,
    pub(crate) bytes: u64,
}

/// What a receive pass saw besides good frames.
#[derive(Default, Clone, Copy)]
pub(crate) struct RxDone {
    pub(crate) frames: Done,
    pub(crate) errors: u64,
    pub(crate) length_errors: u64,
    pub(crate) dropped: u64,
}

/// The transmit ring.
///
/// # Invariants
///
/// Every descriptor in `[next_to_clean, next_to_use)` is the device's or done; those of them that carry a
/// packet have a `Some` slot, context descriptors have none.
pub(crate) struct TxRing<'a> {
    dev: &'a Device<Bound>,
    desc: Coherent<'a, TxDesc>,
    slots: KVec<Option<Slot<'a>>>,
    next_to_use: usize,
    next_to_clean: usize,
    /// The checksum offsets of the last context descriptor sent.
    context: Option<(u8, u8)>,
}

impl<'a> TxRing<'a> {
    pub(crate) fn new(dev: &'a Device<Bound>) -> Result<Self> {
        let mut slots = KVec::with_capacity(RING_SIZE, GFP_KERNEL)?;
        for _ in 0..RING_SIZE {
            slots.push(None, GFP_KERNEL)?;
        }
        Ok(Self {
            dev,
            desc: Coherent::alloc(dev, RING_SIZE, Gfp::KERNEL)?,
            slots,
            next_to_use: 0,
            next_to_clean: 0,
            context: None,
        })
    }

    /// Base address and length in bytes, for TDBAL/TDBAH/TDLEN.
    pub(crate) fn base(&self) -> (DmaAddress, usize) {
        (self.desc.dma_handle(), self.desc.size())
    }

    fn free(&self) -> usize {
        let used = (self.next_to_use + RING_SIZE - self.next_to_clean) % RING_SIZE;
        RING_SIZE - 1 - used
    }

    /// Queues `skb`; returns the new tail for TDT. The skb comes back when the ring is full; a frame
    /// that cannot be mapped is dropped (`Ok(None)`).
    pub(crate) fn push(&mut self, mut skb: Skb) -> core::result::Result<Option<usize>, Skb> {
        // Checksum offload: a context descriptor tells the device where the checksum starts and goes;
        // it is only sent when that changes. Offsets past 255 bytes do not fit in it.
        let offload = match skb.checksum_offload() {
            Some((start, place)) => match (u8::try_from(start), u8::try_from(place)) {
                (Ok(start), Ok(place)) => Some((start, place)),
                _ => {
                    if skb.checksum_in_software().is_err() {
                        return Ok(None);
                    }
                    None
                }
            },
            None => None,
        };
        let context = offload.filter(|o| Some(*o) != self.context);
        if self.free() < 1 + usize::from(context.is_some()) {
            return Err(skb);
        }
        let len = skb.len();
        // SAFETY: A linear skb's data (no scatter-gather is advertised) is slab or page memory that this
        // slot owns until the device is done with it; the CPU does not touch it meanwhile.
        let mapping = match unsafe {
            Mapping::new(
                self.dev,
                skb.data(),
                len as usize,
                Direction::ToDevice,
                Attrs::NONE,
            )
        } {
            Ok(m) => m,
            Err(_) => return Ok(None),
        };
        let mut i = self.next_to_use;
        if let Some((start, place)) = context {
            // TCP/UDP checksum start (TUCSS) and offset (TUCSO); TUCSE 0 means to the end.
            let desc = TxDesc {
                addr: (u64::from(start) << 32) | (u64::from(place) << 40),
                cmd: regs::TX_CMD_DEXT | regs::TX_CMD_RS,
                ..Default::default()
            };
            if self.desc.write(i, desc).is_err() {
                return Ok(None);
            }
            self.context = context;
            i = next(i);
        }
        let cmd = regs::TX_CMD_EOP | regs::TX_CMD_IFCS | regs::TX_CMD_RS | regs::TX_CMD_IDE;
        let desc = match offload {
            Some(_) => TxDesc {
                addr: mapping.dma_handle(),
                length: len as u16,
                cso: regs::TX_DTYP_DATA,
                cmd: cmd | regs::TX_CMD_DEXT,
                css: regs::TX_POPTS_TXSM,
                ..Default::default()
            },
            None => TxDesc {
                addr: mapping.dma_handle(),
                length: len as u16,
                cmd,
                ..Default::default()
            },
        };
        if self.desc.write(i, desc).is_err() {
            return Ok(None);
        }
        self.slots[i] = Some(Slot { mapping, skb, len });
        self.next_to_use = next(i);
        Ok(Some(self.next_to_use))
    }

    /// Whether the queue must stop until descriptors come back.
    pub(crate) fn nearly_full(&self) -> bool {
        self.free() < TX_STOP_THRESHOLD
    }

    /// Whether a stopped queue may run again.
    pub(crate) fn has_room(&self) -> bool {
        self.free() >= TX_WAKE_THRESHOLD
    }

    /// Frees every buffer the device has sent.
    pub(crate) fn clean(&mut self, budget: i32) -> Done {
        let mut done = Done::default();
        while self.next_to_clean != self.next_to_use {
            let i = self.next_to_clean;
            let status = dma_read!(self.desc, i, status).unwrap_or(0);
            if status & regs::DESC_STATUS_DD == 0 {
                break;
            }
            if let Some(Slot { mapping, skb, len }) = self.slots[i].take() {
                drop(mapping);
                skb.consume(budget);
                done.packets += 1;
                done.bytes += u64::from(len);
            }
            self.next_to_clean = next(i);
        }
        done
    }
}

/// The receive ring.
///
/// # Invariants
///
/// Every descriptor has a buffer (`slots[i]` is `Some`) whose address it holds.
pub(crate) struct RxRing<'a> {
    dev: &'a Device<Bound>,
    desc: Coherent<'a, RxDesc>,
    slots: KVec<Option<Slot<'a>>>,
    next_to_clean: usize,
    /// Inside a frame that spans several buffers (too long): drop until its end.
    discarding: bool,
}

impl<'a> RxRing<'a> {
    /// A ring with a buffer on every descriptor.
    pub(crate) fn new(dev: &'a Device<Bound>, netdev: &NetDev) -> Result<Self> {
        let mut ring = Self {
            dev,
            desc: Coherent::alloc(dev, RING_SIZE, Gfp::KERNEL)?,
            slots: KVec::with_capacity(RING_SIZE, GFP_KERNEL)?,
            next_to_clean: 0,
            discarding: false,
        };
        for i in 0..RING_SIZE {
            let slot = ring.new_buffer(netdev).ok_or(ENOMEM)?;
            ring.give(i, &slot)?;
            ring.slots.push(Some(slot), GFP_KERNEL)?;
        }
        Ok(ring)
    }

    /// Base address and length in bytes, for RDBAL/RDBAH/RDLEN.
    pub(crate) fn base(&self) -> (DmaAddress, usize) {
        (self.desc.dma_handle(), self.desc.size())
    }

    fn new_buffer(&self, netdev: &NetDev) -> Option<Slot<'a>> {
        let skb = netdev.alloc_rx_skb(RX_BUFFER_SIZE)?;
        // SAFETY: A fresh skb has `RX_BUFFER_SIZE` bytes of slab or page memory at `data`, owned by the
        // slot until the device filled it.
        let mapping = unsafe {
            Mapping::new(
                self.dev,
                skb.data(),
                RX_BUFFER_SIZE as usize,
                Direction::FromDevice,
                Attrs::NONE,
            )
        }
        .ok()?;
        Some(Slot {
            mapping,
            skb,
            len: RX_BUFFER_SIZE,
        })
    }

    fn give(&mut self, i: usize, slot: &Slot<'_>) -> Result {
        let desc = RxDesc {
            addr: slot.mapping.dma_handle(),
            ..Default::default()
        };
        self.desc.write(i, desc)
    }

    /// Passes up to `budget` received frames to `deliver`, gives each descriptor a new buffer, and
    /// returns the new tail for RDT (if any descriptor was given back).
    pub(crate) fn clean(
        &mut self,
        netdev: &NetDev,
        budget: usize,
        mut deliver: impl FnMut(Skb),
    ) -> (RxDone, Option<usize>) {
        let mut done = RxDone::default();
        let mut tail = None;
        let mut seen = 0;
        while seen < budget {
            let i = self.next_to_clean;
            let status = dma_read!(self.desc, i, status).unwrap_or(0);
            if status & regs::DESC_STATUS_DD == 0 {
                break;
            }
            // SAFETY: A barrier with no preconditions: the descriptor's other fields are read after
            // its status said the device is done with it.
            unsafe { kernel::bindings::dma_rmb() };
            let length = dma_read!(self.desc, i, length).unwrap_or(0);
            let errors = dma_read!(self.desc, i, errors).unwrap_or(0);
            seen += 1;

            let end_of_packet = status & regs::DESC_STATUS_EOP != 0;
            let good = errors == 0 && end_of_packet && !self.discarding && length >= ETH_HLEN;
            if !good {
                // The buffer stays on the descriptor; the frame is counted and dropped.
                if errors != 0 {
                    done.errors += 1;
                } else if !self.discarding || end_of_packet {
                    done.length_errors += 1;
                }
                self.discarding = !end_of_packet;
                if let Some(slot) = self.slots[i].as_mut() {
                    slot.mapping.sync_for_device();
                }
            } else if let Some(fresh) = self.new_buffer(netdev) {
                let Slot {
                    mapping, mut skb, ..
                } = self.slots[i].replace(fresh).expect("type invariant");
                drop(mapping);
                skb.put(u32::from(length));
                done.frames.packets += 1;
                done.frames.bytes += u64::from(length);
                deliver(skb);
            } else {
                // No memory for a new buffer: keep the old one and drop the frame.
                done.dropped += 1;
            }
            if let Some(slot) = self.slots[i].as_ref() {
                let desc = RxDesc {
                    addr: slot.mapping.dma_handle(),
                    ..Default::default()
                };
                let _ = dma_write!(self.desc, i, addr, desc.addr);
                let _ = dma_write!(self.desc, i, status, 0);
            }
            tail = Some(i);
            self.next_to_clean = next(i);
        }
        (done, tail)
    }
}
