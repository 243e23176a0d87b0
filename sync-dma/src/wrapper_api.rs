//! The wrapper's item-level API: what a driver can name in its copy of `dma_local.rs`, and how two
//! revisions of it differ.
//!
//! A small lexical scanner, not a Rust parser. It drops comments and the contents of literals,
//! follows braces, and records the `pub(crate)` (or `pub`) items it meets at the top level, in `mod`
//! blocks and in `impl` blocks: functions, structs and their public fields, enums, unions, traits,
//! type aliases, constants, statics and modules; `macro_rules!` macros marked `#[macro_export]`; and
//! trait implementations other than `Drop` (`impl Sync for Coherent`), whose bounds decide what a
//! driver may do with a type. Items marked `#[doc(hidden)]` are left out, and items that a macro
//! invocation generates (the `Attrs` constants of `dma_attrs!`) are not seen.

use std::collections::{BTreeMap, BTreeSet};

/// One item a driver can name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The declaration up to its body, whitespace normalised, after the `#[cfg(..)]` attributes that
    /// decide whether it exists.
    pub signature: String,
    /// A function that must be called in an `unsafe` block.
    pub is_unsafe: bool,
}

/// The items of one revision, by the name a driver uses: `set_mask`, `Streaming::sync_for_cpu`,
/// `CoherentParts::cpu`, `dma_read!`, `impl Sync for Coherent`.
pub type Items = BTreeMap<String, Item>;

/// A declaration whose signature changed between two revisions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureChange {
    /// The item's name, as in [`Items`].
    pub name: String,
    /// The old signature.
    pub old: String,
    /// The new signature.
    pub new: String,
}

/// How the items of two revisions differ. Every list is sorted by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiDiff {
    /// Items only the new revision has.
    pub added: Vec<String>,
    /// Those of `added` that are unsafe functions.
    pub added_unsafe: Vec<String>,
    /// Items only the old revision has.
    pub removed: Vec<String>,
    /// Functions that were safe and now are unsafe: every caller needs an `unsafe` block.
    pub now_unsafe: Vec<String>,
    /// Functions that were unsafe and now are safe.
    pub no_longer_unsafe: Vec<String>,
    /// Items whose signature changed in more than its `unsafe`.
    pub changed: Vec<SignatureChange>,
}

impl ApiDiff {
    /// Whether no item was added, removed or changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.now_unsafe.is_empty()
            && self.no_longer_unsafe.is_empty()
            && self.changed.is_empty()
    }

    /// The items a driver that uses them has to adapt to: removed (a removed type stands for its
    /// members), now unsafe, or changed.
    pub fn needing_adaptation(&self) -> Vec<&str> {
        let mut names: Vec<&str> = grouped(&self.removed)
            .into_iter()
            .map(|(name, _)| name)
            .chain(self.now_unsafe.iter().map(String::as_str))
            .chain(self.changed.iter().map(|c| c.name.as_str()))
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }
}

/// `names` (sorted) with the members of a listed type or module under it: `[("Pool", ["new",
/// "alloc"]), ("set_mask", [])]` for `Pool`, `Pool::alloc`, `Pool::new`, `set_mask`.
pub fn grouped(names: &[String]) -> Vec<(&str, Vec<&str>)> {
    let listed: BTreeSet<&str> = names.iter().map(String::as_str).collect();
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    let mut members: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for name in names {
        match name.rsplit_once("::") {
            Some((owner, member)) if listed.contains(owner) => {
                members.entry(owner).or_default().push(member)
            }
            _ => groups.push((name, Vec::new())),
        }
    }
    for (owner, list) in &mut groups {
        if let Some(found) = members.remove(owner) {
            *list = found;
        }
    }
    groups
}

