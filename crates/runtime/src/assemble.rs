//! Assembly: from a [`Config`] to the registry and dispatcher every front end shares.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::audit::AuditLog;
use crate::secrets::{mcp_sandbox, shell_sandbox};
use toolgate_budget::{Budget, SharedSpills, SpillStore};
use toolgate_config::{Config, ConfigError};
use toolgate_core::disclosure::SessionFacts;
use toolgate_core::{
    ClientProfiles, Disclosure, DispatchLimits, Dispatcher, Policy, RateLimits, Registry,
    RenderOptions, Scope, StaticProvider,
};
use toolgate_fs::{ControlFiles, Covers, HardLinks, LaunchFile, Roots};
use toolgate_gateway::{
    CatalogCache, ClientRoots, Discovered, Gateway, GatewayLimits, ImportOptions, TokenStore,
    TrustStore, WebLogins, discover,
};
use toolgate_skills::{CatalogText, HomeDirs, RootKind, ScopeChain, SkillToolProvider, Skills};

/// Everything a front end (`serve`, `call`, `tools`) needs, built once from config.
#[derive(Debug)]
pub struct Runtime {
    /// The configuration it was built from.
    pub config: Config,
    /// Confinement roots (the spill folder is a read-only root).
    pub roots: Arc<Roots>,
    /// Where over-budget results are kept.
    pub spill: Arc<SpillStore>,
    /// The tool registry (built-ins in the global layer).
    pub registry: Arc<Registry>,
    /// Dispatcher over the global scope.
    pub dispatcher: Arc<Dispatcher>,
    /// Rendering options.
    pub render: RenderOptions,
    /// Mounted MCP servers (registered, not started: `serve` starts them in the
    /// background, one-shot commands start what they need).
    pub gateway: Arc<Gateway>,
    /// The logins per caller the gateway starts and `serve --http` serves the pages of
    /// (`/oauth/start`, `/oauth/callback`); `None` when not serving HTTP.
    pub web_logins: Option<Arc<WebLogins>>,
    /// Progressive disclosure over the dispatcher's scope (`search_tool`, `run_tool`).
    pub disclosure: Arc<Disclosure>,
    /// Client profiles (built-ins plus `[clients.NAME]`), chosen per MCP session.
    pub profiles: ClientProfiles,
    /// The skill catalog (watched): the `skill` tool in the registry reads it, `serve`
    /// serves it as prompts, `toolgate skills` lists it; other front ends use it as is.
    pub skills: Arc<Skills>,
    /// The `skill` tool's provider (its catalog text, within the render budget).
    pub skill_tool: Arc<SkillToolProvider>,
}

impl Runtime {
    /// Builds the runtime; relative roots are taken from `cwd`.
    pub fn new(config: Config, cwd: &Path) -> Result<Self, ConfigError> {
        Self::with_facts(config, cwd, &SessionFacts::default())
    }

