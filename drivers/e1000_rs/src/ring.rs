// SPDX-License-Identifier: GPL-2.0

//! The transmit and receive descriptor rings: descriptors in `dma_local` coherent memory. Packet
//! data goes either through memory mapped with `dma_local` streaming mappings (the socket buffers
//! sent, page fragments received into), or through `dma_local` coherent buffers the frames are
//! copied into or out of ([`CopyBuffers`]). By default both map, which costs fewest instructions
//! (see the README).

use core::{
    cell::UnsafeCell,
    // Not `kernel::sync::atomic`, whose every access is a call to a C helper (a kernel built with
    // GCC cannot inline them into Rust): four such calls on every frame sent. Both ends of a ring
    // are Rust, so the Rust memory model's acquire and release order them, plain moves on x86.
    // Stopping and waking the queue, where these loads meet the stack's queue bits, is ordered by
    // the kernel's full barrier (`smp_mb`) on both sides instead (see `driver.rs`).
    sync::atomic::{AtomicUsize, Ordering::Acquire, Ordering::Relaxed, Ordering::Release},
};

use kernel::{
    device::{Bound, Device},
    prelude::*,
    transmute::{AsBytes, FromBytes},
};

use crate::dma_local::{self, Attrs, Coherent, Direction, DmaAddress, Gfp, Mapping};
use crate::netdev::{Napi, NetDev, RxBuffer, Skb, Tso};
use crate::regs;
use crate::{dma_read, dma_write};

/// Descriptors per ring (the C driver's default).
pub(crate) const RING_SIZE: usize = 256;
/// Receive buffer size, 2048 bytes, as RCTL.BSIZE = 0 selects: the coherent buffers of `rx_copy`.
pub(crate) const RX_BUFFER_SIZE: u32 = 2048;
const _: () = assert!(regs::MAX_FRAME_LEN as u32 <= RX_BUFFER_SIZE);
/// The queue is stopped when fewer descriptors than this are free, enough for the largest frame (a
/// context, 64 KiB in 4 KiB pieces, and a piece more for each of up to 17 fragments and the linear
/// part), and woken at [`TX_WAKE_THRESHOLD`].
const TX_STOP_THRESHOLD: usize = 1 + 16 + 18;
const TX_WAKE_THRESHOLD: usize = 2 * TX_STOP_THRESHOLD;
/// Received frames up to this long are copied into a fresh skb, and their buffer stays on the
/// descriptor: cheaper than unmapping it and mapping a new one (pings, TCP acknowledgements).
const RX_COPYBREAK: u16 = 256;
/// Shortest frame the stack can use: an Ethernet header.
const ETH_HLEN: u16 = 14;
// `CopyBuffers::copy_out` leaves the header out of the checksum word by word.
const _: () = assert!(ETH_HLEN == 14);

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

#[inline]
fn next(i: usize) -> usize {
    (i + 1) % RING_SIZE
}

/// A receive buffer lent to the device; the mapping is declared first so that it is unmapped before
/// the buffer is freed.
struct Slot<'a> {
    mapping: Mapping<'a>,
    buffer: RxBuffer,
}

/// Words copied per bulk volatile access of a [`CopyBuffers`] buffer: one bounds check each, on a
/// small stack buffer.
const COPY_CHUNK_WORDS: usize = 32;

/// One buffer per descriptor in a single coherent allocation, for rings that copy frames in or out
/// instead of mapping socket buffers (module parameters `rx_copy`, `tx_copy`).
///
/// # Invariants
///
/// `mem` holds `RING_SIZE * words` words; buffer `i` is words `[i * words, (i + 1) * words)`.
struct CopyBuffers<'a> {
    mem: Coherent<'a, u64>,
    words: usize,
}

impl<'a> CopyBuffers<'a> {
    fn new(dev: &'a Device<Bound>, bytes: usize) -> Result<Self> {
        let words = bytes / 8;
        Ok(Self {
            mem: Coherent::alloc(dev, RING_SIZE * words, Gfp::KERNEL)?,
            words,
        })
    }

    /// The bus address of buffer `i`.
    fn dma(&self, i: usize) -> Result<DmaAddress> {
        self.mem.dma_handle_at(i * self.words)
    }

