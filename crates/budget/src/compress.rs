//! Log compression before the budget (seed 000 s04 ④, SPEC "Output budget and lossless
//! spill"): a build or test log is mostly noise around a few lines that matter.
//!
//! 1. ANSI escapes and carriage-return progress frames are removed ([`clean`]).
//! 2. Each line is an anchor (problem keyword, test-runner verdict or summary, toolgate's
//!    `error: ` stamps), a stack/diagnostic frame, or noise ([`classify`]).
//! 3. Consecutive duplicates become one line followed by ` ×N`: noise lines when equal up to
//!    numbers, ids, timestamps and paths ([`dedup`]), anchors and frames only when identical,
//!    so the text of every anchor survives.
//! 4. Anchors are kept with `context` lines on each side, and so is the last line; a block
//!    of frames is kept whole when it touches a kept line; runs of at least `min_fold` other
//!    lines become `… [N lines omitted]`.
//!
//! Logs under `min_lines` lines, or that would shrink by less than `min_savings`, are left
//! alone; the result is never longer than the input. The caller spills the original first,
//! so nothing is lost.

mod classify;
mod clean;
mod dedup;

use classify::Class;

/// Compression settings; defaults from the seed's `compressLog` (s04 ④).
#[derive(Debug, Clone, PartialEq)]
pub struct CompressOptions {
    /// Logs with fewer lines are left alone (nothing to gain). Seed: 40.
    pub min_lines: usize,
    /// Lines (after duplicate folding) kept on each side of an anchor. Seed: 2.
    pub context: usize,
    /// Below this fraction of characters saved, the log is left alone. Seed: 0.15.
    pub min_savings: f64,
    /// Shortest run of dropped lines folded into one `… [N lines omitted]` marker; shorter
    /// runs are cheaper to show than to mark. Seed: 3.
    pub min_fold: usize,
}

impl Default for CompressOptions {
    fn default() -> Self {
        Self {
            min_lines: 40,
            context: 2,
            min_savings: 0.15,
            min_fold: 3,
        }
    }
}

/// A compressed log.
#[derive(Debug, Clone, PartialEq)]
pub struct Compressed {
    /// The compressed text.
    pub text: String,
    /// Lines before.
    pub input_lines: usize,
    /// Lines after.
    pub output_lines: usize,
    /// Anchor lines found in the input; the text of each one is in `text`.
    pub anchor_lines: usize,
    /// Input lines folded into omission markers or ` ×N` duplicates.
    pub omitted_lines: usize,
    /// Fraction of characters saved, in `min_savings..1.0`.
    pub savings: f64,
}

/// A run of consecutive lines of one class shown as its first line (` ×count` when > 1).
#[derive(Debug, Clone, Copy)]
struct Group {
    first: usize,
    count: usize,
    class: Class,
}

/// Compresses `text`, or `None` when it should be left alone.
pub fn compress_log(text: &str, options: &CompressOptions) -> Option<Compressed> {
    let input_lines = count_lines(text);
    if input_lines == 0 || input_lines < options.min_lines {
        return None;
    }
    let clean = clean::clean(text);
    let clean = clean.as_ref();
    let spans = line_spans(clean);
    let classes = classify::classify(clean, &spans)?;
    let lines: Vec<&str> = spans.iter().map(|&(s, e)| &clean[s..e]).collect();
    let groups = group(&lines, &classes);
    let keep = keep(&groups, options.context);
    let rendered = render(&lines, &groups, &keep, options.min_fold.max(1));

    let mut out = rendered.text;
    if !text.ends_with('\n') {
        out.pop();
    }
    let (before, after) = (text.chars().count(), out.chars().count());
    let savings = 1.0 - after as f64 / before as f64;
    if after >= before || out.len() >= text.len() || savings < options.min_savings {
        return None;
    }
    Some(Compressed {
        text: out,
        input_lines,
        output_lines: rendered.lines,
        anchor_lines: classes.iter().filter(|c| **c == Class::Anchor).count(),
        omitted_lines: input_lines - rendered.lines_shown,
        savings,
    })
}

/// Lines as `str::lines` counts them: a final newline doesn't start another line.
fn count_lines(text: &str) -> usize {
    let newlines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
    newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// Byte ranges of the lines of `text`, without their `\n`.
fn line_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::with_capacity(text.len() / 40 + 1);
    let mut start = 0;
    for nl in memchr::memchr_iter(b'\n', text.as_bytes()) {
        spans.push((start, nl));
        start = nl + 1;
    }
    if start < text.len() {
        spans.push((start, text.len()));
    }
    spans
}

