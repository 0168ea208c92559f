//! Trust for MCP servers defined by project files (see docs/security.md).
//!
//! A repository can ship `.mcp.json`, `.claude/settings.json` or `.toolgate/config.toml`
//! with a server whose command is anything at all; a model allowed to write files could
//! write one too. Such a server starts only after the user ran `toolgate mcp trust`, which
//! records, in the user's config folder, the project, the server's name and a SHA-256
//! fingerprint of how it is started (command, args, env and working folder; or URL, headers
//! and token variable) and of every project file its launch runs (`server.sh`, the script
//! named by `node server.js`, the `node_modules/.bin/x` that `npx -y x` would take: see
//! `launch.rs`), with each file's own hash so a change can be named. A changed command or
//! file is a different fingerprint, so it needs trusting again; the check is repeated
//! before every start and restart, not only when toolgate starts. Servers from user-level files (`~/.codex/config.toml`, `~/.claude/settings.json`,
//! the user's toolgate config, an explicit `--config FILE`) need no trust.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::{ServerSpec, Transport};
use crate::import::Discovered;
use crate::launch::{FingerprintError, Launch, hex_digest};
use crate::verdict::{LaunchTrust, Pin, Record, Trust};

/// The fingerprint a trust record holds: `sha256:` over how `spec` is started (command,
/// args, env and cwd; or URL, headers and token variable) and `files`, the per-file hashes
/// of what its launch runs from the project (see [`LaunchTrust::files`]).
pub fn fingerprint(spec: &ServerSpec, files: &BTreeMap<String, String>) -> String {
    let canonical = serde_json::json!({ "launch": launch_json(spec), "files": files });
    hex_digest(&Sha256::digest(canonical.to_string().as_bytes()))
}

/// What records written by earlier versions hold: how the server is started, no files.
fn launch_fingerprint(spec: &ServerSpec) -> String {
    hex_digest(&Sha256::digest(launch_json(spec).to_string().as_bytes()))
}

fn launch_json(spec: &ServerSpec) -> serde_json::Value {
    match &spec.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => serde_json::json!({
            "stdio": { "command": command, "args": args, "env": env, "cwd": cwd },
        }),
        Transport::Http {
            url,
            headers,
            bearer_token_env,
        } => {
            let mut http = serde_json::json!({
                "url": url, "headers": headers, "bearer_token_env": bearer_token_env,
            });
            // The login settings decide where a client secret is sent; absent, the
            // fingerprint is what it was before they existed.
            if !spec.oauth.is_empty() {
                http["oauth"] = serde_json::json!(spec.oauth);
            }
            serde_json::json!({ "http": http })
        }
        Transport::Invalid(reason) => serde_json::json!({ "invalid": reason }),
    }
}

/// One trusted server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    project: PathBuf,
    name: String,
    fingerprint: String,
    /// The per-file hashes the fingerprint covers; absent in records written before the
    /// fingerprint covered files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    files: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    trusted: Vec<Entry>,
}

