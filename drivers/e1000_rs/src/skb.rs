// SPDX-License-Identifier: GPL-2.0

//! Socket buffers: the owned skb the rings pass frames in, and the page-fragment receive buffer an
//! skb is built around once a frame arrived. One-line C wrappers in `netdev_shim.c` reach what
//! Rust cannot call.

use core::ptr::NonNull;

use kernel::{
    bindings,
    ffi::{c_int, c_uint, c_void},
    prelude::*,
};

extern "C" {
    fn e1000_rs_skb_checksum_complete(skb: *mut bindings::sk_buff, checksum: u32);
    fn e1000_rs_skb_reserve(skb: *mut bindings::sk_buff, length: c_uint);
    fn e1000_rs_free_skb(skb: *mut bindings::sk_buff);
    fn e1000_rs_skb_checksum_help(skb: *mut bindings::sk_buff) -> c_int;
    fn e1000_rs_skb_frag_address(skb: *mut bindings::sk_buff, i: c_uint) -> *mut c_void;
    fn e1000_rs_skb_cow_head(skb: *mut bindings::sk_buff) -> c_int;
    fn e1000_rs_skb_network_offset(skb: *mut bindings::sk_buff) -> c_uint;
    fn e1000_rs_skb_transport_offset(skb: *mut bindings::sk_buff) -> c_uint;
    fn e1000_rs_tcp_hdrlen(skb: *mut bindings::sk_buff) -> c_uint;
    fn e1000_rs_skb_vlan_tag_put(skb: *mut bindings::sk_buff, tci: u16);
    fn e1000_rs_skb_add_rx_frag(
        skb: *mut bindings::sk_buff,
        data: *mut c_void,
        length: c_uint,
        truesize: c_uint,
    ) -> bool;
}

/// A TCP/IPv4 segmentation offload skb's headers: where they are (offsets from its data), and the
/// bytes up to the end of the TCP header, writable.
pub(crate) struct Tcp4Segmentation<'a> {
    /// Payload bytes per segment.
    pub(crate) mss: u16,
    /// Offset of the IPv4 header.
    pub(crate) network: u32,
    /// Offset of the TCP header.
    pub(crate) transport: u32,
    /// The bytes from the skb's data to the end of the TCP header: the headers every segment
    /// repeats.
    pub(crate) headers: &'a mut [u8],
}

/// An owned socket buffer, freed on drop.
pub(crate) struct Skb(NonNull<bindings::sk_buff>);

// SAFETY: An skb may be freed or handed on from any thread.
unsafe impl Send for Skb {}

impl Skb {
    /// Takes ownership of `raw`.
    ///
    /// # Safety
    ///
    /// `raw` is a valid skb whose ownership passes to the returned value.
    pub(crate) unsafe fn from_raw(raw: *mut bindings::sk_buff) -> Option<Self> {
        NonNull::new(raw).map(Skb)
    }

    /// Gives ownership back.
    pub(crate) fn into_raw(self) -> *mut bindings::sk_buff {
        let raw = self.0.as_ptr();
        core::mem::forget(self);
        raw
    }

    /// The skb's header fields (the `headers` group of `struct sk_buff`).
    #[inline]
    fn headers(&self) -> &bindings::sk_buff__bindgen_ty_4__bindgen_ty_1 {
        // SAFETY: `self.0` is a valid skb that this value owns. The group is one of two views of
        // the same fields, both always valid.
        unsafe {
            (*self.0.as_ptr())
                .__bindgen_anon_4
                .__bindgen_anon_1
                .as_ref()
        }
    }

    /// Its `skb_shared_info`: fragments and segmentation offload. A raw pointer, read field by
    /// field: a clone's shared info is the original's, whose `dataref` other CPUs change.
    #[inline]
    fn shared_info(&self) -> *const bindings::skb_shared_info {
        let skb = self.0.as_ptr();
        // SAFETY: `self.0` is a valid skb that this value owns. On 64-bit kernels `end` is an
        // offset from `head` (the type below says so: a pointer would not compile), where the
        // shared info starts (`skb_shinfo`), inside the same buffer.
        unsafe {
            let end: c_uint = (*skb).end;
            (*skb).head.add(end as usize).cast()
        }
    }

    /// The start of its data.
    #[inline]
    pub(crate) fn data(&self) -> *mut u8 {
        // SAFETY: `self.0` is a valid skb.
        unsafe { (*self.0.as_ptr()).data }
    }

    /// Its length in bytes.
    #[inline]
    pub(crate) fn len(&self) -> u32 {
        // SAFETY: `self.0` is a valid skb.
        unsafe { (*self.0.as_ptr()).len }
    }

