//! Importing servers from other clients' config files, merged with toolgate's own
//! `[mcp_servers]` (later sources override earlier ones).
//!
//! Precedence, lowest first — a later source replaces an earlier entry of the same name:
//!
//! 1. `$CODEX_HOME/config.toml` (default `~/.codex/config.toml`), its `[mcp_servers]`
//! 2. `~/.claude/settings.json`, its `mcpServers`
//! 3. `~/.claude.json`, its top-level `mcpServers` (where `claude mcp add --scope user`
//!    writes)
//! 4. `<project>/.claude/settings.json`, its `mcpServers`
//! 5. `<project>/.mcp.json`, its `mcpServers`
//! 6. `~/.claude.json`, `projects["<project>"].mcpServers` (where `claude mcp add` writes
//!    by default, the "local" scope, which Claude Code ranks above the others)
//! 7. toolgate's own config (user < project < `--config` < environment). An entry here that
//!    sets neither `command` nor `url` adjusts the imported entry of the same name
//!    (`enabled = false`, timeouts, tool filters) instead of replacing it.
//!
//! A file that cannot be read or parsed is reported with its path and the reason; the other
//! files are still imported. A malformed entry is kept as a server that cannot start, with
//! the reason, so `toolgate mcp list` shows it rather than hiding it. Claude's `${VAR}` and
//! `${VAR:-default}` are expanded in `command`, `args`, `env`, `url` and `headers`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::config::{McpServerConfig, ServerSpec, Transport};

/// Set in the environment of every stdio server the gateway starts. A toolgate started by
/// a gateway imports nothing, so a `.mcp.json` that mounts toolgate cannot recurse.
pub const NESTED_ENV: &str = "TOOLGATE_GATEWAY_DEPTH";

/// Where to look for config files.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The project root (`.mcp.json`, `.claude/settings.json`; relative `cwd`s).
    pub project_dir: PathBuf,
    /// The user's home folder; `None` skips the user files.
    pub home: Option<PathBuf>,
    /// `$CODEX_HOME`, when set; default `~/.codex`.
    pub codex_home: Option<PathBuf>,
    /// Whether to import at all (`[mcp] import`).
    pub import: bool,
    /// Names of toolgate's own `[mcp_servers]` entries that the project config layer set
    /// or adjusted: like servers from `.mcp.json`, they need the user's trust to start.
    pub project_servers: BTreeSet<String>,
}

impl ImportOptions {
    /// The standard locations for a process started in `project_dir`, from `HOME`,
    /// `CODEX_HOME` and `TOOLGATE_GATEWAY_DEPTH`.
    pub fn standard(project_dir: PathBuf, import: bool) -> Self {
        let nested = std::env::var_os(NESTED_ENV).is_some();
        Self {
            project_dir,
            home: toolgate_core::UserDirs::from_env()
                .home()
                .map(Path::to_path_buf),
            // Like the XDG variables: an empty or relative value would name a file in the
            // project, so it falls back to `~/.codex`.
            codex_home: std::env::var_os("CODEX_HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute()),
            import: import && !nested,
            project_servers: BTreeSet::new(),
        }
    }
}

/// A config file that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct ImportProblem {
    /// The file.
    pub path: PathBuf,
    /// What is wrong, and what to do.
    pub reason: String,
}

/// Every configured server, merged, and the files that could not be read.
#[derive(Debug, Clone, Default)]
pub struct Discovered {
    /// Servers in name order.
    pub servers: Vec<ServerSpec>,
    /// Files that were skipped, with why.
    pub problems: Vec<ImportProblem>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Codex,
    Claude,
    /// `~/.claude.json`'s top-level `mcpServers`.
    ClaudeUser,
    /// `~/.claude.json`'s `projects[<project>].mcpServers`.
    ClaudeLocal,
}

/// An entry as read from one file. Few and short-lived, so the size difference between
/// the variants does not matter.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
enum Entry {
    Config(McpServerConfig),
    Invalid(String),
}

