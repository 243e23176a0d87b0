//! The committed manifest, `dma_local.manifest`: what each copy of the wrapper was when last
//! synced, and the fingerprint of the kernel's C DMA API it was synced against, one per supported
//! kernel series. Its last line is a checksum of the rest, so that a damaged or hand-edited
//! manifest is refused instead of trusted.
//!
//! Format 2 keys the fingerprints by series (`kernel 7.3 = …`, `symbol 7.3 used …`). Format 1 had
//! one kernel and unkeyed symbols; it is still read, as a manifest of that one kernel, so that a
//! checkout that carries one keeps working until its next `update` writes format 2.

use std::collections::BTreeMap;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::fingerprint::{Fingerprint, Symbol};
use crate::tree::Series;
use crate::{fail, Result};

/// One copy of one vendored file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyRecord {
    /// sha256 of the copy as synced.
    pub sha256: String,
    /// Git blob id of the template file it was synced from (the template revision).
    pub template_blob: String,
}

/// The fingerprint of one kernel series.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelRecord {
    /// The kernel it was taken from, `7.3.4 (linux-source-7.3_7.3.4-1~bpo13+1)`.
    pub kernel: String,
    /// The C API (and layout) fingerprint.
    pub symbols: Fingerprint,
}

/// The manifest's content.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    /// Template file → its git blob id when last synced.
    pub template: BTreeMap<String, String>,
    /// (copy directory, file) → record.
    pub copies: BTreeMap<(String, String), CopyRecord>,
    /// The fingerprint of each recorded kernel series.
    pub kernels: BTreeMap<Series, KernelRecord>,
}

/// sha256 in hex.
pub fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The git blob id of `data`, as `git hash-object` computes it.
pub fn git_blob_id(data: &[u8]) -> String {
    let mut h = sha1_smol::Sha1::new();
    h.update(format!("blob {}\0", data.len()).as_bytes());
    h.update(data);
    h.digest().to_string()
}

/// The format `render` writes.
const FORMAT: u32 = 2;

const HEADER: &str = "# dma_local manifest: written by `scripts/sync-dma.sh update`, read by `scripts/sync-dma.sh --check`.\n\
                      # Do not edit: the checksum on the last line covers every line above it.\n";

impl Manifest {
    /// The manifest's text.
    pub fn render(&self) -> String {
        let mut s = String::from(HEADER);
        s.push_str(&format!("format {FORMAT}\n"));
        for (series, record) in &self.kernels {
            s.push_str(&format!("kernel {series} = {}\n", record.kernel));
        }
        for (file, blob) in &self.template {
            s.push_str(&format!("template {file} {blob}\n"));
        }
        for ((dir, file), r) in &self.copies {
            s.push_str(&format!(
                "copy {dir} {file} {} {}\n",
                r.sha256, r.template_blob
            ));
        }
        for (series, record) in &self.kernels {
            for (key, sym) in &record.symbols {
                let usage = if sym.used { "used" } else { "surface" };
                s.push_str(&format!("symbol {series} {usage} {key} = {}\n", sym.value));
            }
        }
        let sum = sha256_hex(s.as_bytes());
        s.push_str(&format!("checksum {sum}\n"));
        s
    }

