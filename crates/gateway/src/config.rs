//! `[mcp_servers.NAME]` and `[mcp]`: the mounted servers as a user writes them, and as the
//! gateway runs them once every source is merged (the `mcpServers` format of other clients).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use toolgate_oauth::{CredentialStoreMode, OAuthConfig};

use crate::verdict::{LaunchTrust, Trust};

/// Startup timeout when none is configured: 60 s. A common 15 s covers an `npx` download of
/// 3-8 s, but a real Python server needed 14 s and a cold `uvx`/`npx` install takes longer.
/// Nothing waits for a starting server except calls to it and `search_tool`, and those only
/// within a short grace from startup ([`GatewayConfig::first_list_grace_ms`]), so a
/// generous limit costs nothing.
pub const DEFAULT_STARTUP_TIMEOUT_SEC: f64 = 60.0;
/// Per-call timeout when none is configured (Codex's `tool_timeout_sec` default).
pub const DEFAULT_TOOL_TIMEOUT_SEC: f64 = 60.0;

/// One `[mcp_servers.NAME]` entry of toolgate's config.
///
/// A stdio server sets `command` (with `args`, `env`, `cwd`); a Streamable HTTP server sets
/// `url` (with `headers`, `bearer_token_env`). Every field is optional so that an entry
/// naming a server imported from another client's config can adjust it — `enabled = false`,
/// a longer `tool_timeout_sec` — without repeating how to start it.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerConfig {
    /// stdio: the program to start (looked up on `PATH`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(example = &"npx")]
    pub command: Option<String>,
    /// stdio: its arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(example = &["-y", "@modelcontextprotocol/server-github"])]
    pub args: Option<Vec<String>>,
    /// stdio: variables added to toolgate's own environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(example = BTreeMap::from([("GITHUB_TOKEN", "...")]))]
    pub env: Option<BTreeMap<String, String>>,
    /// stdio: working folder, relative to the project root; default: the project root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Streamable HTTP: the endpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(example = &"http://127.0.0.1:3001/mcp")]
    pub url: Option<String>,
    /// Streamable HTTP: extra headers sent with every request.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(example = BTreeMap::from([("X-Api-Key", "...")]))]
    pub headers: Option<BTreeMap<String, String>>,
    /// Streamable HTTP: environment variable holding a bearer token.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(example = &"MY_SERVER_TOKEN")]
    pub bearer_token_env: Option<String>,
    /// Whether to mount it; default true.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(example = true)]
    pub enabled: Option<bool>,
    /// Seconds to wait for `server/discover` or `initialize` and the first `tools/list`;
    /// default 60.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(example = DEFAULT_STARTUP_TIMEOUT_SEC)]
    pub startup_timeout_sec: Option<f64>,
    /// Seconds one call may run; default 60.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(example = DEFAULT_TOOL_TIMEOUT_SEC)]
    pub tool_timeout_sec: Option<f64>,
    /// Only these tools (names as the server gives them) are mounted; default: all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are never mounted; applied after `enabled_tools`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled_tools: Option<Vec<String>>,
    /// Whether the server's results are logs worth compressing before the budget (CI or build
    /// servers); default false.
    ///
    /// Compression folds near-duplicate lines, which would hide data in JSON or tables (the
    /// original is spilled either way).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(example = false)]
    pub log_like: Option<bool>,
    /// Streamable HTTP: how toolgate logs in to a server that needs OAuth (see
    /// mcp-servers.md).
    ///
    /// See [`OAuthConfig`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthConfig>,
    /// `"always"` (default): tools and prompts are named `mcp__NAME__<name>`; `"never"`: they
    /// keep their own names.
    ///
    /// See [`Prefix`].
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(example = Prefix::Always)]
    pub prefix: Option<Prefix>,
    /// How the server is opened: `"discover"` (`server/discover` first, `initialize` as the
    /// fallback) or `"initialize"` (the 2025-11-25 handshake only); default `"discover"` over
    /// HTTP, `"initialize"` over stdio.
    ///
    /// `server/discover` is the 2026-07-28 opening; see [`Opening`].
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(example = Opening::Discover)]
    pub lifecycle: Option<Opening>,
}

