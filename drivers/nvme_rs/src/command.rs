// SPDX-License-Identifier: GPL-2.0

//! Submission and completion queue entries, the commands this driver sends, as the NVM Express
//! Base and NVM Command Set specifications lay them out, and the Identify Controller fields it
//! reads.
//!
//! The 64-byte submission queue entry is one type, [`Command`], whose fields only this module
//! writes: each command family is a type of its own (named as in the specifications, with its
//! fields' names) that becomes a [`Command`] through `From`, and the data pointer is set with
//! [`Command::set_prps`] or [`Command::set_sgl`].

use kernel::{
    prelude::*,
    transmute::{AsBytes, FromBytes},
};

use crate::dma_local::DmaAddress;

/// A submission queue entry (64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct Command {
    opcode: u8,
    flags: u8,
    cid: u16,
    nsid: u32,
    cdw2: u32,
    cdw3: u32,
    mptr: u64,
    prp1: u64,
    prp2: u64,
    cdw10: u32,
    cdw11: u32,
    cdw12: u32,
    cdw13: u32,
    cdw14: u32,
    cdw15: u32,
}

// SAFETY: `repr(C)` of integers whose sizes add up to 64 with no padding; any bytes are valid.
unsafe impl AsBytes for Command {}
// SAFETY: As above.
unsafe impl FromBytes for Command {}

const _: () = assert!(core::mem::size_of::<Command>() == 64);

impl Command {
    /// The opcode (for messages).
    pub(crate) fn opcode(&self) -> u8 {
        self.opcode
    }

    /// The command identifier.
    pub(crate) fn cid(&self) -> u16 {
        self.cid
    }

    /// Sets the command identifier, which the completion will carry.
    #[inline]
    pub(crate) fn set_cid(&mut self, cid: u16) {
        self.cid = cid;
    }

    /// Points the command at its data with PRP Entry 1 and PRP Entry 2 (PSDT 00b); 0 for an
    /// entry the data does not need.
    #[inline]
    pub(crate) fn set_prps(&mut self, prp1: u64, prp2: u64) {
        self.prp1 = prp1;
        self.prp2 = prp2;
    }

    /// Points the command at its data with SGL Entry 1 (PSDT 01b: SGLs, the metadata pointer
    /// an address).
    #[inline]
    pub(crate) fn set_sgl(&mut self, sgl1: SglDescriptor) {
        self.flags |= FLAGS_PSDT_SGL;
        [self.prp1, self.prp2] = sgl1.quadwords();
    }

    /// Whether a Read or Write has Force Unit Access set.
    #[inline]
    pub(crate) fn is_fua(&self) -> bool {
        self.cdw12 & RW_FUA != 0
    }

    /// The Number of Ranges of a Dataset Management command; `None` for other commands.
    #[inline]
    pub(crate) fn dsm_ranges(&self) -> Option<u32> {
        (self.opcode == nvm::DATASET_MANAGEMENT).then_some((self.cdw10 & 0xff) + 1)
    }
}

/// A command from user space (the passthrough ioctls), as given: its opcode, NSID, and command
/// dwords 2, 3 and 10 to 15. Its data pointer is the driver's ([`Command::set_prps`]); the flags
/// (PRPs) and the metadata pointer stay zero.
#[derive(Clone, Copy)]
pub(crate) struct UserCommand {
    pub(crate) opcode: u8,
    pub(crate) nsid: u32,
    pub(crate) cdw2: u32,
    pub(crate) cdw3: u32,
    /// Command dwords 10 to 15.
    pub(crate) cdw10_15: [u32; 6],
}

/// Opcodes from here on may be vendor specific: the I/O command sets' are from 80h (the admin set's
/// from C0h, but 80h to BFh are admin commands nobody but `CAP_SYS_ADMIN` may send anyway), as C
/// counts them.
const VENDOR_SPECIFIC_OPCODES: u8 = 0x80;
/// The Fabrics command's opcode.
const FABRICS: u8 = 0x7f;

impl UserCommand {
    /// Whether the command moves data to the controller (the opcode's data transfer bits, 01b or
    /// 11b); otherwise data, if any, comes from it.
    pub(crate) fn to_device(self) -> bool {
        self.opcode & 0x1 != 0
    }

