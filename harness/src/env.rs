//! Where the set-up put the kernel build and its toolchain, as `scripts/env.sh` reports it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::{err, Result};

/// The project's environment: repository root, kernel build and the variables Kbuild needs.
#[derive(Debug, Clone)]
pub struct Env {
    /// The repository's top directory.
    pub root: PathBuf,
    /// The kernel build directory (`O=` of the kernel's make), against which modules are built.
    pub kdir: PathBuf,
    /// Every `KEY=VALUE` that `scripts/env.sh` printed.
    pub vars: BTreeMap<String, String>,
}

impl Env {
    /// The environment of this checkout, read once per process.
    pub fn get() -> Result<&'static Env> {
        static ENV: OnceLock<std::result::Result<Env, String>> = OnceLock::new();
        ENV.get_or_init(|| Env::read().map_err(|e| e.0))
            .as_ref()
            .map_err(|e| err!("{e}"))
    }

    fn read() -> Result<Env> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("the harness lives one level below the repository root")
            .to_path_buf();
        let out = Command::new("bash")
            .arg(root.join("scripts/env.sh"))
            .output()
            .map_err(|e| err!("cannot run scripts/env.sh: {e}"))?;
        if !out.status.success() {
            return Err(err!(
                "scripts/env.sh failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let vars: BTreeMap<String, String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let kdir = PathBuf::from(
            vars.get("KDIR")
                .ok_or_else(|| err!("scripts/env.sh printed no KDIR"))?,
        );
        Ok(Env { root, kdir, vars })
    }

    /// A value `scripts/env.sh` printed.
    pub fn var(&self, name: &str) -> Result<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .ok_or_else(|| err!("scripts/env.sh printed no {name}"))
    }

    /// The kernel image to boot.
    pub fn bzimage(&self) -> PathBuf {
        self.kdir.join("arch/x86/boot/bzImage")
    }

    /// A module of the kernel build itself, e.g. `drivers/net/ethernet/intel/e1000/e1000.ko`.
    pub fn kernel_module(&self, rel: &str) -> PathBuf {
        self.kdir.join(rel)
    }

    /// Where a run keeps its logs: `runs/<name>/` in the repository (ignored by git).
    pub fn run_dir(&self, name: &str) -> PathBuf {
        self.root.join("runs").join(name)
    }
}
