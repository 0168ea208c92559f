//! Which files a search looks at: the name filter of `search_files` queries and of `grep`'s
//! `glob`, the size bounds on what a model may send, and the note about skipped folders.

use globset::{GlobBuilder, GlobMatcher};
use toolgate_core::ToolError;

use super::{Scope, thousands};

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
    check_chars(
        text,
        MAX_GLOB_CHARS,
        field,
        "Send a short glob such as `*.rs` or `src/**/*.ts`, or a few words of the file name; to find many unrelated files, make several calls",
    )
}

/// Refuses `text` (the argument `field`) when it is over `max` characters; `advice` says
/// what to send instead.
pub(crate) fn check_chars(
    text: &str,
    max: usize,
    field: &str,
    advice: &str,
) -> Result<(), ToolError> {
    // Bytes bound characters from above: only a long text needs counting.
    if text.len() <= max {
        return Ok(());
    }
    let chars = text.chars().count();
    if chars <= max {
        return Ok(());
    }
    Err(ToolError::InvalidArguments(format!(
        "field `{field}`: {} characters is too long; at most {} are allowed. {advice}",
        thousands(chars as u64),
        thousands(max as u64),
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
