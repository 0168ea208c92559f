//! `grep`: content search on ripgrep's own crates (`ignore`, `grep-regex`, `grep-searcher`),
//! bounded by the search budgets and in a deterministic order: by path, then line. Output
//! is ripgrep's heading style: the file's path, then `N:line` for matches and `N-line` for
//! context, `--` between groups that are not adjacent.

mod count;
mod job;
mod run;
mod sink;

use std::path::PathBuf;
use std::sync::Arc;

use grep_regex::RegexMatcherBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use toolgate_core::{CallContext, Tool, ToolError, ToolMeta, ToolOutput, TruncationReason};

use crate::confine::Roots;
use crate::search::{
    Call, Cursor, Found, NameFilter, Scope, SearchLimits, SearchOutput, check_chars, cut_phrase,
    next_step, plural, showing, skipped_hint,
};
use job::{HEAP_LIMIT, Job};
use run::Outcome;
use sink::HitKind;

/// Longest `pattern`, in characters.
const MAX_PATTERN_CHARS: usize = 4_096;

/// Most memory a compiled regex may take (regex's own default; grep-regex allows 100 MiB).
const REGEX_SIZE_LIMIT: usize = 10 << 20;

/// Most memory the lazy DFA of a regex may cache, per searcher thread (grep-regex allows
/// 1,000 MiB).
const REGEX_DFA_SIZE_LIMIT: usize = 10 << 20;

/// Arguments of `grep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepArgs {
    /// Regex (ripgrep syntax: `fn \w+_test`, `TODO|FIXME`), matched within a line.
    pub pattern: String,
    /// Folder or file (default: the project root).
    #[serde(default)]
    pub path: Option<String>,
    /// Files to search: `*.rs`, `src/**/*.ts`, `!*.min.js`.
    #[serde(default)]
    pub glob: Option<String>,
    /// `pattern` is plain text.
    #[serde(default)]
    pub literal: bool,
    /// Ignore case.
    #[serde(default)]
    pub case_insensitive: bool,
    /// Lines around each match (at most 10).
    #[serde(default)]
    pub context: Option<u64>,
    /// Most matching lines (default 100, at most 500).
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

/// `grep`: matching lines of files, bounded.
pub struct GrepTool {
    roots: Arc<Roots>,
    limits: SearchLimits,
}

impl GrepTool {
    /// `grep` over `roots` with `limits`.
    pub fn new(roots: Arc<Roots>, limits: SearchLimits) -> Self {
        Self { roots, limits }
    }
}

impl Tool for GrepTool {
    type Args = GrepArgs;
    type Output = SearchOutput;

    fn name(&self) -> &str {
        "grep"
    }

    fn description(&self) -> &str {
        "Search file contents by regex (ripgrep syntax) or plain text (literal: true): each file's path, then `LINE:text`. Skips .git, node_modules, target and .gitignored files unless include_ignored. A cut result gives a cursor."
    }

    fn meta(&self) -> ToolMeta {
        crate::search::meta(&self.limits, "Search file contents")
    }

