//! A mounted server's resources and resource templates: listed with its tools before it
//! counts as ready and again on `resources/list_changed`; reads go to the server that listed
//! the URI (or whose template it fits).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use tracing::Instrument;

use rmcp::model::{
    ReadResourceRequestParams, ReadResourceResponse, Resource, ResourceContents, ResourceTemplate,
};
use rmcp::{Peer, RoleClient};

use toolgate_core::ClientLink;

use super::rounds::Reply;
use super::{Live, Mount, lock};
use crate::error::{Asked, UpstreamError};

/// What a server offers to read.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Offered {
    pub(crate) resources: Vec<Resource>,
    pub(crate) templates: Vec<ResourceTemplate>,
}

impl Offered {
    /// Whether there is neither a resource nor a template.
    pub(crate) fn is_empty(&self) -> bool {
        self.resources.is_empty() && self.templates.is_empty()
    }
}

impl Mount {
    /// Lists the server's resources again (after `resources/list_changed`).
    pub(super) async fn refresh_resources(&self, live: &Live) {
        let offered = self.list_resources(&live.peer).await;
        if self.set_resources(offered) {
            // The next session lists them at once.
            let tools = self.listed();
            self.save_catalog(&tools, self.offers_resources());
        }
    }

    /// The server's resources and templates, when it offers any; what fails to list is
    /// left out (and logged).
    pub(super) async fn list_resources(&self, peer: &Peer<RoleClient>) -> Offered {
        let offers = peer
            .peer_info()
            .is_some_and(|info| info.capabilities.resources.is_some());
        if !offers {
            return Offered::default();
        }
        let limit = self.spec.startup_timeout;
        let name = &self.spec.name;
        let resources = match tokio::time::timeout(limit, peer.list_all_resources()).await {
            Ok(Ok(resources)) => resources,
            Ok(Err(e)) => {
                tracing::warn!(server = %name, %e, "`resources/list` failed; its resources are not offered");
                Vec::new()
            }
            Err(_) => {
                tracing::warn!(server = %name, "`resources/list` timed out; its resources are not offered");
                Vec::new()
            }
        };
        let templates = match tokio::time::timeout(limit, peer.list_all_resource_templates()).await
        {
            Ok(Ok(templates)) => templates,
            // Many servers have resources but no templates and answer -32601.
            Ok(Err(e)) => {
                tracing::debug!(server = %name, %e, "`resources/templates/list` failed");
                Vec::new()
            }
            Err(_) => Vec::new(),
        };
        Offered {
            resources,
            templates,
        }
    }

    /// Records what the server offers; the gateway hears of a change (also when the
    /// catalog cache's word is replaced by the server's own).
    /// Records what the server lists now; returns whether that is news (the list, or
    /// whether it offers any, differs from what was known, from the cache included).
    pub(super) fn set_resources(&self, offered: Offered) -> bool {
        let offered_before = self.offers_resources();
        self.cached_resources.store(false, Ordering::SeqCst);
        let same = **lock(&self.resources) == offered;
        if same && offered_before != offered.is_empty() {
            return false;
        }
        *lock(&self.resources) = Arc::new(offered);
        if let Some(host) = self.host.upgrade() {
            host.resources_changed();
        }
        true
    }

    /// What the server offers, as last listed.
    pub(crate) fn resources(&self) -> Arc<Offered> {
        Arc::clone(&lock(&self.resources))
    }

    /// Whether the server offers resources or templates: as last listed, or, until it
    /// answers, as the catalog cache remembers.
    pub(crate) fn offers_resources(&self) -> bool {
        !self.resources().is_empty() || self.cached_resources.load(Ordering::SeqCst)
    }

    /// Whether the server is starting and the catalog cache says it offers resources,
    /// which it has not listed yet.
    pub(crate) fn resources_coming(&self) -> bool {
        self.cached_resources.load(Ordering::SeqCst) && self.is_settling()
    }

    /// Whether `uri` is one of this server's resources or fits one of its templates.
    pub(crate) fn serves(&self, uri: &str) -> Option<Fit> {
        let offered = self.resources();
        if offered.resources.iter().any(|r| r.uri == uri) {
            return Some(Fit::Listed);
        }
        offered
            .templates
            .iter()
            .any(|t| fits(&t.uri_template, uri))
            .then_some(Fit::Template)
    }

    /// The contents at `uri`. A server that asks for input to read it asks `caller`'s
    /// client, as for prompts.
    pub(crate) async fn read_resource(
        self: &Arc<Self>,
        uri: &str,
        caller: Option<Arc<dyn ClientLink>>,
    ) -> Result<Vec<ResourceContents>, UpstreamError> {
        let span = self.client_span("resources/read", uri);
        let result = self
            .read_resource_in(uri, caller, &span)
            .instrument(span.clone())
            .await;
        if result.is_err() {
            toolgate_core::trace::record_outcome(&span, "error", true);
        }
        result
    }

    async fn read_resource_in(
        self: &Arc<Self>,
        uri: &str,
        caller: Option<Arc<dyn ClientLink>>,
        span: &tracing::Span,
    ) -> Result<Vec<ResourceContents>, UpstreamError> {
        let live = self.ensure_live().await?;
        let _caller = live.callers.enter(caller.clone());
        let mut params = ReadResourceRequestParams::new(uri);
        params.meta = super::call::trace_meta(span);
        let asked = || Asked::Read(uri.to_owned());
        self.in_rounds(caller, asked, |answers, state| {
            let mut params = params.clone();
            params.input_responses = answers;
            params.request_state = state;
            let peer = &live.peer;
            async move {
                Ok(match peer.read_resource_once(params).await? {
                    ReadResourceResponse::Complete(result) => Reply::Complete(result.contents),
                    ReadResourceResponse::InputRequired(input) => Reply::InputRequired(input),
                    _ => Reply::Unknown,
                })
            }
        })
        .await
    }
}

/// How a URI belongs to a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Fit {
    /// It fits a template only.
    Template,
    /// The server listed it.
    Listed,
}

/// Whether `uri` fits the RFC 6570 `template` at the level servers use it: the literal
/// parts in order, each `{…}` expression matching one or more characters.
fn fits(template: &str, uri: &str) -> bool {
    let mut literals = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        literals.push(&rest[..open]);
        match rest[open..].find('}') {
            Some(close) => rest = &rest[open + close + 1..],
            None => return false,
        }
    }
    literals.push(rest);
    let Some((first, others)) = literals.split_first() else {
        return false;
    };
    let Some(mut left) = uri.strip_prefix(first) else {
        return false;
    };
    let (last, middle) = others.split_last().unwrap_or((&"", &[]));
    for literal in middle {
        // One expression (at least one character) before each literal.
        match left.get(1..).and_then(|l| l.find(literal)) {
            Some(at) => left = &left[1 + at + literal.len()..],
            None => return false,
        }
    }
    if others.is_empty() {
        return left.is_empty();
    }
    left.len() > last.len() && left.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::fits;

    #[test]
    fn uris_fit_the_templates_servers_use() {
        assert!(fits("file:///{path}", "file:///etc/hosts"));
        assert!(fits("repo://{owner}/{name}/issues", "repo://a/b/issues"));
        assert!(!fits("repo://{owner}/{name}/issues", "repo://a/b/pulls"));
        assert!(!fits("repo://{owner}", "repo://"));
        assert!(fits("plain://x", "plain://x"));
        assert!(!fits("plain://x", "plain://xy"));
        assert!(!fits("broken://{x", "broken://y"));
    }
}
