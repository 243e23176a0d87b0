// SPDX-License-Identifier: GPL-2.0

//! Registers of the Intel 82540EM, named as Intel's "PCI/PCI-X Family of Gigabit Ethernet
//! Controllers Software Developer's Manual" (8254x) names them.

/// Size of the register space in BAR0.
pub(crate) const BAR0_SIZE: usize = 0x20000;

/// Device Control.
pub(crate) const CTRL: usize = 0x0000;
/// Device Status.
pub(crate) const STATUS: usize = 0x0008;
/// VLAN Ether Type: the tag protocol identifier the MAC recognises and inserts.
pub(crate) const VET: usize = 0x0038;
pub(crate) const VET_8021Q: u32 = 0x8100;
/// EEPROM/Flash Control and Data: the Microwire lines (clock, chip select, data in and out), the
/// request for them and the MAC's grant, and EEPROM Present.
pub(crate) const EECD: usize = 0x0010;
pub(crate) const EECD_SK: u32 = 1 << 0;
pub(crate) const EECD_CS: u32 = 1 << 1;
pub(crate) const EECD_DI: u32 = 1 << 2;
pub(crate) const EECD_DO: u32 = 1 << 3;
pub(crate) const EECD_REQ: u32 = 1 << 6;
pub(crate) const EECD_GNT: u32 = 1 << 7;
pub(crate) const EECD_PRES: u32 = 1 << 8;
/// EEPROM Read.
pub(crate) const EERD: usize = 0x0014;
/// Interrupt Cause Read (read to clear).
pub(crate) const ICR: usize = 0x00c0;
/// Interrupt Cause Set: sets causes as if the device had.
pub(crate) const ICS: usize = 0x00c8;
/// Interrupt Throttling Rate, in units of 256 ns.
pub(crate) const ITR: usize = 0x00c4;
/// Interrupt Mask Set/Read.
pub(crate) const IMS: usize = 0x00d0;
/// Interrupt Mask Clear.
pub(crate) const IMC: usize = 0x00d8;
/// Receive Control.
pub(crate) const RCTL: usize = 0x0100;
/// Transmit Control.
pub(crate) const TCTL: usize = 0x0400;
/// Transmit Inter Packet Gap.
pub(crate) const TIPG: usize = 0x0410;
/// Receive Descriptor Base Address Low/High, Length, Head, Tail, Delay Timer.
pub(crate) const RDBAL: usize = 0x2800;
pub(crate) const RDBAH: usize = 0x2804;
pub(crate) const RDLEN: usize = 0x2808;
pub(crate) const RDH: usize = 0x2810;
pub(crate) const RDT: usize = 0x2818;
pub(crate) const RDTR: usize = 0x2820;
/// Transmit Descriptor Base Address Low/High, Length, Head, Tail, Interrupt Delay Value.
pub(crate) const TDBAL: usize = 0x3800;
pub(crate) const TDBAH: usize = 0x3804;
pub(crate) const TDLEN: usize = 0x3808;
pub(crate) const TDH: usize = 0x3810;
pub(crate) const TDT: usize = 0x3818;
pub(crate) const TIDV: usize = 0x3820;
/// Transmit Configuration Word (the 1000BASE-X auto-negotiation word; a copper link leaves it).
pub(crate) const TXCW: usize = 0x0178;
/// Multicast Table Array: 128 registers.
pub(crate) const MTA: usize = 0x5200;
pub(crate) const MTA_ENTRIES: usize = 128;
/// VLAN Filter Table Array: 128 registers, a bit per VLAN ID (register `vid >> 5`, bit
/// `vid & 31`).
pub(crate) const VFTA: usize = 0x5600;
pub(crate) const VFTA_ENTRIES: usize = 128;
/// Receive Address Low/High of entry 0; entry `n` is `8 * n` further. Entry 0 holds the station's
/// own address, entries 1-14 the secondary unicast addresses the stack asks for. The chip has 16;
/// like the C driver, this one leaves the last to manageability firmware.
pub(crate) const RAL0: usize = 0x5400;
pub(crate) const RAH0: usize = 0x5404;
pub(crate) const RAR_ENTRIES: usize = 15;

