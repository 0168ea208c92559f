//! The two budgets (per result and per turn) and the spill rule.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use toolgate_core::{
    ClientLimits, ResultBudget, Session, SpillKind, SpillRef, ToolNames, ToolOutput,
    TruncationReason, TurnResult,
};

use crate::compress::{CompressOptions, LogCompressor, LogOptions};
use crate::spill::{SpillFile, SpillStore};

/// Text that precedes a spill path in every pointer.
const POINTER_MARK: &str = "saved to `";

/// Output budgets. Defaults follow what clients already do: Claude Code spills MCP results
/// over 50,000 characters; a turn's results together get 200,000; an excerpt is about 2,000
/// characters.
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(default, deny_unknown_fields)]
pub struct BudgetLimits {
    /// One result over this many characters is spilled (Claude Code's MCP spill line).
    pub per_result_chars: usize,
    /// All results of one turn together; the largest are spilled first.
    pub per_turn_chars: usize,
    /// What a spilled result keeps in the conversation; also the excerpt of a long command
    /// output that is not a log.
    ///
    /// Claude Code's own preview is 2 KB.
    pub excerpt_chars: usize,
    /// Most characters of a compressed log (`run_shell` streams, log-like mounted tools); past
    /// it, context, long traces' middles, test chatter and warnings past the first 5 are
    /// folded, errors last.
    ///
    /// Default 8,000: the target for a 100 KB cargo test log with 3 failures, about 4 % of
    /// a 200,000-token context.
    pub log_chars: usize,
    /// Compress log-like results (shell output) before the budget.
    pub compress_logs: bool,
    /// Disk quota of the spill store; least recently read files are evicted first.
    pub spill_quota_bytes: u64,
    /// Relative to the first root; readable by `read_file`, writable by no tool; outside the
    /// project only its spill files are readable (a project file: inside the project or
    /// `$XDG_CACHE_HOME/toolgate/…`).
    pub spill_dir: PathBuf,
    /// Object storage shared by `serve --http` replicas, so a spill file written on one is
    /// readable through another (operations.md, "Replicas"): `s3://BUCKET/PREFIX` (endpoint,
    /// region and credentials from `AWS_ENDPOINT_URL`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_ALLOW_HTTP`) or `file:///ABSOLUTE/FOLDER`. The spill
    /// folder stays the working copy: finished files are copied up in the background, another
    /// replica's are fetched on first read. Unset: local disk only. User layers only.
    #[schemars(example = &"s3://team-toolgate/spill")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spill_store: Option<String>,
}

impl Default for BudgetLimits {
    fn default() -> Self {
        Self {
            per_result_chars: 50_000,
            per_turn_chars: 200_000,
            excerpt_chars: 2_000,
            log_chars: 8_000,
            compress_logs: true,
            spill_quota_bytes: 1024 * 1024 * 1024,
            spill_dir: PathBuf::from(".toolgate/spill"),
            spill_store: None,
        }
    }
}

/// What one result may show the model, decided per call: the configured sizes, narrowed by
/// the session's own ([`SessionSizes`], set from its client profile). Tools that cut their
/// own output (`run_shell`, `job_output`) read it through [`Budget::sizes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputSizes {
    /// Characters of an excerpt (`[budget] excerpt_chars`, 2,000).
    pub excerpt_chars: usize,
    /// Most characters of a compressed log (`[budget] log_chars`, 8,000).
    pub log_chars: usize,
    /// The largest result passed on whole (`[budget] per_result_chars`, 50,000).
    pub result_chars: usize,
}

impl OutputSizes {
    /// The smaller of each size.
    pub fn min(self, other: Self) -> Self {
        Self {
            excerpt_chars: self.excerpt_chars.min(other.excerpt_chars),
            log_chars: self.log_chars.min(other.log_chars),
            result_chars: self.result_chars.min(other.result_chars),
        }
    }
}

/// A session's own output sizes, when its client needs smaller results than the config
/// allows (the client profiles set it once per session). Lives in [`Session`].
#[derive(Debug, Default)]
pub struct SessionSizes(RwLock<Option<OutputSizes>>);