    /// Where the checksum the stack left to the hardware starts and where it goes, both from the
    /// start of the frame; `None` when the stack computed it (not `CHECKSUM_PARTIAL`).
    #[inline]
    pub(crate) fn checksum_offload(&self) -> Option<(u32, u32)> {
        let headers = self.headers();
        if u32::from(headers.ip_summed()) != bindings::CHECKSUM_PARTIAL {
            return None;
        }
        // SAFETY: With `CHECKSUM_PARTIAL` the union holds `csum_start` and `csum_offset`.
        let csum = unsafe { headers.__bindgen_anon_1.__bindgen_anon_1 };
        // SAFETY: `self.0` is a valid skb; `data` and `head` point into the same buffer.
        let headroom = unsafe { self.data().offset_from((*self.0.as_ptr()).head) };
        // `skb_checksum_start_offset`: `csum_start` counts from `head`, this from `data`.
        let start = u32::from(csum.csum_start).wrapping_sub(headroom as u32);
        Some((start, start.wrapping_add(u32::from(csum.csum_offset))))
    }

    /// The 802.1Q tag (TCI) the stack left to the hardware to insert, if any
    /// (`skb_vlan_tag_present`, `skb_vlan_tag_get`).
    #[inline]
    pub(crate) fn vlan_tag(&self) -> Option<u16> {
        let headers = self.headers();
        // SAFETY: Both views of the union are plain integers, always valid.
        let (all, tci) = unsafe {
            (
                headers.__bindgen_anon_2.vlan_all,
                headers.__bindgen_anon_2.__bindgen_anon_1.vlan_tci,
            )
        };
        (all != 0).then_some(tci)
    }

    /// Gives a received frame the 802.1Q tag (TCI) the hardware stripped from it
    /// (`__vlan_hwaccel_put_tag`).
    pub(crate) fn set_vlan_tag(&mut self, tci: u16) {
        // SAFETY: `self.0` is a valid skb that this value owns.
        unsafe { e1000_rs_skb_vlan_tag_put(self.0.as_ptr(), tci) };
    }

    /// Computes the checksum in software (`skb_checksum_help`), for offsets the hardware cannot
    /// take.
    pub(crate) fn checksum_in_software(&mut self) -> Result {
        // SAFETY: `self.0` is a valid skb that this code owns.
        kernel::error::to_result(unsafe { e1000_rs_skb_checksum_help(self.0.as_ptr()) })
    }

    /// The length of the linear part, at [`Skb::data`]; the rest is in page fragments
    /// (`skb_headlen`).
    #[inline]
    pub(crate) fn head_len(&self) -> u32 {
        let skb = self.0.as_ptr();
        // SAFETY: `self.0` is a valid skb.
        unsafe { (*skb).len - (*skb).data_len }
    }

    /// How many page fragments follow the linear part.
    #[inline]
    pub(crate) fn frag_count(&self) -> u32 {
        // SAFETY: The shared info of a valid skb; `nr_frags` changes only with its owner's writes.
        u32::from(unsafe { (*self.shared_info()).nr_frags })
    }

    /// The length of page fragment `i` (`skb_frag_size`).
    ///
    /// # Safety
    ///
    /// `i` is below [`Skb::frag_count`].
    #[inline]
    pub(crate) unsafe fn frag_len(&self, i: u32) -> u32 {
        // SAFETY: The shared info of a valid skb, with more than `i` fragments (safety
        // requirement); the stack set them before handing the skb over and leaves them alone.
        unsafe { (*self.shared_info()).frags[i as usize].len }
    }

    /// The CPU address of page fragment `i`.
    ///
    /// # Safety
    ///
    /// `i` is below [`Skb::frag_count`].
    pub(crate) unsafe fn frag_address(&self, i: u32) -> *mut u8 {
        // SAFETY: `self.0` is a valid skb with more than `i` fragments (safety requirement).
        unsafe { e1000_rs_skb_frag_address(self.0.as_ptr(), i).cast() }
    }

