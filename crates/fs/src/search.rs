//! Bounded search: the budgets `search_files` and `grep` share, the flag that stops a walk
//! when its deadline passes or its call is cancelled, and the cursor that continues a cut
//! result exactly where it stopped.
//!
//! Every search walks the tree in one deterministic order — sorted by path, component by
//! component (see [`walk`]) — so any cut, whichever budget fires, leaves a clean prefix of
//! that order, and a cursor naming the last thing returned continues with no duplicates and
//! no gaps.

mod call;
mod listing;
mod names;
mod rules;
pub(crate) mod walk;

pub(crate) use call::{Call, Found, meta, next_step};
pub(crate) use names::{NameFilter, check_chars, skipped_hint};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use toolgate_core::{ToolError, TruncationReason};

/// Budgets of one `search_files` or `grep` call. A call may lower the deadline and the
/// result count, or raise them up to the maximums here.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SearchLimits {
    /// Deadline of a call that names no `timeout_ms`.
    ///
    /// Default 15 s.
    pub default_timeout_ms: u64,
    /// Larger `timeout_ms` values are lowered to this.
    ///
    /// Default 30 s.
    pub max_timeout_ms: u64,
    /// Entries (files and folders) one call visits, separate from results.
    ///
    /// Default 50,000.
    pub max_scanned: u64,
    /// Results of a call that names no `limit`.
    ///
    /// Default 100.
    pub default_limit: usize,
    /// Larger limits are lowered to this.
    ///
    /// Default 500.
    pub max_limit: usize,
    /// Bytes of result text.
    ///
    /// Default 64 KiB, as `run_shell`'s stdout.
    pub max_payload_bytes: usize,
    /// Longer matching lines are cut with a visible marker.
    ///
    /// Default 2,000, as `read_file`.
    pub max_line_chars: usize,
    /// Most context lines `grep` shows around a match.
    ///
    /// Default 10.
    pub max_context: usize,
    /// Content-search threads; 0 = one per CPU.
    pub threads: usize,
}

impl Default for SearchLimits {
    fn default() -> Self {
        Self {
            default_timeout_ms: 15_000,
            max_timeout_ms: 30_000,
            max_scanned: 50_000,
            default_limit: 100,
            max_limit: 500,
            max_payload_bytes: 64 * 1024,
            max_line_chars: 2_000,
            max_context: 10,
            threads: 0,
        }
    }
}

impl SearchLimits {
    /// The deadline for a call that asked for `timeout_ms` (clamped to the maximum).
    pub(crate) fn timeout(&self, asked: Option<u64>) -> Result<Duration, ToolError> {
        match asked {
            Some(0) => Err(ToolError::InvalidArguments(format!(
                "field `timeout_ms`: must be between 1 and {}; omit it for the default of {}",
                self.max_timeout_ms, self.default_timeout_ms
            ))),
            Some(ms) => Ok(Duration::from_millis(ms.min(self.max_timeout_ms))),
            None => Ok(Duration::from_millis(
                self.default_timeout_ms.min(self.max_timeout_ms),
            )),
        }
    }

    /// The result count for a call that asked for `limit` (clamped to the maximum).
    pub(crate) fn limit(&self, asked: Option<u64>) -> Result<usize, ToolError> {
        let max = self.max_limit.max(1);
        match asked {
            Some(0) => Err(ToolError::InvalidArguments(format!(
                "field `limit`: must be between 1 and {max}; omit it for the default of {}",
                self.default_limit
            ))),
            Some(n) => Ok(usize::try_from(n).unwrap_or(usize::MAX).min(max)),
            None => Ok(self.default_limit.clamp(1, max)),
        }
    }

    /// Content-search threads to use.
    pub(crate) fn search_threads(&self) -> usize {
        if self.threads > 0 {
            return self.threads;
        }
        std::thread::available_parallelism().map_or(2, |n| n.get())
    }
}

/// Folders skipped unless `include_ignored` is set or the search starts inside one of them
/// (heavy folders are skipped by default).
pub const SKIPPED_DIRS: [&str; 16] = [
    ".git",
    "node_modules",
    ".cache",
    ".pnpm-store",
    ".yarn",
    ".next",
    ".nuxt",
    ".turbo",
    "dist",
    "build",
    "coverage",
    ".venv",
    "venv",
    "target",
    ".gradle",
    ".idea",
];

