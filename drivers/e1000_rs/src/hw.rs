// SPDX-License-Identifier: GPL-2.0

//! The controller's registers as the driver uses them: reset, the EEPROM, the rings' base and
//! tails, the receive filter (receive addresses, Multicast Table Array, RCTL), interrupts, link and
//! error counters.

use kernel::{
    io::Io,
    pci,
    time::{delay::fsleep, Delta},
};

use crate::dma_local::DmaAddress;
use crate::netdev::{MacAddress, RxMode};
use crate::regs;
use crate::rx::RxFrames;

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
    /// Receive Undersize Count, Receive Oversize Count. Not the Receive Length Error Count, which
    /// counts the same frames (the C driver leaves it too).
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
    /// The receive length errors, as the C driver counts them: RUC and ROC (RLEC counts the same
    /// frames once more).
    pub(crate) fn all_length_errors(&self) -> u64 {
        self.undersize.wrapping_add(self.oversize)
    }

    /// Adds `sample` to the sums. They wrap, as the C driver's: they count for as long as the
    /// driver is bound, and a sum is no reason to panic.
    fn add(&mut self, sample: &HwStats) {
        let sums = [
            (&mut self.crc_errors, sample.crc_errors),
            (&mut self.missed, sample.missed),
            (&mut self.collisions, sample.collisions),
            (&mut self.undersize, sample.undersize),
            (&mut self.oversize, sample.oversize),
            (&mut self.no_buffer, sample.no_buffer),
            (&mut self.rx_packets, sample.rx_packets),
            (&mut self.tx_packets, sample.tx_packets),
            (&mut self.rx_bytes, sample.rx_bytes),
            (&mut self.tx_bytes, sample.tx_bytes),
            (&mut self.rx_broadcast, sample.rx_broadcast),
            (&mut self.tx_broadcast, sample.tx_broadcast),
            (&mut self.rx_multicast, sample.rx_multicast),
            (&mut self.tx_multicast, sample.tx_multicast),
            (&mut self.tso_contexts, sample.tso_contexts),
            (&mut self.tso_failed, sample.tso_failed),
        ];
        for (sum, value) in sums {
            *sum = sum.wrapping_add(value);
        }
    }
}

/// What a register reads when the device does not answer: removed, behind a bus error or a reset,
/// or with the `fail_mmio_read` fault firing. No register the driver reads holds it otherwise
/// (ICR's and STATUS's reserved bits read 0, and a statistics register would need 2^32 events
/// between two reads).
pub(crate) const ALL_ONES: u32 = u32::MAX;

/// Adds the statistics registers, which clear on read, to `stats`; returns `false` and adds nothing
/// when one of them read all ones: the device did not answer, and every value of the sample is
/// suspect (the C driver skips a sample while the PCI channel is offline).
pub(crate) fn add_statistics(bar: &Bar0<'_>, stats: &mut HwStats) -> bool {
    let mut answered = true;
    let mut read = |offset| {
        let value = read32(bar, offset);
        answered &= value != ALL_ONES;
        u64::from(value)
    };
    // Read in the order written (a struct expression evaluates its fields in order): each
    // octet count's low half before its high half, whose read clears both.
    let sample = HwStats {
        crc_errors: read(regs::CRCERRS),
        missed: read(regs::MPC),
        collisions: read(regs::COLC),
        undersize: read(regs::RUC),
        oversize: read(regs::ROC),
        no_buffer: read(regs::RNBC),
        rx_packets: read(regs::GPRC),
        tx_packets: read(regs::GPTC),
        rx_bytes: read(regs::GORCL) | read(regs::GORCH) << 32,
        tx_bytes: read(regs::GOTCL) | read(regs::GOTCH) << 32,
        rx_broadcast: read(regs::BPRC),
        tx_broadcast: read(regs::BPTC),
        rx_multicast: read(regs::MPRC),
        tx_multicast: read(regs::MPTC),
        tso_contexts: read(regs::TSCTC),
        tso_failed: read(regs::TSCTFC),
    };
    if answered {
        stats.add(&sample);
    }
    answered
}

