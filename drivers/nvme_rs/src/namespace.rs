// SPDX-License-Identifier: GPL-2.0

//! Namespaces: what Identify Namespace says about each active namespace, turned into the limits of
//! its disk (logical block size, capacity, largest transfer, discard, write zeroes, atomic
//! writes), and the namespace as its disk's requests see it.

use core::{
    ffi::c_void,
    sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering},
};

use kernel::{
    prelude::*,
    str::CString,
    sync::{Arc, ArcBorrow},
};

use crate::blk::{Disk, DiskConfig, Request, TagSet};
use crate::command::{self, Cns, IdentifyController, IdentifyNvmController};
use crate::controller::Controller;
use crate::dma_local::{self, Coherent};
use crate::identifiers::Identifiers;
use crate::prp;
use crate::regs;
use crate::sysfs;

/// A namespace as its disk's requests see it (the disk's `queuedata`). Its format may change under
/// the driver (Format NVM, namespace management through passthrough): [`revalidate`] follows it
/// while the disk's queue is frozen, so that no request sees a block size the controller no longer
/// uses.
pub(crate) struct Namespace {
    pub(crate) nsid: u32,
    /// log2 of the logical block size, 9 to 12.
    lba_shift: AtomicU32,
    /// The namespace's size in logical blocks (NSZE).
    blocks: AtomicU64,
    /// The format in use is one this driver serves; otherwise the disk has no capacity and every
    /// request, passthrough included, fails before it reaches the controller.
    usable: AtomicBool,
    /// The world-wide name the disk's `wwid` attribute shows, without its newline.
    wwid: KVec<u8>,
}

impl Namespace {
    /// log2 of the logical block size.
    #[inline]
    pub(crate) fn lba_shift(&self) -> u32 {
        // Changed only while the disk's queue is frozen: no request is in flight then.
        self.lba_shift.load(Ordering::Relaxed)
    }

    /// Whether the namespace's format is one the driver serves.
    #[inline]
    pub(crate) fn is_usable(&self) -> bool {
        self.usable.load(Ordering::Relaxed)
    }

    /// Leaves the namespace unusable and its disk without capacity: its format is not known.
    /// `disk` is the namespace's, frozen.
    pub(crate) fn set_unusable(&self, disk: &Disk) {
        self.usable.store(false, Ordering::Relaxed);
        disk.set_capacity(0);
    }

    /// The logical block `rq` starts at.
    #[inline]
    pub(crate) fn first_block<P>(&self, rq: &Request<P>) -> u64 {
        rq.sector() >> (self.lba_shift() - 9)
    }

    /// How many logical blocks `rq` covers.
    #[inline]
    pub(crate) fn block_count<P>(&self, rq: &Request<P>) -> u32 {
        rq.bytes() >> self.lba_shift()
    }
}

/// The fields of an Identify Namespace data structure (4096 bytes) that this driver uses.
struct IdentifyNamespace {
    /// Namespace Size, in logical blocks.
    nsze: u64,
    /// log2 of the logical block size of the format in use.
    lba_shift: u32,
    /// Metadata bytes per logical block of the format in use.
    metadata_size: u16,
    /// The deallocate granularity and alignment the namespace prefers (NPDG, NPDA), the larger, in
    /// logical blocks; 1 when it states neither.
    preferred_deallocate_blocks: u32,
    /// What the namespace writes whole even through a power failure, if the block layer can
    /// describe it: not when the atomic boundaries start at an offset (NABO).
    atomic_write: Option<AtomicWrite>,
}

/// A namespace's atomic write unit, in logical blocks.
struct AtomicWrite {
    /// The largest write kept whole: NAWUPF where NSFEAT says the namespace states its own,
    /// otherwise one block, as in the C driver, which does not trust the controller's AWUPF.
    blocks: u32,
    /// The boundary such a write must not cross (NABSPF); 0 for none.
    boundary_blocks: u32,
}

