// SPDX-License-Identifier: GPL-2.0

//! What ethtool reads and sets on the adapter (`crate::ethtool::Ethtool`): the statistics of
//! `ethtool -S` under the C driver's names, the link settings, autonegotiation restarts and the
//! ring sizes of `ethtool -g`/`-G`.

use kernel::prelude::*;

use crate::ethtool::{link_mode, Ethtool, LinkSettings, RingSizes};
use crate::hw::{self, HwStats};
use crate::netdev::Stats;
use crate::ring_common::RingSize;
use crate::tx::TX_RING_MIN;

use super::{Counters, E1000};

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

    /// The copper port of the 82540EM, auto-negotiating every speed it has, as the C driver
    /// reports it (which leaves the PHY address 0).
    fn link_settings(&self) -> LinkSettings {
        let modes = link_mode::T10_HALF
            | link_mode::T10_FULL
            | link_mode::T100_HALF
            | link_mode::T100_FULL
            | link_mode::T1000_FULL
            | link_mode::AUTONEG
            | link_mode::TP;
        LinkSettings {
            supported: modes,
            advertising: modes,
            speed_duplex: hw::link_speed_duplex(&self.bar),
            autoneg: true,
            phy_address: 0,
        }
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
}
