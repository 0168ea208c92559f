//! A gateway in a registry with one built-in tool, a dispatcher over it, and a /proc check
//! that nothing the test started outlives it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use toolgate_core::{
    CallContext, DispatchLimits, Dispatcher, Policy, RawArgs, Registry, Scope, StaticProvider,
    ToolMeta, ToolOutput,
};
use toolgate_gateway::{
    CatalogCache, Discovered, Gateway, GatewayLimits, McpServerConfig, ServerSpec,
};
use toolgate_test_support::{FnTool, HANG_GUARD};

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Node 22 from `scripts/install-peers.sh`.
pub fn node() -> String {
    let node = root().join(".cache/peers/npm/node_modules/node/bin/node");
    assert!(
        node.exists(),
        "{} is missing: run scripts/install-peers.sh",
        node.display()
    );
    node.to_string_lossy().into_owned()
}

/// The entry script of an npm MCP server package.
pub fn npm_server(package: &str) -> String {
    let script = root()
        .join(".cache/peers/npm/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(
        script.exists(),
        "{} is missing: run scripts/install-peers.sh",
        script.display()
    );
    script.to_string_lossy().into_owned()
}

/// The `fake_server` test binary (`tests/bin/fake_server.rs`).
pub fn fake() -> String {
    env!("CARGO_BIN_EXE_fake_server").to_owned()
}

/// The `gateway_host` test binary (`tests/bin/gateway_host.rs`).
pub fn gateway_host() -> String {
    env!("CARGO_BIN_EXE_gateway_host").to_owned()
}

/// A unique marker for one test's processes.
pub fn mark() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// A stdio server entry whose processes carry `mark` in their environment.
pub fn stdio(command: &str, args: &[&str], mark: &str) -> McpServerConfig {
    McpServerConfig {
        command: Some(command.to_owned()),
        args: Some(args.iter().map(|a| (*a).to_owned()).collect()),
        env: Some([("TOOLGATE_TEST_MARK".to_owned(), mark.to_owned())].into()),
        startup_timeout_sec: Some(20.0),
        ..McpServerConfig::default()
    }
}

/// A registry with a built-in and the given servers, a dispatcher, and the test's marker.
pub struct Rig {
    pub registry: Arc<Registry>,
    pub gateway: Gateway,
    pub dispatcher: Arc<Dispatcher>,
    pub mark: String,
    pub dir: tempfile::TempDir,
}

pub struct RigBuilder {
    servers: Vec<(String, McpServerConfig)>,
    builtins: Vec<String>,
    limits: GatewayLimits,
    policy: Policy,
    budget: bool,
    catalog: Option<CatalogCache>,
    prompts: Vec<String>,
    pub mark: String,
    pub dir: tempfile::TempDir,
}

pub fn setup() -> RigBuilder {
    RigBuilder {
        servers: Vec::new(),
        builtins: Vec::new(),
        limits: GatewayLimits::default(),
        policy: Policy::allow_all(),
        budget: false,
        catalog: None,
        prompts: Vec::new(),
        mark: mark(),
        dir: tempfile::tempdir().unwrap(),
    }
}

impl RigBuilder {
    pub fn server(mut self, name: &str, config: McpServerConfig) -> Self {
        self.servers.push((name.to_owned(), config));
        self
    }

    /// A `fake_server` in `mode` with `args`.
    pub fn fake(self, name: &str, mode_and_args: &[&str]) -> Self {
        let mark = self.mark.clone();
        let log = self.dir.path().join(format!("{name}.log"));
        let mut config = stdio(&fake(), mode_and_args, &mark);
        config
            .env
            .as_mut()
            .unwrap()
            .insert("FAKE_LOG".to_owned(), log.to_string_lossy().into_owned());
        self.server(name, config)
    }

    /// One more built-in named `name`, answering `builtin {name}`.
    pub fn builtin(mut self, name: &str) -> Self {
        self.builtins.push(name.to_owned());
        self
    }

    pub fn limits(mut self, limits: GatewayLimits) -> Self {
        self.limits = limits;
        self
    }

    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    pub fn with_budget(mut self) -> Self {
        self.budget = true;
        self
    }

    /// The gateway lists what `cache` holds for its servers before they start.
    pub fn catalog(mut self, cache: CatalogCache) -> Self {
        self.catalog = Some(cache);
        self
    }

    /// Prompt names toolgate keeps for itself (a skill's).
    pub fn reserve_prompts(mut self, names: &[&str]) -> Self {
        self.prompts.extend(names.iter().map(|n| (*n).to_owned()));
        self
    }

