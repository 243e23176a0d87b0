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
    ioctl::{_IO, _IOW, _IOWR},
    prelude::*,
    sync::Arc,
    transmute::{AsBytes, FromBytes},
    uaccess::{UserPtr, UserSlice},
};

use crate::command::{admin, nvm, Command, IdentifyController, UserCommand};
use crate::controller::Controller;
use crate::dma_local::{Coherent, Gfp};
use crate::effects::Effects;
use crate::namespace::Namespace;
use crate::regs::PAGE_SIZE;
use crate::scan::{NamespaceRef, NamespaceSet};
use crate::submit::{self, UserCompletion};

/// The NVMe ioctls (`linux/nvme_ioctl.h`): on the controller's device, on a namespace's disk and
/// on its generic character device.
pub(crate) const NVME_IOCTL_ID: u32 = _IO(b'N' as u32, 0x40);
pub(crate) const NVME_IOCTL_ADMIN_CMD: u32 = _IOWR::<PassthruCmd>(b'N' as u32, 0x41);
pub(crate) const NVME_IOCTL_SUBMIT_IO: u32 = _IOW::<UserIo>(b'N' as u32, 0x42);
pub(crate) const NVME_IOCTL_IO_CMD: u32 = _IOWR::<PassthruCmd>(b'N' as u32, 0x43);
pub(crate) const NVME_IOCTL_RESET: u32 = _IO(b'N' as u32, 0x44);
pub(crate) const NVME_IOCTL_RESCAN: u32 = _IO(b'N' as u32, 0x46);
pub(crate) const NVME_IOCTL_ADMIN64_CMD: u32 = _IOWR::<PassthruCmd64>(b'N' as u32, 0x47);
pub(crate) const NVME_IOCTL_IO64_CMD: u32 = _IOWR::<PassthruCmd64>(b'N' as u32, 0x48);
pub(crate) const NVME_IOCTL_IO64_CMD_VEC: u32 = _IOWR::<PassthruCmd64>(b'N' as u32, 0x49);

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

/// `struct nvme_user_io` (`NVME_IOCTL_SUBMIT_IO`): a Read, Write or Compare of `nblocks + 1`
/// logical blocks from `slba`, the driver filling in the rest of the command.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct UserIo {
    opcode: u8,
    flags: u8,
    control: u16,
    nblocks: u16,
    rsvd: u16,
    metadata: u64,
    addr: u64,
    slba: u64,
    dsmgmt: u32,
    reftag: u32,
    apptag: u16,
    appmask: u16,
    /// The C structure's tail padding, made explicit.
    padding: u32,
}

// The uapi sizes, which the ioctl numbers encode.
const _: () = assert!(core::mem::size_of::<PassthruCmd>() == 72);
const _: () = assert!(core::mem::size_of::<PassthruCmd64>() == 80);
const _: () = assert!(core::mem::size_of::<UserIo>() == 48);

/// Protection Information Action in a Read or Write's control field: the controller inserts or
/// strips the protection information, so the caller gives no metadata buffer.
const PRINFO_PRACT: u16 = 1 << 13;

// SAFETY: `repr(C)` of integers with no padding (the sizes above are the fields' sum); any bytes
// are valid.
unsafe impl FromBytes for PassthruCmd {}
// SAFETY: As above.
unsafe impl AsBytes for PassthruCmd {}
// SAFETY: As above.
unsafe impl FromBytes for PassthruCmd64 {}
// SAFETY: As above.
unsafe impl AsBytes for PassthruCmd64 {}
// SAFETY: As above (the padding is a field).
unsafe impl FromBytes for UserIo {}

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