    /// For a TCP/IPv4 segmentation offload skb: where its headers are, made writable
    /// (`skb_cow_head`) for the driver to rewrite. `Ok(None)` for an skb the stack did not leave
    /// to segmentation offload, `EINVAL` for segmentation of another protocol.
    pub(crate) fn tcp4_segmentation(&mut self) -> Result<Option<Tcp4Segmentation<'_>>> {
        let raw = self.0.as_ptr();
        let shared = self.shared_info();
        // SAFETY: The shared info of a valid skb; the stack set its segmentation fields before
        // handing the skb over and leaves them alone.
        let (mss, gso_type) = unsafe { ((*shared).gso_size, (*shared).gso_type) };
        if mss == 0 {
            return Ok(None);
        }
        if gso_type & bindings::SKB_GSO_TCPV4 as c_uint == 0 {
            return Err(EINVAL);
        }
        // The headers are about to be written: make sure this skb has its own copy.
        // SAFETY: `raw` is a valid skb that this code owns.
        kernel::error::to_result(unsafe { e1000_rs_skb_cow_head(raw) })?;
        // SAFETY: A valid TCP segmentation skb: the stack set its network and transport headers.
        let (network, transport, tcp_len) = unsafe {
            (
                e1000_rs_skb_network_offset(raw),
                e1000_rs_skb_transport_offset(raw),
                e1000_rs_tcp_hdrlen(raw),
            )
        };
        let header_len = transport + tcp_len;
        if header_len > self.head_len() {
            return Err(EINVAL);
        }
        // SAFETY: `header_len` bytes at `data` lie in the linear part (checked above), and are
        // this skb's own: `skb_cow_head` copied the head unless only this skb may write its
        // headers (a payload-only clone's original, as TCP's, keeps off them). Borrowed from `self`
        // mutably, so nothing else touches them meanwhile.
        let headers = unsafe { core::slice::from_raw_parts_mut(self.data(), header_len as usize) };
        Ok(Some(Tcp4Segmentation {
            mss,
            network,
            transport,
            headers,
        }))
    }

    /// Marks a received frame as checked by `checksum`, the ones' complement sum of everything
    /// after the Ethernet header (`CHECKSUM_COMPLETE`).
    pub(crate) fn set_checksum_complete(&mut self, checksum: u32) {
        // SAFETY: `self.0` is a valid skb.
        unsafe { e1000_rs_skb_checksum_complete(self.0.as_ptr(), checksum) };
    }

    /// Extends its data by `length` bytes that the device wrote.
    pub(crate) fn put(&mut self, length: u32) {
        // SAFETY: `self.0` is a valid skb. `skb_put` checks the room itself: past it, it BUGs
        // rather than writes.
        unsafe { bindings::skb_put(self.0.as_ptr(), length) };
    }

    /// Frees it as transmitted, from a NAPI poll with `budget`.
    pub(crate) fn consume(self, budget: i32) {
        let raw = self.into_raw();
        // SAFETY: `raw` is a valid skb we owned.
        unsafe { bindings::napi_consume_skb(raw, budget) };
    }
}

impl Drop for Skb {
    fn drop(&mut self) {
        // SAFETY: `self.0` is a valid skb we own; freed once.
        unsafe { e1000_rs_free_skb(self.0.as_ptr()) };
    }
}

/// Room the stack wants in front of a received frame: `NET_SKB_PAD + NET_IP_ALIGN` (checked in
/// `netdev_shim.c`).
const RX_HEADROOM: usize = 64;

/// `SKB_DATA_ALIGN`: a length rounded up to whole cache lines.
const fn skb_data_align(length: usize) -> usize {
    length.next_multiple_of(bindings::SMP_CACHE_BYTES as usize)
}

/// How long a receive buffer's frame part is: the longest frame the device passes with long packets
/// off, as in the C driver, not the 2048 bytes of RCTL.BSIZE (a frame's skb is charged the whole
/// fragment, its truesize, by which TCP sizes its receive window, and 2048 would make it about a
/// quarter larger); with long packets on, or bad frames stored (`rx-all`: the MAC then fills a
/// buffer with a frame of any length), all of BSIZE's 2048, which a long frame fills buffer after
/// buffer.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum RxBufferLen {
    Standard,
    Long,
}

impl RxBufferLen {
    /// Bytes of frame a buffer holds.
    pub(crate) const fn frame_len(self) -> usize {
        match self {
            Self::Standard => crate::regs::MAX_FRAME_LEN as usize,
            Self::Long => crate::regs::RX_BUFFER_SIZE as usize,
        }
    }

    /// Bytes of the page fragment: headroom, frame and the shared info `napi_build_skb` puts at
    /// its end.
    const fn fragment_len(self) -> usize {
        skb_data_align(RX_HEADROOM + self.frame_len())
            + skb_data_align(size_of::<bindings::skb_shared_info>())
    }
}

/// A receive buffer: a page fragment with the headroom, the frame, and the `skb_shared_info` that
/// `napi_build_skb` puts at its end. The skb is built around it only once a frame arrived, so no
/// skb waits on the ring, and its head comes from NAPI's per-CPU cache instead of the slab.
///
/// # Invariants
///
/// `frame` is `RX_HEADROOM` bytes into a page fragment of `len.fragment_len()` bytes that this
/// value owns.
pub(crate) struct RxBuffer {
    frame: NonNull<u8>,
    len: RxBufferLen,
}

// SAFETY: A page fragment may be freed or handed on from any thread.
unsafe impl Send for RxBuffer {}