/// Merges the imported files and toolgate's own entries. `own_sources` names the file each
/// of toolgate's own entries came from (config provenance).
pub fn discover(
    own: &BTreeMap<String, McpServerConfig>,
    own_sources: &BTreeMap<String, String>,
    options: &ImportOptions,
) -> Discovered {
    // name → (entry, source, whether a project file defined or changed it)
    let mut merged: BTreeMap<String, (Entry, String, bool)> = BTreeMap::new();
    let mut problems = Vec::new();
    if options.import {
        for (path, format, project) in sources(options) {
            let text = match fs_err::read_to_string(&path) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    problems.push(problem(&path, format!("cannot be read: {e}")));
                    continue;
                }
            };
            let env = |k: &str| std::env::var(k).ok();
            let mut source = path.display().to_string();
            let parsed = match format {
                Format::Codex => parse_codex(&text),
                Format::Claude | Format::ClaudeUser => parse_claude(&text, &env),
                Format::ClaudeLocal => {
                    let (key, parsed) = parse_claude_local(&text, &options.project_dir, &env);
                    if let Some(key) = key {
                        source = format!("{source} (projects[\"{key}\"])");
                    }
                    parsed
                }
            };
            match parsed {
                Ok(entries) => {
                    for (name, entry) in entries {
                        merged.insert(name, (entry, source.clone(), project));
                    }
                }
                Err(reason) => problems.push(problem(&path, reason.to_string())),
            }
        }
    }
    for (name, ours) in own {
        let ours_source = own_sources
            .get(name)
            .cloned()
            .unwrap_or_else(|| "toolgate config".to_owned());
        let ours_project = options.project_servers.contains(name);
        let next = match merged.remove(name) {
            Some((Entry::Config(theirs), source, project)) if !ours.has_transport() => (
                Entry::Config(theirs.overlaid(ours)),
                format!("{source}, adjusted by {ours_source}"),
                project || ours_project,
            ),
            Some((Entry::Invalid(reason), source, project)) if !ours.has_transport() => {
                let disabled = ours.enabled == Some(false);
                let entry = if disabled {
                    Entry::Config(McpServerConfig::default().overlaid(ours))
                } else {
                    Entry::Invalid(reason)
                };
                (
                    entry,
                    format!("{source}, adjusted by {ours_source}"),
                    project || ours_project,
                )
            }
            _ => (Entry::Config(ours.clone()), ours_source, ours_project),
        };
        merged.insert(name.clone(), next);
    }
    let servers = merged
        .into_iter()
        .map(|(name, (entry, source, project))| match entry {
            Entry::Config(config) => {
                let mut spec = ServerSpec::resolve(&name, &config, source, &options.project_dir);
                if project {
                    // Untrusted until a trust store says otherwise (`TrustStore::apply`).
                    spec.trust = crate::verdict::Trust::Untrusted;
                }
                if is_toolgate(&spec.transport) && own.get(&name).is_none_or(|o| !o.has_transport())
                {
                    // Mounting toolgate inside itself would recurse through the same files.
                    spec.enabled = false;
                    spec.source
                        .push_str(" (not mounted: it starts toolgate itself)");
                }
                spec
            }
            Entry::Invalid(reason) => {
                let mut spec = ServerSpec::resolve(
                    &name,
                    &McpServerConfig::default(),
                    source,
                    &options.project_dir,
                );
                spec.transport = Transport::Invalid(reason);
                spec
            }
        })
        .collect();
    Discovered { servers, problems }
}

fn problem(path: &Path, reason: String) -> ImportProblem {
    ImportProblem {
        path: path.to_path_buf(),
        reason,
    }
}

/// The files to read, lowest precedence first, without duplicates, each with whether it
/// belongs to the project (its servers need the user's trust).
/// The files [`discover`] reads with `options`, whether they exist or not (none when
/// importing is off): the files to watch for changes.
pub fn source_files(options: &ImportOptions) -> Vec<PathBuf> {
    if !options.import {
        return Vec::new();
    }
    let mut files: Vec<PathBuf> = sources(options).into_iter().map(|(p, _, _)| p).collect();
    files.dedup();
    files
}

