//! Log compression before the budget (seed 000 s04 ④): anchors kept with context, stack
//! frames kept whole next to kept lines, noise folded. Never applied below `min_lines` or
//! when it would save less than `min_savings`.

use std::sync::LazyLock;

use regex::Regex;

/// Compression settings; defaults from the seed.
#[derive(Debug, Clone, PartialEq)]
pub struct CompressOptions {
    /// Logs shorter than this are left alone (nothing to gain).
    pub min_lines: usize,
    /// Lines kept on each side of an anchor.
    pub context: usize,
    /// Below this fraction saved, the log is left alone.
    pub min_savings: f64,
}

impl Default for CompressOptions {
    fn default() -> Self {
        Self {
            min_lines: 40,
            context: 2,
            min_savings: 0.15,
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
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Anchor,
    Trace,
    Noise,
}

static ANCHOR: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)error|exception|failed|failure|fatal|panic|timeout|warn|deprecated").ok()
});
static SUMMARY: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"^\s*(FAIL|PASS)\b",
        r"(?i)^\s*Tests?:?\s",
        r"(?i)={3,}.*\b(passed|failed|error)\b",
        r"^\s*npm (ERR|WARN)!",
        r"^test result:",
        r"^error(\[E\d+\])?:",
        r"^(ok|FAIL|---)\s",
    ]
    .iter()
    .filter_map(|p| Regex::new(p).ok())
    .collect()
});
static TRACE: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"^\s+at\s",
        r#"^\s*File ".*", line \d+"#,
        r"^\s*-->\s",
        r"^\s*\^+",
        r"^\s+\d+: ",
        r"^\s*\|",
    ]
    .iter()
    .filter_map(|p| Regex::new(p).ok())
    .collect()
});

fn classify(line: &str) -> Class {
    if SUMMARY.iter().any(|r| r.is_match(line)) || ANCHOR.as_ref().is_some_and(|r| r.is_match(line))
    {
        Class::Anchor
    } else if TRACE.iter().any(|r| r.is_match(line)) {
        Class::Trace
    } else {
        Class::Noise
    }
}

/// Compresses `text`, or `None` when it should be left alone.
pub fn compress_log(text: &str, options: &CompressOptions) -> Option<Compressed> {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() < options.min_lines {
        return None;
    }
    let classes: Vec<Class> = lines.iter().map(|l| classify(l)).collect();
    let mut keep = vec![false; lines.len()];
    for (i, class) in classes.iter().enumerate() {
        if *class == Class::Anchor {
            let lo = i.saturating_sub(options.context);
            let hi = (i + options.context).min(lines.len() - 1);
            keep[lo..=hi].iter_mut().for_each(|k| *k = true);
        }
    }
    let mut i = 0;
    while i < lines.len() {
        if classes[i] != Class::Trace {
            i += 1;
            continue;
        }
        let start = i;
        let mut end = i;
        while end + 1 < lines.len() && classes[end + 1] == Class::Trace {
            end += 1;
        }
        let adjacent = (start > 0 && keep[start - 1])
            || (end + 1 < lines.len() && keep[end + 1])
            || keep[start..=end].iter().any(|k| *k);
        if adjacent {
            keep[start..=end].iter_mut().for_each(|k| *k = true);
        }
        i = end + 1;
    }
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if keep[i] {
            out.push(lines[i].to_owned());
            i += 1;
            continue;
        }
        let mut j = i;
        while j < lines.len() && !keep[j] {
            j += 1;
        }
        if j - i >= 3 {
            out.push(format!("… [{} lines omitted]", j - i));
        } else {
            out.extend(lines[i..j].iter().map(|l| (*l).to_owned()));
        }
        i = j;
    }
    let text_out = out.join("\n");
    let savings = 1.0 - text_out.len() as f64 / text.len().max(1) as f64;
    if savings < options.min_savings {
        return None;
    }
    Some(Compressed {
        text: text_out,
        input_lines: lines.len(),
        output_lines: out.len(),
    })
}