impl IdentifyNamespace {
    /// The raw data structure of namespace `nsid`, through `buf`.
    fn read(ctrl: &Controller<'_>, buf: &Coherent<'_, u8>, nsid: u32) -> Result<KVec<u8>> {
        // A timed-out Identify resets or kills the controller (`admin_command`), which disables it,
        // before `buf` can go.
        ctrl.admin_command_unless_resetting(|admin, bar| {
            admin.identify(bar, Cns::Namespace, nsid, buf)
        })
    }

    /// Reads the fields from the raw data structure.
    fn parse(raw: &[u8]) -> Result<Self> {
        if raw.len() < 4096 {
            return Err(EINVAL);
        }
        let mut nsze = [0u8; 8];
        nsze.copy_from_slice(&raw[0..8]);
        // FLBAS bits 3:0 (and 6:5 for more than 16 formats) select the LBA format.
        let flbas = raw[26];
        let format = usize::from((flbas & 0xf) | ((flbas >> 1) & 0x30));
        let lbaf = 128 + 4 * format.min(63);
        // NSFEAT bits 5:4 (OPTPERF): bit 4 says NPDG is valid, either bit that NPDA is. Bit 5
        // points at NPDGL/NPDAL of the NVM command set's structure, which this driver does not
        // read; the C driver prefers those where they are set.
        let optperf = (raw[24] >> 4) & 0x3;
        let from_zero_based = |at: usize| u32::from(u16::from_le_bytes([raw[at], raw[at + 1]])) + 1;
        let npdg = if optperf & 0x1 != 0 {
            from_zero_based(68)
        } else {
            1
        };
        let npda = if optperf != 0 { from_zero_based(70) } else { 1 };
        let le16 = |at: usize| u16::from_le_bytes([raw[at], raw[at + 1]]);
        // NSFEAT bit 1: NAWUN, NAWUPF and NACWU are the namespace's own.
        let (nawupf, nabspf, nabo) = (le16(36), le16(44), le16(42));
        let own = raw[24] & 0x2 != 0 && nawupf != 0;
        let atomic_write = (nabo == 0).then(|| AtomicWrite {
            blocks: if own { u32::from(nawupf) + 1 } else { 1 },
            boundary_blocks: if own && nabspf != 0 {
                u32::from(nabspf) + 1
            } else {
                0
            },
        });
        Ok(Self {
            nsze: u64::from_le_bytes(nsze),
            lba_shift: u32::from(raw[lbaf + 2]),
            metadata_size: u16::from_le_bytes([raw[lbaf], raw[lbaf + 1]]),
            preferred_deallocate_blocks: npdg.max(npda),
            atomic_write,
        })
    }
}

/// What the disks of all namespaces take from their controller: its Identify data, and the
/// largest transfer.
pub(crate) struct ControllerLimits<'i> {
    id: &'i IdentifyController,
    nvm_id: &'i IdentifyNvmController,
    min_page_size: usize,
    /// The largest transfer in bytes.
    pub(crate) max_transfer: usize,
}

impl<'i> ControllerLimits<'i> {
    /// The limits of `ctrl`, identified as `id` and `nvm_id`.
    pub(crate) fn new(
        ctrl: &Controller<'_>,
        id: &'i IdentifyController,
        nvm_id: &'i IdentifyNvmController,
    ) -> Self {
        // The largest transfer: what the PRP list holds, no more than MDTS allows, and no more
        // than one mapping may hold cheaply (an IOMMU's cached range, a bounce buffer's limit),
        // since contiguous data is mapped at once; the C driver bounds it by
        // `dma_opt_mapping_size` too.
        let mut max_transfer = prp::MAX_TRANSFER.min(
            dma_local::opt_mapping_size(ctrl.pdev.as_ref()) / regs::PAGE_SIZE * regs::PAGE_SIZE,
        );
        // MDTS is a power of two of the minimum page size, 0 for no limit. A device may say any
        // byte: a shift that leaves `usize` is no limit either (C's `check_shl_overflow`).
        let mdts_shift = ctrl.cap.min_page_size().trailing_zeros() + u32::from(id.mdts);
        if id.mdts > 0 && mdts_shift < usize::BITS {
            max_transfer = max_transfer.min(1 << mdts_shift);
        }
        Self {
            id,
            nvm_id,
            min_page_size: ctrl.cap.min_page_size(),
            max_transfer,
        }
    }