/// Reads a register. With the `fail_mmio_read` fault (`netdev_shim.c`) firing, the read still
/// reaches the device (a read-to-clear register clears) and then returns all ones, as a device
/// gone from the bus reads. Inlined, so that the offset stays a constant whose range is checked
/// at build time.
#[inline(always)]
pub(crate) fn read32(bar: &Bar0<'_>, offset: usize) -> u32 {
    let value = bar.read32(offset);
    if mmio_read_fails() {
        ALL_ONES
    } else {
        value
    }
}

/// Reads the register at `offset`, known only at run time and checked then: all ones outside
/// BAR 0, as a device that does not answer reads.
pub(crate) fn read32_at(bar: &Bar0<'_>, offset: usize) -> u32 {
    match bar.try_read32(offset) {
        Ok(value) if !mmio_read_fails() => value,
        _ => ALL_ONES,
    }
}

extern "C" {
    fn e1000_rs_fault_init();
    fn e1000_rs_fault_exit();
    #[cfg(CONFIG_FAULT_INJECTION_DEBUG_FS)]
    fn e1000_rs_fail_mmio_read() -> bool;
}

/// Whether the `fail_mmio_read` fault fires for this read.
#[cfg(CONFIG_FAULT_INJECTION_DEBUG_FS)]
#[inline(always)]
fn mmio_read_fails() -> bool {
    // SAFETY: No preconditions; from any context.
    unsafe { e1000_rs_fail_mmio_read() }
}

/// Without the kernel's fault injection there is nothing to ask, and no call on the register
/// paths.
#[cfg(not(CONFIG_FAULT_INJECTION_DEBUG_FS))]
#[inline(always)]
fn mmio_read_fails() -> bool {
    false
}

/// The `fail_mmio_read` fault attribute in debugfs (`e1000_rs/fail_mmio_read`), from module init
/// to module exit; nothing without the kernel's fault injection.
pub(crate) struct MmioReadFault(());

impl MmioReadFault {
    pub(crate) fn create() -> Self {
        // SAFETY: Called once, at module init: the attribute's debugfs files do not exist yet.
        unsafe { e1000_rs_fault_init() };
        Self(())
    }
}

impl Drop for MmioReadFault {
    fn drop(&mut self) {
        // SAFETY: Created once (`create`), removed once, here.
        unsafe { e1000_rs_fault_exit() };
    }
}

/// Changes a register with `change` by reading it and writing it back, unless it reads all ones:
/// written back, every other bit would be set too, CTRL's device and PHY resets among them.
#[inline(always)]
fn modify32(bar: &Bar0<'_>, offset: usize, change: impl FnOnce(u32) -> u32) {
    let value = read32(bar, offset);
    if value == ALL_ONES {
        return;
    }
    let changed = change(value);
    if changed != value {
        bar.write32(changed, offset);
    }
}

/// The link's speed in Mb/s and duplex as the MAC resolved them (STATUS.SPEED, STATUS.FD), while
/// it is up.
pub(crate) fn link_speed_duplex(bar: &Bar0<'_>) -> Option<(u32, bool)> {
    let status = read32(bar, regs::STATUS);
    if status & regs::STATUS_LU == 0 || status == ALL_ONES {
        return None;
    }
    let speed = match (status & regs::STATUS_SPEED_MASK) >> regs::STATUS_SPEED_SHIFT {
        0 => 10,
        1 => 100,
        _ => 1000,
    };
    Some((speed, status & regs::STATUS_FD != 0))
}

/// Has the MAC use a forced speed (`speed`: CTRL's speed bits) and duplex rather than the PHY's:
/// CTRL's force bits, and auto speed detection off.
pub(crate) fn force_speed_duplex(bar: &Bar0<'_>, speed: u32, full_duplex: bool) {
    modify32(bar, regs::CTRL, |ctrl| {
        let mut ctrl = (ctrl | regs::CTRL_FRCSPD | regs::CTRL_FRCDPX)
            & !(regs::CTRL_ASDE | regs::CTRL_SPEED_MASK | regs::CTRL_FD);
        ctrl |= speed & regs::CTRL_SPEED_MASK;
        if full_duplex {
            ctrl |= regs::CTRL_FD;
        }
        ctrl
    });
}

