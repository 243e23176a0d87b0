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

/// The statistics registers the driver reports, which clear on read and are therefore summed
/// (QEMU's model leaves CRCERRS to MPC uncleared, so there they grow with each read, as with the C
/// driver).
#[derive(Default, Clone, Copy)]
pub(crate) struct HwStats {
    /// CRC Error Count.
    pub(crate) crc_errors: u64,
    /// Missed Packets Count: no room in the receive FIFO.
    pub(crate) missed: u64,
    /// Collision Count.
    pub(crate) collisions: u64,
    /// Receive Length Error Count, Receive Undersize Count, Receive Oversize Count.
    pub(crate) length_errors: u64,
    pub(crate) undersize: u64,
    pub(crate) oversize: u64,
    /// Receive No Buffers Count: no free receive descriptor.
    pub(crate) no_buffer: u64,
    /// Good Packets and Good Octets Received and Transmitted (octets from the destination address
    /// to the CRC).
    pub(crate) rx_packets: u64,
    pub(crate) tx_packets: u64,
    pub(crate) rx_bytes: u64,
    pub(crate) tx_bytes: u64,
    /// Broadcast and Multicast Packets Received and Transmitted.
    pub(crate) rx_broadcast: u64,
    pub(crate) tx_broadcast: u64,
    pub(crate) rx_multicast: u64,
    pub(crate) tx_multicast: u64,
    /// TCP Segmentation Context Transmitted, and TCP Segmentation Context Transmit Fail.
    pub(crate) tso_contexts: u64,
    pub(crate) tso_failed: u64,
}

impl HwStats {
    /// Every receive length error: RLEC, RUC and ROC.
    pub(crate) fn all_length_errors(&self) -> u64 {
        self.length_errors + self.undersize + self.oversize
    }
}

/// Adds the statistics registers, which clear on read, to `stats`.
pub(crate) fn add_statistics(bar: &Bar0<'_>, stats: &mut HwStats) {
    let read = |offset| u64::from(bar.read32(offset));
    stats.crc_errors += read(regs::CRCERRS);
    stats.missed += read(regs::MPC);
    stats.collisions += read(regs::COLC);
    stats.length_errors += read(regs::RLEC);
    stats.undersize += read(regs::RUC);
    stats.oversize += read(regs::ROC);
    stats.no_buffer += read(regs::RNBC);
    stats.rx_packets += read(regs::GPRC);
    stats.tx_packets += read(regs::GPTC);
    // The low half first: reading the high half clears both.
    stats.rx_bytes += read(regs::GORCL) | read(regs::GORCH) << 32;
    stats.tx_bytes += read(regs::GOTCL) | read(regs::GOTCH) << 32;
    stats.rx_broadcast += read(regs::BPRC);
    stats.tx_broadcast += read(regs::BPTC);
    stats.rx_multicast += read(regs::MPRC);
    stats.tx_multicast += read(regs::MPTC);
    stats.tso_contexts += read(regs::TSCTC);
    stats.tso_failed += read(regs::TSCTFC);
}