/// `[mcp_servers.NAME] lifecycle`: how a mounted server is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Opening {
    /// `server/discover` first: a server that answers is mounted on 2026-07-28 (its questions
    /// come as `input_required` rounds with its own keys); one that answers an error, none
    /// within `GatewayLimits::discover_wait`, or exits is opened with `initialize`. Default
    /// over HTTP.
    Discover,
    /// The `initialize` handshake (2025-11-25) only. Default over stdio: a server of the
    /// Python SDK 2.x answers `server/discover` over stdio, and then its tools cannot ask the
    /// client mid-call (`ctx.elicit`, `ctx.session.list_roots` fail with "no back-channel"),
    /// which they can in a session opened with `initialize`.
    Initialize,
}

/// `[mcp_servers.NAME] prefix`: how a mounted server's tools and prompts are named.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Prefix {
    /// `mcp__NAME__<tool>`: names never clash, and `mcp__NAME__*` names the whole server in
    /// permission rules. Default.
    #[default]
    Always,
    /// The server's own names, as a client connected to it directly would see them. A name
    /// that clashes with one toolgate already has (a built-in tool, a skill's prompt, a tool
    /// or prompt of another server) fails this server at startup, and only this one.
    Never,
}

impl McpServerConfig {
    /// Whether this entry says how to start a server (rather than only adjusting one).
    pub fn has_transport(&self) -> bool {
        self.command.is_some() || self.url.is_some()
    }

    /// `self` with every field that `over` sets replaced by `over`'s. Setting `command` or
    /// `url` replaces the whole transport, so a stdio entry never keeps a stale `url`.
    pub fn overlaid(mut self, over: &McpServerConfig) -> Self {
        macro_rules! take {
            ($($f:ident),*) => {$( if over.$f.is_some() { self.$f = over.$f.clone(); } )*};
        }
        if over.has_transport() {
            self.command = over.command.clone();
            self.args = over.args.clone();
            self.env = over.env.clone();
            self.cwd = over.cwd.clone();
            self.url = over.url.clone();
            self.headers = over.headers.clone();
            self.bearer_token_env = over.bearer_token_env.clone();
        } else {
            take!(args, env, cwd, headers, bearer_token_env);
        }
        take!(
            enabled,
            startup_timeout_sec,
            tool_timeout_sec,
            enabled_tools,
            disabled_tools,
            log_like,
            oauth,
            prefix,
            lifecycle
        );
        self
    }
}

/// `[mcp]`: gateway-wide settings (assembly-time: they change which tools exist).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct GatewayConfig {
    /// Mount servers from `~/.codex`, `~/.claude`, `.claude` and `.mcp.json`.
    ///
    /// The files: `~/.codex/config.toml`, `~/.claude/settings.json`, `.claude/settings.json`
    /// and `.mcp.json`. Default true.
    pub import: bool,
    /// `tools/list` pages read per server.
    ///
    /// Default 100: a server that keeps answering with a cursor cannot keep the gateway
    /// listing forever.
    pub max_list_pages: usize,
    /// Tools mounted per server (bounds memory only); the rest are left out and reported.
    ///
    /// Default 10,000: a real server lists 3,436 tools, and with progressive disclosure
    /// they cost a catalog line each, not a definition.
    pub max_tools_per_server: usize,
    /// Keep each server's tools in `~/.cache/toolgate/catalog`, keyed by its launch config, so
    /// the next session's first `tools/list` is complete at once.
    pub catalog_cache: bool,
    /// A Redis shared by `serve --http` replicas, `redis://HOST[:PORT][/DB]` (or
    /// `rediss://`): the catalog cache (`toolgate:catalog:…`) and remote servers' OAuth
    /// tokens (`toolgate:oauth:…`, with their locks, so one login serves every replica and
    /// no refresh token is spent twice) live there instead of on this machine. Unset = the
    /// cache folder and `oauth_credentials_store`. User layers only.
    #[schemars(example = &"redis://127.0.0.1:6379/0")]
    pub shared_store: Option<String>,
    /// Calls and searches wait this long for starting servers that are not in the catalog
    /// cache, counted from startup. No `tools/list` ever waits.
    ///
    /// Applies to a call naming a tool not known yet and to `search_tool`.
    pub first_list_grace_ms: u64,
    /// The `[shell]` sandbox modes, for mounted stdio servers (writable folders: the roots,
    /// the temp folders and `[shell] sandbox_writable`); a project file may only tighten it.
    pub sandbox: toolgate_contain::SandboxMode,
    /// false: sandboxed servers can open no socket (only unix socket pairs); a project file
    /// may only set it to false.
    ///
    /// Default true: servers that fetch or call an API need it.
    pub sandbox_network: bool,
    /// OAuth tokens: `"auto"` (the OS keyring when one answers, else a 0600 file under the
    /// user config folder), `"keyring"`, `"file"`. User layers only.
    pub oauth_credentials_store: CredentialStoreMode,
    /// `serve`: apply changes to the files servers come from live (toolgate's config files,
    /// the imported Claude and Codex files, the trust file); false keeps the servers as they
    /// started.
    ///
    /// Only the servers that were added, removed or changed are mounted, unmounted or
    /// restarted, and clients get `list_changed`.
    pub watch: bool,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            import: true,
            max_list_pages: 100,
            max_tools_per_server: 10_000,
            catalog_cache: true,
            shared_store: None,
            first_list_grace_ms: 5_000,
            sandbox: toolgate_contain::SandboxMode::Off,
            sandbox_network: true,
            oauth_credentials_store: CredentialStoreMode::Auto,
            watch: true,
        }
    }
}