/// Why a server defined by a project file may not start (the reason a [`LaunchTrust`]
/// keeps, and what `toolgate mcp list` shows).
#[derive(Debug, thiserror::Error)]
pub(crate) enum Untrusted {
    /// No record of it.
    #[error("defined by a project file and not trusted yet")]
    NotYet,
    /// How it is started changed.
    #[error("its command, args, env or working folder changed since it was trusted")]
    LaunchChanged,
    /// Files it runs changed, appeared or went: named, as `describe_changes` says them.
    #[error("{0}")]
    FilesChanged(String),
    /// A record from before the fingerprint covered files, for a server that runs some
    /// (named).
    #[error(
        "it was trusted by an earlier toolgate, whose fingerprint did not cover the project files it runs ({0})"
    )]
    OldRecord(String),
    /// A file it runs cannot be hashed.
    #[error("a file it runs cannot be fingerprinted: {0}")]
    Unfingerprinted(#[source] FingerprintError),
    /// Found untrusted when the server was assembled; the reason as found then.
    #[error("{0}")]
    Recorded(String),
    /// The check itself did not finish (it runs on a blocking thread).
    #[error("its files could not be checked ({0})")]
    Unchecked(#[source] tokio::task::JoinError),
}

// `LaunchTrust` lives in `verdict.rs`, below the server spec that carries it; it is checked
// here, where fingerprints are made.
impl LaunchTrust {
    /// Checks the server's files again (before a start or restart): `Err` says what changed
    /// since it was trusted. Servers that need no trust always pass.
    pub(crate) fn recheck(&self, spec: &ServerSpec) -> Result<(), Untrusted> {
        let Some(pin) = &self.pin else {
            return match &self.untrusted {
                Some(reason) => Err(Untrusted::Recorded(reason.clone())),
                None => Ok(()),
            };
        };
        let current = crate::launch::resolve(&spec.transport, &pin.roots)
            .map_err(Untrusted::Unfingerprinted)?;
        verdict(Some(&pin.record), spec, &current).map(|_| ())
    }
}

/// Whether `launch` (as it is now) matches `record`; `Ok` holds the record to re-check
/// later, `Err` why the server may not start.
fn verdict(
    record: Option<&Record>,
    spec: &ServerSpec,
    launch: &Launch,
) -> Result<Record, Untrusted> {
    let now = fingerprint(spec, &launch.files);
    match record {
        None => Err(Untrusted::NotYet),
        Some(Record {
            fingerprint: old,
            files: None,
        }) => {
            if *old != launch_fingerprint(spec) {
                Err(Untrusted::LaunchChanged)
            } else if launch.files.is_empty() {
                // Nothing it runs lives in the project: the old fingerprint covered it all.
                Ok(Record {
                    fingerprint: now,
                    files: Some(BTreeMap::new()),
                })
            } else {
                Err(Untrusted::OldRecord(name_list(launch.files.keys())))
            }
        }
        Some(Record {
            fingerprint: old,
            files: Some(files),
        }) => {
            if *old == now {
                Ok(Record {
                    fingerprint: now,
                    files: Some(files.clone()),
                })
            } else if fingerprint(spec, files) == *old {
                Err(Untrusted::FilesChanged(describe_changes(
                    files,
                    &launch.files,
                )))
            } else {
                Err(Untrusted::LaunchChanged)
            }
        }
    }
}

/// "`server.sh` changed since it was trusted", "`node_modules/.bin/x` appeared …".
fn describe_changes(before: &BTreeMap<String, String>, now: &BTreeMap<String, String>) -> String {
    let mut parts = Vec::new();
    for (name, hash) in now {
        match before.get(name) {
            Some(old) if old == hash => {}
            Some(_) => parts.push(format!("`{name}` changed")),
            None => parts.push(format!("`{name}` appeared")),
        }
    }
    for name in before.keys().filter(|n| !now.contains_key(*n)) {
        parts.push(format!("`{name}` is gone"));
    }
    let shown = parts.len().min(3);
    let mut text = parts[..shown].join(", ");
    if parts.len() > shown {
        text.push_str(&format!(" and {} more", parts.len() - shown));
    }
    format!("{text} since it was trusted")
}

/// "`a`, `b` and 3 more".
fn name_list<'a>(names: impl Iterator<Item = &'a String>) -> String {
    let names: Vec<String> = names.map(|n| format!("`{n}`")).collect();
    let mut text = names.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > 3 {
        text.push_str(&format!(" and {} more", names.len() - 3));
    }
    text
}

/// The trust records, kept in the user's config folder (`trusted_servers.toml` beside
/// `config.toml`).
#[derive(Debug, Clone, Default)]
pub struct TrustStore {
    path: Option<PathBuf>,
    /// (project, name) → what was trusted.
    entries: BTreeMap<(PathBuf, String), Record>,
}

/// A trust file that could not be read or written, or a server that cannot be trusted.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct TrustError {
    /// The file.
    pub path: PathBuf,
    /// What went wrong, and what to do.
    pub reason: String,
}

impl TrustStore {
    /// `$XDG_CONFIG_HOME/toolgate/trusted_servers.toml` (default `~/.config/…`).
    pub fn default_path() -> Option<PathBuf> {
        toolgate_core::UserDirs::from_env()
            .config()
            .map(|dir| dir.join("toolgate").join("trusted_servers.toml"))
    }