    /// Copies `len` bytes from `src` into buffer `i`.
    ///
    /// # Safety
    ///
    /// `src` is valid for reading `len` bytes.
    unsafe fn fill(&mut self, i: usize, src: *const u8, len: usize) -> Result {
        if len > self.words * 8 {
            return Err(EINVAL);
        }
        let mut chunk = [0u64; COPY_CHUNK_WORDS];
        for start in (0..len).step_by(COPY_CHUNK_WORDS * 8) {
            let n = (len - start).min(COPY_CHUNK_WORDS * 8);
            let words = n.div_ceil(8);
            chunk[words - 1] = 0;
            // SAFETY: `start + n <= len` bytes from `src` are readable (safety requirement), and
            // `chunk` holds `n` bytes.
            unsafe { core::ptr::copy_nonoverlapping(src.add(start), chunk.as_mut_ptr().cast(), n) };
            self.mem
                .write_from(i * self.words + start / 8, &chunk[..words])?;
        }
        Ok(())
    }

    /// Copies the first `len` bytes of buffer `i` to `dst` in whole 8-byte words (so up to 7 bytes
    /// past `len`), and returns the ones' complement sum of the bytes from `ETH_HLEN` to `len`,
    /// folded to 32 bits: the frame's `CHECKSUM_COMPLETE` value.
    ///
    /// Word by word rather than through `memcpy`, which is `rep movsb` on CPUs with fast short
    /// string moves: emulators such as QEMU's TCG run that one byte at a time. The sum comes from
    /// the same loads, so the stack need not read the payload again to check it.
    ///
    /// # Safety
    ///
    /// `dst` is valid for writing `len` bytes rounded up to a multiple of 8.
    unsafe fn copy_out(&self, i: usize, dst: *mut u8, len: usize) -> Result<u32> {
        if len > self.words * 8 || len < usize::from(ETH_HLEN) {
            return Err(EINVAL);
        }
        let words = len.div_ceil(8);
        let mut sum = OnesComplementSum::default();
        for w in 0..words {
            let mut word = self.mem.read(i * self.words + w)?;
            // SAFETY: `w * 8 + 8 <= words * 8` bytes at `dst` are writable (safety requirement).
            unsafe { dst.add(w * 8).cast::<u64>().write_unaligned(word) };
            let end = (w + 1) * 8;
            if end > len {
                // Bytes past the frame count as zeroes; in memory order they are the high bytes.
                word &= u64::MAX >> (8 * (end - len));
            }
            match w {
                // The Ethernet header, bytes 0 to 13, is not part of the sum; of word 1 only bytes
                // 14 and 15 are, its top 16 bits.
                0 => {}
                1 => sum.add(word & !0xffff_ffff_ffff),
                _ => sum.add(word),
            }
        }
        Ok(sum.fold())
    }
}

/// A ones' complement sum (RFC 1071) of 64-bit words loaded in memory order, as the kernel's
/// `csum_partial` computes it; only even byte offsets keep it the frame's checksum.
#[derive(Default)]
struct OnesComplementSum(u64);

impl OnesComplementSum {
    fn add(&mut self, word: u64) {
        let (sum, carry) = self.0.overflowing_add(word);
        self.0 = sum + u64::from(carry);
    }

    /// Folded to the 32 bits of a `__wsum`.
    fn fold(&self) -> u32 {
        let sum = (self.0 & 0xffff_ffff) + (self.0 >> 32);
        ((sum & 0xffff_ffff) + (sum >> 32)) as u32
    }
}

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

/// The checksum work a frame leaves to the hardware.
#[derive(Clone, Copy)]
enum Offload {
    None,
    /// TCP/UDP checksum: where it starts and where it goes.
    Checksum(u8, u8),
    /// TCP segmentation, with IP and TCP checksums.
    Tso(Tso),
}

/// Free descriptors between the producer at `next_to_use` and the consumer at `next_to_clean`; one
/// stays unused so that a full ring differs from an empty one.
#[inline]
fn free_between(next_to_use: usize, next_to_clean: usize) -> usize {
    let used = (next_to_use + RING_SIZE - next_to_clean) % RING_SIZE;
    RING_SIZE - 1 - used
}

