// SPDX-License-Identifier: GPL-2.0

//! A namespace's identifiers (UUID, NGUID, EUI-64) and the world-wide name made from them that
//! its disk's `wwid` attribute shows, as C's: `uuid.<UUID>`, else `eui.<NGUID>`, else
//! `eui.<EUI-64>`, else one made of the controller's vendor, serial and model and the NSID.
//!
//! The identifiers come from Identify Namespace and, from NVMe 1.3, the Namespace Identification
//! Descriptor list. The controllers QEMU emulates report an NGUID and EUI-64 that are not unique,
//! so C ignores both there (`NVME_QUIRK_BOGUS_NID` in its PCI table), and so does this driver, to
//! name the namespace as C does.

use core::fmt::Write;

use kernel::prelude::*;

use crate::command::{Cns, IdentifyController};
use crate::controller::Controller;
use crate::dma_local::Coherent;
use crate::regs;

/// The PCI vendor and device IDs of the controllers QEMU emulates (Red Hat's, and an older
/// Intel one), whose NGUID and EUI-64 are ignored.
const QEMU_CONTROLLERS: [(u16, u16); 2] = [(0x1b36, 0x0010), (0x8086, 0x5845)];

/// Namespace Identifier Types of the descriptor list.
const NIDT_EUI64: u8 = 1;
const NIDT_NGUID: u8 = 2;
const NIDT_UUID: u8 = 3;

/// A namespace's identifiers; all zeroes for one it does not have.
#[derive(Default)]
pub(crate) struct Identifiers {
    eui64: [u8; 8],
    nguid: [u8; 16],
    uuid: [u8; 16],
}

impl Identifiers {
    /// The identifiers of namespace `nsid` of `ctrl`, whose Identify Namespace data is
    /// `identify_ns`; the descriptor list is read through `buf` (4 KiB). A controller that
    /// answers the descriptor list with an error status (some reject it) leaves the identifiers
    /// of Identify Namespace; one that does not answer fails.
    pub(crate) fn read(
        ctrl: &Controller<'_>,
        buf: &Coherent<'_, u8>,
        nsid: u32,
        identify_ns: &[u8],
    ) -> Result<Self> {
        let pci_id = (ctrl.pdev.vendor_id().as_raw(), ctrl.pdev.device_id());
        let trusted = !QEMU_CONTROLLERS.contains(&pci_id);
        let mut ids = Self::default();
        if trusted {
            if let (Some(nguid), Some(eui64)) =
                (identify_ns.get(104..120), identify_ns.get(120..128))
            {
                ids.nguid.copy_from_slice(nguid);
                ids.eui64.copy_from_slice(eui64);
            }
        }
        if ctrl.version() < regs::VS_1_3 {
            return Ok(ids);
        }
        // A timed-out Identify resets or kills the controller (`admin_command`), which disables
        // it, before `buf` can go.
        let list = match ctrl.admin_command_unless_resetting(|admin, bar| {
            admin.identify(bar, Cns::NamespaceIdentifiers, nsid, buf)
        }) {
            Ok(list) => list,
            // An error status (`AdminQueue::execute`).
            Err(e) if e == EIO => return Ok(ids),
            Err(e) => return Err(e),
        };
        ids.add_descriptors(&list, trusted);
        Ok(ids)
    }

    /// Takes the identifiers of descriptor list `list`: each descriptor a type (NIDT), a length
    /// (NIDL), two reserved bytes and the identifier, up to a type 0 or the list's end. A length
    /// that does not match its type ends the list (a controller's error, as C says).
    fn add_descriptors(&mut self, list: &[u8], take_eui_nguid: bool) {
        let mut at = 0;
        while let Some(&[nidt, nidl, _, _]) = list.get(at..at + 4) {
            let value = at + 4;
            let (field, len): (&mut [u8], usize) = match nidt {
                0 => return,
                NIDT_EUI64 => (&mut self.eui64, 8),
                NIDT_NGUID => (&mut self.nguid, 16),
                NIDT_UUID => (&mut self.uuid, 16),
                // Command set identifier and any later type: skipped by their length.
                _ => {
                    at = value + usize::from(nidl);
                    continue;
                }
            };
            if usize::from(nidl) != len {
                return;
            }
            let Some(bytes) = list.get(value..value + len) else {
                return;
            };
            if nidt == NIDT_UUID || take_eui_nguid {
                field.copy_from_slice(bytes);
            }
            at = value + len;
        }
    }

    /// The world-wide name of namespace `nsid` of a controller identified as `id`, as C's `wwid`
    /// attribute shows it (without the newline).
    pub(crate) fn wwid(&self, id: &IdentifyController, nsid: u32) -> Result<KVec<u8>> {
        let mut text = Text(KVec::new());
        let nonzero = |bytes: &[u8]| bytes.iter().any(|&b| b != 0);
        if nonzero(&self.uuid) {
            let u = &self.uuid;
            write!(text, "uuid.")?;
            for (i, byte) in u.iter().enumerate() {
                if matches!(i, 4 | 6 | 8 | 10) {
                    write!(text, "-")?;
                }
                write!(text, "{byte:02x}")?;
            }
        } else if nonzero(&self.nguid) || nonzero(&self.eui64) {
            let eui = if nonzero(&self.nguid) {
                &self.nguid[..]
            } else {
                &self.eui64[..]
            };
            write!(text, "eui.")?;
            eui.iter().try_for_each(|byte| write!(text, "{byte:02x}"))?;
        } else {
            write!(text, "nvme.{:04x}-", id.vid)?;
            trimmed(&id.sn)
                .iter()
                .try_for_each(|byte| write!(text, "{byte:02x}"))?;
            write!(text, "-")?;
            trimmed(&id.mn)
                .iter()
                .try_for_each(|byte| write!(text, "{byte:02x}"))?;
            write!(text, "-{nsid:08x}")?;
        }
        Ok(text.0)
    }
}

/// `field` without its trailing spaces or NULs (the padding of Identify's strings).
fn trimmed(field: &[u8]) -> &[u8] {
    let end = field
        .iter()
        .rposition(|&b| b != b' ' && b != 0)
        .map_or(0, |last| last + 1);
    &field[..end]
}

/// Text written into a vector; an allocation that fails is a formatting error.
struct Text(KVec<u8>);

impl Write for Text {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.0
            .extend_from_slice(s.as_bytes(), GFP_KERNEL)
            .map_err(|_| core::fmt::Error)
    }
}