/// Statistics (clear on read): CRC Error Count, Missed Packets Count, Collision Count, Good Packets
/// Received and Transmitted, Broadcast and Multicast Packets
/// Received, Good Octets Received and Transmitted (low and high halves), Receive No Buffers Count,
/// Receive Undersize Count, Receive Oversize Count, Multicast and Broadcast Packets Transmitted,
/// TCP Segmentation Context Transmitted and Transmit Fail.
pub(crate) const CRCERRS: usize = 0x4000;
pub(crate) const MPC: usize = 0x4010;
pub(crate) const COLC: usize = 0x4028;
pub(crate) const GPRC: usize = 0x4074;
pub(crate) const BPRC: usize = 0x4078;
pub(crate) const MPRC: usize = 0x407c;
pub(crate) const GPTC: usize = 0x4080;
pub(crate) const GORCL: usize = 0x4088;
pub(crate) const GORCH: usize = 0x408c;
pub(crate) const GOTCL: usize = 0x4090;
pub(crate) const GOTCH: usize = 0x4094;
pub(crate) const RNBC: usize = 0x40a0;
pub(crate) const RUC: usize = 0x40a4;
pub(crate) const ROC: usize = 0x40ac;
pub(crate) const MPTC: usize = 0x40f0;
pub(crate) const BPTC: usize = 0x40f4;
pub(crate) const TSCTC: usize = 0x40f8;
pub(crate) const TSCTFC: usize = 0x40fc;

/// CTRL: Set Link Up, Auto-Speed Detection Enable, Device Reset.
pub(crate) const CTRL_SLU: u32 = 1 << 6;
pub(crate) const CTRL_ASDE: u32 = 1 << 5;
pub(crate) const CTRL_RST: u32 = 1 << 26;
/// CTRL: VLAN Mode Enable: tags are stripped from received frames into their descriptor, and
/// inserted into sent frames from theirs.
pub(crate) const CTRL_VME: u32 = 1 << 30;
/// CTRL: a forced link's Full Duplex and speed (00 10 Mb/s, 01 100 Mb/s, 10 1000 Mb/s), which
/// Force Speed and Force Duplex make the MAC use instead of the PHY's; Invert Loss-of-Signal, which
/// an M88 PHY in loopback needs.
pub(crate) const CTRL_FD: u32 = 1 << 0;
pub(crate) const CTRL_SPEED_MASK: u32 = 3 << 8;
pub(crate) const CTRL_SPEED_100: u32 = 1 << 8;
pub(crate) const CTRL_SPEED_1000: u32 = 2 << 8;
pub(crate) const CTRL_FRCSPD: u32 = 1 << 11;
pub(crate) const CTRL_FRCDPX: u32 = 1 << 12;
pub(crate) const CTRL_ILOS: u32 = 1 << 7;

/// STATUS: Full Duplex, Link Up, and the resolved speed (00 10 Mb/s, 01 100 Mb/s, 1x 1000 Mb/s).
pub(crate) const STATUS_FD: u32 = 1 << 0;
pub(crate) const STATUS_LU: u32 = 1 << 1;
pub(crate) const STATUS_SPEED_MASK: u32 = 0b11 << 6;
pub(crate) const STATUS_SPEED_SHIFT: u32 = 6;

/// EERD: Start Read, Read Done, address and data fields.
pub(crate) const EERD_START: u32 = 1 << 0;
pub(crate) const EERD_DONE: u32 = 1 << 4;
pub(crate) const EERD_ADDR_SHIFT: u32 = 8;
pub(crate) const EERD_DATA_SHIFT: u32 = 16;

/// Interrupt causes (ICR, IMS, IMC): Transmit Descriptor Written Back, Link Status Change, Receive
/// Sequence Error, Receive Descriptor Minimum Threshold, Receiver Overrun, Receiver Timer
/// Interrupt.
pub(crate) const INT_TXDW: u32 = 1 << 0;
pub(crate) const INT_LSC: u32 = 1 << 2;
pub(crate) const INT_RXSEQ: u32 = 1 << 3;
pub(crate) const INT_RXDMT0: u32 = 1 << 4;
pub(crate) const INT_RXO: u32 = 1 << 6;
pub(crate) const INT_RXT0: u32 = 1 << 7;
/// The causes this driver enables whenever it enables interrupts; transmit completions (TXDW) only
/// when a poll leaves frames the device has not sent.
pub(crate) const INT_ENABLED: u32 = INT_LSC | INT_RXSEQ | INT_RXDMT0 | INT_RXO | INT_RXT0;

