// SPDX-License-Identifier: GPL-2.0

//! Checksum and segmentation offloads: which the interface offers the stack, what a frame leaves
//! to the hardware, and the descriptors that tell the hardware so.

use kernel::prelude::*;

use crate::desc::{ContextDesc, DataDesc, LegacyTxDesc, TxDesc};
use crate::netdev::Features;
use crate::regs;
use crate::ring_common::Done;
use crate::skb::Skb;

/// What the interface offers the stack, and all this module handles: checksums of any protocol
/// the stack asks for at offsets the context descriptor takes (`NETIF_F_HW_CSUM`), frames in page
/// fragments (`NETIF_F_SG`), TCP/IPv4 segmentation (`NETIF_F_TSO`), and the receive checksum the
/// copying receive path computes (`NETIF_F_RXCSUM`); off until asked for, frames with their FCS
/// (`NETIF_F_RXFCS`) and frames the MAC would drop (`NETIF_F_RXALL`). Receive addresses take
/// secondary unicast addresses (`IFF_UNICAST_FLT`). 802.1Q tags are inserted and stripped by the
/// MAC and VLAN IDs filtered by its VFTA (`NETIF_F_HW_VLAN_CTAG_TX`, `_RX`, `_FILTER`); VLAN
/// interfaces keep the checksum, scatter-gather and segmentation offloads. All can be toggled with
/// `ethtool -K` but the unicast and VLAN filters, and tag insertion follows stripping: CTRL.VME
/// turns both on.
pub(crate) const FEATURES: Features = Features {
    hw_checksum: true,
    scatter_gather: true,
    tcp_segmentation: true,
    rx_checksum: true,
    rx_fcs_and_all: true,
    unicast_filter: true,
    vlan: true,
};

/// IPv4 header: byte offsets of the fields the segmentation context names or the driver
/// rewrites, and its least length.
const IPV4_TOTAL_LENGTH: usize = 2;
const IPV4_CHECKSUM: usize = 10;
const IPV4_SOURCE: usize = 12;
const IPV4_DESTINATION: usize = 16;
const IPV4_HEADER_MIN: usize = 20;
/// TCP header: byte offset of the checksum.
const TCP_CHECKSUM: usize = 16;
const IPPROTO_TCP: u8 = 6;

/// The checksum work a frame leaves to the hardware.
#[derive(Clone, Copy)]
pub(crate) enum Offload {
    None,
    /// TCP/UDP checksum: where it starts and where it goes.
    Checksum {
        start: u8,
        place: u8,
    },
    /// TCP segmentation, with IP and TCP checksums: the context that says where the headers are.
    Tso(ContextDesc),
}

impl Offload {
    /// What the hardware has to do for `skb`; `Err` for a frame that must be dropped.
    #[inline]
    pub(crate) fn for_frame(skb: &mut Skb) -> Result<Self> {
        if let Some(context) = prepare_tso(skb)? {
            return Ok(Self::Tso(context));
        }
        // Offsets past 255 bytes do not fit in a context descriptor: checksum in software.
        Ok(match skb.checksum_offload() {
            Some((start, place)) => match (u8::try_from(start), u8::try_from(place)) {
                (Ok(start), Ok(place)) => Self::Checksum { start, place },
                _ => {
                    skb.checksum_in_software()?;
                    Self::None
                }
            },
            None => Self::None,
        })
    }

    /// The context descriptor the frame needs before its data, unless the hardware holds it
    /// already: `last` is the checksum context sent last, `None` after a segmentation context,
    /// which replaces it in the hardware. Also the checksum context the hardware holds after it.
    pub(crate) fn context(
        &self,
        last: Option<(u8, u8)>,
    ) -> (Option<ContextDesc>, Option<(u8, u8)>) {
        match *self {
            Self::None => (None, last),
            Self::Checksum { start, place } if last == Some((start, place)) => (None, last),
            Self::Checksum { start, place } => (
                Some(ContextDesc::checksum(start, place)),
                Some((start, place)),
            ),
            Self::Tso(context) => (Some(context), None),
        }
    }

