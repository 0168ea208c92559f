//! The agent loop against a scripted model over real HTTP, over the real built-in tools.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

#[path = "all/compaction.rs"]
mod compaction;
#[path = "all/disclosure.rs"]
mod disclosure;
#[path = "all/turns.rs"]
mod turns;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use toolgate_agent::{Agent, AgentSettings, Outcome, Progress, Tools};
use toolgate_budget::{Budget, BudgetLimits, SpillStore};
use toolgate_core::disclosure::SessionFacts;
use toolgate_core::{
    Approval, Disclosure, DisclosureSettings, DispatchLimits, Dispatcher, Policy, Registry,
    RenderOptions, Scope, StaticProvider,
};
use toolgate_providers::fake::FakeServer;
use toolgate_providers::{Kind, Provider, ProviderConfig, RetryConfig};

/// A project folder with the runtime every front end builds (built-in file and shell
/// tools, per-turn budget, spill store, disclosure), assembled by hand.
pub struct Rig {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub tools: Tools,
}

pub fn rig(disclosure: DisclosureSettings, policy: Policy) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("README.md"), "# demo\nhello from the readme\n").unwrap();
    let spill_dir = root.join(".toolgate/spill");
    let roots = Arc::new(
        toolgate_fs::Roots::new([root.clone()])
            .unwrap()
            .with_read_only(&spill_dir),
    );
    let spill = Arc::new(SpillStore::new(spill_dir, 1 << 30));
    let budget = Arc::new(Budget::new(
        BudgetLimits::default(),
        Arc::clone(&spill),
        root.clone(),
    ));
    let registry = Arc::new(Registry::new());
    let mut builtins = toolgate_fs::builtin_fs_tools_with(
        Arc::clone(&roots),
        toolgate_fs::FsLimits::default(),
        Some(Arc::clone(&spill)),
    );
    builtins.extend(toolgate_shell::builtin_shell_tools(
        Arc::clone(&roots),
        Arc::clone(&budget),
        toolgate_shell::ShellLimits::default(),
    ));
    registry
        .register(None, Arc::new(StaticProvider::new("builtin", builtins)), 0)
        .unwrap();
    let disclosure = Arc::new(Disclosure::new(&disclosure, &SessionFacts::default()).unwrap());
    disclosure.attach(&registry, Scope::global()).unwrap();
    let dispatcher = Arc::new(
        Dispatcher::new(registry, Scope::global(), policy, DispatchLimits::default())
            .with_budget(budget),
    );
    Rig {
        dir,
        root: root.clone(),
        tools: Tools {
            dispatcher,
            disclosure,
            render: RenderOptions::default(),
            spill: Some(spill),
            root,
        },
    }
}

pub fn provider(kind: Kind, fake: &FakeServer, stream: bool) -> Provider {
    let config = ProviderConfig {
        kind,
        base_url: Some(fake.url().to_owned()),
        model: Some("fake-model".to_owned()),
        stream: Some(stream),
        retry: RetryConfig {
            max_retries: 2,
            initial_backoff_ms: 1,
            max_backoff_ms: 1_000,
        },
        ..ProviderConfig::default()
    };
    let env: HashMap<String, String> = HashMap::new();
    Provider::new("fake", &config, |n| env.get(n).cloned()).unwrap()
}

pub const MODES: [(Kind, bool); 4] = [
    (Kind::OpenAi, false),
    (Kind::OpenAi, true),
    (Kind::Anthropic, false),
    (Kind::Anthropic, true),
];

/// Runs `task` to its end, collecting progress.
pub async fn run(agent: &mut Agent, task: &str) -> (Outcome, Vec<Progress>) {
    let mut seen = Vec::new();
    let outcome = agent
        .run(task, &mut |p| seen.push(p), &CancellationToken::new())
        .await;
    (outcome, seen)
}

/// An agent over `rig` talking to `fake`, nobody answering `ask` rules.
pub fn agent(rig: &Rig, kind: Kind, fake: &FakeServer, stream: bool) -> Agent {
    agent_approved_by(rig, kind, fake, stream, Approval::Nobody)
}

/// An agent over `rig` talking to `fake`, `approval` answering `ask` rules.
pub fn agent_approved_by(
    rig: &Rig,
    kind: Kind,
    fake: &FakeServer,
    stream: bool,
    approval: Approval,
) -> Agent {
    Agent::new(
        rig.tools.clone(),
        provider(kind, fake, stream),
        AgentSettings::default(),
        approval,
    )
}
