//! `CHANGES.md`: one entry per `update`, in words. The person who changed the template says what
//! changed and what a driver has to do (`--message`); the tool adds what it can compute: the
//! wrapper's item-level API difference, the copies it updated, merged or recorded, and the C API
//! changes of each kernel's fingerprint.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::fingerprint::{api_changes, ApiChange};
use crate::manifest::{sha256_hex, KernelRecord, Manifest};
use crate::tree::Series;
use crate::wrapper_api::{self, ApiDiff};
use crate::{exit, fail, Result};

/// The changelog, relative to the root.
pub const FILE: &str = "CHANGES.md";

/// The first line of a new changelog.
const TOP_HEADING: &str = "# Changes to dma_local and its copies\n";

/// A person's account of a change: its first line heads the entry, the rest is its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The first line.
    pub title: String,
    /// The lines after it, without the blank lines around them; may be empty.
    pub body: String,
}

impl Message {
    /// Reads a message; an empty one is bad input.
    pub fn parse(text: &str) -> Result<Message> {
        let text = text.trim();
        let (title, body) = text.split_once('\n').unwrap_or((text, ""));
        if title.trim().is_empty() {
            return Err(fail!(
                exit::BAD_INPUT,
                "the message is empty: its first line heads the CHANGES.md entry"
            ));
        }
        Ok(Message {
            title: title.trim().to_string(),
            body: body.trim().to_string(),
        })
    }
}

/// How the wrapper's items changed, when `dma_local.rs` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WrapperApi {
    /// Computed from the previous template and the current one.
    Known(ApiDiff),
    /// The previous template's text is not in git's object database.
    Unknown,
}

impl WrapperApi {
    /// The entry's lines about the wrapper's API: what changed, then what a driver has to do.
    pub fn describe(&self) -> Vec<String> {
        let diff = match self {
            WrapperApi::Unknown => {
                return vec![
                    "API difference unknown: the previous template is not in this repository's history."
                        .to_string(),
                ]
            }
            WrapperApi::Known(diff) => diff,
        };
        if diff.is_empty() {
            return vec![
                "Wrapper API unchanged: no `pub(crate)` item was added, removed or changed; drivers need no change."
                    .to_string(),
            ];
        }
        let mut lines = Vec::new();
        if !diff.added.is_empty() {
            lines.push(format!(
                "API added: {}.",
                item_list(&diff.added, &diff.added_unsafe)
            ));
        }
        if !diff.removed.is_empty() {
            lines.push(format!("API removed: {}.", item_list(&diff.removed, &[])));
        }
        if !diff.now_unsafe.is_empty() {
            lines.push(format!(
                "Now unsafe: {} (a call needs an `unsafe` block that meets the safety requirements).",
                code_list(&diff.now_unsafe)
            ));
        }
        if !diff.no_longer_unsafe.is_empty() {
            lines.push(format!(
                "No longer unsafe: {}.",
                code_list(&diff.no_longer_unsafe)
            ));
        }
        for change in &diff.changed {
            lines.push(format!(
                "Signature changed: `{}`: was `{}`, now `{}`.",
                change.name, change.old, change.new
            ));
        }
        let to_adapt = diff.needing_adaptation();
        if to_adapt.is_empty() {
            lines.push(
                "For drivers: nothing to do; no item a driver can use was removed or changed."
                    .to_string(),
            );
        } else {
            lines.push(format!(
                "For drivers: a driver that uses {} must adapt to the change; other drivers need no change.",
                to_adapt
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        lines
    }
}

/// A copy's file that `update` wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenCopy {
    /// The driver directory, relative to the root.
    pub dir: String,
    /// The vendored file, relative to `dir`.
    pub file: String,
    /// The copy carried local edits, and the template's change was merged into them.
    pub kept_local_edits: bool,
}

impl std::fmt::Display for WrittenCopy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let outcome = if self.kept_local_edits {
            "merged, local edits kept"
        } else {
            "updated"
        };
        write!(f, "{}/{} ({outcome})", self.dir, self.file)
    }
}