fn sources(options: &ImportOptions) -> Vec<(PathBuf, Format, bool)> {
    let mut out = Vec::new();
    let codex = options
        .codex_home
        .clone()
        .or_else(|| options.home.as_ref().map(|h| h.join(".codex")));
    if let Some(dir) = codex {
        out.push((dir.join("config.toml"), Format::Codex, false));
    }
    if let Some(home) = &options.home {
        out.push((
            home.join(".claude").join("settings.json"),
            Format::Claude,
            false,
        ));
        // Written by `claude mcp add`: the user's own file, so its servers need no trust.
        out.push((home.join(".claude.json"), Format::ClaudeUser, false));
    }
    let project = &options.project_dir;
    out.push((
        project.join(".claude").join("settings.json"),
        Format::Claude,
        true,
    ));
    out.push((project.join(".mcp.json"), Format::Claude, true));
    if let Some(home) = &options.home {
        // The current project's entry of `~/.claude.json` (`claude mcp add -s local`): the
        // user's file too.
        out.push((home.join(".claude.json"), Format::ClaudeLocal, false));
    }
    let mut seen = Vec::new();
    out.retain(|(p, format, _)| {
        let key = (p.canonicalize().unwrap_or_else(|_| p.clone()), *format);
        let fresh = !seen.contains(&key);
        seen.push(key);
        fresh
    });
    out
}

/// Whether a transport starts toolgate (by program name or this very executable).
fn is_toolgate(transport: &Transport) -> bool {
    let Transport::Stdio { command, .. } = transport else {
        return false;
    };
    let path = Path::new(command);
    if path.file_stem().is_some_and(|n| n == "toolgate") {
        return true;
    }
    match (std::env::current_exe(), path.canonicalize()) {
        (Ok(me), Ok(it)) => me == it,
        _ => false,
    }
}

