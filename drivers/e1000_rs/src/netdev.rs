// SPDX-License-Identifier: GPL-2.0

//! The driver's own thin netdev layer: the kernel crate has no `net_device` abstraction, so this
//! wraps `netdev_shim.c` (one-line wrappers of what Rust cannot call, and the offsets of two fields
//! bindgen leaves opaque) in owned types, and receives the `net_device_ops` callbacks, which it
//! hands to the adapter in `driver.rs`.

use core::{
    ptr::NonNull,
    sync::atomic::{AtomicBool, Ordering},
};

use kernel::{
    bindings,
    ffi::{c_int, c_uint, c_void},
    prelude::*,
};

use crate::E1000;

/// Opaque C types of the shim.
#[repr(C)]
pub(crate) struct NetDevice {
    _opaque: [u8; 0],
}
#[repr(C)]
pub(crate) struct NapiStruct {
    _opaque: [u8; 0],
}
#[repr(C)]
pub(crate) struct LinkStats64 {
    _opaque: [u8; 0],
}
#[repr(C)]
pub(crate) struct AddrList {
    _opaque: [u8; 0],
}

/// The counters reported through `ndo_get_stats64`; the layout of `struct e1000_rs_stats`.
#[repr(C)]
#[derive(Default, Clone, Copy, Debug)]
pub(crate) struct Stats {
    pub(crate) rx_packets: u64,
    pub(crate) rx_bytes: u64,
    pub(crate) tx_packets: u64,
    pub(crate) tx_bytes: u64,
    pub(crate) rx_errors: u64,
    pub(crate) rx_dropped: u64,
    pub(crate) tx_dropped: u64,
    pub(crate) rx_length_errors: u64,
    pub(crate) rx_crc_errors: u64,
    pub(crate) rx_missed_errors: u64,
}

extern "C" {
    /// Where the private area (`netdev_priv`) starts in a `net_device`: the hot paths find it
    /// without a call. A `const` in C, never written.
    static e1000_rs_priv_offset: usize;
    /// Where the adapter pointer lies in the private area, after the NAPI context that starts it
    /// (which `netdev_shim.c` asserts). A `const` in C, never written.
    static e1000_rs_adapter_offset: usize;
    fn e1000_rs_alloc_netdev(parent: *mut c_void) -> *mut NetDevice;
    fn e1000_rs_set_adapter(dev: *mut NetDevice, adapter: *mut c_void);
    fn e1000_rs_register(dev: *mut NetDevice) -> c_int;
    fn e1000_rs_unregister(dev: *mut NetDevice);
    fn e1000_rs_free(dev: *mut NetDevice);
    fn e1000_rs_set_hw_addr(dev: *mut NetDevice, addr: *const u8);
    fn e1000_rs_dev_addr(dev: *mut NetDevice) -> *const u8;
    fn e1000_rs_sockaddr_data(sockaddr: *mut c_void) -> *const u8;
    fn e1000_rs_valid_ether_addr(addr: *const u8) -> bool;
    fn e1000_rs_carrier(dev: *mut NetDevice, on: bool);
    fn e1000_rs_carrier_ok(dev: *mut NetDevice) -> bool;
    fn e1000_rs_flags(dev: *mut NetDevice) -> c_uint;
    fn e1000_rs_addr_next(list: *mut AddrList, prev: *const u8) -> *const u8;
    fn e1000_rs_start_queue(dev: *mut NetDevice);
    fn e1000_rs_stop_queue(dev: *mut NetDevice);
    fn e1000_rs_disable_transmit(dev: *mut NetDevice);
    fn e1000_rs_wake_queue(dev: *mut NetDevice);
    fn e1000_rs_queue_stopped(dev: *mut NetDevice) -> bool;
    fn e1000_rs_xmit_stopped(dev: *mut NetDevice) -> bool;
    fn e1000_rs_xmit_more() -> bool;
    fn e1000_rs_sent_queue(dev: *mut NetDevice, bytes: c_uint) -> bool;
    fn e1000_rs_completed_queue(dev: *mut NetDevice, packets: c_uint, bytes: c_uint);
    fn e1000_rs_reset_queue(dev: *mut NetDevice);
    fn e1000_rs_napi_enable(napi: *mut NapiStruct);
    fn e1000_rs_napi_disable(napi: *mut NapiStruct);
    fn e1000_rs_napi_schedule(napi: *mut NapiStruct);
    fn e1000_rs_napi_complete_done(napi: *mut NapiStruct, work_done: c_int) -> bool;
    fn e1000_rs_rx_checksum_enabled(dev: *mut NetDevice) -> bool;
    fn e1000_rs_skb_checksum_complete(skb: *mut bindings::sk_buff, checksum: u32);
    fn e1000_rs_skb_reserve(skb: *mut bindings::sk_buff, length: c_uint);
    fn e1000_rs_receive(napi: *mut NapiStruct, skb: *mut bindings::sk_buff);
    fn e1000_rs_free_skb(skb: *mut bindings::sk_buff);
    fn e1000_rs_set_stats(stats: *mut LinkStats64, counters: *const Stats);
    fn e1000_rs_skb_checksum_help(skb: *mut bindings::sk_buff) -> c_int;
    fn e1000_rs_skb_frag_address(skb: *mut bindings::sk_buff, i: c_uint) -> *mut c_void;
    fn e1000_rs_skb_cow_head(skb: *mut bindings::sk_buff) -> c_int;
    fn e1000_rs_skb_network_offset(skb: *mut bindings::sk_buff) -> c_uint;
    fn e1000_rs_skb_transport_offset(skb: *mut bindings::sk_buff) -> c_uint;
    fn e1000_rs_tcp_hdrlen(skb: *mut bindings::sk_buff) -> c_uint;
}

