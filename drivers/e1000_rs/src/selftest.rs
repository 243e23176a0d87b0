// SPDX-License-Identifier: GPL-2.0

//! ethtool's self-test (`ethtool -t DEV [offline|online]`), the tests the C driver runs, in its
//! order and with its result codes: the registers, the EEPROM's checksum, the interrupt, a
//! loopback of frames through the PHY, and the link. The adapter runs them with the interface
//! down and the controller reset between each (`adapter/ethtool.rs`).

use core::sync::atomic::{AtomicU32, Ordering};

use kernel::{
    device::{Bound, Device},
    io::{poll::read_poll_timeout, Io},
    pci,
    prelude::*,
    time::{delay::fsleep, Delta},
};

use crate::desc::{Le16, Le64, LegacyTxDesc, RxDesc, TxDesc};
use crate::dma_local::{self, Coherent, Gfp};
use crate::eeprom;
use crate::hw::{self, Bar0};
use crate::netdev::MacAddress;
use crate::phy;
use crate::regs;
use crate::ring_common::{CopyBuffers, RingSize};
use crate::{dma_read, dma_write};

/// The tests' names as ethtool shows them, in the order of their results.
pub(crate) const NAMES: [&CStr; 5] = [
    c"Register test  (offline)",
    c"Eeprom test    (offline)",
    c"Interrupt test (offline)",
    c"Loopback test  (offline)",
    c"Link test   (on/offline)",
];

/// A register check: writing `write`'s bits (through each test pattern, or as it is) and reading
/// back those of `mask`.
struct RegisterCheck {
    offset: usize,
    mask: u32,
    write: u32,
    /// Through the four test patterns, the whole register read back; or written once and only
    /// the masked bits compared.
    patterns: bool,
}

const fn pattern(offset: usize, mask: u32, write: u32) -> RegisterCheck {
    RegisterCheck {
        offset,
        mask,
        write,
        patterns: true,
    }
}

const fn set(offset: usize, mask: u32, write: u32) -> RegisterCheck {
    RegisterCheck {
        offset,
        mask,
        write,
        patterns: false,
    }
}

/// The registers the C driver checks on an 82543 or later, in its order, with the bits each
/// holds: the flow control, VLAN and ring registers, the controls, the transmit interrupt delay,
/// then (below) every receive address's high half and the Multicast Table Array.
const REGISTER_CHECKS: [RegisterCheck; 22] = [
    pattern(regs::FCAL, 0xffff_ffff, 0xffff_ffff),
    pattern(regs::FCAH, 0x0000_ffff, 0xffff_ffff),
    pattern(regs::FCT, 0x0000_ffff, 0xffff_ffff),
    pattern(regs::VET, 0x0000_ffff, 0xffff_ffff),
    pattern(regs::RDTR, 0x0000_ffff, 0xffff_ffff),
    pattern(regs::RDBAH, 0xffff_ffff, 0xffff_ffff),
    pattern(regs::RDLEN, 0x000f_ff80, 0x000f_ffff),
    pattern(regs::RDH, 0x0000_ffff, 0x0000_ffff),
    pattern(regs::RDT, 0x0000_ffff, 0x0000_ffff),
    pattern(regs::FCRTH, 0x0000_fff8, 0x0000_fff8),
    pattern(regs::FCTTV, 0x0000_ffff, 0x0000_ffff),
    pattern(regs::TIPG, 0x3fff_ffff, 0x3fff_ffff),
    pattern(regs::TDBAH, 0xffff_ffff, 0xffff_ffff),
    pattern(regs::TDLEN, 0x000f_ff80, 0x000f_ffff),
    set(regs::RCTL, 0xffff_ffff, 0x0000_0000),
    set(regs::RCTL, 0x06df_b3fe, 0x003f_fffb),
    set(regs::TCTL, 0xffff_ffff, 0x0000_0000),
    set(regs::RCTL, 0x06df_b3fe, 0xffff_ffff),
    pattern(regs::RDBAL, 0xffff_fff0, 0xffff_ffff),
    pattern(regs::TXCW, 0xc000_ffff, 0x0000_ffff),
    pattern(regs::TDBAL, 0xffff_fff0, 0xffff_ffff),
    pattern(regs::TIDV, 0x0000_ffff, 0x0000_ffff),
];

