// SPDX-License-Identifier: GPL-2.0

//! A controller's namespaces, each with its disk: found at probe, and scanned again (C's
//! `nvme_scan_work`) when user space asks (`NVME_IOCTL_RESCAN`), after an admin command whose
//! effects may change them (Format NVM, Sanitize, namespace management and attachment), on an
//! asynchronous event, and after a reset or a sleep. A scan identifies the active namespaces,
//! brings every disk in line with its namespace's format ([`namespace::revalidate`]), deletes the
//! disks of namespaces that are gone or are other namespaces now, and adds disks for new ones.
//!
//! The set's lock is C's `scan_lock`: scans, admin commands that must run alone (the disks frozen
//! around them) and I/O passthrough commands (on a namespace's disk) hold it, so that no disk is
//! deleted under a command that uses it, and no scan sees a format change half done.

use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex, MutexGuard},
};

use crate::admin::IDENTIFY_SIZE;
use crate::blk::{self, TagSet};
use crate::command::{IdentifyController, IdentifyNvmController};
use crate::controller::Controller;
use crate::dma_local::{Coherent, Gfp};
use crate::namespace::{self, ControllerLimits, NamespaceDisk, NamespaceHandles, Revalidated};
use crate::tagset;

/// The namespaces with a disk, by ascending NSID.
pub(crate) struct Inventory {
    disks: KVec<NamespaceDisk>,
    /// The scan at probe has run: until then, no other scan adds disks (it would add them again).
    probed: bool,
    /// Removal deleted the disks: no scan adds any again.
    closed: bool,
    /// The disks are frozen for system sleep: no scan adds or deletes one (deleting one would
    /// wait for its I/O, which waits for the thaw); the thaw scans.
    asleep: bool,
}

/// A controller's namespaces and their disks.
#[pin_data]
pub(crate) struct NamespaceSet<'a> {
    ctrl: Arc<Controller<'a>>,
    /// Identify Controller and its NVM command set part: what the disks' limits come from.
    id: IdentifyController,
    nvm_id: IdentifyNvmController,
    /// Dropped before the tag set its disks are on (fields drop in order).
    #[pin]
    inventory: Mutex<Inventory>,
    /// The tag set every disk is on.
    tag_set: Arc<TagSet>,
    /// What makes each namespace's handle, through which its ioctls reach it.
    handles: Arc<dyn NamespaceHandles>,
    /// The controller number in the disks' names.
    instance: u32,
}

