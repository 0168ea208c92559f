//! Fitting a compressed log into a result's size: when every anchor with its context is
//! still too long, the least important lines are folded first — context, the middle of long
//! stack traces, a test's captured chatter, warnings past the first few — and only then the
//! middle of the errors themselves. Every fold says how many lines and how many of them
//! were anchors, and the caller points to the verbatim output.

use super::classify::Rank;

/// One line (or group of duplicates) of a compressed log, or a fold.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Piece {
    /// The line as shown, ` ×N` included, without its newline; empty for a fold.
    pub text: String,
    pub kind: PieceKind,
    /// Input lines it stands for.
    pub lines: usize,
    /// Anchor lines among them.
    pub anchors: usize,
    /// Characters of `text` (counted once: fitting sizes the pieces over and over).
    text_chars: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PieceKind {
    /// `… [N lines omitted]`.
    Fold,
    /// A line dropped by the compressor but too short a run to fold on its own (the end of
    /// a chunk): joins a neighbouring fold, else is shown.
    Dropped,
    Noise,
    Trace,
    Anchor(Rank),
}

impl Piece {
    /// A fold of `lines` input lines, `anchors` of them anchors.
    pub fn fold(lines: usize, anchors: usize) -> Self {
        Self {
            text: String::new(),
            kind: PieceKind::Fold,
            lines,
            anchors,
            text_chars: 0,
        }
    }

    /// A shown line (or group) standing for `lines` input lines, `anchors` of them anchors.
    pub fn shown(text: String, kind: PieceKind, lines: usize, anchors: usize) -> Self {
        Self {
            text_chars: text.chars().count(),
            text,
            kind,
            lines,
            anchors,
        }
    }

    /// Characters this piece takes when rendered, newline included.
    fn chars(&self) -> usize {
        match self.kind {
            PieceKind::Fold => fold_chars(self.lines, self.anchors) + 1,
            _ => self.text_chars + 1,
        }
    }

    fn rank(&self) -> Option<Rank> {
        match self.kind {
            PieceKind::Anchor(rank) => Some(rank),
            _ => None,
        }
    }
}

/// The marker of a fold.
fn fold_text(lines: usize, anchors: usize) -> String {
    let s = if lines == 1 { "" } else { "s" };
    match anchors {
        0 => format!("… [{lines} line{s} omitted]"),
        n => format!(
            "… [{lines} line{s} omitted, {n} of them warning or error line{}: see the full output]",
            if n == 1 { "" } else { "s" }
        ),
    }
}

/// Characters of [`fold_text`], counted without making it (fitting sizes folds often).
fn fold_chars(lines: usize, anchors: usize) -> usize {
    /// Counts the characters written to it.
    struct Count(usize);
    impl std::fmt::Write for Count {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0 += s.chars().count();
            Ok(())
        }
    }
    use std::fmt::Write as _;
    let mut count = Count(0);
    let s = if lines == 1 { "" } else { "s" };
    // Writing to a counter can't fail.
    let _ = match anchors {
        0 => write!(count, "… [{lines} line{s} omitted]"),
        n => write!(
            count,
            "… [{lines} line{s} omitted, {n} of them warning or error line{}: see the full output]",
            if n == 1 { "" } else { "s" }
        ),
    };
    count.0
}

/// What fitting did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Fitted {
    /// Anchor lines folded to fit.
    pub anchors_folded: usize,
}

/// Renders `pieces`, adjacent folds merged.
pub(crate) fn render(pieces: &[Piece]) -> String {
    let mut out = String::new();
    for piece in merge_folds(pieces.to_vec()) {
        match piece.kind {
            PieceKind::Fold => out.push_str(&fold_text(piece.lines, piece.anchors)),
            // merge_folds left none.
            PieceKind::Dropped => continue,
            _ => out.push_str(&piece.text),
        }
        out.push('\n');
    }
    out
}

/// Characters of `pieces` rendered.
pub(crate) fn size(pieces: &[Piece]) -> usize {
    pieces.iter().map(Piece::chars).sum()
}

/// Joins adjacent folds and the dropped lines next to them into one fold; a run of dropped
/// lines with no fold becomes one when it is 3 lines or more (the compressor's `min_fold`
/// default), else its lines are shown.
fn merge_folds(pieces: Vec<Piece>) -> Vec<Piece> {
    let folding = |p: &Piece| matches!(p.kind, PieceKind::Fold | PieceKind::Dropped);
    let mut out: Vec<Piece> = Vec::with_capacity(pieces.len());
    let mut run: Vec<Piece> = Vec::new();
    let flush = |run: &mut Vec<Piece>, out: &mut Vec<Piece>| {
        let (lines, anchors) = sums(run);
        if run.iter().any(|p| p.kind == PieceKind::Fold) || lines >= 3 {
            out.push(Piece::fold(lines, anchors));
            run.clear();
        } else {
            out.extend(run.drain(..).map(|p| Piece {
                kind: PieceKind::Noise,
                ..p
            }));
        }
    };
    for piece in pieces {
        if folding(&piece) {
            run.push(piece);
            continue;
        }
        if !run.is_empty() {
            flush(&mut run, &mut out);
        }
        out.push(piece);
    }
    if !run.is_empty() {
        flush(&mut run, &mut out);
    }
    out
}