    async fn call(&self, args: GrepArgs, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        let call = Call::start(&self.limits, &ctx, args.limit, args.timeout_ms)?;
        let limits = &call.limits;
        if args.pattern.is_empty() {
            return Err(ToolError::InvalidArguments(
                "field `pattern`: empty; give the text or regular expression to look for"
                    .to_owned(),
            ));
        }
        let context = match args.context {
            Some(c) if c > limits.max_context as u64 => {
                return Err(ToolError::InvalidArguments(format!(
                    "field `context`: at most {} lines; use read_file with offset to see more around a match",
                    limits.max_context
                )));
            }
            Some(c) => c as usize,
            None => 0,
        };
        check_chars(
            &args.pattern,
            MAX_PATTERN_CHARS,
            "pattern",
            "Search for a distinctive part of the text (a few words or an identifier), or split a long alternation `a|b|…` into several calls",
        )?;
        let matcher = RegexMatcherBuilder::new()
            .line_terminator(Some(b'\n'))
            .case_insensitive(args.case_insensitive)
            .fixed_strings(args.literal)
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
            .build(&args.pattern)
            .map_err(|e| {
                if e.to_string().contains("size limit") {
                    return ToolError::recoverable(format!(
                        "the regular expression is too big once compiled (over {} MiB): large counted repetitions such as `\\w{{1000}}` or long alternations grow it. Use a simpler pattern (a distinctive literal part, `+` or `*` instead of large counts), or literal: true for plain text",
                        REGEX_SIZE_LIMIT >> 20
                    ));
                }
                ToolError::recoverable(format!(
                    "`{}` is not a valid regular expression: {e}\nTo search for this text exactly as written, retry with literal: true; for a regex, escape special characters ( ) [ ] {{ }} . * + ? | \\ with a backslash",
                    args.pattern
                ))
            })?;
        let glob = args
            .glob
            .as_deref()
            .map(|g| NameFilter::glob(g, "glob"))
            .transpose()?;
        let scope = Scope::resolve(
            &self.roots,
            args.path.as_deref(),
            args.cursor.as_deref(),
            args.include_ignored,
            limits,
            true,
        )?;
        let roots = Arc::clone(&self.roots);
        call.run(&ctx.cancel, move |call| {
            let outcome = run::run(&Job {
                scope: &scope,
                matcher: &matcher,
                glob: glob.as_ref(),
                context,
                limit: call.limit,
                limits: &call.limits,
                stop: &call.stop,
            });
            let page = render(&roots, &outcome, context, call.limit, &call.limits);
            ToolOutput::from_body(&finish(&roots, &args, &scope, call, outcome, page))
        })
        .await
    }
}

/// The page text and where it stopped.
#[derive(Debug, Default)]
struct Page {
    text: String,
    emitted: u64,
    files_matched: u64,
    /// The last match shown: (path as shown, line).
    last: Option<(String, u64)>,
    /// Set when the page itself was cut (result or payload limit).
    cut: Option<TruncationReason>,
}

fn render(
    roots: &Roots,
    outcome: &Outcome,
    context: usize,
    limit: usize,
    limits: &SearchLimits,
) -> Page {
    let max = limits.max_payload_bytes;
    let mut page = Page::default();
    'files: for file in &outcome.files {
        if file.hits.hits.is_empty() {
            continue;
        }
        let shown = roots.display(&outcome.path(file));
        let mut header = Some(if page.text.is_empty() {
            format!("{shown}\n")
        } else {
            format!("\n{shown}\n")
        });
        // Before-context and separators wait for their match: if the page is cut at that
        // match, they are not shown either.
        let mut waiting = String::new();
        let mut prev: Option<u64> = None;
        let mut context_fits = true;
        for hit in &file.hits.hits {
            let separate = context > 0 && prev.is_some_and(|p| hit.line != p + 1);
            let mark = if hit.kind == HitKind::Match { ':' } else { '-' };
            let line = format!("{}{mark}{}\n", hit.line, hit.text);
            match hit.kind {
                HitKind::Before => {
                    if separate {
                        waiting.push_str("--\n");
                    }
                    waiting.push_str(&line);
                    prev = Some(hit.line);
                }
                HitKind::Match => {
                    if page.emitted as usize >= limit {
                        page.cut = Some(TruncationReason::ResultLimit);
                        break 'files;
                    }
                    let mut chunk = header.take().unwrap_or_default();
                    if separate && waiting.is_empty() {
                        chunk.push_str("--\n");
                    }
                    chunk.push_str(&waiting);
                    chunk.push_str(&line);
                    if page.emitted > 0 && page.text.len() + chunk.len() > max {
                        page.cut = Some(TruncationReason::PayloadLimit);
                        break 'files;
                    }
                    if page.last.as_ref().is_none_or(|(p, _)| *p != shown) {
                        page.files_matched += 1;
                    }
                    page.text.push_str(&chunk);
                    waiting.clear();
                    page.emitted += 1;
                    page.last = Some((shown.clone(), hit.line));
                    prev = Some(hit.line);
                    context_fits = true;
                }
                HitKind::After => {
                    let sep = if separate { "--\n" } else { "" };
                    context_fits &= page.text.len() + sep.len() + line.len() <= max;
                    if context_fits {
                        page.text.push_str(sep);
                        page.text.push_str(&line);
                        prev = Some(hit.line);
                    }
                }
            }
        }
    }
    page
}

