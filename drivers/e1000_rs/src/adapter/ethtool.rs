// SPDX-License-Identifier: GPL-2.0

//! What ethtool reads and sets on the adapter (`crate::ethtool::Ethtool`): the statistics of
//! `ethtool -S` under the C driver's names, the link settings with MDI-X and their changes
//! (`ethtool -s`: speed, duplex, advertisement, crossover), autonegotiation restarts, the ring
//! sizes of `ethtool -g`/`-G`, flow control (`-a`/`-A`), the message level, Wake-on-LAN, LED
//! identification (`-p`), the register dump in the C driver's layout (`-d`), the EEPROM (`-e`,
//! `-E`), and the self-test (`-t`).

use core::sync::atomic::{AtomicU32, Ordering};

use kernel::{bindings, io::poll::read_poll_timeout, prelude::*, time::Delta};

use crate::dma_local;
use crate::eeprom;
use crate::ethtool::{
    eopnotsupp, link_mode, msg, Ethtool, Identify, LinkRequest, LinkSettings, PauseParams,
    RingSizes, WakeOnLan,
};
use crate::hw::{self, HwStats};
use crate::link;
use crate::netdev::{self, Stats};
use crate::pause::{self, Directions};
use crate::phy;
use crate::regs;
use crate::ring_common::RingSize;
use crate::selftest;
use crate::tx::TX_RING_MIN;

use super::{reset_controller, Counter, Counters, E1000};

/// The statistics `ethtool -S` shows: the C driver's names, for what means the same here, from
/// the statistics registers (`hw`) or the driver's counters.
struct StatSources<'a> {
    hw: &'a HwStats,
    stats: &'a Stats,
    counters: &'a Counters,
}

type StatSource = fn(&StatSources<'_>) -> u64;

const ETHTOOL_STATS: [(&core::ffi::CStr, StatSource); 22] = [
    (c"rx_packets", |s| s.hw.rx_packets),
    (c"tx_packets", |s| s.hw.tx_packets),
    (c"rx_bytes", |s| s.hw.rx_bytes),
    (c"tx_bytes", |s| s.hw.tx_bytes),
    (c"rx_broadcast", |s| s.hw.rx_broadcast),
    (c"tx_broadcast", |s| s.hw.tx_broadcast),
    (c"rx_multicast", |s| s.hw.rx_multicast),
    (c"tx_multicast", |s| s.hw.tx_multicast),
    (c"rx_errors", |s| s.stats.rx_errors),
    (c"tx_dropped", |s| s.stats.tx_dropped),
    (c"multicast", |s| s.hw.rx_multicast),
    (c"collisions", |s| s.hw.collisions),
    (c"rx_length_errors", |s| s.stats.rx_length_errors),
    (c"rx_crc_errors", |s| s.hw.crc_errors),
    (c"rx_no_buffer_count", |s| s.hw.no_buffer),
    (c"rx_missed_errors", |s| s.hw.missed),
    (c"tx_timeout_count", |s| s.counters.tx_timeouts.get()),
    (c"tx_restart_queue", |s| {
        let restarts = &s.counters;
        restarts
            .tx_restarts_xmit
            .get()
            .wrapping_add(restarts.tx_restarts_poll.get())
    }),
    (c"rx_long_length_errors", |s| s.hw.oversize),
    (c"rx_short_length_errors", |s| s.hw.undersize),
    (c"tx_tcp_seg_good", |s| s.hw.tso_contexts),
    (c"tx_tcp_seg_failed", |s| s.hw.tso_failed),
];

/// The Wake-on-LAN events the 82540EM's wake-up filters take: unicast, multicast and broadcast
/// frames, and magic packets.
const WAKE_SUPPORTED: u32 =
    bindings::WAKE_UCAST | bindings::WAKE_MCAST | bindings::WAKE_BCAST | bindings::WAKE_MAGIC;

/// The register dump's layout version, as the C driver's (1 in the top byte, then the PCI
/// revision and device ID), so that ethtool reads the same words the same way.
const REGS_LAYOUT: u32 = 1 << 24;

/// LED Control as identification found it, and the two modes it alternates between; written only
/// by `ethtool -p`'s calls, which the RTNL lock serialises.
#[derive(Default)]
pub(super) struct IdentifyLeds {
    saved: AtomicU32,
    first: AtomicU32,
    second: AtomicU32,
}

/// The PHY's error counts, summed over the reads of its clear-on-read counters (by callers the
/// RTNL lock serialises: one writer, as `Counter` wants).
#[derive(Default)]
pub(super) struct PhyErrors {
    idle: Counter,
    receive: Counter,
}

/// What the ID LED Settings EEPROM word asks of one LED in the identification modes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum LedAction {
    AsConfigured,
    On,
    Off,
}

