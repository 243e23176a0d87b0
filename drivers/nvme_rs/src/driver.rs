// SPDX-License-Identifier: GPL-2.0

//! nvme_rs: a Rust blk-mq driver for NVMe controllers as QEMU emulates them, with its own private
//! `dma_local` DMA wrapper.
//!
//! Probe resets and enables the controller, identifies it, asks for one I/O queue pair per CPU,
//! creates them with one interrupt vector each, and adds a disk per active namespace
//! (`/dev/rsnvme<C>n<N>`). Remove deletes the disks, shuts the controller down and only then frees
//! the queues, so no DMA follows the unbind.

mod admin;
mod blk;
mod chardev;
mod command;
#[allow(dead_code, unused_imports, unused_macros, reason = "vendored")]
mod compat;
mod controller;
mod counters;
mod dma_local;
mod effects;
mod events;
mod faults;
mod identifiers;
mod io;
mod namespace;
mod nsdev;
mod passthrough;
mod prp;
mod queue;
mod regs;
mod request;
mod reset;
mod scan;
mod sgl;
mod shadow;
mod submit;
mod sysfs;
mod tagset;
mod timeout;

use core::sync::atomic::{AtomicU64, Ordering};

use kernel::{
    device::{Bound, Core},
    pci,
    prelude::*,
    sync::Arc,
};

use blk::TagSet;
use chardev::{ControllerDevice, Gate};
use controller::Controller;
use counters::CounterFiles;
use dma_local::{Coherent, Gfp, Mask};
use effects::Effects;
use events::AsyncEvents;
use io::IoQueue;
use namespace::ControllerLimits;
use nsdev::Handles;
use passthrough::Passthrough;
use reset::Stop;
use scan::NamespaceSet;

/// The module: the fault injection points, then the PCI driver with sleep and shutdown callbacks
/// (`compat::pm`), registered as `kernel::module_driver!` does.
#[pin_data]
struct NvmeModule {
    // Unregistered first (fields drop in order): no device uses the fault points after.
    #[pin]
    driver: kernel::driver::Registration<compat::pm::Adapter<NvmeDriver>>,
    fault_points: faults::FaultPoints,
}

impl kernel::InPlaceModule for NvmeModule {
    fn init(module: &'static kernel::ThisModule) -> impl PinInit<Self, Error> {
        // The fault points exist before the first probe, which a test may want to fail.
        try_pin_init!(Self {
            fault_points: faults::FaultPoints::create(),
            driver <- kernel::driver::Registration::new(
                <Self as kernel::ModuleMetadata>::NAME,
                module,
            ),
        })
    }
}

kernel::prelude::module! {
    type: NvmeModule,
    name: "nvme_rs",
    authors: ["rust-dma-drivers"],
    description: "NVMe block driver in Rust",
    license: "GPL",
    params: {
        sgl_threshold: u32 {
            default: 32768,
            description: "Use SGLs for requests whose segments average at least this many bytes \
                (0: only where PRPs cannot describe the data)",
        },
        io_queue_depth: u32 {
            default: 1024,
            description: "Entries of each I/O queue, 2 to 4095 (the controller may take fewer)",
        },
        admin_timeout: u32 {
            default: 5,
            description: "Seconds an admin command may take before the driver disables the \
                controller (at least 1)",
        },
        io_timeout: u32 {
            default: 30,
            description: "Seconds an I/O command may take before the driver aborts it \
                (0: blk-mq's default, 30)",
        },
    },
}

compat::pci_device_table!(
    PCI_TABLE,
    <NvmeDriver as pci::Driver>::IdInfo,
    // Mass storage, non-volatile memory, NVM Express.
    [(pci::DeviceId::from_class(0x010802, 0xffffff), ())]
);

struct NvmeDriver;

/// Controller numbers in use, for disk names.
static INSTANCES: AtomicU64 = AtomicU64::new(0);

/// A controller number, free again on drop.
struct Instance(u32);

impl Instance {
    fn take() -> Result<Self> {
        let mut used = INSTANCES.load(Ordering::Relaxed);
        loop {
            let free = (!used).trailing_zeros();
            if free >= 64 {
                return Err(EBUSY);
            }
            match INSTANCES.compare_exchange(
                used,
                used | (1 << free),
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(Self(free)),
                Err(now) => used = now,
            }
        }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        INSTANCES.fetch_and(!(1 << self.0), Ordering::AcqRel);
    }
}

/// A bound NVMe controller. It is built step by step in probe, and `Drop` tears down whatever
/// exists, in the order that keeps the controller from touching freed memory.
pub(crate) struct Nvme<'bound> {
    /// `/sys/kernel/debug/rsnvme<C>/counters/`, once the I/O queues are there.
    counter_files: Option<CounterFiles>,
    /// The asynchronous event handler, last of all in probe.
    events: Option<Pin<KBox<AsyncEvents<'bound>>>>,
    /// `/dev/rsnvme<C>`, once the disks are there.
    chardev: Option<Pin<KBox<ControllerDevice<'bound>>>>,
    /// The namespaces and their disks, on the tag set.
    namespaces: Option<Arc<NamespaceSet<'bound>>>,
    /// Shared with the namespace set, whose disks are on it; freed once both let go, after the
    /// set deleted its disks.
    tag_set: Option<Arc<TagSet>>,
    io_queues: KVec<Pin<KBox<IoQueue<'bound>>>>,
    ctrl: Arc<Controller<'bound>>,
    vectors: Option<compat::IrqVectors<'bound>>,
    instance: Instance,
}

