// SPDX-License-Identifier: GPL-2.0

//! The receive ring: descriptors in `dma_local` coherent memory, each with a page fragment mapped
//! with a `dma_local` streaming mapping for the device to write a frame into, or with `rx_copy`
//! a coherent buffer that frames are copied out of. Mapping costs fewest instructions (see
//! `DESIGN.md`).

use kernel::{
    device::{Bound, Device},
    prelude::*,
};

use crate::desc::{Le16, Le64, RxDesc};
use crate::dma_local::{self, Attrs, Coherent, Direction, DmaAddress, Gfp, Mapping};
use crate::netdev::{Napi, NetDev};
use crate::regs;
use crate::ring::{next, CopyBuffers, Done, ETH_HLEN, RING_SIZE};
use crate::skb::{RxBuffer, Skb};
use crate::{dma_read, dma_write};

/// Receive buffer size, 2048 bytes, as RCTL.BSIZE = 0 selects: the coherent buffers of `rx_copy`.
pub(crate) const RX_BUFFER_SIZE: u32 = 2048;
const _: () = assert!(regs::MAX_FRAME_LEN as u32 <= RX_BUFFER_SIZE);
/// Received frames up to this long are copied into a fresh skb, and their buffer stays on the
/// descriptor: cheaper than unmapping it and mapping a new one (pings, TCP acknowledgements).
const RX_COPYBREAK: u16 = 256;

/// A receive buffer lent to the device; the mapping is declared first so that it is unmapped before
/// the buffer is freed.
struct Slot<'a> {
    mapping: Mapping<'a>,
    buffer: RxBuffer,
}

/// What a receive pass saw besides good frames.
#[derive(Default, Clone, Copy)]
pub(crate) struct RxDone {
    pub(crate) frames: Done,
    pub(crate) errors: u64,
    pub(crate) length_errors: u64,
    pub(crate) dropped: u64,
}

/// The receive ring.
///
/// # Invariants
///
/// Every descriptor holds the address of its buffer: `slots[i]`, or buffer `i` of `copy`.
pub(crate) struct RxRing<'a> {
    dev: &'a Device<Bound>,
    desc: Coherent<'a, RxDesc>,
    slots: KVec<Option<Slot<'a>>>,
    next_to_clean: usize,
    /// Inside a frame that spans several buffers (too long): drop until its end.
    discarding: bool,
    /// Receive into these and copy out, instead of into mapped page fragments; then `slots` stays
    /// empty.
    copy: Option<CopyBuffers<'a>>,
}

impl<'a> RxRing<'a> {
    /// A ring with a buffer on every descriptor: a mapped page fragment, or a coherent buffer to
    /// copy from.
    pub(crate) fn new(dev: &'a Device<Bound>, copy: bool) -> Result<Self> {
        let mut ring = Self {
            dev,
            desc: Coherent::alloc(dev, RING_SIZE, Gfp::KERNEL)?,
            slots: KVec::with_capacity(RING_SIZE, GFP_KERNEL)?,
            next_to_clean: 0,
            discarding: false,
            copy: if copy {
                Some(CopyBuffers::new(dev, RX_BUFFER_SIZE as usize)?)
            } else {
                None
            },
        };
        for i in 0..RING_SIZE {
            let (slot, addr) = match &ring.copy {
                Some(copy) => (None, copy.dma(i)?),
                None => {
                    let buffer = RxBuffer::alloc().ok_or(ENOMEM)?;
                    let slot = ring.map(buffer).ok_or(ENOMEM)?;
                    let addr = slot.mapping.dma_handle();
                    (Some(slot), addr)
                }
            };
            ring.desc.write(
                i,
                RxDesc {
                    buffer_addr: Le64::new(addr),
                    ..Default::default()
                },
            )?;
            ring.slots.push(slot, GFP_KERNEL)?;
        }
        Ok(ring)
    }

    /// Base address and length in bytes, for RDBAL/RDBAH/RDLEN.
    pub(crate) fn base(&self) -> (DmaAddress, usize) {
        (self.desc.dma_handle(), self.desc.size())
    }