/// How an I/O command reached the driver: through a file open for writing or not, on a partition
/// of the namespace's disk or the whole namespace, and whether its data is a vector of segments.
#[derive(Clone, Copy, Default)]
pub(crate) struct Access {
    pub(crate) open_for_write: bool,
    pub(crate) partition: bool,
    pub(crate) vectored: bool,
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
    /// longer command's list for data). A command that moves more than `len` reaches the buffer,
    /// or the list, for all that fit (the list is the driver's, and rewritten), but for one said to
    /// move more than one page and up to two that moves more: the second page, the caller's data,
    /// is then taken for a list. So `len` is what the command itself says it moves wherever the
    /// driver can tell (Get Log Page; Reads, Writes, Compares: [`transfer_length`]), and only
    /// `CAP_SYS_ADMIN` may send other commands with such a length (others may send only Identify
    /// to the admin queue: one page).
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

    /// Zeroes the buffer, copies the user memory of `data` into it (data for the controller) or
    /// checks that it can be written (data from it). `EFAULT` if not.
    fn prepare(&mut self, data: &UserData, to_device: bool) -> Result {
        for offset in (0..self.data.count()).step_by(PAGE_SIZE) {
            self.data.write_from(offset, &ZEROES)?;
        }
        let mut chunk = KVec::from_elem(0u8, PAGE_SIZE, GFP_KERNEL)?;
        let mut at = 0;
        for &(user, len) in data.segments() {
            if to_device {
                let mut reader = UserSlice::new(user, len).reader();
                for offset in (0..len).step_by(PAGE_SIZE) {
                    let piece = &mut chunk[..(len - offset).min(PAGE_SIZE)];
                    reader.read_slice(piece)?;
                    self.data.write_from(at + offset, piece)?;
                }
            } else {
                // As the C driver, which maps the pages first: a bad buffer fails before the
                // command.
                let mut writer = UserSlice::new(user, len).writer();
                for offset in (0..len).step_by(PAGE_SIZE) {
                    writer.write_slice(&ZEROES[..(len - offset).min(PAGE_SIZE)])?;
                }
            }
            at += len;
        }
        Ok(())
    }

    /// Copies the buffer to the user memory of `data`, from its start.
    fn copy_out(&self, data: &UserData) -> Result {
        let mut chunk = KVec::from_elem(0u8, PAGE_SIZE, GFP_KERNEL)?;
        let mut at = 0;
        for &(user, len) in data.segments() {
            let mut writer = UserSlice::new(user, len).writer();
            for offset in (0..len).step_by(PAGE_SIZE) {
                let piece = &mut chunk[..(len - offset).min(PAGE_SIZE)];
                self.data.read_into(at + offset, piece)?;
                writer.write_slice(piece)?;
            }
            at += len;
        }
        Ok(())
    }
}

/// `struct iovec`: a vectored passthrough command's segment of user memory.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct IoVec {
    base: u64,
    len: u64,
}

// SAFETY: `repr(C)` of two integers, no padding; any bytes are valid.
unsafe impl FromBytes for IoVec {}

/// The most segments a vectored command may have (`UIO_MAXIOV`).
const MAX_SEGMENTS: usize = 1024;

/// The user memory of a command's data: one range, or the segments of a vectored command
/// (`NVME_IOCTL_IO64_CMD_VEC`), in order.
struct UserData {
    segments: KVec<(UserPtr, usize)>,
    /// The bytes of all segments.
    len: usize,
}

impl UserData {
    /// The memory of `request`, whose `addr` and `data_len` give the memory itself or, when
    /// `vectored`, an array of `data_len` iovecs (C's `import_iovec`): `EINVAL` for more than
    /// [`MAX_SEGMENTS`] of them, `EFAULT` if they cannot be read.
    fn of(request: &UserRequest, vectored: bool) -> Result<Self> {
        let mut segments = KVec::new();
        if !vectored {
            let len = request.data_len as usize;
            segments.push((UserPtr::from_addr(request.addr as usize), len), GFP_KERNEL)?;
            return Ok(Self { segments, len });
        }
        let count = request.data_len as usize;
        if count > MAX_SEGMENTS {
            return Err(EINVAL);
        }
        let mut reader = UserSlice::new(
            UserPtr::from_addr(request.addr as usize),
            count * size_of::<IoVec>(),
        )
        .reader();
        let mut len = 0usize;
        segments.reserve(count, GFP_KERNEL)?;
        for _ in 0..count {
            let iov: IoVec = reader.read()?;
            let bytes = usize::try_from(iov.len).map_err(|_| EINVAL)?;
            len = len.checked_add(bytes).ok_or(EINVAL)?;
            segments.push((UserPtr::from_addr(iov.base as usize), bytes), GFP_KERNEL)?;
        }
        // Segments without a byte are no data (C's `blk_rq_map_user_iov`).
        if count > 0 && len == 0 {
            return Err(EINVAL);
        }
        Ok(Self { segments, len })
    }

