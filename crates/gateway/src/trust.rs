//! Trust for MCP servers defined by project files (SPEC "Security model"; issue 12).
//!
//! A repository can ship `.mcp.json`, `.claude/settings.json` or `.toolgate/config.toml`
//! with a server whose command is anything at all; a model allowed to write files could
//! write one too. Such a server starts only after the user ran `toolgate mcp trust`, which
//! records, in the user's config folder, the project, the server's name and a SHA-256
//! fingerprint of how it is started (command, args, env and working folder; or URL, headers
//! and token variable). A changed command is a different fingerprint, so it needs trusting
//! again. Servers from user-level files (`~/.codex/config.toml`, `~/.claude/settings.json`,
//! the user's toolgate config, an explicit `--config FILE`) need no trust.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::{ServerSpec, Transport};
use crate::import::Discovered;

/// Whether a server may start as far as trust goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Trust {
    /// Defined in a user-level file: needs no trust.
    User,
    /// Defined (or changed) by a project file, and trusted with its current fingerprint.
    Trusted,
    /// Defined (or changed) by a project file, and not trusted (or trusted with another
    /// command): not started.
    Untrusted,
}

impl Trust {
    /// Whether the server may be started.
    pub fn allows_start(self) -> bool {
        !matches!(self, Self::Untrusted)
    }

    /// Whether a project file defined or changed the server.
    pub fn is_project(self) -> bool {
        !matches!(self, Self::User)
    }
}

/// The fingerprint of how `spec` is started: `sha256:` and 64 hex digits.
pub fn fingerprint(spec: &ServerSpec) -> String {
    let canonical = match &spec.transport {
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
        } => serde_json::json!({
            "http": { "url": url, "headers": headers, "bearer_token_env": bearer_token_env },
        }),
        Transport::Invalid(reason) => serde_json::json!({ "invalid": reason }),
    };
    let digest = Sha256::digest(canonical.to_string().as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// One trusted server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    project: PathBuf,
    name: String,
    fingerprint: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    trusted: Vec<Entry>,
}

/// The trust records, kept in the user's config folder (`trusted_servers.toml` beside
/// `config.toml`).
#[derive(Debug, Clone, Default)]
pub struct TrustStore {
    path: Option<PathBuf>,
    /// (project, name) → fingerprint.
    entries: BTreeMap<(PathBuf, String), String>,
}

/// A trust file that could not be read or written.
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

    /// The records in `path` (none when it does not exist).
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
            store
                .entries
                .insert((entry.project, entry.name), entry.fingerprint);
        }
        Ok(store)
    }

    /// Whether `spec` (defined by the project at `project`) is trusted as it is now.
    pub fn is_trusted(&self, project: &Path, spec: &ServerSpec) -> bool {
        self.entries
            .get(&(project.to_path_buf(), spec.name.clone()))
            .is_some_and(|f| *f == fingerprint(spec))
    }

    /// Records `spec` (defined by the project at `project`) as trusted.
    pub fn trust(&mut self, project: &Path, spec: &ServerSpec) {
        self.entries.insert(
            (project.to_path_buf(), spec.name.clone()),
            fingerprint(spec),
        );
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
                .map(|((project, name), fingerprint)| Entry {
                    project: project.clone(),
                    name: name.clone(),
                    fingerprint: fingerprint.clone(),
                })
                .collect(),
        };
        let body = toml::to_string(&file).map_err(|e| TrustError {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        let text = format!(
            "# MCP servers from project files that the user trusted (`toolgate mcp trust`).\n# A server whose command, args, env or URL change needs trusting again.\n{body}"
        );
        if let Some(dir) = path.parent() {
            fs_err::create_dir_all(dir).map_err(err)?;
        }
        let tmp = path.with_extension("toml.tmp");
        fs_err::write(&tmp, text).map_err(err)?;
        fs_err::rename(&tmp, path).map_err(err)
    }

    /// Marks each project-defined server of `discovered` trusted or untrusted.
    pub fn apply(&self, project: &Path, discovered: &mut Discovered) {
        for spec in &mut discovered.servers {
            if spec.trust.is_project() {
                spec.trust = if self.is_trusted(project, spec) {
                    Trust::Trusted
                } else {
                    Trust::Untrusted
                };
            }
        }
    }
}

/// The command that trusts `name`, for messages.
pub fn trust_command(name: &str) -> String {
    format!("toolgate mcp trust {name}")
}
