//! Transcripts: one JSONL file per session in the project's sessions folder (see
//! [`crate::store`]), appended as the conversation grows, so a session can be resumed
//! (`--resume ID`) after an exit or a crash.
//!
//! Records, one per line: `session` (first: id, provider, model), `message` (with the
//! spill files its results created), `unmasked` (tools a strict provider must keep seeing),
//! `usage`, and `compaction` (the whole conversation after a compaction; earlier messages
//! no longer count).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toolgate_providers::{Message, Usage};

use crate::store;

/// One line of a transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// The header.
    Session {
        /// Format version (1).
        version: u32,
        /// Session id (the file name without `.jsonl`).
        id: String,
        /// Provider name.
        provider: String,
        /// Model.
        model: String,
        /// Seconds since the Unix epoch.
        created: u64,
    },
    /// A message appended to the conversation.
    Message {
        /// The message.
        message: Message,
        /// Spill files created by this message's tool results.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        spills: Vec<PathBuf>,
    },
    /// Tools unmasked so far (strict providers keep them in the array).
    Unmasked {
        /// Names.
        names: Vec<String>,
    },
    /// Tokens of one model request.
    Usage {
        /// The counts.
        usage: Usage,
    },
    /// The conversation after a compaction.
    Compaction {
        /// Every live message.
        messages: Vec<Message>,
        /// Spill files deleted because nothing live referenced them any more.
        #[serde(default)]
        deleted: Vec<PathBuf>,
    },
}

/// A transcript that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TranscriptError {
    /// No session of that id.
    #[error(
        "no session `{id}` in {dir}; list them with `ls {dir}` or start a new one without --resume"
    )]
    NotFound {
        /// The id asked for.
        id: String,
        /// The folder searched.
        dir: String,
    },
    /// The id has characters a session id never has.
    #[error(
        "`{0}` is not a session id (letters, digits, `-` and `_` only); use the id `toolgate run` printed (the transcript's file name without .jsonl), or `last`"
    )]
    BadId(String),
    /// Reading or writing failed.
    #[error("transcript {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not a record.
    #[error(
        "transcript {path} line {line} is not a transcript record ({message}); move the file away and start a new session"
    )]
    Corrupt {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// Why.
        message: String,
    },
}

/// An open transcript, appended to as the session goes.
#[derive(Debug)]
pub struct Transcript {
    id: String,
    path: PathBuf,
    file: fs_err::File,
}

/// What a transcript says about a session, read back.
#[derive(Debug, Clone, Default)]
pub struct Restored {
    /// The live messages.
    pub messages: Vec<Message>,
    /// Spill files created by the session and not deleted.
    pub spills: Vec<PathBuf>,
    /// Unmasked tools.
    pub unmasked: Vec<String>,
    /// Token totals.
    pub usage: Usage,
    /// Provider named in the header.
    pub provider: String,
    /// Model named in the header.
    pub model: String,
}

impl Transcript {
    /// Starts a new transcript in `dir` with a fresh id.
    pub fn create(dir: &Path, provider: &str, model: &str) -> Result<Self, TranscriptError> {
        let io = |path: &Path| {
            let path = path.display().to_string();
            move |source| TranscriptError::Io { path, source }
        };
        store::prepare(dir).map_err(io(dir))?;
        let (id, created, created_ms) = new_id();
        let path = dir.join(format!("{id}.jsonl"));
        let file = store::open_private(&path, store::New::Yes).map_err(io(&path))?;
        store::remember(dir, &id, created_ms).map_err(io(dir))?;
        let mut transcript = Self {
            id: id.clone(),
            path,
            file,
        };
        transcript.append(&Record::Session {
            version: 1,
            id,
            provider: provider.to_owned(),
            model: model.to_owned(),
            created,
        })?;
        Ok(transcript)
    }