/// What one `update` did to the fingerprint of one kernel series.
#[derive(Debug, Clone)]
pub struct KernelChange {
    /// The series.
    pub series: Series,
    /// The kernel the record was taken from before; `None` for a series recorded for the first
    /// time.
    pub was: Option<String>,
    /// The kernel the record is taken from now.
    pub now: String,
    /// For a series recorded for the first time: the recorded series nearest to it, and its
    /// kernel, which `c_api` compares it with, so that the entry says what the new kernel changes.
    pub compared_with: Option<(Series, String)>,
    /// C API changes from the record before (or from `compared_with`), each with whether the
    /// wrapper uses the symbol.
    pub c_api: Vec<(ApiChange, bool)>,
    /// Unchanged C symbols the wrapper now relies on, per `dma_local.api`.
    pub now_used: Vec<String>,
    /// Unchanged C symbols the wrapper no longer relies on.
    pub no_longer_used: Vec<String>,
}

impl KernelChange {
    /// How the record of `series` went from `was` to `now`; `others` are the records before the
    /// update, for comparing a new series with its nearest.
    fn new(
        series: Series,
        was: Option<&KernelRecord>,
        now: &KernelRecord,
        others: &BTreeMap<Series, KernelRecord>,
    ) -> KernelChange {
        let mut change = KernelChange {
            series,
            was: was.map(|r| r.kernel.clone()),
            now: now.kernel.clone(),
            compared_with: None,
            c_api: Vec::new(),
            now_used: Vec::new(),
            no_longer_used: Vec::new(),
        };
        let base = match was {
            Some(was) => {
                for (key, symbol) in &now.symbols {
                    match was.symbols.get(key) {
                        Some(w) if w.value == symbol.value && w.used != symbol.used => {
                            if symbol.used {
                                change.now_used.push(key.clone());
                            } else {
                                change.no_longer_used.push(key.clone());
                            }
                        }
                        _ => {}
                    }
                }
                was
            }
            None => {
                // The newest older series, else the oldest newer one.
                let nearest = others
                    .range(..series)
                    .next_back()
                    .or_else(|| others.range(series..).next());
                let Some((other, record)) = nearest else {
                    return change;
                };
                change.compared_with = Some((*other, record.kernel.clone()));
                record
            }
        };
        change.c_api = api_changes(&base.symbols, &now.symbols)
            .into_iter()
            .map(|c| {
                let used = now
                    .symbols
                    .get(&c.key)
                    .or_else(|| base.symbols.get(&c.key))
                    .is_some_and(|s| s.used);
                (c, used)
            })
            .collect();
        change
    }

    /// Whether the record stayed as it was.
    pub fn is_empty(&self) -> bool {
        self.was.as_ref() == Some(&self.now)
            && self.c_api.is_empty()
            && self.now_used.is_empty()
            && self.no_longer_used.is_empty()
    }

    /// The entry's line about the record itself, if it is new or taken on another kernel.
    fn record_line(&self) -> Option<String> {
        let series = self.series;
        let now = &self.now;
        match (&self.was, &self.compared_with) {
            (None, Some((_, other))) if self.c_api.is_empty() => Some(format!(
                "C API of {series} now recorded too, taken on {now}: the same as {other} in every \
                 fingerprinted symbol."
            )),
            (None, Some((_, other))) => Some(format!(
                "C API of {series} now recorded too, taken on {now}; it differs from {other} as \
                 follows."
            )),
            (None, None) => Some(format!("C API of {series} recorded, taken on {now}.")),
            (Some(was), _) if was != now => Some(format!(
                "C API of {series}: fingerprint taken on {now}, was {was}."
            )),
            (Some(_), _) => None,
        }
    }

    /// The entry's lines about the C API as (kernel, text), so that lines the same for several
    /// kernels can be written once.
    fn api_lines(&self) -> Vec<(String, String)> {
        let label = self.series.to_string();
        let mut lines: Vec<(String, String)> = self
            .c_api
            .iter()
            .map(|(change, used)| {
                let text = match &self.compared_with {
                    Some((other, _)) => describe_difference(change, *used, self.series, *other),
                    None => describe_c_api_change(change, *used),
                };
                (label.clone(), text)
            })
            .collect();
        if !self.now_used.is_empty() {
            lines.push((
                label.clone(),
                format!(
                    "the wrapper now relies on {}, unchanged.",
                    code_list(&self.now_used)
                ),
            ));
        }
        if !self.no_longer_used.is_empty() {
            lines.push((
                label,
                format!(
                    "the wrapper no longer relies on {}.",
                    code_list(&self.no_longer_used)
                ),
            ));
        }
        lines
    }
}

