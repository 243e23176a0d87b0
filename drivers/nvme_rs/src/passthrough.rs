// SPDX-License-Identifier: GPL-2.0

//! Admin commands from user space: the `nvme_passthru_cmd` of the NVMe ioctls, as nvme-cli sends
//! them, checked as the C driver checks them (who may send what, flags, metadata, lengths), with
//! the data in a bounce buffer of the driver's.
//!
//! The bounce buffer is one per controller, as large as the largest transfer the controller takes,
//! and the PRP list behind PRP2 lists all of it whatever the command's own length: a command that
//! moves more than its `data_len` (an Identify with a short buffer, a Get Log Page whose NUMD is
//! larger) still reaches only that buffer (see [`Bounce::prps`] for the one exception), and the
//! caller gets its `data_len` bytes. The buffer is zeroed before every command, so that no command
//! sees another's data.

use core::mem::offset_of;

use kernel::{
    bindings,
    device::{Bound, Device},
    ffi::c_int,
    prelude::*,
    sync::Arc,
    transmute::{AsBytes, FromBytes},
    uaccess::{UserPtr, UserSlice},
};

use crate::blk::Disk;
use crate::command::{Command, IdentifyController, UserCommand};
use crate::controller::Controller;
use crate::dma_local::{Coherent, Gfp};
use crate::effects::Effects;
use crate::io::{self, UserCompletion};
use crate::regs::PAGE_SIZE;
use crate::scan::NamespaceSet;

/// `struct nvme_passthru_cmd` (`linux/nvme_ioctl.h`), also `struct nvme_admin_cmd`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct PassthruCmd {
    opcode: u8,
    flags: u8,
    rsvd1: u16,
    nsid: u32,
    cdw2: u32,
    cdw3: u32,
    metadata: u64,
    addr: u64,
    metadata_len: u32,
    data_len: u32,
    cdw10: [u32; 6],
    timeout_ms: u32,
    result: u32,
}

/// `struct nvme_passthru_cmd64`: as [`PassthruCmd`], with a 64-bit result (DW0 and DW1).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct PassthruCmd64 {
    opcode: u8,
    flags: u8,
    rsvd1: u16,
    nsid: u32,
    cdw2: u32,
    cdw3: u32,
    metadata: u64,
    addr: u64,
    metadata_len: u32,
    data_len: u32,
    cdw10: [u32; 6],
    timeout_ms: u32,
    rsvd2: u32,
    result: u64,
}

// The uapi sizes, which the ioctl numbers encode.
const _: () = assert!(core::mem::size_of::<PassthruCmd>() == 72);
const _: () = assert!(core::mem::size_of::<PassthruCmd64>() == 80);

// SAFETY: `repr(C)` of integers with no padding (the sizes above are the fields' sum); any bytes
// are valid.
unsafe impl FromBytes for PassthruCmd {}
// SAFETY: As above.
unsafe impl AsBytes for PassthruCmd {}
// SAFETY: As above.
unsafe impl FromBytes for PassthruCmd64 {}
// SAFETY: As above.
unsafe impl AsBytes for PassthruCmd64 {}

/// What a passthrough ioctl asks for, whichever its structure.
pub(crate) struct UserRequest {
    command: UserCommand,
    flags: u8,
    metadata: u64,
    metadata_len: u32,
    addr: u64,
    data_len: u32,
    timeout_ms: u32,
}

/// A passthrough ioctl's structure: what it asks for, and where the result goes back.
pub(crate) trait Passthru: FromBytes + AsBytes + Default {
    /// The `result` field: DW0, or DW0 and DW1.
    type Result: AsBytes;
    /// The byte offset of `result` in the structure.
    const RESULT_OFFSET: usize;

    fn request(&self) -> UserRequest;
    /// The `result` field for a completion's DW0 and DW1.
    fn result(dw0_dw1: u64) -> Self::Result;
}

