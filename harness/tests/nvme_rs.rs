//! nvme_rs end to end: one VM (q35, every controller behind its own PCIe root port) with two
//! identical NVMe controllers. The first is bound to nvme_rs, the second to the C nvme driver, so
//! that every figure can be compared with the reference on the same emulated hardware.

use harness::{
    nvme::{self, BIND_ALTERNATELY},
    Drive, MIB,
};

const SCRIPT: &str = include_str!("../guest/scenarios/nvme_rs/guest.sh");

#[test]
fn nvme_rs_against_the_c_nvme() {
    let drives = || {
        vec![
            Drive::Raw { size: 512 * MIB },
            Drive::Raw { size: 64 * MIB },
        ]
    };
    let vm = nvme::vm("dut")
        .host_program("/usr/sbin/mke2fs")
        .host_program("/usr/sbin/e2fsck")
        .nvme(drives())
        .nvme(drives())
        .script(&format!("{BIND_ALTERNATELY}{SCRIPT}"))
        .timeout(std::time::Duration::from_secs(1200));
    let outcome = nvme::run_against_the_c_driver("nvme-rs", vm);
    let dut = outcome.vm("dut");
    assert_eq!(dut.diagnostic("cycles"), "100");
}
