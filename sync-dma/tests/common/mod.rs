//! What the sync-dma integration tests share: the repository, the set-up's kernel trees, and
//! scratch repositories holding the real template.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The files every driver carries, as `template/VENDORED` lists them: the DMA wrapper and
/// `compat.rs`.
pub static VENDORED: std::sync::LazyLock<Vec<&'static str>> =
    std::sync::LazyLock::new(|| include_str!("../../../template/VENDORED").lines().collect());

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// `scripts/env.sh`'s variables for the kernel `rdd_kernel` names (`None`: the lab kernel); fails
/// the test with the script's message when the set-up has not made that kernel.
pub fn env_of(rdd_kernel: Option<&str>) -> BTreeMap<String, String> {
    let mut command = Command::new("bash");
    command.arg(repo_root().join("scripts/env.sh"));
    if let Some(kernel) = rdd_kernel {
        command.env("RDD_KERNEL", kernel);
    }
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "RDD_KERNEL={} scripts/env.sh failed, so there is no kernel tree to test with (scripts/setup.sh \
         makes them): {}",
        rdd_kernel.unwrap_or("lab"),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A fresh scratch repository `sync-dma-<name>-<pid>` in the temporary directory: the real
/// template's vendored files and API list, a copy of the vendored files in each of `drivers`,
/// `git init`ed and nothing committed.
pub fn scratch_repo(name: &str, drivers: &[&str]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sync-dma-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let root = repo_root();
    for file in VENDORED.iter() {
        for target in std::iter::once(&"template").chain(drivers) {
            let to = dir.join(target).join(file);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(root.join("template").join(file), to).unwrap();
        }
    }
    std::fs::copy(
        root.join("template/dma_local.api"),
        dir.join("template/dma_local.api"),
    )
    .unwrap();
    let git = Command::new("git")
        .args(["init", "-q"])
        .arg(&dir)
        .status()
        .unwrap();
    assert!(git.success());
    dir
}