/// How the gateway reaches a server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio {
        /// Program.
        command: String,
        /// Arguments.
        args: Vec<String>,
        /// Variables added to the inherited environment.
        env: BTreeMap<String, String>,
        /// Working folder (absolute).
        cwd: PathBuf,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// Endpoint URL.
        url: String,
        /// Extra headers.
        headers: BTreeMap<String, String>,
        /// Variable holding a bearer token.
        bearer_token_env: Option<String>,
    },
    /// The entry cannot be started; the reason says how to fix it.
    Invalid(String),
}

/// One server as the gateway runs it: every source merged, defaults applied.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    /// The server's name (the config key).
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// Whether to mount it.
    pub enabled: bool,
    /// Time for `initialize` plus the first `tools/list`.
    pub startup_timeout: Duration,
    /// Time one call may run.
    pub tool_timeout: Duration,
    /// Only these tools, when set.
    pub enabled_tools: Option<Vec<String>>,
    /// Never these tools.
    pub disabled_tools: Vec<String>,
    /// Whether results are compressed as logs.
    pub log_like: bool,
    /// How to log in when the server needs OAuth (`[mcp_servers.NAME.oauth]`).
    pub oauth: OAuthConfig,
    /// How its tools and prompts are named.
    pub prefix: Prefix,
    /// How it is opened (the configured `lifecycle`, or the transport's default).
    pub opening: Opening,
    /// Where it was configured: a file path, with the file that adjusted it if any.
    pub source: String,
    /// Whether it needs (and has) the user's trust: servers from project files start only
    /// once trusted (`toolgate mcp trust`).
    pub trust: Trust,
    /// For a server defined by a project file: the project files its launch runs and what
    /// trust found (set by [`TrustStore::apply`](crate::TrustStore::apply)); `None` otherwise.
    pub launch: Option<LaunchTrust>,
}

impl ServerSpec {
    /// Resolves a merged entry; relative `cwd`s are taken from `project_dir`.
    pub fn resolve(
        name: &str,
        entry: &McpServerConfig,
        source: String,
        project_dir: &Path,
    ) -> Self {
        let transport = match (&entry.command, &entry.url) {
            (Some(_), Some(_)) => Transport::Invalid(
                "both `command` and `url` are set; keep `command` for a stdio server or `url` for a Streamable HTTP one".to_owned(),
            ),
            (None, None) => Transport::Invalid(
                "neither `command` nor `url` is set; add `command = \"…\"` (stdio) or `url = \"http://…/mcp\"` (Streamable HTTP)".to_owned(),
            ),
            (Some(command), None) if command.trim().is_empty() => {
                Transport::Invalid("`command` is empty".to_owned())
            }
            (Some(command), None) => Transport::Stdio {
                command: command.clone(),
                args: entry.args.clone().unwrap_or_default(),
                env: entry.env.clone().unwrap_or_default(),
                cwd: entry
                    .cwd
                    .as_ref()
                    .map_or_else(|| project_dir.to_path_buf(), |c| project_dir.join(c)),
            },
            (None, Some(url)) if !(url.starts_with("http://") || url.starts_with("https://")) => {
                Transport::Invalid(format!(
                    "`url` must start with http:// or https://, got `{url}`"
                ))
            }
            (None, Some(url)) => Transport::Http {
                url: url.clone(),
                headers: entry.headers.clone().unwrap_or_default(),
                bearer_token_env: entry.bearer_token_env.clone(),
            },
        };
        let opening = entry.lifecycle.unwrap_or(match transport {
            Transport::Http { .. } => Opening::Discover,
            _ => Opening::Initialize,
        });
        Self {
            name: name.to_owned(),
            transport,
            enabled: entry.enabled.unwrap_or(true),
            startup_timeout: seconds(entry.startup_timeout_sec, DEFAULT_STARTUP_TIMEOUT_SEC),
            tool_timeout: seconds(entry.tool_timeout_sec, DEFAULT_TOOL_TIMEOUT_SEC),
            enabled_tools: entry.enabled_tools.clone(),
            disabled_tools: entry.disabled_tools.clone().unwrap_or_default(),
            log_like: entry.log_like.unwrap_or(false),
            oauth: entry.oauth.clone().unwrap_or_default(),
            prefix: entry.prefix.unwrap_or_default(),
            opening,
            source,
            trust: Trust::User,
            launch: None,
        }
    }

