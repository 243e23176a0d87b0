// SPDX-License-Identifier: GPL-2.0

//! Submission and completion queue entries, and the commands this driver sends, as the NVM Express
//! Base and NVM Command Set specifications lay them out.

use kernel::{
    prelude::*,
    transmute::{AsBytes, FromBytes},
};

/// A submission queue entry (64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct Command {
    pub(crate) opcode: u8,
    pub(crate) flags: u8,
    pub(crate) cid: u16,
    pub(crate) nsid: u32,
    pub(crate) cdw2: u32,
    pub(crate) cdw3: u32,
    pub(crate) mptr: u64,
    pub(crate) prp1: u64,
    pub(crate) prp2: u64,
    pub(crate) cdw10: u32,
    pub(crate) cdw11: u32,
    pub(crate) cdw12: u32,
    pub(crate) cdw13: u32,
    pub(crate) cdw14: u32,
    pub(crate) cdw15: u32,
}

// SAFETY: `repr(C)` of integers whose sizes add up to 64 with no padding; any bytes are valid.
unsafe impl AsBytes for Command {}
// SAFETY: As above.
unsafe impl FromBytes for Command {}

/// A completion queue entry (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct Completion {
    /// Command specific result (DW0).
    pub(crate) result: u32,
    pub(crate) reserved: u32,
    pub(crate) sq_head: u16,
    pub(crate) sq_id: u16,
    pub(crate) cid: u16,
    /// Phase tag (bit 0) and status field (bits 15:1).
    pub(crate) status: u16,
}

// SAFETY: `repr(C)` of integers, 16 bytes, no padding; any bytes are valid.
unsafe impl AsBytes for Completion {}
// SAFETY: As above.
unsafe impl FromBytes for Completion {}

impl Completion {
    /// The status field without the phase tag: 0 is success.
    pub(crate) fn status_field(&self) -> u16 {
        self.status >> 1
    }
}

/// Command `flags`: PRP or SGL for Data Transfer (PSDT) = SGL, metadata pointer to a buffer.
pub(crate) const FLAGS_PSDT_SGL: u8 = 1 << 6;
/// SGL descriptor type: Data Block.
pub(crate) const SGL_DATA_BLOCK: u64 = 0x0;
/// SGL descriptor type: Last Segment (points at the final list of descriptors).
pub(crate) const SGL_LAST_SEGMENT: u64 = 0x3;

/// Status: Successful Completion.
pub(crate) const SC_SUCCESS: u16 = 0;
/// Status, written by the driver only: the command did not complete because the controller went
/// away or was disabled (the specification's "host aborted command" code).
pub(crate) const SC_HOST_ABORTED: u16 = 0x371;

/// Admin command opcodes.
pub(crate) mod admin {
    pub(crate) const DELETE_IO_SQ: u8 = 0x00;
    pub(crate) const CREATE_IO_SQ: u8 = 0x01;
    pub(crate) const DELETE_IO_CQ: u8 = 0x04;
    pub(crate) const CREATE_IO_CQ: u8 = 0x05;
    pub(crate) const IDENTIFY: u8 = 0x06;
    pub(crate) const ABORT: u8 = 0x08;
    pub(crate) const SET_FEATURES: u8 = 0x09;
    pub(crate) const DOORBELL_BUFFER_CONFIG: u8 = 0x7c;
}

/// NVM command set opcodes.
pub(crate) mod nvm {
    pub(crate) const FLUSH: u8 = 0x00;
    pub(crate) const WRITE: u8 = 0x01;
    pub(crate) const READ: u8 = 0x02;
    pub(crate) const WRITE_ZEROES: u8 = 0x08;
    pub(crate) const DATASET_MANAGEMENT: u8 = 0x09;
}

/// Identify CNS values.
pub(crate) const CNS_NAMESPACE: u32 = 0x00;
pub(crate) const CNS_CONTROLLER: u32 = 0x01;
pub(crate) const CNS_ACTIVE_NAMESPACES: u32 = 0x02;
/// The I/O command set specific Identify Controller (of the NVM command set, CSI 0).
pub(crate) const CNS_NVM_CONTROLLER: u32 = 0x06;

