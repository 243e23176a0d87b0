// SPDX-License-Identifier: GPL-2.0

// What every misuse case needs around it, included by each: a module to build, and a descriptor
// type as a ring would hold it. Each case declares `mod dma_local` itself, at its crate root.

kernel::module_pci_driver! {
    type: Misuse,
    name: "dma_misuse",
    authors: ["rust-dma-drivers"],
    description: "A misuse of dma_local that must not compile",
    license: "GPL",
}

kernel::pci_device_table!(
    PCI_TABLE,
    <Misuse as kernel::pci::Driver>::IdInfo,
    [(kernel::pci::DeviceId::from_class(0x00ff00, 0xffffff), ())]
);

struct Misuse;

impl kernel::pci::Driver for Misuse {
    type IdInfo = ();
    type Data<'bound> = ();

    const ID_TABLE: kernel::pci::IdTable<Self::IdInfo> = &PCI_TABLE;

    fn probe<'bound>(
        pdev: &'bound kernel::pci::Device<kernel::device::Core<'_>>,
        _info: Option<&'bound Self::IdInfo>,
    ) -> impl PinInit<Self::Data<'bound>, Error> + 'bound {
        misuse(pdev.as_ref())
    }
}

/// A descriptor as a ring would hold it.
#[repr(C)]
#[derive(Clone, Copy)]
struct Descriptor {
    address: u64,
    length: u32,
    status: u32,
}

// SAFETY: `repr(C)` of three integers with no padding: every byte is initialised.
unsafe impl kernel::transmute::AsBytes for Descriptor {}
// SAFETY: Any bit pattern is a valid value of each integer field.
unsafe impl kernel::transmute::FromBytes for Descriptor {}
