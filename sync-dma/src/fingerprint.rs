//! The fingerprint of the kernel's C DMA API (and of the kernel crate's layouts) that `dma_local`
//! relies on, taken from a kernel source tree and the list in `template/dma_local.api`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::cheader::{self, Header};
use crate::tree::KernelTree;
use crate::{fail, Result};

/// One line of `dma_local.api`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiItem {
    /// `function`, `macro` (function-like), `constant`, `enum`, `type`, `layout` or `surface`.
    pub kind: String,
    /// The symbol (for `surface`: the header).
    pub name: String,
    /// The file it is in, relative to the kernel tree.
    pub file: String,
    /// For `layout`: the Rust type whose layout is assumed.
    pub rust_type: Option<String>,
}

/// Reads `dma_local.api`: `kind name file [rust type]` lines, `#` comments.
pub fn read_api(path: &Path) -> Result<Vec<ApiItem>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| fail!(2, "cannot read {}: {e}", path.display()))?;
    let mut items = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let item = match words.as_slice() {
            ["surface", file] => ApiItem {
                kind: "surface".into(),
                name: file.to_string(),
                file: file.to_string(),
                rust_type: None,
            },
            ["layout", name, file, ty, ..] => ApiItem {
                kind: "layout".into(),
                name: name.to_string(),
                file: file.to_string(),
                rust_type: Some(ty.to_string()),
            },
            [kind @ ("function" | "macro" | "constant" | "enum" | "type"), name, file] => ApiItem {
                kind: kind.to_string(),
                name: name.to_string(),
                file: file.to_string(),
                rust_type: None,
            },
            _ => {
                return Err(fail!(
                    2,
                    "{}:{}: cannot read '{line}'",
                    path.display(),
                    n + 1
                ))
            }
        };
        items.push(item);
    }
    Ok(items)
}

/// A fingerprinted symbol: its value, and whether `dma_local` uses it (otherwise it is only part of
/// the API's surface).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// The normalised prototype, the evaluated value, the width or the layout.
    pub value: String,
    /// Listed in `dma_local.api` as something the wrapper relies on.
    pub used: bool,
}

/// Fingerprint: `"kind name"` → symbol.
pub type Fingerprint = BTreeMap<String, Symbol>;

/// What `take` cannot fingerprint on `tree`: the Rust layouts, when it has no kernel crate
/// (installed headers). Their absence from its fingerprint says nothing about the kernel.
pub fn unchecked_keys(tree: &KernelTree, api: &[ApiItem]) -> BTreeSet<String> {
    if tree.rust.is_some() {
        return BTreeSet::new();
    }
    api.iter()
        .filter(|item| item.kind == "layout")
        .map(|item| format!("{} {}", item.kind, item.name))
        .collect()
}

/// Takes the fingerprint of `tree`: the C API from its headers, the layouts from its kernel crate
/// (none without one, see [`unchecked_keys`]).
pub fn take(tree: &KernelTree, api: &[ApiItem]) -> Result<Fingerprint> {
    let src = &tree.headers;
    let mut headers: BTreeMap<String, Header> = BTreeMap::new();
    let mut load = |file: &str| -> Result<()> {
        if !headers.contains_key(file) {
            let path = src.join(file);
            let header = match std::fs::read_to_string(&path) {
                Ok(text) => cheader::preprocess(&text),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Header::default(),
                Err(e) => return Err(fail!(2, "cannot read {}: {e}", path.display())),
            };
            headers.insert(file.to_string(), header);
        }
        Ok(())
    };
    for item in api.iter().filter(|i| i.kind != "layout") {
        load(&item.file)?;
    }
    let used = |kind: &str, name: &str| api.iter().any(|i| i.kind == kind && i.name == name);
    let mut fp = Fingerprint::new();

    // The surface: every function and DMA_* constant of the listed headers, used or not.
    for item in api.iter().filter(|i| i.kind == "surface") {
        let header = &headers[&item.file];
        let scope = scope_of(header);
        for (name, proto) in cheader::functions(header) {
            let symbol = Symbol {
                value: proto,
                used: used("function", &name),
            };
            fp.insert(format!("function {name}"), symbol);
        }
        for (name, text) in header.defines.iter().filter(|(n, _)| n.starts_with("DMA_")) {
            let symbol = Symbol {
                value: constant_value(text, &scope),
                used: used("constant", name),
            };
            fp.insert(format!("constant {name}"), symbol);
        }
    }

    // What the wrapper relies on, wherever it is.
    for item in api.iter().filter(|i| i.kind != "surface") {
        let key = format!("{} {}", item.kind, item.name);
        let value =
            match item.kind.as_str() {
                "layout" => match &tree.rust {
                    Some(rust) => layout(rust, item)?,
                    None => continue,
                },
                kind => {
                    let header = &headers[&item.file];
                    match kind {
                        "function" => cheader::functions(header).remove(&item.name),
                        "macro" => header.macros.get(&item.name).cloned(),
                        "constant" => header
                            .defines
                            .get(&item.name)
                            .map(|t| constant_value(t, &scope_of(header))),
                        "enum" => cheader::enums(header, &header.defines).1.remove(&item.name),
                        "type" => cheader::typedefs(header).get(&item.name).map(|ty| {
                            match cheader::width_of(ty) {
                                Some(bits) => format!("{bits} bits ({ty})"),
                                None => format!("unknown width ({ty})"),
                            }
                        }),
                        _ => None,
                    }
                }
            };
        match value {
            Some(value) => {
                fp.insert(key, Symbol { value, used: true });
            }
            None => {
                fp.remove(&key);
            }
        }
    }
    Ok(fp)
}

