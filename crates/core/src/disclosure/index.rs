//! The searchable tool index behind `search_tool`: BM25F over five fields, query-side
//! synonyms and a Chinese glossary, and an exact-name rule on top.
//!
//! Fields and weights: the tool's own name (split into words), its server (`github` in
//! `mcp__github__create_issue`), its description, its parameters (names and descriptions)
//! and English glosses of CJK text. Plain BM25 over one text field misses the one query
//! that should never miss: a tool's exact name (Codex's `tool_search` ranks `read_file`
//! below tools that merely mention "read" and "file" often). Here a query that is a tool's
//! name, or within one or two edits of it, ranks that tool first.
//!
//! A query touches only the postings of its terms and accumulates into a reusable score
//! buffer, so searching 10,000 tools allocates nothing per tool.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{Map, Value};

use super::text::{
    GLOSSARY_WEIGHT, SYNONYM_WEIGHT, UNIGRAM_WEIGHT, cjk_runs, edit_distance, is_unigram, name_key,
    tables, terms, translate,
};

/// Results of one search when the caller gives no `limit`.
pub const DEFAULT_LIMIT: usize = 5;
/// Most results of one search (Anthropic's tool search returns 3–5; Codex defaults to 8).
pub const MAX_LIMIT: usize = 20;

/// What one tool contributes to the index.
#[derive(Debug, Clone)]
pub struct IndexEntry {
    /// Full tool name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Input schema (its properties are indexed).
    pub input_schema: Map<String, Value>,
}

/// One search result.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    /// Position of the tool in the order the index was built from.
    pub doc: usize,
    /// Its score (exact-name matches score above every lexical match).
    pub score: f32,
}

/// Fields, in this order: name, server, description, parameters, glosses.
const FIELDS: usize = 5;

/// BM25F parameters: per-field weights and length normalisation.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexWeights {
    /// Weight of each field: name, server, description, parameters, glosses.
    pub field: [f32; FIELDS],
    /// Length normalisation `b` of each field.
    pub b: [f32; FIELDS],
    /// Term-frequency saturation.
    pub k1: f32,
}

impl Default for IndexWeights {
    /// Names weigh most: a tool is named after what it does. Tuned on the retrieval
    /// benchmark (`crates/core/benches/disclosure.rs`).
    fn default() -> Self {
        Self {
            field: [3.0, 3.0, 1.0, 0.4, 0.8],
            b: [0.3, 0.0, 0.75, 0.75, 0.5],
            k1: 1.2,
        }
    }
}

/// Score bonus of an exact-name match (above any lexical score).
const EXACT_BONUS: f32 = 1_000.0;
/// Score bonus of a name within a couple of edits.
const NEAR_BONUS: f32 = 500.0;
/// How many lexical candidates are checked for a near-exact name.
const NEAR_CANDIDATES: usize = 64;

#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    /// `tf~ / (k1 + tf~)` for this term in this document (BM25F, before the idf).
    value: f32,
}

/// Per-query working memory, reused across queries.
#[derive(Debug, Default)]
struct Scratch {
    scores: Vec<f32>,
    touched: Vec<u32>,
}

/// The index over one catalog.
#[derive(Debug)]
pub struct ToolIndex {
    postings: Vec<Vec<Posting>>,
    idf: Vec<f32>,
    vocab: HashMap<String, u32>,
    /// Name keys (full name, short name, server + short name) → documents, with a rank.
    names: HashMap<String, Vec<(u32, u8)>>,
    /// The keys of each document, for near-exact checks.
    doc_keys: Vec<[String; 3]>,
    len: usize,
    scratch: Mutex<Vec<Scratch>>,
}

/// `mcp__server__tool` → (`server`, `tool`); other names have no server.
pub(crate) fn split_server(name: &str) -> (Option<&str>, &str) {
    if let Some(rest) = name.strip_prefix("mcp__")
        && let Some((server, tool)) = rest.split_once("__")
    {
        return (Some(server), tool);
    }
    (None, name)
}

fn params_text(schema: &Map<String, Value>, depth: usize, out: &mut String) {
    let Some(Value::Object(props)) = schema.get("properties") else {
        return;
    };
    for (name, prop) in props {
        out.push_str(name);
        out.push(' ');
        if let Value::Object(prop) = prop {
            if let Some(Value::String(d)) = prop.get("description") {
                out.push_str(d);
                out.push(' ');
            }
            if depth < 2 {
                params_text(prop, depth + 1, out);
                if let Some(Value::Object(items)) = prop.get("items") {
                    params_text(items, depth + 1, out);
                }
            }
        }
    }
}