    /// [`Runtime::new`] for a session whose model provider is known (the agent CLI), so
    /// `[disclosure] promote` rules on `provider` apply.
    pub fn with_facts(
        config: Config,
        cwd: &Path,
        facts: &SessionFacts,
    ) -> Result<Self, ConfigError> {
        let dirs: Vec<_> = if config.roots.is_empty() {
            vec![cwd.to_path_buf()]
        } else {
            config.roots.iter().map(|r| cwd.join(r)).collect()
        };
        toolgate_contain::init(config.shell.containment).map_err(ConfigError::refused)?;
        let control_files = match config.permissions.allow_control_files {
            true => ControlFiles::Writable,
            false => ControlFiles::Protected,
        };
        // Either layer may turn the refusal on (the project's may only tighten).
        let hard_links = match config.permissions.refuse_hard_links
            || config.project_permissions.refuse_hard_links
        {
            true => HardLinks::Refused,
            false => HardLinks::Allowed,
        };
        let roots = Roots::new(&dirs)
            .map_err(|e| ConfigError::part("roots", e))?
            .with_control_files(control_files)
            .with_hard_links(hard_links);
        // The project's folders, as mounted servers see them in `roots/list` (skill folders
        // and the spill store, roots of toolgate's own tools, are not theirs).
        let project_roots = roots.roots();
        // Trust is decided before the tools exist: the files trusted servers run are control
        // files for the write tools.
        let servers = discover_servers(&config, &roots)?;
        let roots = roots.with_launch_files(launch_files(&servers));
        // The spill store: under the first root unless configured elsewhere; readable through
        // read_file wherever it is, writable by no tool.
        let spill_dir = roots.primary().join(&config.budget.spill_dir);
        check_spill_dir(&roots, &spill_dir)?;
        let roots = roots.with_spill_dir(&spill_dir);
        let (skills, roots) = discover_skills(&config, roots);
        let roots = Arc::new(roots);
        let mut spill = SpillStore::new(spill_dir, config.budget.spill_quota_bytes);
        // Replicas share spill files through object storage; reaching it is checked (and
        // warned about) by `serve`, which runs with local spills either way.
        if let Some(url) = &config.budget.spill_store {
            let shared = SharedSpills::from_url(url).map_err(ConfigError::refused)?;
            spill = spill.with_shared(shared);
        }
        let spill = Arc::new(spill);
        let budget = Arc::new(Budget::new(
            config.budget.clone(),
            Arc::clone(&spill),
            roots.primary().to_path_buf(),
        ));
        let policy = Policy::from_lists(
            &config.permissions.allow,
            &config.permissions.ask,
            &config.permissions.deny,
        )
        .map_err(|e| ConfigError::part("permissions", e))?;
        // The project layer's rules can only make a decision stricter.
        let project = &config.project_permissions;
        let project_policy = Policy::from_lists(&project.allow, &project.ask, &project.deny)
            .map_err(|e| ConfigError::part("project permissions", e))?;
        let policy = policy.tightened_by("project config", project_policy);
        // Mounted servers' requests to the client (`mcp.sample`, `mcp.elicit`) obey it too.
        let relay_policy = Arc::new(policy.clone());
        let registry = Arc::new(Registry::new());
        // Filtering: denied tools leave the lists (per session for conditional rules).
        policy.filter_lists_of(&registry);
        let mut builtins = toolgate_fs::builtin_fs_tools_with(
            Arc::clone(&roots),
            toolgate_fs::FsLimits {
                read: config.read.clone(),
                search: config.search.clone(),
            },
            Some(Arc::clone(&spill)),
        );
        builtins.extend(toolgate_shell::builtin_shell_tools_in(
            Arc::clone(&roots),
            Arc::clone(&budget),
            config.shell.clone(),
            shell_sandbox(&config, &roots),
        ));
        registry
            .register(None, Arc::new(StaticProvider::new("builtin", builtins)), 0)
            .map_err(|e| ConfigError::part("built-in tools", e))?;
        let skill_tool = SkillToolProvider::new(
            Arc::clone(&skills),
            Some(Arc::clone(&roots)),
            skill_catalog_budget(&config)?,
        );
        skill_tool
            .attach(&registry)
            .map_err(|e| ConfigError::part("skills", e))?;
        // Server mode knows no model provider; the agent CLI passes its own facts.
        let disclosure =
            Arc::new(Disclosure::new(&config.disclosure, facts).map_err(ConfigError::refused)?);
        disclosure
            .attach(&registry, Scope::global())
            .map_err(|e| ConfigError::part("disclosure tools", e))?;
        let limits = DispatchLimits {
            default_timeout: Duration::from_millis(config.dispatch.default_timeout_ms),
            // run_shell enforces its own [shell] timeout; its deadline here sits just above
            // it, so the tool's timeout fires first and the model gets the output so far.
            max_timeout: Duration::from_millis(config.dispatch.max_timeout_ms)
                .max(config.shell.call_deadline()),
        };
        let mut dispatcher =
            Dispatcher::new(Arc::clone(&registry), Scope::global(), policy, limits)
                .with_budget(Arc::clone(&budget) as Arc<dyn toolgate_core::ResultBudget>);
        // Every front end's calls pass this dispatcher, so its audit hook sees them all.
        if let Some(audit) = AuditLog::from_config(&config.audit)? {
            dispatcher = dispatcher.with_audit(Arc::new(audit));
        }
        let rate_limits = RateLimits::new(
            config.rate_limits.per_minute,
            config.rate_limits.burst,
            &config.rate_limits.tools,
        )
        .map_err(ConfigError::refused)?;
        dispatcher = dispatcher.with_rate_limits(Arc::new(rate_limits));
        let dispatcher = Arc::new(dispatcher);
        let render = RenderOptions {
            description_budget: config.render.description_budget,
        };
        let web_logins = web_logins(&config);
        // A `prefix = "never"` server may not take a skill's prompt name (`serve` offers both).
        let skill_prompts = skills
            .catalog()
            .user_visible()
            .map(|skill| skill.name.clone())
            .collect();
        let gateway = mount_servers(
            &config,
            servers,
            &roots,
            (project_roots, relay_policy),
            (&registry, web_logins.clone(), skill_prompts),
        )?;
        // Mounted servers' prompts and resource reads served over MCP get the tools' budget.
        gateway.use_budget(budget);
        // A binary resource too large to send goes to the spill store, like a long output.
        let store = Arc::clone(&spill);
        gateway.use_blob_spill(Arc::new(move |label: &str, bytes: &[u8]| {
            store.write(label, bytes).map(|file| file.path)
        }));
        let profiles = ClientProfiles::with_config(&config.clients);
        Ok(Self {
            profiles,
            config,
            spill,
            roots,
            registry,
            dispatcher,
            render,
            gateway,
            web_logins,
            disclosure,
            skills,
            skill_tool,
        })
    }