/// The patterns each pattern check writes (where its `write` lets them).
const TEST_PATTERNS: [u32; 4] = [0x5a5a_5a5a, 0xa5a5_a5a5, 0x0000_0000, 0xffff_ffff];

/// The bits of STATUS that writes must not change (STATUS is read-only).
const STATUS_READ_ONLY: u32 = 0xffff_f833;

/// Checks `check`; the register's offset when it fails, as the C driver reports it.
fn check_register(bar: &Bar0<'_>, check: &RegisterCheck) -> Option<u64> {
    // The offsets lie in BAR 0 (asserted below); a write outside it would be refused.
    let write = |value| {
        let _ = bar.try_write32(value, check.offset);
    };
    let failed = if check.patterns {
        TEST_PATTERNS.iter().any(|pattern| {
            let written = check.write & pattern;
            write(written);
            hw::read32_at(bar, check.offset) != written & check.mask
        })
    } else {
        write(check.write & check.mask);
        hw::read32_at(bar, check.offset) & check.mask != check.write & check.mask
    };
    failed.then_some(check.offset as u64)
}

// Every register the test writes lies within BAR 0.
const _: () = assert!(
    regs::RAH0 + 8 * regs::RAR_ENTRIES <= regs::BAR0_SIZE
        && regs::MTA + 4 * regs::MTA_ENTRIES <= regs::BAR0_SIZE
);

/// The register test: STATUS ignores writes (1 if not), then each register of
/// [`REGISTER_CHECKS`], every receive address's high half and the Multicast Table Array
/// hold what is written (the first failing one's offset). 0 when all pass.
pub(crate) fn registers(bar: &Bar0<'_>) -> u64 {
    let before = hw::read32(bar, regs::STATUS);
    bar.write32(STATUS_READ_ONLY, regs::STATUS);
    if hw::read32(bar, regs::STATUS) & STATUS_READ_ONLY != before & STATUS_READ_ONLY {
        return 1;
    }
    bar.write32(before, regs::STATUS);
    let receive_addresses =
        (0..regs::RAR_ENTRIES).map(|i| pattern(regs::RAH0 + 8 * i, 0x8003_ffff, 0xffff_ffff));
    let multicast_table =
        (0..regs::MTA_ENTRIES).map(|i| pattern(regs::MTA + 4 * i, 0xffff_ffff, 0xffff_ffff));
    let fixed = REGISTER_CHECKS
        .iter()
        .find_map(|check| check_register(bar, check));
    fixed
        .or_else(|| {
            receive_addresses
                .into_iter()
                .find_map(|check| check_register(bar, &check))
        })
        .or_else(|| {
            multicast_table
                .into_iter()
                .find_map(|check| check_register(bar, &check))
        })
        .unwrap_or(0)
}

/// The EEPROM test: 0 when its first 64 words sum to 0xBABA, 2 when not, 1 when one cannot be
/// read.
pub(crate) fn eeprom_checksum(bar: &Bar0<'_>) -> u64 {
    match eeprom::sum(bar) {
        Ok(eeprom::CHECKSUM_SUM) => 0,
        Ok(_) => 2,
        Err(_) => 1,
    }
}

/// Causes the interrupt test raises: the first ten.
const TESTED_CAUSES: u32 = 10;
/// Every interrupt cause.
const ALL_CAUSES: u32 = 0x7fff;

