// SPDX-License-Identifier: GPL-2.0

//! {{crate_name}}: a PCI driver for QEMU's `edu` device (1234:11e8) that proves DMA works.
//!
//! On every bind it copies a pattern from CPU memory into the device's 4 KiB buffer with edu's DMA
//! engine and back into a second buffer, waits for each transfer's interrupt and checks every byte:
//! once with coherent buffers and once with streaming mappings, both from this driver's own
//! `dma_local`.
//!
//! The interrupt is the kernel crate's: an `irq::Registration` (through `compat::Irq`, as the API
//! differs before 7.3) whose handler owns BAR0, acknowledges what edu raised and signals a
//! `sync::Completion` per transfer. The crate's completions have no timed wait, so a high-resolution
//! timer wakes the waiter when a transfer's time is up, and the transfer fails.
//!
//! A test reads the verified round trips, and fails a probe's allocation, in debugfs
//! (`debugfs.rs`); the kernel log is for people.

#[allow(dead_code, unused_imports, unused_macros, reason = "vendored")]
mod compat;
mod debugfs;
mod dma_local;
mod regs;

use core::sync::atomic::{AtomicUsize, Ordering};

use dma_local::{dir, Attrs, Coherent, Gfp, Mask, Streaming};
use kernel::{
    device::{Bound, Core},
    impl_has_hr_timer,
    io::Io,
    irq::IrqReturn,
    pci,
    prelude::*,
    sync::Completion,
    time::{
        hrtimer::{
            HrTimer, HrTimerCallback, HrTimerCallbackContext, HrTimerRestart, RelativeMode,
            ScopedHrTimerPointer,
        },
        Delta, Monotonic,
    },
};

/// The module: the debugfs directory, then the PCI driver, registered as
/// `kernel::module_pci_driver!` does.
#[pin_data]
struct EduModule {
    // Unregistered first (fields drop in order): no probe counts or fails once the directory is
    // gone.
    #[pin]
    driver: kernel::driver::Registration<pci::Adapter<EduDriver>>,
    _debugfs: debugfs::Files,
}

impl kernel::InPlaceModule for EduModule {
    fn init(module: &'static kernel::ThisModule) -> impl PinInit<Self, Error> {
        // The fault injection point exists before the first probe, which a test may fail.
        try_pin_init!(Self {
            _debugfs: debugfs::Files::create(),
            driver <- kernel::driver::Registration::new(
                <Self as kernel::ModuleMetadata>::NAME,
                module,
            ),
        })
    }
}

kernel::prelude::module! {
    type: EduModule,
    name: "{{crate_name}}",
    authors: ["rust-dma-drivers"],
    description: "DMA round trips through QEMU's edu device",
    license: "GPL",
}

type Bar0<'bound> = pci::Bar<'bound, { regs::BAR0_SIZE }>;

/// How long one DMA transfer may take: edu completes one after 100 ms of virtual time.
const DMA_TIMEOUT_MS: i64 = 2000;

/// The DMA transfers of one bind: two round trips of two transfers each.
const TRANSFERS: usize = 4;

compat::pci_device_table!(
    PCI_TABLE,
    <EduDriver as pci::Driver>::IdInfo,
    // pci::Vendor has no 0x1234: match edu's class, "unclassified device", then check its
    // identification.
    [(pci::DeviceId::from_class(0x00ff00, 0xffffff), ())]
);

struct EduDriver;

/// A bound edu device.
#[pin_data]
struct Edu<'bound> {
    pdev: &'bound pci::Device<Bound>,
    /// edu's interrupt, with what its handler shares with the rest of the driver. Dropping it
    /// frees the IRQ before the handler's BAR and completions go.
    #[pin]
    irq: compat::Irq<'bound, EduIrq<'bound>>,
}

/// edu's interrupt handler: it acknowledges what the device raised and signals the transfer that
/// finished.
struct EduIrq<'bound> {
    bar: Bar0<'bound>,
    /// Boxed, so that the driver can arm the watchdog through a `Pin<&Transfers>`: the
    /// registration lends its handler out as a plain `&EduIrq`.
    transfers: Pin<KBox<Transfers>>,
}