/// Folds pieces, least important first, until `pieces` renders within `cap` characters.
/// The last piece (how the log ends) is folded only in the very last step.
pub(crate) fn fit(pieces: Vec<Piece>, cap: usize) -> (Vec<Piece>, Fitted) {
    let mut pieces = merge_folds(pieces);
    let mut fitted = Fitted::default();
    if size(&pieces) <= cap {
        return (pieces, fitted);
    }
    // 1. Context lines.
    fold_where(&mut pieces, &mut fitted, |p, _| {
        matches!(p.kind, PieceKind::Noise | PieceKind::Dropped)
    });
    if size(&pieces) <= cap {
        return (pieces, fitted);
    }
    // 2. The middle of long stack traces: their first 4 and last 2 frames stay.
    let runs = runs_of(&pieces, |p| p.kind == PieceKind::Trace);
    let mut drop = vec![false; pieces.len()];
    for (start, end) in runs {
        if end - start > 6 {
            drop[start + 4..end - 2].fill(true);
        }
    }
    fold_where(&mut pieces, &mut fitted, |_, i| drop[i]);
    if size(&pieces) <= cap {
        return (pieces, fitted);
    }
    // 3. Anchors of a test's captured output, but for the last 2 of each block; then all
    //    other frames.
    let runs = runs_of(&pieces, |p| p.rank() == Some(Rank::Captured));
    let mut drop = vec![false; pieces.len()];
    for (start, end) in runs {
        drop[start..end.saturating_sub(2).max(start)].fill(true);
    }
    fold_where(&mut pieces, &mut fitted, |_, i| drop[i]);
    // Then whole runs of frames and captured lines, the longest first, until it fits.
    let frame = |p: &Piece| p.kind == PieceKind::Trace || p.rank() == Some(Rank::Captured);
    let mut runs = runs_of(&pieces, frame);
    runs.sort_by_key(|&(start, end)| std::cmp::Reverse(size(&pieces[start..end])));
    let mut excess = size(&pieces).saturating_sub(cap);
    let mut drop = vec![false; pieces.len()];
    for (start, end) in runs {
        if excess == 0 {
            break;
        }
        excess = excess.saturating_sub(size(&pieces[start..end]).saturating_sub(60));
        drop[start..end].fill(true);
    }
    fold_where(&mut pieces, &mut fitted, |_, i| drop[i]);
    if size(&pieces) <= cap {
        return (pieces, fitted);
    }
    // 4. Warnings past the first 5.
    let mut seen = 0;
    let drop: Vec<bool> = pieces
        .iter()
        .map(|p| {
            let warning = p.rank() == Some(Rank::Warning);
            seen += usize::from(warning);
            warning && seen > 5
        })
        .collect();
    fold_where(&mut pieces, &mut fitted, |_, i| drop[i]);
    if size(&pieces) <= cap {
        return (pieces, fitted);
    }
    // 5. The middle: a third of the room for the first lines, the rest for the last ones
    //    (the summary and the last errors).
    head_and_tail(pieces, cap, fitted)
}

/// Keeps the first pieces within a third of `cap` and the last ones within the rest.
fn head_and_tail(pieces: Vec<Piece>, cap: usize, mut fitted: Fitted) -> (Vec<Piece>, Fitted) {
    // Room for the fold marker itself.
    let room = cap.saturating_sub(90);
    let mut head_end = 0;
    let mut used = 0;
    while head_end < pieces.len() && used + pieces[head_end].chars() <= room / 3 {
        used += pieces[head_end].chars();
        head_end += 1;
    }
    let mut tail_start = pieces.len();
    while tail_start > head_end && used + pieces[tail_start - 1].chars() <= room {
        used += pieces[tail_start - 1].chars();
        tail_start -= 1;
    }
    if tail_start == pieces.len() && tail_start > head_end {
        // Even the last line is too long: cut it so the log still says how it ended.
        let last = &pieces[tail_start - 1];
        let keep: String = last.text.chars().take(room.saturating_sub(used)).collect();
        let mut out: Vec<Piece> = pieces[..head_end].to_vec();
        let (lines, anchors) = sums(&pieces[head_end..tail_start - 1]);
        fitted.anchors_folded += count_anchors(&pieces[head_end..tail_start - 1]);
        out.push(Piece::fold(lines, anchors));
        out.push(Piece::shown(
            keep + " …[line cut]",
            last.kind,
            last.lines,
            last.anchors,
        ));
        return (merge_folds(out), fitted);
    }
    let (lines, anchors) = sums(&pieces[head_end..tail_start]);
    fitted.anchors_folded += count_anchors(&pieces[head_end..tail_start]);
    let mut out: Vec<Piece> = pieces[..head_end].to_vec();
    if head_end < tail_start {
        out.push(Piece::fold(lines, anchors));
    }
    out.extend_from_slice(&pieces[tail_start..]);
    (merge_folds(out), fitted)
}

