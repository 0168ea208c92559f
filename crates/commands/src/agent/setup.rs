//! What `toolgate run` and `toolgate chat` start from: the provider, the runtime, the agent
//! and its transcript; and `/NAME` tasks, which run a user-invocable skill.

use std::path::PathBuf;
use std::sync::Arc;

use toolgate_agent::{Agent, AgentError, Tools};
use toolgate_config::{Config, ConfigError};
use toolgate_core::disclosure::SessionFacts;
use toolgate_core::{Approval, ExposureMode};
use toolgate_providers::{Kind, Provider, ProviderConfig, ProviderError};
use toolgate_runtime::Runtime;

use super::AgentArgs;

/// Why `run` or `chat` cannot start (exit 2).
#[derive(Debug, thiserror::Error)]
pub(super) enum SetupError {
    /// No such provider in config, and not a built-in one.
    #[error(
        "no provider `{name}`: add [providers.{name}] with kind, base_url and model to your config, or use openai / anthropic{others}"
    )]
    NoProvider {
        /// The name asked for.
        name: String,
        /// The configured ones, as a sentence tail.
        others: String,
    },
    /// The provider's settings do not make a client (no key, a bad URL).
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// The current directory, the default root, cannot be read.
    #[error("cannot read the current directory: {0}")]
    Cwd(std::io::Error),
    /// The config does not make a runtime.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// No transcripts folder (for `--resume`, or to save the session).
    #[error("transcripts: {0}")]
    Transcripts(#[source] toolgate_core::MissingUserDir),
    /// `--resume` of a transcript that cannot be read.
    #[error(transparent)]
    Resume(#[from] AgentError),
}

/// Why a `/NAME` task does not run.
#[derive(Debug, thiserror::Error)]
pub(super) enum SkillError {
    /// No user-invocable skill has that name.
    #[error("no user-invocable skill `{name}`; {known}")]
    Unknown {
        /// The name typed (at most 100 characters).
        name: String,
        /// The line naming the skills there are.
        known: String,
    },
    /// The skill's file cannot be loaded.
    #[error("skill `{name}` ({}): {reason}", file.display())]
    Unreadable {
        /// The skill's name.
        name: String,
        /// Its SKILL.md.
        file: PathBuf,
        /// Why not.
        reason: String,
    },
}

/// The provider `args` and `config` name, with flags applied.
fn provider_config(
    config: &Config,
    args: &AgentArgs,
) -> Result<(String, ProviderConfig), SetupError> {
    let has = |var: &str| std::env::var_os(var).is_some_and(|v| !v.is_empty());
    let name = args
        .provider
        .clone()
        .or_else(|| config.agent.provider.clone())
        .unwrap_or_else(|| {
            if !has("OPENAI_API_KEY") && has("ANTHROPIC_API_KEY") {
                "anthropic".to_owned()
            } else {
                "openai".to_owned()
            }
        });
    let mut provider = match (config.providers.get(&name), name.as_str()) {
        (Some(p), _) => p.clone(),
        (None, "openai") => ProviderConfig::default(),
        (None, "anthropic") => ProviderConfig {
            kind: Kind::Anthropic,
            ..ProviderConfig::default()
        },
        (None, other) => {
            let known: Vec<&str> = config.providers.keys().map(String::as_str).collect();
            return Err(SetupError::NoProvider {
                name: other.to_owned(),
                others: if known.is_empty() {
                    String::new()
                } else {
                    format!(" or one of {}", known.join(", "))
                },
            });
        }
    };
    if let Some(url) = &args.base_url {
        provider.base_url = Some(url.clone());
    }
    if let Some(model) = &args.model {
        provider.model = Some(model.clone());
    }
    if args.no_stream {
        provider.stream = Some(false);
    }
    Ok((name, provider))
}

/// Everything a command needs, built from config.
pub(super) struct Setup {
    pub(super) runtime: Runtime,
    pub(super) agent: Agent,
}

/// The runtime and the agent for `args`; `approval` answers the tools' `ask` rules.
pub(super) fn setup(
    mut config: Config,
    args: &AgentArgs,
    approval: Approval,
) -> Result<Setup, SetupError> {
    let (name, provider_config) = provider_config(&config, args)?;
    // The protocol fork of progressive disclosure: found tools join a strict provider's
    // array; a free-text provider calls them through run_tool.
    config.disclosure.exposure = if provider_config.kind.strict_tool_names() {
        ExposureMode::Backfill
    } else {
        ExposureMode::Proxy
    };
    let provider = Provider::new(&name, &provider_config, |var| std::env::var(var).ok())?;
    let mut settings = config.agent.clone();
    if let Some(n) = args.max_turns {
        settings.max_turns = n;
    }
    if let Some(tokens) = provider_config.context_tokens {
        settings.context_tokens = tokens;
    }
    let cwd = std::env::current_dir().map_err(SetupError::Cwd)?;
    let facts = SessionFacts {
        provider: Some(name),
    };
    let runtime = Runtime::with_facts(config, &cwd, &facts)?;
    let root = runtime.roots.primary().to_path_buf();
    // Transcripts: the user's data folder unless the user's own config names a folder.
    let sessions = match &settings.sessions_dir {
        Some(dir) => Ok(root.join(toolgate_core::UserDirs::from_env().expand_tilde(dir))),
        None => toolgate_agent::project_sessions_dir(&root, &toolgate_core::UserDirs::from_env())
            .map_err(SetupError::Transcripts),
    };
    let tools = Tools {
        dispatcher: Arc::clone(&runtime.dispatcher),
        disclosure: Arc::clone(&runtime.disclosure),
        render: runtime.render.clone(),
        spill: Some(Arc::clone(&runtime.spill)),
        root,
    };
    let mut agent = Agent::new(tools, provider, settings, approval);
    match (&args.resume, sessions) {
        (Some(id), sessions) => agent.resume(&sessions?, id)?,
        (None, Err(e)) => eprintln!("warning: this session will not be saved: {e}"),
        (None, Ok(sessions)) => {
            if let Err(e) = agent.record_to(&sessions) {
                eprintln!("warning: this session will not be saved: {e}");
            }
        }
    }
    Ok(Setup { runtime, agent })
}

/// `/NAME [ARGUMENTS]` runs the user-invocable skill NAME (what an MCP client gets as the
/// prompt of the same name); any other task is taken as written.
pub(super) fn expand_skill(runtime: &Runtime, task: &str) -> Result<String, SkillError> {
    let Some(rest) = task.strip_prefix('/') else {
        return Ok(task.to_owned());
    };
    let (name, arguments) = match rest.split_once(char::is_whitespace) {
        Some((name, arguments)) => (name, Some(arguments)),
        None => (rest, None),
    };
    // `/etc/hosts is …` is a task, not a skill: skill names are `[a-z0-9-]`.
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Ok(task.to_owned());
    }
    let catalog = runtime.skills.catalog();
    let Some(skill) = catalog.get(name).filter(|s| s.user_invocable) else {
        return Err(SkillError::Unknown {
            name: name.chars().take(100).collect(),
            known: user_skills(runtime),
        });
    };
    let loaded = toolgate_skills::load_skill(skill).map_err(|reason| SkillError::Unreadable {
        name: name.to_owned(),
        file: skill.file.clone(),
        reason: reason.to_string(),
    })?;
    Ok(loaded.text(arguments, &|path| runtime.roots.display(path)))
}

/// One line naming the user-invocable skills.
pub(super) fn user_skills(runtime: &Runtime) -> String {
    let catalog = runtime.skills.catalog();
    let names: Vec<String> = catalog
        .user_visible()
        .map(|s| format!("/{}", s.name))
        .collect();
    if names.is_empty() {
        "there are no user-invocable skills (`toolgate skills list` shows what was found)"
            .to_owned()
    } else {
        format!("user-invocable skills: {}", names.join(", "))
    }
}