impl pci::Driver for NvmeDriver {
    type IdInfo = ();
    type Data<'bound> = Nvme<'bound>;

    const ID_TABLE: pci::IdTable<Self::IdInfo> = &PCI_TABLE;

    fn probe<'bound>(
        pdev: &'bound pci::Device<Core<'_>>,
        _info: compat::ProbeInfo<'bound, Self::IdInfo>,
    ) -> impl PinInit<Self::Data<'bound>, Error> + 'bound {
        let bound: &'bound pci::Device<Bound> = pdev;
        dma_local::enable_bus_master(pdev).and_then(|()| Nvme::probe(bound))
    }
}

/// System sleep and power off, as the C driver's simple suspend: the disks' queues frozen (what
/// is in flight ends first, so that no request holds a tag while the CPUs go offline), a normal
/// shutdown, and after it a reset and the queues thawed; a request still in flight at the
/// shutdown is sent again once the controller is back.
impl compat::pm::PowerManaged for NvmeDriver {
    fn suspend(nvme: &Nvme<'_>) -> Result {
        nvme.freeze();
        match reset::stop(&nvme.ctrl, Stop::Shutdown) {
            // A dead controller has nothing to stop, and must not keep the system awake.
            Err(e) if e == ENODEV => Ok(()),
            Err(e) => {
                // No resume follows a failed suspend.
                nvme.thaw();
                Err(e)
            }
            Ok(()) => Ok(()),
        }
    }

    fn resume(nvme: &Nvme<'_>) -> Result {
        let result = reset::start(&nvme.ctrl);
        nvme.thaw();
        result.inspect(|()| {
            dev_info!(nvme.ctrl.pdev, "resumed\n");
            nvme.ctrl.counters.resumes.fetch_add(1, Ordering::Relaxed);
        })
    }

    fn shutdown(nvme: &Nvme<'_>) {
        nvme.freeze();
        if reset::stop(&nvme.ctrl, Stop::Shutdown).is_ok() {
            dev_info!(nvme.ctrl.pdev, "shut down\n");
        }
    }
}

impl<'bound> Nvme<'bound> {
    /// Freezes the disks' queues (new requests wait) and waits, an I/O timeout at most, for the
    /// requests in them to end.
    fn freeze(&self) {
        if let Some(namespaces) = &self.namespaces {
            namespaces.freeze_all();
        }
    }

    /// Lets requests into the disks' queues again, after [`Nvme::freeze`].
    fn thaw(&self) {
        if let Some(namespaces) = &self.namespaces {
            namespaces.thaw_all();
        }
    }

    /// Brings a controller up, step by step as C's `nvme_probe` does. A step that fails leaves
    /// what the earlier ones made to `Drop`.
    fn probe(pdev: &'bound pci::Device<Bound>) -> Result<Self> {
        // SAFETY: The first step: nothing is allocated or mapped yet.
        unsafe { set_dma_limits(pdev) }?;
        // As C, the controller is enabled with an interrupt vector allocated: QEMU's controller
        // ties its admin queue to vector 0 only if interrupts are set up then, and would never
        // signal an admin completion (an asynchronous event) otherwise.
        let vector = compat::alloc_irq_vectors(pdev, 1, 1)?;
        let mut nvme = Nvme::enable(pdev)?;
        nvme.vectors = Some(vector);
        let ctrl = nvme.ctrl.clone();
        let depth = io::queue_depth(&ctrl)?;
        // For every Identify; a timed-out one resets or kills the controller (`admin_command`),
        // which disables it, before `buf` goes.
        let buf = Coherent::<u8>::alloc(pdev.as_ref(), admin::IDENTIFY_SIZE, Gfp::KERNEL)?;
        let (id, nvm_id) = ctrl.identify(&buf)?;
        let limits = ControllerLimits::new(&ctrl, &id, &nvm_id);
        let effects = Effects::read(&ctrl, &id, &buf)?;
        let admin_irq = io::create_queues(
            &ctrl,
            depth,
            limits.sgls(),
            &mut nvme.vectors,
            &mut nvme.io_queues,
        )?;
        ctrl.enable_shadow_doorbells(&id);
        let tag_set = nvme.tag_set.insert(Arc::new(
            tagset::alloc_tag_set(&nvme.io_queues)?,
            GFP_KERNEL,
        )?);
        ctrl.set_tag_set(tag_set.as_raw());
        io::steer_interrupts(tag_set, &nvme.io_queues)?;
        let mut queue_counters = KVec::with_capacity(nvme.io_queues.len(), GFP_KERNEL)?;
        for queue in nvme.io_queues.iter() {
            queue_counters.push(queue.counts().clone(), GFP_KERNEL)?;
        }
        nvme.counter_files = Some(CounterFiles::new(
            nvme.instance.0,
            ctrl.counters.clone(),
            queue_counters,
        )?);
        let gate = Gate::new()?;
        let namespaces = nvme.namespaces.insert(NamespaceSet::new(
            ctrl.clone(),
            (&id, &nvm_id),
            (tag_set.clone(), Handles::of(gate.clone())?),
            nvme.instance.0,
        )?);
        let passthrough = Passthrough::new(
            ctrl.clone(),
            namespaces.clone(),
            effects,
            limits.max_transfer,
        );
        // The controller's device first, as C's: the disks' ioctls reach the controller through it.
        nvme.chardev = Some(ControllerDevice::new(gate, passthrough, nvme.instance.0)?);
        namespaces.scan_at_probe(&buf)?;
        // With a vector of its own, the admin queue tells of namespaces that come and go.
        if let Some(irq) = admin_irq {
            let namespaces = nvme.namespaces.clone().ok_or(EINVAL)?;
            nvme.events = Some(AsyncEvents::start(ctrl.clone(), namespaces, id.oaes, irq)?);
        }
        nvme.announce(&limits);
        Ok(nvme)
    }

