//! Loading and merging the layers with figment.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use figment::Figment;
use figment::providers::{Env, Format, Serialized};
use figment::value::Value as FValue;
use serde::{Deserialize, Serialize};
use toolgate_budget::BudgetLimits;
use toolgate_fs::{ReadLimits, SearchLimits};
use toolgate_gateway::{GatewayConfig, McpServerConfig};
use toolgate_shell::ShellLimits;

use crate::error::ConfigError;
use crate::permissions::PermissionsConfig;
use crate::project::{ProjectLayer, user_import, user_skills};

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Folders tools may touch; `[]` = the current directory. The first is the project root
    /// that relative paths resolve against.
    pub roots: Vec<PathBuf>,
    /// `read_file` / `list_dir`.
    pub read: ReadLimits,
    /// `search_files` / `grep`.
    ///
    /// Budgets: deadline, entries scanned, results, payload.
    pub search: SearchLimits,
    /// `run_shell` / `job_output` / `job_kill`.
    ///
    /// Limits: timeouts, memory, jobs, containment and sandbox.
    pub shell: ShellLimits,
    /// Runtime limits: never part of what the model sees.
    pub dispatch: DispatchConfig,
    /// Output budget and lossless spill.
    pub budget: BudgetLimits,
    /// How tool arrays are rendered for the model.
    pub render: RenderConfig,
    /// allow / ask / deny rules. No rules = allow everything (the MCP client asks its user).
    pub permissions: PermissionsConfig,
    /// `toolgate serve`. User layers only: a project file may set none of it (who connects,
    /// how many sessions live and what `/metrics` serves are the operator's to decide).
    pub server: ServerConfig,
    /// MCP servers to mount (see mcp-servers.md): `command` for a stdio server or `url` for a
    /// Streamable HTTP one. Servers are also imported from other clients' files; an entry
    /// naming one adjusts it.
    ///
    /// Imported by `toolgate_gateway::discover`.
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// The gateway (see mcp-servers.md).
    pub mcp: GatewayConfig,
    /// Progressive disclosure (see disclosure.md): direct vs deferred tools, `search_tool`,
    /// `run_tool`.
    pub disclosure: toolgate_core::DisclosureSettings,
    /// Client profiles (see clients.md): how large a result each MCP client passes to the
    /// model untouched, whether it shows `structuredContent`, which argument fields it adds
    /// to every call and how it names toolgate's tools. Adjusts the built-in `claude-code`,
    /// `codex`, `gemini` and `default` (unknown clients) profiles, or adds one.
    pub clients: BTreeMap<String, toolgate_core::ClientProfileConfig>,
    /// Model providers for `toolgate run` / `chat`; user layers only. None by default:
    /// `openai` and `anthropic` work without an entry.
    pub providers: BTreeMap<String, toolgate_providers::ProviderConfig>,
    /// `toolgate run` / `chat` (user layers may set everything).
    pub agent: toolgate_agent::AgentSettings,
    /// Skills (see skills.md).
    pub skills: toolgate_skills::SkillsConfig,
    /// The audit log (see operations.md): one JSON line per tool call, off by default. User
    /// layers only: a project file may not set it.
    pub audit: crate::AuditConfig,
    /// Calls per minute per caller (see operations.md), off by default. User layers only: a
    /// project file may not set it.
    pub rate_limits: crate::RateLimitConfig,
    /// OpenTelemetry traces over OTLP (see operations.md), off by default. User layers only:
    /// a project file may not set it.
    pub telemetry: crate::TelemetryConfig,
    /// Which file each `[mcp_servers.NAME]` came from; filled by [`load`].
    #[serde(skip)]
    pub mcp_sources: BTreeMap<String, String>,
    /// The project layer's permission rules, kept apart: they can only tighten the other
    /// layers' (a project `deny = []` removes nothing; see [`crate::project`]).
    #[serde(skip)]
    pub project_permissions: PermissionsConfig,
    /// `[mcp_servers]` entries the project layer set or adjusted: they start only once the
    /// user trusted them (`toolgate mcp trust`).
    #[serde(skip)]
    pub project_servers: BTreeSet<String>,
    /// The folder whose `.toolgate/config.toml` was the project layer: the first root.
    #[serde(skip)]
    pub project_dir: Option<PathBuf>,
    /// Where `toolgate mcp trust` records trusted project servers; `None` trusts none.
    #[serde(skip)]
    pub trust_file: Option<PathBuf>,
}

