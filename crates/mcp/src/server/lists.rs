//! What a session is offered: its tool list (rendered once per registry generation, then
//! cut to its disclosure and its caller), and the prompt and resource sources.

use std::sync::{Arc, PoisonError};

use rmcp::ErrorData as McpError;
use rmcp::model::{ConstString, Tool};
use toolgate_core::Snapshot;
use toolgate_core::disclosure::Exposed;

use super::ToolgateServer;
use crate::convert::{mcp_tools, without_output_schemas};
use crate::disclosure::{session_tools, tool_changes};
use crate::extras::{PromptSource, ResourceSource};

impl ToolgateServer {
    /// The current MCP tool list of this session: the shared part rendered once per registry
    /// generation, then the session's backfilled tools (disclosure in backfill mode).
    pub fn tools(&self) -> Arc<Vec<Tool>> {
        let snapshot = self.shared.dispatcher.snapshot();
        let exposed = self
            .disclosure
            .as_ref()
            .map(|d| session_tools(d, &snapshot, &self.session));
        let base = self.base_tools(&snapshot, exposed.as_ref());
        let tools = match exposed {
            Some(exposed) if !exposed.backfill.is_empty() => {
                let mut tools = (*base).clone();
                let backfill = exposed.backfill.iter().map(|t| t.as_ref());
                tools.extend(mcp_tools(backfill, &self.shared.render));
                Arc::new(tools)
            }
            _ => base,
        };
        let tools = self.for_caller(&snapshot, tools);
        if self.profile().shows_structured {
            Arc::new(without_output_schemas(&tools))
        } else {
            tools
        }
    }

    /// `tools` without those this session's caller is denied by a rule with a condition on
    /// the caller. The rendered list cached in [`Shared`](super::Shared) serves every session, so the
    /// per-caller cut is made on a copy, never cached.
    fn for_caller(&self, snapshot: &Snapshot, tools: Arc<Vec<Tool>>) -> Arc<Vec<Tool>> {
        let registry = self.shared.dispatcher.registry();
        if !registry.filters_by_caller() {
            return tools;
        }
        let caller = self.session.identity();
        let denied: std::collections::HashSet<&str> = snapshot
            .tools
            .iter()
            .filter(|(_, tool)| !registry.visible_to(tool.as_ref(), caller))
            .map(|(name, _)| name.as_str())
            .collect();
        if denied.is_empty() {
            return tools;
        }
        // search_tool's catalog names deferred tools too: this caller's leaves them out.
        let search = self
            .disclosure
            .as_ref()
            .and_then(|d| d.search_tool_without(snapshot, &denied))
            .and_then(|tool| {
                mcp_tools(std::iter::once(tool.as_ref()), &self.shared.render)
                    .into_iter()
                    .next()
            });
        Arc::new(
            tools
                .iter()
                .filter(|tool| !denied.contains(tool.name.as_ref()))
                .map(|tool| match &search {
                    Some(search) if tool.name == search.name => search.clone(),
                    _ => tool.clone(),
                })
                .collect(),
        )
    }

    fn base_tools(&self, snapshot: &Snapshot, exposed: Option<&Exposed>) -> Arc<Vec<Tool>> {
        let mut cache = self
            .shared
            .tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((generation, tools)) = &*cache
            && *generation == snapshot.generation
            && !snapshot.incomplete
        {
            return Arc::clone(tools);
        }
        let tools = Arc::new(match exposed {
            Some(exposed) => {
                mcp_tools(exposed.base.iter().map(|t| t.as_ref()), &self.shared.render)
            }
            None => mcp_tools(
                snapshot.tools.values().map(|t| t.as_ref()),
                &self.shared.render,
            ),
        });
        if !snapshot.incomplete {
            *cache = Some((snapshot.generation, Arc::clone(&tools)));
        }
        tools
    }

    /// Wakes when this session's tool list may have changed.
    pub(super) fn tool_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        tool_changes(
            self.shared.dispatcher.registry().subscribe(),
            self.disclosure.as_deref(),
            &self.session,
        )
    }

    /// The prompt source, or method-not-found for `M` when the server has none.
    pub(super) fn prompt_source<M: ConstString>(&self) -> Result<&Arc<dyn PromptSource>, McpError> {
        self.prompts
            .as_ref()
            .ok_or_else(McpError::method_not_found::<M>)
    }

    /// The resource source, or method-not-found for `M` when the server has none.
    pub(super) fn resource_source<M: ConstString>(
        &self,
    ) -> Result<&Arc<dyn ResourceSource>, McpError> {
        self.resources
            .as_ref()
            .ok_or_else(McpError::method_not_found::<M>)
    }

    /// The resource source if it reports updates, or method-not-found for `M`: without
    /// updates a subscription would never fire.
    pub(super) fn subscribable<M: ConstString>(&self) -> Result<&dyn ResourceSource, McpError> {
        match self.resources.as_deref() {
            Some(source) if self.resource_updates => Ok(source),
            _ => Err(McpError::method_not_found::<M>()),
        }
    }
}