/// The difference from `old` to `new`. A trait implementation counts only for a type both
/// revisions have: a new type's, or a removed one's, go with it.
pub fn diff(old: &Items, new: &Items) -> ApiDiff {
    let mut d = ApiDiff::default();
    let type_in_both = |name: &str| {
        let has = |items: &Items, ty: &str| {
            items
                .keys()
                .any(|k| k == ty || k.ends_with(&format!("::{ty}")))
        };
        match name
            .strip_prefix("impl ")
            .and_then(|rest| rest.rsplit_once(" for "))
        {
            Some((_, ty)) => has(old, ty) && has(new, ty),
            None => true,
        }
    };
    let old: Items = old
        .iter()
        .filter(|(name, _)| type_in_both(name))
        .map(|(name, item)| (name.clone(), item.clone()))
        .collect();
    let new: Items = new
        .iter()
        .filter(|(name, _)| type_in_both(name))
        .map(|(name, item)| (name.clone(), item.clone()))
        .collect();
    for (name, item) in &new {
        let Some(was) = old.get(name) else {
            d.added.push(name.clone());
            if item.is_unsafe {
                d.added_unsafe.push(name.clone());
            }
            continue;
        };
        match (was.is_unsafe, item.is_unsafe) {
            (false, true) => d.now_unsafe.push(name.clone()),
            (true, false) => d.no_longer_unsafe.push(name.clone()),
            _ => {}
        }
        if without_unsafe(&was.signature) != without_unsafe(&item.signature) {
            d.changed.push(SignatureChange {
                name: name.clone(),
                old: was.signature.clone(),
                new: item.signature.clone(),
            });
        }
    }
    d.removed = old
        .keys()
        .filter(|name| !new.contains_key(*name))
        .cloned()
        .collect();
    d
}

fn without_unsafe(signature: &str) -> String {
    signature.replace("unsafe ", "")
}

/// The items of the Rust source `source`.
pub fn items(source: &str) -> Items {
    let code = strip_comments_and_literals(source);
    let mut scanner = Scanner::default();
    for c in code.chars() {
        scanner.push(c);
    }
    scanner.items
}

/// What a `{` opened, as far as naming items goes.
#[derive(Debug, Clone)]
enum Block {
    /// `impl [Trait for] Type`: its items are `Type::item`.
    Impl(String),
    /// `mod name` or `trait Name`: its items are `name::item`.
    Scope(String),
    /// A struct's fields: public ones are `Name::field`, if the struct itself is recorded.
    Fields(String),
    /// A `macro_rules!` body; the name under which the macro is recorded, if it is.
    Macro(Option<String>),
    /// Anything else (function bodies, enums, expressions): nothing in it is recorded.
    Other,
}

/// Follows the braces of comment-free code, collecting the text since the last `{`, `}` or `;`.
#[derive(Default)]
struct Scanner {
    items: Items,
    blocks: Vec<Block>,
    /// The text since the last `{`, `}` or top-level `;`: a declaration's head.
    head: String,
    /// Open `(` and `[` in `head`, inside which a `;` belongs to the head (`[u8; 4]`).
    nesting: usize,
}

impl Scanner {
    fn push(&mut self, c: char) {
        match c {
            '{' => {
                let head = self.take_head();
                let block = self.open(&head);
                self.blocks.push(block);
            }
            '}' => {
                let head = self.take_head();
                if let Some(Block::Fields(owner)) = self.blocks.pop() {
                    self.record_fields(&owner, &head);
                }
            }
            ';' if self.nesting == 0 => {
                let head = self.take_head();
                self.declare(&head);
            }
            '(' | '[' => {
                self.nesting += 1;
                self.head.push(c);
            }
            ')' | ']' => {
                self.nesting = self.nesting.saturating_sub(1);
                self.head.push(c);
            }
            _ => self.head.push(c),
        }
    }

    fn take_head(&mut self) -> String {
        self.nesting = 0;
        normalize(&std::mem::take(&mut self.head))
    }

    /// The path of the items recorded here (`Coherent::`), or `None` where nothing is recorded.
    fn path(&self) -> Option<String> {
        let mut path = String::new();
        for block in &self.blocks {
            match block {
                Block::Impl(name) | Block::Scope(name) => {
                    path.push_str(name);
                    path.push_str("::");
                }
                _ => return None,
            }
        }
        Some(path)
    }

