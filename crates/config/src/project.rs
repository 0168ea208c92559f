//! The project layer (`<first root>/.toolgate/config.toml`), which can only tighten.
//!
//! A project file travels with the repository: whoever wrote the repository (or a model
//! that could write files in it) wrote it. So it may add rules and set limits, but not
//! loosen what the user's own layers (user file, `--config`, environment, flags) decide:
//!
//! - `[permissions]`: kept apart from the merged rules; the dispatcher takes, per call, the
//!   stricter of the user's decision and the project's (`Policy::tightened_by`), so a
//!   project `deny = []` or `allow = ["run_shell"]` removes nothing.
//!   `permissions.allow_control_files` may not be set here at all.
//! - `roots`: folders inside the project only; made absolute.
//! - `budget.spill_dir`: inside the project or toolgate's own cache folder, no `..`; made
//!   absolute (and refused at start-up if a symlink is on its way, see
//!   `toolgate_runtime::Runtime`).
//! - `budget.spill_store`: user layers only (it decides where full outputs are copied, and
//!   what read_file fetches from).
//! - `[server]`, every key of it: user layers only (who may connect, how many sessions live,
//!   whether `/metrics` is served are the operator's, not a repository's, to decide).
//! - `[providers]` and `agent.provider`: user layers only (they decide where API keys go).
//! - `[audit]`: user layers only (a repository must not turn the user's audit log off,
//!   send it elsewhere, or choose a file toolgate appends to).
//! - `[rate_limits]` and `[telemetry]`: user layers only (limits protect the user's servers;
//!   traces name every tool call, so the user chooses where they go).
//! - `agent.sessions_dir`: user layers only (it decides where transcripts go and which one
//!   `--resume` reads).
//! - `mcp.import`: a project may turn importing off, not on; `mcp.shared_store` and
//!   `mcp.oauth_credentials_store`: user layers only (tool lists read from the shared store
//!   reach the model; OAuth tokens are written to both).
//! - `skills.enabled`: a project may turn skills off, not on; `skills.roots`: folders
//!   inside the project only (no `..`, no `~`), made absolute — a skill root is readable
//!   by read_file.
//! - `[shell]` process isolation: `sandbox`, `sandbox_network` and `containment` may only
//!   be made stricter than the user's (read-only > workspace-write > off; no network >
//!   network; namespace > auto > process-group); `sandbox_writable` (it widens what a
//!   sandboxed command may write), `env_pass` (it hands toolgate's secrets to commands) and
//!   `sandbox_hide` (it would replace the user's list) may not be set at all. The same
//!   holds for `[mcp] sandbox` and `sandbox_network`, the sandbox of mounted stdio servers.
//! - `[mcp_servers]`: allowed, but each server the project sets or adjusts starts only once
//!   the user trusted it (`toolgate mcp trust`).

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use figment::value::{Dict, Map};
use figment::{Figment, Metadata, Profile, Provider};
use serde::Deserialize;

use toolgate_contain::Setting;
use toolgate_gateway::GatewayConfig;
use toolgate_shell::{SandboxMode, ShellLimits};

use crate::error::ConfigError;
use crate::permissions::PermissionsConfig;

/// The checked project layer.
#[derive(Debug)]
pub(crate) struct ProjectLayer {
    /// The file.
    path: PathBuf,
    /// Its values, minus the permission rules and `mcp.import`, with paths made absolute.
    table: toml::Table,
    /// Its permission rules (tighten-only).
    pub(crate) permissions: PermissionsConfig,
    /// Its `[mcp_servers]` names.
    pub(crate) servers: BTreeSet<String>,
    /// `mcp.import` as the project set it (`None`: not set).
    pub(crate) import: Option<bool>,
    /// `skills.enabled` as the project set it (`None`: not set).
    pub(crate) skills_enabled: Option<bool>,
    /// `[shell]` isolation settings as the project set them (tighten-only).
    pub(crate) isolation: Isolation,
}

