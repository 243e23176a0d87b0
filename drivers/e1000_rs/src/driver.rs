// SPDX-License-Identifier: GPL-2.0

//! e1000_rs: a Rust driver for the Intel 82540EM Gigabit Ethernet controller as QEMU emulates it
//! (8086:100e), with its own private `dma_local` DMA wrapper.
//!
//! This file is the PCI glue: probe builds the adapter (`adapter.rs`) and registers its interface,
//! and remove is the adapter's drop. `hw.rs` drives the controller's registers (`regs.rs`),
//! `tx.rs` and `rx.rs` the descriptor rings (`desc.rs`), `offload.rs` the checksum and
//! segmentation offloads, and `netdev.rs` and `skb.rs` wrap the networking stack's C API.

mod adapter;
mod callbacks;
#[allow(dead_code, unused_imports, unused_macros, reason = "vendored")]
mod compat;
mod desc;
mod dma_local;
mod eeprom;
mod ethtool;
mod hw;
mod link;
mod netdev;
mod offload;
mod open_rings;
mod pause;
mod phy;
mod regs;
mod ring_common;
mod rx;
mod selftest;
mod skb;
mod timer;
mod tx;
mod work;

use kernel::{device::Core, pci, prelude::*};

use adapter::E1000;

/// Declares the module. Its on/off parameters are of type `$flag` and default to `$off`: `bool`
/// and `false`, or before 7.3, whose `module!` has no `bool` parameters, `u8` and 0 (read with
/// `compat::flag`).
// Not formatted: rustfmt moves the continuation lines of the strings on every run.
#[rustfmt::skip]
macro_rules! declare_module {
    ($flag:ident, $off:tt) => {
        kernel::prelude::module! {
            type: E1000Module,
            name: "e1000_rs",
            authors: ["rust-dma-drivers"],
            description: "Intel 82540EM (QEMU e1000) Ethernet driver in Rust",
            license: "GPL",
            params: {
                rx_copy: $flag {
                    default: $off,
                    description: "Receive into coherent ring buffers and copy frames out, \
                        instead of into mapped socket buffers (default)",
                },
                tx_copy: $flag {
                    default: $off,
                    description: "Copy frames into coherent ring buffers to transmit them, \
                        instead of mapping the socket buffers (default)",
                },
            },
        }
    };
}
#[cfg(not(kernel_before_7_3))]
declare_module!(bool, false);
#[cfg(kernel_before_7_3)]
declare_module!(u8, 0);

compat::pci_device_table!(
    PCI_TABLE,
    <E1000Driver as pci::Driver>::IdInfo,
    [(pci::DeviceId::from_id(pci::Vendor::INTEL, 0x100e), ())]
);

/// The module: the PCI driver, with sleep and shutdown callbacks (`compat::pm`; what
/// `kernel::module_driver!` would make, with `pci::Adapter`), and the `fail_mmio_read` fault
/// attribute (`hw.rs`).
#[pin_data]
struct E1000Module {
    // Dropped first (declared first): every device is unbound before the attribute goes.
    #[pin]
    _driver: kernel::driver::Registration<compat::pm::Adapter<E1000Driver>>,
    _mmio_read_fault: hw::MmioReadFault,
}

impl kernel::InPlaceModule for E1000Module {
    fn init(module: &'static kernel::ThisModule) -> impl PinInit<Self, Error> {
        // In this order: a probe may meet the fault already.
        try_pin_init!(Self {
            _mmio_read_fault: hw::MmioReadFault::create(),
            _driver <- kernel::driver::Registration::new(
                <Self as kernel::ModuleMetadata>::NAME,
                module,
            ),
        })
    }
}

struct E1000Driver;

impl pci::Driver for E1000Driver {
    type IdInfo = ();
    type Data<'bound> = E1000<'bound>;

    const ID_TABLE: pci::IdTable<Self::IdInfo> = &PCI_TABLE;

    fn probe<'bound>(
        pdev: &'bound pci::Device<Core<'_>>,
        _info: compat::ProbeInfo<'bound, Self::IdInfo>,
    ) -> impl PinInit<Self::Data<'bound>, Error> + 'bound {
        // Shared once built: registering may call back into the adapter (`ndo_get_stats64`), as
        // may the shared IRQ's handler.
        E1000::new(pdev).pin_chain(|e1000| e1000.into_ref().get_ref().register())
    }
}

impl compat::pm::PowerManaged for E1000Driver {
    fn suspend(e1000: &E1000<'_>) -> Result {
        e1000.suspend();
        Ok(())
    }

    fn resume(e1000: &E1000<'_>) -> Result {
        e1000.resume()
    }

    fn shutdown(e1000: &E1000<'_>) {
        e1000.suspend();
        dev_info!(e1000.device(), "shut down\n");
    }
}