impl RxBuffer {
    /// Allocates a buffer (`netdev_alloc_frag`), from any context.
    #[inline]
    pub(crate) fn alloc(len: RxBufferLen) -> Option<Self> {
        // SAFETY: No preconditions; from any context.
        let fragment =
            unsafe { bindings::__netdev_alloc_frag_align(len.fragment_len() as u32, !0) };
        Self::at(fragment, len)
    }

    /// Allocates a buffer from NAPI's per-CPU fragment cache (`napi_alloc_frag`), which spares
    /// the bottom-half disable and enable that [`RxBuffer::alloc`] wraps around its own.
    ///
    /// # Safety
    ///
    /// The caller is a NAPI poll: bottom halves are disabled, as the cache needs.
    #[inline]
    pub(crate) unsafe fn alloc_in_poll(len: RxBufferLen) -> Option<Self> {
        // SAFETY: In a NAPI poll (safety requirement).
        let fragment = unsafe { bindings::__napi_alloc_frag_align(len.fragment_len() as u32, !0) };
        Self::at(fragment, len)
    }

    /// The buffer in a fragment of `len.fragment_len()` bytes just allocated, or `None` for null.
    #[inline]
    fn at(fragment: *mut c_void, len: RxBufferLen) -> Option<Self> {
        let fragment = NonNull::new(fragment.cast::<u8>())?;
        // SAFETY: A fragment of `fragment_len()` bytes has room for the headroom.
        let frame = unsafe { fragment.add(RX_HEADROOM) };
        // INVARIANT: `frame` is `RX_HEADROOM` bytes into the fragment just allocated.
        Some(Self { frame, len })
    }

    /// Where the device writes the frame, [`RxBuffer::frame_len`] bytes.
    #[inline]
    pub(crate) fn frame(&self) -> *mut u8 {
        self.frame.as_ptr()
    }

    /// Bytes of frame the buffer holds.
    #[inline]
    pub(crate) fn frame_len(&self) -> usize {
        self.len.frame_len()
    }

    /// An skb around the first `length` bytes of the frame, or `None` (the buffer freed) when no
    /// skb head could be allocated.
    ///
    /// # Safety
    ///
    /// `length` is at most [`RxBuffer::frame_len`], the device no longer writes the buffer, and
    /// the caller is a NAPI poll: bottom halves are disabled, as NAPI's skb cache needs.
    #[inline]
    pub(crate) unsafe fn into_skb(self, length: u32) -> Option<Skb> {
        // SAFETY: The fragment starts `RX_HEADROOM` bytes before `frame` (type invariant).
        let fragment = unsafe { self.frame.as_ptr().sub(RX_HEADROOM) };
        // SAFETY: A page fragment of `fragment_len()` bytes, with room for the shared info at its
        // end (its length says so), that the device no longer writes, in a NAPI poll (safety
        // requirements).
        let raw =
            unsafe { bindings::napi_build_skb(fragment.cast(), self.len.fragment_len() as u32) };
        let mut skb = Skb(NonNull::new(raw)?);
        // The skb owns the fragment now.
        core::mem::forget(self);
        // SAFETY: A fresh skb whose data starts at the fragment, with `RX_HEADROOM` bytes to
        // spare.
        unsafe { e1000_rs_skb_reserve(skb.0.as_ptr(), RX_HEADROOM as u32) };
        // The device wrote `length` bytes, at most `frame_len()` (safety requirement).
        skb.put(length);
        Some(skb)
    }

    /// Appends the first `length` bytes of the frame to `skb` as a page fragment (the next piece
    /// of a frame longer than one buffer); the buffer comes back when `skb` has no fragment slot
    /// left.
    ///
    /// # Safety
    ///
    /// `length` is at most [`RxBuffer::frame_len`], and the device no longer writes the buffer.
    pub(crate) unsafe fn append_to(
        self,
        skb: &mut Skb,
        length: u32,
    ) -> core::result::Result<(), Self> {
        // SAFETY: `skb` is a valid skb; `frame` and `length` lie in a page fragment the device no
        // longer writes (type invariant, safety requirement), whose reference passes to the skb
        // if this succeeds: freeing the skb drops it as `page_frag_free` would.
        let added = unsafe {
            e1000_rs_skb_add_rx_frag(
                skb.0.as_ptr(),
                self.frame.as_ptr().cast(),
                length,
                self.len.fragment_len() as c_uint,
            )
        };
        if !added {
            return Err(self);
        }
        core::mem::forget(self);
        Ok(())
    }
}

impl Drop for RxBuffer {
    fn drop(&mut self) {
        // SAFETY: A page fragment this value owns (type invariant); any address inside it names it.
        unsafe { bindings::page_frag_free(self.frame.as_ptr().cast()) };
    }
}