    fn segments(&self) -> &[(UserPtr, usize)] {
        &self.segments
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
enum Target {
    /// The admin queue.
    Admin,
    /// A namespace, as a driver-private request on its disk's queue.
    Namespace(NamespaceRef),
}

/// The bytes `command` moves, where the driver can tell from the command whatever the caller says
/// it moves: an admin Get Log Page its dwords (NUMD, 0-based, in command dwords 10 and 11); with
/// `namespace`, an I/O Read, Write or Compare its blocks (NLB, 0-based, in command dword 12).
fn transfer_length(command: &UserCommand, namespace: Option<&Namespace>) -> Option<usize> {
    let [cdw10, cdw11, cdw12, ..] = command.cdw10_15;
    match namespace {
        None => (command.opcode == admin::GET_LOG_PAGE)
            .then(|| (((cdw11 as usize & 0xffff) << 16 | (cdw10 >> 16) as usize) + 1) * 4),
        Some(namespace) => [nvm::READ, nvm::WRITE, nvm::COMPARE]
            .contains(&command.opcode)
            .then(|| (cdw12 as u16 as usize + 1) << namespace.lba_shift()),
    }
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
        self.passthru::<C>(arg, |this, request| {
            this.send(request, Target::Admin, Access::default())
        })
    }

    /// Sends the I/O command of the `C` at user address `arg` to the controller's only namespace
    /// (C's `nvme_dev_user_cmd`, the deprecated `NVME_IOCTL_IO_CMD` on the controller's device):
    /// `ENOTTY` without a namespace and `EINVAL` with several, where it is ambiguous, as from C.
    /// Otherwise as [`Self::namespace_io`].
    pub(crate) fn io<C: Passthru>(&mut self, arg: usize, open_for_write: bool) -> Result<isize> {
        let namespaces = self.namespaces.clone();
        let access = Access {
            open_for_write,
            ..Access::default()
        };
        let (handle, nsid) =
            namespaces.with_only_namespace(|only| Ok((only.handle(), only.namespace().nsid)))?;
        // Held while the command runs: its address is the key.
        let which = NamespaceRef {
            nsid,
            key: handle.key(),
        };
        self.passthru::<C>(arg, |this, request| {
            this.send(request, Target::Namespace(which), access)
        })
    }

    /// Sends the I/O command of the `C` at user address `arg` to the namespace `which` names, as it
    /// came through `access` (C's `nvme_user_cmd` on a namespace). As [`Self::admin`], but for
    /// who may send it: `CAP_SYS_ADMIN`, or anyone for a command [`Effects::io_harmless`] says
    /// is, but on a partition; and the NSID must be the namespace's (`EINVAL`). `ENODEV` once the
    /// namespace is gone.
    pub(crate) fn namespace_io<C: Passthru>(
        &mut self,
        which: NamespaceRef,
        arg: usize,
        access: Access,
    ) -> Result<isize> {
        self.passthru::<C>(arg, |this, request| {
            this.send(request, Target::Namespace(which), access)
        })
    }

    /// Sends the Read, Write or Compare of the `nvme_user_io` at user address `arg` to the
    /// namespace `which` names (C's `nvme_submit_io`), its length in the namespace's blocks:
    /// `EINVAL` for flags, another opcode or a metadata buffer; otherwise as
    /// [`Self::namespace_io`], but no result goes back.
    pub(crate) fn submit_io(
        &mut self,
        which: NamespaceRef,
        arg: usize,
        access: Access,
    ) -> Result<isize> {
        let io: UserIo = UserSlice::new(UserPtr::from_addr(arg), size_of::<UserIo>())
            .reader()
            .read()?;
        if io.flags != 0 || ![nvm::WRITE, nvm::READ, nvm::COMPARE].contains(&io.opcode) {
            return Err(EINVAL);
        }
        // No namespace this driver serves has metadata: no metadata is moved, and with PRACT the
        // caller must not give a buffer for it (as C, where it would be the controller's to
        // insert or strip).
        if io.control & PRINFO_PRACT != 0 && io.metadata != 0 {
            return Err(EINVAL);
        }
        // The length in the namespace's blocks; should they change before the command goes out,
        // the driver's PRPs still follow what the controller moves (`send`).
        let lba_shift = self
            .namespaces
            .with_namespace(which, |entry| Ok(entry.namespace().lba_shift()))?;
        let request = UserRequest {
            command: UserCommand {
                opcode: io.opcode,
                nsid: which.nsid,
                cdw2: 0,
                cdw3: 0,
                cdw10_15: [
                    io.slba as u32,
                    (io.slba >> 32) as u32,
                    u32::from(io.nblocks) | u32::from(io.control) << 16,
                    io.dsmgmt,
                    io.reftag,
                    u32::from(io.apptag) | u32::from(io.appmask) << 16,
                ],
            },
            flags: 0,
            metadata: 0,
            metadata_len: 0,
            addr: io.addr,
            // At most 2^16 blocks of 4 KiB: no overflow.
            data_len: (u32::from(io.nblocks) + 1) << lba_shift,
            timeout_ms: 0,
        };
        let (status, _) = self.send(&request, Target::Namespace(which), access)?;
        // Lossless: 15 bits.
        Ok(status as isize)
    }

    /// Scans the namespaces again (`NVME_IOCTL_RESCAN`; C queues its scan work and waits for it):
    /// disks follow their namespaces' formats, the disks of namespaces that are gone are deleted,
    /// new namespaces get disks.
    pub(crate) fn rescan(&mut self) -> Result {
        self.namespaces.rescan()
    }

    /// Whether the caller may send I/O command `command` as it came through `access` (C's
    /// `nvme_cmd_allowed` for a namespace): anything on a partition, vendor specific and Fabrics
    /// commands, whose effects nobody knows, and any the effects do not say are harmless take
    /// `CAP_SYS_ADMIN`.
    fn io_allowed(&self, command: &UserCommand, access: Access) -> bool {
        let harmless = !access.partition
            && !command.is_vendor_or_fabrics()
            && self
                .effects
                .io_harmless(command.opcode, access.open_for_write);
        harmless || capable_sys_admin()
    }

    /// Reads the `C` at user address `arg`, has `send` send what it asks for, and writes the
    /// result back to it: returns the NVMe status field (0 for success) or `send`'s error.
    fn passthru<C: Passthru>(
        &mut self,
        arg: usize,
        send: impl FnOnce(&mut Self, &UserRequest) -> Result<(u16, u64)>,
    ) -> Result<isize> {
        let cmd: C = UserSlice::new(UserPtr::from_addr(arg), size_of::<C>())
            .reader()
            .read()?;
        let (status, result) = send(self, &cmd.request())?;
        UserSlice::new(
            UserPtr::from_addr(arg + C::RESULT_OFFSET),
            size_of::<C::Result>(),
        )
        .writer()
        .write(&C::result(result))?;
        // Lossless: 15 bits.
        Ok(status as isize)
    }

    /// Checks `request`, as it came through `access`, moves its data through the bounce buffer
    /// and sends it to `target`: returns the NVMe status field and the completion's DW0 and DW1.
    fn send(
        &mut self,
        request: &UserRequest,
        target: Target,
        access: Access,
    ) -> Result<(u16, u64)> {
        // Removal has begun: a command given up may still own the bounce buffer.
        if self.ctrl.is_removing() {
            return Err(ENODEV);
        }
        if request.flags != 0 {
            return Err(EINVAL);
        }
        match target {
            Target::Admin if !allowed(&request.command) => return Err(EACCES),
            Target::Namespace(which) if request.command.nsid != which.nsid => {
                dev_err!(
                    self.ctrl.pdev,
                    "nsid ({}) in cmd does not match nsid ({}) of namespace\n",
                    request.command.nsid,
                    which.nsid
                );
                return Err(EINVAL);
            }
            Target::Namespace(..) if !self.io_allowed(&request.command, access) => {
                return Err(EACCES)
            }
            _ => {}
        }
        // The controller's device has no namespace, and this driver's namespaces no metadata.
        if request.metadata != 0 && request.metadata_len != 0 {
            return Err(EINVAL);
        }
        let data = UserData::of(request, access.vectored)?;
        let len = data.len;
        if len > self.max_transfer {
            return Err(EINVAL);
        }
        // A length whose PRP2 is the caller's second page, which the controller would take for a
        // PRP list if the command moved more ([`Bounce::prps`]): only where the driver knows what
        // the command moves, or for `CAP_SYS_ADMIN`.
        if matches!(target, Target::Namespace(..))
            && len > PAGE_SIZE
            && len <= 2 * PAGE_SIZE
            && !matches!(
                request.command.opcode,
                nvm::READ | nvm::WRITE | nvm::COMPARE
            )
            && !capable_sys_admin()
        {
            return Err(EACCES);
        }
        let to_device = request.command.to_device();
        let opcode = request.command.opcode;
        let is_admin = matches!(target, Target::Admin);
        // What an admin command moves, for its PRPs (an I/O command's, under the inventory lock).
        let admin_moves = if is_admin {
            transfer_length(&request.command, None).unwrap_or(len)
        } else {
            len
        };
        if admin_moves > self.max_transfer {
            return Err(EINVAL);
        }
        let must_run_alone = is_admin && self.effects.must_run_alone(opcode);
        let changes_namespaces = is_admin && self.effects.changes_namespaces(opcode);
        // What may fault on user memory or allocate comes first: while the disks are frozen, I/O
        // to them (a page fault, reclaim) would wait for this thread.
        let bounce = match &mut self.bounce {
            Some(bounce) => bounce,
            empty => empty.insert(Bounce::new(self.ctrl.pdev.as_ref(), self.max_transfer)?),
        };
        bounce.prepare(&data, to_device)?;
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
                let (prp1, prp2) = bounce.prps(admin_moves)?;
                let mut command = Command::from(request.command);
                command.set_prps(prp1, prp2);
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
            Target::Namespace(which) => {
                // The caller's memory was read above, outside the inventory's lock: a fault that
                // waits holds up no scan. The disk stays while the command runs.
                let namespaces = self.namespaces.clone();
                let max_transfer = self.max_transfer;
                let done = namespaces.with_namespace(which, |entry| {
                    let moved =
                        transfer_length(&request.command, Some(entry.namespace())).unwrap_or(len);
                    if moved > max_transfer {
                        return Err(EINVAL);
                    }
                    let (prp1, prp2) = bounce.prps(moved)?;
                    let mut command = Command::from(request.command);
                    command.set_prps(prp1, prp2);
                    // The request ends before this returns: a timeout ends it after the
                    // controller let go of it (abort, reset, or kill), so the buffer is not in use
                    // any more.
                    submit::execute_user_command(
                        entry.disk(),
                        &command,
                        to_device,
                        request.timeout_ms,
                    )
                })?;
                match done {
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
            bounce.copy_out(&data)?;
        }
        Ok((status, result))
    }
}