/// Dispatcher time limits (runtime settings: never rendered).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct DispatchConfig {
    /// For tools that declare no timeout, in milliseconds.
    pub default_timeout_ms: u64,
    /// No call runs longer, in milliseconds.
    pub max_timeout_ms: u64,
}

impl Default for DispatchConfig {
    fn default() -> Self {
        Self {
            default_timeout_ms: 120_000,
            max_timeout_ms: 600_000,
        }
    }
}

/// Rendering settings (assembly-time: they change what the model sees).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RenderConfig {
    /// Characters per tool description; longer ones are cut visibly.
    pub description_budget: usize,
}

impl Default for RenderConfig {
    fn default() -> Self {
        Self {
            description_budget: toolgate_core::RenderOptions::default().description_budget,
        }
    }
}

/// `toolgate serve` settings.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Serve Streamable HTTP on this address; unset by default = stdio. Same as `--http`.
    #[schemars(example = &"127.0.0.1:8765")]
    pub http: Option<String>,
    /// Variable holding the HTTP bearer token.
    pub token_env: String,
    /// Browser origins allowed besides loopback ones.
    pub allowed_origins: Vec<String>,
    /// `Host` names accepted besides loopback ones and the bound address: the name clients
    /// reach a load balancer by when it forwards to toolgate on loopback or one interface.
    #[schemars(example = &["mcp.example.com"])]
    pub allowed_hosts: Vec<String>,
    /// The URL browsers reach this toolgate at, for the redirect of logins users make as
    /// themselves (`{public_url}/oauth/callback`, see `[mcp_servers.NAME.oauth] per_user`);
    /// unset = `http://` + the bound address. Set it behind a proxy or load balancer.
    #[schemars(example = &"https://toolgate.example.com")]
    pub public_url: Option<String>,
    /// Stderr: `error` | `warn` | `info` | `debug` | `trace`; `--log-level` and `RUST_LOG`
    /// win.
    pub log_level: String,
    /// Live HTTP sessions; past it the least recently active is closed.
    ///
    /// Each abandoned session otherwise holds ~61 KB for 5 minutes.
    pub max_sessions: usize,
    /// Serve Prometheus metrics at `/metrics` beside `/mcp` (HTTP only, behind the same
    /// token): tool calls, latency, spills, sessions, mounted servers' health.
    pub metrics: bool,
    /// OAuth access tokens accepted at `/mcp` (see serving.md): toolgate as an MCP resource
    /// server. Off until `issuer` is set.
    pub auth: ServerAuthConfig,
}

/// `[server.auth]`: which OAuth access tokens `serve --http` accepts, besides the static
/// token. User layers only.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ServerAuthConfig {
    /// The authorization server whose JWT access tokens are accepted, exactly as it names
    /// itself (`iss`); https (http only on loopback). Its keys are found through its
    /// metadata.
    #[schemars(example = &"https://login.example.com")]
    pub issuer: Option<String>,
    /// The `aud` a token must name: the identifier of this toolgate at the issuer (often its
    /// /mcp URL). Required with `issuer`.
    #[schemars(example = &"https://toolgate.example.com/mcp")]
    pub audience: Option<String>,
    /// Scopes every token must grant; a token without them gets 403 `insufficient_scope`.
    pub required_scopes: Vec<String>,
}

impl ServerAuthConfig {
    /// Whether `[server.auth]` asks for OAuth at all (any key set).
    pub fn is_set(&self) -> bool {
        self.issuer.is_some() || self.audience.is_some() || !self.required_scopes.is_empty()
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            http: None,
            token_env: "TOOLGATE_TOKEN".to_owned(),
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            public_url: None,
            log_level: "info".to_owned(),
            max_sessions: 256,
            metrics: true,
            auth: ServerAuthConfig::default(),
        }
    }
}

/// Values given on the command line; `None` leaves lower layers alone.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    /// `--root` (repeatable).
    pub roots: Vec<PathBuf>,
    /// `--http ADDR`.
    pub http: Option<String>,
    /// `--log-level`.
    pub log_level: Option<String>,
    /// `--disclosure proxy|backfill|off`.
    pub disclosure: Option<DisclosureFlag>,
}

