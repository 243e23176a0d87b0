// SPDX-License-Identifier: GPL-2.0

//! How the link gets its speed and duplex (`ethtool -s DEV speed/duplex/autoneg/advertise/mdix`):
//! negotiated among the modes advertised, or forced; and how the PHY crosses its pairs over. Set
//! up after each reset of the controller, as the C driver sets them up.

use kernel::{bindings, prelude::*};

use crate::ethtool::{link_mode, LinkRequest};
use crate::hw::{self, Bar0};
use crate::pause::Directions;
use crate::phy;
use crate::regs;

/// The modes the PHY advertises: every copper speed and duplex but 1000 Mb/s half duplex, which
/// the MAC does not do.
pub(crate) const ADVERTISABLE: u64 = link_mode::T10_HALF
    | link_mode::T10_FULL
    | link_mode::T100_HALF
    | link_mode::T100_FULL
    | link_mode::T1000_FULL;

/// ethtool's `SPEED_*` and `DUPLEX_*` values that a forced link may take.
const SPEED_10: u32 = 10;
const SPEED_100: u32 = 100;
const SPEED_1000: u32 = 1000;
const DUPLEX_HALF: u8 = 0;
const DUPLEX_FULL: u8 = 1;

/// A speed the PHY can be forced to: 1000 Mb/s needs auto-negotiation (802.3 clause 40), so
/// asking for it forced advertises it alone, as the C driver does.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ForcedSpeed {
    Mb10,
    Mb100,
}

/// Where the link's speed and duplex come from.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum SpeedDuplex {
    /// Negotiated among these [`link_mode`] bits, a non-empty part of [`ADVERTISABLE`].
    Negotiated(u64),
    Forced {
        speed: ForcedSpeed,
        full_duplex: bool,
    },
}

/// How the PHY pairs its wires with the partner's: chosen by itself, or straight (MDI) or crossed
/// (MDI-X) as ethtool's `mdix off`/`on` ask.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Crossover {
    Auto,
    Mdi,
    MdiX,
}

impl Crossover {
    /// ethtool's `ETH_TP_MDI*` value for this choice (`eth_tp_mdix_ctrl`).
    pub(crate) fn ethtool_value(self) -> u8 {
        (match self {
            Self::Auto => bindings::ETH_TP_MDI_AUTO,
            Self::Mdi => bindings::ETH_TP_MDI,
            Self::MdiX => bindings::ETH_TP_MDI_X,
        }) as u8
    }

    /// The M88 PHY Specific Control's crossover mode bits for this choice.
    fn pscr_bits(self) -> u16 {
        match self {
            Self::Auto => regs::M88_PSCR_AUTO_CROSSOVER,
            Self::Mdi => regs::M88_PSCR_MANUAL_MDI,
            Self::MdiX => regs::M88_PSCR_MANUAL_MDIX,
        }
    }
}

/// The link as `ethtool -s` set it: every mode negotiated and the crossover automatic until then.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct LinkConfig {
    pub(crate) speed_duplex: SpeedDuplex,
    pub(crate) crossover: Crossover,
}

impl Default for LinkConfig {
    fn default() -> Self {
        Self {
            speed_duplex: SpeedDuplex::Negotiated(ADVERTISABLE),
            crossover: Crossover::Auto,
        }
    }
}

impl LinkConfig {
    /// This configuration changed as `request` asks, checked as the C driver checks it: a forced
    /// crossover only with auto-negotiation, forced speeds of 10 and 100 Mb/s in either duplex,
    /// 1000 Mb/s full duplex (advertised alone); an advertisement of nothing the PHY can advertise
    /// advertises everything. A forced speed puts the crossover back to automatic. `EINVAL` for
    /// anything else.
    pub(crate) fn with(self, request: &LinkRequest) -> Result<Self> {
        let crossover = match u32::from(request.mdix_ctrl) {
            bindings::ETH_TP_MDI_INVALID => None,
            bindings::ETH_TP_MDI_AUTO => Some(Crossover::Auto),
            _ if !request.autoneg => return Err(EINVAL),
            bindings::ETH_TP_MDI => Some(Crossover::Mdi),
            bindings::ETH_TP_MDI_X => Some(Crossover::MdiX),
            _ => return Err(EINVAL),
        };
        let mut config = self;
        if request.autoneg {
            let modes = request.advertising & ADVERTISABLE;
            config.speed_duplex =
                SpeedDuplex::Negotiated(if modes == 0 { ADVERTISABLE } else { modes });
        } else {
            config.speed_duplex = match (request.speed, request.duplex) {
                (SPEED_10, DUPLEX_HALF) => forced(ForcedSpeed::Mb10, false),
                (SPEED_10, DUPLEX_FULL) => forced(ForcedSpeed::Mb10, true),
                (SPEED_100, DUPLEX_HALF) => forced(ForcedSpeed::Mb100, false),
                (SPEED_100, DUPLEX_FULL) => forced(ForcedSpeed::Mb100, true),
                (SPEED_1000, DUPLEX_FULL) => SpeedDuplex::Negotiated(link_mode::T1000_FULL),
                _ => return Err(EINVAL),
            };
            config.crossover = Crossover::Auto;
        }
        if let Some(crossover) = crossover {
            config.crossover = crossover;
        }
        Ok(config)
    }

