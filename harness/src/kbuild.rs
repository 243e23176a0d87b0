//! Builds out-of-tree modules with Kbuild against the project's kernel.

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

    // Kbuild refuses a separate output directory while the sources hold a build of their own (a
    // `make` in the directory), whose objects it could otherwise mistake for its own.
    if dir.join("modules.order").exists() {
        kbuild(env, &dir, None, &[], "clean")?;
    }
    std::fs::create_dir_all(&output)?;
    kbuild(env, &dir, Some(&output), vars, "modules")?;
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
    let mut cmd = Command::new("make");
    cmd.arg("-C")
        .arg(&env.kdir)
        .arg(format!("M={}", dir.display()));
    if let Some(output) = output {
        cmd.arg(format!("MO={}", output.display()));
    }
    cmd.arg(format!(
        "-j{}",
        std::thread::available_parallelism().map_or(2, |n| n.get())
    ));
    for key in ["RUSTC", "HOSTRUSTC", "RUSTDOC", "BINDGEN"] {
        cmd.arg(format!("{key}={}", env.var(key)?));
    }
    if let Ok(llvm) = env.var("LLVM") {
        cmd.arg(format!("LLVM={llvm}"));
    }
    for (key, value) in vars {
        cmd.arg(format!("{key}={value}"));
    }
    cmd.env("LIBCLANG_PATH", env.var("LIBCLANG_PATH")?)
        .arg(target);
    let out = cmd
        .output()
        .map_err(|e| err!("cannot run make for {}: {e}", dir.display()))?;
    if !out.status.success() {
        return Err(err!(
            "make {target} of {} for the {} kernel failed:\n{}{}",
            dir.display(),
            env.kernel.name(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

fn dir_lock(dir: &Path) -> Arc<Mutex<()>> {
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
    let mut locks = LOCKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    locks.entry(dir.to_path_buf()).or_default().clone()
}
