// SPDX-License-Identifier: GPL-2.0

//! Controller registers in BAR0, named as the NVM Express Base Specification (section 3.1) names
//! them.

use kernel::pci;

/// BAR0, with the registers below at compile-time checked offsets.
pub(crate) type Bar0<'bound> = pci::Bar<'bound, { BAR0_SIZE }>;

/// Bytes of BAR0 mapped with compile-time checked offsets: the registers below and the admin
/// queue's doorbells. I/O queue doorbells are reached with run-time checked accesses.
pub(crate) const BAR0_SIZE: usize = 0x1008;

/// Controller Capabilities (64 bits).
pub(crate) const CAP: usize = 0x00;
/// Version: major in bits 31:16, minor in 15:8.
pub(crate) const VS: usize = 0x08;
/// Version 1.2, the first whose Identify takes a whole byte of CNS.
pub(crate) const VS_1_2: u32 = 0x0001_0200;
/// NVMe 1.3: the Namespace Identification Descriptor list.
pub(crate) const VS_1_3: u32 = 0x0001_0300;
/// Controller Configuration.
pub(crate) const CC: usize = 0x14;
/// Controller Status.
pub(crate) const CSTS: usize = 0x1c;
/// Admin Queue Attributes.
pub(crate) const AQA: usize = 0x24;
/// Admin Submission Queue Base Address (64 bits).
pub(crate) const ASQ: usize = 0x28;
/// Admin Completion Queue Base Address (64 bits).
pub(crate) const ACQ: usize = 0x30;
/// Submission Queue 0 Tail Doorbell; every other doorbell follows at the doorbell stride.
pub(crate) const SQ0TDBL: usize = 0x1000;

/// The fields of `CAP`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cap(pub(crate) u64);

impl Cap {
    /// Maximum Queue Entries Supported, as a count (the register holds it 0's based).
    pub(crate) fn max_queue_entries(self) -> u32 {
        (self.0 & 0xffff) as u32 + 1
    }

    /// Timeout: the worst time for `CSTS.RDY` to follow `CC.EN`, in milliseconds.
    pub(crate) fn timeout_ms(self) -> u32 {
        ((self.0 >> 24) & 0xff) as u32 * 500
    }

    /// Doorbell Stride, in bytes.
    pub(crate) fn doorbell_stride(self) -> usize {
        4 << ((self.0 >> 32) & 0xf)
    }

    /// Command Sets Supported: the NVM command set.
    pub(crate) fn nvm_command_set(self) -> bool {
        (self.0 >> 37) & 1 != 0
    }

    /// Memory Page Size Minimum, in bytes.
    pub(crate) fn min_page_size(self) -> usize {
        1 << (12 + ((self.0 >> 48) & 0xf))
    }
}

/// `CC.EN`: enable.
pub(crate) const CC_EN: u32 = 1 << 0;
/// `CC.CSS` = NVM command set.
pub(crate) const CC_CSS_NVM: u32 = 0 << 4;
/// `CC.MPS` for 4 KiB pages (2 ^ (12 + MPS)).
pub(crate) const CC_MPS_4K: u32 = 0 << 7;
/// `CC.AMS` = round robin.
pub(crate) const CC_AMS_RR: u32 = 0 << 11;
/// `CC.SHN` = normal shutdown.
pub(crate) const CC_SHN_NORMAL: u32 = 1 << 14;
/// `CC.IOSQES`: 64-byte submission queue entries (2 ^ 6).
pub(crate) const CC_IOSQES: u32 = 6 << 16;
/// `CC.IOCQES`: 16-byte completion queue entries (2 ^ 4).
pub(crate) const CC_IOCQES: u32 = 4 << 20;

/// `CSTS.RDY`: ready.
pub(crate) const CSTS_RDY: u32 = 1 << 0;
/// `CSTS.CFS`: controller fatal status.
pub(crate) const CSTS_CFS: u32 = 1 << 1;
/// `CSTS.SHST` field mask.
pub(crate) const CSTS_SHST_MASK: u32 = 3 << 2;
/// `CSTS.SHST` = shutdown processing complete.
pub(crate) const CSTS_SHST_COMPLETE: u32 = 2 << 2;
/// What an MMIO read returns once the device is gone from the bus.
pub(crate) const GONE: u32 = u32::MAX;

/// The memory page size this driver programs into `CC.MPS`, and the unit of PRP entries.
pub(crate) const PAGE_SIZE: usize = 4096;

/// The Submission Queue `qid` Tail Doorbell.
pub(crate) fn sq_tail_doorbell(qid: u16, stride: usize) -> usize {
    SQ0TDBL + 2 * usize::from(qid) * stride
}

/// The Completion Queue `qid` Head Doorbell.
pub(crate) fn cq_head_doorbell(qid: u16, stride: usize) -> usize {
    SQ0TDBL + (2 * usize::from(qid) + 1) * stride
}