    pub fn build(self) -> Rig {
        let registry = Arc::new(Registry::new());
        // A built-in stand-in, to see that built-ins are served beside mounted tools.
        let builtin = FnTool::new("builtin_echo")
            .describe("A built-in.")
            .meta(ToolMeta::default())
            .text("builtin ok")
            .erased();
        let mut builtins = vec![builtin];
        for name in &self.builtins {
            let text = format!("builtin {name}");
            builtins.push(
                FnTool::new(name)
                    .describe("A built-in.")
                    .meta(ToolMeta::default())
                    .text(&text)
                    .erased(),
            );
        }
        registry
            .register(None, Arc::new(StaticProvider::new("builtin", builtins)), 0)
            .unwrap();
        let servers: Vec<ServerSpec> = self
            .servers
            .iter()
            .map(|(name, config)| {
                ServerSpec::resolve(name, config, "test".to_owned(), self.dir.path())
            })
            .collect();
        let discovered = Discovered {
            servers,
            problems: Vec::new(),
        };
        let mut gateway =
            Gateway::builder(discovered, self.limits, &registry).reserve_prompts(self.prompts);
        if let Some(cache) = self.catalog {
            gateway = gateway.catalog(cache);
        }
        let gateway = gateway.build().unwrap();
        let mut dispatcher = Dispatcher::new(
            Arc::clone(&registry),
            Scope::global(),
            self.policy,
            DispatchLimits::default(),
        );
        if self.budget {
            let limits = toolgate_budget::BudgetLimits::default();
            let store = Arc::new(toolgate_budget::SpillStore::new(
                self.dir.path().join("spill"),
                limits.spill_quota_bytes,
            ));
            dispatcher = dispatcher.with_budget(Arc::new(toolgate_budget::Budget::new(
                limits,
                store,
                self.dir.path().to_path_buf(),
            )));
        }
        Rig {
            registry,
            gateway,
            dispatcher: Arc::new(dispatcher),
            mark: self.mark,
            dir: self.dir,
        }
    }
}

impl Rig {
    /// Calls `name` through the dispatcher, as a client would.
    pub async fn call(&self, name: &str, args: Value) -> ToolOutput {
        self.dispatcher
            .call(name, RawArgs::Json(args), CallContext::unattended())
            .await
    }

    /// Names of the tools in the current snapshot.
    pub fn names(&self) -> Vec<String> {
        self.dispatcher.snapshot().tools.keys().cloned().collect()
    }

    /// Waits until `name` is listed (or fails after `limit`).
    pub async fn wait_for_tool(&self, name: &str, limit: Duration) {
        let started = Instant::now();
        let mut changes = self.registry.subscribe();
        while !self.names().iter().any(|n| n == name) {
            assert!(
                started.elapsed() < limit,
                "{name} never appeared; have {:?}",
                self.names()
            );
            let _ = tokio::time::timeout(Duration::from_millis(200), changes.changed()).await;
        }
    }

    /// The fake server's log of calls and cancellations.
    pub fn fake_log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("{name}.log"))).unwrap_or_default()
    }

    /// Stops the gateway and asserts that no process of this test is left.
    pub async fn finish(self) {
        self.gateway.shutdown().await;
        assert_no_survivors(&self.mark).await;
    }
}

/// Processes (not zombies) whose environment carries `TOOLGATE_TEST_MARK=mark`.
pub fn survivors(mark: &str) -> Vec<String> {
    let needle = format!("TOOLGATE_TEST_MARK={mark}\0");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let env = String::from_utf8_lossy(&environ);
        if !env.contains(&needle) {
            continue;
        }
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let state = stat.rsplit(')').next().unwrap_or_default().trim_start();
        if state.starts_with('Z') || state.starts_with('X') {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        found.push(format!(
            "{pid}: {}",
            String::from_utf8_lossy(&cmdline).replace('\0', " ")
        ));
    }
    found
}

/// Asserts that nothing carrying `mark` runs except processes whose command line contains
/// `keep` (a server the test still uses).
pub async fn assert_no_survivors_except(mark: &str, keep: &str) {
    let started = Instant::now();
    loop {
        let left: Vec<String> = survivors(mark)
            .into_iter()
            .filter(|p| !p.contains(keep))
            .collect();
        if left.is_empty() {
            return;
        }
        assert!(
            started.elapsed() < HANG_GUARD,
            "processes survived: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Asserts that nothing carrying `mark` runs (waiting for SIGKILL to land).
pub async fn assert_no_survivors(mark: &str) {
    let started = Instant::now();
    loop {
        let left = survivors(mark);
        if left.is_empty() {
            return;
        }
        assert!(
            started.elapsed() < HANG_GUARD,
            "processes survived the test: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
