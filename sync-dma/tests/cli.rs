//! `sync-dma` end to end, on scratch git repositories holding the real template, and on the real
//! Debian kernel trees the set-up unpacked (linux-source-6.12, -7.2, -7.3). Header mutations are
//! made at test time on copies; no kernel text is committed. `debian_headers.rs` runs it on
//! Debian's installed headers.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::{scratch_repo, VENDORED};

/// `scripts/env.sh`'s variables: the kernel trees.
fn env() -> &'static BTreeMap<String, String> {
    static ENV: OnceLock<BTreeMap<String, String>> = OnceLock::new();
    ENV.get_or_init(|| common::env_of(None))
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
        let s = Scratch {
            dir: scratch_repo(&format!("test-{name}"), &["drivers/alpha", "drivers/beta"]),
        };
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
        self.run_trees(&[kdir], args)
    }

    /// Runs sync-dma on several kernel trees; returns (exit code, stdout, stderr).
    fn run_trees(&self, kdirs: &[&Path], args: &[&str]) -> (i32, String, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_sync-dma"))
            .arg("--root")
            .arg(&self.dir)
            .args(
                kdirs
                    .iter()
                    .flat_map(|kdir| ["--kdir".as_ref(), kdir.as_os_str()]),
            )
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Runs sync-dma with `input` on its stdin; returns (exit code, stdout, stderr).
    fn run_with_input(&self, kdir: &Path, args: &[&str], input: &str) -> (i32, String, String) {
        use std::io::Write;
        let mut child = Command::new(env!("CARGO_BIN_EXE_sync-dma"))
            .arg("--root")
            .arg(&self.dir)
            .arg("--kdir")
            .arg(kdir)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
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
        "rust/kernel/lib.rs",
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
fn recording_7_3_beside_6_12_logs_exactly_the_additions() {
    let s = Scratch::new("612");
    s.init(&tree("LINUX_SOURCE_6_12_DIR"));
    // A tree of a series the manifest has no record of is not compared with another series.
    let (code, out, _) = s.run(&k73(), &["--check"]);
    assert_eq!(code, 64, "only the unchecked bit:\n{out}");
    assert!(
        out.starts_with("7.3: C API not checked: the manifest has no record of 7.3 (its records: 6.12); record 7.3.4 (linux-source-7.3_"),
        "{out}"
    );

    let (code, out, err) = s.run(&k73(), &["update"]);
    assert_eq!(code, 0, "{out}{err}");
    let changes = s.read("CHANGES.md");
    let entry = last_entry(&changes);
    assert!(
        entry.contains(": The manifest now also records the C API of Linux 7.3.\n"),
        "{entry}"
    );
    assert!(
        entry.contains("\n- C API of 7.3 now recorded too, taken on 7.3.4 (linux-source-7.3_7.3.4-1~bpo13+1); it differs from 6.12.118 (linux-source-6.12_6.12.118-1~deb12u1) as follows.\n"),
        "{entry}"
    );
    let reported: Vec<&str> = entry
        .lines()
        .filter_map(|l| l.strip_prefix("- C API (7.3): `"))
        .map(|l| {
            let (key, rest) = l.split_once('`').unwrap();
            assert!(rest.starts_with(" is in 7.3 ("), "only additions: {l}");
            assert!(rest.contains("), not in 6.12; the wrapper"), "{l}");
            key
        })
        .collect();
    let expected = [
        "constant DMA_ATTR_CC_SHARED",
        "constant DMA_ATTR_DEBUGGING_IGNORE_CACHELINES",
        "constant DMA_ATTR_MMIO",
        "constant DMA_ATTR_REQUIRE_COHERENT",
        "constant DMA_IOVA_USE_SWIOTLB",
        "function dma_iova_destroy",
        "function dma_iova_free",
        "function dma_iova_link",
        "function dma_iova_size",
        "function dma_iova_sync",
        "function dma_iova_try_alloc",
        "function dma_iova_unlink",
        "function dma_map_phys",
        "function dma_need_unmap",
        "function dma_pool_create_node",
        "function dma_unmap_phys",
        "function dma_use_iova",
        // 6.12 has no pci::Device at all (no rust/kernel/pci.rs).
        "layout pci-device-transparent",
    ];
    assert_eq!(reported, expected, "{entry}");
    assert!(
        entry.contains("\n- C API (7.3): `constant DMA_ATTR_MMIO` is in 7.3 (`0x400`), not in 6.12; the wrapper relies on it.\n"),
        "{entry}"
    );

    // Both records are kept, each checked against its own tree.
    s.commit("7.3 recorded");
    let (code, out, _) = s.run_trees(&[&tree("LINUX_SOURCE_6_12_DIR"), &k73()], &["--check"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("C API unchanged since the manifest's 6.12.118 (linux-source-6.12_6.12.118-1~deb12u1) and 7.3.4 (linux-source-7.3_7.3.4-1~bpo13+1)"),
        "{out}"
    );
}

#[test]
fn each_tree_checked_against_itself_and_7_2_recorded_beside_7_3_are_clean() {
    let s = Scratch::new("self");
    for var in ["KSRC", "LINUX_SOURCE_7_2_DIR", "LINUX_SOURCE_6_12_DIR"] {
        let (code, out, err) = s.run(&tree(var), &["init", "--force"]);
        assert_eq!(code, 0, "{out}{err}");
        let (code, out, _) = s.run(&tree(var), &["--check"]);
        assert_eq!(code, 0, "{var} against itself:\n{out}");
        let clean = format!("clean: 2 copies ({} files)", 2 * VENDORED.len());
        assert!(out.starts_with(&clean), "{out}");
    }
    s.run(&k73(), &["init", "--force"]);
    s.commit("7.3 recorded");
    let (code, out, err) = s.run(&tree("LINUX_SOURCE_7_2_DIR"), &["update"]);
    assert_eq!(code, 0, "{out}{err}");
    let changes = s.read("CHANGES.md");
    assert!(
        last_entry(&changes).contains("\n- C API of 7.2 now recorded too, taken on 7.2.13 (linux-source-7.2_7.2.13-1): the same as 7.3.4 (linux-source-7.3_7.3.4-1~bpo13+1) in every fingerprinted symbol.\n"),
        "7.2 and 7.3 have the same DMA API here:\n{changes}"
    );
    let manifest = s.read("dma_local.manifest");
    assert!(
        manifest.contains("\nformat 2\nkernel 7.2 = 7.2.13 (linux-source-7.2_7.2.13-1)\nkernel 7.3 = 7.3.4 (linux-source-7.3_7.3.4-1~bpo13+1)\n"),
        "{manifest}"
    );
    let (code, out, _) = s.run_trees(&[&tree("LINUX_SOURCE_7_2_DIR"), &k73()], &["--check"]);
    assert_eq!(code, 0, "{out}");

    // Two trees of one series are refused; init writes exactly the trees it is given.
    let another_7_3 = mutable_kernel("same-series");
    let (code, _, err) = s.run_trees(&[&k73(), &another_7_3], &["--check"]);
    std::fs::remove_dir_all(&another_7_3).unwrap();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("two trees of 7.3"), "{err}");
    let (code, out, err) = s.run(&k73(), &["init", "--force"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!s.read("dma_local.manifest").contains("kernel 7.2"));
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
        out.contains("7.3: breaking: function dma_alloc_attrs changed: void *dma_alloc_attrs(struct device *, size_t, dma_addr_t *, gfp_t, unsigned long) -> void *dma_alloc_attrs(struct device *, size_t, dma_addr_t *, unsigned int, unsigned long)"),
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
    // The same, read as JSON: one object, the change of the one kernel in `api`.
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(report["exit"], 16, "{json}");
    assert_eq!(report["kernels"][0]["series"], "7.3", "{json}");
    let api = report["api"].as_array().unwrap();
    assert_eq!(api.len(), 1, "{json}");
    assert_eq!(
        (&api[0]["series"], &api[0]["new"]),
        (
            &"7.3".into(),
            &"void *dma_alloc_attrs(struct device *, size_t, dma_addr_t *, unsigned int, unsigned long)".into()
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
        out.contains("copy drivers/gamma/src/dma_local.rs: not in the manifest; record it with: scripts/sync-dma.sh update drivers/gamma"),
        "{out}"
    );
}

#[test]
fn a_copy_without_a_vendored_file_gets_it_from_update() {
    let s = Scratch::new("gained");
    s.init(&k73());
    // A driver made before the template had this file, an executable script.
    let file = "scripts/prepare-headers.sh";
    std::fs::remove_file(s.path(&format!("drivers/beta/{file}"))).unwrap();
    s.commit("beta without the file");
    let (code, out, _) = s.run(&k73(), &["--check"]);
    assert_eq!(code, 4, "{out}");
    assert_eq!(out.trim(), format!("copy drivers/beta/{file}: missing"));

    let (code, out, err) = s.run(&k73(), &["update"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        s.read(&format!("drivers/beta/{file}")),
        s.read(&format!("template/{file}"))
    );
    let mode = |path: &str| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(s.path(path))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(
        mode(&format!("drivers/beta/{file}")),
        mode(&format!("template/{file}")),
        "the template's mode"
    );
    s.commit("update");
    let (code, out, _) = s.run(&k73(), &["--check"]);
    assert_eq!(code, 0, "{out}");
}

/// Today's date in UTC as `date` prints it, before and after a run, for a run that crosses
/// midnight.
fn utc_dates(run: impl FnOnce()) -> [String; 2] {
    let date = || {
        let out = Command::new("date")
            .args(["-u", "+%Y-%m-%d"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let before = date();
    run();
    [before, date()]
}

/// The newest entry of a changelog (the first), from its `## ` line on, its list items unwrapped
/// (each on one line).
fn last_entry(changes: &str) -> String {
    let start = changes.find("\n## ").expect("an entry") + 1;
    let end = changes[start..]
        .find("\n## ")
        .map_or(changes.len(), |len| start + len + 1);
    changes[start..end].replace("\n  ", " ")
}

#[test]
fn a_new_driver_is_reported_with_the_command_that_records_it() {
    let s = Scratch::new("record");
    s.init(&k73());
    for driver in ["drivers/gamma", "drivers/delta"] {
        for file in VENDORED.iter() {
            let to = s.path(&format!("{driver}/{file}"));
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(s.path(&format!("template/{file}")), to).unwrap();
        }
    }
    s.commit("two new drivers, generated from the template");

    let (code, out, _) = s.run(&k73(), &["--check"]);
    assert_eq!(code, 4, "{out}");
    for driver in ["drivers/gamma", "drivers/delta"] {
        for file in VENDORED.iter() {
            let line = format!("copy {driver}/{file}: not in the manifest; record it with: scripts/sync-dma.sh update {driver}");
            assert!(out.lines().any(|l| l == line), "{line}\n{out}");
        }
    }

    // Recording a copy identical to the template needs no message, and touches no copy.
    let before = s.snapshot();
    let (code, out, err) = s.run(&k73(), &["update", "drivers/gamma"]);
    assert_eq!(code, 0, "{out}{err}");
    let after = s.snapshot();
    let changed: Vec<&String> = after
        .keys()
        .filter(|f| before.get(*f) != after.get(*f))
        .collect();
    assert_eq!(changed, ["CHANGES.md", "dma_local.manifest"]);
    let changes = s.read("CHANGES.md");
    let entry = last_entry(&changes);
    let heading = entry.lines().next().unwrap();
    assert!(
        heading.ends_with(": Recorded the copy in drivers/gamma."),
        "{entry}"
    );
    assert!(
        entry.contains("\n- Copy recorded: drivers/gamma (identical to the template).\n"),
        "{entry}"
    );
    assert!(!entry.contains("delta"), "delta was not selected:\n{entry}");

    // gamma is recorded and in step; delta, not selected, is still unrecorded.
    let (code, out, _) = s.run(&k73(), &["--check"]);
    assert_eq!(code, 4, "{out}");
    assert!(!out.contains("gamma"), "{out}");
    assert!(
        out.contains("copy drivers/delta/src/dma_local.rs: not in the manifest"),
        "{out}"
    );

    // Nothing left to do: no entry.
    s.commit("gamma recorded");
    let (code, out, err) = s.run(&k73(), &["update", "drivers/gamma"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("CHANGES.md left as it is"), "{out}");
    assert_eq!(s.read("CHANGES.md"), changes);
}

#[test]
fn update_without_a_message_refuses_when_the_template_changed() {
    let s = Scratch::new("nomessage");
    s.init(&k73());
    let wrapper = "template/src/dma_local.rs";
    s.write(
        wrapper,
        &format!(
            "{}\n/// New.\npub(crate) fn added_for_the_test() {{}}\n",
            s.read(wrapper)
        ),
    );
    s.commit("template change");
    let before = s.snapshot();
    for args in [
        &["update"][..],
        &["update", "--force"][..],
        &["update", "drivers/alpha"][..],
    ] {
        let (code, out, err) = s.run(&k73(), args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(
            err.contains("the template changed since the manifest was written (src/dma_local.rs)")
                && err.contains("--message TEXT or --message-file FILE")
                && err.contains("Nothing was written"),
            "{err}"
        );
        assert!(err.contains("API added: `added_for_the_test`"), "{err}");
        assert_eq!(s.snapshot(), before, "{args:?}: nothing written");
    }
    let message_file = s.path("no-such-message");
    let cases: [(&[&str], &str); 4] = [
        (&["update", "--message", " \n"], "the message is empty"),
        (
            &["update", "--message-file", message_file.to_str().unwrap()],
            "cannot read the message file",
        ),
        (
            &["update", "--message", "a", "--message", "b"],
            "one message only",
        ),
        (&["--check", "--message", "a"], "for update only"),
    ];
    for (args, expected) in cases {
        let (code, _, err) = s.run(&k73(), args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
        assert_eq!(s.snapshot(), before, "{args:?}: nothing written");
    }
}

/// Items appended to the template for a test, so that it does not depend on the template's own.
const PROBE_BEFORE: &str = "
/// Test only.
pub(crate) struct SyncDmaProbe(u32);

impl SyncDmaProbe {
    /// Test only.
    pub(crate) fn stays(&self) -> u32 {
        self.0
    }

    /// Test only.
    pub(crate) fn goes_away(&self) {}
}

/// Test only.
pub(crate) fn sync_dma_probe_reset(probe: &mut SyncDmaProbe) {
    probe.0 = 0;
}
";

/// [`PROBE_BEFORE`] with a method added, one removed, and a function made unsafe.
const PROBE_AFTER: &str = "
/// Test only.
pub(crate) struct SyncDmaProbe(u32);

impl SyncDmaProbe {
    /// Test only.
    pub(crate) fn stays(&self) -> u32 {
        self.0
    }

    /// Test only.
    ///
    /// # Safety
    ///
    /// None really.
    pub(crate) unsafe fn arrives(&self, index: usize) -> u32 {
        self.0 + index as u32
    }
}

/// Test only.
///
/// # Safety
///
/// None really.
pub(crate) unsafe fn sync_dma_probe_reset(probe: &mut SyncDmaProbe) {
    probe.0 = 0;
}
";

#[test]
fn the_entry_has_the_message_and_the_wrappers_api_difference() {
    let s = Scratch::new("entry");
    let wrapper = "src/dma_local.rs";
    let template = s.read(&format!("template/{wrapper}"));
    for target in ["template", "drivers/alpha", "drivers/beta"] {
        s.write(
            &format!("{target}/{wrapper}"),
            &format!("{template}{PROBE_BEFORE}"),
        );
    }
    s.commit("the probe");
    s.init(&k73());
    s.write(
        &format!("template/{wrapper}"),
        &format!("{template}{PROBE_AFTER}"),
    );
    s.commit("the probe changes");

    let message = "SyncDmaProbe::arrives; sync_dma_probe_reset is unsafe\n\n\
                   The probe gained `arrives` and lost `goes_away`. Drivers that reset a probe \
                   now do it in an `unsafe` block.\n";
    let mut result = (0, String::new(), String::new());
    let dates = utc_dates(|| {
        result = s.run_with_input(&k73(), &["update", "--message-file", "-"], message);
    });
    let (code, out, err) = result;
    assert_eq!(code, 0, "{out}{err}");
    let changes = s.read("CHANGES.md");
    assert!(changes.starts_with("# Changes to dma_local and its copies\n\n## "));
    let entry = last_entry(&changes);
    println!("{entry}");

    // `## YYYY-MM-DD: ` with today's date in UTC.
    let date = &entry[3..13];
    assert!(
        date.chars().enumerate().all(|(i, c)| if i == 4 || i == 7 {
            c == '-'
        } else {
            c.is_ascii_digit()
        }),
        "{entry}"
    );
    assert!(
        dates.iter().any(|d| d == date),
        "{date} is not one of {dates:?}"
    );
    assert!(
        entry.starts_with(&format!(
            "## {date}: SyncDmaProbe::arrives; sync_dma_probe_reset is unsafe\n\n\
             The probe gained `arrives` and lost `goes_away`. Drivers that reset a probe now do it \
             in an `unsafe` block.\n\n- "
        )),
        "{entry}"
    );
    for line in [
        "- Template files changed: `src/dma_local.rs`.",
        "- API added: `SyncDmaProbe::arrives` (unsafe).",
        "- API removed: `SyncDmaProbe::goes_away`.",
        "- Now unsafe: `sync_dma_probe_reset` (a call needs an `unsafe` block that meets the safety requirements).",
        "- For drivers: a driver that uses `SyncDmaProbe::goes_away`, `sync_dma_probe_reset` must adapt to the change; other drivers need no change.",
        "- Copies updated to the template: drivers/alpha, drivers/beta.",
    ] {
        assert!(entry.lines().any(|l| l == line), "no '{line}' in:\n{entry}");
    }
    assert!(
        !entry.contains("stays"),
        "unchanged items are not listed:\n{entry}"
    );
    assert!(!entry.contains("Signature changed"), "{entry}");
}

#[test]
fn a_change_in_a_part_of_the_wrapper_is_in_its_api_difference() {
    let s = Scratch::new("part");
    s.init(&k73());
    // An item moved from the root to a part is no change; one added in a part is.
    let part = "src/dma_local/pool.rs";
    let text = s.read(&format!("template/{part}"));
    s.write(
        &format!("template/{part}"),
        &format!("{text}\npub(crate) fn sync_dma_probe_part() {{}}\n"),
    );
    s.commit("a part gains an item");
    let (code, out, err) = s.run(&k73(), &["update", "--message", "A part gains an item"]);
    assert_eq!(code, 0, "{out}{err}");
    let entry = last_entry(&s.read("CHANGES.md"));
    for line in [
        "- Template files changed: `src/dma_local/pool.rs`.",
        "- API added: `sync_dma_probe_part`.",
    ] {
        assert!(entry.lines().any(|l| l == line), "no '{line}' in:\n{entry}");
    }
    assert!(!entry.contains("API removed"), "{entry}");
    assert_eq!(
        s.read(&format!("drivers/alpha/{part}")),
        s.read(&format!("template/{part}"))
    );
}

#[test]
fn an_unknown_previous_template_is_said_so() {
    let s = Scratch::new("unknown");
    // No copies, so that no merge needs the lost revision.
    std::fs::remove_dir_all(s.path("drivers")).unwrap();
    s.commit("no drivers");
    let wrapper = "template/src/dma_local.rs";
    let original = s.read(wrapper);
    s.write(wrapper, &format!("{original}// never committed\n"));
    let (code, out, err) = s.run(&k73(), &["init"]);
    assert_eq!(code, 0, "{out}{err}");
    // init stored the revision in git's object database: lose it.
    let blob = s.git(&["hash-object", wrapper]);
    let blob = blob.trim();
    std::fs::remove_file(s.path(&format!(".git/objects/{}/{}", &blob[..2], &blob[2..]))).unwrap();
    s.write(wrapper, &format!("{original}// committed\n"));
    s.commit("manifest of a lost revision, and a newer template");

    let (code, out, err) = s.run(&k73(), &["update", "--message", "Comment at the end"]);
    assert_eq!(code, 0, "{out}{err}");
    let entry = last_entry(&s.read("CHANGES.md")).to_string();
    assert!(
        entry.contains("\n- API difference unknown: the previous template is not in this repository's history.\n"),
        "{entry}"
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

    let (code, out, err) = s.run(
        &k73(),
        &[
            "update",
            "--message",
            "The wrapper's first line says \"own\"",
        ],
    );
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
    let entry = last_entry(&changes);
    for expected in [
        ": The wrapper's first line says \"own\"\n\n- Template files changed: `src/dma_local.rs`.\n",
        "\n- Wrapper API unchanged: no `pub(crate)` item was added, removed or changed; drivers need no change.\n",
        "\n- Copies updated to the template: drivers/alpha, drivers/beta.\n",
        "\n- Local edits kept, with the template's change merged into them: drivers/alpha (src/dma_local.rs).\n",
    ] {
        assert!(entry.contains(expected), "no '{expected}' in:\n{entry}");
    }

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

    let (code, out, err) = s.run(&k73(), &["update", "--message", "Template wording"]);
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
    let (code, _, err) = s.run(&k73(), &["update", "--message", "A shim comment"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(
            "uncommitted changes in files update would write: drivers/beta/src/dma_local_shim.c"
        ),
        "{err}"
    );
    assert_eq!(s.snapshot(), before, "nothing written");
    let (code, out, err) = s.run(
        &k73(),
        &["update", "--force", "--message", "A shim comment"],
    );
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
