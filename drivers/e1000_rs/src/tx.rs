// SPDX-License-Identifier: GPL-2.0

//! The transmit ring: descriptors in `dma_local` coherent memory, frames mapped with `dma_local`
//! streaming mappings (the socket buffers), or copied into coherent buffers with `tx_copy`.
//! Mapping costs fewest instructions (see `DESIGN.md`).

use core::{
    cell::UnsafeCell,
    // Not `kernel::sync::atomic`, whose every access is a call to a C helper (a kernel built with
    // GCC cannot inline them into Rust): four such calls on every frame sent. Both ends of the
    // ring are Rust, so the Rust memory model's acquire and release order them, plain moves on
    // x86. Stopping and waking the queue, where these loads meet the stack's queue bits, is
    // ordered by the kernel's full barrier (`smp_mb`) on both sides instead (see `adapter.rs`).
    sync::atomic::{AtomicUsize, Ordering::Acquire, Ordering::Relaxed, Ordering::Release},
};

use kernel::{
    bindings,
    device::{Bound, Device},
    prelude::*,
};

use crate::desc::TxDesc;
use crate::dma_local::{Attrs, Coherent, Direction, DmaAddress, Gfp, Mapping};
use crate::dma_read;
use crate::offload::Offload;
use crate::regs;
use crate::ring_common::{CopyBuffers, Done, RingSize};
use crate::skb::Skb;

/// The longest skb the stack hands over: 64 KiB, its segmentation limit (`GSO_LEGACY_MAX_SIZE`,
/// which the driver does not raise).
const MAX_SKB_LEN: usize = 64 * 1024;
/// The most descriptors a frame takes: a context, and its pieces (the linear part and up to
/// `MAX_SKB_FRAGS` page fragments, 17 by default and up to 45 as the kernel is configured) in
/// [`MAX_DATA_PER_DESC`] chunks, each piece at most one chunk more than its bytes fill. The C
/// driver's `MAX_SKB_FRAGS + 7` (`desc_needed`) is alike, with descriptors for errata of other
/// controllers.
const MAX_FRAME_DESCS: usize =
    1 + MAX_SKB_LEN / MAX_DATA_PER_DESC + (bindings::MAX_SKB_FRAGS as usize + 1);
/// The queue is stopped when fewer descriptors than this are free, enough for the largest frame,
/// and woken at twice that, or on the smallest rings once they are empty.
const TX_STOP_THRESHOLD: usize = MAX_FRAME_DESCS;
/// The least transmit ring: the largest frame fits with the descriptor that stays unused, so that
/// a frame stopped for room always goes once the ring empties (`ethtool -G` raises a smaller count
/// to it).
pub(crate) const TX_RING_MIN: u32 = {
    let fits = (TX_STOP_THRESHOLD as u32 + 1).next_multiple_of(8);
    if fits > RingSize::MIN {
        fits
    } else {
        RingSize::MIN
    }
};
const _: () = assert!(TX_STOP_THRESHOLD < TX_RING_MIN as usize);
const _: () = assert!(TX_RING_MIN <= RingSize::MAX);
/// A frame on the transmit ring, recorded at its first descriptor.
struct TxPacket {
    skb: Skb,
    /// The descriptor that ends it (EOP, RS): when the device is done with that one, it is done
    /// with the frame.
    last: usize,
    /// The skb's length, as byte queue limits were told when it was queued.
    len: u32,
    /// What goes on the wire: one frame, or the segments a segmentation offload makes, with their
    /// headers (counted as the C driver counts them).
    wire: Done,
}

/// What a transmit clean-up finished: the frames and skb bytes for byte queue limits, and the
/// packets and bytes on the wire for the counters.
#[derive(Default, Clone, Copy)]
pub(crate) struct TxDone {
    pub(crate) frames: u32,
    pub(crate) queued_bytes: u32,
    pub(crate) wire: Done,
}

