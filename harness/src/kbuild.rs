//! Builds out-of-tree modules with Kbuild: against a lab kernel with the project's toolchain, and
//! for Debian's kernels as their users build them, in the release's chroot with its own toolchain:
//! with the drivers' Makefiles (`make KDIR=/lib/modules/<release>/build`) or with DKMS.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use crate::{err, Env, Result};

/// Builds the module directory `dir` (absolute, or relative to the repository root) with
/// `make -C $KDIR M=<dir> MO=<output> modules` and returns the `.ko` files it produced. The output
/// directory is per kernel ([`Env::module_output_dir`]); the sources stay clean.
///
/// Tests run in parallel threads; builds of one directory are serialised so that Kbuild never runs
/// twice in the same tree at once.
pub fn build_module(dir: impl AsRef<Path>) -> Result<Vec<PathBuf>> {
    build_module_with(dir, &[])
}

/// As [`build_module`], with extra make variables (`NAME=value`) for the module's Kbuild file.
pub fn build_module_with(dir: impl AsRef<Path>, vars: &[(&str, &str)]) -> Result<Vec<PathBuf>> {
    build_module_for(Env::get()?, dir.as_ref(), vars)
}

/// As [`build_module_with`], for the kernel of `env`.
pub(crate) fn build_module_for(
    env: &Env,
    dir: &Path,
    vars: &[(&str, &str)],
) -> Result<Vec<PathBuf>> {
    let dir = env.root.join(dir);
    let output = env.module_output_dir(dir.strip_prefix(&env.root).unwrap_or(&dir));
    let lock = dir_lock(&dir);
    let _guard = lock.lock().unwrap_or_else(|e| e.into_inner());
    clean_sources(env, &dir)?;
    std::fs::create_dir_all(&output)?;
    kbuild(env, &dir, Some(&output), vars, "modules")?;
    modules_built_in(&dir, &output)
}

/// Builds the driver in `dir` for Debian kernel `env.kernel` as its user would against the
/// headers in `headers` (a path the chroot sees, as every path under the repository is): with the
/// driver's Makefile, `make KDIR=<headers>`, in the release's chroot, its environment's
/// `NAME=value` strings `environment` added. The modules go to `output`.
pub fn build_module_against(
    env: &Env,
    dir: &Path,
    headers: &Path,
    environment: &[String],
    output: &Path,
) -> Result<Vec<PathBuf>> {
    if !env.kernel.is_debian() {
        return Err(err!(
            "builds against installed headers are for Debian's kernels, not the {} kernel",
            env.kernel.name()
        ));
    }
    let dir = env.root.join(dir);
    let lock = dir_lock(&dir);
    let _guard = lock.lock().unwrap_or_else(|e| e.into_inner());
    clean_sources(env, &dir)?;
    std::fs::create_dir_all(output)?;
    let mut cmd = in_chroot(env, "env");
    cmd.args(environment)
        .arg("make")
        .arg("-C")
        .arg(&dir)
        .arg(format!("KDIR={}", headers.display()))
        .arg(format!("MO={}", output.display()))
        .arg("modules");
    run(
        cmd,
        &format!("make of {} against {}", dir.display(), headers.display()),
        env,
    )?;
    modules_built_in(&dir, output)
}

/// Kbuild refuses a separate output directory while the sources in `dir` hold a build of their
/// own (a `make` in the directory), whose objects it could otherwise mistake for its own: that
/// build is cleaned first. The caller holds the directory's lock.
fn clean_sources(env: &Env, dir: &Path) -> Result<()> {
    if dir.join("modules.order").exists() {
        kbuild(env, dir, None, &[], "clean")?;
    }
    Ok(())
}

/// The modules a Kbuild run of `dir` left in `output`, by its `modules.order`.
fn modules_built_in(dir: &Path, output: &Path) -> Result<Vec<PathBuf>> {
    let order = std::fs::read_to_string(output.join("modules.order")).map_err(|e| {
        err!(
            "{}: no modules.order after the build: {e}",
            output.display()
        )
    })?;
    let modules: Vec<PathBuf> = order
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| output.join(l.trim().replace(".o", ".ko")))
        .collect();
    if modules.is_empty() {
        return Err(err!("{} built no module", dir.display()));
    }
    Ok(modules)
}

