//! nvme_rs through bounce buffers: the VM boots with `swiotlb=force` (and `track_hiwater`, to
//! show it), so that every streaming mapping is copied through the software IO TLB, as in a
//! confidential guest or with `iommu=soft`. PRPs carry the offset of the data within its first
//! page, which a bounce buffer keeps only when the driver asks for it
//! (`dma_local::set_min_align_mask`), and one mapping may hold no more than a bounce buffer does
//! (`dma_local::max_mapping_size`). The C nvme driver on the twin controller is the reference.

use harness::{
    nvme::{self, BIND_ALTERNATELY},
    Drive, Scenario,
};

const MIB: u64 = 1024 * 1024;

const SCRIPT: &str = r#"
check load insmod /modules/nvme_rs.ko
check load-c-nvme load_c_nvme
disks_ready() { disk_of $RS_PCI >/dev/null && disk_of $C_PCI >/dev/null; }
check disks wait_for 20 disks_ready
rs=$(disk_of $RS_PCI) c=$(disk_of $C_PCI)
q() { cat "/sys/block/$1/queue/$2"; }
diag "rs_max_hw_sectors_kb=$(q $rs max_hw_sectors_kb) c_max_hw_sectors_kb=$(q $c max_hw_sectors_kb)"
check max-transfer-as-c test "$(q $rs max_hw_sectors_kb)" = "$(q $c max_hw_sectors_kb)"
# Direct I/O in 1 MiB requests, split at the largest transfer, then read back through the page
# cache.
check pattern-write blkio fill /dev/$rs 0xb0b 96
check pattern-verify blkio verify /dev/$rs 0xb0b 96
check c-pattern-write blkio fill /dev/$c 0xb0b 96
rs_sha=$(dd if=/dev/$rs bs=1M count=96 2>/dev/null | sha256sum | cut -d' ' -f1)
c_sha=$(dd if=/dev/$c bs=1M count=96 2>/dev/null | sha256sum | cut -d' ' -f1)
diag "rs_sha=$rs_sha"
diag "c_sha=$c_sha"
check same-bytes-as-c test "$rs_sha" = "$c_sha"
check sequential-128k blkio bench /dev/$rs seqread 131072 8 1 64
diag "bounce_slots_used_hiwater=$(cat /sys/kernel/debug/swiotlb/io_tlb_used_hiwater)"
check unload rmmod nvme_rs
"#;

#[test]
fn nvme_rs_through_bounce_buffers() {
    let drives = || vec![Drive::Raw { size: 128 * MIB }];
    let vm = nvme::vm("dut")
        .nvme(drives())
        .nvme(drives())
        .cmdline("swiotlb=force,track_hiwater")
        .script(&format!("{BIND_ALTERNATELY}{SCRIPT}"));
    let outcome = Scenario::new("nvme-rs-bounce")
        .vm(vm)
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    let dut = outcome.vm("dut");
    assert_eq!(dut.diagnostic("rs_sha"), dut.diagnostic("c_sha"));
    assert_eq!(dut.diagnostic("rs_sha").len(), 64, "a sha256 was computed");
    let used: u64 = dut
        .diagnostic("bounce_slots_used_hiwater")
        .parse()
        .expect("a number of swiotlb slots");
    assert!(used > 0, "the I/O went through bounce buffers");
}
