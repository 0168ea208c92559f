//! `search_files`: find files by name, bounded. A plain query matches anywhere in the path
//! below the searched folder, case-insensitively; a query with glob characters is a glob.
//! Results come in path order; a cut result carries a cursor that continues after the last
//! path it returned.

use std::sync::Arc;
use std::time::Instant;

use globset::{GlobBuilder, GlobMatcher};
use schemars::JsonSchema;
use serde::Deserialize;
use toolgate_core::{
    CallContext, Concurrency, DisclosureHint, Tool, ToolError, ToolMeta, ToolOutput,
    TruncationReason, run_blocking,
};

use crate::confine::Roots;
use crate::search::walk::walk;
use crate::search::{
    CancelBridge, Cursor, Scope, SearchLimits, SearchOutput, Stop, cut_phrase, showing,
};

/// How a query or a `glob` argument selects files.
#[derive(Debug, Clone)]
pub(crate) enum NameFilter {
    /// Every whitespace-separated word occurs in the relative path, ignoring case.
    Words(Vec<String>),
    /// A glob; without a `/` it is matched against the file name alone, with one against
    /// the path relative to the searched folder. `negated`: files that do *not* match.
    Glob {
        /// The compiled glob.
        matcher: GlobMatcher,
        /// Match the whole relative path rather than the file name.
        whole_path: bool,
        /// Select the files that do not match.
        negated: bool,
    },
}

impl NameFilter {
    /// Whether `query` is read as a glob.
    pub(crate) fn is_glob(query: &str) -> bool {
        query.contains(['*', '?', '[', '{'])
    }

    /// A glob (`*.rs`, `src/**/*.ts`, `!*.min.js`), case-insensitive.
    pub(crate) fn glob(pattern: &str, field: &str) -> Result<Self, ToolError> {
        // Bounded before globset sees it: a 1 MB glob took 3.2 s and 860 MB to compile, and
        // 100 KB of `*` panicked inside globset.
        check_size(pattern, field)?;
        let wildcards = pattern
            .chars()
            .filter(|c| matches!(c, '*' | '?' | '[' | '{'))
            .count();
        if wildcards > MAX_GLOB_WILDCARDS {
            return Err(ToolError::InvalidArguments(format!(
                "field `{field}`: the glob has {wildcards} wildcards (`*`, `?`, `[`, `{{`); at most {MAX_GLOB_WILDCARDS} are allowed. Send a short glob such as `*.rs`, `src/**/*.ts` or `*.{{md,txt}}`, and make several calls for unrelated patterns"
            )));
        }
        let (negated, pattern) = match pattern.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, pattern),
        };
        let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
        let matcher = GlobBuilder::new(pattern)
            .literal_separator(true)
            .case_insensitive(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| {
                ToolError::InvalidArguments(format!(
                    "field `{field}`: `{pattern}` is not a valid glob ({}); use e.g. `*.rs`, `src/**/*.ts` or `{{a,b}}.md`",
                    e.kind()
                ))
            })?
            .compile_matcher();
        Ok(Self::Glob {
            matcher,
            whole_path: pattern.contains('/'),
            negated,
        })
    }

    /// A `search_files` query: a glob when it has glob characters, words otherwise.
    pub(crate) fn query(query: &str) -> Result<Self, ToolError> {
        check_size(query, "query")?;
        let trimmed = query.trim();
        if trimmed.is_empty() {
            return Err(ToolError::InvalidArguments(
                "field `query`: empty; give part of a file name (`config`) or a glob (`**/*.toml`)"
                    .to_owned(),
            ));
        }
        if Self::is_glob(trimmed) {
            return Self::glob(trimmed, "query");
        }
        Ok(Self::Words(
            trimmed.split_whitespace().map(str::to_lowercase).collect(),
        ))
    }

    /// Whether the file at `rel` (relative to the searched folder) is selected.
    pub(crate) fn matches(&self, rel: &std::path::Path) -> bool {
        match self {
            Self::Words(words) => {
                let text = rel.to_string_lossy();
                if text.is_ascii() {
                    // Most paths: compare without allocating a lowercase copy per word.
                    let bytes = text.as_bytes();
                    words.iter().all(|w| contains_ascii_ci(bytes, w.as_bytes()))
                } else {
                    let lower = text.to_lowercase();
                    words.iter().all(|w| lower.contains(w.as_str()))
                }
            }
            Self::Glob {
                matcher,
                whole_path,
                negated,
            } => {
                let hit = if *whole_path {
                    matcher.is_match(rel)
                } else {
                    rel.file_name().is_some_and(|n| matcher.is_match(n))
                };
                hit != *negated
            }
        }
    }
}

