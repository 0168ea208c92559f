//! The two budgets and the spill rule (seed 000 s04 ②③, exercise 1).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use toolgate_core::{ResultBudget, ToolOutput, TurnResult};

use crate::compress::{CompressOptions, compress_log};
use crate::spill::{SpillFile, SpillStore};

/// Text that precedes a spill path in every pointer; [`crate::pointers_in`] looks for it.
pub(crate) const POINTER_MARK: &str = "saved to `";

/// Output budgets. Defaults from the anchors in SPEC "Output budget": Claude Code spills MCP
/// results over 50,000 characters; a turn's results together get 200,000; an excerpt is
/// about 2,000 characters (seed 000 s04 `DEFAULTS`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct BudgetLimits {
    /// A single result over this many characters is spilled.
    pub per_result_chars: usize,
    /// All results of one turn together; over it, the largest are spilled first.
    pub per_turn_chars: usize,
    /// Characters of a spilled result kept in the conversation.
    pub excerpt_chars: usize,
    /// Compress log-like results before the budget.
    pub compress_logs: bool,
    /// Disk quota of the spill store in server mode, in bytes (least recently read evicted).
    pub spill_quota_bytes: u64,
    /// Spill folder; relative paths are under the first root. Default `.toolgate/spill`.
    pub spill_dir: PathBuf,
}

impl Default for BudgetLimits {
    fn default() -> Self {
        Self {
            per_result_chars: 50_000,
            per_turn_chars: 200_000,
            excerpt_chars: 2_000,
            compress_logs: true,
            spill_quota_bytes: 1024 * 1024 * 1024,
            spill_dir: PathBuf::from(".toolgate/spill"),
        }
    }
}

/// Applies [`BudgetLimits`] to turns, spilling into a [`SpillStore`].
#[derive(Debug)]
pub struct Budget {
    limits: BudgetLimits,
    store: Arc<SpillStore>,
    /// Pointers show paths relative to this folder (the project root) when inside it.
    display_base: PathBuf,
}

impl Budget {
    /// A budget spilling into `store`; pointer paths are shown relative to `display_base`.
    pub fn new(limits: BudgetLimits, store: Arc<SpillStore>, display_base: PathBuf) -> Self {
        Self {
            limits,
            store,
            display_base,
        }
    }

    /// The spill store.
    pub fn store(&self) -> &Arc<SpillStore> {
        &self.store
    }

    /// The limits.
    pub fn limits(&self) -> &BudgetLimits {
        &self.limits
    }

    /// How a pointer names `path`.
    pub fn display(&self, path: &Path) -> String {
        path.strip_prefix(&self.display_base)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    }

    /// The three-part pointer for a spill file: where, how big, how to get it.
    pub fn pointer(&self, file: &SpillFile, failed: bool) -> String {
        let path = self.display(&file.path);
        let offset = if failed {
            file.lines.saturating_sub(199).max(1)
        } else {
            1
        };
        format!(
            "[full output ({} characters, {} lines) {POINTER_MARK}{path}`; read it with read_file {{\"path\": \"{path}\", \"offset\": {offset}, \"limit\": 200}} — do not rerun the command]",
            group(file.chars),
            group(file.lines),
        )
    }

    fn compress(&self, item: &mut TurnResult<'_>) {
        let Some(compressed) = compress_log(&item.output.text, &CompressOptions::default()) else {
            return;
        };
        let file = match self.store.write(item.tool, item.output.text.as_bytes()) {
            Ok(file) => file,
            Err(e) => {
                // Without a copy on disk, compressing would lose lines: leave it whole.
                tracing::warn!(%e, "could not spill a log before compressing it; left as is");
                return;
            }
        };
        let note = format!(
            "[log compressed from {} to {} lines; {}]",
            group(compressed.input_lines as u64),
            group(compressed.output_lines as u64),
            self.pointer(&file, item.output.is_error)
                .trim_start_matches('[')
                .trim_end_matches(']')
        );
        item.output.text = format!("{}\n{note}\n", compressed.text.trim_end_matches('\n'));
        mark(item.output, &file, "compressed");
    }