/// `toolgate serve --disclosure`: how deferred tools reach the client, or no disclosure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DisclosureFlag {
    /// The tools array never changes; found tools are called through `run_tool`.
    Proxy,
    /// Found tools join the session's `tools/list` (announced with `list_changed`).
    Backfill,
    /// Every tool is direct.
    Off,
}

/// Where to look for the layers.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// The current folder: relative roots are taken from it, and without any root it is
    /// the project whose `.toolgate/config.toml` is the project layer. With roots (from
    /// flags, environment, `--config` or the user file) the first root is the project.
    pub project_dir: PathBuf,
    /// The user config file; `None` skips the layer.
    pub user_file: Option<PathBuf>,
    /// `--config FILE`: must exist.
    pub explicit_file: Option<PathBuf>,
    /// Whether to read `TOOLGATE_*` variables.
    pub use_env: bool,
    /// Command-line values.
    pub flags: Flags,
    /// Where trusted project servers are recorded (`toolgate mcp trust`); `None` trusts
    /// none.
    pub trust_file: Option<PathBuf>,
}

impl LoadOptions {
    /// The standard layers for a process started in `project_dir`.
    pub fn standard(project_dir: PathBuf, explicit_file: Option<PathBuf>, flags: Flags) -> Self {
        let user_file = toolgate_core::UserDirs::from_env()
            .config()
            .map(|dir| dir.join("toolgate").join("config.toml"));
        Self {
            project_dir,
            user_file,
            explicit_file,
            use_env: true,
            flags,
            trust_file: toolgate_gateway::TrustStore::default_path(),
        }
    }
}

/// Top-level keys `TOOLGATE_*` may set; other `TOOLGATE_*` variables (such as the token) are
/// not config.
const ENV_KEYS: [&str; 19] = [
    "roots",
    "read",
    "search",
    "shell",
    "dispatch",
    "budget",
    "render",
    "permissions",
    "server",
    "mcp_servers",
    "mcp",
    "disclosure",
    "clients",
    "providers",
    "agent",
    "skills",
    "audit",
    "rate_limits",
    "telemetry",
];

/// The merged configuration with its figment, for provenance.
#[derive(Debug)]
pub struct Loaded {
    /// The merged values.
    pub config: Config,
    figment: Figment,
}

/// Loads and merges every layer. The project layer is read from the first root the other
/// layers name (the current folder when none does) and can only tighten them
/// (see [`crate::project`]).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use toolgate_config::{Flags, LoadOptions, load};
///
/// let project = tempfile::tempdir()?;
/// std::fs::create_dir(project.path().join(".toolgate"))?;
/// std::fs::write(project.path().join(".toolgate/config.toml"), "[read]\nmax_lines = 500\n")?;
/// let options = LoadOptions {
///     user_file: None,
///     use_env: false,
///     ..LoadOptions::standard(project.path().to_path_buf(), None, Flags::default())
/// };
/// let loaded = load(&options)?;
/// assert_eq!(loaded.config.read.max_lines, 500);
/// assert_eq!(loaded.config.server.http, None, "stdio unless asked");
/// // Every value remembers the layer it came from.
/// let (_, _, source) = loaded.provenance().into_iter().find(|(k, _, _)| k == "read.max_lines").unwrap();
/// assert!(source.contains(".toolgate/config.toml"), "{source}");
/// # Ok(())
/// # }
/// ```
pub fn load(options: &LoadOptions) -> Result<Loaded, ConfigError> {
    let user_side = layers(options, None)?;
    let project_dir = project_dir(options, &user_side);
    let project = ProjectLayer::read(&project_dir)?;
    let figment = layers(options, project.as_ref())?;
    let mut config: Config = figment.extract().map_err(ConfigError::Types)?;
    config.mcp_sources = mcp_sources(&figment, &config);
    // `~/` in sandbox_writable and sandbox_hide is the home folder, by the same rule as every
    // user folder.
    let dirs = toolgate_core::UserDirs::from_env();
    let shell = &mut config.shell;
    for path in shell
        .sandbox_writable
        .iter_mut()
        .chain(&mut shell.sandbox_hide)
    {
        *path = dirs.expand_tilde(path);
    }
    if let Some(path) = &mut config.audit.path {
        *path = dirs.expand_tilde(path);
    }
    if let Some(project) = project {
        config.mcp.import = user_import(&user_side) && project.import.unwrap_or(true);
        config.skills.enabled = user_skills(&user_side) && project.skills_enabled.unwrap_or(true);
        project
            .isolation
            .apply(&user_side, &mut config.shell, &mut config.mcp);
        config.project_permissions = project.permissions;
        config.project_servers = project.servers;
    }
    config.project_dir = Some(project_dir);
    config.trust_file = options.trust_file.clone();
    Ok(Loaded { config, figment })
}

