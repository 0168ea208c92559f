//! The prompts `serve` offers: the skills a user may invoke, then the mounted servers'
//! prompts under their servers' names (`mcp__<server>__<prompt>`, or their own names for a
//! `prefix = "never"` server, which may not take a skill's name), one list with one
//! `list_changed`.

use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{ArgumentInfo, CompletionContext, CompletionInfo, GetPromptResult, Prompt};
use serde_json::Value;
use tokio::sync::watch;
use toolgate_core::{CallContext, Identity};
use toolgate_gateway::Gateway;
use toolgate_mcp::{PromptArguments, PromptSource, SourceError, completion};

pub struct ServePrompts {
    skills: Option<Arc<dyn PromptSource>>,
    gateway: Arc<Gateway>,
    changes: watch::Receiver<u64>,
}

impl ServePrompts {
    /// Both sources; must be made inside the runtime (a task merges their changes).
    pub fn new(skills: Option<Arc<dyn PromptSource>>, gateway: Arc<Gateway>) -> Arc<Self> {
        let (tx, changes) = watch::channel(0u64);
        let mut mounted = gateway.prompt_changes();
        let mut own = skills.as_ref().and_then(|s| s.changes());
        tokio::spawn(async move {
            loop {
                let skills_changed = async {
                    match own.as_mut() {
                        Some(rx) => rx.changed().await.is_ok(),
                        None => std::future::pending().await,
                    }
                };
                let alive = tokio::select! {
                    r = mounted.changed() => r.is_ok(),
                    ok = skills_changed => ok,
                };
                if !alive || tx.is_closed() {
                    break;
                }
                tx.send_modify(|n| *n += 1);
            }
        });
        Arc::new(Self {
            skills,
            gateway,
            changes,
        })
    }
}

impl PromptSource for ServePrompts {
    fn prompts(&self) -> Vec<Prompt> {
        self.prompts_for(None)
    }

    fn prompts_for(&self, caller: Option<&Identity>) -> Vec<Prompt> {
        let mut all = self
            .skills
            .as_ref()
            .map(|s| s.prompts())
            .unwrap_or_default();
        all.extend(self.gateway.prompts_for(caller));
        all
    }

    fn get<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a PromptArguments,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<GetPromptResult, SourceError>> {
        Box::pin(async move {
            if self.gateway.prompts().iter().any(|p| p.name == name) {
                let arguments = arguments
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect();
                // Sized to the client of the request (its profile's per-result cap).
                let limits = ctx.session.limits();
                return self
                    .gateway
                    .get_prompt_for(
                        name,
                        Some(arguments),
                        ctx.client().cloned(),
                        limits,
                        &ctx.session.tool_names(),
                        ctx.session.identity(),
                    )
                    .await
                    .map_err(SourceError::failed);
            }
            match &self.skills {
                Some(skills) => skills.get(name, arguments, ctx).await,
                None => Err(SourceError::UnknownPrompt(name.to_owned())),
            }
        })
    }

    fn complete<'a>(
        &'a self,
        name: &'a str,
        argument: &'a ArgumentInfo,
        context: Option<&'a CompletionContext>,
    ) -> BoxFuture<'a, Result<CompletionInfo, SourceError>> {
        Box::pin(async move {
            if self.gateway.prompts().iter().any(|p| p.name == name) {
                return self
                    .gateway
                    .complete_prompt(name, argument, context)
                    .await
                    .map_err(SourceError::failed);
            }
            match &self.skills {
                Some(skills) => skills.complete(name, argument, context).await,
                None => Ok(completion(Vec::new())),
            }
        })
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.changes.clone())
    }
}
