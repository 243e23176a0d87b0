//! Where a kernel's files are, and which kernel it is. A tree is given as a source tree, a build
//! directory (`make O=`, with a `source` link), or a distribution's installed headers. Debian splits
//! those in two: `/usr/src/linux-headers-<release>` holds what is built for one architecture (its
//! Makefile includes the other half's), and `/usr/src/linux-headers-<version>-common` the generic
//! headers; `/lib/modules/<release>/build` and `source` point to them. Neither half has the kernel
//! crate's Rust sources, so the Rust layouts of such a tree come from a source tree given with it.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::{exit, fail, Result};

/// The header whose presence makes a directory the C side of a kernel tree.
const DMA_MAPPING_H: &str = "include/linux/dma-mapping.h";
/// The file whose presence makes a directory hold the kernel crate's sources.
const KERNEL_CRATE: &str = "rust/kernel/lib.rs";

/// A kernel series, `major.minor`: the manifest keeps one fingerprint per series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Series {
    /// `VERSION`.
    pub major: u32,
    /// `PATCHLEVEL`.
    pub minor: u32,
}

impl Series {
    /// The series of `7.3`, of a release such as `7.3.4`, or of a kernel's name that starts with
    /// one (`7.3.4 (linux-source-7.3_7.3.4-1)`).
    pub fn of(text: &str) -> Option<Series> {
        let mut numbers = text.split_whitespace().next()?.split('.');
        let major = numbers.next()?.parse().ok()?;
        let minor = numbers.next()?.parse().ok()?;
        Some(Series { major, minor })
    }
}

impl fmt::Display for Series {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// A kernel tree located on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelTree {
    /// The directory as given, for messages.
    pub given: PathBuf,
    /// The directory that holds `include/linux/dma-mapping.h` and the top Makefile.
    pub headers: PathBuf,
    /// The directory that holds the kernel crate (`rust/kernel/`), when there is one.
    pub rust: Option<PathBuf>,
    /// `VERSION.PATCHLEVEL.SUBLEVEL`.
    pub release: String,
    /// The series of `release`.
    pub series: Series,
}

impl KernelTree {
    /// Locates the kernel tree `kdir`. `rust_src`, a source tree of the same release, gives the
    /// Rust layouts; without it they come from `kdir` itself, if it has the kernel crate.
    pub fn locate(kdir: &Path, rust_src: Option<&Path>) -> Result<KernelTree> {
        // Resolved, so that the name and the messages show the directory, not a link to it.
        let headers = real_path(c_headers(kdir)?);
        let release = release_of(&headers)?;
        let series = Series::of(&release).expect("release_of returns major.minor.sublevel");
        let rust = match rust_src {
            Some(dir) => Some(real_path(rust_sources(dir, &release)?)),
            None => Some(headers.clone()).filter(|dir| dir.join(KERNEL_CRATE).is_file()),
        };
        Ok(KernelTree {
            given: kdir.to_path_buf(),
            headers,
            rust,
            release,
            series,
        })
    }

    /// The kernel's name as the manifest records it: its release and the directory it came from,
    /// `7.3.4 (linux-source-7.3_7.3.4-1~bpo13+1)`.
    pub fn name(&self) -> String {
        let dir = self
            .headers
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!("{} ({dir})", self.release)
    }
}

/// `path` with its links resolved, or as it is when that fails.
fn real_path(path: PathBuf) -> PathBuf {
    std::fs::canonicalize(&path).unwrap_or(path)
}

/// Whether `dir` holds the C headers.
fn has_c_headers(dir: &Path) -> bool {
    dir.join(DMA_MAPPING_H).is_file()
}

/// The directory behind `kdir` that holds the C headers.
fn c_headers(kdir: &Path) -> Result<PathBuf> {
    let mut candidates = vec![kdir.to_path_buf(), kdir.join("source")];
    // `/lib/modules/<release>/build`: its sibling `source` holds the generic headers. Taken from
    // the path as written, since `build/..` in the file system is the link's target's parent.
    if kdir.file_name().is_some_and(|name| name == "build") {
        if let Some(modules_dir) = kdir.parent() {
            candidates.push(modules_dir.join("source"));
        }
    }
    let included = included_tree(kdir);
    candidates.extend(included.iter().cloned());
    if let Some(dir) = candidates.into_iter().find(|dir| has_c_headers(dir)) {
        return Ok(dir);
    }
    let hint = match included.last() {
        Some(dir) => format!(" (nor has {}, which its Makefile includes)", dir.display()),
        None => String::new(),
    };
    Err(fail!(
        exit::BAD_INPUT,
        "KDIR={} is not a kernel tree: it has no {DMA_MAPPING_H}{hint}",
        kdir.display()
    ))
}

