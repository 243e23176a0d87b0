//! Drivers generated from `template/` with cargo-generate, as a user would.

use std::path::PathBuf;
use std::process::Command;

use crate::{err, Env, Result};

/// The files that every driver carries byte-identical to the template's, as `template/VENDORED`
/// lists them (`scripts/sync-dma.sh` reads the same list): the DMA wrapper and `compat.rs`.
pub static VENDORED: std::sync::LazyLock<Vec<&'static str>> =
    std::sync::LazyLock::new(|| include_str!("../../template/VENDORED").lines().collect());

/// A fresh driver name for every call (`edu_<8 hex digits>`), so that nothing of an earlier
/// generated driver can be mistaken for this one's.
pub fn fresh_driver_name() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .subsec_nanos();
    format!("edu_{:08x}", std::process::id() ^ nanos)
}

/// Generates a driver called `name` from `template/` into `target/generated/<name>` (replacing an
/// older one), and checks that its vendored files are byte-identical to the template's. Returns its
/// directory.
pub fn generate_driver(name: &str) -> Result<PathBuf> {
    let env = Env::get()?;
    let out = env.root.join("target/generated");
    let dir = out.join(name);
    std::fs::create_dir_all(&out)?;
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    let output = Command::new(env.var("CARGO_GENERATE")?)
        .args(["generate", "--path"])
        .arg(env.root.join("template"))
        .args([
            "--name",
            name,
            "--vcs",
            "none",
            "--no-workspace",
            "--silent",
        ])
        .arg("--destination")
        .arg(&out)
        .env(
            "USER",
            std::env::var("USER").unwrap_or_else(|_| "root".into()),
        )
        .output()
        .map_err(|e| err!("cannot run cargo-generate (run scripts/setup.sh): {e}"))?;
    if !output.status.success() {
        return Err(err!(
            "cargo generate --name {name} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    for file in VENDORED.iter() {
        if std::fs::read(env.root.join("template").join(file))? != std::fs::read(dir.join(file))? {
            return Err(err!(
                "{file} of the generated {name} differs from the template's"
            ));
        }
    }
    Ok(dir)
}
