// SPDX-License-Identifier: GPL-2.0

//! The adapter: one bound 82540EM and its interface. Opening the interface allocates the
//! descriptor rings, programs the receiver and the transmitter and enables interrupts; the
//! interrupt handler only masks interrupts and schedules NAPI, and the NAPI poll cleans both
//! rings. A transmit schedules a poll that only frees sent frames.

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use kernel::{
    bindings,
    cpu::CpuId,
    device::{Bound, Core},
    new_mutex, new_spinlock, pci,
    prelude::*,
    sync::{Mutex, SpinLock},
};

use crate::compat::{self, irqreturn, smp_mb, Full};
use crate::dma_local::{self, Mask};
use crate::eeprom;
use crate::ethtool::msg;
use crate::hw::{self, Bar0, HwStats, ReceiveFilter};
use crate::link::LinkConfig;
use crate::netdev::{
    self, FeatureSet, HwAddrs, Interface, MacAddress, Napi, NetDev, RxMode, Stats,
};
use crate::offload;
use crate::open_rings::Rings;
use crate::pause::{self, Directions, FlowControl};
use crate::phy;
use crate::regs;
use crate::ring_common::RingSize;
use crate::rx::{RxDone, RxFrames, RxRing};
use crate::skb::Skb;
use crate::timer::Timer;
use crate::tx::{TxProducer, TxRing};
use crate::work::Work;

mod ethtool;

/// How long a frame the poll sent waits in the transmit ring, if no interrupt comes, before the
/// reap timer schedules a poll to free it: rounded up to jiffies (8-12 ms at HZ=250).
const REAP_DELAY_MS: u32 = 10;
/// The MTUs the interface takes, as the C driver's on this controller: from a minimum-size frame's
/// payload to a 16128-byte frame's (the largest the MAC's long packets allow).
const MIN_MTU: u32 = 46;
const MAX_MTU: u32 = 16110;
/// How long a stopped transmit queue may stand before `ndo_tx_timeout` resets the adapter (the C
/// driver's watchdog timeout).
const TX_TIMEOUT_MS: u32 = 5000;

/// The message classes logged until `ethtool -s DEV msglvl` says otherwise: the C driver's.
const DEFAULT_MSG_LEVEL: u32 = msg::DRV | msg::PROBE | msg::LINK;

/// A counter that one context at a time adds to and `ndo_get_stats64` reads at any time: as
/// `u64_stats_t` on a 64-bit kernel, an add is a load and a store, not a locked read-modify-write.
#[derive(Default)]
struct Counter(AtomicU64);