    /// Opens session `id` (or `last`, the newest) in `dir` for appending and reads it back.
    pub fn open(dir: &Path, id: &str) -> Result<(Self, Restored), TranscriptError> {
        let id = if id == "last" {
            store::newest(dir).ok_or_else(|| TranscriptError::NotFound {
                id: id.to_owned(),
                dir: dir.display().to_string(),
            })?
        } else {
            id.to_owned()
        };
        if !store::valid_id(&id) {
            return Err(TranscriptError::BadId(id));
        }
        let path = dir.join(format!("{id}.jsonl"));
        let shown = path.display().to_string();
        let text = match fs_err::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(TranscriptError::NotFound {
                    id,
                    dir: dir.display().to_string(),
                });
            }
            Err(source) => {
                return Err(TranscriptError::Io {
                    path: shown,
                    source,
                });
            }
        };
        let restored = restore(&text, &shown)?;
        let file =
            store::open_private(&path, store::New::No).map_err(|source| TranscriptError::Io {
                path: shown.clone(),
                source,
            })?;
        Ok((Self { id, path, file }, restored))
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record and flushes it, so a crash loses at most the line being written.
    pub fn append(&mut self, record: &Record) -> Result<(), TranscriptError> {
        let mut line = serde_json::to_vec(record).map_err(|e| TranscriptError::Io {
            path: self.path.display().to_string(),
            source: std::io::Error::other(e),
        })?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .and_then(|()| self.file.flush())
            .map_err(|source| TranscriptError::Io {
                path: self.path.display().to_string(),
                source,
            })
    }
}

fn restore(text: &str, shown: &str) -> Result<Restored, TranscriptError> {
    let mut restored = Restored::default();
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record: Record = match serde_json::from_str(line) {
            Ok(r) => r,
            // A last line cut by a crash: the rest is whole.
            Err(e) if i + 1 == lines.len() && !text.ends_with('\n') => {
                tracing::warn!(%e, "ignoring the unfinished last line of {shown}");
                break;
            }
            Err(e) => {
                return Err(TranscriptError::Corrupt {
                    path: shown.to_owned(),
                    line: i + 1,
                    message: e.to_string(),
                });
            }
        };
        match record {
            Record::Session {
                provider, model, ..
            } => {
                restored.provider = provider;
                restored.model = model;
            }
            Record::Message { message, spills } => {
                restored.messages.push(message);
                restored.spills.extend(spills);
            }
            Record::Unmasked { names } => restored.unmasked = names,
            Record::Usage { usage } => restored.usage += usage,
            Record::Compaction { messages, deleted } => {
                restored.messages = messages;
                restored.spills.retain(|p| !deleted.contains(p));
            }
        }
    }
    Ok(restored)
}

/// `YYYYMMDD-HHMMSS-xxxxxx` in UTC, the epoch seconds and milliseconds.
fn new_id() -> (String, u64, u64) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs();
    let (y, m, d) = toolgate_core::civil_from_days((secs / 86_400) as i64);
    let t = secs % 86_400;
    let salt = (u64::from(now.subsec_nanos()) ^ (u64::from(std::process::id()) << 20)) % 0x100_0000;
    (
        format!(
            "{y:04}{m:02}{d:02}-{:02}{:02}{:02}-{salt:06x}",
            t / 3600,
            t / 60 % 60,
            t % 60
        ),
        secs,
        u64::try_from(now.as_millis()).unwrap_or(u64::MAX),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transcript_reads_back_with_compaction_and_a_cut_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = Transcript::create(dir.path(), "openai", "m").unwrap();
        t.append(&Record::Message {
            message: Message::user("one"),
            spills: vec!["/s/a.txt".into()],
        })
        .unwrap();
        t.append(&Record::Compaction {
            messages: vec![Message::user("summary")],
            deleted: vec!["/s/a.txt".into()],
        })
        .unwrap();
        t.append(&Record::Message {
            message: Message::assistant("two"),
            spills: vec![],
        })
        .unwrap();
        let path = t.path().to_owned();
        let id = t.id().to_owned();
        drop(t);
        let mut text = fs_err::read_to_string(&path).unwrap();
        text.push_str("{\"type\":\"mess");
        fs_err::write(&path, text).unwrap();
        let (_, restored) = Transcript::open(dir.path(), &id).unwrap();
        assert_eq!(
            restored.messages,
            vec![Message::user("summary"), Message::assistant("two")]
        );
        assert!(restored.spills.is_empty());
        assert_eq!(restored.provider, "openai");
        let (again, _) = Transcript::open(dir.path(), "last").unwrap();
        assert_eq!(again.id(), id);
    }

    #[test]
    fn ids_that_could_leave_the_folder_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for bad in ["../x", "a/b", ""] {
            assert!(matches!(
                Transcript::open(dir.path(), bad),
                Err(TranscriptError::BadId(_))
            ));
        }
        assert!(matches!(
            Transcript::open(dir.path(), "nope"),
            Err(TranscriptError::NotFound { .. })
        ));
    }
}
