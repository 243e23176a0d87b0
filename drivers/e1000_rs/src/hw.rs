// SPDX-License-Identifier: GPL-2.0

//! The controller's registers as the driver uses them: reset, the EEPROM, the rings' base and
//! tails, the receive filter (receive addresses, Multicast Table Array, RCTL), interrupts, link and
//! error counters.

use kernel::{
    io::{poll::read_poll_timeout, Io},
    pci,
    prelude::*,
    time::{delay::fsleep, Delta},
};

use crate::compat;
use crate::dma_local::DmaAddress;
use crate::netdev::{self, MacAddress, RxMode};
use crate::regs;

/// The register space.
pub(crate) type Bar0<'bound> = pci::Bar<'bound, { regs::BAR0_SIZE }>;

/// Interrupt throttling as the C driver starts it: 20000 interrupts/s, in 256 ns units.
const ITR_20K: u32 = 195;
/// Transmit interrupt delay, in 1.024 us units (the C driver's default).
const TIDV_DEFAULT: u32 = 8;

/// Error counters of the hardware, which clear on read and are therefore summed.
#[derive(Default, Clone, Copy)]
pub(crate) struct HwErrors {
    pub(crate) crc: u64,
    pub(crate) length: u64,
    pub(crate) missed: u64,
}

/// Resets the controller and leaves every interrupt masked, the link set up and no secondary
/// receive address.
pub(crate) fn reset(bar: &Bar0<'_>) {
    bar.write32(u32::MAX, regs::IMC);
    bar.write32(0, regs::RCTL);
    bar.write32(0, regs::TCTL);
    let _ = bar.read32(regs::STATUS);
    fsleep(Delta::from_millis(10));
    bar.write32(bar.read32(regs::CTRL) | regs::CTRL_RST, regs::CTRL);
    fsleep(Delta::from_millis(10));
    bar.write32(u32::MAX, regs::IMC);
    let _ = bar.read32(regs::ICR);
    bar.write32(
        bar.read32(regs::CTRL) | regs::CTRL_SLU | regs::CTRL_ASDE,
        regs::CTRL,
    );
    // The reset leaves the secondary addresses (QEMU's model) or undefined ones (the chip).
    clear_receive_addresses(bar, 1);
}

/// Reads one 16-bit EEPROM word through EERD.
fn read_eeprom(bar: &Bar0<'_>, word: u32) -> Result<u16> {
    bar.write32(
        regs::EERD_START | (word << regs::EERD_ADDR_SHIFT),
        regs::EERD,
    );
    let eerd = read_poll_timeout(
        || Ok(bar.read32(regs::EERD)),
        |eerd| eerd & regs::EERD_DONE != 0,
        Delta::from_micros(5),
        Delta::from_millis(5),
    )?;
    Ok((eerd >> regs::EERD_DATA_SHIFT) as u16)
}

/// The Ethernet address the EEPROM holds.
pub(crate) fn read_mac_address(bar: &Bar0<'_>) -> Result<MacAddress> {
    let mut mac = [0u8; 6];
    for word in 0..regs::EEPROM_MAC_WORDS {
        let value = read_eeprom(bar, word)?.to_le_bytes();
        mac[2 * word as usize] = value[0];
        mac[2 * word as usize + 1] = value[1];
    }
    if !netdev::valid_ether_addr(&mac) {
        return Err(compat::eaddrnotavail());
    }
    Ok(mac)
}

/// Whether the link is up (STATUS.LU).
pub(crate) fn link_up(bar: &Bar0<'_>) -> bool {
    bar.read32(regs::STATUS) & regs::STATUS_LU != 0
}

/// Points the transmitter at an empty ring at `base`, `len` bytes, with the copper inter-packet
/// gap and the C driver's interrupt delay.
pub(crate) fn configure_transmit(bar: &Bar0<'_>, base: DmaAddress, len: usize) {
    write_ring_address::<{ regs::TDBAL }, { regs::TDBAH }, { regs::TDLEN }>(bar, base, len);
    bar.write32(0, regs::TDH);
    bar.write32(0, regs::TDT);
    bar.write32(regs::TIPG_COPPER, regs::TIPG);
    bar.write32(TIDV_DEFAULT, regs::TIDV);
}

