// SPDX-License-Identifier: GPL-2.0

//! The controller's character device, `/dev/rsnvme<C>` (the C driver's `/dev/nvme<C>`), the NVMe
//! ioctls on it that nvme-cli uses, and its sysfs `reset_controller` (the C driver's, in
//! `/sys/class/nvme/nvme<C>`, is here in `/sys/class/misc/rsnvme<C>`).
//!
//! An open file outlives the driver's binding (a process may hold it across an unbind), so a file
//! holds only a [`Gate`], which reaches the controller while the device is bound: removal closes it,
//! waiting for an ioctl in progress, and later ioctls get `ENODEV`, as with the C driver.

use core::{cell::UnsafeCell, ptr::NonNull};

use kernel::{
    fs::File,
    miscdevice::{MiscDevice, MiscDeviceOptions, MiscDeviceRegistration},
    new_mutex,
    prelude::*,
    sync::{Arc, ArcBorrow, Mutex},
};

use kernel::{
    bindings,
    ffi::{c_char, c_int, c_void},
};

use crate::command::IdentifyController;
use crate::passthrough::{
    capable_sys_admin, Passthrough, PassthruCmd, PassthruCmd64, NVME_IOCTL_ADMIN64_CMD,
    NVME_IOCTL_ADMIN_CMD, NVME_IOCTL_IO_CMD, NVME_IOCTL_RESCAN, NVME_IOCTL_RESET,
};
use crate::reset;
use crate::sysfs;

/// The devices' names, `rsnvme0` to `rsnvme63` (one per controller number), NUL-terminated and
/// `'static`, as a misc device's name must be.
static NAMES: [[u8; 9]; 64] = names();

const fn names() -> [[u8; 9]; 64] {
    let mut names = [[0u8; 9]; 64];
    let mut i = 0;
    while i < 64 {
        let mut j = 0;
        while j < 6 {
            names[i][j] = b"rsnvme"[j];
            j += 1;
        }
        if i < 10 {
            names[i][6] = b'0' + i as u8;
        } else {
            names[i][6] = b'0' + (i / 10) as u8;
            names[i][7] = b'0' + (i % 10) as u8;
        }
        i += 1;
    }
    names
}

/// What a file reaches, the controller's or a namespace's: the controller's [`Passthrough`] (and
/// through it the controller) while the device is bound and its [`ControllerDevice`] is there.
#[pin_data]
pub(crate) struct Gate {
    #[pin]
    target: Mutex<Option<Published>>,
}