impl ToolIndex {
    /// Builds the index with the default weights.
    pub fn new(entries: &[IndexEntry]) -> Self {
        Self::with_weights(entries, &IndexWeights::default())
    }

    /// Builds the index.
    pub fn with_weights(entries: &[IndexEntry], weights: &IndexWeights) -> Self {
        let mut vocab: HashMap<String, u32> = HashMap::new();
        // Per document: (term, field) counts and field lengths.
        let mut doc_terms: Vec<Vec<(u32, [f32; FIELDS])>> = Vec::with_capacity(entries.len());
        let mut lengths: Vec<[f32; FIELDS]> = Vec::with_capacity(entries.len());
        let mut names: HashMap<String, Vec<(u32, u8)>> = HashMap::new();
        let mut doc_keys = Vec::with_capacity(entries.len());
        let mut buf = Vec::new();
        for (doc, entry) in entries.iter().enumerate() {
            let (server, short) = split_server(&entry.name);
            let mut params = String::new();
            params_text(&entry.input_schema, 0, &mut params);
            let mut gloss = String::new();
            for run in cjk_runs(&entry.description) {
                let mut en = Vec::new();
                translate(&run, &mut en);
                gloss.push_str(&en.join(" "));
                gloss.push(' ');
            }
            let texts: [&str; FIELDS] = [
                short,
                server.unwrap_or(""),
                &entry.description,
                &params,
                &gloss,
            ];
            let mut counts: HashMap<u32, [f32; FIELDS]> = HashMap::new();
            let mut len = [0.0f32; FIELDS];
            for (field, text) in texts.iter().enumerate() {
                buf.clear();
                terms(text, &mut buf);
                len[field] = buf.len() as f32;
                for term in buf.drain(..) {
                    let next = vocab.len() as u32;
                    let id = *vocab.entry(term).or_insert(next);
                    counts.entry(id).or_insert([0.0; FIELDS])[field] += 1.0;
                }
            }
            let mut counts: Vec<(u32, [f32; FIELDS])> = counts.into_iter().collect();
            counts.sort_by_key(|(id, _)| *id);
            doc_terms.push(counts);
            lengths.push(len);
            let doc = doc as u32;
            let full = name_key(&entry.name);
            let short_key = name_key(short);
            let server_short = name_key(&format!("{}{short}", server.unwrap_or("")));
            names.entry(full.clone()).or_default().push((doc, 3));
            if short_key != full {
                names.entry(short_key.clone()).or_default().push((doc, 2));
            }
            if server_short != full && server_short != short_key {
                names
                    .entry(server_short.clone())
                    .or_default()
                    .push((doc, 2));
            }
            doc_keys.push([full, short_key, server_short]);
        }
        let n = entries.len().max(1) as f32;
        let mut avg = [0.0f32; FIELDS];
        for len in &lengths {
            for f in 0..FIELDS {
                avg[f] += len[f] / n;
            }
        }
        let mut postings: Vec<Vec<Posting>> = vec![Vec::new(); vocab.len()];
        for (doc, counts) in doc_terms.iter().enumerate() {
            let len = &lengths[doc];
            for (id, tf) in counts {
                let mut tilde = 0.0;
                for f in 0..FIELDS {
                    if tf[f] == 0.0 {
                        continue;
                    }
                    let norm = if avg[f] > 0.0 {
                        1.0 - weights.b[f] + weights.b[f] * len[f] / avg[f]
                    } else {
                        1.0
                    };
                    tilde += weights.field[f] * tf[f] / norm;
                }
                postings[*id as usize].push(Posting {
                    doc: doc as u32,
                    value: tilde / (weights.k1 + tilde),
                });
            }
        }
        let idf = postings
            .iter()
            .map(|p| {
                let df = p.len() as f32;
                ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
            })
            .collect();
        Self {
            postings,
            idf,
            vocab,
            names,
            doc_keys,
            len: entries.len(),
            scratch: Mutex::new(Vec::new()),
        }
    }