/// The transmit ring, shared without a lock by its two ends, as in the C driver: the producer
/// ([`TxProducer`], in `ndo_start_xmit`) queues frames and the consumer ([`TxConsumer`], in the
/// NAPI poll) frees the ones the device sent. A lock would make each end wait while the other runs,
/// and for long when the holder's CPU is preempted (as a virtual CPU often is).
///
/// # Invariants
///
/// - Descriptors `[next_to_clean, next_to_use)` belong to the device, frame after frame: each frame
///   starts with its (optional) context descriptor and has its [`TxPacket`] at that first index,
///   with `last` its final descriptor; `next_to_clean` is always the start of a frame.
/// - `mappings[i]` maps the data that descriptor `i` points at first; a buffer longer than
///   [`MAX_DATA_PER_DESC`] continues on the next descriptors, which have no mapping of their own.
/// - The consumer alone accesses the descriptors, mappings and packets at `[next_to_clean,
///   next_to_use)`, and alone stores `next_to_clean`, with release ordering once it is done with
///   the entries before it; the producer alone accesses every other index and `producer`, and
///   alone stores `next_to_use`, with release ordering once the entries before it are complete.
pub(crate) struct TxRing<'a> {
    dev: &'a Device<Bound>,
    size: RingSize,
    /// Free descriptors at which a stopped queue wakes.
    wake_threshold: usize,
    desc: Coherent<'a, TxDesc>,
    // Before `packets`, so that tearing down unmaps every piece before freeing the skbs.
    mappings: KVec<UnsafeCell<Option<Mapping<'a>>>>,
    packets: KVec<UnsafeCell<Option<TxPacket>>>,
    next_to_use: AtomicUsize,
    next_to_clean: AtomicUsize,
    producer: UnsafeCell<ProducerState<'a>>,
}

// SAFETY: The producer and the consumer may run at once, on two CPUs or nested on one (a frame the
// poll receives may be answered from within it); each accesses only the entries and state it owns,
// and passes entries to the other with a release store of its index that the other loads with
// acquire ordering (type invariant). What moves between them (mappings, skbs) is `Send`.
unsafe impl Sync for TxRing<'_> {}

/// What only the producer uses.
struct ProducerState<'a> {
    /// The checksum offsets of the last checksum context descriptor sent; `None` after a
    /// segmentation context, which replaces it in the hardware.
    context: Option<(u8, u8)>,
    /// Copy frames into these instead of mapping them.
    copy: Option<CopyBuffers<'a>>,
}

/// Bytes one transmit descriptor carries at most (the C driver's limit for this controller).
const MAX_DATA_PER_DESC: usize = 4096;

impl<'a> TxRing<'a> {
    /// A transmit ring of `size` descriptors that maps frames for the device, or copies them into
    /// coherent buffers.
    pub(crate) fn new(dev: &'a Device<Bound>, size: RingSize, copy: bool) -> Result<Self> {
        let count = size.get();
        let mut mappings = KVec::with_capacity(count, GFP_KERNEL)?;
        let mut packets = KVec::with_capacity(count, GFP_KERNEL)?;
        for _ in 0..count {
            mappings.push(UnsafeCell::new(None), GFP_KERNEL)?;
            packets.push(UnsafeCell::new(None), GFP_KERNEL)?;
        }
        Ok(Self {
            dev,
            size,
            wake_threshold: (2 * TX_STOP_THRESHOLD).min(count - 1),
            desc: Coherent::alloc(dev, count, Gfp::KERNEL)?,
            mappings,
            packets,
            next_to_use: AtomicUsize::new(0),
            next_to_clean: AtomicUsize::new(0),
            producer: UnsafeCell::new(ProducerState {
                context: None,
                copy: if copy {
                    Some(CopyBuffers::new(dev, size, MAX_DATA_PER_DESC)?)
                } else {
                    None
                },
            }),
        })
    }

    /// Base address and length in bytes, for TDBAL/TDBAH/TDLEN.
    pub(crate) fn base(&self) -> (DmaAddress, usize) {
        (self.desc.dma_handle(), self.desc.size())
    }

    /// Free descriptors between the producer at `next_to_use` and the consumer at
    /// `next_to_clean`; one stays unused so that a full ring differs from an empty one.
    #[inline]
    fn free_between(&self, next_to_use: usize, next_to_clean: usize) -> usize {
        let count = self.size.get();
        let used = if next_to_use >= next_to_clean {
            next_to_use - next_to_clean
        } else {
            next_to_use + count - next_to_clean
        };
        count - 1 - used
    }

    /// The producer end.
    ///
    /// # Safety
    ///
    /// No other [`TxProducer`] of this ring exists while the returned one does.
    pub(crate) unsafe fn producer(&self) -> TxProducer<'_, 'a> {
        TxProducer {
            ring: self,
            // SAFETY: Only the producer accesses `producer` (type invariant), and there is one.
            state: unsafe { &mut *self.producer.get() },
            next_to_use: self.next_to_use.load(Relaxed),
        }
    }

    /// The consumer end.
    ///
    /// # Safety
    ///
    /// No other [`TxConsumer`] of this ring exists while the returned one does.
    pub(crate) unsafe fn consumer(&self) -> TxConsumer<'_, 'a> {
        TxConsumer {
            ring: self,
            next_to_clean: self.next_to_clean.load(Relaxed),
        }
    }
}