/// Whether `name` is one of the [`SKIPPED_DIRS`].
pub(crate) fn is_skipped_dir(name: &std::ffi::OsStr) -> bool {
    SKIPPED_DIRS.iter().any(|d| std::ffi::OsStr::new(d) == name)
}

/// Whether `rel` (a path below a root) passes through one of the [`SKIPPED_DIRS`].
pub(crate) fn inside_skipped_dir(rel: &Path) -> bool {
    rel.components().any(|c| is_skipped_dir(c.as_os_str()))
}

/// Why a search stopped early. Checked by the walker on every entry and by the content
/// searchers on every read, so a deadline or a cancellation stops the call promptly.
///
/// A passed deadline still lets a call make progress: the walk visits at least one entry and
/// the first file handed out is searched whole, so paging with a deadline too short for the
/// tree still moves forward. A cancellation stops everything at once.
#[derive(Debug)]
pub(crate) struct Stop {
    cancelled: AtomicBool,
    expired: AtomicBool,
    deadline: Instant,
}

impl Stop {
    /// A stop that fires at `deadline`.
    pub(crate) fn at(deadline: Instant) -> Arc<Self> {
        Arc::new(Self {
            cancelled: AtomicBool::new(false),
            expired: AtomicBool::new(false),
            deadline,
        })
    }

    /// Fires now (the call was cancelled).
    pub(crate) fn fire(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    /// Whether the call was cancelled.
    pub(crate) fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// Whether the search must stop: cancelled, or past its deadline.
    pub(crate) fn stopped(&self) -> bool {
        if self.cancelled() || self.expired.load(Ordering::Relaxed) {
            return true;
        }
        if Instant::now() >= self.deadline {
            self.expired.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }
}

/// Fires `stop` when `cancel` is cancelled, until dropped. A cancellation token takes a lock
/// to read, so the hot loops read an atomic flag instead.
struct CancelBridge(Option<tokio::task::JoinHandle<()>>);

impl CancelBridge {
    /// Bridges `cancel` to `stop` (needs a tokio runtime; without one only the deadline
    /// applies, after one check of the token).
    fn new(cancel: &CancellationToken, stop: &Arc<Stop>) -> Self {
        if cancel.is_cancelled() {
            stop.fire();
            return Self(None);
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return Self(None);
        };
        let cancel = cancel.clone();
        let stop = Arc::clone(stop);
        Self(Some(handle.spawn(async move {
            cancel.cancelled().await;
            stop.fire();
        })))
    }
}

impl Drop for CancelBridge {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.abort();
        }
    }
}

/// Where a search resumes: after line `line` of `path` (a path as shown in results), or
/// after the whole file. Written `path:LINE` or `path:end`; the suffix after the last `:` is
/// always present, so paths containing `:` round-trip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cursor {
    /// The path as shown to the model (relative to the project root when inside it).
    pub(crate) path: PathBuf,
    /// Last line already returned; `u64::MAX` = the whole file.
    pub(crate) line: u64,
}

impl Cursor {
    /// After the whole of `path`.
    pub(crate) fn after_file(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            line: u64::MAX,
        }
    }

    /// Parses a cursor a previous result gave.
    pub(crate) fn parse(text: &str) -> Result<Self, ToolError> {
        let bad = || {
            ToolError::InvalidArguments(format!(
                "field `cursor`: `{text}` is not a cursor from a previous result; pass the `cursor` value unchanged, or omit it to start from the beginning"
            ))
        };
        let (path, line) = text.rsplit_once(':').ok_or_else(bad)?;
        if path.is_empty() {
            return Err(bad());
        }
        let line = match line {
            "end" => u64::MAX,
            digits => digits.parse().map_err(|_| bad())?,
        };
        Ok(Self {
            path: PathBuf::from(path),
            line,
        })
    }

    /// The cursor as text.
    pub(crate) fn render(&self) -> String {
        let path = self.path.to_string_lossy();
        if self.line == u64::MAX {
            format!("{path}:end")
        } else {
            format!("{path}:{}", self.line)
        }
    }
}

