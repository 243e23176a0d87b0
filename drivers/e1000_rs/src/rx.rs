// SPDX-License-Identifier: GPL-2.0

//! The receive ring: descriptors in `dma_local` coherent memory, each with a page fragment mapped
//! with a `dma_local` streaming mapping for the device to write a frame into, or with `rx_copy`
//! a coherent buffer that frames are copied out of. Mapping costs fewest instructions (see
//! `DESIGN.md`). Above a 1500-byte MTU, long packets are on and a frame fills as many buffers as
//! it needs: mapped buffers become the skb's page fragments, copied ones are copied one after
//! the other.

use kernel::{
    device::{Bound, Device},
    prelude::*,
};

use crate::desc::{Le16, Le64, RxDesc};
use crate::dma_local::{self, Attrs, Coherent, Direction, DmaAddress, Gfp, Mapping};
use crate::netdev::{Napi, NetDev};
use crate::regs;
use crate::ring_common::{CopyBuffers, Done, RingSize, ETH_HLEN};
use crate::skb::{RxBuffer, RxBufferLen, Skb};
use crate::{dma_read, dma_write};

/// Received frames up to this long are copied into a fresh skb, and their buffer stays on the
/// descriptor: cheaper than unmapping it and mapping a new one (pings, TCP acknowledgements).
const RX_COPYBREAK: u16 = 256;
/// An 802.1Q tag, which a received frame may carry on top of the MTU's.
const VLAN_HLEN: u16 = 4;
/// The standard MTU, above which long packets are on.
const ETH_DATA_LEN: u32 = 1500;
/// The Frame Check Sequence the MAC strips (RCTL.SECRC) unless `rx-fcs` keeps it.
const ETH_FCS_LEN: u16 = 4;

/// The frames the receiver takes: by the interface's MTU, and whether those the MAC would drop
/// pass too (`rx-all`).
///
/// # Invariants
///
/// `max_len` is at least [`regs::MAX_FRAME_LEN`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct RxFrames {
    max_len: u16,
    /// Long packets on: above a 1500-byte MTU, as in the C driver (the MAC's limit of 1522 bytes
    /// counts the CRC, so from 1501 bytes a tagged frame would not pass).
    long: bool,
    /// Bad frames stored (RCTL.SBP): damaged ones, and ones longer than the MTU's, up to a
    /// buffer's size.
    bad: bool,
}

impl RxFrames {
    /// The frames of an MTU of `mtu` bytes: up to 1522 bytes (1500 and a VLAN tag, all the MAC
    /// passes with long packets off) for an MTU up to 1500, else the MTU's frame and a VLAN tag,
    /// with long packets on; bad frames dropped. `None` past what a frame length can say.
    pub(crate) fn for_mtu(mtu: u32) -> Option<Self> {
        let len = u16::try_from(mtu).ok()?.checked_add(ETH_HLEN + VLAN_HLEN)?;
        // INVARIANT: raised to `MAX_FRAME_LEN`.
        Some(Self {
            max_len: len.max(regs::MAX_FRAME_LEN),
            long: mtu > ETH_DATA_LEN,
            bad: false,
        })
    }

    /// The same frames, bad ones passing or not.
    pub(crate) fn with_bad(self, bad: bool) -> Self {
        Self { bad, ..self }
    }

    /// The longest frame, in bytes.
    pub(crate) fn max_len(self) -> u16 {
        self.max_len
    }

    /// Whether frames may be longer than one buffer: RCTL.LPE.
    pub(crate) fn long(self) -> bool {
        self.long
    }

    /// Whether bad frames pass: RCTL.SBP.
    pub(crate) fn bad(self) -> bool {
        self.bad
    }

    /// The receive buffers these frames need: as long as RCTL.BSIZE says (2048 bytes) where a
    /// frame may fill it, long packets or bad ones; otherwise only the longest frame the MAC
    /// passes, so that two buffers share a page.
    fn buffer_len(self) -> RxBufferLen {
        if self.long || self.bad {
            RxBufferLen::Long
        } else {
            RxBufferLen::Standard
        }
    }
}