macro_rules! user_request {
    ($cmd:expr) => {
        UserRequest {
            command: UserCommand {
                opcode: $cmd.opcode,
                nsid: $cmd.nsid,
                cdw2: $cmd.cdw2,
                cdw3: $cmd.cdw3,
                cdw10_15: $cmd.cdw10,
            },
            flags: $cmd.flags,
            metadata: $cmd.metadata,
            metadata_len: $cmd.metadata_len,
            addr: $cmd.addr,
            data_len: $cmd.data_len,
            timeout_ms: $cmd.timeout_ms,
        }
    };
}

impl Passthru for PassthruCmd {
    type Result = u32;
    const RESULT_OFFSET: usize = offset_of!(PassthruCmd, result);

    fn request(&self) -> UserRequest {
        user_request!(self)
    }

    fn result(dw0_dw1: u64) -> u32 {
        dw0_dw1 as u32
    }
}

impl Passthru for PassthruCmd64 {
    type Result = u64;
    const RESULT_OFFSET: usize = offset_of!(PassthruCmd64, result);

    fn request(&self) -> UserRequest {
        user_request!(self)
    }

    fn result(dw0_dw1: u64) -> u64 {
        dw0_dw1
    }
}

/// Identify CNS values anyone who may open the device may ask for, as in the C driver: what user
/// space needs to form I/O commands, nothing sensitive (Namespace, Controller, I/O command set
/// specific Namespace and Controller, command set independent Namespace).
const UNPRIVILEGED_IDENTIFY: [u8; 5] = [0x00, 0x01, 0x05, 0x06, 0x08];
/// Features nobody may set behind the driver's back, as in the C driver: Number of Queues,
/// Autonomous Power State Transition, Host Memory Buffer, Keep Alive Timer, Host Behavior Support.
const DRIVER_FEATURES: [u8; 5] = [0x07, 0x0c, 0x0d, 0x0f, 0x16];

/// Whether the caller may administer the system (`CAP_SYS_ADMIN`).
pub(crate) fn capable_sys_admin() -> bool {
    // SAFETY: `capable` only reads the current task's credentials.
    unsafe { bindings::capable(bindings::CAP_SYS_ADMIN as c_int) }
}

/// Whether the caller may send `command` to the controller (C's `nvme_cmd_allowed` for a
/// controller's device).
fn allowed(command: &UserCommand) -> bool {
    let admin = capable_sys_admin;
    if command.is_vendor_or_fabrics() {
        return admin();
    }
    if command
        .identify_cns()
        .is_some_and(|cns| UNPRIVILEGED_IDENTIFY.contains(&cns))
    {
        return true;
    }
    if command
        .set_features_fid()
        .is_some_and(|fid| DRIVER_FEATURES.contains(&fid))
    {
        return false;
    }
    admin()
}

/// The bounce buffer of a controller's passthrough commands, and a PRP list of its pages.
pub(crate) struct Bounce<'a> {
    data: Coherent<'a, u8>,
    /// The PRP list: the buffer's pages after the first; `None` for a one-page buffer.
    list: Option<Coherent<'a, u64>>,
}

/// Zeroes for the bounce buffer, a page at a time.
static ZEROES: [u8; PAGE_SIZE] = [0; PAGE_SIZE];

impl<'a> Bounce<'a> {
    /// A buffer of `bytes` (rounded up to pages, at most a PRP list page's worth of them).
    fn new(dev: &'a Device<Bound>, bytes: usize) -> Result<Self> {
        let pages = bytes.div_ceil(PAGE_SIZE).max(1);
        if pages - 1 > PAGE_SIZE / 8 {
            return Err(EINVAL);
        }
        let data = Coherent::<u8>::alloc(dev, pages * PAGE_SIZE, Gfp::KERNEL)?;
        let list = match pages {
            1 => None,
            _ => Some(Coherent::<u64>::alloc(dev, pages - 1, Gfp::KERNEL)?),
        };
        Ok(Self { data, list })
    }