    /// Whether the controller takes SGLs for the NVM command set.
    pub(crate) fn sgls(&self) -> bool {
        self.id.sgls & command::SGLS_SUPPORTED_MASK != 0
    }

    /// The largest discard in sectors: the controller's range size limit, if any and if it fits,
    /// otherwise as much as a request holds; none without Dataset Management.
    fn discard_sectors(&self, lba_shift: u32) -> u32 {
        let dmrsl = self.nvm_id.dmrsl;
        if self.id.oncs & command::ONCS_DSM == 0 {
            0
        } else if dmrsl != 0 && dmrsl <= u32::MAX >> (lba_shift - 9) {
            dmrsl << (lba_shift - 9)
        } else {
            u32::MAX
        }
    }

    /// The largest Write Zeroes in sectors: WZSL if the controller sets it, otherwise as much as
    /// a data transfer may move (the C driver's rule), and no more than the command's 16-bit
    /// block count holds; none without Write Zeroes.
    fn write_zeroes_sectors(&self, lba_shift: u32) -> u32 {
        if self.id.oncs & command::ONCS_WRITE_ZEROES == 0 {
            return 0;
        }
        let bytes = match self.nvm_id.wzsl {
            0 => self.max_transfer as u64,
            // The minimum page size is a power of two.
            wzsl => match u32::from(wzsl) + self.min_page_size.trailing_zeros() {
                shift @ 0..64 => 1 << shift,
                _ => u64::MAX,
            },
        };
        let most_blocks = 0x1_0000u64 << lba_shift;
        (bytes.min(most_blocks) >> 9).min(u64::from(u32::MAX)) as u32
    }
}

impl IdentifyNamespace {
    /// Whether this driver serves the namespace: not empty, no metadata, blocks of 512 bytes to
    /// 4 KiB.
    fn supported(&self) -> bool {
        // A capacity in sectors that does not fit in 64 bits is a hostile answer (C's
        // `nvme_invalid_lba_sz` skips it too).
        self.nsze != 0
            && self.metadata_size == 0
            && (9..=12).contains(&self.lba_shift)
            && self.nsze <= u64::MAX >> (self.lba_shift - 9)
    }

    /// The namespace's disk, named `name`, on a controller with `limits`.
    fn disk_config<'n>(&self, name: &'n CStr, limits: &ControllerLimits<'_>) -> DiskConfig<'n> {
        let lba_shift = self.lba_shift;
        DiskConfig {
            name,
            logical_block_size: 1 << lba_shift,
            capacity_sectors: self.nsze << (lba_shift - 9),
            max_hw_sectors: (limits.max_transfer >> 9) as u32,
            max_segments: prp::MAX_SEGMENTS as u16,
            // As in the C driver: segments may start or end inside a page only where an SGL can
            // describe them.
            virt_boundary_mask: if limits.sgls() {
                0
            } else {
                regs::PAGE_SIZE as u64 - 1
            },
            write_cache: limits.id.vwc & command::VWC_PRESENT != 0,
            max_discard_sectors: limits.discard_sectors(lba_shift),
            discard_granularity: self
                .preferred_deallocate_blocks
                .checked_mul(1 << lba_shift)
                .unwrap_or(1 << lba_shift),
            max_discard_segments: match limits.nvm_id.dmrl {
                0 => command::DSM_MAX_RANGES,
                ranges => u16::from(ranges),
            },
            atomic_write: self
                .atomic_write
                .as_ref()
                .map(|unit| (unit.blocks << lba_shift, unit.boundary_blocks << lba_shift)),
            max_write_zeroes_sectors: limits.write_zeroes_sectors(lba_shift),
        }
    }
}

