//! `--check`: how the copies stand against the manifest and the template, and how each kernel
//! tree's C API stands against the manifest's record of its series. Read-only.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;

use crate::changelog;
use crate::cli::Options;
use crate::fingerprint::{self, api_changes, ApiChange, ApiItem};
use crate::manifest::{git_blob_id, sha256_hex, Manifest};
use crate::repo::{copy_dirs, locate_trees, read_template, rust_src_hint};
use crate::tree::{KernelTree, Series};
use crate::{exit, fail, Result, API_LIST, MANIFEST, VENDORED};

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
        for file in VENDORED.iter() {
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
    fn json(&self) -> KernelJson<'_> {
        KernelJson {
            series: self.tree.series.to_string(),
            kernel: self.tree.name(),
            recorded: self.recorded.as_deref(),
            unchecked: &self.unchecked,
        }
    }
}

/// `--check --json`'s report, one object on one line; the fields in this order.
#[derive(Serialize)]
struct Report<'a> {
    exit: i32,
    /// The template's files that changed since the manifest was written.
    template_changed: Vec<&'a String>,
    /// The copies that drifted; those in step are left out.
    copies: Vec<CopyJson<'a>>,
    kernels: Vec<KernelJson<'a>>,
    /// The C API changes of every kernel.
    api: Vec<ApiJson<'a>>,
}

/// A copy that drifted.
#[derive(Serialize)]
struct CopyJson<'a> {
    driver: &'a str,
    file: &'a str,
    edited: Option<&'static str>,
    template_ahead: bool,
}

/// How one kernel tree compares with the manifest's record of its series.
#[derive(Serialize)]
struct KernelJson<'a> {
    series: String,
    kernel: String,
    recorded: Option<&'a str>,
    unchecked: &'a BTreeSet<String>,
}

/// One C API change of one kernel.
#[derive(Serialize)]
struct ApiJson<'a> {
    series: String,
    symbol: &'a str,
    change: &'static str,
    class: &'static str,
    old: Option<&'a str>,
    new: Option<&'a str>,
}

pub(crate) fn check(opts: &Options) -> Result<i32> {
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
        let report = Report {
            exit: code,
            template_changed: template_moved,
            copies: copies
                .iter()
                .filter(|c| c.edited.is_some() || c.behind)
                .map(|c| CopyJson {
                    driver: &c.dir,
                    file: &c.file,
                    edited: c.edited,
                    template_ahead: c.behind,
                })
                .collect(),
            kernels: kernels.iter().map(KernelCheck::json).collect(),
            api: kernels
                .iter()
                .flat_map(|k| k.changes.iter().map(move |c| (k.tree.series, c)))
                .map(|(series, c)| ApiJson {
                    series: series.to_string(),
                    symbol: &c.key,
                    change: c.change,
                    class: if c.breaking { "breaking" } else { "additive" },
                    old: c.old.as_deref(),
                    new: c.new.as_deref(),
                })
                .collect(),
        };
        let json = serde_json::to_string(&report)
            .map_err(|e| fail!(exit::BAD_INPUT, "cannot write the JSON report: {e}"))?;
        println!("{json}");
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::fingerprint::{Fingerprint, Symbol};
    use crate::manifest::KernelRecord;
    use crate::repo::kernel_record;

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