    /// How many tools are indexed.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the index is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The weighted query terms of `query`: its own terms, synonyms and glosses.
    fn query_terms(&self, query: &str) -> Vec<(u32, f32)> {
        let mut words = Vec::new();
        terms(query, &mut words);
        let mut weighted: Vec<(String, f32)> = words
            .iter()
            .map(|w| {
                let weight = if is_unigram(w) { UNIGRAM_WEIGHT } else { 1.0 };
                (w.clone(), weight)
            })
            .collect();
        let tables = tables();
        for (i, w) in words.iter().enumerate() {
            if let Some(syns) = tables.synonyms.get(w) {
                weighted.extend(syns.iter().map(|s| (s.clone(), SYNONYM_WEIGHT)));
            }
            // Two-word phrases of the synonym table ("look up", "pull request").
            if let Some(next) = words.get(i + 1)
                && let Some(syns) = tables.synonyms.get(&format!("{w} {next}"))
            {
                weighted.extend(syns.iter().map(|s| (s.clone(), SYNONYM_WEIGHT)));
            }
        }
        for run in cjk_runs(query) {
            let mut en = Vec::new();
            translate(&run, &mut en);
            for t in en {
                if let Some(syns) = tables.synonyms.get(&t) {
                    weighted.extend(
                        syns.iter()
                            .map(|s| (s.clone(), GLOSSARY_WEIGHT * SYNONYM_WEIGHT)),
                    );
                }
                weighted.push((t, GLOSSARY_WEIGHT));
            }
        }
        let mut out: Vec<(u32, f32)> = Vec::new();
        for (term, weight) in weighted {
            let Some(&id) = self.vocab.get(&term) else {
                continue;
            };
            match out.iter_mut().find(|(i, _)| *i == id) {
                Some(entry) => entry.1 = entry.1.max(weight),
                None => out.push((id, weight)),
            }
        }
        out
    }

    /// The `limit` best tools for `query`, best first; ties go to the earlier tool.
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        if limit == 0 || self.len == 0 {
            return Vec::new();
        }
        let mut scratch = self
            .scratch
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop()
            .unwrap_or_default();
        if scratch.scores.len() != self.len {
            scratch.scores = vec![0.0; self.len];
        }
        let hits = self.search_with(query, limit, &mut scratch);
        self.scratch
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(scratch);
        hits
    }

    fn search_with(&self, query: &str, limit: usize, scratch: &mut Scratch) -> Vec<SearchHit> {
        let Scratch { scores, touched } = scratch;
        touched.clear();
        for (id, weight) in self.query_terms(query) {
            let idf = self.idf[id as usize] * weight;
            for p in &self.postings[id as usize] {
                let s = &mut scores[p.doc as usize];
                if *s == 0.0 {
                    touched.push(p.doc);
                }
                *s += idf * p.value;
            }
        }
        // Exact names: the whole query, and each identifier-like word in it.
        let whole = name_key(query);
        let mut exact_found = false;
        let bump = |doc: u32, bonus: f32, scores: &mut Vec<f32>, touched: &mut Vec<u32>| {
            let s = &mut scores[doc as usize];
            if *s == 0.0 {
                touched.push(doc);
            }
            // Exact bonuses do not stack: keep the larger one, plus the lexical score.
            if *s < bonus {
                *s += bonus;
            }
        };
        if let Some(docs) = self.names.get(&whole) {
            for &(doc, rank) in docs {
                bump(doc, EXACT_BONUS * f32::from(rank), scores, touched);
            }
            exact_found = true;
        }
        for word in query.split_whitespace() {
            let identifier =
                word.contains(['_', '-']) || word.chars().skip(1).any(char::is_uppercase);
            if !identifier {
                continue;
            }
            let key = name_key(word);
            if key == whole {
                continue;
            }
            if let Some(docs) = self.names.get(&key) {
                for &(doc, rank) in docs {
                    bump(doc, EXACT_BONUS * f32::from(rank) * 0.9, scores, touched);
                }
                exact_found = true;
            }
        }
        // Near-exact: the whole query within one or two edits of a candidate's name.
        if !exact_found && whole.len() >= 5 {
            let limit_edits = if whole.len() >= 12 { 2 } else { 1 };
            let candidates = top(scores, touched, NEAR_CANDIDATES);
            for hit in candidates {
                let keys = &self.doc_keys[hit.doc];
                let near = keys.iter().any(|k| {
                    k.len() >= 5
                        && edit_distance(whole.as_bytes(), k.as_bytes(), limit_edits) <= limit_edits
                });
                if near {
                    scores[hit.doc] += NEAR_BONUS;
                }
            }
        }
        let hits = top(scores, touched, limit);
        for &doc in touched.iter() {
            scores[doc as usize] = 0.0;
        }
        hits
    }
}