/// The end of a [`TxRing`] that queues frames.
///
/// # Invariants
///
/// It is the ring's only producer; `next_to_use` is the ring's, which only it stores.
pub(crate) struct TxProducer<'r, 'a> {
    ring: &'r TxRing<'a>,
    state: &'r mut ProducerState<'a>,
    next_to_use: usize,
}

impl<'a> TxProducer<'_, 'a> {
    #[inline]
    fn free(&self) -> usize {
        self.ring
            .free_between(self.next_to_use, self.ring.next_to_clean.load(Acquire))
    }

    /// Writes descriptor `i`, which the producer owns.
    #[inline]
    fn write(&self, i: usize, desc: TxDesc) -> Result {
        // SAFETY: Only the producer accesses descriptors outside `[next_to_clean, next_to_use)`
        // (type invariant), and `push` writes only descriptors it found free.
        unsafe { self.ring.desc.write_shared(i, desc) }
    }

    /// Sets the mapping of descriptor `i`, which the producer owns.
    #[inline]
    fn set_mapping(&mut self, i: usize, mapping: Option<Mapping<'a>>) {
        // SAFETY: As in `write`.
        unsafe { *self.ring.mappings[i].get() = mapping };
    }

    /// Queues `skb`, its linear part and page fragments each on as many descriptors as they need;
    /// returns whether it was queued: the skb comes back when the ring is full, and a frame that
    /// cannot be offloaded or mapped is dropped (`Ok(false)`). [`TxProducer::tail`] is TDT's new
    /// value.
    pub(crate) fn push(&mut self, mut skb: Skb) -> core::result::Result<bool, Skb> {
        let Ok(offload) = Offload::for_frame(&mut skb) else {
            return Ok(false);
        };
        let (context, hardware_context) = offload.context(self.state.context);
        let vlan = skb.vlan_tag();
        // The linear part is piece 0, page fragment `f` piece `f + 1`.
        let head_len = skb.head_len();
        let frags = skb.frag_count();
        let piece_len = |p: u32| {
            if p == 0 {
                head_len
            } else {
                // SAFETY: `p - 1` is below the fragment count.
                unsafe { skb.frag_len(p - 1) }
            }
        };
        let mut data_descs = 0;
        for p in 0..=frags {
            data_descs += (piece_len(p) as usize).div_ceil(MAX_DATA_PER_DESC);
        }
        let needed = data_descs + usize::from(context.is_some());
        // Not even an empty ring holds it (not with a ring of `TX_RING_MIN` or more): dropped and
        // counted, not handed back to be retried for ever.
        if data_descs == 0 || needed >= self.ring.size.get() {
            return Ok(false);
        }
        // From here on, the descriptors `[start, start + needed)` are free: the producer's.
        if self.free() < needed {
            return Err(skb);
        }

        let start = self.next_to_use;
        let mut i = start;
        if let Some(context) = context {
            if self.write(i, context.into()).is_err() {
                return Ok(false);
            }
            self.state.context = hardware_context;
            i = self.ring.size.next(i);
        }

        let mut descs_left = data_descs;
        let mut last = i;
        for p in 0..=frags {
            let len = piece_len(p) as usize;
            if len == 0 {
                continue;
            }
            let ptr = if p == 0 {
                skb.data()
            } else {
                // SAFETY: `p - 1` is below the fragment count.
                unsafe { skb.frag_address(p - 1) }
            };
            let mapping = if self.state.copy.is_some() {
                None
            } else {
                // SAFETY: The skb's linear part and fragments are slab or page memory that the skb
                // keeps until this frame's `TxPacket` is dropped, after every mapping of the frame;
                // the CPU does not touch them meanwhile.
                match unsafe {
                    Mapping::new(self.ring.dev, ptr, len, Direction::ToDevice, Attrs::NONE)
                } {
                    Ok(m) => Some(m),
                    Err(_) => return self.unwind(start, i),
                }
            };
            let first = i;
            let mut offset = 0;
            while offset < len {
                let chunk = (len - offset).min(MAX_DATA_PER_DESC);
                let addr = match (&mapping, self.state.copy.as_mut()) {
                    (Some(mapping), _) => Ok(mapping.dma_handle() + offset as u64),
                    (None, Some(copy)) => {
                        // SAFETY: `ptr + offset .. + chunk` lies within the piece.
                        unsafe { copy.fill(i, ptr.add(offset), chunk) }.and_then(|()| copy.dma(i))
                    }
                    (None, None) => Err(EINVAL),
                };
                let Ok(addr) = addr else {
                    return self.unwind(start, i);
                };
                descs_left -= 1;
                // The last descriptor ends the frame and reports its status.
                let desc = offload.data(addr, chunk as u16, descs_left == 0, vlan);
                if self.write(i, desc).is_err() {
                    return self.unwind(start, i);
                }
                last = i;
                i = self.ring.size.next(i);
                offset += chunk;
            }
            self.set_mapping(first, mapping);
        }
        let len = skb.len();
        let wire = offload.wire(len);
        // SAFETY: As in `write`: `start` is the frame's first descriptor, still the producer's.
        unsafe {
            *self.ring.packets[start].get() = Some(TxPacket {
                skb,
                last,
                len,
                wire,
            })
        };
        // Hands the frame to the consumer, after everything above.
        self.next_to_use = i;
        self.ring.next_to_use.store(i, Release);
        Ok(true)
    }

    /// Gives up a frame whose descriptors `[start, end)` were written but not handed to the device:
    /// unmaps what was mapped and drops the frame.
    fn unwind(&mut self, start: usize, end: usize) -> core::result::Result<bool, Skb> {
        let mut i = start;
        while i != end {
            self.set_mapping(i, None);
            i = self.ring.size.next(i);
        }
        // A context descriptor among them was never sent.
        self.state.context = None;
        Ok(false)
    }

    /// The descriptor after the last queued frame: what TDT hands over.
    #[inline]
    pub(crate) fn tail(&self) -> usize {
        self.next_to_use
    }

    /// Whether the queue must stop until descriptors come back: the next frame might not fit.
    #[inline]
    pub(crate) fn nearly_full(&self) -> bool {
        self.free() < TX_STOP_THRESHOLD
    }

    /// Whether a queue stopped for lack of room may run again.
    pub(crate) fn has_room(&self) -> bool {
        self.free() >= self.ring.wake_threshold
    }
}