    /// The [`link_mode`] bits advertised; none while the link is forced.
    pub(crate) fn advertised(self) -> Option<u64> {
        match self.speed_duplex {
            SpeedDuplex::Negotiated(modes) => Some(modes),
            SpeedDuplex::Forced { .. } => None,
        }
    }

    /// Sets the link up after a reset of the controller: negotiated, the crossover, the
    /// advertisement (`pause` among it) and a restart of auto-negotiation, so that the link goes
    /// down until it completes and a link change interrupt says so; forced, the MAC's and the
    /// PHY's speed and duplex with auto-negotiation off and the crossover straight. Either way the
    /// PHY is reset to take its new control, as the M88 needs, and its extended control set again
    /// after. `Err` when the PHY does not answer.
    pub(crate) fn set_up(self, bar: &Bar0<'_>, pause: Directions) -> Result {
        match self.speed_duplex {
            SpeedDuplex::Negotiated(modes) => {
                phy::set_crossover(bar, self.crossover.pscr_bits())?;
                phy::reset(bar, 0, 0)?;
                phy::set_up_extended(bar)?;
                negotiate(bar, modes, pause)
            }
            SpeedDuplex::Forced { speed, full_duplex } => force(bar, speed, full_duplex),
        }
    }
}

fn forced(speed: ForcedSpeed, full_duplex: bool) -> SpeedDuplex {
    SpeedDuplex::Forced { speed, full_duplex }
}

/// Advertises `modes` and the PAUSE abilities of `pause` (10/100 modes in the Advertisement
/// register, 802.3 clause 28; 1000 Mb/s in 1000BASE-T Control, clause 40) and restarts auto-negotiation. The MAC
/// takes speed and duplex from the PHY (CTRL.ASDE, as after the reset).
fn negotiate(bar: &Bar0<'_>, modes: u64, pause: Directions) -> Result {
    const TEN_HUNDRED: [(u64, u16); 4] = [
        (link_mode::T10_HALF, regs::MII_ADVERTISE_10_HALF),
        (link_mode::T10_FULL, regs::MII_ADVERTISE_10_FULL),
        (link_mode::T100_HALF, regs::MII_ADVERTISE_100_HALF),
        (link_mode::T100_FULL, regs::MII_ADVERTISE_100_FULL),
    ];
    let speeds = TEN_HUNDRED
        .iter()
        .filter(|(mode, _)| modes & mode != 0)
        .fold(0, |bits, (_, bit)| bits | bit);
    phy::update(bar, regs::MII_ADVERTISE, |advertised| {
        (advertised & !(regs::MII_ADVERTISE_SPEEDS | regs::MII_PAUSE | regs::MII_ASM_DIR))
            | speeds
            | pause.advertised()
    })?;
    phy::update(bar, regs::PHY_1000T_CTRL, |gigabit| {
        if modes & link_mode::T1000_FULL != 0 {
            gigabit | regs::PHY_1000T_CTRL_ADV_FULL
        } else {
            gigabit & !regs::PHY_1000T_CTRL_ADV_FULL
        }
    })?;
    let control = phy::read(bar, regs::MII_CONTROL)?;
    phy::write(
        bar,
        regs::MII_CONTROL,
        control | regs::MII_CONTROL_AUTONEG_ENABLE | regs::MII_CONTROL_RESTART_AUTONEG,
    )
}

/// Forces `speed` and the duplex on the MAC (CTRL's force bits, auto speed detection off) and on
/// the PHY, whose crossover is forced straight (MDI: the M88 needs a forced crossover with forced
/// speeds) and which is reset to take them.
fn force(bar: &Bar0<'_>, speed: ForcedSpeed, full_duplex: bool) -> Result {
    let speed_bits = match speed {
        ForcedSpeed::Mb10 => 0,
        ForcedSpeed::Mb100 => regs::CTRL_SPEED_100,
    };
    hw::force_speed_duplex(bar, speed_bits, full_duplex);
    phy::set_crossover(bar, regs::M88_PSCR_MANUAL_MDI)?;
    let mut set = 0;
    if full_duplex {
        set |= regs::MII_CONTROL_FULL_DUPLEX;
    }
    if speed == ForcedSpeed::Mb100 {
        set |= regs::MII_CONTROL_SPEED_100;
    }
    let cleared = regs::MII_CONTROL_AUTONEG_ENABLE
        | regs::MII_CONTROL_FULL_DUPLEX
        | regs::MII_CONTROL_SPEED_100
        | regs::MII_CONTROL_SPEED_1000;
    phy::reset(bar, cleared, set)?;
    phy::set_up_extended(bar)
}