/// The link's speed in Mb/s and duplex as the MAC resolved them (STATUS.SPEED, STATUS.FD), while
/// it is up.
pub(crate) fn link_speed_duplex(bar: &Bar0<'_>) -> Option<(u32, bool)> {
    let status = bar.read32(regs::STATUS);
    if status & regs::STATUS_LU == 0 {
        return None;
    }
    let speed = match (status & regs::STATUS_SPEED_MASK) >> regs::STATUS_SPEED_SHIFT {
        0 => 10,
        1 => 100,
        _ => 1000,
    };
    Some((speed, status & regs::STATUS_FD != 0))
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

/// Starts the receiver with descriptors up to `rx_tail` the device's and `filter`, long packets on
/// or off, then the transmitter, with interrupts throttled as the C driver starts them. Interrupts
/// stay masked. After a reset, which cleared the receive filter.
pub(crate) fn start(bar: &Bar0<'_>, rx_tail: usize, filter: &ReceiveFilter, long_packets: bool) {
    set_rx_tail(bar, rx_tail);
    // Stale causes go before the receiver starts: a frame's RXT0 from then on stays latched (all
    // masked) until interrupts are unmasked.
    let _ = bar.read32(regs::ICR);
    // The reset cleared the other entries.
    for (entry, address) in (1..).zip(filter.addresses()) {
        write_receive_address(bar, entry, Some(address));
    }
    write_multicast_table(bar, &filter.table);
    bar.write32(regs::VET_8021Q, regs::VET);
    for (i, bits) in filter.vlans.iter().enumerate() {
        bar.write32(*bits, regs::VFTA + 4 * i);
    }
    bar.write32(filter.rctl(long_packets), regs::RCTL);
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

/// Receive Address entry 0: the frames the receiver accepts. On the chip, a reset reloads it from
/// the EEPROM (QEMU's model keeps it); like the C driver, the driver writes it after every reset.
pub(crate) fn program_mac_address(bar: &Bar0<'_>, mac: &MacAddress) {
    write_receive_address(bar, 0, Some(mac));
}

/// The receive filter as the stack last set it: the mode, the secondary unicast addresses in the
/// receive address entries after the station's own (unicast promiscuous if they do not fit), the
/// multicast groups hashed into the Multicast Table Array, and the VLAN IDs of the VLAN Filter
/// Table Array, as the C driver does. The driver keeps it to write it again after a reset it makes
/// while the interface is up.
#[derive(Clone)]
pub(crate) struct ReceiveFilter {
    mode: RxMode,
    /// Entries 1 to `unicast_entries` hold these.
    addresses: [MacAddress; regs::RAR_ENTRIES - 1],
    unicast_entries: usize,
    /// More secondary addresses than entries.
    all_unicast: bool,
    table: [u32; regs::MTA_ENTRIES],
    /// A bit per VLAN ID the interface has, as the VFTA holds them.
    vlans: [u32; regs::VFTA_ENTRIES],
}

impl Default for ReceiveFilter {
    /// Only the station's address, broadcasts, and no multicast group.
    fn default() -> Self {
        Self {
            mode: RxMode::default(),
            addresses: [MacAddress::default(); regs::RAR_ENTRIES - 1],
            unicast_entries: 0,
            all_unicast: false,
            table: [0; regs::MTA_ENTRIES],
            vlans: [0; regs::VFTA_ENTRIES],
        }
    }
}

impl ReceiveFilter {
    /// The filter for `mode`, the secondary unicast `addresses` and the multicast `groups`, with
    /// this one's VLAN IDs.
    pub(crate) fn with_addresses(
        &self,
        mode: RxMode,
        mut addresses: impl Iterator<Item = MacAddress>,
        groups: impl Iterator<Item = MacAddress>,
    ) -> Self {
        let mut filter = Self {
            mode,
            vlans: self.vlans,
            ..Self::default()
        };
        for (slot, address) in filter.addresses.iter_mut().zip(&mut addresses) {
            *slot = address;
            filter.unicast_entries += 1;
        }
        // `zip` stops at the last entry without taking an address: any left did not fit.
        filter.all_unicast = addresses.next().is_some();
        for group in groups {
            let bit = mta_bit(&group);
            filter.table[bit / 32] |= 1 << (bit % 32);
        }
        filter
    }

    /// Passes frames tagged with VLAN `vid` (below 4096), or no longer; returns the VFTA register
    /// that changed and its new bits.
    pub(crate) fn set_vlan(&mut self, vid: u16, pass: bool) -> (usize, u32) {
        let (index, bit) = (usize::from(vid >> 5) % regs::VFTA_ENTRIES, 1 << (vid & 31));
        if pass {
            self.vlans[index] |= bit;
        } else {
            self.vlans[index] &= !bit;
        }
        (index, self.vlans[index])
    }

    /// Whether tagged frames are filtered: some VLAN ID is set, and the interface is not
    /// promiscuous (as in the C driver).
    fn vlan_filtering(&self) -> bool {
        !self.mode.promiscuous && self.vlans.iter().any(|bits| *bits != 0)
    }

    /// The secondary unicast addresses, for entries 1 onwards.
    fn addresses(&self) -> &[MacAddress] {
        &self.addresses[..self.unicast_entries]
    }

    /// RCTL for a running receiver: 2048-byte buffers (BSIZE 0), broadcasts, the CRC stripped,
    /// long packets if asked, and what the mode adds (unicast promiscuous does not pass multicast:
    /// promiscuous sets both bits), and every unicast frame when the secondary addresses did not
    /// fit.
    fn rctl(&self, long_packets: bool) -> u32 {
        let mut rctl = regs::RCTL_EN | regs::RCTL_BAM | regs::RCTL_SECRC;
        if long_packets {
            rctl |= regs::RCTL_LPE;
        }
        if self.mode.promiscuous || self.all_unicast {
            rctl |= regs::RCTL_UPE;
        }
        if self.mode.promiscuous || self.mode.all_multicast {
            rctl |= regs::RCTL_MPE;
        }
        if self.vlan_filtering() {
            rctl |= regs::RCTL_VFE;
        }
        rctl
    }
}

/// Writes `filter` to a running receiver, long packets on or off.
///
/// The stack sets the filter for every multicast group joined or left, which mostly leaves the
/// mode as it was: RCTL is written only when it changes. QEMU's model holds received frames back
/// for a second after every RCTL write (its `flush_queue_timer`).
pub(crate) fn set_receive_filter(bar: &Bar0<'_>, filter: &ReceiveFilter, long_packets: bool) {
    let addresses = filter.addresses();
    for (entry, address) in (1..).zip(addresses) {
        write_receive_address(bar, entry, Some(address));
    }
    clear_receive_addresses(bar, 1 + addresses.len());
    write_multicast_table(bar, &filter.table);
    update_rctl(bar, filter, long_packets);
}

/// Writes VFTA register `index` of `filter` to a running receiver, and RCTL if VLAN filtering
/// turned on or off.
pub(crate) fn set_vlan_filter(
    bar: &Bar0<'_>,
    filter: &ReceiveFilter,
    index: usize,
    long_packets: bool,
) {
    if let Some(bits) = filter.vlans.get(index) {
        // In range: `index` is below `VFTA_ENTRIES`, whose registers lie in BAR 0 (asserted).
        let _ = bar.try_write32(*bits, regs::VFTA + 4 * index);
    }
    update_rctl(bar, filter, long_packets);
}

// Every VFTA register lies within BAR 0.
const _: () = assert!(regs::VFTA + 4 * regs::VFTA_ENTRIES <= regs::BAR0_SIZE);

/// Writes RCTL for `filter` if it changed.
fn update_rctl(bar: &Bar0<'_>, filter: &ReceiveFilter, long_packets: bool) {
    let rctl = filter.rctl(long_packets);
    if bar.read32(regs::RCTL) != rctl {
        bar.write32(rctl, regs::RCTL);
    }
}

/// Turns the MAC's tag stripping and insertion (CTRL.VME) on or off.
pub(crate) fn set_vlan_stripping(bar: &Bar0<'_>, on: bool) {
    let ctrl = bar.read32(regs::CTRL);
    let changed = if on {
        ctrl | regs::CTRL_VME
    } else {
        ctrl & !regs::CTRL_VME
    };
    if changed != ctrl {
        bar.write32(changed, regs::CTRL);
    }
}

/// Writes the whole Multicast Table Array.
fn write_multicast_table(bar: &Bar0<'_>, table: &[u32; regs::MTA_ENTRIES]) {
    for (i, bits) in table.iter().enumerate() {
        bar.write32(*bits, regs::MTA + 4 * i);
    }
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