/// The active NSIDs of `ctrl` (up to its number of namespaces, `id`), in the order the controller
/// lists them (ascending), through `buf`.
pub(crate) fn active_nsids(
    ctrl: &Controller<'_>,
    id: &IdentifyController,
    buf: &Coherent<'_, u8>,
) -> Result<KVec<u32>> {
    let list = ctrl.admin_command_unless_resetting(|admin, bar| {
        admin.identify(bar, Cns::ActiveNamespaces, 0, buf)
    })?;
    let mut nsids = KVec::new();
    for nsid in list
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .take_while(|&nsid| nsid != 0 && nsid <= id.nn)
    {
        nsids.push(nsid, GFP_KERNEL)?;
    }
    Ok(nsids)
}

/// What a namespace's disk hands its openers, and what its ioctls reach the namespace and its
/// controller by. Made above this module (by `nsdev`, which knows the ioctls), so that the
/// namespaces' code and the I/O path know nothing of them.
///
/// # Safety
///
/// [`NamespaceHandle::key`] returns the same address at every call, valid for as long as the
/// handle lives: the disk hands it to the implementation's block device operations, which take it
/// back as the handle.
pub(crate) unsafe trait NamespaceHandle: Send + Sync {
    /// The handle's address: the disk's private data (valid while the handle lives) and the key
    /// its commands find the namespace by (the scan's `NamespaceRef`, one layer up).
    fn key(&self) -> *const c_void;

    /// Registers the namespace's generic character device, `/dev/rsng<instance>n<N>`, whose files
    /// hold this handle; it goes when the returned value is dropped.
    fn register_device(self: ArcBorrow<'_, Self>, instance: u32) -> Result<KBox<dyn Send + Sync>>;
}

/// Makes the [`NamespaceHandle`] of each namespace of one controller.
pub(crate) trait NamespaceHandles: Send + Sync {
    /// The handle of namespace `nsid`.
    fn make(&self, nsid: u32) -> Result<Arc<dyn NamespaceHandle>>;
}

/// A namespace, its disk and its generic character device.
///
/// # Invariants
///
/// The disk's queue data is the boxed namespace and its private data the handle's key, which
/// outlive it: `disk` is dropped first (but for the character device).
pub(crate) struct NamespaceDisk {
    /// `/dev/rsng<C>n<N>`, once the disk is added.
    device: Option<KBox<dyn Send + Sync>>,
    disk: Disk,
    namespace: KBox<Namespace>,
    /// What the disk's openers and the character device's files hold.
    handle: Arc<dyn NamespaceHandle>,
    /// The NSID now names another namespace: the disk is to be deleted (and another added).
    replaced: bool,
}

impl NamespaceDisk {
    /// Identifies namespace `nsid` of `ctrl`, identified as `id` (through `buf`), and makes its
    /// disk, `/dev/rsnvme<instance>n<nsid>`, on `tag_set`, with `limits`, not added yet
    /// ([`Self::add`]); `None` for a namespace whose format this driver does not serve. Its
    /// ioctls reach it through a handle `handles` makes.
    ///
    /// # Safety
    ///
    /// `tag_set` outlives the returned value.
    pub(crate) unsafe fn new(
        ctrl: &Controller<'_>,
        buf: &Coherent<'_, u8>,
        limits: &ControllerLimits<'_>,
        (tag_set, handles): (&TagSet, &dyn NamespaceHandles),
        instance: u32,
        nsid: u32,
    ) -> Result<Option<Self>> {
        let raw = IdentifyNamespace::read(ctrl, buf, nsid)?;
        let ns = IdentifyNamespace::parse(&raw)?;
        if !ns.supported() {
            dev_info!(
                ctrl.pdev,
                "namespace {} skipped: unsupported format\n",
                nsid
            );
            return Ok(None);
        }
        let wwid = Identifiers::read(ctrl, buf, nsid, &raw)?.wwid(limits.id, nsid)?;
        let namespace = KBox::new(
            Namespace {
                nsid,
                lba_shift: AtomicU32::new(ns.lba_shift),
                blocks: AtomicU64::new(ns.nsze),
                usable: AtomicBool::new(true),
                wwid,
            },
            GFP_KERNEL,
        )?;
        let handle = handles.make(nsid)?;
        let name = CString::try_from_fmt(fmt!("rsnvme{}n{}", instance, nsid))?;
        let queuedata = core::ptr::from_ref::<Namespace>(&namespace).cast_mut();
        // SAFETY: The namespace is boxed and the handle in an `Arc` (their addresses do not move),
        // and both outlive the disk (dropped after it, type invariant); an opener keeps the handle
        // with a count of its own (`nsdev`).
        let disk = unsafe {
            Disk::new(
                tag_set,
                &ns.disk_config(&name, limits),
                queuedata.cast(),
                handle.key().cast_mut(),
            )?
        };
        // INVARIANT: the disk's queue data is the namespace, its private data the handle.
        Ok(Some(Self {
            device: None,
            disk,
            namespace,
            handle,
            replaced: false,
        }))
    }

