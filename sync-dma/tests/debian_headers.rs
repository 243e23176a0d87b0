//! `sync-dma` on Debian's kernel headers as a user installs them (linux-headers-<release>), in the
//! chroots that `scripts/setup.sh` makes: `/lib/modules/<release>/build` is the architecture half,
//! whose Makefile includes the generic half (`source`), and neither has the kernel crate's Rust
//! sources. The manifest is taken on the cached linux-source trees of 7.2 and 7.3, in a scratch
//! repository holding the real template.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{env_of, scratch_repo, VENDORED};

/// A linux-source tree the set-up unpacked, by `scripts/env.sh`'s name for it.
fn source_tree(var: &str) -> PathBuf {
    let dir = PathBuf::from(
        env_of(None)
            .remove(var)
            .unwrap_or_else(|| panic!("scripts/env.sh printed no {var}")),
    );
    assert!(dir.is_dir(), "{var}={} is missing", dir.display());
    dir
}

/// Debian's installed headers of one kernel.
struct Headers {
    /// `/usr/src/linux-headers-<release>`, the architecture half, as `scripts/env.sh` prints it.
    arch: PathBuf,
    /// `/usr/lib/modules/<release>`, with the `build` and `source` links.
    modules: PathBuf,
}

fn debian_headers(rdd_kernel: &str) -> Headers {
    let env = env_of(Some(rdd_kernel));
    let get = |var: &str| {
        env.get(var)
            .unwrap_or_else(|| panic!("RDD_KERNEL={rdd_kernel} scripts/env.sh printed no {var}"))
    };
    let headers = Headers {
        arch: PathBuf::from(get("KDIR")),
        modules: Path::new(get("CHROOT"))
            .join("usr/lib/modules")
            .join(get("KRELEASE")),
    };
    for dir in [
        &headers.arch,
        &headers.modules.join("build"),
        &headers.modules.join("source"),
    ] {
        assert!(
            dir.is_dir(),
            "{} is missing: the {rdd_kernel} chroot is incomplete (scripts/setup.sh makes it)",
            dir.display()
        );
    }
    headers
}

/// A scratch repository with the real template, one driver's copy, and a manifest of the cached
/// 7.2 and 7.3 trees.
struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    fn new(name: &str, recorded: &[&Path]) -> Scratch {
        let dir = scratch_repo(&format!("debian-{name}"), &["drivers/alpha"]);
        let s = Scratch { dir };
        let (code, out, err) = s.run(recorded, None, &["init"]);
        assert_eq!(code, 0, "init: {out}{err}");
        s
    }

    /// Runs sync-dma; returns (exit code, stdout, stderr).
    fn run(
        &self,
        kdirs: &[&Path],
        rust_src: Option<&Path>,
        args: &[&str],
    ) -> (i32, String, String) {
        let mut command = Command::new(env!("CARGO_BIN_EXE_sync-dma"));
        command.arg("--root").arg(&self.dir);
        for kdir in kdirs {
            command.arg("--kdir").arg(kdir);
        }
        if let Some(dir) = rust_src {
            command.arg("--rust-src").arg(dir);
        }
        let out = command.args(args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Checks Debian's headers of `rdd_kernel` against the record of their series, reached from every
/// path a user may give, without and with the matching source.
fn headers_match_their_record(
    rdd_kernel: &str,
    series: &str,
    common: &str,
    source_var: &str,
    other_source_var: &str,
) {
    let source = source_tree(source_var);
    let other_source = source_tree(other_source_var);
    let s = Scratch::new(rdd_kernel, &[&source, &other_source]);
    let headers = debian_headers(rdd_kernel);
    let source_name = source.file_name().unwrap().to_string_lossy().into_owned();
    let release = common
        .strip_prefix("linux-headers-")
        .and_then(|r| r.split_once('+'))
        .unwrap()
        .0;

    for kdir in [
        headers.arch.clone(),
        headers.modules.join("build"),
        headers.modules.join("source"),
    ] {
        let (code, out, err) = s.run(&[&kdir], None, &["--check"]);
        assert_eq!(
            code,
            64,
            "{}: the unchecked bit alone:\n{out}{err}",
            kdir.display()
        );
        let unchanged = format!(
            "{series}: C API unchanged: {release} ({common}) matches the manifest's {release} ({source_name})\n"
        );
        assert!(
            out.contains(&unchanged),
            "{}: no '{unchanged}' in:\n{out}",
            kdir.display()
        );
        let unchecked = format!(
            "{series}: Rust layouts not checked (layout device-transparent, layout opaque-transparent, \
             layout pci-device-transparent): "
        );
        assert!(out.contains(&unchecked), "{}:\n{out}", kdir.display());
        assert!(out.contains("--rust-src DIR"), "{out}");
        assert!(!out.contains("breaking"), "{out}");

        let (code, out, err) = s.run(&[&kdir], Some(&source), &["--check"]);
        assert_eq!(
            code,
            0,
            "{} with {}:\n{out}{err}",
            kdir.display(),
            source.display()
        );
        assert!(
            out.starts_with(&format!(
                "clean: 1 copies ({} files) in step with the template; C API unchanged since the \
                 manifest's {release} ({source_name})",
                VENDORED.len()
            )),
            "{out}"
        );
    }

    let (code, out, _) = s.run(&[&headers.arch], None, &["--check", "--json"]);
    assert_eq!(code, 64);
    assert!(
        out.contains(&format!(
            "\"kernels\":[{{\"series\":\"{series}\",\"kernel\":\"{release} ({common})\",\"recorded\":\"{release} ({source_name})\",\"unchecked\":[\"layout device-transparent\",\"layout opaque-transparent\",\"layout pci-device-transparent\"]}}]"
        )),
        "{out}"
    );

    // The layouts of another kernel prove nothing; a record must be whole.
    let (code, _, err) = s.run(&[&headers.arch], Some(&other_source), &["--check"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("but KDIR is {release}")), "{err}");
    let manifest = std::fs::read_to_string(s.dir.join("dma_local.manifest")).unwrap();
    let (code, _, err) = s.run(&[&headers.arch], None, &["update"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("cannot record {release} ({common})")),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(s.dir.join("dma_local.manifest")).unwrap(),
        manifest,
        "nothing written"
    );
}

#[test]
fn debian_7_3_headers_match_the_7_3_record() {
    headers_match_their_record(
        "debian-7.3",
        "7.3",
        "linux-headers-7.3.4+deb13-common",
        "KSRC",
        "LINUX_SOURCE_7_2_DIR",
    );
}

#[test]
fn debian_7_2_headers_match_the_7_2_record() {
    headers_match_their_record(
        "debian-7.2",
        "7.2",
        "linux-headers-7.2.13+deb14-common",
        "LINUX_SOURCE_7_2_DIR",
        "KSRC",
    );
}

#[test]
fn headers_of_a_series_without_a_record_are_unchecked_not_breaking() {
    let s = Scratch::new("unrecorded", &[&source_tree("LINUX_SOURCE_7_2_DIR")]);
    let headers = debian_headers("debian-7.3");
    let (code, out, err) = s.run(&[&headers.arch], None, &["--check"]);
    assert_eq!(code, 64, "{out}{err}");
    assert!(
        out.starts_with(
            "7.3: C API not checked: the manifest has no record of 7.3 (its records: 7.2); record \
             7.3.4 (linux-headers-7.3.4+deb13-common) with: KDIR="
        ) && out.contains(" KSRC=<the source tree of Linux 7.3.4> scripts/sync-dma.sh update"),
        "{out}"
    );
    assert!(!out.contains("breaking"), "{out}");
}
