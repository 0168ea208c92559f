//! Plain BM25, the baseline: one text field (name + description + parameter names), lower
//! case, split on anything that is not a letter or digit (so `snake_case` splits, camelCase
//! does not), English stop words removed, no stemming, no synonyms, CJK characters as
//! single-character tokens. k1 = 1.2, b = 0.75. Postings and a reusable score buffer, like
//! the real index, so the latency comparison is fair.

use std::collections::HashMap;

use toolgate_core::disclosure::IndexEntry;

const STOP: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "into", "is", "it", "of",
    "on", "or", "the", "this", "to", "with",
];

fn tokens(text: &str, out: &mut Vec<String>) {
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut Vec<String>| {
        if !word.is_empty() {
            let w = word.to_lowercase();
            if !STOP.contains(&w.as_str()) {
                out.push(w);
            }
            word.clear();
        }
    };
    for c in text.chars() {
        let cjk = matches!(c as u32, 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF);
        if cjk {
            flush(&mut word, out);
            out.push(c.to_string());
        } else if c.is_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, out);
        }
    }
    flush(&mut word, out);
}

pub struct Bm25 {
    vocab: HashMap<String, usize>,
    postings: Vec<Vec<(u32, f32)>>,
    idf: Vec<f32>,
    scores: Vec<f32>,
    touched: Vec<u32>,
}

impl Bm25 {
    pub fn new(entries: &[IndexEntry]) -> Self {
        let (k1, b) = (1.2f32, 0.75f32);
        let mut vocab: HashMap<String, usize> = HashMap::new();
        let mut docs: Vec<(HashMap<usize, f32>, f32)> = Vec::new();
        let mut buf = Vec::new();
        for e in entries {
            let mut text = format!("{} {}", e.name, e.description);
            if let Some(serde_json::Value::Object(props)) = e.input_schema.get("properties") {
                for k in props.keys() {
                    text.push(' ');
                    text.push_str(k);
                }
            }
            buf.clear();
            tokens(&text, &mut buf);
            let mut tf: HashMap<usize, f32> = HashMap::new();
            for t in buf.drain(..) {
                let n = vocab.len();
                let id = *vocab.entry(t).or_insert(n);
                *tf.entry(id).or_default() += 1.0;
            }
            let len: f32 = tf.values().sum();
            docs.push((tf, len));
        }
        let n = docs.len() as f32;
        let avg = docs.iter().map(|d| d.1).sum::<f32>() / n.max(1.0);
        let mut postings = vec![Vec::new(); vocab.len()];
        for (doc, (tf, len)) in docs.iter().enumerate() {
            for (&id, &f) in tf {
                let v = f * (k1 + 1.0) / (f + k1 * (1.0 - b + b * len / avg));
                postings[id].push((doc as u32, v));
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
            vocab,
            postings,
            idf,
            scores: vec![0.0; docs.len()],
            touched: Vec::new(),
        }
    }

    pub fn search(&mut self, query: &str, limit: usize) -> Vec<usize> {
        let mut q = Vec::new();
        tokens(query, &mut q);
        q.sort();
        q.dedup();
        self.touched.clear();
        for t in &q {
            let Some(&id) = self.vocab.get(t) else {
                continue;
            };
            for &(doc, v) in &self.postings[id] {
                let s = &mut self.scores[doc as usize];
                if *s == 0.0 {
                    self.touched.push(doc);
                }
                *s += self.idf[id] * v;
            }
        }
        let mut best: Vec<(f32, u32)> = self
            .touched
            .iter()
            .map(|&d| (self.scores[d as usize], d))
            .collect();
        best.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        best.truncate(limit);
        for &d in &self.touched {
            self.scores[d as usize] = 0.0;
        }
        best.into_iter().map(|(_, d)| d as usize).collect()
    }
}