/// Feature identifier: Number of Queues.
pub(crate) const FEAT_NUMBER_OF_QUEUES: u32 = 0x07;

/// Create I/O Completion/Submission Queue: Physically Contiguous.
pub(crate) const QUEUE_PHYS_CONTIG: u32 = 1 << 0;
/// Create I/O Completion Queue: Interrupts Enabled.
pub(crate) const CQ_IRQ_ENABLED: u32 = 1 << 1;

/// Read/Write, command dword 12: Force Unit Access (the data is durable when the command
/// completes, whatever the volatile write cache holds).
pub(crate) const RW_FUA: u32 = 1 << 30;

/// Dataset Management: Attribute - Deallocate.
pub(crate) const DSM_ATTR_DEALLOCATE: u32 = 1 << 2;
/// The most ranges a Dataset Management command holds (its Number of Ranges is 0's based, 8 bits).
pub(crate) const DSM_MAX_RANGES: u16 = 256;
/// The bytes of one Dataset Management range: context attributes, length in logical blocks, and
/// starting LBA.
// Only an assertion uses it, which rustc 1.85 (Debian's 7.3) does not count as a use.
#[allow(dead_code)]
pub(crate) const DSM_RANGE_BYTES: usize = 16;

/// Identify Controller, Optional Admin Command Support: Doorbell Buffer Config.
pub(crate) const OACS_DOORBELL_BUFFER_CONFIG: u16 = 1 << 8;
/// Identify Controller, Optional NVM Command Support: Dataset Management.
pub(crate) const ONCS_DSM: u16 = 1 << 2;
/// Identify Controller, Optional NVM Command Support: Write Zeroes.
pub(crate) const ONCS_WRITE_ZEROES: u16 = 1 << 3;
/// Identify Controller, Volatile Write Cache: present.
pub(crate) const VWC_PRESENT: u8 = 1 << 0;
/// Identify Controller, SGL Support: SGLs supported for the NVM command set (either alignment).
pub(crate) const SGLS_SUPPORTED_MASK: u32 = 0x3;

/// The fields of an Identify Controller data structure (4096 bytes) that this driver uses.
pub(crate) struct IdentifyController {
    /// Maximum Data Transfer Size, as a power of two of the minimum page size; 0 is no limit.
    pub(crate) mdts: u8,
    /// Optional Admin Command Support.
    pub(crate) oacs: u16,
    /// Number of Namespaces: the highest valid NSID.
    pub(crate) nn: u32,
    /// Optional NVM Command Support.
    pub(crate) oncs: u16,
    /// Volatile Write Cache.
    pub(crate) vwc: u8,
    /// SGL Support.
    pub(crate) sgls: u32,
}

impl IdentifyController {
    /// Reads the fields from the raw data structure.
    pub(crate) fn parse(raw: &[u8]) -> Result<Self> {
        if raw.len() < 4096 {
            return Err(EINVAL);
        }
        Ok(Self {
            mdts: raw[77],
            oacs: u16::from_le_bytes([raw[256], raw[257]]),
            nn: u32::from_le_bytes([raw[516], raw[517], raw[518], raw[519]]),
            oncs: u16::from_le_bytes([raw[520], raw[521]]),
            vwc: raw[525],
            sgls: u32::from_le_bytes([raw[536], raw[537], raw[538], raw[539]]),
        })
    }
}

/// The fields of the NVM Command Set Identify Controller data structure that this driver uses.
/// Older controllers do not have the structure: its defaults are all zero, "no limit".
#[derive(Default)]
pub(crate) struct IdentifyNvmController {
    /// Write Zeroes Size Limit, as a power of two of the minimum page size; 0 is no limit.
    pub(crate) wzsl: u8,
    /// Dataset Management Ranges Limit, the most ranges in one command; 0 is no limit (the
    /// command's own, [`DSM_MAX_RANGES`]).
    pub(crate) dmrl: u8,
    /// Dataset Management Range Size Limit, in logical blocks; 0 is no limit.
    pub(crate) dmrsl: u32,
}