impl Counter {
    /// Adds `n`. Two contexts adding at once could lose one's update, so each counter has one
    /// writer: the NAPI poll, or `ndo_start_xmit` under the queue's lock.
    #[inline]
    fn add(&self, n: u64) {
        if n != 0 {
            let sum = self.0.load(Ordering::Relaxed).wrapping_add(n);
            self.0.store(sum, Ordering::Relaxed);
        }
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Counters kept by the driver. `tx_dropped` is counted by `ndo_start_xmit`, the rest by the poll.
#[derive(Default)]
struct Counters {
    rx_packets: Counter,
    rx_bytes: Counter,
    tx_packets: Counter,
    tx_bytes: Counter,
    rx_errors: Counter,
    rx_length_errors: Counter,
    rx_dropped: Counter,
    tx_dropped: Counter,
    /// Transmit timeouts: the stack's watchdog, one at a time.
    tx_timeouts: Counter,
    /// A stopped queue started again: by `ndo_start_xmit` when room came meanwhile, and by the
    /// poll.
    tx_restarts_xmit: Counter,
    tx_restarts_poll: Counter,
}

/// What the rings are built with and what the receive filter passes: the ring sizes (`ethtool
/// -G`), the frames the MTU makes, and the filter as the stack last set it. Changed only under the
/// RTNL lock, by the stack's configuration calls; an open, a reset or a resize builds the rings
/// from it.
#[derive(Clone)]
struct Settings {
    rx_ring: RingSize,
    tx_ring: RingSize,
    frames: RxFrames,
    filter: ReceiveFilter,
    /// 802.1Q tags stripped and inserted by the MAC (CTRL.VME).
    vlan_tags: bool,
    /// Speed, duplex and crossover, negotiated or forced.
    link: LinkConfig,
}

/// A bound 82540EM.
///
/// # Invariants
///
/// - `irq` is requested with a pointer to this pinned object as its cookie until `PinnedDrop`.
/// - `netdev`'s adapter pointer is this object.
/// - `reap_timer` fires into `reap_timer_fired`, which finds this object around it. Only `xmit`
///   arms it, so only while the interface runs; `down` disarms it, and `PinnedDrop` shuts it
///   down.
/// - `reset_work` runs `reset_work_run`, which finds this object around it; `PinnedDrop` cancels
///   it after unregistering the interface, whose transmit watchdog alone schedules it.
#[pin_data(PinnedDrop)]
pub(crate) struct E1000<'bound> {
    pdev: &'bound pci::Device<Bound>,
    bar: Bar0<'bound>,
    /// Schedules a poll when frames sent without a completion interrupt might otherwise wait in
    /// the transmit ring for good (see `request_completion`).
    #[pin]
    reap_timer: Timer,
    /// The CPU the NAPI poll runs on, plus one; 0 while it does not run.
    polling_cpu: AtomicU32,
    /// How often the interrupt handler has masked the device's interrupts (and scheduled the
    /// poll, which receives and enables them again), wrapping.
    masks: AtomicU32,
    /// The count of `masks` that the last poll to enable interrupts had seen; interrupts are
    /// masked while the two differ. A count, not a flag the poll clears: a poll stores it after
    /// completing NAPI, when a handler may already have masked again for the next poll, and an
    /// older count stored late only has a poll enable interrupts once more.
    masks_undone: AtomicU32,
    /// A transmit or the reap timer scheduled the poll to free sent frames. Unless an interrupt
    /// scheduled it too, that poll does not receive: interrupts stay enabled for what arrives.
    completions_only: AtomicBool,
    /// The causes the interrupt handler read while the interface was down: what the self-test's
    /// interrupt test raised.
    idle_causes: AtomicU32,
    netdev: NetDev,
    /// Installed by `start` before the queue starts and NAPI is enabled, removed by `down` after
    /// both are disabled: `xmit` and `poll`, which use them, never run meanwhile.
    rings: Rings<'bound>,
    #[pin]
    hw_stats: SpinLock<HwStats>,
    counters: Counters,
    #[pin]
    settings: Mutex<Settings>,
    /// Rebuilds the rings and resets the controller after a transmit timeout, in process context
    /// and under the RTNL lock, as the C driver's reset task does.
    #[pin]
    reset_work: Work,
    /// Resolves flow control after a link change with the link up (the interrupt cannot read the
    /// PHY).
    #[pin]
    link_work: Work,
    /// Flow control (`ethtool -a`/`-A`); changed under the RTNL lock.
    #[pin]
    flow: Mutex<FlowControl>,
    /// The interface is open: interrupts may schedule NAPI.
    running: AtomicBool,
    /// The statistics registers count: from `start` to `down`, which adds them to the sums before
    /// the reset clears them. Otherwise (closed, asleep, in a reset) they are not read: nothing
    /// counts, a device in a low-power state reads all ones, and one in reset must not be read.
    /// Changed and read under the `hw_stats` lock.
    counting: AtomicBool,
    /// The driver said that the device does not answer: once per bind is enough.
    said_unanswering: AtomicBool,
    /// The message classes logged (`ethtool -s DEV msglvl`), as the C driver's by default.
    msg_level: AtomicU32,
    /// What wakes the system (`WAKE_*` bits; `ethtool -s DEV wol`): a magic packet if the
    /// EEPROM enables it (APME), as for the C driver.
    wake_on_lan: AtomicU32,
    /// LED Control as `ethtool -p` found it, and its two identification modes.
    identify_leds: ethtool::IdentifyLeds,
    /// The PHY's idle and receive error counts, summed over the dumps that read them (the
    /// counters clear on read).
    phy_errors: ethtool::PhyErrors,
    irq: u32,
    _vectors: compat::IrqVectors<'bound>,
}

impl<'bound> E1000<'bound> {
    /// Enables the device for DMA, maps its registers and resets it, reads the Ethernet address
    /// from the EEPROM, allocates the `net_device` and requests the interrupt: all but
    /// registering the interface ([`E1000::register`]).
    pub(crate) fn new<'core>(
        pdev: &'bound pci::Device<Core<'core>>,
    ) -> impl PinInit<Self, Error> + use<'bound, 'core> {
        let bound: &'bound pci::Device<Bound> = pdev;
        try_pin_init!(&this in E1000 {
            pdev: {
                dma_local::enable_bus_master(pdev)?;
                // SAFETY: Nothing of this device is allocated or mapped yet: the rings come
                // when the interface opens.
                unsafe { dma_local::set_mask_and_coherent(bound.as_ref(), Mask::bits(64)?) }?;
                bound
            },
            bar: {
                let bar = bound.iomap_region_sized::<{ regs::BAR0_SIZE }>(0, c"e1000_rs")?;
                reset_controller(&bar);
                bar
            },
            // SAFETY: `reap_timer_fired` takes the `timer_list` of an `E1000`'s `reap_timer`,
            // which this is; `PinnedDrop` shuts it down before this pinned object goes.
            reap_timer <- unsafe { Timer::new(reap_timer_fired) },
            polling_cpu: AtomicU32::new(0),
            masks: AtomicU32::new(0),
            masks_undone: AtomicU32::new(0),
            completions_only: AtomicBool::new(false),
            idle_causes: AtomicU32::new(0),
            netdev: {
                let netdev = NetDev::alloc(
                    bound.as_ref(),
                    &offload::FEATURES,
                    MIN_MTU,
                    MAX_MTU,
                    TX_TIMEOUT_MS,
                )?;
                let mac = eeprom::read_mac_address(bar)?;
                netdev.set_hw_addr(&mac);
                // SAFETY: `this` is pinned and outlives the registration and the IRQ (`PinnedDrop`
                // unregisters and frees both before anything else goes).
                unsafe { netdev.set_adapter(this.as_ptr()) };
                netdev
            },
            rings: Rings::new(),
            hw_stats <- new_spinlock!(HwStats::default(), "e1000_rs:hw_stats"),
            counters: Counters::default(),
            settings <- new_mutex!(
                Settings {
                    rx_ring: RingSize::DEFAULT,
                    tx_ring: RingSize::DEFAULT,
                    frames: RxFrames::default(),
                    filter: ReceiveFilter::default(),
                    vlan_tags: offload::FEATURES.vlan,
                    link: LinkConfig::default(),
                },
                "e1000_rs:settings"
            ),
            // SAFETY: `reset_work_run` takes the `work_struct` of an `E1000`'s `reset_work`, which
            // this is; `PinnedDrop` cancels it before this pinned object goes.
            reset_work <- unsafe { Work::new(reset_work_run) },
            // SAFETY: `link_work_run` takes the `work_struct` of an `E1000`'s `link_work`, which
            // this is; `PinnedDrop` cancels it before this pinned object goes.
            link_work <- unsafe { Work::new(link_work_run) },
            flow <- new_mutex!(FlowControl::default(), "e1000_rs:flow"),
            running: AtomicBool::new(false),
            counting: AtomicBool::new(false),
            said_unanswering: AtomicBool::new(false),
            msg_level: AtomicU32::new(DEFAULT_MSG_LEVEL),
            wake_on_lan: {
                let apme = eeprom::read(bar, regs::EEPROM_INIT_CONTROL3_PORT_A)?
                    & regs::EEPROM_APME
                    != 0;
                let wake = if apme { bindings::WAKE_MAGIC } else { 0 };
                netdev::set_wakes_system(bound.as_ref(), wake != 0);
                AtomicU32::new(wake)
            },
            identify_leds: ethtool::IdentifyLeds::default(),
            phy_errors: ethtool::PhyErrors::default(),
            _vectors: compat::alloc_irq_vectors(bound, 1, 1)?,
            irq: compat::vector_irq(_vectors, 0)?,
            _: {
                // SAFETY: `e1000_irq` matches `irq_handler_t`; the cookie is this pinned object,
                // whose fields are all initialised and which frees the IRQ in `PinnedDrop`.
                kernel::error::to_result(unsafe {
                    bindings::request_threaded_irq(
                        *irq,
                        Some(e1000_irq),
                        None,
                        bindings::IRQF_SHARED as usize,
                        c"e1000_rs".as_char_ptr(),
                        this.as_ptr().cast(),
                    )
                })?;
            },
        })
    }