impl<'a> NamespaceSet<'a> {
    /// An empty set for `ctrl`, identified as `identity`, whose disks go on `tag_set`, are named
    /// after controller number `instance` and whose handles `handles` makes.
    /// [`Self::close`] deletes the disks.
    pub(crate) fn new(
        ctrl: Arc<Controller<'a>>,
        identity: (&IdentifyController, &IdentifyNvmController),
        (tag_set, handles): (Arc<TagSet>, Arc<dyn NamespaceHandles>),
        instance: u32,
    ) -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(Self {
                ctrl,
                id: *identity.0,
                nvm_id: *identity.1,
                tag_set,
                handles,
                instance,
                inventory <- new_mutex!(Inventory {
                    disks: KVec::new(),
                    probed: false,
                    closed: false,
                    asleep: false,
                }),
            }),
            GFP_KERNEL,
        )
    }

    /// The controller's Identify Controller data, as read at probe.
    pub(crate) fn identity(&self) -> &IdentifyController {
        &self.id
    }

    /// How many namespaces have a disk.
    pub(crate) fn count(&self) -> usize {
        self.inventory.lock().disks.len()
    }

    fn limits(&self) -> ControllerLimits<'_> {
        ControllerLimits::new(&self.ctrl, &self.id, &self.nvm_id)
    }

    /// Makes a disk for each active namespace the driver serves, through `buf`, then adds them
    /// all. Every disk joins the tag set before the first is added, because adding one starts I/O
    /// (the partition scan): a queue joining later would wait for that I/O (the set's queues are
    /// frozen when it becomes shared).
    pub(crate) fn scan_at_probe(&self, buf: &Coherent<'_, u8>) -> Result {
        let mut inventory = self.inventory.lock();
        let limits = self.limits();
        for nsid in namespace::active_nsids(&self.ctrl, &self.id, buf)? {
            // SAFETY: The set holds the tag set, which outlives its disks.
            let made = unsafe {
                NamespaceDisk::new(
                    &self.ctrl,
                    buf,
                    &limits,
                    (&self.tag_set, &*self.handles),
                    self.instance,
                    nsid,
                )
            }?;
            if let Some(entry) = made {
                inventory.disks.push(entry, GFP_KERNEL)?;
            }
        }
        inventory.probed = true;
        inventory
            .disks
            .iter_mut()
            .try_for_each(|entry| entry.add(&self.ctrl, self.instance))
    }

    /// Scans the namespaces again: every disk in line with its namespace's format, the disks of
    /// namespaces that are gone deleted, disks added for new ones. Fails with the first error;
    /// every namespace is done whatever another's answer.
    pub(crate) fn rescan(&self) -> Result {
        let buf = self.identify_buffer()?;
        let mut inventory = self.inventory.lock();
        if !inventory.probed || inventory.closed || inventory.asleep || self.ctrl.is_removing() {
            return Ok(());
        }
        let active = namespace::active_nsids(&self.ctrl, &self.id, &buf)?;
        let revalidated = self.revalidate(&mut inventory, &buf, &active, false);
        let updated = self.update(&mut inventory, &buf, &active);
        revalidated.and(updated)
    }

    /// Freezes every disk's queue (new requests wait) and waits, an I/O timeout at most, for what
    /// is in flight, for an admin command that must run alone; `EBUSY` (and nothing
    /// frozen) when it does not end in time. Dropping the returned value scans the namespaces
    /// again, lets requests in, and only then deletes and adds disks.
    pub(crate) fn freeze_for_command(&self) -> Result<FrozenSet<'_, 'a>> {
        let buf = self.identify_buffer()?;
        let inventory = self.inventory.lock();
        if inventory.asleep {
            return Err(EBUSY);
        }
        let noio = blk::NoIo::begin();
        inventory.disks.iter().for_each(|e| e.disk().start_freeze());
        let timeout = tagset::timeout_jiffies();
        if !inventory
            .disks
            .iter()
            .all(|e| e.disk().wait_frozen(timeout))
        {
            inventory.disks.iter().for_each(|e| e.disk().unfreeze());
            return Err(EBUSY);
        }
        Ok(FrozenSet {
            set: self,
            inventory,
            buf,
            noio: Some(noio),
        })
    }

    /// A scan when the returned value is dropped: after an admin command that may change which
    /// namespaces there are, whatever its answer.
    pub(crate) fn scan_after(&self) -> ScanAfter<'_, 'a> {
        ScanAfter(self)
    }

    /// Runs `f` on the only namespace with a disk, the inventory locked meanwhile: `ENOTTY`
    /// without a namespace and `EINVAL` with several, as C's `NVME_IOCTL_IO_CMD` on a controller.
    pub(crate) fn with_only_namespace<R>(
        &self,
        f: impl FnOnce(&NamespaceDisk) -> Result<R>,
    ) -> Result<R> {
        let inventory = self.inventory.lock();
        match inventory.disks.as_slice() {
            [] => Err(ENOTTY),
            [only] => f(only),
            _ => {
                dev_warn!(
                    self.ctrl.pdev,
                    "NVME_IOCTL_IO_CMD not supported when multiple namespaces present\n"
                );
                Err(EINVAL)
            }
        }
    }

    /// Runs `f` on the namespace `which` names, the inventory locked meanwhile: `ENODEV` once it
    /// is gone (its disk deleted, or about to be).
    pub(crate) fn with_namespace<R>(
        &self,
        which: NamespaceRef,
        f: impl FnOnce(&NamespaceDisk) -> Result<R>,
    ) -> Result<R> {
        let inventory = self.inventory.lock();
        match inventory.disks.iter().find(|e| e.has_key(which.key)) {
            Some(entry) if !entry.is_replaced() => f(entry),
            _ => Err(ENODEV),
        }
    }

    /// Freezes every disk's queue and waits, an I/O timeout at most, for the requests in them to
    /// end (system sleep). No scan changes the disks until [`Self::thaw_all`].
    pub(crate) fn freeze_all(&self) {
        let mut inventory = self.inventory.lock();
        inventory.asleep = true;
        inventory.disks.iter().for_each(|e| e.disk().start_freeze());
        let timeout = tagset::timeout_jiffies();
        for entry in inventory.disks.iter() {
            if !entry.disk().wait_frozen(timeout) {
                dev_warn!(self.ctrl.pdev, "I/O still in flight at suspend\n");
            }
        }
    }

    /// Lets requests into every disk's queue again, after [`Self::freeze_all`], and has the
    /// namespaces scanned, as after any reset: they may have changed during the sleep.
    pub(crate) fn thaw_all(&self) {
        let mut inventory = self.inventory.lock();
        inventory.disks.iter().for_each(|e| e.disk().unfreeze());
        inventory.asleep = false;
        drop(inventory);
        self.ctrl.wake_async_events(true);
    }

    /// Deletes every disk (waiting for its I/O), for good: later scans add none.
    pub(crate) fn close(&self) {
        let mut inventory = self.inventory.lock();
        inventory.closed = true;
        inventory.disks.clear();
    }

    /// A buffer for Identify, allocated before the inventory is locked (and disks frozen).
    fn identify_buffer(&self) -> Result<Coherent<'a, u8>> {
        Coherent::<u8>::alloc(self.ctrl.pdev.as_ref(), IDENTIFY_SIZE, Gfp::KERNEL)
    }

    /// Identifies every namespace of `inventory` that is `active` again and brings its disk in
    /// line ([`namespace::revalidate`]); one whose identifiers changed is another namespace, whose
    /// disk [`Self::update`] replaces. With `frozen` (their queues are), one that cannot be
    /// identified, is no longer active or is another is left unusable: its format is unknown, or
    /// it is gone.
    fn revalidate(
        &self,
        inventory: &mut Inventory,
        buf: &Coherent<'_, u8>,
        active: &[u32],
        frozen: bool,
    ) -> Result {
        let limits = self.limits();
        let timeout = tagset::timeout_jiffies();
        let mut result = Ok(());
        for entry in inventory.disks.iter_mut() {
            let (namespace, disk) = (entry.namespace(), entry.disk());
            let nsid = namespace.nsid;
            if !active.contains(&nsid) {
                if frozen {
                    namespace.set_unusable(disk);
                }
                continue;
            }
            let done =
                namespace::revalidate(&self.ctrl, buf, &limits, namespace, disk, frozen, timeout);
            match done {
                Ok(Revalidated::InLine) => {}
                Ok(Revalidated::Replaced) => {
                    dev_warn!(
                        self.ctrl.pdev,
                        "identifiers changed for nsid {}: another namespace\n",
                        nsid
                    );
                    if frozen {
                        namespace.set_unusable(disk);
                    }
                    entry.set_replaced();
                }
                Err(e) => {
                    if frozen {
                        namespace.set_unusable(disk);
                    }
                    result = result.and(Err(e));
                }
            }
        }
        result
    }

    /// Deletes the disks of namespaces no longer `active` and adds disks for active namespaces
    /// without one (through `buf`), keeping the NSID order. Not while a reset is under way: a disk
    /// joining the tag set then would miss its quiesce (`EBUSY`, the next scan adds it).
    fn update(&self, inventory: &mut Inventory, buf: &Coherent<'_, u8>, active: &[u32]) -> Result {
        if !inventory.probed {
            return Ok(());
        }
        let ctrl = &*self.ctrl;
        inventory.disks.retain(|entry| {
            let keep = active.contains(&entry.namespace().nsid) && !entry.is_replaced();
            if !keep {
                dev_info!(
                    ctrl.pdev,
                    "namespace {} is gone: disk deleted\n",
                    entry.namespace().nsid
                );
            }
            // Deleting the disk (on drop) waits for its I/O.
            keep
        });
        let limits = self.limits();
        let mut result = Ok(());
        for &nsid in active {
            if inventory.disks.iter().any(|e| e.namespace().nsid == nsid) {
                continue;
            }
            if ctrl.is_resetting() || ctrl.is_dead() {
                return result.and(Err(EBUSY));
            }
            inventory.disks.reserve(1, GFP_KERNEL)?;
            // SAFETY: The set holds the tag set, which outlives its disks.
            let made = unsafe {
                NamespaceDisk::new(
                    ctrl,
                    buf,
                    &limits,
                    (&self.tag_set, &*self.handles),
                    self.instance,
                    nsid,
                )
            };
            let mut entry = match made {
                Ok(Some(entry)) => entry,
                Ok(None) => continue,
                Err(e) => {
                    result = result.and(Err(e));
                    continue;
                }
            };
            // Added before it joins the inventory: a disk that fails to add is dropped whole.
            if let Err(e) = entry.add(ctrl, self.instance) {
                result = result.and(Err(e));
                continue;
            }
            dev_info!(ctrl.pdev, "namespace {}: disk added\n", nsid);
            // Does not allocate: reserved above.
            inventory
                .disks
                .push_within_capacity(entry)
                .map_err(|_| ENOMEM)?;
        }
        inventory.disks.sort_unstable_by_key(|e| e.namespace().nsid);
        result
    }
}