    fn spill(&self, item: &mut TurnResult<'_>) {
        let failed = item.output.is_error;
        let cut = excerpt(&item.output.text, self.limits.excerpt_chars, failed);
        item.output.text = match self.store.write(item.tool, item.output.text.as_bytes()) {
            Ok(file) => {
                let pointer = self.pointer(&file, failed);
                mark(item.output, &file, "spilled");
                format!("{cut}\n{pointer}\n")
            }
            Err(e) => {
                // The store is unusable (disk full, read-only): say plainly what was lost.
                set(item.output, "truncated", Value::Bool(true));
                set(item.output, "reason", json!("payload_limit"));
                format!(
                    "{cut}\n[output too large ({} characters) and it could not be saved ({e}); the middle is lost — narrow the command to see it]\n",
                    group(item.output.text.chars().count() as u64)
                )
            }
        };
    }
}

impl ResultBudget for Budget {
    fn apply(&self, turn: &mut [TurnResult<'_>]) {
        if self.limits.compress_logs {
            for item in turn
                .iter_mut()
                .filter(|i| i.meta.log_like && i.meta.spillable)
            {
                self.compress(item);
            }
        }
        let sizes: Vec<usize> = turn.iter().map(|i| i.output.text.chars().count()).collect();
        let mut total: usize = sizes.iter().sum();
        let mut candidates: Vec<usize> = (0..turn.len())
            .filter(|&i| turn[i].meta.spillable && sizes[i] > self.limits.excerpt_chars)
            .collect();
        // Largest first; stop as soon as both budgets hold.
        candidates.sort_by(|&a, &b| sizes[b].cmp(&sizes[a]).then(a.cmp(&b)));
        for i in candidates {
            if sizes[i] <= self.limits.per_result_chars && total <= self.limits.per_turn_chars {
                break;
            }
            self.spill(&mut turn[i]);
            let now = turn[i].output.text.chars().count();
            total = total - sizes[i] + now;
        }
    }
}

/// Records the spill in the structured fields: cut, why, and where the whole is.
fn mark(output: &mut ToolOutput, file: &SpillFile, how: &str) {
    set(output, "truncated", Value::Bool(true));
    set(output, "reason", json!("payload_limit"));
    set(
        output,
        "spill",
        json!({ "path": file.path.to_string_lossy(), "chars": file.chars, "lines": file.lines, "mode": how }),
    );
}

fn set(output: &mut ToolOutput, key: &str, value: Value) {
    output.structured.insert(key.to_owned(), value);
}

/// An excerpt of about `cap` characters: mostly head on success (what it is), mostly tail on
/// failure (why it failed), with the omitted middle marked.
pub fn excerpt(text: &str, cap: usize, tail_biased: bool) -> String {
    let total = text.chars().count();
    if total <= cap {
        return text.to_owned();
    }
    let small = (cap / 4).min(400);
    let (head_len, tail_len) = if tail_biased {
        (small, cap - small)
    } else {
        (cap - small, small)
    };
    let head_end = text
        .char_indices()
        .nth(head_len)
        .map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(total - tail_len)
        .map_or(text.len(), |(i, _)| i);
    // Prefer whole lines when a line break is near the cut.
    let head_end = text[..head_end]
        .rfind('\n')
        .filter(|&n| n * 5 >= head_end * 4)
        .map_or(head_end, |n| n + 1);
    let tail_start = text[tail_start..]
        .find('\n')
        .filter(|&n| n * 5 <= (text.len() - tail_start))
        .map_or(tail_start, |n| tail_start + n + 1);
    let omitted = text[head_end..tail_start].chars().count();
    format!(
        "{}… [{} characters omitted] …\n{}",
        ensure_newline(&text[..head_end]),
        group(omitted as u64),
        &text[tail_start..]
    )
}

fn ensure_newline(s: &str) -> String {
    if s.ends_with('\n') || s.is_empty() {
        s.to_owned()
    } else {
        format!("{s}\n")
    }
}

/// `1234567` → `1,234,567`.
fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