/// `enum netdev_tx` values (bindgen does not see `netdevice.h`; the shim asserts them at build
/// time).
const NETDEV_TX_OK: c_int = 0x00;
const NETDEV_TX_BUSY: c_int = 0x10;

/// An Ethernet address.
pub(crate) type MacAddress = [u8; 6];

/// A copy of the Ethernet address at `ptr`.
///
/// # Safety
///
/// `ptr` points to 6 readable bytes that nothing changes meanwhile.
unsafe fn mac_address_at(ptr: *const u8) -> MacAddress {
    let mut addr = MacAddress::default();
    // SAFETY: By the safety requirement.
    unsafe { core::ptr::copy_nonoverlapping(ptr, addr.as_mut_ptr(), addr.len()) };
    addr
}

/// What the stack asks the receive filter to pass besides frames to the interface's own address,
/// broadcasts and the multicast groups it joined.
#[derive(Clone, Copy, Default)]
pub(crate) struct RxMode {
    /// Every frame (`IFF_PROMISC`).
    pub(crate) promiscuous: bool,
    /// Every multicast frame (`IFF_ALLMULTI`).
    pub(crate) all_multicast: bool,
}

/// The addresses of a hardware address list the stack hands to `ndo_set_rx_mode_async`.
///
/// # Invariants
///
/// `list` is a valid list that does not change while this lives; `prev` is null or the address
/// of one of its entries.
pub(crate) struct HwAddrs<'a> {
    list: *mut AddrList,
    prev: *const u8,
    _list: core::marker::PhantomData<&'a AddrList>,
}

impl HwAddrs<'_> {
    /// The addresses of `list`.
    ///
    /// # Safety
    ///
    /// `list` is valid and does not change while the result lives.
    unsafe fn new(list: *mut AddrList) -> Self {
        // INVARIANT: by the safety requirement; no entry yet.
        Self {
            list,
            prev: core::ptr::null(),
            _list: core::marker::PhantomData,
        }
    }
}

impl Iterator for HwAddrs<'_> {
    type Item = MacAddress;

    fn next(&mut self) -> Option<MacAddress> {
        // SAFETY: A valid, unchanging list and one of its entries or null (type invariants).
        let next = unsafe { e1000_rs_addr_next(self.list, self.prev) };
        if next.is_null() {
            return None;
        }
        // INVARIANT: an entry of the list.
        self.prev = next;
        // SAFETY: An entry's address holds `MAX_ADDR_LEN` (32) bytes, an Ethernet address the
        // first 6, and the list does not change (type invariants).
        Some(unsafe { mac_address_at(next) })
    }
}

