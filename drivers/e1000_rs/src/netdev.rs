// SPDX-License-Identifier: GPL-2.0

//! The driver's own thin netdev layer: the kernel crate has no `net_device` abstraction, so this
//! wraps `netdev_shim.c` (one-line wrappers of what Rust cannot call, and the offsets of two fields
//! bindgen leaves opaque) in owned types. The `net_device_ops` callbacks and the NAPI poll go to
//! an [`Interface`], which the driver implements and exports with `net_device_ops!` (`callbacks.rs`).

use core::{
    ptr::NonNull,
    sync::atomic::{AtomicBool, Ordering},
};

use kernel::{
    bindings,
    ffi::{c_int, c_uint, c_void},
    prelude::*,
};

use crate::skb::Skb;

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

/// The counters reported through `ndo_get_stats64`; the layout of `struct e1000_rs_stats` in
/// `netdev_shim.h`, which asserts the same size.
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
// `netdev_shim.h` asserts the same: a field added on one side only fails to build.
const _: () = assert!(core::mem::size_of::<Stats>() == 10 * core::mem::size_of::<u64>());

/// The offloads and filters the interface offers the stack, as `NETIF_F_*` features and
/// `IFF_UNICAST_FLT`.
pub(crate) struct Features {
    /// Checksums of any protocol at offsets the stack gives (`NETIF_F_HW_CSUM`).
    pub(crate) hw_checksum: bool,
    /// Frames in page fragments (`NETIF_F_SG`).
    pub(crate) scatter_gather: bool,
    /// TCP/IPv4 segmentation (`NETIF_F_TSO`).
    pub(crate) tcp_segmentation: bool,
    /// Received frames with their checksum (`NETIF_F_RXCSUM`).
    pub(crate) rx_checksum: bool,
    /// Received frames with their Frame Check Sequence (`NETIF_F_RXFCS`), and frames the hardware
    /// would have filtered or found damaged (`NETIF_F_RXALL`), both off until asked for.
    pub(crate) rx_fcs_and_all: bool,
    /// Secondary unicast addresses filtered by the hardware (`IFF_UNICAST_FLT`).
    pub(crate) unicast_filter: bool,
    /// 802.1Q tags inserted and stripped, VLAN IDs filtered (`NETIF_F_HW_VLAN_CTAG_TX`, `_RX`,
    /// `_FILTER`), and VLAN interfaces offered the checksum, scatter-gather and segmentation
    /// offloads.
    pub(crate) vlan: bool,
}

/// A set of `NETIF_F_*` features, as `ndo_fix_features` and `ndo_set_features` pass them.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct FeatureSet(u64);

impl FeatureSet {
    const VLAN_INSERTION: u64 = 1 << bindings::NETIF_F_HW_VLAN_CTAG_TX_BIT;
    const VLAN_STRIPPING: u64 = 1 << bindings::NETIF_F_HW_VLAN_CTAG_RX_BIT;
    const RX_CHECKSUM: u64 = 1 << bindings::NETIF_F_RXCSUM_BIT;
    const RX_FCS: u64 = 1 << bindings::NETIF_F_RXFCS_BIT;
    const RX_ALL: u64 = 1 << bindings::NETIF_F_RXALL_BIT;

    /// Whether received frames carry the checksum the driver computed (`NETIF_F_RXCSUM`).
    pub(crate) fn rx_checksum(self) -> bool {
        self.0 & Self::RX_CHECKSUM != 0
    }

    /// Whether received frames keep their Frame Check Sequence (`NETIF_F_RXFCS`).
    pub(crate) fn rx_fcs(self) -> bool {
        self.0 & Self::RX_FCS != 0
    }

    /// Whether frames the MAC would drop reach the stack: damaged, too long, of a VLAN the
    /// interface does not have, MAC control (`NETIF_F_RXALL`).
    pub(crate) fn rx_all(self) -> bool {
        self.0 & Self::RX_ALL != 0
    }

    /// Whether received frames' 802.1Q tags are stripped (`NETIF_F_HW_VLAN_CTAG_RX`).
    pub(crate) fn vlan_stripping(self) -> bool {
        self.0 & Self::VLAN_STRIPPING != 0
    }

