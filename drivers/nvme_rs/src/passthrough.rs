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

use core::{mem::offset_of, ptr::NonNull};

use kernel::{
    bindings,
    device::{Bound, Device},
    ffi::c_int,
    prelude::*,
    transmute::{AsBytes, FromBytes},
    uaccess::{UserPtr, UserSlice},
};

use crate::admin::IDENTIFY_SIZE;
use crate::blk::{self, Disk};
use crate::command::{Command, IdentifyController, IdentifyNvmController, UserCommand};
use crate::controller::Controller;
use crate::dma_local::{Coherent, Gfp};
use crate::io::{self, UserCompletion};
use crate::namespace::{self, ControllerLimits, Namespace};
use crate::regs::PAGE_SIZE;

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
    ctrl: kernel::sync::Arc<Controller<'a>>,
    /// Identify Controller, and its NVM command set part: the disks' limits, for a namespace
    /// whose format changes.
    id: (IdentifyController, IdentifyNvmController),
    /// The largest data transfer, and the bounce buffer's size.
    max_transfer: usize,
    /// The namespaces with a disk, each with its disk.
    disks: KVec<NamespaceDisk>,
    bounce: Option<Bounce<'a>>,
}

// SAFETY: The namespaces and disks are only used by the thread that holds the passthrough, and
// both may be used from any thread.
unsafe impl Send for Passthrough<'_> {}

/// Where a passthrough command goes.
#[derive(Clone, Copy)]
enum Target {
    /// The admin queue.
    Admin,
    /// Namespace `nsid`'s disk, as a driver-private request on its queue.
    Namespace(u32, NonNull<Disk>),
}

/// Admin commands that may change the format of a namespace or which namespaces there are: Format
/// NVM and Sanitize (C's built-in effects: LBCC, NCC, CSE), Namespace Management and Attachment
/// (NIC, NCC in the effects log QEMU reports). The disks' queues are frozen around them, and the
/// namespaces identified again after, as C's `nvme_passthru_start` and `nvme_passthru_end` do.
fn changes_namespaces(opcode: u8) -> bool {
    const NAMESPACE_MANAGEMENT: u8 = 0x0d;
    const NAMESPACE_ATTACHMENT: u8 = 0x15;
    const FORMAT_NVM: u8 = 0x80;
    const SANITIZE: u8 = 0x84;
    matches!(
        opcode,
        NAMESPACE_MANAGEMENT | NAMESPACE_ATTACHMENT | FORMAT_NVM | SANITIZE
    )
}

impl<'a> Passthrough<'a> {
    /// Passthrough to `ctrl`, identified as `id`, whose transfers are at most `max_transfer`
    /// bytes, with a disk of `disks` for each namespace of `namespaces`, in the same order.
    ///
    /// # Safety
    ///
    /// The namespaces and the disks outlive the returned value.
    pub(crate) unsafe fn new(
        ctrl: kernel::sync::Arc<Controller<'a>>,
        id: (&IdentifyController, &IdentifyNvmController),
        max_transfer: usize,
        namespaces: &[KBox<Namespace>],
        disks: &[Disk],
    ) -> Result<Self> {
        let mut pairs = KVec::with_capacity(disks.len(), GFP_KERNEL)?;
        for (namespace, disk) in namespaces.iter().zip(disks) {
            pairs.push(
                (NonNull::from(&**namespace), NonNull::from(disk)),
                GFP_KERNEL,
            )?;
        }
        Ok(Self {
            ctrl,
            id: (*id.0, *id.1),
            max_transfer,
            disks: pairs,
            bounce: None,
        })
    }

    /// The controller's Identify Controller data, as read at probe.
    pub(crate) fn identity(&self) -> &IdentifyController {
        &self.id.0
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
        self.send::<C>(arg, Target::Admin)
    }

    /// Sends the I/O command of the `C` at user address `arg` to the controller's only namespace
    /// (C's `nvme_dev_user_cmd`, the deprecated `NVME_IOCTL_IO_CMD` on the controller's device):
    /// `ENOTTY` without a namespace and `EINVAL` with several, where it is ambiguous, as from C.
    /// Otherwise as [`Self::admin`], but for who may send it: only `CAP_SYS_ADMIN` (C also lets
    /// others send what the controller's Commands Supported and Effects log says is harmless,
    /// which this driver does not read), and the NSID must be the namespace's (`EINVAL`).
    pub(crate) fn io<C: Passthru>(&mut self, arg: usize) -> Result<isize> {
        let &[(namespace, disk)] = self.disks.as_slice() else {
            if self.disks.is_empty() {
                return Err(ENOTTY);
            }
            dev_warn!(
                self.ctrl.pdev,
                "NVME_IOCTL_IO_CMD not supported when multiple namespaces present\n"
            );
            return Err(EINVAL);
        };
        // SAFETY: The namespaces outlive `self` (`new`'s safety requirement).
        let nsid = unsafe { namespace.as_ref() }.nsid;
        self.send::<C>(arg, Target::Namespace(nsid, disk))
    }

    /// Identifies every namespace with a disk again and brings the disks in line with what the
    /// controller says (`NVME_IOCTL_RESCAN`; C queues its scan work): a disk whose format or size
    /// changed is frozen while it changes. Namespaces added since probe get no disk, nor do removed
    /// ones lose theirs: theirs get capacity 0.
    pub(crate) fn rescan(&mut self) -> Result {
        self.revalidate()
    }