    /// A slot for a fresh buffer, mapped for the device to write (`None` if mapping failed; the
    /// buffer is freed).
    #[inline]
    fn map(&self, buffer: RxBuffer) -> Option<Slot<'a>> {
        // SAFETY: A fresh buffer has `RxBuffer::FRAME_LEN` bytes of page memory at `frame`, owned
        // by the slot until the device filled it.
        let mapping = unsafe {
            Mapping::new(
                self.dev,
                buffer.frame(),
                RxBuffer::FRAME_LEN,
                Direction::FromDevice,
                Attrs::NONE,
            )
        }
        .ok()?;
        Some(Slot { mapping, buffer })
    }

    /// Passes up to `budget` received frames to `deliver`, gives each descriptor a new buffer, and
    /// returns the new tail for RDT (if any descriptor was given back).
    ///
    /// # Safety
    ///
    /// Called from the NAPI poll (bottom halves disabled), where skbs are built.
    pub(crate) unsafe fn clean(
        &mut self,
        netdev: &NetDev,
        napi: Napi,
        budget: usize,
        mut deliver: impl FnMut(Skb),
    ) -> (RxDone, Option<usize>) {
        let mut done = RxDone::default();
        let mut tail = None;
        let rx_checksum = netdev.rx_checksum_enabled();
        let mut seen = 0;
        while seen < budget {
            let i = self.next_to_clean;
            let status = dma_read!(self.desc, i, status).unwrap_or(0);
            if status & regs::DESC_STATUS_DD == 0 {
                break;
            }
            // The descriptor's other fields are read after its status said the device is done.
            dma_local::dma_rmb();
            let length = dma_read!(self.desc, i, length).map_or(0, Le16::get);
            let errors = dma_read!(self.desc, i, errors).unwrap_or(0);
            seen += 1;

            let end_of_packet = status & regs::DESC_STATUS_EOP != 0;
            // A length past the longest frame, all the buffer holds, would be the device's fault;
            // it is dropped as a length error.
            let good = errors == 0
                && end_of_packet
                && !self.discarding
                && (ETH_HLEN..=regs::MAX_FRAME_LEN).contains(&length);
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
            } else {
                // SAFETY: From the NAPI poll (safety requirement); the device is done with the
                // descriptor and wrote `length` bytes, at most the buffer's size (`good`).
                match unsafe { self.take_frame(i, length, napi, rx_checksum) } {
                    Some(skb) => {
                        done.frames.packets += 1;
                        done.frames.bytes += u64::from(length);
                        deliver(skb);
                    }
                    // No memory: the buffer stays on the descriptor, the frame is dropped.
                    None => done.dropped += 1,
                }
            }
            let addr = match (&self.copy, self.slots[i].as_ref()) {
                (Some(copy), _) => copy.dma(i).ok(),
                (None, Some(slot)) => Some(slot.mapping.dma_handle()),
                (None, None) => None,
            };
            if let Some(addr) = addr {
                let _ = dma_write!(self.desc, i, buffer_addr, Le64::new(addr));
                let _ = dma_write!(self.desc, i, status, 0);
            }
            tail = Some(i);
            self.next_to_clean = next(i);
        }
        (done, tail)
    }
}

impl RxRing<'_> {
    /// The frame in descriptor `i`'s buffer as an skb, leaving the descriptor a buffer: copied out
    /// of a coherent buffer or of a mapped one (frames up to [`RX_COPYBREAK`]), or handed over
    /// with a fresh buffer in its place. `None` when memory ran out (or a copy failed its bounds
    /// check); the old buffer stays.
    ///
    /// # Safety
    ///
    /// Called from the NAPI poll; the device is done with descriptor `i` and wrote `length` bytes,
    /// at most the buffer's size.
    #[inline]
    unsafe fn take_frame(
        &mut self,
        i: usize,
        length: u16,
        napi: Napi,
        rx_checksum: bool,
    ) -> Option<Skb> {
        if let Some(copy) = &self.copy {
            // Room for `copy_out`'s whole words.
            // SAFETY: From the NAPI poll (safety requirement).
            let mut skb = unsafe { napi.alloc_skb(u32::from(length).next_multiple_of(8)) }?;
            // SAFETY: A fresh skb has room for `length` rounded up to 8 bytes at `data`.
            let checksum = unsafe { copy.copy_out(i, skb.data(), usize::from(length)) }.ok()?;
            skb.put(u32::from(length));
            if rx_checksum {
                skb.set_checksum_complete(checksum);
            }
            return Some(skb);
        }
        if length <= RX_COPYBREAK {
            let slot = self.slots[i].as_mut().expect("type invariant");
            // SAFETY: From the NAPI poll (safety requirement).
            let mut skb = unsafe { napi.alloc_skb(u32::from(length)) }?;
            // Only the frame's bytes, as the C driver syncs them: a bounce buffer copies no more.
            // In range: `length` is at most the buffer's size (`good`).
            slot.mapping
                .sync_range_for_cpu(0, usize::from(length))
                .ok()?;
            // SAFETY: The buffer holds the `length` bytes the device wrote, synced for the CPU;
            // the fresh skb has room for `length` bytes at `data`.
            unsafe {
                core::ptr::copy_nonoverlapping(slot.buffer.frame(), skb.data(), usize::from(length))
            };
            slot.mapping
                .sync_range_for_device(0, usize::from(length))
                .ok()?;
            skb.put(u32::from(length));
            return Some(skb);
        }
        // SAFETY: From the NAPI poll (safety requirement).
        let fresh = self.map(unsafe { RxBuffer::alloc_in_poll() }?)?;
        let Slot { mapping, buffer } = self.slots[i].replace(fresh).expect("type invariant");
        drop(mapping);
        // SAFETY: Unmapped, so the device no longer writes it; `length` is at most the buffer's
        // size, and this is the NAPI poll (safety requirements).
        unsafe { buffer.into_skb(u32::from(length)) }
    }
}
