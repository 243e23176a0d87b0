//! nvme_rs through bounce buffers: the VM boots with `swiotlb=force` (and `track_hiwater`, to
//! show it), so that every streaming mapping is copied through the software IO TLB, as in a
//! confidential guest or with `iommu=soft`. PRPs carry the offset of the data within its first
//! page, which a bounce buffer keeps only when the driver asks for it
//! (`dma_local::set_min_align_mask`), and one mapping may hold no more than a bounce buffer does
//! (`dma_local::max_mapping_size`). The C nvme driver on the twin controller is the reference.

use harness::{
    nvme::{self, BIND_ALTERNATELY},
    Drive, MIB,
};

const SCRIPT: &str = include_str!("../guest/scenarios/nvme_rs_bounce/guest.sh");

#[test]
fn nvme_rs_through_bounce_buffers() {
    let drives = || vec![Drive::Raw { size: 128 * MIB }];
    let vm = nvme::vm("dut")
        .nvme(drives())
        .nvme(drives())
        .cmdline("swiotlb=force,track_hiwater")
        .script(&format!("{BIND_ALTERNATELY}{SCRIPT}"));
    let outcome = nvme::run_against_the_c_driver("nvme-rs-bounce", vm);
    let dut = outcome.vm("dut");
    let used: u64 = dut
        .diagnostic("bounce_slots_used_hiwater")
        .parse()
        .expect("a number of swiotlb slots");
    assert!(used > 0, "the I/O went through bounce buffers");
}