impl<'a> TxRing<'a> {
    /// A transmit ring that maps frames for the device, or copies them into coherent buffers.
    pub(crate) fn new(dev: &'a Device<Bound>, copy: bool) -> Result<Self> {
        let mut mappings = KVec::with_capacity(RING_SIZE, GFP_KERNEL)?;
        let mut packets = KVec::with_capacity(RING_SIZE, GFP_KERNEL)?;
        for _ in 0..RING_SIZE {
            mappings.push(UnsafeCell::new(None), GFP_KERNEL)?;
            packets.push(UnsafeCell::new(None), GFP_KERNEL)?;
        }
        Ok(Self {
            dev,
            desc: Coherent::alloc(dev, RING_SIZE, Gfp::KERNEL)?,
            mappings,
            packets,
            next_to_use: AtomicUsize::new(0),
            next_to_clean: AtomicUsize::new(0),
            producer: UnsafeCell::new(ProducerState {
                context: None,
                copy: if copy {
                    Some(CopyBuffers::new(dev, MAX_DATA_PER_DESC)?)
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
        free_between(self.next_to_use, self.ring.next_to_clean.load(Acquire))
    }

    /// What the hardware has to do for `skb`'s checksums; `Err` for a frame that must be dropped.
    #[inline]
    fn offload(skb: &mut Skb) -> Result<Offload> {
        if let Some(tso) = skb.prepare_tso()? {
            return Ok(Offload::Tso(tso));
        }
        // Offsets past 255 bytes do not fit in a context descriptor: checksum in software.
        Ok(match skb.checksum_offload() {
            Some((start, place)) => match (u8::try_from(start), u8::try_from(place)) {
                (Ok(start), Ok(place)) => Offload::Checksum(start, place),
                _ => {
                    skb.checksum_in_software()?;
                    Offload::None
                }
            },
            None => Offload::None,
        })
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
        let Ok(offload) = Self::offload(&mut skb) else {
            return Ok(false);
        };
        let context = match offload {
            Offload::Checksum(start, place) => Some((start, place)) != self.state.context,
            Offload::Tso(_) => true,
            Offload::None => false,
        };
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
        if data_descs == 0 {
            return Ok(false);
        }
        // From here on, the descriptors `[start, start + needed)` are free: the producer's.
        if self.free() < data_descs + usize::from(context) {
            return Err(skb);
        }

        let start = self.next_to_use;
        let mut i = start;
        match offload {
            Offload::Checksum(tucss, tucso) if context => {
                // TCP/UDP checksum start (TUCSS) and offset (TUCSO); TUCSE 0 means to the end.
                let desc = TxDesc {
                    addr: (u64::from(tucss) << 32) | (u64::from(tucso) << 40),
                    cmd: regs::TX_CMD_DEXT,
                    ..Default::default()
                };
                if self.write(i, desc).is_err() {
                    return Ok(false);
                }
                self.state.context = Some((tucss, tucso));
                i = next(i);
            }
            Offload::Tso(tso) => {
                if self.write(i, tso_context(&tso)).is_err() {
                    return Ok(false);
                }
                self.state.context = None;
                i = next(i);
            }
            _ => {}
        }

        let (cmd, dtyp, popts) = match offload {
            Offload::None => (0, 0, 0),
            Offload::Checksum(..) => (regs::TX_CMD_DEXT, regs::TX_DTYP_DATA, regs::TX_POPTS_TXSM),
            Offload::Tso(_) => (
                regs::TX_CMD_DEXT | regs::TX_CMD_TSE,
                regs::TX_DTYP_DATA,
                regs::TX_POPTS_TXSM | regs::TX_POPTS_IXSM,
            ),
        };
        let cmd = cmd | regs::TX_CMD_IFCS | regs::TX_CMD_IDE;
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
                let end = if descs_left == 0 {
                    regs::TX_CMD_EOP | regs::TX_CMD_RS
                } else {
                    0
                };
                let desc = TxDesc {
                    addr,
                    length: chunk as u16,
                    cso: dtyp,
                    cmd: cmd | end,
                    css: popts,
                    ..Default::default()
                };
                if self.write(i, desc).is_err() {
                    return self.unwind(start, i);
                }
                last = i;
                i = next(i);
                offset += chunk;
            }
            self.set_mapping(first, mapping);
        }
        let len = skb.len();
        let wire = match offload {
            Offload::Tso(tso) => {
                let segments = tso.payload_len.div_ceil(u32::from(tso.mss)).max(1);
                Done {
                    packets: u64::from(segments),
                    bytes: u64::from(len) + u64::from(segments - 1) * u64::from(tso.header_len),
                }
            }
            _ => Done {
                packets: 1,
                bytes: u64::from(len),
            },
        };
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
            i = next(i);
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
        self.free() >= TX_WAKE_THRESHOLD
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
                i = next(i);
            }
            if let Some(TxPacket { skb, len, wire, .. }) = packet.take() {
                skb.consume(budget);
                done.frames += 1;
                done.queued_bytes += len;
                done.wire.packets += wire.packets;
                done.wire.bytes += wire.bytes;
            }
            self.next_to_clean = next(last);
        }
        // Gives the freed descriptors back to the producer, after everything above.
        ring.next_to_clean.store(self.next_to_clean, Release);
        done
    }

    /// Whether a queue stopped for lack of room may run again.
    pub(crate) fn has_room(&self) -> bool {
        free_between(self.ring.next_to_use.load(Acquire), self.next_to_clean) >= TX_WAKE_THRESHOLD
    }

    /// Whether the ring holds no frame, sent or not, that is left to free. A frame queued
    /// meanwhile may be missed: its transmit path chose how its completion is noticed.
    pub(crate) fn is_empty(&self) -> bool {
        self.ring.next_to_use.load(Relaxed) == self.next_to_clean
    }
}

/// The TCP/IP context descriptor of a segmentation offload frame.
fn tso_context(tso: &Tso) -> TxDesc {
    let ip_checksum = u64::from(tso.ip_start) + 10;
    let ip_end = u64::from(tso.tcp_start) - 1;
    let tcp_checksum = u64::from(tso.tcp_start) + 16;
    TxDesc {
        // IPCSS, IPCSO, IPCSE, TUCSS, TUCSO; TUCSE 0 means to the end.
        addr: u64::from(tso.ip_start)
            | (ip_checksum << 8)
            | (ip_end << 16)
            | (u64::from(tso.tcp_start) << 32)
            | (tcp_checksum << 40),
        // PAYLEN: 20 bits over the length field and the low nibble of the next byte (DTYP 0).
        length: tso.payload_len as u16,
        cso: ((tso.payload_len >> 16) & 0xf) as u8,
        cmd: regs::TX_CMD_DEXT | regs::TX_CMD_TSE | regs::TX_CMD_IP | regs::TX_CMD_TCP,
        status: 0,
        // HDRLEN and MSS.
        css: tso.header_len,
        special: tso.mss,
    }
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
                    addr,
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
            let length = dma_read!(self.desc, i, length).unwrap_or(0);
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
                let _ = dma_write!(self.desc, i, addr, addr);
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

/// Both rings of an open interface, used without a lock: the transmit producer by
/// `ndo_start_xmit`, the transmit consumer and the receive ring by the NAPI poll.
///
/// # Invariants
///
/// `open` changes only in [`Rings::set`], while no reference from [`Rings::transmit`] or
/// [`Rings::poll`] exists; one [`TxProducer`] at a time comes from `transmit`, and one
/// [`TxConsumer`] and `&mut RxRing` at a time from `poll`.
pub(crate) struct Rings<'a> {
    open: UnsafeCell<Option<OpenRings<'a>>>,
}

struct OpenRings<'a> {
    tx: TxRing<'a>,
    rx: UnsafeCell<RxRing<'a>>,
}