    /// A `{` after `head`: records what it declares, and says what the block is.
    fn open(&mut self, head: &str) -> Block {
        if let Some(Block::Macro(Some(name))) = self.blocks.last() {
            // A rule of a recorded macro: its matcher is part of the macro's signature.
            if let Some(matcher) = head.strip_suffix("=>") {
                if let Some(item) = self.items.get_mut(name) {
                    item.signature.push(' ');
                    item.signature.push_str(matcher.trim());
                }
            }
            return Block::Other;
        }
        let (attributes, declaration) = split_attributes(head);
        let path = self.path();
        if let Some((trait_name, type_name)) = impl_header(declaration) {
            // `Drop` is nothing a driver names; other traits say what it may do with the type.
            if let (Some(path), Some(trait_name)) = (&path, trait_name.filter(|t| t != "Drop")) {
                let name = format!("impl {trait_name} for {path}{type_name}");
                self.record(name, &attributes, declaration, false);
            }
            return Block::Impl(type_name);
        }
        if let Some(rest) = declaration.strip_prefix("macro_rules!") {
            let macro_name = identifier(rest.trim_start());
            let exported = attributes.iter().any(|a| a == "#[macro_export]");
            if exported && path.is_some() {
                // Exported macros live at the crate's root, whatever module defines them.
                let name = format!("{macro_name}!");
                let signature = format!("macro_rules! {macro_name}");
                self.record(name.clone(), &attributes, &signature, false);
                return Block::Macro(Some(name));
            }
            return Block::Macro(None);
        }
        let Some(declared) = Declaration::parse(declaration) else {
            return Block::Other;
        };
        let Some(path) = path else {
            return Block::Other;
        };
        let signature = declared.signature(declaration);
        let name = format!("{path}{}", declared.name);
        self.record(name.clone(), &attributes, signature, declared.is_unsafe);
        // A hidden module's items are hidden with it (the field macros' helpers).
        if declared.keyword == "mod" && attributes.iter().any(|a| a == "#[doc(hidden)]") {
            return Block::Other;
        }
        match declared.keyword {
            "mod" | "trait" => Block::Scope(declared.name.to_string()),
            "struct" | "union" => Block::Fields(name),
            _ => Block::Other,
        }
    }

    /// A top-level `;` after `head`: a declaration without a body.
    fn declare(&mut self, head: &str) {
        let (attributes, declaration) = split_attributes(head);
        let (Some(declared), Some(path)) = (Declaration::parse(declaration), self.path()) else {
            return;
        };
        let signature = declared.signature(declaration);
        let name = format!("{path}{}", declared.name);
        self.record(name, &attributes, signature, declared.is_unsafe);
    }

    /// The public fields of the struct recorded as `owner`, from the text of its body.
    fn record_fields(&mut self, owner: &str, body: &str) {
        if !self.items.contains_key(owner) {
            return; // hidden
        }
        for field in split_top_level(body, ',') {
            let (attributes, field) = split_attributes(&field);
            let Some(rest) = strip_visibility(field) else {
                continue;
            };
            let name = identifier(rest);
            if !name.is_empty() && rest[name.len()..].trim_start().starts_with(':') {
                self.record(format!("{owner}::{name}"), &attributes, field, false);
            }
        }
    }

    fn record(&mut self, name: String, attributes: &[String], declaration: &str, is_unsafe: bool) {
        // Hidden from the documentation: there for the wrapper's own macros, not for drivers.
        if attributes.iter().any(|a| a == "#[doc(hidden)]") {
            return;
        }
        let mut signature: String = attributes
            .iter()
            .filter(|a| a.starts_with("#[cfg"))
            .map(|a| format!("{a} "))
            .collect();
        signature.push_str(declaration.trim_end_matches(',').trim());
        match self.items.get_mut(&name) {
            // The same name twice (methods of one type in two impls with different bounds): both.
            Some(item) => {
                item.signature = format!("{} | {signature}", item.signature);
                item.is_unsafe |= is_unsafe;
            }
            None => {
                self.items.insert(
                    name,
                    Item {
                        signature,
                        is_unsafe,
                    },
                );
            }
        }
    }
}