    /// The records in `path` (none when it does not exist). Records written before the
    /// fingerprint covered files load too; see [`TrustStore::check`].
    pub fn load(path: Option<PathBuf>) -> Result<Self, TrustError> {
        let mut store = Self {
            path: path.clone(),
            entries: BTreeMap::new(),
        };
        let Some(path) = path else {
            return Ok(store);
        };
        let text = match fs_err::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(store),
            Err(e) => {
                return Err(TrustError {
                    path,
                    reason: format!("cannot be read: {e}"),
                });
            }
        };
        let file: File = toml::from_str(&text).map_err(|e| TrustError {
            path: path.clone(),
            reason: format!(
                "is not a valid trust file ({}); delete it and run `toolgate mcp trust` again",
                e.message()
            ),
        })?;
        for entry in file.trusted {
            let record = Record {
                fingerprint: entry.fingerprint,
                files: entry.files,
            };
            store.entries.insert((entry.project, entry.name), record);
        }
        Ok(store)
    }

    /// What trust says about `spec`, defined by the project at `project` whose roots are
    /// `roots` (canonical, the project first): the files its launch runs, hashed now, and
    /// whether they and its command are what the user trusted.
    pub fn check(&self, project: &Path, roots: &[PathBuf], spec: &ServerSpec) -> LaunchTrust {
        let current = crate::launch::resolve(&spec.transport, roots);
        let record = self
            .entries
            .get(&(project.to_path_buf(), spec.name.clone()));
        let files = current
            .as_ref()
            .map(|l| l.files.clone())
            .unwrap_or_default();
        let judged = current
            .map_err(Untrusted::Unfingerprinted)
            .and_then(|launch| verdict(record, spec, &launch).map(|record| (record, launch)));
        match judged {
            Ok((record, launch)) => LaunchTrust {
                files,
                untrusted: None,
                protect: launch.protect.into_iter().collect(),
                protect_dirs: launch.protect_dirs.into_iter().collect(),
                pin: Some(Pin {
                    roots: roots.to_vec(),
                    record,
                }),
            },
            Err(reason) => LaunchTrust {
                files,
                untrusted: Some(reason.to_string()),
                ..LaunchTrust::default()
            },
        }
    }

    /// Records `spec` (defined by the project at `project`, with `roots`) as trusted with
    /// the files its launch runs as they are now; returns those files (display name →
    /// hash). Fails when a file cannot be fingerprinted (unreadable, over 1 GiB).
    pub fn trust(
        &mut self,
        project: &Path,
        roots: &[PathBuf],
        spec: &ServerSpec,
    ) -> Result<BTreeMap<String, String>, TrustError> {
        let launch =
            crate::launch::resolve(&spec.transport, roots).map_err(|reason| TrustError {
                path: self.path.clone().unwrap_or_default(),
                reason: format!(
                    "`{}` cannot be trusted: a file it runs cannot be fingerprinted: {reason}",
                    spec.name
                ),
            })?;
        let record = Record {
            fingerprint: fingerprint(spec, &launch.files),
            files: Some(launch.files.clone()),
        };
        self.entries
            .insert((project.to_path_buf(), spec.name.clone()), record);
        Ok(launch.files)
    }

    /// Writes the records back (atomically: a temporary file renamed over the old one).
    pub fn save(&self) -> Result<(), TrustError> {
        let Some(path) = &self.path else {
            return Err(TrustError {
                path: PathBuf::from("trusted_servers.toml"),
                reason: "no user config folder (set HOME or XDG_CONFIG_HOME)".to_owned(),
            });
        };
        let err = |e: std::io::Error| TrustError {
            path: path.clone(),
            reason: format!("cannot be written: {e}"),
        };
        let file = File {
            trusted: self
                .entries
                .iter()
                .map(|((project, name), record)| Entry {
                    project: project.clone(),
                    name: name.clone(),
                    fingerprint: record.fingerprint.clone(),
                    files: record.files.clone(),
                })
                .collect(),
        };
        let body = toml::to_string(&file).map_err(|e| TrustError {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        let text = format!(
            "# MCP servers from project files that the user trusted (`toolgate mcp trust`).\n# A server whose command, args, env or URL change, or any project file it runs\n# (listed under `files`), needs trusting again.\n{body}"
        );
        if let Some(dir) = path.parent() {
            fs_err::create_dir_all(dir).map_err(err)?;
        }
        let tmp = path.with_extension("toml.tmp");
        fs_err::write(&tmp, text).map_err(err)?;
        fs_err::rename(&tmp, path).map_err(err)
    }

    /// Marks each project-defined server of `discovered` trusted or untrusted, recording
    /// what its launch runs ([`ServerSpec::launch`]). `roots` as for [`TrustStore::check`].
    pub fn apply(&self, project: &Path, roots: &[PathBuf], discovered: &mut Discovered) {
        for spec in &mut discovered.servers {
            if spec.trust.is_project() {
                let launch = self.check(project, roots, spec);
                spec.trust = if launch.untrusted.is_none() {
                    Trust::Trusted
                } else {
                    Trust::Untrusted
                };
                spec.launch = Some(launch);
            }
        }
    }
}

/// The command that trusts `name`, for messages.
pub fn trust_command(name: &str) -> String {
    format!("toolgate mcp trust {name}")
}

#[cfg(test)]
mod tests;
