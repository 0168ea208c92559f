//! The audit log (`[audit]`): one JSON line per tool call, written by the dispatcher's
//! [`AuditSink`] hook, so every front end's calls are in it.
//!
//! A line never holds argument values unless `arguments = true`: only the SHA-256 of the
//! arguments' canonical JSON (keys sorted, no spaces), which tells two calls with the same
//! arguments apart from others without keeping what they said. Lines are written whole by one
//! writer behind a mutex, to a file opened for appending with mode 0600 (its folder is
//! created, mode 0700), rotated by size (`audit.jsonl` → `audit.jsonl.1` → …). A write that
//! fails never fails the call: it is logged once as a warning, and every later call tries
//! again (the disk may come back).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use toolgate_config::{AuditConfig, ConfigError};
use toolgate_core::{AuditDecision, AuditRecord, AuditSink, canonical_json, civil_from_days};

/// The audit log: an [`AuditSink`] that writes JSON lines to a rotated file or stdout.
#[derive(Debug)]
pub struct AuditLog {
    target: Target,
    /// Whether lines carry argument values.
    arguments: bool,
    max_bytes: u64,
    keep: usize,
    state: Mutex<FileState>,
}

#[derive(Debug)]
enum Target {
    File(PathBuf),
    Stdout,
}

/// The open file and what the writer knows of it; only touched under the mutex.
#[derive(Debug, Default)]
struct FileState {
    file: Option<fs_err::File>,
    /// Bytes in the file now.
    size: u64,
    /// Whether the last write failed (and was reported).
    failing: bool,
}

impl AuditLog {
    /// The log `config` asks for; `None` when `path` is unset. Nothing is opened yet: the
    /// file is created with the first line, so commands that run no tool leave no file.
    pub fn from_config(config: &AuditConfig) -> Result<Option<Self>, ConfigError> {
        let Some(path) = &config.path else {
            return Ok(None);
        };
        let target = if config.writes_stdout() {
            Target::Stdout
        } else if path.is_absolute() {
            Target::File(path.clone())
        } else {
            return Err(ConfigError::Invalid(format!(
                "audit.path = \"{}\" is relative; give an absolute path (or one starting with `~/`), e.g. \"~/.local/state/toolgate/audit.jsonl\", or \"-\" for stdout",
                path.display()
            )));
        };
        if config.max_bytes == 0 {
            return Err(ConfigError::Invalid(
                "audit.max_bytes = 0 would rotate on every line; use a size in bytes such as 104857600 (100 MiB, the default)".to_owned(),
            ));
        }
        Ok(Some(Self {
            target,
            arguments: config.arguments,
            max_bytes: config.max_bytes,
            keep: config.keep,
            state: Mutex::default(),
        }))
    }

    /// The file the log is written to; `None` for stdout.
    pub fn path(&self) -> Option<&Path> {
        match &self.target {
            Target::File(path) => Some(path),
            Target::Stdout => None,
        }
    }

    /// The JSON line (with its newline) for `record`, written at `time`.
    fn line(&self, record: &AuditRecord<'_>, time: SystemTime) -> String {
        let identity = record.session.identity();
        let (rule, source, answer) = match record.decision {
            AuditDecision::Unchecked => (None, None, None),
            AuditDecision::Allowed { rule, source } | AuditDecision::Denied { rule, source } => {
                (rule.as_deref(), source.as_deref(), None)
            }
            AuditDecision::Asked {
                rule,
                source,
                answer,
            } => (rule.as_deref(), source.as_deref(), Some(answer.as_str())),
        };
        let line = Line {
            time: rfc3339(time),
            session: record.session.id(),
            client: record.session.client_name(),
            subject: identity.map(|i| i.subject.as_str()),
            issuer: identity.and_then(|i| i.issuer.as_deref()),
            tool: record.called,
            resolved: record.tool,
            args_sha256: record.args.map(digest),
            args: record.args.filter(|_| self.arguments),
            decision: record.decision.as_str(),
            rule,
            // A rule of the user's own layers has no tightening label.
            rule_source: rule.map(|_| source.unwrap_or("config")),
            answer,
            outcome: record.outcome.as_str(),
            duration_ms: u64::try_from(record.duration.as_millis()).unwrap_or(u64::MAX),
            result_bytes: record.result.bytes,
            spilled: record.result.spilled,
            result_bytes_before_budget: record.result.bytes_before_budget,
        };
        let mut text = serde_json::to_string(&line).unwrap_or_else(|e| {
            format!("{{\"error\":\"this audit line could not be encoded: {e}\"}}")
        });
        text.push('\n');
        text
    }

    /// Writes one whole line: rotates first when it would not fit.
    fn write(&self, line: &[u8]) {
        let path = match &self.target {
            Target::Stdout => {
                // The stdout lock keeps a line whole against other writers of stdout.
                let result = std::io::stdout().lock().write_all(line);
                let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                report(&mut state, Path::new("stdout"), result);
                return;
            }
            Target::File(path) => path,
        };
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let result = self.append(&mut state, path, line);
        if result.is_err() {
            // Open it afresh next time: the folder may have been replaced.
            state.file = None;
        }
        report(&mut state, path, result);
    }

