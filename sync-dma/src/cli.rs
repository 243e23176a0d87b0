//! The command line.

use std::io::Read;
use std::path::PathBuf;

use crate::changelog::Message;
use crate::repo::git_toplevel;
use crate::{exit, fail, Result};

const USAGE: &str = "\
usage: sync-dma [--root DIR] --kdir KDIR [--kdir KDIR..] [--rust-src DIR] COMMAND
  --kdir KDIR               a kernel tree: source, build directory, or installed headers (Debian's
                            /lib/modules/RELEASE/build); one per series. The manifest keeps one C
                            API fingerprint per series, and each tree is compared with its own
  --rust-src DIR            the source tree of KDIR's kernel, for the Rust layouts that installed
                            headers lack (one KDIR only)
  --check [--json]          read-only: report drift of copies and of the C API; exit 0 when clean
  init [--force]            write the manifest from the current copies and the KDIRs
  update [--force] [--message TEXT | --message-file FILE] [DIR..]
                            merge the template into every copy (or DIRs), refresh the manifest's
                            records of the KDIRs' series (others are kept), and add an entry to
                            CHANGES.md. A template change needs the message: its first line heads
                            the entry, the rest (after a blank line) says what changed and what a
                            driver has to do. --message-file - reads stdin
  bench [N]                 time --check over N generated drivers (default 100)
exit codes: 0 clean, 2 bad input, 3 merge conflict; drift bits: 4 local edit, 8 template ahead,
            16 breaking C API change, 32 additive C API change, 64 unchecked (Rust layouts of
            headers without --rust-src, or a series the manifest has no record of)";

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Check,
    Init,
    Update,
    Bench,
}

/// The options every command reads from.
pub struct Options {
    pub root: PathBuf,
    /// The kernel trees, at most one per series.
    pub kdirs: Vec<PathBuf>,
    /// The source tree of the one KDIR's kernel, for the Rust layouts.
    pub rust_src: Option<PathBuf>,
    pub force: bool,
    pub json: bool,
    /// `update`'s account of the change, for CHANGES.md.
    pub message: Option<Message>,
    /// `update`'s driver directories, or `bench`'s number of drivers.
    pub rest: Vec<String>,
}

/// Where `update`'s message comes from.
enum MessageSource {
    Text(String),
    File(PathBuf),
}

impl MessageSource {
    fn read(&self) -> Result<Message> {
        let text = match self {
            MessageSource::Text(text) => text.clone(),
            MessageSource::File(path) if path.as_os_str() == "-" => {
                let mut text = String::new();
                std::io::stdin().read_to_string(&mut text).map_err(|e| {
                    fail!(exit::BAD_INPUT, "cannot read the message from stdin: {e}")
                })?;
                text
            }
            MessageSource::File(path) => std::fs::read_to_string(path).map_err(|e| {
                fail!(
                    exit::BAD_INPUT,
                    "cannot read the message file {}: {e}",
                    path.display()
                )
            })?,
        };
        Message::parse(&text)
    }
}

/// The command and its options; `None` when there is nothing to do (`--help`, printed).
pub fn parse(args: &[String]) -> Result<Option<(Command, Options)>> {
    let mut root = None;
    let mut kdirs = Vec::new();
    let mut rust_src = None;
    let mut command = None;
    let mut opts_force = false;
    let mut json = false;
    let mut message_source = None;
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--root" => root = it.next().map(PathBuf::from),
            "--kdir" | "--rust-src" => {
                let value = it
                    .next()
                    .map(PathBuf::from)
                    .ok_or_else(|| fail!(exit::BAD_INPUT, "{a} needs a directory\n{USAGE}"))?;
                if a == "--kdir" {
                    kdirs.push(value);
                } else {
                    rust_src = Some(value);
                }
            }
            "--message" | "--message-file" => {
                if message_source.is_some() {
                    return Err(fail!(
                        exit::BAD_INPUT,
                        "one message only: --message TEXT or --message-file FILE"
                    ));
                }
                let value = it
                    .next()
                    .ok_or_else(|| fail!(exit::BAD_INPUT, "{a} needs a value\n{USAGE}"))?;
                message_source = Some(if a == "--message" {
                    MessageSource::Text(value.clone())
                } else {
                    MessageSource::File(PathBuf::from(value))
                });
            }
            "--force" => opts_force = true,
            "--json" => json = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(None);
            }
            "--check" | "check" => command = Some("check".to_string()),
            "init" | "update" | "bench" if command.is_none() => command = Some(a.clone()),
            other if other.starts_with('-') => {
                return Err(fail!(exit::BAD_INPUT, "unknown option {other}\n{USAGE}"))
            }
            other => rest.push(other.to_string()),
        }
    }
    let Some(command) = command else {
        return Err(fail!(exit::BAD_INPUT, "no command\n{USAGE}"));
    };
    if message_source.is_some() && command != "update" {
        return Err(fail!(
            exit::BAD_INPUT,
            "--message and --message-file are for update only"
        ));
    }
    let message = message_source.map(|m| m.read()).transpose()?;
    let root = match root {
        Some(r) => r,
        None => git_toplevel()?,
    };
    if kdirs.is_empty() {
        kdirs.extend(std::env::var_os("KDIR").map(PathBuf::from));
    }
    if kdirs.is_empty() {
        return Err(fail!(
            exit::BAD_INPUT,
            "no kernel tree: pass --kdir or set KDIR"
        ));
    }
    let opts = Options {
        root,
        kdirs,
        rust_src,
        force: opts_force,
        json,
        message,
        rest,
    };
    let command = match command.as_str() {
        "check" => Command::Check,
        "init" => Command::Init,
        "update" => Command::Update,
        "bench" => Command::Bench,
        _ => unreachable!("commands are matched above"),
    };
    Ok(Some((command, opts)))
}