/// `C API (KERNEL): TEXT` lines, a text shared by several kernels written once with all of them.
fn merge_kernels(lines: Vec<(String, String)>) -> Vec<String> {
    let mut merged: Vec<(Vec<String>, String)> = Vec::new();
    for (kernel, text) in lines {
        match merged.iter_mut().find(|(_, t)| *t == text) {
            Some((kernels, _)) => kernels.push(kernel),
            None => merged.push((vec![kernel], text)),
        }
    }
    merged
        .into_iter()
        .map(|(kernels, text)| format!("C API ({}): {text}", kernels.join(", ")))
        .collect()
}

/// What one `update` did, as its changelog entry tells it.
#[derive(Debug, Clone, Default)]
pub struct UpdateReport {
    /// Template files that changed since the manifest was written.
    pub template_files_changed: Vec<String>,
    /// How the wrapper's items changed, when `src/dma_local.rs` did.
    pub wrapper_api: Option<WrapperApi>,
    /// Driver directories whose copies now follow the current template.
    pub updated: BTreeSet<String>,
    /// `dir (files)` of copies whose local edits were kept, the template merged into them.
    pub merged: Vec<String>,
    /// Copies recorded for the first time: directory → its files that differ from the template.
    pub recorded: BTreeMap<String, Vec<String>>,
    /// `dir/file` of copies whose local edits, made without a template change, are now recorded.
    pub edits_recorded: Vec<String>,
    /// Driver directories whose copies stay on an older template (not selected).
    pub still_behind: BTreeSet<String>,
    /// The kernel records that changed or were added, by series.
    pub kernels: Vec<KernelChange>,
}

impl UpdateReport {
    /// What an update did, from the manifests before and after, the template it synced to and the
    /// files it wrote.
    pub fn new(
        old: &Manifest,
        new: &Manifest,
        template: &BTreeMap<String, Vec<u8>>,
        written: &[WrittenCopy],
        wrapper_api: Option<WrapperApi>,
    ) -> UpdateReport {
        let mut report = UpdateReport {
            wrapper_api,
            ..Default::default()
        };
        for (file, blob) in &new.template {
            if old.template.get(file) != Some(blob) {
                report.template_files_changed.push(file.clone());
            }
        }
        let mut merged: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for w in written {
            report.updated.insert(w.dir.clone());
            if w.kept_local_edits {
                merged.entry(&w.dir).or_default().push(&w.file);
            }
        }
        report.merged = merged
            .iter()
            .map(|(dir, files)| format!("{dir} ({})", files.join(", ")))
            .collect();
        for ((dir, file), record) in &new.copies {
            let is_written = written.iter().any(|w| &w.dir == dir && &w.file == file);
            match old.copies.get(&(dir.clone(), file.clone())) {
                None => {
                    let differs = template
                        .get(file)
                        .is_none_or(|t| sha256_hex(t) != record.sha256);
                    let files = report.recorded.entry(dir.clone()).or_default();
                    if differs {
                        files.push(file.clone());
                    }
                }
                // Brought to the current template by hand: it already matched it.
                Some(was) if !is_written && was.template_blob != record.template_blob => {
                    report.updated.insert(dir.clone());
                }
                Some(was) if !is_written && was.sha256 != record.sha256 => {
                    report.edits_recorded.push(format!("{dir}/{file}"));
                }
                Some(_) => {}
            }
            if new.template.get(file) != Some(&record.template_blob) {
                report.still_behind.insert(dir.clone());
            }
        }
        report.kernels = new
            .kernels
            .iter()
            .map(|(series, now)| {
                KernelChange::new(*series, old.kernels.get(series), now, &old.kernels)
            })
            .filter(|change| !change.is_empty())
            .collect();
        report
    }

    /// Whether the update changed nothing worth an entry. Copies left on an older template by an
    /// earlier update are not a change.
    pub fn is_empty(&self) -> bool {
        self.template_files_changed.is_empty()
            && self.updated.is_empty()
            && self.recorded.is_empty()
            && self.edits_recorded.is_empty()
            && self.kernels.is_empty()
    }