/// The 82540EM's ID LED settings when the EEPROM sets none: LED0 and LED1 as configured, LED2
/// off in both modes, LED3 off in the first and on in the second.
const ID_LED_DEFAULT: u16 = 0x8911;

/// The actions of one LED's 4-bit code, 1 to 9 in the order (first mode, second mode) =
/// (configured, on, off) x (configured, on, off); any other code leaves the LED as configured.
fn led_actions(code: u16) -> (LedAction, LedAction) {
    const ACTIONS: [LedAction; 3] = [LedAction::AsConfigured, LedAction::On, LedAction::Off];
    match code {
        1..=9 => {
            let i = usize::from(code - 1);
            (ACTIONS[i / 3], ACTIONS[i % 3])
        }
        _ => (LedAction::AsConfigured, LedAction::AsConfigured),
    }
}

/// LED Control in the two identification modes, from `ledctl` as configured and the EEPROM's ID
/// LED settings: each of the four LEDs' bytes is kept or replaced by an always-on or always-off
/// mode.
fn identify_modes(ledctl: u32, settings: u16) -> (u32, u32) {
    let settings = match settings {
        0 | 0xffff => ID_LED_DEFAULT,
        set => set,
    };
    let apply = |mode: u32, led: u32, action: LedAction| {
        let shift = 8 * led;
        match action {
            LedAction::AsConfigured => mode,
            LedAction::On => (mode & !(0xff << shift)) | (regs::LEDCTL_MODE_ON << shift),
            LedAction::Off => (mode & !(0xff << shift)) | (regs::LEDCTL_MODE_OFF << shift),
        }
    };
    (0..4).fold((ledctl, ledctl), |(first, second), led| {
        let (in_first, in_second) = led_actions((settings >> (4 * led)) & 0xf);
        (apply(first, led, in_first), apply(second, led, in_second))
    })
}

impl E1000<'_> {
    /// The self-test's link test: 0 when the link is up, waiting up to 4 s for a negotiation to
    /// complete (the C driver sleeps that long), 1 when it does not come.
    fn link_test(&self) -> u64 {
        let negotiated = self.settings.lock().link.advertised().is_some();
        let wait = Delta::from_secs(if negotiated { 4 } else { 0 });
        let up = read_poll_timeout(
            || Ok(hw::link_up(&self.bar)),
            |up| *up,
            Delta::from_millis(10),
            wait,
        );
        u64::from(up.is_err())
    }

    /// The offline tests, with the interface down and the controller reset before each, into
    /// `results` (the register, EEPROM, interrupt and loopback tests' places). The device is not
    /// a bus master during the register test, which writes ring addresses that point anywhere;
    /// it is again after the reset that follows (receiver and transmitter off), as an MSI, a
    /// memory write, needs. The loopback's failure to get memory is its result 1. The controller
    /// is reset after.
    fn offline_tests(&self, results: &mut [u64]) {
        let bar = &self.bar;
        dma_local::stop_bus_master(self.pdev);
        reset_controller(bar);
        results[0] = selftest::registers(bar);
        reset_controller(bar);
        dma_local::resume_bus_master(self.pdev);
        results[1] = selftest::eeprom_checksum(bar);
        reset_controller(bar);
        results[2] = selftest::interrupts(bar, &self.idle_causes);
        reset_controller(bar);
        // SAFETY: Every ethtool request holds the RTNL lock.
        let mac = unsafe { self.netdev.hw_addr() };
        results[3] = selftest::loopback(self.pdev, bar, &mac).unwrap_or(1);
        reset_controller(bar);
    }
}

