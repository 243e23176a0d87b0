// SPDX-License-Identifier: GPL-2.0

//! What a command does beyond moving its own data: the controller's Commands Supported and Effects
//! log (log page 05h), read at probe where the controller has one, with what the specification
//! says of commands a controller may leave out of it.
//!
//! The passthrough asks it three things: whether an admin command from user space must run with no
//! I/O in flight (the disks are then frozen around it, as C's `nvme_passthru_start`), whether it may
//! change which namespaces there are or what they are (they are scanned after it, as in C's
//! `nvme_passthru_end`), and whether
//! a caller without `CAP_SYS_ADMIN` may send an I/O command (one the controller supports, that
//! touches nothing but its namespace's data, and writes it only through a file open for writing,
//! as C's `nvme_cmd_allowed`).

use kernel::prelude::*;

use crate::command::{admin, nvm, IdentifyController, LogPage, LPA_COMMAND_EFFECTS};
use crate::controller::Controller;
use crate::dma_local::Coherent;

/// Command Supported.
const CSUPP: u32 = 1 << 0;
/// Logical Block Content Change.
const LBCC: u32 = 1 << 1;
/// Namespace Capability Change (a format, for instance).
const NCC: u32 = 1 << 2;
/// Namespace Inventory Change: namespaces come or go.
const NIC: u32 = 1 << 3;
/// Controller Capability Change.
const CCC: u32 = 1 << 4;
/// Command Submission and Execution Relaxations: where set, the restrictions below do not hold.
const CSER_MASK: u32 = 0b11 << 14;
/// Command Submission and Execution: the command must run with no other command in flight (to its
/// namespace, or to any).
const CSE_MASK: u32 = 0b111 << 16;
/// UUID Selection Supported.
const UUID_SEL: u32 = 1 << 19;
/// Command Scope: what the command affects (namespace, controller, subsystem...).
const SCOPE_MASK: u32 = 0xfff << 20;

/// The effects of each admin and I/O (NVM command set) opcode.
pub(crate) struct Effects {
    /// Indexed by admin opcode.
    admin: KVec<u32>,
    /// Indexed by I/O opcode.
    io: KVec<u32>,
}

impl Effects {
    /// The effects of `ctrl`'s commands: its log (through `buf`, 4 KiB) if Identify Controller
    /// (`id`) says it has one, and the known ones. Fails, as C's probe does, if the log cannot
    /// be read.
    pub(crate) fn read(
        ctrl: &Controller<'_>,
        id: &IdentifyController,
        buf: &Coherent<'_, u8>,
    ) -> Result<Self> {
        let mut effects = Self {
            admin: KVec::from_elem(0, 256, GFP_KERNEL)?,
            io: KVec::from_elem(0, 256, GFP_KERNEL)?,
        };
        if id.lpa & LPA_COMMAND_EFFECTS != 0 {
            // A timed-out command resets or kills the controller (`admin_command`), which
            // disables it, before `buf` can go.
            let log = ctrl.admin_command(|admin, bar| {
                admin.get_log_page(bar, LogPage::CommandEffects, buf)
            })?;
            // Admin Command Supported (ACS) for opcodes 0 to 255, then I/O Command Supported (IOCS).
            let entries = log
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            let all = Iterator::chain(effects.admin.iter_mut(), effects.io.iter_mut());
            for (entry, value) in all.zip(entries) {
                *entry = value;
            }
        }
        effects.add_known();
        Ok(effects)
    }

    /// Adds what the specification says of commands a log may leave out or get wrong.
    fn add_known(&mut self) {
        let admin = &mut self.admin;
        // A format changes the block size and wipes the data, with nothing else in flight; a
        // sanitize wipes the data the same way.
        admin[usize::from(admin::FORMAT_NVM)] |= LBCC | NCC | CSE_MASK;
        admin[usize::from(admin::SANITIZE)] |= LBCC | CSE_MASK;
        // Namespaces come and go, or change size, with namespace management and attachment.
        admin[usize::from(admin::NAMESPACE_MANAGEMENT)] |= NIC | NCC;
        admin[usize::from(admin::NAMESPACE_ATTACHMENT)] |= NIC | NCC;
        // A controller marks Security Receive to keep it apart from Security Send, which are both
        // admin commands: freezing the I/O queues would not order them, so it is not done.
        admin[usize::from(admin::SECURITY_RECEIVE)] &= !CSE_MASK;
        for opcode in [nvm::WRITE, nvm::WRITE_UNCORRECTABLE, nvm::WRITE_ZEROES] {
            self.io[usize::from(opcode)] |= LBCC;
        }
    }

    /// The effects of admin opcode `opcode`.
    fn admin(&self, opcode: u8) -> u32 {
        let effects = self.admin[usize::from(opcode)];
        if effects & CSER_MASK != 0 {
            effects & !CSE_MASK
        } else {
            effects
        }
    }

    /// Whether admin command `opcode` must run with no I/O in flight (a format, a sanitize): the
    /// disks are frozen around it, and the namespaces scanned before they thaw.
    pub(crate) fn must_run_alone(&self, opcode: u8) -> bool {
        self.admin(opcode) & CSE_MASK != 0
    }

    /// Whether admin command `opcode` may change which namespaces there are or what they are: the
    /// namespaces are scanned after it.
    pub(crate) fn changes_namespaces(&self, opcode: u8) -> bool {
        self.admin(opcode) & (NCC | NIC) != 0
    }

    /// Whether admin command `opcode` may change what the controller can do (which takes a reset
    /// to see).
    pub(crate) fn changes_capabilities(&self, opcode: u8) -> bool {
        self.admin(opcode) & CCC != 0
    }

    /// Whether a caller without `CAP_SYS_ADMIN` may send I/O command `opcode` through a file that
    /// is `open_for_write` or not: the controller supports it, it has no effect outside its
    /// namespace's data, and it writes (moves data to the controller, or changes blocks) only
    /// through a file open for writing. A restriction to run alone is not an effect here: an I/O
    /// command cannot wait for its own queue to drain.
    pub(crate) fn io_harmless(&self, opcode: u8, open_for_write: bool) -> bool {
        let effects = self.io[usize::from(opcode)] & !CSE_MASK;
        let harmless = CSUPP | LBCC | UUID_SEL | SCOPE_MASK;
        let writes = opcode & 0x1 != 0 || effects & LBCC != 0;
        effects & CSUPP != 0 && effects & !harmless == 0 && (open_for_write || !writes)
    }
}