    /// A heading for an entry without a message: what the update did, in a sentence or two.
    pub fn summary(&self) -> String {
        let mut sentences = Vec::new();
        if !self.template_files_changed.is_empty() {
            sentences.push(format!(
                "The template changed ({}).",
                self.template_files_changed.join(", ")
            ));
        }
        if !self.recorded.is_empty() {
            let dirs: Vec<&String> = self.recorded.keys().collect();
            let noun = if dirs.len() == 1 { "copy" } else { "copies" };
            sentences.push(format!("Recorded the {noun} in {}.", and_list(&dirs)));
        }
        if self.template_files_changed.is_empty() && !self.updated.is_empty() {
            let dirs: Vec<&String> = self.updated.iter().collect();
            sentences.push(format!(
                "Brought the copies in {} up to the template.",
                and_list(&dirs)
            ));
        }
        if !self.edits_recorded.is_empty() {
            sentences.push(format!(
                "Recorded the local edits in {}.",
                and_list(&self.edits_recorded.iter().collect::<Vec<_>>())
            ));
        }
        let (added, refreshed): (Vec<&KernelChange>, Vec<&KernelChange>) =
            self.kernels.iter().partition(|k| k.was.is_none());
        if !added.is_empty() {
            let series: Vec<String> = added.iter().map(|k| k.series.to_string()).collect();
            let also = if added.iter().any(|k| k.compared_with.is_some()) {
                " also"
            } else {
                ""
            };
            sentences.push(format!(
                "The manifest now{also} records the C API of Linux {}.",
                and_list(&series)
            ));
        }
        if !refreshed.is_empty() {
            let series: Vec<String> = refreshed.iter().map(|k| k.series.to_string()).collect();
            sentences.push(format!(
                "Refreshed the C API fingerprint of {}.",
                and_list(&series)
            ));
        }
        sentences.join(" ")
    }

    /// The entry's generated lines, in words.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if !self.template_files_changed.is_empty() {
            lines.push(format!(
                "Template files changed: {}.",
                code_list(&self.template_files_changed)
            ));
        }
        if let Some(api) = &self.wrapper_api {
            lines.extend(api.describe());
        }
        if !self.updated.is_empty() {
            let dirs: Vec<&str> = self.updated.iter().map(String::as_str).collect();
            lines.push(format!(
                "Copies updated to the template: {}.",
                dirs.join(", ")
            ));
        }
        if !self.merged.is_empty() {
            lines.push(format!(
                "Local edits kept, with the template's change merged into them: {}.",
                self.merged.join(", ")
            ));
        }
        for (dir, differing) in &self.recorded {
            if differing.is_empty() {
                lines.push(format!("Copy recorded: {dir} (identical to the template)."));
            } else {
                lines.push(format!(
                    "Copy recorded: {dir}; it differs from the template in {}, kept as local edits.",
                    differing.join(", ")
                ));
            }
        }
        if !self.edits_recorded.is_empty() {
            lines.push(format!(
                "Local edits recorded as the copies' synced state: {}.",
                self.edits_recorded.join(", ")
            ));
        }
        for dir in &self.still_behind {
            lines.push(format!(
                "Not updated, still on an older template: {dir} (`scripts/sync-dma.sh update {dir}` updates it)."
            ));
        }
        lines.extend(self.kernels.iter().filter_map(KernelChange::record_line));
        lines.extend(merge_kernels(
            self.kernels
                .iter()
                .flat_map(KernelChange::api_lines)
                .collect(),
        ));
        lines
    }

    /// The entry: `## DATE: TITLE`, the message's text as given, the generated lines as a list
    /// wrapped at [`COLUMNS`].
    pub fn entry(&self, date: &str, message: Option<&Message>) -> String {
        let (title, body) = match message {
            Some(m) => (m.title.clone(), m.body.as_str()),
            None => (self.summary(), ""),
        };
        let mut entry = format!("\n## {date}: {title}\n\n");
        if !body.is_empty() {
            entry.push_str(body);
            entry.push_str("\n\n");
        }
        for line in self.lines() {
            entry.push_str(&list_item(&line));
        }
        entry
    }
}

/// One C API change in words, after `C API (KERNEL): `: what changed, and whether the wrapper
/// relies on it.
fn describe_c_api_change(change: &ApiChange, used: bool) -> String {
    let value = |v: &Option<String>| v.as_deref().unwrap_or("").to_string();
    let what = match change.change {
        "changed" => format!(
            "`{}` changed from `{}` to `{}`",
            change.key,
            value(&change.old),
            value(&change.new)
        ),
        "removed" => format!("`{}` removed (was `{}`)", change.key, value(&change.old)),
        _ if used => format!(
            "`{}` is now fingerprinted (`{}`)",
            change.key,
            value(&change.new)
        ),
        _ => format!("`{}` added (`{}`)", change.key, value(&change.new)),
    };
    let consequence = match (change.change, used) {
        ("added", true) => "the wrapper now relies on it",
        (_, true) => "breaking: the wrapper relies on it",
        (_, false) => "the wrapper does not use it",
    };
    format!("{what}; {consequence}.")
}