    /// Whether the command is vendor specific or a Fabrics command, whose effects nobody knows.
    pub(crate) fn is_vendor_or_fabrics(&self) -> bool {
        self.opcode >= VENDOR_SPECIFIC_OPCODES || self.opcode == FABRICS
    }

    /// The CNS of an admin Identify; `None` for other commands.
    pub(crate) fn identify_cns(&self) -> Option<u8> {
        (self.opcode == admin::IDENTIFY).then_some(self.cdw10_15[0] as u8)
    }

    /// The Feature Identifier of an admin Set Features; `None` for other commands.
    pub(crate) fn set_features_fid(&self) -> Option<u8> {
        (self.opcode == admin::SET_FEATURES).then_some(self.cdw10_15[0] as u8)
    }
}

impl From<UserCommand> for Command {
    fn from(user: UserCommand) -> Self {
        let [cdw10, cdw11, cdw12, cdw13, cdw14, cdw15] = user.cdw10_15;
        Self {
            opcode: user.opcode,
            nsid: user.nsid,
            cdw2: user.cdw2,
            cdw3: user.cdw3,
            cdw10,
            cdw11,
            cdw12,
            cdw13,
            cdw14,
            cdw15,
            ..Self::default()
        }
    }
}

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

    /// The command specific result of DW0 and DW1, as the 64-bit passthrough ioctls return it.
    pub(crate) fn result64(&self) -> u64 {
        u64::from(self.result) | (u64::from(self.reserved) << 32)
    }
}

/// Command `flags`: PRP or SGL for Data Transfer (PSDT) = SGL, metadata pointer to a buffer.
const FLAGS_PSDT_SGL: u8 = 1 << 6;

/// An SGL descriptor (16 bytes): an address, then the length (bits 31:0) and the descriptor type
/// (bits 63:60) of the second quadword.
#[derive(Clone, Copy)]
pub(crate) struct SglDescriptor {
    address: u64,
    length: u32,
    kind: u64,
}

impl SglDescriptor {
    /// The bytes of one descriptor.
    pub(crate) const BYTES: usize = 16;

    /// A Data Block descriptor: `length` bytes of data at `address`.
    #[inline]
    pub(crate) fn data_block(address: u64, length: u32) -> Self {
        Self {
            address,
            length,
            kind: 0x0,
        }
    }

    /// A Last Segment descriptor: the final list of descriptors, `length` bytes at `address`.
    #[inline]
    pub(crate) fn last_segment(address: u64, length: u32) -> Self {
        Self {
            address,
            length,
            kind: 0x3,
        }
    }

    /// The descriptor as it lies in memory, in two quadwords.
    #[inline]
    pub(crate) fn quadwords(self) -> [u64; 2] {
        [self.address, u64::from(self.length) | (self.kind << 60)]
    }
}

/// Status: Successful Completion.
pub(crate) const SC_SUCCESS: u16 = 0;
/// The status field's Do Not Retry bit: the same command would fail again.
pub(crate) const STATUS_DNR: u16 = 1 << 14;
/// Status, written by the driver only: the command did not complete because the controller went
/// away or was disabled (the specification's "host aborted command" code).
pub(crate) const SC_HOST_ABORTED: u16 = 0x371;

/// Admin command opcodes: those this driver sends, and those whose effects it knows.
pub(crate) mod admin {
    pub(crate) const DELETE_IO_SQ: u8 = 0x00;
    pub(crate) const CREATE_IO_SQ: u8 = 0x01;
    pub(crate) const GET_LOG_PAGE: u8 = 0x02;
    pub(crate) const DELETE_IO_CQ: u8 = 0x04;
    pub(crate) const CREATE_IO_CQ: u8 = 0x05;
    pub(crate) const IDENTIFY: u8 = 0x06;
    pub(crate) const ABORT: u8 = 0x08;
    pub(crate) const SET_FEATURES: u8 = 0x09;
    pub(crate) const ASYNC_EVENT_REQUEST: u8 = 0x0c;
    pub(crate) const NAMESPACE_MANAGEMENT: u8 = 0x0d;
    pub(crate) const NAMESPACE_ATTACHMENT: u8 = 0x15;
    pub(crate) const DOORBELL_BUFFER_CONFIG: u8 = 0x7c;
    pub(crate) const FORMAT_NVM: u8 = 0x80;
    pub(crate) const SECURITY_RECEIVE: u8 = 0x82;
    pub(crate) const SANITIZE: u8 = 0x84;
}