impl IdentifyNvmController {
    /// Reads the fields from the raw data structure.
    pub(crate) fn parse(raw: &[u8]) -> Result<Self> {
        if raw.len() < 4096 {
            return Err(EINVAL);
        }
        Ok(Self {
            wzsl: raw[1],
            dmrl: raw[3],
            dmrsl: u32::from_le_bytes([raw[4], raw[5], raw[6], raw[7]]),
        })
    }
}

/// The fields of an Identify Namespace data structure (4096 bytes) that this driver uses.
pub(crate) struct IdentifyNamespace {
    /// Namespace Size, in logical blocks.
    pub(crate) nsze: u64,
    /// log2 of the logical block size of the format in use.
    pub(crate) lba_shift: u32,
    /// Metadata bytes per logical block of the format in use.
    pub(crate) metadata_size: u16,
    /// The deallocate granularity and alignment the namespace prefers (NPDG, NPDA), the larger, in
    /// logical blocks; 1 when it states neither.
    pub(crate) preferred_deallocate_blocks: u32,
    /// What the namespace writes whole even through a power failure, if the block layer can
    /// describe it: not when the atomic boundaries start at an offset (NABO).
    pub(crate) atomic_write: Option<AtomicWrite>,
}

/// A namespace's atomic write unit, in logical blocks.
pub(crate) struct AtomicWrite {
    /// The largest write kept whole: NAWUPF where NSFEAT says the namespace states its own,
    /// otherwise one block, as in the C driver, which does not trust the controller's AWUPF.
    pub(crate) blocks: u32,
    /// The boundary such a write must not cross (NABSPF); 0 for none.
    pub(crate) boundary_blocks: u32,
}

impl IdentifyNamespace {
    /// Reads the fields from the raw data structure.
    pub(crate) fn parse(raw: &[u8]) -> Result<Self> {
        if raw.len() < 4096 {
            return Err(EINVAL);
        }
        let mut nsze = [0u8; 8];
        nsze.copy_from_slice(&raw[0..8]);
        // FLBAS bits 3:0 (and 6:5 for more than 16 formats) select the LBA format.
        let flbas = raw[26];
        let format = usize::from((flbas & 0xf) | ((flbas >> 1) & 0x30));
        let lbaf = 128 + 4 * format.min(63);
        // NSFEAT bits 5:4 (OPTPERF): bit 4 says NPDG is valid, either bit that NPDA is. Bit 5
        // points at NPDGL/NPDAL of the NVM command set's structure, which this driver does not
        // read; the C driver prefers those where they are set.
        let optperf = (raw[24] >> 4) & 0x3;
        let from_zero_based = |at: usize| u32::from(u16::from_le_bytes([raw[at], raw[at + 1]])) + 1;
        let npdg = if optperf & 0x1 != 0 {
            from_zero_based(68)
        } else {
            1
        };
        let npda = if optperf != 0 { from_zero_based(70) } else { 1 };
        let le16 = |at: usize| u16::from_le_bytes([raw[at], raw[at + 1]]);
        // NSFEAT bit 1: NAWUN, NAWUPF and NACWU are the namespace's own.
        let (nawupf, nabspf, nabo) = (le16(36), le16(44), le16(42));
        let own = raw[24] & 0x2 != 0 && nawupf != 0;
        let atomic_write = (nabo == 0).then(|| AtomicWrite {
            blocks: if own { u32::from(nawupf) + 1 } else { 1 },
            boundary_blocks: if own && nabspf != 0 {
                u32::from(nabspf) + 1
            } else {
                0
            },
        });
        Ok(Self {
            nsze: u64::from_le_bytes(nsze),
            lba_shift: u32::from(raw[lbaf + 2]),
            metadata_size: u16::from_le_bytes([raw[lbaf], raw[lbaf + 1]]),
            preferred_deallocate_blocks: npdg.max(npda),
            atomic_write,
        })
    }
}
