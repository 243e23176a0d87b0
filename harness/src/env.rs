//! Where the set-up put the kernel build and its toolchain, as `scripts/env.sh` reports it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::{err, Result};

/// See [`Env::slowdown`]; measured on the guests' own scenarios.
const KASAN_SLOWDOWN: u32 = 3;

/// The project's environment: repository root, kernel build and the variables Kbuild needs.
///
/// There is one per kernel: the lab kernels `lab` (GCC; DMA-API debugging, kmemleak, fault
/// injection) and `kasan` (the same with KASAN, lockdep and list/object debugging, built with
/// LLVM), and Debian's own kernels.
#[derive(Debug, Clone)]
pub struct Env {
    /// The repository's top directory.
    pub root: PathBuf,
    /// Which kernel.
    pub kernel: Kernel,
    /// The kernel build directory (`O=` of the kernel's make), against which modules are built;
    /// for Debian's kernels, their headers as installed in the chroot.
    pub kdir: PathBuf,
    /// Every `KEY=VALUE` that `scripts/env.sh` printed.
    pub vars: BTreeMap<String, String>,
}

/// Which kernel a scenario boots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// The lab kernel: fast enough for every test and benchmark.
    Lab,
    /// The KASAN kernel, for error paths and races: KASAN, lockdep and list/object debugging on
    /// top of all the lab kernel checks, at some four times the cost.
    Kasan,
    /// Debian's own 7.3 kernel (trixie-backports), unmodified; modules built as its users build
    /// them, in a trixie chroot with Debian's toolchain (`kernel/debian-kernels.conf`).
    Debian73,
    /// Debian's own 7.2 kernel (sid), likewise, in a sid chroot.
    Debian72,
}

impl Kernel {
    const ALL: [Kernel; 4] = [
        Kernel::Lab,
        Kernel::Kasan,
        Kernel::Debian73,
        Kernel::Debian72,
    ];

    /// Its name, as `RDD_KERNEL` and `scripts/env.sh` spell it.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Lab => "lab",
            Kernel::Kasan => "kasan",
            Kernel::Debian73 => "debian-7.3",
            Kernel::Debian72 => "debian-7.2",
        }
    }

    /// One of Debian's kernels rather than a lab kernel the project builds.
    pub fn is_debian(self) -> bool {
        matches!(self, Kernel::Debian73 | Kernel::Debian72)
    }

    /// Makes the kernel with `scripts/setup.sh` unless it is there. When a set-up in the
    /// background (`scripts/test.sh`) is making it, this waits for that one to finish. What it
    /// makes itself it makes on idle cores (SCHED_IDLE), as the background set-up does, so that
    /// running scenarios keep theirs.
    fn set_up(self, root: &Path) -> Result<()> {
        let mut setup = Command::new("chrt");
        setup
            .args(["--idle", "0", "bash"])
            .arg(root.join("scripts/setup.sh"))
            .arg("--quiet");
        if self.is_debian() {
            setup.arg("--debian");
        } else {
            setup.args(["--kernel", self.name()]);
        }
        let out = setup
            .output()
            .map_err(|e| err!("cannot run scripts/setup.sh: {e}"))?;
        if !out.status.success() {
            let said = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = said.lines().rev().take(20).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            return Err(err!(
                "setting up the {} kernel failed (scripts/test.sh's background set-up logs are \
                 in runs/):\n{}",
                self.name(),
                tail.join("\n")
            ));
        }
        Ok(())
    }

    fn from_name(name: &str) -> Result<Kernel> {
        Kernel::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                let names: Vec<_> = Kernel::ALL.iter().map(|k| k.name()).collect();
                err!("RDD_KERNEL={name}: the kernels are {}", names.join(", "))
            })
    }
}