    /// Maps BAR 0, resets the controller, sets up its admin queue and enables it
    /// ([`Controller::new`]), and takes a controller number for the disks' names.
    fn enable(pdev: &'bound pci::Device<Bound>) -> Result<Self> {
        Ok(Nvme {
            counter_files: None,
            events: None,
            chardev: None,
            namespaces: None,
            tag_set: None,
            io_queues: KVec::new(),
            ctrl: Arc::pin_init(
                Controller::new(pdev, timeout::cancel_all, reset::reset),
                GFP_KERNEL,
            )?,
            vectors: None,
            instance: Instance::take()?,
        })
    }

    /// Says what the controller got.
    fn announce(&self, limits: &ControllerLimits<'_>) {
        dev_info!(
            self.ctrl.pdev,
            "{} I/O queues{}, disks for {} namespaces, max transfer {} KiB\n",
            self.io_queues.len(),
            if self.ctrl.shadow_doorbells().is_some() {
                " with shadow doorbells"
            } else {
                ""
            },
            self.namespaces.as_ref().map_or(0, |set| set.count()),
            limits.max_transfer / 1024
        );
    }
}

/// Sets the DMA masks (64 bits) and the minimum alignment a bounce buffer keeps: PRPs carry the
/// offset of the data within its first page.
///
/// # Safety
///
/// Nothing of this device is allocated or mapped with `dma_local` yet (as
/// `dma_local::set_mask_and_coherent` requires): the first step of probe.
unsafe fn set_dma_limits(pdev: &pci::Device<Bound>) -> Result {
    // SAFETY: By the function's safety requirement.
    unsafe { dma_local::set_mask_and_coherent(pdev.as_ref(), Mask::bits(64)?) }?;
    // SAFETY: As above.
    unsafe { dma_local::set_min_align_mask(pdev.as_ref(), (regs::PAGE_SIZE - 1) as u32) }
}

impl Drop for Nvme<'_> {
    fn drop(&mut self) {
        // No reset runs or starts from here on, and an admin passthrough command gives up waiting
        // (the controller is disabled below before its buffer goes), as C's removal does not wait
        // for one; then no ioctl runs or starts.
        let ctrl = self.ctrl.clone();
        ctrl.set_removing();
        if let Some(device) = &self.chardev {
            device.close();
        }
        if !ctrl.is_present() {
            // Surprise removal: nothing will complete, so end everything in flight now, or deleting
            // the disks would wait for it forever.
            ctrl.kill();
        }
        // No scan starts from here on: the event handler's thread has finished.
        self.events = None;
        // Deleting a disk waits for its I/O.
        if let Some(namespaces) = &self.namespaces {
            namespaces.close();
        }
        let ignored: u64 = self
            .io_queues
            .iter()
            .map(|queue| queue.counts().ignored_completions.load(Ordering::Relaxed))
            .sum();
        if ignored > 0 {
            dev_warn!(
                ctrl.pdev,
                "{} completions ignored (stale, duplicated or unknown command ids)\n",
                ignored
            );
        }
        if ctrl.is_present() && !ctrl.is_dead() {
            for queue in self.io_queues.iter() {
                let _ = queue.delete();
            }
            ctrl.shutdown();
        } else {
            let _ = ctrl.disable();
        }
        // The controller does no DMA any more, and cannot: bus mastering goes off before any of
        // its memory (devres would turn it off only after the driver's data is freed). The memory
        // can go (the passthrough buffer with the device), once the interrupt handlers that saw it
        // alive have finished (they read the tag set).
        dma_local::stop_bus_master(ctrl.pdev);
        self.chardev = None;
        ctrl.stop();
        ctrl.forget_irqs();
        ctrl.set_tag_set(core::ptr::null_mut());
        self.namespaces = None;
        self.tag_set = None;
        self.io_queues.clear();
    }
}
