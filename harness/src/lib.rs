//! Host-side test harness for the project's kernel modules.
//!
//! A test describes a [`Scenario`]: one or more QEMU VMs, each with the devices it needs, the
//! modules to build and put in its initramfs, and a guest shell script. The harness builds the
//! modules against the project's cached kernel (Kbuild), boots every VM under TCG with a hard time
//! limit, and returns what the guests reported in KTAP on their second serial port, together with
//! each console log. A scenario fails when a guest check fails, when a guest does not finish, or
//! when the kernel log shows an Oops, BUG, WARNING, `DMA-API:` or kmemleak report; every failure
//! names the log file to read.
//!
//! ```no_run
//! use harness::{Scenario, Vm};
//! let outcome = Scenario::new("smoke")
//!     .vm(Vm::new("guest").module("modules/smoke").script("check load insmod /modules/rust_smoke.ko"))
//!     .run()
//!     .expect("scenario");
//! outcome.vm("guest").assert_passed("load");
//! ```

mod bench_args;
mod cores;
mod env;
mod guest_tools;
mod initramfs;
mod kbuild;
mod kernel_log;
mod ktap;
pub mod nvme;
mod qemu;
mod qmp;
mod scenario;
pub mod stats;
mod template;

pub use bench_args::BenchArgs;
pub use cores::Cores;
pub use env::{fault_step, Env, Kernel};
pub use guest_tools::guest_tool;
pub use kbuild::{build_module, build_module_against, build_module_with, dkms_install};
pub use kernel_log::{problems, problems_except, KnownWarning, Problem};
pub use ktap::{Ktap, TestResult};
pub use qemu::{Counted, Drive, Machine, NetBackend, Nic, Vm, MIB};
pub use qmp::Qmp;
pub use scenario::{CountMarks, Outcome, Scenario, SocketLink, VmOutcome};
pub use template::{fresh_driver_name, generate_driver, VENDORED};

/// Harness errors carry a complete message, including the log file to read where there is one.
#[derive(Debug)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error(e.to_string())
    }
}

/// Result type of the harness.
pub type Result<T> = std::result::Result<T, Error>;

/// Builds an [`Error`] from a format string.
#[macro_export]
macro_rules! err {
    ($($arg:tt)*) => { $crate::Error(format!($($arg)*)) };
}
