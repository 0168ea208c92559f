//! The resources `serve` offers: the mounted servers' resources and templates, URIs as the
//! servers gave them, reads routed to the server that offers the URI and fitted to the
//! output budget (a huge text comes back as an excerpt and a spill pointer); subscriptions
//! followed upstream (once per URI), completion forwarded to the server with the template.

use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{
    ArgumentInfo, CompletionContext, CompletionInfo, Resource, ResourceContents, ResourceTemplate,
};
use tokio::sync::{broadcast, watch};
use toolgate_core::{CallContext, Identity};
use toolgate_gateway::{ForwardError, Gateway};
use toolgate_mcp::{ResourceSource, SourceError, UpdateLease};

pub struct ServeResources {
    gateway: Arc<Gateway>,
}

impl ServeResources {
    pub fn new(gateway: Arc<Gateway>) -> Arc<Self> {
        Arc::new(Self { gateway })
    }
}

impl ResourceSource for ServeResources {
    fn resources(&self) -> Vec<Resource> {
        self.gateway.resources()
    }

    fn templates(&self) -> Vec<ResourceTemplate> {
        self.gateway.resource_templates()
    }

    fn resources_for(&self, caller: Option<&Identity>) -> Vec<Resource> {
        self.gateway.resources_for(caller)
    }

    fn templates_for(&self, caller: Option<&Identity>) -> Vec<ResourceTemplate> {
        self.gateway.resource_templates_for(caller)
    }

    fn read<'a>(
        &'a self,
        uri: &'a str,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Vec<ResourceContents>, SourceError>> {
        Box::pin(async move {
            let known = self.gateway.resources().iter().any(|r| r.uri == uri);
            // Sized to the client of the request (its profile's per-result cap).
            let limits = ctx.session.limits();
            let read = self
                .gateway
                .read_resource_for(
                    uri,
                    ctx.client().cloned(),
                    limits,
                    &ctx.session.tool_names(),
                    ctx.session.identity(),
                )
                .await;
            read.map_err(|e| match e {
                ForwardError::UnknownResource { .. } if !known => {
                    SourceError::UnknownResource(uri.to_owned())
                }
                e => SourceError::failed(e),
            })
        })
    }

    fn complete<'a>(
        &'a self,
        template: &'a str,
        argument: &'a ArgumentInfo,
        context: Option<&'a CompletionContext>,
    ) -> BoxFuture<'a, Result<CompletionInfo, SourceError>> {
        Box::pin(async move {
            self.gateway
                .complete_resource(template, argument, context)
                .await
                .map_err(|e| match e {
                    ForwardError::UnknownResource { uri } => SourceError::UnknownResource(uri),
                    e => SourceError::failed(e),
                })
        })
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.gateway.resource_changes())
    }

    fn offers(&self, uri: &str) -> bool {
        self.gateway.offers_uri(uri)
    }

    fn updates(&self) -> Option<broadcast::Receiver<String>> {
        Some(self.gateway.resource_updates())
    }

    fn follow<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Result<UpdateLease, SourceError>> {
        Box::pin(async move {
            match self.gateway.follow(uri).await {
                Ok(followed) => Ok(UpdateLease::new(followed)),
                Err(ForwardError::UnknownResource { uri }) => {
                    Err(SourceError::UnknownResource(uri))
                }
                Err(e) => Err(SourceError::InvalidArguments(e.to_string())),
            }
        })
    }
}
