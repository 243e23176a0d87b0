//! What the commands share: the repository's template and copies, and the kernel trees given.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::cli::Options;
use crate::fingerprint::{self, ApiItem};
use crate::git::git;
use crate::manifest::{KernelRecord, Manifest};
use crate::tree::KernelTree;
use crate::{exit, fail, Result, VENDORED};

pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| fail!(exit::BAD_INPUT, "cannot read {}: {e}", path.display()))
}

/// Every driver directory (relative to the root) that holds a copy: those of the manifest and every
/// `drivers/*` with a `src/dma_local.rs`.
pub(crate) fn copy_dirs(root: &Path, manifest: Option<&Manifest>) -> Result<BTreeSet<String>> {
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
pub(crate) fn locate_trees(opts: &Options) -> Result<Vec<KernelTree>> {
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
pub(crate) fn kernel_record(tree: &KernelTree, api: &[ApiItem]) -> Result<KernelRecord> {
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
pub(crate) fn rust_src_hint(tree: &KernelTree) -> String {
    format!(
        "give the source tree of Linux {} with --rust-src DIR (scripts/sync-dma.sh: KSRC=DIR)",
        tree.release
    )
}

pub(crate) fn read_template(root: &Path) -> Result<BTreeMap<String, Vec<u8>>> {
    VENDORED
        .iter()
        .map(|f| Ok((f.to_string(), read_file(&root.join("template").join(f))?)))
        .collect()
}

/// Stores the template's files in git's object database, so that a later update finds them as its
/// merge base.
pub(crate) fn store_blobs(root: &Path) -> Result<()> {
    for file in VENDORED.iter() {
        git(root, &["hash-object", "-w", &format!("template/{file}")])?;
    }
    Ok(())
}