/// Starts the receiver (broadcasts, 2048-byte buffers, the CRC stripped) with descriptors up to
/// `rx_tail` the device's, and the transmitter, for the self-test's loopback through an M88 PHY
/// (which wants loss of signal inverted, CTRL.ILOS).
pub(crate) fn start_loopback(bar: &Bar0<'_>, rx_tail: usize) {
    modify32(bar, regs::CTRL, |ctrl| ctrl | regs::CTRL_ILOS);
    set_rx_tail(bar, rx_tail);
    bar.write32(
        regs::RCTL_EN | regs::RCTL_BAM | regs::RCTL_SECRC,
        regs::RCTL,
    );
    bar.write32(
        regs::TCTL_EN | regs::TCTL_PSP | regs::TCTL_CT_DEFAULT | regs::TCTL_COLD_FULL_DUPLEX,
        regs::TCTL,
    );
}

/// Resets the controller and leaves every interrupt masked, the link set up and no secondary
/// receive address.
pub(crate) fn reset(bar: &Bar0<'_>) {
    bar.write32(u32::MAX, regs::IMC);
    bar.write32(0, regs::RCTL);
    bar.write32(0, regs::TCTL);
    let _ = read32(bar, regs::STATUS);
    fsleep(Delta::from_millis(10));
    // The other bits as they are, unless CTRL reads all ones (see `modify32`): the reset reloads
    // them.
    let ctrl = match read32(bar, regs::CTRL) {
        ALL_ONES => 0,
        ctrl => ctrl,
    };
    bar.write32(ctrl | regs::CTRL_RST, regs::CTRL);
    fsleep(Delta::from_millis(10));
    bar.write32(u32::MAX, regs::IMC);
    let _ = read32(bar, regs::ICR);
    // Speed and duplex from the PHY again: QEMU's model keeps CTRL's force bits over the reset.
    modify32(bar, regs::CTRL, |ctrl| {
        (ctrl | regs::CTRL_SLU | regs::CTRL_ASDE)
            & !(regs::CTRL_FRCSPD | regs::CTRL_FRCDPX | regs::CTRL_ILOS)
    });
    // The reset leaves the secondary addresses (QEMU's model) or undefined ones (the chip).
    clear_receive_addresses(bar, 1);
}