    /// Registers the interface with the networking stack, which may open it at once.
    pub(crate) fn register(&self) -> Result {
        // Off until `open` reads the link: set before registering.
        self.netdev.set_carrier(false);
        self.netdev.register()?;
        if self.logs(msg::PROBE) {
            dev_info!(self.pdev, "registered, Ethernet address from the EEPROM\n");
        }
        Ok(())
    }
}

#[pinned_drop]
impl PinnedDrop for E1000<'_> {
    fn drop(self: Pin<&mut Self>) {
        // Shared: unregistering calls back into the adapter (`ndo_stop`).
        let this = self.into_ref().get_ref();
        // Closes the interface first, which stops the rings and frees them, and its transmit
        // watchdog, which alone schedules a reset.
        this.netdev.unregister();
        // A reset scheduled before finds the interface down and does nothing.
        this.reset_work.cancel_sync();
        this.link_work.cancel_sync();
        // Disarmed by `down` already; nothing fires into what goes below.
        this.reap_timer.shut_down();
        // SAFETY: Requested in probe with this cookie (type invariant); freed once, here.
        unsafe { bindings::free_irq(this.irq, core::ptr::from_ref(this).cast_mut().cast()) };
        // No DMA once the driver is gone: the MAC reset, and no bus master (already cleared by
        // `ndo_stop` if the interface was up). Devres disables the device once the driver's data
        // is gone.
        hw::reset(&this.bar);
        dma_local::stop_bus_master(this.pdev);
    }
}

/// Resets the controller (`hw::reset`) and sets its PHY up again, as the C driver does after each
/// reset. A PHY that does not answer is left as it is: a device that does not answer is dealt with
/// where registers are read.
fn reset_controller(bar: &Bar0<'_>) {
    hw::reset(bar);
    let _ = phy::set_up_copper(bar);
}