    /// PRP Entry 1 and 2 for a command that moves `len` bytes, as the controller reads them from
    /// that length: PRP2 is the second page's address when the data ends there, the list's
    /// otherwise. The list is written again each time (a controller may have written it, taking a
    /// longer command's list for data). A command that moves more than it says reaches the buffer,
    /// or the list, for all that fit (the list is the driver's, and rewritten), but for one that
    /// says it moves up to two pages and moves more: the second page, the caller's data, is then
    /// taken for a list (only `CAP_SYS_ADMIN` may send such a command: others, only Identify).
    fn prps(&mut self, len: usize) -> Result<(u64, u64)> {
        let prp1 = self.data.dma_handle();
        let Some(list) = &mut self.list else {
            return Ok((prp1, 0));
        };
        for page in 1..=list.count() {
            list.write(page - 1, self.data.dma_handle_at(page * PAGE_SIZE)?)?;
        }
        let prp2 = if len > PAGE_SIZE && len <= 2 * PAGE_SIZE {
            self.data.dma_handle_at(PAGE_SIZE)?
        } else {
            list.dma_handle()
        };
        Ok((prp1, prp2))
    }

    /// Zeroes the buffer, copies `len` bytes from `user` into it (data for the controller) or
    /// checks that `len` bytes at `user` can be written (data from it). `EFAULT` if not.
    fn prepare(&mut self, user: UserPtr, len: usize, to_device: bool) -> Result {
        for offset in (0..self.data.count()).step_by(PAGE_SIZE) {
            self.data.write_from(offset, &ZEROES)?;
        }
        let mut chunk = KVec::from_elem(0u8, PAGE_SIZE, GFP_KERNEL)?;
        if to_device {
            let mut reader = UserSlice::new(user, len).reader();
            for offset in (0..len).step_by(PAGE_SIZE) {
                let piece = &mut chunk[..(len - offset).min(PAGE_SIZE)];
                reader.read_slice(piece)?;
                self.data.write_from(offset, piece)?;
            }
        } else {
            // As the C driver, which maps the pages first: a bad buffer fails before the command.
            let mut writer = UserSlice::new(user, len).writer();
            for offset in (0..len).step_by(PAGE_SIZE) {
                writer.write_slice(&ZEROES[..(len - offset).min(PAGE_SIZE)])?;
            }
        }
        Ok(())
    }

    /// Copies the first `len` bytes of the buffer to `user`.
    fn copy_out(&self, user: UserPtr, len: usize) -> Result {
        let mut chunk = KVec::from_elem(0u8, PAGE_SIZE, GFP_KERNEL)?;
        let mut writer = UserSlice::new(user, len).writer();
        for offset in (0..len).step_by(PAGE_SIZE) {
            let piece = &mut chunk[..(len - offset).min(PAGE_SIZE)];
            self.data.read_into(offset, piece)?;
            writer.write_slice(piece)?;
        }
        Ok(())
    }
}

/// A controller's passthrough: its bounce buffer, made at the first command.
pub(crate) struct Passthrough<'a> {
    ctrl: Arc<Controller<'a>>,
    /// The controller's namespaces and their disks.
    namespaces: Arc<NamespaceSet<'a>>,
    /// The largest data transfer, and the bounce buffer's size.
    max_transfer: usize,
    /// What each command does besides moving its data.
    effects: Effects,
    /// A command said it changed the controller's capabilities (said once).
    capabilities_changed: bool,
    bounce: Option<Bounce<'a>>,
}

/// Where a passthrough command goes.
#[derive(Clone, Copy)]
enum Target<'d> {
    /// The admin queue.
    Admin,
    /// Namespace `nsid`'s disk, as a driver-private request on its queue.
    Namespace(u32, &'d Disk),
}

