// SPDX-License-Identifier: GPL-2.0

//! What both descriptor rings share: their size, and the coherent buffers that frames are copied
//! through instead of mapped (module parameters `rx_copy`, `tx_copy`; see `tx.rs` and `rx.rs`).

use kernel::{
    device::{Bound, Device},
    prelude::*,
};

use crate::dma_local::{Coherent, DmaAddress, Gfp};

/// Shortest frame the stack can use: an Ethernet header.
pub(crate) const ETH_HLEN: u16 = 14;
// `CopyBuffers::copy_out` leaves the header out of the checksum word by word.
const _: () = assert!(ETH_HLEN == 14);

/// How many descriptors a ring has: `ethtool -G` sets it, between the C driver's bounds for this
/// controller, and a multiple of 8, since RDLEN and TDLEN count 128-byte units.
///
/// # Invariants
///
/// `MIN <= self.0 <= MAX`, a multiple of 8.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct RingSize(usize);

impl RingSize {
    /// The C driver's default.
    pub(crate) const DEFAULT: Self = Self(256);
    pub(crate) const MIN: u32 = 48;
    pub(crate) const MAX: u32 = 4096;

    /// `count` descriptors, rounded up to a multiple of 8; like the C driver, a count below the
    /// least is raised to it. A count above the most is refused (the ethtool core refuses it first,
    /// with the most that `ethtool -g` reports).
    pub(crate) fn new(count: u32) -> Result<Self> {
        Self::at_least(count, Self::MIN)
    }

    /// As [`RingSize::new`], for a ring that needs at least `min` descriptors (from `MIN` to
    /// `MAX`).
    pub(crate) fn at_least(count: u32, min: u32) -> Result<Self> {
        if count > Self::MAX {
            return Err(EINVAL);
        }
        let min = min.clamp(Self::MIN, Self::MAX);
        // INVARIANT: at least `MIN`, at most `MAX` (both multiples of 8) once rounded up.
        Ok(Self(count.max(min).next_multiple_of(8) as usize))
    }

    /// The number of descriptors.
    #[inline]
    pub(crate) fn get(self) -> usize {
        self.0
    }

    /// The index after `i`, around the ring: a comparison, not a division by a size known only at
    /// run time.
    #[inline]
    pub(crate) fn next(self, i: usize) -> usize {
        if i + 1 >= self.0 {
            0
        } else {
            i + 1
        }
    }
}

/// Packets and bytes a clean-up finished.
#[derive(Default, Clone, Copy)]
pub(crate) struct Done {
    pub(crate) packets: u64,
    pub(crate) bytes: u64,
}

/// Words copied per bulk volatile access of a [`CopyBuffers`] buffer: one bounds check each, on a
/// small stack buffer.
const COPY_CHUNK_WORDS: usize = 32;

/// One buffer per descriptor in a single coherent allocation, for rings that copy frames in or out
/// instead of mapping socket buffers (module parameters `rx_copy`, `tx_copy`).
///
/// # Invariants
///
/// `mem` holds `count * words` words; buffer `i` is words `[i * words, (i + 1) * words)`.
pub(crate) struct CopyBuffers<'a> {
    mem: Coherent<'a, u64>,
    words: usize,
}

impl<'a> CopyBuffers<'a> {
    /// `count` buffers of `bytes` each.
    pub(crate) fn new(dev: &'a Device<Bound>, count: RingSize, bytes: usize) -> Result<Self> {
        let words = bytes / 8;
        Ok(Self {
            mem: Coherent::alloc(dev, count.get() * words, Gfp::KERNEL)?,
            words,
        })
    }

    /// The bus address of buffer `i`.
    pub(crate) fn dma(&self, i: usize) -> Result<DmaAddress> {
        self.mem.dma_handle_at(i * self.words)
    }

    /// Copies `len` bytes from `src` into buffer `i`.
    ///
    /// # Safety
    ///
    /// `src` is valid for reading `len` bytes.
    pub(crate) unsafe fn fill(&mut self, i: usize, src: *const u8, len: usize) -> Result {
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
    /// past `len`): a piece of a frame longer than one buffer, whose checksum is left to the stack.
    ///
    /// # Safety
    ///
    /// `dst` is valid for writing `len` bytes rounded up to a multiple of 8.
    pub(crate) unsafe fn copy_piece(&self, i: usize, dst: *mut u8, len: usize) -> Result {
        if len > self.words * 8 {
            return Err(EINVAL);
        }
        for w in 0..len.div_ceil(8) {
            let word = self.mem.read(i * self.words + w)?;
            // SAFETY: `w * 8 + 8` bytes at `dst` are writable (safety requirement).
            unsafe { dst.add(w * 8).cast::<u64>().write_unaligned(word) };
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
    pub(crate) unsafe fn copy_out(&self, i: usize, dst: *mut u8, len: usize) -> Result<u32> {
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