/// How a newly recorded series differs from the recorded series `base` in one symbol, after
/// `C API (SERIES): `. Neither is a change in time, so it says which kernel has what.
fn describe_difference(change: &ApiChange, used: bool, series: Series, base: Series) -> String {
    let value = |v: &Option<String>| v.as_deref().unwrap_or("").to_string();
    let what = match change.change {
        "changed" => format!(
            "`{}` is `{}` in {series}, `{}` in {base}",
            change.key,
            value(&change.new),
            value(&change.old)
        ),
        "removed" => format!(
            "`{}` is in {base} (`{}`), not in {series}",
            change.key,
            value(&change.old)
        ),
        _ => format!(
            "`{}` is in {series} (`{}`), not in {base}",
            change.key,
            value(&change.new)
        ),
    };
    let consequence = if used {
        "the wrapper relies on it"
    } else {
        "the wrapper does not use it"
    };
    format!("{what}; {consequence}.")
}

/// Names as code spans, the members of a listed type after it, the unsafe ones said so:
/// "`Pool` with `new`, `alloc`; `write_shared` (unsafe)". Commas alone when no type has members.
fn item_list(names: &[String], unsafe_names: &[String]) -> String {
    let span = |full: &str, shown: &str| {
        if unsafe_names.iter().any(|u| u == full) {
            format!("`{shown}` (unsafe)")
        } else {
            format!("`{shown}`")
        }
    };
    let groups = wrapper_api::grouped(names);
    let any_members = groups.iter().any(|(_, members)| !members.is_empty());
    let entries: Vec<String> = groups
        .iter()
        .map(|(owner, members)| {
            let mut entry = span(owner, owner);
            if !members.is_empty() {
                let members: Vec<String> = members
                    .iter()
                    .map(|m| span(&format!("{owner}::{m}"), m))
                    .collect();
                entry.push_str(&format!(" with {}", members.join(", ")));
            }
            entry
        })
        .collect();
    entries.join(if any_members { "; " } else { ", " })
}

/// The width the changelog's generated text keeps to.
pub const COLUMNS: usize = 100;

/// Whether Markdown may read a line that starts with `word` as the start of another block (a list
/// item, a heading, a quote, a fence, HTML), rather than as the item's text going on.
fn starts_a_block(word: &str) -> bool {
    let ordered = word
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .starts_with(['.', ')'])
        && word.starts_with(|c: char| c.is_ascii_digit());
    // A code span may start a line; only three backticks (or tildes) open a fenced block.
    ordered
        || word.starts_with(['-', '*', '+', '>', '#', '<', '=', '|'])
        || word.starts_with("```")
        || word.starts_with("~~~")
}

/// `text` as a Markdown list item, `- ` and its words, wrapped at [`COLUMNS`] with the item's
/// continuation lines indented by two spaces; a word longer than a line stays whole, and so does a
/// line that would otherwise go on with a word Markdown reads as another block
/// ([`starts_a_block`]).
fn list_item(text: &str) -> String {
    let mut item = String::from("-");
    let mut width = 1;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if width > 2 && width + 1 + word.len() > COLUMNS && !starts_a_block(word) {
            item.push_str("\n ");
            width = 1;
        }
        item.push(' ');
        item.push_str(word);
        width += 1 + word.len();
    }
    item.push('\n');
    item
}

/// `a`, `b`, `c` as code spans.
fn code_list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// "a", "a and b", "a, b and c".
pub fn and_list<T: AsRef<str>>(items: &[T]) -> String {
    match items {
        [] => String::new(),
        [one] => one.as_ref().to_string(),
        [init @ .., last] => format!(
            "{} and {}",
            init.iter()
                .map(AsRef::as_ref)
                .collect::<Vec<_>>()
                .join(", "),
            last.as_ref()
        ),
    }
}