impl<'a> Passthrough<'a> {
    /// Passthrough to `ctrl`, with `namespaces`, whose commands have `effects` and whose
    /// transfers are at most `max_transfer` bytes.
    pub(crate) fn new(
        ctrl: Arc<Controller<'a>>,
        namespaces: Arc<NamespaceSet<'a>>,
        effects: Effects,
        max_transfer: usize,
    ) -> Self {
        Self {
            ctrl,
            namespaces,
            max_transfer,
            effects,
            capabilities_changed: false,
            bounce: None,
        }
    }

    /// The controller's Identify Controller data, as read at probe.
    pub(crate) fn identity(&self) -> &IdentifyController {
        self.namespaces.identity()
    }

    /// The controller.
    pub(crate) fn controller(&self) -> &Controller<'a> {
        &self.ctrl
    }

    /// Sends the admin command of the `C` at user address `arg` (C's `nvme_user_cmd`): returns 0,
    /// the NVMe status field of a command that failed, or an error (`EFAULT` for memory the
    /// caller cannot reach, `EINVAL` for flags, metadata or more data than the controller moves,
    /// `EACCES` for a command the caller may not send, `EINTR` for one the controller did not
    /// complete in time). The result goes back to the structure whenever the command completed.
    pub(crate) fn admin<C: Passthru>(&mut self, arg: usize) -> Result<isize> {
        self.send::<C>(arg, Target::Admin, false)
    }

    /// Sends the I/O command of the `C` at user address `arg` to the controller's only namespace
    /// (C's `nvme_dev_user_cmd`, the deprecated `NVME_IOCTL_IO_CMD` on the controller's device):
    /// `ENOTTY` without a namespace and `EINVAL` with several, where it is ambiguous, as from C.
    /// Otherwise as [`Self::admin`], but for who may send it: `CAP_SYS_ADMIN`, or anyone for a
    /// command [`Effects::io_harmless`] says is, through a file `open_for_write` or not; and the
    /// NSID must be the namespace's (`EINVAL`).
    pub(crate) fn io<C: Passthru>(&mut self, arg: usize, open_for_write: bool) -> Result<isize> {
        let namespaces = self.namespaces.clone();
        // The disk stays while the command runs: no scan deletes it meanwhile.
        namespaces.with_only_namespace(|only| {
            let target = Target::Namespace(only.namespace().nsid, only.disk());
            self.send::<C>(arg, target, open_for_write)
        })
    }

    /// Scans the namespaces again (`NVME_IOCTL_RESCAN`; C queues its scan work and waits for it):
    /// disks follow their namespaces' formats, the disks of namespaces that are gone are deleted,
    /// new namespaces get disks.
    pub(crate) fn rescan(&mut self) -> Result {
        self.namespaces.rescan()
    }

    /// Whether the caller may send I/O command `command` through a file `open_for_write` or not
    /// (C's `nvme_cmd_allowed` for a namespace): vendor specific and Fabrics commands, whose
    /// effects nobody knows, and any the effects do not say are harmless take `CAP_SYS_ADMIN`.
    fn io_allowed(&self, command: &UserCommand, open_for_write: bool) -> bool {
        let harmless = !command.is_vendor_or_fabrics()
            && self.effects.io_harmless(command.opcode, open_for_write);
        harmless || capable_sys_admin()
    }

    /// Checks the command of the `C` at user address `arg`, moves its data through the bounce
    /// buffer and sends it to `target`, for a caller whose file is `open_for_write` or not.
    fn send<C: Passthru>(
        &mut self,
        arg: usize,
        target: Target<'_>,
        open_for_write: bool,
    ) -> Result<isize> {
        let cmd: C = UserSlice::new(UserPtr::from_addr(arg), size_of::<C>())
            .reader()
            .read()?;
        let request = cmd.request();
        // Removal has begun: a command given up may still own the bounce buffer.
        if self.ctrl.is_removing() {
            return Err(ENODEV);
        }
        if request.flags != 0 {
            return Err(EINVAL);
        }
        match target {
            Target::Admin if !allowed(&request.command) => return Err(EACCES),
            Target::Namespace(nsid, _) if request.command.nsid != nsid => {
                dev_err!(
                    self.ctrl.pdev,
                    "nsid ({}) in cmd does not match nsid ({}) of namespace\n",
                    request.command.nsid,
                    nsid
                );
                return Err(EINVAL);
            }
            Target::Namespace(..) if !self.io_allowed(&request.command, open_for_write) => {
                return Err(EACCES)
            }
            _ => {}
        }
        // The controller's device has no namespace, and this driver's namespaces no metadata.
        if request.metadata != 0 && request.metadata_len != 0 {
            return Err(EINVAL);
        }
        let len = request.data_len as usize;
        if len > self.max_transfer {
            return Err(EINVAL);
        }
        let data = UserPtr::from_addr(request.addr as usize);
        let to_device = request.command.to_device();
        let opcode = request.command.opcode;
        let is_admin = matches!(target, Target::Admin);
        let must_run_alone = is_admin && self.effects.must_run_alone(opcode);
        let changes_namespaces = is_admin && self.effects.changes_namespaces(opcode);
        // What may fault on user memory or allocate comes first: while the disks are frozen, I/O
        // to them (a page fault, reclaim) would wait for this thread.
        let bounce = match &mut self.bounce {
            Some(bounce) => bounce,
            empty => empty.insert(Bounce::new(self.ctrl.pdev.as_ref(), self.max_transfer)?),
        };
        bounce.prepare(data, len, to_device)?;
        let (prp1, prp2) = bounce.prps(len)?;
        let mut command = Command::from(request.command);
        command.set_prps(prp1, prp2);
        // Nothing in flight may use a format the command changes; the namespaces are identified
        // again after it, whatever its answer, before the disks thaw. One that changes which
        // namespaces there are has them scanned after it, whatever its answer.
        let frozen = if must_run_alone {
            Some(self.namespaces.freeze_for_command()?)
        } else {
            None
        };
        let scan_after =
            (changes_namespaces && !must_run_alone).then(|| self.namespaces.scan_after());
        let (status, result) = match target {
            Target::Admin => {
                // A timeout disables the controller (`admin_command`) before the buffer can be
                // reused. Not to a controller being reset or asleep, which would not answer, nor
                // one being let go of; removal ends the wait (`EINTR`, as C's), and disables the
                // controller before the buffer goes.
                let ctrl = &*self.ctrl;
                let done = ctrl
                    .admin_command_unless_resetting(|admin, bar| {
                        if ctrl.is_removing() {
                            return Err(ENODEV);
                        }
                        admin.execute_user(bar, command, request.timeout_ms, &|| ctrl.is_removing())
                    })
                    .map_err(|e| if e == ETIMEDOUT { EINTR } else { e })?;
                (done.status_field(), done.result64())
            }
            Target::Namespace(_, disk) => {
                // The request ends before this returns: a timeout ends it after the controller
                // let go of it (abort, reset, or kill), so the buffer is not in use any more.
                match io::execute_user_command(disk, &command, to_device, request.timeout_ms)? {
                    UserCompletion::Completed { status, result } => (status, result),
                    // Taken by a reset, or ended with the controller: C's `EINTR`.
                    UserCompletion::Cancelled => return Err(EINTR),
                    UserCompletion::Failed => return Err(EIO),
                }
            }
        };
        drop(frozen);
        drop(scan_after);
        if is_admin && self.effects.changes_capabilities(opcode) && !self.capabilities_changed {
            self.capabilities_changed = true;
            dev_info!(
                self.ctrl.pdev,
                "controller capabilities changed (admin opcode {:#x}): a reset may be needed to use \
                 them\n",
                opcode
            );
        }
        if !to_device {
            bounce.copy_out(data, len)?;
        }
        UserSlice::new(
            UserPtr::from_addr(arg + C::RESULT_OFFSET),
            size_of::<C::Result>(),
        )
        .writer()
        .write(&C::result(result))?;
        // Lossless: 15 bits.
        Ok(status as isize)
    }
}