/// Macros and enumerators of a header, for evaluating its constants.
fn scope_of(header: &Header) -> BTreeMap<String, String> {
    let mut scope = header.defines.clone();
    let (values, _) = cheader::enums(header, &header.defines);
    scope.extend(values.into_iter().map(|(k, v)| (k, v.to_string())));
    scope
}

/// The value of a constant, in hex, or its normalised text when it cannot be evaluated.
fn constant_value(text: &str, scope: &BTreeMap<String, String>) -> String {
    match cheader::evaluate(text, scope) {
        Some(v) if v < 0 => format!("-{:#x}", -v),
        Some(v) => format!("{v:#x}"),
        None => format!("unevaluated: {text}"),
    }
}

/// The layout facts a `layout` line stands for: the type's `repr` and its first field's type.
fn layout(src: &Path, item: &ApiItem) -> Result<Option<String>> {
    let path = src.join(&item.file);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(fail!(2, "cannot read {}: {e}", path.display())),
    };
    let ty = item.rust_type.as_deref().unwrap_or(&item.name);
    let lines: Vec<&str> = text.lines().collect();
    let Some(at) = lines.iter().position(|l| {
        let l = l.trim_start();
        l.strip_prefix("pub struct ")
            .and_then(|r| r.strip_prefix(ty))
            .is_some_and(|r| r.starts_with(['<', '(', ' ', '{']))
    }) else {
        return Ok(None);
    };
    let repr = lines[..at]
        .iter()
        .rev()
        .take_while(|l| {
            let l = l.trim_start();
            l.starts_with("#[") || l.starts_with("///") || l.starts_with("//")
        })
        .find_map(|l| {
            l.trim()
                .strip_prefix("#[repr(")
                .and_then(|r| r.strip_suffix(")]"))
        })
        .unwrap_or("Rust");
    // The declaration from `pub struct` to the end of its first field.
    let decl: String = lines[at..]
        .iter()
        .take(20)
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    let after_name = &decl[decl.find(ty).map_or(0, |p| p + ty.len())..];
    let mut depth = 0i32;
    let mut start = None;
    let mut named = false;
    let mut first = String::new();
    for (i, c) in after_name.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            '(' | '{' if depth == 0 && start.is_none() => {
                start = Some(i + 1);
                named = c == '{';
                continue;
            }
            ',' | ')' | '}' if depth == 0 && start.is_some() => {
                first = after_name[start.unwrap_or(0)..i].to_string();
                break;
            }
            _ => {}
        }
    }
    let first = first.trim();
    // Named fields: keep the type only; doc comments are not part of a layout.
    let first = first.rsplit_once("///").map_or(first, |(_, rest)| rest);
    let first_type = if named {
        first.split_once(':').map_or(first, |(_, t)| t)
    } else {
        first
    }
    .trim();
    Ok(Some(format!(
        "repr({repr}), first field {}",
        cheader::normalize_ws(first_type)
    )))
}

/// A C API difference between the manifest and a tree.
#[derive(Debug, Clone)]
pub(crate) struct ApiChange {
    pub(crate) key: String,
    pub(crate) change: &'static str,
    pub(crate) breaking: bool,
    pub(crate) old: Option<String>,
    pub(crate) new: Option<String>,
}

pub(crate) fn api_changes(old: &Fingerprint, new: &Fingerprint) -> Vec<ApiChange> {
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
