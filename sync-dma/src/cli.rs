//! The command line.

use std::ffi::OsString;
use std::io::Read;
use std::path::PathBuf;

use crate::changelog::Message;
use crate::git::git_toplevel;
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

/// The command and its options, from the arguments after the program's name; `None` when there is
/// nothing to do (`--help`, printed).
///
/// lexopt, not clap: the command line has options in any order around the command, `--check` as a
/// command, and error messages and exit code 2 that the tests and scripts/sync-dma.sh rely on, with
/// its own usage text; lexopt yields the arguments one by one and leaves all that to this function,
/// and is tiny, with no dependencies and no proc-macro build time.
pub fn parse<I>(args: I) -> Result<Option<(Command, Options)>>
where
    I: IntoIterator,
    I::Item: Into<OsString>,
{
    use lexopt::prelude::*;

    let bad = |e: lexopt::Error| fail!(exit::BAD_INPUT, "{e}\n{USAGE}");
    let mut root = None;
    let mut kdirs = Vec::new();
    let mut rust_src = None;
    let mut command = None;
    let mut force = false;
    let mut json = false;
    let mut message_source = None;
    let mut rest = Vec::new();
    let mut parser = lexopt::Parser::from_args(args);
    while let Some(arg) = parser.next().map_err(bad)? {
        match arg {
            Long(name @ ("root" | "kdir" | "rust-src")) => {
                let option = format!("--{name}");
                let value =
                    PathBuf::from(parser.value().map_err(|_| {
                        fail!(exit::BAD_INPUT, "{option} needs a directory\n{USAGE}")
                    })?);
                match option.as_str() {
                    "--root" => root = Some(value),
                    "--kdir" => kdirs.push(value),
                    _ => rust_src = Some(value),
                }
            }
            Long(name @ ("message" | "message-file")) => {
                if message_source.is_some() {
                    return Err(fail!(
                        exit::BAD_INPUT,
                        "one message only: --message TEXT or --message-file FILE"
                    ));
                }
                let option = format!("--{name}");
                let value = parser
                    .value()
                    .map_err(|_| fail!(exit::BAD_INPUT, "{option} needs a value\n{USAGE}"))?;
                message_source = Some(if option == "--message" {
                    MessageSource::Text(value.string().map_err(bad)?)
                } else {
                    MessageSource::File(PathBuf::from(value))
                });
            }
            Long("force") => force = true,
            Long("json") => json = true,
            Short('h') | Long("help") => {
                println!("{USAGE}");
                return Ok(None);
            }
            Long("check") => command = Some(Command::Check),
            Short(c) => return Err(fail!(exit::BAD_INPUT, "unknown option -{c}\n{USAGE}")),
            Long(name) => return Err(fail!(exit::BAD_INPUT, "unknown option --{name}\n{USAGE}")),
            Value(value) => {
                let value = value.string().map_err(bad)?;
                match value.as_str() {
                    "check" => command = Some(Command::Check),
                    "init" if command.is_none() => command = Some(Command::Init),
                    "update" if command.is_none() => command = Some(Command::Update),
                    "bench" if command.is_none() => command = Some(Command::Bench),
                    _ => rest.push(value),
                }
            }
        }
    }
    let Some(command) = command else {
        return Err(fail!(exit::BAD_INPUT, "no command\n{USAGE}"));
    };
    if message_source.is_some() && command != Command::Update {
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
        force,
        json,
        message,
        rest,
    };
    Ok(Some((command, opts)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(args: &[&str]) -> Result<(Command, Options)> {
        parse(args.iter().copied()).map(|p| p.expect("not --help"))
    }

    fn error(args: &[&str]) -> String {
        let Err(e) = parsed(args) else {
            panic!("{args:?} parsed")
        };
        assert_eq!(e.code, exit::BAD_INPUT, "{args:?}: {}", e.message);
        e.message
    }

    #[test]
    fn options_go_anywhere_around_the_command() {
        let (command, opts) = parsed(&[
            "update",
            "--kdir",
            "/a",
            "drivers/x",
            "--root",
            "/r",
            "--force",
            "--kdir=/b",
            "--message",
            "Title",
        ])
        .unwrap();
        assert_eq!(command, Command::Update);
        assert_eq!(opts.root, PathBuf::from("/r"));
        assert_eq!(opts.kdirs, [PathBuf::from("/a"), PathBuf::from("/b")]);
        assert!(opts.force && !opts.json && opts.message.is_some());
        assert_eq!(opts.rest, ["drivers/x"]);

        let (command, opts) = parsed(&["--root", "/r", "--kdir", "/a", "--json", "check"]).unwrap();
        assert_eq!(command, Command::Check);
        assert!(opts.json && opts.rest.is_empty());
        // A second command word is an argument of the first: `update init` names a driver.
        let (command, opts) = parsed(&["--root", "/r", "--kdir", "/a", "update", "init"]).unwrap();
        assert_eq!(
            (command, opts.rest),
            (Command::Update, vec!["init".to_string()])
        );
        let (command, opts) = parsed(&["--root", "/r", "--kdir", "/a", "bench", "7"]).unwrap();
        assert_eq!(
            (command, opts.rest),
            (Command::Bench, vec!["7".to_string()])
        );
    }

    #[test]
    fn bad_command_lines_are_refused_with_their_message() {
        let base = ["--root", "/r", "--kdir", "/a"];
        let with = |more: &[&'static str]| [&base[..], more].concat();
        assert!(error(&with(&["--frobnicate", "--check"]))
            .starts_with("unknown option --frobnicate\nusage: "));
        assert!(error(&with(&["-x", "--check"])).starts_with("unknown option -x\n"));
        assert!(error(&with(&[])).starts_with("no command\n"));
        assert!(error(&["--check", "--kdir"]).starts_with("--kdir needs a directory\n"));
        assert!(error(&["--check", "--root"]).starts_with("--root needs a directory\n"));
        assert!(error(&with(&["update", "--message"])).starts_with("--message needs a value\n"));
        assert!(
            error(&with(&["update", "--message", "a", "--message-file", "b"]))
                .starts_with("one message only")
        );
        assert!(error(&with(&["--check", "--message", "a"])).contains("for update only"));
        assert!(error(&with(&["--check", "--json=yes"])).contains("--json"));
        assert!(parse(["--frobnicate", "--help"]).is_err());
        assert!(matches!(parse(["--help", "--frobnicate"]), Ok(None)));
    }
}