fn sums(pieces: &[Piece]) -> (usize, usize) {
    pieces
        .iter()
        .fold((0, 0), |(l, a), p| (l + p.lines, a + p.anchors))
}

/// Anchor lines shown in `pieces` (not already inside folds).
fn count_anchors(pieces: &[Piece]) -> usize {
    pieces
        .iter()
        .filter(|p| p.kind != PieceKind::Fold)
        .map(|p| p.anchors)
        .sum()
}

/// `(start, end)` of each run of consecutive pieces matching `what`.
fn runs_of(pieces: &[Piece], what: impl Fn(&Piece) -> bool) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < pieces.len() {
        if !what(&pieces[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < pieces.len() && what(&pieces[i]) {
            i += 1;
        }
        runs.push((start, i));
    }
    runs
}

/// Replaces every piece matching `what` (but the last piece) with a fold of its lines.
fn fold_where(pieces: &mut Vec<Piece>, fitted: &mut Fitted, what: impl Fn(&Piece, usize) -> bool) {
    let last = pieces.len().saturating_sub(1);
    let old = std::mem::take(pieces);
    let mut out = Vec::with_capacity(old.len());
    for (i, piece) in old.into_iter().enumerate() {
        if i != last && piece.kind != PieceKind::Fold && what(&piece, i) {
            fitted.anchors_folded += piece.anchors;
            out.push(Piece::fold(piece.lines, piece.anchors));
        } else {
            out.push(piece);
        }
    }
    *pieces = merge_folds(out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fold_chars_counts_the_fold_text() {
        for (lines, anchors) in [(1, 0), (2, 0), (10, 1), (12_345, 2), (1, 1), (7, 7)] {
            let text = fold_text(lines, anchors);
            assert_eq!(fold_chars(lines, anchors), text.chars().count(), "{text}");
        }
    }

    fn line(text: &str, kind: PieceKind) -> Piece {
        Piece::shown(
            text.to_owned(),
            kind,
            1,
            usize::from(matches!(kind, PieceKind::Anchor(_))),
        )
    }

    #[test]
    fn folds_context_before_warnings_and_warnings_before_errors() {
        let mut pieces = vec![line("error: first", PieceKind::Anchor(Rank::Problem))];
        for i in 0..50 {
            pieces.push(line(&format!("context {i}"), PieceKind::Noise));
            pieces.push(line(
                &format!("warning: unused variable {i}"),
                PieceKind::Anchor(Rank::Warning),
            ));
        }
        pieces.push(line("error: last", PieceKind::Anchor(Rank::Problem)));
        pieces.push(line(
            "test result: FAILED",
            PieceKind::Anchor(Rank::Verdict),
        ));
        let (fitted, stats) = fit(pieces, 600);
        let text = render(&fitted);
        assert!(text.chars().count() <= 600, "{text}");
        assert!(text.contains("error: first") && text.contains("error: last"));
        assert!(text.contains("test result: FAILED"));
        assert!(text.contains("warning: unused variable 0"));
        assert!(!text.contains("context"));
        assert!(text.contains("45 of them warning or error lines"), "{text}");
        assert_eq!(stats.anchors_folded, 45);
    }

    #[test]
    fn the_middle_goes_last_and_the_end_stays() {
        let pieces: Vec<Piece> = (0..1000)
            .map(|i| {
                line(
                    &format!("error: number {i}"),
                    PieceKind::Anchor(Rank::Problem),
                )
            })
            .collect();
        let (fitted, stats) = fit(pieces, 2_000);
        let text = render(&fitted);
        assert!(text.chars().count() <= 2_000, "{}", text.chars().count());
        assert!(text.starts_with("error: number 0\n"));
        assert!(text.ends_with("error: number 999\n"));
        assert!(stats.anchors_folded > 800);
        assert!(text.contains(&format!("{} of them", stats.anchors_folded)));
    }
}
