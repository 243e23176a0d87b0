// SPDX-License-Identifier: GPL-2.0

//! A namespace's ioctls, as nvme-cli sends them to a namespace: on its disk
//! (`/dev/rsnvme<C>n<N>`, its partitions too) and on its generic character device
//! (`/dev/rsng<C>n<N>`, the C driver's `/dev/ng<C>n<N>`). `NVME_IOCTL_ID` names the namespace,
//! the admin ioctls go to its controller, and the I/O ones (`NVME_IOCTL_IO_CMD`,
//! `NVME_IOCTL_IO64_CMD` and its vectored form, `NVME_IOCTL_SUBMIT_IO`) to the namespace.
//!
//! An open disk or file may outlive the namespace (a scan deletes it) and the driver's binding, so
//! it holds only a [`Handle`]: the controller's [`Gate`] and the NSID. A command through a handle
//! whose namespace is gone gets `ENODEV`, as from C's dying queue. [`Handles`] makes them for the
//! controller's namespace set, which knows them only as [`Handle`]s.

use core::{ffi::c_void, ptr::NonNull};

use kernel::{
    ffi::{c_int, c_uint, c_ulong},
    fs::File,
    miscdevice::{MiscDevice, MiscDeviceOptions, MiscDeviceRegistration},
    prelude::*,
    str::CString,
    sync::{Arc, ArcBorrow},
};

use crate::chardev::{nvme_rs_open_for_write, pin_module, Gate, OwnedFileOperations};
use crate::namespace::{NamespaceHandle, NamespaceHandles};
use crate::passthrough::{
    Access, Passthrough, PassthruCmd, PassthruCmd64, NVME_IOCTL_ADMIN64_CMD, NVME_IOCTL_ADMIN_CMD,
    NVME_IOCTL_ID, NVME_IOCTL_IO64_CMD, NVME_IOCTL_IO64_CMD_VEC, NVME_IOCTL_IO_CMD,
    NVME_IOCTL_SUBMIT_IO,
};
use crate::scan::NamespaceRef;

/// The handles of one controller's namespaces.
pub(crate) struct Handles {
    controller: Arc<Gate>,
}

impl Handles {
    /// What makes the handles of the namespaces of the controller behind `controller`.
    pub(crate) fn of(controller: Arc<Gate>) -> Result<Arc<dyn NamespaceHandles>> {
        Ok(Arc::new(Self { controller }, GFP_KERNEL)?)
    }
}

impl NamespaceHandles for Handles {
    fn make(&self, nsid: u32) -> Result<Arc<dyn NamespaceHandle>> {
        let handle = Handle {
            controller: self.controller.clone(),
            nsid,
        };
        Ok(Arc::new(handle, GFP_KERNEL)?)
    }
}

/// What a namespace's open disk or character device reaches: the controller, while it is bound,
/// and the namespace, while it is there.
pub(crate) struct Handle {
    controller: Arc<Gate>,
    nsid: u32,
}

// SAFETY: The key is the handle's own address, in the `Arc` `Handles::make` put it in, which does
// not move while the handle lives; the disk's operations below take it back as that `Arc<Handle>`.
unsafe impl NamespaceHandle for Handle {
    fn key(&self) -> *const c_void {
        core::ptr::from_ref(self).cast()
    }

    fn register_device(self: ArcBorrow<'_, Self>, instance: u32) -> Result<KBox<dyn Send + Sync>> {
        // Boxed again: a pinned box does not coerce to a trait object's.
        Ok(KBox::new(
            NamespaceDevice::new(self.into(), instance)?,
            GFP_KERNEL,
        )?)
    }
}

impl Handle {
    /// The namespace, as the namespace set finds it: by NSID and by this handle's key, its disk's
    /// private data (which the caller keeps alive while it uses the value).
    fn which(&self) -> NamespaceRef {
        NamespaceRef {
            nsid: self.nsid,
            key: self.key(),
        }
    }

    /// Runs namespace ioctl `cmd` with argument `arg`, as it came through `access` (C's
    /// `nvme_ioctl` and `nvme_ns_chr_ioctl`).
    fn ioctl(&self, cmd: u32, arg: usize, access: Access) -> Result<isize> {
        let vectored = Access {
            vectored: true,
            ..access
        };
        // Others (`SG_IO`, a tool probing the device) wait for no passthrough command.
        match cmd {
            NVME_IOCTL_ID => Ok(self.nsid as isize),
            // The controller's, whichever namespace they came through.
            NVME_IOCTL_ADMIN_CMD => self.passthrough(|p| p.admin::<PassthruCmd>(arg)),
            NVME_IOCTL_ADMIN64_CMD => self.passthrough(|p| p.admin::<PassthruCmd64>(arg)),
            NVME_IOCTL_IO_CMD => {
                self.passthrough(|p| p.namespace_io::<PassthruCmd>(self.which(), arg, access))
            }
            NVME_IOCTL_IO64_CMD => {
                self.passthrough(|p| p.namespace_io::<PassthruCmd64>(self.which(), arg, access))
            }
            NVME_IOCTL_IO64_CMD_VEC => {
                self.passthrough(|p| p.namespace_io::<PassthruCmd64>(self.which(), arg, vectored))
            }
            NVME_IOCTL_SUBMIT_IO => self.passthrough(|p| p.submit_io(self.which(), arg, access)),
            _ => Err(ENOTTY),
        }
    }