/// Points the receiver at the ring at `base`, `len` bytes, head 0, without a receive delay.
pub(crate) fn configure_receive(bar: &Bar0<'_>, base: DmaAddress, len: usize) {
    write_ring_address::<{ regs::RDBAL }, { regs::RDBAH }, { regs::RDLEN }>(bar, base, len);
    bar.write32(0, regs::RDH);
    bar.write32(0, regs::RDTR);
}

/// Writes a ring's bus address and length in bytes to its base address low and high and its
/// length registers (constants, so that the accesses are checked at build time).
fn write_ring_address<const LOW: usize, const HIGH: usize, const LENGTH: usize>(
    bar: &Bar0<'_>,
    base: DmaAddress,
    len: usize,
) {
    bar.write32(base as u32, LOW);
    bar.write32((base >> 32) as u32, HIGH);
    bar.write32(len as u32, LENGTH);
}

/// Starts the receiver with descriptors up to `rx_tail` the device's, then the transmitter, with
/// interrupts throttled as the C driver starts them. Interrupts stay masked.
pub(crate) fn start(bar: &Bar0<'_>, rx_tail: usize) {
    set_rx_tail(bar, rx_tail);
    // Stale causes go before the receiver starts: a frame's RXT0 from then on stays latched (all
    // masked) until interrupts are unmasked.
    let _ = bar.read32(regs::ICR);
    // The stack sets the filter's mode once the interface is up (`ndo_set_rx_mode_async`).
    bar.write32(rctl(RxMode::default(), false), regs::RCTL);
    bar.write32(
        regs::TCTL_EN | regs::TCTL_PSP | regs::TCTL_CT_DEFAULT | regs::TCTL_COLD_FULL_DUPLEX,
        regs::TCTL,
    );
    bar.write32(ITR_20K, regs::ITR);
}

/// Hands the transmit descriptors up to `tail` (excluded) to the device (TDT). The MMIO write
/// orders after the descriptor writes (writel).
#[inline]
pub(crate) fn set_tx_tail(bar: &Bar0<'_>, tail: usize) {
    bar.write32(tail as u32, regs::TDT);
}

/// Hands the receive descriptors up to `tail` (included) back to the device (RDT).
#[inline]
pub(crate) fn set_rx_tail(bar: &Bar0<'_>, tail: usize) {
    bar.write32(tail as u32, regs::RDT);
}

/// Reads and clears the interrupt causes (ICR); 0 when the device raised none.
#[inline]
pub(crate) fn interrupt_causes(bar: &Bar0<'_>) -> u32 {
    bar.read32(regs::ICR)
}

/// Masks every interrupt, and has the device see it before this returns: the write is posted,
/// and reading a register pushes it (the C driver's `E1000_WRITE_FLUSH`).
#[inline]
pub(crate) fn mask_interrupts(bar: &Bar0<'_>) {
    bar.write32(u32::MAX, regs::IMC);
    let _ = bar.read32(regs::STATUS);
}

/// Unmasks the interrupt `causes` (IMS).
#[inline]
pub(crate) fn unmask_interrupts(bar: &Bar0<'_>, causes: u32) {
    bar.write32(causes, regs::IMS);
}

/// Adds the error counters, which clear on read, to `errors`.
pub(crate) fn add_error_counters(bar: &Bar0<'_>, errors: &mut HwErrors) {
    errors.crc += u64::from(bar.read32(regs::CRCERRS));
    errors.length += u64::from(bar.read32(regs::RLEC))
        + u64::from(bar.read32(regs::RUC))
        + u64::from(bar.read32(regs::ROC));
    errors.missed += u64::from(bar.read32(regs::MPC));
}

/// Receive Address entry 0: the frames the receiver accepts. On the chip, a reset reloads it from
/// the EEPROM (QEMU's model keeps it); like the C driver, the driver writes it after every reset.
pub(crate) fn program_mac_address(bar: &Bar0<'_>, mac: &MacAddress) {
    write_receive_address(bar, 0, Some(mac));
}