impl Ethtool for E1000<'_> {
    const STAT_COUNT: usize = ETHTOOL_STATS.len();

    fn stat_name(i: usize) -> &'static core::ffi::CStr {
        ETHTOOL_STATS[i].0
    }

    fn stat_values(&self, values: &mut [u64]) {
        let hw = self.hw_stats();
        let stats = self.stats_with(&hw);
        let sources = StatSources {
            hw: &hw,
            stats: &stats,
            counters: &self.counters,
        };
        for (value, (_, source)) in values.iter_mut().zip(ETHTOOL_STATS.iter()) {
            *value = source(&sources);
        }
    }

    /// The copper port of the 82540EM, with every speed it has, as the C driver reports it
    /// (which leaves the PHY address 0): what it advertises while it negotiates, nothing while
    /// its speed is forced.
    fn link_settings(&self) -> LinkSettings {
        let supported = link::ADVERTISABLE | link_mode::AUTONEG | link_mode::TP;
        let config = self.settings.lock().link;
        let advertised = config.advertised();
        LinkSettings {
            supported,
            advertising: link_mode::TP | advertised.map_or(0, |modes| modes | link_mode::AUTONEG),
            speed_duplex: hw::link_speed_duplex(&self.bar),
            autoneg: advertised.is_some(),
            phy_address: 0,
            crossed_over: self
                .netdev
                .carrier_ok()
                .then(|| phy::read(&self.bar, regs::M88_PHY_SPEC_STATUS).ok())
                .flatten()
                .map(|pssr| pssr & regs::M88_PSSR_MDIX != 0),
            crossover_ctrl: config.crossover.ethtool_value(),
        }
    }

    /// As the C driver: checked, then the adapter is reset to set the link up anew (if the
    /// interface is up; otherwise at the next open).
    fn set_link_settings(&self, request: &LinkRequest) -> Result {
        let link = self.settings.lock().link.with(request).inspect_err(|_| {
            if self.logs(msg::PROBE) {
                dev_err!(self.pdev, "unsupported speed, duplex or crossover\n");
            }
        })?;
        self.rebuild(|settings| settings.link = link)
    }

    /// As the C driver: the adapter is reset, which restarts the link, if the interface is up.
    fn restart_autoneg(&self) -> Result {
        self.rebuild(|_| ())
    }

    fn ring_sizes(&self) -> RingSizes {
        let settings = self.settings.lock();
        RingSizes {
            rx: settings.rx_ring.get() as u32,
            tx: settings.tx_ring.get() as u32,
            rx_max: RingSize::MAX,
            tx_max: RingSize::MAX,
        }
    }

    fn set_ring_sizes(&self, rx: u32, tx: u32) -> Result {
        let (rx, tx) = (RingSize::new(rx)?, RingSize::at_least(tx, TX_RING_MIN)?);
        self.rebuild(|settings| {
            settings.rx_ring = rx;
            settings.tx_ring = tx;
        })
    }

    fn pause(&self) -> PauseParams {
        let flow = self.flow.lock();
        PauseParams {
            autoneg: flow.autoneg,
            rx: flow.current.rx,
            tx: flow.current.tx,
        }
    }

    /// As the C driver: what is asked for holds until the link resolves it; negotiated, the
    /// adapter is reset so that the link negotiates it (if the interface is up), forced, the MAC
    /// follows it at once.
    fn set_pause(&self, wanted: PauseParams) -> Result {
        let directions = Directions {
            rx: wanted.rx,
            tx: wanted.tx,
        };
        // The settings' lock comes before flow control's (`start` holds it).
        let (max_frame, link) = {
            let settings = self.settings.lock();
            (settings.frames.max_len(), settings.link)
        };
        {
            let mut flow = self.flow.lock();
            flow.autoneg = wanted.autoneg;
            flow.requested = directions;
            // Negotiated on a forced link, nothing until forced: what a reset makes of it (C's).
            flow.current = if wanted.autoneg && link.advertised().is_none() {
                Directions::NONE
            } else {
                directions
            };
            if !wanted.autoneg {
                pause::apply(&self.bar, directions, max_frame);
                return Ok(());
            }
        }
        self.rebuild(|_| ())
    }

    fn msg_level(&self) -> u32 {
        self.msg_level.load(Ordering::Relaxed)
    }

    fn set_msg_level(&self, level: u32) {
        self.msg_level.store(level, Ordering::Relaxed);
    }

    /// As the C driver: every wake-up filter is supported, and what is enabled counts only where
    /// the device can wake the system at all.
    fn wake_on_lan(&self) -> WakeOnLan {
        let enabled = if netdev::can_wake_system(self.pdev.as_ref()) {
            self.wake_on_lan.load(Ordering::Relaxed)
        } else {
            0
        };
        WakeOnLan {
            supported: WAKE_SUPPORTED,
            enabled,
        }
    }

    /// As the C driver: a device that cannot wake the system takes only "none"
    /// (`EOPNOTSUPP` otherwise).
    fn set_wake_on_lan(&self, enabled: u32) -> Result {
        if enabled & !WAKE_SUPPORTED != 0 {
            return Err(eopnotsupp());
        }
        let dev = self.pdev.as_ref();
        if !netdev::can_wake_system(dev) {
            return if enabled == 0 {
                Ok(())
            } else {
                Err(eopnotsupp())
            };
        }
        self.wake_on_lan.store(enabled, Ordering::Relaxed);
        netdev::set_wakes_system(dev, enabled != 0);
        Ok(())
    }

    /// Alternates the LEDs between the EEPROM's two identification modes, twice a second, as the
    /// C driver does; the end puts LED Control back.
    fn identify(&self, state: Identify) -> Result<u32> {
        let leds = &self.identify_leds;
        match state {
            Identify::Start => {
                let ledctl = hw::led_control(&self.bar);
                let settings = eeprom::read(&self.bar, regs::EEPROM_ID_LED_SETTINGS)?;
                let (first, second) = identify_modes(ledctl, settings);
                leds.saved.store(ledctl, Ordering::Relaxed);
                leds.first.store(first, Ordering::Relaxed);
                leds.second.store(second, Ordering::Relaxed);
                hw::set_led_control(&self.bar, first);
                return Ok(2);
            }
            Identify::On => hw::set_led_control(&self.bar, leds.second.load(Ordering::Relaxed)),
            Identify::Off => hw::set_led_control(&self.bar, leds.first.load(Ordering::Relaxed)),
            Identify::Stop => hw::set_led_control(&self.bar, leds.saved.load(Ordering::Relaxed)),
        }
        Ok(0)
    }

    const REGS_WORDS: usize = 32;

    /// The C driver's layout for an M88 PHY: the MAC registers of [`hw::MacDump`], PHY type 0
    /// (M88), the PHY Specific Status (cable length, polarity and MDI-X fields) and Control
    /// (extended distance, polarity correction) registers, the PHY's idle and receive error
    /// counts, 1000BASE-T Status (local and remote receiver status) and MANC. A PHY register that
    /// cannot be read stays 0.
    fn dump_regs(&self, words: &mut [u32]) -> u32 {
        let mac = hw::dump_mac(&self.bar);
        // Word by word: a slice copy's length check would add a panic path.
        for (word, &value) in words.iter_mut().zip(mac.first.iter()) {
            *word = value;
        }
        let phy = |reg| phy::read(&self.bar, reg).map_or(0, u32::from);
        let (status, control) = (phy(regs::M88_PHY_SPEC_STATUS), phy(regs::M88_PHY_SPEC_CTRL));
        let t1000 = phy::read(&self.bar, regs::PHY_1000T_STATUS).unwrap_or(0);
        let receive_errors = phy::read(&self.bar, regs::M88_RX_ERR_CNTR).unwrap_or(0);
        let errors = &self.phy_errors;
        words[13] = status;
        words[17] = control;
        words[18] = status;
        words[20] = control;
        // Idle errors count only on a 1000 Mb/s link, as the C driver counts them.
        let idle = match hw::link_speed_duplex(&self.bar) {
            Some((1000, _)) => t1000 & regs::PHY_1000T_IDLE_ERRORS,
            _ => 0,
        };
        errors.idle.add(idle.into());
        errors.receive.add(receive_errors.into());
        // The dump's words are 32 bits wide, as the C driver's counts.
        words[21] = errors.idle.get() as u32;
        words[22] = errors.receive.get() as u32;
        words[23] = status;
        words[24] = t1000.into();
        words[25] = t1000.into();
        words[26] = mac.manc;
        REGS_LAYOUT | (u32::from(self.pdev.revision_id()) << 16) | u32::from(self.pdev.device_id())
    }

    fn eeprom_len(&self) -> usize {
        2 * eeprom::words(&self.bar)
    }

    /// The C driver's: the PCI vendor and device IDs.
    fn eeprom_magic(&self) -> u32 {
        u32::from(self.pdev.vendor_id().as_raw()) | (u32::from(self.pdev.device_id()) << 16)
    }

    /// Word by word through EERD; the EEPROM's words are little-endian.
    fn read_eeprom(&self, offset: usize, bytes: &mut [u8]) -> Result {
        for (i, byte) in bytes.iter_mut().enumerate() {
            let at = offset + i;
            let word = u16::try_from(at / 2).map_err(|_| EINVAL)?;
            *byte = eeprom::read(&self.bar, word)?.to_le_bytes()[at % 2];
        }
        Ok(())
    }

    const TEST_COUNT: usize = selftest::NAMES.len();

    fn test_name(i: usize) -> &'static core::ffi::CStr {
        selftest::NAMES[i]
    }

    /// As the C driver: the link test first (before a reset can take the link down); offline,
    /// the others with the interface down, and the interface up again after if it was. The rings
    /// it comes back on are allocated first: when they cannot be, nothing is tested.
    fn self_test(&self, offline: bool, results: &mut [u64]) -> Result {
        results[4] = self.link_test();
        if !offline {
            return Ok(());
        }
        // A device that does not answer keeps the rings it may hold, as `rebuild` leaves them.
        if !self.answers() {
            return Err(EIO);
        }
        let settings = self.settings.lock();
        let rings = if self.running.load(Ordering::Acquire) {
            Some(self.alloc_rings(&settings)?)
        } else {
            None
        };
        self.down();
        self.offline_tests(results);
        if let Some(rings) = rings {
            self.start(rings, &settings);
        } else {
            // `start` sets the link up; an interface that stays down has it set up here (the
            // loopback left the PHY without auto-negotiation).
            let _ = settings.link.set_up(&self.bar, self.flow.lock().requested);
            dma_local::stop_bus_master(self.pdev);
        }
        Ok(())
    }

    /// The words `bytes` fall in, the first and last read first where `bytes` cover them only in
    /// part, then the checksum after them; as the C driver writes them. (QEMU's model ignores
    /// writes.)
    fn write_eeprom(&self, offset: usize, bytes: &[u8]) -> Result {
        let first = offset / 2;
        let count = (offset % 2 + bytes.len()).div_ceil(2);
        let mut words = KVec::with_capacity(count, GFP_KERNEL)?;
        for index in first..first + count {
            let byte_at = |half: usize| {
                (2 * index + half)
                    .checked_sub(offset)
                    .and_then(|at| bytes.get(at))
            };
            let value = match (byte_at(0), byte_at(1)) {
                (Some(low), Some(high)) => [*low, *high],
                (low, high) => {
                    let word = u16::try_from(index).map_err(|_| EINVAL)?;
                    let old = eeprom::read(&self.bar, word)?.to_le_bytes();
                    [*low.unwrap_or(&old[0]), *high.unwrap_or(&old[1])]
                }
            };
            words.push(u16::from_le_bytes(value), GFP_KERNEL)?;
        }
        let first = u16::try_from(first).map_err(|_| EINVAL)?;
        eeprom::write(&self.bar, first, &words)
    }
}