/// Runs Kbuild's `target` for the module directory `dir`, its output in `output`.
fn kbuild(
    env: &Env,
    dir: &Path,
    output: Option<&Path>,
    vars: &[(&str, &str)],
    target: &str,
) -> Result<()> {
    let mut cmd = if env.kernel.is_debian() {
        // The user's command: the driver's own Makefile, pointed at the installed headers.
        let mut cmd = in_chroot(env, "make");
        cmd.arg("-C")
            .arg(dir)
            .arg(format!("KDIR=/lib/modules/{}/build", env.var("KRELEASE")?));
        cmd
    } else {
        let mut cmd = Command::new("make");
        cmd.arg("-C")
            .arg(&env.kdir)
            .arg(format!("M={}", dir.display()));
        for key in ["RUSTC", "HOSTRUSTC", "RUSTDOC", "BINDGEN"] {
            cmd.arg(format!("{key}={}", env.var(key)?));
        }
        if let Ok(llvm) = env.var("LLVM") {
            cmd.arg(format!("LLVM={llvm}"));
        }
        cmd.env("LIBCLANG_PATH", env.var("LIBCLANG_PATH")?);
        cmd
    };
    if let Some(output) = output {
        cmd.arg(format!("MO={}", output.display()));
    }
    // Where the Makefile finds the project, whose lab kernel and toolchain it builds with when no
    // KDIR is given: generated drivers sit in target/generated/, not two levels below the top as
    // in drivers/.
    cmd.arg(format!("PROJECT={}", env.root.display()));
    cmd.arg(format!(
        "-j{}",
        std::thread::available_parallelism().map_or(2, |n| n.get())
    ));
    for (key, value) in vars {
        cmd.arg(format!("{key}={value}"));
    }
    cmd.arg(target);
    run(cmd, &format!("make {target} of {}", dir.display()), env).map(drop)
}

/// `program` (a path, or a name in the chroot's PATH) to run in the chroot of Debian kernel
/// `env.kernel`.
fn in_chroot(env: &Env, program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(env.root.join("scripts/debian-chroot.sh"));
    cmd.arg(env.kernel.name()).arg(program);
    cmd
}

/// Runs `cmd`, described as `what`, and returns its standard output.
fn run(mut cmd: Command, what: &str, env: &Env) -> Result<String> {
    let out = cmd.output().map_err(|e| err!("cannot run {what}: {e}"))?;
    if !out.status.success() {
        return Err(err!(
            "{what} for the {} kernel failed:\n{}{}",
            env.kernel.name(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Builds and installs the driver in `dir` with DKMS for Debian kernel `env.kernel`, in its
/// chroot, as a user would (`scripts/dkms.sh add`, then `dkms install`), and returns the module
/// DKMS installed, uncompressed, in `target/kbuild/<kernel>-dkms/<name>/`. An earlier version of
/// the same driver is removed from DKMS first.
pub fn dkms_install(env: &Env, dir: &Path) -> Result<PathBuf> {
    if !env.kernel.is_debian() {
        return Err(err!(
            "DKMS builds are for Debian's kernels, not the {} kernel",
            env.kernel.name()
        ));
    }
    let dir = env.root.join(dir);
    let name = dir
        .file_name()
        .ok_or_else(|| err!("{}: no driver name", dir.display()))?
        .to_string_lossy()
        .into_owned();
    let release = env.var("KRELEASE")?;
    let lock = dir_lock(&dir);
    let _guard = lock.lock().unwrap_or_else(|e| e.into_inner());

    let mut add = in_chroot(env, env.root.join("scripts/dkms.sh"));
    add.arg("add").arg(&dir);
    let added = run(add, &format!("scripts/dkms.sh add {}", dir.display()), env)?;
    let package = added
        .lines()
        .last()
        .ok_or_else(|| err!("scripts/dkms.sh add {} named no package", dir.display()))?;
    let mut install = in_chroot(env, "dkms");
    install.args(["install", "--force", package, "-k", release]);
    run(install, &format!("dkms install {package}"), env)?;

    let chroot = PathBuf::from(env.var("CHROOT")?);
    let installed = chroot.join(format!("usr/lib/modules/{release}/updates/dkms"));
    let installed_ko = ["ko.xz", "ko.zst", "ko.gz", "ko"]
        .iter()
        .map(|ext| installed.join(format!("{name}.{ext}")))
        .find(|p| p.exists())
        .ok_or_else(|| err!("dkms install put no {name}.ko* in {}", installed.display()))?;
    let out_dir = env
        .root
        .join("target/kbuild")
        .join(format!("{}-dkms", env.kernel.name()));
    std::fs::create_dir_all(&out_dir)?;
    let ko = out_dir.join(format!("{name}.ko"));
    let mut unpack = Command::new("sh");
    unpack
        .arg("-c")
        .arg(r#"case $1 in *.xz) xz -dc "$1" ;; *.zst) zstd -dc "$1" ;; *.gz) gzip -dc "$1" ;; *) cat "$1" ;; esac >"$2""#)
        .arg("sh")
        .arg(&installed_ko)
        .arg(&ko);
    run(
        unpack,
        &format!("unpacking {}", installed_ko.display()),
        env,
    )?;
    Ok(ko)
}

fn dir_lock(dir: &Path) -> Arc<Mutex<()>> {
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
    let mut locks = LOCKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    locks.entry(dir.to_path_buf()).or_default().clone()
}