impl compat::Handler for EduIrq<'_> {
    fn handle(&self) -> IrqReturn {
        let status = self.bar.read32(regs::INTERRUPT_STATUS);
        if status == 0 {
            return IrqReturn::None;
        }
        self.bar.write32(status, regs::INTERRUPT_ACK);
        if status & regs::IRQ_DMA_DONE != 0 {
            self.transfers.finish();
        }
        IrqReturn::Handled
    }
}

/// The bind's DMA transfers, one after the other, each ended by its interrupt or by a timeout.
///
/// The kernel crate's `Completion` signals once (`complete_all`; it has no `reinit_completion`),
/// so each transfer has its own; nor does it have a timed wait, so [`Transfers::start_and_wait`]
/// arms `watchdog`, which signals every completion if the time is up first: that transfer fails,
/// and so would any later one, but probe gives up at the first.
///
/// # Invariants
///
/// `finished` counts the transfers whose interrupt came; `completions[..finished]` are signalled,
/// and so is `completions[armed]` once the watchdog has fired for it.
#[pin_data]
struct Transfers {
    #[pin]
    completions: [Completion; TRANSFERS],
    finished: AtomicUsize,
    /// The transfer the watchdog is armed for: a watchdog that fires late, after its transfer's
    /// interrupt, signals only that transfer's completion, never the next one's.
    armed: AtomicUsize,
    #[pin]
    watchdog: HrTimer<Self>,
}

impl Transfers {
    fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            completions <- pin_init::pin_init_array_from_fn(|_| Completion::new()),
            finished: AtomicUsize::new(0),
            armed: AtomicUsize::new(0),
            watchdog <- HrTimer::new(),
        })
    }

    /// Runs the next transfer: `start` starts it, and this waits for its interrupt, at most
    /// `timeout` (`ETIMEDOUT`).
    fn start_and_wait(self: Pin<&Self>, timeout: Delta, start: impl FnOnce()) -> Result {
        let next = self.finished.load(Ordering::Acquire);
        let done = self.completions.get(next).ok_or(EINVAL)?;
        // Before the timer starts; the previous one was cancelled when its scope ended.
        self.armed.store(next, Ordering::Release);
        self.start_scoped(timeout, || {
            start();
            done.wait_for_completion();
        });
        if self.finished.load(Ordering::Acquire) > next {
            Ok(())
        } else {
            Err(ETIMEDOUT)
        }
    }

    /// Called by the interrupt handler when a transfer has finished.
    fn finish(&self) {
        // INVARIANT: The completion of transfer `finished` is signalled as `finished` goes past it.
        let finished = self.finished.fetch_add(1, Ordering::AcqRel);
        if let Some(done) = self.completions.get(finished) {
            done.complete_all();
        }
    }
}

impl HrTimerCallback for Transfers {
    type Pointer<'a> = Pin<&'a Self>;

    /// A transfer's time is up: wakes its waiter, which finds it unfinished (or, if its interrupt
    /// came meanwhile, finished: then its completion is signalled already).
    fn run(this: Pin<&Self>, _ctx: HrTimerCallbackContext<'_, Self>) -> HrTimerRestart {
        if let Some(done) = this.completions.get(this.armed.load(Ordering::Acquire)) {
            done.complete_all();
        }
        HrTimerRestart::NoRestart
    }
}

impl_has_hr_timer! {
    impl HasHrTimer<Self> for Transfers {
        mode: RelativeMode<Monotonic>, field: self.watchdog
    }
}

impl pci::Driver for EduDriver {
    type IdInfo = ();
    type Data<'bound> = Edu<'bound>;

    const ID_TABLE: pci::IdTable<Self::IdInfo> = &PCI_TABLE;