impl SessionSizes {
    /// Sets the session's sizes; results get the smaller of these and the config's.
    pub fn set(&self, sizes: OutputSizes) {
        *self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(sizes);
    }

    /// The session's sizes, when set.
    pub fn get(&self) -> Option<OutputSizes> {
        *self
            .0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
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

    /// The output sizes for a call in `session`: the config's, narrowed by the session's.
    pub fn sizes(&self, session: &Session) -> OutputSizes {
        let configured = OutputSizes {
            excerpt_chars: self.limits.excerpt_chars,
            log_chars: self.limits.log_chars,
            result_chars: self.limits.per_result_chars,
        };
        match session.ext::<SessionSizes>().get() {
            Some(own) => configured.min(own),
            None => configured,
        }
    }

    /// Compression settings for a log shown within `cap_chars`.
    pub fn log_options(&self, cap_chars: usize) -> LogOptions {
        LogOptions {
            cap_chars,
            ..LogOptions::default()
        }
    }

    /// How a pointer names `path`.
    pub fn display(&self, path: &Path) -> String {
        path.strip_prefix(&self.display_base)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    }

    /// The three-part pointer for a spill file: where, how big, how to get it (with
    /// `read_file` as the session's client `names` it).
    pub fn pointer(&self, file: &SpillFile, failed: bool, names: &ToolNames) -> String {
        let path = self.display(&file.path);
        let offset = if failed {
            file.lines.saturating_sub(199).max(1)
        } else {
            1
        };
        format!(
            "[full output ({} characters, {} lines) {POINTER_MARK}{path}`; read it with {read_file} {{\"path\": \"{path}\", \"offset\": {offset}, \"limit\": 200}} — do not rerun the command]",
            group(file.chars),
            group(file.lines),
            read_file = names.of("read_file"),
        )
    }

    fn compress(&self, item: &mut TurnResult<'_>) {
        // A mounted tool's log-like result gets what a command's stream gets: the whole of it
        // compressed, fitted to the log size, the original spilled.
        let options = CompressOptions::default();
        let text = &item.output.text;
        if text
            .lines()
            .nth(options.min_lines.saturating_sub(1))
            .is_none()
        {
            return;
        }
        let mut compressor = LogCompressor::new(self.log_options(self.limits.log_chars));
        compressor.push(text.as_bytes());
        let compressed = compressor.finish();
        let (before, after) = (text.chars().count(), compressed.text.chars().count());
        if after as f64 > before as f64 * (1.0 - options.min_savings) {
            return;
        }
        let file = match self.store.write(item.tool, item.output.text.as_bytes()) {
            Ok(file) => file,
            Err(e) => {
                // Without a copy on disk, compressing would lose lines: leave it whole.
                tracing::warn!(%e, "could not spill a log before compressing it; left as is");
                return;
            }
        };
        let note = format!(
            "[log compressed from {} to {} lines{}; {}]",
            group(compressed.input_lines),
            group(compressed.text.lines().count() as u64),
            anchors_note(compressed.anchors, compressed.anchors_shown),
            self.pointer(&file, item.output.is_error, &item.names)
                .trim_start_matches('[')
                .trim_end_matches(']')
        );
        item.output.text = format!("{}\n{note}\n", compressed.text.trim_end_matches('\n'));
        mark(item.output, &file, SpillKind::Compressed);
    }

    /// Characters of excerpt kept for `item`: the configured excerpt, or less when the
    /// session's client would not pass excerpt plus pointer whole (counted in bytes, so
    /// multi-byte text gets fewer characters).
    fn excerpt_chars(&self, item: &TurnResult<'_>) -> usize {
        let Some(cap) = item.limits.cap(item.output.is_error) else {
            return self.limits.excerpt_chars;
        };
        let room = cap.saturating_sub(ClientLimits::FOOTER_ROOM);
        let text = &item.output.text;
        let chars = text.chars().count().max(1);
        // Bytes per character of this text, rounded up.
        let width = text.len().div_ceil(chars).max(1);
        self.limits.excerpt_chars.min(room / width)
    }

    fn spill(&self, item: &mut TurnResult<'_>) {
        let failed = item.output.is_error;
        let cut = excerpt(&item.output.text, self.excerpt_chars(item), failed);
        item.output.text = match self.store.write(item.tool, item.output.text.as_bytes()) {
            Ok(file) => {
                let pointer = self.pointer(&file, failed, &item.names);
                mark(item.output, &file, SpillKind::Spilled);
                format!("{cut}\n{pointer}\n")
            }
            Err(e) => {
                // The store is unusable (disk full, read-only): say plainly what was lost.
                item.output.mark_truncated(TruncationReason::PayloadLimit);
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
                // A tool that already cut its output and saved the whole (run_shell) says so:
                // compressing its excerpt would only spill the excerpt a second time.
                .filter(|i| i.output.spills.is_empty())
            {
                self.compress(item);
            }
        }
        let sizes: Vec<usize> = turn.iter().map(|i| i.output.text.chars().count()).collect();
        let mut total: usize = sizes.iter().sum();
        // A result the session's client would cut is spilled whatever the budgets say: the
        // client's cut is silent, the spill leaves a pointer (counted in bytes, see
        // `ClientLimits`).
        let over_client = |i: &TurnResult<'_>| {
            i.limits
                .cap(i.output.is_error)
                .is_some_and(|cap| i.output.text.len() > cap)
        };
        let mut candidates: Vec<usize> = (0..turn.len())
            .filter(|&i| {
                turn[i].meta.spillable
                    && (sizes[i] > self.limits.excerpt_chars || over_client(&turn[i]))
            })
            .collect();
        // Largest first; stop as soon as both budgets hold.
        candidates.sort_by(|&a, &b| sizes[b].cmp(&sizes[a]).then(a.cmp(&b)));
        for i in candidates {
            let must = over_client(&turn[i]) || sizes[i] > self.limits.per_result_chars;
            if !must && total <= self.limits.per_turn_chars {
                continue;
            }
            self.spill(&mut turn[i]);
            let now = turn[i].output.text.chars().count();
            total = total - sizes[i] + now;
        }
    }
}

/// How many key lines (errors, warnings, summaries) a compressed log shows:
/// `, 12 key lines (errors, warnings, summaries), all shown` or `, 40 of 52 key lines …`.
pub fn anchors_note(anchors: u64, shown: u64) -> String {
    let s = if anchors == 1 { "" } else { "s" };
    match anchors {
        0 => String::new(),
        n if shown >= n => format!(
            ", {} key line{s} (errors, warnings, summaries), all shown",
            group(n)
        ),
        n => format!(
            ", {} of {} key lines (errors, warnings, summaries) shown; the folds count the rest",
            group(shown),
            group(n)
        ),
    }
}

/// Records the spill in the typed fields: cut, why, and where the whole is.
fn mark(output: &mut ToolOutput, file: &SpillFile, kind: SpillKind) {
    output.mark_truncated(TruncationReason::PayloadLimit);
    output.spills.push(spill_ref(file, kind, None));
}

/// The typed reference to a spill file, for a result's [`ToolOutput::spills`].
pub fn spill_ref(file: &SpillFile, kind: SpillKind, stream: Option<&str>) -> SpillRef {
    SpillRef {
        path: file.path.clone(),
        bytes: file.bytes,
        chars: file.chars,
        lines: file.lines,
        kind,
        stream: stream.map(str::to_owned),
    }
}

/// The spill files that `outputs` still reference, for [`SpillStore::retain_referenced`]
/// (agent mode: at compaction and at session close).
pub fn referenced_spills<'a>(
    outputs: impl IntoIterator<Item = &'a ToolOutput>,
) -> std::collections::HashSet<PathBuf> {
    outputs
        .into_iter()
        .flat_map(|o| o.spills.iter().map(|s| s.path.clone()))
        .collect()
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

/// `1234567` → `1,234,567`: how sizes and counts read in every result.
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests read files back with std::fs
mod tests {
    use toolgate_core::ToolMeta;

    use super::*;

    fn budget(dir: &Path, limits: BudgetLimits) -> Budget {
        let store = Arc::new(SpillStore::new(dir.join("spill"), limits.spill_quota_bytes));
        Budget::new(limits, store, dir.to_path_buf())
    }

    fn run(budget: &Budget, items: &mut [(ToolMeta, ToolOutput)]) {
        let mut turn: Vec<TurnResult<'_>> = items
            .iter_mut()
            .map(|(meta, output)| TurnResult {
                tool: "run_shell",
                meta,
                output,
                limits: ClientLimits::default(),
                names: ToolNames::default(),
            })
            .collect();
        budget.apply(&mut turn);
    }

    fn spill_path(output: &ToolOutput) -> PathBuf {
        output.spills[0].path.clone()
    }

    #[test]
    fn seed_scenario_1_a_2mb_result_becomes_excerpt_and_pointer_and_the_file_is_verbatim() {
        let dir = tempfile::tempdir().unwrap();
        let b = budget(dir.path(), BudgetLimits::default());
        let original: String = (0..26_831)
            .map(|i| {
                format!(
                    "row {i}: id={} name=user_{i} email=user_{i}@example.com status=active\n",
                    160_980 + i
                )
            })
            .collect();
        assert!(original.len() > 2_000_000);
        let mut items = [(ToolMeta::default(), ToolOutput::text(original.clone()))];
        run(&b, &mut items);
        let out = &items[0].1;
        assert!(
            out.text.chars().count() < 2_600,
            "excerpt + pointer: {}",
            out.text.len()
        );
        assert!(out.text.starts_with("row 0: "), "head-biased on success");
        assert!(out.text.contains("characters omitted"));
        assert!(out.text.contains("do not rerun the command"));
        assert!(out.text.contains("read_file"));
        assert!(out.text.contains(&format!("{} lines", group(26_831))));
        let path = spill_path(out);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            original.as_bytes(),
            "byte-identical"
        );
        assert!(
            out.text.contains(&b.display(&path)),
            "pointer names the file"
        );
        assert!(out.is_truncated());
        assert_eq!(
            out.field("reason"),
            Some(serde_json::json!("payload_limit"))
        );
        assert_eq!(out.spills.len(), 1);
        assert_eq!(out.spills[0].kind, SpillKind::Spilled);
        assert_eq!(out.spills[0].chars, original.chars().count() as u64);
        assert_eq!(referenced_spills([out]), [path].into_iter().collect());
    }

    #[test]
    fn seed_scenario_2_largest_first_spills_only_the_60k_result() {
        let dir = tempfile::tempdir().unwrap();
        let limits = BudgetLimits {
            per_turn_chars: 100_000,
            per_result_chars: 100_000,
            ..BudgetLimits::default()
        };
        let b = budget(dir.path(), limits);
        let mut items: Vec<(ToolMeta, ToolOutput)> = [60_000, 30_000, 30_000, 30_000]
            .iter()
            .map(|&n| {
                (
                    ToolMeta::default(),
                    ToolOutput::text("x".repeat(n - 1) + "\n"),
                )
            })
            .collect();
        run(&b, &mut items);
        assert!(items[0].1.text.len() < 3_000, "the 60k result is spilled");
        for (_, out) in &items[1..] {
            assert_eq!(out.text.len(), 30_000, "the 30k results stay whole");
            assert!(out.structured.is_empty());
        }
        let total: usize = items.iter().map(|(_, o)| o.text.chars().count()).sum();
        assert!(total <= 100_000, "{total}");
    }

    #[test]
    fn a_single_result_over_the_per_result_budget_is_spilled_even_when_the_turn_fits() {
        let dir = tempfile::tempdir().unwrap();
        let b = budget(dir.path(), BudgetLimits::default());
        let mut items = [(ToolMeta::default(), ToolOutput::text("y".repeat(50_001)))];
        run(&b, &mut items);
        assert_eq!(items[0].1.spills.len(), 1);
        let mut items = [(ToolMeta::default(), ToolOutput::text("y".repeat(50_000)))];
        run(&b, &mut items);
        assert!(
            items[0].1.structured.is_empty(),
            "exactly at the budget: left alone"
        );
    }

    #[test]
    fn excerpt_is_head_biased_on_success_and_tail_biased_on_failure() {
        let dir = tempfile::tempdir().unwrap();
        let b = budget(dir.path(), BudgetLimits::default());
        let log: String = (0..20_000)
            .map(|i| format!("line {i}\n"))
            .collect::<String>()
            + "error: the last line says why\n";
        let mut items = [
            (ToolMeta::default(), ToolOutput::text(log.clone())),
            (ToolMeta::default(), ToolOutput::error(log.clone())),
        ];
        let limits = BudgetLimits {
            per_result_chars: 1_000,
            ..BudgetLimits::default()
        };
        let b2 = Budget::new(limits, Arc::clone(b.store()), dir.path().to_path_buf());
        run(&b2, &mut items);
        let (ok, failed) = (&items[0].1.text, &items[1].1.text);
        let head_lines = |t: &str| t.lines().take_while(|l| !l.starts_with('…')).count();
        assert!(head_lines(ok) > 150, "success keeps mostly the head");
        assert!(head_lines(failed) < 60, "failure keeps only a little head");
        assert!(
            failed.contains("error: the last line says why"),
            "failure keeps the tail"
        );
        assert!(
            failed.contains("\"offset\": 19"),
            "failure pointer points near the end: {failed}"
        );
    }

    #[test]
    fn results_marked_not_spillable_are_never_spilled() {
        let dir = tempfile::tempdir().unwrap();
        let b = budget(dir.path(), BudgetLimits::default());
        let read_file = ToolMeta {
            spillable: false,
            ..ToolMeta::default()
        };
        let text = "z".repeat(300_000);
        let mut items = [(read_file, ToolOutput::text(text.clone()))];
        run(&b, &mut items);
        assert_eq!(items[0].1.text, text);
        assert!(!dir.path().join("spill").exists(), "nothing written");
    }

    #[test]
    fn log_like_results_are_compressed_and_the_original_spilled() {
        let dir = tempfile::tempdir().unwrap();
        let b = budget(dir.path(), BudgetLimits::default());
        let mut log: String = (0..300)
            .map(|i| format!(" ✓ src/module_{i}.test.ts (3 tests) 12ms\n"))
            .collect();
        log.push_str(
            " FAIL src/parser.test.ts > parses dates\nAssertionError: expected 1 to be 2\n",
        );
        log.push_str(" Tests  1 failed | 900 passed (901)\n");
        let meta = ToolMeta {
            log_like: true,
            ..ToolMeta::default()
        };
        let mut items = [(meta, ToolOutput::error(log.clone()))];
        run(&b, &mut items);
        let out = &items[0].1;
        assert!(
            out.text.len() < log.len() / 5,
            "compressed: {} → {}",
            log.len(),
            out.text.len()
        );
        for anchor in [
            " FAIL src/parser.test.ts > parses dates",
            "AssertionError: expected 1 to be 2",
            " Tests  1 failed | 900 passed (901)",
        ] {
            assert!(out.text.contains(anchor), "kept {anchor}");
        }
        assert_eq!(
            std::fs::read_to_string(spill_path(out)).unwrap(),
            log,
            "original kept verbatim"
        );
    }

    #[test]
    fn output_that_already_points_to_its_spill_file_is_not_compressed_or_spilled_again() {
        let dir = tempfile::tempdir().unwrap();
        let b = budget(dir.path(), BudgetLimits::default());
        let file = b.store().write("run_shell", b"the whole output").unwrap();
        let mut text: String = (0..300).map(|i| format!("noise line {i}\n")).collect();
        text.push_str("error: it broke\n");
        text.push_str(&b.pointer(&file, true, &ToolNames::default()));
        let meta = ToolMeta {
            log_like: true,
            ..ToolMeta::default()
        };
        let mut output = ToolOutput::error(text.clone());
        output
            .spills
            .push(spill_ref(&file, SpillKind::Captured, Some("stdout")));
        let mut items = [(meta, output)];
        run(&b, &mut items);
        assert_eq!(items[0].1.text, text, "left as the tool wrote it");
        let spilled = std::fs::read_dir(dir.path().join("spill"))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".txt")
            });
        assert_eq!(spilled.count(), 1, "no second copy");
    }

    #[test]
    fn a_log_that_merely_quotes_a_pointer_is_still_compressed() {
        // Regression: "already spilled" was decided by searching the text for the pointer
        // marker, so a log that printed one (a rerun of an old pointer) went out whole.
        let dir = tempfile::tempdir().unwrap();
        let b = budget(dir.path(), BudgetLimits::default());
        let mut text: String = (0..3_000)
            .map(|i| format!("test module::case_{i} ... ok\n"))
            .collect();
        text.push_str("[full output saved to `elsewhere.txt`; read it]\n");
        text.push_str("test result: ok. 3000 passed; 0 failed\n");
        let meta = ToolMeta {
            log_like: true,
            ..ToolMeta::default()
        };
        let mut items = [(meta, ToolOutput::text(text.clone()))];
        run(&b, &mut items);
        let out = &items[0].1;
        assert!(
            out.text.len() < text.len() / 4,
            "compressed: {}",
            out.text.len()
        );
        assert_eq!(out.spills[0].kind, SpillKind::Compressed);
        assert!(out.text.contains("test result: ok. 3000 passed"));
    }

    #[test]
    fn a_broken_store_says_what_was_lost_instead_of_failing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("spill"),
            "a file where the folder should be",
        )
        .unwrap();
        let b = budget(dir.path(), BudgetLimits::default());
        let mut items = [(ToolMeta::default(), ToolOutput::text("w".repeat(60_000)))];
        run(&b, &mut items);
        let out = &items[0].1;
        assert!(out.text.len() < 3_000);
        assert!(
            out.text.contains("could not be saved"),
            "{}",
            &out.text[out.text.len() - 300..]
        );
        assert!(out.is_truncated());
    }

    #[test]
    fn a_result_the_client_would_cut_is_spilled_and_excerpt_plus_pointer_fit_the_client() {
        // Regression: Codex keeps ~12,000 bytes of an MCP result and drops the middle
        // silently; a 30,000-character result was under the 50,000 budget and went out whole.
        let dir = tempfile::tempdir().unwrap();
        let b = budget(dir.path(), BudgetLimits::default());
        let codex = ClientLimits::from_profile(&toolgate_core::ClientProfile::codex());
        for text in ["x".repeat(30_000), "日本語のテキスト\n".repeat(3_000)] {
            for failed in [false, true] {
                let mut output = ToolOutput::text(text.clone());
                output.is_error = failed;
                let mut meta = ToolMeta::default();
                let mut turn = [TurnResult {
                    tool: "mcp__x__y",
                    meta: &mut meta,
                    output: &mut output,
                    limits: codex,
                    names: ToolNames::default(),
                }];
                b.apply(&mut turn);
                let cap = codex.cap(failed).unwrap();
                assert!(output.text.len() <= cap, "{} > {cap}", output.text.len());
                assert_eq!(output.spills.len(), 1, "saved whole");
                assert!(output.text.contains("do not rerun the command"));
                let path = spill_path(&output);
                assert_eq!(std::fs::read_to_string(path).unwrap(), text);
            }
        }
        // Without a client limit the same result stays whole.
        let mut items = [(ToolMeta::default(), ToolOutput::text("x".repeat(30_000)))];
        run(&b, &mut items);
        assert!(items[0].1.spills.is_empty());
    }

    #[test]
    fn excerpt_handles_multibyte_text_and_short_text() {
        assert_eq!(excerpt("short", 100, false), "short");
        let text = "日本語のテキスト\n".repeat(1_000);
        let cut = excerpt(&text, 500, false);
        assert!(cut.chars().count() < 600);
        assert!(cut.contains("characters omitted"));
    }
}