    /// The same with tag insertion (`NETIF_F_HW_VLAN_CTAG_TX`) on or off.
    pub(crate) fn with_vlan_insertion(self, on: bool) -> Self {
        if on {
            Self(self.0 | Self::VLAN_INSERTION)
        } else {
            Self(self.0 & !Self::VLAN_INSERTION)
        }
    }
}

extern "C" {
    /// Where the private area (`netdev_priv`) starts in a `net_device`: the hot paths find it
    /// without a call. A `const` in C, never written.
    static e1000_rs_priv_offset: usize;
    /// Where the adapter pointer lies in the private area, after the NAPI context that starts it
    /// (which `netdev_shim.c` asserts). A `const` in C, never written.
    static e1000_rs_adapter_offset: usize;
    fn e1000_rs_alloc_netdev(
        parent: *mut c_void,
        hw_checksum: bool,
        scatter_gather: bool,
        tcp_segmentation: bool,
        rx_checksum: bool,
        rx_fcs_and_all: bool,
        unicast_filter: bool,
        vlan: bool,
        min_mtu: c_uint,
        max_mtu: c_uint,
        tx_timeout_ms: c_uint,
    ) -> *mut NetDevice;
    fn e1000_rs_set_mtu(dev: *mut NetDevice, mtu: c_uint);
    fn e1000_rs_is_up(dev: *mut NetDevice) -> bool;
    fn e1000_rs_device_detach(dev: *mut NetDevice);
    fn e1000_rs_device_attach(dev: *mut NetDevice);
    fn e1000_rs_rtnl_lock();
    fn e1000_rs_rtnl_unlock();
    fn e1000_rs_set_adapter(dev: *mut NetDevice, adapter: *mut c_void);
    fn e1000_rs_register(dev: *mut NetDevice) -> c_int;
    fn e1000_rs_unregister(dev: *mut NetDevice);
    fn e1000_rs_free(dev: *mut NetDevice);
    fn e1000_rs_set_hw_addr(dev: *mut NetDevice, addr: *const u8);
    fn e1000_rs_dev_addr(dev: *mut NetDevice) -> *const u8;
    fn e1000_rs_sockaddr_data(sockaddr: *mut c_void) -> *const u8;
    fn e1000_rs_valid_ether_addr(addr: *const u8) -> bool;
    fn e1000_rs_device_can_wakeup(dev: *mut c_void) -> bool;
    fn e1000_rs_device_set_wakeup_enable(dev: *mut c_void, enable: bool);
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
    fn e1000_rs_features(dev: *mut NetDevice) -> u64;
    fn e1000_rs_receive(napi: *mut NapiStruct, skb: *mut bindings::sk_buff);
    fn e1000_rs_set_stats(stats: *mut LinkStats64, counters: *const Stats);
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

/// Whether the PCI core found that `dev` can wake the system (`device_can_wakeup`: it has the
/// power management capability and signals PME).
pub(crate) fn can_wake_system(dev: &kernel::device::Device) -> bool {
    // SAFETY: `dev` is a valid device for the call.
    unsafe { e1000_rs_device_can_wakeup(raw_device(dev).cast()) }
}

/// Says whether `dev` is to wake the system (`device_set_wakeup_enable`); nothing for a device
/// that cannot.
pub(crate) fn set_wakes_system(dev: &kernel::device::Device, on: bool) {
    // SAFETY: `dev` is a valid device for the call.
    unsafe { e1000_rs_device_set_wakeup_enable(raw_device(dev).cast(), on) };
}

/// The C `struct device` of `dev`: `Device` is transparent over `Opaque<bindings::device>`, itself
/// transparent over the C struct (as `dma_local` relies on too).
fn raw_device(dev: &kernel::device::Device) -> *mut bindings::device {
    core::ptr::from_ref(dev)
        .cast::<bindings::device>()
        .cast_mut()
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
    /// Allocates an Ethernet `net_device` for the PCI device `parent`, with the driver's callbacks
    /// and `features`, MTUs from `min_mtu` to `max_mtu`, and the stack's transmit watchdog calling
    /// `ndo_tx_timeout` when a stopped queue has not moved for `tx_timeout_ms`.
    pub(crate) fn alloc(
        parent: &kernel::device::Device,
        features: &Features,
        min_mtu: u32,
        max_mtu: u32,
        tx_timeout_ms: u32,
    ) -> Result<Self> {
        // A `Device` is transparent over the C `struct device` (as in dma_local).
        let parent = core::ptr::from_ref(parent).cast_mut().cast::<c_void>();
        // SAFETY: `parent` is a valid device.
        let raw = unsafe {
            e1000_rs_alloc_netdev(
                parent,
                features.hw_checksum,
                features.scatter_gather,
                features.tcp_segmentation,
                features.rx_checksum,
                features.rx_fcs_and_all,
                features.unicast_filter,
                features.vlan,
                min_mtu,
                max_mtu,
                tx_timeout_ms,
            )
        };
        // INVARIANT: just allocated, not registered.
        Ok(Self {
            raw: NonNull::new(raw).ok_or(ENOMEM)?,
            registered: AtomicBool::new(false),
        })
    }

    fn raw(&self) -> *mut NetDevice {
        self.raw.as_ptr()
    }

    /// Points the `net_device`'s callbacks at `adapter`, of the one type whose callbacks
    /// `net_device_ops!` (`callbacks.rs`) exported.
    ///
    /// # Safety
    ///
    /// `adapter` stays valid, and pinned, until the `net_device` is unregistered and its IRQ freed.
    pub(crate) unsafe fn set_adapter<A: Exported>(&self, adapter: *const A) {
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

    /// Records the interface's new MTU, from `ndo_change_mtu`.
    pub(crate) fn set_mtu(&self, mtu: u32) {
        // SAFETY: `raw` is valid.
        unsafe { e1000_rs_set_mtu(self.raw(), mtu) };
    }

    /// Whether the interface is up (`netif_running`): opened by the stack, whether or not the
    /// driver has it running at the moment.
    pub(crate) fn is_up(&self) -> bool {
        // SAFETY: `raw` is valid.
        unsafe { e1000_rs_is_up(self.raw()) }
    }

    /// Takes the device from the stack for system sleep (`netif_device_detach`): its queue stops
    /// and stays stopped until [`NetDev::attach`].
    pub(crate) fn detach(&self) {
        // SAFETY: `raw` is valid.
        unsafe { e1000_rs_device_detach(self.raw()) };
    }

    /// Gives the device back to the stack after system sleep (`netif_device_attach`).
    pub(crate) fn attach(&self) {
        // SAFETY: `raw` is valid.
        unsafe { e1000_rs_device_attach(self.raw()) };
    }

    /// Runs `f` under the RTNL lock, which serialises it with the stack's configuration calls
    /// (`ndo_open`, `ndo_stop`, ethtool); from process context, not holding the lock.
    pub(crate) fn with_rtnl<T>(&self, f: impl FnOnce() -> T) -> T {
        // SAFETY: No preconditions beyond sleeping, which the caller may.
        unsafe { e1000_rs_rtnl_lock() };
        let result = f();
        // SAFETY: Taken above.
        unsafe { e1000_rs_rtnl_unlock() };
        result
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

    /// The features the stack has on (`ethtool -K`), as the receive path reads them for each poll.
    pub(crate) fn features(&self) -> FeatureSet {
        // SAFETY: `raw` is valid.
        FeatureSet(unsafe { e1000_rs_features(self.raw()) })
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
        // SAFETY: A fresh skb, ours, or null.
        unsafe { Skb::from_raw(raw) }
    }

    /// Passes a received frame to the stack.
    pub(crate) fn receive(self, skb: Skb) {
        let raw = skb.into_raw();
        // SAFETY: As in `enable`; the stack takes ownership of `raw`.
        unsafe { e1000_rs_receive(self.0, raw) };
    }
}

/// What the driver implements for its interface: the `net_device_ops` callbacks and the NAPI poll,
/// which this layer hands it from the `net_device` they come with.
pub(crate) trait Interface: Sync {
    /// `ndo_open`, under the RTNL lock.
    fn open(&self) -> Result;
    /// `ndo_stop`, under the RTNL lock.
    fn stop(&self);
    /// `ndo_start_xmit`, under the queue's lock: the skb comes back when the ring is full.
    fn xmit(&self, skb: Skb) -> core::result::Result<(), Skb>;
    /// `ndo_get_stats64`, from any context.
    fn stats(&self) -> Stats;
    /// `ndo_set_mac_address`, under the RTNL lock.
    fn set_mac_address(&self, mac: &MacAddress) -> Result;
    /// `ndo_set_rx_mode_async`, under the RTNL lock: the receive filter for the mode, secondary
    /// unicast `addresses` and multicast `groups`.
    fn set_rx_mode(&self, mode: RxMode, addresses: HwAddrs<'_>, groups: HwAddrs<'_>);
    /// The NAPI poll: the work done, at most `budget`.
    fn poll(&self, napi: Napi, budget: i32) -> i32;
    /// `ndo_change_mtu`, under the RTNL lock, with an MTU the stack checked against the bounds
    /// the interface was allocated with; the driver records it with [`NetDev::set_mtu`].
    fn change_mtu(&self, mtu: u32) -> Result;
    /// `ndo_tx_timeout`, from the stack's transmit watchdog (a timer): a stopped queue has not
    /// moved for the timeout the interface was allocated with.
    fn tx_timeout(&self);
    /// `ndo_fix_features`, under the RTNL lock: the features the hardware can have together, from
    /// those asked for.
    fn fix_features(&self, features: FeatureSet) -> FeatureSet;
    /// `ndo_set_features`, under the RTNL lock, before the stack records `features`.
    fn set_features(&self, features: FeatureSet) -> Result;
    /// `ndo_vlan_rx_add_vid` and `ndo_vlan_rx_kill_vid`, under the RTNL lock: frames tagged with
    /// 802.1Q VLAN `vid` pass the filter, or no longer.
    fn set_vlan(&self, vid: u16, pass: bool) -> Result;
}

/// The [`Interface`] whose callbacks `net_device_ops!` (`callbacks.rs`) exported: the type of every adapter that
/// [`NetDev::set_adapter`] takes, which the callbacks read back.
///
/// # Safety
///
/// Implemented by `net_device_ops!` (`callbacks.rs`) alone, for the type it exports the callbacks of; their
/// `#[no_mangle]` symbols allow one such type in the driver.
pub(crate) unsafe trait Exported: Interface {}

/// The adapter behind a `net_device` of this driver.
///
/// # Safety
///
/// `dev` is a `net_device` of this driver whose adapter, an `A`, was set and is still alive.
#[inline]
pub(crate) unsafe fn adapter<'a, A: Interface>(dev: *mut NetDevice) -> &'a A {
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
unsafe fn napi_adapter<'a, A: Interface>(napi: *mut NapiStruct) -> &'a A {
    // SAFETY: The NAPI context starts the private area (`struct e1000_rs_priv`), which holds the
    // adapter pointer, aligned, at this constant offset; the pointer was set to an `A` still
    // alive (safety requirements).
    unsafe {
        let pointer = napi.byte_add(e1000_rs_adapter_offset).cast::<*const A>();
        &*pointer.read()
    }
}

/// `ndo_open`.
///
/// # Safety
///
/// Called by the networking stack with one of this driver's registered devices, whose adapter is
/// an `A` (see `net_device_ops!` in `callbacks.rs`).
pub(crate) unsafe fn open<A: Interface>(dev: *mut NetDevice) -> c_int {
    // SAFETY: A registered device of this driver has its adapter set until it is unregistered.
    match unsafe { adapter::<A>(dev) }.open() {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `ndo_stop`.
///
/// # Safety
///
/// As for [`open`].
pub(crate) unsafe fn stop<A: Interface>(dev: *mut NetDevice) -> c_int {
    // SAFETY: As in `open`.
    unsafe { adapter::<A>(dev) }.stop();
    0
}

/// `ndo_start_xmit`: returns `NETDEV_TX_OK`, or `NETDEV_TX_BUSY` when the ring is full.
///
/// # Safety
///
/// As for [`open`]; `skb` is a valid skb whose ownership passes to the driver.
pub(crate) unsafe fn start_xmit<A: Interface>(
    skb: *mut bindings::sk_buff,
    dev: *mut NetDevice,
) -> c_int {
    // SAFETY: By the function's safety requirements.
    let Some(skb) = (unsafe { Skb::from_raw(skb) }) else {
        return NETDEV_TX_OK;
    };
    // SAFETY: As in `open`.
    match unsafe { adapter::<A>(dev) }.xmit(skb) {
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
/// As for [`open`]; `stats` is a valid, zeroed `rtnl_link_stats64`.
pub(crate) unsafe fn get_stats64<A: Interface>(dev: *mut NetDevice, stats: *mut LinkStats64) {
    // SAFETY: As in `open`.
    let counters = unsafe { adapter::<A>(dev) }.stats();
    // SAFETY: `stats` is valid by the safety requirements.
    unsafe { e1000_rs_set_stats(stats, &counters) };
}

/// `ndo_set_mac_address`.
///
/// # Safety
///
/// As for [`open`]; `addr` is a valid `struct sockaddr`.
pub(crate) unsafe fn set_mac_address<A: Interface>(
    dev: *mut NetDevice,
    addr: *mut c_void,
) -> c_int {
    // SAFETY: `addr` is a `struct sockaddr`, whose data holds at least 6 bytes, the caller's for
    // the call.
    let mac = unsafe { mac_address_at(e1000_rs_sockaddr_data(addr)) };
    // SAFETY: As in `open`.
    match unsafe { adapter::<A>(dev) }.set_mac_address(&mac) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `ndo_set_rx_mode_async`: the receive filter for the interface's flags, secondary unicast
/// addresses and multicast groups.
///
/// # Safety
///
/// As for [`open`]; the stack calls it under the RTNL lock, as it does `ndo_open` and `ndo_stop`,
/// with valid address lists.
pub(crate) unsafe fn set_rx_mode<A: Interface>(
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
    // SAFETY: As in `open`.
    unsafe { adapter::<A>(dev) }.set_rx_mode(mode, addresses, groups);
    0
}

/// `ndo_change_mtu`.
///
/// # Safety
///
/// As for [`open`].
pub(crate) unsafe fn change_mtu<A: Interface>(dev: *mut NetDevice, mtu: c_int) -> c_int {
    let Ok(mtu) = u32::try_from(mtu) else {
        return EINVAL.to_errno();
    };
    // SAFETY: As in `open`.
    match unsafe { adapter::<A>(dev) }.change_mtu(mtu) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `ndo_tx_timeout`.
///
/// # Safety
///
/// As for [`open`].
pub(crate) unsafe fn tx_timeout<A: Interface>(dev: *mut NetDevice) {
    // SAFETY: As in `open`.
    unsafe { adapter::<A>(dev) }.tx_timeout();
}

/// `ndo_fix_features`.
///
/// # Safety
///
/// As for [`open`].
pub(crate) unsafe fn fix_features<A: Interface>(dev: *mut NetDevice, features: u64) -> u64 {
    // SAFETY: As in `open`.
    unsafe { adapter::<A>(dev) }
        .fix_features(FeatureSet(features))
        .0
}

/// `ndo_set_features`.
///
/// # Safety
///
/// As for [`open`].
pub(crate) unsafe fn set_features<A: Interface>(dev: *mut NetDevice, features: u64) -> c_int {
    // SAFETY: As in `open`.
    match unsafe { adapter::<A>(dev) }.set_features(FeatureSet(features)) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `ndo_vlan_rx_add_vid` (`pass`) and `ndo_vlan_rx_kill_vid`, for 802.1Q tags only (the only
/// protocol the interface claims to filter).
///
/// # Safety
///
/// As for [`open`].
pub(crate) unsafe fn set_vlan<A: Interface>(dev: *mut NetDevice, vid: u16, pass: bool) -> c_int {
    // SAFETY: As in `open`.
    match unsafe { adapter::<A>(dev) }.set_vlan(vid, pass) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// The NAPI poll callback.
///
/// # Safety
///
/// Called by NAPI with the context of one of this driver's devices, whose adapter is an `A`.
pub(crate) unsafe fn poll<A: Interface>(napi: *mut NapiStruct, budget: c_int) -> c_int {
    // SAFETY: The context belongs to a device of this driver, polled only while it is open, when
    // its adapter is set.
    unsafe { napi_adapter::<A>(napi) }.poll(Napi(napi), budget)
}
