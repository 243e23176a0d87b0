// SPDX-License-Identifier: GPL-2.0

//! {{crate_name}}: a PCI driver for QEMU's `edu` device (1234:11e8) that proves DMA works.
//!
//! On every bind it copies a pattern from CPU memory into the device's 4 KiB buffer with edu's DMA
//! engine and back into a second buffer, waits for each transfer's interrupt and checks every byte:
//! once with coherent buffers and once with streaming mappings, both from this driver's own
//! `dma_local`.

mod compat;
mod dma_local;
mod regs;

use core::sync::atomic::{AtomicU32, Ordering};

use compat::irqreturn;
use dma_local::{dir, Attrs, Coherent, Gfp, Mask, Streaming};
use kernel::{
    bindings,
    device::{Bound, Core},
    io::{poll::read_poll_timeout, Io},
    pci,
    prelude::*,
    time::Delta,
};

/// Declares the module. Its on/off parameter is of type `$flag` and defaults to `$off`: `bool` and
/// `false`, or before 7.3, whose `module!` has no `bool` parameters, `u8` and 0 (read with
/// `compat::flag`).
// Not formatted: rustfmt moves the continuation lines of the strings on every run.
#[rustfmt::skip]
macro_rules! declare_module {
    ($flag:ident, $off:tt) => {
        kernel::module_pci_driver! {
            type: EduDriver,
            name: "{{crate_name}}",
            authors: ["rust-dma-drivers"],
            description: "DMA round trips through QEMU's edu device",
            license: "GPL",
            params: {
                fail_coherent_alloc: $flag {
                    default: $off,
                    description: "Test only: ask for an impossible coherent buffer, so that probe \
                        fails",
                },
            },
        }
    };
}
#[cfg(not(kernel_before_7_3))]
declare_module!(bool, false);
#[cfg(kernel_before_7_3)]
declare_module!(u8, 0);

type Bar0<'bound> = pci::Bar<'bound, { regs::BAR0_SIZE }>;

/// How long one DMA transfer may take: edu completes one after 100 ms of virtual time.
const DMA_TIMEOUT_MS: i64 = 2000;

compat::pci_device_table!(
    PCI_TABLE,
    <EduDriver as pci::Driver>::IdInfo,
    // pci::Vendor has no 0x1234: match edu's class, "unclassified device", then check its
    // identification.
    [(pci::DeviceId::from_class(0x00ff00, 0xffffff), ())]
);

struct EduDriver;

/// A bound edu device.
///
/// # Invariants
///
/// While this exists, `irq` is requested with a pointer to this (pinned) object as its cookie.
#[pin_data(PinnedDrop)]
struct Edu<'bound> {
    pdev: &'bound pci::Device<Bound>,
    bar: Bar0<'bound>,
    /// Interrupt status bits the handler has acknowledged and not yet consumed.
    irq_seen: AtomicU32,
    irq: u32,
    /// Dropped after the handler is freed in `PinnedDrop`.
    _vectors: compat::IrqVectors<'bound>,
}

impl pci::Driver for EduDriver {
    type IdInfo = ();
    type Data<'bound> = Edu<'bound>;

    const ID_TABLE: pci::IdTable<Self::IdInfo> = &PCI_TABLE;