/// NVM command set opcodes: those this driver sends, and those whose effects it knows.
pub(crate) mod nvm {
    pub(crate) const FLUSH: u8 = 0x00;
    pub(crate) const WRITE: u8 = 0x01;
    pub(crate) const READ: u8 = 0x02;
    pub(crate) const WRITE_UNCORRECTABLE: u8 = 0x04;
    pub(crate) const COMPARE: u8 = 0x05;
    pub(crate) const WRITE_ZEROES: u8 = 0x08;
    pub(crate) const DATASET_MANAGEMENT: u8 = 0x09;
}

/// Identify: Controller or Namespace Structure (CNS), the data structure returned.
#[derive(Clone, Copy)]
#[repr(u32)]
pub(crate) enum Cns {
    /// Identify Namespace data structure of the NSID.
    Namespace = 0x00,
    /// Identify Controller data structure.
    Controller = 0x01,
    /// Active Namespace ID list, from above the NSID.
    ActiveNamespaces = 0x02,
    /// Namespace Identification Descriptor list of the NSID.
    NamespaceIdentifiers = 0x03,
    /// The I/O command set specific Identify Controller (of the NVM command set, CSI 0).
    NvmController = 0x06,
}

/// Identify (admin, 06h): the data structure `cns` selects, for namespace `nsid` where it is one
/// of a namespace, into the 4 KiB buffer at `prp1`.
pub(crate) struct Identify {
    pub(crate) cns: Cns,
    pub(crate) nsid: u32,
    pub(crate) prp1: DmaAddress,
}

impl From<Identify> for Command {
    fn from(identify: Identify) -> Self {
        Self {
            opcode: admin::IDENTIFY,
            nsid: identify.nsid,
            prp1: identify.prp1,
            cdw10: identify.cns as u32,
            ..Self::default()
        }
    }
}

/// Log pages this driver reads.
#[derive(Clone, Copy)]
#[repr(u32)]
pub(crate) enum LogPage {
    /// Changed Namespace List: the NSIDs whose attributes changed since it was last read (which
    /// lets the controller report the next change).
    ChangedNamespaces = 0x04,
    /// Commands Supported and Effects (of the NVM command set, CSI 0).
    CommandEffects = 0x05,
}

/// Get Log Page (admin, 02h): the first 4 KiB of log page `lid` into the buffer at `prp1`; of
/// every namespace (NSID FFFFFFFFh) for the Changed Namespace List, as C asks for it.
pub(crate) struct GetLogPage {
    pub(crate) lid: LogPage,
    pub(crate) prp1: DmaAddress,
}

impl From<GetLogPage> for Command {
    fn from(get: GetLogPage) -> Self {
        // Number of Dwords, 0's based, lower half in CDW10 (the upper half, CDW11, stays 0).
        const NUMDL: u32 = (4096 / 4 - 1) << 16;
        Self {
            opcode: admin::GET_LOG_PAGE,
            nsid: match get.lid {
                LogPage::ChangedNamespaces => u32::MAX,
                LogPage::CommandEffects => 0,
            },
            prp1: get.prp1,
            cdw10: get.lid as u32 | NUMDL,
            ..Self::default()
        }
    }
}

/// Set Features (admin, 09h), of the features this driver sets.
pub(crate) enum SetFeatures {
    /// Number of Queues (07h): how many I/O submission queues (NSQR) and completion queues
    /// (NCQR) the driver asks for, at least one each. The command carries them 0's based.
    NumberOfQueues { nsqr: u16, ncqr: u16 },
    /// Asynchronous Event Configuration (0Bh): which events the controller reports (the
    /// `AEC_*` bits).
    AsyncEventConfiguration { events: u32 },
}

/// Feature identifier: Number of Queues.
const FEAT_NUMBER_OF_QUEUES: u32 = 0x07;
/// Feature identifier: Asynchronous Event Configuration.
const FEAT_ASYNC_EVENT_CONFIGURATION: u32 = 0x0b;
/// Asynchronous Event Configuration: Namespace Attribute Notices.
pub(crate) const AEC_NAMESPACE_ATTRIBUTE: u32 = 1 << 8;
/// Identify Controller, Optional Asynchronous Events Supported: Namespace Attribute Notices.
pub(crate) const OAES_NAMESPACE_ATTRIBUTE: u32 = 1 << 8;