/// Folds consecutive duplicates: near-duplicates for noise, identical lines otherwise.
fn group(lines: &[&str], classes: &[Class]) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::with_capacity(lines.len() / 2 + 1);
    for (i, (&line, &class)) in lines.iter().zip(classes).enumerate() {
        if let Some(last) = groups.last_mut()
            && last.class == class
        {
            let first = lines[last.first];
            let same = match class {
                Class::Noise => dedup::near_duplicate(first, line),
                Class::Anchor | Class::Trace => first == line,
            };
            if same {
                last.count += 1;
                continue;
            }
        }
        groups.push(Group {
            first: i,
            count: 1,
            class,
        });
    }
    groups
}

/// Which groups are shown: anchors with `context` groups around them, the last group, then
/// every block of frames that touches a shown group.
fn keep(groups: &[Group], context: usize) -> Vec<bool> {
    let n = groups.len();
    let mut keep = vec![false; n];
    for (i, g) in groups.iter().enumerate() {
        if g.class == Class::Anchor {
            let hi = (i + context).min(n - 1);
            keep[i.saturating_sub(context)..=hi].fill(true);
        }
    }
    // How a log ends (a verdict, an exit stamp, `npm info ok`) is worth its line.
    keep[n - 1] = true;
    let mut i = 0;
    while i < n {
        if groups[i].class != Class::Trace {
            i += 1;
            continue;
        }
        let start = i;
        while i < n && groups[i].class == Class::Trace {
            i += 1;
        }
        let touches = (start > 0 && keep[start - 1])
            || keep.get(i).copied().unwrap_or(false)
            || keep[start..i].contains(&true);
        if touches {
            keep[start..i].fill(true);
        }
    }
    keep
}

struct Rendered {
    text: String,
    /// Lines in `text`.
    lines: usize,
    /// Input lines whose text is in `text` verbatim (a ` ×N` group shows one).
    lines_shown: usize,
}

fn render(lines: &[&str], groups: &[Group], keep: &[bool], min_fold: usize) -> Rendered {
    let mut out = Rendered {
        text: String::with_capacity(lines.len() * 8),
        lines: 0,
        lines_shown: 0,
    };
    let mut i = 0;
    while i < groups.len() {
        if keep[i] {
            push_group(&mut out, lines, groups[i]);
            i += 1;
            continue;
        }
        let start = i;
        while i < groups.len() && !keep[i] {
            i += 1;
        }
        let run = &groups[start..i];
        let run_lines: usize = run.iter().map(|g| g.count).sum();
        let shown_len: usize = run.iter().map(|g| group_len(lines, *g)).sum();
        let marker = format!("… [{run_lines} lines omitted]\n");
        // Shorter in bytes and in characters; a character is at most 4 bytes, so only short
        // runs need counting.
        let fold = run_lines >= min_fold
            && marker.len() < shown_len
            && (marker.len() * 4 < shown_len || marker.chars().count() < run_chars(lines, run));
        if fold {
            out.text.push_str(&marker);
            out.lines += 1;
        } else {
            for g in run {
                push_group(&mut out, lines, *g);
            }
        }
    }
    out
}

/// Whether a group is shown as a bare line: a single line, or a run of blank ones.
fn bare(line: &str, g: Group) -> bool {
    g.count == 1 || line.trim_ascii().is_empty()
}

fn group_len(lines: &[&str], g: Group) -> usize {
    let line = lines[g.first];
    if bare(line, g) {
        line.len() + 1
    } else {
        // " ×N\n": the space, 2 bytes of ×, the digits, the newline.
        line.len() + 4 + g.count.ilog10() as usize + 1
    }
}

fn run_chars(lines: &[&str], run: &[Group]) -> usize {
    run.iter()
        .map(|g| {
            let line = lines[g.first];
            let chars = line.chars().count() + 1;
            if bare(line, *g) {
                chars
            } else {
                chars + 2 + g.count.ilog10() as usize + 1
            }
        })
        .sum()
}

fn push_group(out: &mut Rendered, lines: &[&str], g: Group) {
    use std::fmt::Write as _;
    let line = lines[g.first];
    out.text.push_str(line);
    if !bare(line, g) {
        // Writing to a String can't fail.
        let _ = write!(out.text, " ×{}", g.count);
    }
    out.text.push('\n');
    out.lines += 1;
    out.lines_shown += 1;
}

#[cfg(test)]
mod tests {
    use super::{CompressOptions, compress_log, count_lines};

    #[test]
    fn counts_lines_like_str_lines() {
        for s in ["", "a", "a\n", "a\nb", "a\n\n", "\n"] {
            assert_eq!(count_lines(s), s.lines().count(), "{s:?}");
        }
    }

    #[test]
    fn keeps_the_trailing_newline_state() {
        let body: String = (0..60).map(|i| format!("step {i} fine\n")).collect();
        for log in [format!("{body}error: boom\n"), format!("{body}error: boom")] {
            let c = compress_log(&log, &CompressOptions::default()).expect("compresses");
            assert_eq!(c.text.ends_with('\n'), log.ends_with('\n'));
            assert!(c.text.contains("error: boom"));
        }
    }
}
