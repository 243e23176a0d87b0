//! `sync-dma`: keeps every driver's copy of `dma_local` in step with the template, and the template
//! with the kernel's C DMA API. Run through `scripts/sync-dma.sh`; `sync-dma --help` lists the
//! commands.

mod bench;
mod changelog;
mod cheader;
mod check;
mod cli;
mod fingerprint;
mod git;
mod manifest;
mod repo;
mod tree;
mod update;
mod wrapper_api;

use cli::Command;

/// The wrapper's root, whose items (and its parts') drivers use.
const WRAPPER: &str = "src/dma_local.rs";
/// Where the wrapper's parts are, each a module of the root.
const WRAPPER_PARTS: &str = "src/dma_local/";

/// Whether vendored file `file` is the wrapper's Rust source: its root or one of its parts.
fn is_wrapper(file: &str) -> bool {
    file == WRAPPER || (file.starts_with(WRAPPER_PARTS) && file.ends_with(".rs"))
}
/// The files every driver carries byte-identical to `template/`, as `template/VENDORED` lists them
/// (the harness reads the same list): the DMA wrapper first.
static VENDORED: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
    let listed: Vec<_> = include_str!("../../template/VENDORED").lines().collect();
    assert_eq!(
        listed.first(),
        Some(&WRAPPER),
        "template/VENDORED lists the wrapper first"
    );
    listed
});
const MANIFEST: &str = "dma_local.manifest";
const API_LIST: &str = "template/dma_local.api";

/// Exit codes. Drift classes are bits, so that several at once stay readable from the code.
mod exit {
    /// Bad input: nothing was written.
    pub const BAD_INPUT: i32 = 2;
    /// `update` stopped on a merge conflict; the files hold conflict markers.
    pub const CONFLICT: i32 = 3;
    /// A copy was edited locally (or is missing, or is not in the manifest).
    pub const LOCAL_EDIT: i32 = 4;
    /// The template moved ahead of a copy.
    pub const TEMPLATE_AHEAD: i32 = 8;
    /// A C symbol the wrapper uses changed or disappeared.
    pub const API_BREAKING: i32 = 16;
    /// The C API gained a symbol, or changed one the wrapper does not use.
    pub const API_ADDITIVE: i32 = 32;
    /// Part of the check could not be made: the Rust layouts of installed headers given without
    /// the kernel's source, or the C API of a series the manifest has no record of.
    pub const UNCHECKED: i32 = 64;
}

/// An error with the exit code it ends the program with.
#[derive(Debug)]
pub struct Failure {
    /// Exit code.
    pub code: i32,
    /// What went wrong, for a person.
    pub message: String,
}

/// Result type of the tool.
pub type Result<T> = std::result::Result<T, Failure>;

/// Builds a [`Failure`]: `fail!(code, "format", args)`.
#[macro_export]
macro_rules! fail {
    ($code:expr, $($arg:tt)*) => { $crate::Failure { code: $code, message: format!($($arg)*) } };
}

fn main() {
    match run() {
        Ok(code) => std::process::exit(code),
        Err(f) => {
            eprintln!("sync-dma: {}", f.message);
            std::process::exit(f.code);
        }
    }
}

fn run() -> Result<i32> {
    let Some((command, opts)) = cli::parse(std::env::args_os().skip(1))? else {
        return Ok(0);
    };
    match command {
        Command::Check => check::check(&opts),
        Command::Init => update::init(&opts),
        Command::Update => update::update(&opts),
        Command::Bench => bench::bench(&opts),
    }
}