/// The end of a [`TxRing`] that frees sent frames.
///
/// # Invariants
///
/// It is the ring's only consumer; `next_to_clean` is the ring's, which only it stores.
pub(crate) struct TxConsumer<'r, 'a> {
    ring: &'r TxRing<'a>,
    next_to_clean: usize,
}

impl TxConsumer<'_, '_> {
    /// Frees every frame the device has sent.
    pub(crate) fn clean(&mut self, budget: i32) -> TxDone {
        let mut done = TxDone::default();
        let ring = self.ring;
        let next_to_use = ring.next_to_use.load(Acquire);
        while self.next_to_clean != next_to_use {
            let start = self.next_to_clean;
            // SAFETY: `start` is in `[next_to_clean, next_to_use)`: the consumer's (type
            // invariant); the acquire load above ordered the producer's writes before this.
            let packet = unsafe { &mut *ring.packets[start].get() };
            let Some(last) = packet.as_ref().map(|p| p.last) else {
                // Not a frame's start: the type invariant is broken; stop rather than guess.
                break;
            };
            let status = dma_read!(ring.desc, last, status).unwrap_or(0);
            if status & regs::DESC_STATUS_DD == 0 {
                break;
            }
            let mut i = start;
            loop {
                // SAFETY: `[start, last]` is a frame the producer handed over, the consumer's.
                unsafe { *ring.mappings[i].get() = None };
                if i == last {
                    break;
                }
                i = self.ring.size.next(i);
            }
            if let Some(TxPacket { skb, len, wire, .. }) = packet.take() {
                skb.consume(budget);
                done.frames += 1;
                done.queued_bytes += len;
                done.wire.packets += wire.packets;
                done.wire.bytes += wire.bytes;
            }
            self.next_to_clean = ring.size.next(last);
        }
        // Gives the freed descriptors back to the producer, after everything above.
        ring.next_to_clean.store(self.next_to_clean, Release);
        done
    }

    /// Whether a queue stopped for lack of room may run again.
    pub(crate) fn has_room(&self) -> bool {
        let ring = self.ring;
        ring.free_between(ring.next_to_use.load(Acquire), self.next_to_clean) >= ring.wake_threshold
    }

    /// Whether the ring holds no frame, sent or not, that is left to free. A frame queued
    /// meanwhile may be missed: its transmit path chose how its completion is noticed.
    pub(crate) fn is_empty(&self) -> bool {
        self.ring.next_to_use.load(Relaxed) == self.next_to_clean
    }
}