/// Whether the link is up (STATUS.LU); not while the device does not answer.
pub(crate) fn link_up(bar: &Bar0<'_>) -> bool {
    let status = read32(bar, regs::STATUS);
    status & regs::STATUS_LU != 0 && status != ALL_ONES
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

/// Whether the device answers register reads: EECD shows the EEPROM that probe read the Ethernet
/// address from as present (EE_PRES). One that does not answer reads 0 (QEMU's, its Memory Space
/// disabled) or all ones (gone from the bus); `Err` holds what EECD read.
pub(crate) fn check_answers(bar: &Bar0<'_>) -> core::result::Result<(), u32> {
    match read32(bar, regs::EECD) {
        ALL_ONES => Err(ALL_ONES),
        eecd if eecd & regs::EECD_PRES == 0 => Err(eecd),
        _ => Ok(()),
    }
}

/// The receive ring's length in bytes as the device holds it (RDLEN).
pub(crate) fn receive_ring_len(bar: &Bar0<'_>) -> u32 {
    read32(bar, regs::RDLEN)
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

/// Starts the receiver with descriptors up to `rx_tail` the device's, `filter` and `frames`, then
/// the transmitter, with interrupts throttled as the C driver starts them. Interrupts
/// stay masked. After a reset, which cleared the receive filter.
pub(crate) fn start(bar: &Bar0<'_>, rx_tail: usize, filter: &ReceiveFilter, frames: RxFrames) {
    set_rx_tail(bar, rx_tail);
    // Stale causes go before the receiver starts: a frame's RXT0 from then on stays latched (all
    // masked) until interrupts are unmasked.
    let _ = read32(bar, regs::ICR);
    // The reset cleared the other entries.
    for (entry, address) in (1..).zip(filter.addresses()) {
        write_receive_address(bar, entry, Some(address));
    }
    write_multicast_table(bar, &filter.table);
    bar.write32(regs::VET_8021Q, regs::VET);
    for (i, bits) in filter.vlans.iter().enumerate() {
        bar.write32(*bits, regs::VFTA + 4 * i);
    }
    bar.write32(filter.rctl(frames), regs::RCTL);
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

/// Reads and clears the interrupt causes (ICR); 0 when the device raised none, [`ALL_ONES`] when
/// it did not answer.
#[inline]
pub(crate) fn interrupt_causes(bar: &Bar0<'_>) -> u32 {
    read32(bar, regs::ICR)
}

/// Masks every interrupt, and has the device see it before this returns.
#[inline]
pub(crate) fn mask_interrupts(bar: &Bar0<'_>) {
    bar.write32(u32::MAX, regs::IMC);
    flush(bar);
}

/// Has the device see the writes before this returns: they are posted, and reading a register
/// pushes them (the C driver's `E1000_WRITE_FLUSH`).
#[inline]
pub(crate) fn flush(bar: &Bar0<'_>) {
    let _ = read32(bar, regs::STATUS);
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
    /// Frames keep their FCS (`rx-fcs`).
    pub(crate) keep_fcs: bool,
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
            keep_fcs: false,
        }
    }
}

impl ReceiveFilter {
    /// The filter for `mode`, the secondary unicast `addresses` and the multicast `groups`, with
    /// this one's VLAN IDs and FCS setting.
    pub(crate) fn with_addresses(
        &self,
        mode: RxMode,
        mut addresses: impl Iterator<Item = MacAddress>,
        groups: impl Iterator<Item = MacAddress>,
    ) -> Self {
        let mut filter = Self {
            mode,
            vlans: self.vlans,
            keep_fcs: self.keep_fcs,
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

    /// RCTL for a running receiver of `frames`: 2048-byte buffers (BSIZE 0), broadcasts, the CRC
    /// stripped unless kept, long packets if the frames are, bad and MAC control frames and every
    /// VLAN's if they pass (as the C driver's `rx-all`), what the mode adds (unicast promiscuous
    /// does not pass multicast: promiscuous sets both bits), and every unicast frame when the
    /// secondary addresses did not fit.
    fn rctl(&self, frames: RxFrames) -> u32 {
        let mut rctl = regs::RCTL_EN | regs::RCTL_BAM;
        if !self.keep_fcs {
            rctl |= regs::RCTL_SECRC;
        }
        if frames.long() {
            rctl |= regs::RCTL_LPE;
        }
        if frames.bad() {
            rctl |= regs::RCTL_SBP | regs::RCTL_PMCF;
        }
        if self.mode.promiscuous || self.all_unicast {
            rctl |= regs::RCTL_UPE;
        }
        if self.mode.promiscuous || self.mode.all_multicast {
            rctl |= regs::RCTL_MPE;
        }
        if self.vlan_filtering() && !frames.bad() {
            rctl |= regs::RCTL_VFE;
        }
        rctl
    }
}

/// Writes `filter` to a running receiver of `frames`.
///
/// The stack sets the filter for every multicast group joined or left, which mostly leaves the
/// mode as it was: RCTL is written only when it changes. QEMU's model holds received frames back
/// for a second after every RCTL write (its `flush_queue_timer`).
pub(crate) fn set_receive_filter(bar: &Bar0<'_>, filter: &ReceiveFilter, frames: RxFrames) {
    let addresses = filter.addresses();
    for (entry, address) in (1..).zip(addresses) {
        write_receive_address(bar, entry, Some(address));
    }
    clear_receive_addresses(bar, 1 + addresses.len());
    write_multicast_table(bar, &filter.table);
    update_rctl(bar, filter, frames);
}

/// Writes VFTA register `index` of `filter` to a running receiver, and RCTL if VLAN filtering
/// turned on or off.
pub(crate) fn set_vlan_filter(
    bar: &Bar0<'_>,
    filter: &ReceiveFilter,
    index: usize,
    frames: RxFrames,
) {
    if let Some(bits) = filter.vlans.get(index) {
        // In range: `index` is below `VFTA_ENTRIES`, whose registers lie in BAR 0 (asserted).
        let _ = bar.try_write32(*bits, regs::VFTA + 4 * index);
    }
    update_rctl(bar, filter, frames);
}

// Every VFTA register lies within BAR 0.
const _: () = assert!(regs::VFTA + 4 * regs::VFTA_ENTRIES <= regs::BAR0_SIZE);

/// Writes RCTL for `filter` and `frames` if it changed.
pub(crate) fn update_rctl(bar: &Bar0<'_>, filter: &ReceiveFilter, frames: RxFrames) {
    let rctl = filter.rctl(frames);
    if read32(bar, regs::RCTL) != rctl {
        bar.write32(rctl, regs::RCTL);
    }
}

/// Turns the MAC's tag stripping and insertion (CTRL.VME) on or off.
pub(crate) fn set_vlan_stripping(bar: &Bar0<'_>, on: bool) {
    modify32(bar, regs::CTRL, |ctrl| {
        if on {
            ctrl | regs::CTRL_VME
        } else {
            ctrl & !regs::CTRL_VME
        }
    });
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

/// LED Control, as it is.
pub(crate) fn led_control(bar: &Bar0<'_>) -> u32 {
    read32(bar, regs::LEDCTL)
}

/// Sets LED Control.
pub(crate) fn set_led_control(bar: &Bar0<'_>, ledctl: u32) {
    bar.write32(ledctl, regs::LEDCTL);
}

/// The MAC registers of the C driver's `ethtool -d` layout, in its order: CTRL, STATUS, RCTL,
/// RDLEN, RDH, RDT, RDTR, TCTL, TDLEN, TDH, TDT, TIDV, and MANC.
pub(crate) struct MacDump {
    pub(crate) first: [u32; 12],
    pub(crate) manc: u32,
}

/// Reads the registers of [`MacDump`].
pub(crate) fn dump_mac(bar: &Bar0<'_>) -> MacDump {
    MacDump {
        first: [
            read32(bar, regs::CTRL),
            read32(bar, regs::STATUS),
            read32(bar, regs::RCTL),
            read32(bar, regs::RDLEN),
            read32(bar, regs::RDH),
            read32(bar, regs::RDT),
            read32(bar, regs::RDTR),
            read32(bar, regs::TCTL),
            read32(bar, regs::TDLEN),
            read32(bar, regs::TDH),
            read32(bar, regs::TDT),
            read32(bar, regs::TIDV),
        ],
        manc: read32(bar, regs::MANC),
    }
}

/// Sets CTRL's flow control enables: received PAUSE frames obeyed (`rx`), PAUSE frames sent (`tx`).
pub(crate) fn set_flow_control(bar: &Bar0<'_>, rx: bool, tx: bool) {
    modify32(bar, regs::CTRL, |ctrl| {
        let ctrl = ctrl & !(regs::CTRL_RFCE | regs::CTRL_TFCE);
        ctrl | if rx { regs::CTRL_RFCE } else { 0 } | if tx { regs::CTRL_TFCE } else { 0 }
    });
}

/// Programs the PAUSE frames the MAC recognises and sends, after a reset: their address, type and
/// pause time, and, when it is to send them (`tx`), the receive FIFO thresholds: XOFF at 90% of the
/// receive buffer or a longest frame (`max_frame` bytes) below its end, whichever is lower, and
/// XON 8 bytes under that, as the C driver sets them.
pub(crate) fn configure_flow_control(bar: &Bar0<'_>, tx: bool, max_frame: u16) {
    bar.write32(regs::FLOW_CONTROL_ADDRESS_LOW, regs::FCAL);
    bar.write32(regs::FLOW_CONTROL_ADDRESS_HIGH, regs::FCAH);
    bar.write32(regs::FLOW_CONTROL_TYPE, regs::FCT);
    bar.write32(regs::FLOW_CONTROL_PAUSE_TIME, regs::FCTTV);
    let (low, high) = if tx {
        let buffer = regs::RX_PACKET_BUFFER;
        let high = (buffer * 9 / 10).min(buffer.saturating_sub(max_frame.into())) & !7;
        (high.saturating_sub(8) | regs::FCRTL_XONE, high)
    } else {
        (0, 0)
    };
    bar.write32(low, regs::FCRTL);
    bar.write32(high, regs::FCRTH);
}