    /// The skill catalog as the model reads it in the `skill` tool's description.
    pub fn skill_catalog(&self) -> CatalogText {
        self.skill_tool.catalog_text()
    }
}

/// Smallest `skills.catalog_chars`: the preamble, a few entries and the closing line.
const MIN_CATALOG_CHARS: usize = 512;

/// The `skill` description budget: `skills.catalog_chars`, never past the render budget
/// (a longer description would be cut by the renderer, losing the closing line).
fn skill_catalog_budget(config: &Config) -> Result<usize, ConfigError> {
    let chars = config.skills.catalog_chars;
    if chars < MIN_CATALOG_CHARS {
        return Err(ConfigError::Invalid(format!(
            "skills.catalog_chars = {chars} leaves no room for the catalog; use at least {MIN_CATALOG_CHARS} (default 2048)"
        )));
    }
    Ok(chars.min(config.render.description_budget))
}

/// Discovers the skills of the project (the first root) and lets read_file read the skill
/// folders outside the project (user and custom roots, and where their symlinked skills
/// lead), so the bundled-file paths the `skill` tool returns can be read.
fn discover_skills(config: &Config, roots: Roots) -> (Arc<Skills>, Roots) {
    let chain = ScopeChain::resolve(roots.primary(), &config.skills.roots, &HomeDirs::from_env());
    let skills = Arc::new(Skills::new(config.skills.clone(), chain));
    let mut roots = roots;
    let project = roots.primary().to_path_buf();
    for root in skills.chain().roots() {
        if root.kind != RootKind::Project && !root.path.starts_with(&project) {
            roots = roots.with_read_only(&root.path);
        }
    }
    let catalog = skills.catalog();
    for skill in catalog.skills.values() {
        if let Some(dir) = &skill.dir
            && skill.root.kind != RootKind::Project
            && let Ok(real) = fs_err::canonicalize(dir)
            && !real.starts_with(&skill.root.path)
            && !real.starts_with(&project)
        {
            roots = roots.with_read_only(&real);
        }
    }
    (skills, roots)
}

/// The configured and imported MCP servers (toolgate's own config last), with trust
/// decided for those defined by project files.
pub(crate) fn discover_servers(config: &Config, roots: &Roots) -> Result<Discovered, ConfigError> {
    let project_dir = roots.primary();
    let mut options = ImportOptions::standard(project_dir.to_path_buf(), config.mcp.import);
    options.project_servers = config.project_servers.clone();
    let mut discovered = discover(&config.mcp_servers, &config.mcp_sources, &options);
    // Servers from project files start only once the user trusted them, as they were then
    // (command and the project files it runs).
    let trust = TrustStore::load(config.trust_file.clone())
        .map_err(|e| ConfigError::part("trusted MCP servers", e))?;
    trust.apply(project_dir, &roots.roots(), &mut discovered);
    Ok(discovered)
}

/// The files trusted project servers run, for the write tools to leave alone.
pub(crate) fn launch_files(servers: &Discovered) -> Vec<LaunchFile> {
    let mut files = Vec::new();
    for spec in &servers.servers {
        let Some(launch) = &spec.launch else { continue };
        if !spec.enabled || !spec.trust.allows_start() {
            continue;
        }
        let file = |path: &PathBuf, covers| LaunchFile {
            path: path.clone(),
            covers,
            server: spec.name.clone(),
        };
        files.extend(launch.protect.iter().map(|p| file(p, Covers::File)));
        files.extend(launch.protect_dirs.iter().map(|p| file(p, Covers::Folder)));
    }
    files
}

