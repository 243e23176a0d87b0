//! `sync-dma`: keeps every driver's copy of `dma_local` in step with the template, and the template
//! with the kernel's C DMA API. Run through `scripts/sync-dma.sh`; `sync-dma --help` lists the
//! commands.

mod changelog;
mod cheader;
mod fingerprint;
mod manifest;
mod wrapper_api;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use changelog::{Message, UpdateReport, WrapperApi, WrittenCopy};
use fingerprint::Fingerprint;
use manifest::{git_blob_id, sha256_hex, CopyRecord, Manifest};

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
usage: sync-dma [--root DIR] --kdir KDIR COMMAND
  --check [--json]          read-only: report drift of copies and of the C API; exit 0 when clean
  init [--force]            write the manifest from the current copies and KDIR
  update [--force] [--message TEXT | --message-file FILE] [DIR..]
                            merge the template into every copy (or DIRs), refresh the manifest, and
                            add an entry to CHANGES.md. A template change needs the message: its
                            first line heads the entry, the rest (after a blank line) says what
                            changed and what a driver has to do. --message-file - reads stdin
  bench [N]                 time --check over N generated drivers (default 100)
exit codes: 0 clean, 2 bad input, 3 merge conflict; drift bits: 4 local edit, 8 template ahead,
            16 breaking C API change, 32 additive C API change";

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
    kdir: PathBuf,
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
    let mut kdir = std::env::var_os("KDIR").map(PathBuf::from);
    let mut command = None;
    let mut opts_force = false;
    let mut json = false;
    let mut message_source = None;
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--root" => root = it.next().map(PathBuf::from),
            "--kdir" => kdir = it.next().map(PathBuf::from),
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
    let kdir =
        kdir.ok_or_else(|| fail!(exit::BAD_INPUT, "no kernel tree: pass --kdir or set KDIR"))?;
    let opts = Options {
        root,
        kdir,
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

/// The kernel a tree holds, from its top Makefile.
fn kernel_version(kdir: &Path) -> Result<String> {
    let src = fingerprint::kernel_source(kdir)?;
    let makefile = std::fs::read_to_string(src.join("Makefile")).unwrap_or_default();
    let get = |key: &str| {
        makefile.lines().find_map(|l| {
            l.strip_prefix(key)
                .map(|v| v.trim_start_matches([' ', '=']).trim().to_string())
        })
    };
    let version = match (get("VERSION"), get("PATCHLEVEL"), get("SUBLEVEL")) {
        (Some(v), Some(p), Some(s)) => format!("{v}.{p}.{s}"),
        _ => "unknown".to_string(),
    };
    let name = src
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(format!("{version} ({name})"))
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

fn check(opts: &Options) -> Result<i32> {
    let manifest = Manifest::read(&opts.root.join(MANIFEST))?;
    let api = fingerprint::read_api(&opts.root.join(API_LIST))?;
    let fp = fingerprint::take(&opts.kdir, &api)?;
    let kernel = kernel_version(&opts.kdir)?;
    let template = read_template(&opts.root)?;
    let copies = copy_states(&opts.root, &manifest, &template)?;
    let changes = api_changes(&manifest.symbols, &fp);

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
    for c in &changes {
        code |= if c.breaking {
            exit::API_BREAKING
        } else {
            exit::API_ADDITIVE
        };
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
        let api_json: Vec<String> = changes
            .iter()
            .map(|c| {
                format!(
                    "{{\"symbol\":{},\"change\":\"{}\",\"class\":\"{}\",\"old\":{},\"new\":{}}}",
                    json_str(&c.key),
                    c.change,
                    if c.breaking { "breaking" } else { "additive" },
                    c.old.as_deref().map_or("null".into(), json_str),
                    c.new.as_deref().map_or("null".into(), json_str)
                )
            })
            .collect();
        println!(
            "{{\"exit\":{code},\"template_changed\":[{}],\"manifest_kernel\":{},\"kernel\":{},\"copies\":[{}],\"api\":[{}]}}",
            template_moved.iter().map(|f| json_str(f)).collect::<Vec<_>>().join(","),
            json_str(&manifest.kernel),
            json_str(&kernel),
            copies_json.join(","),
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
    if !changes.is_empty() {
        println!(
            "C API: manifest taken on {}, KDIR is {kernel}",
            manifest.kernel
        );
    }
    for c in &changes {
        let class = if c.breaking { "breaking" } else { "additive" };
        match c.change {
            "changed" => println!(
                "{class}: {} changed: {} -> {}",
                c.key,
                c.old.as_deref().unwrap_or(""),
                c.new.as_deref().unwrap_or("")
            ),
            "removed" => println!(
                "{class}: {} removed (was {})",
                c.key,
                c.old.as_deref().unwrap_or("")
            ),
            _ => println!(
                "{class}: {} added: {}",
                c.key,
                c.new.as_deref().unwrap_or("")
            ),
        }
    }
    if code == 0 {
        let dirs: BTreeSet<&String> = copies.iter().map(|c| &c.dir).collect();
        println!(
            "clean: {} copies ({} files) in step with the template; C API unchanged since {}",
            dirs.len(),
            copies.len(),
            manifest.kernel
        );
    }
    Ok(code)
}

/// The manifest as the tree stands now.
fn fresh_manifest(
    opts: &Options,
    template: &BTreeMap<String, Vec<u8>>,
    dirs: &BTreeSet<String>,
) -> Result<Manifest> {
    let api = fingerprint::read_api(&opts.root.join(API_LIST))?;
    let mut m = Manifest {
        kernel: kernel_version(&opts.kdir)?,
        symbols: fingerprint::take(&opts.kdir, &api)?,
        ..Default::default()
    };
    for (file, content) in template {
        m.template.insert(file.clone(), git_blob_id(content));
    }
    for dir in dirs {
        for file in VENDORED {
            let content = read_file(&opts.root.join(dir).join(file))?;
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
    let template = read_template(&opts.root)?;
    let dirs = copy_dirs(&opts.root, None)?;
    let m = fresh_manifest(opts, &template, &dirs)?;
    store_blobs(&opts.root)?;
    std::fs::write(&path, m.render())
        .map_err(|e| fail!(exit::BAD_INPUT, "cannot write {}: {e}", path.display()))?;
    println!(
        "wrote {} ({} copies, {} C symbols, {})",
        MANIFEST,
        dirs.len(),
        m.symbols.len(),
        m.kernel
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
    fingerprint::kernel_source(&opts.kdir)?;
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

    let mut new = fresh_manifest(opts, &template, &selected)?;
    // Copies not selected keep their records; unrecorded ones stay unrecorded.
    for (key, record) in &old.copies {
        if !selected.contains(&key.0) {
            new.copies.insert(key.clone(), record.clone());
        }
    }
    let changes = api_changes(&old.symbols, &new.symbols);
    let report = UpdateReport::new(&old, &new, &template, &written, wrapper_api, changes);
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
        "manifest refreshed: {} copies, {} C symbols, {}",
        recorded_dirs.len(),
        new.symbols.len(),
        new.kernel
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
    let run = |args: &[&str]| {
        Command::new(&exe)
            .arg("--root")
            .arg(&scratch)
            .arg("--kdir")
            .arg(&opts.kdir)
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