/// Where the tree that `kdir`'s Makefile includes may be, most faithful first: Debian's
/// architecture headers have a two-line Makefile, `include /usr/src/linux-headers-<v>-common/Makefile`.
/// That path is absolute as seen on the system the headers were installed on; seen from outside
/// (a chroot, a copied tree) it is the directory of that name beside `kdir`, so that comes first.
fn included_tree(kdir: &Path) -> Vec<PathBuf> {
    let Ok(makefile) = std::fs::read_to_string(kdir.join("Makefile")) else {
        return Vec::new();
    };
    let Some(written) = makefile.lines().find_map(|line| {
        line.trim()
            .strip_prefix("include ")
            .map(str::trim)
            .filter(|path| !path.contains('$'))
            .and_then(|path| path.strip_suffix("/Makefile"))
            .map(PathBuf::from)
    }) else {
        return Vec::new();
    };
    if written.is_relative() {
        return vec![kdir.join(written)];
    }
    let beside = std::fs::canonicalize(kdir)
        .ok()
        .and_then(|dir| Some(dir.parent()?.join(written.file_name()?)));
    beside.into_iter().chain([written]).collect()
}

/// `VERSION.PATCHLEVEL.SUBLEVEL` from the top Makefile in `dir`.
fn release_of(dir: &Path) -> Result<String> {
    let makefile = std::fs::read_to_string(dir.join("Makefile")).unwrap_or_default();
    let get = |key: &str| {
        makefile.lines().find_map(|line| {
            let (name, value) = line.split_once('=')?;
            (name.trim() == key)
                .then(|| value.trim())
                .filter(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit()))
        })
    };
    match (get("VERSION"), get("PATCHLEVEL"), get("SUBLEVEL")) {
        (Some(v), Some(p), Some(s)) => Ok(format!("{v}.{p}.{s}")),
        _ => Err(fail!(
            exit::BAD_INPUT,
            "cannot tell which kernel {} holds: its Makefile has no VERSION, PATCHLEVEL and SUBLEVEL",
            dir.display()
        )),
    }
}

