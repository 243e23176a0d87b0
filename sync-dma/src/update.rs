//! `init` and `update`: writing the manifest. `update` merges the template into every copy with
//! `git merge-file`, so that a driver's local edits are kept, refreshes the manifest's records of
//! the kernel trees given, and adds an entry to `CHANGES.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use crate::changelog::{self, UpdateReport, WrapperApi, WrittenCopy};
use crate::cli::Options;
use crate::fingerprint;
use crate::git::git;
use crate::manifest::{git_blob_id, sha256_hex, CopyRecord, KernelRecord, Manifest};
use crate::repo::{copy_dirs, kernel_record, locate_trees, read_file, read_template, store_blobs};
use crate::tree::Series;
use crate::wrapper_api;
use crate::{exit, fail, is_wrapper, Result, API_LIST, MANIFEST, VENDORED, WRAPPER};

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
        for file in VENDORED.iter() {
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

pub(crate) fn init(opts: &Options) -> Result<i32> {
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

pub(crate) fn update(opts: &Options) -> Result<i32> {
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
        .iter()
        .any(|file| is_wrapper(file))
        .then(|| wrapper_api_change(&opts.root, &old, &template));
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
        for file in VENDORED.iter() {
            let path = opts.root.join(dir).join(file);
            let theirs = &template[*file];
            // A file the template gained since the copy was made: the copy gets it.
            if !path.exists() {
                plan.push((
                    dir.clone(),
                    file.to_string(),
                    Action::Write(theirs.clone(), false),
                ));
                continue;
            }
            let ours = read_file(&path)?;
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
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| fail!(exit::BAD_INPUT, "cannot create {}: {e}", parent.display()))?;
        }
        let created = !path.exists();
        std::fs::write(&path, content)
            .map_err(|e| fail!(exit::BAD_INPUT, "cannot write {}: {e}", path.display()))?;
        if created {
            // A file the copy gains keeps the template's mode (a script stays executable).
            let mode = std::fs::metadata(opts.root.join("template").join(file))
                .map_err(|e| fail!(exit::BAD_INPUT, "cannot read template/{file}: {e}"))?
                .permissions();
            std::fs::set_permissions(&path, mode).map_err(|e| {
                fail!(
                    exit::BAD_INPUT,
                    "cannot set the mode of {}: {e}",
                    path.display()
                )
            })?;
        }
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
        changelog::add_newest(&opts.root, &entry)?;
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

/// How the wrapper's items changed from the template revision the manifest records to the
/// template's files now, `template`: the root and its parts, whichever files the items are in. The
/// old text comes from git's object database, where `init` and `update` store every revision they
/// record.
fn wrapper_api_change(
    root: &Path,
    old: &Manifest,
    template: &BTreeMap<String, Vec<u8>>,
) -> WrapperApi {
    let mut previous = String::new();
    for blob in old
        .template
        .iter()
        .filter(|(file, _)| is_wrapper(file))
        .map(|(_, blob)| blob)
    {
        // Without an old file's text, its items would read as added.
        let Ok(text) = git(root, &["cat-file", "blob", blob]) else {
            return WrapperApi::Unknown;
        };
        previous.push_str(&String::from_utf8_lossy(&text));
        previous.push('\n');
    }
    if !old.template.contains_key(WRAPPER) {
        return WrapperApi::Unknown;
    }
    let current: String = template
        .iter()
        .filter(|(file, _)| is_wrapper(file))
        .map(|(_, text)| String::from_utf8_lossy(text) + "\n")
        .collect();
    WrapperApi::Known(wrapper_api::diff(
        &wrapper_api::items(&previous),
        &wrapper_api::items(&current),
    ))
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