    /// Adds the disk to the system, as a device of `ctrl`'s (controller number `instance`), and
    /// then the namespace's character device. Fails if the controller stops answering meanwhile
    /// (adding a disk reads its partition table).
    pub(crate) fn add(&mut self, ctrl: &Controller<'_>, instance: u32) -> Result {
        self.disk.add(ctrl.pdev.as_ref())?;
        if ctrl.is_dead() {
            dev_err!(
                ctrl.pdev,
                "controller stopped responding while its disks were added\n"
            );
            return Err(EIO);
        }
        // As C, the disk serves without it.
        match self.handle.as_arc_borrow().register_device(instance) {
            Ok(device) => self.device = Some(device),
            Err(e) => dev_warn!(
                ctrl.pdev,
                "namespace {}: no character device ({:?})\n",
                self.namespace.nsid,
                e
            ),
        }
        Ok(())
    }

    /// The namespace's handle, as its disk's openers hold it.
    pub(crate) fn handle(&self) -> Arc<dyn NamespaceHandle> {
        self.handle.clone()
    }

    /// Whether `key` is this namespace's disk's private data (its handle).
    pub(crate) fn has_key(&self, key: *const c_void) -> bool {
        self.handle.key() == key
    }

    /// The namespace.
    pub(crate) fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    /// The namespace's disk.
    pub(crate) fn disk(&self) -> &Disk {
        &self.disk
    }

    /// Marks the disk as one to delete: its NSID names another namespace now.
    pub(crate) fn set_replaced(&mut self) {
        self.replaced = true;
    }

