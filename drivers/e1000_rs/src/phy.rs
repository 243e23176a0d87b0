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
/// (which resets the PHY's registers too on QEMU's model): MDI/MDI-X chosen automatically,
/// polarity corrected, carrier sense asserted while transmitting. The C driver also resets the PHY
/// afterwards, which a real M88 PHY needs to apply the crossover mode, and sets its extended
/// control; neither is done here yet (QEMU's model applies the register at once).
pub(crate) fn set_up_copper(bar: &Bar0<'_>) -> Result {
    let control = read(bar, regs::M88_PHY_SPEC_CTRL)?;
    let wanted = (control | regs::M88_PSCR_AUTO_CROSSOVER | regs::M88_PSCR_ASSERT_CRS_ON_TX)
        & !regs::M88_PSCR_POLARITY_REVERSAL_DISABLED;
    if wanted != control {
        write(bar, regs::M88_PHY_SPEC_CTRL, wanted)?;
    }
    Ok(())
}