/// The interrupt test: each of the first ten causes, set through ICS, reaches the CPU when
/// enabled (4 if not) and only then (3 when masked, 5 when others come instead). `caught` holds
/// the causes the interrupt handler read while the interface is down; it stays registered
/// throughout. 0 when all pass.
pub(crate) fn interrupts(bar: &Bar0<'_>, caught: &AtomicU32) -> u64 {
    /// Raises `causes` with those of `masked` masked, and returns what reached the handler.
    fn raise(
        bar: &Bar0<'_>,
        caught: &AtomicU32,
        enable: Option<u32>,
        masked: u32,
        causes: u32,
    ) -> u32 {
        caught.store(0, Ordering::Relaxed);
        bar.write32(masked, regs::IMC);
        if let Some(enabled) = enable {
            bar.write32(enabled, regs::IMS);
        }
        bar.write32(causes, regs::ICS);
        hw::flush(bar);
        fsleep(Delta::from_millis(10));
        caught.load(Ordering::Relaxed)
    }
    hw::mask_interrupts(bar);
    fsleep(Delta::from_millis(10));
    let result = (0..TESTED_CAUSES)
        .map(|i| 1u32 << i)
        .find_map(|cause| {
            if raise(bar, caught, None, cause, cause) & cause != 0 {
                Some(3)
            } else if raise(bar, caught, Some(cause), 0, cause) & cause == 0 {
                Some(4)
            } else if raise(bar, caught, None, !cause & ALL_CAUSES, !cause & ALL_CAUSES) != 0 {
                Some(5)
            } else {
                None
            }
        })
        .unwrap_or(0);
    hw::mask_interrupts(bar);
    fsleep(Delta::from_millis(10));
    result
}

/// The loopback test's frames: as many as the C driver sends in a round, in three rounds through
/// rings of twice that, so that they wrap.
const LOOPBACK_FRAMES: usize = 64;
const LOOPBACK_ROUNDS: usize = 3;
const LOOPBACK_FRAME_LEN: usize = 1024;
/// Receive buffers of 2048 bytes (RCTL.BSIZE 0).
const LOOPBACK_BUFFER_LEN: usize = 2048;
/// An EtherType for local experiments (IEEE 802), as the frames' type.
const LOOPBACK_ETHERTYPE: [u8; 2] = [0x88, 0xb5];

/// Byte `at` of loopback frame `n`: a broadcast from `mac` with a payload that differs per frame.
fn loopback_byte(mac: &MacAddress, n: usize, at: usize) -> u8 {
    match at {
        0..6 => 0xff,
        6..12 => mac[at - 6],
        12..14 => LOOPBACK_ETHERTYPE[at - 12],
        _ => n.wrapping_mul(7).wrapping_add(at) as u8,
    }
}

/// Undoes the loopback on every way out of the test, before its rings are freed: the controller
/// reset (no more DMA), bus mastering off, the PHY out of loopback.
struct LoopbackCleanup<'a, 'bound> {
    pdev: &'a pci::Device<Bound>,
    bar: &'a Bar0<'bound>,
}

impl Drop for LoopbackCleanup<'_, '_> {
    fn drop(&mut self) {
        hw::reset(self.bar);
        dma_local::stop_bus_master(self.pdev);
        let _ = phy::reset(self.bar, regs::MII_CONTROL_LOOPBACK, 0);
    }
}

