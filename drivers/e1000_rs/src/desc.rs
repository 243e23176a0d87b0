// SPDX-License-Identifier: GPL-2.0

//! The descriptor formats of the 8254x manual (section 3), one type each, with little-endian
//! fields as the device reads them. The transmit ring holds [`TxDesc`] entries, each written from
//! one of the three transmit formats; the device tells them apart by DEXT and DTYP.

use core::mem::size_of;

use kernel::transmute::{AsBytes, FromBytes};

use crate::regs;

/// Defines a little-endian integer type for descriptor fields.
macro_rules! little_endian {
    ($name:ident, $int:ty) => {
        #[doc = concat!("A `", stringify!($int), "` stored little-endian, as the device reads it.")]
        #[repr(transparent)]
        #[derive(Clone, Copy, Default, PartialEq, Eq)]
        pub(crate) struct $name($int);

        impl $name {
            pub(crate) const fn new(value: $int) -> Self {
                Self(value.to_le())
            }

            #[allow(dead_code, reason = "not every width is read back")]
            pub(crate) const fn get(self) -> $int {
                <$int>::from_le(self.0)
            }
        }

        // SAFETY: A transparent integer: no padding.
        unsafe impl AsBytes for $name {}
        // SAFETY: Any bytes are a valid integer.
        unsafe impl FromBytes for $name {}
    };
}
little_endian!(Le16, u16);
little_endian!(Le32, u32);
little_endian!(Le64, u64);

/// Receive descriptor (legacy format, 3.2.3).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct RxDesc {
    pub(crate) buffer_addr: Le64,
    pub(crate) length: Le16,
    /// Packet checksum: QEMU's model leaves it zero, and the driver does not use it.
    pub(crate) checksum: Le16,
    pub(crate) status: u8,
    pub(crate) errors: u8,
    pub(crate) special: Le16,
}

/// A transmit ring entry, in whichever of the three formats below it was written. The device
/// writes back the status byte, the thirteenth in every format, once it is done with the entry.
#[repr(C, align(8))]
#[derive(Clone, Copy, Default)]
pub(crate) struct TxDesc {
    format_specific: [Le32; 3],
    pub(crate) status: u8,
    format_specific_end: [u8; 3],
}

/// Legacy transmit descriptor (3.3.3): the data of a frame without offloads.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct LegacyTxDesc {
    pub(crate) buffer_addr: Le64,
    pub(crate) length: Le16,
    /// Checksum Offset, unused: offloads take the extended formats.
    pub(crate) cso: u8,
    pub(crate) cmd: u8,
    pub(crate) status: u8,
    /// Checksum Start Field, unused.
    pub(crate) css: u8,
    pub(crate) special: Le16,
}

/// TCP/IP context descriptor (3.3.6): where the checksums of the data descriptors that follow
/// start, go and end, and with TSE, how to cut the segments.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct ContextDesc {
    /// IP checksum start, offset and end (inclusive; 0 is the end of the frame).
    pub(crate) ipcss: u8,
    pub(crate) ipcso: u8,
    pub(crate) ipcse: Le16,
    /// TCP/UDP checksum start, offset and end (inclusive; 0 is the end of the frame).
    pub(crate) tucss: u8,
    pub(crate) tucso: u8,
    pub(crate) tucse: Le16,
    /// PAYLEN (bits 19:0), DTYP (23:20, 0 for a context) and TUCMD (31:24).
    pub(crate) paylen_dtyp_tucmd: Le32,
    pub(crate) status: u8,
    /// Header length, repeated in every segment.
    pub(crate) hdrlen: u8,
    /// Maximum segment size: payload bytes per segment.
    pub(crate) mss: Le16,
}

/// TCP/IP data descriptor (3.3.7): frame data to which the last context applies.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct DataDesc {
    pub(crate) buffer_addr: Le64,
    /// DTALEN (bits 19:0), DTYP (23:20, 1 for data) and DCMD (31:24).
    pub(crate) dtalen_dtyp_dcmd: Le32,
    pub(crate) status: u8,
    /// Packet options: which checksums to insert.
    pub(crate) popts: u8,
    pub(crate) special: Le16,
}

/// DTYP of a context descriptor and of a data descriptor, in bits 23:20 of their third word.
const DTYP_CONTEXT: u32 = 0;
const DTYP_DATA: u32 = 1;
/// The widest PAYLEN and DTALEN, 20 bits.
const LENGTH_MASK: u32 = (1 << 20) - 1;