impl Default for RxFrames {
    /// The frames of the default 1500-byte MTU, bad ones dropped.
    fn default() -> Self {
        Self {
            max_len: regs::MAX_FRAME_LEN,
            long: false,
            bad: false,
        }
    }
}

/// A receive buffer lent to the device; the mapping is declared first so that it is unmapped before
/// the buffer is freed.
struct Slot<'a> {
    mapping: Mapping<'a>,
    buffer: RxBuffer,
}

/// What a receive pass saw besides good frames.
#[derive(Default, Clone, Copy)]
pub(crate) struct RxDone {
    /// Descriptors the pass took from the device: the poll's work, which a long frame spreads over
    /// several (counting frames would end the poll with finished descriptors left behind).
    pub(crate) descriptors: usize,
    pub(crate) frames: Done,
    pub(crate) errors: u64,
    pub(crate) length_errors: u64,
    pub(crate) dropped: u64,
}

/// The receive ring.
///
/// # Invariants
///
/// - Every descriptor holds the address of its buffer: `slots[i]`, or buffer `i` of `copy`.
/// - Each mapped buffer holds `frames.buffer_len()` bytes of frame.
pub(crate) struct RxRing<'a> {
    dev: &'a Device<Bound>,
    size: RingSize,
    frames: RxFrames,
    /// Bytes one buffer holds: a coherent buffer's 2048, or a mapped one's frame part.
    piece_len: u16,
    desc: Coherent<'a, RxDesc>,
    slots: KVec<Option<Slot<'a>>>,
    next_to_clean: usize,
    /// Inside a frame that is dropped: drop its buffers until its end.
    discarding: bool,
    /// The buffers of a long frame received so far, and their length, until its last.
    partial: Option<(Skb, u16)>,
    /// Receive into these and copy out, instead of into mapped page fragments; then `slots` stays
    /// empty.
    copy: Option<CopyBuffers<'a>>,
}