/// Asynchronous Event Request (admin, 0Ch): completes when the controller has an event to report,
/// which its result (DW0) describes.
pub(crate) struct AsyncEventRequest;

impl From<AsyncEventRequest> for Command {
    fn from(_: AsyncEventRequest) -> Self {
        Self {
            opcode: admin::ASYNC_EVENT_REQUEST,
            ..Self::default()
        }
    }
}

impl From<SetFeatures> for Command {
    fn from(set: SetFeatures) -> Self {
        match set {
            SetFeatures::NumberOfQueues { nsqr, ncqr } => Self {
                opcode: admin::SET_FEATURES,
                cdw10: FEAT_NUMBER_OF_QUEUES,
                cdw11: (u32::from(ncqr - 1) << 16) | u32::from(nsqr - 1),
                ..Self::default()
            },
            SetFeatures::AsyncEventConfiguration { events } => Self {
                opcode: admin::SET_FEATURES,
                cdw10: FEAT_ASYNC_EVENT_CONFIGURATION,
                cdw11: events,
                ..Self::default()
            },
        }
    }
}

/// Create I/O Completion/Submission Queue: Physically Contiguous.
const QUEUE_PHYS_CONTIG: u32 = 1 << 0;
/// Create I/O Completion Queue: Interrupts Enabled.
const CQ_IRQ_ENABLED: u32 = 1 << 1;

/// Create I/O Completion Queue (admin, 05h): queue `qid` of `qsize` entries (the command carries
/// it 0's based), physically contiguous at `prp1`, interrupting on vector `iv`.
pub(crate) struct CreateIoCompletionQueue {
    pub(crate) qid: u16,
    pub(crate) qsize: u16,
    pub(crate) prp1: DmaAddress,
    pub(crate) iv: u16,
}

impl From<CreateIoCompletionQueue> for Command {
    fn from(create: CreateIoCompletionQueue) -> Self {
        Self {
            opcode: admin::CREATE_IO_CQ,
            prp1: create.prp1,
            cdw10: (u32::from(create.qsize - 1) << 16) | u32::from(create.qid),
            cdw11: (u32::from(create.iv) << 16) | CQ_IRQ_ENABLED | QUEUE_PHYS_CONTIG,
            ..Self::default()
        }
    }
}

/// Create I/O Submission Queue (admin, 01h): queue `qid` of `qsize` entries (the command carries
/// it 0's based), physically contiguous at `prp1`, completing on completion queue `cqid`.
pub(crate) struct CreateIoSubmissionQueue {
    pub(crate) qid: u16,
    pub(crate) qsize: u16,
    pub(crate) prp1: DmaAddress,
    pub(crate) cqid: u16,
}

impl From<CreateIoSubmissionQueue> for Command {
    fn from(create: CreateIoSubmissionQueue) -> Self {
        Self {
            opcode: admin::CREATE_IO_SQ,
            prp1: create.prp1,
            cdw10: (u32::from(create.qsize - 1) << 16) | u32::from(create.qid),
            cdw11: (u32::from(create.cqid) << 16) | QUEUE_PHYS_CONTIG,
            ..Self::default()
        }
    }
}

/// Delete I/O Submission Queue (admin, 00h) `qid`.
pub(crate) struct DeleteIoSubmissionQueue {
    pub(crate) qid: u16,
}

impl From<DeleteIoSubmissionQueue> for Command {
    fn from(delete: DeleteIoSubmissionQueue) -> Self {
        Self {
            opcode: admin::DELETE_IO_SQ,
            cdw10: u32::from(delete.qid),
            ..Self::default()
        }
    }
}

/// Delete I/O Completion Queue (admin, 04h) `qid`.
pub(crate) struct DeleteIoCompletionQueue {
    pub(crate) qid: u16,
}

impl From<DeleteIoCompletionQueue> for Command {
    fn from(delete: DeleteIoCompletionQueue) -> Self {
        Self {
            opcode: admin::DELETE_IO_CQ,
            cdw10: u32::from(delete.qid),
            ..Self::default()
        }
    }
}

/// Abort (admin, 08h) command `cid` of submission queue `sqid`.
pub(crate) struct Abort {
    pub(crate) sqid: u16,
    pub(crate) cid: u16,
}