/// The receive filter: the mode, the secondary unicast `addresses` in the receive address entries
/// after the station's own (unicast promiscuous if they do not fit), and the multicast `groups`
/// hashed into the Multicast Table Array, as the C driver does.
///
/// The stack sets it for every multicast group joined or left, which mostly leaves the mode as it
/// was: RCTL is written only when it changes. QEMU's model holds received frames back for a second
/// after every RCTL write (its `flush_queue_timer`).
pub(crate) fn set_receive_filter(
    bar: &Bar0<'_>,
    mode: RxMode,
    mut addresses: impl Iterator<Item = MacAddress>,
    groups: impl Iterator<Item = MacAddress>,
) {
    let mut unused = 1;
    for (entry, address) in (1..regs::RAR_ENTRIES).zip(&mut addresses) {
        write_receive_address(bar, entry, Some(&address));
        unused = entry + 1;
    }
    clear_receive_addresses(bar, unused);
    // `zip` stops at the last entry without taking an address: any left did not fit.
    let all_unicast = addresses.next().is_some();
    let mut table = [0u32; regs::MTA_ENTRIES];
    for group in groups {
        let bit = mta_bit(&group);
        table[bit / 32] |= 1 << (bit % 32);
    }
    write_multicast_table(bar, &table);
    let rctl = rctl(mode, all_unicast);
    if bar.read32(regs::RCTL) != rctl {
        bar.write32(rctl, regs::RCTL);
    }
}

/// Clears the Multicast Table Array: no group passes until the stack sets the receive filter.
/// The secondary receive addresses need no clearing: every reset clears them.
pub(crate) fn clear_multicast_table(bar: &Bar0<'_>) {
    write_multicast_table(bar, &[0; regs::MTA_ENTRIES]);
}

/// Writes the whole Multicast Table Array.
fn write_multicast_table(bar: &Bar0<'_>, table: &[u32; regs::MTA_ENTRIES]) {
    for (i, bits) in table.iter().enumerate() {
        bar.write32(*bits, regs::MTA + 4 * i);
    }
}

/// RCTL for a running receiver: 2048-byte buffers (BSIZE 0), broadcasts, the CRC stripped, and
/// what `mode` adds (unicast promiscuous does not pass multicast: promiscuous sets both bits), and
/// every unicast frame with `all_unicast` (more secondary addresses than the entries hold). Long
/// Packet Enable stays clear (see `regs::MAX_FRAME_LEN`).
fn rctl(mode: RxMode, all_unicast: bool) -> u32 {
    let mut rctl = regs::RCTL_EN | regs::RCTL_BAM | regs::RCTL_SECRC;
    if mode.promiscuous || all_unicast {
        rctl |= regs::RCTL_UPE;
    }
    if mode.promiscuous {
        rctl |= regs::RCTL_MPE;
    }
    if mode.all_multicast {
        rctl |= regs::RCTL_MPE;
    }
    rctl
}

/// The Multicast Table Array bit that passes frames to `group`: with RCTL.MO 00 (as `rctl` leaves
/// it), address bits 47:36.
fn mta_bit(group: &MacAddress) -> usize {
    usize::from(group[5]) << 4 | usize::from(group[4]) >> 4
}

/// Receive Address entries `first` to the last the driver uses match nothing.
fn clear_receive_addresses(bar: &Bar0<'_>, first: usize) {
    for index in first..regs::RAR_ENTRIES {
        write_receive_address(bar, index, None);
    }
}

// Every entry the driver uses lies within BAR 0.
const _: () = assert!(regs::RAH0 + 8 * (regs::RAR_ENTRIES - 1) + 4 <= regs::BAR0_SIZE);

/// Receive Address entry `index`: frames to `mac` pass, or with `None` the entry matches nothing.
fn write_receive_address(bar: &Bar0<'_>, index: usize, mac: Option<&MacAddress>) {
    let (low, high) = mac.map_or((0, 0), |mac| {
        (
            u32::from_le_bytes([mac[0], mac[1], mac[2], mac[3]]),
            u32::from(u16::from_le_bytes([mac[4], mac[5]])) | regs::RAH_AV,
        )
    });
    // The offset is only known at run time, so it is checked then; an entry below `RAR_ENTRIES`
    // lies within BAR 0 (asserted above), so the checks pass.
    debug_assert!(index < regs::RAR_ENTRIES);
    let _ = bar.try_write32(low, regs::RAL0 + 8 * index);
    let _ = bar.try_write32(high, regs::RAH0 + 8 * index);
}