/// Why a client's config file cannot be used; the text follows the file's path.
#[derive(Debug, thiserror::Error)]
enum FileError {
    /// Not JSON; the entry the user may remove instead of fixing the file.
    #[error("is not valid JSON ({source}); fix the file or remove its `{entry}` entry")]
    Json {
        entry: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// JSON, but not an object.
    #[error("is not a JSON object")]
    NotAnObject,
    /// `mcpServers` is not an object.
    #[error("`mcpServers` is not an object of named servers")]
    ServersNotAnObject,
    /// Not TOML.
    #[error("is not valid TOML ({}); fix the file", one_line(.0))]
    Toml(#[source] toml::de::Error),
    /// `mcp_servers` is not a table.
    #[error("`mcp_servers` is not a table of named servers")]
    ServersNotATable,
}

/// `e`'s text on one line (TOML errors quote the file over several).
fn one_line(e: &toml::de::Error) -> String {
    e.to_string().replace('\n', " ").trim().to_owned()
}

/// A `${VAR}` whose variable is not set (and that gives no default).
#[derive(Debug, thiserror::Error)]
#[error("`${{{0}}}` is used but the variable is not set; set it or write `${{{0}:-default}}`")]
struct UnsetVariable(String);

/// A file's entries by name, or why the file cannot be used.
type Parsed = Result<Vec<(String, Entry)>, FileError>;

/// The servers of `~/.claude.json`'s entry for `project` (`projects` is keyed by the
/// absolute project path Claude Code was started in), with that key for provenance. A file
/// without an entry for the project contributes nothing.
fn parse_claude_local(
    text: &str,
    project: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> (Option<String>, Parsed) {
    let root: Value = match serde_json::from_str(text) {
        Ok(root) => root,
        Err(e) => {
            return (
                None,
                Err(FileError::Json {
                    entry: "projects",
                    source: e,
                }),
            );
        }
    };
    let Some(projects) = root.get("projects").and_then(Value::as_object) else {
        return (None, Ok(Vec::new()));
    };
    let real = project
        .canonicalize()
        .unwrap_or_else(|_| project.to_path_buf());
    let found = projects.iter().find(|(key, _)| {
        let key = Path::new(key.as_str());
        key == project || key == real || key.canonicalize().is_ok_and(|k| k == real)
    });
    let Some((key, entry)) = found else {
        return (None, Ok(Vec::new()));
    };
    let servers = entry
        .get("mcpServers")
        .map(|s| serde_json::json!({ "mcpServers": s }).to_string())
        .unwrap_or_else(|| "{}".to_owned());
    (Some(key.clone()), parse_claude(&servers, env))
}

/// A Claude Code / `.mcp.json` server entry. Unknown fields are ignored (clients add some).
#[derive(Deserialize)]
struct ClaudeEntry {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// `"oauth": {"clientId", "callbackPort"}` of a server that needs a login.
    oauth: Option<ClaudeOAuth>,
}

/// Claude Code's `oauth` of a remote server.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClaudeOAuth {
    client_id: Option<String>,
    callback_port: Option<u16>,
}

fn parse_claude(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Parsed {
    let root: Value = serde_json::from_str(text).map_err(|source| FileError::Json {
        entry: "mcpServers",
        source,
    })?;
    let Some(root) = root.as_object() else {
        return Err(FileError::NotAnObject);
    };
    let Some(servers) = root.get("mcpServers") else {
        return Ok(Vec::new());
    };
    let Some(servers) = servers.as_object() else {
        return Err(FileError::ServersNotAnObject);
    };
    Ok(servers
        .iter()
        .map(|(name, raw)| {
            let entry = match serde_json::from_value::<ClaudeEntry>(raw.clone()) {
                Ok(entry) => {
                    claude_entry(entry, env).unwrap_or_else(|e| Entry::Invalid(e.to_string()))
                }
                Err(e) => Entry::Invalid(format!("malformed entry `{name}`: {e}")),
            };
            (name.clone(), entry)
        })
        .collect())
}

fn claude_entry(
    entry: ClaudeEntry,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Entry, UnsetVariable> {
    let x = |s: &str| expand(s, env);
    let map = |m: &BTreeMap<String, String>| -> Result<BTreeMap<String, String>, UnsetVariable> {
        m.iter().map(|(k, v)| Ok((k.clone(), x(v)?))).collect()
    };
    match entry.kind.as_deref() {
        Some("sse") => {
            return Ok(Entry::Invalid(
                "uses the legacy SSE transport, which toolgate does not speak; point `url` at the server's Streamable HTTP endpoint (often `/mcp`) and set `\"type\": \"http\"`".to_owned(),
            ));
        }
        None | Some("stdio" | "http" | "streamable-http" | "streamableHttp") => {}
        Some(other) => {
            return Ok(Entry::Invalid(format!(
                "unknown transport type `{other}`; use `stdio` or `http`"
            )));
        }
    }
    Ok(Entry::Config(McpServerConfig {
        command: entry.command.as_deref().map(x).transpose()?,
        args: Some(entry.args.iter().map(|a| x(a)).collect::<Result<_, _>>()?),
        env: Some(map(&entry.env)?),
        url: entry.url.as_deref().map(x).transpose()?,
        headers: Some(map(&entry.headers)?),
        oauth: entry.oauth.map(|o| crate::config::OAuthConfig {
            client_id: o.client_id,
            callback_port: o.callback_port,
            ..Default::default()
        }),
        ..Default::default()
    }))
}

/// Expands `${VAR}` and `${VAR:-default}` as Claude Code does in `.mcp.json`.
fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, UnsetVariable> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((v, d)) => (v, Some(d)),
            None => (inner, None),
        };
        match (env(var), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(d)) => out.push_str(d),
            (None, None) => return Err(UnsetVariable(var.to_owned())),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A Codex `[mcp_servers.NAME]` entry. Unknown fields are ignored (Codex adds some).
#[derive(Deserialize)]
struct CodexEntry {
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    bearer_token_env_var: Option<String>,
    http_headers: Option<BTreeMap<String, String>>,
    env_http_headers: Option<BTreeMap<String, String>>,
    enabled: Option<bool>,
    startup_timeout_sec: Option<f64>,
    startup_timeout_ms: Option<u64>,
    tool_timeout_sec: Option<f64>,
    enabled_tools: Option<Vec<String>>,
    disabled_tools: Option<Vec<String>>,
    /// OAuth scopes to ask for at login.
    scopes: Option<Vec<String>>,
    /// `[mcp_servers.NAME.oauth]`: `client_id`, `callback_port`.
    oauth: Option<CodexOAuth>,
}

/// Codex's `[mcp_servers.NAME.oauth]`.
#[derive(Deserialize)]
struct CodexOAuth {
    client_id: Option<String>,
    callback_port: Option<u16>,
}

fn parse_codex(text: &str) -> Parsed {
    let root: toml::Table = toml::from_str(text).map_err(FileError::Toml)?;
    let Some(servers) = root.get("mcp_servers") else {
        return Ok(Vec::new());
    };
    let Some(servers) = servers.as_table() else {
        return Err(FileError::ServersNotATable);
    };
    // Codex's default callback port for every server's login.
    let callback_port = root
        .get("mcp_oauth_callback_port")
        .and_then(toml::Value::as_integer)
        .and_then(|p| u16::try_from(p).ok());
    Ok(servers
        .iter()
        .map(|(name, raw)| {
            let entry = match raw.clone().try_into::<CodexEntry>() {
                Ok(e) => Entry::Config(codex_entry(e, callback_port)),
                Err(e) => Entry::Invalid(format!(
                    "malformed entry `{name}`: {}",
                    e.to_string().trim()
                )),
            };
            (name.clone(), entry)
        })
        .collect())
}

fn codex_entry(e: CodexEntry, callback_port: Option<u16>) -> McpServerConfig {
    let remote = e.url.is_some();
    let oauth = crate::config::OAuthConfig {
        client_id: e.oauth.as_ref().and_then(|o| o.client_id.clone()),
        callback_port: e
            .oauth
            .as_ref()
            .and_then(|o| o.callback_port)
            .or(callback_port),
        scopes: e.scopes.clone(),
        ..Default::default()
    };
    let mut headers = e.http_headers.unwrap_or_default();
    for (header, var) in e.env_http_headers.unwrap_or_default() {
        if let Ok(value) = std::env::var(&var) {
            headers.insert(header, value);
        }
    }
    McpServerConfig {
        command: e.command,
        args: e.args,
        env: e.env,
        cwd: e.cwd,
        headers: e.url.is_some().then_some(headers),
        url: e.url,
        bearer_token_env: e.bearer_token_env_var,
        enabled: e.enabled,
        startup_timeout_sec: e
            .startup_timeout_sec
            .or(e.startup_timeout_ms.map(|ms| ms as f64 / 1000.0)),
        tool_timeout_sec: e.tool_timeout_sec,
        enabled_tools: e.enabled_tools,
        disabled_tools: e.disabled_tools,
        log_like: None,
        oauth: (remote && !oauth.is_empty()).then_some(oauth),
        prefix: None,
        lifecycle: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(k: &str) -> Option<String> {
        (k == "TOKEN").then(|| "s3cret".to_owned())
    }

    #[test]
    fn expands_variables_with_defaults() {
        assert_eq!(expand("a ${TOKEN} b", &vars).unwrap(), "a s3cret b");
        assert_eq!(expand("${NOPE:-dflt}", &vars).unwrap(), "dflt");
        assert!(
            expand("${NOPE}", &vars)
                .unwrap_err()
                .to_string()
                .contains("`${NOPE}` is used")
        );
        assert_eq!(expand("no vars $HOME", &vars).unwrap(), "no vars $HOME");
    }

    #[test]
    fn claude_entries_and_bad_types() {
        let text = r#"{"mcpServers": {
            "a": {"command": "npx", "args": ["-y", "x"], "env": {"K": "${TOKEN}"}},
            "b": {"type": "sse", "url": "http://x/sse"},
            "c": {"command": 5}
        }}"#;
        let entries = parse_claude(text, &vars).unwrap();
        assert_eq!(entries.len(), 3);
        let Entry::Config(a) = &entries[0].1 else {
            panic!("a is valid")
        };
        assert_eq!(a.env.as_ref().unwrap()["K"], "s3cret");
        assert!(matches!(&entries[1].1, Entry::Invalid(r) if r.contains("SSE")));
        assert!(matches!(&entries[2].1, Entry::Invalid(r) if r.contains("malformed entry `c`")));
    }

    #[test]
    fn codex_entries() {
        let text = r#"
            model = "o3"
            [mcp_servers.docs]
            command = "docs-server"
            startup_timeout_ms = 2500
            tool_timeout_sec = 30
            unknown_future_key = true
            [mcp_servers.remote]
            url = "https://example.invalid/mcp"
            bearer_token_env_var = "TOKEN"
            [mcp_servers.broken]
            args = "not a list"
        "#;
        let entries = parse_codex(text).unwrap();
        let by_name: BTreeMap<_, _> = entries.into_iter().collect();
        let Entry::Config(docs) = &by_name["docs"] else {
            panic!("docs is valid")
        };
        assert_eq!(docs.startup_timeout_sec, Some(2.5));
        assert_eq!(docs.tool_timeout_sec, Some(30.0));
        let Entry::Config(remote) = &by_name["remote"] else {
            panic!("remote is valid")
        };
        assert_eq!(remote.bearer_token_env.as_deref(), Some("TOKEN"));
        assert!(matches!(&by_name["broken"], Entry::Invalid(r) if r.contains("broken")));
    }

    #[test]
    fn login_settings_are_imported_from_claude_and_codex() {
        let claude = r#"{"mcpServers": {
            "linear": {"type": "http", "url": "https://mcp.linear.app/mcp",
                       "oauth": {"clientId": "cid", "callbackPort": 8976}},
            "plain": {"type": "http", "url": "https://x.invalid/mcp"}
        }}"#;
        let entries: BTreeMap<_, _> = parse_claude(claude, &vars).unwrap().into_iter().collect();
        let Entry::Config(linear) = &entries["linear"] else {
            panic!("linear is valid")
        };
        let oauth = linear.oauth.as_ref().unwrap();
        assert_eq!(oauth.client_id.as_deref(), Some("cid"));
        assert_eq!(oauth.callback_port, Some(8976));
        let Entry::Config(plain) = &entries["plain"] else {
            panic!("plain is valid")
        };
        assert_eq!(plain.oauth, None);

        let codex = r#"
            mcp_oauth_callback_port = 5555
            [mcp_servers.notion]
            url = "https://mcp.notion.com/mcp"
            scopes = ["read"]
            [mcp_servers.notion.oauth]
            client_id = "n-cid"
            [mcp_servers.local]
            command = "srv"
        "#;
        let entries: BTreeMap<_, _> = parse_codex(codex).unwrap().into_iter().collect();
        let Entry::Config(notion) = &entries["notion"] else {
            panic!("notion is valid")
        };
        let oauth = notion.oauth.as_ref().unwrap();
        assert_eq!(oauth.client_id.as_deref(), Some("n-cid"));
        assert_eq!(oauth.callback_port, Some(5555));
        assert_eq!(oauth.scopes.as_deref(), Some(&["read".to_owned()][..]));
        let Entry::Config(local) = &entries["local"] else {
            panic!("local is valid")
        };
        assert_eq!(local.oauth, None, "a stdio server has no login");
    }