/// The footer phrase for a cut.
pub(crate) fn cut_phrase(reason: TruncationReason, limits: &SearchLimits, limit: usize) -> String {
    match reason {
        TruncationReason::Timeout => {
            "the deadline passed (or the call was cancelled) before the search finished".to_owned()
        }
        TruncationReason::ScanLimit => format!(
            "the scan limit of {} entries was reached",
            limits.max_scanned
        ),
        TruncationReason::ResultLimit => format!("the limit of {limit} results was reached"),
        TruncationReason::PayloadLimit => format!(
            "the {} KiB output limit was reached",
            limits.max_payload_bytes / 1024
        ),
    }
}

/// Structured result of `search_files` and `grep`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct SearchOutput {
    /// The results (paths, or matching lines under their file's path), with a footer when cut.
    pub text: String,
    /// The folder (or file) searched, relative to the project root when inside it.
    pub path: String,
    /// Whether the search stopped before it was complete.
    pub truncated: bool,
    /// Why it stopped: `timeout`, `scan_limit`, `result_limit` or `payload_limit`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<TruncationReason>,
    /// Results (matching files, or matching lines) from this page's start to the end, when
    /// known exactly: the whole search for a first page, the rest of it for a page from a
    /// cursor. Absent when a limit stopped the search; `total_at_least` then says how many
    /// were seen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// A lower bound of the results, when a limit stopped the search before the total was
    /// known (`total_is_lower_bound` is then true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_at_least: Option<u64>,
    /// Files with at least one result from this page's start to the end: exact when `total`
    /// is, a lower bound when `total_is_lower_bound`.
    pub total_files: u64,
    /// Whether the counts are only "at least" (a limit stopped the search first).
    pub total_is_lower_bound: bool,
    /// Files whose search a line over 32 MiB stopped (`grep` only): lines from that one on
    /// were not searched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub long_line_files: Option<Vec<String>>,
    /// Pass back as `cursor` to get the results after these; present only when cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Results in this page.
    pub returned: u64,
    /// Files whose contents were searched (`grep` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files_searched: Option<u64>,
    /// Files with at least one match shown (`grep` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files_matched: Option<u64>,
    /// Entries (files and folders) visited.
    pub scanned_count: u64,
    /// Time taken.
    pub elapsed_ms: u64,
}

/// Where and how to search: a request resolved through the roots.
#[derive(Debug)]
pub(crate) struct Scope {
    /// The real folder or file searched.
    pub(crate) root: PathBuf,
    /// How `root` is shown.
    pub(crate) display: String,
    /// The walk over it.
    pub(crate) walk: walk::WalkSpec,
    /// Line to resume after in the file named by the cursor (`u64::MAX`: after the file).
    pub(crate) after_line: u64,
}

impl Scope {
    /// Resolves `path` (default: the project root) and `cursor` through `roots`.
    pub(crate) fn resolve(
        roots: &crate::Roots,
        path: Option<&str>,
        cursor: Option<&str>,
        include_ignored: bool,
        limits: &SearchLimits,
        allow_file: bool,
    ) -> Result<Self, ToolError> {
        let input = path.unwrap_or(".");
        let (tree, located) = roots.open_tree(input, allow_file).map_err(|e| match e {
            crate::PathError::NotRegular { .. } => ToolError::recoverable(format!(
                "`{input}` is not a folder; search_files searches folders (use read_file for one file)"
            )),
            crate::PathError::NotFound { .. } => ToolError::recoverable(
                crate::PathError::NotFound {
                    path: input.to_owned(),
                    hint: "; check the folder with list_dir".to_owned(),
                }
                .to_string(),
            ),
            other => ToolError::recoverable(other.to_string()),
        })?;
        let root = located.real.clone();
        let top = match tree {
            crate::confine::Tree::Dir(fd) => walk::Top::Dir(fd),
            crate::confine::Tree::File(file) => walk::Top::File(file),
        };
        // A search that starts inside a heavy folder was asked for on purpose.
        let inside_heavy = roots
            .roots()
            .iter()
            .filter_map(|r| root.strip_prefix(r).ok())
            .any(inside_skipped_dir);
        let (after, after_line) = match cursor {
            None => (None, 0),
            Some(text) => {
                let cursor = Cursor::parse(text)?;
                let abs = if cursor.path.is_absolute() {
                    cursor.path.clone()
                } else {
                    roots.primary().join(&cursor.path)
                };
                let rel = abs.strip_prefix(&root).map_err(|_| {
                    ToolError::InvalidArguments(format!(
                        "field `cursor`: `{text}` belongs to a search of another path; repeat the call with the same path as the one that gave the cursor, or omit the cursor"
                    ))
                })?;
                (Some(rel.to_path_buf()), cursor.line)
            }
        };
        Ok(Self {
            display: roots.display(&root),
            walk: walk::WalkSpec {
                root: root.clone(),
                top: Arc::new(top),
                base: located.base,
                base_path: located.base_path,
                skip_heavy: !include_ignored && !inside_heavy,
                use_ignore_files: !include_ignored,
                after,
                max_scanned: limits.max_scanned,
                shown: located.shown,
            },
            root,
            after_line,
        })
    }
}

