//! `sync-dma` end to end, on scratch git repositories holding the real template, and on the real
//! Debian kernel trees the set-up unpacked (linux-source-6.12, -7.2, -7.3). Header mutations are
//! made at test time on copies; no kernel text is committed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const VENDORED: &[&str] = &[
    "src/dma_local.rs",
    "src/dma_local_shim.c",
    "src/dma_local_shim.h",
];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// `scripts/env.sh`'s variables: the kernel trees.
fn env() -> &'static BTreeMap<String, String> {
    static ENV: OnceLock<BTreeMap<String, String>> = OnceLock::new();
    ENV.get_or_init(|| {
        let out = Command::new("bash")
            .arg(repo_root().join("scripts/env.sh"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "scripts/env.sh: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    })
}

fn tree(var: &str) -> PathBuf {
    PathBuf::from(
        env()
            .get(var)
            .unwrap_or_else(|| panic!("scripts/env.sh printed no {var}")),
    )
}

fn k73() -> PathBuf {
    tree("KSRC")
}

/// A scratch repository: the real template, two drivers with copies, all committed.
struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("sync-dma-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let root = repo_root();
        for file in VENDORED {
            for target in ["template", "drivers/alpha", "drivers/beta"] {
                let to = dir.join(target).join(file);
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::copy(root.join("template").join(file), to).unwrap();
            }
        }
        std::fs::copy(
            root.join("template/dma_local.api"),
            dir.join("template/dma_local.api"),
        )
        .unwrap();
        let s = Scratch { dir };
        s.git(&["init", "-q"]);
        s.commit("initial");
        s
    }

    fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .arg("-C")
            .arg(&self.dir)
            .args([
                "-c",
                "user.name=test",
                "-c",
                "user.email=test@example.invalid",
            ])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn commit(&self, message: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
    }

    /// Runs sync-dma; returns (exit code, stdout, stderr).
    fn run(&self, kdir: &Path, args: &[&str]) -> (i32, String, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_sync-dma"))
            .arg("--root")
            .arg(&self.dir)
            .arg("--kdir")
            .arg(kdir)
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn init(&self, kdir: &Path) {
        let (code, out, err) = self.run(kdir, &["init"]);
        assert_eq!(code, 0, "init: {out}{err}");
        self.commit("manifest");
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    fn write(&self, rel: &str, text: &str) {
        std::fs::write(self.path(rel), text).unwrap();
    }

    /// Every file of the scratch repository with its content, to show that a failed command wrote
    /// nothing.
    fn snapshot(&self) -> BTreeMap<String, Vec<u8>> {
        let list = self.git(&["ls-files", "--cached", "--others", "--exclude-standard"]);
        list.lines()
            .filter_map(|f| Some((f.to_string(), std::fs::read(self.path(f)).ok()?)))
            .collect()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A writable copy of the parts of the 7.3 tree that the fingerprint reads.
fn mutable_kernel(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sync-dma-kernel-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for file in [
        "Makefile",
        "include/linux/dma-mapping.h",
        "include/linux/dmapool.h",
        "include/linux/dma-direction.h",
        "include/linux/types.h",
        "include/linux/gfp_types.h",
        "rust/kernel/device.rs",
        "rust/kernel/types.rs",
    ] {
        let to = dir.join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(k73().join(file), to).unwrap();
    }
    dir
}

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} has no '{from}'", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn a_manifest_of_6_12_checked_on_7_3_reports_exactly_the_additions() {
    let s = Scratch::new("612");
    s.init(&tree("LINUX_SOURCE_6_12_DIR"));
    let (code, out, _) = s.run(&k73(), &["--check"]);
    assert_eq!(code, 32, "only the additive bit:\n{out}");
    let reported: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("additive:") || l.starts_with("breaking:"))
        .map(|l| l.split(" added:").next().unwrap())
        .collect();
    let expected = [
        "additive: constant DMA_ATTR_CC_SHARED",
        "additive: constant DMA_ATTR_DEBUGGING_IGNORE_CACHELINES",
        "additive: constant DMA_ATTR_MMIO",
        "additive: constant DMA_ATTR_REQUIRE_COHERENT",
        "additive: constant DMA_IOVA_USE_SWIOTLB",
        "additive: function dma_iova_destroy",
        "additive: function dma_iova_free",
        "additive: function dma_iova_link",
        "additive: function dma_iova_size",
        "additive: function dma_iova_sync",
        "additive: function dma_iova_try_alloc",
        "additive: function dma_iova_unlink",
        "additive: function dma_map_phys",
        "additive: function dma_need_unmap",
        "additive: function dma_pool_create_node",
        "additive: function dma_unmap_phys",
        "additive: function dma_use_iova",
        // 6.12 has no pci::Device at all (no rust/kernel/pci.rs).
        "additive: layout pci-device-transparent",
    ];
    assert_eq!(reported, expected, "{out}");
    assert!(
        out.contains("additive: constant DMA_ATTR_MMIO added: 0x400"),
        "{out}"
    );
}

#[test]
fn each_tree_checked_against_itself_and_7_2_against_7_3_are_clean() {
    let s = Scratch::new("self");
    for var in ["KSRC", "LINUX_SOURCE_7_2_DIR", "LINUX_SOURCE_6_12_DIR"] {
        let (code, out, err) = s.run(&tree(var), &["init", "--force"]);
        assert_eq!(code, 0, "{out}{err}");
        let (code, out, _) = s.run(&tree(var), &["--check"]);
        assert_eq!(code, 0, "{var} against itself:\n{out}");
        assert!(out.starts_with("clean: 2 copies (6 files)"), "{out}");
    }
    s.run(&tree("LINUX_SOURCE_7_2_DIR"), &["init", "--force"]);
    let (code, out, _) = s.run(&k73(), &["--check"]);
    assert_eq!(code, 0, "7.2 and 7.3 have the same DMA API here:\n{out}");
}

#[test]
fn mutated_headers_are_reported_or_ignored_as_they_should_be() {
    let s = Scratch::new("mutations");
    let kdir = mutable_kernel("mutations");
    s.init(&kdir);
    let check = || s.run(&kdir, &["--check"]);
    let restore = |file: &str| {
        std::fs::copy(k73().join(file), kdir.join(file)).unwrap();
    };
    let mapping = kdir.join("include/linux/dma-mapping.h");

    // Comments, blank lines, re-indentation and line breaks: not drift.
    let text = std::fs::read_to_string(&mapping).unwrap();
    let noisy = text
        .replace("void *dma_alloc_attrs(struct device *dev, size_t size,", "/* edited comment */\nvoid  *dma_alloc_attrs( struct device *dev,\n\n\t\t size_t size ,")
        .replace("#define DMA_ATTR_NO_WARN\t(1UL << 8)", "#define DMA_ATTR_NO_WARN (1UL<<8) /* changed comment */")
        .replace(" * DMA_ATTR_NO_WARN", " * DMA_ATTR_NO_WARN (comment edited)");
    assert_ne!(noisy, text);
    std::fs::write(&mapping, noisy).unwrap();
    let (code, out, _) = check();
    assert_eq!(code, 0, "formatting is not drift:\n{out}");
    restore("include/linux/dma-mapping.h");

    // A parameter type changed in a function the wrapper uses: breaking.
    edit(
        &mapping,
        "\t\tgfp_t flag, unsigned long attrs);",
        "\t\tunsigned int flag, unsigned long attrs);",
    );
    let (code, out, _) = check();
    assert_eq!(code, 16, "{out}");
    assert!(
        out.contains("breaking: function dma_alloc_attrs changed: void *dma_alloc_attrs(struct device *, size_t, dma_addr_t *, gfp_t, unsigned long) -> void *dma_alloc_attrs(struct device *, size_t, dma_addr_t *, unsigned int, unsigned long)"),
        "{out}"
    );
    let (code, json, _) = s.run(&kdir, &["--check", "--json"]);
    assert_eq!(code, 16);
    assert!(
        json.contains(
            r#""symbol":"function dma_alloc_attrs","change":"changed","class":"breaking""#
        ),
        "{json}"
    );
    restore("include/linux/dma-mapping.h");

    // A DMA_ATTR_* value changed: breaking, compared by value.
    edit(
        &mapping,
        "#define DMA_ATTR_NO_WARN\t(1UL << 8)",
        "#define DMA_ATTR_NO_WARN\t(1UL << 14)",
    );
    let (code, out, _) = check();
    assert_eq!(code, 16, "{out}");
    assert!(
        out.contains("breaking: constant DMA_ATTR_NO_WARN changed: 0x100 -> 0x4000"),
        "{out}"
    );
    restore("include/linux/dma-mapping.h");

    // The same value written differently: not drift.
    edit(
        &mapping,
        "#define DMA_ATTR_NO_WARN\t(1UL << 8)",
        "#define DMA_ATTR_NO_WARN\t0x100UL",
    );
    assert_eq!(check().0, 0);
    restore("include/linux/dma-mapping.h");

    // A function removed: breaking.
    edit(&mapping, "void dma_free_attrs(struct device *dev, size_t size, void *cpu_addr,\n\t\tdma_addr_t dma_handle, unsigned long attrs);", "");
    let (code, out, _) = check();
    assert_eq!(code, 16, "{out}");
    assert!(
        out.contains("breaking: function dma_free_attrs removed"),
        "{out}"
    );
    restore("include/linux/dma-mapping.h");

    // A function the wrapper does not use changed: reported, but not breaking.
    edit(
        &mapping,
        "bool dma_need_unmap(struct device *dev);",
        "bool dma_need_unmap(const struct device *dev);",
    );
    let (code, out, _) = check();
    assert_eq!(code, 32, "{out}");
    assert!(
        out.contains("additive: function dma_need_unmap changed"),
        "{out}"
    );
    restore("include/linux/dma-mapping.h");

    // The layout the wrapper's device cast relies on: breaking when it goes.
    let device = kdir.join("rust/kernel/device.rs");
    edit(
        &device,
        "#[repr(transparent)]\npub struct Device<",
        "pub struct Device<",
    );
    let (code, out, _) = check();
    assert_eq!(code, 16, "{out}");
    assert!(
        out.contains("breaking: layout device-transparent changed: repr(transparent)"),
        "{out}"
    );
    restore("rust/kernel/device.rs");

    // gfp_t's width.
    edit(
        &kdir.join("include/linux/types.h"),
        "typedef unsigned int __bitwise gfp_t;",
        "typedef u64 __bitwise gfp_t;",
    );
    let (code, out, _) = check();
    assert_eq!(code, 16, "{out}");
    assert!(
        out.contains("breaking: type gfp_t changed: 32 bits (unsigned int) -> 64 bits (u64)"),
        "{out}"
    );
    restore("include/linux/types.h");

    assert_eq!(check().0, 0, "restored tree is clean again");
    std::fs::remove_dir_all(&kdir).unwrap();
}

#[test]
fn copies_edited_by_hand_or_behind_the_template_are_reported() {
    let s = Scratch::new("copies");
    s.init(&k73());
    assert_eq!(s.run(&k73(), &["--check"]).0, 0);

    let copy = "drivers/alpha/src/dma_local.rs";
    s.write(copy, &format!("{}// a local edit\n", s.read(copy)));
    let (code, out, _) = s.run(&k73(), &["--check"]);
    assert_eq!(code, 4, "{out}");
    assert_eq!(
        out.trim(),
        "copy drivers/alpha/src/dma_local.rs: edited since the last sync"
    );

    s.write(
        "template/src/dma_local_shim.h",
        &format!(
            "{}/* template moved on */\n",
            s.read("template/src/dma_local_shim.h")
        ),
    );
    let (code, out, _) = s.run(&k73(), &["--check"]);
    assert_eq!(code, 4 | 8, "{out}");
    assert!(
        out.contains("copy drivers/alpha/src/dma_local_shim.h: the template moved ahead of it"),
        "{out}"
    );
    assert!(
        out.contains("copy drivers/beta/src/dma_local_shim.h: the template moved ahead of it"),
        "{out}"
    );

    // A new driver that nobody recorded.
    std::fs::create_dir_all(s.path("drivers/gamma/src")).unwrap();
    s.write("drivers/gamma/src/dma_local.rs", "");
    let (code, out, _) = s.run(&k73(), &["--check"]);
    assert_eq!(code & 4, 4, "{out}");
    assert!(
        out.contains("copy drivers/gamma/src/dma_local.rs: not in the manifest"),
        "{out}"
    );
}

/// The template's first line and a line near a copy's end, far apart, so that a merge is clean.
fn template_change_and_local_edit(s: &Scratch) -> (String, String) {
    let file = "src/dma_local.rs";
    let template = s.read(&format!("template/{file}"));
    let new_template = template.replacen(
        "//! This driver's private wrapper",
        "//! This driver's own private wrapper",
        1,
    );
    assert_ne!(new_template, template);
    s.write(&format!("template/{file}"), &new_template);
    let local = s.read(&format!("drivers/alpha/{file}"));
    let edited = format!("{local}\n// alpha: a local addition\n");
    s.write(&format!("drivers/alpha/{file}"), &edited);
    s.commit("template change and a local edit");
    (new_template, edited)
}

#[test]
fn update_merges_the_template_into_an_edited_copy_and_logs_it() {
    let s = Scratch::new("update");
    s.init(&k73());
    let (new_template, _) = template_change_and_local_edit(&s);

    let (code, out, err) = s.run(&k73(), &["update"]);
    assert_eq!(code, 0, "{out}{err}");
    let alpha = s.read("drivers/alpha/src/dma_local.rs");
    assert!(
        alpha.contains("This driver's own private wrapper"),
        "the template's change is merged in"
    );
    assert!(
        alpha.ends_with("// alpha: a local addition\n"),
        "the local edit is kept"
    );
    assert_eq!(
        s.read("drivers/beta/src/dma_local.rs"),
        new_template,
        "an unedited copy becomes the template"
    );
    assert!(
        out.contains("drivers/alpha/src/dma_local.rs (merged, local edits kept)"),
        "{out}"
    );
    assert!(
        out.contains("drivers/beta/src/dma_local.rs (updated)"),
        "{out}"
    );

    let changes = s.read("CHANGES.md");
    assert!(changes.contains(": dma_local update"), "{changes}");
    assert!(
        changes.contains("- template/src/dma_local.rs: "),
        "{changes}"
    );
    assert!(
        changes.contains("drivers/alpha/src/dma_local.rs (merged, local edits kept)"),
        "{changes}"
    );
    assert!(
        changes.contains("drivers/beta/src/dma_local.rs (updated)"),
        "{changes}"
    );

    // The manifest now records the synced state: only alpha's deliberate edit still shows.
    s.commit("update");
    let (code, out, _) = s.run(&k73(), &["--check"]);
    assert_eq!(code, 4, "{out}");
    assert_eq!(
        out.trim(),
        "copy drivers/alpha/src/dma_local.rs: carries local edits"
    );
}

#[test]
fn a_conflicting_edit_stops_with_markers_and_loses_nothing() {
    let s = Scratch::new("conflict");
    s.init(&k73());
    let manifest = s.read("dma_local.manifest");
    let file = "src/dma_local.rs";
    let line = "//! This driver's private wrapper";
    s.write(
        &format!("template/{file}"),
        &s.read(&format!("template/{file}"))
            .replacen(line, "//! TEMPLATE wording", 1),
    );
    s.write(
        &format!("drivers/alpha/{file}"),
        &s.read(&format!("drivers/alpha/{file}"))
            .replacen(line, "//! ALPHA wording", 1),
    );
    s.commit("both edit the same line");

    let (code, out, err) = s.run(&k73(), &["update"]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        err.contains("merge conflicts in drivers/alpha/src/dma_local.rs"),
        "{err}"
    );
    let alpha = s.read(&format!("drivers/alpha/{file}"));
    for needed in [
        "<<<<<<<",
        "//! ALPHA wording",
        "=======",
        "//! TEMPLATE wording",
        ">>>>>>>",
    ] {
        assert!(
            alpha.contains(needed),
            "{needed} missing from the conflicted file"
        );
    }
    assert_eq!(
        s.read("dma_local.manifest"),
        manifest,
        "the manifest is not refreshed over a conflict"
    );
    assert!(!s.path("CHANGES.md").exists());
}

#[test]
fn update_refuses_to_overwrite_uncommitted_changes_unless_forced() {
    let s = Scratch::new("dirty");
    s.init(&k73());
    s.write(
        "template/src/dma_local_shim.c",
        &format!("{}/* new */\n", s.read("template/src/dma_local_shim.c")),
    );
    s.commit("template change");
    let beta = "drivers/beta/src/dma_local_shim.c";
    s.write(beta, &format!("/* uncommitted */\n{}", s.read(beta)));
    let before = s.snapshot();
    let (code, _, err) = s.run(&k73(), &["update"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(
            "uncommitted changes in files update would write: drivers/beta/src/dma_local_shim.c"
        ),
        "{err}"
    );
    assert_eq!(s.snapshot(), before, "nothing written");
    let (code, out, err) = s.run(&k73(), &["update", "--force"]);
    assert_eq!(code, 0, "{out}{err}");
    let merged = s.read(beta);
    assert!(
        merged.starts_with("/* uncommitted */\n") && merged.ends_with("/* new */\n"),
        "{merged}"
    );
}

/// One run of sync-dma on a scratch repository: (exit code, stdout, stderr).
type Run = dyn Fn(&Scratch) -> (i32, String, String);

#[test]
fn bad_input_gets_a_clear_error_and_writes_nothing() {
    let s = Scratch::new("bad");
    s.init(&k73());
    let cases: Vec<(&str, Box<Run>, &str)> = vec![
        (
            "missing KDIR",
            Box::new(|s| s.run(Path::new("/nonexistent/kernel"), &["--check"])),
            "KDIR=/nonexistent/kernel is not a kernel tree",
        ),
        (
            "KDIR without the DMA headers",
            Box::new(|s| s.run(&s.dir, &["update"])),
            "is not a kernel tree: it has no include/linux/dma-mapping.h",
        ),
        (
            "unknown driver",
            Box::new(|s| s.run(&k73(), &["update", "drivers/nope"])),
            "unknown driver drivers/nope",
        ),
        (
            "unknown option",
            Box::new(|s| s.run(&k73(), &["--frobnicate"])),
            "unknown option --frobnicate",
        ),
    ];
    for (what, run, message) in cases {
        let before = s.snapshot();
        let (code, _, err) = run(&s);
        assert_eq!(code, 2, "{what}: {err}");
        assert!(err.contains(message), "{what}: {err}");
        assert_eq!(s.snapshot(), before, "{what}: nothing written");
    }

    // A corrupt manifest: one value changed by hand.
    let good = s.read("dma_local.manifest");
    s.write(
        "dma_local.manifest",
        &good.replacen("= 0x100", "= 0x200", 1),
    );
    for args in [&["--check"][..], &["update"][..]] {
        let before = s.snapshot();
        let (code, _, err) = s.run(&k73(), args);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains("corrupt manifest: the checksum does not match"),
            "{err}"
        );
        assert_eq!(s.snapshot(), before);
    }
    // A truncated one.
    s.write("dma_local.manifest", &good[..good.len() / 2]);
    let (code, _, err) = s.run(&k73(), &["--check"]);
    assert_eq!(code, 2);
    assert!(err.contains("corrupt manifest"), "{err}");
    // A missing one.
    std::fs::remove_file(s.path("dma_local.manifest")).unwrap();
    let (code, _, err) = s.run(&k73(), &["--check"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("no manifest at") && err.contains("sync-dma.sh init"),
        "{err}"
    );
    s.write("dma_local.manifest", &good);

    // An unreadable copy: a directory where the file should be.
    let copy = s.path("drivers/beta/src/dma_local_shim.h");
    std::fs::remove_file(&copy).unwrap();
    std::fs::create_dir(&copy).unwrap();
    let before = s.snapshot();
    let (code, _, err) = s.run(&k73(), &["update"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("cannot read") && err.contains("drivers/beta/src/dma_local_shim.h"),
        "{err}"
    );
    assert_eq!(s.snapshot(), before);
}
