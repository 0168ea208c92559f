//! `edit_file`: replace an exact piece of a file (a unique-match contract, as Claude Code's
//! Edit): the old text must occur exactly once unless `replace_all`; no match means the
//! model's picture of the file is stale (read it again), several mean its aim is ambiguous
//! (add surrounding lines). The replacement is literal — `$&` or `$1` in the new text stay
//! as typed. A CRLF file matches an `old_string` written with `\n` and keeps its CRLF
//! endings. A file changed on disk since this session last read or wrote it is refused. The
//! write is atomic, and the result is a small unified diff.

use std::io::Read;
use std::sync::Arc;
use std::time::Instant;

use schemars::JsonSchema;
use serde::Deserialize;
use toolgate_core::{
    CallContext, Footprint, Tool, ToolError, ToolMeta, ToolNames, ToolOutput, TruncationReason,
};

use crate::confine::{CreateParents, PathError, Roots};
use crate::list::human_size;
use crate::read::FileStamp;
use crate::write::{BeforeRename, Commit, WriteOutput, Writer, path_error};

/// Largest file `edit_file` loads (it holds the old and the new text in memory).
const MAX_EDIT_BYTES: u64 = 32 * 1024 * 1024;
/// Most lines of diff shown; the rest is cut with a marker.
const MAX_DIFF_LINES: usize = 120;
/// Most bytes of diff shown.
const MAX_DIFF_BYTES: usize = 16 * 1024;
/// Most match line numbers named in the "several matches" message.
const MAX_LINES_NAMED: usize = 20;

/// Arguments of `edit_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditFileArgs {
    /// File path, relative to the project root.
    pub path: String,
    /// Exact text to replace, occurring once.
    pub old_string: String,
    /// Its replacement, taken literally.
    pub new_string: String,
    /// Replace every occurrence.
    #[serde(default)]
    pub replace_all: bool,
}

/// `edit_file`: exact, unique replacement in one file.
pub struct EditFileTool(Writer);

impl EditFileTool {
    /// `edit_file` over `roots`.
    pub fn new(roots: Arc<Roots>) -> Self {
        Self(Writer::new(roots))
    }

    /// Runs `hook` between writing the temporary file and renaming it (a test seam for
    /// failures at that point).
    pub fn with_before_rename(self, hook: BeforeRename) -> Self {
        Self(self.0.with_before_rename(hook))
    }
}

impl Tool for EditFileTool {
    type Args = EditFileArgs;
    type Output = WriteOutput;

    fn name(&self) -> &str {
        "edit_file"
    }

    fn description(&self) -> &str {
        "Replace exact text in a file: old_string, copied from read_file without the line numbers, must occur once (add surrounding lines) unless replace_all. Returns a diff."
    }

    fn meta(&self) -> ToolMeta {
        Writer::meta("Edit file", false)
    }

    async fn call(&self, args: EditFileArgs, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        self.0.run(args, ctx, edit_file).await
    }

    fn footprint(&self, args: &serde_json::Value) -> Footprint {
        self.0.footprint(args)
    }
}

