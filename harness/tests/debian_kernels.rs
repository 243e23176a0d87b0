//! Debian's own Rust-enabled kernels, booted unmodified: trixie-backports' 7.3 and sid's 7.2
//! (`kernel/debian-kernels.conf`). The modules are built as a user of that Debian release builds
//! them, in its chroot with its own toolchain and the kernel's installed headers: on 7.3 the two
//! drivers through DKMS and a driver generated from the template under a fresh name with its
//! Makefile; on 7.2 all three with their Makefiles. On each kernel:
//! - the generated driver does its coherent and streaming DMA round trips with edu on bind;
//! - nvme_rs writes and verifies 256 MiB, and reads back the same bytes as the C nvme driver of
//!   the same kernel on a twin controller; its controller device answers passthrough and reset,
//!   and an open file of it keeps the module loaded;
//! - e1000_rs moves 64 MiB each way over TCP with the C e1000 of the same kernel in a peer VM, the
//!   checksums equal on both ends;
//! - every module unloads, and no console shows an Oops, BUG or WARNING (as in every scenario).

use std::path::PathBuf;

use harness::{
    dkms_install, fresh_driver_name, generate_driver,
    nvme::{self, BIND_ALTERNATELY},
    Drive, Env, Kernel, Machine, Scenario, SocketLink, Vm, MIB,
};

const E1000_C: &str = "drivers/net/ethernet/intel/e1000/e1000.ko";
const ADDRESSES: &str = include_str!("../guest/scenarios/debian_kernels/addresses.sh");

/// The DUT's part; `@EDU@` is the generated driver's name.
const DUT_SCRIPT: &str = include_str!("../guest/scenarios/debian_kernels/dut.sh");

const PEER_SCRIPT: &str = include_str!("../guest/scenarios/debian_kernels/peer.sh");

/// Runs every check on Debian kernel `kernel`; `dkms` builds the two drivers with DKMS instead of
/// their Makefiles.
fn drivers_work_on(kernel: Kernel, dkms: bool) {
    let env = Env::of(kernel).unwrap_or_else(|e| panic!("{e}"));
    let edu = fresh_driver_name();
    let edu_dir = generate_driver(&edu).unwrap_or_else(|e| panic!("{e}"));
    let link = SocketLink::new().expect("a free port");
    let mut dut = nvme::with_c_driver(Vm::new("dut").machine(Machine::Q35).memory_mib(1024))
        .edu()
        .module(&edu_dir)
        .nvme(vec![Drive::Raw { size: 512 * MIB }])
        .nvme(vec![Drive::Raw { size: 512 * MIB }])
        .nic("e1000", link.end_a())
        .tool("netpipe")
        .tool("passthru")
        .script(&format!(
            "{BIND_ALTERNATELY}{ADDRESSES}{}",
            DUT_SCRIPT.replace("@EDU@", &edu)
        ))
        .timeout(std::time::Duration::from_secs(600));
    for driver in ["drivers/nvme_rs", "drivers/e1000_rs"] {
        dut = if dkms {
            let ko: PathBuf = dkms_install(env, driver.as_ref()).unwrap_or_else(|e| panic!("{e}"));
            let name = ko.file_name().unwrap().to_string_lossy().into_owned();
            dut.file(&format!("modules/{name}"), ko)
        } else {
            dut.module(driver)
        };
    }
    let peer = Vm::new("peer")
        .memory_mib(768)
        .kernel_module(E1000_C)
        .tool("netpipe")
        .nic("e1000", link.end_b())
        .script(&format!("{ADDRESSES}{PEER_SCRIPT}"))
        .timeout(std::time::Duration::from_secs(600));
    let outcome = Scenario::new("debian-kernel")
        .on_kernel(kernel)
        .vm(dut)
        .vm(peer)
        .run()
        .unwrap_or_else(|e| panic!("{e}"));

    let dut = outcome.vm("dut");
    let peer = outcome.vm("peer");
    let release = env.var("KRELEASE").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(dut.diagnostic("kernel"), release, "not Debian's kernel");
    assert_eq!(
        dut.diagnostic("dut_sent_sha"),
        peer.diagnostic("peer_received_sha")
    );
    assert_eq!(
        peer.diagnostic("peer_sent_sha"),
        dut.diagnostic("dut_received_sha")
    );
}

#[test]
fn drivers_work_on_debian_7_3_built_with_dkms() {
    drivers_work_on(Kernel::Debian73, true);
}

#[test]
fn drivers_work_on_debian_7_2_built_with_make() {
    drivers_work_on(Kernel::Debian72, false);
}

/// The user's command with another toolchain than the one Debian built 7.3 with (the project's
/// rustc and bindgen for the lab kernel, no pahole on the host) stops before anything compiles,
/// naming what the kernel was built with and what it found, for rustc, bindgen and pahole.
#[test]
fn another_toolchain_stops_before_compiling() {
    let debian = Env::of(Kernel::Debian73).unwrap_or_else(|e| panic!("{e}"));
    let lab = Env::of(Kernel::Lab).unwrap_or_else(|e| panic!("{e}"));
    let scratch = debian.root.join("target/toolchain-mismatch");
    let _ = std::fs::remove_dir_all(&scratch);
    let output = std::process::Command::new("make")
        .arg("-C")
        .arg(debian.root.join("drivers/e1000_rs"))
        .arg(format!("KDIR={}", debian.kdir.display()))
        .arg(format!("RUSTC={}", lab.var("RUSTC").unwrap()))
        .arg(format!("BINDGEN={}", lab.var("BINDGEN").unwrap()))
        .arg(format!("PAHOLE={}", scratch.join("no-pahole").display()))
        .arg(format!("MO={}", scratch.join("out").display()))
        .env("RDD_KBUILD_CACHE", scratch.join("kbuild"))
        .output()
        .expect("make runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "make succeeded:\n{stderr}");
    let found_rustc = std::process::Command::new(lab.var("RUSTC").unwrap())
        .arg("--version")
        .output()
        .expect("the lab toolchain's rustc runs");
    let found_rustc = String::from_utf8_lossy(&found_rustc.stdout);
    let config =
        std::fs::read_to_string(debian.kdir.join(".config")).expect("the headers' .config");
    let recorded = |option: &str| {
        config
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{option}=")))
            .unwrap_or_else(|| panic!("no {option} in the headers' .config"))
            .trim_matches('"')
            .to_string()
    };
    for line in [
        format!(
            r#"rustc: the kernel was built with "{}", found "{}""#,
            recorded("CONFIG_RUSTC_VERSION_TEXT"),
            found_rustc.trim()
        ),
        format!(
            r#"bindgen: the kernel was built with "{}", found "bindgen 0.73.2""#,
            recorded("CONFIG_BINDGEN_VERSION_TEXT")
        ),
        format!(
            r#"pahole: the kernel was built with "{}", found "not installed"#,
            recorded("CONFIG_PAHOLE_VERSION")
        ),
    ] {
        assert!(stderr.contains(&line), "no {line:?} in:\n{stderr}");
    }
    assert!(
        !scratch.join("kbuild").exists() && !scratch.join("out").exists(),
        "something was built:\n{stderr}"
    );
}