/// `text` cut to `max` characters with a visible marker naming its full length (the
/// `read_file` marker).
pub(crate) fn cut_line(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    // Cheap path: a line of at most `max` bytes has at most `max` characters.
    if text.len() <= max {
        return std::borrow::Cow::Borrowed(text);
    }
    let chars = text.chars().count();
    if chars <= max {
        return std::borrow::Cow::Borrowed(text);
    }
    let kept: String = text.chars().take(max).collect();
    std::borrow::Cow::Owned(format!(
        "{kept} … [line cut: showing {max} of {chars} characters]"
    ))
}

/// `1 file`, `2 files`, `2,345 files`.
pub(crate) fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{} {many}", thousands(n))
    }
}

/// `2345` as `2,345` (the budget's formatter, so every result reads the same).
pub(crate) use toolgate_budget::group as thousands;

/// How many results a search found, for its footer: "showing 100 of 2,345 matches in 87
/// files", or "showing 100 of at least 101 matches in at least 12 files" when a limit
/// stopped it first.
pub(crate) fn showing(
    shown: u64,
    total: u64,
    files: u64,
    lower_bound: bool,
    (one, many): (&str, &str),
) -> String {
    let at_least = if lower_bound { "at least " } else { "" };
    format!(
        "showing {} of {at_least}{} in {at_least}{}",
        thousands(shown),
        plural(total, one, many),
        plural(files, "file", "files")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_even_with_colons_in_paths() {
        for (path, line) in [("src/lib.rs", 12), ("a:b/c:3.txt", 0), ("x:end", u64::MAX)] {
            let cursor = Cursor {
                path: PathBuf::from(path),
                line,
            };
            assert_eq!(Cursor::parse(&cursor.render()).unwrap(), cursor);
        }
        assert_eq!(Cursor::after_file("a.rs").render(), "a.rs:end");
        for bad in ["", "no-colon", ":12", "a.rs:", "a.rs:-1", "a.rs:x"] {
            assert!(Cursor::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn limits_clamp_to_their_maximums() {
        let limits = SearchLimits::default();
        assert_eq!(limits.limit(None).unwrap(), 100);
        assert_eq!(limits.limit(Some(10_000)).unwrap(), 500);
        assert!(limits.limit(Some(0)).is_err());
        assert_eq!(limits.timeout(None).unwrap(), Duration::from_secs(15));
        assert_eq!(
            limits.timeout(Some(60_000)).unwrap(),
            Duration::from_secs(30)
        );
        assert_eq!(limits.timeout(Some(5)).unwrap(), Duration::from_millis(5));
        assert!(limits.timeout(Some(0)).is_err());
    }

    #[test]
    fn counts_read_with_thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(2_345), "2,345");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(
            showing(100, 2_345, 87, false, ("match", "matches")),
            "showing 100 of 2,345 matches in 87 files"
        );
        assert_eq!(
            showing(100, 101, 1, true, ("match", "matches")),
            "showing 100 of at least 101 matches in at least 1 file"
        );
    }

    #[test]
    fn long_lines_are_cut_by_characters_not_bytes() {
        assert_eq!(cut_line("short", 10), "short");
        let wide = "é".repeat(10);
        assert_eq!(cut_line(&wide, 10), wide, "20 bytes but 10 characters");
        assert_eq!(
            cut_line(&"ab".repeat(6), 4),
            "abab … [line cut: showing 4 of 12 characters]"
        );
    }
}
