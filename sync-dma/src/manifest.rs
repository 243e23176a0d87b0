//! The committed manifest, `dma_local.manifest`: what each copy of the wrapper was when last
//! synced, and the fingerprint of the kernel's C DMA API it was synced against. Its last line is a
//! checksum of the rest, so that a damaged or hand-edited manifest is refused instead of trusted.

use std::collections::BTreeMap;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::fingerprint::{Fingerprint, Symbol};
use crate::{fail, Result};

/// One copy of one vendored file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyRecord {
    /// sha256 of the copy as synced.
    pub sha256: String,
    /// Git blob id of the template file it was synced from (the template revision).
    pub template_blob: String,
}

/// The manifest's content.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    /// The kernel the fingerprint was taken from.
    pub kernel: String,
    /// Template file → its git blob id when last synced.
    pub template: BTreeMap<String, String>,
    /// (copy directory, file) → record.
    pub copies: BTreeMap<(String, String), CopyRecord>,
    /// The C API fingerprint.
    pub symbols: Fingerprint,
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

const HEADER: &str = "# dma_local manifest: written by `scripts/sync-dma.sh update`, read by `scripts/sync-dma.sh --check`.\n\
                      # Do not edit: the checksum on the last line covers every line above it.\n";

impl Manifest {
    /// The manifest's text.
    pub fn render(&self) -> String {
        let mut s = String::from(HEADER);
        s.push_str("format 1\n");
        s.push_str(&format!("kernel {}\n", self.kernel));
        for (file, blob) in &self.template {
            s.push_str(&format!("template {file} {blob}\n"));
        }
        for ((dir, file), r) in &self.copies {
            s.push_str(&format!(
                "copy {dir} {file} {} {}\n",
                r.sha256, r.template_blob
            ));
        }
        for (key, sym) in &self.symbols {
            let usage = if sym.used { "used" } else { "surface" };
            s.push_str(&format!("symbol {usage} {key} = {}\n", sym.value));
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
        let mut format_seen = false;
        for (i, line) in body.lines().enumerate() {
            let n = i + 1;
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let (word, rest) = line
                .split_once(' ')
                .ok_or_else(|| corrupt(n, "a line without a value"))?;
            match word {
                "format" if rest == "1" => format_seen = true,
                "format" => return Err(corrupt(n, &format!("unknown format {rest}"))),
                "kernel" => m.kernel = rest.to_string(),
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
                    m.symbols.insert(
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
        if !format_seen {
            return Err(corrupt(1, "no 'format 1' line"));
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        let mut m = Manifest {
            kernel: "7.3.4 (test)".into(),
            ..Default::default()
        };
        m.template
            .insert("src/dma_local.rs".into(), git_blob_id(b"x"));
        m.copies.insert(
            ("drivers/a".into(), "src/dma_local.rs".into()),
            CopyRecord {
                sha256: sha256_hex(b"x"),
                template_blob: git_blob_id(b"x"),
            },
        );
        m.symbols.insert(
            "constant DMA_ATTR_X".into(),
            Symbol {
                value: "0x2".into(),
                used: true,
            },
        );
        m
    }

    #[test]
    fn round_trips() {
        let dir = std::env::temp_dir().join(format!("manifest-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m");
        std::fs::write(&path, sample().render()).unwrap();
        assert_eq!(Manifest::read(&path).unwrap(), sample());
        let damaged = sample().render().replace("0x2", "0x4");
        std::fs::write(&path, damaged).unwrap();
        let err = Manifest::read(&path).unwrap_err();
        assert!(
            err.message.contains("checksum does not match"),
            "{}",
            err.message
        );
        std::fs::remove_dir_all(&dir).unwrap();
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