/// RCTL: Receiver Enable, Broadcast Accept Mode, Strip Ethernet CRC; buffer size 2048 is BSIZE = 0.
pub(crate) const RCTL_EN: u32 = 1 << 1;
/// RCTL: Unicast and Multicast Promiscuous Enabled.
pub(crate) const RCTL_UPE: u32 = 1 << 3;
pub(crate) const RCTL_MPE: u32 = 1 << 4;
pub(crate) const RCTL_BAM: u32 = 1 << 15;
pub(crate) const RCTL_SECRC: u32 = 1 << 26;
/// RCTL: Store Bad Packets (damaged and too long frames pass) and Pass MAC Control Frames.
pub(crate) const RCTL_SBP: u32 = 1 << 2;
pub(crate) const RCTL_PMCF: u32 = 1 << 23;
/// RCTL: VLAN Filter Enable (tagged frames pass only for VLAN IDs set in the VFTA), Canonical Form
/// Indicator Enable (left clear: the CFI bit does not filter).
pub(crate) const RCTL_VFE: u32 = 1 << 18;
/// RCTL: Long Packet Enable: frames longer than [`MAX_FRAME_LEN`] pass, in as many buffers as
/// they fill.
pub(crate) const RCTL_LPE: u32 = 1 << 5;
/// The longest frame the MAC passes with RCTL.LPE clear: 1518 bytes and a VLAN tag. It drops longer
/// ones and counts them in ROC.
pub(crate) const MAX_FRAME_LEN: u16 = 1522;
/// Receive buffer size, 2048 bytes, as RCTL.BSIZE = 0 (with BSEX clear) selects.
pub(crate) const RX_BUFFER_SIZE: u16 = 2048;
const _: () = assert!(MAX_FRAME_LEN <= RX_BUFFER_SIZE);

/// TCTL: Transmit Enable, Pad Short Packets, Collision Threshold, Collision Distance (full duplex).
pub(crate) const TCTL_EN: u32 = 1 << 1;
pub(crate) const TCTL_PSP: u32 = 1 << 3;
pub(crate) const TCTL_CT_DEFAULT: u32 = 0x0f << 4;
pub(crate) const TCTL_COLD_FULL_DUPLEX: u32 = 0x40 << 12;

/// TIPG for copper: IPGT 10, IPGR1 8, IPGR2 6.
pub(crate) const TIPG_COPPER: u32 = 10 | (8 << 10) | (6 << 20);

/// RAH: Address Valid.
pub(crate) const RAH_AV: u32 = 1 << 31;

/// Receive descriptor errors that make a frame bad: CRC or Alignment Error, Symbol Error,
/// Sequence Error, Carrier Extension Error, RX Data Error (the C driver's
/// `E1000_RXD_ERR_FRAME_ERR_MASK`). Not the IP and TCP/UDP Checksum Errors (bits 6 and 5), which
/// leave the checksum to the stack.
pub(crate) const RX_ERR_FRAME: u8 = RX_ERR_CE | RX_ERR_SE | RX_ERR_SEQ | RX_ERR_CXE | RX_ERR_RXE;
pub(crate) const RX_ERR_CE: u8 = 1 << 0;
pub(crate) const RX_ERR_SE: u8 = 1 << 1;
pub(crate) const RX_ERR_SEQ: u8 = 1 << 2;
pub(crate) const RX_ERR_CXE: u8 = 1 << 4;
pub(crate) const RX_ERR_RXE: u8 = 1 << 7;

/// Descriptor status: Descriptor Done, End Of Packet.
pub(crate) const DESC_STATUS_DD: u8 = 1 << 0;
pub(crate) const DESC_STATUS_EOP: u8 = 1 << 1;
/// Receive descriptor status: the frame's 802.1Q tag was stripped into its special field.
pub(crate) const RX_STATUS_VP: u8 = 1 << 3;
/// Transmit descriptor command: End Of Packet, Insert FCS, Report Status.
pub(crate) const TX_CMD_EOP: u8 = 1 << 0;
pub(crate) const TX_CMD_IFCS: u8 = 1 << 1;
pub(crate) const TX_CMD_RS: u8 = 1 << 3;
/// Transmit descriptor command: VLAN Packet Enable: insert the tag in the special field.
pub(crate) const TX_CMD_VLE: u8 = 1 << 6;
/// Transmit descriptor command: Interrupt Delay Enable (the write-back interrupt waits for TIDV).
pub(crate) const TX_CMD_IDE: u8 = 1 << 7;