impl Env {
    /// The environment of the lab kernel `RDD_KERNEL` names (`lab` when unset), read once per
    /// process.
    pub fn get() -> Result<&'static Env> {
        Env::of(Kernel::Lab)
    }

    /// The environment of `kernel`. For a lab kernel, `RDD_KERNEL` overrides the choice
    /// (`RDD_KERNEL=kasan` runs the whole suite on the KASAN kernel); a scenario made for one of
    /// Debian's kernels keeps it.
    pub fn of(kernel: Kernel) -> Result<&'static Env> {
        static ENVS: [OnceLock<std::result::Result<Env, String>>; Kernel::ALL.len()] =
            [const { OnceLock::new() }; Kernel::ALL.len()];
        let kernel = match std::env::var("RDD_KERNEL") {
            Ok(name) if !kernel.is_debian() => Kernel::from_name(&name)?,
            _ => kernel,
        };
        ENVS[kernel as usize]
            .get_or_init(|| Env::read(kernel).map_err(|e| e.0))
            .as_ref()
            .map_err(|e| err!("{e}"))
    }

    fn read(kernel: Kernel) -> Result<Env> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("the harness lives one level below the repository root")
            .to_path_buf();
        kernel.set_up(&root)?;
        let out = Command::new("bash")
            .arg(root.join("scripts/env.sh"))
            .env("RDD_KERNEL", kernel.name())
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
        Ok(Env {
            root,
            kernel,
            kdir,
            vars,
        })
    }

    /// A value `scripts/env.sh` printed.
    pub fn var(&self, name: &str) -> Result<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .ok_or_else(|| err!("scripts/env.sh printed no {name}"))
    }

    /// The kernel in a few words, for reports: `the lab kernel`, or `Debian's 7.3.4+deb13-amd64`.
    pub fn description(&self) -> String {
        match self.var("KRELEASE") {
            Ok(release) if self.kernel.is_debian() => format!("Debian's {release}"),
            _ => format!("the {} kernel", self.kernel.name()),
        }
    }

    /// The kernel image to boot.
    pub fn bzimage(&self) -> Result<PathBuf> {
        self.var("BZIMAGE").map(PathBuf::from)
    }

    /// A module of the kernel itself, e.g. `drivers/net/ethernet/intel/e1000/e1000.ko`.
    pub fn kernel_module(&self, rel: &str) -> Result<PathBuf> {
        self.var("KMODULES").map(|dir| Path::new(dir).join(rel))
    }

    /// Where a run keeps its logs: `runs/<name>/` in the repository (ignored by git) on the lab
    /// kernel, `runs/<kernel>/<name>/` on the others.
    pub fn run_dir(&self, name: &str) -> PathBuf {
        match self.kernel {
            Kernel::Lab => self.root.join("runs").join(name),
            other => self.root.join("runs").join(other.name()).join(name),
        }
    }

    /// Where Kbuild puts what it builds of the module directory `rel` (relative to the root) for
    /// this kernel: `target/kbuild/<kernel>/<rel>`, so that the two kernels' builds never meet.
    pub fn module_output_dir(&self, rel: &Path) -> PathBuf {
        self.root
            .join("target/kbuild")
            .join(self.kernel.name())
            .join(rel)
    }

    /// How many times longer than on the lab kernel a guest takes here: KASAN checks every
    /// memory access and lockdep every lock, under TCG.
    pub fn slowdown(&self) -> u32 {
        match self.kernel {
            Kernel::Kasan => KASAN_SLOWDOWN,
            _ => 1,
        }
    }
}

/// The step of an allocation-failure sweep (fail allocation 1, 1 + step, 1 + 2 * step, ...):
/// `RDD_FAULT_STEP` (1 fails each one in turn), or `default`.
pub fn fault_step(default: u32) -> u32 {
    std::env::var("RDD_FAULT_STEP").map_or(default, |s| match s.parse::<u32>() {
        Ok(step) if step > 0 => step,
        _ => panic!("RDD_FAULT_STEP={s:?}: a positive whole number"),
    })
}