impl From<Abort> for Command {
    fn from(abort: Abort) -> Self {
        Self {
            opcode: admin::ABORT,
            cdw10: (u32::from(abort.cid) << 16) | u32::from(abort.sqid),
            ..Self::default()
        }
    }
}

/// Doorbell Buffer Config (admin, 7Ch): the Shadow Doorbell buffer (PRP1) and the EventIdx
/// buffer (PRP2), both page aligned.
pub(crate) struct DoorbellBufferConfig {
    pub(crate) shadow_doorbells: DmaAddress,
    pub(crate) event_indexes: DmaAddress,
}

impl From<DoorbellBufferConfig> for Command {
    fn from(config: DoorbellBufferConfig) -> Self {
        Self {
            opcode: admin::DOORBELL_BUFFER_CONFIG,
            prp1: config.shadow_doorbells,
            prp2: config.event_indexes,
            ..Self::default()
        }
    }
}

/// Flush (NVM, 00h) of namespace `nsid`.
pub(crate) struct Flush {
    pub(crate) nsid: u32,
}

impl From<Flush> for Command {
    fn from(flush: Flush) -> Self {
        Self {
            opcode: nvm::FLUSH,
            nsid: flush.nsid,
            ..Self::default()
        }
    }
}

/// The logical blocks of a namespace that a Read, Write or Write Zeroes covers: the Starting LBA
/// and the Number of Logical Blocks, which the command carries 0's based in 16 bits.
///
/// # Invariants
///
/// `nlb` is 1 to 65,536.
#[derive(Clone, Copy)]
pub(crate) struct LbaRange {
    nsid: u32,
    slba: u64,
    nlb: u32,
}

impl LbaRange {
    /// `nlb` blocks of namespace `nsid` from `slba`; `None` when no command can carry that many.
    #[inline]
    pub(crate) fn new(nsid: u32, slba: u64, nlb: u32) -> Option<Self> {
        // INVARIANT: checked.
        (nlb != 0 && nlb <= 0x1_0000).then_some(Self { nsid, slba, nlb })
    }

    /// A command with `opcode` over the range.
    #[inline]
    fn command(self, opcode: u8) -> Command {
        Command {
            opcode,
            nsid: self.nsid,
            cdw10: self.slba as u32,
            cdw11: (self.slba >> 32) as u32,
            cdw12: self.nlb - 1,
            ..Command::default()
        }
    }
}

/// Read/Write, command dword 12: Force Unit Access (the data is durable when the command
/// completes, whatever the volatile write cache holds).
const RW_FUA: u32 = 1 << 30;

/// Read (NVM, 02h) of `range`, with Force Unit Access if `fua`. The data pointer comes after.
pub(crate) struct Read {
    pub(crate) range: LbaRange,
    pub(crate) fua: bool,
}

impl From<Read> for Command {
    #[inline]
    fn from(read: Read) -> Self {
        let mut command = read.range.command(nvm::READ);
        if read.fua {
            command.cdw12 |= RW_FUA;
        }
        command
    }
}

/// Write (NVM, 01h) of `range`, with Force Unit Access if `fua`. The data pointer comes after.
pub(crate) struct Write {
    pub(crate) range: LbaRange,
    pub(crate) fua: bool,
}

impl From<Write> for Command {
    #[inline]
    fn from(write: Write) -> Self {
        let mut command = write.range.command(nvm::WRITE);
        if write.fua {
            command.cdw12 |= RW_FUA;
        }
        command
    }
}

/// Write Zeroes (NVM, 08h) of `range`, without the Deallocate bit.
pub(crate) struct WriteZeroes {
    pub(crate) range: LbaRange,
}

impl From<WriteZeroes> for Command {
    #[inline]
    fn from(write_zeroes: WriteZeroes) -> Self {
        write_zeroes.range.command(nvm::WRITE_ZEROES)
    }
}

/// Dataset Management (NVM, 09h) of namespace `nsid`: `nr` ranges (1 to [`DSM_MAX_RANGES`]; the
/// command carries it 0's based) at `prp1`, with the Attribute - Deallocate (AD) if `ad`.
pub(crate) struct DatasetManagement {
    pub(crate) nsid: u32,
    pub(crate) prp1: DmaAddress,
    pub(crate) nr: u16,
    pub(crate) ad: bool,
}

/// Dataset Management: Attribute - Deallocate.
const DSM_ATTR_DEALLOCATE: u32 = 1 << 2;

