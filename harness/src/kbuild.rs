//! Builds out-of-tree modules with Kbuild against the project's kernel.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use crate::{err, Env, Result};

/// Builds the module directory `dir` (absolute, or relative to the repository root) with
/// `make -C $KDIR M=<dir> modules` and returns the `.ko` files it produced.
///
/// Tests run in parallel threads; builds of one directory are serialised so that Kbuild never runs
/// twice in the same tree at once.
pub fn build_module(dir: impl AsRef<Path>) -> Result<Vec<PathBuf>> {
    build_module_with(dir, &[])
}

/// As [`build_module`], with extra make variables (`NAME=value`) for the module's Kbuild file.
pub fn build_module_with(dir: impl AsRef<Path>, vars: &[(&str, &str)]) -> Result<Vec<PathBuf>> {
    let env = Env::get()?;
    let dir = env.root.join(dir.as_ref());
    let lock = dir_lock(&dir);
    let _guard = lock.lock().unwrap_or_else(|e| e.into_inner());

    let mut cmd = Command::new("make");
    cmd.arg("-C")
        .arg(&env.kdir)
        .arg(format!("M={}", dir.display()))
        .arg(format!(
            "-j{}",
            std::thread::available_parallelism().map_or(2, |n| n.get())
        ));
    for key in ["RUSTC", "HOSTRUSTC", "RUSTDOC", "BINDGEN"] {
        cmd.arg(format!("{key}={}", env.var(key)?));
    }
    for (key, value) in vars {
        cmd.arg(format!("{key}={value}"));
    }
    cmd.env("LIBCLANG_PATH", env.var("LIBCLANG_PATH")?)
        .arg("modules");
    let out = cmd
        .output()
        .map_err(|e| err!("cannot run make for {}: {e}", dir.display()))?;
    if !out.status.success() {
        return Err(err!(
            "building {} failed:\n{}{}",
            dir.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let order = std::fs::read_to_string(dir.join("modules.order"))
        .map_err(|e| err!("{}: no modules.order after the build: {e}", dir.display()))?;
    let modules: Vec<PathBuf> = order
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| dir.join(l.trim().replace(".o", ".ko")))
        .collect();
    if modules.is_empty() {
        return Err(err!("{} built no module", dir.display()));
    }
    Ok(modules)
}

fn dir_lock(dir: &Path) -> Arc<Mutex<()>> {
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
    let mut locks = LOCKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    locks.entry(dir.to_path_buf()).or_default().clone()
}