    #[test]
    fn claude_json_gives_its_user_servers_and_the_current_projects_own_with_provenance() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let claude_json = serde_json::json!({
            "numStartups": 12,
            "mcpServers": {
                "user-wide": {"command": "user-server"},
                "shadowed": {"command": "from-user-scope"}
            },
            "projects": {
                project.path().to_string_lossy(): {
                    "allowedTools": [],
                    "mcpServers": {
                        "local-only": {"type": "stdio", "command": "local-server", "args": ["--x"]},
                        "shadowed": {"command": "from-local-scope"}
                    }
                },
                other.path().to_string_lossy(): {
                    "mcpServers": {"elsewhere": {"command": "not-this-project"}}
                }
            }
        });
        fs_err::write(home.path().join(".claude.json"), claude_json.to_string()).unwrap();
        let options = ImportOptions {
            project_dir: project.path().to_path_buf(),
            home: Some(home.path().to_path_buf()),
            codex_home: Some(home.path().join("no-codex")),
            import: true,
            project_servers: Default::default(),
        };
        let found = discover(&BTreeMap::new(), &BTreeMap::new(), &options);
        assert!(found.problems.is_empty(), "{:?}", found.problems);
        let by_name = |n: &str| found.servers.iter().find(|s| s.name == n);
        assert!(
            by_name("elsewhere").is_none(),
            "another project's servers stay out"
        );
        let user = by_name("user-wide").unwrap();
        assert!(user.source.ends_with(".claude.json"), "{}", user.source);
        let local = by_name("local-only").unwrap();
        assert!(
            user.trust.allows_start() && local.trust.allows_start(),
            "servers from the user's own ~/.claude.json need no trust"
        );
        assert!(
            local.source.contains(".claude.json (projects[")
                && local.source.contains(&*project.path().to_string_lossy()),
            "{}",
            local.source
        );
        let Transport::Stdio { command, .. } = &by_name("shadowed").unwrap().transport else {
            panic!("stdio expected")
        };
        assert_eq!(
            command, "from-local-scope",
            "the local scope wins, as in Claude Code"
        );
    }

    #[test]
    fn malformed_files_are_errors_with_reasons() {
        assert!(
            parse_claude("{nope", &vars)
                .unwrap_err()
                .to_string()
                .contains("not valid JSON")
        );
        assert!(parse_claude(r#"{"mcpServers": []}"#, &vars).is_err());
        assert!(
            parse_codex("[mcp_servers\n")
                .unwrap_err()
                .to_string()
                .contains("not valid TOML")
        );
        assert!(parse_claude(r#"{"other": 1}"#, &vars).unwrap().is_empty());
    }
}
