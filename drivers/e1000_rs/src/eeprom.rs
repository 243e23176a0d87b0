// SPDX-License-Identifier: GPL-2.0

//! The EEPROM (a Microwire 93C46 or 93C66 on the 82540EM): words read through EERD, words written
//! by driving the Microwire lines through EECD (the 82540 has no write register), and the
//! checksum word that makes its first 64 words sum to 0xBABA.

use kernel::{
    io::{poll::read_poll_timeout, Io},
    prelude::*,
    time::{delay::fsleep, Delta},
};

use crate::compat;
use crate::hw::{self, Bar0};
use crate::netdev::{self, MacAddress};
use crate::regs;

/// The words the checksum covers: 0 to [`CHECKSUM_WORD`], which holds what makes them sum to
/// [`CHECKSUM_SUM`].
pub(crate) const CHECKSUM_WORD: u16 = 0x3f;
pub(crate) const CHECKSUM_SUM: u16 = 0xbaba;

/// Microwire opcodes: write (3 bits), and write enable and disable (3 bits and the first two of a
/// dummy address: 11 and 00).
const OPCODE_WRITE: u32 = 0b101;
const OPCODE_BITS: u32 = 3;
const OPCODE_WRITE_ENABLE: u32 = 0b10011;
const OPCODE_WRITE_DISABLE: u32 = 0b10000;
/// A word's bits.
const DATA_BITS: u32 = 16;

/// The EEPROM's size in 16-bit words: a Microwire EEPROM of 64 or 256 (EECD.EE_SIZE).
pub(crate) fn words(bar: &Bar0<'_>) -> usize {
    if hw::read32(bar, regs::EECD) & regs::EECD_SIZE != 0 {
        256
    } else {
        64
    }
}

/// The bits of a word's address: 6 for 64 words, 8 for 256.
fn address_bits(bar: &Bar0<'_>) -> u32 {
    words(bar).trailing_zeros()
}

/// Reads one 16-bit word through EERD; `EIO` when the device does not answer.
pub(crate) fn read(bar: &Bar0<'_>, word: u16) -> Result<u16> {
    bar.write32(
        regs::EERD_START | (u32::from(word) << regs::EERD_ADDR_SHIFT),
        regs::EERD,
    );
    let eerd = read_poll_timeout(
        || Ok(hw::read32(bar, regs::EERD)),
        |eerd| eerd & regs::EERD_DONE != 0,
        Delta::from_micros(5),
        Delta::from_millis(5),
    )?;
    // All ones is a device that did not answer (DONE included), not a word.
    if eerd == hw::ALL_ONES {
        return Err(EIO);
    }
    Ok((eerd >> regs::EERD_DATA_SHIFT) as u16)
}

/// The Ethernet address the EEPROM holds.
pub(crate) fn read_mac_address(bar: &Bar0<'_>) -> Result<MacAddress> {
    let mut mac = [0u8; 6];
    for word in 0..regs::EEPROM_MAC_WORDS {
        let value = read(bar, word)?.to_le_bytes();
        mac[2 * word as usize] = value[0];
        mac[2 * word as usize + 1] = value[1];
    }
    if !netdev::valid_ether_addr(&mac) {
        return Err(compat::eaddrnotavail());
    }
    Ok(mac)
}

/// The sum of words 0 to [`CHECKSUM_WORD`], which is [`CHECKSUM_SUM`] in a valid EEPROM.
pub(crate) fn sum(bar: &Bar0<'_>) -> Result<u16> {
    sum_below(bar, CHECKSUM_WORD + 1)
}

/// The sum of words 0 to `end` (excluded).
fn sum_below(bar: &Bar0<'_>, end: u16) -> Result<u16> {
    (0..end).try_fold(0u16, |sum, word| Ok(sum.wrapping_add(read(bar, word)?)))
}

/// Writes `data` to the words from `first` on, then the checksum word again if they lie below it.
/// Sleeps: each word takes the EEPROM up to 10 ms. `EINVAL` past the end, `EIO` when the device
/// does not answer, `ETIMEDOUT` when the MAC does not grant the lines or the EEPROM never finishes
/// a word.
pub(crate) fn write(bar: &Bar0<'_>, first: u16, data: &[u16]) -> Result {
    let end = usize::from(first) + data.len();
    if end > words(bar) {
        return Err(EINVAL);
    }
    {
        let microwire = Microwire::acquire(bar)?;
        microwire.write_words(first, data)?;
    }
    if first <= CHECKSUM_WORD {
        let others = sum_below(bar, CHECKSUM_WORD)?;
        let microwire = Microwire::acquire(bar)?;
        microwire.write_words(CHECKSUM_WORD, &[CHECKSUM_SUM.wrapping_sub(others)])?;
    }
    Ok(())
}