impl Gate {
    /// A closed gate, for [`ControllerDevice::new`] to open.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(pin_init!(Self { target <- new_mutex!(None) }), GFP_KERNEL)
    }

    /// Runs `f` on the passthrough while the controller is bound; `ENODEV` after.
    pub(crate) fn with_passthrough<R>(
        &self,
        f: impl FnOnce(&mut Passthrough<'_>) -> Result<R>,
    ) -> Result<R> {
        let target = self.target.lock();
        let Some(published) = &*target else {
            return Err(ENODEV);
        };
        // SAFETY: Published, so it points to a live `Passthrough` (type invariant), in a cell,
        // which this thread alone uses while it holds the gate's lock.
        f(unsafe { &mut *published.0.as_ptr().cast::<Passthrough<'_>>() })
    }

    /// Closes the gate: what runs through it ends first, later calls get `ENODEV`.
    fn close(&self) {
        *self.target.lock() = None;
    }
}

/// A gate that a [`ControllerDevice`] opened, closed when dropped: also when the device fails to
/// register.
struct OpenGate(Arc<Gate>);

impl Drop for OpenGate {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// A pointer to the [`Passthrough`] of a bound controller, its lifetime erased.
///
/// # Invariants
///
/// It points to the `passthrough` of a live, pinned [`ControllerDevice`], which takes it out of its
/// gate (under the gate's lock) before it goes.
struct Published(NonNull<Passthrough<'static>>);

// SAFETY: The pointer is only followed under the gate's lock, from any thread; the passthrough is
// used by one thread at a time that way.
unsafe impl Send for Published {}

/// The character device of a bound controller.
#[pin_data(PinnedDrop)]
pub(crate) struct ControllerDevice<'a> {
    // Dropped first (fields drop in this order; they are initialised in the initialiser's): a
    // file being opened meanwhile still finds the gate.
    #[pin]
    registration: MiscDeviceRegistration<ControllerFile>,
    gate: OpenGate,
    /// What the sysfs attributes show; fixed at probe, as C's (it reads them again only at a
    /// firmware activation, which nvme_rs does not do).
    identity: IdentifyController,
    /// Reached through the gate by one thread at a time (a cell: `&self` does not cover it).
    passthrough: UnsafeCell<Passthrough<'a>>,
}

impl<'a> ControllerDevice<'a> {
    /// Registers `/dev/rsnvme<instance>`, with its sysfs attributes, for `passthrough`'s
    /// controller, and opens `gate` to it (the namespaces' files reach it there too).
    pub(crate) fn new(
        gate: Arc<Gate>,
        passthrough: Passthrough<'a>,
        instance: u32,
    ) -> Result<Pin<KBox<Self>>> {
        let bytes = NAMES.get(instance as usize).ok_or(EINVAL)?;
        let name = CStr::from_bytes_until_nul(bytes).map_err(|_| EINVAL)?;
        KBox::try_pin_init(
            try_pin_init!(&this in Self {
                identity: *passthrough.identity(),
                passthrough: UnsafeCell::new(passthrough),
                gate: {
                    // INVARIANT: the field is initialised (the fields are in order) and pinned
                    // with `self`; the gate closes when `self`, or this field alone if a later
                    // one fails, is dropped.
                    *gate.target.lock() = Some(Published(
                        // SAFETY: `this` is the struct being initialised; no reference to it is
                        // made. The cell is transparent: its address is the passthrough's.
                        unsafe { NonNull::new_unchecked(
                            (&raw mut (*this.as_ptr()).passthrough).cast()
                        ) },
                    ));
                    OpenGate(gate)
                },
                // Files can be opened from here on: the gate is open.
                registration <- MiscDeviceRegistration::register(MiscDeviceOptions { name }),
            }),
            GFP_KERNEL,
        )
        .inspect(|device| {
            // SAFETY: A registered misc device's device; the groups are static.
            let ret = unsafe {
                bindings::device_add_groups(device.device_raw(), controller_attr_groups())
            };
            if ret != 0 {
                pr_warn!("nvme_rs: no sysfs attributes ({})\n", ret);
            }
        })
    }

    /// Closes the gate: ioctls and resets through the device end first, later ones get `ENODEV`.
    /// The bounce buffer stays until the device is dropped, which the driver does once the
    /// controller is disabled: a command a privileged caller left with it (a queue, a doorbell
    /// buffer) may point there until then.
    pub(crate) fn close(&self) {
        self.gate.0.close();
    }

    /// The misc device's `struct device`.
    fn device_raw(&self) -> *mut bindings::device {
        // SAFETY: Registered (the value exists only so), so its `this_device` is set.
        unsafe { (*self.registration.as_raw()).this_device }
    }
}

#[pinned_drop]
impl PinnedDrop for ControllerDevice<'_> {
    fn drop(self: Pin<&mut Self>) {
        // Waits for an ioctl or reset in progress; the files still open find the gate closed.
        self.close();
        // SAFETY: The registered device, whose attributes these are (or were never made, which an
        // unnamed group's removal allows). It waits for a show or store in progress.
        unsafe { bindings::device_remove_groups(self.device_raw(), controller_attr_groups()) };
    }
}

/// An open `/dev/rsnvme<C>`.
pub(crate) struct ControllerFile;

#[vtable]
impl MiscDevice for ControllerFile {
    type Ptr = Arc<Gate>;

    fn open(file: &File, misc: &MiscDeviceRegistration<Self>) -> Result<Arc<Gate>> {
        let registration = core::ptr::from_ref(misc).cast_mut();
        // SAFETY: Every registration of `ControllerFile` is the `registration` field of a
        // `ControllerDevice`, which stays registered, and so alive, while a file of it is being
        // opened. Only its `gate` is read (the lifetime does not change the layout).
        let gate = unsafe {
            let device =
                kernel::container_of!(registration, ControllerDevice<'static>, registration);
            (*device).gate.0.clone()
        };
        pin_module(file, &CONTROLLER_FILE_OPERATIONS)?;
        Ok(gate)
    }

    fn release(gate: Arc<Gate>, _file: &File) {
        drop(gate);
    }

    fn ioctl(gate: ArcBorrow<'_, Gate>, file: &File, cmd: u32, arg: usize) -> Result<isize> {
        // SAFETY: An open file, for the call.
        let open_for_write = unsafe { nvme_rs_open_for_write(file.as_ptr().cast()) };
        gate.with_passthrough(|passthrough| match cmd {
            NVME_IOCTL_ADMIN_CMD => passthrough.admin::<PassthruCmd>(arg),
            NVME_IOCTL_ADMIN64_CMD => passthrough.admin::<PassthruCmd64>(arg),
            NVME_IOCTL_IO_CMD => passthrough.io::<PassthruCmd>(arg, open_for_write),
            // C has no 64-bit I/O command on the controller's device.
            NVME_IOCTL_RESCAN => {
                if !capable_sys_admin() {
                    return Err(EACCES);
                }
                passthrough.rescan().map(|()| 0)
            }
            NVME_IOCTL_RESET => {
                if !capable_sys_admin() {
                    return Err(EACCES);
                }
                reset::reset(passthrough.controller(), None).map(|()| 0)
            }
            _ => Err(ENOTTY),
        })
    }
}

extern "C" {
    /// The controller device's attributes (`chardev_shim.c`: `DEVICE_ATTR_*` are macros).
    // `c_void`: an attribute's type is not FFI-safe in Rust where lockdep is off (an empty
    // `lockdep_map`), though the pointer is.
    fn nvme_rs_controller_attr_groups() -> *const c_void;
    /// Whether the file was opened for writing (`FMODE_WRITE`, as C asks).
    pub(crate) fn nvme_rs_open_for_write(file: *mut c_void) -> bool;
}

/// The controller device's attribute groups, a NULL-terminated array of one.
fn controller_attr_groups() -> *const *const bindings::attribute_group {
    // SAFETY: Returns the address of a static.
    unsafe { nvme_rs_controller_attr_groups() }.cast()
}

/// The `ControllerDevice` of misc device `dev`.
///
/// # Safety
///
/// `dev` is the device of a registered `ControllerDevice`'s misc device, during a sysfs show or
/// store (which keeps it registered, and so the `ControllerDevice` alive, until it returns).
unsafe fn controller_device<'d>(dev: *mut bindings::device) -> &'d ControllerDevice<'static> {
    // SAFETY: A misc device's driver data is its `struct miscdevice` (`misc_register`), which is
    // the `registration` of a `ControllerDevice` (`MiscDeviceRegistration` is transparent), alive
    // while the show or store runs (safety requirement). The lifetime does not change the layout.
    unsafe {
        let registration = (*dev)
            .driver_data
            .cast::<MiscDeviceRegistration<ControllerFile>>();
        &*kernel::container_of!(registration, ControllerDevice<'static>, registration)
    }
}

/// The show of `model`, `serial`, `firmware_rev` and `cntlid` (the attribute `name`): as C's, a
/// string field up to its first NUL, with its padding, or the number, and a newline. Returns the
/// bytes written to `buf`, a page.
///
/// # Safety
///
/// As for [`controller_device`]; `name` is the attribute's NUL-terminated name and `buf` the page
/// that sysfs hands a show.
#[no_mangle]
unsafe extern "C" fn nvme_rs_show_identity(
    dev: *mut bindings::device,
    name: *const c_char,
    buf: *mut u8,
) -> isize {
    // SAFETY: By the function's safety requirements.
    let (id, name) = unsafe { (&controller_device(dev).identity, CStr::from_char_ptr(name)) };
    let text: &[u8] = match name.to_bytes() {
        b"model" => &id.mn,
        b"serial" => &id.sn,
        b"firmware_rev" => &id.fr,
        // SAFETY: `buf` is a show's page (safety requirement).
        b"cntlid" => return unsafe { sysfs::show_decimal(buf, id.cntlid.into()) },
        _ => return EINVAL.to_errno() as isize,
    };
    // SAFETY: As above.
    unsafe { sysfs::show_bytes(buf, text) }
}

/// The store of `reset_controller`: resets the controller of misc device `dev`; 0 or an error.
///
/// # Safety
///
/// `dev` is the device of a registered `ControllerDevice`'s misc device, during a sysfs store
/// (which keeps the device registered).
#[no_mangle]
unsafe extern "C" fn nvme_rs_reset_controller(dev: *mut bindings::device) -> c_int {
    // SAFETY: By the function's safety requirement. Only the gate is used.
    let gate = unsafe { &controller_device(dev).gate.0 };
    match gate.with_passthrough(|passthrough| reset::reset(passthrough.controller(), None)) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// The controller device's file operations with this module as their owner (7.2).
static CONTROLLER_FILE_OPERATIONS: OwnedFileOperations = OwnedFileOperations::new();

/// 7.2's misc devices leave their file operations' owner unset, so an open file would not keep
/// the module loaded: the file switches to a copy of its operations that names this module
/// (`owned`, one for each misc device type), as `replace_fops` does, taking the module reference
/// that `fops_get` takes for such operations. The VFS drops it (`fops_put` in `__fput`) after the
/// release has returned, so no code of the module runs after the last put. (7.3 sets the owner.)
#[cfg(kernel_before_7_3)]
pub(crate) fn pin_module(file: &File, owned: &'static OwnedFileOperations) -> Result {
    use core::sync::atomic::Ordering::{AcqRel, Acquire, Release};
    // SAFETY: The module is live: this code runs.
    if !unsafe { bindings::try_module_get(crate::THIS_MODULE.as_ptr()) } {
        return Err(ENODEV);
    }
    if owned
        .state
        .compare_exchange(
            OwnedFileOperations::EMPTY,
            OwnedFileOperations::FILLING,
            AcqRel,
            Acquire,
        )
        .is_ok()
    {
        // SAFETY: A file being opened has operations: the misc device's, a static table (its
        // owner unset, so `misc_open` took no reference for them), the same for every device of
        // the type `owned` is for.
        let mut fops = unsafe { core::ptr::read((*file.as_ptr()).f_op) };
        fops.owner = crate::THIS_MODULE.as_ptr();
        // SAFETY: This thread moved the state from `EMPTY`: the only writer, and no reader yet.
        unsafe { (*owned.fops.get()).write(fops) };
        owned.state.store(OwnedFileOperations::READY, Release);
    } else {
        // Another open is copying them (a few hundred bytes).
        while owned.state.load(Acquire) != OwnedFileOperations::READY {
            core::hint::spin_loop();
        }
    }
    // SAFETY: `READY`: initialised, never written again, and static. The file is being opened:
    // its `open` may give it other operations.
    unsafe { (*file.as_ptr()).f_op = (*owned.fops.get()).as_ptr() };
    Ok(())
}

/// A misc device type's file operations with this module as their owner (7.2), copied at the
/// first open.
///
/// # Invariants
///
/// `fops` is initialised once `state` is `READY`, and not written after.
pub(crate) struct OwnedFileOperations {
    #[cfg(kernel_before_7_3)]
    state: core::sync::atomic::AtomicU8,
    #[cfg(kernel_before_7_3)]
    fops: UnsafeCell<core::mem::MaybeUninit<bindings::file_operations>>,
}

impl OwnedFileOperations {
    #[cfg(kernel_before_7_3)]
    const EMPTY: u8 = 0;
    #[cfg(kernel_before_7_3)]
    const FILLING: u8 = 1;
    #[cfg(kernel_before_7_3)]
    const READY: u8 = 2;

    /// None copied yet.
    pub(crate) const fn new() -> Self {
        Self {
            #[cfg(kernel_before_7_3)]
            state: core::sync::atomic::AtomicU8::new(Self::EMPTY),
            #[cfg(kernel_before_7_3)]
            fops: UnsafeCell::new(core::mem::MaybeUninit::uninit()),
        }
    }
}

// SAFETY: `fops` is written once, by the thread that moved `state` from `EMPTY`, and read only
// after `state` is `READY` (release and acquire order the two).
#[cfg(kernel_before_7_3)]
unsafe impl Sync for OwnedFileOperations {}

#[cfg(not(kernel_before_7_3))]
pub(crate) fn pin_module(_file: &File, _owned: &'static OwnedFileOperations) -> Result {
    Ok(())
}