/// The interrupt handler: acknowledges, follows the link, and leaves the rings to NAPI.
///
/// # Safety
///
/// `cookie` is the `E1000` that requested the interrupt, alive until `free_irq` returns.
unsafe extern "C" fn e1000_irq(
    _irq: kernel::ffi::c_int,
    cookie: *mut kernel::ffi::c_void,
) -> bindings::irqreturn_t {
    // SAFETY: By the function's safety requirement.
    let e1000 = unsafe { &*cookie.cast::<E1000<'_>>() };
    let cause = hw::interrupt_causes(&e1000.bar);
    if cause == 0 {
        return irqreturn::IRQ_NONE;
    }
    // All ones is no set of causes (ICR's reserved bits read 0): the device did not answer the
    // read (removed, a bus error, or the `fail_mmio_read` fault). The C driver takes it for
    // causes, masks and polls. This one disowns the interrupt: whether the device raised it is
    // unknown (on a shared line another device may have), and polling a device whose registers
    // read all ones achieves nothing. Should the line keep firing unclaimed, the IRQ core disables
    // it ("nobody cared"). A device that did answer behind the fault lost its causes to the read,
    // and raises them again with its next frame.
    if cause == hw::ALL_ONES {
        e1000.say_unanswering("ICR", cause);
        return irqreturn::IRQ_NONE;
    }
    if !e1000.running.load(Ordering::Acquire) {
        e1000.idle_causes.fetch_or(cause, Ordering::Relaxed);
        return irqreturn::IRQ_HANDLED;
    }
    // Every change while the link is up (QEMU's model says so again when a negotiation completes
    // on a link that stayed up) has flow control resolved again.
    if cause & regs::INT_LSC != 0 && e1000.update_carrier() {
        e1000.link_work.schedule();
    }
    // Before the handler returns, so that the device does not raise the interrupt again meanwhile.
    hw::mask_interrupts(&e1000.bar);
    // Before scheduling: a poll already running then polls again and sees it, and the poll that
    // sees it writes IMS after this IMC.
    e1000.masks.fetch_add(1, Ordering::Release);
    e1000.netdev.napi().schedule();
    irqreturn::IRQ_HANDLED
}

/// The reap timer fired: a poll frees what the transmit ring holds.
///
/// # Safety
///
/// `timer` is the `timer_list` of an `E1000`'s `reap_timer`.
unsafe extern "C" fn reap_timer_fired(timer: *mut bindings::timer_list) {
    // SAFETY: By the function's safety requirement, `timer` lies in the `reap_timer` field of an
    // `E1000` (lifetimes do not change the layout), which is live: the timer is armed only while
    // the interface is open, and `stop` and `PinnedDrop` wait for this callback (type invariant).
    let e1000 = unsafe {
        &*kernel::container_of!(
            Timer::from_raw(timer).cast_mut(),
            E1000<'static>,
            reap_timer
        )
        .cast::<E1000<'_>>()
    };
    if e1000.running.load(Ordering::Acquire) {
        e1000.schedule_completions();
    }
}

/// The reset the transmit watchdog asked for: under the RTNL lock, the rings are rebuilt and the
/// controller reset if the interface is still up.
///
/// # Safety
///
/// `work` is the `work_struct` of an `E1000`'s `reset_work`.
unsafe extern "C" fn reset_work_run(work: *mut bindings::work_struct) {
    // SAFETY: By the function's safety requirement, `work` lies in the `reset_work` field of an
    // `E1000` (lifetimes do not change the layout), which is live: `PinnedDrop` cancels the work,
    // waiting for it, before the adapter goes (type invariant).
    let e1000 = unsafe {
        &*kernel::container_of!(Work::from_raw(work).cast_mut(), E1000<'static>, reset_work)
            .cast::<E1000<'_>>()
    };
    e1000.netdev.with_rtnl(|| {
        if !e1000.running.load(Ordering::Acquire) {
            return;
        }
        if e1000.logs(msg::DRV) {
            dev_info!(e1000.pdev, "resetting the adapter\n");
        }
        if let Err(e) = e1000.rebuild(|_| ()) {
            // The old rings stay; the watchdog asks again if the queue still stands.
            dev_err!(e1000.pdev, "reset failed: error {}\n", e.to_errno());
        }
    });
}

/// The link came up: flow control is resolved under the RTNL lock, if the interface still runs.
///
/// # Safety
///
/// `work` is the `work_struct` of an `E1000`'s `link_work`.
unsafe extern "C" fn link_work_run(work: *mut bindings::work_struct) {
    // SAFETY: As in `reset_work_run`, for the `link_work` field.
    let e1000 = unsafe {
        &*kernel::container_of!(Work::from_raw(work).cast_mut(), E1000<'static>, link_work)
            .cast::<E1000<'_>>()
    };
    e1000.netdev.with_rtnl(|| {
        if e1000.running.load(Ordering::Acquire) {
            e1000.resolve_flow_control(&e1000.settings.lock());
        }
    });
}

impl Interface for E1000<'_> {
    /// `ndo_open`: rings, receiver, transmitter, interrupts.
    fn open(&self) -> Result {
        let settings = self.settings.lock();
        let rings = self.alloc_rings(&settings)?;
        self.start(rings, &settings);
        Ok(())
    }

    fn set_rx_mode(&self, mode: RxMode, addresses: HwAddrs<'_>, groups: HwAddrs<'_>) {
        let mut settings = self.settings.lock();
        settings.filter = settings.filter.with_addresses(mode, addresses, groups);
        // While the interface is open (both under the RTNL lock): `open` writes the filter.
        if self.running.load(Ordering::Acquire) {
            hw::set_receive_filter(&self.bar, &settings.filter, settings.frames);
        }
    }

    /// `ndo_stop`: no interrupt, no DMA, no buffer left.
    fn stop(&self) {
        self.down();
    }

    /// `ndo_change_mtu`: the rings are rebuilt for the frames of the new MTU, long packets on above
    /// 1500 bytes.
    fn change_mtu(&self, mtu: u32) -> Result {
        let frames = RxFrames::for_mtu(mtu).ok_or(EINVAL)?;
        self.rebuild(|settings| settings.frames = frames.with_bad(settings.frames.bad()))?;
        self.netdev.set_mtu(mtu);
        Ok(())
    }

    /// Tag insertion follows tag stripping: CTRL.VME turns both on or off, as in the C driver.
    fn fix_features(&self, features: FeatureSet) -> FeatureSet {
        features.with_vlan_insertion(features.vlan_stripping())
    }

    /// Of the features the stack toggles, VLAN tagging (CTRL.VME) and the FCS (RCTL.SECRC) are
    /// the hardware's to change at once; bad frames (`rx-all`) need a buffer as long as the
    /// descriptors say, so the rings are rebuilt for them, as the C driver resets for them. The
    /// others are read where they apply.
    fn set_features(&self, features: FeatureSet) -> Result {
        let (bad, keep_fcs) = (features.rx_all(), features.rx_fcs());
        if bad != self.settings.lock().frames.bad() {
            // The FCS setting with it: one RCTL write (QEMU's model holds frames a second after
            // each).
            self.rebuild(|settings| {
                settings.frames = settings.frames.with_bad(bad);
                settings.filter.keep_fcs = keep_fcs;
            })?;
        }
        let mut settings = self.settings.lock();
        settings.vlan_tags = features.vlan_stripping();
        settings.filter.keep_fcs = keep_fcs;
        if self.running.load(Ordering::Acquire) {
            hw::set_vlan_stripping(&self.bar, settings.vlan_tags);
            hw::update_rctl(&self.bar, &settings.filter, settings.frames);
        }
        Ok(())
    }

    fn set_vlan(&self, vid: u16, pass: bool) -> Result {
        if vid >= 4096 {
            return Err(EINVAL);
        }
        let mut settings = self.settings.lock();
        let (index, _) = settings.filter.set_vlan(vid, pass);
        if self.running.load(Ordering::Acquire) {
            hw::set_vlan_filter(&self.bar, &settings.filter, index, settings.frames);
        }
        Ok(())
    }

    /// `ndo_tx_timeout`: the reset waits for process context.
    fn tx_timeout(&self) {
        self.counters.tx_timeouts.add(1);
        dev_warn!(self.pdev, "transmit timed out\n");
        self.reset_work.schedule();
    }

    /// `ndo_start_xmit`: the skb comes back when the ring is full.
    fn xmit(&self, skb: Skb) -> core::result::Result<(), Skb> {
        // SAFETY: The stack calls `ndo_start_xmit` for the one queue under its lock.
        let Some(mut tx) = (unsafe { self.rings.transmit() }) else {
            self.counters.tx_dropped.add(1);
            return Ok(());
        };
        let len = skb.len();
        let result = tx.push(skb);
        // Before `sent_queue`, which must see the queue stopped.
        if result.is_err() || tx.nearly_full() {
            self.stop_queue_unless_room(&tx);
        }
        // As in the C driver, TDT moves once per burst: every write makes the device walk the ring.
        // Frames the stack said more would follow go out when the burst ends or the queue stops
        // (then nothing more comes until completions, which need the device to have them): for a
        // queued frame, byte queue limits' `__netdev_tx_sent_queue` says which. The MMIO write
        // orders after the descriptor writes (writel).
        let tell_device = match result {
            Ok(true) => self.netdev.sent_queue(len),
            Ok(false) => {
                self.counters.tx_dropped.add(1);
                !self.netdev.xmit_more() || self.netdev.xmit_stopped()
            }
            Err(_) => true,
        };
        if tell_device {
            hw::set_tx_tail(&self.bar, tx.tail());
            self.request_completion();
        }
        result.map(|_| ())
    }

    /// The NAPI poll: up to `budget` received frames unless only a transmit or the reap timer
    /// scheduled it, then transmit completions.
    fn poll(&self, napi: Napi, budget: i32) -> i32 {
        self.polling_cpu
            .store(CpuId::current().as_u32() + 1, Ordering::Relaxed);
        let work = self.poll_rings(napi, budget);
        self.polling_cpu.store(0, Ordering::Relaxed);
        work
    }

    /// `ndo_get_stats64`.
    fn stats(&self) -> Stats {
        self.stats_with(&self.hw_stats())
    }

    /// `ndo_set_mac_address`.
    fn set_mac_address(&self, mac: &MacAddress) -> Result {
        if !netdev::valid_ether_addr(mac) {
            return Err(compat::eaddrnotavail());
        }
        self.netdev.set_hw_addr(mac);
        hw::program_mac_address(&self.bar, mac);
        Ok(())
    }
}

impl<'bound> E1000<'bound> {
    /// The PCI device.
    pub(crate) fn device(&self) -> &'bound pci::Device<Bound> {
        self.pdev
    }

    /// System sleep or shutdown: the interface leaves the stack's hands (`netif_device_detach`)
    /// and, if it is up, goes down as for a close: no interrupt, no DMA, the controller reset.
    pub(crate) fn suspend(&self) {
        self.netdev.with_rtnl(|| {
            self.netdev.detach();
            self.down();
        });
        // A reset asked for before finds the interface down.
        self.reset_work.cancel_sync();
    }

    /// Back from system sleep: the controller reset and, if the interface is up, the rings and the
    /// receive filter as before; then the stack has it again.
    pub(crate) fn resume(&self) -> Result {
        self.netdev.with_rtnl(|| {
            reset_controller(&self.bar);
            let result = if self.netdev.is_up() {
                self.open()
            } else {
                Ok(())
            };
            self.netdev.attach();
            result
        })
    }

    /// Allocates the rings `settings` describe.
    fn alloc_rings(&self, settings: &Settings) -> Result<(TxRing<'bound>, RxRing<'bound>)> {
        let dev = self.pdev.as_ref();
        // Measured with `scripts/bench-e1000.sh --instructions`: mapping socket buffers costs the
        // guest fewer instructions than copying in either direction, with throughput level (see
        // DESIGN.md).
        let (tx_copy, rx_copy) = (
            compat::flag(&crate::module_parameters::tx_copy),
            compat::flag(&crate::module_parameters::rx_copy),
        );
        let rings = || -> Result<_> {
            Ok((
                TxRing::new(dev, settings.tx_ring, tx_copy)?,
                RxRing::new(dev, settings.rx_ring, settings.frames, rx_copy)?,
            ))
        };
        rings().inspect_err(|e| {
            dev_err!(
                self.pdev,
                "cannot allocate the rings: error {}\n",
                e.to_errno()
            );
        })
    }

    /// Brings the interface up on `rings`: receiver, transmitter, the receive filter of
    /// `settings`, interrupts. The controller was reset (probe or `down`).
    fn start(&self, (tx, rx): (TxRing<'bound>, RxRing<'bound>), settings: &Settings) {
        let bar = &self.bar;
        let (tx_base, tx_len) = tx.base();
        hw::configure_transmit(bar, tx_base, tx_len);
        let (rx_base, rx_len) = rx.base();
        hw::configure_receive(bar, rx_base, rx_len);
        // `down` stopped the device's DMA: it may reach memory again now that it holds the new
        // rings, not while it drops the writes and may hold the old ones' addresses.
        if self.took_rings(rx_len) {
            dma_local::resume_bus_master(self.pdev);
        }
        // SAFETY: `ndo_open` and the adapter's resets run under the RTNL lock.
        let mac = unsafe { self.netdev.hw_addr() };
        hw::program_mac_address(bar, &mac);
        // Every descriptor but one is the device's: head 0, tail at the last.
        let rx_tail = rx.last();
        // SAFETY: Neither `xmit` nor `poll` runs: the queue has not started and NAPI is disabled.
        unsafe { self.rings.set(Some((tx, rx))) };
        hw::start(bar, rx_tail, &settings.filter, settings.frames);
        // The reset took the PHY's advertisement back to its default. A PHY that does not answer
        // is dealt with where registers are read.
        {
            // As the C driver, a reset starts again from what was asked for; a forced link has no
            // PAUSE frames until `ethtool -A` forces them.
            let mut flow = self.flow.lock();
            flow.current = if settings.link.advertised().is_some() {
                flow.requested
            } else {
                Directions::NONE
            };
            let _ = settings.link.set_up(bar, flow.requested);
        }
        hw::set_vlan_stripping(bar, settings.vlan_tags);
        {
            let _stats = self.hw_stats.lock();
            self.counting.store(true, Ordering::Relaxed);
        }
        self.netdev.reset_queue();
        // What the last poll before `stop` left: interrupts are enabled below, and no poll runs.
        self.masks_undone
            .store(self.masks.load(Ordering::Relaxed), Ordering::Relaxed);
        self.completions_only.store(false, Ordering::Relaxed);
        self.netdev.napi().enable();
        self.running.store(true, Ordering::Release);
        hw::unmask_interrupts(bar, regs::INT_ENABLED);
        self.update_carrier();
        self.resolve_flow_control(settings);
        // Woken, not only started: after a rebuild or a resume, the stack may hold frames for it.
        self.netdev.wake_queue();
    }

    /// Takes the interface down: no interrupt, no DMA, no buffer left, and the controller reset.
    /// Under the RTNL lock; nothing to do when it does not run (closed, asleep, or a resume that
    /// could not allocate the rings), and NAPI is disabled already.
    fn down(&self) {
        if !self.running.load(Ordering::Acquire) {
            return;
        }
        self.netdev.stop_queue();
        self.running.store(false, Ordering::Release);
        // Before the reset masks every interrupt, as the C driver's `e1000_down` does: a poll or a
        // transmit that saw the interface running may still unmask some (IMS), and must be over
        // when the final IMC is written. None starts after: the handler and the reap timer see
        // `running` false.
        self.netdev.napi().disable();
        // Only a poll wakes the stopped queue (a transmit that restarts it is still running): once
        // NAPI is disabled, this waits for the last transmit and none follows.
        self.netdev.disable_transmit();
        // The chip's reset clears the statistics registers: what they counted goes into the sums
        // first, and they are not read again until `start`.
        {
            let mut stats = self.hw_stats.lock();
            self.sample_statistics(&mut stats);
            self.counting.store(false, Ordering::Relaxed);
        }
        reset_controller(&self.bar);
        // SAFETY: `irq` is requested (type invariant); this waits for a running handler.
        unsafe { bindings::synchronize_irq(self.irq) };
        // Nothing arms it any more: transmit and the poll have stopped.
        self.reap_timer.disarm_sync();
        self.netdev.set_carrier(false);
        // The device may not even try to reach the memory about to be freed: the reset stopped a
        // device that answers, and this stops one that ignored it. `start` lets it again, once it
        // holds the new rings. (The C driver relies on the reset, and clears Bus Master Enable
        // only at the end of its remove, with `pci_disable_device`.)
        dma_local::stop_bus_master(self.pdev);
        // The device no longer owns any descriptor: unmap and free everything.
        // SAFETY: Neither `xmit` nor `poll` runs, nor can start: both were disabled above, which
        // waited for them.
        unsafe { self.rings.set(None) };
        self.netdev.reset_queue();
    }

    /// Changes the settings with `change` and, while the interface is up, rebuilds the rings with
    /// them and resets the controller. The new rings come first: when they cannot be allocated,
    /// the interface runs on as it was and nothing changes. Under the RTNL lock.
    fn rebuild(&self, change: impl FnOnce(&mut Settings)) -> Result {
        let mut settings = self.settings.lock();
        let mut changed = settings.clone();
        change(&mut changed);
        if self.running.load(Ordering::Acquire) {
            // A device that does not answer would miss its reset and go on with the rings `down`
            // frees, should it answer again: they stay (the transmit watchdog asks again).
            if !self.answers() {
                return Err(EIO);
            }
            let rings = self.alloc_rings(&changed)?;
            self.down();
            self.start(rings, &changed);
        }
        *settings = changed;
        Ok(())
    }

    /// The interface's statistics, with the registers' sums `hw`.
    fn stats_with(&self, hw: &HwStats) -> Stats {
        let c = &self.counters;
        // Sums of wrapping counters wrap too.
        let length_errors = c
            .rx_length_errors
            .get()
            .wrapping_add(hw.all_length_errors());
        Stats {
            rx_packets: c.rx_packets.get(),
            rx_bytes: c.rx_bytes.get(),
            tx_packets: c.tx_packets.get(),
            tx_bytes: c.tx_bytes.get(),
            rx_errors: c
                .rx_errors
                .get()
                .wrapping_add(hw.crc_errors)
                .wrapping_add(hw.all_length_errors()),
            rx_dropped: c.rx_dropped.get(),
            tx_dropped: c.tx_dropped.get(),
            rx_length_errors: length_errors,
            rx_crc_errors: hw.crc_errors,
            rx_missed_errors: hw.missed,
        }
    }

    /// The statistics registers, read and added up while they count; otherwise the sums.
    fn hw_stats(&self) -> HwStats {
        let mut stats = self.hw_stats.lock();
        if self.counting.load(Ordering::Relaxed) {
            self.sample_statistics(&mut stats);
        }
        *stats
    }

    /// Adds the statistics registers to `stats`, unless the device does not answer: not while
    /// the PCI core recovers its channel from an error (as the C driver), nor when a register
    /// reads all ones. Under the `hw_stats` lock.
    fn sample_statistics(&self, stats: &mut HwStats) {
        if self.channel_offline() {
            return;
        }
        if !hw::add_statistics(&self.bar, stats) {
            self.say_unanswering("a statistics register", hw::ALL_ONES);
        }
    }
}

impl E1000<'_> {
    /// Whether the message class `class` ([`msg`] bit) is logged.
    fn logs(&self, class: u32) -> bool {
        self.msg_level.load(Ordering::Relaxed) & class != 0
    }

    /// Says, once per bind, that `register` read `value`: the device does not answer. The driver
    /// goes on without the statistics samples and interrupts that read all ones, and without
    /// resets and DMA while its registers do not read back (see `answers`).
    fn say_unanswering(&self, register: &str, value: u32) {
        if !self.said_unanswering.swap(true, Ordering::Relaxed) {
            dev_warn!(
                self.pdev,
                "{} reads {:#010x}: the device does not answer (removed, disabled, or a bus \
                 error)\n",
                register,
                value
            );
        }
    }

    /// Whether the device answers register reads (`hw::check_answers`). One that does not
    /// (removed, its Memory Space disabled, a bus error) drops every write, its reset included,
    /// and may hold the addresses of rings the driver would free, for when it answers again.
    fn answers(&self) -> bool {
        hw::check_answers(&self.bar)
            .inspect_err(|value| self.say_unanswering("EECD", *value))
            .is_ok()
    }

    /// Whether the device took the receive ring's address: it reads back RDLEN as `start` wrote
    /// it, `len` bytes.
    fn took_rings(&self, len: usize) -> bool {
        let rdlen = hw::receive_ring_len(&self.bar);
        let took = rdlen as usize == len;
        if !took {
            self.say_unanswering("RDLEN", rdlen);
        }
        took
    }

    /// Whether the PCI core took the device's channel offline to recover from an error
    /// (`pci_channel_offline`): its registers must not be read meanwhile.
    fn channel_offline(&self) -> bool {
        // `pci::Device` is transparent over `Opaque<pci_dev>`, itself transparent over the C
        // struct (as `dma_local` relies on too).
        let pdev = core::ptr::from_ref::<pci::Device<Bound>>(self.pdev).cast::<bindings::pci_dev>();
        // SAFETY: The bound device's `pci_dev` lives as long as `pdev`. The PCI core changes the
        // field while it recovers from an error: read once, volatile, as C reads it (plainly).
        let state = unsafe { core::ptr::addr_of!((*pdev).error_state).read_volatile() };
        state != bindings::pci_channel_io_normal
    }

    /// Resolves flow control from the link's negotiation, as the C driver does whenever the link
    /// comes up (whether `ethtool -A` forced it or not; a forced link negotiates nothing), and has
    /// the MAC follow it. Under the RTNL lock, in process context: it reads the PHY. `settings`
    /// are locked by the caller (their lock comes before `flow`'s).
    fn resolve_flow_control(&self, settings: &Settings) {
        let mut flow = self.flow.lock();
        if settings.link.advertised().is_some() {
            if let Ok(Some(resolved)) = pause::negotiated(&self.bar, flow.requested) {
                flow.current = resolved;
            }
        }
        pause::apply(&self.bar, flow.current, settings.frames.max_len());
    }

    /// Follows the link into the carrier; returns whether the link is up.
    fn update_carrier(&self) -> bool {
        let up = hw::link_up(&self.bar);
        let changed = up != self.netdev.carrier_ok();
        if changed {
            self.netdev.set_carrier(up);
            if self.logs(msg::LINK) {
                dev_info!(self.pdev, "link {}\n", if up { "up" } else { "down" });
            }
        }
        up
    }

    /// Decides, for frames just handed to the device, how the driver learns that they are sent.
    ///
    /// Frames this device's own poll sent, while it delivered what it received (acknowledgements,
    /// replies, data an acknowledgement released), wait for the next poll: receive traffic is
    /// flowing, and should no interrupt come the reap timer schedules that poll. Every other frame
    /// (from a process, another device's poll, a timer), and any frame while the queue is stopped,
    /// has the poll scheduled now, so that its skb and socket memory come back at once and a
    /// stopped queue wakes. That poll enables the completion interrupt (TXDW) for whatever the
    /// device has not sent yet; QEMU sends the frames before the TDT write returns, so there it
    /// frees them all and no interrupt is taken. Scheduling the poll while it runs has it poll
    /// again.
    ///
    /// Enabling TXDW here instead cost every round trip an interrupt, and with TXDW always enabled
    /// the frames a poll sent raised an interrupt of their own once the poll re-enabled interrupts
    /// (see DESIGN.md).
    fn request_completion(&self) {
        // BH (under netpoll, IRQs) is disabled: this stays on the CPU. Only the poll on this CPU
        // stores its number. The CPU is asked for (a call) only while some poll runs: not on a
        // process's transmit path.
        let polling = self.polling_cpu.load(Ordering::Relaxed);
        let polling_here = polling != 0 && polling == CpuId::current().as_u32() + 1;
        if polling_here && !self.netdev.xmit_stopped() {
            // The poll is still running: a timer that fires meanwhile has it poll again.
            self.reap_timer.arm_unless_pending(REAP_DELAY_MS);
        } else {
            self.schedule_completions();
        }
    }

    /// Schedules a poll that frees sent frames: from a process (BH disabled), it runs once BH is
    /// enabled again; from a softirq, before softirqs end.
    fn schedule_completions(&self) {
        // Scheduling orders it before the poll (a fully ordered test-and-set).
        self.completions_only.store(true, Ordering::Relaxed);
        self.netdev.napi().schedule();
    }

    /// Stops the queue for lack of descriptors, unless the poll has just freed enough: it wakes a
    /// stopped queue only if it sees the stop, and this sees what it freed, because both order
    /// their store and their load with a full barrier.
    fn stop_queue_unless_room(&self, tx: &TxProducer<'_, '_>) {
        self.netdev.stop_queue();
        smp_mb(Full);
        if tx.has_room() {
            self.netdev.start_queue();
            self.counters.tx_restarts_xmit.add(1);
        }
    }

    fn poll_rings(&self, napi: Napi, budget: i32) -> i32 {
        // SAFETY: NAPI polls on one CPU at a time.
        let Some((mut tx, rx)) = (unsafe { self.rings.poll() }) else {
            // Not reached: NAPI is enabled only while the rings are installed.
            napi.complete_done(0);
            return 0;
        };
        let masks = self.masks.load(Ordering::Acquire);
        let masked = masks != self.masks_undone.load(Ordering::Relaxed);
        let completions_only = self.completions_only.swap(false, Ordering::Relaxed);
        // Busy polling and netpoll receive too (unless a transmit's flag was left for them: then
        // interrupts are enabled and bring the frames).
        let received = if masked || !completions_only {
            self.receive(rx, napi, budget)
        } else {
            RxDone::default()
        };
        let c = &self.counters;
        c.rx_packets.add(received.frames.packets);
        c.rx_bytes.add(received.frames.bytes);
        c.rx_errors.add(received.errors + received.length_errors);
        c.rx_length_errors.add(received.length_errors);
        c.rx_dropped.add(received.dropped);
        // After receiving, so that what delivering the frames sent (acknowledgements the stack
        // hands over in batches) is freed too.
        let sent = tx.clean(budget);
        if sent.frames > 0 {
            self.netdev.completed_queue(sent.frames, sent.queued_bytes);
            c.tx_packets.add(sent.wire.packets);
            c.tx_bytes.add(sent.wire.bytes);
            // Pairs with the barrier in `stop_queue_unless_room`.
            smp_mb(Full);
            if self.netdev.queue_stopped() && tx.has_room() {
                self.netdev.wake_queue();
                c.tx_restarts_poll.add(1);
            }
        }
        let work = received.descriptors as i32;
        // Frames the clean left, which the device had not sent yet (on QEMU, which sends them
        // before TDT's write returns, only those a transmit on another CPU queued meanwhile): the
        // completion interrupt brings the poll back for them.
        let completion = if tx.is_empty() { 0 } else { regs::INT_TXDW };
        if work < budget && napi.complete_done(work) && self.running.load(Ordering::Acquire) {
            if masked {
                self.masks_undone.store(masks, Ordering::Relaxed);
                hw::unmask_interrupts(&self.bar, regs::INT_ENABLED | completion);
            } else if completion != 0 {
                hw::unmask_interrupts(&self.bar, completion);
            }
        }
        work.min(budget)
    }

    /// Hands up to `budget` received frames to the stack and gives the ring back its buffers.
    fn receive(&self, rx: &mut RxRing<'_>, napi: Napi, budget: i32) -> RxDone {
        // SAFETY: This is the NAPI poll.
        let (received, tail) = unsafe {
            rx.clean(&self.netdev, napi, budget.max(0) as usize, |skb| {
                napi.receive(skb)
            })
        };
        if let Some(tail) = tail {
            hw::set_rx_tail(&self.bar, tail);
        }
        received
    }
}

crate::callbacks::net_device_ops!(E1000<'_>);