/// The directory with the kernel crate's sources behind `dir` (a source tree, or a build directory
/// with a `source` link), which must be of `release`: layouts of another kernel prove nothing.
fn rust_sources(dir: &Path, release: &str) -> Result<PathBuf> {
    if dir.is_file() {
        return Err(fail!(
            exit::BAD_INPUT,
            "--rust-src {} is a file: unpack the kernel source (tar -xf) and give its directory",
            dir.display()
        ));
    }
    let Some(src) = [dir.to_path_buf(), dir.join("source")]
        .into_iter()
        .find(|d| d.join(KERNEL_CRATE).is_file())
    else {
        return Err(fail!(
            exit::BAD_INPUT,
            "--rust-src {} is not a kernel source tree with the kernel crate: it has no {KERNEL_CRATE}",
            dir.display()
        ));
    };
    let src_release = release_of(&src)?;
    if src_release != release {
        return Err(fail!(
            exit::BAD_INPUT,
            "--rust-src {} is Linux {src_release}, but KDIR is {release}: the Rust layouts must come \
             from the same kernel",
            dir.display()
        ));
    }
    Ok(src)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory, removed when dropped.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> TempDir {
            let dir =
                std::env::temp_dir().join(format!("sync-dma-tree-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }

        fn write(&self, rel: &str, text: &str) -> PathBuf {
            let path = self.0.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
            path
        }

        fn link(&self, rel: &str, target: &str) {
            let path = self.0.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(target, path).unwrap();
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn top_makefile(version: &str) -> String {
        let [v, p, s]: [&str; 3] = version.split('.').collect::<Vec<_>>().try_into().unwrap();
        format!("# SPDX-License-Identifier: GPL-2.0\nVERSION = {v}\nPATCHLEVEL = {p}\nSUBLEVEL = {s}\nEXTRAVERSION =\n")
    }

    /// Debian's headers as installed, relative links and all, under `root`; the Makefile's
    /// absolute path names the system's /usr/src, which is not `root`'s.
    fn debian_headers(root: &TempDir, version: &str) -> (PathBuf, PathBuf) {
        let release = format!("{version}+deb13-amd64");
        let common = format!("linux-headers-{version}+deb13-common");
        root.write(
            &format!("usr/src/linux-headers-{release}/Makefile"),
            &format!(
                "KBUILD_OUTPUT=/usr/src/linux-headers-{release}\ninclude /usr/src/{common}/Makefile\n"
            ),
        );
        root.write(&format!("usr/src/linux-headers-{release}/.config"), "");
        root.write(
            &format!("usr/src/{common}/Makefile"),
            &top_makefile(version),
        );
        root.write(&format!("usr/src/{common}/{DMA_MAPPING_H}"), "");
        let modules = format!("usr/lib/modules/{release}");
        root.link(
            &format!("{modules}/build"),
            &format!("../../../src/linux-headers-{release}"),
        );
        root.link(
            &format!("{modules}/source"),
            &format!("../../../src/{common}"),
        );
        (
            root.0.join(format!("usr/src/linux-headers-{release}")),
            root.0.join(format!("usr/src/{common}")),
        )
    }

    fn source_tree(root: &TempDir, name: &str, version: &str) -> PathBuf {
        root.write(&format!("{name}/Makefile"), &top_makefile(version));
        root.write(&format!("{name}/{DMA_MAPPING_H}"), "");
        root.write(&format!("{name}/{KERNEL_CRATE}"), "");
        root.0.join(name)
    }

    #[test]
    fn series_of_releases_and_names() {
        let s = |major, minor| Some(Series { major, minor });
        assert_eq!(Series::of("7.3"), s(7, 3));
        assert_eq!(Series::of("7.3.4"), s(7, 3));
        assert_eq!(
            Series::of("6.12.118 (linux-source-6.12_6.12.118-1~deb12u1)"),
            s(6, 12)
        );
        assert_eq!(Series::of("unknown (x)"), None);
        assert_eq!(Series::of("7"), None);
        assert!(
            Series::of("6.12") < Series::of("7.2"),
            "numeric, not textual"
        );
        assert!(Series::of("7.2") < Series::of("7.10"));
        assert_eq!(Series::of("7.3").unwrap().to_string(), "7.3");
    }

    #[test]
    fn debian_headers_lead_to_the_common_half() {
        let root = TempDir::new("debian");
        let (arch, common) = debian_headers(&root, "7.3.4");
        let modules = root.0.join("usr/lib/modules/7.3.4+deb13-amd64");
        for kdir in [
            arch.clone(),
            modules.join("build"),
            modules.join("source"),
            common.clone(),
        ] {
            let tree = KernelTree::locate(&kdir, None).unwrap();
            assert_eq!(
                tree.headers,
                std::fs::canonicalize(&common).unwrap(),
                "from {}",
                kdir.display()
            );
            assert_eq!(tree.release, "7.3.4");
            assert_eq!(tree.series, Series { major: 7, minor: 3 });
            assert_eq!(tree.rust, None, "installed headers have no kernel crate");
            assert_eq!(tree.given, kdir);
        }
        assert_eq!(
            KernelTree::locate(&arch, None).unwrap().name(),
            "7.3.4 (linux-headers-7.3.4+deb13-common)"
        );

        // Without the common half, the error names where the Makefile pointed.
        std::fs::remove_file(common.join(DMA_MAPPING_H)).unwrap();
        let err = KernelTree::locate(&arch, None).unwrap_err();
        assert_eq!(err.code, exit::BAD_INPUT);
        assert!(
            err.message
                .contains("is not a kernel tree: it has no include/linux/dma-mapping.h")
                && err
                    .message
                    .contains("linux-headers-7.3.4+deb13-common, which its Makefile includes"),
            "{}",
            err.message
        );
    }

    #[test]
    fn a_relative_include_and_a_build_directory_are_followed() {
        let root = TempDir::new("relative");
        let src = source_tree(&root, "linux", "7.2.13");
        root.write("out/Makefile", "include ../linux/Makefile\n");
        let tree = KernelTree::locate(&root.0.join("out"), None).unwrap();
        assert_eq!(tree.release, "7.2.13");
        root.link("build/source", src.to_str().unwrap());
        let tree = KernelTree::locate(&root.0.join("build"), None).unwrap();
        let src = std::fs::canonicalize(src).unwrap();
        assert_eq!(tree.headers, src);
        assert_eq!(tree.rust, Some(src), "a source tree has the kernel crate");
        assert_eq!(
            tree.name(),
            "7.2.13 (linux)",
            "named after the tree, not the link"
        );
    }

    #[test]
    fn rust_sources_must_be_of_the_same_kernel() {
        let root = TempDir::new("rust-src");
        let (arch, _) = debian_headers(&root, "7.3.4");
        let same = source_tree(&root, "linux-source-7.3", "7.3.4");
        let other = source_tree(&root, "linux-source-7.2", "7.2.13");
        let tree = KernelTree::locate(&arch, Some(&same)).unwrap();
        assert_eq!(tree.rust, Some(std::fs::canonicalize(&same).unwrap()));

        let err = KernelTree::locate(&arch, Some(&other)).unwrap_err();
        assert_eq!(err.code, exit::BAD_INPUT);
        assert!(
            err.message.contains("is Linux 7.2.13, but KDIR is 7.3.4"),
            "{}",
            err.message
        );
        let elsewhere = TempDir::new("rust-src-headers");
        let (headers_only, _) = debian_headers(&elsewhere, "7.3.4");
        let err = KernelTree::locate(&arch, Some(&headers_only)).unwrap_err();
        assert!(
            err.message.contains("has no rust/kernel/lib.rs"),
            "{}",
            err.message
        );
        let tarball = root.write("linux-source-7.3.tar.xz", "");
        let err = KernelTree::locate(&arch, Some(&tarball)).unwrap_err();
        assert!(err.message.contains("is a file: unpack"), "{}", err.message);
    }

    #[test]
    fn a_tree_without_a_release_is_refused() {
        let root = TempDir::new("no-release");
        root.write(DMA_MAPPING_H, "");
        root.write("Makefile", "VERSION = 7\nPATCHLEVEL = 3\n");
        let err = KernelTree::locate(&root.0, None).unwrap_err();
        assert!(
            err.message
                .contains("has no VERSION, PATCHLEVEL and SUBLEVEL"),
            "{}",
            err.message
        );
    }
}