/// The project whose `.toolgate/config.toml` is the project layer: the first root the user's
/// own layers (`user_side`) name, else the current folder.
pub(crate) fn project_dir(options: &LoadOptions, user_side: &Figment) -> PathBuf {
    let first_root = user_side
        .extract_inner::<Vec<PathBuf>>("roots")
        .ok()
        .and_then(|roots| roots.into_iter().next());
    let project_dir = match first_root {
        Some(root) => options.project_dir.join(root),
        None => options.project_dir.clone(),
    };
    project_dir.canonicalize().unwrap_or(project_dir)
}

/// figment's TOML format, parsed by the `toml` crate the rest of toolgate uses: figment's
/// own `toml` feature brings an older `toml` and its parser, a second copy in every build.
struct Toml;

impl Format for Toml {
    type Error = toml::de::Error;

    const NAME: &'static str = "TOML";

    fn from_str<T: serde::de::DeserializeOwned>(string: &str) -> Result<T, Self::Error> {
        toml::from_str(string)
    }
}

/// Every layer in order, with `project` (checked) as the project layer.
pub(crate) fn layers(
    options: &LoadOptions,
    project: Option<&ProjectLayer>,
) -> Result<Figment, ConfigError> {
    let mut figment = Figment::from(Named::new(
        "default",
        Serialized::defaults(Config::default()),
    ));
    // A missing user or project file is simply an absent layer.
    if let Some(user) = options.user_file.as_ref().filter(|f| f.is_file()) {
        figment = figment.merge(Toml::file_exact(user));
    }
    if let Some(project) = project {
        figment = figment.merge(project);
    }
    if let Some(explicit) = &options.explicit_file {
        if !explicit.is_file() {
            return Err(ConfigError::Missing(explicit.clone()));
        }
        figment = figment.merge(Toml::file_exact(explicit));
    }
    if options.use_env {
        figment = figment.merge(Env::prefixed("TOOLGATE_").split("__").filter(|k| {
            // Keys keep the variable's case here; compare without it.
            let top = k.as_str().split('.').next().unwrap_or_default();
            ENV_KEYS.iter().any(|known| known.eq_ignore_ascii_case(top))
        }));
    }
    let flags = &options.flags;
    if !flags.roots.is_empty() {
        figment = figment.merge(Named::new(
            "--root flag",
            Serialized::default("roots", &flags.roots),
        ));
    }
    if let Some(http) = &flags.http {
        figment = figment.merge(Named::new(
            "--http flag",
            Serialized::default("server.http", http),
        ));
    }
    if let Some(level) = &flags.log_level {
        figment = figment.merge(Named::new(
            "--log-level flag",
            Serialized::default("server.log_level", level),
        ));
    }
    if let Some(flag) = flags.disclosure {
        let (key, value) = match flag {
            DisclosureFlag::Proxy => ("disclosure.exposure", "proxy"),
            DisclosureFlag::Backfill => ("disclosure.exposure", "backfill"),
            DisclosureFlag::Off => ("disclosure.mode", "off"),
        };
        figment = figment.merge(Named::new(
            "--disclosure flag",
            Serialized::default(key, value),
        ));
    }
    Ok(figment)
}

/// The layer each `[mcp_servers.NAME]` entry came from, as `config show` names it.
fn mcp_sources(figment: &Figment, config: &Config) -> BTreeMap<String, String> {
    config
        .mcp_servers
        .keys()
        .map(|name| {
            let key = format!("mcp_servers.{name}");
            // A leaf names the file that set it; the table itself may carry a default tag.
            let meta = ["command", "url", "enabled"]
                .iter()
                .find_map(|leaf| figment.find_metadata(&format!("{key}.{leaf}")))
                .or_else(|| figment.find_metadata(&key));
            let source = meta.map_or_else(
                || "toolgate config".to_owned(),
                |m| match &m.source {
                    Some(src) => src.to_string(),
                    None => m.name.to_string(),
                },
            );
            (name.clone(), source)
        })
        .collect()
}

