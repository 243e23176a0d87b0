// SPDX-License-Identifier: GPL-2.0

//! The internal PHY's registers, read through the MAC's MDI Control register (MDIC).

use kernel::{
    io::{poll::read_poll_timeout, Io},
    prelude::*,
    time::Delta,
};

use crate::hw::{self, Bar0};
use crate::regs;

/// Issues the MDIO transfer `command` and waits for it to finish; returns MDIC then.
fn transfer(bar: &Bar0<'_>, command: u32) -> Result<u32> {
    bar.write32(
        command | (regs::PHY_ADDRESS << regs::MDIC_PHY_SHIFT),
        regs::MDIC,
    );
    let mdic = read_poll_timeout(
        || Ok(hw::read32(bar, regs::MDIC)),
        |mdic| mdic & (regs::MDIC_READY | regs::MDIC_ERROR) != 0,
        Delta::from_micros(10),
        Delta::from_millis(10),
    )?;
    // A device that does not answer reads all ones, the error bit included.
    if mdic & regs::MDIC_ERROR != 0 {
        return Err(EIO);
    }
    Ok(mdic)
}

/// Reads PHY register `reg` (below 32). Sleeps: the MDIO transfer takes about 64 us on the chip.
/// `EIO` when the MAC reports an error, `ETIMEDOUT` when it never finishes.
///
/// One transfer at a time: callers hold the RTNL lock, as every ethtool request does.
pub(crate) fn read(bar: &Bar0<'_>, reg: u32) -> Result<u16> {
    Ok(transfer(bar, regs::MDIC_OP_READ | (reg << regs::MDIC_REG_SHIFT))? as u16)
}

/// Writes `value` to PHY register `reg`, as [`read`] reads.
pub(crate) fn write(bar: &Bar0<'_>, reg: u32, value: u16) -> Result {
    transfer(
        bar,
        regs::MDIC_OP_WRITE | (reg << regs::MDIC_REG_SHIFT) | u32::from(value),
    )
    .map(|_| ())
}

/// Sets the copper PHY's specific control as the C driver does after each reset of the controller
/// (which resets the PHY's registers too on QEMU's model): polarity corrected, carrier sense
/// asserted while transmitting. The crossover is the link's to set (`link.rs`).
pub(crate) fn set_up_copper(bar: &Bar0<'_>) -> Result {
    update(bar, regs::M88_PHY_SPEC_CTRL, |control| {
        (control | regs::M88_PSCR_ASSERT_CRS_ON_TX) & !regs::M88_PSCR_POLARITY_REVERSAL_DISABLED
    })
}

/// Sets the crossover mode bits of PHY Specific Control to `bits` (one of the `M88_PSCR_*`
/// crossover modes).
pub(crate) fn set_crossover(bar: &Bar0<'_>, bits: u16) -> Result {
    update(bar, regs::M88_PHY_SPEC_CTRL, |control| {
        (control & !regs::M88_PSCR_AUTO_CROSSOVER) | bits
    })
}

/// After a reset of the PHY alone: its transmit clock at 25 MHz again, and carrier sense on
/// transmit, as the C driver sets them.
pub(crate) fn set_up_extended(bar: &Bar0<'_>) -> Result {
    update(bar, regs::M88_EXT_PHY_SPEC_CTRL, |control| {
        control | regs::M88_EPSCR_TX_CLK_25
    })?;
    update(bar, regs::M88_PHY_SPEC_CTRL, |control| {
        control | regs::M88_PSCR_ASSERT_CRS_ON_TX
    })
}

/// Resets the PHY (a soft reset, which keeps the registers' values and applies the control),
/// with the bits `cleared` cleared and `set` set in its Control register.
pub(crate) fn reset(bar: &Bar0<'_>, cleared: u16, set: u16) -> Result {
    let control = read(bar, regs::MII_CONTROL)?;
    write(
        bar,
        regs::MII_CONTROL,
        (control & !cleared) | set | regs::MII_CONTROL_RESET,
    )
}

/// Rewrites PHY register `reg` with `change` applied, if that changes it.
pub(crate) fn update(bar: &Bar0<'_>, reg: u32, change: impl FnOnce(u16) -> u16) -> Result {
    let value = read(bar, reg)?;
    let wanted = change(value);
    if wanted != value {
        write(bar, reg, wanted)?;
    }
    Ok(())
}
