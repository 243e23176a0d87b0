//! Namespaces that come and go, through nvme-cli, on nvme_rs and on the C nvme (twin controllers
//! behind intel-iommu, each in an NVM subsystem of its own that also holds a namespace attached to
//! no controller): `nvme attach-ns` adds the disk and `nvme detach-ns` deletes it, twice, with
//! data through the disk in between, as on C; and, with two controllers of one subsystem (one for
//! each driver), an attachment made through the other driver's controller adds the disk through
//! the asynchronous event alone, and what nvme_rs writes there C reads. The disks' `nsid` and
//! `wwid` attributes are the ones C gives the same namespace, and an unbind while a long admin
//! passthrough command waits ends in seconds, as C's. A disk or namespace character device held
//! open after its namespace or controller went answers `ENODEV`. Before, nvme_rs's disks were the
//! ones it found at probe.

use harness::{
    nvme::{self, BIND_ALTERNATELY},
    Drive, Machine, MIB,
};

const SCRIPT: &str = include_str!("../guest/scenarios/nvme_rs_namespaces/guest.sh");

#[test]
fn nvme_rs_adds_and_deletes_disks_as_namespaces_come_and_go() {
    let drive = || vec![Drive::Raw { size: 16 * MIB }];
    let vm = nvme::vm("dut")
        .machine(Machine::Q35Iommu)
        .host_program("/usr/sbin/nvme")
        .tool("passthru")
        .nvme_with_detached(drive(), drive())
        .nvme_with_detached(drive(), drive())
        .nvme_shared_subsystem(2, drive())
        .script(&format!("{BIND_ALTERNATELY}{SCRIPT}"))
        .timeout(std::time::Duration::from_secs(300));
    let outcome = harness::Scenario::new("nvme-rs-namespaces")
        .on_kasan_kernel()
        .vm(vm)
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    // The guest compared them too; an empty name would compare equal there.
    let dut = outcome.vm("dut");
    let (rs, under_c) = (dut.diagnostic("wwid_rs"), dut.diagnostic("wwid_under_c"));
    assert_eq!(rs, under_c, "nvme_rs names the namespace as C does");
    assert!(
        ["uuid.", "eui.", "nvme."]
            .iter()
            .any(|kind| rs.starts_with(kind)),
        "a world-wide name: {rs}"
    );
    // A long admin passthrough command at unbind ends as on C (the guest timed the unbind).
    let long_admin = |key: &str| {
        dut.diagnostic(key)
            .replace("rsnvme0", "DEV")
            .replace("nvme0", "DEV")
    };
    assert_eq!(long_admin("long_admin_rs"), long_admin("long_admin_c"));
    assert!(dut.diagnostic("long_admin_rs").contains("rc="));

    // A namespace's disk and character device held open: once the namespace is detached, its
    // I/O commands get ENODEV (the controller still answers admin commands through them); once
    // the controller is unbound, so does everything but the NSID.
    let gone_namespace = "id=2 read=ENODEV write=ENODEV io64=ENODEV vec=ENODEV \
                          bad_opcode=EINVAL admin=ok";
    for round in 1..=2 {
        for device in ["disk", "ng"] {
            let key = format!("held_after_detach_{device}_{round}");
            assert_eq!(dut.diagnostic(&key), gone_namespace, "{key}");
        }
    }
    // A Read that moves more than its data length says stays in the driver's buffer; a command
    // whose length the driver cannot tell and whose PRP2 would be the caller's is root's only.
    assert_eq!(
        dut.diagnostic("overlong_root"),
        "long_read=ok dsm_two_pages=ok"
    );
    assert_eq!(
        dut.diagnostic("overlong_nobody"),
        "long_read=ok dsm_two_pages=EACCES"
    );
    let gone_controller = "id=1 read=ENODEV write=ENODEV io64=ENODEV vec=ENODEV \
                           bad_opcode=ENODEV admin=ENODEV";
    for device in ["disk", "ng"] {
        let key = format!("held_after_unbind_{device}");
        assert_eq!(dut.diagnostic(&key), gone_controller, "{key}");
    }
}
