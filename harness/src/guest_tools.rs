//! Small static programs for the guest, built from `harness/guest/tools/<name>.c` (and the headers
//! beside it) with the host's gcc, and QEMU plugins from `harness/qemu-plugins/<name>.c`.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

use crate::{err, Env, Result};

/// Builds the guest tool `name` (when its source is newer than the binary) and returns the binary.
pub fn guest_tool(name: &str) -> Result<PathBuf> {
    build(
        "harness/guest/tools",
        name,
        "target/guest-tools",
        name,
        &["-static"],
    )
}

/// Builds the QEMU plugin `harness/qemu-plugins/<name>.c` (when its source is newer) and returns
/// the shared object.
pub fn qemu_plugin(name: &str) -> Result<PathBuf> {
    build(
        "harness/qemu-plugins",
        name,
        "target/qemu-plugins",
        &format!("{name}.so"),
        &["-shared", "-fPIC"],
    )
}

fn build(
    source_dir: &str,
    name: &str,
    out_dir: &str,
    file: &str,
    flags: &[&str],
) -> Result<PathBuf> {
    static BUILDING: Mutex<()> = Mutex::new(());
    let _one = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    let env = Env::get()?;
    let source = env.root.join(source_dir).join(format!("{name}.c"));
    let out_dir = env.root.join(out_dir);
    let binary = out_dir.join(file);
    let modified = |p: &PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    // The headers beside the sources are shared between them: a change to one rebuilds them all.
    let headers = std::fs::read_dir(env.root.join(source_dir))?
        .filter_map(|entry| Some(entry.ok()?.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "h"));
    let newest_input = headers.chain([source.clone()]).map(|p| modified(&p)).max();
    if modified(&binary).is_some() && modified(&binary) >= newest_input.flatten() {
        return Ok(binary);
    }
    std::fs::create_dir_all(&out_dir)?;
    let out = Command::new("gcc")
        .args(flags)
        .args(["-O2", "-Wall", "-Werror", "-o"])
        .arg(&binary)
        .arg(&source)
        .output()
        .map_err(|e| err!("cannot run gcc for {name}: {e}"))?;
    if !out.status.success() {
        return Err(err!(
            "building {name} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(binary)
}
