// SPDX-License-Identifier: GPL-2.0

//! Registers of QEMU's `edu` device in BAR0, named as QEMU's `docs/specs/edu.rst` names them.

/// Bytes of BAR0 this driver maps: every register below.
pub(crate) const BAR0_SIZE: usize = 0x100;

/// Identification: `0xRRrr00ed`, major and minor version over `0x00ed`.
pub(crate) const IDENTIFICATION: usize = 0x00;
/// Interrupt status: the bits raised and not yet acknowledged.
pub(crate) const INTERRUPT_STATUS: usize = 0x24;
/// Interrupt acknowledge: writing bits clears them from the status.
pub(crate) const INTERRUPT_ACK: usize = 0x64;
/// DMA source address.
pub(crate) const DMA_SOURCE: usize = 0x80;
/// DMA destination address.
pub(crate) const DMA_DESTINATION: usize = 0x88;
/// DMA transfer count in bytes.
pub(crate) const DMA_COUNT: usize = 0x90;
/// DMA command.
pub(crate) const DMA_COMMAND: usize = 0x98;

/// `IDENTIFICATION` & this mask is `0xed` on an edu device.
pub(crate) const IDENTIFICATION_MAGIC_MASK: u32 = 0xffff;
/// The edu magic in `IDENTIFICATION`.
pub(crate) const IDENTIFICATION_MAGIC: u32 = 0x00ed;

/// `DMA_COMMAND`: start a transfer; the device clears it when the transfer is done.
pub(crate) const DMA_CMD_START: u32 = 1 << 0;
/// `DMA_COMMAND`: direction; set for device buffer to RAM, clear for RAM to device buffer.
pub(crate) const DMA_CMD_TO_RAM: u32 = 1 << 1;
/// `DMA_COMMAND`: raise [`IRQ_DMA_DONE`] when the transfer is done.
pub(crate) const DMA_CMD_IRQ: u32 = 1 << 2;

/// Interrupt status bit of a finished DMA transfer.
pub(crate) const IRQ_DMA_DONE: u32 = 0x100;

/// Where the device's DMA buffer sits in its own DMA address space.
pub(crate) const DEVICE_BUFFER: u64 = 0x40000;
/// Size of the device's DMA buffer.
pub(crate) const DEVICE_BUFFER_SIZE: usize = 4096;
/// The longest transfer QEMU 7.2's edu accepts: its range check rejects a transfer that reaches the
/// last
/// byte of its buffer (and stops the VM), so transfers stop one byte short.
pub(crate) const MAX_TRANSFER: usize = DEVICE_BUFFER_SIZE - 1;

/// The edu device decodes this many DMA address bits; higher bits are dropped.
pub(crate) const DMA_ADDRESS_BITS: u32 = 28;