/// Whether `addr` is a valid unicast address (`is_valid_ether_addr`).
pub(crate) fn valid_ether_addr(addr: &MacAddress) -> bool {
    // SAFETY: `addr` points to 6 readable bytes.
    unsafe { e1000_rs_valid_ether_addr(addr.as_ptr()) }
}

/// A `net_device` this driver allocated, with its NAPI context.
///
/// # Invariants
///
/// `raw` came from `e1000_rs_alloc_netdev` and is freed only by `Drop`; `registered` says whether
/// it is registered, except while [`NetDev::register`] or [`NetDev::unregister`] runs.
pub(crate) struct NetDev {
    raw: NonNull<NetDevice>,
    /// Behind `&self`: registering and unregistering call back into the adapter, which holds
    /// shared references to it meanwhile. Probe registers and remove unregisters; the driver core
    /// never runs the two at once, so the flag needs no ordering.
    registered: AtomicBool,
}

// SAFETY: A `net_device` may be used from any thread; the kernel serialises what needs it.
unsafe impl Send for NetDev {}
// SAFETY: Every method through `&NetDev` is a netdev call that is safe from any context.
unsafe impl Sync for NetDev {}

impl NetDev {
    /// Allocates an Ethernet `net_device` for the PCI device `parent`, with the driver's callbacks.
    pub(crate) fn alloc(parent: &kernel::device::Device) -> Result<Self> {
        // A `Device` is transparent over the C `struct device` (as in dma_local).
        let parent = core::ptr::from_ref(parent).cast_mut().cast::<c_void>();
        // SAFETY: `parent` is a valid device.
        let raw = unsafe { e1000_rs_alloc_netdev(parent) };
        // INVARIANT: just allocated, not registered.
        Ok(Self {
            raw: NonNull::new(raw).ok_or(ENOMEM)?,
            registered: AtomicBool::new(false),
        })
    }

    fn raw(&self) -> *mut NetDevice {
        self.raw.as_ptr()
    }

    /// Points the `net_device`'s callbacks at `adapter`.
    ///
    /// # Safety
    ///
    /// `adapter` stays valid, and pinned, until the `net_device` is unregistered and its IRQ freed.
    pub(crate) unsafe fn set_adapter(&self, adapter: *const E1000<'_>) {
        // SAFETY: `raw` is valid (type invariant).
        unsafe { e1000_rs_set_adapter(self.raw(), adapter.cast_mut().cast()) };
    }

    /// Registers the interface with the networking stack, once; called by probe only.
    pub(crate) fn register(&self) -> Result {
        if self.registered.swap(true, Ordering::Relaxed) {
            return Err(EBUSY);
        }
        // SAFETY: `raw` is valid; it was not registered (the flag was clear, and only probe
        // registers).
        let result = kernel::error::to_result(unsafe { e1000_rs_register(self.raw()) });
        if result.is_err() {
            self.registered.store(false, Ordering::Relaxed);
        }
        result
    }

    /// Unregisters the interface (which closes it first); a no-op when not registered. Called by
    /// remove (and `Drop`), never while probe registers.
    pub(crate) fn unregister(&self) {
        if self.registered.swap(false, Ordering::Relaxed) {
            // SAFETY: `raw` is valid and registered.
            unsafe { e1000_rs_unregister(self.raw()) };
        }
    }

    /// The NAPI context, which starts the private area.
    #[inline]
    pub(crate) fn napi(&self) -> Napi {
        // SAFETY: `raw` is valid; its private area lies inside its allocation at this offset,
        // a constant, and starts with the NAPI context (asserted in `netdev_shim.c`).
        Napi(unsafe { self.raw().byte_add(e1000_rs_priv_offset).cast() })
    }

    /// Sets the interface's hardware address.
    pub(crate) fn set_hw_addr(&self, addr: &MacAddress) {
        // SAFETY: `raw` is valid; `addr` has 6 bytes.
        unsafe { e1000_rs_set_hw_addr(self.raw(), addr.as_ptr()) };
    }