/// The project's `shell.sandbox`, `shell.sandbox_network`, `shell.containment`,
/// `mcp.sandbox` and `mcp.sandbox_network`, taken out of the merge: each may only make the
/// user's setting stricter.
#[derive(Debug, Default)]
pub(crate) struct Isolation {
    sandbox: Option<SandboxMode>,
    network: Option<bool>,
    containment: Option<Setting>,
    mcp_sandbox: Option<SandboxMode>,
    mcp_network: Option<bool>,
}

impl Isolation {
    /// The stricter of the user's settings (`user_side`) and the project's, into `shell`
    /// and `mcp`.
    pub(crate) fn apply(
        &self,
        user_side: &Figment,
        shell: &mut ShellLimits,
        mcp: &mut GatewayConfig,
    ) {
        let user = |key: &str| user_side.find_value(key).ok();
        let user_sandbox = |key: &str| {
            user(key)
                .and_then(|v| v.deserialize::<SandboxMode>().ok())
                .unwrap_or_default()
        };
        let user_network = |key: &str| {
            user(key)
                .and_then(|v| v.deserialize::<bool>().ok())
                .unwrap_or(true)
        };
        let tightened = |user: SandboxMode, project: Option<SandboxMode>| match project {
            Some(project) => strictest_sandbox(user, project),
            None => user,
        };
        shell.sandbox = tightened(user_sandbox("shell.sandbox"), self.sandbox);
        shell.sandbox_network =
            user_network("shell.sandbox_network") && self.network.unwrap_or(true);
        mcp.sandbox = tightened(user_sandbox("mcp.sandbox"), self.mcp_sandbox);
        mcp.sandbox_network =
            user_network("mcp.sandbox_network") && self.mcp_network.unwrap_or(true);
        let user_containment = user("shell.containment")
            .and_then(|v| v.deserialize::<Setting>().ok())
            .unwrap_or_default();
        shell.containment = match self.containment {
            Some(project) => strictest_containment(user_containment, project),
            None => user_containment,
        };
    }
}

fn strictest_sandbox(a: SandboxMode, b: SandboxMode) -> SandboxMode {
    let rank = |m: SandboxMode| match m {
        SandboxMode::Off => 0,
        SandboxMode::WorkspaceWrite => 1,
        SandboxMode::ReadOnly => 2,
    };
    if rank(b) > rank(a) { b } else { a }
}

fn strictest_containment(a: Setting, b: Setting) -> Setting {
    let rank = |s: Setting| match s {
        Setting::ProcessGroup => 0,
        Setting::Auto => 1,
        Setting::Namespace => 2,
    };
    if rank(b) > rank(a) { b } else { a }
}

/// Takes the project's `[shell]` and `[mcp]` isolation settings out of `table` (see
/// [`Isolation`]); `shell.sandbox_writable`, `shell.env_pass` and `shell.sandbox_hide` are
/// refused.
fn isolation_rules(table: &mut toml::Table, path: &Path) -> Result<Isolation, ConfigError> {
    let shown = path.display();
    let (mcp_sandbox, mcp_network) = match table.get_mut("mcp").and_then(toml::Value::as_table_mut)
    {
        Some(mcp) => (
            take(mcp, "mcp", "sandbox", path)?,
            take(mcp, "mcp", "sandbox_network", path)?,
        ),
        None => (None, None),
    };
    let Some(shell) = table.get_mut("shell").and_then(toml::Value::as_table_mut) else {
        return Ok(Isolation {
            mcp_sandbox,
            mcp_network,
            ..Isolation::default()
        });
    };
    // A project's list would replace the user's: `sandbox_hide = []` would show what the
    // user hid.
    let widening = [
        (
            "sandbox_writable",
            "it widens what a sandboxed command may write",
        ),
        ("env_pass", "it hands toolgate's secrets to commands"),
        (
            "sandbox_hide",
            "it replaces the user's list of hidden paths",
        ),
    ];
    if let Some((key, why)) = widening.iter().find(|(key, _)| shell.contains_key(*key)) {
        return Err(ConfigError::Invalid(format!(
            "{shown} sets `shell.{key}`, which a project file may not set ({why}); set it in your user config (~/.config/toolgate/config.toml) or with --config FILE instead, or remove it from the project file"
        )));
    }
    Ok(Isolation {
        sandbox: take(shell, "shell", "sandbox", path)?,
        network: take(shell, "shell", "sandbox_network", path)?,
        containment: take(shell, "shell", "containment", path)?,
        mcp_sandbox,
        mcp_network,
    })
}