fn edit_file(
    roots: &Roots,
    args: &EditFileArgs,
    commit: &Commit<'_>,
) -> Result<ToolOutput, ToolError> {
    let started = Instant::now();
    let names = commit.names;
    if args.old_string.is_empty() {
        return Err(ToolError::recoverable(
            "old_string is empty. To insert text, put a neighbouring line in old_string and repeat it in new_string with your addition; to create or overwrite a whole file, use write_file",
        ));
    }
    if args.old_string == args.new_string {
        return Err(ToolError::recoverable(
            "old_string and new_string are identical, so nothing would change; give the new text in new_string",
        ));
    }
    let path = args.path.as_str();
    let missing = |e: PathError| match e {
        PathError::NotFound { .. } => ToolError::recoverable(format!(
            "{e}; edit_file changes existing files — use write_file to create one"
        )),
        other => path_error(other),
    };
    let parent = roots
        .open_parent(path, CreateParents::No)
        .map_err(missing)?;
    let (mut file, meta) = parent.open_existing(path).map_err(missing)?;
    roots.check_links(path, &meta).map_err(path_error)?;
    if let Some(seen) = commit.seen(&parent)
        && seen != FileStamp::of(&meta)
    {
        return Err(ToolError::recoverable(format!(
            "`{path}` changed on disk since this session last read or wrote it (it was {}, it is now {}); read it again with {}, then retry the edit with its current text",
            human_size(seen.size),
            human_size(meta.len()),
            names.of("read_file"),
        )));
    }
    if meta.len() > MAX_EDIT_BYTES {
        return Err(ToolError::recoverable(format!(
            "`{path}` is {}, over the {} edit_file handles; change it with a shell tool (e.g. sed) instead",
            human_size(meta.len()),
            human_size(MAX_EDIT_BYTES)
        )));
    }
    let mut raw = Vec::with_capacity(meta.len() as usize);
    file.read_to_end(&mut raw)
        .map_err(|e| ToolError::recoverable(format!("cannot read `{path}`: {e}")))?;
    let (bom, body) = match raw.strip_prefix(b"\xEF\xBB\xBF") {
        Some(rest) => (&raw[..3], rest),
        None => (&raw[..0], raw.as_slice()),
    };
    let text = std::str::from_utf8(body).map_err(|_| {
        ToolError::recoverable(format!(
            "`{path}` is not UTF-8 text; edit_file only edits UTF-8 files (replace it whole with write_file, or use a shell tool)"
        ))
    })?;

    let found = find(text, &args.old_string, &args.new_string);
    let Some(Found { old, new, starts }) = found else {
        return Err(ToolError::recoverable(not_found(
            path,
            &args.old_string,
            names,
        )));
    };
    if starts.len() > 1 && !args.replace_all {
        let lines = line_numbers(text, &starts);
        let mut named: Vec<String> = lines
            .iter()
            .take(MAX_LINES_NAMED)
            .map(u64::to_string)
            .collect();
        if lines.len() > MAX_LINES_NAMED {
            named.push("…".to_owned());
        }
        return Err(ToolError::recoverable(format!(
            "old_string occurs {} times in `{path}` (at lines {}); add surrounding lines to old_string so that it matches only the place you mean, or set replace_all: true to replace all {}",
            starts.len(),
            named.join(", "),
            starts.len()
        )));
    }

    // Literal splicing: nothing in `new` is interpreted.
    let mut updated = String::with_capacity(text.len() + starts.len() * new.len());
    let mut from = 0;
    for &start in &starts {
        updated.push_str(&text[from..start]);
        updated.push_str(&new);
        from = start + old.len();
    }
    updated.push_str(&text[from..]);
    let mut bytes = Vec::with_capacity(bom.len() + updated.len());
    bytes.extend_from_slice(bom);
    bytes.extend_from_slice(updated.as_bytes());

    let (written, display) = commit.replace(&parent, path, &bytes, Some(&meta))?;

    let lines = line_numbers(text, &starts);
    let at = match lines.as_slice() {
        [one] => format!("line {one}"),
        many => format!("{} places", many.len()),
    };
    let crlf = if old.contains("\r\n") || new.contains("\r\n") {
        "; CRLF line endings kept"
    } else {
        ""
    };
    let (diff, cut) = diff(&display, text, &updated);
    let text = format!(
        "Edited `{display}`: {} replaced at {at}{crlf}.\n{diff}",
        if starts.len() == 1 {
            "1 occurrence".to_owned()
        } else {
            format!("{} occurrences", starts.len())
        }
    );
    Ok(ToolOutput::from_body(&WriteOutput {
        text,
        path: display,
        truncated: cut,
        reason: cut.then_some(TruncationReason::PayloadLimit),
        bytes: written.len(),
        created: None,
        replacements: Some(starts.len() as u64),
        elapsed_ms: started.elapsed().as_millis() as u64,
    }))
}

/// The form of old/new text that matched, and where.
struct Found {
    old: String,
    new: String,
    starts: Vec<usize>,
}