    /// The interface's hardware address (`dev_addr`).
    ///
    /// # Safety
    ///
    /// The caller holds the RTNL lock, under which alone the stack changes the address.
    pub(crate) unsafe fn hw_addr(&self) -> MacAddress {
        // SAFETY: `raw` is valid.
        let current = unsafe { e1000_rs_dev_addr(self.raw()) };
        // SAFETY: `current` points to the 6 bytes of an Ethernet device's address, which nothing
        // changes meanwhile (safety requirement).
        unsafe { mac_address_at(current) }
    }

    /// Sets the carrier on or off.
    pub(crate) fn set_carrier(&self, on: bool) {
        // SAFETY: `raw` is valid.
        unsafe { e1000_rs_carrier(self.raw(), on) };
    }

    /// Whether the carrier is on.
    pub(crate) fn carrier_ok(&self) -> bool {
        // SAFETY: `raw` is valid.
        unsafe { e1000_rs_carrier_ok(self.raw()) }
    }

    /// Starts the transmit queue.
    pub(crate) fn start_queue(&self) {
        // SAFETY: `raw` is valid.
        unsafe { e1000_rs_start_queue(self.raw()) };
    }

    /// Stops the transmit queue.
    pub(crate) fn stop_queue(&self) {
        // SAFETY: `raw` is valid.
        unsafe { e1000_rs_stop_queue(self.raw()) };
    }

    /// Stops the transmit queue and waits for a transmit in progress (`netif_tx_disable`).
    pub(crate) fn disable_transmit(&self) {
        // SAFETY: `raw` is valid.
        unsafe { e1000_rs_disable_transmit(self.raw()) };
    }

    /// Wakes the transmit queue.
    pub(crate) fn wake_queue(&self) {
        // SAFETY: `raw` is valid.
        unsafe { e1000_rs_wake_queue(self.raw()) };
    }

    /// Whether the transmit queue is stopped.
    pub(crate) fn queue_stopped(&self) -> bool {
        // SAFETY: `raw` is valid.
        unsafe { e1000_rs_queue_stopped(self.raw()) }
    }

    /// Whether the queue is stopped for any reason, by the driver or by byte queue limits.
    pub(crate) fn xmit_stopped(&self) -> bool {
        // SAFETY: `raw` is valid.
        unsafe { e1000_rs_xmit_stopped(self.raw()) }
    }

    /// In `ndo_start_xmit`: whether the stack has more frames for the queue right after this one.
    pub(crate) fn xmit_more(&self) -> bool {
        // SAFETY: No preconditions: it reads the calling CPU's transmit state.
        unsafe { e1000_rs_xmit_more() }
    }

    /// In `ndo_start_xmit`, for a frame of `bytes` queued on the ring: counts it for byte queue
    /// limits and says whether the device must be told now, which it need not while the stack
    /// has more frames right after this one and the queue is not stopped
    /// (`__netdev_tx_sent_queue` with `netdev_xmit_more`).
    #[inline]
    pub(crate) fn sent_queue(&self, bytes: u32) -> bool {
        // SAFETY: `raw` is valid; it reads the calling CPU's transmit state.
        unsafe { e1000_rs_sent_queue(self.raw(), bytes) }
    }

    /// Byte queue limits: the hardware finished `packets` packets of `bytes` bytes.
    pub(crate) fn completed_queue(&self, packets: u32, bytes: u32) {
        // SAFETY: `raw` is valid.
        unsafe { e1000_rs_completed_queue(self.raw(), packets, bytes) };
    }

    /// Byte queue limits: forget everything in flight.
    pub(crate) fn reset_queue(&self) {
        // SAFETY: `raw` is valid.
        unsafe { e1000_rs_reset_queue(self.raw()) };
    }

    /// Whether received frames may carry a checksum (`NETIF_F_RXCSUM`, `ethtool -K DEV rx`).
    pub(crate) fn rx_checksum_enabled(&self) -> bool {
        // SAFETY: `raw` is valid.
        unsafe { e1000_rs_rx_checksum_enabled(self.raw()) }
    }
}