    /// Identifies every namespace with a disk again, freezing a disk whose format changed.
    fn revalidate(&self) -> Result {
        let buf = Coherent::<u8>::alloc(self.ctrl.pdev.as_ref(), IDENTIFY_SIZE, Gfp::KERNEL)?;
        revalidate(&self.ctrl, &self.id, &self.disks, &buf, false)
    }

    /// Checks the command of the `C` at user address `arg`, moves its data through the bounce
    /// buffer and sends it to `target`.
    fn send<C: Passthru>(&mut self, arg: usize, target: Target) -> Result<isize> {
        let cmd: C = UserSlice::new(UserPtr::from_addr(arg), size_of::<C>())
            .reader()
            .read()?;
        let request = cmd.request();
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
            Target::Namespace(..) if !capable_sys_admin() => return Err(EACCES),
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
        let changes_namespaces =
            matches!(target, Target::Admin) && changes_namespaces(request.command.opcode);
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
        // again after it, whatever its answer, before the disks thaw.
        let frozen = if changes_namespaces {
            Some(Frozen::new(&self.ctrl, &self.id, &self.disks)?)
        } else {
            None
        };
        let (status, result) = match target {
            Target::Admin => {
                // A timeout disables the controller (`admin_command`) before the buffer can be
                // reused. Not to a controller being reset or asleep, which would not answer.
                let ctrl = &*self.ctrl;
                let done = ctrl
                    .admin_command(|admin, bar| {
                        if ctrl.is_resetting() {
                            return Err(EBUSY);
                        }
                        admin.execute_user(bar, command, request.timeout_ms)
                    })
                    .map_err(|e| if e == ETIMEDOUT { EINTR } else { e })?;
                (done.status_field(), done.result64())
            }
            Target::Namespace(_, disk) => {
                // SAFETY: The disks outlive `self` (`new`'s safety requirement).
                let disk = unsafe { disk.as_ref() };
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

/// A namespace with a disk, and the disk, which outlive the passthrough that holds them.
type NamespaceDisk = (NonNull<Namespace>, NonNull<Disk>);

/// Identifies every namespace of `disks` again ([`namespace::revalidate`]) on `ctrl`, identified
/// as `id`, through `buf`, with their queues `frozen` already or not. Every namespace is done
/// whatever another's answer; the first failure is returned. After a command that changed the
/// namespaces (`frozen`), one that cannot be identified is left unusable: its format is unknown.
fn revalidate(
    ctrl: &Controller<'_>,
    id: &(IdentifyController, IdentifyNvmController),
    disks: &[NamespaceDisk],
    buf: &Coherent<'_, u8>,
    frozen: bool,
) -> Result {
    let limits = ControllerLimits::new(ctrl, &id.0, &id.1);
    let timeout = io::timeout_jiffies();
    let mut result = Ok(());
    for (namespace, disk) in disks {
        // SAFETY: The namespaces and disks outlive the passthrough (`Passthrough::new`).
        let (namespace, disk) = unsafe { (namespace.as_ref(), disk.as_ref()) };
        let done = namespace::revalidate(ctrl, buf, &limits, namespace, disk, frozen, timeout);
        if done.is_err() && frozen {
            namespace.set_unusable(disk);
        }
        if result.is_ok() {
            result = done;
        }
    }
    result
}

/// The disks' queues of a passthrough, frozen while a command that may change their namespaces
/// runs; dropping it identifies the namespaces again, then lets requests in.
struct Frozen<'p, 'a> {
    ctrl: &'p Controller<'a>,
    id: &'p (IdentifyController, IdentifyNvmController),
    disks: &'p [NamespaceDisk],
    /// For the Identify commands after the command, allocated before the freeze.
    buf: Coherent<'a, u8>,
    /// No allocation meanwhile does I/O: not to the frozen disks (`memalloc_noio_save`).
    _noio: blk::NoIo,
}

impl<'p, 'a> Frozen<'p, 'a> {
    /// Freezes the queue of every disk of `disks` and waits, an I/O timeout at most, for what is
    /// in flight; `EBUSY` (and nothing frozen) when it does not end in time.
    fn new(
        ctrl: &'p Controller<'a>,
        id: &'p (IdentifyController, IdentifyNvmController),
        disks: &'p [NamespaceDisk],
    ) -> Result<Self> {
        let buf = Coherent::<u8>::alloc(ctrl.pdev.as_ref(), IDENTIFY_SIZE, Gfp::KERNEL)?;
        let noio = blk::NoIo::begin();
        let each_disk = || {
            disks
                .iter()
                // SAFETY: The disks outlive the passthrough (`Passthrough::new`).
                .map(|(_, disk)| unsafe { disk.as_ref() })
        };
        each_disk().for_each(Disk::start_freeze);
        let timeout = io::timeout_jiffies();
        if !each_disk().all(|disk| disk.wait_frozen(timeout)) {
            each_disk().for_each(Disk::unfreeze);
            return Err(EBUSY);
        }
        Ok(Self {
            ctrl,
            id,
            disks,
            buf,
            _noio: noio,
        })
    }
}

impl Drop for Frozen<'_, '_> {
    fn drop(&mut self) {
        if let Err(e) = revalidate(self.ctrl, self.id, self.disks, &self.buf, true) {
            dev_warn!(
                self.ctrl.pdev,
                "namespaces not identified again ({:?})\n",
                e
            );
        }
        for (_, disk) in self.disks {
            // SAFETY: The disks outlive the passthrough (`Passthrough::new`).
            unsafe { disk.as_ref() }.unfreeze();
        }
    }
}
