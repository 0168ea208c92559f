//! User-invocable skills as MCP prompts (MCP 2025-11-25, prompts/list and prompts/get).
//!
//! `prompts/list` lists every skill that does not set `user-invocable: false` — including
//! those hidden from the model, which is what `disable-model-invocation` is for: a skill
//! only the user starts. `prompts/get` returns the skill's body (read fresh) as a user
//! message, with `$ARGUMENTS` filled from the optional `arguments` argument.
//! `notifications/prompts/list_changed` goes out only when the prompt list itself changed.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use futures::future::BoxFuture;
use rmcp::model::{GetPromptResult, Prompt, PromptArgument, PromptMessage, Role};
use tokio::sync::watch;
use toolgate_core::CallContext;
use toolgate_fs::Roots;
use toolgate_mcp::{PromptArguments, PromptSource, SourceError};

use crate::body::load_skill;
use crate::store::Skills;

/// The one argument every skill prompt takes: text for the skill (`$ARGUMENTS`).
pub const ARGUMENTS: &str = "arguments";

/// The prompt source over a skill store.
pub struct SkillPrompts {
    skills: Arc<Skills>,
    roots: Option<Arc<Roots>>,
    changes: watch::Sender<u64>,
    /// The list last announced.
    listed: Mutex<Vec<Prompt>>,
}

impl std::fmt::Debug for SkillPrompts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillPrompts").finish_non_exhaustive()
    }
}

impl SkillPrompts {
    /// Prompts for `skills`' user-invocable skills; `roots` turns paths into the form
    /// read_file takes.
    pub fn new(skills: Arc<Skills>, roots: Option<Arc<Roots>>) -> Arc<Self> {
        let prompts = Arc::new(Self {
            skills,
            roots,
            changes: watch::channel(0).0,
            listed: Mutex::new(Vec::new()),
        });
        *lock(&prompts.listed) = prompts.list();
        let weak: Weak<Self> = Arc::downgrade(&prompts);
        prompts.skills.on_change(move |_| {
            if let Some(prompts) = weak.upgrade() {
                prompts.refresh();
            }
        });
        prompts
    }

    fn list(&self) -> Vec<Prompt> {
        self.skills
            .catalog()
            .user_visible()
            .map(|skill| {
                let hint = skill
                    .argument_hint
                    .clone()
                    .unwrap_or_else(|| "Optional text for the skill".to_owned());
                let argument = PromptArgument::new(ARGUMENTS)
                    .with_description(hint)
                    .with_required(false);
                Prompt::new(
                    skill.name.clone(),
                    Some(skill.description.clone()),
                    Some(vec![argument]),
                )
            })
            .collect()
    }

    /// Announces a new list when it differs from the last one.
    fn refresh(&self) {
        let now = self.list();
        let mut listed = lock(&self.listed);
        if *listed != now {
            *listed = now;
            self.changes.send_modify(|g| *g += 1);
        }
    }
}

/// Why a skill prompt's skill could not be loaded.
#[derive(Debug, thiserror::Error)]
enum Unloaded {
    /// Its file cannot be read or parsed.
    #[error("{}: {source}", .file.display())]
    Load {
        file: std::path::PathBuf,
        #[source]
        source: crate::LoadError,
    },
    /// It stopped being user-invocable since it was listed.
    #[error("skill `{0}` is no longer user-invocable (user-invocable: false)")]
    NotInvocable(String),
    /// The load did not finish (it runs on a blocking thread).
    #[error("loading the skill failed: {0}")]
    Join(#[source] tokio::task::JoinError),
}

impl PromptSource for SkillPrompts {
    fn prompts(&self) -> Vec<Prompt> {
        self.list()
    }

    fn get<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a PromptArguments,
        _ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<GetPromptResult, SourceError>> {
        Box::pin(async move {
            let catalog = self.skills.catalog();
            let skill = catalog
                .get(name)
                .filter(|s| s.user_invocable)
                .cloned()
                .ok_or_else(|| SourceError::UnknownPrompt(name.chars().take(100).collect()))?;
            if let Some(unknown) = arguments.keys().find(|k| k.as_str() != ARGUMENTS) {
                return Err(SourceError::InvalidArguments(format!(
                    "skill prompts take one argument, `{ARGUMENTS}`; `{}` is not one",
                    unknown.chars().take(100).collect::<String>()
                )));
            }
            let args = arguments.get(ARGUMENTS).cloned();
            let roots = self.roots.clone();
            let work = move || {
                let loaded = load_skill(&skill).map_err(|source| Unloaded::Load {
                    file: skill.file.clone(),
                    source,
                })?;
                if !loaded.frontmatter.user_invocable {
                    return Err(Unloaded::NotInvocable(skill.name.clone()));
                }
                let show = |path: &Path| match &roots {
                    Some(roots) => roots.display(path),
                    None => path.display().to_string(),
                };
                let text = loaded.text(args.as_deref(), &show);
                Ok((loaded.frontmatter.description, text))
            };
            let (description, text) = tokio::task::spawn_blocking(work)
                .await
                .map_err(|e| SourceError::failed(Unloaded::Join(e)))?
                .map_err(SourceError::failed)?;
            Ok(
                GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                    .with_description(description),
            )
        })
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.changes.subscribe())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