impl Drop for NetDev {
    fn drop(&mut self) {
        self.unregister();
        // SAFETY: `raw` is valid and unregistered; it is freed once, here.
        unsafe { e1000_rs_free(self.raw()) };
    }
}

/// The interface's NAPI context.
#[derive(Clone, Copy)]
pub(crate) struct Napi(*mut NapiStruct);

impl Napi {
    /// Enables polling.
    pub(crate) fn enable(self) {
        // SAFETY: The context belongs to a live `net_device` (it comes from `NetDev::napi` or a
        // poll).
        unsafe { e1000_rs_napi_enable(self.0) };
    }

    /// Disables polling, waiting for a running poll to finish.
    pub(crate) fn disable(self) {
        // SAFETY: As in `enable`.
        unsafe { e1000_rs_napi_disable(self.0) };
    }

    /// Schedules a poll.
    pub(crate) fn schedule(self) {
        // SAFETY: As in `enable`.
        unsafe { e1000_rs_napi_schedule(self.0) };
    }

    /// Ends a poll that did `work_done`; false when polling must go on.
    pub(crate) fn complete_done(self, work_done: i32) -> bool {
        // SAFETY: As in `enable`.
        unsafe { e1000_rs_napi_complete_done(self.0, work_done) }
    }

    /// Allocates an skb for a received frame of `length` bytes, with headroom
    /// (`napi_alloc_skb`: its head from NAPI's per-CPU cache).
    ///
    /// # Safety
    ///
    /// Called from this context's poll.
    #[inline]
    pub(crate) unsafe fn alloc_skb(self, length: u32) -> Option<Skb> {
        // SAFETY: The context belongs to a live `net_device`, and its poll is running (safety
        // requirement). `NapiStruct` is the C `struct napi_struct`.
        let raw = unsafe { bindings::napi_alloc_skb(self.0.cast(), length) };
        NonNull::new(raw).map(Skb)
    }

    /// Passes a received frame to the stack.
    pub(crate) fn receive(self, skb: Skb) {
        let raw = skb.into_raw();
        // SAFETY: As in `enable`; the stack takes ownership of `raw`.
        unsafe { e1000_rs_receive(self.0, raw) };
    }
}

/// IPv4 header: byte offsets of the fields TSO touches, and its least length.
const IPV4_TOTAL_LENGTH: usize = 2;
const IPV4_CHECKSUM: usize = 10;
const IPV4_SOURCE: usize = 12;
const IPV4_DESTINATION: usize = 16;
const IPV4_HEADER_MIN: u32 = 20;
/// TCP header: byte offset of the checksum.
const TCP_CHECKSUM: usize = 16;
const IPPROTO_TCP: u8 = 6;

/// Where a segmentation offload frame's headers are, for the hardware's context descriptor.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tso {
    /// Offset of the IPv4 header.
    pub(crate) ip_start: u8,
    /// Offset of the TCP header.
    pub(crate) tcp_start: u8,
    /// Length of all headers, repeated in every segment.
    pub(crate) header_len: u8,
    /// Payload bytes per segment.
    pub(crate) mss: u16,
    /// Payload bytes in all.
    pub(crate) payload_len: u32,
}

