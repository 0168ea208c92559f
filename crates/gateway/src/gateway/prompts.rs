//! The mounted servers' prompts as one list: named like their tools, filtered by the
//! permission rules, each got from its server and fitted to the output budget.

use std::sync::Arc;

use toolgate_core::Decision;

use super::{ForwardError, Gateway, Inner, fit_prompt, refusal};
use crate::config::Prefix;
use crate::mount::Mount;
use crate::naming::server_prefix;
use crate::sync::lock;

impl Inner {
    /// The server of the prompt listed as `name`, and the prompt under its own name.
    pub(super) fn prompt_owner(&self, name: &str) -> Option<(Arc<Mount>, rmcp::model::Prompt)> {
        self.mounts().iter().find_map(|mount| {
            self.prompt_names(mount)
                .into_iter()
                .find(|(listed, _)| listed == name)
                .map(|(_, prompt)| (Arc::clone(mount), prompt))
        })
    }

    /// The names a client sees for `mount`'s prompts, with each prompt's own name; none for
    /// a server that is not mounted.
    pub(super) fn prompt_names(&self, mount: &Mount) -> Vec<(String, rmcp::model::Prompt)> {
        if mount.clash().is_some() {
            return Vec::new();
        }
        mount
            .prompts()
            .iter()
            .map(|p| {
                let name = match mount.spec.prefix {
                    Prefix::Always => format!("{}{}", server_prefix(&mount.spec.name), p.name),
                    Prefix::Never => p.name.clone(),
                };
                (name, p.clone())
            })
            .collect()
    }
}

impl Gateway {
    /// Every mounted server's prompts, named like its tools (`mcp__<server>__<prompt>`, or
    /// the prompt's own name for a `prefix = "never"` server), in config order; a server
    /// that is not ready, or not mounted because its names clash, has none.
    ///
    /// A prompt a permission rule denies (by its name, `mcp__<server>__*`, or the action
    /// `mcp.prompt`) is left out.
    pub fn prompts(&self) -> Vec<rmcp::model::Prompt> {
        self.prompts_for(None)
    }

    /// [`Gateway::prompts`] as `caller` may get them (rules with a condition on the
    /// caller).
    pub fn prompts_for(
        &self,
        caller: Option<&toolgate_core::Identity>,
    ) -> Vec<rmcp::model::Prompt> {
        let mut out = Vec::new();
        for mount in self.inner.mounts().iter() {
            for (name, mut prompt) in self.inner.prompt_names(mount) {
                if self.inner.prompt_verdict(&name, caller).decision == Decision::Deny {
                    continue;
                }
                prompt.name = name;
                out.push(prompt);
            }
        }
        out
    }

    /// Prompt `name` (as [`Gateway::prompts`] lists it) from its server, filled in with
    /// `arguments`. `Err` says what went wrong, for the client.
    ///
    /// A server that asks for input while building the prompt asks `caller`'s client (the
    /// request's [`toolgate_core::CallContext::client`]).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<rmcp::model::JsonObject>,
        caller: Option<Arc<dyn toolgate_core::ClientLink>>,
    ) -> Result<rmcp::model::GetPromptResult, ForwardError> {
        self.get_prompt_as(name, arguments, caller, None).await
    }

    /// [`Gateway::get_prompt`] for the caller `identity`, as rules with a condition on the
    /// caller decide.
    pub fn get_prompt_as<'a>(
        &'a self,
        name: &'a str,
        arguments: Option<rmcp::model::JsonObject>,
        caller: Option<Arc<dyn toolgate_core::ClientLink>>,
        identity: Option<&'a toolgate_core::Identity>,
    ) -> futures::future::BoxFuture<'a, Result<rmcp::model::GetPromptResult, ForwardError>> {
        Box::pin(async move {
            // A prompt of a server that is still starting (no catalog yet) waits for it, as a
            // tool call does: a prompt is named like that server's tools.
            let mut owner = self.inner.prompt_owner(name);
            if owner.is_none() {
                self.start_for(name).await;
                owner = self.inner.prompt_owner(name);
            }
            if let Some((mount, prompt)) = owner {
                let verdict = self.inner.prompt_verdict(name, identity);
                if verdict.decision != Decision::Allow {
                    let what = format!("prompt `{name}`");
                    return Err(ForwardError::Refused(refusal(&what, &verdict)));
                }
                return mount
                    .get_prompt(&prompt.name, arguments, caller)
                    .await
                    .map_err(ForwardError::upstream);
            }
            Err(ForwardError::UnknownPrompt {
                name: name.to_owned(),
            })
        })
    }

    /// [`Gateway::get_prompt`], each message's text fitted to the budget
    /// ([`Gateway::use_budget`]) for a client with `limits` that names toolgate's tools `names`.
    pub async fn get_prompt_for(
        &self,
        name: &str,
        arguments: Option<rmcp::model::JsonObject>,
        caller: Option<Arc<dyn toolgate_core::ClientLink>>,
        limits: toolgate_core::ClientLimits,
        names: &toolgate_core::ToolNames,
        identity: Option<&toolgate_core::Identity>,
    ) -> Result<rmcp::model::GetPromptResult, ForwardError> {
        let mut result = self
            .get_prompt_as(name, arguments, caller, identity)
            .await?;
        if let Some(budget) = lock(&self.inner.budget).clone() {
            fit_prompt(&mut result, budget.as_ref(), limits, names);
        }
        Ok(result)
    }

    /// A receiver that changes whenever a server's prompts do.
    pub fn prompt_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.prompt_changes.subscribe()
    }
}
