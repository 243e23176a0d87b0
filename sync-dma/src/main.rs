//! `sync-dma`: keeps every driver's copy of `dma_local` in step with the template, and the template
//! with the kernel's C DMA API. Run through `scripts/sync-dma.sh`; `sync-dma --help` lists the
//! commands.

mod changelog;
mod cheader;
mod fingerprint;
mod manifest;
mod tree;
mod wrapper_api;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use changelog::{Message, UpdateReport, WrapperApi, WrittenCopy};
use fingerprint::{ApiItem, Fingerprint};
use manifest::{git_blob_id, sha256_hex, CopyRecord, KernelRecord, Manifest};
use tree::{KernelTree, Series};

/// The wrapper itself, whose items drivers use.
const WRAPPER: &str = "src/dma_local.rs";
/// The files every driver carries byte-identical to `template/`.
const VENDORED: &[&str] = &[WRAPPER, "src/dma_local_shim.c", "src/dma_local_shim.h"];
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

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(code) => std::process::exit(code),
        Err(f) => {
            eprintln!("sync-dma: {}", f.message);
            std::process::exit(f.code);
        }
    }
}

struct Options {
    root: PathBuf,
    /// The kernel trees, at most one per series.
    kdirs: Vec<PathBuf>,
    /// The source tree of the one KDIR's kernel, for the Rust layouts.
    rust_src: Option<PathBuf>,
    force: bool,
    json: bool,
    /// `update`'s account of the change, for CHANGES.md.
    message: Option<Message>,
    rest: Vec<String>,
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

fn run(args: &[String]) -> Result<i32> {
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
                return Ok(0);
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
    match command.as_str() {
        "check" => check(&opts),
        "init" => init(&opts),
        "update" => update(&opts),
        "bench" => bench(&opts),
        _ => unreachable!("commands are matched above"),
    }
}

fn git_toplevel() -> Result<PathBuf> {
    let out = Command::new("git")
        .args(["rev-parse", "--show-toplevel"])
        .output()
        .map_err(|e| fail!(exit::BAD_INPUT, "cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(fail!(exit::BAD_INPUT, "not in a git checkout: pass --root"));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| fail!(exit::BAD_INPUT, "cannot read {}: {e}", path.display()))
}

/// Every driver directory (relative to the root) that holds a copy: those of the manifest and every
/// `drivers/*` with a `src/dma_local.rs`.
fn copy_dirs(root: &Path, manifest: Option<&Manifest>) -> Result<BTreeSet<String>> {
    let mut dirs: BTreeSet<String> = manifest
        .map(|m| m.copies.keys().map(|(d, _)| d.clone()).collect())
        .unwrap_or_default();
    let drivers = root.join("drivers");
    if drivers.is_dir() {
        let entries = std::fs::read_dir(&drivers)
            .map_err(|e| fail!(exit::BAD_INPUT, "cannot list {}: {e}", drivers.display()))?;
        for entry in entries.flatten() {
            if entry.path().join(VENDORED[0]).is_file() {
                dirs.insert(format!("drivers/{}", entry.file_name().to_string_lossy()));
            }
        }
    }
    Ok(dirs)
}

/// The kernel trees of `opts`, located; at most one per series, since each is compared with (or
/// recorded as) its series' fingerprint.
fn locate_trees(opts: &Options) -> Result<Vec<KernelTree>> {
    if opts.rust_src.is_some() && opts.kdirs.len() != 1 {
        return Err(fail!(
            exit::BAD_INPUT,
            "--rust-src goes with one --kdir, the kernel whose source it is"
        ));
    }
    let mut trees: Vec<KernelTree> = Vec::new();
    for kdir in &opts.kdirs {
        let tree = KernelTree::locate(kdir, opts.rust_src.as_deref())?;
        if let Some(other) = trees.iter().find(|t| t.series == tree.series) {
            return Err(fail!(
                exit::BAD_INPUT,
                "two trees of {}: {} and {}; the manifest keeps one fingerprint per series",
                tree.series,
                other.given.display(),
                tree.given.display()
            ));
        }
        trees.push(tree);
    }
    Ok(trees)
}

/// The fingerprint of `tree` to record. A record must be whole, so a tree without the kernel
/// crate's sources (installed headers) cannot be recorded: its layouts would read as removed.
fn kernel_record(tree: &KernelTree, api: &[ApiItem]) -> Result<KernelRecord> {
    if tree.rust.is_none() {
        return Err(fail!(
            exit::BAD_INPUT,
            "cannot record {}: {} has the C headers but not the kernel crate's sources, so the Rust \
             layouts cannot be fingerprinted; {}",
            tree.name(),
            tree.headers.display(),
            rust_src_hint(tree)
        ));
    }
    Ok(KernelRecord {
        kernel: tree.name(),
        symbols: fingerprint::take(tree, api)?,
    })
}

/// How to give the Rust sources that `tree` lacks.
fn rust_src_hint(tree: &KernelTree) -> String {
    format!(
        "give the source tree of Linux {} with --rust-src DIR (scripts/sync-dma.sh: KSRC=DIR)",
        tree.release
    )
}

/// A C API difference between the manifest and a tree.
#[derive(Debug, Clone)]
struct ApiChange {
    key: String,
    change: &'static str,
    breaking: bool,
    old: Option<String>,
    new: Option<String>,
}

fn api_changes(old: &Fingerprint, new: &Fingerprint) -> Vec<ApiChange> {
    let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    let mut out = Vec::new();
    for key in keys {
        let (o, n) = (old.get(key), new.get(key));
        let (change, used) = match (o, n) {
            (Some(o), Some(n)) if o.value == n.value => continue,
            (Some(o), Some(n)) => ("changed", o.used || n.used),
            (Some(o), None) => ("removed", o.used),
            (None, Some(_)) => ("added", false),
            (None, None) => continue,
        };
        out.push(ApiChange {
            key: key.clone(),
            change,
            breaking: used,
            old: o.map(|s| s.value.clone()),
            new: n.map(|s| s.value.clone()),
        });
    }
    out
}

/// How [`CopyState::edited`] says that a copy was never recorded.
const NOT_IN_MANIFEST: &str = "not in the manifest";

/// How one copy of one file stands.
struct CopyState {
    dir: String,
    file: String,
    edited: Option<&'static str>,
    behind: bool,
}

fn copy_states(
    root: &Path,
    manifest: &Manifest,
    template: &BTreeMap<String, Vec<u8>>,
) -> Result<Vec<CopyState>> {
    let mut out = Vec::new();
    for dir in copy_dirs(root, Some(manifest))? {
        for file in VENDORED {
            let path = root.join(&dir).join(file);
            let record = manifest.copies.get(&(dir.clone(), file.to_string()));
            let current = match std::fs::read(&path) {
                Ok(c) => Some(c),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => {
                    return Err(fail!(
                        exit::BAD_INPUT,
                        "cannot read {}: {e}",
                        path.display()
                    ))
                }
            };
            let template_now = &template[*file];
            let template_blob = git_blob_id(template_now);
            let (edited, behind) = match (record, &current) {
                (_, None) => (Some("missing"), false),
                (None, Some(_)) => (Some(NOT_IN_MANIFEST), false),
                (Some(r), Some(c)) => {
                    let behind = r.template_blob != template_blob;
                    let edited = if sha256_hex(c) != r.sha256 {
                        Some("edited since the last sync")
                    } else if !behind && c != template_now {
                        Some("carries local edits")
                    } else {
                        None
                    };
                    (edited, behind)
                }
            };
            out.push(CopyState {
                dir: dir.clone(),
                file: file.to_string(),
                edited,
                behind,
            });
        }
    }
    Ok(out)
}

fn read_template(root: &Path) -> Result<BTreeMap<String, Vec<u8>>> {
    VENDORED
        .iter()
        .map(|f| Ok((f.to_string(), read_file(&root.join("template").join(f))?)))
        .collect()
}

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// How one kernel tree compares with the manifest's record of its series.
struct KernelCheck {
    tree: KernelTree,
    /// The kernel the record of the tree's series was taken from; `None` when there is none, and
    /// so nothing to compare with.
    recorded: Option<String>,
    /// The C API (and layout) differences from the record.
    changes: Vec<ApiChange>,
    /// What could not be fingerprinted on the tree, and so was not compared.
    unchecked: BTreeSet<String>,
}

impl KernelCheck {
    fn new(manifest: &Manifest, tree: KernelTree, api: &[ApiItem]) -> Result<KernelCheck> {
        let Some(record) = manifest.kernels.get(&tree.series) else {
            return Ok(KernelCheck {
                tree,
                recorded: None,
                changes: Vec::new(),
                unchecked: BTreeSet::new(),
            });
        };
        let unchecked = fingerprint::unchecked_keys(&tree, api);
        let mut expected = record.symbols.clone();
        expected.retain(|key, _| !unchecked.contains(key));
        let changes = api_changes(&expected, &fingerprint::take(&tree, api)?);
        Ok(KernelCheck {
            tree,
            recorded: Some(record.kernel.clone()),
            changes,
            unchecked,
        })
    }

    /// The exit code's bits for this kernel.
    fn exit_bits(&self) -> i32 {
        let mut code = 0;
        if self.recorded.is_none() || !self.unchecked.is_empty() {
            code |= exit::UNCHECKED;
        }
        for c in &self.changes {
            code |= if c.breaking {
                exit::API_BREAKING
            } else {
                exit::API_ADDITIVE
            };
        }
        code
    }

    /// The text report's lines about this kernel, each starting with its series; none when all is
    /// well.
    fn lines(&self, recorded_series: &[String]) -> Vec<String> {
        let series = self.tree.series;
        let Some(recorded) = &self.recorded else {
            let records = if recorded_series.is_empty() {
                "none".to_string()
            } else {
                recorded_series.join(", ")
            };
            let ksrc = match &self.tree.rust {
                Some(dir) if *dir != self.tree.headers => format!(" KSRC={}", dir.display()),
                Some(_) => String::new(),
                None => format!(" KSRC=<the source tree of Linux {}>", self.tree.release),
            };
            return vec![format!(
                "{series}: C API not checked: the manifest has no record of {series} (its records: \
                 {records}); record {} with: KDIR={}{ksrc} scripts/sync-dma.sh update",
                self.tree.name(),
                self.tree.given.display(),
            )];
        };
        let mut lines = Vec::new();
        if !self.changes.is_empty() {
            lines.push(format!(
                "{series}: C API of {} against the manifest's {recorded}:",
                self.tree.name()
            ));
        }
        for c in &self.changes {
            let class = if c.breaking { "breaking" } else { "additive" };
            let old = c.old.as_deref().unwrap_or("");
            let new = c.new.as_deref().unwrap_or("");
            lines.push(match c.change {
                "changed" => format!("{series}: {class}: {} changed: {old} -> {new}", c.key),
                "removed" => format!("{series}: {class}: {} removed (was {old})", c.key),
                _ => format!("{series}: {class}: {} added: {new}", c.key),
            });
        }
        if !self.unchecked.is_empty() {
            if self.changes.is_empty() {
                lines.push(format!(
                    "{series}: C API unchanged: {} matches the manifest's {recorded}",
                    self.tree.name()
                ));
            }
            lines.push(format!(
                "{series}: Rust layouts not checked ({}): {} has the C headers but not the kernel \
                 crate's sources; {}",
                self.unchecked
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(", "),
                self.tree.headers.display(),
                rust_src_hint(&self.tree)
            ));
        }
        lines
    }

    /// The JSON object about this kernel.
    fn json(&self) -> String {
        format!(
            "{{\"series\":\"{}\",\"kernel\":{},\"recorded\":{},\"unchecked\":[{}]}}",
            self.tree.series,
            json_str(&self.tree.name()),
            self.recorded.as_deref().map_or("null".into(), json_str),
            self.unchecked
                .iter()
                .map(|k| json_str(k))
                .collect::<Vec<_>>()
                .join(",")
        )
    }
}

fn check(opts: &Options) -> Result<i32> {
    let manifest = Manifest::read(&opts.root.join(MANIFEST))?;
    let api = fingerprint::read_api(&opts.root.join(API_LIST))?;
    let kernels = locate_trees(opts)?
        .into_iter()
        .map(|tree| KernelCheck::new(&manifest, tree, &api))
        .collect::<Result<Vec<_>>>()?;
    let template = read_template(&opts.root)?;
    let copies = copy_states(&opts.root, &manifest, &template)?;

    let template_moved: Vec<&String> = template
        .iter()
        .filter(|(file, content)| manifest.template.get(*file) != Some(&git_blob_id(content)))
        .map(|(file, _)| file)
        .collect();
    let mut code = if template_moved.is_empty() {
        0
    } else {
        exit::TEMPLATE_AHEAD
    };
    for c in &copies {
        if c.edited.is_some() {
            code |= exit::LOCAL_EDIT;
        }
        if c.behind {
            code |= exit::TEMPLATE_AHEAD;
        }
    }
    for k in &kernels {
        code |= k.exit_bits();
    }

    if opts.json {
        let copies_json: Vec<String> = copies
            .iter()
            .filter(|c| c.edited.is_some() || c.behind)
            .map(|c| {
                format!(
                    "{{\"driver\":{},\"file\":{},\"edited\":{},\"template_ahead\":{}}}",
                    json_str(&c.dir),
                    json_str(&c.file),
                    c.edited.map_or("null".to_string(), json_str),
                    c.behind
                )
            })
            .collect();
        let api_json: Vec<String> = kernels
            .iter()
            .flat_map(|k| k.changes.iter().map(move |c| (k.tree.series, c)))
            .map(|(series, c)| {
                format!(
                    "{{\"series\":\"{series}\",\"symbol\":{},\"change\":\"{}\",\"class\":\"{}\",\"old\":{},\"new\":{}}}",
                    json_str(&c.key),
                    c.change,
                    if c.breaking { "breaking" } else { "additive" },
                    c.old.as_deref().map_or("null".into(), json_str),
                    c.new.as_deref().map_or("null".into(), json_str)
                )
            })
            .collect();
        println!(
            "{{\"exit\":{code},\"template_changed\":[{}],\"copies\":[{}],\"kernels\":[{}],\"api\":[{}]}}",
            template_moved.iter().map(|f| json_str(f)).collect::<Vec<_>>().join(","),
            copies_json.join(","),
            kernels.iter().map(KernelCheck::json).collect::<Vec<_>>().join(","),
            api_json.join(",")
        );
        return Ok(code);
    }

    for file in &template_moved {
        println!("template/{file}: changed since the manifest was written (run scripts/sync-dma.sh update --message TEXT, saying what changed and what a driver has to do)");
    }
    for c in copies.iter().filter(|c| c.edited.is_some() || c.behind) {
        let what = match (c.edited, c.behind) {
            (Some(NOT_IN_MANIFEST), _) => format!(
                "{NOT_IN_MANIFEST}; record it with: scripts/sync-dma.sh update {}",
                c.dir
            ),
            (Some(e), true) => format!("{e}, and the template moved ahead of it"),
            (Some(e), false) => e.to_string(),
            (None, _) => "the template moved ahead of it".to_string(),
        };
        println!("copy {}/{}: {what}", c.dir, c.file);
    }
    let recorded_series: Vec<String> = manifest.kernels.keys().map(Series::to_string).collect();
    for k in &kernels {
        for line in k.lines(&recorded_series) {
            println!("{line}");
        }
    }
    if code == 0 {
        let dirs: BTreeSet<&String> = copies.iter().map(|c| &c.dir).collect();
        let compared: Vec<String> = kernels.iter().filter_map(|k| k.recorded.clone()).collect();
        println!(
            "clean: {} copies ({} files) in step with the template; C API unchanged since the \
             manifest's {}",
            dirs.len(),
            copies.len(),
            changelog::and_list(&compared)
        );
    }
    Ok(code)
}

/// The manifest as the copies stand now, with the given kernel records.
fn fresh_manifest(
    root: &Path,
    template: &BTreeMap<String, Vec<u8>>,
    dirs: &BTreeSet<String>,
    kernels: BTreeMap<Series, KernelRecord>,
) -> Result<Manifest> {
    let mut m = Manifest {
        kernels,
        ..Default::default()
    };
    for (file, content) in template {
        m.template.insert(file.clone(), git_blob_id(content));
    }
    for dir in dirs {
        for file in VENDORED {
            let content = read_file(&root.join(dir).join(file))?;
            m.copies.insert(
                (dir.clone(), file.to_string()),
                CopyRecord {
                    sha256: sha256_hex(&content),
                    template_blob: git_blob_id(&template[*file]),
                },
            );
        }
    }
    Ok(m)
}

/// The fingerprints of `opts`'s trees, to record, by series.
fn kernel_records(opts: &Options) -> Result<BTreeMap<Series, KernelRecord>> {
    let api = fingerprint::read_api(&opts.root.join(API_LIST))?;
    locate_trees(opts)?
        .iter()
        .map(|tree| Ok((tree.series, kernel_record(tree, &api)?)))
        .collect()
}

/// "7.2: 7.2.13 (linux-source-7.2_7.2.13-1), 231 C symbols; 7.3: …"
fn describe_kernels(kernels: &BTreeMap<Series, KernelRecord>) -> String {
    kernels
        .iter()
        .map(|(series, r)| format!("{series}: {}, {} C symbols", r.kernel, r.symbols.len()))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Stores the template's files in git's object database, so that a later update finds them as its
/// merge base.
fn store_blobs(root: &Path) -> Result<()> {
    for file in VENDORED {
        git(root, &["hash-object", "-w", &format!("template/{file}")])?;
    }
    Ok(())
}

fn git(root: &Path, args: &[&str]) -> Result<Vec<u8>> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .map_err(|e| fail!(exit::BAD_INPUT, "cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(fail!(
            exit::BAD_INPUT,
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(out.stdout)
}

fn init(opts: &Options) -> Result<i32> {
    let path = opts.root.join(MANIFEST);
    if path.exists() && !opts.force {
        return Err(fail!(
            exit::BAD_INPUT,
            "{} exists; `update` refreshes it (init --force rewrites it)",
            path.display()
        ));
    }
    let kernels = kernel_records(opts)?;
    let template = read_template(&opts.root)?;
    let dirs = copy_dirs(&opts.root, None)?;
    let m = fresh_manifest(&opts.root, &template, &dirs, kernels)?;
    store_blobs(&opts.root)?;
    std::fs::write(&path, m.render())
        .map_err(|e| fail!(exit::BAD_INPUT, "cannot write {}: {e}", path.display()))?;
    println!(
        "wrote {MANIFEST}: {} copies; {}",
        dirs.len(),
        describe_kernels(&m.kernels)
    );
    Ok(0)
}

/// What update does to one file.
enum Action {
    Keep,
    /// Write the content; `true` when it merges the template into local edits.
    Write(Vec<u8>, bool),
    Conflict(Vec<u8>),
}

fn update(opts: &Options) -> Result<i32> {
    // Everything is read and checked before anything is written.
    let old = Manifest::read(&opts.root.join(MANIFEST))?;
    let refreshed = kernel_records(opts)?;
    let template = read_template(&opts.root)?;
    let all = copy_dirs(&opts.root, Some(&old))?;
    let selected: BTreeSet<String> = if opts.rest.is_empty() {
        all.clone()
    } else {
        let mut s = BTreeSet::new();
        for d in &opts.rest {
            let d = d.trim_end_matches('/').to_string();
            if !all.contains(&d) {
                return Err(fail!(
                    exit::BAD_INPUT,
                    "unknown driver {d}: known copies are {}",
                    all.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
            s.insert(d);
        }
        s
    };

    // A change of the wrapper needs a person's account of it in CHANGES.md.
    let template_changed: Vec<&str> = VENDORED
        .iter()
        .copied()
        .filter(|file| old.template.get(*file) != Some(&git_blob_id(&template[*file])))
        .collect();
    let wrapper_api = template_changed
        .contains(&WRAPPER)
        .then(|| wrapper_api_change(&opts.root, &old, &template[WRAPPER]));
    if !template_changed.is_empty() && opts.message.is_none() {
        let computed: String = wrapper_api
            .iter()
            .flat_map(WrapperApi::describe)
            .map(|line| format!("\n  - {line}"))
            .collect();
        return Err(fail!(
            exit::BAD_INPUT,
            "the template changed since the manifest was written ({}), so CHANGES.md needs a message \
             saying what changed and what a driver has to do: pass --message TEXT or --message-file \
             FILE (its first line heads the entry; a blank line, then the details). Nothing was \
             written.{}",
            template_changed.join(", "),
            if computed.is_empty() {
                String::new()
            } else {
                format!("\nThe entry will also list the wrapper's API difference:{computed}")
            }
        ));
    }

    let mut plan: Vec<(String, String, Action)> = Vec::new();
    for dir in &selected {
        for file in VENDORED {
            let path = opts.root.join(dir).join(file);
            let ours = read_file(&path)?;
            let theirs = &template[*file];
            // An unrecorded copy has no merge base: it is recorded as it is.
            let base = match old.copies.get(&(dir.clone(), file.to_string())) {
                Some(r) => git(&opts.root, &["cat-file", "blob", &r.template_blob]).map_err(|_| {
                    fail!(exit::BAD_INPUT, "{dir}/{file}: its template revision {} is not in git's history, so there is no merge base", r.template_blob)
                })?,
                None => theirs.clone(),
            };
            let action = if &ours == theirs || theirs == &base {
                Action::Keep
            } else if ours == base {
                Action::Write(theirs.clone(), false)
            } else {
                merge(&opts.root, dir, file, &ours, &base, theirs)?
            };
            plan.push((dir.clone(), file.to_string(), action));
        }
    }

    if !opts.force {
        let dirty: Vec<String> = plan
            .iter()
            .filter(|(_, _, a)| !matches!(a, Action::Keep))
            .map(|(d, f, _)| format!("{d}/{f}"))
            .filter(|p| {
                git(&opts.root, &["status", "--porcelain", "--", p]).is_ok_and(|o| !o.is_empty())
            })
            .collect();
        if !dirty.is_empty() {
            return Err(fail!(exit::BAD_INPUT, "uncommitted changes in files update would write: {} (commit them, or pass --force)", dirty.join(", ")));
        }
    }

    let mut written = Vec::new();
    let mut conflicts = Vec::new();
    for (dir, file, action) in &plan {
        let path = opts.root.join(dir).join(file);
        let content = match action {
            Action::Keep => continue,
            Action::Write(content, kept_local_edits) => {
                written.push(WrittenCopy {
                    dir: dir.clone(),
                    file: file.clone(),
                    kept_local_edits: *kept_local_edits,
                });
                content
            }
            Action::Conflict(content) => {
                conflicts.push(format!("{dir}/{file}"));
                content
            }
        };
        std::fs::write(&path, content)
            .map_err(|e| fail!(exit::BAD_INPUT, "cannot write {}: {e}", path.display()))?;
    }
    if !conflicts.is_empty() {
        for w in &written {
            println!("{w}");
        }
        for c in &conflicts {
            println!("{c} (conflict)");
        }
        return Err(fail!(
            exit::CONFLICT,
            "merge conflicts in {}: resolve the <<<<<<< markers (your edits and the template's are both there), then run update again (with the same message)",
            conflicts.join(", ")
        ));
    }

    // The series of the trees given are refreshed (or added); the others keep their records.
    let mut kernels = old.kernels.clone();
    kernels.extend(refreshed);
    let mut new = fresh_manifest(&opts.root, &template, &selected, kernels)?;
    // Copies not selected keep their records; unrecorded ones stay unrecorded.
    for (key, record) in &old.copies {
        if !selected.contains(&key.0) {
            new.copies.insert(key.clone(), record.clone());
        }
    }
    let report = UpdateReport::new(&old, &new, &template, &written, wrapper_api);
    store_blobs(&opts.root)?;
    std::fs::write(opts.root.join(MANIFEST), new.render())
        .map_err(|e| fail!(exit::BAD_INPUT, "cannot write the manifest: {e}"))?;
    if report.is_empty() {
        println!(
            "nothing changed since the manifest was written: {} left as it is{}",
            changelog::FILE,
            if opts.message.is_some() {
                " (the message is not used)"
            } else {
                ""
            }
        );
    } else {
        let entry = report.entry(&changelog::today_utc(), opts.message.as_ref());
        changelog::append(&opts.root, &entry)?;
    }
    for w in &written {
        println!("{w}");
    }
    let recorded_dirs: BTreeSet<&String> = new.copies.keys().map(|(dir, _)| dir).collect();
    println!(
        "manifest refreshed: {} copies; {}",
        recorded_dirs.len(),
        describe_kernels(&new.kernels)
    );
    Ok(0)
}

/// How the wrapper's items changed from the template revision the manifest records to `current`.
/// The old text comes from git's object database, where `init` and `update` store every revision
/// they record.
fn wrapper_api_change(root: &Path, old: &Manifest, current: &[u8]) -> WrapperApi {
    let previous = old
        .template
        .get(WRAPPER)
        .and_then(|blob| git(root, &["cat-file", "blob", blob]).ok());
    match previous {
        Some(previous) => WrapperApi::Known(wrapper_api::diff(
            &wrapper_api::items(&String::from_utf8_lossy(&previous)),
            &wrapper_api::items(&String::from_utf8_lossy(current)),
        )),
        None => WrapperApi::Unknown,
    }
}

fn merge(
    root: &Path,
    dir: &str,
    file: &str,
    ours: &[u8],
    base: &[u8],
    theirs: &[u8],
) -> Result<Action> {
    let tmp = std::env::temp_dir().join(format!(
        "sync-dma-{}-{}",
        std::process::id(),
        sha256_hex(format!("{dir}{file}").as_bytes())
    ));
    std::fs::create_dir_all(&tmp)
        .map_err(|e| fail!(exit::BAD_INPUT, "cannot create {}: {e}", tmp.display()))?;
    let write = |name: &str, data: &[u8]| {
        std::fs::write(tmp.join(name), data)
            .map_err(|e| fail!(exit::BAD_INPUT, "cannot write a merge input: {e}"))
    };
    write("ours", ours)?;
    write("base", base)?;
    write("theirs", theirs)?;
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["merge-file", "-p", "-L"])
        .arg(format!("{dir}/{file} (local edits)"))
        .args(["-L", "last synced template", "-L", "template now"])
        .arg(tmp.join("ours"))
        .arg(tmp.join("base"))
        .arg(tmp.join("theirs"))
        .output()
        .map_err(|e| fail!(exit::BAD_INPUT, "cannot run git merge-file: {e}"));
    let _ = std::fs::remove_dir_all(&tmp);
    let out = out?;
    match out.status.code() {
        Some(0) => Ok(Action::Write(out.stdout, true)),
        Some(n) if n > 0 => Ok(Action::Conflict(out.stdout)),
        _ => Err(fail!(
            exit::BAD_INPUT,
            "git merge-file failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}

/// Times `--check` over `N` generated drivers in a scratch repository.
fn bench(opts: &Options) -> Result<i32> {
    let n: usize = opts
        .rest
        .first()
        .map_or(Ok(100), |s| s.parse())
        .map_err(|_| fail!(exit::BAD_INPUT, "bench takes a number of drivers"))?;
    let scratch = std::env::temp_dir().join(format!("sync-dma-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let copy = |from: &Path, to: &Path| -> Result<()> {
        std::fs::create_dir_all(to.parent().expect("has a parent"))
            .map_err(|e| fail!(exit::BAD_INPUT, "{e}"))?;
        std::fs::copy(from, to)
            .map(drop)
            .map_err(|e| fail!(exit::BAD_INPUT, "cannot copy {}: {e}", from.display()))
    };
    for file in VENDORED {
        copy(
            &opts.root.join("template").join(file),
            &scratch.join("template").join(file),
        )?;
        for i in 0..n {
            copy(
                &opts.root.join("template").join(file),
                &scratch.join(format!("drivers/drv{i:03}")).join(file),
            )?;
        }
    }
    copy(&opts.root.join(API_LIST), &scratch.join(API_LIST))?;
    git(&scratch, &["init", "-q"])?;
    let exe = std::env::current_exe().map_err(|e| fail!(exit::BAD_INPUT, "{e}"))?;
    let mut kernel_args: Vec<&std::ffi::OsStr> = Vec::new();
    for kdir in &opts.kdirs {
        kernel_args.extend(["--kdir".as_ref(), kdir.as_os_str()]);
    }
    if let Some(dir) = &opts.rust_src {
        kernel_args.extend(["--rust-src".as_ref(), dir.as_os_str()]);
    }
    let run = |args: &[&str]| {
        Command::new(&exe)
            .arg("--root")
            .arg(&scratch)
            .args(&kernel_args)
            .args(args)
            .output()
            .map_err(|e| fail!(exit::BAD_INPUT, "{e}"))
    };
    let out = run(&["init"])?;
    if !out.status.success() {
        return Err(fail!(
            exit::BAD_INPUT,
            "init failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mut times = Vec::new();
    for _ in 0..10 {
        let start = std::time::Instant::now();
        let out = run(&["--check"])?;
        times.push(start.elapsed());
        if out.status.code() != Some(0) {
            return Err(fail!(
                exit::BAD_INPUT,
                "--check was not clean: {}",
                String::from_utf8_lossy(&out.stdout)
            ));
        }
    }
    times.sort();
    let _ = std::fs::remove_dir_all(&scratch);
    println!(
        "--check over {n} drivers ({} files): median {:.1} ms, min {:.1} ms, max {:.1} ms (10 runs, whole process)",
        n * VENDORED.len(),
        times[5].as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        times[9].as_secs_f64() * 1e3
    );
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fingerprint::Symbol;

    /// A kernel tree in a scratch directory: a source tree of 7.3.4 with one function and one
    /// layout, or the same as installed headers, without `rust/`. Removed when dropped.
    struct FakeKernel(PathBuf);

    impl FakeKernel {
        fn new(name: &str, with_rust: bool) -> FakeKernel {
            let dir =
                std::env::temp_dir().join(format!("sync-dma-main-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            let mut files = vec![
                ("Makefile", "VERSION = 7\nPATCHLEVEL = 3\nSUBLEVEL = 4\n"),
                (
                    "include/linux/dma-mapping.h",
                    "void dma_f(struct device *dev);\n",
                ),
            ];
            if with_rust {
                files.push(("rust/kernel/lib.rs", ""));
                files.push((
                    "rust/kernel/device.rs",
                    "#[repr(transparent)]\npub struct Device(Opaque<bindings::device>);\n",
                ));
            }
            for (file, text) in files {
                let path = dir.join(file);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, text).unwrap();
            }
            FakeKernel(dir)
        }

        fn tree(&self) -> KernelTree {
            KernelTree::locate(&self.0, None).unwrap()
        }
    }

    impl Drop for FakeKernel {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn fake_api() -> Vec<ApiItem> {
        let item = |kind: &str, name: &str, file: &str, rust_type: Option<&str>| ApiItem {
            kind: kind.into(),
            name: name.into(),
            file: file.into(),
            rust_type: rust_type.map(Into::into),
        };
        vec![
            item(
                "surface",
                "include/linux/dma-mapping.h",
                "include/linux/dma-mapping.h",
                None,
            ),
            item("function", "dma_f", "include/linux/dma-mapping.h", None),
            item(
                "layout",
                "device-transparent",
                "rust/kernel/device.rs",
                Some("Device"),
            ),
        ]
    }

    #[test]
    fn headers_without_rust_sources_leave_the_layouts_unchecked_not_removed() {
        let api = fake_api();
        let source = FakeKernel::new("source", true);
        let mut manifest = Manifest::default();
        let record = kernel_record(&source.tree(), &api).unwrap();
        assert_eq!(
            record.symbols["layout device-transparent"].value,
            "repr(transparent), first field Opaque<bindings::device>"
        );
        manifest.kernels.insert(source.tree().series, record);

        let headers = FakeKernel::new("headers", false);
        let check = KernelCheck::new(&manifest, headers.tree(), &api).unwrap();
        assert!(check.changes.is_empty(), "{:?}", check.changes);
        assert_eq!(check.exit_bits(), exit::UNCHECKED);
        let lines = check.lines(&["7.3".into()]);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[0].starts_with("7.3: C API unchanged: 7.3.4 (sync-dma-main-headers-")
                && lines[0].contains(") matches the manifest's 7.3.4 (sync-dma-main-source-"),
            "{lines:?}"
        );
        assert!(
            lines[1].starts_with("7.3: Rust layouts not checked (layout device-transparent): ")
                && lines[1].contains("--rust-src DIR"),
            "{lines:?}"
        );
        let err = kernel_record(&headers.tree(), &api).unwrap_err();
        assert_eq!(err.code, exit::BAD_INPUT);
        assert!(
            err.message.contains("cannot record 7.3.4"),
            "{}",
            err.message
        );

        // Given the source as well, the layouts are compared, and a change is found.
        let changed = FakeKernel::new("changed", true);
        std::fs::write(
            changed.0.join("rust/kernel/device.rs"),
            "pub struct Device(Opaque<bindings::device>);\n",
        )
        .unwrap();
        let tree = KernelTree::locate(&headers.0, Some(&changed.0)).unwrap();
        let check = KernelCheck::new(&manifest, tree, &api).unwrap();
        assert_eq!(check.exit_bits(), exit::API_BREAKING);
        assert_eq!(check.changes[0].key, "layout device-transparent");
    }

    #[test]
    fn a_series_without_a_record_is_unchecked_not_breaking() {
        let api = fake_api();
        let kernel = FakeKernel::new("unrecorded", true);
        let mut manifest = Manifest::default();
        manifest.kernels.insert(
            Series::of("7.2").unwrap(),
            KernelRecord {
                kernel: "7.2.13 (x)".into(),
                ..Default::default()
            },
        );
        let check = KernelCheck::new(&manifest, kernel.tree(), &api).unwrap();
        assert_eq!(check.exit_bits(), exit::UNCHECKED);
        let lines = check.lines(&["7.2".into()]);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with(
                "7.3: C API not checked: the manifest has no record of 7.3 (its records: 7.2); \
                 record 7.3.4 (sync-dma-main-unrecorded-"
            ),
            "{lines:?}"
        );
    }

    #[test]
    fn trees_of_one_series_are_refused() {
        let a = FakeKernel::new("series-a", true);
        let b = FakeKernel::new("series-b", true);
        let opts = |kdirs: Vec<PathBuf>, rust_src: Option<PathBuf>| Options {
            root: PathBuf::new(),
            kdirs,
            rust_src,
            force: false,
            json: false,
            message: None,
            rest: Vec::new(),
        };
        let err = locate_trees(&opts(vec![a.0.clone(), b.0.clone()], None)).unwrap_err();
        assert!(err.message.contains("two trees of 7.3"), "{}", err.message);
        let err =
            locate_trees(&opts(vec![a.0.clone(), b.0.clone()], Some(a.0.clone()))).unwrap_err();
        assert!(
            err.message.contains("--rust-src goes with one --kdir"),
            "{}",
            err.message
        );
        assert_eq!(
            locate_trees(&opts(vec![a.0.clone()], Some(b.0.clone())))
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn classifies_changes() {
        let sym = |v: &str, used| Symbol {
            value: v.into(),
            used,
        };
        let old: Fingerprint = [
            ("function a".to_string(), sym("int a(void)", true)),
            ("function b".to_string(), sym("int b(void)", false)),
            ("function c".to_string(), sym("int c(void)", true)),
        ]
        .into();
        let new: Fingerprint = [
            ("function a".to_string(), sym("long a(void)", true)),
            ("function b".to_string(), sym("long b(void)", false)),
            ("function d".to_string(), sym("int d(void)", false)),
        ]
        .into();
        let got: Vec<(String, &str, bool)> = api_changes(&old, &new)
            .into_iter()
            .map(|c| (c.key, c.change, c.breaking))
            .collect();
        assert_eq!(
            got,
            [
                ("function a".to_string(), "changed", true),
                ("function b".to_string(), "changed", false),
                ("function c".to_string(), "removed", true),
                ("function d".to_string(), "added", false),
            ]
        );
    }
}