fn finish(
    roots: &Roots,
    args: &GrepArgs,
    scope: &Scope,
    call: &Call,
    outcome: Outcome,
    page: Page,
) -> SearchOutput {
    let complete = outcome.all_searched && !outcome.page_full && outcome.walk.cut.is_none();
    let (reason, cursor) = if let Some(cut) = page.cut {
        let cursor = page.last.as_ref().map(|(p, line)| Cursor {
            path: PathBuf::from(p),
            line: *line,
        });
        (Some(cut), cursor)
    } else if complete {
        (None, None)
    } else {
        let reason =
            if outcome.all_searched && outcome.walk.cut == Some(TruncationReason::ScanLimit) {
                TruncationReason::ScanLimit
            } else if outcome.page_full && outcome.walk.cut.is_none() {
                TruncationReason::PayloadLimit
            } else {
                TruncationReason::Timeout
            };
        (reason.into(), coverage(roots, scope, &outcome, &page))
    };
    // Files a line too long for the searcher stopped: the result is incomplete even when
    // every file was reached (this used to read "No matches", total 0).
    let long: Vec<String> = outcome
        .files
        .iter()
        .filter(|f| f.hits.line_too_long)
        .map(|f| roots.display(&outcome.path(f)))
        .collect();
    let long_only = reason.is_none() && !long.is_empty();
    let reason = match reason {
        None if long_only => Some(TruncationReason::PayloadLimit),
        other => other,
    };
    // Counts: exact when every file was searched to its end, or counted after the page
    // filled up within the counting budget (whether either happened depends only on the
    // tree, so the count is the same on every call). A lower bound otherwise: what was
    // counted, and at least one more than shown when the page was cut at a further match.
    let searched_whole = complete
        && !outcome
            .files
            .iter()
            .any(|f| f.hits.capped || f.hits.partial || f.hits.line_too_long);
    let (searched, searched_files) = match outcome.tally {
        Some(t) if t.exact => (t.matches, t.files),
        _ => (
            outcome.files.iter().map(|f| f.hits.matches as u64).sum(),
            outcome.files.iter().filter(|f| f.hits.matches > 0).count() as u64,
        ),
    };
    let exact = searched_whole || outcome.tally.is_some_and(|t| t.exact) && long.is_empty();
    // Which files the threads searched past a cut page varies from call to call: a lower
    // bound there is what the page itself shows.
    let (found, found_files) = match (exact, page.cut) {
        (false, Some(_)) => (page.emitted + 1, page.files_matched),
        _ => (
            searched.max(page.emitted),
            searched_files.max(page.files_matched),
        ),
    };
    let files_searched = outcome.files.len() as u64;
    let binary = outcome.files.iter().filter(|f| f.hits.binary).count();
    let failed = outcome.files.iter().filter(|f| f.hits.failed).count();
    let mut text = page.text;
    if page.emitted == 0 && reason.is_none() {
        let (what_one, what) = match &args.glob {
            Some(g) => (
                format!("file matching `{g}`"),
                format!("files matching `{g}`"),
            ),
            None => ("file".to_owned(), "files".to_owned()),
        };
        text = format!(
            "No matches for `{}` in `{}` ({} searched).{}\n",
            args.pattern,
            scope.display,
            plural(files_searched, &what_one, &what),
            skipped_hint(scope)
        );
    }
    if binary > 0 || failed > 0 {
        let mut notes = Vec::new();
        if binary > 0 {
            notes.push(format!(
                "{} skipped",
                plural(binary as u64, "binary file", "binary files")
            ));
        }
        if failed > 0 {
            notes.push(format!(
                "{} could not be read",
                plural(failed as u64, "file", "files")
            ));
        }
        text.push_str(&format!("[note: {}]\n", notes.join("; ")));
    }
    if !long.is_empty() {
        text.push_str(&long_line_note(&long, &args.pattern));
    }
    if let Some(reason) = reason {
        let phrase = match long_only {
            true => format!(
                "{} with a line over {} MiB could not be searched past that line",
                plural(long.len() as u64, "file", "files"),
                HEAP_LIMIT >> 20
            ),
            false => cut_phrase(reason, &call.limits, call.limit),
        };
        let next = match &cursor {
            None if long_only => "see the note above".to_owned(),
            _ => next_step(
                cursor.as_ref().map(Cursor::render).as_deref(),
                "pattern, path or glob",
            ),
        };
        let counts = match (page.emitted, long_only) {
            (0, true) => "no matches in the lines that could be searched".to_owned(),
            (0, false) if !exact => "no matches so far".to_owned(),
            _ => showing(
                page.emitted,
                found,
                found_files,
                !exact,
                ("match", "matches"),
            ),
        };
        text.push_str(&format!("[truncated: {phrase}; {counts} — {next}]\n"));
    }
    let found = Found {
        results: found,
        files: found_files,
        exact,
    };
    SearchOutput {
        long_line_files: (!long.is_empty()).then_some(long),
        cursor: cursor.map(|c| c.render()),
        returned: page.emitted,
        files_searched: Some(files_searched),
        files_matched: Some(page.files_matched),
        scanned_count: outcome.walk.scanned,
        ..call.output(text, scope, reason, found)
    }
}

