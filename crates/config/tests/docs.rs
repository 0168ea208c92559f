//! The documentation's config is real: the reference block in docs/configuration.md is what
//! `toolgate_config::reference()` generates from the config types (every key documented by
//! its field's doc comment) and exactly the built-in defaults, and every TOML example in the
//! README and docs/ loads as the config layer it says it is.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::print_stderr
)]

use std::path::{Path, PathBuf};

use toolgate_config::{Config, Flags, LoadOptions, load};

/// The workspace root (this crate is `crates/config`).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Markdown files users read: README.md and docs/*.md.
fn doc_files() -> Vec<PathBuf> {
    let mut files = vec![repo().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// Every ```toml block of `text`, with the line it starts on.
fn toml_blocks(text: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        match &mut current {
            None if line.trim_start().starts_with("```toml") => {
                current = Some((n + 1, String::new()));
            }
            Some(_) if line.trim_start().starts_with("```") => blocks.extend(current.take()),
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
            }
            None => {}
        }
    }
    blocks
}

/// The reference block: the TOML block right after the `config-reference` marker.
fn reference_block() -> String {
    let text = std::fs::read_to_string(repo().join("docs/configuration.md")).unwrap();
    let at = text
        .find("<!-- config-reference")
        .expect("docs/configuration.md has its `<!-- config-reference -->` marker");
    toml_blocks(&text[at..]).into_iter().next().unwrap().1
}

/// `value` without empty tables (an empty `[mcp_servers]` map is no setting).
fn without_empty_tables(value: toml::Value) -> Option<toml::Value> {
    match value {
        toml::Value::Table(table) => {
            let kept: toml::Table = table
                .into_iter()
                .filter_map(|(k, v)| without_empty_tables(v).map(|v| (k, v)))
                .collect();
            (!kept.is_empty()).then_some(toml::Value::Table(kept))
        }
        other => Some(other),
    }
}

/// Dotted keys and values of every leaf.
fn leaves(prefix: &str, value: &toml::Value, out: &mut Vec<(String, String)>) {
    match value {
        toml::Value::Table(table) => {
            for (k, v) in table {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                leaves(&key, v, out);
            }
        }
        leaf => out.push((prefix.to_owned(), leaf.to_string())),
    }
}

#[test]
fn the_reference_block_is_exactly_the_defaults() {
    let block: toml::Value = toml::from_str(&reference_block())
        .unwrap_or_else(|e| panic!("the reference block is not valid TOML: {e}"));
    let defaults = toml::Value::try_from(Config::default()).unwrap();
    let mut documented = Vec::new();
    leaves("", &without_empty_tables(block).unwrap(), &mut documented);
    let mut real = Vec::new();
    leaves("", &without_empty_tables(defaults).unwrap(), &mut real);
    documented.sort();
    real.sort();
    let wrong: Vec<String> = real
        .iter()
        .filter(|kv| !documented.contains(kv))
        .map(|(k, v)| {
            let shown = documented
                .iter()
                .find(|(dk, _)| dk == k)
                .map_or_else(|| "missing".to_owned(), |(_, dv)| format!("says {dv}"));
            format!("{k} = {v} ({shown})")
        })
        .chain(
            documented
                .iter()
                .filter(|(k, _)| !real.iter().any(|(rk, _)| rk == k))
                .map(|(k, v)| format!("{k} = {v} (not a config key with a default)")),
        )
        .collect();
    assert!(
        wrong.is_empty(),
        "docs/configuration.md's reference block differs from the defaults; fix these lines:\n  {}",
        wrong.join("\n  ")
    );
}

#[test]
fn the_reference_block_is_what_the_config_types_generate() {
    let generated = toolgate_config::reference();
    let block = reference_block();
    if block == generated {
        return;
    }
    if std::env::var_os("UPDATE_DOCS").is_some() {
        let path = repo().join("docs/configuration.md");
        let text = std::fs::read_to_string(&path).unwrap();
        let updated = text.replacen(&block, &generated, 1);
        assert_ne!(
            updated, text,
            "could not find the reference block to replace"
        );
        std::fs::write(&path, updated).unwrap();
        return;
    }
    let (line, (doc, want)) = block
        .lines()
        .chain(std::iter::repeat(""))
        .zip(generated.lines().chain(std::iter::repeat("")))
        .enumerate()
        .find(|(_, (doc, want))| doc != want)
        .unwrap();
    panic!(
        "docs/configuration.md's reference block is not what the config types generate \
         (first difference at line {} of the block):\n  docs:      {doc}\n  generated: {want}\n\
         Regenerate it: `UPDATE_DOCS=1 cargo nextest run --workspace -E 'package(toolgate-config)'`, \
         or paste the output of `toolgate config reference`.",
        line + 1
    );
}