    fn probe<'bound>(
        pdev: &'bound pci::Device<Core<'_>>,
        #[cfg(not(kernel_before_7_3))] _info: Option<&'bound Self::IdInfo>,
        #[cfg(kernel_before_7_3)] _info: &'bound Self::IdInfo,
    ) -> impl PinInit<Self::Data<'bound>, Error> + 'bound {
        let bound: &'bound pci::Device<Bound> = pdev;
        try_pin_init!(&this in Edu {
            pdev: {
                dma_local::enable_bus_master(pdev)?;
                bound
            },
            bar: {
                let bar = bound.iomap_region_sized::<{ regs::BAR0_SIZE }>(0, c"edu")?;
                let id = bar.read32(regs::IDENTIFICATION);
                if id & regs::IDENTIFICATION_MAGIC_MASK != regs::IDENTIFICATION_MAGIC {
                    dev_info!(bound, "not an edu device (identification {:#x})\n", id);
                    return Err(ENODEV);
                }
                let mask = Mask::bits(regs::DMA_ADDRESS_BITS)?;
                // SAFETY: Nothing of this device is allocated or mapped yet: its buffers come
                // after probe.
                unsafe { dma_local::set_mask_and_coherent(bound.as_ref(), mask) }?;
                bar
            },
            irq_seen: AtomicU32::new(0),
            _vectors: bound.alloc_irq_vectors(1, 1, pci::IrqTypes::all())?,
            irq: compat::first_irq(_vectors)?,
            _: {
                // SAFETY: `edu_irq` matches `irq_handler_t`; the cookie points to this pinned
                // `Edu`, whose fields are all initialised and which frees the IRQ in `PinnedDrop`
                // before they go.
                kernel::error::to_result(unsafe {
                    bindings::request_threaded_irq(
                        *irq,
                        Some(edu_irq),
                        None,
                        bindings::IRQF_SHARED as usize,
                        c"edu".as_char_ptr(),
                        this.as_ptr().cast(),
                    )
                })?;
            },
        })
        .pin_chain(|edu| edu.round_trips())
    }
}

#[pinned_drop]
impl PinnedDrop for Edu<'_> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: requested in probe with this cookie (type invariant); freed once, here.
        unsafe {
            bindings::free_irq(
                self.irq,
                core::ptr::from_ref::<Edu<'_>>(&self).cast_mut().cast(),
            )
        };
    }
}

/// edu's interrupt handler: acknowledges what the device raised and records it for the waiter.
///
/// # Safety
///
/// `cookie` is the `Edu` that requested the interrupt, alive until `free_irq` returns.
unsafe extern "C" fn edu_irq(
    _irq: kernel::ffi::c_int,
    cookie: *mut kernel::ffi::c_void,
) -> bindings::irqreturn_t {
    // SAFETY: By the function's safety requirement.
    let edu = unsafe { &*cookie.cast::<Edu<'_>>() };
    let status = edu.bar.read32(regs::INTERRUPT_STATUS);
    if status == 0 {
        return irqreturn::IRQ_NONE;
    }
    edu.bar.write32(status, regs::INTERRUPT_ACK);
    edu.irq_seen.fetch_or(status, Ordering::AcqRel);
    irqreturn::IRQ_HANDLED
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
        self.irq_seen
            .fetch_and(!regs::IRQ_DMA_DONE, Ordering::AcqRel);
        self.bar.write32(source, regs::DMA_SOURCE);
        self.bar.write32(destination, regs::DMA_DESTINATION);
        self.bar.write32(len, regs::DMA_COUNT);
        let direction = if to_ram { regs::DMA_CMD_TO_RAM } else { 0 };
        self.bar.write32(
            regs::DMA_CMD_START | regs::DMA_CMD_IRQ | direction,
            regs::DMA_COMMAND,
        );
        let interrupted = read_poll_timeout(
            || Ok(self.irq_seen.load(Ordering::Acquire)),
            |seen| seen & regs::IRQ_DMA_DONE != 0,
            Delta::from_millis(1),
            Delta::from_millis(DMA_TIMEOUT_MS),
        );
        if interrupted.is_err() {
            dev_err!(
                self.pdev,
                "DMA transfer got no interrupt within {} ms\n",
                DMA_TIMEOUT_MS
            );
        }
        interrupted.map(drop)
    }

    /// Both round trips; probe fails unless every byte comes back.
    fn round_trips(&self) -> Result {
        let len = regs::MAX_TRANSFER;
        self.coherent_round_trip(len)?;
        self.streaming_round_trip(len)?;
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
        let count = if compat::flag(&crate::module_parameters::fail_coherent_alloc) {
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
        self.transfer(source.dma_handle(), len, false)?;
        self.transfer(destination.dma_handle(), len, true)?;
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
        let mut from_device =
            Streaming::map(dev, incoming, dir::FromDevice, Attrs::NONE).map_err(|(e, _)| e)?;
        self.transfer(to_device.dma_handle(), len, false)?;
        self.transfer(from_device.dma_handle(), len, true)?;
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
