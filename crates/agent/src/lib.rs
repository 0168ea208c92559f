//! toolgate's agent loop, in process over the same runtime as the MCP server: no MCP hop
//! for built-ins.
//!
//! - [`Agent`]: request → tool calls → dispatch through the runtime's
//!   [`toolgate_core::Dispatcher`] (read-only calls side by side, mutating ones in order)
//!   → one budget over all results of the turn (largest spilled first) → append → repeat,
//!   within `max_turns`, cancellable (tools get the cancellation).
//! - Disclosure's protocol fork: strict-name providers (Anthropic) get unmasked tools
//!   backfilled as one sorted block after the stable tools; the others call found tools
//!   through `run_tool` and their array never changes.
//! - Prompt caching: system prompt and stable tools are byte-identical across turns.
//! - [`Transcript`]: JSONL in the user's data folder, one folder per project
//!   ([`project_sessions_dir`]), mode 0600, resumable.
//! - Compaction near the context window keeps referenced spill files and deletes the
//!   session's others.
//!
//! # Example: one task against a scripted model
//!
//! The model here is `toolgate-providers`' fake (feature `fake`), speaking the OpenAI
//! protocol over real HTTP on loopback; a real endpoint only changes the
//! [`toolgate_providers::ProviderConfig`].
//!
//! ```
//! use std::sync::Arc;
//!
//! use serde_json::json;
//! use tokio_util::sync::CancellationToken;
//! use toolgate_agent::{Agent, AgentSettings, Status, Tools};
//! use toolgate_core::{
//!     Disclosure, DisclosureSettings, DispatchLimits, Dispatcher, Policy, Registry,
//!     RenderOptions, Scope, StaticProvider,
//! };
//! use toolgate_providers::fake::{FakeServer, Reply, step};
//! use toolgate_providers::{Kind, Provider, ProviderConfig};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let project = tempfile::tempdir()?;
//! std::fs::write(project.path().join("README.md"), "hello from the readme\n")?;
//!
//! // The runtime: the file tools in a registry, disclosure, a dispatcher.
//! let roots = Arc::new(toolgate_fs::Roots::new([project.path()])?);
//! let files = toolgate_fs::builtin_fs_tools(roots, Default::default(), None);
//! let registry = Arc::new(Registry::new());
//! registry.register(None, Arc::new(StaticProvider::new("builtin", files)), 0)?;
//! let disclosure = Arc::new(Disclosure::new(&DisclosureSettings::default(), &Default::default())?);
//! disclosure.attach(&registry, Scope::global())?;
//! let dispatcher =
//!     Dispatcher::new(registry, Scope::global(), Policy::allow_all(), DispatchLimits::default());
//! let tools = Tools {
//!     dispatcher: Arc::new(dispatcher),
//!     disclosure,
//!     render: RenderOptions::default(),
//!     spill: None,
//!     root: project.path().to_owned(),
//! };
//!
//! // A model that reads the README, then answers.
//! let model = FakeServer::start(
//!     Kind::OpenAi,
//!     vec![
//!         step(Reply::call("read_file", json!({"path": "README.md"}))),
//!         step(Reply::text("The README says hello.")),
//!     ],
//! )
//! .await;
//! let config = ProviderConfig {
//!     kind: Kind::OpenAi,
//!     base_url: Some(model.url().to_owned()),
//!     model: Some("fake-model".to_owned()),
//!     ..ProviderConfig::default()
//! };
//! let provider = Provider::new("fake", &config, |_variable| None)?;
//!
//! // Nobody watches here: a call an `ask` rule holds would not run.
//! let approval = toolgate_core::Approval::Nobody;
//! let mut agent = Agent::new(tools, provider, AgentSettings::default(), approval);
//! let outcome = agent.run("What does the README say?", &mut |_| {}, &CancellationToken::new()).await;
//! assert_eq!(outcome.status, Status::Finished);
//! assert_eq!(outcome.text, "The README says hello.");
//! assert_eq!(outcome.tool_calls[0].name, "read_file");
//! // The second request carried the tool's result back to the model.
//! assert!(model.requests()[1].tool_results()[0].contains("hello from the readme"));
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

mod agent;
mod compact;
mod settings;
mod store;
mod transcript;

pub use agent::{
    Agent, AgentError, CallRecord, DEFAULT_SYSTEM_PROMPT, Observer, Outcome, Progress, Status,
    Timing, Tools,
};
pub use settings::AgentSettings;
pub use store::{project_key, project_sessions_dir};
pub use transcript::{Record, Restored, Transcript, TranscriptError};
