//! Retrieval benchmark for `search_tool`: Recall@1, Recall@5 and latency of toolgate's tool
//! index against plain BM25, over real MCP tool lists padded with 10,000 synthetic
//! distractors.
//!
//!   cargo bench -p toolgate-core --bench disclosure            # the table
//!   cargo bench -p toolgate-core --bench disclosure -- --misses  # also list the misses
//!   DISTRACTORS=50000 cargo bench -p toolgate-core --bench disclosure

// A benchmark prints its report.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

#[path = "disclosure/baseline.rs"]
mod baseline;
#[path = "disclosure/catalog.rs"]
mod catalog;

use std::time::Instant;

use toolgate_core::disclosure::ToolIndex;

struct Outcome {
    r1: usize,
    r5: usize,
    latencies_ns: Vec<u64>,
    misses: Vec<String>,
}

/// Which queries a row counts: all, one kind, or one half of the held-out split.
#[derive(Clone, Copy)]
enum Subset<'a> {
    All,
    Kind(&'a str),
    Tuning,
    HeldOut,
}

impl Subset<'_> {
    fn has(self, q: &catalog::Query) -> bool {
        match self {
            Self::All => true,
            Self::Kind(k) => q.kind == k,
            Self::Tuning => !q.held_out(),
            Self::HeldOut => q.held_out(),
        }
    }

    fn label(self) -> String {
        match self {
            Self::All => "all".to_owned(),
            Self::Kind(k) => k.to_owned(),
            Self::Tuning => "tuning half".to_owned(),
            Self::HeldOut => "held-out half".to_owned(),
        }
    }
}

fn measure(
    queries: &[catalog::Query],
    names: &[String],
    subset: Subset<'_>,
    mut search: impl FnMut(&str) -> Vec<usize>,
) -> Outcome {
    let mut out = Outcome {
        r1: 0,
        r5: 0,
        latencies_ns: Vec::new(),
        misses: Vec::new(),
    };
    for q in queries.iter().filter(|q| subset.has(q)) {
        let hits = search(&q.text);
        let ok = |d: &usize| q.expected.contains(&names[*d]);
        if hits.first().is_some_and(ok) {
            out.r1 += 1;
        } else {
            let got: Vec<&str> = hits.iter().take(3).map(|d| names[*d].as_str()).collect();
            let half = if q.held_out() { "held" } else { "tune" };
            out.misses
                .push(format!("{half} {:>4}  {}  →  {:?}", q.kind, q.text, got));
        }
        if hits.iter().take(5).any(ok) {
            out.r5 += 1;
        }
    }
    // Latency: every query, many rounds, after a warm-up round.
    for round in 0..21 {
        for q in queries {
            let start = Instant::now();
            let hits = search(&q.text);
            let ns = start.elapsed().as_nanos() as u64;
            std::hint::black_box(hits);
            if round > 0 {
                out.latencies_ns.push(ns);
            }
        }
    }
    out.latencies_ns.sort_unstable();
    out
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i] as f64 / 1_000.0
}

fn main() {
    let show_misses = std::env::args().any(|a| a == "--misses");
    let distractors: usize = std::env::var("DISTRACTORS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let real = catalog::real_tools();
    let mut entries = real.clone();
    entries.extend(catalog::distractors(distractors, &real));
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    let names: Vec<String> = entries.iter().map(|e| e.name.clone()).collect();
    let queries = catalog::queries();
    for q in &queries {
        for e in &q.expected {
            assert!(
                names.contains(e),
                "query {:?} expects unknown tool {e}",
                q.text
            );
        }
    }

    let start = Instant::now();
    let index = ToolIndex::new(&entries);
    let build_ours = start.elapsed();
    let start = Instant::now();
    let mut bm25 = baseline::Bm25::new(&entries);
    let build_bm25 = start.elapsed();

    println!(
        "catalog: {} tools ({} real from {} fixtures, {distractors} synthetic); {} queries",
        entries.len(),
        real.len(),
        3,
        queries.len()
    );
    println!(
        "index build: toolgate {:.0} ms, plain BM25 {:.0} ms\n",
        build_ours.as_secs_f64() * 1e3,
        build_bm25.as_secs_f64() * 1e3
    );
    println!(
        "| ranker | queries | Recall@1 | Recall@5 | p50 latency | p99 latency |\n|---|---|---|---|---|---|"
    );
    let mut all_misses = Vec::new();
    let subsets = [
        Subset::All,
        Subset::Kind("en"),
        Subset::Kind("name"),
        Subset::Kind("zh"),
        Subset::Tuning,
        Subset::HeldOut,
    ];
    for subset in subsets {
        let n = queries.iter().filter(|q| subset.has(q)).count() as f64;
        let ours = measure(&queries, &names, subset, |q| {
            index.search(q, 5).into_iter().map(|h| h.doc).collect()
        });
        let plain = measure(&queries, &names, subset, |q| bm25.search(q, 5));
        let label = subset.label();
        for (ranker, o) in [("toolgate", &ours), ("plain BM25", &plain)] {
            let latency = if matches!(subset, Subset::All) {
                (
                    format!("{:.0} µs", percentile(&o.latencies_ns, 0.5)),
                    format!("{:.0} µs", percentile(&o.latencies_ns, 0.99)),
                )
            } else {
                ("".into(), "".into())
            };
            println!(
                "| {ranker} | {label} ({n}) | {:.3} | {:.3} | {} | {} |",
                o.r1 as f64 / n,
                o.r5 as f64 / n,
                latency.0,
                latency.1
            );
        }
        if matches!(subset, Subset::All) {
            all_misses = ours.misses;
            all_misses.push("— plain BM25 —".into());
            all_misses.extend(plain.misses);
        }
    }
    if show_misses {
        println!("\nmisses at rank 1 (query → top 3):");
        for m in all_misses {
            println!("{m}");
        }
    }
}