/// A `pub(crate)` declaration's keyword and name.
struct Declaration<'a> {
    keyword: &'static str,
    name: &'a str,
    is_unsafe: bool,
}

impl<'a> Declaration<'a> {
    /// Reads `pub(crate) [const] [async] [unsafe] [extern "abi"] fn name...` and the like.
    fn parse(declaration: &'a str) -> Option<Self> {
        const KEYWORDS: &[&str] = &[
            "fn", "struct", "enum", "union", "trait", "type", "const", "static", "mod",
        ];
        let mut rest = strip_visibility(declaration)?;
        let mut is_unsafe = false;
        loop {
            let word = identifier(rest);
            let after = rest[word.len()..].trim_start();
            match word {
                // `const fn` and `const unsafe fn` are functions; `const NAME` is a constant.
                "const" if matches!(identifier(after), "fn" | "unsafe" | "async" | "extern") => {}
                "async" | "default" => {}
                "unsafe" => is_unsafe = true,
                "extern" => {
                    rest = after;
                    if rest.starts_with('"') {
                        let end = rest[1..].find('"').map_or(rest.len(), |i| i + 2);
                        rest = rest[end..].trim_start();
                    }
                    continue;
                }
                "static" if identifier(after) == "mut" => {
                    let name = identifier(after["mut".len()..].trim_start());
                    return (!name.is_empty()).then_some(Declaration {
                        keyword: "static",
                        name,
                        is_unsafe: false,
                    });
                }
                keyword => {
                    let keyword = KEYWORDS.iter().find(|k| **k == keyword)?;
                    let name = identifier(after);
                    return (!name.is_empty()).then_some(Declaration {
                        keyword,
                        name,
                        is_unsafe: is_unsafe && *keyword == "fn",
                    });
                }
            }
            rest = after;
        }
    }

    /// The part of `declaration` that is its signature: a constant's or static's value is not.
    fn signature<'d>(&self, declaration: &'d str) -> &'d str {
        match self.keyword {
            "const" | "static" => declaration
                .split_once(" = ")
                .map_or(declaration, |(head, _)| head),
            _ => declaration,
        }
    }
}

/// `pub(crate) rest` or `pub rest` → `rest`.
fn strip_visibility(declaration: &str) -> Option<&str> {
    let rest = declaration.strip_prefix("pub")?;
    let rest = rest.strip_prefix("(crate)").unwrap_or(rest);
    rest.starts_with(' ').then(|| rest.trim_start())
}