impl LegacyTxDesc {
    /// `length` bytes at `buffer_addr`, with the command bits `cmd` and, with VLE, the 802.1Q tag
    /// `special` to insert.
    pub(crate) fn new(buffer_addr: u64, length: u16, cmd: u8, special: u16) -> Self {
        Self {
            buffer_addr: Le64::new(buffer_addr),
            length: Le16::new(length),
            cmd,
            special: Le16::new(special),
            ..Default::default()
        }
    }
}

impl ContextDesc {
    /// The context of frames whose TCP/UDP checksum starts at `tucss` and goes at `tucso`, to the
    /// end of the frame.
    pub(crate) fn checksum(tucss: u8, tucso: u8) -> Self {
        Self {
            tucss,
            tucso,
            paylen_dtyp_tucmd: Le32::new(DTYP_CONTEXT << 20 | u32::from(regs::TX_CMD_DEXT) << 24),
            ..Default::default()
        }
    }

    /// The context of a TCP/IPv4 segmentation: IP checksum from `ipcss` to `ipcse` stored at
    /// `ipcso`, TCP checksum from `tucss` to the end stored at `tucso`, `hdrlen` bytes of headers,
    /// `paylen` bytes of payload cut into `mss` bytes per segment.
    #[expect(
        clippy::too_many_arguments,
        reason = "the context's fields, as the manual names them"
    )]
    pub(crate) fn tso(
        ipcss: u8,
        ipcso: u8,
        ipcse: u16,
        tucss: u8,
        tucso: u8,
        hdrlen: u8,
        mss: u16,
        paylen: u32,
    ) -> Self {
        let tucmd = regs::TX_CMD_DEXT | regs::TX_CMD_TSE | regs::TX_CMD_IP | regs::TX_CMD_TCP;
        Self {
            ipcss,
            ipcso,
            ipcse: Le16::new(ipcse),
            tucss,
            tucso,
            tucse: Le16::new(0),
            paylen_dtyp_tucmd: Le32::new(
                paylen & LENGTH_MASK | DTYP_CONTEXT << 20 | u32::from(tucmd) << 24,
            ),
            status: 0,
            hdrlen,
            mss: Le16::new(mss),
        }
    }
}

impl ContextDesc {
    /// PAYLEN: the payload bytes of a segmentation.
    pub(crate) fn paylen(&self) -> u32 {
        self.paylen_dtyp_tucmd.get() & LENGTH_MASK
    }
}

impl DataDesc {
    /// `length` bytes at `buffer_addr`, with the command bits `dcmd` (DEXT added), the checksum
    /// options `popts` and, with VLE, the 802.1Q tag `special` to insert.
    pub(crate) fn new(buffer_addr: u64, length: u16, dcmd: u8, popts: u8, special: u16) -> Self {
        let dcmd = dcmd | regs::TX_CMD_DEXT;
        Self {
            buffer_addr: Le64::new(buffer_addr),
            dtalen_dtyp_dcmd: Le32::new(
                u32::from(length) & LENGTH_MASK | DTYP_DATA << 20 | u32::from(dcmd) << 24,
            ),
            popts,
            special: Le16::new(special),
            ..Default::default()
        }
    }
}

/// Implements the byte traits for a descriptor type and its conversion to a ring entry.
macro_rules! descriptor {
    ($($name:ident),*) => {$(
        // SAFETY: `repr(C)` integers adding up to 16 bytes (asserted) with no padding.
        unsafe impl AsBytes for $name {}
        // SAFETY: Any bytes are valid integers.
        unsafe impl FromBytes for $name {}
        const _: () = assert!(size_of::<$name>() == 16);
    )*};
}
descriptor!(RxDesc, TxDesc, LegacyTxDesc, ContextDesc, DataDesc);

/// Converts each transmit format to the ring's entry type.
macro_rules! tx_format {
    ($($name:ident),*) => {$(
        impl From<$name> for TxDesc {
            fn from(desc: $name) -> Self {
                // The same 16 bytes (both asserted above), the status byte in the same place.
                const _: () = assert!(core::mem::offset_of!($name, status) == 12);
                TxDesc::from_bytes_copy(desc.as_bytes()).unwrap_or_default()
            }
        }
    )*};
}
tx_format!(LegacyTxDesc, ContextDesc, DataDesc);
const _: () = assert!(core::mem::offset_of!(TxDesc, status) == 12);