/// Descriptor extension (context and extended data descriptors), in the command byte.
pub(crate) const TX_CMD_DEXT: u8 = 1 << 5;
/// Context and extended data descriptors: TCP Segmentation Enable; context: the frame is IPv4 (IP)
/// and TCP (TCP).
pub(crate) const TX_CMD_TSE: u8 = 1 << 2;
pub(crate) const TX_CMD_IP: u8 = 1 << 1;
pub(crate) const TX_CMD_TCP: u8 = 1 << 0;
/// Extended data descriptor options (POPTS): insert the TCP/UDP checksum set up by the context.
pub(crate) const TX_POPTS_TXSM: u8 = 1 << 1;
/// Extended data descriptor options (POPTS): insert the IP checksum set up by the context.
pub(crate) const TX_POPTS_IXSM: u8 = 1 << 0;

/// EEPROM words 0 to 2 hold the Ethernet address.
pub(crate) const EEPROM_MAC_WORDS: u16 = 3;
/// EEPROM word 4, ID LED Settings: a 4-bit code per LED (LED0 lowest) saying what it shows in the
/// two identification modes; 0x0000 and 0xFFFF mean none is set.
pub(crate) const EEPROM_ID_LED_SETTINGS: u16 = 0x04;
/// EEPROM word 0x24, Initialization Control 3 (port A), and its APM Enable bit: wake on a magic
/// packet by default.
pub(crate) const EEPROM_INIT_CONTROL3_PORT_A: u16 = 0x24;
pub(crate) const EEPROM_APME: u16 = 1 << 10;

/// EECD: EEPROM Size: a Microwire EEPROM of 256 words rather than 64.
pub(crate) const EECD_SIZE: u32 = 1 << 9;

/// MDI Control: reads and writes a PHY register through the MDIO interface.
pub(crate) const MDIC: usize = 0x0020;
pub(crate) const MDIC_REG_SHIFT: u32 = 16;
pub(crate) const MDIC_PHY_SHIFT: u32 = 21;
pub(crate) const MDIC_OP_WRITE: u32 = 1 << 26;
pub(crate) const MDIC_OP_READ: u32 = 2 << 26;
pub(crate) const MDIC_READY: u32 = 1 << 28;
pub(crate) const MDIC_ERROR: u32 = 1 << 30;
/// The address of the 82540EM's internal PHY on its MDIO bus.
pub(crate) const PHY_ADDRESS: u32 = 1;

/// LED Control: a byte per LED, whose low four bits select what it shows; the two below are on
/// and off whatever the link does.
pub(crate) const LEDCTL: usize = 0x0e00;
pub(crate) const LEDCTL_MODE_ON: u32 = 0xe;
pub(crate) const LEDCTL_MODE_OFF: u32 = 0xf;
/// Management Control.
pub(crate) const MANC: usize = 0x5820;

/// Registers of the internal PHY (an M88E1011-compatible one): 1000BASE-T Status (its low byte
/// counts idle errors), PHY Specific Control and Status, Receive Error Counter.
pub(crate) const PHY_1000T_STATUS: u32 = 10;
pub(crate) const PHY_1000T_IDLE_ERRORS: u16 = 0xff;
pub(crate) const M88_PHY_SPEC_CTRL: u32 = 16;
pub(crate) const M88_PHY_SPEC_STATUS: u32 = 17;
pub(crate) const M88_RX_ERR_CNTR: u32 = 21;
/// M88 PHY Specific Control: polarity reversal disabled, the crossover mode (bits 6:5: MDI/MDI-X
/// chosen automatically, or forced either way), carrier sense asserted while transmitting.
pub(crate) const M88_PSCR_POLARITY_REVERSAL_DISABLED: u16 = 1 << 1;
pub(crate) const M88_PSCR_AUTO_CROSSOVER: u16 = 3 << 5;
pub(crate) const M88_PSCR_MANUAL_MDI: u16 = 0;
pub(crate) const M88_PSCR_MANUAL_MDIX: u16 = 1 << 5;
pub(crate) const M88_PSCR_ASSERT_CRS_ON_TX: u16 = 1 << 11;
/// M88 PHY Specific Status: the pairs are crossed over (MDI-X).
pub(crate) const M88_PSSR_MDIX: u16 = 1 << 6;