/// Longest glob or name query, in characters: real globs are a few dozen.
pub(crate) const MAX_GLOB_CHARS: usize = 4_096;

/// Most wildcard characters (`*`, `?`, `[`, `{`) in one glob.
pub(crate) const MAX_GLOB_WILDCARDS: usize = 256;

/// Refuses a query or glob longer than [`MAX_GLOB_CHARS`], saying what to send instead.
fn check_size(text: &str, field: &str) -> Result<(), ToolError> {
    // Bytes bound characters from above: only a long text needs counting.
    if text.len() <= MAX_GLOB_CHARS {
        return Ok(());
    }
    let chars = text.chars().count();
    if chars <= MAX_GLOB_CHARS {
        return Ok(());
    }
    Err(ToolError::InvalidArguments(format!(
        "field `{field}`: {} characters is too long; at most {} are allowed. Send a short glob such as `*.rs` or `src/**/*.ts`, or a few words of the file name; to find many unrelated files, make several calls",
        crate::search::thousands(chars as u64),
        crate::search::thousands(MAX_GLOB_CHARS as u64),
    )))
}

/// Whether `hay` contains `needle` (already lowercase) ignoring ASCII case.
fn contains_ascii_ci(hay: &[u8], needle: &[u8]) -> bool {
    if needle.is_empty() {
        return true;
    }
    if !needle.is_ascii() {
        return false;
    }
    hay.windows(needle.len()).any(|w| {
        w.iter()
            .zip(needle)
            .all(|(a, b)| a.to_ascii_lowercase() == *b)
    })
}

/// Arguments of `search_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchFilesArgs {
    /// Words of a path (`user test`), or a glob (`*.rs`, `src/**/*.test.ts`).
    pub query: String,
    /// Folder (default: the project root).
    #[serde(default)]
    pub path: Option<String>,
    /// Most paths (default 100, at most 500).
    #[serde(default)]
    pub limit: Option<u64>,
    /// Also search skipped folders and .gitignored files.
    #[serde(default)]
    pub include_ignored: bool,
    /// `cursor` of a cut result.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Deadline (default 15000, at most 30000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// `search_files`: file names and paths, bounded.
pub struct SearchFilesTool {
    pub(crate) roots: Arc<Roots>,
    pub(crate) limits: SearchLimits,
}

impl SearchFilesTool {
    /// `search_files` over `roots` with `limits`.
    pub fn new(roots: Arc<Roots>, limits: SearchLimits) -> Self {
        Self { roots, limits }
    }
}

impl Tool for SearchFilesTool {
    type Args = SearchFilesArgs;
    type Output = SearchOutput;

    fn name(&self) -> &str {
        "search_files"
    }

    fn description(&self) -> &str {
        "Find files by path words (`user test`, any case) or a glob (`*.rs`, `src/**/*.ts`). Skips .git, node_modules, target and .gitignored files unless include_ignored. A cut result gives a cursor."
    }

    fn meta(&self) -> ToolMeta {
        ToolMeta {
            timeout: Some(crate::search::meta_timeout(&self.limits)),
            concurrency: Concurrency::ReadOnly,
            action: "fs.read".to_owned(),
            spillable: true,
            idempotent: true,
            destructive: false,
            display: "Search files".to_owned(),
            // A core tool: in the array every turn, never deferred.
            disclosure: DisclosureHint::Direct,
            ..ToolMeta::default()
        }
    }

    async fn call(&self, args: SearchFilesArgs, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        let started = Instant::now();
        let limit = self.limits.limit(args.limit)?;
        let stop = Stop::at(started + self.limits.timeout(args.timeout_ms)?);
        let filter = NameFilter::query(&args.query)?;
        let scope = Scope::resolve(
            &self.roots,
            args.path.as_deref(),
            args.cursor.as_deref(),
            args.include_ignored,
            &self.limits,
            false,
        )?;
        let _bridge = CancelBridge::new(&ctx.cancel, &stop);
        let roots = Arc::clone(&self.roots);
        // Pages the session's client passes on whole (a shorter page, a true cursor).
        let mut limits = self.limits.clone();
        limits.max_payload_bytes = ctx.session.limits().page_bytes(limits.max_payload_bytes);
        run_blocking(move || {
            let page = find(&roots, &scope, &filter, limit, &limits, &stop);
            ToolOutput::from_body(&page.into_output(&args, &scope, &limits, limit, started))
        })
        .await
    }
}

/// One page of `search_files`.
#[derive(Debug, Default)]
struct FindPage {
    text: String,
    returned: u64,
    matched: u64,
    reason: Option<TruncationReason>,
    cursor: Option<String>,
    total_known: bool,
    scanned: u64,
}