impl<'a> RxRing<'a> {
    /// A ring of `size` descriptors for `frames`, with a buffer on every descriptor: a mapped page
    /// fragment, or a coherent buffer to copy from.
    pub(crate) fn new(
        dev: &'a Device<Bound>,
        size: RingSize,
        frames: RxFrames,
        copy: bool,
    ) -> Result<Self> {
        let count = size.get();
        let mut ring = Self {
            dev,
            size,
            frames,
            piece_len: if copy {
                regs::RX_BUFFER_SIZE
            } else {
                frames.buffer_len().frame_len() as u16
            },
            desc: Coherent::alloc(dev, count, Gfp::KERNEL)?,
            slots: KVec::with_capacity(count, GFP_KERNEL)?,
            next_to_clean: 0,
            discarding: false,
            partial: None,
            copy: if copy {
                Some(CopyBuffers::new(
                    dev,
                    size,
                    usize::from(regs::RX_BUFFER_SIZE),
                )?)
            } else {
                None
            },
        };
        for i in 0..count {
            let (slot, addr) = match &ring.copy {
                Some(copy) => (None, copy.dma(i)?),
                None => {
                    let buffer = RxBuffer::alloc(frames.buffer_len()).ok_or(ENOMEM)?;
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

    /// The last descriptor, which RDT starts at: every other one is the device's.
    pub(crate) fn last(&self) -> usize {
        self.size.get() - 1
    }

    /// Base address and length in bytes, for RDBAL/RDBAH/RDLEN.
    pub(crate) fn base(&self) -> (DmaAddress, usize) {
        (self.desc.dma_handle(), self.desc.size())
    }

    /// A slot for a fresh buffer, mapped for the device to write (`None` if mapping failed; the
    /// buffer is freed).
    #[inline]
    fn map(&self, buffer: RxBuffer) -> Option<Slot<'a>> {
        // SAFETY: A fresh buffer has `frame_len()` bytes of page memory at `frame`, owned by the
        // slot until the device filled it.
        let mapping = unsafe {
            Mapping::new(
                self.dev,
                buffer.frame(),
                buffer.frame_len(),
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
        let features = netdev.features();
        // With `rx-fcs`, RCTL.SECRC is off and the hardware leaves the FCS in the frame.
        let fcs = if features.rx_fcs() { ETH_FCS_LEN } else { 0 };
        let max_len = self.frames.max_len.saturating_add(fcs);
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
            let frame = if self.discarding {
                // The rest of a frame already counted and dropped.
                self.discarding = !end_of_packet;
                self.recycle(i);
                None
            } else if errors & regs::RX_ERR_FRAME != 0 && !self.frames.bad {
                // A damaged frame, delivered only with `rx-all`. A checksum error (IPE, TCPE) is
                // not one: the frame is delivered, and the stack checks its checksum (the driver
                // never marks one checked by the device).
                done.errors += 1;
                self.drop_frame(i, end_of_packet);
                None
            } else if !end_of_packet || self.partial.is_some() {
                // SAFETY: From the NAPI poll (safety requirement); the device is done with the
                // descriptor.
                unsafe { self.add_piece(i, length, max_len, end_of_packet, napi, &mut done) }
            } else if !(ETH_HLEN..=self.piece_len).contains(&length)
                || (length > max_len && !self.frames.bad)
            {
                // A frame longer than the MTU's (which `rx-all` lets through, as the MAC does with
                // RCTL.SBP), or than the buffer holds (the device's fault).
                done.length_errors += 1;
                self.drop_frame(i, end_of_packet);
                None
            } else {
                // SAFETY: From the NAPI poll (safety requirement); the device is done with the
                // descriptor and wrote `length` bytes, at most the buffer's size (checked above).
                let frame = unsafe { self.take_frame(i, length, napi, features.rx_checksum()) };
                // No memory: the buffer stays on the descriptor, the frame is dropped.
                done.dropped += u64::from(frame.is_none());
                frame
            };
            if let Some(mut skb) = frame {
                // The tag the MAC stripped (CTRL.VME), in the frame's last descriptor.
                if status & regs::RX_STATUS_VP != 0 {
                    let tag = dma_read!(self.desc, i, special).map_or(0, Le16::get);
                    skb.set_vlan_tag(tag);
                }
                done.frames.packets += 1;
                // Bytes of the frames, not of their FCS (as the C driver counts).
                done.frames.bytes += u64::from(skb.len().saturating_sub(fcs.into()));
                deliver(skb);
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
            self.next_to_clean = self.size.next(i);
        }
        done.descriptors = seen;
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
            // In range: `length` is at most the buffer's size (checked by `clean`).
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
        let fresh = self.map(unsafe { RxBuffer::alloc_in_poll(self.frames.buffer_len()) }?)?;
        let Slot { mapping, buffer } = self.slots[i].replace(fresh).expect("type invariant");
        drop(mapping);
        // SAFETY: Unmapped, so the device no longer writes it; `length` is at most the buffer's
        // size, and this is the NAPI poll (safety requirements).
        unsafe { buffer.into_skb(u32::from(length)) }
    }

    /// Leaves descriptor `i`'s buffer where it is, for the device to fill again.
    fn recycle(&mut self, i: usize) {
        if let Some(slot) = self.slots[i].as_mut() {
            slot.mapping.sync_for_device();
        }
    }

    /// Drops the frame descriptor `i` is part of, and its buffers until its end.
    fn drop_frame(&mut self, i: usize, end_of_packet: bool) {
        self.partial = None;
        self.discarding = !end_of_packet;
        self.recycle(i);
    }

    /// Adds descriptor `i`'s `length` bytes to the long frame received so far, and returns the
    /// frame at its end. A frame longer than `max_len` (the MTU's, and its FCS when kept: at most
    /// `frames.max_len` and an FCS; `rx-all` does not lift it for frames of several buffers) is
    /// counted as a length error, one that finds no memory as dropped, and either is dropped to its
    /// end.
    ///
    /// # Safety
    ///
    /// Called from the NAPI poll; the device is done with descriptor `i`.
    unsafe fn add_piece(
        &mut self,
        i: usize,
        length: u16,
        max_len: u16,
        end_of_packet: bool,
        napi: Napi,
        done: &mut RxDone,
    ) -> Option<Skb> {
        let so_far = self.partial.as_ref().map_or(0, |(_, len)| *len);
        let total = so_far.saturating_add(length);
        if !self.frames.long()
            || length == 0
            || length > self.piece_len
            || total > max_len
            || (end_of_packet && total < ETH_HLEN)
            || (self.partial.is_none() && length < ETH_HLEN)
        {
            // Long frames when long packets are off are the device's fault, as is a first buffer
            // shorter than an Ethernet header (the device fills a buffer before the next): a
            // mapped one becomes the skb's head, from which `eth_type_trans` pulls the header,
            // and BUGs when the head holds less.
            done.length_errors += 1;
            self.drop_frame(i, end_of_packet);
            return None;
        }
        // SAFETY: From the NAPI poll; the device is done with descriptor `i` and wrote `length`
        // bytes, at most the buffer's size (checked above).
        if unsafe { self.append(i, length, napi) }.is_err() {
            done.dropped += 1;
            self.drop_frame(i, end_of_packet);
            return None;
        }
        if let Some((_, len)) = self.partial.as_mut() {
            *len = total;
        }
        if end_of_packet {
            self.partial.take().map(|(skb, _)| skb)
        } else {
            None
        }
    }

    /// Appends descriptor `i`'s `length` bytes to the long frame received so far, or starts it:
    /// a mapped buffer becomes the frame's skb or one of its page fragments and the descriptor gets
    /// a fresh buffer; a coherent buffer's bytes are copied into an skb made for the longest frame.
    ///
    /// # Safety
    ///
    /// Called from the NAPI poll; the device is done with descriptor `i` and wrote `length`
    /// bytes, at most the buffer's size; the frame so far and `length` fit `frames.max_len` and
    /// an FCS.
    unsafe fn append(&mut self, i: usize, length: u16, napi: Napi) -> Result {
        if let Some(copy) = &self.copy {
            if self.partial.is_none() {
                // Room for `copy_piece`'s whole words past the longest frame and its FCS.
                let room = u32::from(self.frames.max_len) + u32::from(ETH_FCS_LEN) + 8;
                // SAFETY: From the NAPI poll (safety requirement).
                let skb = unsafe { napi.alloc_skb(room) }.ok_or(ENOMEM)?;
                self.partial = Some((skb, 0));
            }
            let (skb, so_far) = self.partial.as_mut().ok_or(EINVAL)?;
            // SAFETY: The skb has room for `max_len` bytes, an FCS and 8 more at `data` (allocated
            // above), and `so_far + length` is at most `max_len` and an FCS (safety requirement).
            unsafe {
                copy.copy_piece(i, skb.data().add(usize::from(*so_far)), usize::from(length))
            }?;
            skb.put(u32::from(length));
            return Ok(());
        }
        // SAFETY: From the NAPI poll (safety requirement).
        let fresh = unsafe { RxBuffer::alloc_in_poll(self.frames.buffer_len()) };
        let fresh = fresh.and_then(|buffer| self.map(buffer)).ok_or(ENOMEM)?;
        let Slot { mapping, buffer } = self.slots[i].replace(fresh).ok_or(EINVAL)?;
        // Unmapped: the device no longer writes it, and the CPU sees what it wrote.
        drop(mapping);
        match self.partial.as_mut() {
            // SAFETY: Unmapped; `length` is at most the buffer's size (safety requirement).
            Some((skb, _)) => unsafe { buffer.append_to(skb, u32::from(length)) }
                // More pieces than an skb has fragments for: not with this MTU and buffer size.
                .map_err(|_| EINVAL),
            None => {
                // SAFETY: Unmapped; `length` is at most the buffer's size, and this is the NAPI
                // poll (safety requirements).
                let skb = unsafe { buffer.into_skb(u32::from(length)) }.ok_or(ENOMEM)?;
                self.partial = Some((skb, 0));
                Ok(())
            }
        }
    }
}
