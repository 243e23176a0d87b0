// SPDX-License-Identifier: GPL-2.0

//! Flow control (IEEE 802.3 PAUSE frames, `ethtool -a`/`-A`): what the driver asks for, what it
//! advertises, and what the link resolves to, as the C driver decides it.

use kernel::prelude::*;

use crate::hw::{self, Bar0};
use crate::phy;
use crate::regs;

/// The directions PAUSE frames work in: received ones obeyed (`rx`), sent ones (`tx`).
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Directions {
    pub(crate) rx: bool,
    pub(crate) tx: bool,
}

impl Directions {
    const BOTH: Directions = Directions { rx: true, tx: true };
    const RX: Directions = Directions {
        rx: true,
        tx: false,
    };
    pub(crate) const NONE: Directions = Directions {
        rx: false,
        tx: false,
    };

    /// The advertisement's PAUSE and ASM_DIR bits for these directions (802.3 Annex 28B): both
    /// directions, or receive only (whose partner may send), advertise both bits; send only,
    /// ASM_DIR alone.
    pub(crate) fn advertised(self) -> u16 {
        match (self.rx, self.tx) {
            (true, _) => regs::MII_PAUSE | regs::MII_ASM_DIR,
            (false, true) => regs::MII_ASM_DIR,
            (false, false) => 0,
        }
    }
}

/// Flow control as `ethtool -A` set it and the link resolved it. Changed only under the RTNL lock.
#[derive(Clone, Copy)]
pub(crate) struct FlowControl {
    /// Resolved by auto-negotiation, or forced.
    pub(crate) autoneg: bool,
    /// What the driver asks for: both directions until `ethtool -A` says otherwise, as the C
    /// driver's default (the EEPROM's pause bits on QEMU's model).
    pub(crate) requested: Directions,
    /// What the MAC does now: `requested` after each reset, until a link resolves it.
    pub(crate) current: Directions,
}

impl Default for FlowControl {
    fn default() -> Self {
        FlowControl {
            autoneg: true,
            requested: Directions::BOTH,
            current: Directions::BOTH,
        }
    }
}

/// What a full-duplex link resolves to from the two advertisements (802.3 Table 28B-3), and, where
/// the partner advertises nothing that fits, the C driver's choice for partners that do not
/// advertise what they do: none if none or only sending was asked for, otherwise receive only.
fn resolve(requested: Directions, ours: u16, partners: u16) -> Directions {
    let pause = |adv: u16| adv & regs::MII_PAUSE != 0;
    let asm = |adv: u16| adv & regs::MII_ASM_DIR != 0;
    if pause(ours) && pause(partners) {
        if requested == Directions::BOTH {
            Directions::BOTH
        } else {
            Directions::RX
        }
    } else if !pause(ours) && asm(ours) && pause(partners) && asm(partners) {
        Directions {
            rx: false,
            tx: true,
        }
    } else if pause(ours) && asm(ours) && !pause(partners) && asm(partners) {
        Directions::RX
    } else if !requested.rx {
        Directions::NONE
    } else {
        Directions::RX
    }
}

/// What the link resolved to, once auto-negotiation completed on a link that is up; `None` before.
/// Half duplex has no PAUSE frames.
pub(crate) fn negotiated(bar: &Bar0<'_>, requested: Directions) -> Result<Option<Directions>> {
    let Some((_, full_duplex)) = hw::link_speed_duplex(bar) else {
        return Ok(None);
    };
    if phy::read(bar, regs::MII_STATUS)? & regs::MII_STATUS_AUTONEG_COMPLETE == 0 {
        return Ok(None);
    }
    if !full_duplex {
        return Ok(Some(Directions::NONE));
    }
    let ours = phy::read(bar, regs::MII_ADVERTISE)?;
    let partners = phy::read(bar, regs::MII_PARTNER_ABILITY)?;
    Ok(Some(resolve(requested, ours, partners)))
}

/// Has the MAC obey and send PAUSE frames in `current`'s directions (CTRL.RFCE, CTRL.TFCE), the
/// PAUSE frames' registers set up for the longest frame, `max_frame` bytes.
pub(crate) fn apply(bar: &Bar0<'_>, current: Directions, max_frame: u16) {
    hw::configure_flow_control(bar, current.tx, max_frame);
    hw::set_flow_control(bar, current.rx, current.tx);
}