/// Removes `section.key` from `table` and reads it.
fn take<T: serde::de::DeserializeOwned>(
    table: &mut toml::Table,
    section: &str,
    key: &str,
    path: &Path,
) -> Result<Option<T>, ConfigError> {
    table
        .remove(key)
        .map(|v| {
            T::deserialize(v).map_err(|e| ConfigError::Project {
                path: path.to_path_buf(),
                detail: format!("`{section}.{key}`: {}", e.message()),
                source: e.into(),
            })
        })
        .transpose()
}

impl ProjectLayer {
    /// Reads and checks `<dir>/.toolgate/config.toml`; `None` when there is none.
    pub(crate) fn read(dir: &Path) -> Result<Option<Self>, ConfigError> {
        let path = dir.join(".toolgate").join("config.toml");
        if !path.is_file() {
            return Ok(None);
        }
        let text = fs_err::read_to_string(&path).map_err(|e| ConfigError::Project {
            path: path.clone(),
            detail: format!("cannot be read: {e}"),
            source: e.into(),
        })?;
        let table: toml::Table = toml::from_str(&text).map_err(|e| ConfigError::Project {
            path: path.clone(),
            detail: e.message().trim().to_owned(),
            source: e.into(),
        })?;
        Self::from_table(path, dir, table).map(Some)
    }

    /// Checks the parsed project file `path` of the project `dir` (see the module docs).
    pub(crate) fn from_table(
        path: PathBuf,
        dir: &Path,
        mut table: toml::Table,
    ) -> Result<Self, ConfigError> {
        let shown = path.display().to_string();
        let refuse = |key: &str, why: &str| {
            ConfigError::Invalid(format!(
                "{shown} sets `{key}`, which a project file may not set ({why}); set it in your user config (~/.config/toolgate/config.toml) or with --config FILE instead, or remove it from the project file"
            ))
        };

        let permissions = match table.remove("permissions") {
            Some(value) => {
                PermissionsConfig::deserialize(value).map_err(|e| ConfigError::Project {
                    path: path.clone(),
                    detail: format!("[permissions]: {e}"),
                    source: e.into(),
                })?
            }
            None => PermissionsConfig::default(),
        };
        if permissions.allow_control_files {
            return Err(refuse(
                "permissions.allow_control_files",
                "it would let tools rewrite the files that configure toolgate",
            ));
        }

        // In team mode the served repository is a colleague's: `max_sessions = 1` from it
        // would close every other caller's session, `token_env` would pick the token.
        if let Some(key) = table
            .get("server")
            .and_then(toml::Value::as_table)
            .and_then(|server| server.keys().next())
        {
            return Err(refuse(
                &format!("server.{key}"),
                "[server] settings are the operator's: who can connect, how many sessions live, what /metrics serves",
            ));
        }

        // A repository must not choose where the user's API keys are sent.
        if table.contains_key("providers") {
            return Err(refuse(
                "providers",
                "it decides which endpoint receives your API key",
            ));
        }
        // Full outputs (secrets printed by a command included) go where the user says.
        if table
            .get("budget")
            .and_then(toml::Value::as_table)
            .is_some_and(|b| b.contains_key("spill_store"))
        {
            return Err(refuse(
                "budget.spill_store",
                "it decides where full command outputs are copied and what read_file fetches",
            ));
        }
        // The audit log is the user's record of what ran, not the repository's.
        if table.contains_key("audit") {
            return Err(refuse(
                "audit",
                "the audit log is yours: a project may not turn it off, move it or choose a file toolgate writes to",
            ));
        }
        // Limits protect the user's (or the team's) servers from the callers, not the
        // repository's wishes.
        if table.contains_key("rate_limits") {
            return Err(refuse(
                "rate_limits",
                "rate limits are set by the user or the team's config, not by a repository",
            ));
        }
        // Traces name every tool the user runs: where they go is the user's choice.
        if table.contains_key("telemetry") {
            return Err(refuse(
                "telemetry",
                "it decides which endpoint receives a trace of every tool call",
            ));
        }
        // Tool descriptions read from a shared store reach the model as they are, and the
        // user's OAuth tokens are written to it.
        if let Some(mcp) = table.get("mcp").and_then(toml::Value::as_table) {
            if mcp.contains_key("shared_store") {
                return Err(refuse(
                    "mcp.shared_store",
                    "tool lists read from it reach the model as they are and your OAuth tokens are written to it, so only you may choose it",
                ));
            }
            if mcp.contains_key("oauth_credentials_store") {
                return Err(refuse(
                    "mcp.oauth_credentials_store",
                    "it decides where your OAuth tokens are written",
                ));
            }
        }
        if let Some(agent) = table.get("agent").and_then(toml::Value::as_table) {
            if agent.contains_key("provider") {
                return Err(refuse(
                    "agent.provider",
                    "it decides which endpoint receives your API key",
                ));
            }
            // Transcripts hold whole conversations, tool results included.
            if agent.contains_key("sessions_dir") {
                return Err(refuse(
                    "agent.sessions_dir",
                    "it decides where whole conversations are written and which transcript `--resume` reads",
                ));
            }
        }

        let import = match table.get_mut("mcp").and_then(toml::Value::as_table_mut) {
            Some(mcp) => match mcp.remove("import") {
                Some(toml::Value::Boolean(b)) => Some(b),
                Some(other) => {
                    return Err(ConfigError::Invalid(format!(
                        "{shown}: `mcp.import` must be true or false, not {other}"
                    )));
                }
                None => None,
            },
            None => None,
        };

        let root = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());