impl From<DatasetManagement> for Command {
    #[inline]
    fn from(dsm: DatasetManagement) -> Self {
        Self {
            opcode: nvm::DATASET_MANAGEMENT,
            nsid: dsm.nsid,
            prp1: dsm.prp1,
            cdw10: u32::from(dsm.nr - 1),
            cdw11: if dsm.ad { DSM_ATTR_DEALLOCATE } else { 0 },
            ..Self::default()
        }
    }
}

/// The most ranges a Dataset Management command holds (its Number of Ranges is 0's based, 8 bits).
pub(crate) const DSM_MAX_RANGES: u16 = 256;
/// The bytes of one Dataset Management range: context attributes, length in logical blocks, and
/// starting LBA.
// Only an assertion uses it, which rustc 1.85 (Debian's 7.3) does not count as a use.
#[allow(dead_code)]
pub(crate) const DSM_RANGE_BYTES: usize = 16;

/// A Dataset Management range as it lies in memory, in two quadwords: no context attributes,
/// `nlb` logical blocks, from `slba`.
#[inline]
pub(crate) fn dsm_range(slba: u64, nlb: u32) -> [u64; 2] {
    [u64::from(nlb) << 32, slba]
}

/// Identify Controller, Optional Admin Command Support: Doorbell Buffer Config.
pub(crate) const OACS_DOORBELL_BUFFER_CONFIG: u16 = 1 << 8;
/// Identify Controller, Optional NVM Command Support: Dataset Management.
pub(crate) const ONCS_DSM: u16 = 1 << 2;
/// Identify Controller, Optional NVM Command Support: Write Zeroes.
pub(crate) const ONCS_WRITE_ZEROES: u16 = 1 << 3;
/// Identify Controller, Log Page Attributes: the Commands Supported and Effects log page exists.
pub(crate) const LPA_COMMAND_EFFECTS: u8 = 1 << 1;
/// Identify Controller, Volatile Write Cache: present.
pub(crate) const VWC_PRESENT: u8 = 1 << 0;
/// Identify Controller, SGL Support: SGLs supported for the NVM command set (either alignment).
pub(crate) const SGLS_SUPPORTED_MASK: u32 = 0x3;

/// The fields of an Identify Controller data structure (4096 bytes) that this driver uses.
#[derive(Clone, Copy)]
pub(crate) struct IdentifyController {
    /// PCI Vendor ID.
    pub(crate) vid: u16,
    /// Serial Number, Model Number and Firmware Revision: ASCII, padded with spaces.
    pub(crate) sn: [u8; 20],
    pub(crate) mn: [u8; 40],
    pub(crate) fr: [u8; 8],
    /// Controller ID.
    pub(crate) cntlid: u16,
    /// Optional Asynchronous Events Supported.
    pub(crate) oaes: u32,
    /// Maximum Data Transfer Size, as a power of two of the minimum page size; 0 is no limit.
    pub(crate) mdts: u8,
    /// Optional Admin Command Support.
    pub(crate) oacs: u16,
    /// Log Page Attributes.
    pub(crate) lpa: u8,
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
        let bytes = |from: usize, to: usize| raw.get(from..to).ok_or(EINVAL);
        Ok(Self {
            vid: u16::from_le_bytes([raw[0], raw[1]]),
            sn: bytes(4, 24)?.try_into().map_err(|_| EINVAL)?,
            mn: bytes(24, 64)?.try_into().map_err(|_| EINVAL)?,
            fr: bytes(64, 72)?.try_into().map_err(|_| EINVAL)?,
            cntlid: u16::from_le_bytes([raw[78], raw[79]]),
            oaes: u32::from_le_bytes([raw[92], raw[93], raw[94], raw[95]]),
            mdts: raw[77],
            oacs: u16::from_le_bytes([raw[256], raw[257]]),
            lpa: raw[261],
            nn: u32::from_le_bytes([raw[516], raw[517], raw[518], raw[519]]),
            oncs: u16::from_le_bytes([raw[520], raw[521]]),
            vwc: raw[525],
            sgls: u32::from_le_bytes([raw[536], raw[537], raw[538], raw[539]]),
        })
    }
}

/// The fields of the NVM Command Set Identify Controller data structure that this driver uses.
/// Older controllers do not have the structure: its defaults are all zero, "no limit".
#[derive(Clone, Copy, Default)]
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
