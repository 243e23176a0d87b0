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
mod command;
mod compat;
mod controller;
mod dma_local;
mod io;
mod namespace;
mod prp;
mod queue;
mod regs;
mod sgl;
mod shadow;

use core::sync::atomic::{AtomicU64, Ordering};

use kernel::{
    cpu::CpuId,
    cpumask::CpumaskVar,
    device::{Bound, Core},
    ffi::c_void,
    pci,
    prelude::*,
    sync::Arc,
    time::msecs_to_jiffies,
};

use blk::{Disk, TagSet, TagSetConfig};
use command::{IdentifyController, IdentifyNvmController};
use compat::param;
use controller::{Controller, MAX_IO_QUEUES};
use dma_local::{Coherent, Gfp, Mask};
use io::{IoQueue, SentCounts};
use namespace::{ControllerLimits, Namespace};

kernel::module_pci_driver! {
    type: NvmeDriver,
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
        test_duplicate_completions: u32 {
            default: 0,
            description: "Test only: the first N I/O completions come twice more, as a duplicate \
                and with another command id generation; each copy must be ignored",
        },
        test_lose_interrupts: u32 {
            default: 0,
            description: "Test only (1): I/O queue interrupts are ignored, as if lost, until the \
                first timeout, whose handler must find the completions with its own poll",
        },
        test_kill_delay: u32 {
            default: 0,
            description: "Test only: milliseconds the driver waits between declaring the \
                controller dead and cancelling its requests, so that other timeouts run meanwhile",
        },
        test_lost_admin_completion: u32 {
            default: 0,
            description: "Test only: the completion of each controller's Nth admin command is \
                not looked for, so that the command times out (0: none)",
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
    disks: KVec<Disk>,
    tag_set: Option<TagSet>,
    namespaces: KVec<KBox<Namespace>>,
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
        #[cfg(not(kernel_before_7_3))] _info: Option<&'bound Self::IdInfo>,
        #[cfg(kernel_before_7_3)] _info: &'bound Self::IdInfo,
    ) -> impl PinInit<Self::Data<'bound>, Error> + 'bound {
        let bound: &'bound pci::Device<Bound> = pdev;
        dma_local::enable_bus_master(pdev).and_then(|()| Nvme::probe(bound))
    }
}