        let skills_enabled = skills_rules(&mut table, &root, &shown)?;
        let isolation = isolation_rules(&mut table, &path)?;
        if let Some(roots) = table.get_mut("roots") {
            let Some(list) = roots.as_array_mut() else {
                return Err(ConfigError::Invalid(format!(
                    "{shown}: `roots` must be a list of folders"
                )));
            };
            for item in list.iter_mut() {
                let Some(given) = item.as_str() else {
                    return Err(ConfigError::Invalid(format!(
                        "{shown}: `roots` must be a list of folders"
                    )));
                };
                let real = dir.join(given).canonicalize().map_err(|e| {
                    ConfigError::Invalid(format!(
                        "roots: {shown} names `{given}`, which cannot be used ({e}); create it or remove it from `roots`"
                    ))
                })?;
                if !real.starts_with(&root) {
                    return Err(ConfigError::Invalid(format!(
                        "{shown} sets roots = [\"{given}\"], which is `{}`, outside the project `{}`; a project file may only name folders inside its project — give other folders with --root or in your user config",
                        real.display(),
                        root.display()
                    )));
                }
                *item = toml::Value::String(real.to_string_lossy().into_owned());
            }
        }

        if let Some(dir_value) = table
            .get_mut("budget")
            .and_then(toml::Value::as_table_mut)
            .and_then(|b| b.get_mut("spill_dir"))
        {
            let Some(given) = dir_value.as_str() else {
                return Err(ConfigError::Invalid(format!(
                    "{shown}: `budget.spill_dir` must be a folder path"
                )));
            };
            let absolute = spill_inside(&root, Path::new(given)).ok_or_else(|| {
                ConfigError::Invalid(format!(
                    "{shown} sets budget.spill_dir = \"{given}\"; from a project file the spill folder must be inside the project (without `..` or `~`) or toolgate's own folder in your cache ({}), never another folder of the cache, because read_file can read it — use e.g. `.toolgate/spill`, or set it in your user config",
                    toolgate_cache().map_or_else(
                        || "$XDG_CACHE_HOME/toolgate/…".to_owned(),
                        |c| format!("{}/…", c.display())
                    )
                ))
            })?;
            *dir_value = toml::Value::String(absolute.to_string_lossy().into_owned());
        }