/// Adds `entry` to the changelog under `root`, newest first: before the first entry, after the
/// text above it; starts a changelog if there is none.
pub fn add_newest(root: &Path, entry: &str) -> Result<()> {
    let path = root.join(FILE);
    let mut text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => TOP_HEADING.to_string(),
        Err(e) => {
            return Err(fail!(
                exit::BAD_INPUT,
                "cannot read {}: {e}",
                path.display()
            ))
        }
    };
    // `entry` starts with the blank line that separates it from what is above; entries' headings
    // start with their date.
    let first_entry = text
        .match_indices("\n## ")
        .map(|(at, _)| at)
        .find(|&at| text[at + 4..].starts_with(|c: char| c.is_ascii_digit()));
    match first_entry {
        Some(first) => text.insert_str(first, entry),
        None => text.push_str(entry),
    }
    std::fs::write(&path, text)
        .map_err(|e| fail!(exit::BAD_INPUT, "cannot write {}: {e}", path.display()))
}

/// Today's date in UTC, `YYYY-MM-DD`.
pub fn today_utc() -> String {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = i64::try_from(seconds / 86_400).unwrap_or(0);
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02}")
}

/// The proleptic Gregorian date (year, month 1-12, day 1-31) of `days` after 1970-01-01 (Howard
/// Hinnant's `civil_from_days`: years of 400 starting on 1 March, so that the leap day ends them).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468; // days since 0000-03-01
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097); // [0, 146096]
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365; // [0, 399]
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100); // [0, 365]
    let month_from_march = (5 * day_of_year + 2) / 153; // [0, 11]
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1; // [1, 31]
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    // Both in range by construction.
    (year, month as u32, day as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wrapper_api::SignatureChange;

    #[test]
    fn the_newest_entry_comes_first() {
        let root = std::env::temp_dir().join(format!("changelog-test-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let _ = std::fs::remove_file(root.join(FILE));
        add_newest(&root, "\n## 1: first\n").unwrap();
        add_newest(&root, "\n## 2: second\n").unwrap();
        let text = std::fs::read_to_string(root.join(FILE)).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(
            text,
            format!("{TOP_HEADING}\n## 2: second\n\n## 1: first\n")
        );
    }

    #[test]
    fn list_items_wrap_at_the_column_limit() {
        let words = "word ".repeat(40);
        let item = list_item(words.trim());
        assert!(item.lines().all(|l| l.len() <= COLUMNS), "{item}");
        assert!(
            item.lines().skip(1).all(|l| l.starts_with("  word")),
            "{item}"
        );
        assert_eq!(item.replace("\n  ", " "), format!("- {}\n", words.trim()));
        // A continuation line never starts with what Markdown reads as another block.
        // The limit falls just before the `+`, which stays on the line.
        let signature = format!("{}`f<T: A + B>(x) -> T`", "w ".repeat(45));
        let item = list_item(&signature);
        assert!(
            item.lines()
                .skip(1)
                .all(|l| !starts_a_block(l.trim_start())),
            "{item}"
        );
        assert_eq!(
            item.replace("\n  ", " "),
            format!("- {}\n", signature.trim())
        );
        // A list of code spans wraps like words.
        let files = (0..12)
            .map(|i| format!("`src/dma_local/part{i}.rs`,"))
            .collect::<Vec<_>>();
        let item = list_item(&files.join(" "));
        assert!(item.lines().all(|l| l.len() <= COLUMNS), "{item}");
        let long = "x".repeat(120);
        assert_eq!(
            list_item(&format!("a {long} b")),
            format!("- a\n  {long}\n  b\n")
        );
        assert_eq!(list_item("short"), "- short\n");
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(59), (1970, 3, 1));
        assert_eq!(civil_from_days(10_957), (2000, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(11_017), (2000, 3, 1));
        assert_eq!(civil_from_days(47_540), (2100, 2, 28));
        assert_eq!(civil_from_days(47_541), (2100, 3, 1));
        // 2026-12-04, the date of the first readable entries.
        assert_eq!(civil_from_days(20_791), (2026, 12, 4));
        let today = today_utc();
        assert_eq!(today.len(), 10, "{today}");
        assert!(today.chars().enumerate().all(|(i, c)| if i == 4 || i == 7 {
            c == '-'
        } else {
            c.is_ascii_digit()
        }));
    }

    #[test]
    fn messages_split_into_title_and_body() {
        let m = Message::parse("\n  Title line \n\nFirst paragraph.\n\nSecond.\n").unwrap();
        assert_eq!(m.title, "Title line");
        assert_eq!(m.body, "First paragraph.\n\nSecond.");
        assert_eq!(Message::parse("one line").unwrap().body, "");
        assert_eq!(Message::parse(" \n\t\n").unwrap_err().code, exit::BAD_INPUT);
    }

    #[test]
    fn an_entry_reads_as_words() {
        let report = UpdateReport {
            template_files_changed: vec!["src/dma_local.rs".into()],
            wrapper_api: Some(WrapperApi::Known(ApiDiff {
                added: vec!["Coherent::write_shared".into(), "Pool::count".into()],
                added_unsafe: vec!["Coherent::write_shared".into()],
                removed: vec!["gone".into()],
                now_unsafe: vec!["set_mask".into()],
                no_longer_unsafe: vec![],
                changed: vec![SignatureChange {
                    name: "Mapping::len".into(),
                    old: "pub(crate) fn len(&self) -> usize".into(),
                    new: "pub(crate) fn len(&self) -> u32".into(),
                }],
            })),
            updated: ["drivers/a".to_string(), "drivers/b".to_string()].into(),
            merged: vec!["drivers/a (src/dma_local.rs)".into()],
            ..Default::default()
        };
        let message = Message::parse("Coherent::write_shared\n\nFor rings.").unwrap();
        let entry = report.entry("2026-12-04", Some(&message));
        assert!(
            entry.lines().all(|l| l.len() <= COLUMNS),
            "wrapped at {COLUMNS} columns:\n{entry}"
        );
        assert_eq!(
            entry.replace("\n  ", " "),
            "
## 2026-12-04: Coherent::write_shared

For rings.

- Template files changed: `src/dma_local.rs`.
- API added: `Coherent::write_shared` (unsafe), `Pool::count`.
- API removed: `gone`.
- Now unsafe: `set_mask` (a call needs an `unsafe` block that meets the safety requirements).
- Signature changed: `Mapping::len`: was `pub(crate) fn len(&self) -> usize`, now `pub(crate) fn len(&self) -> u32`.
- For drivers: a driver that uses `Mapping::len`, `gone`, `set_mask` must adapt to the change; other drivers need no change.
- Copies updated to the template: drivers/a, drivers/b.
- Local edits kept, with the template's change merged into them: drivers/a (src/dma_local.rs).
"
        );
        let recorded = UpdateReport {
            recorded: [("drivers/foo".to_string(), vec![])].into(),
            ..Default::default()
        };
        assert_eq!(
            recorded.entry("2026-12-04", None),
            "\n## 2026-12-04: Recorded the copy in drivers/foo.\n\n- Copy recorded: drivers/foo (identical to the template).\n"
        );
        assert!(UpdateReport::default().is_empty());
    }

    #[test]
    fn a_report_reads_the_manifests() {
        use crate::fingerprint::Symbol;
        use crate::manifest::{git_blob_id, CopyRecord};
        let wrapper = "src/dma_local.rs".to_string();
        let template: BTreeMap<String, Vec<u8>> = [(wrapper.clone(), b"t".to_vec())].into();
        let blob = git_blob_id(b"t");
        let record = |content: &[u8]| CopyRecord {
            sha256: sha256_hex(content),
            template_blob: blob.clone(),
        };
        let symbol = |used| Symbol {
            value: "void f(void)".into(),
            used,
        };
        let series = Series::of("7.3").unwrap();
        let mut old = Manifest::default();
        old.template.insert(wrapper.clone(), blob.clone());
        old.copies
            .insert(("drivers/a".into(), wrapper.clone()), record(b"t"));
        let mut kernel = KernelRecord {
            kernel: "7.3.4 (test)".into(),
            ..Default::default()
        };
        kernel.symbols.insert("function f".into(), symbol(false));
        old.kernels.insert(series, kernel);
        let mut new = old.clone();
        for (dir, content) in [
            ("drivers/a", &b"t, edited"[..]),
            ("drivers/b", b"t"),
            ("drivers/c", b"older"),
        ] {
            new.copies
                .insert((dir.into(), wrapper.clone()), record(content));
        }
        new.kernels
            .get_mut(&series)
            .unwrap()
            .symbols
            .insert("function f".into(), symbol(true));
        let report = UpdateReport::new(&old, &new, &template, &[], None);
        assert_eq!(
            report.lines(),
            [
                "Copy recorded: drivers/b (identical to the template).",
                "Copy recorded: drivers/c; it differs from the template in src/dma_local.rs, kept as local edits.",
                "Local edits recorded as the copies' synced state: drivers/a/src/dma_local.rs.",
                "C API (7.3): the wrapper now relies on `function f`, unchanged.",
            ]
        );
        assert_eq!(
            report.summary(),
            "Recorded the copies in drivers/b and drivers/c. Recorded the local edits in \
             drivers/a/src/dma_local.rs. Refreshed the C API fingerprint of 7.3."
        );
        assert!(UpdateReport::new(&old, &old, &template, &[], None).is_empty());
    }

    /// A record of `kernel` with the `(key, value, used)` symbols.
    fn kernel_record(kernel: &str, symbols: &[(&str, &str, bool)]) -> KernelRecord {
        KernelRecord {
            kernel: kernel.into(),
            symbols: symbols
                .iter()
                .map(|(key, value, used)| {
                    let symbol = crate::fingerprint::Symbol {
                        value: value.to_string(),
                        used: *used,
                    };
                    (key.to_string(), symbol)
                })
                .collect(),
        }
    }

    #[test]
    fn a_new_series_is_compared_with_the_nearest_recorded_one() {
        let series = |s| Series::of(s).unwrap();
        let template = BTreeMap::new();
        let mut old = Manifest::default();
        let common = ("constant DMA_ATTR_X", "0x2", true);
        old.kernels
            .insert(series("7.3"), kernel_record("7.3.4 (src-7.3)", &[common]));
        old.kernels
            .insert(series("6.12"), kernel_record("6.12.118 (src-6.12)", &[]));

        // 7.2, between 6.12 and 7.3: compared with 6.12, the newest older series.
        let mut new = old.clone();
        new.kernels
            .insert(series("7.2"), kernel_record("7.2.13 (src-7.2)", &[common]));
        let report = UpdateReport::new(&old, &new, &template, &[], None);
        assert_eq!(
            report.lines(),
            [
                "C API of 7.2 now recorded too, taken on 7.2.13 (src-7.2); it differs from 6.12.118 (src-6.12) as follows.",
                "C API (7.2): `constant DMA_ATTR_X` is in 7.2 (`0x2`), not in 6.12; the wrapper relies on it.",
            ]
        );
        assert_eq!(
            report.summary(),
            "The manifest now also records the C API of Linux 7.2."
        );

        // 7.2 against 7.3 alone: older than every record, so compared with the oldest newer one.
        old.kernels.remove(&series("6.12"));
        new.kernels.remove(&series("6.12"));
        let report = UpdateReport::new(&old, &new, &template, &[], None);
        assert_eq!(
            report.lines(),
            ["C API of 7.2 now recorded too, taken on 7.2.13 (src-7.2): the same as 7.3.4 (src-7.3) in every fingerprinted symbol."]
        );
        assert!(!report.is_empty());

        // The first record of all.
        let report = UpdateReport::new(&Manifest::default(), &new, &template, &[], None);
        assert_eq!(
            report.summary(),
            "The manifest now records the C API of Linux 7.2 and 7.3."
        );
    }

    #[test]
    fn the_same_change_on_several_kernels_is_written_once_naming_them() {
        let series = |s| Series::of(s).unwrap();
        let template = BTreeMap::new();
        let mut old = Manifest::default();
        let f = ("function f", "void f(void)", false);
        let g = ("function g", "void g(int)", true);
        old.kernels
            .insert(series("7.2"), kernel_record("7.2.13 (a)", &[f, g]));
        old.kernels
            .insert(series("7.3"), kernel_record("7.3.4 (a)", &[f, g]));
        let mut new = Manifest::default();
        let f_used = ("function f", "void f(void)", true);
        new.kernels
            .insert(series("7.2"), kernel_record("7.2.13 (a)", &[f_used, g]));
        new.kernels.insert(
            series("7.3"),
            kernel_record("7.3.5 (b)", &[f_used, ("function g", "void g(long)", true)]),
        );
        let report = UpdateReport::new(&old, &new, &template, &[], None);
        assert_eq!(
            report.lines(),
            [
                "C API of 7.3: fingerprint taken on 7.3.5 (b), was 7.3.4 (a).",
                "C API (7.2, 7.3): the wrapper now relies on `function f`, unchanged.",
                "C API (7.3): `function g` changed from `void g(int)` to `void g(long)`; breaking: the wrapper relies on it.",
            ]
        );
        assert_eq!(
            report.summary(),
            "Refreshed the C API fingerprint of 7.2 and 7.3."
        );
    }
}