#[test]
fn every_config_key_has_a_doc_comment() {
    let undocumented = toolgate_config::undocumented_keys();
    assert!(
        undocumented.is_empty(),
        "these config keys have no doc comment, so the reference cannot explain them; add a \
         `///` line to each field (its first paragraph is what users read):\n  {}",
        undocumented.join("\n  ")
    );
    // The walk reaches nested tables, maps' entries and unset options.
    let keys = toolgate_config::reference();
    for key in [
        "max_lines = ",
        "# command = ",
        "# client_id = ",
        "# max_retries = ",
        "# http = ",
    ] {
        assert!(
            keys.contains(key),
            "the reference has no `{key}` line:\n{keys}"
        );
    }
}

#[test]
fn every_toml_example_in_the_docs_loads() {
    let mut checked = 0;
    for file in doc_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (line, body) in toml_blocks(&text) {
            let at = format!("{}:{line}", file.display());
            let _: toml::Table =
                toml::from_str(&body).unwrap_or_else(|e| panic!("{at}: not valid TOML: {e}"));
            let first = body.lines().next().unwrap_or_default().trim_start();
            // Other programs' files (Codex's config.toml) only need to be TOML.
            if first.starts_with('#') && first.contains(".codex") {
                continue;
            }
            let project = tempfile::tempdir().unwrap();
            let path = if first.contains(".toolgate/config.toml") && !first.contains("~/") {
                project.path().join(".toolgate/config.toml")
            } else {
                project.path().join("user-config.toml")
            };
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &body).unwrap();
            let options = LoadOptions {
                project_dir: project.path().to_path_buf(),
                user_file: Some(project.path().join("user-config.toml")),
                explicit_file: None,
                use_env: false,
                flags: Flags::default(),
                trust_file: None,
            };
            if let Err(e) = load(&options) {
                panic!("{at}: this example does not load: {e}\n{body}");
            }
            checked += 1;
        }
    }
    // The reference block and the examples of mounting servers, agents and clients at least.
    assert!(checked >= 5, "only {checked} config examples found");
}

/// GitHub's anchor for a heading: lowercase, punctuation dropped, spaces as `-`.
fn anchor_of(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[test]
fn every_link_between_the_docs_leads_to_a_page_and_heading_that_exist() {
    let files = doc_files();
    let anchors = |text: &str| -> Vec<String> {
        let mut found: Vec<String> = text
            .lines()
            .filter(|l| l.starts_with('#') && l.contains("# "))
            .map(|l| anchor_of(l.trim_start_matches('#')))
            .collect();
        for part in text.split("<a id=\"").skip(1) {
            found.extend(part.split('"').next().map(str::to_owned));
        }
        found
    };
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for part in text.split("](").skip(1) {
            let Some(link) = part.split(')').next() else {
                continue;
            };
            if link.starts_with("http") || link.contains(' ') {
                continue;
            }
            let (path, anchor) = link.split_once('#').unwrap_or((link, ""));
            let target = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            checked += 1;
            if !target.exists() {
                broken.push(format!("{}: {link} (no such file)", file.display()));
            } else if !anchor.is_empty()
                && target.extension().is_some_and(|e| e == "md")
                && !anchors(&std::fs::read_to_string(&target).unwrap()).contains(&anchor.to_owned())
            {
                broken.push(format!("{}: {link} (no such heading)", file.display()));
            }
        }
    }
    assert!(checked > 20, "only {checked} links found");
    assert!(
        broken.is_empty(),
        "broken links:\n  {}",
        broken.join("\n  ")
    );
}

#[test]
fn the_readme_stays_short_and_the_user_docs_name_no_internal_documents() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    assert!(
        readme.len() <= 20 * 1024,
        "README.md is {} bytes; move details into docs/ (at most 20 KiB)",
        readme.len()
    );
    for file in doc_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            for word in ["seed 0", "issue 1", "issue 2", "station ", "spec \""] {
                assert!(
                    !lower.contains(word),
                    "{}:{}: `{word}` names an internal document: {line}",
                    file.display(),
                    n + 1
                );
            }
        }
    }
}