/// The identifier at the start of `text` (empty if there is none).
fn identifier(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// Splits the leading `#[..]` and `#![..]` attributes off a head.
fn split_attributes(head: &str) -> (Vec<String>, &str) {
    let mut attributes = Vec::new();
    let mut rest = head.trim_start();
    while rest.starts_with("#[") || rest.starts_with("#![") {
        let open = rest.find('[').unwrap_or(0);
        let mut depth = 0usize;
        let mut end = rest.len();
        for (i, c) in rest.char_indices().skip(open) {
            match c {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        attributes.push(rest[..end].to_string());
        rest = rest[end..].trim_start();
    }
    (attributes, rest)
}

/// `impl<..> Trait for Type<..>` → (`Some("Trait")`, `"Type"`); `impl<..> Type<..>` → (`None`,
/// `"Type"`); anything else → `None`.
fn impl_header(declaration: &str) -> Option<(Option<String>, String)> {
    let rest = declaration.strip_prefix("unsafe ").unwrap_or(declaration);
    let rest = rest.strip_prefix("impl")?;
    let rest = match rest.chars().next()? {
        '<' => &rest[matching_angle(rest)?..],
        ' ' => rest,
        _ => return None,
    };
    let rest = rest.trim_start();
    let rest = split_top_level(rest, ' ')
        .into_iter()
        .take_while(|word| word != "where")
        .collect::<Vec<_>>();
    let last_segment = |path: &str| {
        let path = path.trim_start_matches('&').trim_start_matches("dyn ");
        let path = path.split('<').next().unwrap_or(path);
        path.rsplit("::").next().unwrap_or(path).to_string()
    };
    match rest.iter().position(|word| word == "for") {
        Some(at) if at > 0 => Some((
            Some(last_segment(&rest[..at].join(" "))),
            last_segment(&rest[at + 1..].join(" ")),
        )),
        _ => Some((None, last_segment(&rest.join(" ")))),
    }
}

/// The byte offset just past the `>` that closes the `<` at the start of `text`.
fn matching_angle(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut previous = ' ';
    for (i, c) in text.char_indices() {
        match c {
            '<' => depth += 1,
            // `->` in `Fn() -> T` closes nothing.
            '>' if previous != '-' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        previous = c;
    }
    None
}

/// Splits `text` at `separator` outside `<>`, `()` and `[]`; trims the parts, drops empty ones.
fn split_top_level(text: &str, separator: char) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    let mut previous = ' ';
    for c in text.chars() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' if previous == '-' => {}
            '>' | ')' | ']' => depth = depth.saturating_sub(1),
            c if c == separator && depth == 0 => {
                parts.push(std::mem::take(&mut current));
                previous = c;
                continue;
            }
            _ => {}
        }
        current.push(c);
        previous = c;
    }
    parts.push(current);
    parts
        .into_iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// Collapses whitespace, and drops the spaces and trailing commas that a line break leaves inside
/// brackets, so that a declaration reads the same however rustfmt wraps it.
fn normalize(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = collapsed
        .replace("( ", "(")
        .replace("[ ", "[")
        .replace(" )", ")")
        .replace(" ]", "]");
    for (from, to) in [(",)", ")"), (",]", "]"), (",>", ">")] {
        out = out.replace(from, to);
    }
    out
}

/// `source` without its comments, and without the characters the scanner counts in its literals:
/// `{`, `}`, `(`, `)`, `[`, `]` and `;` in a string become spaces, a character literal becomes `' '`.
fn strip_comments_and_literals(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let blank = |c: char| match c {
        '{' | '}' | '(' | ')' | '[' | ']' | ';' => ' ',
        c => c,
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let previous = i.checked_sub(1).map(|p| chars[p]);
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '/' && next == Some('*') {
            let mut depth = 0usize;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
            continue;
        }
        // Raw strings: r"..", r#".."#, br"..".
        let starts_word = |at: usize| at == 0 || !is_ident(chars[at - 1]);
        let raw_start = c == 'r' && (starts_word(i) || previous == Some('b') && starts_word(i - 1));
        if raw_start {
            let hashes = chars[i + 1..].iter().take_while(|c| **c == '#').count();
            if chars.get(i + 1 + hashes) == Some(&'"') {
                let body = &chars[i + 2 + hashes..];
                let closes_at = |k: usize| {
                    body[k] == '"'
                        && body
                            .get(k + 1..k + 1 + hashes)
                            .is_some_and(|h| h.iter().all(|c| *c == '#'))
                };
                let body_len = (0..body.len())
                    .find(|k| closes_at(*k))
                    .unwrap_or(body.len());
                out.push('"');
                out.extend(body[..body_len].iter().map(|c| blank(*c)));
                out.push('"');
                i = (i + 2 + hashes + body_len + 1 + hashes).min(chars.len());
                continue;
            }
        }
        if c == '"' {
            out.push('"');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if let Some(&c) = chars.get(i) {
                    out.push(blank(c));
                }
                i += 1;
            }
            out.push('"');
            i += 1;
            continue;
        }
        if c == '\'' {
            // A character literal ('x', '\n', '\u{..}'), or else a lifetime ('a).
            if next == Some('\\') {
                // The escaped character may be a quote itself: the closing one comes after it.
                let end = chars
                    .get(i + 3..)
                    .and_then(|rest| rest.iter().position(|c| *c == '\''))
                    .map_or(chars.len(), |p| i + 3 + p + 1);
                out.push_str("' '");
                i = end;
                continue;
            }
            if chars.get(i + 2) == Some(&'\'') {
                out.push_str("' '");
                i += 3;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = r###"
//! A wrapper. `pub(crate) fn not_an_item()` in a comment.
#![allow(dead_code)]

/// A bus address.
pub(crate) type DmaAddress = u64;

extern "C" {
    fn private_c(dev: *mut c_void);
}

pub(crate) struct Gfp(u32);

impl Gfp {
    /// `GFP_KERNEL`.
    pub(crate) const KERNEL: Gfp = Gfp(0xcc0);
    pub(crate) const fn bits(self) -> u32 {
        let s = "{ not a brace ;";
        let c = '{';
        let (q, b, e) = ('\'', b'}', '\u{7b}');
        let raw = br##"}"# ;"##;
        self.0
    }
}

pub(crate) fn set_mask(dev: &Device<Bound>, mask: Mask) -> Result {
    pub(crate) fn nested_is_not_api() {}
    Ok(())
}

pub(crate) fn gone() {}

/* block /* nested */ comment pub(crate) fn hidden() {} */
pub(crate) struct Parts<T> {
    /// CPU address.
    pub(crate) cpu: NonNull<T>,
    private: usize,
}

unsafe impl<T: Send> Sync for Parts<T> {}

impl<'a, T: AsBytes + FromBytes> Coherent<'a, T> {
    pub(crate) fn alloc_attrs(
        dev: &'a Device<Bound>,
        count: usize,
        attrs: Attrs,
    ) -> Result<Self> {
        todo!()
    }
    fn private(&self) {}
}

macro_rules! internal {
    () => { pub(crate) const INSIDE: u8 = 0; };
}

/// Reads a field.
#[macro_export]
macro_rules! dma_read {
    ($alloc:expr, $index:expr, $($field:ident).+) => {
        match $alloc { _ => {} }
    };
}
"###;

    #[test]
    fn finds_the_public_items_with_their_paths() {
        let items = items(OLD);
        let names: Vec<&str> = items.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "Coherent::alloc_attrs",
                "DmaAddress",
                "Gfp",
                "Gfp::KERNEL",
                "Gfp::bits",
                "Parts",
                "Parts::cpu",
                "dma_read!",
                "gone",
                "impl Sync for Parts",
                "set_mask",
            ]
        );
        assert_eq!(
            items["Coherent::alloc_attrs"].signature,
            "pub(crate) fn alloc_attrs(dev: &'a Device<Bound>, count: usize, attrs: Attrs) -> Result<Self>"
        );
        assert_eq!(
            items["Gfp::KERNEL"].signature,
            "pub(crate) const KERNEL: Gfp"
        );
        assert_eq!(
            items["Gfp::bits"].signature,
            "pub(crate) const fn bits(self) -> u32"
        );
        assert_eq!(
            items["dma_read!"].signature,
            "macro_rules! dma_read ($alloc:expr, $index:expr, $($field:ident).+)"
        );
        assert_eq!(items["Parts::cpu"].signature, "pub(crate) cpu: NonNull<T>");
        assert!(items.values().all(|i| !i.is_unsafe));
    }

    #[test]
    fn diffs_added_removed_unsafe_and_changed_items() {
        let new = OLD
            .replace(
                "pub(crate) fn set_mask(dev",
                "#[cfg(CONFIG_PCI)]\npub(crate) unsafe fn set_mask(dev",
            )
            .replace("pub(crate) fn gone() {}", "")
            .replace("        count: usize,\n", "        count: u32,\n")
            .replace(
                "    fn private(&self) {}",
                "    pub(crate) unsafe fn write_shared(&self, index: usize) -> Result { Ok(()) }\n    pub(crate) fn count(&self) -> usize { 0 }",
            )
            .replace("unsafe impl<T: Send> Sync", "unsafe impl<T: Send + Sync> Sync");
        let d = diff(&items(OLD), &items(&new));
        assert_eq!(d.added, ["Coherent::count", "Coherent::write_shared"]);
        assert_eq!(d.added_unsafe, ["Coherent::write_shared"]);
        assert_eq!(d.removed, ["gone"]);
        assert_eq!(d.now_unsafe, ["set_mask"]);
        assert!(d.no_longer_unsafe.is_empty());
        let changed: Vec<&str> = d.changed.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            changed,
            ["Coherent::alloc_attrs", "impl Sync for Parts", "set_mask"]
        );
        assert_eq!(
            d.changed[2].new,
            "#[cfg(CONFIG_PCI)] pub(crate) unsafe fn set_mask(dev: &Device<Bound>, mask: Mask) -> Result"
        );
        assert_eq!(
            d.needing_adaptation(),
            [
                "Coherent::alloc_attrs",
                "gone",
                "impl Sync for Parts",
                "set_mask"
            ]
        );
        assert!(diff(&items(OLD), &items(OLD)).is_empty());
    }

    #[test]
    fn rewrapping_is_not_a_change() {
        let rewrapped = OLD.replace(
            "    pub(crate) fn alloc_attrs(\n        dev: &'a Device<Bound>,\n        count: usize,\n        attrs: Attrs,\n    ) -> Result<Self> {",
            "    pub(crate) fn alloc_attrs(dev: &'a Device<Bound>, count: usize, attrs: Attrs) -> Result<Self> {",
        );
        assert_ne!(rewrapped, OLD);
        assert!(diff(&items(OLD), &items(&rewrapped)).is_empty());
    }

    #[test]
    fn finds_every_public_function_of_the_template() {
        // Checked against a plain line match, so that the test follows the template's changes:
        // the wrapper's root and every part.
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../template/src");
        let mut template = std::fs::read_to_string(dir.join("dma_local.rs")).unwrap();
        let mut parts: Vec<_> = std::fs::read_dir(dir.join("dma_local"))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        parts.sort();
        assert!(parts.len() > 5, "the wrapper's parts: {parts:?}");
        for part in parts {
            template.push_str(&std::fs::read_to_string(part).unwrap());
        }
        let template = template.as_str();
        let found = items(template);
        let mut functions = 0;
        let mut hidden = false;
        let mut in_hidden_module = false;
        for line in template.lines() {
            let trimmed = line.trim_start();
            if in_hidden_module {
                // Until the module's closing brace, at the top level.
                in_hidden_module = line != "}";
                continue;
            }
            if trimmed == "#[doc(hidden)]" {
                hidden = true;
            }
            if hidden && trimmed.starts_with("pub(crate) mod ") && trimmed.ends_with('{') {
                hidden = false;
                in_hidden_module = true;
                continue;
            }
            if trimmed.starts_with("#[") || trimmed.starts_with("///") {
                continue;
            }
            let Some(rest) = trimmed.strip_prefix("pub(crate) ") else {
                hidden = false;
                continue;
            };
            if std::mem::take(&mut hidden) {
                continue;
            }
            let rest = rest.trim_start_matches("const ");
            let is_unsafe = rest.starts_with("unsafe ");
            let Some(rest) = rest.trim_start_matches("unsafe ").strip_prefix("fn ") else {
                continue;
            };
            let name = identifier(rest);
            functions += 1;
            assert!(
                found.iter().any(|(key, item)| {
                    (key == name || key.ends_with(&format!("::{name}")))
                        && item.is_unsafe == is_unsafe
                }),
                "{line}"
            );
        }
        assert!(functions > 10, "only {functions} functions in the template");
        assert!(found.keys().any(|k| k.ends_with('!')), "no exported macro");
        assert!(!found.contains_key("raw_device"), "a private function");
        assert!(
            !found.keys().any(|k| k.starts_with("__field_access")),
            "the hidden module's items"
        );
    }
}