/// The note naming the files whose search a too-long line stopped, and how to look inside.
fn long_line_note(long: &[String], pattern: &str) -> String {
    const NAMED: usize = 5;
    let mut names = long
        .iter()
        .take(NAMED)
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if long.len() > NAMED {
        names.push_str(&format!(" and {} more", long.len() - NAMED));
    }
    let example = long.first().map_or("FILE", String::as_str);
    let pattern: String = pattern
        .chars()
        .take(40)
        .collect::<String>()
        .replace('\'', "'\\''");
    format!(
        "[note: {names} {} a line over {} MiB, too long to search: matches on that line and after it are not shown. read_file shows the start of such a line (cut to 2,000 characters); to search it, use run_shell, e.g. `grep -c '{pattern}' {example}`]\n",
        if long.len() == 1 { "has" } else { "have" },
        HEAP_LIMIT >> 20
    )
}

/// The cursor after everything searched so far, for a search that stopped early without
/// filling its page.
fn coverage(roots: &Roots, scope: &Scope, outcome: &Outcome, page: &Page) -> Option<Cursor> {
    if outcome.all_searched {
        // Every file the walk handed out was searched: resume after the walk's last entry.
        if let Some(last) = outcome.walk.resume_after(&scope.walk) {
            let shown = roots.display(&scope.root.join(last));
            if scope.walk.after.as_deref() == Some(last) {
                // Nothing after the cursor was reached: the same position again.
                return Some(Cursor {
                    path: shown.into(),
                    line: scope.after_line,
                });
            }
            return Some(Cursor::after_file(shown));
        }
    } else if let Some(file) = outcome.files.last() {
        let shown = roots.display(&outcome.path(file));
        if !(file.hits.partial || file.hits.capped) {
            return Some(Cursor::after_file(shown));
        }
        let line = match &page.last {
            Some((p, line)) if *p == shown => *line,
            _ => file.after_line,
        };
        return Some(Cursor {
            path: shown.into(),
            line,
        });
    }
    // Nothing searched: the same position again.
    scope.walk.after.as_ref().map(|rel| Cursor {
        path: roots.display(&scope.root.join(rel)).into(),
        line: scope.after_line,
    })
}