/// Which namespace a command through one of its own devices goes to: its NSID, and the key of the
/// disk its opener holds (the disk's private data, which the opener keeps alive), so that another
/// namespace attached under the same NSID is not taken for it.
#[derive(Clone, Copy)]
pub(crate) struct NamespaceRef {
    pub(crate) nsid: u32,
    pub(crate) key: *const core::ffi::c_void,
}

/// A scan of a [`NamespaceSet`] when dropped ([`NamespaceSet::scan_after`]).
pub(crate) struct ScanAfter<'s, 'a>(&'s NamespaceSet<'a>);

impl Drop for ScanAfter<'_, '_> {
    fn drop(&mut self) {
        if let Err(e) = self.0.rescan() {
            dev_warn!(self.0.ctrl.pdev, "namespaces not rescanned ({:?})\n", e);
        }
    }
}

/// The disks of a [`NamespaceSet`], frozen while an admin command that may change their
/// namespaces runs, the inventory locked.
pub(crate) struct FrozenSet<'s, 'a> {
    set: &'s NamespaceSet<'a>,
    inventory: MutexGuard<'s, Inventory>,
    /// For the Identify commands after the command, allocated before the freeze.
    buf: Coherent<'a, u8>,
    /// No allocation does I/O while the disks are frozen (`memalloc_noio_save`).
    noio: Option<blk::NoIo>,
}

