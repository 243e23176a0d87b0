//! Small static programs for the guest, built from `harness/guest/tools/<name>.c` with the host's gcc.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

use crate::{err, Env, Result};

/// Builds the guest tool `name` (when its source is newer than the binary) and returns the binary.
pub fn guest_tool(name: &str) -> Result<PathBuf> {
    static BUILDING: Mutex<()> = Mutex::new(());
    let _one = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    let env = Env::get()?;
    let source = env
        .root
        .join("harness/guest/tools")
        .join(format!("{name}.c"));
    let out_dir = env.root.join("target/guest-tools");
    let binary = out_dir.join(name);
    let modified = |p: &PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if modified(&binary).is_some() && modified(&binary) >= modified(&source) {
        return Ok(binary);
    }
    std::fs::create_dir_all(&out_dir)?;
    let out = Command::new("gcc")
        .args(["-static", "-O2", "-Wall", "-Werror", "-o"])
        .arg(&binary)
        .arg(&source)
        .output()
        .map_err(|e| err!("cannot run gcc for guest tool {name}: {e}"))?;
    if !out.status.success() {
        return Err(err!(
            "building guest tool {name} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(binary)
}