/// A provider shown under a name of our choosing in provenance ("--root flag").
struct Named<P> {
    name: &'static str,
    inner: P,
}

impl<P> Named<P> {
    fn new(name: &'static str, inner: P) -> Self {
        Self { name, inner }
    }
}

impl<P: figment::Provider> figment::Provider for Named<P> {
    fn metadata(&self) -> figment::Metadata {
        figment::Metadata::named(self.name)
    }

    fn data(
        &self,
    ) -> Result<figment::value::Map<figment::Profile, figment::value::Dict>, figment::Error> {
        self.inner.data()
    }
}

impl Loaded {
    /// Every leaf value as `(key, value, source)`, sorted by key.
    pub fn provenance(&self) -> Vec<(String, String, String)> {
        let mut out = Vec::new();
        if let Ok(value) = self.figment.extract::<FValue>() {
            self.walk("", &value, &mut out);
        }
        // The project layer's rules are not merged: they only tighten.
        let project = &self.config.project_permissions;
        let source = self.config.project_dir.as_ref().map_or_else(
            || "project config".to_owned(),
            |d| {
                format!(
                    "{} (tighten-only)",
                    d.join(".toolgate/config.toml").display()
                )
            },
        );
        for (list, rules) in [
            ("allow", &project.allow),
            ("ask", &project.ask),
            ("deny", &project.deny),
        ] {
            if !rules.is_empty() {
                let shown = serde_json::to_string(rules).unwrap_or_default();
                out.push((format!("project.permissions.{list}"), shown, source.clone()));
            }
        }
        out
    }

    fn walk(&self, prefix: &str, value: &FValue, out: &mut Vec<(String, String, String)>) {
        match value {
            FValue::Dict(_, dict) => {
                for (k, v) in dict {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    self.walk(&key, v, out);
                }
            }
            leaf => {
                let source = self
                    .figment
                    .find_metadata(prefix)
                    .map(|m| match &m.source {
                        Some(src) => format!("{} ({src})", m.name),
                        None => m.name.to_string(),
                    })
                    .unwrap_or_else(|| "default".to_owned());
                let shown = if is_secret(prefix) {
                    "\"***\"".to_owned()
                } else {
                    serde_json::to_string(&leaf).unwrap_or_default()
                };
                out.push((prefix.to_owned(), shown, source));
            }
        }
    }
}

/// The keys whose values are secrets, which `config show` masks: `*` stands for any one part
/// of the dotted key (a server name, a variable or header name). Declared with the fields
/// that hold secrets, never guessed from a key's name: `agent.context_tokens` is a number and
/// `bearer_token_env` names a variable. A new secret-bearing field (an OAuth client secret,
/// say) is added here in the same change.
pub const SECRET_KEYS: &[&str] = &[
    "mcp_servers.*.env.*",
    "mcp_servers.*.headers.*",
    "telemetry.headers.*",
];

/// Whether `config show` must mask the value at `key` (see [`SECRET_KEYS`]).
fn is_secret(key: &str) -> bool {
    let parts: Vec<&str> = key.split('.').collect();
    SECRET_KEYS.iter().any(|pattern| {
        let want: Vec<&str> = pattern.split('.').collect();
        want.len() == parts.len() && want.iter().zip(&parts).all(|(w, p)| *w == "*" || w == p)
    })
}

#[cfg(test)]
mod tests {
    use super::is_secret;

    #[test]
    fn declared_secrets_are_masked_and_names_that_merely_look_secret_are_not() {
        assert!(is_secret("mcp_servers.github.env.GITHUB_TOKEN"));
        assert!(is_secret("mcp_servers.api.headers.Authorization"));
        assert!(is_secret("telemetry.headers.x-api-key"));
        assert!(is_secret("mcp_servers.x.env.PLAIN"));
        assert!(!is_secret("mcp_servers.api.bearer_token_env"));
        // Named like a credential, but a number and a variable name: shown.
        assert!(!is_secret("agent.context_tokens"));
        assert!(!is_secret("providers.openai.max_tokens"));
        assert!(!is_secret("providers.openai.api_key_env"));
        assert!(!is_secret("server.token_env"));
        assert!(!is_secret("read.max_lines"));
        assert!(!is_secret("mcp_servers.github.command"));
    }
}