impl Drop for FrozenSet<'_, '_> {
    fn drop(&mut self) {
        let set = self.set;
        if set.ctrl.is_removing() {
            // The command was given up; nothing is known of the formats, and removal deletes the
            // disks (which waits for their queues to run).
            for entry in self.inventory.disks.iter() {
                entry.namespace().set_unusable(entry.disk());
                entry.disk().unfreeze();
            }
            return;
        }
        let active = namespace::active_nsids(&set.ctrl, &set.id, &self.buf);
        let revalidated = match &active {
            Ok(active) => set.revalidate(&mut self.inventory, &self.buf, active, true),
            Err(e) => {
                // Nothing is known of any namespace's format now.
                for entry in self.inventory.disks.iter() {
                    entry.namespace().set_unusable(entry.disk());
                }
                Err(*e)
            }
        };
        if let Err(e) = revalidated {
            dev_warn!(set.ctrl.pdev, "namespaces not identified again ({:?})\n", e);
        }
        for entry in self.inventory.disks.iter() {
            entry.disk().unfreeze();
        }
        self.noio = None;
        // Disks are deleted and added only with every queue running: deleting one freezes it.
        if let Ok(active) = active {
            if let Err(e) = set.update(&mut self.inventory, &self.buf, &active) {
                dev_warn!(set.ctrl.pdev, "namespaces not rescanned ({:?})\n", e);
            }
        }
    }
}