    /// Whether [`Self::set_replaced`] marked it.
    pub(crate) fn is_replaced(&self) -> bool {
        self.replaced
    }
}

/// The show of a disk's `nsid` and `wwid` (the attribute `name`), as C's: the NSID in decimal, or
/// the world-wide name, and a newline. Returns the bytes written to `buf`, a page.
///
/// # Safety
///
/// `namespace` is the queue data of a disk whose attribute is being shown (a live [`Namespace`]:
/// deleting the disk waits for a show in progress), `name` the attribute's NUL-terminated name and
/// `buf` the page that sysfs hands a show.
#[no_mangle]
unsafe extern "C" fn nvme_rs_show_namespace(
    namespace: *mut c_void,
    name: *const kernel::ffi::c_char,
    buf: *mut u8,
) -> isize {
    // SAFETY: By the function's safety requirements.
    let (namespace, name) = unsafe { (&*namespace.cast::<Namespace>(), CStr::from_char_ptr(name)) };
    // SAFETY: `buf` is a show's page (safety requirement).
    unsafe {
        match name.to_bytes() {
            b"nsid" => sysfs::show_decimal(buf, namespace.nsid),
            b"wwid" => sysfs::show_bytes(buf, &namespace.wwid),
            _ => EINVAL.to_errno() as isize,
        }
    }
}

/// What [`revalidate`] found.
pub(crate) enum Revalidated {
    /// The disk is in line with the namespace.
    InLine,
    /// The NSID names another namespace now (its identifiers changed): nothing was changed, the
    /// disk is to be replaced.
    Replaced,
}

/// Identifies `namespace` again (through `buf`) and brings its disk in line with the format the
/// controller now uses, as C's `nvme_update_ns_info` does after a command that may change it or a
/// rescan: the logical block size, capacity and every limit derived from them; a format this
/// driver does not serve (metadata, an inactive or empty namespace) leaves the disk with capacity 0
/// and fails its requests. With `frozen`, the caller has frozen the disk's queue; otherwise this
/// freezes it, if anything changed, waiting for what is in flight `freeze_timeout` jiffies at most
/// (`EBUSY` after that, nothing changed). `disk` is `namespace`'s.
pub(crate) fn revalidate(
    ctrl: &Controller<'_>,
    buf: &Coherent<'_, u8>,
    limits: &ControllerLimits<'_>,
    namespace: &Namespace,
    disk: &Disk,
    frozen: bool,
    freeze_timeout: kernel::ffi::c_ulong,
) -> Result<Revalidated> {
    let nsid = namespace.nsid;
    let raw = IdentifyNamespace::read(ctrl, buf, nsid)?;
    // A namespace deleted and created again under the same NSID is another (C's
    // `nvme_validate_ns` compares the identifiers).
    if Identifiers::read(ctrl, buf, nsid, &raw)?.wwid(limits.id, nsid)? != namespace.wwid {
        return Ok(Revalidated::Replaced);
    }
    let ns = IdentifyNamespace::parse(&raw)?;
    let supported = ns.supported();
    let was = (
        namespace.is_usable(),
        namespace.lba_shift(),
        namespace.blocks.load(Ordering::Relaxed),
    );
    if was == (supported, ns.lba_shift, ns.nsze) || (!supported && !was.0) {
        return Ok(Revalidated::InLine);
    }
    let _noio = (!frozen).then(crate::blk::NoIo::begin);
    if !frozen {
        disk.start_freeze();
        if !disk.wait_frozen(freeze_timeout) {
            disk.unfreeze();
            return Err(EBUSY);
        }
    }
    let updated = if supported {
        disk.set_limits(&ns.disk_config(c"", limits))
    } else {
        disk.set_capacity(0);
        Ok(())
    };
    if updated.is_ok() {
        // Within the freeze: the next request sees the new format. An unsupported one keeps the
        // old shift (9 to 12), which no request uses.
        if supported {
            namespace.lba_shift.store(ns.lba_shift, Ordering::Relaxed);
        }
        namespace.blocks.store(ns.nsze, Ordering::Relaxed);
        namespace.usable.store(supported, Ordering::Relaxed);
    } else {
        // The block layer refused the limits: nothing may reach the namespace.
        namespace.set_unusable(disk);
    }
    if !frozen {
        disk.unfreeze();
    }
    if supported && updated.is_ok() {
        dev_info!(
            ctrl.pdev,
            "namespace {}: {}-byte blocks, {} of them\n",
            namespace.nsid,
            1u32 << ns.lba_shift,
            ns.nsze
        );
    } else {
        dev_warn!(
            ctrl.pdev,
            "namespace {}: format not served (block shift {}, {} metadata bytes, {} blocks{}), \
             capacity 0\n",
            namespace.nsid,
            ns.lba_shift,
            ns.metadata_size,
            ns.nsze,
            if updated.is_err() {
                ", limits refused"
            } else {
                ""
            }
        );
    }
    updated.map(|()| Revalidated::InLine)
}