impl<'bound> Nvme<'bound> {
    fn probe(pdev: &'bound pci::Device<Bound>) -> Result<Self> {
        // SAFETY: Nothing of this device is allocated or mapped yet: the queues come below.
        unsafe { dma_local::set_mask_and_coherent(pdev.as_ref(), Mask::bits(64)?) }?;
        // PRPs carry the offset of the data within its first page: a bounce buffer must keep it.
        // SAFETY: As above.
        unsafe { dma_local::set_min_align_mask(pdev.as_ref(), (regs::PAGE_SIZE - 1) as u32) }?;
        let mut nvme = Nvme {
            disks: KVec::new(),
            tag_set: None,
            namespaces: KVec::new(),
            io_queues: KVec::new(),
            ctrl: Arc::pin_init(Controller::new(pdev, io::cancel_all), GFP_KERNEL)?,
            vectors: None,
            instance: Instance::take()?,
        };
        let ctrl = nvme.ctrl.clone();
        // As in the C driver; blk-mq gets one tag fewer, so a queue can never overflow.
        let depth = param(&crate::module_parameters::io_queue_depth);
        if !(2..4096).contains(&depth) {
            dev_err!(pdev, "io_queue_depth={} is not 2 to 4095\n", depth);
            return Err(EINVAL);
        }
        let depth = depth.min(ctrl.cap.max_queue_entries()) as u16;
        let buf = Coherent::<u8>::alloc(pdev.as_ref(), admin::IDENTIFY_SIZE, Gfp::KERNEL)?;
        // A timed-out Identify kills the controller (`admin_command`) before `buf` goes.
        let id =
            IdentifyController::parse(&ctrl.admin_command(|admin, bar| {
                admin.identify(bar, command::Cns::Controller, 0, &buf)
            })?)?;

        // Older controllers do not have this structure: no limits then. Before 1.2 the CNS field
        // had two bits or one, and CNS 06h would be read as another.
        let nvm_id = if ctrl.version() >= regs::VS_1_2 {
            ctrl.admin_command(|admin, bar| {
                admin.identify(bar, command::Cns::NvmController, 0, &buf)
            })
            .and_then(|data| IdentifyNvmController::parse(&data))
            .unwrap_or_default()
        } else {
            IdentifyNvmController::default()
        };

        let sgls = id.sgls & command::SGLS_SUPPORTED_MASK != 0;
        let sgl_threshold = sgls.then_some(match param(&crate::module_parameters::sgl_threshold) {
            0 => usize::MAX,
            bytes => bytes as usize,
        });

        // One I/O queue pair per CPU, as far as the controller and the interrupt vectors go.
        let wanted = kernel::cpu::nr_cpu_ids().clamp(1, MAX_IO_QUEUES as u32) as u16;
        let granted = ctrl.admin_command(|admin, bar| admin.set_number_of_queues(bar, wanted))?;
        let vectors = nvme
            .vectors
            .insert(compat::alloc_irq_vectors(pdev, 1, u32::from(granted))?);
        let count = usize::from(granted).min(vectors.len());
        nvme.io_queues.reserve(count, GFP_KERNEL)?;
        for index in 0..count {
            let irq = compat::vector_irq(vectors, index)?;
            let queue = IoQueue::new(
                ctrl.clone(),
                index as u16 + 1,
                depth,
                index as u16,
                irq,
                sgl_threshold,
            )?;
            nvme.io_queues.push(queue, GFP_KERNEL)?;
        }
        // Like the C driver: once the I/O queues exist, before any I/O.
        if id.oacs & command::OACS_DOORBELL_BUFFER_CONFIG != 0 {
            ctrl.enable_shadow_doorbells();
        }

        let depth = nvme.io_queues[0].depth();
        let tag_set = nvme.tag_set.insert(TagSet::new(TagSetConfig {
            ops: &io::MQ_OPS,
            nr_hw_queues: count as u32,
            queue_depth: u32::from(depth - 1),
            cmd_size: io::PDU_SIZE as u32,
            // `init_hctx` indexes this array, which does not change until the tag set is gone.
            driver_data: nvme.io_queues.as_ptr().cast_mut().cast::<c_void>(),
            timeout: u32::try_from(msecs_to_jiffies(
                param(&crate::module_parameters::io_timeout).saturating_mul(1000),
            ))
            .unwrap_or(u32::MAX),
        })?);
        ctrl.set_tag_set(tag_set.as_raw());
        for (index, queue) in nvme.io_queues.iter().enumerate() {
            let mut cpus = CpumaskVar::new_zero(GFP_KERNEL)?;
            for cpu in 0..kernel::cpu::nr_cpu_ids() {
                if tag_set.hw_queue_of_cpu(cpu) == Some(index as u32) {
                    cpus.set(CpuId::from_u32(cpu).ok_or(EINVAL)?);
                }
            }
            if cpus.weight() > 0 {
                queue.set_affinity(&cpus);
            }
        }

        let limits = ControllerLimits::new(&ctrl, &id, &nvm_id);
        namespace::alloc_disks(
            &ctrl,
            &buf,
            &limits,
            tag_set,
            nvme.instance.0,
            &mut nvme.namespaces,
            &mut nvme.disks,
        )?;
        namespace::add_disks(&ctrl, &mut nvme.disks)?;
        dev_info!(
            pdev,
            "{} I/O queues{}, disks for {} namespaces, max transfer {} KiB\n",
            count,
            if ctrl.shadow_doorbells().is_some() {
                " with shadow doorbells"
            } else {
                ""
            },
            nvme.disks.len(),
            limits.max_transfer / 1024
        );
        Ok(nvme)
    }
}

impl Drop for Nvme<'_> {
    fn drop(&mut self) {
        let ctrl = self.ctrl.clone();
        if !ctrl.is_present() {
            // Surprise removal: nothing will complete, so end everything in flight now, or deleting
            // the disks would wait for it forever.
            ctrl.kill();
        }
        // Deleting a disk waits for its I/O.
        self.disks.clear();
        let sent = self
            .io_queues
            .iter()
            .fold(SentCounts::default(), |sum, queue| {
                sum + queue.sent_counts()
            });
        dev_info!(
            ctrl.pdev,
            "removing; read/write commands sent: {} with PRPs, {} with SGLs, {} with FUA; \
             dataset management commands sent: {} with {} ranges\n",
            sent.prps,
            sent.sgls,
            sent.fua,
            sent.dsm,
            sent.dsm_ranges
        );
        let ignored: u64 = self
            .io_queues
            .iter()
            .map(|queue| queue.ignored_completions())
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
        // The controller does no DMA any more: the memory can go, once the interrupt handlers that
        // saw it alive have finished (they read the tag set).
        ctrl.stop();
        ctrl.forget_irqs();
        self.tag_set = None;
        self.io_queues.clear();
        self.namespaces.clear();
    }
}
