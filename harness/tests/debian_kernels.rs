//! Debian's own Rust-enabled kernels, booted unmodified: trixie-backports' 7.3 and sid's 7.2
//! (`kernel/debian-kernels.conf`). The modules are built as a user of that Debian release builds
//! them, in its chroot with its own toolchain and the kernel's installed headers: on 7.3 the two
//! drivers through DKMS and a driver generated from the template under a fresh name with its
//! Makefile; on 7.2 all three with their Makefiles. On 7.3 again, all three with their Makefiles
//! against its headers laid out as Arch and as Ubuntu ship theirs, the kernel's Rust build
//! products inside (`harness/scripts/headers-as-shipped.sh`): used as they are, nothing rebuilt.
//! On each kernel and layout:
//! - the generated driver does its coherent and streaming DMA round trips with edu on bind;
//! - nvme_rs writes and verifies 256 MiB, and reads back the same bytes as the C nvme driver of
//!   the same kernel on a twin controller; its controller device answers passthrough and reset,
//!   and an open file of it keeps the module loaded;
//! - e1000_rs moves 64 MiB each way over TCP with the C e1000 of the same kernel in a peer VM, the
//!   checksums equal on both ends;
//! - every module unloads, and no console shows an Oops, BUG or WARNING (as in every scenario).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::SystemTime;

use harness::{
    build_module_against, dkms_install, fresh_driver_name, generate_driver,
    nvme::{self, BIND_ALTERNATELY},
    Cores, Drive, Env, Kernel, Machine, Scenario, SocketLink, Vm, MIB,
};

const E1000_C: &str = "drivers/net/ethernet/intel/e1000/e1000.ko";
const ADDRESSES: &str = include_str!("../guest/scenarios/debian_kernels/addresses.sh");

/// The DUT's part; `@EDU@` is the generated driver's name.
const DUT_SCRIPT: &str = include_str!("../guest/scenarios/debian_kernels/dut.sh");

const PEER_SCRIPT: &str = include_str!("../guest/scenarios/debian_kernels/peer.sh");

/// How the DUT's modules are built.
enum Build {
    /// With their Makefiles, against the installed headers.
    Make,
    /// The two drivers with DKMS; the generated driver with its Makefile.
    Dkms,
    /// With their Makefiles, against headers laid out as another distribution ships them.
    Shipped(Shipped),
}

/// Debian's headers laid out as `layout` ships them.
struct Shipped {
    layout: &'static str,
    /// Everything the layout is made of: the headers, a separate Rust package, a `bin/`.
    top: PathBuf,
    headers: PathBuf,
    /// The build's environment in the chroot, as `NAME=value`: no kernel source, so that nothing
    /// can be rebuilt, and for Ubuntu's layout its `bin/` first in `PATH`.
    environment: Vec<String>,
}

/// Runs every check on Debian kernel `kernel`, the modules built as `build` says.
fn drivers_work_on(kernel: Kernel, build: Build) {
    let env = Env::of(kernel).unwrap_or_else(|e| panic!("{e}"));
    let edu = fresh_driver_name();
    let edu_dir = generate_driver(&edu).unwrap_or_else(|e| panic!("{e}"));
    let link = SocketLink::new().expect("a free port");
    let mut dut = nvme::with_c_driver(Vm::new("dut").machine(Machine::Q35).memory_mib(1024))
        .edu()
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
    // The builds outside the scenario take a core of their own, as the scenario's do.
    let building = Cores::take(1);
    for driver in [
        edu_dir.as_path(),
        "drivers/nvme_rs".as_ref(),
        "drivers/e1000_rs".as_ref(),
    ] {
        let built = match &build {
            Build::Make => None,
            Build::Dkms if driver == edu_dir => None,
            Build::Dkms => Some(vec![
                dkms_install(env, driver).unwrap_or_else(|e| panic!("{e}"))
            ]),
            Build::Shipped(shipped) => {
                let name = driver.file_name().expect("a driver directory's name");
                let output = shipped.top.join("modules").join(name);
                Some(
                    build_module_against(
                        env,
                        driver,
                        &shipped.headers,
                        &shipped.environment,
                        &output,
                    )
                    .unwrap_or_else(|e| panic!("{e}")),
                )
            }
        };
        dut = match built {
            None => dut.module(driver),
            Some(modules) => modules.iter().fold(dut, |dut, ko| {
                let name = ko.file_name().unwrap().to_string_lossy().into_owned();
                dut.file(&format!("modules/{name}"), ko)
            }),
        };
    }
    drop(building);
    let peer = Vm::new("peer")
        .memory_mib(768)
        .kernel_module(E1000_C)
        .tool("netpipe")
        .nic("e1000", link.end_b())
        .script(&format!("{ADDRESSES}{PEER_SCRIPT}"))
        .timeout(std::time::Duration::from_secs(600));
    let name = match &build {
        Build::Make => "debian-kernel-make".to_string(),
        Build::Dkms => "debian-kernel-dkms".to_string(),
        Build::Shipped(shipped) => format!("debian-kernel-{}-headers", shipped.layout),
    };
    let outcome = Scenario::new(&name)
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
    drivers_work_on(Kernel::Debian73, Build::Dkms);
}