/// The loopback test: frames sent through the PHY in loopback (1000 Mb/s full duplex forced)
/// come back whole and in order, in three rounds. 0 when they do; 13 when one is missing or
/// differs (as the C driver answers); 1 when the rings cannot be allocated. Called with the
/// controller reset and bus mastering off, and leaves them so.
pub(crate) fn loopback(pdev: &pci::Device<Bound>, bar: &Bar0<'_>, mac: &MacAddress) -> Result<u64> {
    let dev: &Device<Bound> = pdev.as_ref();
    let Ok(ring) = RingSize::new(2 * LOOPBACK_FRAMES as u32) else {
        return Ok(1);
    };
    let count = ring.get();
    let (Ok(mut tx), Ok(mut rx), Ok(mut tx_buffers), Ok(rx_buffers)) = (
        Coherent::<TxDesc>::alloc(dev, count, Gfp::KERNEL),
        Coherent::<RxDesc>::alloc(dev, count, Gfp::KERNEL),
        CopyBuffers::new(dev, ring, LOOPBACK_FRAME_LEN),
        CopyBuffers::new(dev, ring, LOOPBACK_BUFFER_LEN),
    ) else {
        return Ok(1);
    };
    let mut frame = KVec::from_elem(0u8, LOOPBACK_FRAME_LEN, GFP_KERNEL)?;
    let mut received = KVec::from_elem(0u64, LOOPBACK_BUFFER_LEN / 8, GFP_KERNEL)?;
    for i in 0..count {
        let buffer = RxDesc {
            buffer_addr: Le64::new(rx_buffers.dma(i)?),
            ..Default::default()
        };
        rx.write(i, buffer)?;
    }
    // Declared after the rings: dropped, and the device stopped, before they are freed.
    let _cleanup = LoopbackCleanup { pdev, bar };
    hw::configure_transmit(bar, tx.dma_handle(), count * size_of::<TxDesc>());
    hw::configure_receive(bar, rx.dma_handle(), count * size_of::<RxDesc>());
    if hw::receive_ring_len(bar) as usize != count * size_of::<RxDesc>() {
        // A device that does not answer is not let near memory.
        return Ok(13);
    }
    phy::write(
        bar,
        regs::MII_CONTROL,
        regs::MII_CONTROL_LOOPBACK | regs::MII_CONTROL_SPEED_1000 | regs::MII_CONTROL_FULL_DUPLEX,
    )?;
    hw::force_speed_duplex(bar, regs::CTRL_SPEED_1000, true);
    hw::start_loopback(bar, count - 1);
    dma_local::resume_bus_master(pdev);
    // QEMU's model drops what arrives for a second after each RCTL write (its flush timer); the
    // chip takes microseconds. The C driver's test waits 200 ms, and fails there.
    fsleep(Delta::from_millis(1100));
    let (mut sent, mut checked) = (0, 0);
    for _ in 0..LOOPBACK_ROUNDS {
        for _ in 0..LOOPBACK_FRAMES {
            let i = sent % count;
            for (at, byte) in frame.iter_mut().enumerate() {
                *byte = loopback_byte(mac, sent, at);
            }
            // SAFETY: `frame` holds `LOOPBACK_FRAME_LEN` bytes.
            unsafe { tx_buffers.fill(i, frame.as_ptr(), LOOPBACK_FRAME_LEN) }?;
            let desc = LegacyTxDesc::new(
                tx_buffers.dma(i)?,
                LOOPBACK_FRAME_LEN as u16,
                regs::TX_CMD_EOP | regs::TX_CMD_IFCS | regs::TX_CMD_RS,
                0,
            );
            tx.write(i, desc.into())?;
            sent += 1;
        }
        // The descriptors before the device reads them (the MMIO write orders after them).
        hw::set_tx_tail(bar, sent % count);
        for _ in 0..LOOPBACK_FRAMES {
            let i = checked % count;
            let came = read_poll_timeout(
                || Ok(dma_read!(rx, i, status).unwrap_or(0)),
                |status| status & regs::DESC_STATUS_DD != 0,
                Delta::from_millis(1),
                Delta::from_secs(2),
            );
            // The rest of the descriptor, and the buffer, after its status.
            dma_local::dma_rmb();
            let length = dma_read!(rx, i, length).map_or(0, Le16::get);
            if came.is_err() || usize::from(length) != LOOPBACK_FRAME_LEN {
                return Ok(13);
            }
            // SAFETY: `received` holds `LOOPBACK_BUFFER_LEN` bytes, a multiple of 8, at least
            // `LOOPBACK_FRAME_LEN`.
            unsafe { rx_buffers.copy_piece(i, received.as_mut_ptr().cast(), LOOPBACK_FRAME_LEN) }?;
            let same = received
                .iter()
                .flat_map(|word| word.to_ne_bytes())
                .take(LOOPBACK_FRAME_LEN)
                .enumerate()
                .all(|(at, byte)| byte == loopback_byte(mac, checked, at));
            if !same {
                return Ok(13);
            }
            // The buffer back to the device, behind the last one it has.
            dma_write!(rx, i, status, 0)?;
            hw::set_rx_tail(bar, i);
            checked += 1;
        }
    }
    Ok(0)
}