/// The ones' complement sum, folded to 16 bits, of an IPv4 pseudo-header with a zero length.
fn pseudo_header_sum(source: [u8; 4], destination: [u8; 4], protocol: u8) -> u16 {
    let word = |b: [u8; 4], i: usize| u32::from(u16::from_be_bytes([b[i], b[i + 1]]));
    let mut sum = word(source, 0)
        + word(source, 2)
        + word(destination, 0)
        + word(destination, 2)
        + u32::from(protocol);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
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

    /// For a TCP/IPv4 segmentation offload skb: readies its headers for the hardware, which
    /// rewrites the IP length and both checksums in every segment, and returns where they are.
    /// `Ok(None)` for an skb the stack did not leave to segmentation offload.
    pub(crate) fn prepare_tso(&mut self) -> Result<Option<Tso>> {
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
        // SAFETY: A valid skb with transport and network headers set (the stack sets them for GSO).
        let (network, transport, tcp_len) = unsafe {
            (
                e1000_rs_skb_network_offset(raw),
                e1000_rs_skb_transport_offset(raw),
                e1000_rs_tcp_hdrlen(raw),
            )
        };
        let header_len = transport + tcp_len;
        if transport < network + IPV4_HEADER_MIN || header_len > self.head_len() {
            return Err(EINVAL);
        }
        let tso = Tso {
            ip_start: u8::try_from(network)?,
            tcp_start: u8::try_from(transport)?,
            header_len: u8::try_from(header_len)?,
            mss,
            payload_len: self.len() - header_len,
        };
        let data = self.data();
        // SAFETY: Both headers lie within the linear part (checked above), which `skb_cow_head`
        // made this skb's own. The hardware fills in the total length and the IP checksum of each
        // segment, and adds the payload to the TCP checksum, which starts as the pseudo-header's
        // sum without a length.
        unsafe {
            let ip = data.add(network as usize);
            let tcp = data.add(transport as usize);
            ip.add(IPV4_TOTAL_LENGTH).cast::<[u8; 2]>().write([0, 0]);
            ip.add(IPV4_CHECKSUM).cast::<[u8; 2]>().write([0, 0]);
            let source = ip.add(IPV4_SOURCE).cast::<[u8; 4]>().read();
            let destination = ip.add(IPV4_DESTINATION).cast::<[u8; 4]>().read();
            let pseudo = pseudo_header_sum(source, destination, IPPROTO_TCP);
            tcp.add(TCP_CHECKSUM)
                .cast::<[u8; 2]>()
                .write(pseudo.to_be_bytes());
        }
        Ok(Some(tso))
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

/// A receive buffer: a page fragment with the headroom, the frame, and the `skb_shared_info` that
/// `napi_build_skb` puts at its end. The skb is built around it only once a frame arrived, so no
/// skb waits on the ring, and its head comes from NAPI's per-CPU cache instead of the slab.
///
/// # Invariants
///
/// `frame` is `RX_HEADROOM` bytes into a page fragment of [`RxBuffer::FRAGMENT_LEN`] bytes that
/// this value owns.
pub(crate) struct RxBuffer {
    frame: NonNull<u8>,
}

// SAFETY: A page fragment may be freed or handed on from any thread.
unsafe impl Send for RxBuffer {}

impl RxBuffer {
    /// Bytes of frame a buffer holds: the longest frame the device passes, as in the C driver, not
    /// the 2048 bytes of RCTL.BSIZE. A frame's skb is charged the whole fragment (its truesize, by
    /// which TCP sizes its receive window), which 2048 would make about a quarter larger.
    pub(crate) const FRAME_LEN: usize = crate::regs::MAX_FRAME_LEN as usize;
    const FRAGMENT_LEN: usize = skb_data_align(RX_HEADROOM + Self::FRAME_LEN)
        + skb_data_align(size_of::<bindings::skb_shared_info>());

    /// Allocates a buffer (`netdev_alloc_frag`), from any context.
    #[inline]
    pub(crate) fn alloc() -> Option<Self> {
        // SAFETY: No preconditions; from any context.
        Self::at(unsafe { bindings::__netdev_alloc_frag_align(Self::FRAGMENT_LEN as u32, !0) })
    }

    /// Allocates a buffer from NAPI's per-CPU fragment cache (`napi_alloc_frag`), which spares
    /// the bottom-half disable and enable that [`RxBuffer::alloc`] wraps around its own.
    ///
    /// # Safety
    ///
    /// The caller is a NAPI poll: bottom halves are disabled, as the cache needs.
    #[inline]
    pub(crate) unsafe fn alloc_in_poll() -> Option<Self> {
        // SAFETY: In a NAPI poll (safety requirement).
        Self::at(unsafe { bindings::__napi_alloc_frag_align(Self::FRAGMENT_LEN as u32, !0) })
    }

    /// The buffer in a fragment of `FRAGMENT_LEN` bytes just allocated, or `None` for null.
    #[inline]
    fn at(fragment: *mut c_void) -> Option<Self> {
        let fragment = NonNull::new(fragment.cast::<u8>())?;
        // SAFETY: A fragment of `FRAGMENT_LEN` bytes has room for the headroom.
        let frame = unsafe { fragment.add(RX_HEADROOM) };
        // INVARIANT: `frame` is `RX_HEADROOM` bytes into the fragment just allocated.
        Some(Self { frame })
    }

    /// Where the device writes the frame, [`RxBuffer::FRAME_LEN`] bytes.
    #[inline]
    pub(crate) fn frame(&self) -> *mut u8 {
        self.frame.as_ptr()
    }

    /// An skb around the first `length` bytes of the frame, or `None` (the buffer freed) when no
    /// skb head could be allocated.
    ///
    /// # Safety
    ///
    /// `length` is at most [`RxBuffer::FRAME_LEN`], the device no longer writes the buffer, and the
    /// caller is a NAPI poll: bottom halves are disabled, as NAPI's skb cache needs.
    #[inline]
    pub(crate) unsafe fn into_skb(self, length: u32) -> Option<Skb> {
        // SAFETY: The fragment starts `RX_HEADROOM` bytes before `frame` (type invariant).
        let fragment = unsafe { self.frame.as_ptr().sub(RX_HEADROOM) };
        // SAFETY: A page fragment of `FRAGMENT_LEN` bytes, with room for the shared info at its end
        // (its length says so), that the device no longer writes, in a NAPI poll (safety
        // requirements).
        let raw = unsafe { bindings::napi_build_skb(fragment.cast(), Self::FRAGMENT_LEN as u32) };
        let mut skb = Skb(NonNull::new(raw)?);
        // The skb owns the fragment now.
        core::mem::forget(self);
        // SAFETY: A fresh skb whose data starts at the fragment, with `RX_HEADROOM` bytes to
        // spare.
        unsafe { e1000_rs_skb_reserve(skb.0.as_ptr(), RX_HEADROOM as u32) };
        // The device wrote `length` bytes, at most `FRAME_LEN` (safety requirement).
        skb.put(length);
        Some(skb)
    }
}

impl Drop for RxBuffer {
    fn drop(&mut self) {
        // SAFETY: A page fragment this value owns (type invariant); any address inside it names it.
        unsafe { bindings::page_frag_free(self.frame.as_ptr().cast()) };
    }
}

/// The adapter behind a `net_device` of this driver.
///
/// # Safety
///
/// `dev` is a `net_device` of this driver whose adapter was set and is still alive.
#[inline]
unsafe fn adapter<'a>(dev: *mut NetDevice) -> &'a E1000<'a> {
    // SAFETY: The private area of a valid device (safety requirement) lies inside its allocation
    // at this offset, a constant, and starts with the device's NAPI context (asserted in
    // `netdev_shim.c`, registered there with `netif_napi_add`).
    unsafe { napi_adapter(dev.byte_add(e1000_rs_priv_offset).cast()) }
}

/// The adapter behind the NAPI context of one of this driver's devices.
///
/// # Safety
///
/// As for [`adapter`], for the device `napi` belongs to.
#[inline]
unsafe fn napi_adapter<'a>(napi: *mut NapiStruct) -> &'a E1000<'a> {
    // SAFETY: The NAPI context starts the private area (`struct e1000_rs_priv`), which holds the
    // adapter pointer, aligned, at this constant offset; the pointer was set to an adapter still
    // alive (safety requirements).
    unsafe {
        let pointer = napi
            .byte_add(e1000_rs_adapter_offset)
            .cast::<*const E1000<'a>>();
        &*pointer.read()
    }
}