    /// The descriptor of `length` bytes of the frame's data at `addr`; `end` adds EOP and RS to
    /// the frame's last.
    #[inline]
    pub(crate) fn data(&self, addr: u64, length: u16, end: bool, vlan: Option<u16>) -> TxDesc {
        let end = if end {
            regs::TX_CMD_EOP | regs::TX_CMD_RS
        } else {
            0
        };
        // As in the C driver, every descriptor of a tagged frame carries the tag.
        let (vle, tag) = vlan.map_or((0, 0), |tag| (regs::TX_CMD_VLE, tag));
        let cmd = regs::TX_CMD_IFCS | regs::TX_CMD_IDE | end | vle;
        match self {
            Self::None => LegacyTxDesc::new(addr, length, cmd, tag).into(),
            Self::Checksum { .. } => {
                DataDesc::new(addr, length, cmd, regs::TX_POPTS_TXSM, tag).into()
            }
            Self::Tso(_) => DataDesc::new(
                addr,
                length,
                cmd | regs::TX_CMD_TSE,
                regs::TX_POPTS_TXSM | regs::TX_POPTS_IXSM,
                tag,
            )
            .into(),
        }
    }

    /// What a frame of `len` bytes puts on the wire: one frame, or the segments the hardware
    /// cuts, with their headers (counted as the C driver counts them).
    pub(crate) fn wire(&self, len: u32) -> Done {
        match self {
            Self::Tso(context) => {
                // Not 0 (a segmentation skb has an MSS): no division by zero to panic on.
                let mss = u32::from(context.mss.get()).max(1);
                let segments = context.paylen().div_ceil(mss).max(1);
                Done {
                    packets: u64::from(segments),
                    bytes: u64::from(len) + u64::from(segments - 1) * u64::from(context.hdrlen),
                }
            }
            _ => Done {
                packets: 1,
                bytes: u64::from(len),
            },
        }
    }
}

/// For a TCP/IPv4 segmentation offload skb: readies its headers for the hardware, which rewrites
/// the IP length and both checksums in every segment, and returns the context that says where
/// they are. `Ok(None)` for
/// an skb the stack did not leave to segmentation offload.
fn prepare_tso(skb: &mut Skb) -> Result<Option<ContextDesc>> {
    let len = skb.len();
    let Some(gso) = skb.tcp4_segmentation()? else {
        return Ok(None);
    };
    let (network, transport) = (gso.network as usize, gso.transport as usize);
    let header_len = gso.headers.len();
    if transport < network + IPV4_HEADER_MIN || header_len < transport + TCP_CHECKSUM + 2 {
        return Err(EINVAL);
    }
    // The IP checksum over the IP header, the TCP checksum from the TCP header to the end. Offsets
    // past what the context's fields hold: the frame is dropped.
    let context = ContextDesc::tso(
        u8::try_from(network)?,
        u8::try_from(network + IPV4_CHECKSUM)?,
        u16::try_from(transport - 1)?,
        u8::try_from(transport)?,
        u8::try_from(transport + TCP_CHECKSUM)?,
        u8::try_from(header_len)?,
        gso.mss,
        len - header_len as u32,
    );
    let (ip, tcp) = gso.headers.split_at_mut(transport);
    let ip = &mut ip[network..];
    // The hardware fills in the total length and the IP checksum of each segment, and adds the
    // payload to the TCP checksum, which starts as the pseudo-header's sum without a length. In
    // range: the IP header has at least `IPV4_HEADER_MIN` bytes, the TCP header reaches past its
    // checksum (both checked above).
    ip[IPV4_TOTAL_LENGTH..IPV4_TOTAL_LENGTH + 2].fill(0);
    ip[IPV4_CHECKSUM..IPV4_CHECKSUM + 2].fill(0);
    let address = |at: usize| [ip[at], ip[at + 1], ip[at + 2], ip[at + 3]];
    let pseudo = pseudo_header_sum(address(IPV4_SOURCE), address(IPV4_DESTINATION), IPPROTO_TCP);
    tcp[TCP_CHECKSUM..TCP_CHECKSUM + 2].copy_from_slice(&pseudo.to_be_bytes());
    Ok(Some(context))
}

/// The ones' complement sum, folded to 16 bits, of an IPv4 pseudo-header with a zero length.
fn pseudo_header_sum(source: [u8; 4], destination: [u8; 4], protocol: u8) -> u16 {
    let word = |b: [u8; 4], i: usize| u32::from(u16::from_be_bytes([b[i], b[i + 1]]));
    let mut sum = word(source, 0)
        + word(source, 2)
        + word(destination, 0)
        + word(destination, 2)
        + u32::from(protocol);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}