    /// Whether the tool named `tool` (as the server names it) is mounted.
    pub fn mounts(&self, tool: &str) -> bool {
        let enabled = self
            .enabled_tools
            .as_ref()
            .is_none_or(|list| list.iter().any(|t| t == tool));
        enabled && !self.disabled_tools.iter().any(|t| t == tool)
    }
}

/// A positive, finite number of seconds, or the default.
fn seconds(value: Option<f64>, default: f64) -> Duration {
    let secs = value
        .filter(|v| v.is_finite() && *v > 0.0)
        .unwrap_or(default);
    Duration::from_secs_f64(secs.min(86_400.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlay_without_transport_keeps_the_imported_command() {
        let imported = McpServerConfig {
            command: Some("npx".into()),
            args: Some(vec!["server".into()]),
            ..Default::default()
        };
        let ours = McpServerConfig {
            enabled: Some(false),
            tool_timeout_sec: Some(5.0),
            ..Default::default()
        };
        let merged = imported.overlaid(&ours);
        assert_eq!(merged.command.as_deref(), Some("npx"));
        assert_eq!(merged.enabled, Some(false));
        assert_eq!(merged.tool_timeout_sec, Some(5.0));
    }

    #[test]
    fn overlay_with_a_url_replaces_a_stdio_transport() {
        let imported = McpServerConfig {
            command: Some("npx".into()),
            args: Some(vec!["a".into()]),
            ..Default::default()
        };
        let ours = McpServerConfig {
            url: Some("http://127.0.0.1:1/mcp".into()),
            ..Default::default()
        };
        let merged = imported.overlaid(&ours);
        assert_eq!(merged.command, None);
        assert_eq!(merged.args, None);
        let spec = ServerSpec::resolve("x", &merged, String::new(), Path::new("/p"));
        assert!(matches!(spec.transport, Transport::Http { .. }));
    }

    #[test]
    fn defaults_and_invalid_entries() {
        let spec = ServerSpec::resolve(
            "x",
            &McpServerConfig::default(),
            String::new(),
            Path::new("/p"),
        );
        assert!(matches!(&spec.transport, Transport::Invalid(r) if r.contains("neither")));
        assert_eq!(spec.startup_timeout, Duration::from_secs(60));
        assert_eq!(spec.tool_timeout, Duration::from_secs(60));
        assert!(spec.enabled);
        let bad = McpServerConfig {
            url: Some("ftp://x".into()),
            startup_timeout_sec: Some(-1.0),
            ..Default::default()
        };
        let spec = ServerSpec::resolve("x", &bad, String::new(), Path::new("/p"));
        assert!(matches!(&spec.transport, Transport::Invalid(r) if r.contains("http://")));
        assert_eq!(spec.startup_timeout, Duration::from_secs(60));
    }

    #[test]
    fn tool_filters() {
        let entry = McpServerConfig {
            command: Some("x".into()),
            enabled_tools: Some(vec!["a".into(), "b".into()]),
            disabled_tools: Some(vec!["b".into()]),
            ..Default::default()
        };
        let spec = ServerSpec::resolve("x", &entry, String::new(), Path::new("/p"));
        assert!(spec.mounts("a"));
        assert!(!spec.mounts("b"));
        assert!(!spec.mounts("c"));
    }
}