/// The Microwire lines, which the MAC granted the driver (EECD.REQ, EECD.GNT) until drop.
struct Microwire<'a, 'bound> {
    bar: &'a Bar0<'bound>,
    address_bits: u32,
}

impl<'a, 'bound> Microwire<'a, 'bound> {
    /// Asks the MAC for the lines and selects the EEPROM. `EIO` when the device does not answer:
    /// EECD would read all ones, a grant and a ready EEPROM at once.
    fn acquire(bar: &'a Bar0<'bound>) -> Result<Self> {
        hw::check_answers(bar).map_err(|_| EIO)?;
        let eecd = hw::read32(bar, regs::EECD) | regs::EECD_REQ;
        bar.write32(eecd, regs::EECD);
        read_poll_timeout(
            || Ok(hw::read32(bar, regs::EECD)),
            |eecd| eecd & regs::EECD_GNT != 0,
            Delta::from_micros(5),
            Delta::from_millis(5),
        )
        .inspect_err(|_| bar.write32(eecd & !regs::EECD_REQ, regs::EECD))?;
        let microwire = Self {
            bar,
            address_bits: address_bits(bar),
        };
        microwire.set(|eecd| (eecd & !(regs::EECD_DI | regs::EECD_SK)) | regs::EECD_CS);
        Ok(microwire)
    }

    /// Rewrites EECD with `change` applied, then waits the lines' settling time.
    fn set(&self, change: impl FnOnce(u32) -> u32) {
        let eecd = change(hw::read32(self.bar, regs::EECD));
        self.bar.write32(eecd, regs::EECD);
        hw::flush(self.bar);
        fsleep(Delta::from_micros(50));
    }

    /// Shifts the low `count` bits of `value` out to the EEPROM, most significant first: each on
    /// DI, clocked in on SK's rising edge.
    fn shift_out(&self, value: u32, count: u32) {
        for bit in (0..count).rev() {
            let one = value & (1 << bit) != 0;
            self.set(|eecd| {
                if one {
                    eecd | regs::EECD_DI
                } else {
                    eecd & !regs::EECD_DI
                }
            });
            self.set(|eecd| eecd | regs::EECD_SK);
            self.set(|eecd| eecd & !regs::EECD_SK);
        }
        self.set(|eecd| eecd & !regs::EECD_DI);
    }

    /// Deselects the EEPROM for a clock, which ends a command (and starts a write), and selects it
    /// again.
    fn standby(&self) {
        self.set(|eecd| eecd & !(regs::EECD_CS | regs::EECD_SK));
        self.set(|eecd| eecd | regs::EECD_SK);
        self.set(|eecd| eecd | regs::EECD_CS);
        self.set(|eecd| eecd & !regs::EECD_SK);
    }

    /// A command whose dummy address starts with the opcode's last two bits.
    fn command(&self, opcode: u32) {
        self.shift_out(opcode, OPCODE_BITS + 2);
        self.shift_out(0, self.address_bits - 2);
        self.standby();
    }

    /// Enables writes, writes each word and waits until the EEPROM says it is done (DO high),
    /// then disables writes.
    fn write_words(&self, first: u16, data: &[u16]) -> Result {
        self.command(OPCODE_WRITE_ENABLE);
        let written = (first..).zip(data).try_for_each(|(word, value)| {
            self.shift_out(OPCODE_WRITE, OPCODE_BITS);
            self.shift_out(u32::from(word), self.address_bits);
            self.shift_out(u32::from(*value), DATA_BITS);
            self.standby();
            read_poll_timeout(
                || Ok(hw::read32(self.bar, regs::EECD)),
                |eecd| eecd & regs::EECD_DO != 0,
                Delta::from_micros(50),
                Delta::from_millis(10),
            )?;
            self.standby();
            Ok(())
        });
        self.command(OPCODE_WRITE_DISABLE);
        written
    }
}

impl Drop for Microwire<'_, '_> {
    /// Deselects the EEPROM and gives the lines back to the MAC.
    fn drop(&mut self) {
        self.set(|eecd| eecd & !(regs::EECD_CS | regs::EECD_SK | regs::EECD_DI));
        self.set(|eecd| eecd & !regs::EECD_REQ);
    }
}