    /// Runs `f` on the controller's passthrough while the controller is bound; `ENODEV` after.
    fn passthrough(&self, f: impl FnOnce(&mut Passthrough<'_>) -> Result<isize>) -> Result<isize> {
        self.controller.with_passthrough(f)
    }
}

/// The disk's `open` (`block_device_operations`): the opener holds the namespace's handle until
/// its release, which may come after the namespace or the driver are gone.
///
/// # Safety
///
/// `handle` is the disk's private data, the key of a [`Handle`] in an `Arc` (one that
/// [`Handles::make`] made: its allocation stays an `Arc<Handle>`'s when it is known as a
/// `dyn NamespaceHandle`), and the disk is live (an open checks that under the disk's open mutex,
/// and the namespace holds its handle until it has deleted its disk).
#[no_mangle]
unsafe extern "C" fn nvme_rs_namespace_open(handle: *const c_void) -> c_int {
    // SAFETY: By the function's safety requirements; the `Arc` this makes is the opener's, given
    // back in the release.
    let opened: Arc<Handle> = unsafe { ArcBorrow::from_raw(handle.cast::<Handle>()) }.into();
    let _ = Arc::into_raw(opened);
    0
}

/// The disk's `release`, one for each `open`.
///
/// # Safety
///
/// `handle` is the disk's private data, whose count an [`nvme_rs_namespace_open`] raised.
#[no_mangle]
unsafe extern "C" fn nvme_rs_namespace_release(handle: *const c_void) {
    // SAFETY: By the function's safety requirement: the open's `Arc`.
    drop(unsafe { Arc::from_raw(handle.cast::<Handle>()) });
}

/// The disk's `ioctl`: NVMe ioctl `cmd` with argument `arg` through a block device open for
/// writing or not, a partition or not; blk-mq answers the others. 0, a positive NVMe status or
/// NSID, or a negative error.
///
/// # Safety
///
/// `handle` is the disk's private data, opened ([`nvme_rs_namespace_open`]) by the caller.
#[no_mangle]
unsafe extern "C" fn nvme_rs_namespace_ioctl(
    handle: *const c_void,
    cmd: c_uint,
    arg: c_ulong,
    open_for_write: bool,
    partition: bool,
) -> c_int {
    // SAFETY: Opened, so alive (safety requirement).
    let handle = unsafe { &*handle.cast::<Handle>() };
    let access = Access {
        open_for_write,
        partition,
        vectored: false,
    };
    match handle.ioctl(cmd, arg, access) {
        // An NSID above `i32::MAX` comes out negative, as from C.
        Ok(value) => value as c_int,
        Err(e) => e.to_errno(),
    }
}

/// A namespace's generic character device, `/dev/rsng<C>n<N>`: its ioctls whatever the disk's
/// state (partitions, exclusive openers).
#[pin_data]
pub(crate) struct NamespaceDevice {
    // Deregistered first (fields drop in order): the name outlives the registration.
    #[pin]
    registration: MiscDeviceRegistration<NamespaceFile>,
    handle: Arc<Handle>,
    /// The name the registration points to.
    _name: CString,
}

impl NamespaceDevice {
    /// Registers `/dev/rsng<instance>n<nsid>` for the namespace of `handle`.
    pub(crate) fn new(handle: Arc<Handle>, instance: u32) -> Result<Pin<KBox<Self>>> {
        let name = CString::try_from_fmt(fmt!("rsng{}n{}", instance, handle.nsid))?;
        // SAFETY: The string's bytes are on the heap: they stay where they are when `name` moves
        // into the device, which keeps them until its registration is gone (the field order).
        let registered_name: &'static CStr = unsafe { &*core::ptr::from_ref::<CStr>(&name) };
        KBox::try_pin_init(
            try_pin_init!(Self {
                handle,
                _name: name,
                registration <- MiscDeviceRegistration::register(MiscDeviceOptions {
                    name: registered_name,
                }),
            }),
            GFP_KERNEL,
        )
    }
}

/// An open `/dev/rsng<C>n<N>`.
pub(crate) struct NamespaceFile;

/// The namespace devices' file operations with this module as their owner (7.2).
static NAMESPACE_FILE_OPERATIONS: OwnedFileOperations = OwnedFileOperations::new();

#[vtable]
impl MiscDevice for NamespaceFile {
    type Ptr = Arc<Handle>;

    fn open(file: &File, misc: &MiscDeviceRegistration<Self>) -> Result<Arc<Handle>> {
        let registration = NonNull::from(misc).as_ptr();
        // SAFETY: Every registration of `NamespaceFile` is the `registration` field of a
        // `NamespaceDevice`, which stays registered, and so alive, while a file of it is being
        // opened. Only its handle is read.
        let handle = unsafe {
            let device = kernel::container_of!(registration, NamespaceDevice, registration);
            (*device).handle.clone()
        };
        pin_module(file, &NAMESPACE_FILE_OPERATIONS)?;
        Ok(handle)
    }

    fn release(handle: Arc<Handle>, _file: &File) {
        drop(handle);
    }

    fn ioctl(handle: ArcBorrow<'_, Handle>, file: &File, cmd: u32, arg: usize) -> Result<isize> {
        let access = Access {
            // SAFETY: An open file, for the call.
            open_for_write: unsafe { nvme_rs_open_for_write(file.as_ptr().cast()) },
            partition: false,
            vectored: false,
        };
        handle.ioctl(cmd, arg, access)
    }
}