/// Finds `old` in `text`. In a file with CRLF endings, `\n` in the model's text stands for
/// the file's `\r\n` (models write `\n`), in both the old and the new text; the file's own
/// dominant ending is tried first.
fn find(text: &str, old: &str, new: &str) -> Option<Found> {
    let crlf = text.matches("\r\n").count();
    let mut tries = vec![(old.to_owned(), new.to_owned())];
    if crlf > 0 {
        let converted = (to_crlf(old), to_crlf(new));
        let lf = memchr::memchr_iter(b'\n', text.as_bytes()).count();
        if crlf * 2 >= lf {
            tries.insert(0, converted);
        } else {
            tries.push(converted);
        }
    }
    tries.into_iter().find_map(|(old, new)| {
        let starts: Vec<usize> = text.match_indices(old.as_str()).map(|(i, _)| i).collect();
        (!starts.is_empty()).then_some(Found { old, new, starts })
    })
}

/// `\n` and `\r\n` alike as `\r\n`.
fn to_crlf(s: &str) -> String {
    s.replace("\r\n", "\n").replace('\n', "\r\n")
}

/// 1-based line numbers of the byte offsets `starts` (ascending) in `text`.
fn line_numbers(text: &str, starts: &[usize]) -> Vec<u64> {
    let mut line = 1u64;
    let mut from = 0;
    starts
        .iter()
        .map(|&s| {
            line += memchr::memchr_iter(b'\n', &text.as_bytes()[from..s]).count() as u64;
            from = s;
            line
        })
        .collect()
}

/// The "no match" message: what to do next, and a likely cause when one is visible.
fn not_found(path: &str, old: &str, names: &ToolNames) -> String {
    let mut message = format!(
        "old_string was not found in `{path}`. Read the file first ({}) and retry with its exact current text, including whitespace and indentation",
        names.of("read_file"),
    );
    let numbered = old.lines().any(|l| !l.is_empty())
        && old.lines().filter(|l| !l.is_empty()).all(|l| {
            let t = l.trim_start();
            let digits = t.bytes().take_while(u8::is_ascii_digit).count();
            digits > 0 && t[digits..].starts_with('\t')
        });
    if numbered {
        message.push_str(
            "; old_string seems to include read_file's line-number prefixes (`  12<TAB>`), which are not part of the file: leave them out",
        );
    }
    message
}

/// A unified diff of the change (with `\r\n` shown as `\n`), cut when long; and whether it
/// was cut.
fn diff(display: &str, old: &str, new: &str) -> (String, bool) {
    let old = old.replace("\r\n", "\n");
    let new = new.replace("\r\n", "\n");
    let full = similar::TextDiff::from_lines(&old, &new)
        .unified_diff()
        .context_radius(3)
        .header(display, display)
        .to_string();
    let total = full.lines().count();
    let mut out = String::new();
    for (shown, line) in full.lines().enumerate() {
        if shown >= MAX_DIFF_LINES || out.len() + line.len() + 1 > MAX_DIFF_BYTES {
            out.push_str(&format!(
                "[diff cut: {} more lines; read_file shows the result]\n",
                total - shown
            ));
            return (out, true);
        }
        out.push_str(line);
        out.push('\n');
    }
    (out, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_files_match_lf_text_in_their_own_ending() {
        let found = find("a\r\nb\r\nc\r\n", "a\nb", "x\ny").unwrap();
        assert_eq!(
            (found.old.as_str(), found.new.as_str()),
            ("a\r\nb", "x\r\ny")
        );
        assert_eq!(found.starts, [0]);
        // A mostly-LF file with one CRLF line: the model's text is tried as written first.
        let found = find("a\nb\nc\r\n", "a\nb", "x").unwrap();
        assert_eq!(found.old, "a\nb");
        assert!(find("a\nb\n", "a\r\nb", "x").is_none());
    }

    #[test]
    fn line_numbers_of_offsets() {
        let text = "one\ntwo\nthree two\n";
        let starts: Vec<usize> = text.match_indices("two").map(|(i, _)| i).collect();
        assert_eq!(line_numbers(text, &starts), [2, 3]);
    }

    #[test]
    fn long_diffs_are_cut() {
        let old: String = (0..500).map(|i| format!("{i}\n")).collect();
        let new = old.replace('1', "X");
        let (diff, cut) = diff("f", &old, &new);
        assert!(cut);
        assert!(diff.lines().count() <= MAX_DIFF_LINES + 1);
        assert!(diff.ends_with("read_file shows the result]\n"), "{diff}");
    }
}