fn find(
    roots: &Roots,
    scope: &Scope,
    filter: &NameFilter,
    limit: usize,
    limits: &SearchLimits,
    stop: &Stop,
) -> FindPage {
    let mut page = FindPage::default();
    let mut last_shown: Option<String> = None;
    let end = walk(&scope.walk, stop, |v| {
        if !(v.is_file || v.is_symlink) || !filter.matches(v.rel) {
            return true;
        }
        // The cursor's own path was returned last time.
        if scope.walk.after.as_deref() == Some(v.rel) {
            return true;
        }
        page.matched += 1;
        if page.reason.is_some() {
            // Past the cut: keep walking only to count the total.
            return true;
        }
        let shown = roots.display(v.path);
        if page.returned as usize >= limit {
            page.reason = Some(TruncationReason::ResultLimit);
        } else if page.returned > 0 && page.text.len() + shown.len() + 1 > limits.max_payload_bytes
        {
            page.reason = Some(TruncationReason::PayloadLimit);
        } else {
            page.text.push_str(&shown);
            page.text.push('\n');
            page.returned += 1;
            last_shown = Some(shown);
        }
        true
    });
    page.scanned = end.scanned;
    page.total_known = end.cut.is_none();
    match (page.reason, end.cut) {
        (Some(_), _) => {
            page.cursor = last_shown.map(|p| Cursor::after_file(p).render());
        }
        (None, Some(cut)) => {
            page.reason = Some(cut);
            // Everything up to the last entry visited has been seen.
            page.cursor = end
                .resume_after(&scope.walk)
                .map(|rel| Cursor::after_file(roots.display(&scope.root.join(rel))).render());
        }
        (None, None) => {}
    }
    page
}

impl FindPage {
    fn into_output(
        self,
        args: &SearchFilesArgs,
        scope: &Scope,
        limits: &SearchLimits,
        limit: usize,
        started: Instant,
    ) -> SearchOutput {
        let mut text = self.text;
        if self.returned == 0 && self.reason.is_none() {
            text = format!(
                "No files match `{}` under `{}` ({} entries scanned).{}\n",
                args.query,
                scope.display,
                self.scanned,
                skipped_hint(scope)
            );
        }
        if let Some(reason) = self.reason {
            let mut shown = showing(
                self.returned,
                self.matched,
                self.matched,
                !self.total_known,
                ("matching file", "matching files"),
            );
            // "in N files" says nothing more for a search by name.
            if let Some(at) = shown.rfind(" in ") {
                shown.truncate(at);
            }
            if scope.walk.after.is_some() {
                shown.push_str(" from the cursor on");
            }
            let next = match &self.cursor {
                Some(c) => format!("continue with cursor \"{c}\", or narrow the query or path"),
                None => "narrow the query or path, or allow more time with timeout_ms".to_owned(),
            };
            text.push_str(&format!(
                "[truncated: {}; {shown} — {next}]\n",
                cut_phrase(reason, limits, limit),
            ));
        }
        let truncated = self.reason.is_some();
        SearchOutput {
            text,
            path: scope.display.clone(),
            truncated,
            reason: self.reason,
            total: self.total_known.then_some(self.matched),
            total_at_least: (!self.total_known).then_some(self.matched),
            total_files: self.matched,
            total_is_lower_bound: !self.total_known,
            long_line_files: None,
            cursor: self.cursor,
            returned: self.returned,
            files_searched: None,
            files_matched: None,
            scanned_count: self.scanned,
            elapsed_ms: started.elapsed().as_millis() as u64,
        }
    }
}

/// "; folders such as node_modules were skipped …" when the walk skipped them.
pub(crate) fn skipped_hint(scope: &Scope) -> &'static str {
    if scope.walk.skip_heavy {
        " Folders such as .git, node_modules, target, dist and build, and .gitignored files, were skipped; set include_ignored: true to search them too."
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn words_and_globs() {
        let words = NameFilter::query("User Test").unwrap();
        assert!(words.matches(Path::new("tests/user_test.rs")));
        assert!(words.matches(Path::new("TEST/users.txt")));
        assert!(!words.matches(Path::new("src/user.rs")));
        let name_glob = NameFilter::query("*.RS").unwrap();
        assert!(name_glob.matches(Path::new("a/b/c.rs")));
        let path_glob = NameFilter::query("src/*.rs").unwrap();
        assert!(path_glob.matches(Path::new("src/a.rs")));
        assert!(!path_glob.matches(Path::new("src/x/a.rs")));
        let not = NameFilter::glob("!*.min.js", "glob").unwrap();
        assert!(not.matches(Path::new("a.js")) && !not.matches(Path::new("a.min.js")));
        assert!(
            NameFilter::query("ünï")
                .unwrap()
                .matches(Path::new("docs/ÜNÏCODE.md"))
        );
    }
}