#[test]
fn drivers_work_on_debian_7_2_built_with_make() {
    drivers_work_on(Kernel::Debian72, Build::Make);
}

/// Runs `args` in the chroot of Debian kernel `env.kernel`.
fn in_chroot(env: &Env, args: &[&str]) -> Output {
    Command::new(env.root.join("scripts/debian-chroot.sh"))
        .arg(env.kernel.name())
        .args(args)
        .output()
        .expect("scripts/debian-chroot.sh runs")
}

/// The standard output of `args` run in the chroot, which must succeed.
fn in_chroot_ok(env: &Env, args: &[&str]) -> String {
    let out = in_chroot(env, args);
    assert!(
        out.status.success(),
        "{args:?} failed in the chroot:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Debian 7.3's headers laid out as `layout` ships them in `target/shipped-headers/<name>`, with
/// the Rust build products of `products` (a build directory the chroot sees).
fn shipped_headers(env: &Env, layout: &'static str, name: &str, products: &Path) -> Shipped {
    let top = env.root.join("target/shipped-headers").join(name);
    let release = env.var("KRELEASE").unwrap_or_else(|e| panic!("{e}"));
    let script = env.root.join("harness/scripts/headers-as-shipped.sh");
    let headers = in_chroot_ok(
        env,
        &[
            "bash",
            &script.to_string_lossy(),
            layout,
            &top.to_string_lossy(),
            release,
            &products.to_string_lossy(),
        ],
    );
    let mut environment = vec!["KSRC=/nonexistent".to_string()];
    if layout == "ubuntu" {
        environment.push(format!(
            "PATH={}:/usr/local/bin:/usr/bin:/usr/sbin:/bin:/sbin",
            top.join("bin").display()
        ));
    }
    Shipped {
        layout,
        headers: PathBuf::from(headers),
        environment,
        top,
    }
}

/// Debian 7.3's Rust build products for its own toolchain, as the set-up prepared them.
fn debian_products(env: &Env) -> PathBuf {
    let release = env.var("KRELEASE").unwrap_or_else(|e| panic!("{e}"));
    let script = env.root.join("template/scripts/prepare-headers.sh");
    PathBuf::from(in_chroot_ok(
        env,
        &[
            "bash",
            &script.to_string_lossy(),
            &format!("/lib/modules/{release}/build"),
        ],
    ))
}

/// Files under `dir` (not following links) changed since `since`.
fn changed_since(dir: &Path, since: SystemTime) -> Vec<PathBuf> {
    let mut changed = Vec::new();
    for entry in std::fs::read_dir(dir).expect("a directory of the layout") {
        let path = entry.expect("an entry").path();
        let meta = std::fs::symlink_metadata(&path).expect("its metadata");
        if meta.is_dir() {
            changed.extend(changed_since(&path, since));
        } else if meta.modified().expect("an mtime") > since {
            changed.push(path);
        }
    }
    changed
}

/// The driver's Makefile is to build against the layout's headers themselves, with the kernel's
/// rustc (`rustc-1.85` in Ubuntu's), no kernel source being there to rebuild anything from; all
/// three modules build so with nothing rebuilt (no file of the headers or of the Rust package
/// changes, no build directory is prepared), then pass every check on Debian's 7.3.4.
fn drivers_work_from_shipped_headers(layout: &'static str) {
    let env = Env::of(Kernel::Debian73).unwrap_or_else(|e| panic!("{e}"));
    let shipped = shipped_headers(env, layout, layout, &debian_products(env));
    let laid_out = SystemTime::now();
    let script = env.root.join("template/scripts/prepare-headers.sh");
    let script = script.to_string_lossy();
    let headers_arg = shipped.headers.to_string_lossy().into_owned();
    let mut prepare = vec!["env"];
    prepare.extend(shipped.environment.iter().map(String::as_str));
    prepare.extend(["bash", &script, "--make", &headers_arg]);
    let chosen = in_chroot_ok(env, &prepare);
    let rustc = if layout == "ubuntu" {
        "rustc-1.85"
    } else {
        "rustc"
    };
    assert!(
        chosen.starts_with(&format!("{headers_arg} RUSTC={rustc} ")),
        "prepare-headers.sh --make said {chosen:?}"
    );
    let prepared = || {
        let dir = PathBuf::from(env.var("RDD_CACHE").unwrap()).join("kbuild");
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .expect("the prepared builds' directory")
            .map(|e| e.expect("an entry").file_name())
            .collect();
        names.sort();
        names
    };
    let prepared_before = prepared();
    let top = shipped.top.clone();
    let (headers, rust) = (
        shipped.headers.clone(),
        top.join(format!(
            "linux-lib-rust-{}",
            env.var("KRELEASE").unwrap_or_else(|e| panic!("{e}"))
        )),
    );
    drivers_work_on(Kernel::Debian73, Build::Shipped(shipped));
    for dir in [&headers, &rust] {
        if dir.exists() {
            let changed = changed_since(dir, laid_out);
            assert!(changed.is_empty(), "the build changed {changed:?}");
        }
    }
    assert_eq!(
        prepared(),
        prepared_before,
        "a build directory was prepared"
    );
}

#[test]
fn drivers_work_on_debian_7_3_from_headers_laid_out_as_arch_ships_them() {
    drivers_work_from_shipped_headers("arch");
}

/// Also: a `rustc` of another version first in `PATH`, the kernel's as `rustc-1.85` after it (as
/// Ubuntu's versioned packages install it), and the build picks the versioned one.
#[test]
fn drivers_work_on_debian_7_3_from_headers_laid_out_as_ubuntu_ships_them() {
    drivers_work_from_shipped_headers("ubuntu");
}

/// Headers whose Rust build products another rustc made (the lab kernel's, by the project's
/// toolchain), with no kernel source to rebuild them from (as on Arch): the driver's `make`
/// stops before anything compiles, with one message naming the rustc that made them, the one the
/// kernel was built with, and the package that provides the source here.
#[test]
fn rust_products_of_another_rustc_are_refused() {
    let debian = Env::of(Kernel::Debian73).unwrap_or_else(|e| panic!("{e}"));
    let lab = Env::of(Kernel::Lab).unwrap_or_else(|e| panic!("{e}"));
    if lab.kernel.is_debian() {
        eprintln!("the lab kernel's build is the other rustc's; RDD_KERNEL names a Debian kernel");
        return;
    }
    let shipped = shipped_headers(debian, "arch", "foreign", &lab.kdir);
    let output = shipped.top.join("modules");
    let out = in_chroot(
        debian,
        &[
            "env",
            "KSRC=/nonexistent",
            "make",
            "-C",
            &debian.root.join("drivers/e1000_rs").to_string_lossy(),
            &format!("KDIR={}", shipped.headers.display()),
            &format!("MO={}", output.display()),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "make succeeded:\n{stderr}");
    let recorded = |kdir: &Path| {
        std::fs::read_to_string(kdir.join(".config"))
            .expect("a .config")
            .lines()
            .find_map(|l| l.strip_prefix("CONFIG_RUSTC_VERSION_TEXT="))
            .expect("CONFIG_RUSTC_VERSION_TEXT")
            .trim_matches('"')
            .to_string()
    };
    for line in [
        format!(
            "cannot build Rust modules for {}:",
            debian.var("KRELEASE").unwrap()
        ),
        format!(
            r#"the Rust build products in {}/rust were made by "{}", the kernel by "{}""#,
            shipped.headers.display(),
            recorded(&lab.kdir),
            recorded(&debian.kdir)
        ),
        "no kernel source at /nonexistent".to_string(),
        "Debian: apt install linux-source-7.3".to_string(),
    ] {
        assert!(stderr.contains(&line), "no {line:?} in:\n{stderr}");
    }
    assert!(!output.exists(), "something was built:\n{stderr}");
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