// SAFETY: `transmit` and `poll` may run at once (on two CPUs, or a transmit nested in the poll):
// they share the transmit ring, which is `Sync`, through its two ends; the receive ring is the
// poll's alone; `set` runs while neither does (type invariant).
unsafe impl Sync for Rings<'_> {}

impl<'a> Rings<'a> {
    /// No rings: a closed interface.
    pub(crate) fn new() -> Self {
        Self {
            open: UnsafeCell::new(None),
        }
    }

    /// Installs the rings, or with `None` frees them.
    ///
    /// # Safety
    ///
    /// Neither [`Rings::transmit`] nor [`Rings::poll`] is called until this returns, nor is a value
    /// they returned still in use.
    pub(crate) unsafe fn set(&self, rings: Option<(TxRing<'a>, RxRing<'a>)>) {
        let rings = rings.map(|(tx, rx)| OpenRings {
            tx,
            rx: UnsafeCell::new(rx),
        });
        // SAFETY: Nothing else accesses `open` meanwhile (safety requirement).
        unsafe { *self.open.get() = rings };
    }

    /// The transmit ring's producer end, if the rings are installed.
    ///
    /// # Safety
    ///
    /// No other value this returned is in use: the caller is the queue's only transmitter (the
    /// stack serialises `ndo_start_xmit` with the queue's lock).
    pub(crate) unsafe fn transmit(&self) -> Option<TxProducer<'_, 'a>> {
        // SAFETY: `open` does not change while this is in use (safety requirement of `set`).
        let open = unsafe { (*self.open.get()).as_ref() }?;
        // SAFETY: The only producer (safety requirement).
        Some(unsafe { open.tx.producer() })
    }

    /// The transmit ring's consumer end and the receive ring, if the rings are installed.
    ///
    /// # Safety
    ///
    /// No other value this returned is in use: the caller is the only poller (NAPI polls one CPU at
    /// a time).
    #[expect(
        clippy::mut_from_ref,
        reason = "the receive ring is the only poller's, by the safety requirement"
    )]
    pub(crate) unsafe fn poll(&self) -> Option<(TxConsumer<'_, 'a>, &mut RxRing<'a>)> {
        // SAFETY: As in `transmit`.
        let open = unsafe { (*self.open.get()).as_ref() }?;
        // SAFETY: The only consumer and the only user of the receive ring (safety requirement).
        Some(unsafe { (open.tx.consumer(), &mut *open.rx.get()) })
    }
}