/// CTRL: Receive and Transmit Flow Control Enable: the MAC obeys received PAUSE frames, and sends
/// them when its receive FIFO fills.
pub(crate) const CTRL_RFCE: u32 = 1 << 27;
pub(crate) const CTRL_TFCE: u32 = 1 << 28;
/// PHY registers of IEEE 802.3 clause 22: Control (auto-negotiation enabled, restarted), Status
/// (and its Auto-Negotiation Complete bit), the
/// Auto-Negotiation Advertisement and the Link Partner Ability, with their PAUSE and ASM_DIR bits.
pub(crate) const MII_CONTROL: u32 = 0;
pub(crate) const MII_CONTROL_RESTART_AUTONEG: u16 = 1 << 9;
pub(crate) const MII_CONTROL_AUTONEG_ENABLE: u16 = 1 << 12;
/// MII Control of a forced link: duplex, speed (bit 6 and bit 13: 00 10 Mb/s, 01 100 Mb/s, 10 1000
/// Mb/s in that order), and the PHY's reset, which applies them.
pub(crate) const MII_CONTROL_FULL_DUPLEX: u16 = 1 << 8;
pub(crate) const MII_CONTROL_SPEED_100: u16 = 1 << 13;
pub(crate) const MII_CONTROL_SPEED_1000: u16 = 1 << 6;
pub(crate) const MII_CONTROL_RESET: u16 = 1 << 15;
/// MII Control: the PHY sends what the MAC transmits back to it (the self-test's loopback).
pub(crate) const MII_CONTROL_LOOPBACK: u16 = 1 << 14;
pub(crate) const MII_STATUS: u32 = 1;
pub(crate) const MII_STATUS_AUTONEG_COMPLETE: u16 = 1 << 5;
pub(crate) const MII_ADVERTISE: u32 = 4;
pub(crate) const MII_PARTNER_ABILITY: u32 = 5;
pub(crate) const MII_PAUSE: u16 = 1 << 10;
pub(crate) const MII_ASM_DIR: u16 = 1 << 11;
/// The Advertisement's 10BASE-T and 100BASE-TX abilities, and 1000BASE-T Control's full duplex
/// one (802.3 clauses 28 and 40).
pub(crate) const MII_ADVERTISE_10_HALF: u16 = 1 << 5;
pub(crate) const MII_ADVERTISE_10_FULL: u16 = 1 << 6;
pub(crate) const MII_ADVERTISE_100_HALF: u16 = 1 << 7;
pub(crate) const MII_ADVERTISE_100_FULL: u16 = 1 << 8;
pub(crate) const MII_ADVERTISE_SPEEDS: u16 =
    MII_ADVERTISE_10_HALF | MII_ADVERTISE_10_FULL | MII_ADVERTISE_100_HALF | MII_ADVERTISE_100_FULL;
pub(crate) const PHY_1000T_CTRL: u32 = 9;
pub(crate) const PHY_1000T_CTRL_ADV_FULL: u16 = 1 << 9;
/// M88 Extended PHY Specific Control: the transmit clock at 25 MHz, which a PHY reset takes back
/// to 2.5 MHz.
pub(crate) const M88_EXT_PHY_SPEC_CTRL: u32 = 20;
pub(crate) const M88_EPSCR_TX_CLK_25: u16 = 7 << 4;

/// Flow control: the PAUSE frame's destination address (FCAL, FCAH: 01:80:C2:00:00:01) and type
/// (FCT: 0x8808) that the MAC recognises, the pause time it sends (FCTTV, in 512-bit times), and
/// the receive FIFO thresholds (FCRTL with XON enable, FCRTH) at which it sends XON and XOFF.
pub(crate) const FCAL: usize = 0x0028;
pub(crate) const FCAH: usize = 0x002c;
pub(crate) const FCT: usize = 0x0030;
pub(crate) const FCTTV: usize = 0x0170;
pub(crate) const FCRTL: usize = 0x2160;
pub(crate) const FCRTH: usize = 0x2168;
pub(crate) const FLOW_CONTROL_ADDRESS_LOW: u32 = 0x00c2_8001;
pub(crate) const FLOW_CONTROL_ADDRESS_HIGH: u32 = 0x0100;
pub(crate) const FLOW_CONTROL_TYPE: u32 = 0x8808;
pub(crate) const FLOW_CONTROL_PAUSE_TIME: u32 = 0xffff;
pub(crate) const FCRTL_XONE: u32 = 1 << 31;
/// The receive packet buffer the 82540EM gives the receiver after reset (PBA): 48 KiB.
pub(crate) const RX_PACKET_BUFFER: u32 = 48 * 1024;