/// The `limit` best of `touched`, best first, ties by document order.
fn top(scores: &[f32], touched: &[u32], limit: usize) -> Vec<SearchHit> {
    let mut best: Vec<SearchHit> = Vec::with_capacity(limit + 1);
    for &doc in touched {
        let score = scores[doc as usize];
        if score <= 0.0 {
            continue;
        }
        let doc = doc as usize;
        let better = |h: &SearchHit| score > h.score || (score == h.score && doc < h.doc);
        if best.len() == limit && !best.last().is_some_and(&better) {
            continue;
        }
        let pos = best.iter().position(better).unwrap_or(best.len());
        best.insert(pos, SearchHit { doc, score });
        best.truncate(limit);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(name: &str, description: &str) -> IndexEntry {
        IndexEntry {
            name: name.to_owned(),
            description: description.to_owned(),
            input_schema: Map::new(),
        }
    }

    fn names(index: &ToolIndex, entries: &[IndexEntry], query: &str) -> Vec<String> {
        index
            .search(query, 5)
            .into_iter()
            .map(|h| entries[h.doc].name.clone())
            .collect()
    }

    fn catalog() -> Vec<IndexEntry> {
        let mut entries = vec![
            entry("read_file", "Read a file."),
            entry(
                "mcp__fs__read_multiple_files",
                "Read the contents of multiple files at once. Reading many files: file contents, file paths, file reading, read files.",
            ),
            entry(
                "mcp__github__create_issue",
                "Create a new issue in a GitHub repository",
            ),
            entry(
                "mcp__github__delete_file",
                "Delete a file from a GitHub repository",
            ),
            entry("mcp__tasks__schedule_wakeup", "安排一次未来的模型回合"),
            entry("mcp__tasks__notify_user", "向用户发一条系统通知"),
        ];
        let mut with_params = entry("mcp__maps__geocode", "Convert an address into coordinates");
        with_params.input_schema =
            json!({"properties": {"address": {"description": "street address to look up"}}})
                .as_object()
                .cloned()
                .unwrap_or_default();
        entries.push(with_params);
        entries
    }

    #[test]
    fn exact_name_ranks_first_even_when_others_say_it_more_often() {
        let entries = catalog();
        let index = ToolIndex::new(&entries);
        assert_eq!(names(&index, &entries, "read_file")[0], "read_file");
        assert_eq!(names(&index, &entries, "read file")[0], "read_file");
        assert_eq!(names(&index, &entries, "readFile")[0], "read_file");
        assert_eq!(
            names(&index, &entries, "mcp__github__create_issue")[0],
            "mcp__github__create_issue"
        );
        assert_eq!(
            names(&index, &entries, "create_issue")[0],
            "mcp__github__create_issue"
        );
    }

    #[test]
    fn near_exact_name_ranks_first() {
        let entries = catalog();
        let index = ToolIndex::new(&entries);
        assert_eq!(names(&index, &entries, "read_fiel")[0], "read_file");
    }

    #[test]
    fn synonyms_and_glossary_reach_the_tool() {
        let entries = catalog();
        let index = ToolIndex::new(&entries);
        assert_eq!(
            names(&index, &entries, "remove a file from github")[0],
            "mcp__github__delete_file"
        );
        assert_eq!(
            names(&index, &entries, "提醒用户，发通知")[0],
            "mcp__tasks__notify_user"
        );
        assert_eq!(
            names(&index, &entries, "安排未来的回合")[0],
            "mcp__tasks__schedule_wakeup"
        );
        assert_eq!(
            names(&index, &entries, "在 GitHub 仓库创建问题")[0],
            "mcp__github__create_issue"
        );
        assert_eq!(
            names(&index, &entries, "street address lookup")[0],
            "mcp__maps__geocode"
        );
    }

    #[test]
    fn scores_are_reset_between_queries() {
        let entries = catalog();
        let index = ToolIndex::new(&entries);
        let first = index.search("github issue", 5);
        let again = index.search("github issue", 5);
        assert_eq!(first, again);
        assert!(index.search("zzzz-nothing", 5).is_empty());
    }
}
