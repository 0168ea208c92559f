//! `toolgate disclosure`: the plan (direct / deferred), a search as `search_tool` runs it,
//! and the cache-prefix stability of a scripted session.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Subcommand;
use serde_json::json;
use toolgate_core::disclosure::{SimScript, StubTool, simulate};
use toolgate_core::{Disclosure, DisclosureMode, DynTool, StaticProvider};
use toolgate_runtime::Runtime;

/// Subcommands of `toolgate disclosure`.
#[derive(Debug, Subcommand)]
pub enum DisclosureCommand {
    /// Show which tools are direct and which deferred, and the catalog search_tool carries.
    Plan,
    /// Rank the tools for a query, as search_tool does.
    Search {
        /// What to look for.
        query: String,
        /// How many results (default 5, max 20).
        #[arg(long, default_value_t = 5)]
        limit: usize,
    },
    /// Play a scripted session and count the turns whose tools array changed (prefix breaks).
    Simulate {
        /// JSON script: {"protocol": "openai|anthropic|mcp", "strategy"?: "append|proxy|
        /// backfill|off", "tools"?: [{"name", "description"}], "turns": [{"search"?: [..],
        /// "unmask"?: [..], "call"?: [..]}]}.
        script: std::path::PathBuf,
        /// Disclosure mode for this run (`auto:N`, `on`, `off`); default from config.
        #[arg(long)]
        mode: Option<String>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a `toolgate disclosure` subcommand.
pub async fn run(runtime: &Runtime, command: DisclosureCommand) -> ExitCode {
    runtime.gateway.start_all().await;
    let code = match command {
        DisclosureCommand::Plan => plan(runtime),
        DisclosureCommand::Search { query, limit } => search(runtime, &query, limit),
        DisclosureCommand::Simulate { script, mode, json } => {
            simulate_script(runtime, &script, mode.as_deref(), json)
        }
    };
    runtime.gateway.shutdown().await;
    code
}

fn plan(runtime: &Runtime) -> ExitCode {
    let snapshot = runtime.dispatcher.snapshot();
    let view = runtime.disclosure.view(&snapshot);
    let plan = &view.plan;
    let mode = String::from(runtime.config.disclosure.mode);
    outln!(
        "disclosure {} ({mode}, {} tools): {} direct, {} deferred",
        if plan.active { "on" } else { "off" },
        view.tools.len(),
        plan.direct.len(),
        plan.deferred.len()
    );
    outln!("direct: {}", plan.direct.join(", "));
    if plan.active {
        let exposed = runtime.disclosure.exposed(&snapshot, &Default::default());
        if let Some(search) = exposed.all().find(|t| t.spec().name == "search_tool") {
            outln!("\nsearch_tool description:\n{}", search.spec().description);
        }
    }
    ExitCode::SUCCESS
}

fn search(runtime: &Runtime, query: &str, limit: usize) -> ExitCode {
    let snapshot = runtime.dispatcher.snapshot();
    let view = runtime.disclosure.view(&snapshot);
    let hits = view.index().search(query, limit.clamp(1, 20));
    if hits.is_empty() {
        outln!("no tools match {query:?}");
    }
    for (rank, hit) in hits.iter().enumerate() {
        let spec = view.tools[hit.doc].spec();
        let kind = if view.plan.is_deferred(&spec.name) {
            "deferred"
        } else {
            "direct"
        };
        outln!(
            "{:>2}. {:<48} {:>9.2}  {kind}",
            rank + 1,
            spec.name,
            hit.score
        );
    }
    ExitCode::SUCCESS
}

fn simulate_script(
    runtime: &Runtime,
    path: &std::path::Path,
    mode: Option<&str>,
    as_json: bool,
) -> ExitCode {
    let text = match fs_err::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("toolgate: cannot read the script: {e}");
            return ExitCode::from(crate::USAGE_ERROR);
        }
    };
    let script: SimScript = match serde_json::from_str(&text) {
        Ok(script) => script,
        Err(e) => {
            eprintln!("toolgate: cannot read the script: {}: {e}", path.display());
            return ExitCode::from(crate::USAGE_ERROR);
        }
    };
    let mut settings = runtime.config.disclosure.clone();
    if let Some(mode) = mode {
        match DisclosureMode::try_from(mode.to_owned()) {
            Ok(mode) => settings.mode = mode,
            Err(e) => {
                eprintln!("toolgate: {e}");
                return ExitCode::from(crate::USAGE_ERROR);
            }
        }
    }
    let disclosure = match Disclosure::new(&settings, &Default::default()) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("toolgate: {e}");
            return ExitCode::from(crate::USAGE_ERROR);
        }
    };
    if !script.tools.is_empty() {
        let stubs: Vec<Arc<dyn DynTool>> = script
            .tools
            .iter()
            .map(|t| Arc::new(StubTool::from_spec(t)) as Arc<dyn DynTool>)
            .collect();
        let provider = Arc::new(StaticProvider::new("script", stubs));
        if let Err(e) = runtime.registry.register(None, provider, -1) {
            eprintln!("toolgate: script tools: {e}");
            return ExitCode::from(crate::USAGE_ERROR);
        }
    }
    let snapshot = runtime.dispatcher.snapshot();
    let report = simulate(&disclosure, &snapshot, &script, &runtime.render);
    if as_json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&json!(report)).unwrap_or_default()
        );
    } else {
        outln!("strategy: {:?}", report.strategy);
        outln!("turn  bytes  changed  prefix reuse  unmasked / rejected");
        for t in &report.turns {
            outln!(
                "{:>4}  {:>5}  {:<7}  {:>11.1}%  {}{}",
                t.turn,
                t.bytes,
                if t.changed { "yes" } else { "no" },
                t.prefix_reuse,
                t.unmasked.join(", "),
                if t.rejected.is_empty() {
                    String::new()
                } else {
                    format!(" rejected: {}", t.rejected.join(", "))
                }
            );
        }
        outln!(
            "{} prefix breaks in {} turns; {} calls rejected",
            report.breaks,
            report.turns.len(),
            report.rejected
        );
    }
    ExitCode::SUCCESS
}