        let servers = table
            .get("mcp_servers")
            .and_then(toml::Value::as_table)
            .map(|t| t.keys().cloned().collect())
            .unwrap_or_default();
        Ok(Self {
            path,
            table,
            permissions,
            servers,
            import,
            skills_enabled,
            isolation,
        })
    }
}

/// Checks the project's `[skills]`: takes out `enabled` (tighten-only, returned) and makes
/// every `roots` entry an absolute folder inside the project.
fn skills_rules(
    table: &mut toml::Table,
    root: &Path,
    shown: &str,
) -> Result<Option<bool>, ConfigError> {
    let Some(skills) = table.get_mut("skills").and_then(toml::Value::as_table_mut) else {
        return Ok(None);
    };
    let enabled = match skills.remove("enabled") {
        Some(toml::Value::Boolean(b)) => Some(b),
        Some(other) => {
            return Err(ConfigError::Invalid(format!(
                "{shown}: `skills.enabled` must be true or false, not {other}"
            )));
        }
        None => None,
    };
    if let Some(roots) = skills.get_mut("roots") {
        let Some(list) = roots.as_array_mut() else {
            return Err(ConfigError::Invalid(format!(
                "{shown}: `skills.roots` must be a list of folders"
            )));
        };
        for item in list.iter_mut() {
            let Some(given) = item.as_str() else {
                return Err(ConfigError::Invalid(format!(
                    "{shown}: `skills.roots` must be a list of folders"
                )));
            };
            let path = Path::new(given);
            let lexical = !given.starts_with('~')
                && !path.components().any(|c| matches!(c, Component::ParentDir));
            let absolute = root.join(path);
            // Through a symlink that exists now, the real folder must be inside too.
            let real = absolute.canonicalize().unwrap_or_else(|_| absolute.clone());
            if !lexical || !absolute.starts_with(root) || !real.starts_with(root) {
                return Err(ConfigError::Invalid(format!(
                    "{shown} sets skills.roots = [\"{given}\"], which is outside the project `{}`; a project file may only name skill folders inside its project (read_file can read them) — give other folders in your user config",
                    root.display()
                )));
            }
            *item = toml::Value::String(absolute.to_string_lossy().into_owned());
        }
    }
    Ok(enabled)
}

/// `given` (relative to the project `root`, or absolute) as an absolute path when it lies
/// inside the project or strictly inside toolgate's own cache folder, and has no `..` and no
/// leading `~` (which is not expanded, and would only confuse).
fn spill_inside(root: &Path, given: &Path) -> Option<PathBuf> {
    if given.starts_with("~")
        || given
            .components()
            .any(|c| matches!(c, Component::ParentDir))
    {
        return None;
    }
    let absolute = root.join(given);
    let in_toolgate_cache =
        toolgate_cache().is_some_and(|c| absolute.starts_with(&c) && absolute != c);
    (absolute.starts_with(root) || in_toolgate_cache).then_some(absolute)
}

/// toolgate's own folder in the user's cache: `$XDG_CACHE_HOME/toolgate`, else
/// `~/.cache/toolgate`. Other programs' caches (tokens, downloads) are never a spill folder.
fn toolgate_cache() -> Option<PathBuf> {
    toolgate_core::UserDirs::from_env()
        .cache()
        .map(|c| c.join("toolgate"))
}

impl Provider for ProjectLayer {
    fn metadata(&self) -> Metadata {
        Metadata::from("TOML file", self.path.as_path())
    }

    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        figment::providers::Serialized::defaults(&self.table).data()
    }
}

/// Whether the user's own layers leave skills on (the project may only turn them off).
pub(crate) fn user_skills(user_side: &Figment) -> bool {
    user_side
        .extract_inner::<bool>("skills.enabled")
        .unwrap_or(true)
}

/// Whether the user's own layers leave importing on (the project may only turn it off).
pub(crate) fn user_import(user_side: &Figment) -> bool {
    user_side
        .extract_inner::<bool>("mcp.import")
        .unwrap_or(true)
}