    fn probe<'bound>(
        pdev: &'bound pci::Device<Core<'_>>,
        _info: compat::ProbeInfo<'bound, Self::IdInfo>,
    ) -> impl PinInit<Self::Data<'bound>, Error> + 'bound {
        let bound: &'bound pci::Device<Bound> = pdev;
        pin_init::pin_init_scope(move || {
            dma_local::enable_bus_master(pdev)?;
            let bar = bound.iomap_region_sized::<{ regs::BAR0_SIZE }>(0, c"edu")?;
            let id = bar.read32(regs::IDENTIFICATION);
            if id & regs::IDENTIFICATION_MAGIC_MASK != regs::IDENTIFICATION_MAGIC {
                dev_info!(bound, "not an edu device (identification {:#x})\n", id);
                return Err(ENODEV);
            }
            let mask = Mask::bits(regs::DMA_ADDRESS_BITS)?;
            // SAFETY: Nothing of this device is allocated or mapped yet: its buffers come after
            // probe.
            unsafe { dma_local::set_mask_and_coherent(bound.as_ref(), mask) }?;
            let handler = EduIrq {
                bar,
                transfers: KBox::pin_init(Transfers::new(), GFP_KERNEL)?,
            };
            Ok(try_pin_init!(Edu {
                pdev: bound,
                // SAFETY: The `Irq` is part of the driver's data, which is dropped when probe fails
                // or the device is unbound, and never leaked.
                irq <- unsafe { compat::Irq::request(bound, c"edu", Ok::<_, Error>(handler)) },
            }))
        })
        .pin_chain(|edu| edu.round_trips())
    }
}