    fn append(&self, state: &mut FileState, path: &Path, line: &[u8]) -> std::io::Result<()> {
        if state.file.is_none() {
            let (file, size) = open(path)?;
            state.file = Some(file);
            state.size = size;
        }
        let len = line.len() as u64;
        if state.size > 0 && state.size + len > self.max_bytes {
            state.file = None;
            self.rotate(path)?;
            let (file, size) = open(path)?;
            state.file = Some(file);
            state.size = size;
        }
        if let Some(file) = &mut state.file {
            file.write_all(line)?;
            state.size += len;
        }
        Ok(())
    }

    /// `path` → `path.1` → … → `path.{keep}`; the oldest is replaced. With `keep = 0` the
    /// file is removed.
    fn rotate(&self, path: &Path) -> std::io::Result<()> {
        let numbered = |n: usize| {
            let mut name = path.as_os_str().to_owned();
            name.push(format!(".{n}"));
            PathBuf::from(name)
        };
        let ignore_missing = |result: std::io::Result<()>| match result {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        };
        if self.keep == 0 {
            return ignore_missing(fs_err::remove_file(path));
        }
        for n in (1..self.keep).rev() {
            ignore_missing(fs_err::rename(numbered(n), numbered(n + 1)))?;
        }
        ignore_missing(fs_err::rename(path, numbered(1)))
    }
}

impl AuditSink for AuditLog {
    fn record(&self, record: &AuditRecord<'_>) {
        let line = self.line(record, SystemTime::now());
        self.write(line.as_bytes());
    }
}

/// Warns once when writing starts to fail, and says so when it works again.
fn report(state: &mut FileState, path: &Path, result: std::io::Result<()>) {
    match result {
        Err(e) if !state.failing => {
            state.failing = true;
            tracing::warn!(
                path = %path.display(),
                error = %e,
                "cannot write the audit log; calls go on unrecorded until it can be written again (check audit.path)"
            );
        }
        Err(_) => {}
        Ok(()) if state.failing => {
            state.failing = false;
            tracing::info!(path = %path.display(), "the audit log can be written again");
        }
        Ok(()) => {}
    }
}

/// Opens `path` for appending (mode 0600, its folder created with mode 0700), with its size.
fn open(path: &Path) -> std::io::Result<(fs_err::File, u64)> {
    use fs_err::os::unix::fs::OpenOptionsExt as _;
    use std::os::unix::fs::DirBuilderExt as _;
    if let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
        && !parent.is_dir()
    {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(|e| {
                std::io::Error::new(e.kind(), format!("creating `{}`: {e}", parent.display()))
            })?;
    }
    let file = fs_err::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)?;
    let size = file.metadata()?.len();
    Ok((file, size))
}

/// One line of the audit log, in this field order.
#[derive(Serialize)]
struct Line<'a> {
    time: String,
    session: &'a str,
    client: Option<&'a str>,
    subject: Option<&'a str>,
    issuer: Option<&'a str>,
    tool: &'a str,
    resolved: Option<&'a str>,
    args_sha256: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<&'a Value>,
    decision: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule_source: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    answer: Option<&'a str>,
    outcome: &'a str,
    duration_ms: u64,
    result_bytes: u64,
    spilled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    result_bytes_before_budget: Option<u64>,
}

/// SHA-256, in hex, of `args` as canonical JSON.
pub fn digest(args: &Value) -> String {
    let mut text = String::new();
    canonical_json(args, &mut text);
    let hash = Sha256::digest(text.as_bytes());
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// `2026-12-03T00:51:07.123Z`: RFC 3339 in UTC, milliseconds.
fn rfc3339(time: SystemTime) -> String {
    let since = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = since.as_secs();
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let t = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        t / 3600,
        t / 60 % 60,
        t % 60,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    #[test]
    fn times_are_rfc3339_utc_with_milliseconds() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_764_722_467_123);
        assert_eq!(rfc3339(at), "2025-12-03T00:41:07.123Z");
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn the_digest_does_not_depend_on_key_order() {
        let a: Value =
            serde_json::from_str(r#"{"b": 1, "a": {"y": [1, "x"], "x": null}}"#).unwrap();
        let b: Value =
            serde_json::from_str(r#"{"a": {"x": null, "y": [1, "x"]}, "b": 1}"#).unwrap();
        assert_eq!(digest(&a), digest(&b));
        assert_ne!(digest(&a), digest(&json!({"b": 2})));
        let mut text = String::new();
        canonical_json(&a, &mut text);
        assert_eq!(text, r#"{"a":{"x":null,"y":[1,"x"]},"b":1}"#);
        assert_eq!(digest(&a).len(), 64);
    }

    #[test]
    fn relative_paths_and_a_zero_size_are_refused() {
        let config = |path: &str| AuditConfig {
            path: Some(path.into()),
            ..AuditConfig::default()
        };
        let err = AuditLog::from_config(&config("audit.jsonl"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("relative") && err.contains("~/"), "{err}");
        assert!(
            AuditLog::from_config(&config("-"))
                .unwrap()
                .unwrap()
                .path()
                .is_none()
        );
        let zero = AuditConfig {
            max_bytes: 0,
            ..config("/tmp/a.jsonl")
        };
        assert!(AuditLog::from_config(&zero).is_err());
        assert!(
            AuditLog::from_config(&AuditConfig::default())
                .unwrap()
                .is_none()
        );
    }
}
