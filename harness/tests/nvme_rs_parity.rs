//! nvme_rs as nvme-cli sees it, against the C nvme on a twin controller in the same VM: Debian's
//! `nvme` (id-ctrl, id-ns, smart-log, error-log, get-feature) on both controllers' character
//! devices, the passthrough ioctls' answers to bad input and to callers without privilege, a
//! bounded random-command fuzz during I/O, I/O passthrough, the namespace ioctls on a disk, a
//! partition and a generic character device, resets and system sleep under I/O, and a file held
//! open across the unbind.

use std::collections::BTreeMap;

use harness::{
    nvme::{self, BIND_ALTERNATELY},
    Drive, MIB,
};

const SCRIPT: &str = include_str!("../guest/scenarios/nvme_rs_parity/guest.sh");

/// `passthru cases` lines, "NAME RESULT" joined with '|', by name.
fn cases(joined: &str) -> BTreeMap<&str, &str> {
    joined
        .split('|')
        .filter_map(|line| line.split_once(' '))
        .collect()
}

#[test]
fn nvme_rs_nvme_cli_and_passthrough_against_the_c_nvme() {
    let drives = || vec![Drive::Raw { size: 64 * MIB }, Drive::Raw { size: 16 * MIB }];
    let vm = nvme::vm("dut")
        .host_program("/usr/sbin/nvme")
        .tool("passthru")
        .nvme(drives())
        .nvme(drives())
        // One namespace each: I/O commands on the controller's device go to it.
        .nvme(vec![Drive::Raw { size: 16 * MIB }])
        .nvme(vec![Drive::Raw { size: 16 * MIB }])
        .script(&format!("{BIND_ALTERNATELY}{SCRIPT}"))
        .timeout(std::time::Duration::from_secs(600));
    let outcome = harness::Scenario::new("nvme-rs-parity")
        .vm(vm)
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    let dut = outcome.vm("dut");

    // nvme-cli printed something real (the guest compared it with the C driver's).
    let id_ctrl = dut.diagnostic("nvme_id_ctrl");
    assert!(
        id_ctrl.contains("mn        : QEMU NVMe Ctrl") && id_ctrl.ends_with(" rc=0"),
        "nvme id-ctrl: {id_ctrl}"
    );
    assert!(
        dut.diagnostic("nvme_id_ctrl_rs_sn").contains("rdd0000"),
        "nvme_rs's controller is the first: {}",
        dut.diagnostic("nvme_id_ctrl_rs_sn")
    );

    // The passthrough ioctls answer as the C driver's do, but where nvme_rs keeps the device
    // inside the caller's buffer: C sends a command whose data pointer is NULL as it is (the
    // controller writes page 0), and lets a 4 KiB Identify into a 100-byte buffer write the rest
    // of the caller's page.
    let deliberate = [
        ("null-data", "EFAULT", "ok"),
        ("short-identify-bytes-after-100", "untouched", "overwritten"),
    ];
    for who in ["root", "nobody"] {
        let rs_text = dut.diagnostic(&format!("cases_{who}_rs"));
        let c_text = dut.diagnostic(&format!("cases_{who}_c"));
        let (rs, c) = (cases(rs_text), cases(c_text));
        assert!(rs.len() >= 25, "{who}: {rs_text}");
        assert_eq!(
            rs.keys().collect::<Vec<_>>(),
            c.keys().collect::<Vec<_>>(),
            "{who}: the same cases"
        );
        for (name, rs_result) in &rs {
            let c_result = c[name];
            match deliberate.iter().find(|(case, ..)| case == name) {
                Some((_, rs_expected, c_expected)) => assert_eq!(
                    (*rs_result, c_result),
                    (*rs_expected, *c_expected),
                    "{who}: {name}"
                ),
                None => assert_eq!(rs_result, &c_result, "{who}: {name}: nvme_rs / C"),
            }
        }
        let privileged = if who == "root" { "ok" } else { "EACCES" };
        assert_eq!(rs["get-number-of-queues"], privileged, "{who}");
        assert_eq!(rs["identify-controller"], "ok", "{who}");
        assert_eq!(rs["set-number-of-queues"], "EACCES", "{who}");
    }

    // Resets: the root `passthru cases`' one and six under I/O (the guest checked the data); a
    // command in flight at the reset with a lost completion was sent again, where the kernel can
    // lose one (not Debian's: no FAIL_IO_TIMEOUT).
    assert_eq!(dut.diagnostic("resets"), "7");
    let env = harness::Env::get().unwrap_or_else(|e| panic!("{e}"));
    if env.kernel.is_debian() {
        assert_eq!(dut.diagnostic("requeued"), "no fault injection");
    } else {
        let requeued: u64 = dut.diagnostic("requeued").parse().expect("a count");
        assert!(requeued > 0, "no command was sent again");
    }

    // I/O passthrough (the guest compared the data): a wrong NSID gets the same answer; nobody may
    // read through either driver (the controller's effects log says a Read is harmless), and write
    // only through a file open for writing (a Write changes blocks).
    let wrong_nsid = |key: &str| {
        dut.diagnostic(key)
            .replace("rsnvme1", "DEV")
            .replace("nvme1", "DEV")
            .replace("nvme0", "DEV")
    };
    assert_eq!(
        wrong_nsid("io_wrong_nsid_rsnvme1"),
        wrong_nsid(&format!(
            "io_wrong_nsid_{}",
            dut.diagnostic("io_devices")
                .rsplit('/')
                .next()
                .unwrap_or_default()
        )),
        "a wrong NSID: nvme_rs / C"
    );
    assert_eq!(dut.diagnostic("io_nobody_c"), "ok");
    assert_eq!(dut.diagnostic("io_nobody_rs"), "ok");
    let rewrite = "read=ok ro_write=EACCES rw_write=ok";
    assert_eq!(dut.diagnostic("io_rewrite_nobody_c"), rewrite);
    assert_eq!(dut.diagnostic("io_rewrite_nobody_rs"), rewrite);

    // A namespace's disk, its partition and its generic character device: the namespace ioctls
    // answer as C's; nobody reads and, through a file open read-only, does not write, and on a
    // partition sends no I/O command at all.
    let all_ok = "id=1 read=ok write=ok io64=ok vec=ok bad_opcode=EINVAL admin=ok";
    let nobody = "id=1 read=ok write=EACCES io64=ok vec=ok bad_opcode=EINVAL admin=ok";
    let nobody_on_partition =
        "id=1 read=EACCES write=EACCES io64=EACCES vec=EACCES bad_opcode=EINVAL admin=ok";
    for (kind, as_root, as_nobody) in [
        ("disk", all_ok, nobody),
        ("ng", all_ok, nobody),
        ("partition", all_ok, nobody_on_partition),
    ] {
        for (who, expected) in [("root", as_root), ("nobody", as_nobody)] {
            let rs = dut.diagnostic(&format!("ns_io_{kind}_{who}_rs"));
            let c = dut.diagnostic(&format!("ns_io_{kind}_{who}_c"));
            assert_eq!(rs, c, "{kind} as {who}: nvme_rs / C");
            assert_eq!(rs, expected, "{kind} as {who}");
        }
    }
    assert!(
        dut.diagnostic("nvme_get_ns_id_ng")
            .contains("namespace-id:1"),
        "nvme get-ns-id: {}",
        dut.diagnostic("nvme_get_ns_id_ng")
    );

    assert_eq!(
        dut.diagnostic("held_file_after_unbind"),
        "identify-controller ENODEV"
    );
    // The sleep callbacks ran once for each of nvme_rs's two controllers (the guest checked the
    // data), and shutdown at power off.
    assert_eq!(dut.diagnostic("resumed"), "2");
    assert!(
        dut.console.contains("nvme_rs") && dut.console.contains(": shut down"),
        "nvme_rs did not shut its controller down"
    );
}