    /// Reads and validates the manifest at `path`.
    pub fn read(path: &Path) -> Result<Manifest> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(fail!(
                    2,
                    "no manifest at {}: create it with `scripts/sync-dma.sh init`",
                    path.display()
                ))
            }
            Err(e) => return Err(fail!(2, "cannot read the manifest {}: {e}", path.display())),
        };
        let corrupt =
            |line: usize, why: &str| fail!(2, "{}:{line}: corrupt manifest: {why}", path.display());
        let body_end = text.trim_end_matches('\n').rfind('\n').map_or(0, |p| p + 1);
        let (body, last) = text.split_at(body_end);
        let last_line = body.lines().count() + 1;
        let sum = last
            .trim()
            .strip_prefix("checksum ")
            .ok_or_else(|| corrupt(last_line, "the last line is not its checksum"))?;
        if sum != sha256_hex(body.as_bytes()) {
            return Err(corrupt(
                last_line,
                "the checksum does not match its content (edited by hand or damaged)",
            ));
        }
        let mut m = Manifest::default();
        let mut declared_format: Option<u32> = None;
        // Format 1's one kernel, which its unkeyed symbols belong to.
        let mut only_series = None;
        for (i, line) in body.lines().enumerate() {
            let n = i + 1;
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let (word, rest) = line
                .split_once(' ')
                .ok_or_else(|| corrupt(n, "a line without a value"))?;
            // The format decides how the lines after it read.
            let Some(format) = declared_format else {
                declared_format = match (word, rest) {
                    ("format", "1" | "2") => rest.parse().ok(),
                    ("format", _) => {
                        return Err(corrupt(
                            n,
                            &format!(
                            "unknown format {rest}: this sync-dma reads formats 1 and 2 (a newer \
                                 sync-dma wrote it?)"
                        ),
                        ))
                    }
                    _ => return Err(corrupt(n, "the first entry is not its 'format' line")),
                };
                continue;
            };
            match word {
                "format" => return Err(corrupt(n, "a second 'format' line")),
                "kernel" => {
                    let (series, kernel) = if format == 1 {
                        let series = Series::of(rest).ok_or_else(|| {
                            corrupt(n, "its kernel has no version: re-create it with `scripts/sync-dma.sh init --force`")
                        })?;
                        only_series = Some(series);
                        (series, rest)
                    } else {
                        let (series, kernel) = rest
                            .split_once(" = ")
                            .ok_or_else(|| corrupt(n, "kernel needs 'SERIES = KERNEL'"))?;
                        let series = Series::of(series)
                            .filter(|s| Series::of(kernel) == Some(*s))
                            .ok_or_else(|| {
                                corrupt(n, "a kernel's series and its version do not agree")
                            })?;
                        (series, kernel)
                    };
                    let record = KernelRecord {
                        kernel: kernel.to_string(),
                        ..Default::default()
                    };
                    if m.kernels.insert(series, record).is_some() {
                        return Err(corrupt(n, &format!("a second kernel of {series}")));
                    }
                }
                "template" => {
                    let (file, blob) = rest
                        .split_once(' ')
                        .ok_or_else(|| corrupt(n, "template needs a file and a blob"))?;
                    m.template.insert(file.to_string(), blob.to_string());
                }
                "copy" => {
                    let f: Vec<&str> = rest.split(' ').collect();
                    let [dir, file, sha, blob] = f.as_slice() else {
                        return Err(corrupt(
                            n,
                            "copy needs a directory, a file, a sha256 and a blob",
                        ));
                    };
                    m.copies.insert(
                        (dir.to_string(), file.to_string()),
                        CopyRecord {
                            sha256: sha.to_string(),
                            template_blob: blob.to_string(),
                        },
                    );
                }
                "symbol" => {
                    let (series, rest) = if format == 1 {
                        (only_series, rest)
                    } else {
                        let (series, rest) = rest
                            .split_once(' ')
                            .ok_or_else(|| corrupt(n, "symbol needs a series"))?;
                        (Series::of(series), rest)
                    };
                    let record = series
                        .and_then(|series| m.kernels.get_mut(&series))
                        .ok_or_else(|| corrupt(n, "a symbol of a kernel with no 'kernel' line"))?;
                    let (head, value) = rest
                        .split_once(" = ")
                        .ok_or_else(|| corrupt(n, "symbol needs ' = '"))?;
                    let mut h = head.splitn(2, ' ');
                    let used = match h.next() {
                        Some("used") => true,
                        Some("surface") => false,
                        _ => return Err(corrupt(n, "symbol must be 'used' or 'surface'")),
                    };
                    let key = h
                        .next()
                        .ok_or_else(|| corrupt(n, "symbol needs a kind and a name"))?;
                    record.symbols.insert(
                        key.to_string(),
                        Symbol {
                            value: value.to_string(),
                            used,
                        },
                    );
                }
                _ => return Err(corrupt(n, &format!("unknown entry '{word}'"))),
            }
        }
        if declared_format.is_none() {
            return Err(corrupt(1, "no 'format' line"));
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kernel: &str, value: &str) -> KernelRecord {
        let mut r = KernelRecord {
            kernel: kernel.into(),
            ..Default::default()
        };
        r.symbols.insert(
            "constant DMA_ATTR_X".into(),
            Symbol {
                value: value.into(),
                used: true,
            },
        );
        r.symbols.insert(
            "function f".into(),
            Symbol {
                value: "void f(void)".into(),
                used: false,
            },
        );
        r
    }

    fn series(text: &str) -> Series {
        Series::of(text).unwrap()
    }

    /// Two kernels, 6.12 and 7.3, so that their order is numeric.
    fn sample() -> Manifest {
        let mut m = Manifest::default();
        m.template
            .insert("src/dma_local.rs".into(), git_blob_id(b"x"));
        m.copies.insert(
            ("drivers/a".into(), "src/dma_local.rs".into()),
            CopyRecord {
                sha256: sha256_hex(b"x"),
                template_blob: git_blob_id(b"x"),
            },
        );
        m.kernels
            .insert(series("7.3"), record("7.3.4 (test-7.3)", "0x2"));
        m.kernels
            .insert(series("6.12"), record("6.12.118 (test-6.12)", "0x4"));
        m
    }

    /// A scratch file, removed when dropped.
    struct TempFile(std::path::PathBuf);

    impl TempFile {
        fn new(name: &str, text: &str) -> TempFile {
            let path =
                std::env::temp_dir().join(format!("manifest-test-{name}-{}", std::process::id()));
            std::fs::write(&path, text).unwrap();
            TempFile(path)
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    /// `body` with its checksum line, as `render` ends a manifest.
    fn with_checksum(body: &str) -> String {
        format!("{body}checksum {}\n", sha256_hex(body.as_bytes()))
    }

    #[test]
    fn round_trips_with_two_kernels() {
        let text = sample().render();
        let kernels: Vec<&str> = text.lines().filter(|l| l.starts_with("kernel ")).collect();
        assert_eq!(
            kernels,
            [
                "kernel 6.12 = 6.12.118 (test-6.12)",
                "kernel 7.3 = 7.3.4 (test-7.3)"
            ]
        );
        assert!(text.contains("\nformat 2\n"), "{text}");
        assert!(
            text.contains("\nsymbol 6.12 used constant DMA_ATTR_X = 0x4\n")
                && text.contains("\nsymbol 7.3 surface function f = void f(void)\n"),
            "{text}"
        );
        let file = TempFile::new("round-trip", &text);
        assert_eq!(Manifest::read(&file.0).unwrap(), sample());

        let damaged = TempFile::new("damaged", &text.replace("0x2", "0x8"));
        let err = Manifest::read(&damaged.0).unwrap_err();
        assert!(
            err.message.contains("checksum does not match"),
            "{}",
            err.message
        );
    }

    #[test]
    fn format_1_reads_as_a_manifest_of_its_one_kernel() {
        let body = format!(
            "{HEADER}format 1\nkernel 7.3.4 (test-7.3)\n\
             template src/dma_local.rs {blob}\n\
             copy drivers/a src/dma_local.rs {sha} {blob}\n\
             symbol used constant DMA_ATTR_X = 0x2\n\
             symbol surface function f = void f(void)\n",
            blob = git_blob_id(b"x"),
            sha = sha256_hex(b"x"),
        );
        let file = TempFile::new("format-1", &with_checksum(&body));
        let mut expected = sample();
        expected.kernels.remove(&series("6.12"));
        assert_eq!(Manifest::read(&file.0).unwrap(), expected);
    }

    #[test]
    fn inconsistent_or_unknown_formats_are_refused() {
        let cases = [
            (
                "format 3\n",
                "unknown format 3: this sync-dma reads formats 1 and 2",
            ),
            (
                "kernel 7.3 = 7.3.4 (x)\nformat 2\n",
                "the first entry is not its 'format' line",
            ),
            (
                "format 2\nkernel 7.3 = 7.2.13 (x)\n",
                "series and its version do not agree",
            ),
            (
                "format 2\nkernel 7.3 = 7.3.4 (x)\nkernel 7.3 = 7.3.5 (y)\n",
                "a second kernel of 7.3",
            ),
            (
                "format 2\nkernel 7.3 = 7.3.4 (x)\nsymbol 7.2 used function f = void f(void)\n",
                "a symbol of a kernel with no 'kernel' line",
            ),
            (
                "format 1\nkernel unknown (x)\n",
                "its kernel has no version",
            ),
        ];
        for (body, expected) in cases {
            let file = TempFile::new("refused", &with_checksum(&format!("{HEADER}{body}")));
            let err = Manifest::read(&file.0).unwrap_err();
            assert_eq!(err.code, 2);
            assert!(err.message.contains(expected), "{body}: {}", err.message);
        }
    }

    #[test]
    fn blob_ids_match_git() {
        // `printf hello | git hash-object --stdin`
        assert_eq!(
            git_blob_id(b"hello"),
            "b6fc4c620b67d95f953a5c1c1230aaab5db5a1b0"
        );
    }
}
