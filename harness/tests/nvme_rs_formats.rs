//! Format NVM through nvme-cli, as a user runs it, on nvme_rs and on the C nvme (twin controllers
//! of two namespaces, behind intel-iommu): after each format, 512 to 4096 to 512-byte blocks and
//! to a format with metadata, nvme_rs's disk has the block size and capacity C's has, data of
//! every transfer size reads back (or is refused) as on C's, and the other namespace, read and
//! written meanwhile, loses nothing. Before, the disk kept its probe-time block size while the
//! controller moved eight times the bytes of each mapping.

use harness::{
    nvme::{self, BIND_ALTERNATELY},
    Drive, Machine, MIB,
};

const SCRIPT: &str = include_str!("../guest/scenarios/nvme_rs_formats/guest.sh");

#[test]
fn nvme_rs_follows_format_nvm_as_the_c_nvme() {
    let drives = || vec![Drive::Raw { size: 32 * MIB }, Drive::Raw { size: 32 * MIB }];
    let vm = nvme::vm("dut")
        .machine(Machine::Q35Iommu)
        .host_program("/usr/sbin/nvme")
        .nvme(drives())
        .nvme(drives())
        .script(&format!("{BIND_ALTERNATELY}{SCRIPT}"))
        .timeout(std::time::Duration::from_secs(600));
    harness::Scenario::new("nvme-rs-formats")
        .on_kasan_kernel()
        .vm(vm)
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
}