/// `ndo_open`.
///
/// # Safety
///
/// Called by the networking stack with one of this driver's registered devices.
#[no_mangle]
pub(crate) unsafe extern "C" fn e1000_rs_open(dev: *mut NetDevice) -> c_int {
    // SAFETY: A registered device of this driver has its adapter set until it is unregistered.
    match unsafe { adapter(dev) }.open() {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `ndo_stop`.
///
/// # Safety
///
/// As for [`e1000_rs_open`].
#[no_mangle]
pub(crate) unsafe extern "C" fn e1000_rs_stop(dev: *mut NetDevice) -> c_int {
    // SAFETY: As in `e1000_rs_open`.
    unsafe { adapter(dev) }.stop();
    0
}

/// `ndo_start_xmit`: returns `NETDEV_TX_OK`, or `NETDEV_TX_BUSY` when the ring is full.
///
/// # Safety
///
/// As for [`e1000_rs_open`]; `skb` is a valid skb whose ownership passes to the driver.
#[no_mangle]
pub(crate) unsafe extern "C" fn e1000_rs_start_xmit(
    skb: *mut bindings::sk_buff,
    dev: *mut NetDevice,
) -> c_int {
    // SAFETY: By the function's safety requirements.
    let Some(skb) = (unsafe { Skb::from_raw(skb) }) else {
        return NETDEV_TX_OK;
    };
    // SAFETY: As in `e1000_rs_open`.
    match unsafe { adapter(dev) }.xmit(skb) {
        Ok(()) => NETDEV_TX_OK,
        Err(skb) => {
            // The stack keeps the skb and retries it.
            let _ = skb.into_raw();
            NETDEV_TX_BUSY
        }
    }
}

/// `ndo_get_stats64`.
///
/// # Safety
///
/// As for [`e1000_rs_open`]; `stats` is a valid, zeroed `rtnl_link_stats64`.
#[no_mangle]
pub(crate) unsafe extern "C" fn e1000_rs_get_stats64(dev: *mut NetDevice, stats: *mut LinkStats64) {
    // SAFETY: As in `e1000_rs_open`.
    let counters = unsafe { adapter(dev) }.stats();
    // SAFETY: `stats` is valid by the safety requirements.
    unsafe { e1000_rs_set_stats(stats, &counters) };
}

/// `ndo_set_mac_address`.
///
/// # Safety
///
/// As for [`e1000_rs_open`]; `addr` is a valid `struct sockaddr`.
#[no_mangle]
pub(crate) unsafe extern "C" fn e1000_rs_set_mac_address(
    dev: *mut NetDevice,
    addr: *mut c_void,
) -> c_int {
    // SAFETY: `addr` is a `struct sockaddr`, whose data holds at least 6 bytes, the caller's for
    // the call.
    let mac = unsafe { mac_address_at(e1000_rs_sockaddr_data(addr)) };
    // SAFETY: As in `e1000_rs_open`.
    match unsafe { adapter(dev) }.set_mac_address(&mac) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `ndo_set_rx_mode_async`: the receive filter for the interface's flags, secondary unicast
/// addresses and multicast groups.
///
/// # Safety
///
/// As for [`e1000_rs_open`]; the stack calls it under the RTNL lock, as it does `ndo_open` and
/// `ndo_stop`, with valid address lists.
#[no_mangle]
pub(crate) unsafe extern "C" fn e1000_rs_set_rx_mode(
    dev: *mut NetDevice,
    unicast: *mut AddrList,
    multicast: *mut AddrList,
) -> c_int {
    // SAFETY: `dev` is a valid device (safety requirements).
    let flags = unsafe { e1000_rs_flags(dev) };
    let mode = RxMode {
        promiscuous: flags & bindings::net_device_flags_IFF_PROMISC != 0,
        all_multicast: flags & bindings::net_device_flags_IFF_ALLMULTI != 0,
    };
    // SAFETY: The stack's copies of the lists, which do not change during the call (safety
    // requirements); the iterators do not outlive it.
    let (addresses, groups) = unsafe { (HwAddrs::new(unicast), HwAddrs::new(multicast)) };
    // SAFETY: As in `e1000_rs_open`.
    unsafe { adapter(dev) }.set_rx_mode(mode, addresses, groups);
    0
}

/// The NAPI poll callback.
///
/// # Safety
///
/// Called by NAPI with the context of one of this driver's devices.
#[no_mangle]
pub(crate) unsafe extern "C" fn e1000_rs_poll(napi: *mut NapiStruct, budget: c_int) -> c_int {
    // SAFETY: The context belongs to a device of this driver, polled only while it is open, when
    // its adapter is set.
    unsafe { napi_adapter(napi) }.poll(Napi(napi), budget)
}