impl Edu<'_> {
    /// Runs one DMA transfer between RAM at `ram` and the device buffer, and waits for its
    /// interrupt.
    fn transfer(&self, ram: dma_local::DmaAddress, len: usize, to_ram: bool) -> Result {
        let (source, destination) = if to_ram {
            (regs::DEVICE_BUFFER, ram)
        } else {
            (ram, regs::DEVICE_BUFFER)
        };
        // edu takes 32-bit writes of its 64-bit registers; the DMA mask keeps addresses below 2^28.
        let source = u32::try_from(source).map_err(|_| EINVAL)?;
        let destination = u32::try_from(destination).map_err(|_| EINVAL)?;
        let len = u32::try_from(len).map_err(|_| EINVAL)?;
        let direction = if to_ram { regs::DMA_CMD_TO_RAM } else { 0 };
        let irq = self.irq.handler();
        let bar = &irq.bar;
        irq.transfers
            .as_ref()
            .start_and_wait(Delta::from_millis(DMA_TIMEOUT_MS), || {
                bar.write32(source, regs::DMA_SOURCE);
                bar.write32(destination, regs::DMA_DESTINATION);
                bar.write32(len, regs::DMA_COUNT);
                bar.write32(
                    regs::DMA_CMD_START | regs::DMA_CMD_IRQ | direction,
                    regs::DMA_COMMAND,
                );
            })
            .inspect_err(|&e| {
                if e == ETIMEDOUT {
                    dev_err!(
                        self.pdev,
                        "DMA transfer got no interrupt within {} ms\n",
                        DMA_TIMEOUT_MS
                    );
                }
            })
    }

    /// DMA `len` bytes from RAM at `out` into the device buffer, then back into RAM at `back`, and
    /// returns `buffers`, which hold both. After a failure they are leaked rather than freed if
    /// edu's engine still runs a transfer (`DMA_CMD_START` set) that may yet write them.
    fn there_and_back<B>(
        &self,
        out: dma_local::DmaAddress,
        back: dma_local::DmaAddress,
        len: usize,
        buffers: B,
    ) -> Result<B> {
        let transfers = self
            .transfer(out, len, false)
            .and_then(|()| self.transfer(back, len, true));
        if let Err(e) = transfers {
            if self.irq.handler().bar.read32(regs::DMA_COMMAND) & regs::DMA_CMD_START != 0 {
                dev_err!(
                    self.pdev,
                    "DMA engine still busy: its buffers are not freed\n"
                );
                core::mem::forget(buffers);
            }
            return Err(e);
        }
        Ok(buffers)
    }

    /// Both round trips; probe fails unless every byte comes back.
    fn round_trips(&self) -> Result {
        let len = regs::MAX_TRANSFER;
        self.coherent_round_trip(len)?;
        debugfs::round_trip_verified();
        self.streaming_round_trip(len)?;
        debugfs::round_trip_verified();
        dev_info!(
            self.pdev,
            "DMA round trips verified: coherent {} bytes, streaming {} bytes\n",
            len,
            len
        );
        Ok(())
    }

    fn coherent_round_trip(&self, len: usize) -> Result {
        let dev = self.pdev.as_ref();
        // An injected fault asks for more than any machine has: dma_alloc_attrs finds none.
        let count = if debugfs::coherent_alloc_fails() {
            usize::MAX / 2
        } else {
            len
        };
        let mut source =
            Coherent::<u8>::alloc_attrs(dev, count, Gfp::KERNEL | Gfp::NOWARN, Attrs::NO_WARN)
                .inspect_err(|e| {
                    dev_err!(
                        self.pdev,
                        "coherent allocation of {} bytes failed: {:?}\n",
                        count,
                        e
                    )
                })?;
        let destination = Coherent::<u8>::alloc(dev, len, Gfp::KERNEL)?;
        for i in 0..len {
            source.write(i, pattern(i, 0x5a))?;
        }
        let (out, back) = (source.dma_handle(), destination.dma_handle());
        let (_source, destination) = self.there_and_back(out, back, len, (source, destination))?;
        let mut back = KVec::from_elem(0u8, len, GFP_KERNEL)?;
        destination.read_into(0, &mut back)?;
        verify(self.pdev, "coherent", &back, 0x5a)
    }

    fn streaming_round_trip(&self, len: usize) -> Result {
        let dev = self.pdev.as_ref();
        let mut outgoing = KVec::with_capacity(len, GFP_KERNEL)?;
        for i in 0..len {
            outgoing.push(pattern(i, 0xa5), GFP_KERNEL)?;
        }
        let to_device =
            Streaming::map(dev, outgoing, dir::ToDevice, Attrs::NONE).map_err(|(e, _)| e)?;
        let incoming = KVec::from_elem(0u8, len, GFP_KERNEL)?;
        let from_device =
            Streaming::map(dev, incoming, dir::FromDevice, Attrs::NONE).map_err(|(e, _)| e)?;
        let (out, back) = (to_device.dma_handle(), from_device.dma_handle());
        let (to_device, mut from_device) =
            self.there_and_back(out, back, len, (to_device, from_device))?;
        {
            // SAFETY: `transfer` returned once edu raised the transfer's completion interrupt, and
            // edu is given nothing else until the view is dropped.
            let view = unsafe { from_device.sync_for_cpu() };
            verify(self.pdev, "streaming", &view, 0xa5)?;
        }
        // SAFETY: As above: both transfers are over, and edu is given neither buffer again.
        let back = unsafe { from_device.unmap() };
        drop(to_device);
        verify(self.pdev, "streaming (unmapped)", &back, 0xa5)
    }
}

/// The test pattern: every byte differs from its neighbours and depends on `seed`.
fn pattern(index: usize, seed: u8) -> u8 {
    (index as u8).wrapping_mul(7) ^ (index >> 8) as u8 ^ seed
}

fn verify(pdev: &pci::Device, what: &str, bytes: &[u8], seed: u8) -> Result {
    match bytes
        .iter()
        .enumerate()
        .find(|&(i, &b)| b != pattern(i, seed))
    {
        None => Ok(()),
        Some((i, &b)) => {
            dev_err!(
                pdev,
                "{} round trip: byte {} is {:#x}, expected {:#x}\n",
                what,
                i,
                b,
                pattern(i, seed)
            );
            Err(EIO)
        }
    }
}