/// The table of logins per caller under `serve --http`: browsers come back to
/// `[server] public_url`, else the listen address (bound before the runtime is built, so
/// a port 0 is a real port here). `None` without an HTTP listener.
fn web_logins(config: &Config) -> Option<Arc<WebLogins>> {
    let addr = config.server.http.as_deref()?;
    let base = match &config.server.public_url {
        Some(url) => url.clone(),
        None => format!("http://{}", addr.parse::<SocketAddr>().ok()?),
    };
    Some(Arc::new(WebLogins::new(&base)))
}

/// Registers the MCP servers in `registry` (nothing starts yet), with the browser logins
/// of `serve --http` and the prompt names the skills take.
fn mount_servers(
    config: &Config,
    discovered: Discovered,
    roots: &Roots,
    (project_roots, policy): (Vec<PathBuf>, Arc<Policy>),
    (registry, web_logins, skill_prompts): (&Arc<Registry>, Option<Arc<WebLogins>>, Vec<String>),
) -> Result<Arc<Gateway>, ConfigError> {
    let limits = GatewayLimits {
        max_list_pages: config.mcp.max_list_pages,
        max_tools_per_server: config.mcp.max_tools_per_server,
        max_inline_chars: config.budget.per_result_chars,
        sandbox: Arc::new(mcp_sandbox(config, roots)),
        roots: project_roots,
        // Roots given (`roots`, `--root`) draw the project's borders: a client's roots are
        // cut to them. None given, toolgate's root is only where it was started: the client
        // knows better.
        client_roots: match config.roots.is_empty() {
            true => ClientRoots::Relayed,
            false => ClientRoots::WithinConfigured,
        },
        policy,
        ..GatewayLimits::default()
    };
    let mut gateway = Gateway::builder(discovered, limits, registry).reserve_prompts(skill_prompts);
    let shared = config.mcp.shared_store.as_deref();
    if config.mcp.catalog_cache {
        let cache = match shared {
            Some(url) => Some(CatalogCache::redis(url).map_err(ConfigError::refused)?),
            None => CatalogCache::user_dir().map(CatalogCache::new),
        };
        if let Some(cache) = cache {
            gateway = gateway.catalog(cache);
        }
    }
    gateway = match shared {
        Some(url) => gateway.token_store(TokenStore::redis(url).map_err(ConfigError::refused)?),
        None => gateway.token_store_mode(config.mcp.oauth_credentials_store),
    };
    if let Some(logins) = web_logins {
        gateway = gateway.web_logins(logins);
    }
    let gateway = gateway
        .build()
        .map_err(|e| ConfigError::part("mcp_servers", e))?;
    Ok(Arc::new(gateway))
}

/// Refuses a spill folder inside a root or the user's cache folder with a symlink anywhere
/// between that folder and it (a repository shipping `.toolgate/spill -> /somewhere`, or a
/// project file naming `~/.cache/toolgate/link`, would make `/somewhere` readable and receive
/// the spill files). The store itself is opened through a descriptor that refuses symlinks
/// (`Roots::with_spill_dir`); this gives the clear error at start-up.
fn check_spill_dir(roots: &Roots, spill_dir: &Path) -> Result<(), ConfigError> {
    let cache = toolgate_core::UserDirs::from_env()
        .cache()
        .map(Path::to_path_buf);
    for root in roots.roots().into_iter().chain(cache) {
        let Ok(rel) = spill_dir.strip_prefix(&root) else {
            continue;
        };
        let mut at = root.clone();
        for part in rel.components() {
            at.push(part);
            match fs_err::symlink_metadata(&at) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    let target = fs_err::read_link(&at)
                        .map(|t| t.display().to_string())
                        .unwrap_or_else(|_| "?".to_owned());
                    return Err(ConfigError::Invalid(format!(
                        "the spill folder `{}` goes through the symlink `{}` (-> `{target}`); toolgate writes over-budget outputs there and lets read_file read it, so it must be a real folder: remove the link (`rm {}`), or set budget.spill_dir in your user config",
                        spill_dir.display(),
                        at.display(),
                        at.display()
                    )));
                }
                Ok(meta) if !meta.is_dir() => {
                    return Err(ConfigError::Invalid(format!(
                        "the spill folder `{}` cannot be created: `{}` is a file; remove it or set budget.spill_dir",
                        spill_dir.display(),
                        at.display()
                    )));
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    }
    Ok(())
}
